"""Elementwise functions with PyTorch's signatures, and the Tensor operators.

Functions call primitives (so they work on any operand kind the rule table dispatches
on); Tensor operators and simple methods call the eager runtime directly, which is the
hot path of every model.
"""
import math
import warnings

from ..rules import arith as A
from ..rules import unary as U
from ..runtime.dispatch import apply, apply_inplace, eager_binary, eager_unary
from ..runtime.int_fit import fit_int
from ..runtime.tensor import Tensor
from ._args import is_number, result_type, scalar
from .devices import on_device_of
from ..rules.memory import copy, fill

_NO = {}


def _bool_check(x, y):
    """PyTorch's refusals of a subtraction with a bool operand (a Python bool counts, as
    ``1 - dones`` with boolean ``dones`` meets them)."""
    bx, by = _is_bool(x), _is_bool(y)
    if bx and by:
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not supported. "
                           "Use the `^` or `logical_xor()` operator instead.")
    if bx or by:
        raise RuntimeError("Subtraction, the `-` operator, with a bool tensor is not supported. "
                           "If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.")


def _is_bool(v):
    return type(v) is bool or (isinstance(v, Tensor) and v.dtype.name == "bool")


# -- PyTorch's deprecated overloads: the scale first (``p.data.add_(-lr, grad)``) -------------

_OVERLOADS = {
    "add": ("add(Number alpha, Tensor other)", "add(Tensor other, *, Number alpha = 1)"),
    "sub": ("sub(Number alpha, Tensor other)", "sub(Tensor other, *, Number alpha = 1)"),
    "addcmul": ("addcmul(Number value, Tensor tensor1, Tensor tensor2)",
                "addcmul(Tensor tensor1, Tensor tensor2, *, Number value = 1)"),
    "addcdiv": ("addcdiv(Number value, Tensor tensor1, Tensor tensor2)",
                "addcdiv(Tensor tensor1, Tensor tensor2, *, Number value = 1)"),
}
_warned = set()


def _scale_first(name, scale, operands, given, n):
    """``(scale, operands)`` of a call of the deprecated overload ``name(Number scale,
    Tensor ...)`` that older code (DARTS, copies of old optimizers) still writes, with
    PyTorch's once-per-process warning; a TypeError when the extra positional arguments
    are not that overload's."""
    if isinstance(scale, Tensor) and scale.ndim == 0:  # (a 0-d tensor is a Number here, as in PyTorch)
        scale = scale.item()
    if not (len(operands) == n and is_number(scale) and not isinstance(scale, bool)
            and all(isinstance(t, Tensor) for t in operands) and given is None):
        raise TypeError(f"{name}() takes {n + 1} positional arguments but {len(operands) + 2} were given")
    if name not in _warned:
        _warned.add(name)
        old, new = _OVERLOADS[name]
        warnings.warn(f"This overload of {name} is deprecated:\n\t{old}\nConsider using one of the following "
                      f"signatures instead:\n\t{new}", UserWarning, stacklevel=4)
    return scale, operands


# -- arithmetic --------------------------------------------------------------------------------

def add(input, other, *deprecated, alpha=None):
    if deprecated:
        alpha, (other,) = _scale_first("add", other, deprecated, alpha, 1)
    if alpha is not None and alpha != 1:
        other = A.mul(other, scalar(alpha))
    return A.add(input, other)


def sub(input, other, *deprecated, alpha=None):
    if deprecated:
        alpha, (other,) = _scale_first("sub", other, deprecated, alpha, 1)
    alpha = 1 if alpha is None else alpha
    _bool_check(input, other)
    if alpha != 1:
        other = A.mul(other, scalar(alpha))
    return A.sub(input, other)


def rsub(input, other, *, alpha=1):
    return sub(other, input, alpha=alpha)


def div(input, other, *, rounding_mode=None):
    if rounding_mode is None:
        return A.div(input, other)
    if rounding_mode == "floor":
        return A.floor_divide(input, other)
    if rounding_mode == "trunc":
        if result_type(input, other).category <= 1:  # integers: an integer quotient, rounded to 0
            floored = A.floor_divide(input, other)
            inexact = ne(remainder(input, other), 0) & ne(lt(input, 0), lt(other, 0))
            return where(inexact, floored + 1, floored)
        return U.trunc(A.div(input, other))
    raise ValueError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '{rounding_mode}'")


