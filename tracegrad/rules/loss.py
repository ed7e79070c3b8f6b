"""Loss functions that PyTorch runs as one kernel with a node of its own (``MseLossBackward0``,
``NllLossBackward0``...): one primitive each, so a loss costs one node, not the five or six
its composition would, and the graph reads as PyTorch's does.

``reduction`` is a static parameter (``'none' | 'mean' | 'sum'``); operands arrive already
checked and broadcast by :mod:`tracegrad.nn.functional.loss`, which also gives the
composite losses (``l1_loss``, ``kl_div``, soft-target and label-smoothed cross entropy).
Weights are operands that take no gradient (PyTorch refuses them with requires_grad).

``nll_loss`` is linear in its input, and its vjp ``nll_loss_backward`` is linear in the
gradient: each is the other's transpose, which gives every derivative of both, to any order.
"""
from .activation import logsigmoid, sigmoid
from .arith import clamp
from .core import FLOAT, KEEP, primitive
from .index import indices_below
from .reduce import mean, sum as _sum
from .scratch import constant_vector
from .unary import log

_REDUCTION_ENUM = {"none": 0, "mean": 1, "sum": 2}
_EPSILON = 9.999999960041972e-13  # float32(1e-12): PyTorch's floor for x (1 - x) in d bce / dx
_LOG_FLOOR = -100.0  # ... and for its logarithms


def _reduction_view(params):
    """PyTorch saves the reduction as its enum (``grad_fn._saved_reduction == 1`` for mean)."""
    return {"reduction": _REDUCTION_ENUM[params.get("reduction", "mean")]}


def _reduce(xp, loss, reduction):
    if reduction == "none":
        return loss
    return xp.asarray(xp.mean(loss) if reduction == "mean" else xp.sum(loss), dtype=loss.dtype)


def _reduce_tangent(v, reduction):
    """What the reduction does to a tangent (the jvps): the same reduction, by primitives."""
    if reduction == "none":
        return v
    return mean(v) if reduction == "mean" else _sum(v)


def _scale(g, like, reduction):
    """The gradient of the reduction: ``g`` (0-d for mean and sum) divided by the number of
    elements for a mean; it broadcasts against the per-element slope it multiplies."""
    return g / _count(like) if reduction == "mean" else g


def _count(v):
    n = 1
    for s in v.shape:
        n *= s
    return n


def _weighted(v, weight):
    return v if weight is None else v * weight


def _backward(v, like, weight, reduction):
    """A weighted loss's gradient ``v`` (slope times g) weighted, then divided for a mean."""
    v = _weighted(v, weight)
    return v / _count(like) if reduction == "mean" else v


# -- regression losses: mse, smooth L1, Huber -------------------------------------------------

@primitive("MseLossBackward0", dtypes=FLOAT, saved_names=("self", "target"), saved_view=_reduction_view)
def mse_loss(xp, x, y, *, reduction="mean"):
    d = x - y
    return _reduce(xp, d * d, reduction)


def mse_slope(x, y):
    return 2 * (x - y)


@mse_loss.vjp("x", uses="x y")
def mse_loss_vjp_x(g, out, x, y, *, reduction="mean"):
    return mse_slope(x, y) * _scale(g, x, reduction)


@mse_loss.vjp("y", uses="x y")
def mse_loss_vjp_y(g, out, x, y, *, reduction="mean"):
    return -mse_loss_vjp_x(g, out, x, y, reduction=reduction)


@mse_loss.jvp("x")
def mse_loss_jvp_x(t, out, x, y, *, reduction="mean"):
    return _reduce_tangent(mse_slope(x, y) * t, reduction)


@mse_loss.jvp("y")
def mse_loss_jvp_y(t, out, x, y, *, reduction="mean"):
    return -mse_loss_jvp_x(t, out, x, y, reduction=reduction)


@primitive("SmoothL1LossBackward0", dtypes=FLOAT, saved_names=("self", "target"),
           saved_view=_reduction_view)
def smooth_l1_loss(xp, x, y, *, reduction="mean", beta=1.0):
    """``0.5 z^2 / beta`` where ``|z| < beta``, ``|z| - 0.5 beta`` elsewhere (``beta > 0``)."""
    z = xp.abs(x - y)
    # 0.5 z (z / beta): z * z would overflow for a large beta (and z below it)
    return _reduce(xp, xp.where(z < beta, 0.5 * z * (z / beta), z - 0.5 * beta), reduction)


def smooth_l1_slope(x, y, beta):
    return clamp((x - y) / beta, min=-1.0, max=1.0)


