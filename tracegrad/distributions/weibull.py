"""The two-parameter Weibull distribution: ``scale * E^(1/concentration)`` for ``E`` a
unit exponential, the law of lifetimes whose failure rate grows (or falls) as a power
of age."""
import tracegrad

from . import constraints
from .exponential import Exponential
from .transformed_distribution import TransformedDistribution
from .transforms import AffineTransform, PowerTransform
from .utils import broadcast_all, euler_constant

__all__ = ["Weibull"]


class Weibull(TransformedDistribution):
    """Weibull distribution with ``scale`` lambda and ``concentration`` k: the cdf is
    ``1 - exp(-(x / lambda)^k)`` on ``x > 0``."""
    arg_constraints = {"scale": constraints.positive, "concentration": constraints.positive}
    support = constraints.positive

    def __init__(self, scale, concentration, validate_args=None):
        self.scale, self.concentration = broadcast_all(scale, concentration)
        self.concentration_reciprocal = self.concentration.reciprocal()
        base_dist = Exponential(tracegrad.ones_like(self.scale), validate_args=validate_args)
        super().__init__(base_dist, self._transforms(), validate_args=validate_args)

    def _transforms(self):
        return [PowerTransform(exponent=self.concentration_reciprocal), AffineTransform(loc=0, scale=self.scale)]

    def expand(self, batch_shape, _instance=None):
        """The transforms hold the parameters: they are rebuilt from the expanded ones."""
        new = self._get_checked_instance(Weibull, _instance)
        new.scale, new.concentration = self.scale.expand(batch_shape), self.concentration.expand(batch_shape)
        new.concentration_reciprocal = new.concentration.reciprocal()
        TransformedDistribution.__init__(new, self.base_dist.expand(batch_shape), new._transforms(),
                                         validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self):
        return self.scale * tracegrad.exp(tracegrad.lgamma(1 + self.concentration_reciprocal))

    @property
    def mode(self):
        """``lambda ((k - 1) / k)^(1/k)``: NaN for k < 1 (the density is unbounded at 0)."""
        k = self.concentration
        return self.scale * ((k - 1) / k) ** k.reciprocal()

    @property
    def variance(self):
        inv_k = self.concentration_reciprocal
        return self.scale.pow(2) * (tracegrad.exp(tracegrad.lgamma(1 + 2 * inv_k))
                                    - tracegrad.exp(2 * tracegrad.lgamma(1 + inv_k)))

    def entropy(self):
        inv_k = self.concentration_reciprocal
        return euler_constant * (1 - inv_k) + tracegrad.log(self.scale * inv_k) + 1
