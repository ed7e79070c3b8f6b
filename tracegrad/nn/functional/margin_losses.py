"""The margin, embedding and likelihood losses (``margin_ranking_loss``, ``hinge_embedding_loss``,
``soft_margin_loss``, ``multilabel_soft_margin_loss``, ``multi_margin_loss``,
``multilabel_margin_loss``, ``cosine_embedding_loss``, ``triplet_margin_loss``,
``triplet_margin_with_distance_loss``, ``poisson_nll_loss``, ``gaussian_nll_loss``).

Each composes tensor ops in PyTorch's formula (ATen's ``Loss.cpp`` composites, or the
per-sample sums its CPU kernels loop over), so values and gradients agree with PyTorch's
and every path differentiates them; the checks and messages are PyTorch's.
"""
import math

from ...backend import (
    cpu as host,  # host-side arithmetic on the target labels copied off the device
)
from ...ops.activation import logsigmoid
from ...runtime import creation
from ...runtime.grad_mode import no_grad
from .activation_extra import pairwise_distance
from .loss import _apply_reduction, _reduction

__all__ = ["margin_ranking_loss", "hinge_embedding_loss", "soft_margin_loss", "multilabel_soft_margin_loss",
           "multi_margin_loss", "multilabel_margin_loss", "cosine_embedding_loss", "triplet_margin_loss",
           "triplet_margin_with_distance_loss", "poisson_nll_loss", "gaussian_nll_loss"]


def _zeros(like):
    return creation.zeros_like(like)


def margin_ranking_loss(input1, input2, target, margin=0, size_average=None, reduce=None, reduction="mean"):
    """``max(0, -target * (input1 - input2) + margin)``."""
    reduction = _reduction(reduction, size_average, reduce)
    if input1.dim() != input2.dim() or input1.dim() != target.dim():
        raise RuntimeError(f"margin_ranking_loss : All input tensors should have same dimension but got sizes: "
                           f"input1: {input1.size()}, input2: {input2.size()}, target: {target.size()} ")
    return _apply_reduction((-target * (input1 - input2) + margin).clamp_min(0), reduction)


def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None, reduction="mean"):
    """``x`` where ``target == 1``, ``max(0, margin - x)`` where ``target == -1``."""
    reduction = _reduction(reduction, size_average, reduce)
    zeros = _zeros(input)
    output_margin = (margin - input).clamp_min(0).where(target != 1, zeros)
    output_self = input.where(target != -1, zeros)
    return _apply_reduction(output_margin + output_self, reduction)


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """``log(1 + exp(-target * input))``."""
    reduction = _reduction(reduction, size_average, reduce)
    return _apply_reduction((-input * target).exp().log1p(), reduction)


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    """Binary cross entropy of ``sigmoid(input)`` per class, averaged over the classes."""
    if size_average is not None or reduce is not None:
        reduction = _reduction(reduction, size_average, reduce)
    loss = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    class_dim = input.dim() - 1
    loss = loss.sum(dim=class_dim) / input.size(class_dim)
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    return _apply_reduction(loss, reduction)


def _class_targets(input):
    """``input`` as (N, C) and ``target`` as (N,) for the multi-class margin losses."""
    if input.dim() > 2 or (input.dim() == 2 and input.shape[1] == 0) or (input.dim() < 2 and input.numel() == 0):
        raise RuntimeError(f"Expected non-empty vector or matrix with optional 0-dim batch size, but got: "
                           f"{list(input.shape)}")
    return input.reshape(1, -1) if input.dim() < 2 else input


def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None, reduce=None,
                      reduction="mean"):
    """Per sample, ``sum over j != y of max(0, margin - x[y] + x[j]) ** p * weight[y] / C``."""
    reduction = _reduction(reduction, size_average, reduce)
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    if weight is not None and weight.dim() != 1:
        raise ValueError("weight must be one-dimensional")
    scalar_input = input.dim() < 2
    x = _class_targets(input)
    n, c = x.shape
    if target.numel() != n or (not scalar_input and target.dim() != 1):
        raise RuntimeError(f"multi_margin_loss: target tensor should be 1-D with size equal to the number of input "
                           f"samples (batch size). Expected target size [{n}], but got {list(target.shape)}. Input "
                           f"has shape {list(input.shape)}.")
    y = target.reshape(n, 1)
    if n and (int(y.min()) < 0 or int(y.max()) >= c):
        raise RuntimeError("target out of range")
    z = (margin - x.gather(1, y) + x).clamp_min(0)
    if p == 2:
        z = z * z
    others = creation.arange(c, device=x.device).reshape(1, c) != y
    z = z.where(others, _zeros(z))
    if weight is not None:
        z = z * weight.gather(0, y.reshape(-1)).reshape(n, 1)
    loss = z.sum(1) / c
    if scalar_input and reduction == "none":
        loss = loss.reshape(())
    return _apply_reduction(loss, reduction)