@smooth_l1_loss.vjp("x", uses="x y")
def smooth_l1_loss_vjp_x(g, out, x, y, *, reduction="mean", beta=1.0):
    return smooth_l1_slope(x, y, beta) * _scale(g, x, reduction)


@smooth_l1_loss.vjp("y", uses="x y")
def smooth_l1_loss_vjp_y(g, out, x, y, *, reduction="mean", beta=1.0):
    return -smooth_l1_loss_vjp_x(g, out, x, y, reduction=reduction, beta=beta)


@smooth_l1_loss.jvp("x")
def smooth_l1_loss_jvp_x(t, out, x, y, *, reduction="mean", beta=1.0):
    return _reduce_tangent(smooth_l1_slope(x, y, beta) * t, reduction)


@smooth_l1_loss.jvp("y")
def smooth_l1_loss_jvp_y(t, out, x, y, *, reduction="mean", beta=1.0):
    return -smooth_l1_loss_jvp_x(t, out, x, y, reduction=reduction, beta=beta)


@primitive("HuberLossBackward0", dtypes=FLOAT, saved_names=("self", "target"), saved_view=_reduction_view)
def huber_loss(xp, x, y, *, reduction="mean", delta=1.0):
    """``0.5 z^2`` where ``|z| < delta``, ``delta (|z| - 0.5 delta)`` elsewhere."""
    z = xp.abs(x - y)
    return _reduce(xp, xp.where(z < delta, 0.5 * z * z, delta * (z - 0.5 * delta)), reduction)


def huber_slope(x, y, delta):
    return clamp(x - y, min=-delta, max=delta)


@huber_loss.vjp("x", uses="x y")
def huber_loss_vjp_x(g, out, x, y, *, reduction="mean", delta=1.0):
    return huber_slope(x, y, delta) * _scale(g, x, reduction)


@huber_loss.vjp("y", uses="x y")
def huber_loss_vjp_y(g, out, x, y, *, reduction="mean", delta=1.0):
    return -huber_loss_vjp_x(g, out, x, y, reduction=reduction, delta=delta)


@huber_loss.jvp("x")
def huber_loss_jvp_x(t, out, x, y, *, reduction="mean", delta=1.0):
    return _reduce_tangent(huber_slope(x, y, delta) * t, reduction)


@huber_loss.jvp("y")
def huber_loss_jvp_y(t, out, x, y, *, reduction="mean", delta=1.0):
    return -huber_loss_jvp_x(t, out, x, y, reduction=reduction, delta=delta)


# -- negative log likelihood ---------------------------------------------------------------------

def _nll_name(args, params):
    """PyTorch's 4-d (image) form is its own kernel, nll_loss2d."""
    return "NllLoss2DBackward0" if len(args[0].shape) == 4 else "NllLossBackward0"


def _picking(xp, target, weight, ignore_index, n_classes, dtype):
    """(each target's class, ignored ones pointing at class 0; a mask of the targets that
    count, or None when all do; their weights, 0 where ignored, or None when all are 1).
    Raises PyTorch's IndexError for a class outside [0, n_classes)."""
    safe, valid = target, None
    if target.size and not 0 <= ignore_index < n_classes and target.dtype.kind in "iu":
        if indices_below(target, n_classes):  # (the common case, in one reduction)
            return safe, None, None if weight is None else weight[safe].astype(dtype, copy=False)
    if target.size:
        lo, hi = int(target.min()), int(target.max())
        if lo <= ignore_index <= hi:  # (else no target can be the ignored one: skip the mask)
            valid = target != ignore_index
            safe = xp.where(valid, target, 0)
            lo, hi = int(safe.min()), int(safe.max())
        if lo < 0 or hi >= n_classes:
            bad = (safe < 0) | (safe >= n_classes)
            raise IndexError(f"Target {int(target[bad].flat[0]) if target.ndim else int(target)} is out of bounds.")
    if weight is None:
        return safe, valid, None if valid is None else valid.astype(dtype)
    w = weight[safe].astype(dtype, copy=False)
    return safe, valid, w if valid is None else xp.where(valid, w, 0).astype(dtype, copy=False)


def _at_targets(xp, shape, safe, dim):
    """The index that picks, for every target, its class's entry of an array of ``shape``
    (the class dim ``dim`` indexed by ``safe``, every other dim by its own position)."""
    if len(shape) == 2:
        return xp.arange(shape[0]), safe
    index, k = [], 0
    for d, size in enumerate(shape):
        if d == dim:
            index.append(safe)
            continue
        view = [1] * safe.ndim
        view[k] = size
        index.append(xp.arange(size).reshape(view))
        k += 1
    return tuple(index)


def _class_dim(shape):
    return 0 if len(shape) == 1 else 1


