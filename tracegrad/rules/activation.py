"""Activation functions: elementwise nonlinearities and (log-)softmax along a dim.

The kernels are written to be stable for any |x| (no overflow in either branch of a
``where``) and each vjp reproduces PyTorch's value at the kinks, which is what models
trained in PyTorch expect. Where PyTorch's backward reads the *result* (sigmoid, relu,
softmax) the vjp uses ``out`` so the input can be freed or overwritten. The ``*_`` twins
exist because PyTorch gives those in-place ops their own node (``LeakyReluBackward1``...)
and saves their result instead of (a copy of) the input; other in-place variants share
the rule of their function.
"""
import math

from .. import backend
from . import gelu_kernels, layer_norm_kernels, relu_kernels
from .arith import clamp, where
from .core import FLOAT, KEEP, Primitive, primitive
from .reduce import sum as _sum
from .unary import exp, tanh

_SQRT1_2 = math.sqrt(0.5)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_GELU_BETA = math.sqrt(2.0 / math.pi)
_GELU_KAPPA = 0.044715
_ONE_SIXTH_F32 = 0.1666666716337204  # float32(1/6)
_INPLACE_SLOPE = ("In-place {} backward calculation is triggered with a negative slope which is "
                  "not supported. This is caused by calling in-place forward function with a "
                  "negative slope, please call out-of-place version instead.")
_LEAKY_EXTRA = (" File an issue at https://github.com/pytorch/pytorch if you do require "
                "supporting in-place leakRelu backward calculation with negative slope")


def _twin(prim, name, node, vjp):
    """An in-place variant of ``prim``: same kernel, its own node, a vjp from ``out``."""
    twin = Primitive(prim.impl, node, name=name, dtypes=prim.dtypes, diagonal=True, complex=prim.complex)
    twin.vjp("x", uses="out")(vjp)
    return twin


def _sigmoid(xp, x):
    """1 / (1 + e^-x) through e^-|x| <= 1, so neither branch can overflow (for complex x,
    which has no order, the formula itself: |e^-x| = e^-Re x)."""
    if isinstance(x, complex) or getattr(x, "dtype", None) is not None and x.dtype.kind == "c":
        return 1 / (1 + xp.exp(-x))
    e = xp.exp(-xp.abs(x))
    return xp.where(x >= 0, 1 / (1 + e), e / (1 + e))


def _softplus(xp, z):
    """log(1 + e^z) = max(z, 0) + log1p(e^-|z|), finite for every finite z."""
    return xp.maximum(z, 0) + xp.log1p(xp.exp(-xp.abs(z)))


# -- sigmoid family ---------------------------------------------------------------------------

@primitive("SigmoidBackward0", dtypes=FLOAT, diagonal=True, complex=True)  # holomorphic: g * f'(z)
def sigmoid(xp, x):
    return _sigmoid(xp, x)


@sigmoid.vjp("x", uses="out")
def sigmoid_vjp(g, out, x):
    return g * out * (1.0 - out)


@primitive("LogSigmoidBackward0", dtypes=FLOAT, diagonal=True)
def logsigmoid(xp, x):
    return xp.minimum(x, 0) - xp.log1p(xp.exp(-xp.abs(x)))


@logsigmoid.vjp("x", uses="x")
def logsigmoid_vjp(g, out, x):
    return g * sigmoid(-x)


@primitive("SiluBackward0", dtypes=FLOAT, diagonal=True)
def silu(xp, x):
    return x * _sigmoid(xp, x)


@silu.vjp("x", uses="x")
def silu_vjp(g, out, x):
    s = sigmoid(x)
    return g * s * (1 + x * (1 - s))


@primitive("MishBackward0", dtypes=FLOAT, diagonal=True)
def mish(xp, x):
    return x * xp.tanh(_softplus(xp, x))


@mish.vjp("x", uses="x")
def mish_vjp(g, out, x):
    t = tanh(softplus(x))
    return g * (t + x * sigmoid(x) * (1 - t * t))


@primitive("SoftplusBackward0", dtypes=FLOAT, diagonal=True)
def softplus(xp, x, *, beta=1.0, threshold=20.0):
    """PyTorch switches to the identity where ``beta * x > threshold``."""
    z = x * beta
    # max(z, 0) / beta is x where z > 0: taken as is, so that a z overflowing to inf (an
    # infinite threshold) costs nothing -- log1p(e^-|z|) / beta is then 0
    return xp.where(z > threshold, x, xp.where(z > 0, x, 0) + xp.log1p(xp.exp(-xp.abs(z))) / beta)


@softplus.vjp("x", uses="x")
def softplus_vjp(g, out, x, *, beta=1.0, threshold=20.0):
    z = x * beta
    return where(z > threshold, g, g * sigmoid(z))