def pow(input, exponent):
    return A.pow(input, exponent)


def square(input):
    return A.pow(input, 2)


def neg(input):
    if isinstance(input, Tensor) and input.dtype.name == "bool":
        raise RuntimeError("Negation, the `-` operator, on a bool tensor is not supported. If you are "
                           "trying to invert a mask, use the `~` or `logical_not()` operator instead.")
    return A.neg(input)


def clamp(input, min=None, max=None):
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    if isinstance(min, Tensor) or isinstance(max, Tensor):
        if result_type(input, *(b for b in (min, max) if b is not None)).is_floating_point:
            # one ClampBackward0 node with an edge per bound, as in PyTorch
            return A.clamp_tensor(input, -math.inf if min is None else min,
                                  math.inf if max is None else max)
        out = input  # integers: no gradient, and inf bounds would make the result float
        if min is not None:
            out = A.maximum(out, min)
        if max is not None:
            out = A.minimum(out, max)
        return out
    # The bounds take part in type promotion: int_tensor.clamp(min=0.5) is float.
    min, max = (None if b is None else scalar(b) for b in (min, max))  # (NumPy scalars as numbers)
    target = result_type(input, *(b for b in (min, max) if b is not None))
    if isinstance(input, Tensor) and target != input.dtype:
        input = input.to(target)
    if target.np.kind in "iu":  # int bounds take the dtype first, as in PyTorch (u8 min=-1 is 255)
        min, max = (fit_int(b, target.np) if type(b) is int else b for b in (min, max))
    return A.clamp(input, min=min, max=max)


def clamp_min(input, min):
    return clamp(input, min=min)


def clamp_max(input, max):
    return clamp(input, max=max)


def where(condition, input=None, other=None):
    if input is None and other is None:
        from .indexing import nonzero
        return nonzero(condition, as_tuple=True)
    if isinstance(condition, Tensor) and condition.dtype.name != "bool":
        raise RuntimeError("where expected condition to be a boolean tensor, but got a tensor "
                           f"with dtype {condition.dtype.scalar_name}")
    return A.where(condition, input, other)


def lerp(input, end, weight):
    return input + weight * (end - input)


def addcmul(input, tensor1, tensor2, *deprecated, value=None):
    if deprecated:
        value, (tensor1, tensor2) = _scale_first("addcmul", tensor1, (tensor2, *deprecated), value, 2)
    return input + (1 if value is None else value) * tensor1 * tensor2


def addcdiv(input, tensor1, tensor2, *deprecated, value=None):
    if deprecated:
        value, (tensor1, tensor2) = _scale_first("addcdiv", tensor1, (tensor2, *deprecated), value, 2)
    return input + (1 if value is None else value) * tensor1 / tensor2


def _unary(prim):
    def f(input):
        return prim(input)
    f.__name__ = f.__qualname__ = prim.name
    f.__doc__ = f"Elementwise ``{prim.name}`` (rule ``{prim.name}`` of the rule table)."
    return f


reciprocal = _unary(U.reciprocal)
logical_not = _unary(A.logical_not)
bitwise_not = _unary(A.bitwise_not)
isnan = _unary(A.isnan)
isinf = _unary(A.isinf)
isfinite = _unary(A.isfinite)
exp = _unary(U.exp)
exp2 = _unary(U.exp2)
expm1 = _unary(U.expm1)
log = _unary(U.log)
log2 = _unary(U.log2)
log10 = _unary(U.log10)
log1p = _unary(U.log1p)
sqrt = _unary(U.sqrt)
rsqrt = _unary(U.rsqrt)
sin = _unary(U.sin)
cos = _unary(U.cos)
tan = _unary(U.tan)
asin = _unary(U.asin)
acos = _unary(U.acos)
atan = _unary(U.atan)
sinh = _unary(U.sinh)
cosh = _unary(U.cosh)
tanh = _unary(U.tanh)
erf = _unary(U.erf)
abs = _unary(U.abs)
sign = _unary(U.sign)
floor = _unary(U.floor)
ceil = _unary(U.ceil)
trunc = _unary(U.trunc)
frac = _unary(U.frac)


