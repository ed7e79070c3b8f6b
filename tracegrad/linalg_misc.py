"""The rest of ``torch.linalg``: products and views under their linalg names (``cross``,
``vecdot``, ``matmul``, ``diagonal``), ``vander``, ``matrix_exp``, ``matrix_rank``,
``cond``, ``tensorinv``, ``tensorsolve`` and ``householder_product``.

Each is composed from existing differentiable operations (no new rules): its gradient is
the derivative of what it computes, as in PyTorch.
"""
import math

from .backend import dtypes as _dt
from .ops import arrays as _arrays
from .ops import compat_tensor as _compat
from .rules import lapack
from .rules import spectral as SP

__all__ = ["cond", "cross", "diagonal", "householder_product", "matmul", "matrix_exp", "matrix_rank",
           "tensorinv", "tensorsolve", "vander", "vecdot"]

_EPS = {"float16": 0.0009765625, "bfloat16": 0.0078125, "float32": 1.1920928955078125e-07,
        "float64": 2.220446049250313e-16}


def _eps(dtype):
    """The machine epsilon of ``dtype``'s real part."""
    name = {"complex64": "float32", "complex128": "float64"}.get(dtype.name, dtype.name)
    return _EPS[name]


def cross(input, other, *, dim=-1):
    return _arrays.linalg_cross(input, other, dim)


def matmul(input, other):
    return input.matmul(other)


def diagonal(A, *, offset=0, dim1=-2, dim2=-1):
    return A.diagonal(offset=offset, dim1=dim1, dim2=dim2)


def vecdot(x, y, *, dim=-1):
    """``sum(conj(x) * y, dim)``, broadcasting ``x`` and ``y``."""
    if not (x.dtype.is_floating_point or x.dtype.is_complex):
        raise RuntimeError(f"linalg.vecdot: Expected a floating point or complex tensor as input. "
                           f"Got {x.dtype.scalar_name}")
    if x.dtype is not y.dtype:
        raise RuntimeError(f"linalg.vecdot: Expected x and y to have the same dtype, but found x of type "
                           f"{x.dtype.scalar_name} and y of type {y.dtype.scalar_name} instead")
    return ((x.conj() if x.is_complex() else x) * y).sum(dim)


def vander(x, N=None):
    """Increasing powers ``x**0 ... x**(N-1)`` along a new last dim (batched), built by a
    cumulative product so that the gradient is finite at zero."""
    n = x.shape[-1] if N is None and x.ndim else N
    if n is None or n <= 1:
        raise RuntimeError("N must be greater than 1.")
    if x.ndim == 0:
        raise RuntimeError("x must be at least one-dimensional.")
    if x.dtype is _dt.bool_:
        x = x.to(_dt.int64)
    cols = x.unsqueeze(-1).expand(tuple(x.shape) + (n - 1,))
    from .ops.shape import cat
    return cat([x.unsqueeze(-1).new_ones(tuple(x.shape) + (1,)), cols.cumprod(-1)], dim=-1)


def matrix_exp(A):
    return _compat.matrix_exp(A)


def matrix_rank(A, tol=None, hermitian=False, *, atol=None, rtol=None):
    """The number of singular values (``hermitian``: |eigenvalues|) above
    ``max(atol, rtol * largest)``; ``rtol`` defaults to ``eps * max(m, n)`` unless only a
    positive ``atol`` is given (then 0). The older overload's ``tol`` is ``atol`` with
    ``rtol = 0``."""
    from .linalg import _check
    if A.dtype not in (_dt.float32, _dt.float64, _dt.complex64, _dt.complex128):
        raise RuntimeError("This function doesn't handle types other than float and double")
    if tol is not None:
        atol, rtol = tol, 0.0
    _check(A, "linalg.matrix_rank", square=hermitian)
    m, n = A.shape[-2:]
    if rtol is None:
        default = _eps(A.dtype) * max(m, n)
        if atol is None:
            rtol = default
        elif hasattr(atol, "shape"):  # per matrix: 0 where atol > 0
            rtol = (atol <= 0).to(_dt.float64) * default
        else:
            rtol = 0.0 if atol > 0 else default
    A = A.detach()
    s = SP.eigh(A, upper=False)[0].abs() if hermitian else SP.singular_values(A)
    if s.shape[-1] == 0:
        return s.sum(-1).to(_dt.int64)
    largest = s.amax(-1, keepdim=True)
    limit = largest * (rtol.unsqueeze(-1) if hasattr(rtol, "shape") else rtol)
    if atol is not None:
        limit = limit.clamp(min=(atol.unsqueeze(-1) if hasattr(atol, "shape") else atol))
    return (s > limit).sum(-1)


_COND_ORDERS = (None, 2, -2, "fro", "nuc", 1, -1, math.inf, -math.inf)


def cond(A, p=None):
    """The condition number in the ``p`` norm: the ratio of the extreme singular values
    (``p`` None, 2, -2; any shape) or ``norm(A) * norm(A^{-1})`` (square; inf where A is
    singular, as PyTorch)."""
    from . import linalg
    if p not in _COND_ORDERS:
        raise RuntimeError(f"linalg.cond got an invalid norm type: {p}")
    if p in (None, 2, -2):
        linalg._check(A, "linalg.svd", square=False)
        s = SP.singular_values(A)
        big, small = s[..., 0], s[..., -1]
        return small / big if p == -2 else big / small
    linalg._check(A, f"linalg.cond(ord={p})")
    if p == "nuc":  # sum(s) * sum(1 / s), as PyTorch (finite for a numerically singular A)
        s = SP.singular_values(A)
        return s.sum(-1) * (1 / s).sum(-1)
    from .linalg_solvers import inv_ex
    from .rules.arith import where
    inverse, info = inv_ex(A)
    singular = info != 0
    inverse = where(singular.unsqueeze(-1).unsqueeze(-1), A.new_zeros(()), inverse)
    return where(singular, math.inf, linalg.matrix_norm(A, p) * linalg.matrix_norm(inverse, p))


