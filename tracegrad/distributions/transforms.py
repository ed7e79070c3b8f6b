"""Invertible maps with a computable log |det Jacobian| (``torch.distributions.
transforms``): what turns a base distribution into a :class:`TransformedDistribution`
(``y = t(x)``, ``log p(y) = log p(x) - log |dy/dx|``) and what moves a constrained
parameter to an unconstrained one (``constraint_registry``).

A transform maps its ``domain`` onto its ``codomain`` (constraints, whose ``event_dim``
says how many rightmost dims one event takes); ``t.inv`` is the inverse map, and
``t.inv.inv is t``. With ``cache_size=1`` a transform remembers its last ``(x, y)``
pair, so ``t.inv(t(x))`` returns ``x`` itself: exact, and the only way to get a finite
inverse where ``t(x)`` rounded onto the boundary of the codomain (``tanh(20.0) == 1``).
Everything is written with Tensor operations, so gradients flow through ``t(x)``,
``t.inv(y)`` and ``log_abs_det_jacobian``.
"""
import functools
import math
import numbers
import operator

import tracegrad

from ..runtime.tensor import Size
from ..runtime.type_info import finfo
from . import constraints
from .utils import _sum_rightmost, broadcast_all, lazy_property, tril_matrix_to_vec, vec_to_tril_matrix

__all__ = [
    "AbsTransform", "AffineTransform", "CatTransform", "ComposeTransform", "CorrCholeskyTransform",
    "CumulativeDistributionTransform", "ExpTransform", "IndependentTransform", "LowerCholeskyTransform",
    "PositiveDefiniteTransform", "PowerTransform", "ReshapeTransform", "SigmoidTransform",
    "SoftmaxTransform", "SoftplusTransform", "StackTransform", "StickBreakingTransform", "TanhTransform",
    "Transform", "identity_transform",
]


def _softplus(x):
    return tracegrad.nn.functional.softplus(x)


def _pad_last(x, left, right, value):
    return tracegrad.nn.functional.pad(x, [left, right], value=value)


class Transform:
    """Base class: a subclass gives ``_call`` (x -> y) and/or ``_inverse`` (y -> x), its
    ``domain`` and ``codomain``, and, when ``bijective``, ``log_abs_det_jacobian(x, y)``
    (``log |dy/dx|``, one value per event) and ``sign`` (+1 increasing, -1 decreasing).
    ``cache_size`` (0 or 1) is how many ``(x, y)`` pairs it remembers."""
    bijective = False

    def __init__(self, cache_size=0):
        if cache_size not in (0, 1):
            raise ValueError("cache_size must be 0 or 1")
        self._cache_size, self._inv = cache_size, None
        if cache_size:
            self._cached_x_y = None, None

    def __getstate__(self):
        state = self.__dict__.copy()
        state["_inv"] = None  # (a cycle through the inverse, rebuilt on demand)
        return state

    @property
    def event_dim(self):
        if self.domain.event_dim == self.codomain.event_dim:
            return self.domain.event_dim
        raise ValueError("Please use either .domain.event_dim or .codomain.event_dim")

    @property
    def inv(self):
        """The inverse transform (made once and kept, so ``t.inv.inv is t``)."""
        if self._inv is None:
            self._inv = _InverseTransform(self)
        return self._inv

    @property
    def sign(self):
        """The sign of the Jacobian's determinant (of a bijective transform)."""
        raise NotImplementedError

    def with_cache(self, cache_size=1):
        """This transform with another cache size (``self`` when it already has it)."""
        if self._cache_size == cache_size:
            return self
        if type(self).__init__ is Transform.__init__:
            return type(self)(cache_size=cache_size)
        raise NotImplementedError(f"{type(self)}.with_cache is not implemented")

    def __eq__(self, other):
        return self is other

    def __call__(self, x):
        """``y = t(x)``; the remembered ``y`` when ``x`` is the last input seen."""
        if not self._cache_size:
            return self._call(x)
        x_old, y_old = self._cached_x_y
        if x is x_old:
            return y_old
        y = self._call(x)
        self._cached_x_y = x, y
        return y

    def _inv_call(self, y):
        """``x = t^-1(y)``; the remembered ``x`` when ``y`` is the last output seen."""
        if not self._cache_size:
            return self._inverse(y)
        x_old, y_old = self._cached_x_y
        if y is y_old:
            return x_old
        x = self._inverse(y)
        self._cached_x_y = x, y
        return x

    def _call(self, x):
        raise NotImplementedError

    def _inverse(self, y):
        raise NotImplementedError

    def log_abs_det_jacobian(self, x, y):
        """``log |dy/dx|`` at the pair ``(x, y = t(x))``."""
        raise NotImplementedError

    def forward_shape(self, shape):
        """The shape of ``t(x)`` for an ``x`` of ``shape``."""
        return shape

    def inverse_shape(self, shape):
        """The shape of ``t.inv(y)`` for a ``y`` of ``shape``."""
        return shape

    def __repr__(self):
        return type(self).__name__ + "()"