def round(input, *, decimals=0):
    return U.round(input, decimals=decimals)


# -- comparison and logic ------------------------------------------------------------------------

def _binary_function(prim, name=None):
    """``torch.<name>(input, other)`` for a two-operand rule."""
    def f(input, other):
        return prim(input, other)
    f.__name__ = f.__qualname__ = name or prim.name
    f.__doc__ = f"Elementwise ``{f.__name__}`` (rule ``{prim.name}`` of the rule table)."
    return f


mul = _binary_function(A.mul)
true_divide = _binary_function(A.div, "true_divide")
floor_divide = _binary_function(A.floor_divide)
remainder = _binary_function(A.remainder)
atan2 = _binary_function(A.atan2)
maximum = _binary_function(A.maximum)
minimum = _binary_function(A.minimum)
eq, ne, lt, le, gt, ge = (_binary_function(p) for p in (A.eq, A.ne, A.lt, A.le, A.gt, A.ge))
logical_and = _binary_function(A.logical_and)
logical_or = _binary_function(A.logical_or)
logical_xor = _binary_function(A.logical_xor)


def equal(input, other):
    """True if both tensors have the same shape and values."""
    return input.shape == other.shape and bool(A.eq(input, other).all())


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    return bool(isclose(input, other, rtol, atol, equal_nan).all())


def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    close = A.le(U.abs(input - other), atol + rtol * U.abs(other))
    if equal_nan:
        close = A.logical_or(close, A.logical_and(A.isnan(input), A.isnan(other)))
    return close


# -- Tensor operators and methods --------------------------------------------------------------

def _binary(prim, reflected=False):
    """A Tensor operator; operands it cannot take give NotImplemented, so Python raises its
    usual TypeError (and ``x == None`` is simply False)."""
    if not reflected:
        return eager_binary(prim)

    def op(self, other):
        if not _operand(other):
            return NotImplemented
        return apply(prim, (other, self), _NO)
    return op


def _operand(x):
    return isinstance(x, (Tensor, int, float, complex)) or hasattr(x, "__array_interface__")


def _inplace(fn_prim, convert=None):
    """An in-place method ``x.op_(other)`` writing ``op(x, other)`` into ``x``."""
    def op_(self, *args, **params):
        if convert is not None:
            args, params = convert(self, *args, **params)
        return apply_inplace(fn_prim, (self,) + tuple(args), params)
    return op_


def _alpha(name):
    """``add_`` / ``sub_``'s ``(other, *, alpha)`` (or the deprecated ``(alpha, other)``) as
    the operand ``alpha * other``."""
    def convert(self, other, *deprecated, alpha=None):
        if deprecated:
            alpha, (other,) = _scale_first(name, other, deprecated, alpha, 1)
        if name == "sub":
            _bool_check(self, other)
        return ((A.mul(other, scalar(alpha)) if alpha is not None and alpha != 1 else other),), {}
    return convert


def _div_(self, other, rounding_mode):
    """``x.div_(y, rounding_mode=...)``: ``div``'s result written into ``x`` (an integer
    ``x`` takes a rounded quotient, as in PyTorch)."""
    if rounding_mode is None:
        return apply_inplace(A.div, (self, other), _NO)
    from .compat_tensor import write_back
    return write_back("div")(self, other, rounding_mode=rounding_mode)


def _clamp_params(self, min=None, max=None):
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    target = result_type(self, *(scalar(b) for b in (min, max) if b is not None))
    if target.category > self.dtype.category:
        raise RuntimeError(f"result type {target.scalar_name} can't be cast to the desired output "
                           f"type {self.dtype.scalar_name}")
    return (), {"min": scalar(min), "max": scalar(max)}


