"""Ready-made parametrizations (``torch.nn.utils.parametrizations``): ``orthogonal``,
``weight_norm`` and ``spectral_norm``, each a small Module registered through
:func:`.parametrize.register_parametrization`, so ``module.weight`` is recomputed (and
differentiated) on every access.
"""
from enum import Enum, auto

from ...runtime.grad_mode import no_grad
from ...runtime.tensor import Tensor
from .. import functional as F
from ..modules.module import Module
from . import parametrize
from .spectral_norm import _transposed_conv
from .weight_norm import _weight_norm, norm_except_dim

__all__ = ["orthogonal", "spectral_norm", "weight_norm"]


# -- orthogonal -------------------------------------------------------------------------------

def _eye(k, like):
    from ...runtime.creation import eye
    return eye(k, dtype=like.dtype, device=like.device)


def _is_orthogonal(Q):
    from ...runtime.type_info import finfo
    n, k = Q.size(-2), Q.size(-1)
    eps = 10.0 * n * finfo(Q.dtype).eps
    return bool((Q.mH @ Q).allclose(_eye(k, Q), atol=eps))


def _make_orthogonal(A):
    """The Q of ``A = QR`` (``A`` tall) with ``diag(R)`` made real and non-negative."""
    from ...linalg import householder_product
    X, tau = A.geqrf()
    Q = householder_product(X, tau)
    return Q * X.diagonal(dim1=-2, dim2=-1).sgn().unsqueeze(-2)


class _OrthMaps(Enum):
    matrix_exp = auto()
    cayley = auto()
    householder = auto()


class _Orthogonal(Module):
    """Maps any (batch of) ``n x k`` matrix to one with orthonormal columns (rows if
    ``n < k``). ``matrix_exp`` / ``cayley``: of the skew-symmetric ``A = L - L^H`` built from
    the lower triangle; ``householder``: a product of reflectors stored below the diagonal.
    With ``use_trivialization``, the result is multiplied by an orthogonal ``base``, which
    ``right_inverse`` sets (so any orthogonal value is reachable from original ``-I``)."""

    def __init__(self, weight, orthogonal_map, *, use_trivialization=True):
        super().__init__()
        if weight.is_complex() and orthogonal_map == _OrthMaps.householder:
            raise ValueError("The householder parametrization does not support complex tensors.")
        self.shape = weight.shape
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, X):
        from ...linalg import householder_product, solve
        n, k = X.size(-2), X.size(-1)
        transposed = n < k
        if transposed:
            X = X.mT
            n, k = k, n
        if self.orthogonal_map in (_OrthMaps.matrix_exp, _OrthMaps.cayley):
            X = X.tril()
            if n != k:
                from ...ops.shape import cat
                X = cat([X, X.new_zeros(n, n - k).expand(*X.shape[:-2], -1, -1)], dim=-1)
            A = X - X.mH
            if self.orthogonal_map == _OrthMaps.matrix_exp:
                Q = A.matrix_exp()
            else:  # Cayley: (I - A/2)^-1 (I + A/2)
                Id = _eye(n, A)
                Q = solve(Id - 0.5 * A, Id + 0.5 * A)
            if n != k:
                Q = Q[..., :k]
        else:
            A = X.tril(diagonal=-1)
            tau = 2.0 / (1.0 + (A * A).sum(dim=-2))
            Q = householder_product(A, tau)
            # the diagonal of X (kept at +-1) flips the sign of each column
            Q = Q * X.diagonal(dim1=-2, dim2=-1).int().unsqueeze(-2)
        if hasattr(self, "base"):
            Q = self.base @ Q
        if transposed:
            Q = Q.mT
        return Q

    def right_inverse(self, Q):
        with no_grad():
            return self._right_inverse(Q)

    def _right_inverse(self, Q):
        if Q.shape != self.shape:
            raise ValueError(f"Expected a matrix or batch of matrices of shape {self.shape}. "
                             f"Got a tensor of shape {Q.shape}.")
        Q_init = Q
        n, k = Q.size(-2), Q.size(-1)
        transpose = n < k
        if transpose:
            Q = Q.mT
            n, k = k, n
        if not hasattr(self, "base"):
            if self.orthogonal_map in (_OrthMaps.cayley, _OrthMaps.matrix_exp):
                raise NotImplementedError("It is not possible to assign to the matrix exponential or the "
                                          "Cayley parametrizations when use_trivialization=False.")
            # householder: the reflectors of Q's QR, with the signs of R's diagonal on it
            A, tau = Q.geqrf()
            diagonal = A.diagonal(dim1=-2, dim2=-1)
            diagonal.sign_()
            diagonal[tau == 0.0] *= -1
            return A.mT if transpose else A
        if n == k:
            Q = Q.clone() if _is_orthogonal(Q) else _make_orthogonal(Q)
        else:  # complete the columns to a square orthogonal base
            from ...ops.shape import cat
            from ...runtime.creation import randn
            N = randn(*(tuple(Q.size()[:-2]) + (n, n - k)), dtype=Q.dtype, device=Q.device)
            Q = _make_orthogonal(cat([Q, N], dim=-1))
        self.base = Q
        neg_Id = Q_init.new_zeros(Q_init.shape)
        neg_Id.diagonal(dim1=-2, dim2=-1).fill_(-1.0)  # forward(-I) is the identity (times base)
        return neg_Id


