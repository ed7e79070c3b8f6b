"""``out=``: PyTorch's output-argument protocol, one mechanism for every function that
takes it (``torch.add(a, b, out=c)``, ``torch.matmul(a, b, out=c)``, ``torch.sort(x,
out=(v, i))``...).

:func:`accepts_out` wraps a torch-style function: the function computes its result as
usual and :func:`write_out` copies it into ``out``, in place (the version counter of
``out`` and of every view sharing its storage moves on), and ``out`` is returned. As in
PyTorch:

* an ``out`` of another shape is resized -- silently when it has no elements, with
  PyTorch's deprecation ``UserWarning`` otherwise;
* its dtype is checked against the result's, by the rule the function follows in PyTorch
  (``OUT_DTYPE_RULES``: most accept any dtype the result can be cast to; matrix
  products, sorts and indexing want the very dtype; each with PyTorch's message); every
  part of a tuple ``out`` is checked before anything is written;
* sums and products (``IN_OUT_DTYPE``) compute in out's dtype, as if given ``dtype=``;
* outputs given by ``out=`` are outside autograd: while grad mode is on, an argument
  that requires grad is an error (PyTorch's ``RuntimeError``), not a silently dropped
  graph.

The wrapped functions are the public ``tracegrad.X`` functions named in
``OUT_DTYPE_RULES`` (Tensor methods take no ``out=`` in PyTorch); :func:`install`
applies the wrapper when the function table is built.
"""
import functools
import warnings

from ..runtime.grad_mode import is_grad_enabled
from ..runtime.tensor import Tensor
from . import return_types
from ._args import per_sample

__all__ = ["OUT_DTYPE_RULES", "accepts_out", "can_cast", "install", "write_out"]

_RESIZED = ("An output with one or more elements was resized since it had shape {old}, which does not "
            "match the required output shape {new}. This behavior is deprecated, and in a future PyTorch "
            "release outputs will not be resized unless they have zero elements. You can explicitly reuse "
            "an out tensor t by resizing it, inplace, to zero elements with t.resize_(0).")
_NO_GRAD = ("{name}(): functions with out=... arguments don't support automatic differentiation, but one "
            "of the arguments requires grad.")
# C++'s names of the scalar types, which some of PyTorch's messages print
_C_NAMES = {"float32": "float", "float64": "double", "float16": "c10::Half", "bfloat16": "c10::BFloat16",
            "int64": "long int", "int32": "int", "int16": "short int", "int8": "signed char",
            "uint8": "unsigned char", "bool": "bool", "complex64": "c10::complex<float>",
            "complex128": "c10::complex<double>"}


def can_cast(from_, to):
    """``torch.can_cast``: no cast to a lower category (complex > float > int > bool)."""
    return from_.category <= to.category


# A rule takes the result and out (Tensors) and returns the error to raise, or None.

def _castable(template, error=RuntimeError):
    """A rule: the result's dtype must cast to out's (``torch.can_cast``)."""
    return lambda r, o: None if can_cast(r.dtype, o.dtype) else error(_format(template, r.dtype, o.dtype))


def _exact(template, error=RuntimeError):
    """A rule: out must have the result's very dtype."""
    return lambda r, o: None if r.dtype == o.dtype else error(_format(template, r.dtype, o.dtype))


def _format(template, r, o):
    return template.format(r=r.scalar_name, o=o.scalar_name, rc=_C_NAMES.get(r.name, r.name),
                           oc=_C_NAMES.get(o.name, o.name), int32=r.name == "int32")


def _any(r, o):
    return None


CAST = _castable("result type {r} can't be cast to the desired output type {o}")
SAME = _exact("Expected out tensor to have dtype {rc}, but got {oc} instead")
FOUND = _exact("Found dtype {o} but expected {r}")
CAT = _castable("torch.cat(): input types can't be cast to the desired output type {o}", TypeError)
_ADDMV = _exact("addmv input tensors must have the same dtype, but got {o}, {r}, and {r}")


def _mv(r, o):
    """PyTorch's ``mv`` checks the dtype after resizing out, and before when no resize is due."""
    return (_ADDMV if tuple(r.shape) == tuple(o.shape) else SAME)(r, o)


def _rules(rule, names):
    return dict.fromkeys(names.split(), rule)


