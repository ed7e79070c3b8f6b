"""The von Mises distribution: the circle's analogue of the normal, for angles. ``loc``
and the values scored may be any real numbers (convenient for unconstrained
optimization); they are read as angles modulo 2 pi, and draws lie in [-pi, pi).

The normalizer is ``2 pi I0(kappa)``, taken here from the exponentially scaled Bessel
functions (``log I0(k) = log i0e(k) + k``), exact to rounding, where PyTorch uses
polynomial fits good to about 1e-7."""
import math

import tracegrad

from ..backend.dtypes import bool_
from ..runtime.tensor import Size
from . import constraints
from .distribution import Distribution
from .utils import broadcast_all

__all__ = ["VonMises"]


def _log_i0(x):
    """``log I0(x)`` for x >= 0, without overflow."""
    return tracegrad.special.i0e(x).log() + x


def _best_fisher(loc, kappa, shape):
    """Draws of shape ``shape`` (float64) by Best and Fisher's rejection sampler ("Efficient
    simulation of the von Mises distribution", Applied Statistics 1979): a wrapped
    Cauchy proposal, accepted by a cheap squeeze or the exact test; most batches finish
    in one or two rounds. Each entry keeps its first accepted draw."""
    tau = 1 + (1 + 4 * kappa.pow(2)).sqrt()
    rho = (tau - (2 * tau).sqrt()) / (2 * kappa)
    r = tracegrad.where(kappa < 1e-5, 1 / kappa + kappa, (1 + rho.pow(2)) / (2 * rho))  # (Taylor near 0)
    x = tracegrad.zeros(shape, dtype=kappa.dtype, device=kappa.device)
    done = tracegrad.zeros(shape, dtype=bool_, device=kappa.device)
    while not bool(done.all()):
        u1, u2, u3 = tracegrad.rand((3,) + tuple(shape), dtype=kappa.dtype, device=kappa.device).unbind()
        z = tracegrad.cos(math.pi * u1)
        f = (1 + r * z) / (r + z)
        c = kappa * (r - f)
        accept = ((c * (2 - c) - u2) > 0) | ((c / u2).log() + 1 - c >= 0)
        x = tracegrad.where(accept & ~done, (u3 - 0.5).sign() * f.acos(), x)
        done = done | accept
    return (x + math.pi + loc) % (2 * math.pi) - math.pi


class VonMises(Distribution):
    """Von Mises distribution with density ``exp(kappa cos(x - loc)) / (2 pi I0(kappa))``,
    kappa the ``concentration``."""
    arg_constraints = {"loc": constraints.real, "concentration": constraints.positive}
    support = constraints.real
    has_rsample = False

    def __init__(self, loc, concentration, validate_args=None):
        self.loc, self.concentration = broadcast_all(loc, concentration)
        super().__init__(self.loc.shape, Size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expanded(VonMises, batch_shape, _instance, {"loc": (), "concentration": ()})

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return (self.concentration * tracegrad.cos(value - self.loc) - math.log(2 * math.pi)
                - _log_i0(self.concentration))

    def sample(self, sample_shape=Size()):
        """Draws in [-pi, pi), sampled in float64 whatever the dtype (in float32 the sampler
        stalls for concentrations below ~1e-4)."""
        with tracegrad.no_grad():
            shape = self._extended_shape(sample_shape)
            loc, kappa = self.loc.double(), self.concentration.double()
            return _best_fisher(loc, kappa, shape).to(self.loc.dtype)

    @property
    def mean(self):
        """The circular mean."""
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        """The circular variance ``1 - I1(kappa) / I0(kappa)``."""
        return 1 - tracegrad.special.i1e(self.concentration) / tracegrad.special.i0e(self.concentration)
