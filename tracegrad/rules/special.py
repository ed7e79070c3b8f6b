"""Elementwise functions beyond unary.py and arith.py whose kernels NumPy has: inverse
hyperbolics, sinc, cbrt, hypot, logaddexp/logaddexp2, fmax/fmin, fmod, copysign,
ldexp/frexp, xlogy/xlog1py, logit, entr, nextafter; and the integer gcd, lcm and bit
shifts (no gradient). (The gamma, error and Bessel families, whose kernels come from SciPy,
are in :mod:`.gamma` and :mod:`.bessel`.)

Conventions where the derivative is not defined, chosen once and documented here:

* ``hypot`` at the origin: 0 for both operands (the subgradient ``norm`` uses; PyTorch's
  ``x / hypot`` gives nan there).
* ``fmax``/``fmin``: the gradient goes to the operand chosen; a NaN operand is never
  chosen (unless both are NaN: then the first); ties split it evenly, as ``maximum``
  does (PyTorch's ``fmax`` gives a tie to its first operand).
* ``xlogy(x, y)``/``xlog1py``: d/dx is ``log(y)``, 0 where ``x == y == 0`` (as PyTorch);
  d/dy is ``x / y``, 0 where ``x == 0`` -- also at ``x == y == 0``, where PyTorch's is NaN
  (0/0).
* ``copysign``: d/dx is ``sign(x) * sign(result)`` (0 at ``x == 0``), d/dy is 0, as in
  PyTorch.
* ``nextafter(x, y)``: d/dx is 1 where ``x != y`` (the result is ``x`` moved by one
  float) and 0 where they are equal (the result is ``y``), d/dy is 0, as in PyTorch.
* ``sinc`` at 0: slope 0, curvature -pi^2/3, computed by series near 0 (no 0/0).
* ``cbrt`` at 0: an infinite slope, as the function has (not ``sign * |x|^(1/3)``, whose
  second derivative would be wrong there).
"""
import math

from .activation import sigmoid
from .arith import isnan, where
from .broadcast import expand_to, indicator, unbroadcast, zeros_like
from .core import FLOAT, KEEP, PROMOTE, primitive
from .unary import log, log1p, sign, sqrt

_LN2 = math.log(2.0)
_PI2 = math.pi * math.pi


# -- inverse hyperbolic functions (holomorphic: the vjps hold for complex values) -------------

@primitive("AsinhBackward0", dtypes=FLOAT, diagonal=True, ufunc="arcsinh", complex=True)
def asinh(xp, x):
    return xp.arcsinh(x)


@asinh.vjp("x", uses="x")
def asinh_vjp(g, out, x):
    return g / sqrt(x * x + 1)


@primitive("AcoshBackward0", dtypes=FLOAT, diagonal=True, ufunc="arccosh", complex=True)
def acosh(xp, x):
    return xp.arccosh(x)


@acosh.vjp("x", uses="x")
def acosh_vjp(g, out, x):
    # sqrt(x - 1) sqrt(x + 1), not sqrt(x^2 - 1): the principal branches arccosh has for
    # complex x, and no overflow of x^2
    return g / (sqrt(x - 1) * sqrt(x + 1))


@primitive("AtanhBackward0", dtypes=FLOAT, diagonal=True, ufunc="arctanh", complex=True)
def atanh(xp, x):
    return xp.arctanh(x)


@atanh.vjp("x", uses="x")
def atanh_vjp(g, out, x):
    return g / (1 - x * x)


# -- sinc and cbrt ---------------------------------------------------------------------------

@primitive("SincBackward0", dtypes=FLOAT, diagonal=True)
def sinc(xp, x):
    """sin(pi x) / (pi x), 1 at 0 (NumPy's and PyTorch's normalised sinc)."""
    return xp.sinc(x)


@sinc.vjp("x", uses="x")
def sinc_vjp(g, out, x):
    return g * sinc_slope(x)


@primitive(dtypes=FLOAT, diagonal=True)
def sinc_slope(xp, x):
    """d sinc / dx = (cos(pi x) - sinc(x)) / x; by its series -pi^2 x / 3 + pi^4 x^3 / 30
    near 0, where the difference cancels (|x| < 1e-3: the next term is below 1e-16 of it)."""
    small = xp.abs(x) < 1e-3
    safe = xp.where(small, 1.0, x)
    far = (xp.cos(math.pi * safe) - xp.sinc(safe)) / safe
    near = x * (-_PI2 / 3 + _PI2 * _PI2 / 30 * x * x)
    return xp.where(small, near, far).astype(far.dtype, copy=False)


