"""Elementwise functions of one operand: exponentials, logarithms, roots, trigonometry,
rounding. Their Jacobians are diagonal, so each vjp also serves as the jvp."""
import math

from .broadcast import zeros_like
from .complex_ import conj, is_complex, real_of
from .core import FLOAT, KEEP, primitive

_LN2 = math.log(2.0)
_INV_LN10 = 1.0 / math.log(10.0)
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


@primitive("ExpBackward0", dtypes=FLOAT, diagonal=True, ufunc="exp", complex=True, scalar=True)
def exp(xp, x):
    return xp.exp(x)


@exp.vjp("x", uses="out")
def exp_vjp(g, out, x):
    return g * out


@primitive("Exp2Backward0", dtypes=FLOAT, diagonal=True, ufunc="exp2", complex=True, scalar=True)
def exp2(xp, x):
    return xp.exp2(x)


@exp2.vjp("x", uses="out")
def exp2_vjp(g, out, x):
    return g * (out * _LN2)  # (g * out may overflow where the slope times g does not)


@primitive("Expm1Backward0", dtypes=FLOAT, diagonal=True, ufunc="expm1", complex=True, scalar=True)
def expm1(xp, x):
    return xp.expm1(x)


@expm1.vjp("x", uses="out")
def expm1_vjp(g, out, x):
    return g * (out + 1)


@primitive("LogBackward0", dtypes=FLOAT, diagonal=True, ufunc="log", complex=True, scalar=True)
def log(xp, x):
    return xp.log(x)


@log.vjp("x", uses="x")
def log_vjp(g, out, x):
    return g / x


@primitive("Log2Backward0", dtypes=FLOAT, diagonal=True, ufunc="log2", complex=True, scalar=True)
def log2(xp, x):
    return xp.log2(x)


@log2.vjp("x", uses="x")
def log2_vjp(g, out, x):
    return g / (x * _LN2)


@primitive("Log10Backward0", dtypes=FLOAT, diagonal=True, ufunc="log10", complex=True, scalar=True)
def log10(xp, x):
    return xp.log10(x)


@log10.vjp("x", uses="x")
def log10_vjp(g, out, x):
    return g * _INV_LN10 / x  # (x * ln 10 overflows for x > max / 2.3)


@primitive("Log1PBackward0", dtypes=FLOAT, diagonal=True, ufunc="log1p", complex=True, scalar=True)
def log1p(xp, x):
    return xp.log1p(x)


@log1p.vjp("x", uses="x")
def log1p_vjp(g, out, x):
    return g / (x + 1)


@primitive("SqrtBackward0", dtypes=FLOAT, diagonal=True, ufunc="sqrt", complex=True, scalar=True)
def sqrt(xp, x):
    return xp.sqrt(x)


@sqrt.vjp("x", uses="out")
def sqrt_vjp(g, out, x):
    return g / (2 * out)


@primitive("RsqrtBackward0", dtypes=FLOAT, diagonal=True, complex=True)
def rsqrt(xp, x):
    return 1 / xp.sqrt(x)


@rsqrt.vjp("x", uses="out")
def rsqrt_vjp(g, out, x):
    return -0.5 * g * out * out * out


@primitive("ReciprocalBackward0", dtypes=FLOAT, diagonal=True, ufunc="reciprocal", complex=True)
def reciprocal(xp, x):
    return 1 / x


@reciprocal.vjp("x", uses="out")
def reciprocal_vjp(g, out, x):
    return -g * out * out


@primitive("SinBackward0", dtypes=FLOAT, diagonal=True, ufunc="sin", complex=True, scalar=True)
def sin(xp, x):
    return xp.sin(x)


@sin.vjp("x", uses="x")
def sin_vjp(g, out, x):
    return g * cos(x)


@primitive("CosBackward0", dtypes=FLOAT, diagonal=True, ufunc="cos", complex=True, scalar=True)
def cos(xp, x):
    return xp.cos(x)


@cos.vjp("x", uses="x")
def cos_vjp(g, out, x):
    return -g * sin(x)


@primitive("TanBackward0", dtypes=FLOAT, diagonal=True, ufunc="tan", complex=True, scalar=True)
def tan(xp, x):
    return xp.tan(x)


@tan.vjp("x", uses="out")
def tan_vjp(g, out, x):
    return g * (1 + out * out)


@primitive("AsinBackward0", dtypes=FLOAT, diagonal=True, ufunc="arcsin", complex=True, scalar=True)
def asin(xp, x):
    return xp.arcsin(x)


@asin.vjp("x", uses="x")
def asin_vjp(g, out, x):
    return g / sqrt(1 - x * x)


@primitive("AcosBackward0", dtypes=FLOAT, diagonal=True, ufunc="arccos", complex=True, scalar=True)
def acos(xp, x):
    return xp.arccos(x)


