"""Loss functions with PyTorch's signatures, checks and messages (``F.mse_loss``,
``F.cross_entropy``...).

Where PyTorch runs one kernel (mse, smooth L1, Huber, nll, the binary cross entropies) we
call one rule of :mod:`tracegrad.rules.loss`, so ``grad_fn.name()`` is PyTorch's; where
PyTorch composes (l1, kl_div, soft-target and label-smoothed cross entropy, the weighted
regression losses) we compose the same operations in the same order. ``cross_entropy``
is ``log_softmax`` then ``nll_loss``, as in PyTorch.

Known differences in the graph: where PyTorch's C++ composites divide or multiply by a
C++ Scalar (soft-target mean: ``DivBackward1``; label smoothing: ``MulBackward1``) the
Python number here records ``DivBackward0`` / ``MulBackward0``; and the gradient of
``nll_loss`` (constant in its input) gets a ``NllLossBackwardBackward0`` node under
``create_graph`` only when the incoming gradient requires grad. With mixed float dtypes,
``binary_cross_entropy_with_logits`` computes in the target's dtype, which is where
PyTorch stores its result.
"""
import warnings

from ...ops.activation import _log_softmax
from ...ops._args import result_type, scalar
from ...rules import loss as R
from ...backend import cpu as _cpu
from ...rules.broadcast import broadcast_to
from ...runtime import grad_mode
from ...runtime.fastpath import untracked_arrays, untracked_indices, untracked_result
from ...runtime.shapes import broadcast_shapes
from ...runtime.tensor import Tensor

_NDARRAY = _cpu.ndarray
_INT64 = _cpu.dtype("int64")

__all__ = ["mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "cross_entropy", "nll_loss",
           "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div"]

_REDUCTIONS = ("none", "mean", "sum")
_KL_MEAN = ("reduction: 'mean' divides the total loss by both the batch size and the support size."
            "'batchmean' divides only by the batch size, and aligns with the KL div math definition."
            "'mean' will be changed to behave the same as 'batchmean' in the next major release.")


# -- reduction arguments --------------------------------------------------------------------------

def _legacy(size_average, reduce):
    """The reduction named by the deprecated ``size_average`` / ``reduce`` flags."""
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    name = "mean" if size_average and reduce else "sum" if reduce else "none"
    warnings.warn(f"size_average and reduce args will be deprecated, please use reduction='{name}' "
                  "instead.", stacklevel=4)
    return name


def _reduction(reduction, size_average=None, reduce=None):
    """A checked reduction name (PyTorch's ``_Reduction.get_enum``)."""
    reduction = _requested(reduction, size_average, reduce)
    if reduction == "elementwise_mean":
        warnings.warn("reduction='elementwise_mean' is deprecated. Please use reduction='mean' instead.",
                      stacklevel=4)
        return "mean"
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return reduction


def _apply_reduction(loss, reduction):
    if reduction == "none":
        return loss
    return loss.mean() if reduction == "mean" else loss.sum()


def _weighted_reduction(loss, weight, reduction, mean_over_weights=True):
    """The weighted forms of the regression losses (composed in PyTorch too)."""
    loss = loss * weight
    if reduction == "none":
        return loss
    if reduction == "sum":
        return loss.sum()
    if reduction == "mean":
        return loss.sum() / weight.sum() if mean_over_weights else loss.mean()
    raise ValueError(f"Invalid reduction mode: {reduction}. Expected one of 'none', 'mean', 'sum'.")


# -- shared checks --------------------------------------------------------------------------------

def _no_grad_for(fn, name, tensor):
    """PyTorch refuses a weight that requires grad: its kernels have no gradient for it."""
    if tensor is not None and tensor.requires_grad and grad_mode.is_grad_enabled():
        raise RuntimeError(f"The function '{fn}' is not differentiable with respect to argument "
                           f"'{name}'. This input cannot have requires_grad True.")