@sinc_slope.vjp("x", uses="x out")
def sinc_slope_vjp(g, out, x):
    # sinc'' = -pi^2 sinc - 2 sinc' / x, which is -pi^2 / 3 at 0
    safe = where(x == 0, 1.0, x)
    return g * where(x == 0, -_PI2 / 3, -_PI2 * sinc(x) - 2 * out / safe)


@primitive("CbrtBackward0", dtypes=FLOAT, diagonal=True, ufunc="cbrt")
def cbrt(xp, x):
    return xp.cbrt(x)


@cbrt.vjp("x", uses="out")
def cbrt_vjp(g, out, x):
    return g / (3 * out * out)


# -- two-operand functions ------------------------------------------------------------------

@primitive("HypotBackward0", dtypes=FLOAT, ufunc="hypot")
def hypot(xp, x, y):
    """sqrt(x^2 + y^2) without squaring (NumPy's hypot: no overflow or underflow)."""
    return xp.hypot(x, y)


def _over(v, out):
    """v / hypot, 0 at the origin (where v is 0 too)."""
    return v / where(out == 0, 1.0, out)


@hypot.vjp("x", uses="x out")
def hypot_vjp_x(g, out, x, y):
    return unbroadcast(g * _over(x, out), x)


@hypot.vjp("y", uses="y out")
def hypot_vjp_y(g, out, x, y):
    return unbroadcast(g * _over(y, out), y)


@hypot.jvp("x")
def hypot_jvp_x(t, out, x, y):
    return expand_to(t * _over(x, out), out)


@hypot.jvp("y")
def hypot_jvp_y(t, out, x, y):
    return expand_to(t * _over(y, out), out)


@primitive("LogaddexpBackward0", dtypes=FLOAT, ufunc="logaddexp")
def logaddexp(xp, x, y):
    return xp.logaddexp(x, y)


# d/dx log(e^x + e^y) = 1 / (1 + e^(y - x)) = sigmoid(x - y): finite where x - out is not
# (x = +inf, y finite), as PyTorch writes it
@logaddexp.vjp("x", uses="x y")
def logaddexp_vjp_x(g, out, x, y):
    return unbroadcast(g * sigmoid(x - y), x)


@logaddexp.vjp("y", uses="x y")
def logaddexp_vjp_y(g, out, x, y):
    return unbroadcast(g * sigmoid(y - x), y)


@logaddexp.jvp("x")
def logaddexp_jvp_x(t, out, x, y):
    return expand_to(t * sigmoid(x - y), out)


@logaddexp.jvp("y")
def logaddexp_jvp_y(t, out, x, y):
    return expand_to(t * sigmoid(y - x), out)


@primitive("Logaddexp2Backward0", dtypes=FLOAT, ufunc="logaddexp2")
def logaddexp2(xp, x, y):
    return xp.logaddexp2(x, y)


@logaddexp2.vjp("x", uses="x y")
def logaddexp2_vjp_x(g, out, x, y):
    return unbroadcast(g * sigmoid((x - y) * _LN2), x)


@logaddexp2.vjp("y", uses="x y")
def logaddexp2_vjp_y(g, out, x, y):
    return unbroadcast(g * sigmoid((y - x) * _LN2), y)


@logaddexp2.jvp("x")
def logaddexp2_jvp_x(t, out, x, y):
    return expand_to(t * sigmoid((x - y) * _LN2), out)


@logaddexp2.jvp("y")
def logaddexp2_jvp_y(t, out, x, y):
    return expand_to(t * sigmoid((y - x) * _LN2), out)


@primitive("FmaxBackward0", dtypes=PROMOTE, ufunc="fmax")
def fmax(xp, x, y):
    """The larger operand, ignoring a NaN one (NumPy's and PyTorch's fmax)."""
    return xp.fmax(x, y)


def nan_share(g, wins, x, y):
    """``g`` where an operand was chosen (``wins``), half of it at ties, 0 elsewhere."""
    return where(wins, g, where(x == y, g / 2, 0.0))


# x is chosen where it beats y or y is NaN (both NaN: x); y where it beats x or x alone is NaN
@fmax.vjp("x", uses="x y")
def fmax_vjp_x(g, out, x, y):
    return unbroadcast(nan_share(g, (x > y) | isnan(y), x, y), x)