# -- piecewise linear -------------------------------------------------------------------------

def _relu_code(args, dtypes, out, numbers):
    # NumPy's maximum(x, 0) on one element: NaN kept, -0.0 and 0.0 both give 0.0
    x, = args
    return f"{x} if {x} > 0 or {x} != {x} else np.{out.name}(0)"


@primitive("ReluBackward0", dtypes=KEEP, diagonal=True, scalar_code=_relu_code)
def relu(xp, x):
    return xp.maximum(x, 0)


@relu.inplace
def relu_write(xp, dst):
    xp.maximum(dst, 0, out=dst)


@relu.vjp("x", uses="out")
def relu_vjp(g, out, x):
    if isinstance(out, backend.ARRAY_TYPES):  # a first-order backward (plain arrays): the loop's
        dx = relu_kernels.relu_backward(backend.namespace_of(out), g, out)
        if dx is not None:
            return dx
    return where(out <= 0, 0.0, g)  # relu'(0) = 0; a NaN passes g through, as in PyTorch


@primitive("LeakyReluBackward0", dtypes=FLOAT, diagonal=True)
def leaky_relu(xp, x, *, negative_slope=0.01):
    return xp.where(x > 0, x, x * negative_slope)


@leaky_relu.vjp("x", uses="x")
def leaky_relu_vjp(g, out, x, *, negative_slope=0.01):
    return where(x > 0, g, g * negative_slope)  # the slope at 0 is negative_slope


def leaky_relu_result_vjp(g, out, x, *, negative_slope=0.01):
    if negative_slope < 0:
        raise RuntimeError(_INPLACE_SLOPE.format("leakyReLu") + _LEAKY_EXTRA)
    return where(out > 0, g, g * negative_slope)


leaky_relu_ = _twin(leaky_relu, "leaky_relu_", "LeakyReluBackward1", leaky_relu_result_vjp)


def _clip(xp, x, lo, hi):
    return xp.clip(x, lo, hi).astype(x.dtype, copy=False)


@primitive("HardtanhBackward0", dtypes=KEEP, diagonal=True)
def hardtanh(xp, x, *, min_val=-1.0, max_val=1.0):
    return _clip(xp, x, min_val, max_val)


@hardtanh.vjp("x", uses="x")
def hardtanh_vjp(g, out, x, *, min_val=-1.0, max_val=1.0):
    return where((x > min_val) & (x < max_val), g, 0.0)  # no gradient at the bounds




@primitive("HardsigmoidBackward0", dtypes=FLOAT, diagonal=True)
def hardsigmoid(xp, x):
    return xp.minimum(xp.maximum(x + 3, 0), 6) / 6


@hardsigmoid.vjp("x", uses="x")
def hardsigmoid_vjp(g, out, x):
    # PyTorch's kernel multiplies by 1/6 rounded to float32, also for float64 tensors.
    return where((x > -3) & (x < 3), g * _ONE_SIXTH_F32, 0.0)


@primitive("HardswishBackward0", dtypes=FLOAT, diagonal=True)
def hardswish(xp, x):
    return x * xp.minimum(xp.maximum(x + 3, 0), 6) / 6


@hardswish.vjp("x", uses="x")
def hardswish_vjp(g, out, x):
    return where(x <= -3, 0.0, where(x < 3, g * (x / 3 + 0.5), g))


@primitive("ThresholdBackward0", dtypes=KEEP, diagonal=True)
def threshold(xp, x, *, threshold, value):
    return xp.where(x <= threshold, value, x).astype(x.dtype, copy=False)


@threshold.vjp("x", uses="x")
def threshold_vjp(g, out, x, *, threshold, value):
    return where(x <= threshold, 0.0, g)


# threshold_ saves a copy of the input, as PyTorch does; only the node's name differs.
threshold_ = Primitive(threshold.impl, "ThresholdBackward1", name="threshold_", dtypes=KEEP,
                       diagonal=True)
threshold_.vjp("x", uses="x")(threshold_vjp)


@primitive("HardshrinkBackward0", dtypes=FLOAT, diagonal=True)
def hardshrink(xp, x, *, lambd=0.5):
    return xp.where((x >= -lambd) & (x <= lambd), 0, x)


@primitive("SoftshrinkBackward0", dtypes=FLOAT, diagonal=True)
def softshrink(xp, x, *, lambd=0.5):
    return xp.where(x > lambd, x - lambd, xp.where(x < -lambd, x + lambd, 0))


def shrink_vjp(g, out, x, *, lambd=0.5):
    return where((x >= -lambd) & (x <= lambd), 0.0, g)


