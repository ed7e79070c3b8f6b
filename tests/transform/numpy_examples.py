"""One example (or several) of every NumPy and SciPy name the tape claims
(``tracegrad.transform.tape.numpy_map.catalog.claimed``), written as users write NumPy:
plain module-level functions (AST mode reads their source) that call the function with
realistic options and reduce the result to a real number with fixed weights
(:func:`weigh`, so a gradient sent to the wrong element shows), and the arguments, drawn
inside each function's domain: away from ties, kinks and poles, positive definite
matrices for cholesky, complex numbers where the function is about them.

``EXAMPLES`` are differentiated; ``NOT_DIFFERENTIABLE`` examples call a function whose
result carries no derivative (comparisons, argsort, shape...) inside a differentiated
function and return ``(loss, that result)``, so the test can check the tape records it
as a constant with NumPy's exact value. tests/transform/test_numpy_coverage.py runs both.
"""
import dataclasses
import zlib

import numpy as np

import tracegrad.scipy.special as ts

try:
    import scipy.special as sp
except ImportError:  # (the examples that need SciPy are marked and skipped)
    sp = None

EXAMPLES = []
NOT_DIFFERENTIABLE = []
# NumPy's functions that tracegrad differentiates with SciPy's kernels (np.i0's derivative is i1)
NEEDS_SCIPY = {"numpy.i0"}
# tracegrad.scipy.special functions computed without SciPy's kernels (the others need SciPy)
NO_SCIPY = {"logsumexp", "softmax", "log_softmax", "expit", "log_expit", "logit", "erf", "xlogy",
            "xlog1py", "entr", "exp2", "expm1", "log1p", "cbrt", "sinc"}


@dataclasses.dataclass(frozen=True)
class Example:
    name: str           # the claimed public name, e.g. "numpy.linalg.inv"
    fn: object          # a module-level function of the arguments: a real number
    makers: tuple       # one function of a Generator per argument
    argnums: tuple      # the arguments differentiated (default: every float/complex array)
    smooth: bool        # twice differentiable where the arguments are drawn
    rtol: float

    @property
    def id(self):
        return self.fn.__name__

    @property
    def scipy(self):
        leaf = self.name.rsplit(".", 1)[-1]
        return (self.name in NEEDS_SCIPY or self.name.startswith("scipy.")
                or (self.name.startswith("tracegrad.scipy.") and leaf not in NO_SCIPY))

    def args(self):
        """The arguments, the same on every call (a generator seeded by the example's name)."""
        rng = np.random.default_rng(zlib.crc32(self.id.encode()))
        return tuple(make(rng) for make in self.makers)

    def nums(self, args):
        if self.argnums is not None:
            return self.argnums
        return tuple(i for i, a in enumerate(args) if isinstance(a, np.ndarray) and a.dtype.kind in "fc")


def example(name, *makers, argnums=None, smooth=True, rtol=1e-5, constant=False):
    """Register the decorated function as an example of ``name`` (``constant``: a
    NOT_DIFFERENTIABLE one, returning ``(loss, the constant result)``)."""
    def put(fn):
        assert all(e.id != fn.__name__ for e in EXAMPLES + NOT_DIFFERENTIABLE), fn.__name__
        (NOT_DIFFERENTIABLE if constant else EXAMPLES).append(Example(name, fn, makers, argnums, smooth, rtol))
        return fn
    return put


# -- arguments (each a function of a numpy Generator) -------------------------------------------

def normal(*shape):
    return lambda rng: rng.standard_normal(shape)


def between(lo, hi, *shape):
    return lambda rng: rng.uniform(lo, hi, shape)


def unit(*shape):
    return between(-0.9, 0.9, *shape)


def pos(*shape):
    return between(0.5, 2.0, *shape)


def away(*shape):
    """Both signs, at least 0.3 from zero (abs, sign, copysign, cbrt have kinks there)."""
    return lambda rng: rng.uniform(0.3, 1.5, shape) * rng.choice([-1.0, 1.0], shape)


def cnormal(*shape):
    return lambda rng: rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


def fixed(value):
    return lambda rng: value


def spd(*shape):
    """Symmetric positive definite (stacked when ``shape`` has more than two dims)."""
    def make(rng):
        b = rng.standard_normal(shape)
        return b @ np.swapaxes(b, -1, -2) + shape[-1] * np.eye(shape[-1])
    return make


def hpd(*shape):
    """Hermitian positive definite, complex."""
    def make(rng):
        b = rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
        return b @ np.conj(np.swapaxes(b, -1, -2)) + shape[-1] * np.eye(shape[-1])
    return make


def invertible(*shape, dtype=float):
    def make(rng):
        b = rng.standard_normal(shape)
        if dtype is complex:
            b = b + 1j * rng.standard_normal(shape)
        return b + 3 * np.eye(shape[-1])
    return make


def spread(*shape, dtype=float):
    """Singular values 1, 2, ... (well apart, so singular vectors are well defined)."""
    def make(rng):
        m, n = shape[-2:]
        k = min(m, n)
        def orth(rows):
            g = rng.standard_normal(shape[:-2] + (rows, k))
            if dtype is complex:
                g = g + 1j * rng.standard_normal(g.shape)
            return np.linalg.qr(g)[0]
        return (orth(m) * np.arange(1.0, k + 1)) @ np.conj(np.swapaxes(orth(n), -1, -2))
    return make


def symmetric_spread(n):
    """Symmetric with eigenvalues -2, 1, 3, 5... (distinct: eigenvectors well defined)."""
    def make(rng):
        q = np.linalg.qr(rng.standard_normal((n, n)))[0]
        return (q * np.array([-2.0, 1.0, 3.0, 5.0, 8.0][:n])) @ q.T
    return make


def real_eigen(n):
    """A non-symmetric matrix with real, distinct eigenvalues 1, 2, 4, ..."""
    def make(rng):
        p = rng.standard_normal((n, n)) + 3 * np.eye(n)
        return p @ np.diag(2.0 ** np.arange(n)) @ np.linalg.inv(p)
    return make


