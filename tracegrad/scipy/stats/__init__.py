"""``scipy.stats`` with derivatives: one module per distribution, each with SciPy's
method names as functions (``norm.pdf(x, loc, scale)``), as in ``jax.scipy.stats``;
they work on NumPy arrays, tape tracers and Tensors. ``rvs`` is SciPy's own sampler.

Derivatives in ``x`` and in the parameters come from the rule table. Where a parameter
is a shape parameter of an incomplete gamma or beta function (gamma/chi2/beta cdf and sf
in ``a``/``b``/``df``; t's cdf in ``df``) its derivative has no closed form:
differentiating with respect to it raises NotImplementedError, never a silent zero.
Importing this package does not import SciPy.
"""
from . import beta, chi2, dirichlet, gamma, multivariate_normal, norm, poisson, t

__all__ = ["beta", "chi2", "dirichlet", "gamma", "multivariate_normal", "norm", "poisson", "t"]