def orthogonal(module, name="weight", orthogonal_map=None, *, use_trivialization=True):
    """Constrain ``module.<name>`` (a matrix, or a batch of them) to orthonormal columns (or
    rows, for a wide matrix). ``orthogonal_map``: ``"matrix_exp"``, ``"cayley"`` or
    ``"householder"`` (default: ``matrix_exp`` for square or complex matrices, else
    ``householder``). The initial value is the tensor itself if orthogonal, else the Q of
    its QR decomposition."""
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.ndim < 2:
        raise ValueError(f"Expected a matrix or batch of matrices. Got a tensor of {weight.ndim} dimensions.")
    if orthogonal_map is None:
        square = weight.size(-2) == weight.size(-1)
        orthogonal_map = "matrix_exp" if square or weight.is_complex() else "householder"
    orth_enum = getattr(_OrthMaps, orthogonal_map, None)
    if orth_enum is None:
        raise ValueError('orthogonal_map has to be one of "matrix_exp", "cayley", "householder". '
                         f"Got: {orthogonal_map}")
    orth = _Orthogonal(weight, orth_enum, use_trivialization=use_trivialization)
    parametrize.register_parametrization(module, name, orth, unsafe=True)
    return module


# -- weight_norm ------------------------------------------------------------------------------

class _WeightNorm(Module):
    """``(g, v) -> g * v / ||v||``; originals ``original0 = g``, ``original1 = v``."""

    def __init__(self, dim=0):
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g, weight_v):
        return _weight_norm(weight_v, weight_g, self.dim)

    def right_inverse(self, weight):
        return norm_except_dim(weight, 2, self.dim), weight


def weight_norm(module, name="weight", dim=0):
    """Weight normalization as a parametrization: ``module.<name> = g * v / ||v||`` with
    ``g = parametrizations.<name>.original0`` and ``v = ...original1``. State dicts of the
    hook version (``<name>_g``, ``<name>_v``) still load."""
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)

    def _weight_norm_compat_hook(state_dict, prefix, local_metadata, strict, missing_keys,
                                 unexpected_keys, error_msgs):
        g_key, v_key = f"{prefix}{name}_g", f"{prefix}{name}_v"
        if g_key in state_dict and v_key in state_dict:
            state_dict[f"{prefix}parametrizations.{name}.original0"] = state_dict.pop(g_key)
            state_dict[f"{prefix}parametrizations.{name}.original1"] = state_dict.pop(v_key)

    module._register_load_state_dict_pre_hook(_weight_norm_compat_hook)
    return module


# -- spectral_norm ----------------------------------------------------------------------------

class _SpectralNorm(Module):
    """``W -> W / sigma(W)``, ``sigma`` from the power method on buffers ``_u``, ``_v``
    (one iteration per access in training mode; 15 on registration). A vector is just
    normalized."""

    def __init__(self, weight, n_power_iterations=1, dim=0, eps=1e-12):
        super().__init__()
        ndim = weight.ndim
        if dim >= ndim or dim < -ndim:
            raise IndexError(f"Dimension out of range (expected to be in range of [-{ndim}, {ndim - 1}] "
                             f"but got {dim})")
        if n_power_iterations <= 0:
            raise ValueError("Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            weight_mat = self._reshape_weight_to_matrix(weight)
            h, w = weight_mat.size()
            with no_grad():
                u = weight_mat.new_empty(h).normal_(0, 1)
                v = weight_mat.new_empty(w).normal_(0, 1)
                self.register_buffer("_u", F.normalize(u, dim=0, eps=self.eps))
                self.register_buffer("_v", F.normalize(v, dim=0, eps=self.eps))
            self._power_method(weight_mat, 15)

    def _reshape_weight_to_matrix(self, weight):
        if weight.ndim <= 1:
            raise AssertionError(f"Expected weight to have more than 1 dimension, got {weight.ndim}")
        if self.dim != 0:
            weight = weight.permute(self.dim, *(d for d in range(weight.dim()) if d != self.dim))
        return weight.flatten(1)

    def _power_method(self, weight_mat, n_power_iterations):
        """Refine ``_u``, ``_v`` in place (kept in place for module replicas sharing them)."""
        if weight_mat.ndim <= 1:
            raise AssertionError(f"Expected weight_mat to have more than 1 dimension, got {weight_mat.ndim}")
        with no_grad():
            for _ in range(n_power_iterations):
                self._u = F.normalize(weight_mat.mv(self._v), dim=0, eps=self.eps, out=self._u)
                self._v = F.normalize(weight_mat.H.mv(self._u), dim=0, eps=self.eps, out=self._v)

    def forward(self, weight):
        if weight.ndim == 1:
            return F.normalize(weight, dim=0, eps=self.eps)
        weight_mat = self._reshape_weight_to_matrix(weight)
        if self.training:
            self._power_method(weight_mat, self.n_power_iterations)
        # clones, so that a later in-place iteration does not invalidate this graph
        u, v = self._u.clone(), self._v.clone()
        sigma = u.vdot(weight_mat.mv(v))
        return weight / sigma

    def right_inverse(self, value):
        return value


def spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    """Spectral normalization as a parametrization: ``module.<name>`` is divided by its
    estimated largest singular value on every access. ``dim`` (the output dim) defaults
    to 0, or 1 for transposed convolutions."""
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        dim = 1 if _transposed_conv(module) else 0
    parametrize.register_parametrization(module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module
