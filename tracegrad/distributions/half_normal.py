"""The half-normal distribution: ``|X|`` for a centred normal ``X``."""
import math

from ._folded import FoldedAtZero
from .kl import kl_divergence, register_kl
from .normal import Normal

__all__ = ["HalfNormal"]


class HalfNormal(FoldedAtZero):
    """``|X|`` for ``X ~ Normal(0, scale)``: twice the normal's density on ``x >= 0``."""
    base_family = Normal

    @property
    def mean(self):
        return self.scale * math.sqrt(2 / math.pi)

    @property
    def variance(self):
        return self.scale.pow(2) * (1 - 2 / math.pi)


@register_kl(HalfNormal, HalfNormal)
def _kl_halfnormal_halfnormal(p, q):
    return kl_divergence(p.base_dist, q.base_dist)  # (folding both at 0 keeps the ratio of densities)