@primitive(_nll_name, dtypes=KEEP, linear=True, saved_names=("self", "target", "weight"),
           saved_view=lambda params: {**_reduction_view(params), "ignore_index": params["ignore_index"]})
def nll_loss(xp, x, target, weight, *, reduction="mean", ignore_index=-100):
    """``-weight[t] * x[n, t, ...]`` per target ``t = target[n, ...]`` along the class dim
    (dim 1, or 0 for one unbatched sample); ignored targets give 0 and weigh nothing, and
    the mean divides by the total weight of the others (nan when there is none)."""
    dim = _class_dim(x.shape)
    safe, valid, w = _picking(xp, target, weight, ignore_index, x.shape[dim], x.dtype)
    loss = -x[_at_targets(xp, x.shape, safe, dim)]
    if w is not None:
        loss = loss * w if valid is None else xp.where(valid, loss * w, 0)  # ignored: no nan leaks in
    if reduction == "none":
        return xp.asarray(loss, dtype=x.dtype)
    return _reduced(xp, loss.sum(), safe.size, w, reduction, x.dtype)


def _reduced(xp, total, n, w, reduction, dtype):
    """A summed loss as ``reduction`` asks: the sum, or the mean over what was counted --
    ``n`` targets, or their total weight ``w.sum()`` (ignored ones weigh 0) -- which is
    nan when nothing was (as in PyTorch, without a warning)."""
    if reduction == "mean":
        count = n if w is None else w.sum()
        total = total / count if count else xp.nan
    return xp.asarray(total, dtype=dtype)


def cross_entropy_value(xp, x, target, ignore_index, reduction):
    """``nll_loss(log_softmax(x, 1), target)`` of 2-d CPU logits, no class weights, reduced
    (``'mean'``/``'sum'``), for a call that records nothing: each row's log-sum-exp less
    its target's logit, without the log-probabilities' array. The shift that keeps
    ``exp`` finite is the largest logit of all, one scalar (a row's maximum broadcast
    back costs passes over short rows, see :mod:`.activation`), where the logits span at
    most :data:`SHIFT_SPAN`: each exponent then carries a rounding error of at most
    ulp(SPAN)/2, about float32's own on a row's log-sum-exp (with PyTorch's per-row shift,
    the error grows with the span of a row alone), and nothing underflows. None where they
    span more (or one is inf or nan): the caller then composes the two rules. Raises
    :func:`nll_loss`'s errors for targets out of range."""
    n, c = x.shape
    safe, _, w = _picking(xp, target, None, ignore_index, c, x.dtype)
    top = x.max()
    if not top - x.min() <= SHIFT_SPAN:
        return None
    e = xp.subtract(x, top)
    xp.exp(e, out=e)
    loss = xp.log(e @ constant_vector(xp, c, x.dtype, 1))
    loss -= x.reshape(n * c)[xp.arange(0, n * c, c) + safe] - top
    total = loss.sum() if w is None else loss @ w  # (ignored targets weigh 0: their rows count for nothing)
    return _reduced(xp, total, n, w, reduction, x.dtype)


# The widest span of values that a softmax may shift by their overall maximum rather than
# each row's (cross entropy's logits here, attention's scores in :mod:`.attention`).
SHIFT_SPAN = 16.0


@nll_loss.vjp("x", uses="target weight")
def nll_loss_vjp(g, out, x, target, weight, *, reduction="mean", ignore_index=-100):
    return nll_loss_backward(g, target, weight, shape=tuple(x.shape), reduction=reduction,
                             ignore_index=ignore_index)


def _nll_backward_name(args, params):
    return "NllLoss2DBackwardBackward0" if len(params["shape"]) == 4 else "NllLossBackwardBackward0"


@primitive(_nll_backward_name, dtypes=KEEP, linear=True)
def nll_loss_backward(xp, g, target, weight, *, shape, reduction="mean", ignore_index=-100):
    """The gradient of ``nll_loss`` with respect to an input of ``shape``: ``-weight[t] * g``
    (over the total weight for a mean) at each target's class, zero elsewhere."""
    dim = _class_dim(shape)
    safe, valid, w = _picking(xp, target, weight, ignore_index, shape[dim], g.dtype)
    if reduction == "mean":
        g = g / (safe.size if w is None else w.sum())
    coef = -g if w is None else -w * g
    if valid is not None:
        coef = xp.where(valid, coef, 0)  # ignored targets get 0 even when g is inf or nan
    out = xp.zeros(shape, dtype=g.dtype)
    out[_at_targets(xp, shape, safe, dim)] = coef
    return out


