"""The relaxed one-hot categorical (concrete, or Gumbel-softmax) distribution: a
continuous stand-in for a one-hot categorical on the simplex, with reparameterized
draws ``softmax((logits + gumbel noise) / temperature)``. ``ExpRelaxedCategorical`` is
its log (computed as a log-softmax, stable at low temperatures); the relaxed
distribution is that pushed through ``exp``."""
import tracegrad

from ..runtime.tensor import Size
from . import constraints
from ._probs_or_logits import CategoricalBacked, RelaxedOfBase
from .categorical import Categorical
from .distribution import Distribution
from .transformed_distribution import TransformedDistribution
from .transforms import ExpTransform
from .utils import broadcast_all, clamp_probs

__all__ = ["ExpRelaxedCategorical", "RelaxedOneHotCategorical"]


class ExpRelaxedCategorical(CategoricalBacked, Distribution):
    """The log of a RelaxedOneHotCategorical draw, given ``temperature`` and ``probs`` or
    ``logits`` (of the categorical it relaxes, whose last dim indexes categories)."""
    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.real_vector  # (the draws lie on a submanifold of it)
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        self.temperature = temperature
        self._init_categorical(Categorical(probs, logits), validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._expanded_categorical(ExpRelaxedCategorical, batch_shape, _instance)
        new.temperature = self.temperature
        return new

    def rsample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        u = clamp_probs(tracegrad.rand(shape, dtype=self.logits.dtype, device=self.logits.device))
        gumbels = -((-(u.log())).log())
        scores = (self.logits + gumbels) / self.temperature
        return scores - scores.logsumexp(dim=-1, keepdim=True)

    def log_prob(self, value):
        """The concrete density of Maddison et al. (2017), in log space: ``log((K-1)!) +
        (K-1) log(temperature)`` plus the log-softmax of ``logits - temperature * value``
        summed over the categories."""
        k = self._categorical._num_events
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        log_scale = tracegrad.full_like(self.temperature, float(k)).lgamma() + self.temperature.log().mul(k - 1)
        score = logits - value.mul(self.temperature)
        return (score - score.logsumexp(dim=-1, keepdim=True)).sum(-1) + log_scale


class RelaxedOneHotCategorical(RelaxedOfBase, TransformedDistribution):
    """Relaxed one-hot categorical distribution on the simplex, with ``temperature`` and
    ``probs`` or ``logits``: ``exp`` of an ExpRelaxedCategorical."""
    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        base_dist = ExpRelaxedCategorical(temperature, probs, logits, validate_args=validate_args)
        super().__init__(base_dist, ExpTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return super().expand(batch_shape,
                              _instance=self._get_checked_instance(RelaxedOneHotCategorical, _instance))
