"""``torch.linalg``: PyTorch's signatures, checks and named results over the table's
decomposition rules (:mod:`tracegrad.rules.decomp`, :mod:`tracegrad.rules.spectral`).
The lu family, triangular solves, lstsq and the ``_ex`` variants are in
:mod:`tracegrad.linalg_solvers`, the remaining functions in :mod:`tracegrad.linalg_misc`;
all are re-exported here, and take ``out=`` through :mod:`tracegrad.ops.out`. Singular or
indefinite operands raise :class:`LinAlgError` (a RuntimeError) with PyTorch's messages.

The functions that read one triangle of a symmetric operand give PyTorch's gradient:
``eigh`` and ``eigvalsh`` the Hermitian one, ``cholesky`` and ``cholesky_ex`` of a real
matrix the symmetric one -- ``(G + G^H) / 2`` of the rules' own ``G``, which is the
derivative of what they compute and so lives on that triangle (see
:func:`_hermitian_gradient`). A symmetric matrix that is itself a parameter -- a learned
covariance -- stays symmetric under gradient descent, as in PyTorch. ``pinv(hermitian=
True)`` and a complex ``cholesky`` keep the rules' gradient (PyTorch's is not Hermitian
there either). The two agree for every symmetric parametrisation of the operand (``A = B
@ B.mT``); the tape and AST modes, which differentiate NumPy's functions, keep the
triangle's. Gradients through eigenvectors or singular vectors are undefined at
repeated eigen/singular values (nan there, as PyTorch gives inf/nan); eigen/singular
values alone keep finite gradients.
"""
import math

from .ops._args import wrap_dim, wrap_dims
from .ops.return_types import _structseq
from .rules import decomp as D
from .rules import matrix_functions as MF
from .rules import reduce as R
from .rules import shape as SH
from .rules import spectral as SP
from .rules.complex_ import is_complex
from .rules.unary import abs as _abs

__all__ = [
    "LinAlgError",
    "cholesky",
    "cholesky_ex",
    "cond",
    "cross",
    "diagonal",
    "householder_product",
    "inv_ex",
    "ldl_factor",
    "ldl_factor_ex",
    "ldl_solve",
    "lstsq",
    "lu",
    "lu_factor",
    "lu_factor_ex",
    "lu_solve",
    "matmul",
    "matrix_exp",
    "matrix_rank",
    "solve_ex",
    "solve_triangular",
    "tensorinv",
    "tensorsolve",
    "vander",
    "vecdot",
    "det",
    "eig",
    "eigh",
    "eigvals",
    "eigvalsh",
    "inv",
    "matrix_norm",
    "matrix_power",
    "multi_dot",
    "norm",
    "pinv",
    "qr",
    "slogdet",
    "solve",
    "svd",
    "svdvals",
    "vector_norm",
]

linalg_slogdet = _structseq("linalg_slogdet", ["sign", "logabsdet"])
linalg_eigh = _structseq("linalg_eigh", ["eigenvalues", "eigenvectors"])
linalg_eig = _structseq("linalg_eig", ["eigenvalues", "eigenvectors"])
linalg_svd = _structseq("linalg_svd", ["U", "S", "Vh"])
linalg_qr = _structseq("linalg_qr", ["Q", "R"])


def _check(A, fn, square=True, name="A"):
    """PyTorch's checks: a floating or complex Tensor, at least 2-D, square if asked."""
    dtype = A.dtype
    if not (dtype.is_floating_point or dtype.is_complex):
        raise RuntimeError(f"{fn}: Expected a floating point or complex tensor as input. "
                           f"Got {dtype.scalar_name}")
    if A.ndim < 2:
        raise RuntimeError(f"{fn}: The input tensor {name} must have at least 2 dimensions.")
    if square and A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"{fn}: {name} must be batches of square matrices, but they are "
                           f"{A.shape[-2]} by {A.shape[-1]} matrices")
    return A


def inv(A):
    return D.inv(_check(A, "linalg.inv"))


def det(A):
    return D.det(_check(A, "linalg.det"))


def slogdet(A):
    return linalg_slogdet(*D.slogdet(_check(A, "linalg.slogdet")))


def solve(A, B, *, left=True):
    """``A X = B`` (``left=False``: ``X A = B``); ``B`` is a (batch of) vector(s) when it is
    1-D or shaped ``A.shape[:-1]``, as PyTorch decides."""
    _check(A, "linalg.solve")
    if A.dtype is not B.dtype:
        raise RuntimeError(f"linalg.solve: Expected A and B to have the same dtype, but found "
                           f"A of type {A.dtype.scalar_name} and B of type {B.dtype.scalar_name} instead")
    vector = B.ndim == 1 or (B.ndim == A.ndim - 1 and tuple(B.shape) == tuple(A.shape[:-1]))
    if vector:
        x = D.solve(A if left else D.mT(A), SH.unsqueeze(B, dim=B.ndim))
        return SH.reshape(x, shape=tuple(x.shape[:-1]))
    return D.solve(A, B) if left else D.solve_right(B, A)