class _InverseTransform(Transform):
    """The inverse of a transform (made by ``Transform.inv``): everything is read off the
    transform it inverts, with the roles of x and y swapped."""

    def __init__(self, transform):
        super().__init__(cache_size=transform._cache_size)
        self._inv = transform

    @constraints.dependent_property(is_discrete=False)
    def domain(self):
        return self._inv.codomain

    @constraints.dependent_property(is_discrete=False)
    def codomain(self):
        return self._inv.domain

    @property
    def bijective(self):
        return self._inv.bijective

    @property
    def sign(self):
        return self._inv.sign

    @property
    def inv(self):
        return self._inv

    def with_cache(self, cache_size=1):
        return self.inv.with_cache(cache_size).inv

    def __eq__(self, other):
        return isinstance(other, _InverseTransform) and self._inv == other._inv

    def __repr__(self):
        return f"{type(self).__name__}({self._inv!r})"

    def __call__(self, x):
        return self._inv._inv_call(x)  # (the cache is the forward transform's)

    def log_abs_det_jacobian(self, x, y):
        return -self._inv.log_abs_det_jacobian(y, x)

    def forward_shape(self, shape):
        return self._inv.inverse_shape(shape)

    def inverse_shape(self, shape):
        return self._inv.forward_shape(shape)


def _widened(constraint, event_dim):
    """``constraint`` read over ``event_dim`` rightmost dims (more than its own)."""
    if event_dim > constraint.event_dim:
        return constraints.independent(constraint, event_dim - constraint.event_dim)
    return constraint


class ComposeTransform(Transform):
    """The transforms of ``parts`` applied in order (each caches for itself). Its event
    dim is the largest any part needs: a part with a smaller one has its log-Jacobian
    summed over the extra dims."""

    def __init__(self, parts, cache_size=0):
        if cache_size:
            parts = [part.with_cache(cache_size) for part in parts]
        super().__init__(cache_size=cache_size)
        self.parts = parts

    def __eq__(self, other):
        return isinstance(other, ComposeTransform) and self.parts == other.parts

    @constraints.dependent_property(is_discrete=False)
    def domain(self):
        if not self.parts:
            return constraints.real
        event_dim = self.parts[-1].codomain.event_dim
        for part in reversed(self.parts):
            event_dim = max(event_dim + part.domain.event_dim - part.codomain.event_dim, part.domain.event_dim)
        return _widened(self.parts[0].domain, event_dim)

    @constraints.dependent_property(is_discrete=False)
    def codomain(self):
        if not self.parts:
            return constraints.real
        event_dim = self.parts[0].domain.event_dim
        for part in self.parts:
            event_dim = max(event_dim + part.codomain.event_dim - part.domain.event_dim, part.codomain.event_dim)
        return _widened(self.parts[-1].codomain, event_dim)

    @lazy_property
    def bijective(self):
        return all(p.bijective for p in self.parts)

    @lazy_property
    def sign(self):
        return functools.reduce(operator.mul, (p.sign for p in self.parts), 1)

    @property
    def inv(self):
        if self._inv is None:
            self._inv = ComposeTransform([p.inv for p in reversed(self.parts)])
            self._inv._inv = self
        return self._inv

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return ComposeTransform(self.parts, cache_size=cache_size)

    def __call__(self, x):
        for part in self.parts:
            x = part(x)
        return x

    def log_abs_det_jacobian(self, x, y):
        if not self.parts:
            return tracegrad.zeros_like(x)
        xs = [x]  # (the intermediate values: free when the parts cache them)
        for part in self.parts[:-1]:
            xs.append(part(xs[-1]))
        xs.append(y)
        terms, event_dim = [], self.domain.event_dim
        for part, a, b in zip(self.parts, xs[:-1], xs[1:]):
            terms.append(_sum_rightmost(part.log_abs_det_jacobian(a, b), event_dim - part.domain.event_dim))
            event_dim += part.codomain.event_dim - part.domain.event_dim
        return functools.reduce(operator.add, terms)

    def forward_shape(self, shape):
        for part in self.parts:
            shape = part.forward_shape(shape)
        return shape

    def inverse_shape(self, shape):
        for part in reversed(self.parts):
            shape = part.inverse_shape(shape)
        return shape

    def __repr__(self):
        return type(self).__name__ + "(\n    " + ",\n    ".join(repr(p) for p in self.parts) + "\n)"


