"""``torch._foreach_*``: one operation over a list of tensors.

PyTorch's multi-tensor ("foreach") functions are a private API, but optimizers, EMA helpers
(timm's ``ModelEmaV3`` calls ``_foreach_lerp_``) and gradient-norm code call them. Here each
runs the Tensor operation once per tensor, so values, autograd and errors are those of the
single-tensor operations; there is no multi-tensor kernel to gain from on the CPU.

The forms PyTorch accepts for the second operand of a binary function: a number (for every
tensor), a list of tensors or of numbers (one per tensor), or one Tensor (for every tensor).
``addcmul``/``addcdiv`` take ``value`` as a number, a list of numbers or a 1-D Tensor of
them; ``lerp`` its weight as a number, a list of numbers or a list of tensors. The
out-of-place functions return a tuple, the in-place ones (``_``) the list they changed.
"""
import math

from ..runtime.tensor import Tensor

__all__ = ["FUNCTIONS"]

_UNARY = ("abs acos asin atan ceil cos cosh erf erfc exp expm1 floor frac lgamma log log10 log1p log2 neg "
          "reciprocal round rsqrt sigmoid sign sin sinh sqrt tan tanh trunc").split()
_BINARY = "add sub mul div maximum minimum clamp_max clamp_min pow".split()
_ALPHA = ("add", "sub")  # (take alpha= with tensor operands)


def _check(tensors):
    """``tensors`` as a non-empty list: itself when it is one (the in-place forms return it)."""
    tensors = tensors if isinstance(tensors, list) else list(tensors)
    if not tensors:
        raise RuntimeError("Tensor list must have at least one tensor.")
    return tensors


def _per_tensor(other, n, scalars_only=False):
    """``other`` as one operand per tensor (see the module docstring)."""
    if isinstance(other, (list, tuple)):
        if len(other) != n:
            if other and all(isinstance(o, Tensor) for o in other):
                raise RuntimeError(f"Tensor lists must have the same number of tensors, got {n} and {len(other)}")
            raise RuntimeError("Tensor list must have same number of elements as scalar list.")
        return list(other)
    if scalars_only and isinstance(other, Tensor):  # (a 1-D Tensor of scalars: addcmul's value)
        if other.dim() != 1 or other.numel() != n:
            raise RuntimeError("Tensor list must have same number of elements as scalar list.")
        return [float(v) for v in other.tolist()]
    return [other] * n


def _unary(name):
    def fn(self):
        return tuple(getattr(t, name)() for t in _check(self))

    def fn_(self):
        self = _check(self)
        for t in self:
            getattr(t, name + "_")()
        return self
    return fn, fn_


def _inplace_method(t, name):
    """``t.<name>_`` where Tensor has it, else the operation written back with ``copy_``
    (``maximum_``, ``minimum_``)."""
    method = getattr(t, name + "_", None)
    if method is not None:
        return method
    return lambda other: t.copy_(_call(t, name, other))


def _binary(name):
    def fn(self, other, *, alpha=None):
        if name == "pow" and not isinstance(self, (list, tuple)):  # _foreach_pow(number, exponents)
            return tuple(self ** e for e in _check(other))
        tensors = _check(self)
        others = _per_tensor(other, len(tensors))
        if alpha is not None:
            return tuple(getattr(t, name)(o, alpha=alpha) for t, o in zip(tensors, others))
        return tuple(_call(t, name, o) for t, o in zip(tensors, others))

    def fn_(self, other, *, alpha=None):
        self = _check(self)
        others = _per_tensor(other, len(self))
        for t, o in zip(self, others):
            if alpha is not None:
                getattr(t, name + "_")(o, alpha=alpha)
            else:
                _inplace_method(t, name)(o)
        return self
    if name not in _ALPHA:
        def fn(self, other, _fn=fn):  # noqa: F811  (no alpha= in PyTorch's signature)
            return _fn(self, other)

        def fn_(self, other, _fn=fn_):  # noqa: F811
            return _fn(self, other)
    return fn, fn_


