"""The categorical distribution with one-hot vectors as outcomes: a :class:`Categorical`
whose draws are coded ``e_k`` (a vector of ``K`` entries, 1 at ``k``) instead of ``k``;
the straight-through variant passes gradients to the probabilities through its draws."""
import tracegrad

from ..runtime.tensor import Size
from . import constraints
from ._probs_or_logits import CategoricalBacked
from .categorical import Categorical
from .distribution import Distribution
from .kl import kl_divergence, register_kl

__all__ = ["OneHotCategorical", "OneHotCategoricalStraightThrough"]


class OneHotCategorical(CategoricalBacked, Distribution):
    """One-hot categorical distribution given ``probs`` (non-negative, normalized over the
    last dim) or ``logits`` (unnormalized log-probabilities), not both; draws are one-hot
    vectors of ``probs.size(-1)`` entries in the parameters' dtype."""
    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.one_hot
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        self._init_categorical(Categorical(probs, logits), validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expanded_categorical(OneHotCategorical, batch_shape, _instance)

    @property
    def mean(self):
        return self.probs

    @property
    def mode(self):
        probs = self.probs
        return tracegrad.nn.functional.one_hot(probs.argmax(dim=-1), num_classes=probs.shape[-1]).to(probs)

    @property
    def variance(self):
        return self.probs * (1 - self.probs)

    def sample(self, sample_shape=Size()):
        indices = self._categorical.sample(sample_shape)
        return tracegrad.nn.functional.one_hot(indices, self._categorical._num_events).to(self.probs)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return self._categorical.log_prob(value.max(-1)[1])

    def entropy(self):
        return self._categorical.entropy()

    def enumerate_support(self, expand=True):
        """The ``K`` one-hot vectors, the rows of an identity matrix, along dim 0."""
        n = self._event_shape[0]
        values = tracegrad.eye(n, dtype=self._param.dtype, device=self._param.device)
        values = values.view((n,) + (1,) * len(self._batch_shape) + (n,))
        return values.expand((n,) + tuple(self._batch_shape) + (n,)) if expand else values


class OneHotCategoricalStraightThrough(OneHotCategorical):
    """A :class:`OneHotCategorical` with ``rsample``: the straight-through estimator
    (Bengio et al., 2013). The draw's value is the one-hot sample; its gradient is that of
    the probabilities, as if the draw had been ``probs``."""
    has_rsample = True

    def rsample(self, sample_shape=Size()):
        probs = self.probs
        return self.sample(sample_shape) + (probs - probs.detach())


@register_kl(OneHotCategorical, OneHotCategorical)
def _kl_onehotcategorical_onehotcategorical(p, q):
    return kl_divergence(p._categorical, q._categorical)