def _clamp_(self, min=None, max=None):
    """``x.clamp_(min, max)``; tensor bounds write one ClampBackward0 (float) or
    maximum/minimum (integers) into ``x``, as ``clamp`` computes them."""
    if not (isinstance(min, Tensor) or isinstance(max, Tensor)):
        return apply_inplace(A.clamp, (self,), _clamp_params(self, min, max)[1])
    if self.dtype.is_floating_point:
        bounds = (-math.inf if min is None else min, math.inf if max is None else max)
        return apply_inplace(A.clamp_tensor, (self,) + bounds, _NO)
    if min is not None:
        apply_inplace(A.maximum, (self, min), _NO)
    if max is not None:
        apply_inplace(A.minimum, (self, max), _NO)
    return self


def _rsub(self, other):
    _bool_check(other, self)
    return apply(A.sub, (other, self), _NO)


def _rtruediv(self, other):
    # PyTorch computes `number / x` as `reciprocal(x) * number` (a MulBackward0 node).
    return apply(A.mul, (apply(U.reciprocal, (self,), _NO), other), _NO)


def _neg(self):
    return neg(self)


def _sub_op(self, other):
    _bool_check(self, other)
    return apply(A.sub, (self, other), _NO)


def _zero_(self):
    return apply_inplace(fill, (self,), {"value": 0, "zero": True})


def _fill_(self, value):
    if isinstance(value, Tensor):
        return apply_inplace(copy, (self, value), _NO)
    return apply_inplace(fill, (self,), {"value": value})


def _copy_(self, src, non_blocking=False):
    if not isinstance(src, Tensor) and not is_number(src):
        raise TypeError(f"copy_(): argument 'src' must be Tensor, not {type(src).__name__}")
    return apply_inplace(copy, (self, on_device_of(src, self)), _NO)


def _invert(self):
    if self.dtype.is_floating_point or self.dtype.is_complex:
        raise TypeError("~ (operator.invert) is only implemented on integer and Boolean-type tensors")
    return _INVERT(self)


def _unary_method(prim):
    return eager_unary(prim)


_INVERT = _unary_method(A.bitwise_not)


METHODS = {
    "__add__": _binary(A.add), "__radd__": _binary(A.add),
    "__sub__": _sub_op, "__rsub__": _rsub,
    "__mul__": _binary(A.mul), "__rmul__": _binary(A.mul),
    "__truediv__": _binary(A.div), "__rtruediv__": _rtruediv,
    "__floordiv__": _binary(A.floor_divide), "__rfloordiv__": _binary(A.floor_divide, True),
    "__mod__": _binary(A.remainder), "__rmod__": _binary(A.remainder, True),
    "__pow__": _binary(A.pow), "__rpow__": _binary(A.pow, True),
    "__neg__": _neg, "__pos__": lambda self: self, "__abs__": _unary_method(U.abs),
    "__eq__": _binary(A.eq), "__ne__": _binary(A.ne), "__lt__": _binary(A.lt),
    "__le__": _binary(A.le), "__gt__": _binary(A.gt), "__ge__": _binary(A.ge),
    "__and__": _binary(A.bitwise_and), "__rand__": _binary(A.bitwise_and, True),
    "__or__": _binary(A.bitwise_or), "__ror__": _binary(A.bitwise_or, True),
    "__xor__": _binary(A.bitwise_xor), "__rxor__": _binary(A.bitwise_xor, True),
    "__invert__": _invert,
    "__iadd__": _inplace(A.add, _alpha("add")), "__isub__": _inplace(A.sub, _alpha("sub")),
    "__imul__": _inplace(A.mul), "__itruediv__": _inplace(A.div),
    "__ipow__": _inplace(A.pow), "__ifloordiv__": _inplace(A.floor_divide),
    "__imod__": _inplace(A.remainder),
    "__iand__": _inplace(A.bitwise_and), "__ior__": _inplace(A.bitwise_or),
    "__ixor__": _inplace(A.bitwise_xor),
    "add": add, "sub": sub, "subtract": sub, "mul": mul, "multiply": mul, "div": div,
    "divide": div, "true_divide": true_divide, "floor_divide": floor_divide,
    "remainder": remainder, "pow": pow, "square": square, "neg": neg, "negative": neg,
    "clamp": clamp, "clip": clamp, "clamp_min": clamp_min, "clamp_max": clamp_max,
    "where": lambda self, condition, other: where(condition, self, other),
    "atan2": atan2, "arctan2": atan2, "maximum": maximum, "minimum": minimum,
    "reciprocal": reciprocal, "round": round, "lerp": lerp, "addcmul": addcmul, "addcdiv": addcdiv,
    "eq": eq, "ne": ne, "lt": lt, "le": le, "gt": gt, "ge": ge, "greater": gt, "less": lt,
    "greater_equal": ge, "less_equal": le, "not_equal": ne,
    "logical_not": logical_not, "logical_and": logical_and, "logical_or": logical_or,
    "logical_xor": logical_xor, "bitwise_not": bitwise_not,
    "isnan": isnan, "isinf": isinf, "isfinite": isfinite, "equal": equal,
    "allclose": allclose, "isclose": isclose,
    "add_": _inplace(A.add, _alpha("add")), "sub_": _inplace(A.sub, _alpha("sub")), "mul_": _inplace(A.mul),
    "div_": lambda self, other, *, rounding_mode=None: _div_(self, other, rounding_mode),
    "pow_": _inplace(A.pow), "neg_": _inplace(A.neg),
    "clamp_": _clamp_, "clip_": _clamp_,
    "clamp_min_": lambda self, min: _clamp_(self, min=min),
    "clamp_max_": lambda self, max: _clamp_(self, max=max),
    "zero_": _zero_, "fill_": _fill_, "copy_": _copy_,
    "remainder_": _inplace(A.remainder), "floor_divide_": _inplace(A.floor_divide),
}
for _p in (U.exp, U.exp2, U.expm1, U.log, U.log2, U.log10, U.log1p, U.sqrt, U.rsqrt, U.sin,
           U.cos, U.tan, U.asin, U.acos, U.atan, U.sinh, U.cosh, U.tanh, U.erf, U.abs, U.sign,
           U.floor, U.ceil, U.trunc, U.frac):
    METHODS[_p.name] = _unary_method(_p)
    METHODS[_p.name + "_"] = _inplace(_p)
