"""``torch.svd_lowrank`` and ``torch.pca_lowrank``: a randomized truncated SVD and PCA
(Halko, Martinsson and Tropp, 2009: the range finder of Algorithm 4.4 with ``niter``
power iterations, then the SVD of the small projected matrix, Algorithm 5.1).

Both are compositions, not primitives. Every step is an op that is differentiable
already -- a Gaussian sketch drawn from tracegrad's own generator (so
``tracegrad.manual_seed`` repeats a result), matrix products, ``linalg.qr`` and
``linalg.svd`` -- so gradients flow through U, S and V as in PyTorch, and the rule table
gains no entry. A sparse COO ``A`` is only ever the left factor of ``torch.sparse.mm``
(``A^H X`` uses the transposed sparse matrix, never ``X^H A``), so it is not densified and
a sparse leaf gets its sparse gradient; a mean ``M`` is always dense.
"""
from .. import linalg as _LA
from ..backend import dtypes as _dt
from ..rules.decomp import mH
from ..runtime.creation import randn
from ..runtime.tensor import Tensor
from .linalg import matmul
from .reduction import mean
from .shape import broadcast_to, reshape


def _check_tensor(A, fn):
    if not isinstance(A, Tensor) and not getattr(A, "is_traced_tensor", False):
        raise TypeError(f"{fn}(): argument 'A' (position 1) must be Tensor, not {type(A).__name__}")
    if A.ndim < 2:
        raise ValueError(f"{fn}(): expected a matrix or a batch of matrices of shape (*, m, n), "
                         f"but got a {A.ndim}-D tensor")
    return A.shape[-2], A.shape[-1]


def _is_sparse(A):
    return getattr(A, "is_sparse", False)


def _adjoint(A):
    """``A^H``: a dense view, or the transposed sparse matrix."""
    if not _is_sparse(A):
        return mH(A)
    if A.ndim != 2 or A.dtype.is_complex:
        raise NotImplementedError(f"tracegrad: svd_lowrank/pca_lowrank take a sparse A only as a real 2-D "
                                  f"matrix (got size {tuple(A.shape)}, dtype {A.dtype}); call .to_dense() first")
    return A.t()


def _times(A, M, X):
    """``(A - M) @ X`` without forming ``A - M`` (``A`` dense or sparse, ``M`` dense or None)."""
    if _is_sparse(A):
        # (imported here: tracegrad.sparse imports this package, so not while it loads)
        from ..sparse import mm as sparse_mm
        from ..sparse.arith import _no_dense_leaf_grad
        _no_dense_leaf_grad(A, "svd_lowrank")  # (PyTorch's gradient there is dense, not the leaf's layout)
        AX = sparse_mm(A, X)
    else:
        AX = matmul(A, X)
    return AX if M is None else AX - matmul(M, X)


def _orth(X):
    return _LA.qr(X).Q


def _sketch_dtype(A):
    """The Gaussian test matrix's dtype: A's if float or complex, else float32 (PyTorch's)."""
    d = A.dtype
    return d if d.is_complex or d in (_dt.float16, _dt.float32, _dt.float64) else _dt.float32


def _range_basis(A, Ah, M, Mh, q, niter):
    """Orthonormal ``Q`` (``min(m, q)`` columns) with ``Q Q^H (A - M) ≈ A - M``: the span of
    ``(A - M) R`` for a Gaussian ``R``, sharpened by ``niter`` rounds of power iteration,
    re-orthonormalized after every product so that small singular values survive."""
    R = randn(A.shape[-1], q, dtype=_sketch_dtype(A), device=A.device)
    Q = _orth(_times(A, M, R))
    for _ in range(niter):
        Q = _orth(_times(Ah, Mh, Q))
        Q = _orth(_times(A, M, Q))
    return Q


def _svd_lowrank(A, q, niter, M):
    m, n = A.shape[-2], A.shape[-1]
    if M is not None:
        M = broadcast_to(M, A.shape)
    Ah, Mh = _adjoint(A), (None if M is None else mH(M))
    if m < n:  # work on the tall A^H; its U and V are A's V and U
        A, Ah, M, Mh = Ah, A, Mh, M
    Q = _range_basis(A, Ah, M, Mh, q, niter)
    B = mH(_times(Ah, Mh, Q))  # Q^H (A - M), with the sparse A on the left of its product
    U, S, Vh = _LA.svd(B, full_matrices=False)
    U, V = matmul(Q, U), mH(Vh)
    return (V, S, U) if m < n else (U, S, V)


def svd_lowrank(A, q=6, niter=2, M=None):
    """``(U, S, V)`` with ``A - M ≈ U diag(S) V^H`` (``M`` broadcast to A's shape; none by
    default) for a matrix, a batch of matrices or a 2-D sparse COO matrix; ``min(q, m, n)``
    singular triplets. Randomized: seed with ``tracegrad.manual_seed`` to repeat a result.
    As in PyTorch, ``q`` and ``niter`` are not range-checked here (a negative ``niter``
    means no power iteration); ``None`` means the defaults 6 and 2."""
    _check_tensor(A, "svd_lowrank")
    return _svd_lowrank(A, 6 if q is None else q, 2 if niter is None else niter, M)


def pca_lowrank(A, q=None, center=True, niter=2):
    """``svd_lowrank`` of ``A`` with its column means subtracted (unless ``center=False``):
    V's columns are the principal directions and ``S**2 / (m - 1)`` the variances along
    them. ``q`` defaults to ``min(6, m, n)`` and must lie in ``[0, min(m, n)]``."""
    m, n = _check_tensor(A, "pca_lowrank")
    if q is None:
        q = min(6, m, n)
    elif not (q >= 0 and q <= min(m, n)):
        raise ValueError(f"q(={q}) must be non-negative integer and not greater than min(m, n)={min(m, n)}")
    if not niter >= 0:
        raise ValueError(f"niter(={niter}) must be non-negative integer")
    if not center:
        return _svd_lowrank(A, q, niter, None)
    if not _is_sparse(A):
        return _svd_lowrank(A - mean(A, dim=(-2,), keepdim=True), q, niter, None)
    if A.ndim != 2:
        raise ValueError("pca_lowrank input is expected to be 2-dimensional tensor")
    from ..sparse import sum as sparse_sum  # (see _times)
    column_means = reshape(sparse_sum(A, dim=(0,)).to_dense(), (1, n)) / m
    return _svd_lowrank(A, q, niter, column_means)  # the mean stays a separate dense M


FUNCTIONS = {"svd_lowrank": svd_lowrank, "pca_lowrank": pca_lowrank}
METHODS = {}
