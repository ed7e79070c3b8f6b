"""``ctc_loss``: connectionist temporal classification, by the forward (alpha) recursion.

The recursion runs over time on all samples at once, over each target interleaved with
blanks; unreachable states hold a large finite negative log-probability instead of -inf
(``logsumexp`` of all -inf has a NaN gradient), and a sample whose target cannot fit in its
input gets an infinite loss afterwards. Autograd differentiates the recursion. PyTorch's
kernel returns, for the log-probabilities, the gradient of the loss *through* a log-softmax
(``exp(lp) - posterior``); a zero-valued term with gradient ``exp(lp)`` reproduces it, so the
gradients agree with PyTorch's for ``log_probs`` itself and (as for everyone) for the logits.
"""
from ...backend import (
    cpu as host,  # host-side arithmetic on lengths and labels copied off the device
)
from ...ops.shape import cat, stack
from ...runtime import creation
from .loss import _reduction

__all__ = ["ctc_loss"]

_UNREACHABLE = -1e30


def _lengths(value, name, n):
    values = host.asarray(value.tolist() if hasattr(value, "tolist") else value, dtype=host.int64).reshape(-1)
    if values.size != n:
        raise RuntimeError(f"{name} must be of size batch_size")
    return values


def _targets_by_sample(targets, target_lengths, n):
    """The label sequence of each sample, from a padded (N, S) or a concatenated 1-d ``targets``."""
    t = host.asarray(targets.tolist(), dtype=host.int64)
    if t.ndim == 2:
        longest = int(target_lengths.max()) if target_lengths.size else 0
        if t.shape[1] < longest:
            raise RuntimeError(f"Expected tensor to have size at least {longest} at dimension 1, but got size "
                               f"{t.shape[1]} for argument #2 'targets' (while checking arguments for ctc_loss_allocate_outputs)")
        return [t[i, :target_lengths[i]] for i in range(n)]
    starts = host.concatenate([[0], host.cumsum(target_lengths)])
    return [t[starts[i]:starts[i + 1]] for i in range(n)]


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean", zero_infinity=False):
    """The negative log-likelihood of each target under all its alignments to the input
    (``log_probs``: (T, N, C) or (T, C) log-probabilities), reduced as ``reduction`` says
    (``mean`` divides each by its target length first)."""
    reduction = _reduction(reduction)
    unbatched = log_probs.ndim == 2
    if unbatched:
        log_probs = log_probs.unsqueeze(1)
        targets = targets.unsqueeze(0) if targets.ndim == 1 else targets
    steps, n, classes = log_probs.shape
    in_lengths = _lengths(input_lengths, "input_lengths", n)
    tgt_lengths = _lengths(target_lengths, "target_lengths", n)
    if in_lengths.size and in_lengths.max() > steps:
        raise RuntimeError(f"Expected input_lengths to have value at most {steps}, but got value "
                           f"{int(in_lengths.max())} (while checking arguments for ctc_loss_allocate_outputs)")
    if not 0 <= blank < classes:
        raise RuntimeError("blank must be in label range")
    labels = _targets_by_sample(targets, tgt_lengths, n)
    width = 2 * int(tgt_lengths.max(initial=0)) + 1
    extended = host.full((n, width), blank, dtype=host.int64)
    skip = host.zeros((n, width), dtype=bool)   # may come from two states back: a label unlike the one before
    for i, seq in enumerate(labels):
        extended[i, 1:2 * len(seq):2] = seq
        skip[i, 3:2 * len(seq):2] = seq[1:] != seq[:-1]
    ends = 2 * tgt_lengths                       # the last state (a blank); ends - 1 is the last label

    device, dtype = log_probs.device, log_probs.dtype

    def on_device(a, kind=None):
        return creation.tensor(a, device=device, dtype=kind)

    lp = log_probs.gather(2, on_device(extended).unsqueeze(0).expand(steps, n, width))     # (T, N, width)
    position = host.arange(width)
    floor = creation.full((n, width), _UNREACHABLE, dtype=dtype, device=device)
    inside = on_device(position[None, :] <= ends[:, None])
    alpha = lp[0].where(on_device(position[None, :] < 2) & inside, floor)
    pad1 = creation.full((n, 1), _UNREACHABLE, dtype=dtype, device=device)
    pad2 = creation.full((n, 2), _UNREACHABLE, dtype=dtype, device=device)
    can_skip = on_device(skip)
    for t in range(1, int(in_lengths.max(initial=1))):
        one_back = cat([pad1, alpha[:, :-1]], 1)
        two_back = cat([pad2, alpha[:, :-2]], 1).where(can_skip, floor)
        step = stack([alpha, one_back, two_back]).logsumexp(0) + lp[t]
        step = step.where(inside, floor)
        alpha = step.where(on_device(t < in_lengths)[:, None], alpha)
    last = alpha.gather(1, on_device(ends)[:, None]).squeeze(1)
    before = alpha.gather(1, on_device(host.maximum(ends - 1, 0))[:, None]).squeeze(1)
    before = before.where(on_device(ends > 0), creation.full((n,), _UNREACHABLE, dtype=dtype, device=device))
    loss = -stack([last, before]).logsumexp(0)
    infeasible = loss.detach() > -_UNREACHABLE / 2  # no alignment fits: only unreachable states at the end
    # PyTorch's gradient for log_probs carries exp(lp) (its log-softmax shortcut) over each input's length
    used = on_device(host.arange(steps)[:, None] < in_lengths[None, :], dtype)[..., None]
    shortcut = (log_probs.exp() * used).sum((0, 2))
    loss = loss + (shortcut - shortcut.detach())
    blocked = creation.full((n,), 0.0 if zero_infinity else float("inf"), dtype=dtype, device=device)
    loss = blocked.where(infeasible, loss)
    if reduction == "mean":
        loss = (loss / on_device(host.maximum(tgt_lengths, 1), dtype)).mean()
    elif reduction == "sum":
        loss = loss.sum()
    elif unbatched:
        loss = loss.squeeze(0)
    return loss
