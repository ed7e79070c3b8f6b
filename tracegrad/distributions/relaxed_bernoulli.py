"""The relaxed (concrete, or binary Gumbel-softmax) Bernoulli distribution: a
continuous stand-in for a Bernoulli on (0, 1) whose draws are reparameterized, sharper
as the ``temperature`` goes to 0. ``LogitRelaxedBernoulli`` is its logit; the relaxed
distribution is that pushed through a sigmoid."""
import tracegrad

from ..runtime.tensor import Size
from . import constraints
from ._probs_or_logits import ProbsOrLogits, RelaxedOfBase
from .distribution import Distribution
from .transformed_distribution import TransformedDistribution
from .transforms import SigmoidTransform
from .utils import broadcast_all, clamp_probs

__all__ = ["LogitRelaxedBernoulli", "RelaxedBernoulli"]


class LogitRelaxedBernoulli(ProbsOrLogits, Distribution):
    """The logit of a RelaxedBernoulli: ``(logit(u) + logits) / temperature`` for a
    uniform ``u`` (logistic noise on the log-odds), given ``probs`` or ``logits``."""
    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.real

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        self.temperature = temperature
        self._set_broadcast_param(probs, logits)
        super().__init__(self._param.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._expanded_param(LogitRelaxedBernoulli, batch_shape, _instance)
        new.temperature = self.temperature
        return new

    def rsample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        probs = clamp_probs(self.probs.expand(shape))
        u = clamp_probs(tracegrad.rand(shape, dtype=probs.dtype, device=probs.device))
        return (u.log() - (-u).log1p() + probs.log() - (-probs).log1p()) / self.temperature

    def log_prob(self, value):
        """The logistic density of ``logits / temperature`` with scale ``1 / temperature``."""
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        diff = logits - value.mul(self.temperature)
        return self.temperature.log() + diff - 2 * diff.exp().log1p()


class RelaxedBernoulli(RelaxedOfBase, TransformedDistribution):
    """Relaxed Bernoulli distribution on (0, 1) with ``temperature`` and ``probs`` or
    ``logits``: the sigmoid of a LogitRelaxedBernoulli."""
    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        base_dist = LogitRelaxedBernoulli(temperature, probs, logits)
        super().__init__(base_dist, SigmoidTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return super().expand(batch_shape, _instance=self._get_checked_instance(RelaxedBernoulli, _instance))