identity_transform = ComposeTransform([])


class IndependentTransform(Transform):
    """``base_transform`` with ``reinterpreted_batch_ndims`` more rightmost dims in one
    event: the map is the same, the log-Jacobian is summed over those dims."""

    def __init__(self, base_transform, reinterpreted_batch_ndims, cache_size=0):
        super().__init__(cache_size=cache_size)
        self.base_transform = base_transform.with_cache(cache_size)
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return IndependentTransform(self.base_transform, self.reinterpreted_batch_ndims, cache_size=cache_size)

    @constraints.dependent_property(is_discrete=False)
    def domain(self):
        return constraints.independent(self.base_transform.domain, self.reinterpreted_batch_ndims)

    @constraints.dependent_property(is_discrete=False)
    def codomain(self):
        return constraints.independent(self.base_transform.codomain, self.reinterpreted_batch_ndims)

    @property
    def bijective(self):
        return self.base_transform.bijective

    @property
    def sign(self):
        return self.base_transform.sign

    def _call(self, x):
        if x.dim() < self.domain.event_dim:
            raise ValueError("Too few dimensions on input")
        return self.base_transform(x)

    def _inverse(self, y):
        if y.dim() < self.codomain.event_dim:
            raise ValueError("Too few dimensions on input")
        return self.base_transform.inv(y)

    def log_abs_det_jacobian(self, x, y):
        return _sum_rightmost(self.base_transform.log_abs_det_jacobian(x, y), self.reinterpreted_batch_ndims)

    def forward_shape(self, shape):
        return self.base_transform.forward_shape(shape)

    def inverse_shape(self, shape):
        return self.base_transform.inverse_shape(shape)

    def __repr__(self):
        return f"{type(self).__name__}({self.base_transform!r}, {self.reinterpreted_batch_ndims})"


def _replace_tail(shape, old, new):
    """``shape`` with its rightmost ``old`` dims (checked) replaced by ``new``."""
    if len(shape) < len(old):
        raise ValueError("Too few dimensions on input")
    cut = len(shape) - len(old)
    if shape[cut:] != old:
        raise ValueError(f"Shape mismatch: expected {shape[cut:]} but got {old}")
    return shape[:cut] + new


class ReshapeTransform(Transform):
    """Reshapes the rightmost ``in_shape`` dims to ``out_shape`` (same number of
    elements); a unit Jacobian."""
    bijective = True

    def __init__(self, in_shape, out_shape, cache_size=0):
        self.in_shape, self.out_shape = Size(in_shape), Size(out_shape)
        if self.in_shape.numel() != self.out_shape.numel():
            raise ValueError("in_shape, out_shape have different numbers of elements")
        super().__init__(cache_size=cache_size)

    @constraints.dependent_property
    def domain(self):
        return constraints.independent(constraints.real, len(self.in_shape))

    @constraints.dependent_property
    def codomain(self):
        return constraints.independent(constraints.real, len(self.out_shape))

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return ReshapeTransform(self.in_shape, self.out_shape, cache_size=cache_size)

    def _call(self, x):
        return x.reshape(x.shape[:x.dim() - len(self.in_shape)] + self.out_shape)

    def _inverse(self, y):
        return y.reshape(y.shape[:y.dim() - len(self.out_shape)] + self.in_shape)

    def log_abs_det_jacobian(self, x, y):
        return x.new_zeros(x.shape[:x.dim() - len(self.in_shape)])

    def forward_shape(self, shape):
        return _replace_tail(shape, self.in_shape, self.out_shape)

    def inverse_shape(self, shape):
        return _replace_tail(shape, self.out_shape, self.in_shape)


