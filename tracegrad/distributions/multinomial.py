"""The multinomial distribution: how many of ``total_count`` independent categorical draws
fell in each of ``K`` categories (a count vector summing to ``total_count``)."""
import math

import tracegrad

from ..runtime.tensor import Size
from . import constraints
from ._probs_or_logits import CategoricalBacked
from .binomial import Binomial
from .categorical import Categorical
from .distribution import Distribution
from .utils import broadcast_all

__all__ = ["Multinomial"]


class Multinomial(CategoricalBacked, Distribution):
    """Multinomial distribution of ``total_count`` (one int for the whole batch) trials
    over categories given by ``probs`` or ``logits`` (normalized over the last dim), not
    both. ``log_prob`` reads the number of trials off each value (the counts' sum), so it
    works for any count; ``sample`` and ``entropy`` use ``total_count``."""
    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        if not isinstance(total_count, int):
            raise NotImplementedError("inhomogeneous total_count is not supported")
        self.total_count = total_count
        self._init_categorical(Categorical(probs=probs, logits=logits), validate_args)
        self._binomial = Binomial(total_count, probs=self.probs)  # (each count's law: for the entropy)

    def expand(self, batch_shape, _instance=None):
        new = self._expanded_categorical(Multinomial, batch_shape, _instance)
        new.total_count = self.total_count
        new._binomial = self._binomial.expand(Size(batch_shape) + self._event_shape)
        return new

    @constraints.dependent_property(is_discrete=True, event_dim=1)
    def support(self):
        return constraints.multinomial(self.total_count)

    @property
    def mean(self):
        return self.probs * self.total_count

    @property
    def variance(self):
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape=Size()):
        """``total_count`` categorical draws per distribution, counted per category."""
        sample_shape = Size(sample_shape)
        draws = self._categorical.sample(Size((self.total_count,)) + sample_shape)
        draws = draws.permute(list(range(1, draws.dim())) + [0])  # (the draws of one count last)
        counts = tracegrad.zeros(self._extended_shape(sample_shape), dtype=draws.dtype, device=draws.device)
        counts.scatter_add_(-1, draws, tracegrad.ones_like(draws))
        return counts.type_as(self.probs)

    def log_prob(self, value):
        """``log n! - sum_i log x_i! + sum_i x_i log p_i`` (``0 log 0 = 0``), with
        ``n = sum_i x_i``."""
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        logits = logits.masked_fill((value == 0) & (logits == -math.inf), 0)
        log_multinomial = tracegrad.lgamma(value.sum(-1) + 1) - tracegrad.lgamma(value + 1).sum(-1)
        return log_multinomial + (logits * value).sum(-1)

    def entropy(self):
        """``n H(categorical) - log n! + sum_i E[log x_i!]``: each count ``x_i`` is
        binomial, so its expectation is a sum over ``1 .. n``. (``log n!`` is taken in the
        probabilities' dtype; PyTorch's is float32 whatever theirs.)"""
        probs = self.probs
        n = tracegrad.tensor(float(self.total_count), dtype=probs.dtype, device=probs.device)
        counts = self._binomial.enumerate_support(expand=False)[1:]
        pmf = tracegrad.exp(self._binomial.log_prob(counts))
        expected_log_factorials = (pmf * tracegrad.lgamma(counts + 1)).sum((0, -1))
        return n * self._categorical.entropy() - tracegrad.lgamma(n + 1) + expected_log_factorials
