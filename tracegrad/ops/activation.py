"""Activation functions with PyTorch's signatures.

``FUNCTIONS`` holds what PyTorch exposes as ``torch.<name>``, ``METHODS`` the Tensor
methods, and ``FUNCTIONAL`` everything of ``torch.nn.functional`` (for a later
``tracegrad.nn.functional`` to re-export). Out-of-place functions call the rules of
:mod:`tracegrad.rules.activation`, so they work on any operand the table dispatches on;
``inplace=True`` and the ``*_`` variants go through ``apply_inplace`` so that version
counters, leaf checks and PyTorch's ``...Backward1`` nodes come out as in PyTorch.
"""
import warnings

from ..rules import activation as R
from ..rules.unary import abs as _abs
from ..runtime.dispatch import apply_inplace, eager_unary
from ..runtime.tensor import Tensor
from ._args import scalar, wrap_dim
from .pointwise import tanh

__all__ = ["FUNCTIONS", "METHODS", "FUNCTIONAL"]

_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946
_FLOAT_MAX = {"float16": "65504", "float32": "3.40282e+38", "float64": "1.79769e+308"}


def _float_only(input, kernel):
    """PyTorch's CPU kernels for these functions have no integer or bool version."""
    if isinstance(input, Tensor) and not input.dtype.is_floating_point:
        raise NotImplementedError(f'"{kernel}" not implemented for \'{input.dtype.scalar_name}\'')


def _no_bool(input, op):
    if isinstance(input, Tensor) and input.dtype.name == "bool":
        raise RuntimeError(f"{'Boolean' if op == 'relu' else 'Bool'} inputs not supported for {op}")


def _inplace(prim, input, **params):
    return apply_inplace(prim, (input,), params)


# -- sigmoid family -------------------------------------------------------------------------------

def sigmoid(input):
    return R.sigmoid(input)


def sigmoid_(input):
    return _inplace(R.sigmoid, input)


def logsigmoid(input):
    _float_only(input, "log_sigmoid_cpu")
    return R.logsigmoid(input)


def silu(input, inplace=False):
    _float_only(input, "silu_cpu")
    return _inplace(R.silu, input) if inplace else R.silu(input)


def mish(input, inplace=False):
    _float_only(input, "mish_cpu")
    return _inplace(R.mish, input) if inplace else R.mish(input)


def softplus(input, beta=1.0, threshold=20.0):
    _float_only(input, "softplus_cpu")
    return R.softplus(input, beta=scalar(beta), threshold=scalar(threshold))


def gelu(input, *, approximate="none"):
    if approximate not in ("none", "tanh"):
        raise RuntimeError("approximate argument must be either none or tanh.")
    _float_only(input, "GeluKernelImpl")
    return R.gelu(input, approximate=approximate)


# -- piecewise linear -----------------------------------------------------------------------------

def relu(input, inplace=False):
    if inplace:
        return relu_(input)
    _no_bool(input, "relu")
    return R.relu(input)


def relu_(input):
    _no_bool(input, "relu")
    return _inplace(R.relu, input)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    _float_only(input, "leaky_relu_cpu")
    if inplace:
        return _inplace(R.leaky_relu_, input, negative_slope=scalar(negative_slope))
    return R.leaky_relu(input, negative_slope=scalar(negative_slope))


def leaky_relu_(input, negative_slope=0.01):
    return leaky_relu(input, negative_slope, inplace=True)


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    _no_bool(input, "hardtanh")
    params = {"min_val": scalar(min_val), "max_val": scalar(max_val)}
    if inplace:
        return _inplace(R.hardtanh, input, **params)
    return R.hardtanh(input, **params)


def hardtanh_(input, min_val=-1.0, max_val=1.0):
    return hardtanh(input, min_val, max_val, inplace=True)


def relu6(input, inplace=False):
    """``hardtanh(input, 0, 6)``: PyTorch records a HardtanhBackward0 node too."""
    return hardtanh(input, 0.0, 6.0, inplace)


def hardsigmoid(input, inplace=False):
    _float_only(input, "hardsigmoid_cpu")
    return _inplace(R.hardsigmoid, input) if inplace else R.hardsigmoid(input)


def hardswish(input, inplace=False):
    _float_only(input, "hardswish_cpu")
    return _inplace(R.hardswish, input) if inplace else R.hardswish(input)


def threshold(input, threshold, value, inplace=False):
    if isinstance(input, Tensor) and input.dtype.name == "bool":
        raise NotImplementedError("\"threshold_cpu\" not implemented for 'Bool'")
    params = {"threshold": scalar(threshold), "value": scalar(value)}
    if inplace:
        return _inplace(R.threshold_, input, **params)
    return R.threshold(input, **params)


_threshold = threshold


def threshold_(input, threshold, value):
    return _threshold(input, threshold, value, inplace=True)


def hardshrink(input, lambd=0.5):
    _float_only(input, "hardshrink_cpu")
    return R.hardshrink(input, lambd=scalar(lambd))


def softshrink(input, lambd=0.5):
    _float_only(input, "softshrink_check")
    lambd = scalar(lambd)
    if lambd < 0:
        d = input.dtype
        raise RuntimeError(f"lambda must be in range [0, {_FLOAT_MAX.get(d.name, 'inf')}] for input "
                           f"dtype {d.scalar_name}, but found {lambd:g}")
    return R.softshrink(input, lambd=lambd)


