"""``|X|`` for a distribution ``X`` symmetric about 0 (the half-normal and half-Cauchy
laws): twice its density on ``x >= 0``, its cdf and entropy read off ``X``'s."""
import math

import tracegrad

from . import constraints
from .transformed_distribution import TransformedDistribution
from .transforms import AbsTransform

__all__ = ["FoldedAtZero"]


class FoldedAtZero(TransformedDistribution):
    """Base class of ``|X|`` for ``X ~ base_family(0, scale)``; a subclass names
    ``base_family`` (a location-scale family symmetric about its location)."""
    arg_constraints = {"scale": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    base_family = None

    def __init__(self, scale, validate_args=None):
        super().__init__(self.base_family(0, scale, validate_args=False), AbsTransform(),
                         validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return super().expand(batch_shape, _instance=self._get_checked_instance(FoldedAtZero, _instance))

    @property
    def scale(self):
        return self.base_dist.scale

    @property
    def mode(self):
        return tracegrad.zeros_like(self.scale)

    def _scored(self, value):
        """``value`` as :meth:`log_prob` scores it: as given (HalfCauchy converts it, as
        PyTorch's does)."""
        return value

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        value = self._scored(value)
        log_prob = self.base_dist.log_prob(value) + math.log(2)
        return tracegrad.where(value >= 0, log_prob, -math.inf)

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return 2 * self.base_dist.cdf(value) - 1

    def icdf(self, prob):
        return self.base_dist.icdf((prob + 1) / 2)

    def entropy(self):
        return self.base_dist.entropy() - math.log(2)