@fmax.vjp("y", uses="x y")
def fmax_vjp_y(g, out, x, y):
    return unbroadcast(nan_share(g, (y > x) | (isnan(x) & (y == y)), x, y), y)


@fmax.jvp("x")
def fmax_jvp_x(t, out, x, y):
    return expand_to(nan_share(t, (x > y) | isnan(y), x, y), out)


@fmax.jvp("y")
def fmax_jvp_y(t, out, x, y):
    return expand_to(nan_share(t, (y > x) | (isnan(x) & (y == y)), x, y), out)


@primitive("FminBackward0", dtypes=PROMOTE, ufunc="fmin")
def fmin(xp, x, y):
    return xp.fmin(x, y)


@fmin.vjp("x", uses="x y")
def fmin_vjp_x(g, out, x, y):
    return unbroadcast(nan_share(g, (x < y) | isnan(y), x, y), x)


@fmin.vjp("y", uses="x y")
def fmin_vjp_y(g, out, x, y):
    return unbroadcast(nan_share(g, (y < x) | (isnan(x) & (y == y)), x, y), y)


@fmin.jvp("x")
def fmin_jvp_x(t, out, x, y):
    return expand_to(nan_share(t, (x < y) | isnan(y), x, y), out)


@fmin.jvp("y")
def fmin_jvp_y(t, out, x, y):
    return expand_to(nan_share(t, (y < x) | (isnan(x) & (y == y)), x, y), out)


def _fmod_name(args, params):
    return "FmodBackward0" if isinstance(args[1], (int, float)) else "FmodBackward1"


@primitive(_fmod_name, dtypes=PROMOTE, ufunc="fmod")
def fmod(xp, x, y):
    """x - trunc(x / y) y: the remainder with the dividend's sign (C's fmod)."""
    return xp.fmod(x, y)


@fmod.vjp("x")
def fmod_vjp_x(g, out, x, y):
    return unbroadcast(g, x)


@fmod.vjp("y", uses="x y")
def fmod_vjp_y(g, out, x, y):
    return unbroadcast(-g * truncated_quotient(x, y), y)


@fmod.jvp("x")
def fmod_jvp_x(t, out, x, y):
    return expand_to(t, out)


@fmod.jvp("y")
def fmod_jvp_y(t, out, x, y):
    return expand_to(-t * truncated_quotient(x, y), out)


@primitive(dtypes=FLOAT)
def truncated_quotient(xp, x, y):
    """trunc(x / y) (piecewise constant: no gradient)."""
    return xp.trunc(x / y)


@primitive("CopysignBackward0", dtypes=FLOAT, ufunc="copysign")
def copysign(xp, x, y):
    return xp.copysign(x, y)


@copysign.vjp("x", uses="x out")
def copysign_vjp_x(g, out, x, y):
    return unbroadcast(g * (sign(x) * sign(out)), x)


@copysign.vjp("y")
def copysign_vjp_y(g, out, x, y):
    return unbroadcast(zeros_like(g), y)


@copysign.jvp("x")
def copysign_jvp_x(t, out, x, y):
    return expand_to(t * (sign(x) * sign(out)), out)


@copysign.jvp("y")
def copysign_jvp_y(t, out, x, y):
    return expand_to(zeros_like(t), out)


@primitive("LdexpBackward0", dtypes=FLOAT, cast=(0,), ufunc="ldexp", linear=True)
def ldexp(xp, x, e):
    """x * 2**e, exactly (``e`` holds integers; it takes no gradient)."""
    if getattr(e, "dtype", None) is not None and e.dtype.kind not in "iu":
        e = e.astype(xp.int64)
    return xp.ldexp(x, e)


@ldexp.vjp("x", uses="e")
def ldexp_vjp(g, out, x, e):
    return unbroadcast(ldexp(g, e), x)


@primitive("FrexpBackward0", dtypes=KEEP, nout=2, result_names=("mantissa", "exponent"))
def frexp(xp, x):
    """(mantissa, exponent) with x = mantissa * 2**exponent; the exponent is an integer
    result, so only the mantissa carries a gradient: d mantissa / dx = 2**-exponent."""
    m, e = xp.frexp(x)
    return m, e.astype(xp.int32)


@frexp.vjp("x", uses="out")
def frexp_vjp(g, out, x):
    return ldexp(g[0], -out[1])


