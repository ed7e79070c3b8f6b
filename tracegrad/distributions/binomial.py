"""The binomial distribution: the number of successes in ``total_count`` independent
trials, each a success with probability ``probs`` (or ``sigmoid(logits)``)."""
import math

import tracegrad

from ..runtime.tensor import Size
from . import constraints
from ._probs_or_logits import ProbsOrLogits
from .distribution import Distribution
from .kl import register_kl

__all__ = ["Binomial"]


def _homogeneous_count(total_count, what):
    """The one ``total_count`` of every distribution in the batch (enumerating the support
    needs a single one)."""
    count = int(total_count.max())
    if not bool(total_count.min() == count):
        raise NotImplementedError(f"Inhomogeneous total count not supported by `{what}`.")
    return count


class Binomial(ProbsOrLogits, Distribution):
    """Binomial distribution with ``total_count`` trials (broadcastable with the
    probabilities) and success ``probs`` or ``logits`` (log-odds), not both."""
    arg_constraints = {"total_count": constraints.nonnegative_integer, "probs": constraints.unit_interval,
                       "logits": constraints.real}
    has_enumerate_support = True

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        (total_count,) = self._set_broadcast_param(probs, logits, total_count)
        self.total_count = total_count.type_as(self._param)
        super().__init__(self._param.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expanded_param(Binomial, batch_shape, _instance, others=("total_count",))

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        return constraints.integer_interval(0, self.total_count)

    @property
    def mean(self):
        return self.total_count * self.probs

    @property
    def mode(self):
        return ((self.total_count + 1) * self.probs).floor().clamp(max=self.total_count)

    @property
    def variance(self):
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        with tracegrad.no_grad():
            return tracegrad.binomial(self.total_count.expand(shape), self.probs.expand(shape))

    def log_prob(self, value):
        """``log C(n, k) + k l - n softplus(l)`` with ``l`` the logits: the log of
        ``C(n, k) p^k (1 - p)^(n - k)``, finite for probabilities of 0 and 1 too."""
        if self._validate_args:
            self._validate_sample(value)
        n = self.total_count
        log_binom = tracegrad.lgamma(n + 1) - tracegrad.lgamma(value + 1) - tracegrad.lgamma(n - value + 1)
        return log_binom + value * self.logits - n * tracegrad.nn.functional.softplus(self.logits)

    def entropy(self):
        """``-sum_k p(k) log p(k)`` over the support (one ``total_count`` for the batch)."""
        _homogeneous_count(self.total_count, "entropy")
        log_prob = self.log_prob(self.enumerate_support(False))
        return -(tracegrad.exp(log_prob) * log_prob).sum(0)

    def enumerate_support(self, expand=True):
        count = _homogeneous_count(self.total_count, "enumerate_support")
        values = tracegrad.arange(1 + count, dtype=self._param.dtype, device=self._param.device)
        values = values.view((-1,) + (1,) * len(self._batch_shape))
        return values.expand((-1,) + tuple(self._batch_shape)) if expand else values


@register_kl(Binomial, Binomial)
def _kl_binomial_binomial(p, q):
    """``n (p log(p / q) + (1 - p) log((1 - p) / (1 - q)))`` for equal counts; infinite when
    ``p`` has more trials than ``q`` (its top counts are impossible under ``q``)."""
    if bool((p.total_count < q.total_count).any()):
        raise NotImplementedError("KL between Binomials where q.total_count > p.total_count is not implemented")
    kl = p.total_count * (p.probs * (p.logits - q.logits) + (-p.probs).log1p() - (-q.probs).log1p())
    return tracegrad.where(p.total_count > q.total_count, math.inf, kl)
