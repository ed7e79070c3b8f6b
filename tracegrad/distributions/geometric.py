"""The geometric distribution: the number of failures before the first success of
independent trials, each a success with probability ``probs``, so ``P(k) = (1 - p)^k p``
for ``k = 0, 1, ...`` (``Tensor.geometric_`` counts the trials instead, from 1)."""
import tracegrad

from ..runtime.tensor import Size
from ..runtime.type_info import finfo
from . import constraints
from ._probs_or_logits import ProbsOrLogits
from .distribution import Distribution
from .kl import register_kl
from .utils import broadcast_all

__all__ = ["Geometric"]


class Geometric(ProbsOrLogits, Distribution):
    """Geometric distribution with success probability ``probs`` in (0, 1] or ``logits``
    (log-odds), not both."""
    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, probs=None, logits=None, validate_args=None):
        self._set_broadcast_param(probs, logits)
        super().__init__(self._param.size(), validate_args=validate_args)
        if self._validate_args and probs is not None:
            valid = self.probs > 0  # (unit_interval lets 0 through; a zero probability never succeeds)
            if not tracegrad._is_all_true(valid):
                raise ValueError(f"Expected parameter probs ({type(self.probs).__name__} of shape "
                                 f"{tuple(self.probs.shape)}) of distribution {self!r} to be positive but "
                                 f"found invalid values:\n{self.probs.data[~valid]}")

    def expand(self, batch_shape, _instance=None):
        return self._expanded_param(Geometric, batch_shape, _instance)

    @property
    def mean(self):
        return 1.0 / self.probs - 1.0

    @property
    def mode(self):
        return tracegrad.zeros_like(self.probs)

    @property
    def variance(self):
        return (1.0 / self.probs - 1.0) / self.probs

    def sample(self, sample_shape=Size()):
        """By inversion: ``floor(log(u) / log(1 - p))`` for ``u`` uniform on (0, 1]."""
        shape = self._extended_shape(sample_shape)
        with tracegrad.no_grad():
            u = self.probs.new(shape).uniform_(finfo(self.probs.dtype).tiny, 1)
            return (u.log() / (-self.probs).log1p()).floor()

    def log_prob(self, value):
        """``k log(1 - p) + log p``, with ``0 log 0 = 0`` where ``p = 1``."""
        if self._validate_args:
            self._validate_sample(value)
        value, probs = broadcast_all(value, self.probs)
        probs = probs.masked_fill((probs == 1) & (value == 0), 0)
        return value * (-probs).log1p() + self.probs.log()

    def entropy(self):
        """The entropy of one trial over the success probability (the mean number of trials)."""
        bce = tracegrad.nn.functional.binary_cross_entropy_with_logits(self.logits, self.probs, reduction="none")
        return bce / self.probs


@register_kl(Geometric, Geometric)
def _kl_geometric_geometric(p, q):
    """``-H(p) - E_p[k] log(1 - q) - log q``, which with ``E_p[k] = 1 / p - 1`` is
    ``-H(p) - log(1 - q) / p - logit(q)``."""
    return -p.entropy() - tracegrad.log1p(-q.probs) / p.probs - q.logits