OUT_DTYPE_RULES = {
    **_rules(CAST, "add sub subtract mul multiply div divide true_divide pow float_power square "
                   "reciprocal exp exp2 expm1 log log2 log10 log1p sqrt rsqrt sin cos tan asin acos atan "
                   "sinh cosh tanh asinh acosh atanh sigmoid logit erf erfc erfinv sinc lgamma digamma "
                   "polygamma i0 atan2 hypot copysign xlogy fmod remainder floor_divide maximum minimum "
                   "fmax fmin logaddexp logaddexp2 lerp addcmul addcdiv deg2rad rad2deg angle outer ger "
                   "kron diff mean std var nanmean gcd lcm bitwise_left_shift bitwise_right_shift nextafter "
                   "igamma igammac"),
    **_rules(_any, "sum prod nansum cumsum cumprod eq ne lt le gt ge greater greater_equal less "
                   "less_equal not_equal logical_and logical_or logical_xor logical_not"),
    **_rules(FOUND, "neg negative abs absolute sign sgn frac trunc fix floor ceil round clamp clip"),
    **_rules(SAME, "mm bmm matmul mv addmm baddbmm addmv diag tril triu gather take_along_dim cross "
                   "argmax argmin norm sort msort topk max min median aminmax matrix_power "
                   "triangular_solve lu_unpack lu_solve cholesky_solve cholesky_inverse geqrf orgqr ormqr "
                   "scatter_reduce index_reduce"),
    **_rules((_exact("expected scalar_type {r} but found {o}"),) * 2, "cummax cummin"),
    "mode": (_exact("expected scalar type '{r}' but got '{o}' for values output"),
             _exact("expected scalar type '{r}' but got '{o}' for indices output")),
    "kthvalue": (_exact("output values must be of same type as input"),  # a rule per part of the tuple
                 _exact("output indices must be of scalar type Long")),
    **_rules(CAT, "cat concat concatenate stack hstack vstack row_stack dstack column_stack"),
    **_rules(_exact("Expected the dtype for input and out to match, but got {r} for input's dtype and "
                    "{o} for out's dtype."), "amax amin"),
    **_rules(_exact("result dtype {o} does not match input dtype {r}"), "dot vdot"),
    **_rules(_exact("tensordot: Expected the output tensor to have dtype {r}, but got an output tensor "
                    "with dtype {o}"), "tensordot inner"),
    **_rules(_exact("torch.searchsorted(): output tensor's dtype is wrong, it can only be Int(int32) or "
                    "Long(int64) depending on whether out_int32 flag is True, but we got output tensor's "
                    "dtype {o} and out_int32 flag is {int32}"), "searchsorted bucketize"),
    **_rules(_mv, "mv addmv"),
    "where": _exact("Expected out type to be {r} but got {o}"),
    "index_select": _exact("index_select(): self and result must have the same scalar type"),
    "masked_select": _exact("masked_select(): self and result must have the same scalar type"),
    "take": _exact("take(): self and out expected to have the same dtype, but got self.dtype = {r} and "
                   "out.dtype = {o}"),
    "nan_to_num": _exact("nan_to_num: dtype of out: {o} should be same as input: {r}"),
    "nonzero": _exact("nonzero: Expected out tensor to have scalar type Long but got scalar type{o}"),
    "multinomial": _exact("multinomial expects Long tensor out, got: {o}"),
    "histc": _exact("torch.histogram: input tensor and hist tensor should have the same dtype, but got "
                    "input {rc} and hist {oc}"),
    "logsumexp": _castable("logsumexp(): Expected floating point type for result tensor, but got: {o}"),
    "all": _exact("all only supports bool tensor for result, got: {o}"),
    "any": _exact("any only supports bool tensor for result, got: {o}"),
}


IN_OUT_DTYPE = frozenset({"sum", "nansum", "prod", "cumsum", "cumprod"})

# a ``dtype=`` other than out's is an error in PyTorch (it would otherwise silently compute
# in one dtype and store in another); {d}: the dtype given, {o}: out's
_DTYPE_VS_OUT = ("Expected out tensor to have dtype {d_c}, but got {o_c} instead", "sum prod cumsum cumprod mean")
_NAN_DTYPE_VS_OUT = ("nansum: provided dtype must match dtype of result. Got {o_s} and {d_s}.", "nansum nanmean")
DTYPE_VS_OUT = {name: message for message, names in (_DTYPE_VS_OUT, _NAN_DTYPE_VS_OUT) for name in names.split()}


