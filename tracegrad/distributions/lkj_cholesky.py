"""The LKJ distribution over lower Cholesky factors ``L`` of correlation matrices:
``M = L L^T`` has density proportional to ``det(M)^(eta - 1)`` (uniform over
correlation matrices for eta = 1), the usual prior for the correlations of a
covariance. Follows NumPyro's formulation, as PyTorch's does.

Lewandowski, Kurowicka and Joe, "Generating random correlation matrices based on vines
and extended onion method", J. Multivariate Analysis 100 (2009)."""
import math

import tracegrad

from ..runtime.tensor import Size
from ..runtime.type_info import finfo
from . import constraints
from .beta import Beta
from .distribution import Distribution
from .utils import broadcast_all

__all__ = ["LKJCholesky"]


class LKJCholesky(Distribution):
    """LKJ distribution of ``dim`` x ``dim`` Cholesky factors with ``concentration`` eta.
    Draws by the onion method (no reparameterization)."""
    arg_constraints = {"concentration": constraints.positive}
    support = constraints.corr_cholesky

    def __init__(self, dim, concentration=1.0, validate_args=None):
        if dim < 2:
            raise ValueError(f"Expected dim to be an integer greater than or equal to 2. Found dim={dim}.")
        self.dim = dim
        (self.concentration,) = broadcast_all(concentration)
        # Row i's squared length below the diagonal is Beta(i/2, eta + (dim - 1 - i)/2)
        # (row 0 gets a dummy one: it has nothing below the diagonal).
        offset = tracegrad.arange(dim - 1, dtype=self.concentration.dtype, device=self.concentration.device)
        offset = tracegrad.cat([offset.new_zeros((1,)), offset])
        marginal = self.concentration + 0.5 * (dim - 2)
        self._beta = Beta(offset + 0.5, marginal.unsqueeze(-1) - 0.5 * offset)
        super().__init__(self.concentration.size(), Size((dim, dim)), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._expanded(LKJCholesky, batch_shape, _instance, {"concentration": ()})
        new.dim = self.dim
        new._beta = self._beta.expand(Size(batch_shape) + (self.dim,))
        return new

    def sample(self, sample_shape=Size()):
        """The onion method, vectorized over rows and working on the factor directly: row
        i is a uniform direction in its first i coordinates scaled to a Beta-drawn
        squared length ``y``, and the diagonal entry ``sqrt(1 - y)`` makes it a unit row."""
        with tracegrad.no_grad():
            y = self._beta.sample(sample_shape).unsqueeze(-1)
            normal = tracegrad.randn(self._extended_shape(sample_shape), dtype=y.dtype, device=y.device).tril(-1)
            norms = normal.norm(dim=-1, keepdim=True)
            direction = normal / norms.clamp(min=finfo(y.dtype).tiny)  # (row 0: zeros, not 0/0)
            w = y.sqrt() * direction
            diag = (1 - w.pow(2).sum(-1)).clamp(min=finfo(w.dtype).tiny).sqrt()
            return w + tracegrad.diag_embed(diag)

    def log_prob(self, value):
        """``sum_i (2 (eta - 1) + dim - i) log L_ii`` (i from 2: the density of ``M``,
        ``prod L_ii^(2 (eta - 1))``, times the Jacobian of ``L -> L L^T``,
        ``prod L_ii^(dim - i)``) minus the log normalizer of Lewandowski et al. (p. 1999)."""
        if self._validate_args:
            self._validate_sample(value)
        diag = value.diagonal(dim1=-1, dim2=-2)[..., 1:]
        rows = tracegrad.arange(2, self.dim + 1, device=self.concentration.device)
        order = 2 * (self.concentration - 1).unsqueeze(-1) + self.dim - rows
        unnormalized = (order * diag.log()).sum(-1)
        dm1 = self.dim - 1
        alpha = self.concentration + 0.5 * dm1
        # Their pi term is dim (dim - 1)/4 log(pi); mvlgamma(., dim - 1) holds (dim - 1)(dim - 2)/4 of it.
        log_normalizer = (0.5 * dm1 * math.log(math.pi) + tracegrad.mvlgamma(alpha - 0.5, p=dm1)
                          - dm1 * tracegrad.lgamma(alpha))
        return unnormalized - log_normalizer
