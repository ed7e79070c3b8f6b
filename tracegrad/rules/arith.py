"""Binary arithmetic, selection and comparison: the broadcasting elementwise rules.

Each vjp reduces its gradient back to the operand's shape with ``unbroadcast``; each jvp
contribution is broadcast up to the result's shape with ``expand_to``.
"""
from .broadcast import expand_to, unbroadcast, zeros_like
from .core import FLOAT, KEEP, primitive


def _is_number(a):
    return isinstance(a, (int, float, complex))


# -- + - * / -------------------------------------------------------------------------------

_ALPHA = {"alpha": 1}  # add(x, y, alpha=a) with a != 1 is recorded as add(x, y * a)


@primitive("AddBackward0", ufunc="add", saved_view=lambda params: _ALPHA, complex=True, scalar=True)
def add(xp, x, y):
    return x + y


@add.vjp("x")
def add_vjp_x(g, out, x, y):
    return unbroadcast(g, x)


@add.vjp("y")
def add_vjp_y(g, out, x, y):
    return unbroadcast(g, y)


@add.jvp("x")
def add_jvp_x(t, out, x, y):
    return expand_to(t, out)


@add.jvp("y")
def add_jvp_y(t, out, x, y):
    return expand_to(t, out)


def _sub_name(args, params):
    return "RsubBackward1" if _is_number(args[0]) else "SubBackward0"


@primitive(_sub_name, ufunc="subtract", saved_view=lambda params: _ALPHA, complex=True, scalar=True)
def sub(xp, x, y):
    return x - y


@sub.vjp("x")
def sub_vjp_x(g, out, x, y):
    return unbroadcast(g, x)


@sub.vjp("y")
def sub_vjp_y(g, out, x, y):
    return unbroadcast(-g, y)


@sub.jvp("x")
def sub_jvp_x(t, out, x, y):
    return expand_to(t, out)


@sub.jvp("y")
def sub_jvp_y(t, out, x, y):
    return expand_to(-t, out)


@primitive("MulBackward0", ufunc="multiply", complex=True, scalar=True)
def mul(xp, x, y):
    return x * y


@mul.vjp("x", uses="y")
def mul_vjp_x(g, out, x, y):
    return unbroadcast(g * y, x)


@mul.vjp("y", uses="x")
def mul_vjp_y(g, out, x, y):
    return unbroadcast(g * x, y)


@mul.jvp("x")
def mul_jvp_x(t, out, x, y):
    return expand_to(t * y, out)


@mul.jvp("y")
def mul_jvp_y(t, out, x, y):
    return expand_to(x * t, out)


@primitive("DivBackward0", dtypes=FLOAT, ufunc="true_divide", complex=True, scalar=True)
def div(xp, x, y):
    return x / y


@div.vjp("x", uses="y")
def div_vjp_x(g, out, x, y):
    return unbroadcast(g / y, x)


@div.vjp("y", uses="x y")
def div_vjp_y(g, out, x, y):
    # -g x / y^2 as PyTorch orders it: y * y would underflow (or overflow) long before the
    # quotient does (x = 1e-30, y = 1e-25 in float32: -1e20, not -inf)
    return unbroadcast(-g * (x / y / y), y)


@div.jvp("x")
def div_jvp_x(t, out, x, y):
    return expand_to(t / y, out)


@div.jvp("y")
def div_jvp_y(t, out, x, y):
    return expand_to(-t * (x / y / y), out)


@primitive("NegBackward0", dtypes=KEEP, diagonal=True, ufunc="negative", complex=True, scalar=True)
def neg(xp, x):
    return -x


@neg.vjp("x")
def neg_vjp(g, out, x):
    return -g


# -- powers ----------------------------------------------------------------------------------

def _pow_name(args, params):
    if _is_number(args[1]):
        return "PowBackward0"
    return "PowBackward2" if _is_number(args[0]) else "PowBackward1"


@primitive(_pow_name, number_edges=False, ufunc="power", saved_names=("self", "exponent"), complex=True)
def pow(xp, x, y):
    return x ** y


# Where a limit replaces the formula (y == 0; x == 0 with y >= 0), the formula's own
# operands are made harmless too (x ** 1, log(1)): a masked-out inf would still give
# 0 * inf = nan to the next derivative (grad(grad(x ** 0)) at 0 is 0, not nan).
@pow.vjp("x", uses="x y")
def pow_vjp_x(g, out, x, y):
    # d/dx x**y = y * x**(y-1); PyTorch defines it as 0 where y == 0 (even at x == 0).
    return unbroadcast(g * where(y == 0, 0.0, y * x ** where(y == 0, 1.0, y - 1)), x)


