"""The categorical distribution over ``0 .. K-1``, given probabilities or logits."""
import math

import tracegrad

from ..runtime.tensor import Size
from ..runtime.type_info import finfo
from . import constraints
from ._probs_or_logits import ProbsOrLogits, probs_or_logits
from .distribution import Distribution

__all__ = ["Categorical"]


class Categorical(ProbsOrLogits, Distribution):
    """Categorical distribution: ``probs`` (non-negative, normalized over the last dim) or
    ``logits`` (unnormalized log-probabilities), not both. The last dim indexes the
    categories; the others are the batch."""
    arg_constraints = {"probs": constraints.simplex, "logits": constraints.independent(constraints.real, 1)}
    _is_binary = False
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        name, param = probs_or_logits(probs, logits)
        if param.dim() < 1:
            raise ValueError(f"`{name}` parameter must be at least one-dimensional.")
        self._set_param(name, param / param.sum(-1, keepdim=True) if name == "probs"
                        else param - param.logsumexp(dim=-1, keepdim=True))
        self._num_events = self._param.size()[-1]
        batch_shape = self._param.size()[:-1] if self._param.dim() > 1 else Size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._expanded_param(Categorical, batch_shape, _instance, event_shape=(self._num_events,))
        new._num_events = self._num_events
        return new

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        return constraints.integer_interval(0, self._num_events - 1)

    @property
    def mean(self):
        return tracegrad.full(self._extended_shape(), math.nan, dtype=self.probs.dtype, device=self.probs.device)

    @property
    def mode(self):
        return self.probs.argmax(dim=-1)

    @property
    def variance(self):
        return tracegrad.full(self._extended_shape(), math.nan, dtype=self.probs.dtype, device=self.probs.device)

    def sample(self, sample_shape=Size()):
        sample_shape = Size(sample_shape)
        probs_2d = self.probs.reshape(-1, self._num_events)
        samples_2d = tracegrad.multinomial(probs_2d, sample_shape.numel(), True).T
        return samples_2d.reshape(self._extended_shape(sample_shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        value = value.long().unsqueeze(-1)
        value, log_pmf = tracegrad.broadcast_tensors(value, self.logits)
        return log_pmf.gather(-1, value[..., :1]).squeeze(-1)

    def entropy(self):
        logits = tracegrad.clamp(self.logits, min=finfo(self.logits.dtype).min)
        return -(logits * self.probs).sum(-1)

    def enumerate_support(self, expand=True):
        values = tracegrad.arange(self._num_events, dtype=tracegrad.long, device=self._param.device)
        values = values.view((-1,) + (1,) * len(self._batch_shape))
        return values.expand((-1,) + tuple(self._batch_shape)) if expand else values