class _Parameterless(Transform):
    """A transform without parameters: equal to any other of its class."""

    def __eq__(self, other):
        return isinstance(other, type(self))


class ExpTransform(_Parameterless):
    """``y = exp(x)``."""
    domain, codomain, bijective, sign = constraints.real, constraints.positive, True, +1

    def _call(self, x):
        return x.exp()

    def _inverse(self, y):
        return y.log()

    def log_abs_det_jacobian(self, x, y):
        return x


class PowerTransform(Transform):
    """``y = x ** exponent`` on the positive reals."""
    domain, codomain, bijective = constraints.positive, constraints.positive, True

    def __init__(self, exponent, cache_size=0):
        super().__init__(cache_size=cache_size)
        (self.exponent,) = broadcast_all(exponent)

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return PowerTransform(self.exponent, cache_size=cache_size)

    @lazy_property
    def sign(self):
        return self.exponent.sign()

    def __eq__(self, other):
        return isinstance(other, PowerTransform) and self.exponent.eq(other.exponent).all().item()

    def _call(self, x):
        return x.pow(self.exponent)

    def _inverse(self, y):
        return y.pow(1 / self.exponent)

    def log_abs_det_jacobian(self, x, y):
        return (self.exponent * y / x).abs().log()  # (dy/dx = exponent * x^(exponent-1))

    def forward_shape(self, shape):
        return tracegrad.broadcast_shapes(shape, self.exponent.shape)

    inverse_shape = forward_shape


def _clipped_sigmoid(x):
    """``sigmoid(x)`` kept inside (0, 1) in ``x``'s dtype, so that its inverse and logs
    stay finite."""
    info = finfo(x.dtype)
    return tracegrad.sigmoid(x).clamp(min=info.tiny, max=1.0 - info.eps)


class SigmoidTransform(_Parameterless):
    """``y = 1 / (1 + exp(-x))``, ``x = logit(y)``."""
    domain, codomain, bijective, sign = constraints.real, constraints.unit_interval, True, +1

    def _call(self, x):
        return _clipped_sigmoid(x)

    def _inverse(self, y):
        info = finfo(y.dtype)
        y = y.clamp(min=info.tiny, max=1.0 - info.eps)
        return y.log() - (-y).log1p()

    def log_abs_det_jacobian(self, x, y):
        return -_softplus(-x) - _softplus(x)  # log(sigmoid(x) * sigmoid(-x))


class SoftplusTransform(_Parameterless):
    """``y = log(1 + exp(x))`` (linear past x > 20, as ``softplus``)."""
    domain, codomain, bijective, sign = constraints.real, constraints.positive, True, +1

    def _call(self, x):
        return _softplus(x)

    def _inverse(self, y):
        return (-y).expm1().neg().log() + y  # log(exp(y) - 1) without overflow

    def log_abs_det_jacobian(self, x, y):
        return -_softplus(-x)


class TanhTransform(_Parameterless):
    """``y = tanh(x)`` (the squashing of SAC-style policies). Its inverse is not clamped
    away from +-1 (clamping hurts some algorithms): invert samples through the cache
    (``cache_size=1``) instead."""
    domain, codomain, bijective, sign = constraints.real, constraints.interval(-1.0, 1.0), True, +1

    def _call(self, x):
        return x.tanh()

    def _inverse(self, y):
        return tracegrad.atanh(y)

    def log_abs_det_jacobian(self, x, y):
        # log(1 - tanh(x)^2) = 2 (log 2 - x - softplus(-2x)): finite for every x, where
        # log1p(-y^2) is -inf as soon as tanh rounds to 1.
        return 2.0 * (math.log(2.0) - x - _softplus(-2.0 * x))


class AbsTransform(_Parameterless):
    """``y = |x|`` (not bijective: the inverse picks the non-negative root)."""
    domain, codomain = constraints.real, constraints.positive

    def _call(self, x):
        return x.abs()

    def _inverse(self, y):
        return y