@pow.vjp("y", uses="x y out")
def pow_vjp_y(g, out, x, y):
    # d/dy x**y = x**y * log(x); 0 where x == 0 and y >= 0, the limit PyTorch uses.
    return unbroadcast(g * where((x == 0) & (y >= 0), 0.0, out * log(pow_base(x, y, out))), y)


@pow.jvp("x")
def pow_jvp_x(t, out, x, y):
    return expand_to(t * where(y == 0, 0.0, y * x ** where(y == 0, 1.0, y - 1)), out)


@pow.jvp("y")
def pow_jvp_y(t, out, x, y):
    return expand_to(t * where((x == 0) & (y >= 0), 0.0, out * log(pow_base(x, y, out))), out)


def pow_base(x, y, out=None):
    """``x``, with 1 (in the exponent's dtype) where pow's derivative in ``y`` takes its
    limit 0 (x == 0, y >= 0): log of it is then finite, and so is every derivative of it.
    A real ``x`` of a complex result ``out`` (Python's ``(-8.0) ** (1 / 3)``: the base is
    taken as complex) is made complex, so that log of a negative base is log|x| + i pi."""
    base = where((x == 0) & (y >= 0), zeros_like(y) + 1, x)
    if out is not None and is_complex(out) and not is_complex(base):
        return base + zeros_like(out)
    return base


def _check_integer_divisor(xp, x, y):
    """Integer division by zero is an error in PyTorch (NumPy would return 0)."""
    if getattr(x, "dtype", None) is not None and x.dtype.kind in "biu" and \
            getattr(y, "dtype", xp.asarray(y).dtype).kind in "biu" and xp.any(xp.asarray(y) == 0):
        raise RuntimeError("ZeroDivisionError")


@primitive("RemainderBackward0", complex=True)
def remainder(xp, x, y):
    _check_integer_divisor(xp, x, y)
    return xp.remainder(x, y)


@remainder.vjp("x")
def remainder_vjp_x(g, out, x, y):
    return unbroadcast(g, x)


@remainder.vjp("y", uses="x y")
def remainder_vjp_y(g, out, x, y):
    return unbroadcast(-g * floor_divide(x, y), y)


@remainder.jvp("x")
def remainder_jvp_x(t, out, x, y):
    return expand_to(t, out)


@remainder.jvp("y")
def remainder_jvp_y(t, out, x, y):
    return expand_to(-t * floor_divide(x, y), out)


@primitive()
def floor_divide(xp, x, y):
    _check_integer_divisor(xp, x, y)
    return xp.floor_divide(x, y)


@primitive("Atan2Backward0", dtypes=FLOAT, complex=True)
def atan2(xp, x, y):
    return xp.arctan2(x, y)


def over_squares(v, x, y):
    """v / (x^2 + y^2) for |v| <= max(|x|, |y|), without squaring x or y (the squares
    overflow or underflow from |x| ~ 1e19 or 1e-19 up in float32 although the quotient is
    representable): x and y are first scaled by s = max(|x|, |y|), so the sum of squares
    lies in [1, 2]. 0 where x == y == 0 (PyTorch takes atan2's slopes as 0 there)."""
    s = maximum(abs(x), abs(y))
    s = where(s == 0, 1.0, s)
    xs = x / s
    ys = y / s
    r2 = xs * xs + ys * ys
    return v / s / where(r2 == 0, 1.0, r2) / s


@atan2.vjp("x", uses="x y")
def atan2_vjp_x(g, out, x, y):
    return unbroadcast(g * over_squares(y, x, y), x)


@atan2.vjp("y", uses="x y")
def atan2_vjp_y(g, out, x, y):
    return unbroadcast(-g * over_squares(x, x, y), y)


@atan2.jvp("x")
def atan2_jvp_x(t, out, x, y):
    return expand_to(t * over_squares(y, x, y), out)


@atan2.jvp("y")
def atan2_jvp_y(t, out, x, y):
    return expand_to(-t * over_squares(x, x, y), out)


# -- selection -------------------------------------------------------------------------------

def _where_code(args, dtypes, out, numbers):
    # A select, where the condition is boolean and both branches of the result's dtype;
    # masking with a zero gives the zeros the kernel below gives (``+ 0.0``: never -0.0).
    condition, x, y = dtypes  # (None: a Python number -- compared with ``is``: NumPy
    if not (condition is None or condition == bool) or any(  # reads dtype == None as float64)
            d is not None and d != out for d in (x, y)):
        return None
    c, a, b = args
    if condition is not None and y is None and x is not None and numbers[2] == 0:
        return f"{a} + {b} if {c} else {b}"
    if condition is not None and x is None and y is not None and numbers[1] == 0:
        return f"{a} if {c} else {b} + {a}"
    return f"{a} if {c} else {b}"