def tensorinv(A, ind=2):
    """The inverse of ``A`` read as a square matrix ``prod(shape[:ind]) x prod(shape[ind:])``,
    shaped ``shape[ind:] + shape[:ind]``."""
    if ind <= 0:
        raise RuntimeError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    rows, cols = tuple(A.shape[:ind]), tuple(A.shape[ind:])
    p, q = math.prod(rows), math.prod(cols)
    if p != q:
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[ind:]) == "
                           f"prod(self.shape[:ind]), but got {q} != {p}")
    from . import linalg
    with lapack.reporting_as("inv"):
        return linalg.inv(A.reshape(p, q)).reshape(cols + rows)


def tensorsolve(A, B, dims=None):
    """``X`` with ``tensordot(A, X, X.ndim) = B``: ``A`` (its ``dims`` moved to the end
    first) read as a ``B.numel() x rest`` matrix."""
    from . import linalg
    if dims is not None:
        dims = [d % A.ndim for d in dims]
        order = [d for d in range(A.ndim) if d not in dims] + dims
        A = A.permute(*order)
    rest = tuple(A.shape[B.ndim:])
    p, q = math.prod(A.shape[:B.ndim]), math.prod(rest)
    if p != q:
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[other.ndim:]) == "
                           f"prod(self.shape[:other.ndim]), but got {q} != {p}")
    return linalg.solve(A.reshape(p, q), B.reshape(p)).reshape(rest)


def householder_product(A, tau):
    """The first ``n`` columns of ``H_1 ... H_k``, ``H_i = I - tau_i v_i v_i^H`` with ``v_i``
    the i-th column of ``A`` below the diagonal and a 1 on it (LAPACK's orgqr)."""
    fn = "torch.linalg.householder_product"
    if not (A.dtype.is_floating_point or A.dtype.is_complex):
        raise NotImplementedError(f'"orgqr_cpu" not implemented for \'{A.dtype.scalar_name}\'')
    if A.ndim < 2:
        raise RuntimeError(f"{fn}: input must have at least 2 dimensions.")
    m, n = A.shape[-2:]
    k = tau.shape[-1] if tau.ndim else 1
    if m < n:
        raise RuntimeError(f"{fn}: input.shape[-2] must be greater than or equal to input.shape[-1]")
    if n < k:
        raise RuntimeError(f"{fn}: input.shape[-1] must be greater than or equal to tau.shape[-1]")
    if tau.ndim != A.ndim - 1:
        raise RuntimeError(f"{fn}: Expected tau to have one dimension less than input, but got tau.ndim "
                           f"equal to {tau.ndim} and input.ndim is equal to {A.ndim}")
    if tau.dtype is not A.dtype:
        raise RuntimeError(f"{fn}: tau dtype {tau.dtype.scalar_name} does not match input dtype "
                           f"{A.dtype.scalar_name}")
    return householder_q(A, tau)[..., :, :n]


def householder_q(A, tau):
    """The full ``m x m`` product ``H_1 ... H_k`` of the reflectors stored in ``A`` and ``tau``."""
    from .runtime.creation import eye
    m, k = A.shape[-2], tau.shape[-1]
    identity = eye(m, dtype=A.dtype, device=A.device)
    v = A[..., :, :k].tril(-1) + identity[:, :k]
    q = identity.expand(tuple(A.shape[:-2]) + (m, m))
    for i in range(k):
        vi = v[..., :, i:i + 1]
        q = q - (q @ vi) * tau[..., i:i + 1].unsqueeze(-1) @ vi.mH
    return q


def ormqr(input, tau, other, left=True, transpose=False):
    """``op(Q) other`` (``left=False``: ``other op(Q)``) for the full ``Q`` of a geqrf
    result; ``transpose``: ``op(Q) = Q^H``."""
    fn = "torch.ormqr"
    if input.ndim < 2:
        raise RuntimeError(f"{fn}: input must have at least 2 dimensions.")
    if other.ndim < 2:
        raise RuntimeError(f"{fn}: other must have at least 2 dimensions.")
    q = householder_q(input, tau)
    q = q.mH if transpose else q
    return q @ other if left else other @ q


def geqrf(input):
    """``(a, tau)``: LAPACK's Householder QR (R on and above the diagonal of ``a``, the
    reflectors below it). Not differentiable, as in PyTorch."""
    from .ops._args import on_samples
    if input.ndim < 2:
        raise RuntimeError("torch.geqrf: input must have at least 2 dimensions.")
    return on_samples(_geqrf, input, leading=True)  # (under vmap: every sample's matrices)


def _geqrf(input):
    from .runtime.tensor import wrap
    from .backend import namespace_of
    xp = namespace_of(input._data)
    m, n = input.shape[-2:]
    if input.numel() == 0:
        return wrap(xp.array(input._data, copy=True)), wrap(xp.zeros(tuple(input.shape[:-2]) + (min(m, n),),
                                                                       dtype=input._data.dtype))
    h, tau = xp.linalg.qr(input._data, mode="raw")
    return wrap(xp.ascontiguousarray(xp.swapaxes(h, -1, -2))), wrap(tau)
