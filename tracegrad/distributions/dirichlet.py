"""The Dirichlet distribution: points of the probability simplex, with density
proportional to ``prod_i x_i^(alpha_i - 1)``. Its reparameterized draws carry gradients
to the concentration implicitly (see :mod:`._gamma_sampling`)."""
import tracegrad

from . import constraints
from ._gamma_sampling import _Dirichlet
from .exp_family import ExponentialFamily
from .kl import register_kl

__all__ = ["Dirichlet"]


class Dirichlet(ExponentialFamily):
    """Dirichlet distribution with ``concentration`` alpha: the last dim indexes the
    coordinates of one draw, the others are the batch."""
    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, concentration, validate_args=None):
        if concentration.dim() < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        super().__init__(concentration.shape[:-1], concentration.shape[-1:], validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expanded(Dirichlet, batch_shape, _instance, {"concentration": self.event_shape})

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        return _Dirichlet.apply(self.concentration.expand(shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        a = self.concentration
        return (tracegrad.xlogy(a - 1.0, value).sum(-1) + tracegrad.lgamma(a.sum(-1))
                - tracegrad.lgamma(a).sum(-1))

    @property
    def mean(self):
        return self.concentration / self.concentration.sum(-1, True)

    @property
    def mode(self):
        """``(alpha - 1) / sum(alpha - 1)``, the negative parts clamped to 0. Where every
        alpha is below 1 the density is unbounded at every corner: the mode given is one
        corner, the first (PyTorch's, an argmax over 0/0)."""
        shifted = (self.concentration - 1).clamp(min=0.0)
        mode = shifted / shifted.sum(-1, True)
        corner = (self.concentration < 1).all(dim=-1)
        mode[corner] = tracegrad.nn.functional.one_hot(mode[corner].argmax(dim=-1),
                                                       shifted.shape[-1]).to(mode)
        return mode

    @property
    def variance(self):
        total = self.concentration.sum(-1, True)
        return self.concentration * (total - self.concentration) / (total.pow(2) * (total + 1))

    def entropy(self):
        a = self.concentration
        k, total = a.size(-1), a.sum(-1)
        return (tracegrad.lgamma(a).sum(-1) - tracegrad.lgamma(total) - (k - total) * tracegrad.digamma(total)
                - ((a - 1.0) * tracegrad.digamma(a)).sum(-1))

    @property
    def _natural_params(self):
        return (self.concentration,)

    def _log_normalizer(self, x):
        return x.lgamma().sum(-1) - tracegrad.lgamma(x.sum(-1))


@register_kl(Dirichlet, Dirichlet)
def _kl_dirichlet_dirichlet(p, q):
    total_p, total_q = p.concentration.sum(-1), q.concentration.sum(-1)
    t1 = total_p.lgamma() - total_q.lgamma()
    t2 = (p.concentration.lgamma() - q.concentration.lgamma()).sum(-1)
    t3 = p.concentration - q.concentration
    t4 = p.concentration.digamma() - total_p.digamma().unsqueeze(-1)
    return t1 - t2 + (t3 * t4).sum(-1)
