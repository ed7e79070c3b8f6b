"""``glu``, ``rrelu``, ``gumbel_softmax``, ``channel_shuffle`` and the similarity measures
(``cosine_similarity``, ``pairwise_distance``, ``pdist``): compositions of tensor ops with
PyTorch's checks. The random ones draw from tracegrad's generator (``manual_seed``), so
their samples differ from PyTorch's while their distributions and gradients agree."""
import warnings

from ...ops.compat_functions import cosine_similarity, pairwise_distance, pdist
from ...ops.compat_functions import channel_shuffle as _channel_shuffle
from ...runtime import creation
from ...runtime.grad_mode import no_grad

__all__ = ["glu", "rrelu", "rrelu_", "gumbel_softmax", "channel_shuffle", "native_channel_shuffle",
           "cosine_similarity", "pairwise_distance", "pdist"]


def glu(input, dim=-1):
    """``a * sigmoid(b)`` for the two halves ``a, b`` of ``input`` along ``dim``."""
    if input.dim() == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    d = dim + input.ndim if -input.ndim <= dim < 0 else dim
    if not 0 <= d < input.ndim:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-input.ndim}, {input.ndim - 1}], "
                         f"but got {dim})")
    n = input.shape[d]
    if n % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {d} is size {n}")
    a, b = input.split(n // 2, d)
    return a * b.sigmoid()


def _rrelu_noise(input, lower, upper):
    """The per-element slopes: uniform in [lower, upper] where ``input <= 0``, 1 elsewhere."""
    with no_grad():
        slopes = creation.empty_like(input).uniform_(lower, upper)
        return slopes.where(input <= 0, creation.ones_like(input))


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    """Leaky ReLU whose negative slope is drawn uniformly from [lower, upper] per element in
    training, and is their mean in evaluation."""
    from . import leaky_relu
    if not training:
        return leaky_relu(input, (lower + upper) / 2, inplace=inplace)
    noise = _rrelu_noise(input, lower, upper)
    return input.mul_(noise) if inplace else input * noise


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False):
    return rrelu(input, lower, upper, training, inplace=True)


def gumbel_softmax(logits, tau=1, hard=False, eps=1e-10, dim=-1):
    """``softmax((logits + g) / tau)`` with Gumbel(0, 1) noise ``g``; with ``hard``, the one-hot
    of its argmax carrying the soft sample's gradient (straight-through)."""
    if eps != 1e-10:
        warnings.warn("`eps` parameter is deprecated and has no effect.", stacklevel=2)
    with no_grad():
        gumbels = -creation.empty_like(logits).exponential_().log()
    y_soft = ((logits + gumbels) / tau).softmax(dim)
    if not hard:
        return y_soft
    index = y_soft.max(dim, keepdim=True)[1]
    y_hard = creation.zeros_like(logits).scatter_(dim, index, 1.0)
    return y_hard - y_soft.detach() + y_soft


def channel_shuffle(input, groups):
    """Interleave ``groups`` blocks of channels (dim 1): (N, g, C/g, *) -> (N, C/g, g, *)."""
    if groups <= 0:
        raise RuntimeError(f"Number of groups to divide channels in must be positive. Value of groups:{groups}")
    if input.ndim <= 2:
        raise RuntimeError(f"channel_shuffle expects input with > 2 dims, but got input with sizes "
                           f"{list(input.shape)}")
    return _channel_shuffle(input, groups)


native_channel_shuffle = channel_shuffle
