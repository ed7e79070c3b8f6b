"""``batch_norm``, ``layer_norm``, ``group_norm`` and ``normalize``, with PyTorch's checks.

The three normalisations are single rules of :mod:`tracegrad.rules.nn` (one node each, a
handful of passes over the data forward and backward). ``batch_norm`` in training mode
also folds the batch statistics into the running averages, in place, with the unbiased
variance, as PyTorch does.
"""
import math

from ... import backend
from ...backend import cpu as _cpu
from ...ops._args import per_sample
from ...rules import layer_norm_kernels as _ln_kernels
from ...rules import nn as _rules
from ...runtime import grad_mode
from ...runtime.fastpath import untracked_arrays, untracked_result
from ...runtime.tensor import Size as _Size
from ...runtime.tensor import Tensor

__all__ = ["batch_norm", "layer_norm", "group_norm", "rms_norm", "normalize"]


# torch's refusal (under vmap) to update shared running statistics from per-sample ones
_VMAP_RUNNING_STATS = (
    "Batch norm got a batched tensor as input while the running_mean or running_var, which will be "
    "updated in place, were not batched.\nIf you are using a module and do not need eval mode, please set "
    "`track_running_stats` to be False.If you are using a prebuilt module and do not need eval mode, please "
    "see the functorch website for resources on how to patch your module to work with vmap")


def _same_dtype(input, *params):
    """PyTorch's CPU kernels take the parameters in the input's dtype only."""
    for t in params:
        if t is not None and t.dtype is not input.dtype:
            if input.dtype.name == "float32":
                raise RuntimeError("mixed dtype (CPU): expect parameter to have scalar type of Float")
            raise RuntimeError("mixed dtype (CPU): all inputs must share same datatype.")


def _verify_batch_size(size):
    n = size[0]
    for s in size[2:]:
        n *= s
    if n == 1:
        raise ValueError(f"Expected more than 1 value per channel when training, got input size {size}")


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1,
               eps=1e-5):
    """Normalise each channel (dim 1) by the batch's statistics (``training``) or by the
    running averages, then scale by ``weight`` and shift by ``bias``. In training, the
    running averages (when given) move by ``momentum`` towards the batch's mean and
    unbiased variance."""
    if training:
        _verify_batch_size(input.size())
    if training and eps <= 0.0:
        raise ValueError(f"batch_norm eps must be positive during training, but got {eps}")
    if eps < 0.0:
        raise ValueError(f"batch_norm eps must be non-negative, but got {eps}")
    channels = input.shape[1] if input.ndim > 1 else 0
    for name, t in (("running_mean", running_mean), ("running_var", running_var), ("weight", weight),
                    ("bias", bias)):
        if t is not None and t.numel() != channels:
            raise RuntimeError(f"{name} should contain {channels} elements not {t.numel()}")
    if not training and (running_mean is None or running_var is None):
        raise RuntimeError(f"{'running_mean' if running_mean is None else 'running_var'} must be defined in "
                           "evaluation mode")
    _same_dtype(input, weight, bias, running_mean, running_var)
    if grad_mode.is_grad_enabled():
        for name, t in (("running_mean", running_mean), ("running_var", running_var)):
            if t is not None and t.requires_grad:
                raise RuntimeError(f"The function 'native_batch_norm' is not differentiable with respect to "
                                   f"argument '{name}'. This input cannot have requires_grad True.")
    if input.numel() == 0:  # no statistics to take: PyTorch returns the affine map of a clone
        return _empty_batch_norm(input, weight, bias)
    if not training:
        return _rules.batch_norm_eval(input, weight, bias, running_mean, running_var, eps=eps)
    out, mean, invstd = _rules.batch_norm(input, weight, bias, eps=eps)
    if running_mean is not None or running_var is not None:
        if per_sample(input) and not (per_sample(running_mean) or per_sample(running_var)):
            raise RuntimeError(_VMAP_RUNNING_STATS)
        if per_sample(input) or per_sample(running_mean) or per_sample(running_var):  # under vmap
            _update_batched_stats(input, running_mean, running_var, mean, invstd, momentum, eps)
        else:
            _update_running_stats(input, running_mean, running_var, mean._data, invstd._data, momentum, eps)
    return out


def _empty_batch_norm(input, weight, bias):
    out = input.clone()
    shape = (1, -1) + (1,) * (input.ndim - 2)
    if weight is not None:
        out = out * weight.reshape(shape)
    if bias is not None:
        out = out + bias.reshape(shape)
    return out


def _update_batched_stats(input, running_mean, running_var, mean, invstd, momentum, eps):
    """:func:`_update_running_stats` under vmap, through in-place ops (which batch): a
    batched tensor's ``_data`` is its sample 0 only."""
    n = input.numel() // max(input.shape[1], 1)
    if n == 0:
        return
    with grad_mode.no_grad():
        if running_mean is not None:
            running_mean.mul_(1 - momentum).add_((mean * momentum).to(running_mean.dtype))
        if running_var is not None:
            inv = invstd.double()
            unbiased = (1.0 / (inv * inv) - eps) * (n / (n - 1) if n > 1 else float("inf"))
            running_var.mul_(1 - momentum).add_((unbiased * momentum).to(running_var.dtype))