def _requires_grad(values):
    for v in values:
        if isinstance(v, Tensor):
            if v.requires_grad:
                return True
        elif isinstance(v, (list, tuple)) and _requires_grad(v):
            return True
    return False


def accepts_out(fn, name=None, rule=CAST, in_out_dtype=False, refuse_grad=True):
    """``fn`` taking PyTorch's keyword ``out=`` (a Tensor, or a tuple of them for a
    function returning several): see the module docstring. ``in_out_dtype``: ``fn``
    takes ``dtype=`` and computes in out's dtype. ``refuse_grad=False``: arguments that
    require grad are accepted (PyTorch's composite functions, such as ``linalg.cond``,
    copy their result into out, recorded)."""
    name = name or fn.__name__

    @functools.wraps(fn)
    def with_out(*args, out=None, **kwargs):
        if out is None:
            return fn(*args, **kwargs)
        several = isinstance(out, (tuple, list))
        outs = tuple(out) if several else (out,)
        if not all(isinstance(o, Tensor) for o in outs):
            raise TypeError(f"{name}(): argument 'out' must be {'tuple of Tensors' if several else 'Tensor'}, "
                            f"not {type(out).__name__}")
        if refuse_grad and is_grad_enabled() and _requires_grad(args + tuple(kwargs.values()) + outs):
            raise RuntimeError(_NO_GRAD.format(name=name))
        _check_dtype_vs_out(name, kwargs.get("dtype"), outs[0])
        if in_out_dtype and kwargs.get("dtype") is None:
            kwargs["dtype"] = outs[0].dtype
        result = fn(*args, **kwargs)
        results = tuple(result) if several else (result,)
        if len(results) != len(outs):
            raise RuntimeError(f"{name}(): expected out to be a tuple of {len(results)} Tensors, "
                               f"but got {len(outs)}")
        rules = rule if isinstance(rule, tuple) else (rule,) * len(outs)
        for check, r, o in zip(rules, results, outs):
            error = check(r, o)
            if error is not None:
                raise error
        for r, o in zip(results, outs):
            write_out(o, r)
            if r.requires_grad:  # (refuse_grad=False) a recorded copy, as PyTorch's composites
                o.copy_(r)
        if not several:
            return out
        kind = type(result).__name__
        return return_types.out_type(kind)(*outs) if hasattr(return_types, kind) else outs

    with_out.accepts_out = True
    return with_out


def _check_dtype_vs_out(name, dtype, out):
    message = DTYPE_VS_OUT.get(name)
    if message is not None and dtype is not None and dtype != out.dtype:
        raise RuntimeError(message.format(d_c=_C_NAMES.get(dtype.name, dtype.name),
                                          o_c=_C_NAMES.get(out.dtype.name, out.dtype.name),
                                          d_s=dtype.scalar_name, o_s=out.dtype.scalar_name))


def write_out(out, result, warn=True):
    """Copy ``result`` into ``out`` in place (cast to out's dtype), resizing ``out`` first
    when its shape differs (with the warning unless ``warn`` is false: factories resize
    silently); bump its version. Returns ``out``."""
    if per_sample(result) or per_sample(out):
        raise RuntimeError("vmap: out= is not supported inside vmap (the result has one value per "
                           "sample): use the out-of-place function and, if needed, out.copy_(result)")
    data = result._data
    if tuple(out.shape) != tuple(data.shape):
        if warn and out.numel():
            warnings.warn(_RESIZED.format(old=list(out.shape), new=list(data.shape)), UserWarning, stacklevel=3)
        out._data = data.astype(out._data.dtype, copy=True)
    else:
        out._data[...] = data
    out._bump_version()
    return out


def install(functions):
    """Give the functions of ``functions`` (name -> function) that PyTorch's take ``out=``
    the keyword, in place."""
    for name, rule in OUT_DTYPE_RULES.items():
        fn = functions.get(name)
        if fn is not None and not getattr(fn, "accepts_out", False):
            functions[name] = accepts_out(fn, name, rule, name in IN_OUT_DTYPE)