def _broadcast_pair(input, target):
    """``input`` and ``target`` broadcast to one shape, warning (as PyTorch does) when the
    shapes differ; an operand that already has the shape is returned as it is."""
    if target.shape == input.shape:
        return input, target
    warnings.warn(f"Using a target size ({target.size()}) that is different to the input size "
                  f"({input.size()}). This will likely lead to incorrect results due to broadcasting. "
                  "Please ensure they have the same size.", stacklevel=3)
    shape = tuple(broadcast_shapes(input.shape, target.shape))
    return (input if input.shape == shape else broadcast_to(input, shape=shape),
            target if target.shape == shape else broadcast_to(target, shape=shape))


def _float_kernel(input, target, kernel):
    dtype = result_type(input, target)
    if not dtype.is_floating_point:
        raise NotImplementedError(f'"{kernel}" not implemented for \'{dtype.scalar_name}\'')


def _check_weight(weight, input):
    if weight is not None and weight.shape != input.shape:
        raise ValueError("Weights and input must have the same size.")


# -- regression losses ----------------------------------------------------------------------------

def _requested(reduction, size_average, reduce):
    """The reduction asked for, by name or by the deprecated flags (not yet checked)."""
    if size_average is not None or reduce is not None:
        return _legacy(size_average, reduce)
    return reduction


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """Mean squared error; a ``weight`` (input's shape) makes the mean a weighted mean."""
    input, target = _broadcast_pair(input, target)
    reduction = _requested(reduction, size_average, reduce)
    if weight is not None:
        _check_weight(weight, input)
        return _weighted_reduction((input - target) ** 2, weight, reduction)
    reduction = _reduction(reduction)
    _float_kernel(input, target, "mse_cpu")
    return R.mse_loss(input, target, reduction=reduction)


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """Mean absolute error, composed as in PyTorch (``(input - target).abs().mean()``)."""
    input, target = _broadcast_pair(input, target)
    reduction = _requested(reduction, size_average, reduce)
    if weight is not None:
        _check_weight(weight, input)
        return _weighted_reduction((input - target).abs(), weight, reduction)
    return _apply_reduction((input - target).abs(), _reduction(reduction))


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    """Quadratic below ``beta``, linear above; ``beta=0`` is the L1 loss."""
    input, target = _broadcast_pair(input, target)
    reduction = _reduction(reduction, size_average, reduce)
    beta = scalar(beta)
    if beta == 0.0:
        return _apply_reduction((input - target).abs(), reduction)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    _float_kernel(input, target, "smooth_l1_cpu")
    return R.smooth_l1_loss(input, target, reduction=reduction, beta=float(beta))


def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    """Quadratic below ``delta``, ``delta``-sloped above; weighted means divide by the count."""
    input, target = _broadcast_pair(input, target)
    delta = scalar(delta)
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    _float_kernel(input, target, "huber_cpu")
    if weight is not None:
        _check_weight(weight, input)
        loss = R.huber_loss(input, target, reduction="none", delta=float(delta))
        return _weighted_reduction(loss, weight, reduction, mean_over_weights=False)
    return R.huber_loss(input, target, reduction=_reduction(reduction), delta=float(delta))


# -- negative log likelihood and cross entropy ------------------------------------------------------

def _class_weight(weight, n_classes, prefix=""):
    if weight is None:
        return
    if weight.ndim != 1 or weight.numel() != n_classes:
        raise RuntimeError(f"{prefix}weight tensor should be defined either for all {n_classes} classes "
                           f"or no classes but got weight tensor of shape: {list(weight.shape)}")


def _check_kernel_dtypes(input, weight):
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"nll_loss_out_frame\" not implemented for '{input.dtype.scalar_name}'")
    if weight is not None and weight.dtype != input.dtype:
        raise RuntimeError(f"expected scalar type {input.dtype.scalar_name} but found {weight.dtype.scalar_name}")


def _check_target_dtype(target):
    if target.dtype.name not in ("int64", "uint8"):
        raise RuntimeError(f"expected target dtype to be Long or Byte, but got {target.dtype.scalar_name}")