def _symmetric_gradient(A):
    """:func:`_hermitian_gradient` for a real ``A`` (``cholesky``'s: PyTorch's gradient of a
    complex Cholesky factorisation is not Hermitian, and stays the rule's)."""
    return A if A.is_complex() else _hermitian_gradient(A)


def _hermitian_gradient(A):
    """``A`` (the same values) whose gradient is the Hermitian part ``(G + G^H) / 2`` of
    the gradient ``G`` it receives: what PyTorch returns for the functions that read one
    triangle of a Hermitian operand, whose own derivative lives on that triangle. Where
    ``A`` does not require grad, ``A`` itself. An entry whose symmetric part is not finite
    (garbage in the triangle the function does not read) keeps its value and passes no
    gradient."""
    if not A.requires_grad:
        return A
    sym = (A + A.mH) * 0.5
    change = sym - sym.detach()  # (0, with sym's gradient)
    return A.detach() + change.where(sym.isfinite(), 0.0)


def cholesky(A, *, upper=False):
    return D.cholesky(_symmetric_gradient(_check(A, "linalg.cholesky")), upper=upper)


def _uplo(UPLO):
    if UPLO not in ("L", "U"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    return UPLO == "U"


def eigh(A, UPLO="L"):
    upper = _uplo(UPLO)
    return linalg_eigh(*SP.eigh_as_lapack(_hermitian_gradient(_check(A, "linalg.eigh")), upper=upper))


def eigvalsh(A, UPLO="L"):
    upper = _uplo(UPLO)
    return SP.eigh(_hermitian_gradient(_check(A, "linalg.eigvalsh")), upper=upper)[0]


def eig(A):
    return linalg_eig(*SP.eig(_check(A, "linalg.eig")))


def eigvals(A):
    return SP.eig(_check(A, "linalg.eigvals"))[0]


def svd(A, full_matrices=True, *, driver=None):
    return linalg_svd(*SP.svd_as_lapack(_check(A, "linalg.svd", square=False), full_matrices=full_matrices))


def svdvals(A, *, driver=None):
    return SP.singular_values(_check(A, "linalg.svdvals", square=False))


def pinv(A, *, atol=None, rtol=None, hermitian=False):
    _check(A, "linalg.pinv", square=hermitian)
    return MF.pinv(A, rtol=rtol, atol=0.0 if atol is None else float(atol), hermitian=hermitian)


def qr(A, mode="reduced"):
    """``(Q, R)``; ``mode="r"`` gives an empty Q, as PyTorch."""
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of 'reduced' "
                           "(default), 'r', or 'complete'")
    q, r = D.qr(_check(A, "linalg.qr", square=False), mode="complete" if mode == "complete" else "reduced")
    if mode == "r":
        from .runtime.creation import empty
        q = empty(0, dtype=A.dtype)
    return linalg_qr(q, r)


def matrix_power(A, n):
    return MF.matrix_power(_check(A, "linalg.matrix_power"), int(n))


def multi_dot(tensors):
    tensors = list(tensors)
    if len(tensors) < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {len(tensors)}")
    return MF.multi_dot(tensors)


# -- norms ------------------------------------------------------------------------------------------

def _cast(x, dtype):
    return x if dtype is None else x.to(dtype)


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None):
    x = _cast(x, dtype)
    if not (x.dtype.is_floating_point or x.dtype.is_complex):
        raise RuntimeError(f"linalg.vector_norm: Expected a floating point or complex tensor as input. "
                           f"Got {x.dtype.scalar_name}")
    dims = None if dim is None else wrap_dims(dim, x.ndim)
    if x.ndim == 0:
        dims = None
    p = float(ord)
    p = int(p) if p.is_integer() else p
    mag = _abs(x) if is_complex(x) else x
    return R.vector_norm(mag, ord=p, dim=dims, keepdim=keepdim)


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None):
    A = _check(_cast(A, dtype), "linalg.matrix_norm", square=False)
    if ord not in ("fro", "nuc", 1, -1, 2, -2, math.inf, -math.inf):
        raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
    if len(dim) != 2:
        raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got {' '.join(map(str, dim))}")
    dims = tuple(wrap_dim(d, A.ndim) for d in dim)
    return MF.matrix_norm(A, ord, dims, keepdim)