@primitive("WhereBackward0", cast=(1, 2), saved_names=("condition", "self", "other"), complex=True,
           scalar_code=_where_code)
def where(xp, condition, x, y):
    # Masking with zero (every `where(mask, g, 0.0)` in a vjp) is done as a multiplication
    # by a boolean mask: branch-free, ~10x faster than NumPy's select on random masks. It
    # equals the select wherever x is finite (x * False would be nan for inf/nan x); adding
    # 0.0 turns every -0.0 into 0.0, and the select where some value is not finite gets the
    # same addition, so each element is ``x + 0.0 if mask else 0.0`` either way (what a
    # fused kernel computes: see _where_code).
    if getattr(condition, "dtype", None) == bool:
        masked = None
        if type(y) in _ZERO_TYPES and y == 0 and getattr(x, "ndim", 0) and x.dtype.kind in "fc":
            masked = x * condition
        elif type(x) in _ZERO_TYPES and x == 0 and getattr(y, "ndim", 0) and y.dtype.kind in "fc":
            masked = y * ~condition
        if masked is not None:
            if not xp.isfinite(masked).all():
                masked = xp.where(condition, x, y)
            return xp.add(masked, 0.0, out=masked)
    return xp.where(condition, x, y)


_ZERO_TYPES = (int, float)


@where.vjp("x", uses="condition")
def where_vjp_x(g, out, condition, x, y):
    return unbroadcast(where(condition, g, 0.0), x)


@where.vjp("y", uses="condition")
def where_vjp_y(g, out, condition, x, y):
    return unbroadcast(where(condition, 0.0, g), y)


@where.jvp("x")
def where_jvp_x(t, out, condition, x, y):
    return expand_to(where(condition, t, 0.0), out)


@where.jvp("y")
def where_jvp_y(t, out, condition, x, y):
    return expand_to(where(condition, 0.0, t), out)


def _real_only(x, y, name):
    """Refuse complex operands (their order is not the real numbers' order), as PyTorch does."""
    if getattr(x, "dtype", None) is not None and x.dtype.kind == "c" or \
            getattr(y, "dtype", None) is not None and y.dtype.kind == "c" or type(y) is complex:
        raise RuntimeError(f"{name} not implemented for complex tensors.")


# maximum/minimum split the gradient evenly between tied operands, as PyTorch does. Their
# kernels refuse complex operands, so the rules hold wherever they run.
@primitive("MaximumBackward0", ufunc="maximum", complex=True, scalar=True)
def maximum(xp, x, y):
    _real_only(x, y, "maximum")
    return xp.maximum(x, y)


@maximum.vjp("x", uses="x y")
def maximum_vjp_x(g, out, x, y):
    return unbroadcast(where(x > y, g, where(x == y, g / 2, 0.0)), x)


@maximum.vjp("y", uses="x y")
def maximum_vjp_y(g, out, x, y):
    return unbroadcast(where(y > x, g, where(x == y, g / 2, 0.0)), y)


@maximum.jvp("x")
def maximum_jvp_x(t, out, x, y):
    return expand_to(where(x > y, t, where(x == y, t / 2, 0.0)), out)


@maximum.jvp("y")
def maximum_jvp_y(t, out, x, y):
    return expand_to(where(y > x, t, where(x == y, t / 2, 0.0)), out)


@primitive("MinimumBackward0", ufunc="minimum", complex=True, scalar=True)
def minimum(xp, x, y):
    _real_only(x, y, "minimum")
    return xp.minimum(x, y)


@minimum.vjp("x", uses="x y")
def minimum_vjp_x(g, out, x, y):
    return unbroadcast(where(x < y, g, where(x == y, g / 2, 0.0)), x)


@minimum.vjp("y", uses="x y")
def minimum_vjp_y(g, out, x, y):
    return unbroadcast(where(y < x, g, where(x == y, g / 2, 0.0)), y)


@minimum.jvp("x")
def minimum_jvp_x(t, out, x, y):
    return expand_to(where(x < y, t, where(x == y, t / 2, 0.0)), out)


@minimum.jvp("y")
def minimum_jvp_y(t, out, x, y):
    return expand_to(where(y < x, t, where(x == y, t / 2, 0.0)), out)


@primitive("ClampBackward1", diagonal=True)
def clamp(xp, x, *, min=None, max=None):
    return xp.clip(x, min, max)