def _same(a, b):
    if isinstance(a, numbers.Number) and isinstance(b, numbers.Number):
        return a == b
    return bool((a == b).all().item())


class AffineTransform(Transform):
    """``y = loc + scale * x`` elementwise, over events of ``event_dim`` dims (0 for
    scalars, 1 for vectors...)."""
    bijective = True

    def __init__(self, loc, scale, event_dim=0, cache_size=0):
        super().__init__(cache_size=cache_size)
        self.loc, self.scale, self._event_dim = loc, scale, event_dim

    @property
    def event_dim(self):
        return self._event_dim

    @constraints.dependent_property(is_discrete=False)
    def domain(self):
        return _widened(constraints.real, self.event_dim)

    codomain = domain

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return AffineTransform(self.loc, self.scale, self.event_dim, cache_size=cache_size)

    def __eq__(self, other):
        return isinstance(other, AffineTransform) and _same(self.loc, other.loc) and _same(self.scale, other.scale)

    @property
    def sign(self):
        if isinstance(self.scale, numbers.Number):
            return 1 if float(self.scale) > 0 else -1 if float(self.scale) < 0 else 0
        return self.scale.sign()

    def _call(self, x):
        return self.loc + self.scale * x

    def _inverse(self, y):
        return (y - self.loc) / self.scale

    def log_abs_det_jacobian(self, x, y):
        shape, scale = x.shape, self.scale
        if isinstance(scale, numbers.Number):
            result = tracegrad.full_like(x, math.log(abs(scale)))
        else:
            result = scale.abs().log()
        if self.event_dim:
            result = result.reshape(result.shape[:-self.event_dim] + (-1,)).sum(-1)
            shape = shape[:-self.event_dim]
        return result.expand(shape)

    def forward_shape(self, shape):
        return tracegrad.broadcast_shapes(shape, getattr(self.loc, "shape", ()), getattr(self.scale, "shape", ()))

    inverse_shape = forward_shape


