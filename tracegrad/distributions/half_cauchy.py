"""The half-Cauchy distribution: ``|X|`` for a centred Cauchy ``X`` (a common prior on
scale parameters)."""
import math

import tracegrad

from ._folded import FoldedAtZero
from .cauchy import Cauchy

__all__ = ["HalfCauchy"]


class HalfCauchy(FoldedAtZero):
    """``|X|`` for ``X ~ Cauchy(0, scale)``: twice the Cauchy density on ``x >= 0``."""
    base_family = Cauchy

    @property
    def mean(self):
        return tracegrad.full(self._extended_shape(), math.inf, dtype=self.scale.dtype, device=self.scale.device)

    @property
    def variance(self):
        return self.base_dist.variance

    def _scored(self, value):
        """``value`` in the scale's dtype and device (a number too, unvalidated)."""
        return tracegrad.as_tensor(value, dtype=self.scale.dtype, device=self.scale.device)