def _nll(input, target, weight, reduction, ignore_index):
    """PyTorch's nll_loss (1-d or 2-d input) with its checks."""
    if target.ndim > 1:
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    if input.ndim == 1 and target.ndim == 1:
        if target.shape[0] != 1:
            raise ValueError(f"For 1D input, 1D target must have size 1, but got target size: {target.shape[0]}")
        target = target.reshape(())
    _check_target_dtype(target)
    _class_weight(weight, input.shape[-1])
    _check_kernel_dtypes(input, weight)
    return R.nll_loss(input, target, weight, reduction=reduction, ignore_index=ignore_index)


def _nll2d(input, target, weight, reduction, ignore_index):
    """PyTorch's nll_loss2d (4-d input: N, C, H, W) with its checks (a spatial target must
    be Long: the uint8 mask a program forgot to ``.long()`` is refused, as in PyTorch)."""
    if target.dtype.name != "int64":
        raise RuntimeError(f"expected scalar type Long but found {target.dtype.scalar_name}")
    if target.ndim != 3:
        raise RuntimeError("only batches of spatial targets supported (3D tensors) but got targets of "
                           f"dimension: {target.ndim}")
    if input.shape[0] != target.shape[0] or input.shape[2:] != target.shape[1:]:
        raise RuntimeError(f"size mismatch (got input: {list(input.shape)} , target: {list(target.shape)}")
    if weight is not None and (weight.ndim != 1 or weight.numel() != input.shape[1]):
        raise RuntimeError("weight tensor should be defined either for all or no classes")
    _check_kernel_dtypes(input, weight)
    return R.nll_loss(input, target, weight, reduction=reduction, ignore_index=ignore_index)


def _nll_nd(input, target, weight, reduction, ignore_index):
    """PyTorch's nll_loss_nd: nll_loss for 1-d and 2-d input, nll_loss2d for 4-d, and for
    other ranks nll_loss2d on an (N, C, 1, -1) view, viewed back for reduction='none'."""
    _no_grad_for("nll_loss_forward" if input.ndim <= 2 else "nll_loss2d_forward", "weight", weight)
    if input.ndim < 1:
        raise ValueError(f"Expected 1 or more dimensions (got {input.ndim})")
    batch = target.shape[0] if target.ndim else 0
    if input.ndim != 1 and input.shape[0] != batch:
        raise ValueError(f"Expected input batch_size ({input.shape[0]}) to match target batch_size ({batch}).")
    if input.ndim <= 2:
        return _nll(input, target, weight, reduction, ignore_index)
    if input.ndim == 4:
        return _nll2d(input, target, weight, reduction, ignore_index)
    n, c = input.shape[:2]
    out_size = [n, *input.shape[2:]]
    if list(target.shape[1:]) != out_size[1:]:
        raise RuntimeError(f"Expected target size {out_size}, got {list(target.shape)}")
    empty = input.numel() == 0
    input = input.reshape((n, c, 0, 0) if empty else (n, c, 1, -1))
    target = target.reshape((n, 0, 0) if target.numel() == 0 else (n, 1, -1))
    out = _nll2d(input, target, weight, reduction, ignore_index)
    return out.reshape(out_size) if reduction == "none" else out


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
             reduction="mean"):
    """The negative log likelihood of class-index targets, given log-probabilities."""
    return _nll_nd(input, target, weight, _reduction(reduction, size_average, reduce), ignore_index)


def _class_view(weight, ndim):
    """A per-class weight shaped to broadcast along dim 1 of an ``ndim``-d input."""
    return weight if ndim <= 1 else weight.reshape((1, weight.shape[0]) + (1,) * (ndim - 2))


