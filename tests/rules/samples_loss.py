"""Samples for the loss rules (tracegrad/rules/loss.py).

Every loss is sampled under each reduction; an empty input is sampled with 'sum' and
'none' only (its mean is nan). Smooth L1 and Huber inputs keep |input - target| at least
0.2 away from the kink at beta / delta; probabilities for binary cross entropy stay
inside (0.05, 0.95), where its logs are not floored.
"""
import numpy as np

from .sampling import S, ints, pos, r

_rng = np.random.default_rng(20261123)

REDUCTIONS = ("mean", "sum", "none")


def prob(*shape):
    return _rng.uniform(0.05, 0.95, shape)


def apart(y, kink):
    """An input whose difference from target ``y`` stays 0.2 away from +-kink."""
    d = _rng.uniform(-2.0 * kink - 1.0, 2.0 * kink + 1.0, np.shape(y))
    for k in (kink, -kink):
        d = np.where(np.abs(d - k) < 0.2, np.where(d >= k, k + 0.2, k - 0.2), d)
    return y + d


def pointwise(kink=None, **params):
    """Samples of an elementwise regression loss: each reduction, a 0-d and an empty pair."""
    def pair(*shape):
        y = r(*shape)
        return (r(*shape) if kink is None else apart(y, kink)), y
    out = [S(*pair(3, 4), reduction=red, **params) for red in REDUCTIONS]
    out.append(S(*pair(5), reduction="none", **params))
    out.append(S(*(np.array(v) for v in pair()), reduction="mean", tags="0d", **params))
    out.append(S(*pair(0, 3), reduction="sum", tags="empty", **params))
    out.append(S(*pair(0, 3), reduction="none", tags="empty", **params))
    return out


def nll_cases():
    """(input, target, weight, params) for nll_loss: batched, weighted, ignored targets,
    an ignore_index that is a real class, one unbatched sample, an image and empty batches."""
    cases = []
    for red in REDUCTIONS:
        cases.append((r(3, 4), ints(4, 3), None, dict(reduction=red), ""))
        cases.append((r(5, 4), np.array([1, -100, 3, 3, 0]), pos(4), dict(reduction=red), ""))
        cases.append((r(4), np.array(2), pos(4), dict(reduction=red), "0d"))
    cases.append((r(4, 3), np.array([0, 1, 2, 1]), pos(3), dict(reduction="mean", ignore_index=1), ""))
    cases.append((r(2, 3, 2, 2), ints(3, 2, 2, 2), pos(3), dict(reduction="mean"), ""))
    cases.append((r(2, 3, 2, 2), ints(3, 2, 2, 2), None, dict(reduction="none"), ""))
    cases.append((r(0, 4), ints(4, 0), None, dict(reduction="sum"), "empty"))
    cases.append((r(0, 4), ints(4, 0), pos(4), dict(reduction="none"), "empty"))
    return cases


def _nll_backward(x, target, weight, params, tags):
    red = params["reduction"]
    g = r(*target.shape) if red == "none" else np.array(r())
    return S(g, target, weight, shape=x.shape, tags=tags, **params)


def binary(with_logits):
    """Samples for the binary cross entropies: each reduction, with and without weights."""
    def x(*shape):
        return r(*shape) * 3 if with_logits else prob(*shape)
    extra = (None,) if with_logits else ()
    out = []
    for red in REDUCTIONS:
        out.append(S(x(3, 4), prob(3, 4), None, *extra, reduction=red))
        out.append(S(x(3, 4), prob(3, 4), pos(3, 4), *extra, reduction=red))
    if with_logits:  # hard 0/1 targets (for the plain loss a step would leave [0, 1])
        out.append(S(x(2, 3), ints(2, 2, 3).astype(np.float64), pos(3), None, reduction="mean"))
        for red in REDUCTIONS:
            out.append(S(x(3, 4), prob(3, 4), None, pos(4), reduction=red))
        out.append(S(x(3, 4), prob(3, 4), pos(1, 4), pos(4), reduction="sum"))
        out.append(S(r(4) * 30, prob(4), None, pos(4), reduction="mean"))
    out.append(S(np.array(x()), np.array(prob()), None, *extra, reduction="mean", tags="0d"))
    out.append(S(x(0, 3), prob(0, 3), None, *extra, reduction="sum", tags="empty"))
    out.append(S(x(0, 3), prob(0, 3), pos(0, 3), *extra, reduction="none", tags="empty"))
    return out


SAMPLES = {
    "mse_loss": pointwise(),
    "smooth_l1_loss": pointwise(kink=1.0) + pointwise(kink=0.5, beta=0.5)[:2],
    "huber_loss": pointwise(kink=1.0) + pointwise(kink=2.0, delta=2.0)[:2],
    "nll_loss": [S(x, t, w, tags=tags, **p) for x, t, w, p, tags in nll_cases()],
    "nll_loss_backward": [_nll_backward(*case) for case in nll_cases()],
    "binary_cross_entropy": binary(with_logits=False),
    "binary_cross_entropy_with_logits": binary(with_logits=True),
}