hardshrink.vjp("x", uses="x")(shrink_vjp)
softshrink.vjp("x", uses="x")(shrink_vjp)


# -- exponential linear units: PyTorch's elu(x, alpha, scale, input_scale) ---------------------

@primitive("EluBackward0", dtypes=FLOAT, diagonal=True)
def elu(xp, x, *, alpha=1.0, scale=1.0, input_scale=1.0):
    """``scale * x`` for x > 0, ``alpha * scale * expm1(x * input_scale)`` otherwise (selu
    is elu with fixed alpha and scale); the exponent is taken of min(x, 0) only."""
    neg = xp.expm1(xp.minimum(x, 0) * input_scale) * (alpha * scale)
    return xp.where(x > 0, x * scale, neg)


@elu.vjp("x", uses="x")
def elu_vjp(g, out, x, *, alpha=1.0, scale=1.0, input_scale=1.0):
    slope = exp(where(x <= 0, x, 0.0) * input_scale) * (alpha * scale * input_scale)
    return where(x <= 0, g * slope, g * scale)


def elu_result_vjp(g, out, x, *, alpha=1.0, scale=1.0, input_scale=1.0):
    if alpha < 0:
        raise RuntimeError(_INPLACE_SLOPE.format("elu"))
    return where(out <= 0, g * input_scale * (out + alpha * scale), g * scale)


elu_ = _twin(elu, "elu_", "EluBackward1", elu_result_vjp)


@primitive("CeluBackward0", dtypes=FLOAT, diagonal=True)
def celu(xp, x, *, alpha=1.0):
    return elu.impl(xp, x, alpha=alpha, input_scale=1.0 / alpha)


@celu.vjp("x", uses="x")
def celu_vjp(g, out, x, *, alpha=1.0):
    return elu_vjp(g, out, x, alpha=alpha, input_scale=1.0 / alpha)


def celu_result_vjp(g, out, x, *, alpha=1.0):
    return elu_result_vjp(g, out, x, alpha=alpha, input_scale=1.0 / alpha)


celu_ = _twin(celu, "celu_", "CeluBackward1", celu_result_vjp)


# -- gelu ---------------------------------------------------------------------------------------

@primitive("GeluBackward0", dtypes=FLOAT, diagonal=True)
def gelu(xp, x, *, approximate="none"):
    out = gelu_kernels.gelu_forward(xp, x, approximate)
    if out is not None:
        return out
    if approximate == "tanh":
        c = xp.clip(x, -1e4, 1e4)  # tanh is saturated long before; keeps x**3 finite
        return 0.5 * x * (1 + xp.tanh(_GELU_BETA * (c + _GELU_KAPPA * c * c * c)))
    return 0.5 * x * (1 + xp.erf(x * _SQRT1_2))


@gelu.vjp("x", uses="x")
def gelu_vjp(g, out, x, *, approximate="none"):
    if isinstance(x, backend.ARRAY_TYPES):  # a first-order backward (plain arrays): the kernel's
        dx = gelu_kernels.gelu_backward(backend.namespace_of(x), g, x, approximate)
        if dx is not None:
            return dx
    if approximate == "tanh":
        # as in the kernel, x clipped where tanh has saturated (1 - t^2 == 0): x^3 would
        # overflow from |x| ~ 1e13 on in float32 and give inf * 0 = nan
        c = clamp(x, min=-1e4, max=1e4)
        c_sq = c * c
        t = tanh(_GELU_BETA * (c + _GELU_KAPPA * c_sq * c))
        right = 0.5 * c * (1 - t * t) * _GELU_BETA * (1 + 3 * _GELU_KAPPA * c_sq)
        return g * (0.5 * (1 + t) + right)
    return g * (gelu_cdf(x) + x * exp(-0.5 * x * x) * _INV_SQRT_2PI)


@primitive(dtypes=FLOAT, diagonal=True)
def gelu_cdf(xp, x):
    """The normal distribution function as GELU computes it (:func:`.gelu_kernels.cdf`:
    PyTorch's float32 approximation on the CPU, else exact), so that the composite vjp
    (``create_graph``, the staged paths) gets the first-order kernel's values."""
    return gelu_kernels.cdf(xp, x)


@gelu_cdf.vjp("x", uses="x")
def gelu_cdf_vjp(g, out, x):
    # the exact density, as in PyTorch's gelu double backward (its float32 cdf is within
    # 1e-7 of the exact one; the approximation's own slope is not what either means)
    return g * (exp(-0.5 * x * x) * _INV_SQRT_2PI)


# -- softmax along a dim ------------------------------------------------------------------------