def _soft_targets(input, target, weight, reduction, label_smoothing, class_dim):
    """Cross entropy against class probabilities (PyTorch's composition)."""
    if not target.dtype.is_floating_point:
        raise RuntimeError("Expected floating point type for target with class probabilities, got "
                           f"{target.dtype.scalar_name}")
    n_classes = input.shape[class_dim]
    _class_weight(weight, n_classes, prefix="cross_entropy: ")
    logp = _log_softmax(input, class_dim)
    if label_smoothing > 0.0:
        _check_smoothing(label_smoothing)
        target = target * (1 - label_smoothing) + (label_smoothing / n_classes)
    prod = logp * target if weight is None else logp * target * _class_view(weight, input.ndim)
    if reduction == "none":
        return -prod.sum(class_dim)
    if reduction == "sum":
        return -prod.sum()
    return -prod.sum() / (input.numel() // n_classes if n_classes else 0)


def _check_smoothing(label_smoothing):
    if label_smoothing > 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing:g}")


def _smoothed(input, target, weight, reduction, ignore_index, label_smoothing, class_dim):
    """Class-index cross entropy with label smoothing (PyTorch's composition): the nll of
    the target class mixed with the mean nll over all classes."""
    n_classes = input.shape[class_dim]
    logp = _log_softmax(input, class_dim)
    nll = _nll_nd(logp, target, weight, reduction, ignore_index)
    ignored = target == ignore_index
    if weight is None:
        smooth = -logp.sum(class_dim)
    else:
        smooth = -(logp * _class_view(weight, input.ndim)).sum(class_dim)
    smooth = smooth.masked_fill(ignored, 0.0)
    if reduction == "mean":
        kept = ~ignored
        if weight is None:
            total = kept.sum()
        else:
            total = weight.gather(0, target.masked_select(kept).flatten()).sum()
        smooth = smooth.sum() / total
    elif reduction == "sum":
        smooth = smooth.sum()
    return (1 - label_smoothing) * nll + smooth * (label_smoothing / n_classes)


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
                  reduction="mean", label_smoothing=0.0):
    """``nll_loss(log_softmax(input, class_dim), target)`` for class-index targets; class
    probabilities when ``target`` has the input's shape (PyTorch's rule)."""
    if (weight is None and size_average is None and reduce is None and label_smoothing == 0.0
            and reduction in ("mean", "sum")):
        loss = _untracked_cross_entropy(input, target, ignore_index, reduction)
        if loss is not None:
            return loss
    reduction = _reduction(reduction, size_average, reduce)
    label_smoothing = scalar(label_smoothing)
    class_dim = 0 if input.ndim == 1 else 1
    if input.shape == target.shape:
        if ignore_index >= 0:
            raise RuntimeError("ignore_index is not supported for floating point target")
        return _soft_targets(input, target, weight, reduction, label_smoothing, class_dim)
    if label_smoothing > 0.0:
        _check_smoothing(label_smoothing)
        return _smoothed(input, target, weight, reduction, ignore_index, label_smoothing, class_dim)
    return _nll_nd(_log_softmax(input, class_dim), target, weight, reduction, ignore_index)


def _untracked_cross_entropy(input, target, ignore_index, reduction):
    """The loss of (N, C) logits and (N,) int64 targets when the call records nothing (no
    grad, or nothing requiring it): :func:`tracegrad.rules.loss.cross_entropy_value`, one
    kernel with no log-probabilities made; None where it does not apply."""
    arrays = untracked_arrays(input)
    t = None if arrays is None else untracked_indices(target)
    if t is None:
        return None
    x = arrays[0]
    if (x.ndim != 2 or type(t) is not _NDARRAY or t.ndim != 1 or t.dtype != _INT64
            or t.shape[0] != x.shape[0] or not x.size):
        return None
    loss = R.cross_entropy_value(_cpu, x, t, ignore_index, reduction)
    return None if loss is None else untracked_result(loss)


# -- binary cross entropy ----------------------------------------------------------------------------