@frexp.jvp("x")
def frexp_jvp(t, out, x):
    return ldexp(t, -out[1]), None


# -- x log y, logit, entropy ---------------------------------------------------------------

@primitive("XlogyBackward0", dtypes=FLOAT)
def xlogy(xp, x, y):
    """x log(y), 0 where x == 0 (even where y is 0), NaN where y is (as in PyTorch)."""
    zero = (x == 0) & ~xp.isnan(y)
    return xp.where(zero, 0.0, x * xp.log(xp.where(zero, 1.0, y))).astype(
        xp.result_type(x, y, 1.0), copy=False)


def corner(x, y, like):
    """1 where x == y == 0 (the corner where xlogy is not differentiable), in the dtype of
    ``like`` (the gradient): added to y there, it makes log(y) and x / y finite (0). Not
    ``where(mask, 1.0, y)``, which would be float64 where y is a Python number."""
    return indicator((x == 0) & (y == 0), like)


def log_unless_both_zero(x, y, like):
    """d xlogy / dx: log(y), 0 at the corner."""
    return log(y + corner(x, y, like))


def x_over(x, y, like):
    """d xlogy / dy: x / y, 0 at the corner."""
    return x / (y + corner(x, y, like))


@xlogy.vjp("x", uses="x y")
def xlogy_vjp_x(g, out, x, y):
    return unbroadcast(g * log_unless_both_zero(x, y, g), x)


@xlogy.vjp("y", uses="x y")
def xlogy_vjp_y(g, out, x, y):
    return unbroadcast(g * x_over(x, y, g), y)


@xlogy.jvp("x")
def xlogy_jvp_x(t, out, x, y):
    return expand_to(t * log_unless_both_zero(x, y, out), out)


@xlogy.jvp("y")
def xlogy_jvp_y(t, out, x, y):
    return expand_to(t * x_over(x, y, out), out)


@primitive("SpecialXlog1PyBackward0", dtypes=FLOAT)
def xlog1py(xp, x, y):
    """x log(1 + y), 0 where x == 0 (even where y is -1), NaN where y is (as in PyTorch)."""
    zero = (x == 0) & ~xp.isnan(y)
    return xp.where(zero, 0.0, x * xp.log1p(xp.where(zero, 0.0, y))).astype(
        xp.result_type(x, y, 1.0), copy=False)


@xlog1py.vjp("x", uses="x y")
def xlog1py_vjp_x(g, out, x, y):
    return unbroadcast(g * log1p(y + corner(x, y + 1, g)), x)


@xlog1py.vjp("y", uses="x y")
def xlog1py_vjp_y(g, out, x, y):
    return unbroadcast(g * x_over(x, y + 1, g), y)


@xlog1py.jvp("x")
def xlog1py_jvp_x(t, out, x, y):
    return expand_to(t * log1p(y + corner(x, y + 1, out)), out)


@xlog1py.jvp("y")
def xlog1py_jvp_y(t, out, x, y):
    return expand_to(t * x_over(x, y + 1, out), out)


@primitive("LogitBackward0", dtypes=FLOAT, diagonal=True)
def logit(xp, x, *, eps=None):
    """log(x / (1 - x)); with ``eps``, x is first clamped to [eps, 1 - eps] (PyTorch's)."""
    if eps is not None:
        x = xp.clip(x, eps, 1 - eps)
    return xp.log(x / (1 - x))


@logit.vjp("x", uses="x")
def logit_vjp(g, out, x, *, eps=None):
    slope = g / (x * (1 - x))
    if eps is None:
        return slope
    return where((x < eps) | (x > 1 - eps), 0.0, slope)


@primitive("SpecialEntrBackward0", dtypes=FLOAT, diagonal=True)
def entr(xp, x):
    """-x log x for x > 0, 0 at 0, -inf below (SciPy's and PyTorch's entr)."""
    inside = -x * xp.log(xp.where(x > 0, x, 1.0))
    return xp.where(x > 0, inside, xp.where(x == 0, 0.0, -xp.inf)).astype(inside.dtype, copy=False)


@entr.vjp("x", uses="x")
def entr_vjp(g, out, x):
    return -g * (log(x) + 1)


# -- integer arithmetic and bits (no gradient) and nextafter ---------------------------------

def _common(xp, x, y):
    """Both operands as arrays of their (promoted) dtype: a Python number takes the
    array's, as it did in the promotion."""
    dtype = (x if hasattr(x, "dtype") else y).dtype
    return xp.asarray(x, dtype=dtype), xp.asarray(y, dtype=dtype)