def _call(t, name, other):
    if name in ("maximum", "minimum") and not isinstance(other, Tensor):  # (a number: PyTorch's
        other = t.new_full((), other)  # foreach takes one, its maximum does not)
    return getattr(t, name)(other)


def _pointwise(name):
    """addcmul / addcdiv: ``self + value * t1 (*|/) t2``."""
    def fn(self, tensor1, tensor2, value=1):
        tensors = _check(self)
        n = len(tensors)
        values = _per_tensor(value, n, scalars_only=True)
        return tuple(getattr(t, name)(a, b, value=v)
                     for t, a, b, v in zip(tensors, _per_tensor(tensor1, n), _per_tensor(tensor2, n), values))

    def fn_(self, tensor1, tensor2, value=1):
        self = _check(self)
        n = len(self)
        for t, a, b, v in zip(self, _per_tensor(tensor1, n), _per_tensor(tensor2, n),
                              _per_tensor(value, n, scalars_only=True)):
            getattr(t, name + "_")(a, b, value=v)
        return self
    return fn, fn_


def _foreach_lerp(self, tensors1, weight):
    tensors = _check(self)
    n = len(tensors)
    return tuple(t.lerp(e, w) for t, e, w in zip(tensors, _per_tensor(tensors1, n), _per_tensor(weight, n)))


def _foreach_lerp_(self, tensors1, weight):
    self = _check(self)
    n = len(self)
    for t, e, w in zip(self, _per_tensor(tensors1, n), _per_tensor(weight, n)):
        t.lerp_(e, w)
    return self


def _foreach_norm(self, ord=2, dtype=None):
    from ..linalg import vector_norm
    return tuple(vector_norm(t, ord, dtype=dtype) for t in _check(self))


def _foreach_powsum(self, exponent, dtype=None):
    """The sum of ``|x| ** exponent`` of each tensor (``norm(x, p) ** p`` without the root)."""
    out = []
    for t in _check(self):
        a = t.abs()
        if dtype is not None:
            a = a.to(dtype)
        out.append((a ** exponent).sum() if exponent != math.inf else a.max())
    return tuple(out)


def _foreach_max(self):
    return tuple(t.max() for t in _check(self))


def _foreach_mm(self, mat2):
    tensors = _check(self)
    return tuple(a.mm(b) for a, b in zip(tensors, _per_tensor(mat2, len(tensors))))


def _foreach_clone(self, *, memory_format=None):
    return tuple(t.clone() for t in _check(self))


def _foreach_copy_(self, src, non_blocking=False):
    self = _check(self)
    for t, s in zip(self, _per_tensor(src, len(self))):
        t.copy_(s)
    return self


def _foreach_zero_(self):
    self = _check(self)
    for t in self:
        t.zero_()
    return self


FUNCTIONS = {"_foreach_lerp": _foreach_lerp, "_foreach_lerp_": _foreach_lerp_, "_foreach_norm": _foreach_norm,
             "_foreach_powsum": _foreach_powsum, "_foreach_max": _foreach_max, "_foreach_mm": _foreach_mm,
             "_foreach_clone": _foreach_clone, "_foreach_copy_": _foreach_copy_, "_foreach_zero_": _foreach_zero_}
for _name in _UNARY:
    FUNCTIONS[f"_foreach_{_name}"], FUNCTIONS[f"_foreach_{_name}_"] = _unary(_name)
for _name in _BINARY:
    FUNCTIONS[f"_foreach_{_name}"], FUNCTIONS[f"_foreach_{_name}_"] = _binary(_name)
for _name in ("addcmul", "addcdiv"):
    FUNCTIONS[f"_foreach_{_name}"], FUNCTIONS[f"_foreach_{_name}_"] = _pointwise(_name)
for _name, _fn in FUNCTIONS.items():
    _fn.__name__ = _fn.__qualname__ = _name
METHODS = {}