@clamp.vjp("x", uses="x")
def clamp_vjp(g, out, x, *, min=None, max=None):
    # The gradient passes where min <= x <= max (bounds included), as in PyTorch.
    if min is None:
        inside = x <= max
    elif max is None:
        inside = x >= min
    else:
        inside = (x >= min) & (x <= max)
    return where(inside, g, 0.0)


@primitive("ClampBackward0")
def clamp_tensor(xp, x, lo, hi):
    """``clamp`` with tensor bounds (a missing bound is passed as -inf or inf): where
    lo > hi the result is hi, as in PyTorch."""
    return xp.minimum(xp.maximum(x, lo), hi)


@clamp_tensor.vjp("x", uses="x lo hi")
def clamp_tensor_vjp_x(g, out, x, lo, hi):
    return unbroadcast(where((x >= lo) & (x <= hi), g, 0.0), x)


@clamp_tensor.vjp("lo", uses="x lo hi")
def clamp_tensor_vjp_lo(g, out, x, lo, hi):
    return unbroadcast(where((x < lo) & (lo < hi), g, 0.0), lo)


@clamp_tensor.vjp("hi", uses="x lo hi")
def clamp_tensor_vjp_hi(g, out, x, lo, hi):
    return unbroadcast(where((x > hi) | (hi < lo), g, 0.0), hi)


@clamp_tensor.jvp("x")
def clamp_tensor_jvp_x(t, out, x, lo, hi):
    return where((x >= lo) & (x <= hi), t, 0.0)


@clamp_tensor.jvp("lo")
def clamp_tensor_jvp_lo(t, out, x, lo, hi):
    return where((x < lo) & (lo < hi), t, 0.0)


@clamp_tensor.jvp("hi")
def clamp_tensor_jvp_hi(t, out, x, lo, hi):
    return where((x > hi) | (hi < lo), t, 0.0)


# -- comparisons and logic (no gradient) -----------------------------------------------------

@primitive(scalar=True)
def eq(xp, x, y):
    return x == y


@primitive(scalar=True)
def ne(xp, x, y):
    return x != y


@primitive(scalar=True)
def lt(xp, x, y):
    return x < y


@primitive(scalar=True)
def le(xp, x, y):
    return x <= y


@primitive(scalar=True)
def gt(xp, x, y):
    return x > y


@primitive(scalar=True)
def ge(xp, x, y):
    return x >= y


@primitive(dtypes=KEEP)
def logical_not(xp, x):
    return xp.logical_not(x)


@primitive(dtypes=KEEP)
def logical_and(xp, x, y):
    return xp.logical_and(x, y)


@primitive(dtypes=KEEP)
def logical_or(xp, x, y):
    return xp.logical_or(x, y)


@primitive(dtypes=KEEP)
def logical_xor(xp, x, y):
    return xp.logical_xor(x, y)


@primitive()
def bitwise_and(xp, x, y):
    return _bits("bitwise_and", x, y) & y


@primitive()
def bitwise_or(xp, x, y):
    return _bits("bitwise_or", x, y) | y


@primitive()
def bitwise_xor(xp, x, y):
    return _bits("bitwise_xor", x, y) ^ y


@primitive(dtypes=KEEP)
def bitwise_not(xp, x):
    return ~_bits("bitwise_not", x)


def _bits(name, x, *others):
    """``x``, after PyTorch's refusal of bit operations on floating point operands."""
    for a in (x, *others):
        dtype = getattr(a, "dtype", None)
        if dtype is not None and dtype.kind in "fc":
            from ..backend.dtypes import from_numpy_dtype
            raise NotImplementedError(f'"{name}_cpu" not implemented for \'{from_numpy_dtype(dtype).scalar_name}\'')
    return x


@primitive(dtypes=KEEP)
def isnan(xp, x):
    return xp.isnan(x)


@primitive(dtypes=KEEP)
def isinf(xp, x):
    return xp.isinf(x)


@primitive(dtypes=KEEP)
def isfinite(xp, x):
    return xp.isfinite(x)


from .complex_ import is_complex  # noqa: E402  (pow_base)
from .unary import abs, log  # noqa: E402  (pow's and atan2's vjps; unary imports nothing from here at load)

__all__ = ["add", "sub", "mul", "div", "neg", "pow", "remainder", "floor_divide", "atan2",
           "where", "maximum", "minimum", "clamp", "eq", "ne", "lt", "le", "gt", "ge",
           "logical_not", "logical_and", "logical_or", "logical_xor", "bitwise_and",
           "bitwise_or", "bitwise_xor", "bitwise_not", "isnan", "isinf", "isfinite",
           "zeros_like"]