class CorrCholeskyTransform(Transform):
    """A vector of ``D(D-1)/2`` reals to the Cholesky factor of a D x D correlation
    matrix (lower triangular, positive diagonal, rows of unit norm): each row is a
    signed stick-breaking of ``tanh`` of its entries."""
    domain, codomain, bijective = constraints.real_vector, constraints.corr_cholesky, True

    def _call(self, x):
        eps = finfo(x.dtype).eps
        r = vec_to_tril_matrix(x.tanh().clamp(min=-1 + eps, max=1 - eps), diag=-1)
        # Row i: y_ij = r_ij * prod_{k<j} sqrt(1 - r_ik^2), so each row has unit norm.
        remaining = (1 - r ** 2).sqrt().cumprod(-1)
        r = r + tracegrad.eye(r.shape[-1], dtype=r.dtype, device=r.device)
        return r * _pad_last(remaining[..., :-1], 1, 0, 1)

    def _inverse(self, y):
        left = _pad_last((1 - tracegrad.cumsum(y * y, dim=-1))[..., :-1], 1, 0, 1)
        t = tril_matrix_to_vec(y, diag=-1) / tril_matrix_to_vec(left, diag=-1).sqrt()
        return (t.log1p() - t.neg().log1p()) / 2  # atanh

    def log_abs_det_jacobian(self, x, y, intermediates=None):
        # Of x and the flattened strict lower triangle of y (the dims differ from D x D).
        left = tril_matrix_to_vec(1 - (y * y).cumsum(dim=-1), diag=-2)
        stick_breaking = 0.5 * left.log().sum(-1)
        tanh = -2 * (x + _softplus(-2 * x) - math.log(2.0)).sum(dim=-1)
        return stick_breaking + tanh

    def forward_shape(self, shape):
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        n = shape[-1]
        d = round((0.25 + 2 * n) ** 0.5 + 0.5)
        if d * (d - 1) // 2 != n:
            raise ValueError("Input is not a flattened lower-diagonal number")
        return shape[:-1] + (d, d)

    def inverse_shape(self, shape):
        if len(shape) < 2:
            raise ValueError("Too few dimensions on input")
        if shape[-2] != shape[-1]:
            raise ValueError("Input is not square")
        return shape[:-2] + (shape[-1] * (shape[-1] - 1) // 2,)


def _at_least_1d(shape):
    if len(shape) < 1:
        raise ValueError("Too few dimensions on input")
    return shape


class SoftmaxTransform(_Parameterless):
    """Reals to the simplex by ``exp`` and normalizing. Not bijective (adding a constant
    changes nothing; the inverse is ``log``), but nearly coordinate-wise: good for
    optimizing, not for HMC."""
    domain, codomain = constraints.real_vector, constraints.simplex

    def _call(self, x):
        probs = (x - x.max(-1, True)[0]).exp()
        return probs / probs.sum(-1, True)

    def _inverse(self, y):
        return y.log()

    def forward_shape(self, shape):
        return _at_least_1d(shape)

    inverse_shape = forward_shape


class StickBreakingTransform(_Parameterless):
    """K reals to the simplex of K + 1 entries: each entry takes a sigmoid's share of
    the stick left over by the entries before it (offset so that x = 0 maps to the
    centre). Bijective, so fit for HMC; it mixes coordinates."""
    domain, codomain, bijective = constraints.real_vector, constraints.simplex, True

    @staticmethod
    def _offset(x):
        return x.shape[-1] + 1 - x.new_ones(x.shape[-1]).cumsum(-1)

    def _call(self, x):
        z = _clipped_sigmoid(x - self._offset(x).log())
        return _pad_last(z, 0, 1, 1) * _pad_last((1 - z).cumprod(-1), 1, 0, 1)

    def _inverse(self, y):
        y_crop = y[..., :-1]
        offset = y.shape[-1] - y.new_ones(y_crop.shape[-1]).cumsum(-1)
        # (the stick left can round to <= 0 when y[..., -1] ~ 0: keep its log finite)
        left = (1 - y_crop.cumsum(-1)).clamp(min=finfo(y.dtype).tiny)
        return y_crop.log() - left.log() + offset.log()

    def log_abs_det_jacobian(self, x, y):
        x = x - self._offset(x).log()
        # 1 - sigmoid(x) = exp(-x) * sigmoid(x)
        return (-x + tracegrad.nn.functional.logsigmoid(x) + y[..., :-1].log()).sum(-1)

    def forward_shape(self, shape):
        return _at_least_1d(shape)[:-1] + (shape[-1] + 1,)

    def inverse_shape(self, shape):
        return _at_least_1d(shape)[:-1] + (shape[-1] - 1,)


class LowerCholeskyTransform(_Parameterless):
    """Square matrices to lower-triangular ones with a positive (exponentiated)
    diagonal: a Cholesky factor from unconstrained numbers."""
    domain, codomain = constraints.independent(constraints.real, 2), constraints.lower_cholesky

    def _call(self, x):
        return x.tril(-1) + x.diagonal(dim1=-2, dim2=-1).exp().diag_embed()

    def _inverse(self, y):
        return y.tril(-1) + y.diagonal(dim1=-2, dim2=-1).log().diag_embed()


class PositiveDefiniteTransform(_Parameterless):
    """Square matrices to positive-definite ones, ``L L^T`` of a lower Cholesky factor."""
    domain, codomain = constraints.independent(constraints.real, 2), constraints.positive_definite

    def _call(self, x):
        x = LowerCholeskyTransform()(x)
        return x @ x.mT

    def _inverse(self, y):
        return LowerCholeskyTransform().inv(tracegrad.linalg.cholesky(y))


class _Piecewise(Transform):
    """Transforms ``tseq`` applied to pieces of a tensor along ``dim`` (``_split``) and
    the results joined back (``_join``): what CatTransform and StackTransform share."""

    def __init__(self, tseq, dim=0, cache_size=0):
        if not all(isinstance(t, Transform) for t in tseq):
            raise AssertionError("All elements of tseq must be Transform instances")
        if cache_size:
            tseq = [t.with_cache(cache_size) for t in tseq]
        super().__init__(cache_size=cache_size)
        self.transforms, self.dim = list(tseq), dim

    def _check_dim(self, t, what):
        if not -t.dim() <= self.dim < t.dim():
            raise AssertionError(f"dim {self.dim} out of range for {what} with {t.dim()} dimensions")

    def _call(self, x):
        return self._join([t(p) for t, p in zip(self.transforms, self._split(x, "tensor", "x"))])

    def _inverse(self, y):
        return self._join([t.inv(p) for t, p in zip(self.transforms, self._split(y, "tensor", "y"))])

    @property
    def bijective(self):
        return all(t.bijective for t in self.transforms)

    @constraints.dependent_property
    def domain(self):
        return self._constraint([t.domain for t in self.transforms])

    @constraints.dependent_property
    def codomain(self):
        return self._constraint([t.codomain for t in self.transforms])


class CatTransform(_Piecewise):
    """The transforms ``tseq`` applied to consecutive pieces (of ``lengths``, 1 each
    by default) along ``dim``, joined as ``torch.cat`` does."""

    def __init__(self, tseq, dim=0, lengths=None, cache_size=0):
        super().__init__(tseq, dim, cache_size)
        self.lengths = [1] * len(self.transforms) if lengths is None else list(lengths)
        if len(self.lengths) != len(self.transforms):
            raise AssertionError(f"lengths ({len(self.lengths)}) must match transforms ({len(self.transforms)})")

    @lazy_property
    def event_dim(self):
        return max(t.event_dim for t in self.transforms)

    @lazy_property
    def length(self):
        return sum(self.lengths)

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return CatTransform(self.transforms, self.dim, self.lengths, cache_size)

    def _split(self, t, what, name):
        self._check_dim(t, what)
        if t.size(self.dim) != self.length:
            raise AssertionError(f"{name}.size({self.dim}) = {t.size(self.dim)} must equal length {self.length}")
        starts = [sum(self.lengths[:i]) for i in range(len(self.lengths))]
        return [t.narrow(self.dim, s, n) for s, n in zip(starts, self.lengths)]

    def _join(self, pieces):
        return tracegrad.cat(pieces, dim=self.dim)

    def _constraint(self, cseq):
        return constraints.cat(cseq, self.dim, self.lengths)

    def log_abs_det_jacobian(self, x, y):
        xs, ys = self._split(x, "x", "x"), self._split(y, "y", "y")
        terms = [_sum_rightmost(t.log_abs_det_jacobian(a, b), self.event_dim - t.event_dim)
                 for t, a, b in zip(self.transforms, xs, ys)]
        dim = (self.dim - x.dim() if self.dim >= 0 else self.dim) + self.event_dim
        # (joined along dim while it is a batch dim; summed once it is inside the event)
        return tracegrad.cat(terms, dim=dim) if dim < 0 else sum(terms)


class StackTransform(_Piecewise):
    """The transforms ``tseq`` applied to the slices along ``dim``, one each, joined
    as ``torch.stack`` does."""

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return StackTransform(self.transforms, self.dim, cache_size)

    def _split(self, t, what, name):
        self._check_dim(t, what)
        if t.size(self.dim) != len(self.transforms):
            raise AssertionError(f"{name}.size({self.dim}) = {t.size(self.dim)} must equal len(transforms) "
                                 f"{len(self.transforms)}")
        return [t.select(self.dim, i) for i in range(t.size(self.dim))]

    def _join(self, pieces):
        return tracegrad.stack(pieces, dim=self.dim)

    def _constraint(self, cseq):
        return constraints.stack(cseq, self.dim)

    def log_abs_det_jacobian(self, x, y):
        xs, ys = self._split(x, "x", "x"), self._split(y, "y", "y")
        return self._join([t.log_abs_det_jacobian(a, b) for t, a, b in zip(self.transforms, xs, ys)])


class CumulativeDistributionTransform(Transform):
    """``y = distribution.cdf(x)``: the support onto the unit interval (a copula's
    margins); its log-Jacobian is the density, ``distribution.log_prob(x)``."""
    bijective, codomain, sign = True, constraints.unit_interval, +1

    def __init__(self, distribution, cache_size=0):
        super().__init__(cache_size=cache_size)
        self.distribution = distribution

    @property
    def domain(self):
        return self.distribution.support

    def _call(self, x):
        return self.distribution.cdf(x)

    def _inverse(self, y):
        return self.distribution.icdf(y)

    def log_abs_det_jacobian(self, x, y):
        return self.distribution.log_prob(x)

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return CumulativeDistributionTransform(self.distribution, cache_size=cache_size)
