"""The base class of probability distributions (``torch.distributions.Distribution``).

A distribution has a ``batch_shape`` (independent distributions side by side, from
broadcasting its parameters) and an ``event_shape`` (the shape of one draw). Its methods
are written with Tensor operations, so ``log_prob``, ``entropy`` and reparameterized
samples (``rsample``) carry gradients to the parameters as any other Tensor code.

Validation is on by default (PyTorch's ``__debug__`` rule): parameters are checked
against ``arg_constraints`` when a distribution is made, values against ``support``
when scored; ``Distribution.set_default_validate_args(False)`` or ``validate_args=False``
turns it off.
"""
import warnings

import tracegrad

from ..runtime.tensor import Size
from . import constraints
from .utils import lazy_property

__all__ = ["Distribution"]


class Distribution:
    """Abstract base class for probability distributions."""
    has_rsample = False
    has_enumerate_support = False
    _validate_args = __debug__

    @staticmethod
    def set_default_validate_args(value):
        """Turn argument validation on or off for every distribution made from now on."""
        if value not in (True, False):
            raise ValueError
        Distribution._validate_args = value

    def __init__(self, batch_shape=Size(), event_shape=Size(), validate_args=None):
        self._batch_shape, self._event_shape = Size(batch_shape), Size(event_shape)
        if validate_args is not None:
            self._validate_args = validate_args
        if self._validate_args:
            try:
                arg_constraints = self.arg_constraints
            except NotImplementedError:
                arg_constraints = {}
                warnings.warn(f"{self.__class__} does not define `arg_constraints`. Please set "
                              "`arg_constraints = {}` or initialize the distribution with "
                              "`validate_args=False` to turn off validation.", stacklevel=2)
            for param, constraint in arg_constraints.items():
                if constraints.is_dependent(constraint):
                    continue
                if param not in self.__dict__ and isinstance(getattr(type(self), param), lazy_property):
                    continue  # (computed only when asked: nothing to check yet)
                value = getattr(self, param)
                if not tracegrad._is_all_true(constraint.check(value)):
                    raise ValueError(f"Expected parameter {param} ({type(value).__name__} of shape "
                                     f"{tuple(value.shape)}) of distribution {self!r} to satisfy the "
                                     f"constraint {constraint!r}, but found invalid values:\n{value}")
        super().__init__()

    def expand(self, batch_shape, _instance=None):
        """A distribution with the parameters expanded to ``batch_shape`` (views, no copy,
        no new validation)."""
        raise NotImplementedError

    @property
    def batch_shape(self):
        return self._batch_shape

    @property
    def event_shape(self):
        return self._event_shape

    @property
    def arg_constraints(self):
        """``{parameter name: Constraint}`` of the Tensor parameters."""
        raise NotImplementedError

    @property
    def support(self):
        """The Constraint that samples satisfy."""
        raise NotImplementedError

    @property
    def mean(self):
        raise NotImplementedError

    @property
    def mode(self):
        raise NotImplementedError(f"{self.__class__} does not implement mode")

    @property
    def variance(self):
        raise NotImplementedError

    @property
    def stddev(self):
        return self.variance.sqrt()

    def sample(self, sample_shape=Size()):
        """Draws of shape ``sample_shape + batch_shape + event_shape``, without gradient."""
        with tracegrad.no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape=Size()):
        """Reparameterized draws: differentiable with respect to the parameters."""
        raise NotImplementedError

    def sample_n(self, n):
        warnings.warn("`sample_n(n)` will be deprecated. Use `sample((n,))` instead.", FutureWarning,
                      stacklevel=2)
        return self.sample(Size((n,)))

    def log_prob(self, value):
        """The log density (or mass) at ``value``."""
        raise NotImplementedError

    def cdf(self, value):
        raise NotImplementedError

    def icdf(self, value):
        raise NotImplementedError

    def enumerate_support(self, expand=True):
        """All values of a discrete distribution along dim 0: ``(cardinality,) +
        batch_shape + event_shape`` (ones for the batch dims unless ``expand``)."""
        raise NotImplementedError

    def entropy(self):
        raise NotImplementedError

    def perplexity(self):
        return tracegrad.exp(self.entropy())

    def _extended_shape(self, sample_shape=Size()):
        """``sample_shape + batch_shape + event_shape``."""
        return Size(tuple(sample_shape) + tuple(self._batch_shape) + tuple(self._event_shape))

    def _validate_sample(self, value):
        """Check that ``value`` can be scored: a Tensor whose rightmost dims are the event
        shape, broadcastable with the batch shape, within the support."""
        if not isinstance(value, tracegrad.Tensor):
            raise ValueError("The value argument to log_prob must be a Tensor")
        start = value.dim() - len(self._event_shape)
        if value.size()[start:] != self._event_shape:
            raise ValueError(f"The right-most size of value must match event_shape: {value.size()} vs "
                             f"{self._event_shape}.")
        actual, expected = value.size(), self._batch_shape + self._event_shape
        for i, j in zip(reversed(actual), reversed(expected)):
            if i != 1 and j != 1 and i != j:
                raise ValueError(f"Value is not broadcastable with batch_shape+event_shape: {actual} vs "
                                 f"{expected}.")
        try:
            support = self.support
        except NotImplementedError:
            warnings.warn(f"{self.__class__} does not define `support` to enable sample validation. Please "
                          "initialize the distribution with `validate_args=False` to turn off validation.",
                          stacklevel=2)
            return
        if not tracegrad._is_all_true(support.check(value)):
            raise ValueError(f"Expected value argument ({type(value).__name__} of shape {tuple(value.shape)}) "
                             f"to be within the support ({support!r}) of the distribution {self!r}, but "
                             f"found invalid values:\n{value}")

    def _get_checked_instance(self, cls, _instance=None):
        """A bare instance for ``expand`` (a subclass with its own ``__init__`` must give
        its own ``expand``)."""
        if _instance is None and type(self).__init__ != cls.__init__:
            raise NotImplementedError(f"Subclass {self.__class__.__name__} of {cls.__name__} that defines a "
                                      "custom __init__ method must also define a custom .expand() method.")
        return self.__new__(type(self)) if _instance is None else _instance

    def _expanded(self, cls, batch_shape, _instance, params, event_shape=None):
        """What ``expand`` does for most distributions: a new ``cls`` instance whose
        parameters (``params``: ``{name: shape after batch_shape}``, the names present on
        this instance) are views expanded to ``batch_shape``, with no new validation."""
        new = self._get_checked_instance(cls, _instance)
        batch_shape = Size(batch_shape)
        for name, event in params.items():
            if name in self.__dict__:
                setattr(new, name, getattr(self, name).expand(batch_shape + Size(event)))
        Distribution.__init__(new, batch_shape, self._event_shape if event_shape is None else event_shape,
                              validate_args=False)
        new._validate_args = self._validate_args
        return new

    def __repr__(self):
        params = [k for k in self.arg_constraints if k in self.__dict__]
        text = ", ".join(f"{p}: {self.__dict__[p] if self.__dict__[p].numel() == 1 else self.__dict__[p].size()}"
                         for p in params)
        return f"{self.__class__.__name__}({text})"