def with_nans(*shape):
    def make(rng):
        x = rng.standard_normal(shape)
        x.flat[[1, 6, 8][:x.size // 4 + 1]] = np.nan
        return x
    return make


# -- the reduction to a number --------------------------------------------------------------------

WEIGHTS = np.random.default_rng(2015).uniform(0.5, 2.0, 512) * np.resize([1.0, -1.0, 1.0], 512)
MASK = np.array([[True, False, True, True], [False, True, False, True], [True, True, False, False]])


def weigh(y):
    """sum(sin(y) * w), fixed weights w of y's shape: every element of a real y counts, with
    its own weight (sin makes linear functions' second derivatives nonzero too)."""
    return np.sum(np.sin(y) * WEIGHTS[:y.size].reshape(y.shape))


def weigh_c(z):
    """weigh for complex z: its real and imaginary parts, weighed differently."""
    return weigh(np.real(z)) + weigh(np.imag(z) * 0.7 + 0.2)


# -- elementwise: numpy's ufuncs ------------------------------------------------------------------
# (one-line examples: the table is long and each line says all there is to it)

@example("numpy.sin", normal(3, 4))
def np_sin(x): return weigh(np.sin(x))
@example("numpy.sin", cnormal(2, 3))
def np_sin_complex(z): return weigh_c(np.sin(z))
@example("numpy.cos", normal(3, 4))
def np_cos(x): return weigh(np.cos(x))
@example("numpy.tan", between(-1.2, 1.2, 3, 4))
def np_tan(x): return weigh(np.tan(x))
@example("numpy.arcsin", unit(3, 4))
def np_arcsin(x): return weigh(np.arcsin(x))
@example("numpy.arccos", unit(3, 4))
def np_arccos(x): return weigh(np.arccos(x))
@example("numpy.arctan", normal(3, 4))
def np_arctan(x): return weigh(np.arctan(x))
@example("numpy.sinh", normal(3, 4))
def np_sinh(x): return weigh(np.sinh(x))
@example("numpy.cosh", normal(3, 4))
def np_cosh(x): return weigh(np.cosh(x))
@example("numpy.tanh", normal(3, 4))
def np_tanh(x): return weigh(np.tanh(x))
@example("numpy.tanh", cnormal(4))
def np_tanh_complex(z): return weigh_c(np.tanh(z * 0.5))
@example("numpy.arcsinh", normal(3, 4))
def np_arcsinh(x): return weigh(np.arcsinh(3 * x))
@example("numpy.arccosh", between(1.2, 3.0, 3, 4))
def np_arccosh(x): return weigh(np.arccosh(x))
@example("numpy.arctanh", unit(3, 4))
def np_arctanh(x): return weigh(np.arctanh(x))
@example("numpy.exp", normal(3, 4))
def np_exp(x): return weigh(np.exp(x))
@example("numpy.exp", cnormal(3, 2))
def np_exp_complex(z): return weigh_c(np.exp(z))
@example("numpy.exp2", normal(3, 4))
def np_exp2(x): return weigh(np.exp2(x))
@example("numpy.expm1", normal(3, 4))
def np_expm1(x): return weigh(np.expm1(x))
@example("numpy.log", pos(3, 4))
def np_log(x): return weigh(np.log(x))
@example("numpy.log", cnormal(2, 3))
def np_log_complex(z): return weigh_c(np.log(z))
@example("numpy.log2", pos(3, 4))
def np_log2(x): return weigh(np.log2(x))
@example("numpy.log10", pos(3, 4))
def np_log10(x): return weigh(np.log10(x))
@example("numpy.log1p", between(-0.5, 2.0, 3, 4))
def np_log1p(x): return weigh(np.log1p(x))
@example("numpy.sqrt", pos(3, 4))
def np_sqrt(x): return weigh(np.sqrt(x))
@example("numpy.sqrt", cnormal(4))
def np_sqrt_complex(z): return weigh_c(np.sqrt(z))
@example("numpy.cbrt", away(3, 4))
def np_cbrt(x): return weigh(np.cbrt(x))
@example("numpy.square", normal(3, 4))
def np_square(x): return weigh(np.square(x))
@example("numpy.reciprocal", away(3, 4))
def np_reciprocal(x): return weigh(np.reciprocal(x))
@example("numpy.reciprocal", cnormal(4))
def np_reciprocal_complex(z): return weigh_c(np.reciprocal(z))
@example("numpy.negative", normal(3, 4))
def np_negative(x): return weigh(np.negative(x) * x)
@example("numpy.positive", normal(3, 4))
def np_positive(x): return weigh(np.positive(x) * x)
@example("numpy.absolute", away(3, 4))
def np_absolute(x): return weigh(np.abs(x))
@example("numpy.absolute", cnormal(3, 2))
def np_absolute_complex(z): return weigh(np.absolute(z))
@example("numpy.fabs", away(3, 4))
def np_fabs(x): return weigh(np.fabs(x))
@example("numpy.sign", away(3, 4))
def np_sign(x): return weigh(x * np.sign(x - 0.1))
@example("numpy.sign", cnormal(3, 2))
def np_sign_complex(z): return weigh_c(np.sign(z))  # (NumPy 2: z / |z|, differentiable)
@example("numpy.floor", normal(3, 4))
def np_floor(x): return weigh(x * np.floor(3 * x))
@example("numpy.ceil", normal(3, 4))
def np_ceil(x): return weigh(x * np.ceil(3 * x))
@example("numpy.trunc", normal(3, 4))
def np_trunc(x): return weigh(x * np.trunc(3 * x))
@example("numpy.rint", normal(3, 4))
def np_rint(x): return weigh(x * np.rint(3 * x))
@example("numpy.deg2rad", normal(3, 4))
def np_deg2rad(x): return weigh(np.deg2rad(50 * x))
@example("numpy.radians", normal(3, 4))
def np_radians(x): return weigh(np.radians(50 * x))
@example("numpy.rad2deg", normal(3, 4))
def np_rad2deg(x): return weigh(np.rad2deg(x) / 50)
@example("numpy.degrees", normal(3, 4))
def np_degrees(x): return weigh(np.degrees(x) / 50)
@example("numpy.conjugate", cnormal(3, 2))
def np_conjugate(z): return weigh_c(np.conjugate(z) * (1.5 - 0.5j))
@example("numpy.conjugate", cnormal(4))
def np_conj_product(z): return weigh(np.real(np.conj(z) * z * z))
@example("numpy.conjugate", normal(3, 4))
def np_conjugate_real(x): return weigh(np.conjugate(x) * x)


@example("numpy.real", cnormal(3, 2))
def np_real(z): return weigh(np.real(z * z))
@example("numpy.real", normal(3, 4))
def np_real_of_real(x): return weigh(np.real(x) * x)
@example("numpy.imag", cnormal(3, 2))
def np_imag(z): return weigh(np.imag(z * z) + z.imag)
@example("numpy.angle", cnormal(3, 2))
def np_angle(z): return weigh(np.angle(z) + np.angle(z * z, deg=True) / 90)
@example("numpy.angle", away(4))
def np_angle_of_real(x): return weigh(np.angle(x + 0.2j) * x)


@example("numpy.frexp", away(3, 4))
def np_frexp(x):
    mantissa, exponent = np.frexp(4 * x)
    return weigh(mantissa * exponent)


@example("numpy.add", normal(3, 4), normal(4))
def np_add(x, y): return weigh(np.add(x, y) * x)
@example("numpy.subtract", normal(3, 4), normal(3, 1))
def np_subtract(x, y): return weigh(np.subtract(x, y) * x)
@example("numpy.multiply", normal(3, 4), normal(4))
def np_multiply(x, y): return weigh(np.multiply(x, y))
@example("numpy.multiply", cnormal(3), cnormal(3))
def np_multiply_complex(z, w): return weigh_c(z * w)
@example("numpy.divide", normal(3, 4), pos(3, 4))
def np_divide(x, y): return weigh(np.divide(x, y))
@example("numpy.divide", cnormal(3), cnormal(3))
def np_divide_complex(z, w): return weigh_c(z / w)
@example("numpy.power", pos(3, 4), normal(3, 4))
def np_power(x, y): return weigh(np.power(x, y))
@example("numpy.power", normal(3, 4))
def np_power_int(x): return weigh(np.power(x, 3) + x ** 2)
@example("numpy.power", cnormal(3))
def np_power_complex(z): return weigh_c(z ** 3 + np.power(z, 2.5))
@example("numpy.float_power", pos(3, 4), normal(4))
def np_float_power(x, y): return weigh(np.float_power(x, y))
@example("numpy.arctan2", normal(3, 4), away(3, 4))
def np_arctan2(y, x): return weigh(np.arctan2(y, x))
@example("numpy.hypot", away(3, 4), normal(4))
def np_hypot(x, y): return weigh(np.hypot(x, y))
@example("numpy.logaddexp", normal(3, 4), normal(3, 4))
def np_logaddexp(x, y): return weigh(np.logaddexp(x, y))
@example("numpy.logaddexp2", normal(3, 4), normal(4))
def np_logaddexp2(x, y): return weigh(np.logaddexp2(x, y))
@example("numpy.maximum", normal(3, 4), normal(3, 4))
def np_maximum(x, y): return weigh(np.maximum(x, y))
@example("numpy.minimum", normal(3, 4), normal(4))
def np_minimum(x, y): return weigh(np.minimum(x, y))
@example("numpy.fmax", normal(3, 4), normal(3, 4))
def np_fmax(x, y): return weigh(np.fmax(x, np.where(MASK, np.nan, y)))
@example("numpy.fmin", normal(3, 4), normal(3, 4))
def np_fmin(x, y): return weigh(np.fmin(np.where(MASK, np.nan, x), y))
@example("numpy.copysign", away(3, 4), away(3, 4))
def np_copysign(x, y): return weigh(np.copysign(x, y) * y)
@example("numpy.fmod", normal(3, 4), pos(3, 4))
def np_fmod(x, y): return weigh(np.fmod(3 * x, y))
@example("numpy.remainder", normal(3, 4), pos(3, 4))
def np_remainder(x, y): return weigh(np.remainder(3 * x, y))
@example("numpy.floor_divide", normal(3, 4), pos(3, 4))
def np_floor_divide(x, y): return weigh(x * y * np.floor_divide(3 * x, y))
@example("numpy.ldexp", normal(3, 4), fixed(np.array([[0, 1, -2, 3]] * 3)))
def np_ldexp(x, e): return weigh(np.ldexp(x, e) / 4)
@example("numpy.sinc", normal(3, 4))
def np_sinc(x): return weigh(np.sinc(x))
@example("numpy.i0", normal(3, 4))
def np_i0(x): return weigh(np.i0(x))

# the ufunc reductions, as NumPy spells them

@example("numpy.add.reduce", normal(3, 4))
def np_add_reduce(x): return weigh(np.add.reduce(x * x, axis=1))
@example("numpy.multiply.reduce", normal(3, 4))
def np_multiply_reduce(x): return weigh(np.multiply.reduce(x, axis=0))
@example("numpy.maximum.reduce", normal(3, 4))
def np_maximum_reduce(x): return weigh(np.maximum.reduce(x, axis=1, keepdims=True))
@example("numpy.minimum.reduce", normal(2, 3, 4))
def np_minimum_reduce(x): return weigh(np.minimum.reduce(x, axis=(0, 2)))


# -- reductions and scans -------------------------------------------------------------------------

@example("numpy.sum", normal(3, 4))
def np_sum(x): return weigh(np.sum(x * x, axis=1, keepdims=True))
@example("numpy.sum", cnormal(3, 2))
def np_sum_complex(z): return weigh_c(np.sum(z * z, axis=0))
@example("numpy.prod", normal(3, 4))
def np_prod(x): return weigh(np.prod(x, axis=0))
@example("numpy.prod", cnormal(2, 3))
def np_prod_complex(z): return weigh_c(np.prod(z, axis=1))
@example("numpy.mean", normal(2, 3, 4))
def np_mean(x): return weigh(np.mean(x * x, axis=(0, 2)))
@example("numpy.average", normal(3, 4), pos(4))
def np_average(x, w): return weigh(np.average(x, axis=1, weights=w))
@example("numpy.average", normal(3, 4))
def np_average_list_weights(x): return weigh(np.average(x, axis=0, weights=[1.0, 2.0, 3.0]))
@example("numpy.average", normal(3, 4))
def np_average_returned(x):
    avg, total = np.average(x * x, axis=0, weights=x + 3.0, returned=True)
    return weigh(avg) + weigh(total / 10)
@example("numpy.max", normal(3, 4))
def np_max(x): return weigh(np.max(x, axis=1))
@example("numpy.amax", normal(3, 4))
def np_amax(x): return weigh(np.amax(x, axis=0, keepdims=True))
@example("numpy.min", normal(3, 4))
def np_min(x): return weigh(np.min(x) * x)
@example("numpy.amin", normal(2, 3, 4))
def np_amin(x): return weigh(np.amin(x, axis=(1, 2)))
@example("numpy.ptp", normal(3, 4))
def np_ptp(x): return weigh(np.ptp(x, axis=0))
@example("numpy.var", normal(3, 4))
def np_var(x): return weigh(np.var(x, axis=1, keepdims=True))
@example("numpy.var", cnormal(4))
def np_var_complex(z): return weigh(np.var(z, ddof=1))
@example("numpy.std", normal(3, 4))
def np_std(x): return weigh(np.std(x, axis=0, ddof=1))
@example("numpy.cumsum", normal(3, 4))
def np_cumsum(x): return weigh(np.cumsum(x, axis=1))
@example("numpy.cumsum", cnormal(4))
def np_cumsum_complex(z): return weigh_c(np.cumsum(z))
@example("numpy.cumprod", normal(3, 4))
def np_cumprod(x): return weigh(np.cumprod(x, axis=0))
@example("numpy.cumprod", normal(2, 3))
def np_cumprod_flat(x): return weigh(np.cumprod(x))
@example("numpy.median", normal(5, 4))
def np_median(x): return weigh(np.median(x, axis=0))
@example("numpy.median", normal(3, 4))
def np_median_even(x): return weigh(np.median(x, axis=1, keepdims=True))
@example("numpy.percentile", normal(3, 5))
def np_percentile(x): return weigh(np.percentile(x, [10.0, 50.0, 80.0], axis=1))
@example("numpy.quantile", normal(3, 4))
def np_quantile(x): return weigh(np.quantile(x, 0.3))
@example("numpy.quantile", normal(3, 5))
def np_quantile_method(x): return weigh(np.quantile(x, [0.25, 0.6], axis=0, method="nearest"))
@example("numpy.nansum", with_nans(3, 4))
def np_nansum(x): return weigh(np.nansum(x, axis=1))
@example("numpy.nanprod", with_nans(3, 4))
def np_nanprod(x): return weigh(np.nanprod(x, axis=0))
@example("numpy.nanmean", with_nans(3, 4))
def np_nanmean(x): return weigh(np.nanmean(x, axis=1))
@example("numpy.nanvar", with_nans(3, 4))
def np_nanvar(x): return weigh(np.nanvar(x, axis=0))
@example("numpy.nanstd", with_nans(3, 4))
def np_nanstd(x): return weigh(np.nanstd(x, axis=1, ddof=1))
@example("numpy.nanmax", with_nans(3, 4))
def np_nanmax(x): return weigh(np.nanmax(x, axis=0))
@example("numpy.nanmin", with_nans(3, 4))
def np_nanmin(x): return weigh(np.nanmin(x, axis=1, keepdims=True))
@example("numpy.nancumsum", with_nans(3, 4))
def np_nancumsum(x): return weigh(np.nancumsum(x, axis=1))
@example("numpy.nancumprod", with_nans(3, 4))
def np_nancumprod(x): return weigh(np.nancumprod(x, axis=0))
@example("numpy.trace", normal(3, 4))
def np_trace(x): return np.sin(np.trace(x, offset=1)) + np.trace(x * x)
@example("numpy.trace", normal(2, 3, 3))
def np_trace_axes(x): return weigh(np.trace(x, axis1=1, axis2=2))


# -- building, reshaping and joining arrays -------------------------------------------------------

@example("numpy.reshape", normal(3, 4))
def np_reshape(x): return weigh(np.reshape(x, (2, -1)) @ np.ones((6, 2)))
@example("numpy.ravel", normal(3, 4))
def np_ravel(x): return weigh(np.ravel(x)[::2])
@example("numpy.transpose", normal(2, 3, 4))
def np_transpose(x): return weigh(np.transpose(x, (2, 0, 1))[1:])
@example("numpy.matrix_transpose", normal(2, 3, 4))
def np_matrix_transpose(x): return weigh(np.matrix_transpose(x)[:, 1])
@example("numpy.swapaxes", normal(2, 3, 4))
def np_swapaxes(x): return weigh(np.swapaxes(x, 0, 2)[0])
@example("numpy.moveaxis", normal(2, 3, 4))
def np_moveaxis(x): return weigh(np.moveaxis(x, 0, -1)[1])
@example("numpy.rollaxis", normal(2, 3, 4))
def np_rollaxis(x): return weigh(np.rollaxis(x, 2, 1)[1])
@example("numpy.expand_dims", normal(3, 4))
def np_expand_dims(x): return weigh(np.expand_dims(x, (0, 2)) * np.ones((2, 1, 1, 1)))
@example("numpy.squeeze", normal(3, 1, 4))
def np_squeeze(x): return weigh(np.squeeze(x, axis=1)[1:])
@example("numpy.atleast_1d", fixed(np.array(0.7)))
def np_atleast_1d(x): return weigh(np.atleast_1d(x) * np.array([1.0, 2.0]))
@example("numpy.atleast_2d", normal(4))
def np_atleast_2d(x): return weigh(np.atleast_2d(x).T * x)
@example("numpy.atleast_3d", normal(3, 4))
def np_atleast_3d(x): return weigh(np.atleast_3d(x)[:, 1:])
@example("numpy.broadcast_to", normal(4))
def np_broadcast_to(x): return weigh(np.broadcast_to(x, (3, 4)))
@example("numpy.broadcast_arrays", normal(3, 1), normal(4))
def np_broadcast_arrays(x, y):
    a, b = np.broadcast_arrays(x, y)
    return weigh(a * 2 + b ** 2)
@example("numpy.copy", normal(3, 4))
def np_copy(x):
    y = np.copy(x)
    y[0] = 0.0
    return weigh(y * x)
@example("numpy.concatenate", normal(3, 4), normal(3, 2))
def np_concatenate(x, y): return weigh(np.concatenate([x, y, x[:, :1]], axis=1))
@example("numpy.concatenate", normal(3, 4))
def np_concatenate_flat(x): return weigh(np.concatenate((x, x[1:] * 2), axis=None))
@example("numpy.stack", normal(3, 4), normal(3, 4))
def np_stack(x, y): return weigh(np.stack([x, y * y], axis=1))
@example("numpy.unstack", normal(3, 4))
def np_unstack(x):
    a, b, c, d = np.unstack(x, axis=1)
    return weigh(a * b + c - d)
@example("numpy.hstack", normal(3, 4), normal(3))
def np_hstack(x, v): return weigh(np.hstack([x[0], v, x[2]]))
@example("numpy.vstack", normal(3, 4), normal(4))
def np_vstack(x, v): return weigh(np.vstack((x, v)))
@example("numpy.row_stack", normal(3, 4), normal(4))
def np_row_stack(x, v): return weigh(np.row_stack((v, x)))
@example("numpy.dstack", normal(3, 4), normal(3, 4))
def np_dstack(x, y): return weigh(np.dstack([x, y, x * y]))
@example("numpy.column_stack", normal(3), normal(3, 2))
def np_column_stack(v, m): return weigh(np.column_stack((v, m, v * v)))
@example("numpy.append", normal(3, 4), normal(1, 4))
def np_append(x, y): return weigh(np.append(x, y, axis=0))
@example("numpy.append", normal(3, 4))
def np_append_flat(x): return weigh(np.append(x, [1.0, 2.0]))
@example("numpy.split", normal(3, 6))
def np_split(x):
    a, b, c = np.split(x, [1, 4], axis=1)
    return weigh(a) + weigh(b * 2) + weigh(c * 3)
@example("numpy.array_split", normal(3, 5))
def np_array_split(x):
    a, b = np.array_split(x, 2, axis=1)
    return weigh(a) + weigh(b * b)
@example("numpy.hsplit", normal(3, 4))
def np_hsplit(x):
    a, b = np.hsplit(x, 2)
    return weigh(a * b)
@example("numpy.vsplit", normal(4, 3))
def np_vsplit(x):
    a, b = np.vsplit(x, [1])
    return weigh(a * 2) + weigh(b)
@example("numpy.dsplit", normal(2, 3, 4))
def np_dsplit(x):
    a, b = np.dsplit(x, 2)
    return weigh(a - b * b)
@example("numpy.flip", normal(3, 4))
def np_flip(x): return weigh(np.flip(x, axis=1) * x)
@example("numpy.flip", normal(2, 3, 4))
def np_flip_all(x): return weigh(np.flip(x) * x)
@example("numpy.fliplr", normal(3, 4))
def np_fliplr(x): return weigh(np.fliplr(x) * x)
@example("numpy.flipud", normal(3, 4))
def np_flipud(x): return weigh(np.flipud(x) * x)
@example("numpy.rot90", normal(3, 4))
def np_rot90(x): return weigh(np.rot90(x) @ x)
@example("numpy.rot90", normal(2, 3, 4))
def np_rot90_axes(x): return weigh(np.rot90(x, k=-1, axes=(1, 2))) + weigh(np.rot90(x, 2, axes=(2, 0)) * x)
@example("numpy.roll", normal(3, 4))
def np_roll(x): return weigh(np.roll(x, 2, axis=1) * x)
@example("numpy.roll", normal(3, 4))
def np_roll_flat(x): return weigh(np.roll(x, -5) * x + np.roll(x, (1, 1), axis=(0, 1)))
@example("numpy.tile", normal(2, 3))
def np_tile(x): return weigh(np.tile(x, (2, 1, 2)))
@example("numpy.repeat", normal(3, 4))
def np_repeat(x): return weigh(np.repeat(x, 2, axis=0))
@example("numpy.repeat", normal(3, 4))
def np_repeat_counts(x): return weigh(np.repeat(x, [1, 0, 3, 2], axis=1))
@example("numpy.resize", normal(3, 4))
def np_resize(x): return weigh(np.resize(x, (5, 3)))
@example("numpy.delete", normal(3, 4))
def np_delete(x): return weigh(np.delete(x, [0, 2], axis=1))
@example("numpy.insert", normal(3, 4), normal(3))
def np_insert(x, v): return weigh(np.insert(x, 1, v, axis=1))
@example("numpy.insert", normal(3, 4))
def np_insert_flat(x): return weigh(np.insert(x, [2, 5], x[0, :2] * 3))
@example("numpy.diag", normal(4))
def np_diag(v): return weigh(np.diag(v, k=1))
@example("numpy.diag", normal(3, 4))
def np_diag_of_matrix(x): return weigh(np.diag(x, k=1) * np.diag(x))
@example("numpy.diagflat", normal(2, 2))
def np_diagflat(x): return weigh(np.diagflat(x, k=-1))
@example("numpy.diagonal", normal(2, 3, 4))
def np_diagonal(x): return weigh(np.diagonal(x, offset=1, axis1=1, axis2=2))
@example("numpy.tril", normal(3, 4))
def np_tril(x): return weigh(np.tril(x, k=-1) + x)
@example("numpy.tril", normal(2, 3, 3))
def np_tril_stacked(x): return weigh(np.tril(x))
@example("numpy.triu", normal(3, 4))
def np_triu(x): return weigh(np.triu(x, k=1) * x)
@example("numpy.pad", normal(3, 4))
def np_pad_constant(x): return weigh(np.pad(x, ((1, 0), (2, 1)), constant_values=0.5))
@example("numpy.pad", normal(3, 4))
def np_pad_edge(x): return weigh(np.pad(x, 2, mode="edge"))
@example("numpy.pad", normal(3, 4))
def np_pad_wrap(x): return weigh(np.pad(x, ((2, 1), (0, 3)), mode="wrap"))
@example("numpy.pad", normal(3, 4))
def np_pad_reflect(x): return weigh(np.pad(x, (2, 3), mode="reflect"))
@example("numpy.pad", normal(3, 4))
def np_pad_symmetric_odd(x): return weigh(np.pad(x, 2, mode="symmetric", reflect_type="odd"))
@example("numpy.pad", normal(3, 4))
def np_pad_linear_ramp(x): return weigh(np.pad(x, ((1, 2), (2, 1)), mode="linear_ramp", end_values=(1.0, -1.0)))
@example("numpy.pad", normal(3, 4))
def np_pad_maximum(x): return weigh(np.pad(x, 1, mode="maximum", stat_length=2))
@example("numpy.pad", normal(3, 4))
def np_pad_minimum(x): return weigh(np.pad(x, ((0, 2), (1, 1)), mode="minimum"))
@example("numpy.pad", normal(3, 4))
def np_pad_mean(x): return weigh(np.pad(x, 2, mode="mean", stat_length=(2, 3)))
@example("numpy.pad", normal(3, 5))
def np_pad_median(x): return weigh(np.pad(x, ((1, 1), (2, 0)), mode="median"))
@example("numpy.pad", normal(4), normal())
def np_pad_traced_value(x, c): return weigh(np.pad(x, 2, constant_values=c))
@example("numpy.where", normal(3, 4), normal(4))
def np_where(x, y): return weigh(np.where(x > 0.2, x * x, y))
@example("numpy.select", normal(3, 4))
def np_select(x): return weigh(np.select([x < -0.5, x > 0.5], [x * x, np.sin(x)], default=x * 3))
@example("numpy.clip", normal(3, 4))
def np_clip(x): return weigh(np.clip(x, -0.5, 0.7))
@example("numpy.clip", normal(3, 4), fixed(np.array(-0.4)), fixed(np.array([0.3, 0.5, 0.2, 0.8])))
def np_clip_traced_bounds(x, lo, hi): return weigh(np.clip(x, lo, hi))
@example("numpy.nan_to_num", normal(3, 4))
def np_nan_to_num(x): return weigh(np.nan_to_num(np.log(x), nan=0.5, neginf=-3.0) * x)
@example("numpy.real_if_close", normal(3, 4))
def np_real_if_close(x): return weigh(np.real_if_close(x * x))
@example("numpy.real_if_close", cnormal(4))
def np_real_if_close_complex(z): return weigh_c(np.real_if_close(z * 2))
@example("numpy.linspace", fixed(np.array(0.3)), fixed(np.array(1.7)))
def np_linspace(a, b): return weigh(np.linspace(a, b, 5))
@example("numpy.linspace", normal(3), normal(3))
def np_linspace_axis(a, b): return weigh(np.linspace(a, b, num=4, endpoint=False, axis=1))
@example("numpy.diff", normal(3, 5))
def np_diff(x): return weigh(np.diff(x, n=2, axis=1))
@example("numpy.diff", normal(3, 4))
def np_diff_prepend(x): return weigh(np.diff(x, axis=0, prepend=0.0, append=x[:1]))
@example("numpy.ediff1d", normal(5))
def np_ediff1d(x): return weigh(np.ediff1d(x, to_begin=x[:1], to_end=[2.0]))
@example("numpy.gradient", normal(5))
def np_gradient(x): return weigh(np.gradient(x, 0.5))
@example("numpy.gradient", normal(3, 4))
def np_gradient_2d(x):
    gy, gx = np.gradient(x, edge_order=2)
    return weigh(gy) + weigh(gx * 2)
@example("numpy.gradient", normal(4, 3))
def np_gradient_axis(x): return weigh(np.gradient(x, np.array([0.0, 0.5, 1.5, 2.0]), axis=0))
@example("numpy.empty_like", normal(3, 4))
def np_empty_like(x):
    out = np.empty_like(x)
    out[...] = np.sin(x)
    return weigh(out * x)
@example("numpy.zeros_like", normal(3, 4))
def np_zeros_like(x):
    out = np.zeros_like(x)
    out[1:] = x[:-1] * 2
    return weigh(out + x)
@example("numpy.ones_like", normal(3, 4))
def np_ones_like(x): return weigh(np.ones_like(x) * 2 - x * x)
@example("numpy.full_like", normal(3, 4))
def np_full_like(x): return weigh(np.full_like(x, 0.5) + x)
@example("numpy.full_like", normal(3, 4), normal())
def np_full_like_traced(x, c): return weigh(np.full_like(x, c) * x)


# -- indexing, sorting, writing -------------------------------------------------------------------

@example("numpy.take", normal(3, 4))
def np_take(x): return weigh(np.take(x, [2, 0, 2], axis=1))
@example("numpy.take", normal(3, 4))
def np_take_flat(x): return weigh(np.take(x, [[1, 5], [11, 1]]))
@example("numpy.take_along_axis", normal(3, 4))
def np_take_along_axis(x): return weigh(np.take_along_axis(x, np.array([[0, 3], [1, 1], [2, 0]]), axis=1))
@example("numpy.compress", normal(3, 4))
def np_compress(x): return weigh(np.compress([True, False, True], x, axis=0))
@example("numpy.extract", normal(3, 4))
def np_extract(x): return weigh(np.extract(MASK, x * x))
@example("numpy.sort", normal(3, 4))
def np_sort(x): return weigh(np.sort(x, axis=0))
@example("numpy.sort", normal(3, 4))
def np_sort_flat(x): return weigh(np.sort(x, axis=None))
@example("numpy.partition", normal(3, 5))
def np_partition(x):
    p = np.partition(x, 2, axis=1)
    return weigh(p[:, 2]) + np.sum(np.sin(p[:, :2])) + np.sum(np.cos(p[:, 3:]))
@example("numpy.put", normal(3, 4), normal(2))
def np_put(x, v):
    y = x.copy()
    np.put(y, [0, 7], v)
    return weigh(y * x)
@example("numpy.put_along_axis", normal(3, 4), normal(3, 1))
def np_put_along_axis(x, v):
    y = x * 1.0
    np.put_along_axis(y, np.array([[1], [3], [0]]), v * v, axis=1)
    return weigh(y)
@example("numpy.place", normal(3, 4), normal(3))
def np_place(x, v):
    y = x.copy()
    np.place(y, MASK, v)
    return weigh(y)
@example("numpy.putmask", normal(3, 4), normal(3, 4))
def np_putmask(x, v):
    y = x.copy()
    np.putmask(y, MASK, v * 2)
    return weigh(y + x)


# -- products -------------------------------------------------------------------------------------

@example("numpy.dot", normal(3, 4), normal(4))
def np_dot(a, v): return weigh(np.dot(a, v))
@example("numpy.dot", normal(2, 3, 4), normal(4, 2))
def np_dot_nd(a, b): return weigh(np.dot(a, b))
@example("numpy.dot", normal(4), normal(4))
def np_dot_vectors(a, b): return np.sin(np.dot(a, b))
@example("numpy.matmul", normal(2, 3, 4), normal(4, 2))
def np_matmul(a, b): return weigh(np.matmul(a, b))
@example("numpy.matmul", cnormal(2, 3), cnormal(3, 2))
def np_matmul_complex(a, b): return weigh_c(a @ b)
@example("numpy.inner", normal(2, 4), normal(3, 4))
def np_inner(a, b): return weigh(np.inner(a, b))
@example("numpy.outer", normal(3), normal(2, 2))
def np_outer(a, b): return weigh(np.outer(a, b))
@example("numpy.vdot", normal(3, 2), normal(6))
def np_vdot(a, b): return np.sin(np.vdot(a, b))
@example("numpy.vdot", cnormal(3), cnormal(3))
def np_vdot_complex(a, b):
    d = np.vdot(a, b)
    return np.real(d) + np.sin(np.imag(d))
@example("numpy.tensordot", normal(2, 3, 4), normal(3, 2, 2))
def np_tensordot(a, b): return weigh(np.tensordot(a, b, axes=([1, 0], [0, 1])))
@example("numpy.tensordot", normal(3, 4), normal(3, 4))
def np_tensordot_int(a, b): return np.sin(np.tensordot(a, b, 2)) + weigh(np.tensordot(a, b, axes=0)[0, 0])
@example("numpy.kron", normal(2, 2), normal(2, 3))
def np_kron(a, b): return weigh(np.kron(a, b))
@example("numpy.cross", normal(4, 3), normal(3))
def np_cross(a, b): return weigh(np.cross(a, b))
@example("numpy.cross", normal(3, 2), normal(3, 2))
def np_cross_axis(a, b): return weigh(np.cross(a, b, axis=0))
@example("numpy.einsum", normal(3, 4), normal(4, 2))
def np_einsum(a, b): return weigh(np.einsum("ij,jk->ik", a, b))
@example("numpy.einsum", normal(2, 3, 3))
def np_einsum_diagonal(a): return weigh(np.einsum("...ii->...i", a) + np.einsum("bii", a)[:, None])
@example("numpy.einsum", normal(2, 3, 4), normal(2, 4), normal(3))
def np_einsum_three(a, b, c): return weigh(np.einsum("bij,bj,i->b", a, b, c))
@example("numpy.einsum", normal(3, 4), normal(4))
def np_einsum_interleaved(a, b): return weigh(np.einsum(a, [0, 1], b, [1], [0]))
@example("numpy.einsum", cnormal(2, 3), cnormal(3))
def np_einsum_complex(a, b): return weigh_c(np.einsum("ij,j->i", a, b))


# -- numpy.linalg ---------------------------------------------------------------------------------

@example("numpy.linalg.inv", invertible(3, 3))
def la_inv(a): return weigh(np.linalg.inv(a))
@example("numpy.linalg.inv", invertible(2, 3, 3))
def la_inv_stacked(a): return weigh(np.linalg.inv(a))
@example("numpy.linalg.inv", invertible(3, 3, dtype=complex))
def la_inv_complex(a): return weigh_c(np.linalg.inv(a))
@example("numpy.linalg.det", invertible(3, 3))
def la_det(a): return np.sin(np.linalg.det(a) / 10)
@example("numpy.linalg.det", invertible(2, 3, 3))
def la_det_stacked(a): return weigh(np.linalg.det(a) / 10)
@example("numpy.linalg.det", invertible(2, 2, dtype=complex))
def la_det_complex(a): return weigh_c(np.linalg.det(a) / 5)
@example("numpy.linalg.slogdet", invertible(3, 3))
def la_slogdet(a):
    sign, logdet = np.linalg.slogdet(-a)
    return np.sin(logdet) * sign
@example("numpy.linalg.slogdet", invertible(2, 3, 3))
def la_slogdet_named(a): return weigh(np.linalg.slogdet(a).logabsdet)
@example("numpy.linalg.slogdet", invertible(3, 3, dtype=complex))
def la_slogdet_complex(a):
    sign, logdet = np.linalg.slogdet(a)
    return np.sin(logdet) + weigh_c(sign)
@example("numpy.linalg.solve", invertible(3, 3), normal(3, 2))
def la_solve(a, b): return weigh(np.linalg.solve(a, b))
@example("numpy.linalg.solve", invertible(2, 3, 3), normal(2, 3, 1))
def la_solve_stacked(a, b): return weigh(np.linalg.solve(a, b))
@example("numpy.linalg.solve", invertible(3, 3), normal(3))
def la_solve_vector(a, b): return weigh(np.linalg.solve(a, b))
@example("numpy.linalg.solve", invertible(3, 3, dtype=complex), cnormal(3))
def la_solve_complex(a, b): return weigh_c(np.linalg.solve(a, b))
@example("numpy.linalg.cholesky", spd(3, 3))
def la_cholesky(a): return weigh(np.linalg.cholesky(a))
@example("numpy.linalg.cholesky", spd(2, 3, 3))
def la_cholesky_upper(a): return weigh(np.linalg.cholesky(a, upper=True))
@example("numpy.linalg.cholesky", hpd(3, 3))
def la_cholesky_complex(a): return weigh_c(np.linalg.cholesky(a))
@example("numpy.linalg.eigh", symmetric_spread(3))
def la_eigh(a):
    w, v = np.linalg.eigh(a)
    return weigh(w) + weigh(v * v)
@example("numpy.linalg.eigh", symmetric_spread(3))
def la_eigh_upper(a):
    w, v = np.linalg.eigh(a, UPLO="U")
    return weigh((v * w) @ v.T)
@example("numpy.linalg.eigh", hpd(3, 3))
def la_eigh_complex(a):
    w, v = np.linalg.eigh(a)
    return weigh(w) + weigh(np.abs(v) ** 2)
@example("numpy.linalg.eigvalsh", spd(2, 3, 3))
def la_eigvalsh(a): return weigh(np.linalg.eigvalsh(a))
@example("numpy.linalg.eigvalsh", hpd(3, 3))
def la_eigvalsh_complex(a): return weigh(np.linalg.eigvalsh(a, UPLO="U"))
@example("numpy.linalg.eig", real_eigen(3))
def la_eig(a):
    w, v = np.linalg.eig(a)
    v = v / v[:1]  # (eigenvectors are defined up to scale: fix it)
    return weigh(np.real(w)) + weigh_c(v)
@example("numpy.linalg.eigvals", real_eigen(3))
def la_eigvals(a): return weigh_c(np.linalg.eigvals(a))
@example("numpy.linalg.eigvals", invertible(3, 3, dtype=complex))
def la_eigvals_complex(a): return weigh_c(np.sum(np.exp(np.linalg.eigvals(a) / 3)))
@example("numpy.linalg.svd", spread(4, 3))
def la_svd(a):
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    return weigh(s) + weigh(u * u) + weigh(vh * vh)
@example("numpy.linalg.svd", spread(2, 3, 4))
def la_svd_products(a):
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    return weigh((u * s[:, None]) @ vh[:, :, :2])
@example("numpy.linalg.svd", spread(3, 3))
def la_svd_full(a):
    u, s, vh = np.linalg.svd(a)
    return weigh(u @ vh) + weigh(s)
@example("numpy.linalg.svd", spread(2, 4, 3))
def la_svd_values(a): return weigh(np.linalg.svd(a, compute_uv=False))
@example("numpy.linalg.svd", spread(3, 2, dtype=complex))
def la_svd_complex(a):
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    return weigh(s) + weigh(np.abs(u) ** 2) + weigh_c((u * s) @ vh)
@example("numpy.linalg.svdvals", spread(2, 3, 4))
def la_svdvals(a): return weigh(np.linalg.svdvals(a))
@example("numpy.linalg.pinv", spread(4, 3))
def la_pinv(a): return weigh(np.linalg.pinv(a))
@example("numpy.linalg.pinv", spread(3, 4))
def la_pinv_rcond(a): return weigh(np.linalg.pinv(a, rcond=1e-3))
@example("numpy.linalg.pinv", spread(2, 2, 3))
def la_pinv_stacked(a): return weigh(np.linalg.pinv(a))
@example("numpy.linalg.qr", normal(4, 3))
def la_qr(a):
    q, r = np.linalg.qr(a)
    return weigh(q) + weigh(r)
@example("numpy.linalg.qr", normal(3, 4))
def la_qr_wide(a):
    q, r = np.linalg.qr(a)
    return weigh(q) + weigh(r)
@example("numpy.linalg.qr", normal(2, 4, 3))
def la_qr_r(a): return weigh(np.linalg.qr(a, mode="r"))
@example("numpy.linalg.qr", normal(3, 3))
def la_qr_complete(a):
    q, r = np.linalg.qr(a, mode="complete")
    return weigh(q) + weigh(r)
@example("numpy.linalg.matrix_power", invertible(3, 3))
def la_matrix_power(a): return weigh(np.linalg.matrix_power(a / 3, 3))
@example("numpy.linalg.matrix_power", invertible(2, 3, 3))
def la_matrix_power_negative(a): return weigh(np.linalg.matrix_power(a, -2) + np.linalg.matrix_power(a, 0))
@example("numpy.linalg.multi_dot", normal(3), normal(3, 4), normal(4, 5), normal(5, 2))
def la_multi_dot(a, b, c, d): return weigh(np.linalg.multi_dot([a, b, c, d]))
@example("numpy.linalg.norm", normal(3, 4))
def la_norm(a): return np.sin(np.linalg.norm(a))
@example("numpy.linalg.norm", normal(3, 4))
def la_norm_vector_orders(a):
    return (weigh(np.linalg.norm(a, axis=1)) + weigh(np.linalg.norm(a, ord=1, axis=0))
            + weigh(np.linalg.norm(a, ord=3, axis=1, keepdims=True)) + weigh(np.linalg.norm(a, ord=np.inf, axis=0))
            + weigh(np.linalg.norm(a, ord=-np.inf, axis=1)) + weigh(np.linalg.norm(a, ord=0.5, axis=1)))
@example("numpy.linalg.norm", spread(3, 4))
def la_norm_matrix_orders(a):
    return (np.sin(np.linalg.norm(a, "fro")) + np.sin(np.linalg.norm(a, "nuc")) + np.sin(np.linalg.norm(a, 1))
            + np.sin(np.linalg.norm(a, -1)) + np.sin(np.linalg.norm(a, 2)) + np.sin(np.linalg.norm(a, -2))
            + np.sin(np.linalg.norm(a, np.inf)) + np.sin(np.linalg.norm(a, -np.inf)))
@example("numpy.linalg.norm", normal(4, 3, 2))
def la_norm_axes(a): return weigh(np.linalg.norm(a, ord="nuc", axis=(0, 2))) + weigh(np.linalg.norm(a, 2, (2, 0)))
@example("numpy.linalg.norm", normal(3, 4))
def la_norm_positional(a): return weigh(np.linalg.norm(a, np.inf, 1)) + weigh(np.linalg.norm(a, 0.5, 0))
@example("numpy.linalg.norm", cnormal(2, 3))
def la_norm_complex(a): return np.sin(np.linalg.norm(a)) + weigh(np.linalg.norm(a, ord=1, axis=1))
@example("numpy.linalg.vector_norm", normal(2, 3, 4))
def la_vector_norm(a): return weigh(np.linalg.vector_norm(a, ord=3, axis=(0, 1))) + np.linalg.vector_norm(a)
@example("numpy.linalg.matrix_norm", spread(2, 3, 4))
def la_matrix_norm(a): return weigh(np.linalg.matrix_norm(a) + np.linalg.matrix_norm(a, ord=-2))
@example("numpy.linalg.matrix_norm", spread(2, 3, 3))
def la_matrix_norm_nuc(a): return weigh(np.linalg.matrix_norm(a, ord="nuc", keepdims=True))
@example("numpy.linalg.trace", normal(2, 3, 4))
def la_trace(a): return weigh(np.linalg.trace(a, offset=1) + np.linalg.trace(a * a))
@example("numpy.linalg.diagonal", normal(2, 3, 4))
def la_diagonal(a): return weigh(np.linalg.diagonal(a, offset=-1))
@example("numpy.linalg.matrix_transpose", normal(2, 3, 4))
def la_matrix_transpose(a): return weigh(np.linalg.matrix_transpose(a)[:, :2])
@example("numpy.linalg.matmul", normal(2, 3, 4), normal(2, 4, 2))
def la_matmul(a, b): return weigh(np.linalg.matmul(a, b))
@example("numpy.linalg.outer", normal(3), normal(4))
def la_outer(a, b): return weigh(np.linalg.outer(a, b))
@example("numpy.linalg.tensordot", normal(2, 3, 4), normal(4, 3))
def la_tensordot(a, b): return weigh(np.linalg.tensordot(a, b, axes=([1, 2], [1, 0])))
@example("numpy.linalg.vecdot", normal(3, 4), normal(4))
def la_vecdot(a, b): return weigh(np.linalg.vecdot(a, b))
@example("numpy.linalg.vecdot", cnormal(2, 3), cnormal(2, 3))
def la_vecdot_complex(a, b): return weigh_c(np.linalg.vecdot(a, b, axis=1))
@example("numpy.linalg.cross", normal(4, 3), normal(4, 3))
def la_cross(a, b): return weigh(np.linalg.cross(a, b))


# -- numpy.fft ------------------------------------------------------------------------------------

@example("numpy.fft.fft", normal(3, 5))
def fft_fft(x): return weigh_c(np.fft.fft(x))
@example("numpy.fft.fft", cnormal(3, 4))
def fft_fft_complex(z): return weigh_c(np.fft.fft(z, n=6, axis=0, norm="ortho"))
@example("numpy.fft.fft", normal(5))
def fft_fft_crop(x): return weigh_c(np.fft.fft(x, n=3, norm="forward"))
@example("numpy.fft.ifft", cnormal(2, 4))
def fft_ifft(z): return weigh_c(np.fft.ifft(z, n=5) * 3)
@example("numpy.fft.ifft", cnormal(4))
def fft_ifft_forward(z): return weigh_c(np.fft.ifft(z, norm="forward") / 4)
@example("numpy.fft.fft2", normal(3, 4))
def fft_fft2(x): return weigh_c(np.fft.fft2(x, s=(4, 3)) / 3)
@example("numpy.fft.ifft2", cnormal(2, 3, 3))
def fft_ifft2(z): return weigh_c(np.fft.ifft2(z, norm="ortho"))
@example("numpy.fft.fftn", cnormal(2, 3, 4))
def fft_fftn(z): return weigh_c(np.fft.fftn(z, axes=(0, 2)) / 3)
@example("numpy.fft.ifftn", normal(3, 4))
def fft_ifftn(x): return weigh_c(np.fft.ifftn(x, s=(2, 5)) * 3)
@example("numpy.fft.rfft", normal(3, 5))
def fft_rfft(x): return weigh_c(np.fft.rfft(x, axis=1) / 2)
@example("numpy.fft.rfft", normal(6))
def fft_rfft_n(x): return weigh_c(np.fft.rfft(x, n=8, norm="ortho"))
@example("numpy.fft.irfft", cnormal(2, 4))
def fft_irfft(z): return weigh(np.fft.irfft(z) * 3)
@example("numpy.fft.irfft", cnormal(4))
def fft_irfft_n(z): return weigh(np.fft.irfft(z, n=7, norm="ortho"))
@example("numpy.fft.rfft2", normal(3, 4))
def fft_rfft2(x): return weigh_c(np.fft.rfft2(x) / 3)
@example("numpy.fft.irfft2", cnormal(3, 3))
def fft_irfft2(z): return weigh(np.fft.irfft2(z, s=(3, 4)) * 3)
@example("numpy.fft.rfftn", normal(2, 3, 4))
def fft_rfftn(x): return weigh_c(np.fft.rfftn(x, axes=(0, 2), norm="ortho"))
@example("numpy.fft.irfftn", cnormal(2, 3, 3))
def fft_irfftn(z): return weigh(np.fft.irfftn(z, norm="forward") / 10)
@example("numpy.fft.hfft", cnormal(4))
def fft_hfft(z): return weigh(np.fft.hfft(z, n=6) / 3)
@example("numpy.fft.ihfft", normal(5))
def fft_ihfft(x): return weigh_c(np.fft.ihfft(x) * 3)
@example("numpy.fft.fftshift", normal(3, 4))
def fft_fftshift(x): return weigh(np.fft.fftshift(x, axes=1) * x)
@example("numpy.fft.ifftshift", cnormal(5))
def fft_ifftshift(z): return weigh_c(np.fft.ifftshift(z) * z)


# -- scipy.special's ufuncs on traced values (skipped without SciPy) ------------------------------

GAMMASGN_AT = np.array([-2.5, -1.3, -0.4, 0.7, 1.9])
ORDERS = np.array([0.5, 1.0, 2.5, 3.0])

@example("scipy.special.erf", normal(3, 4))
def sp_erf(x): return weigh(sp.erf(x))
@example("scipy.special.erfc", normal(3, 4))
def sp_erfc(x): return weigh(sp.erfc(x))
@example("scipy.special.erfcx", between(-1.0, 3.0, 3, 4))
def sp_erfcx(x): return weigh(sp.erfcx(x))
@example("scipy.special.erfinv", unit(3, 4))
def sp_erfinv(x): return weigh(sp.erfinv(x))
@example("scipy.special.erfcinv", between(0.1, 1.9, 3, 4))
def sp_erfcinv(x): return weigh(sp.erfcinv(x))
@example("scipy.special.ndtr", normal(3, 4))
def sp_ndtr(x): return weigh(sp.ndtr(x))
@example("scipy.special.ndtri", between(0.05, 0.95, 3, 4))
def sp_ndtri(x): return weigh(sp.ndtri(x))
@example("scipy.special.log_ndtr", normal(3, 4))
def sp_log_ndtr(x): return weigh(sp.log_ndtr(3 * x))
@example("scipy.special.expit", normal(3, 4))
def sp_expit(x): return weigh(sp.expit(x))
@example("scipy.special.log_expit", normal(3, 4))
def sp_log_expit(x): return weigh(sp.log_expit(3 * x))
@example("scipy.special.logit", between(0.1, 0.9, 3, 4))
def sp_logit(x): return weigh(sp.logit(x))
@example("scipy.special.exp10", normal(3, 4))
def sp_exp10(x): return weigh(sp.exp10(x / 2))
@example("scipy.special.entr", pos(3, 4))
def sp_entr(x): return weigh(sp.entr(x))
@example("scipy.special.xlogy", normal(3, 4), pos(3, 4))
def sp_xlogy(x, y): return weigh(sp.xlogy(x, y))
@example("scipy.special.xlog1py", normal(3, 4), between(-0.5, 2.0, 4))
def sp_xlog1py(x, y): return weigh(sp.xlog1py(x, y))
@example("scipy.special.gamma", between(0.5, 3.0, 3, 4))
def sp_gamma(x): return weigh(sp.gamma(x))
@example("scipy.special.gamma", fixed(GAMMASGN_AT))
def sp_gamma_negative(x): return weigh(sp.gamma(x) / 5)
@example("scipy.special.rgamma", between(-0.8, 3.0, 3, 4))
def sp_rgamma(x): return weigh(sp.rgamma(x))
@example("scipy.special.gammaln", pos(3, 4))
def sp_gammaln(x): return weigh(sp.gammaln(x))
@example("scipy.special.gammasgn", fixed(GAMMASGN_AT))
def sp_gammasgn(x): return weigh(x * sp.gammasgn(x))
@example("scipy.special.psi", pos(3, 4))
def sp_psi(x): return weigh(sp.psi(x))
@example("scipy.special.beta", pos(3, 4), pos(4))
def sp_beta(a, b): return weigh(sp.beta(a, b))
@example("scipy.special.betaln", pos(3, 4), pos(3, 4))
def sp_betaln(a, b): return weigh(sp.betaln(a, b))
@example("scipy.special.gammainc", fixed(np.array([1.0, 2.5, 4.0])), pos(2, 3), argnums=(1,))
def sp_gammainc(a, x): return weigh(sp.gammainc(a, x))
@example("scipy.special.gammaincc", fixed(np.array([1.0, 2.5, 4.0])), pos(2, 3), argnums=(1,))
def sp_gammaincc(a, x): return weigh(sp.gammaincc(a, x))
@example("scipy.special.betainc", fixed(np.array([0.5, 2.0, 3.0])), fixed(np.array([1.5, 2.0, 0.7])),
         between(0.1, 0.9, 2, 3), argnums=(2,))
def sp_betainc(a, b, x): return weigh(sp.betainc(a, b, x))
@example("scipy.special.i0", normal(3, 4))
def sp_i0(x): return weigh(sp.i0(x))
@example("scipy.special.i0e", normal(3, 4))
def sp_i0e(x): return weigh(sp.i0e(x))
@example("scipy.special.i1", normal(3, 4))
def sp_i1(x): return weigh(sp.i1(x))
@example("scipy.special.i1e", away(3, 4))
def sp_i1e(x): return weigh(sp.i1e(x))
@example("scipy.special.iv", fixed(ORDERS), pos(3, 4), argnums=(1,))
def sp_iv(v, x): return weigh(sp.iv(v, x))
@example("scipy.special.ive", fixed(ORDERS), pos(3, 4), argnums=(1,))
def sp_ive(v, x): return weigh(sp.ive(v, x))
@example("scipy.special.jv", fixed(ORDERS), pos(3, 4), argnums=(1,))
def sp_jv(v, x): return weigh(sp.jv(v, x))
@example("scipy.special.yv", fixed(ORDERS), pos(3, 4), argnums=(1,))
def sp_yv(v, x): return weigh(sp.yv(v, x))
@example("scipy.special.yn", fixed(np.array([0, 1, 2, 3])), pos(3, 4))
def sp_yn(n, x): return weigh(sp.yn(n, x))
@example("scipy.special.j0", between(0.5, 5.0, 3, 4))
def sp_j0(x): return weigh(sp.j0(x))
@example("scipy.special.j1", between(0.5, 5.0, 3, 4))
def sp_j1(x): return weigh(sp.j1(x))
@example("scipy.special.y0", between(0.5, 5.0, 3, 4))
def sp_y0(x): return weigh(sp.y0(x))
@example("scipy.special.y1", between(0.5, 5.0, 3, 4))
def sp_y1(x): return weigh(sp.y1(x))
@example("scipy.special.round", normal(3, 4))
def sp_round(x): return weigh(x * sp.round(3 * x))


# -- tracegrad.scipy.special: SciPy's names, differentiable on arrays, tracers and Tensors --------

@example("tracegrad.scipy.special.logsumexp", normal(3, 4))
def ts_logsumexp(x): return weigh(ts.logsumexp(x, axis=1))
@example("tracegrad.scipy.special.logsumexp", normal(3, 4), pos(4))
def ts_logsumexp_weights(x, b): return weigh(ts.logsumexp(x, axis=0, b=b, keepdims=True))
@example("tracegrad.scipy.special.logsumexp", normal(3, 4), normal(4))
def ts_logsumexp_sign(x, b):
    out, sign = ts.logsumexp(x, b=b, axis=1, return_sign=True)
    return weigh(out * sign)
@example("tracegrad.scipy.special.softmax", normal(3, 4))
def ts_softmax(x): return weigh(ts.softmax(x, axis=0))
@example("tracegrad.scipy.special.softmax", normal(2, 3))
def ts_softmax_all(x): return weigh(ts.softmax(x) * 5)
@example("tracegrad.scipy.special.log_softmax", normal(3, 4))
def ts_log_softmax(x): return weigh(ts.log_softmax(x, axis=1))
@example("tracegrad.scipy.special.log_softmax", normal(2, 3, 2))
def ts_log_softmax_axes(x): return weigh(ts.log_softmax(x, axis=(0, 2)))
@example("tracegrad.scipy.special.expit", normal(3, 4))
def ts_expit(x): return weigh(ts.expit(x))
@example("tracegrad.scipy.special.log_expit", normal(3, 4))
def ts_log_expit(x): return weigh(ts.log_expit(x))
@example("tracegrad.scipy.special.logit", between(0.1, 0.9, 3, 4))
def ts_logit(x): return weigh(ts.logit(x))
@example("tracegrad.scipy.special.erf", normal(3, 4))
def ts_erf(x): return weigh(ts.erf(x))
@example("tracegrad.scipy.special.erfc", normal(3, 4))
def ts_erfc(x): return weigh(ts.erfc(x))
@example("tracegrad.scipy.special.erfcx", between(-1.0, 3.0, 3, 4))
def ts_erfcx(x): return weigh(ts.erfcx(x))
@example("tracegrad.scipy.special.erfinv", unit(3, 4))
def ts_erfinv(x): return weigh(ts.erfinv(x))
@example("tracegrad.scipy.special.erfcinv", between(0.1, 1.9, 3, 4))
def ts_erfcinv(x): return weigh(ts.erfcinv(x))
@example("tracegrad.scipy.special.ndtr", normal(3, 4))
def ts_ndtr(x): return weigh(ts.ndtr(x))
@example("tracegrad.scipy.special.ndtri", between(0.05, 0.95, 3, 4))
def ts_ndtri(x): return weigh(ts.ndtri(x))
@example("tracegrad.scipy.special.log_ndtr", normal(3, 4))
def ts_log_ndtr(x): return weigh(ts.log_ndtr(3 * x))
@example("tracegrad.scipy.special.gammaln", pos(3, 4))
def ts_gammaln(x): return weigh(ts.gammaln(x))
@example("tracegrad.scipy.special.digamma", pos(3, 4))
def ts_digamma(x): return weigh(ts.digamma(x))
@example("tracegrad.scipy.special.psi", pos(3, 4))
def ts_psi(x): return weigh(ts.psi(x))
@example("tracegrad.scipy.special.polygamma", fixed(np.array([0, 1, 2, 3])), pos(3, 4))
def ts_polygamma(n, x): return weigh(ts.polygamma(n, x) / 3)
@example("tracegrad.scipy.special.multigammaln", between(2.0, 4.0, 3, 4))
def ts_multigammaln(a): return weigh(ts.multigammaln(a, 3) / 3)
@example("tracegrad.scipy.special.zeta", fixed(np.array([2.0, 3.0, 4.5])), pos(2, 3), argnums=(1,))
def ts_zeta(s, q): return weigh(ts.zeta(s, q))
@example("tracegrad.scipy.special.gamma", between(0.5, 3.0, 3, 4))
def ts_gamma(x): return weigh(ts.gamma(x))
@example("tracegrad.scipy.special.rgamma", between(-0.8, 3.0, 3, 4))
def ts_rgamma(x): return weigh(ts.rgamma(x))
@example("tracegrad.scipy.special.gammasgn", fixed(GAMMASGN_AT))
def ts_gammasgn(x): return weigh(x * ts.gammasgn(x))
@example("tracegrad.scipy.special.beta", pos(3, 4), pos(4))
def ts_beta(a, b): return weigh(ts.beta(a, b))
@example("tracegrad.scipy.special.betaln", pos(3, 4), pos(3, 4))
def ts_betaln(a, b): return weigh(ts.betaln(a, b))
@example("tracegrad.scipy.special.gammainc", fixed(np.array([1.0, 2.5, 4.0])), pos(2, 3), argnums=(1,))
def ts_gammainc(a, x): return weigh(ts.gammainc(a, x))
@example("tracegrad.scipy.special.gammaincc", fixed(np.array([1.0, 2.5, 4.0])), pos(2, 3), argnums=(1,))
def ts_gammaincc(a, x): return weigh(ts.gammaincc(a, x))
@example("tracegrad.scipy.special.betainc", fixed(np.array([0.5, 2.0, 3.0])), fixed(np.array([1.5, 2.0, 0.7])),
         between(0.1, 0.9, 2, 3), argnums=(2,))
def ts_betainc(a, b, x): return weigh(ts.betainc(a, b, x))
@example("tracegrad.scipy.special.xlogy", normal(3, 4), pos(3, 4))
def ts_xlogy(x, y): return weigh(ts.xlogy(x, y))
@example("tracegrad.scipy.special.xlog1py", normal(3, 4), between(-0.5, 2.0, 4))
def ts_xlog1py(x, y): return weigh(ts.xlog1py(x, y))
@example("tracegrad.scipy.special.entr", pos(3, 4))
def ts_entr(x): return weigh(ts.entr(x))
@example("tracegrad.scipy.special.i0", normal(3, 4))
def ts_i0(x): return weigh(ts.i0(x))
@example("tracegrad.scipy.special.i1", normal(3, 4))
def ts_i1(x): return weigh(ts.i1(x))
@example("tracegrad.scipy.special.i0e", normal(3, 4))
def ts_i0e(x): return weigh(ts.i0e(x))
@example("tracegrad.scipy.special.i1e", away(3, 4))
def ts_i1e(x): return weigh(ts.i1e(x))
@example("tracegrad.scipy.special.iv", fixed(ORDERS), pos(3, 4), argnums=(1,))
def ts_iv(v, x): return weigh(ts.iv(v, x))
@example("tracegrad.scipy.special.ive", fixed(ORDERS), pos(3, 4), argnums=(1,))
def ts_ive(v, x): return weigh(ts.ive(v, x))
@example("tracegrad.scipy.special.jv", fixed(ORDERS), pos(3, 4), argnums=(1,))
def ts_jv(v, x): return weigh(ts.jv(v, x))
@example("tracegrad.scipy.special.jn", fixed(np.array([0, 1, 2, 3])), pos(3, 4))
def ts_jn(n, x): return weigh(ts.jn(n, x))
@example("tracegrad.scipy.special.yv", fixed(ORDERS), pos(3, 4), argnums=(1,))
def ts_yv(v, x): return weigh(ts.yv(v, x))
@example("tracegrad.scipy.special.yn", fixed(np.array([0, 1, 2, 3])), pos(3, 4))
def ts_yn(n, x): return weigh(ts.yn(n, x))
@example("tracegrad.scipy.special.j0", between(0.5, 5.0, 3, 4))
def ts_j0(x): return weigh(ts.j0(x))
@example("tracegrad.scipy.special.j1", between(0.5, 5.0, 3, 4))
def ts_j1(x): return weigh(ts.j1(x))
@example("tracegrad.scipy.special.y0", between(0.5, 5.0, 3, 4))
def ts_y0(x): return weigh(ts.y0(x))
@example("tracegrad.scipy.special.y1", between(0.5, 5.0, 3, 4))
def ts_y1(x): return weigh(ts.y1(x))
@example("tracegrad.scipy.special.exp2", normal(3, 4))
def ts_exp2(x): return weigh(ts.exp2(x))
@example("tracegrad.scipy.special.expm1", normal(3, 4))
def ts_expm1(x): return weigh(ts.expm1(x))
@example("tracegrad.scipy.special.log1p", between(-0.5, 2.0, 3, 4))
def ts_log1p(x): return weigh(ts.log1p(x))
@example("tracegrad.scipy.special.cbrt", away(3, 4))
def ts_cbrt(x): return weigh(ts.cbrt(x))
@example("tracegrad.scipy.special.sinc", normal(3, 4))
def ts_sinc(x): return weigh(ts.sinc(x))


# -- results without a derivative: (loss, the result), recorded as NumPy's constant ---------------

def constant(name, *makers):
    return example(name, *makers, constant=True)


def with_specials(rng):
    x = rng.standard_normal((3, 4))
    x[0, 1], x[1, 3], x[2, 0] = np.nan, np.inf, -np.inf
    return x




@constant("numpy.greater", normal(3, 4))
def np_greater(x):
    m = np.greater(x, 0.2)
    return weigh(np.where(m, x * x, x)), m
@constant("numpy.greater_equal", normal(3, 4), normal(4))
def np_greater_equal(x, y):
    m = x >= y
    return weigh(np.where(m, x, y * 2)), m
@constant("numpy.less", normal(3, 4))
def np_less(x):
    m = np.less(x, x[0])
    return weigh(x * m), m
@constant("numpy.less_equal", normal(3, 4))
def np_less_equal(x):
    m = x <= -0.1
    return weigh(x * np.less_equal(x, -0.1)), m
@constant("numpy.equal", normal(3, 4))
def np_equal(x):
    m = np.equal(np.floor(3 * x), 0.0)
    return weigh(np.where(m, x, np.sin(x))), m
@constant("numpy.not_equal", normal(3, 4))
def np_not_equal(x):
    m = np.floor(2 * x) != np.floor(2 * x[1])
    return weigh(x * m), m
@constant("numpy.isnan", with_specials)
def np_isnan(x):
    m = np.isnan(x)
    return weigh(np.where(m, 0.0, np.tanh(np.where(m, 0.0, x)))), m  # (the inner where: no NaN * 0)
@constant("numpy.isinf", with_specials)
def np_isinf(x):
    m = np.isinf(x)
    return weigh(np.where(m, 1.0, np.tanh(np.where(m, 0.0, np.nan_to_num(x))))), m
@constant("numpy.isfinite", with_specials)
def np_isfinite(x):
    m = np.isfinite(x)
    safe = np.where(m, x, 0.0)
    return np.sum(np.where(m, safe * safe, 0.0)), m
@constant("numpy.logical_and", normal(3, 4))
def np_logical_and(x):
    m = np.logical_and(x > -0.5, x < 0.5)
    return weigh(np.where(m, x, 2 * x)), m
@constant("numpy.logical_or", normal(3, 4))
def np_logical_or(x):
    m = np.logical_or(x < -0.5, x > 0.5)
    return weigh(np.where(m, x, 2 * x)), m
@constant("numpy.logical_xor", normal(3, 4))
def np_logical_xor(x):
    m = np.logical_xor(x > 0, MASK)
    return weigh(x * m), m
@constant("numpy.logical_not", normal(3, 4))
def np_logical_not(x):
    m = np.logical_not(x > 0)
    return weigh(x * m), m
@constant("numpy.logical_and.reduce", normal(3, 4))
def np_logical_and_reduce(x):
    m = np.logical_and.reduce(x > -1.0, axis=1)
    return weigh(x * m[:, None]), m
@constant("numpy.logical_or.reduce", normal(3, 4))
def np_logical_or_reduce(x):
    m = np.logical_or.reduce(x > 1.0, axis=0)
    return weigh(x * m), m
@constant("numpy.all", normal(3, 4))
def np_all(x):
    m = np.all(x > -1.0, axis=1, keepdims=True)
    return weigh(x * m), m
@constant("numpy.any", normal(3, 4))
def np_any(x):
    m = np.any(x > 1.0, axis=0)
    return weigh(x * m), m
@constant("numpy.bitwise_and", normal(3, 4))
def np_bitwise_and(x):
    k = np.bitwise_and(np.floor(4 * x).astype(np.int64), 3)
    return weigh(x * k), k
@constant("numpy.bitwise_or", normal(3, 4))
def np_bitwise_or(x):
    k = np.floor(4 * x).astype(np.int64) | 1
    return weigh(x * np.bitwise_or(np.floor(4 * x).astype(np.int64), 1)), k
@constant("numpy.bitwise_xor", normal(3, 4))
def np_bitwise_xor(x):
    k = np.bitwise_xor(np.floor(4 * x).astype(np.int64), np.array([1, 2, 3, 4]))
    return weigh(x * k), k
@constant("numpy.invert", normal(3, 4))
def np_invert(x):
    k = np.invert(np.floor(4 * x).astype(np.int64))
    b = ~(x > 0)
    return weigh(x * k + x * b), (k, b)
@constant("numpy.argmax", normal(3, 4))
def np_argmax(x):
    i = np.argmax(x, axis=1, keepdims=True)
    return weigh(np.take_along_axis(x, i, axis=1)), i
@constant("numpy.argmin", normal(3, 4))
def np_argmin(x):
    i = np.argmin(x)
    return weigh(x * np.ravel(x)[i]), i
@constant("numpy.argsort", normal(3, 4))
def np_argsort(x):
    i = np.argsort(x, axis=1)
    return weigh(np.take_along_axis(x, i, axis=1)), i
@constant("numpy.argpartition", normal(6))
def np_argpartition(x):
    i = np.argpartition(x, 2)
    return np.sum(np.sin(x[i[:3]])), i
IMAG = np.array([0.0, 0.5, 0.0, -1.0, 2.0])  # (kept out of the differentiated arguments: iscomplex
                                            #  and isreal jump as an imaginary part leaves 0)
@constant("numpy.iscomplex", normal(5))
def np_iscomplex(x):
    z = x + 1j * IMAG
    m = np.iscomplex(z)
    return weigh_c(np.where(m, z * z, z)), m
@constant("numpy.isreal", normal(5))
def np_isreal(x):
    z = x * x + 1j * IMAG
    m = np.isreal(z)
    return weigh_c(np.where(m, z * 2, z)), m
@constant("numpy.iscomplexobj", cnormal(4))
def np_iscomplexobj(z):
    c = np.iscomplexobj(z)
    return weigh_c(z * (2.0 if c else 1.0)), c
@constant("numpy.isrealobj", normal(4))
def np_isrealobj(x):
    r = np.isrealobj(x)
    return weigh(x * (2.0 if r else 1.0)), r
@constant("numpy.shape", normal(3, 4))
def np_shape(x):
    s = np.shape(x)
    return weigh(x * s[1]), s
@constant("numpy.ndim", normal(3, 4))
def np_ndim(x):
    n = np.ndim(x)
    return weigh(x * n), n
@constant("numpy.size", normal(3, 4))
def np_size(x):
    n = np.size(x, 1)
    return weigh(x / np.size(x) + x * n), n
@constant("numpy.result_type", normal(3, 4))
def np_result_type(x):
    t = np.result_type(x, np.float32, 1)
    return weigh(x.astype(t)), t


@constant("numpy.isclose", normal(3, 4))
def np_isclose(x):
    m = np.isclose(x, np.round(x, 1), atol=0.02)
    return weigh(np.where(m, x * x, x)), m


@constant("numpy.allclose", normal(4))
def np_allclose(x):
    c = np.allclose(x, x + 1e-9)
    return weigh(x * (3.0 if c else 1.0)), c


@constant("numpy.array_equal", normal(4))
def np_array_equal(x):
    c = np.array_equal(x, x * 1.0)
    return weigh(x * (2.0 if c else 1.0)), c


@example("numpy.round", normal(3, 4))
def np_round(x): return weigh(x * np.round(3 * x, 1) + x.round())


@example("numpy.around", normal(3, 4))
def np_around(x): return weigh(x * np.around(3 * x))
