"""The Fisher-Snedecor (F) distribution: the ratio of two independent chi-squares, each
over its degrees of freedom (the law of an ANOVA's F statistic)."""
import math

import tracegrad

from ..runtime.tensor import Size
from ..runtime.type_info import finfo
from . import constraints
from .distribution import Distribution
from .gamma import Gamma
from .utils import broadcast_all

__all__ = ["FisherSnedecor"]


class FisherSnedecor(Distribution):
    """F distribution with ``df1`` and ``df2`` degrees of freedom. Draws are ``X1 / X2``
    with ``Xi ~ Gamma(dfi / 2, dfi)`` (a chi-square over its df), reparameterized
    through the gammas' implicit gradients."""
    arg_constraints = {"df1": constraints.positive, "df2": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, df1, df2, validate_args=None):
        self.df1, self.df2 = broadcast_all(df1, df2)
        self._gamma1, self._gamma2 = Gamma(self.df1 * 0.5, self.df1), Gamma(self.df2 * 0.5, self.df2)
        super().__init__(self.df1.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._expanded(FisherSnedecor, batch_shape, _instance, {"df1": (), "df2": ()})
        new._gamma1, new._gamma2 = self._gamma1.expand(batch_shape), self._gamma2.expand(batch_shape)
        return new

    @property
    def mean(self):
        """``df2 / (df2 - 2)``; NaN for df2 <= 2 (infinite or undefined)."""
        df2 = tracegrad.where(self.df2 > 2, self.df2, math.nan)
        return df2 / (df2 - 2)

    @property
    def mode(self):
        """``(df1 - 2) / df1 * df2 / (df2 + 2)``; NaN for df1 <= 2 (the density is largest
        at 0)."""
        mode = (self.df1 - 2) / self.df1 * self.df2 / (self.df2 + 2)
        return tracegrad.where(self.df1 > 2, mode, math.nan)

    @property
    def variance(self):
        """NaN for df2 <= 4."""
        df2 = tracegrad.where(self.df2 > 4, self.df2, math.nan)
        return 2 * df2.pow(2) * (self.df1 + df2 - 2) / (self.df1 * (df2 - 2).pow(2) * (df2 - 4))

    def rsample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        tiny = finfo(self.df1.dtype).tiny
        x1 = self._gamma1.rsample(sample_shape).view(shape)
        x2 = self._gamma2.rsample(sample_shape).view(shape).clamp(min=tiny)
        return (x1 / x2).clamp(min=tiny)  # (kept inside the support when x1 underflowed)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        half1, half2 = self.df1 * 0.5, self.df2 * 0.5
        ratio = self.df1 / self.df2
        log_norm = (half1 + half2).lgamma() - half1.lgamma() - half2.lgamma()
        return (log_norm + half1 * ratio.log() + (half1 - 1) * tracegrad.log(value)
                - (half1 + half2) * tracegrad.log1p(ratio * value))