@acos.vjp("x", uses="x")
def acos_vjp(g, out, x):
    return -g / sqrt(1 - x * x)


@primitive("AtanBackward0", dtypes=FLOAT, diagonal=True, ufunc="arctan", complex=True, scalar=True)
def atan(xp, x):
    return xp.arctan(x)


@atan.vjp("x", uses="x")
def atan_vjp(g, out, x):
    return g / (1 + x * x)


@primitive("SinhBackward0", dtypes=FLOAT, diagonal=True, ufunc="sinh", complex=True, scalar=True)
def sinh(xp, x):
    return xp.sinh(x)


@sinh.vjp("x", uses="x")
def sinh_vjp(g, out, x):
    return g * cosh(x)


@primitive("CoshBackward0", dtypes=FLOAT, diagonal=True, ufunc="cosh", complex=True, scalar=True)
def cosh(xp, x):
    return xp.cosh(x)


@cosh.vjp("x", uses="x")
def cosh_vjp(g, out, x):
    return g * sinh(x)


@primitive("TanhBackward0", dtypes=FLOAT, diagonal=True, ufunc="tanh", complex=True, scalar=True)
def tanh(xp, x):
    return xp.tanh(x)


@tanh.vjp("x", uses="out")
def tanh_vjp(g, out, x):
    return g * (1.0 - out * out)


@primitive("ErfBackward0", dtypes=FLOAT, diagonal=True, complex=True)
def erf(xp, x):
    if is_complex(x):  # (SciPy's erf, imported on first use; the rule is holomorphic)
        from .gamma import scipy_kernel
        return scipy_kernel(xp, "erf")(x)
    return xp.erf(x)


@erf.vjp("x", uses="x")
def erf_vjp(g, out, x):
    return g * _TWO_OVER_SQRT_PI * exp(-x * x)


@primitive("AbsBackward0", dtypes=KEEP, diagonal=True, ufunc="absolute", complex="real", scalar=True)
def abs(xp, x):
    return xp.abs(x)


@abs.vjp("x", uses="x")
def abs_vjp(g, out, x):
    # (a real result's cotangent is real; a complex one -- met where the result was
    # promoted to complex further on -- contributes its real part)
    return real_of(g) * conj_sgn(x)


@abs.jvp("x")
def abs_jvp(t, out, x):
    return real_of(t * conj_sgn(x))


def conj_sgn(x):
    """The conjugate of ``x / |x|`` (0 at 0): ``sign(x)`` for real ``x``. It is the slope
    of ``|z|``: ``d|z| = Re(conj_sgn(z) dz)``."""
    if not is_complex(x):
        return sign(x)
    from .arith import where
    a = abs(x)
    return conj(x) / where(a == 0, 1.0, a)


# Piecewise-constant functions: differentiable with a zero gradient, as in PyTorch. Their
# kernels refuse complex operands (NumPy's floor/ceil/trunc do), so the zero gradient is
# right wherever they run; round's is right for complex values too. sign is declared
# real-only: its kernel refuses complex operands as PyTorch's does, but NumPy's sign of a
# complex z (which AST mode's code runs) is z/|z|, whose derivative is not 0 -- the tape
# records that as its own composition (see numpy_map/ufuncs.py).
@primitive("SignBackward0", dtypes=KEEP, diagonal=True, ufunc="sign", scalar=True)
def sign(xp, x):
    if is_complex(x):
        raise RuntimeError("Unlike NumPy, torch.sign is not intended to support complex numbers. "
                           "Please use torch.sgn instead.")
    if getattr(getattr(x, "dtype", None), "kind", None) == "b":  # (PyTorch: a bool's sign is itself)
        return x.copy()
    return xp.sign(x)


@primitive("FloorBackward0", dtypes=KEEP, diagonal=True, complex=True, ufunc="floor", scalar=True)
def floor(xp, x):
    return xp.floor(x)


@primitive("CeilBackward0", dtypes=KEEP, diagonal=True, complex=True, ufunc="ceil", scalar=True)
def ceil(xp, x):
    return xp.ceil(x)


@primitive("TruncBackward0", dtypes=KEEP, diagonal=True, complex=True, ufunc="trunc", scalar=True)
def trunc(xp, x):
    return xp.trunc(x)


@primitive("RoundBackward0", dtypes=KEEP, diagonal=True, complex=True)
def round(xp, x, *, decimals=0):
    return xp.round(x, decimals)


def zero_vjp(g, out, x, **params):
    return zeros_like(g)


for _p in (sign, floor, ceil, trunc, round):
    _p.vjp("x")(zero_vjp)


@primitive("FracBackward0", dtypes=KEEP, diagonal=True, complex=True)
def frac(xp, x):
    return x - xp.trunc(x)


@frac.vjp("x")
def frac_vjp(g, out, x):
    return g