def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    """Cross entropy of probabilities ``input`` against ``target`` in [0, 1]; logs are
    floored at -100, so a confident mistake costs 100, not infinity."""
    reduction = _reduction(reduction, size_average, reduce)
    if target.shape != input.shape:
        raise ValueError(f"Using a target size ({target.size()}) that is different to the input size "
                         f"({input.size()}) is deprecated. Please ensure they have the same size.")
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"binary_cross_entropy\" not implemented for '{input.dtype.scalar_name}'")
    if target.dtype != input.dtype:
        raise RuntimeError(f"Found dtype {target.dtype.scalar_name} but expected {input.dtype.scalar_name}")
    if weight is not None:
        _no_grad_for("binary_cross_entropy", "weight", weight)
        _fits(tuple(input.shape), _expanded_shape(target.size(), weight.size()))
        if weight.dtype != input.dtype:
            weight = weight.to(input.dtype)
    return R.binary_cross_entropy(input, target, weight, reduction=reduction)


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None,
                                     reduction="mean", pos_weight=None):
    """``binary_cross_entropy(sigmoid(input), target)`` computed stably from the logits;
    ``pos_weight`` scales the loss of the positive class (broadcast along the classes)."""
    reduction = _reduction(reduction, size_average, reduce)
    if target.shape != input.shape:
        raise ValueError(f"Target size ({target.size()}) must be the same as input size ({input.size()})")
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"log_sigmoid_cpu\" not implemented for '{input.dtype.scalar_name}'")
    if not target.dtype.is_floating_point:
        raise RuntimeError(f"result type Float can't be cast to the desired output type "
                           f"{target.dtype.scalar_name}")
    for name, w in (("weight", weight), ("pos_weight", pos_weight)):
        _no_grad_for("binary_cross_entropy_with_logits", name, w)
    shape = tuple(input.shape)
    if pos_weight is not None:
        _fits(shape, tuple(broadcast_shapes(pos_weight.shape, shape)))
    if weight is not None:
        _fits(shape, tuple(broadcast_shapes(shape, weight.shape)))
    # PyTorch computes in place on (1 - target): the loss takes the target's dtype.
    dtype = target.dtype
    input, weight, pos_weight = (v if v is None or v.dtype == dtype else v.to(dtype)
                                 for v in (input, weight, pos_weight))
    return R.binary_cross_entropy_with_logits(input, target, weight, pos_weight, reduction=reduction)


def _expanded_shape(*sizes):
    """``torch.broadcast_shapes`` with its own message (PyTorch expands BCE's weight so)."""
    result = [1] * max(len(s) for s in sizes)
    for i, size in enumerate(sizes):
        for d in range(-1, -1 - len(size), -1):
            if size[d] == 1 or size[d] == result[d]:
                continue
            if result[d] != 1:
                raise RuntimeError(f"Attempting to broadcast a dimension of length {size[d]} at {d}! Mismatching "
                                   f"argument at index {i} had {size!r}; but expected shape should be "
                                   f"broadcastable to {result}")
            result[d] = size[d]
    return tuple(result)


def _fits(shape, broadcast):
    if broadcast != shape:
        raise RuntimeError(f"output with shape {list(shape)} doesn't match the broadcast shape {list(broadcast)}")


# -- Kullback-Leibler divergence ---------------------------------------------------------------------

def _xlogx(t):
    """``t * log(t)``, 0 where ``t == 0`` (PyTorch's ``xlogy(t, t)``)."""
    return (t * t.log()).masked_fill(t == 0, 0.0)


def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    """KL(target || exp(input)) pointwise: ``input`` holds log-probabilities, ``target``
    probabilities (log-probabilities with ``log_target=True``). 'batchmean' divides the
    sum by the batch size, which is the mathematical KL divergence; 'mean' warns."""
    if size_average is not None or reduce is not None:
        reduction = _legacy(size_average, reduce)
    elif reduction == "mean":
        warnings.warn(_KL_MEAN, stacklevel=2)
    kernel_reduction = "sum" if reduction == "batchmean" else _reduction(reduction)
    for v in (input, target):
        if v.dtype.is_complex:
            raise RuntimeError("kl_div: Complex inputs not supported.")
        if not v.dtype.is_floating_point:
            raise RuntimeError("kl_div: Integral inputs not supported.")
    if log_target:
        out = target.exp() * (target - input)
    else:
        out = _xlogx(target) - target * input
    out = _apply_reduction(out, kernel_reduction)
    if reduction == "batchmean" and input.ndim != 0:
        out = out / input.shape[0]
    return out