def softsign(input):
    """``input / (|input| + 1)``, composed as in PyTorch (a DivBackward0 node)."""
    return input / (_abs(input) + 1)


def tanhshrink(input):
    """``input - tanh(input)``, composed as in PyTorch (a SubBackward0 node)."""
    return input - tanh(input)


# -- exponential linear units ---------------------------------------------------------------------

def elu(input, alpha=1.0, inplace=False):
    _float_only(input, "elu_cpu")
    params = {"alpha": scalar(alpha), "scale": 1.0, "input_scale": 1.0}
    return _inplace(R.elu_, input, **params) if inplace else R.elu(input, **params)


def elu_(input, alpha=1.0):
    return elu(input, alpha, inplace=True)


def selu(input, inplace=False):
    """elu with fixed alpha and scale; PyTorch records an Elu node for it."""
    _float_only(input, "elu_cpu")
    params = {"alpha": _SELU_ALPHA, "scale": _SELU_SCALE, "input_scale": 1.0}
    return _inplace(R.elu_, input, **params) if inplace else R.elu(input, **params)


def selu_(input):
    return selu(input, inplace=True)


def celu(input, alpha=1.0, inplace=False):
    alpha = scalar(alpha)
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError: alpha cannot be 0 for CELU")
    _float_only(input, "elu_cpu")
    return _inplace(R.celu_, input, alpha=alpha) if inplace else R.celu(input, alpha=alpha)


def celu_(input, alpha=1.0):
    return celu(input, alpha, inplace=True)


# -- softmax ----------------------------------------------------------------------------------------

def _get_softmax_dim(name, ndim, stacklevel):
    """The dim PyTorch's functional softmax picks when none is given (deprecated)."""
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. "
                  "Change the call to include dim=X as an argument.", stacklevel=stacklevel)
    return 0 if ndim in (0, 1, 3) else 1


def _along(prim, kernel, input, dim, dtype):
    if dtype is not None:
        input = input.to(dtype)
    d = wrap_dim(dim, input.ndim)
    if isinstance(input, Tensor) and not input.dtype.is_floating_point:
        _float_only(input, kernel.format("_lastdim" if d == max(input.ndim - 1, 0) else ""))
    return prim(input, dim=d)


def _softmax(input, dim, dtype=None):
    """``torch.softmax`` / ``Tensor.softmax``: ``dim`` is required."""
    return _along(R.softmax, "softmax{}_kernel_impl", input, dim, dtype)


def _log_softmax(input, dim, dtype=None):
    return _along(R.log_softmax, "log_softmax{}_kernel_impl", input, dim, dtype)


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    """``torch.nn.functional.softmax``: an omitted ``dim`` is guessed, with a warning."""
    if dim is None:
        dim = _get_softmax_dim("softmax", input.ndim, _stacklevel)
    return _softmax(input, dim, dtype)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        dim = _get_softmax_dim("log_softmax", input.ndim, _stacklevel)
    return _log_softmax(input, dim, dtype)


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    """``softmax(-input)``: PyTorch records SoftmaxBackward0 over NegBackward0."""
    if dim is None:
        dim = _get_softmax_dim("softmin", input.ndim, _stacklevel)
    return _softmax(-input, dim, dtype)


# -- Tensor methods (the hot ones skip the generic dispatch) ---------------------------------------

_sigmoid_method = eager_unary(R.sigmoid)
_eager_relu = eager_unary(R.relu)


def _relu_method(self):
    _no_bool(self, "relu")
    return _eager_relu(self)


def _softmax_method(self, dim, dtype=None):
    return _softmax(self, dim, dtype)


def _log_softmax_method(self, dim, dtype=None):
    return _log_softmax(self, dim, dtype)


def _hardshrink_method(self, lambd=0.5):
    return hardshrink(self, lambd)


for _f, _n in ((_sigmoid_method, "sigmoid"), (_relu_method, "relu"), (_softmax, "softmax"),
               (_log_softmax, "log_softmax"), (_softmax_method, "softmax"),
               (_log_softmax_method, "log_softmax"), (_hardshrink_method, "hardshrink")):
    _f.__name__ = _f.__qualname__ = _n

METHODS = {"sigmoid": _sigmoid_method, "sigmoid_": sigmoid_, "relu": _relu_method,
           "relu_": relu_, "softmax": _softmax_method, "log_softmax": _log_softmax_method,
           "hardshrink": _hardshrink_method}

FUNCTIONS = {"sigmoid": sigmoid, "sigmoid_": sigmoid_, "relu": relu, "relu_": relu_,
             "selu": selu, "selu_": selu_, "celu": celu, "celu_": celu_,
             "softmax": _softmax, "log_softmax": _log_softmax, "threshold": threshold,
             "threshold_": threshold_, "hardshrink": hardshrink}

FUNCTIONAL = {n: globals()[n] for n in (
    "sigmoid", "tanh", "logsigmoid", "silu", "mish", "softplus", "gelu", "relu", "relu_",
    "leaky_relu", "leaky_relu_", "hardtanh", "hardtanh_", "relu6", "hardsigmoid", "hardswish",
    "threshold", "threshold_", "hardshrink", "softshrink", "softsign", "tanhshrink", "elu",
    "elu_", "selu", "selu_", "celu", "celu_", "softmax", "log_softmax", "softmin")}