def _gcd(xp, x, y):
    """PyTorch's Euclid in the operands' dtype: ``|x|`` and ``|y|`` (where the most negative
    integer stays negative), then ``a, b = b % a, a`` with C's remainder (the sign of the
    dividend) until ``a`` is 0. NumPy's gcd takes absolute values as unsigned, so it
    differs where the most negative integer takes part."""
    x, y = _common(xp, x, y)
    a, b = (xp.array(v) for v in xp.broadcast_arrays(xp.absolute(x), xp.absolute(y)))
    one = xp.ones((), dtype=a.dtype)
    while True:
        going = a != 0
        if not going.any():
            return b
        a, b = xp.where(going, xp.fmod(b, xp.where(going, a, one)), a), xp.where(going, a, b)


@primitive()
def gcd(xp, x, y):
    """The greatest common divisor, non-negative (but where the most negative integer takes
    part, as in PyTorch); gcd(0, 0) = 0."""
    return _gcd(xp, x, y)


@primitive()
def lcm(xp, x, y):
    """The least common multiple as PyTorch computes it, ``|x / gcd(x, y) * y|``, in C's
    int for dtypes narrower than it and in the dtype otherwise, then cast back (so an
    overflowing product wraps); 0 where either is 0."""
    x, y = _common(xp, x, y)
    g = _gcd(xp, x, y)
    zero = g == 0
    quotient = xp.floor_divide(x, xp.where(zero, xp.ones_like(g), g))  # (exact: g divides x)
    if g.dtype.itemsize < 4:
        quotient = quotient.astype(xp.int64)
    product = xp.absolute(xp.multiply(quotient, y)).astype(g.dtype)
    return xp.where(zero, xp.zeros_like(g), product)


def _shift_operands(xp, x, s):
    """``x`` and ``s`` as arrays of their common dtype, where a shift amount of the
    dtype's bit width or more, or a negative one, falls outside (PyTorch defines those)."""
    x, s = _common(xp, x, s)
    outside = (s < 0) | (s >= 8 * x.dtype.itemsize)
    return x, xp.where(outside, xp.zeros_like(s), s), outside


@primitive()
def bitwise_left_shift(xp, x, s):
    """``x << s`` in ``x``'s integer dtype (wrapping); 0 for a shift outside [0, bits)."""
    x, s, outside = _shift_operands(xp, x, s)
    shifted = xp.left_shift(x, s)
    return xp.where(outside, xp.zeros_like(shifted), shifted)


@primitive()
def bitwise_right_shift(xp, x, s):
    """``x >> s``, arithmetic for signed dtypes; a shift outside [0, bits) leaves the sign
    alone: -1 for a negative ``x``, else 0 (PyTorch's)."""
    x, s, outside = _shift_operands(xp, x, s)
    shifted = xp.right_shift(x, s)
    return xp.where(outside, xp.negative((x < 0).astype(shifted.dtype)), shifted)


@primitive("NextafterBackward0")
def nextafter(xp, x, y):
    """The next representable float after ``x`` towards ``y`` (``y`` where they are equal:
    NumPy's float16 loop gives ``x`` there, the wrong zero for ``nextafter(0.0, -0.0)``)."""
    out = xp.nextafter(x, y)
    return xp.where(x == y, xp.asarray(y, dtype=out.dtype), out)


@nextafter.vjp("x", uses="x y")
def nextafter_vjp_x(g, out, x, y):
    return unbroadcast(where(x != y, g, 0.0), x)


@nextafter.vjp("y")
def nextafter_vjp_y(g, out, x, y):
    return unbroadcast(zeros_like(g), y)


@nextafter.jvp("x")
def nextafter_jvp_x(t, out, x, y):
    return expand_to(where(x != y, t, 0.0), out)


@nextafter.jvp("y")
def nextafter_jvp_y(t, out, x, y):
    return expand_to(zeros_like(t), out)


__all__ = ["asinh", "acosh", "atanh", "sinc", "sinc_slope", "cbrt", "hypot", "logaddexp",
           "logaddexp2", "fmax", "fmin", "fmod", "truncated_quotient", "copysign", "ldexp",
           "frexp", "xlogy", "xlog1py", "logit", "entr", "gcd", "lcm", "bitwise_left_shift",
           "bitwise_right_shift", "nextafter"]
