"""Drawing from tensors of weights: ``multinomial``, with PyTorch's checks and messages.

Samples come from the generator's stream (``generator=`` or the default one, so
``manual_seed`` makes them repeatable). Without replacement it draws by the
exponential-race form of the Gumbel top-k trick, as PyTorch does: each category's weight
divided by an Exp(1) draw, the largest ``num_samples`` quotients win, which draws
categories one after another with probability proportional to the remaining weights.
With replacement each draw inverts the row's cumulative distribution. Indices are int64
and never require grad.
"""
from .. import backend
from ..runtime.creation import _stream
from ..runtime.tensor import wrap
from ._args import per_sample

_MAX_CATEGORIES = 2 ** 24  # float32's largest run of consecutive integers


def multinomial(input, num_samples, replacement=False, *, generator=None):
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"multinomial only supports floating-point dtypes for input, got: "
                           f"{input.dtype.scalar_name}")
    if input.ndim not in (1, 2):
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    if num_samples <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    n = input.shape[-1]
    if not replacement and num_samples > n:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without replacement")
    if n > _MAX_CATEGORIES:
        raise RuntimeError("number of categories cannot exceed 2^24")
    if per_sample(input):
        raise NotImplementedError("vmap: multinomial of per-sample probabilities is not supported in "
                                  "tracegrad: draw with tracegrad.rand and compare with the cumulative "
                                  "sums instead, or call multinomial outside vmap")
    data = input._data
    xp = backend.namespace_of(data)
    rows = data.reshape(-1, n).astype(xp.float64)
    if rows.shape[0] == 0:
        return wrap(xp.zeros(input.shape[:-1] + (num_samples,), dtype=xp.int64))
    _check(xp, rows, simple=not replacement or num_samples == 1)
    stream = _stream(generator, xp)
    if not replacement or num_samples == 1:
        race = rows / stream.standard_exponential(size=rows.shape)
        picked = xp.argsort(-race, axis=1, kind="stable")[:, :num_samples]
    else:
        cdf = xp.cumsum(rows, axis=1)
        cdf /= cdf[:, -1:]
        u = stream.random((rows.shape[0], num_samples))
        picked = xp.stack([xp.searchsorted(c, v, side="right") for c, v in zip(cdf, u)])
        picked = xp.minimum(picked, n - 1)
    return wrap(picked.reshape(input.shape[:-1] + (num_samples,)).astype(xp.int64))


def _check(xp, rows, simple):
    """PyTorch's two kernels word their checks differently."""
    finite = bool(xp.isfinite(rows).all())
    if simple:
        if not finite or bool((rows < 0).any()):
            raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
    else:
        if bool((rows < 0).any()) or bool(xp.isnan(rows).any()):
            raise RuntimeError("invalid multinomial distribution (encountering probability entry < 0)")
        if not finite:
            raise RuntimeError("invalid multinomial distribution (encountering probability entry = "
                               "infinity or NaN)")
    if bool((rows.sum(axis=1) <= 0).any()):
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")


FUNCTIONS = {"multinomial": multinomial}
METHODS = dict(FUNCTIONS)
