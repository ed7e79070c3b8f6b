"""Exponential families: densities ``exp(<t(x), theta> - F(theta) + k(x))``. Knowing the
natural parameters ``theta`` and the log normalizer ``F`` gives the entropy (and the KL
divergence between two members of one family) by differentiating ``F``."""
import tracegrad

from .distribution import Distribution

__all__ = ["ExponentialFamily"]


class ExponentialFamily(Distribution):
    """Base class of exponential-family distributions (``_natural_params``,
    ``_log_normalizer``, ``_mean_carrier_measure``)."""

    @property
    def _natural_params(self):
        raise NotImplementedError

    def _log_normalizer(self, *natural_params):
        raise NotImplementedError

    @property
    def _mean_carrier_measure(self):
        raise NotImplementedError

    def entropy(self):
        """``F(theta) - <theta, grad F(theta)> - E[k(x)]`` (a Bregman identity)."""
        result = -self._mean_carrier_measure
        params = [p.detach().requires_grad_() for p in self._natural_params]
        normalizer = self._log_normalizer(*params)
        grads = tracegrad.autograd.grad(normalizer.sum(), params, create_graph=True)
        result = result + normalizer
        for p, g in zip(params, grads):
            result = result - (p * g).reshape(tuple(self._batch_shape) + (-1,)).sum(-1)
        return result