def _along(xp, x, dim, log):
    """(log-)softmax of ``x`` along ``dim``; a slice holding inf or nan gives nan throughout,
    as in PyTorch, and without a floating-point warning."""
    if x.ndim == 0:
        return xp.reshape(_along(xp, xp.reshape(x, (1,)), 0, log), ())
    if x.size == 0:
        return xp.zeros_like(x)
    m = _max_along(xp, x, dim)
    ok = xp.isfinite(m)
    if ok.all():  # (no inf or nan: the arrays made here are written in place)
        shifted = x - m
        e = xp.exp(shifted)
        s = _sum_along(xp, e, dim)
        if log:
            shifted -= xp.log(s, out=s)
            return shifted
        e /= s
        return e
    shifted = x - xp.where(ok, m, 0)
    e = xp.exp(shifted)
    s = xp.sum(e, axis=dim, keepdims=True)
    if log:
        r = shifted - xp.log(xp.where(ok, s, 1))
    else:
        r = e / xp.where(ok, s, 1)
    return r if ok.all() else xp.where(ok, r, xp.nan)


def _max_along(xp, x, dim):
    """``x.max(dim, keepdims=True)``; along a short last dim of a C-contiguous CPU array
    (a vocabulary of characters, a few classes), as a maximum over the rows of its
    transposed copy: NumPy compares whole rows elementwise there, but walks each short row
    on its own in the original layout, ~4x slower at 256 x 13 (the maximum is exact, so the
    values are the same)."""
    k = x.shape[-1] if x.ndim else 0
    if (dim in (-1, x.ndim - 1) and x.ndim >= 2 and 1 < k <= _SHORT_ROW and xp.name == "cpu"
            and x.flags.c_contiguous):
        rows = x.reshape(-1, k)
        return xp.ascontiguousarray(rows.T).max(axis=0).reshape(x.shape[:-1] + (1,))
    return xp.amax(x, axis=dim, keepdims=True)


_SHORT_ROW = 32  # (from ~64 elements on NumPy's own reduction along rows is as fast)


def _sum_along(xp, e, dim):
    """``e.sum(dim, keepdims=True)``; along the last dim of a float CPU array, as a product
    with a vector of ones (BLAS), 3-4x faster than NumPy's sum over rows as short as a
    vocabulary of characters."""
    if (dim in (-1, e.ndim - 1) and e.ndim >= 2 and xp.name == "cpu" and e.dtype.char in "fd"
            and e.flags.c_contiguous):
        return (e @ xp.ones(e.shape[-1], dtype=e.dtype))[..., None]
    return xp.sum(e, axis=dim, keepdims=True)


def _dims(v, dim):
    return None if v.ndim == 0 else (dim,)


@primitive("SoftmaxBackward0", dtypes=FLOAT)
def softmax(xp, x, *, dim):
    return _along(xp, x, dim, log=False)


@softmax.vjp("x", uses="out")
def softmax_vjp(g, out, x, *, dim):
    # The Jacobian diag(s) - s s^T is symmetric, so the same formula is the jvp.
    return out * (g - _sum(g * out, dim=_dims(out, dim), keepdim=True))


softmax.jvp("x")(softmax_vjp)


@primitive("LogSoftmaxBackward0", dtypes=FLOAT)
def log_softmax(xp, x, *, dim):
    return _along(xp, x, dim, log=True)


@log_softmax.vjp("x", uses="out")
def log_softmax_vjp(g, out, x, *, dim):
    if (isinstance(out, backend.ARRAY_TYPES) and isinstance(g, backend.ARRAY_TYPES) and out.ndim
            and g.dtype == out.dtype):
        xp = backend.namespace_of(out)  # (a first-order backward: the composite's steps,
        e = xp.exp(out)                  # in place into exp(out); the same roundings)
        e *= _class_sums(g, dim)
        return xp.subtract(g, e, out=e)
    return g - exp(out) * _class_sums(g, dim)


def _class_sums(g, dim):
    """``sum(g, dim, keepdim=True)``; along the last dim a product with ones (on arrays and
    in the composite alike, so both round the same), ~4x faster than NumPy's sum along
    rows as short as a vocabulary of characters."""
    return _sum(g, dim=None, keepdim=True) if g.ndim == 0 else layer_norm_kernels.row_sums(g, (dim,))


@log_softmax.jvp("x")
def log_softmax_jvp(t, out, x, *, dim):
    return t - _sum(exp(out) * t, dim=_dims(out, dim), keepdim=True)


__all__ = ["sigmoid", "logsigmoid", "silu", "mish", "softplus", "relu", "leaky_relu",
           "leaky_relu_", "hardtanh", "hardsigmoid", "hardswish", "threshold",
           "threshold_", "hardshrink", "softshrink", "elu", "elu_", "celu", "celu_", "gelu", "gelu_cdf",
           "softmax", "log_softmax"]