for _alias, _name in (("absolute", "abs"), ("arcsin", "asin"), ("arccos", "acos"),
                      ("arctan", "atan"), ("arcsinh", "asinh"), ("fix", "trunc")):
    if _name in METHODS:
        METHODS[_alias] = METHODS[_name]

FUNCTIONS = {
    "add": add, "sub": sub, "subtract": sub, "rsub": rsub, "mul": mul, "multiply": mul,
    "div": div, "divide": div, "true_divide": true_divide, "floor_divide": floor_divide,
    "remainder": remainder, "pow": pow, "square": square, "neg": neg, "negative": neg,
    "clamp": clamp, "clip": clamp, "clamp_min": clamp_min, "clamp_max": clamp_max,
    "where": where, "atan2": atan2, "arctan2": atan2, "maximum": maximum, "minimum": minimum,
    "reciprocal": reciprocal, "round": round, "lerp": lerp, "addcmul": addcmul, "addcdiv": addcdiv,
    "exp": exp, "exp2": exp2, "expm1": expm1, "log": log, "log2": log2, "log10": log10,
    "log1p": log1p, "sqrt": sqrt, "rsqrt": rsqrt, "sin": sin, "cos": cos, "tan": tan,
    "asin": asin, "arcsin": asin, "acos": acos, "arccos": acos, "atan": atan, "arctan": atan,
    "sinh": sinh, "cosh": cosh, "tanh": tanh, "erf": erf, "abs": abs, "absolute": abs,
    "sign": sign, "floor": floor, "ceil": ceil, "trunc": trunc, "fix": trunc, "frac": frac,
    "eq": eq, "ne": ne, "lt": lt, "le": le, "gt": gt, "ge": ge, "greater": gt, "less": lt,
    "greater_equal": ge, "less_equal": le, "not_equal": ne,
    "logical_not": logical_not, "logical_and": logical_and, "logical_or": logical_or,
    "logical_xor": logical_xor, "bitwise_not": bitwise_not, "isnan": isnan, "isinf": isinf,
    "isfinite": isfinite, "equal": equal, "allclose": allclose, "isclose": isclose,
}