def _update_running_stats(input, running_mean, running_var, mean, invstd, momentum, eps):
    """``running = (1 - momentum) * running + momentum * batch`` for the mean and the
    unbiased variance (n / (n - 1) times the biased one the batch was normalised with)."""
    n = input.numel() // max(input.shape[1], 1)
    if n == 0:
        return
    if running_mean is not None:
        rm = running_mean._data
        rm *= 1 - momentum
        rm += (momentum * mean).astype(rm.dtype, copy=False)  # (no version bump, as in PyTorch)
    if running_var is not None:
        rv = running_var._data
        xp = backend.namespace_of(rv)
        inv = invstd.astype(xp.float64)
        unbiased = (1.0 / (inv * inv) - eps) * (n / (n - 1) if n > 1 else float("inf"))
        rv *= 1 - momentum
        rv += (momentum * unbiased).astype(rv.dtype, copy=False)


def _shape_tuple(normalized_shape, fn, arg, pos):
    if type(normalized_shape) is _Size:  # (a module's weight.shape: ints already)
        return tuple(normalized_shape)
    if isinstance(normalized_shape, int) or not isinstance(normalized_shape, (tuple, list)):
        raise TypeError(f"{fn}(): argument '{arg}' (position {pos}) must be tuple of ints, not "
                        f"{type(normalized_shape).__name__}")
    return tuple(int(s) for s in normalized_shape)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """Normalise over the trailing dims ``normalized_shape`` (per element of the others),
    then scale and shift elementwise by ``weight`` and ``bias`` (that shape)."""
    shape = _shape_tuple(normalized_shape, "layer_norm", "normalized_shape", 2)
    arrays = untracked_arrays(input, weight, bias)
    if arrays is not None:  # (recording nothing: the output alone, once the shapes are right)
        x, w, b = arrays
        k = len(shape)
        if (k and x.size and x.shape[x.ndim - k:] == shape and (w is None or w.shape == shape)
                and (b is None or b.shape == shape)):
            out = _ln_kernels.layer_norm_forward(_cpu, x, w, b, eps, math.prod(shape), None)
            if out is None:  # (squares overflowing: the rule's general form)
                out = _rules.layer_norm.impl(_cpu, x, w, b, normalized_shape=shape, eps=eps)[0]
            return untracked_result(out)
    k = len(shape)
    if k == 0 or tuple(input.shape[input.ndim - k:]) != shape or input.ndim < k:
        raise RuntimeError(f"Given normalized_shape={list(shape)}, expected input with shape "
                           f"[*, {', '.join(str(s) for s in shape)}], but got input of size{list(input.shape)}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and tuple(t.shape) != shape:
            raise RuntimeError(f"Expected {name} to be of same shape as normalized_shape, but got {name} of "
                               f"shape {list(t.shape)} and normalized_shape = {list(shape)}")
    _same_dtype(input, weight, bias)
    return _rules.layer_norm(input, weight, bias, normalized_shape=shape, eps=eps)[0]


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    """Split the channels (dim 1) into ``num_groups`` groups and normalise each group of
    each sample, then scale and shift per channel."""
    if input.ndim < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received {input.ndim}")
    channels = input.shape[1]
    _verify_batch_size([input.shape[0] * channels // num_groups, num_groups] + list(input.shape[2:]))
    if channels % num_groups:
        raise RuntimeError(f"Expected number of channels in input to be divisible by num_groups, but got "
                           f"input of shape {list(input.shape)} and num_groups={num_groups}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and (t.ndim != 1 or t.numel() != channels):
            raise RuntimeError(f"Expected {name} to be a vector of size equal to the number of channels in "
                               f"input, but got {name} of shape {list(t.shape)} and input of shape "
                               f"{list(input.shape)}")
    _same_dtype(input, weight, bias)
    return _rules.group_norm(input, weight, bias, num_groups=num_groups, eps=eps)[0]


_EPS = {"float16": 0.0009765625, "float32": 1.1920928955078125e-07, "float64": 2.220446049250313e-16}


def rms_norm(input, normalized_shape, weight=None, eps=None):
    """``input / sqrt(mean(input**2) + eps) * weight`` over the trailing ``normalized_shape``
    dims; ``eps`` defaults to the dtype's machine epsilon, as in PyTorch."""
    shape = _shape_tuple(normalized_shape, "rms_norm", "normalized_shape", 2)
    k = len(shape)
    if tuple(input.shape[input.ndim - k:]) != shape or input.ndim < k:
        raise RuntimeError(f"Given normalized_shape={list(shape)}, expected input with shape "
                           f"[*, {', '.join(str(s) for s in shape)}], but got input of size{list(input.shape)}")
    if eps is None:
        eps = _EPS.get(input.dtype.name, _EPS["float32"])
    dims = tuple(range(input.ndim - k, input.ndim))
    out = input * (input * input).mean(dims, keepdim=True).add(eps).rsqrt()
    return out if weight is None else out * weight


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    """``input / max(||input||_p, eps)`` along ``dim`` (a DivBackward0 node, as in PyTorch)."""
    denom = input.norm(p, dim, keepdim=True).clamp_min(eps).expand_as(input)
    if out is None:
        return input / denom
    if not isinstance(out, Tensor):
        raise TypeError(f"normalize(): argument 'out' must be Tensor, not {type(out).__name__}")
    result = input / denom
    with grad_mode.no_grad():
        out.copy_(result)
    return out