def norm(A, ord=None, dim=None, keepdim=False, *, dtype=None):
    """A vector norm (``dim`` an int, or a 1-D ``A`` ...) or a matrix norm (``dim`` a pair,
    or a 2-D ``A`` with ``ord`` given); with neither ``ord`` nor ``dim``, the 2-norm of
    every element."""
    if dim is not None:
        dims = (dim,) if isinstance(dim, int) else tuple(dim)
        if len(dims) not in (1, 2):
            raise RuntimeError(f"linalg.norm: If dim is specified, it must be of length 1 or 2. Got {list(dims)}")
    if isinstance(ord, str):  # ('fro', 'nuc': matrix norms only, as in PyTorch)
        if dim is None and A.ndim > 2:
            raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. "
                               f"Got {A.ndim}D.")
        if dim is not None and len(dims) != 2:
            raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got {' '.join(map(str, dims))}")
        return matrix_norm(A, ord, (-2, -1) if dim is None else dims, keepdim, dtype=dtype)
    if dim is not None:
        if len(dims) == 2:
            return matrix_norm(A, "fro" if ord is None else ord, dims, keepdim, dtype=dtype)
        return vector_norm(A, 2 if ord is None else ord, dims, keepdim, dtype=dtype)
    if ord is None:
        return vector_norm(A, 2, None, keepdim, dtype=dtype)
    if A.ndim == 2:
        return matrix_norm(A, ord, (-2, -1), keepdim, dtype=dtype)
    if A.ndim == 1:
        return vector_norm(A, ord, None, keepdim, dtype=dtype)
    raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. "
                       f"Got {A.ndim}D.")


# -- the rest of torch.linalg, and out= -------------------------------------------------------------

from . import linalg_solvers as _solvers  # noqa: E402  (they call back into this module)
from . import linalg_ldl as _ldl  # noqa: E402
from . import linalg_misc as _misc  # noqa: E402
from .ops import out as _out  # noqa: E402
from .ops import return_types as _return_types  # noqa: E402

LinAlgError = _solvers.LinAlgError


from .linalg_ldl import ldl_factor, ldl_factor_ex, ldl_solve  # noqa: E402
for _name in ("solve_triangular", "lu_factor", "lu_factor_ex", "lu", "lu_solve", "lstsq", "inv_ex",
              "cholesky_ex", "solve_ex"):
    globals()[_name] = getattr(_solvers, _name)
for _name in _misc.__all__:
    globals()[_name] = getattr(_misc, _name)

# Named results, known to ``out=`` (which answers ``linalg_qr_out`` and the like).
for _cls in (linalg_slogdet, linalg_eigh, linalg_eig, linalg_svd, linalg_qr, _solvers.linalg_lu_factor,
             _solvers.linalg_lu_factor_ex, _solvers.linalg_lu, _solvers.linalg_inv_ex,
             _solvers.linalg_cholesky_ex, _solvers.linalg_solve_ex, _ldl.linalg_ldl_factor,
             _ldl.linalg_ldl_factor_ex, _solvers.triangular_solve_result, _solvers.lu_unpack_result):
    setattr(_return_types, _cls.__name__, _cls)

# PyTorch's linalg functions want out of the result's very dtype. Its errors for out= with
# grad name the ATen operator (``linalg_inv_ex``); its composite functions accept grad there.
_NOT_OUT = {"LinAlgError", "diagonal", "vander", "matrix_exp", "lstsq"}
_COMPOSITE = {"matrix_norm", "norm", "cond", "matrix_rank", "tensorinv", "tensorsolve", "eigvals"}
_ATEN = {"inv": "linalg_inv_ex", "inv_ex": "linalg_inv_ex", "solve": "_linalg_solve_ex",
         "solve_ex": "_linalg_solve_ex", "cholesky": "linalg_cholesky_ex", "cholesky_ex": "linalg_cholesky_ex",
         "det": "_linalg_det", "slogdet": "_linalg_slogdet", "lu_factor": "linalg_lu_factor_ex",
         "lu_factor_ex": "linalg_lu_factor_ex", "eigh": "_linalg_eigh", "eigvalsh": "_linalg_eigh",
         "svd": "_linalg_svd", "svdvals": "_linalg_svd", "matrix_power": "matmul", "multi_dot": "mm",
         "vecdot": "sum", "matmul": "matmul", "ldl_factor": "linalg_ldl_factor_ex"}
for _name in __all__:
    if _name not in _NOT_OUT:
        globals()[_name] = _out.accepts_out(globals()[_name], _ATEN.get(_name, "linalg_" + _name), _out.SAME,
                                            refuse_grad=_name not in _COMPOSITE)
