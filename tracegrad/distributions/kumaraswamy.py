"""The Kumaraswamy distribution on [0, 1]: Beta-like in shape, but with a cdf in closed
form, ``1 - (1 - x^a)^b``, so that draws are its inverse at a uniform and carry
gradients to both parameters."""
import math

import tracegrad

from . import constraints
from .transformed_distribution import TransformedDistribution
from .transforms import AffineTransform, PowerTransform
from .uniform import Uniform
from .utils import broadcast_all, euler_constant

__all__ = ["Kumaraswamy"]


def _moment(a, b, n):
    """``E[x^n] = b B(1 + n/a, b)``, from log-gammas."""
    shifted = 1 + n / a
    return b * tracegrad.exp(tracegrad.lgamma(shifted) + tracegrad.lgamma(b) - tracegrad.lgamma(shifted + b))


class Kumaraswamy(TransformedDistribution):
    """Kumaraswamy distribution with density ``a b x^(a-1) (1 - x^a)^(b-1)``, ``a`` the
    ``concentration1`` and ``b`` the ``concentration0``: ``(1 - U^(1/b))^(1/a)`` for
    ``U`` uniform on [0, 1]."""
    arg_constraints = {"concentration1": constraints.positive, "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1, concentration0, validate_args=None):
        self.concentration1, self.concentration0 = broadcast_all(concentration1, concentration0)
        base_dist = Uniform(tracegrad.full_like(self.concentration0, 0), tracegrad.full_like(self.concentration0, 1),
                            validate_args=validate_args)
        transforms = [PowerTransform(exponent=self.concentration0.reciprocal()), AffineTransform(loc=1.0, scale=-1.0),
                      PowerTransform(exponent=self.concentration1.reciprocal())]
        super().__init__(base_dist, transforms, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Kumaraswamy, _instance)
        new.concentration1 = self.concentration1.expand(batch_shape)
        new.concentration0 = self.concentration0.expand(batch_shape)
        return super().expand(batch_shape, _instance=new)

    @property
    def mean(self):
        return _moment(self.concentration1, self.concentration0, 1)

    @property
    def mode(self):
        """``((a - 1) / (a b - 1))^(1/a)``, in logs (0 for a = 1, 1 for b = 1); NaN where a
        or b is below 1 (the density is unbounded at an end) or both are 1 (flat)."""
        a, b = self.concentration1, self.concentration0
        log_mode = ((a - 1).log() - (a * b - 1).log()) / a
        log_mode[(b < 1) | (a < 1)] = math.nan
        return log_mode.exp()

    @property
    def variance(self):
        return _moment(self.concentration1, self.concentration0, 2) - self.mean.pow(2)

    def entropy(self):
        a, b = self.concentration1, self.concentration0
        harmonic_b = tracegrad.digamma(b + 1) + euler_constant  # (H_b, the b-th harmonic number)
        return (1 - b.reciprocal()) + (1 - a.reciprocal()) * harmonic_b - tracegrad.log(a) - tracegrad.log(b)
