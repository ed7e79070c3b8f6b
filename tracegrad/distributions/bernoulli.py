"""The Bernoulli distribution: 1 with probability ``probs`` (or ``sigmoid(logits)``)."""
import math

import tracegrad

from ..runtime.tensor import Size
from . import constraints
from ._probs_or_logits import ProbsOrLogits
from .exp_family import ExponentialFamily
from .utils import broadcast_all

__all__ = ["Bernoulli"]


class Bernoulli(ProbsOrLogits, ExponentialFamily):
    """Bernoulli distribution given ``probs`` or ``logits`` (log-odds), not both."""
    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.boolean
    has_enumerate_support = True
    _mean_carrier_measure = 0

    def __init__(self, probs=None, logits=None, validate_args=None):
        self._set_broadcast_param(probs, logits)
        super().__init__(self._param.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expanded_param(Bernoulli, batch_shape, _instance)

    @property
    def mean(self):
        return self.probs

    @property
    def mode(self):
        mode = (self.probs >= 0.5).to(self.probs)
        mode[self.probs == 0.5] = math.nan
        return mode

    @property
    def variance(self):
        return self.probs * (1 - self.probs)

    def sample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        with tracegrad.no_grad():
            return tracegrad.bernoulli(self.probs.expand(shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        return -tracegrad.nn.functional.binary_cross_entropy_with_logits(logits, value, reduction="none")

    def entropy(self):
        return tracegrad.nn.functional.binary_cross_entropy_with_logits(self.logits, self.probs,
                                                                        reduction="none")

    def enumerate_support(self, expand=True):
        values = tracegrad.arange(2, dtype=self._param.dtype, device=self._param.device)
        values = values.view((-1,) + (1,) * len(self._batch_shape))
        return values.expand((-1,) + tuple(self._batch_shape)) if expand else values

    @property
    def _natural_params(self):
        return (tracegrad.logit(self.probs),)

    def _log_normalizer(self, x):
        return tracegrad.log1p(tracegrad.exp(x))