def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """Per sample, ``sum over target classes j and other classes k of max(0, 1 - (x[j] - x[k])) / C``;
    a row's target classes are its entries before the first -1."""
    reduction = _reduction(reduction, size_average, reduce)
    scalar_input = input.dim() < 2
    x = _class_targets(input)
    n, c = x.shape
    if tuple(target.shape) != (tuple(input.shape) if input.dim() else (1,)):
        raise RuntimeError(f"inconsistent target size: {list(target.shape)} for input of size: {list(input.shape)}")
    labels = host.asarray(target.tolist(), dtype=host.int64).reshape(n, c)
    if labels.size and (labels.min() < -1 or labels.max() >= c):
        raise RuntimeError("argument #2 'target' is out of range")
    counts = host.zeros((n, c))  # how often each class appears among a row's targets
    for row, classes in enumerate(labels):
        stop = host.flatnonzero(classes < 0)
        for j in classes[:stop[0] if stop.size else c]:
            counts[row, j] += 1
    dtype = x.dtype
    pick = creation.tensor(counts, dtype=dtype, device=x.device)
    rest = creation.tensor((counts == 0).astype(host.float64), dtype=dtype, device=x.device)
    hinge = (1 - (x.unsqueeze(2) - x.unsqueeze(1))).clamp_min(0)            # (N, j, k)
    loss = (hinge * pick.unsqueeze(2) * rest.unsqueeze(1)).sum((1, 2)) / c
    if scalar_input and reduction == "none":
        loss = loss.reshape(())
    return _apply_reduction(loss, reduction)


_EPSILON = 1e-12  # ATen's guard on the squared norms of cosine_embedding_loss


def cosine_embedding_loss(input1, input2, target, margin=0, size_average=None, reduce=None, reduction="mean"):
    """``1 - cos(x1, x2)`` where ``target == 1``, ``max(0, cos(x1, x2) - margin)`` where it is -1."""
    reduction = _reduction(reduction, size_average, reduce)
    dim = target.dim()
    if dim not in (0, 1):
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    if dim == 1 and not (input1.dim() == 2 and input2.dim() == 2):
        raise RuntimeError(f"1D target tensor expects 2D input tensors, but found inputs with sizes "
                           f"{list(input1.shape)} and {list(input2.shape)}.")
    if dim == 0 and not (input1.dim() == 1 and input2.dim() == 1):
        raise RuntimeError(f"0D target tensor expects 1D input tensors, but found inputs with sizes "
                           f"{list(input1.shape)} and {list(input2.shape)}.")
    prod_sum = (input1 * input2).sum(dim)
    mag_square1 = (input1 * input1).sum(dim) + _EPSILON
    mag_square2 = (input2 * input2).sum(dim) + _EPSILON
    cos = prod_sum / (mag_square1 * mag_square2).sqrt()
    zeros = _zeros(cos)
    pos = (1 - cos).where(target == 1, zeros)
    neg = (cos - margin).clamp_min(0).where(target == -1, zeros)
    return _apply_reduction(pos + neg, reduction)


def _check_triplet_dims(anchor, positive, negative):
    a, p, n = anchor.ndim, positive.ndim, negative.ndim
    if not a == p == n:
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have the same number of "
                           f"dimensions, but got: anchor {a}D, positive {p}D, and negative {n}D inputs")


def _triplet(anchor, positive, negative, distance, margin, swap, reduction):
    dist_pos = distance(anchor, positive)
    dist_neg = distance(anchor, negative)
    if swap:  # the positive as anchor, when it is closer to the negative
        dist_neg = dist_neg.minimum(distance(positive, negative))
    return _apply_reduction((margin + dist_pos - dist_neg).clamp_min(0), reduction)


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False, size_average=None,
                        reduce=None, reduction="mean"):
    """``max(0, margin + d(anchor, positive) - d(anchor, negative))`` with the p-norm distance."""
    reduction = _reduction(reduction, size_average, reduce)
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    _check_triplet_dims(anchor, positive, negative)
    return _triplet(anchor, positive, negative, lambda a, b: pairwise_distance(a, b, p, eps), margin, swap,
                    reduction)


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None, margin=1.0, swap=False,
                                      reduction="mean"):
    """:func:`triplet_margin_loss` with any distance (``pairwise_distance`` by default)."""
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    _check_triplet_dims(anchor, positive, negative)
    return _triplet(anchor, positive, negative, distance_function or pairwise_distance, margin, swap, reduction)


def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8, reduce=None,
                     reduction="mean"):
    """``exp(input) - target * input`` (``log_input``) or ``input - target * log(input + eps)``,
    plus Stirling's term of ``log(target!)`` where ``target > 1`` when ``full``."""
    if size_average is not None or reduce is not None:
        reduction = _reduction(reduction, size_average, reduce)
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not a valid value for reduction")
    loss = input.exp() - target * input if log_input else input - target * (input + eps).log()
    if full:
        stirling = target * target.log() - target + 0.5 * (2 * math.pi * target).log()
        loss = loss + stirling.masked_fill(target <= 1, 0)
    return _apply_reduction(loss, reduction)


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    """``0.5 * (log(var) + (input - target)^2 / var)`` (+ ``0.5 log(2 pi)`` when ``full``); ``var``
    is raised to at least ``eps`` in value only, its gradient passing straight through."""
    if isinstance(var, float):
        if var < 0:
            raise ValueError("var has negative entry/entries")
        var = var * creation.ones_like(input)
    elif bool((var < 0).any()):
        raise ValueError("var has negative entry/entries")
    if var.size() != input.size():
        if input.size()[:-1] == var.size():  # homoscedastic: one variance per sample
            var = var.unsqueeze(-1)
        elif input.ndim == var.ndim and sum(y for x, y in zip(input.size(), var.size()) if x != y) == 1:
            pass
        else:
            raise ValueError("var is of incorrect size")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    with no_grad():
        floor = var.clamp_min(eps) - var
    var = var + floor
    loss = 0.5 * (var.log() + (input - target) ** 2 / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _apply_reduction(loss, reduction)