@nll_loss_backward.vjp("g", uses="target weight")
def nll_loss_backward_vjp(gg, out, g, target, weight, *, shape, reduction="mean", ignore_index=-100):
    return nll_loss(gg, target, weight, reduction=reduction, ignore_index=ignore_index)


# -- binary cross entropy ------------------------------------------------------------------------

@primitive("BinaryCrossEntropyBackward0", dtypes=KEEP, saved_names=("self", "target", "weight"),
           saved_view=_reduction_view)
def binary_cross_entropy(xp, x, y, weight, *, reduction="mean"):
    """``-(y log x + (1 - y) log(1 - x))`` with each log floored at -100, as in PyTorch."""
    for v, what in ((x, "input"), (y, "target")):
        if not ((v >= 0) & (v <= 1)).all():
            raise RuntimeError(f"all elements of {what} should be between 0 and 1")
    loss = (y - 1) * xp.maximum(xp.log1p(-x), _LOG_FLOOR) - y * xp.maximum(xp.log(x), _LOG_FLOOR)
    return _reduce(xp, _weighted(loss, weight), reduction)


def bce_slope_x(x, y):
    return (x - y) / clamp((1 - x) * x, min=_EPSILON)


def bce_slope_y(x):
    return -log(x / (1 - x))


@binary_cross_entropy.vjp("x", uses="x y weight")
def binary_cross_entropy_vjp_x(g, out, x, y, weight, *, reduction="mean"):
    # PyTorch's order of operations: g * (x - y) / max(...), then weight, then the mean
    return _backward(g * (x - y) / clamp((1 - x) * x, min=_EPSILON), x, weight, reduction)


@binary_cross_entropy.vjp("y", uses="x weight")
def binary_cross_entropy_vjp_y(g, out, x, y, weight, *, reduction="mean"):
    return _backward(bce_slope_y(x) * g, x, weight, reduction)


@binary_cross_entropy.jvp("x")
def binary_cross_entropy_jvp_x(t, out, x, y, weight, *, reduction="mean"):
    return _reduce_tangent(_weighted(bce_slope_x(x, y) * t, weight), reduction)


@binary_cross_entropy.jvp("y")
def binary_cross_entropy_jvp_y(t, out, x, y, weight, *, reduction="mean"):
    return _reduce_tangent(_weighted(bce_slope_y(x) * t, weight), reduction)


@primitive("BinaryCrossEntropyWithLogitsBackward0", dtypes=FLOAT,
           saved_names=("self", "target", "weight", "pos_weight"), saved_view=_reduction_view)
def binary_cross_entropy_with_logits(xp, x, y, weight, pos_weight, *, reduction="mean"):
    """``(1 - y) x - (1 + (pos_weight - 1) y) log sigmoid(x)``: finite for every finite x."""
    log_sig = xp.minimum(x, 0) - xp.log1p(xp.exp(-xp.abs(x)))
    if pos_weight is not None:
        log_sig = log_sig * ((pos_weight - 1) * y + 1)
    return _reduce(xp, _weighted((1 - y) * x - log_sig, weight), reduction)


def bcel_slope_x(x, y, pos_weight):
    if pos_weight is None:
        return sigmoid(x) - y
    t = pos_weight * y
    return (t + 1 - y) * sigmoid(x) - t


def bcel_slope_y(x, pos_weight):
    if pos_weight is None:
        return -x
    return logsigmoid(-x) - logsigmoid(x) * pos_weight


@binary_cross_entropy_with_logits.vjp("x", uses="x y weight pos_weight")
def bce_with_logits_vjp_x(g, out, x, y, weight, pos_weight, *, reduction="mean"):
    return _backward(bcel_slope_x(x, y, pos_weight) * g, x, weight, reduction)


@binary_cross_entropy_with_logits.vjp("y", uses="x weight pos_weight")
def bce_with_logits_vjp_y(g, out, x, y, weight, pos_weight, *, reduction="mean"):
    return _backward(bcel_slope_y(x, pos_weight) * g, x, weight, reduction)


@binary_cross_entropy_with_logits.jvp("x")
def bce_with_logits_jvp_x(t, out, x, y, weight, pos_weight, *, reduction="mean"):
    return _reduce_tangent(_weighted(bcel_slope_x(x, y, pos_weight) * t, weight), reduction)


@binary_cross_entropy_with_logits.jvp("y")
def bce_with_logits_jvp_y(t, out, x, y, weight, pos_weight, *, reduction="mean"):
    return _reduce_tangent(_weighted(bcel_slope_y(x, pos_weight) * t, weight), reduction)


__all__ = ["mse_loss", "smooth_l1_loss", "huber_loss", "nll_loss", "nll_loss_backward",
           "binary_cross_entropy", "binary_cross_entropy_with_logits"]
