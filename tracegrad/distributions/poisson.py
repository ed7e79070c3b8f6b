"""The Poisson distribution: counts ``k`` with mass ``rate^k e^-rate / k!``."""

import tracegrad

from ..runtime.tensor import Size
from . import constraints
from .bernoulli import Bernoulli
from .binomial import Binomial
from .exp_family import ExponentialFamily
from .kl import infinite_kl, register_kl
from .utils import broadcast_all

__all__ = ["Poisson"]


class Poisson(ExponentialFamily):
    """Poisson distribution with a non-negative ``rate``. As in PyTorch it has no
    closed-form ``entropy``."""
    arg_constraints = {"rate": constraints.nonnegative}
    support = constraints.nonnegative_integer

    def __init__(self, rate, validate_args=None):
        (self.rate,) = broadcast_all(rate)
        super().__init__(self.rate.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expanded(Poisson, batch_shape, _instance, {"rate": ()})

    @property
    def mean(self):
        return self.rate

    @property
    def mode(self):
        return self.rate.floor()

    @property
    def variance(self):
        return self.rate

    def sample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        with tracegrad.no_grad():
            return tracegrad.poisson(self.rate.expand(shape))

    def log_prob(self, value):
        """``k log(rate) - rate - log k!``, with ``0 log 0 = 0`` (a zero rate gives 0 surely)."""
        if self._validate_args:
            self._validate_sample(value)
        rate, value = broadcast_all(self.rate, value)
        return value.xlogy(rate) - rate - (value + 1).lgamma()

    @property
    def _natural_params(self):
        return (tracegrad.log(self.rate),)

    def _log_normalizer(self, x):
        return tracegrad.exp(x)


@register_kl(Poisson, Poisson)
def _kl_poisson_poisson(p, q):
    return p.rate * (p.rate.log() - q.rate.log()) - (p.rate - q.rate)


@register_kl(Bernoulli, Poisson)
def _kl_bernoulli_poisson(p, q):
    """``-H(p) - E_p[log q(x)]``; ``log q(x)`` is ``-rate`` at 0 and ``log(rate) - rate`` at 1."""
    return -p.entropy() - (p.probs * q.rate.log() - q.rate)


# (a Poisson puts mass on every count, beyond a bounded support)
register_kl(Poisson, Bernoulli)(infinite_kl)
register_kl(Poisson, Binomial)(infinite_kl)
