"""``torch.linalg``'s solvers and factorisations beyond :mod:`tracegrad.linalg`: the lu
family (``lu_factor``, ``lu_factor_ex``, ``lu``, ``lu_solve``), ``solve_triangular``,
``lstsq`` and the ``_ex`` variants that report LAPACK's ``info`` instead of raising, plus
the legacy top-level spellings PyTorch keeps (``triangular_solve``, ``lu``, ``lu_unpack``,
``lu_solve``, ``cholesky_solve``, ``cholesky_inverse``).

Everything is written with the table's ``lu_factor``, ``lu_permute`` and
``solve_triangular`` (:mod:`tracegrad.rules.triangular`), so gradients (of any order) come
from those rules. Where an ``_ex`` function meets a matrix LAPACK cannot factor and is
not asked to raise, that matrix's result is nan (LAPACK leaves partial values there,
which PyTorch documents as unspecified) and its ``info`` is LAPACK's.
"""
from .backend import dtypes as _dt
from .backend import namespace_of
from .ops.return_types import _structseq
from .rules import decomp as D
from .rules import lapack
from .rules import matrix_functions as MF
from .rules import spectral as SP
from .rules import triangular as TR
from .rules.arith import where
from .rules.linalg import matmul as _matmul
from .rules.scipy_linalg import solve_triangular as _st
from .ops._args import every_sample, on_samples
from .runtime.tensor import wrap

LinAlgError = lapack.LinAlgError

linalg_lu_factor = _structseq("linalg_lu_factor", ["LU", "pivots"])
linalg_lu_factor_ex = _structseq("linalg_lu_factor_ex", ["LU", "pivots", "info"])
linalg_lu = _structseq("linalg_lu", ["P", "L", "U"])
linalg_lstsq = _structseq("linalg_lstsq", ["solution", "residuals", "rank", "singular_values"])
linalg_inv_ex = _structseq("linalg_inv_ex", ["inverse", "info"])
linalg_cholesky_ex = _structseq("linalg_cholesky_ex", ["L", "info"])
linalg_solve_ex = _structseq("linalg_solve_ex", ["result", "info"])
triangular_solve_result = _structseq("triangular_solve", ["solution", "cloned_coefficient"])
lu_unpack_result = _structseq("lu_unpack", ["P", "L", "U"])
lu_with_info = _structseq("_lu_with_info", ["LU", "pivots", "info"])

_LU_SINGULAR = ("U[{info},{info}] is zero and using it on lu_solve would result in a division by zero. If you "
                "still want to perform the factorization, consider calling linalg.lu(A, pivot) or "
                "linalg.lu_factor_ex(A, pivot)")


def _float_matrix(A, fn, name="A", square=False):
    """PyTorch's checks of a matrix argument: :func:`tracegrad.linalg._check`'s (this module
    is loaded by it, so it is looked up when called)."""
    from .linalg import _check
    return _check(A, fn, square=square, name=name)


def _kernel_dtype(A, kernel):
    """PyTorch's refusal of integer operands by kernels that take no other type."""
    if not (A.dtype.is_floating_point or A.dtype.is_complex):
        raise NotImplementedError(f'"{kernel}" not implemented for \'{A.dtype.scalar_name}\'')


def _same_dtype(fn, A, B, a="A", b="B"):
    if A.dtype is not B.dtype:
        raise RuntimeError(f"{fn}: Expected {a} and {b} to have the same dtype, but found {a} of type "
                           f"{A.dtype.scalar_name} and {b} of type {B.dtype.scalar_name} instead")


def _check_rhs(fn, A, B, left=True):
    """PyTorch's ``linearSolveCheckInputs``: B a (stack of) matrices matching A."""
    if B.ndim < 2:
        raise RuntimeError(f"{fn}: The input tensor B must have at least 2 dimensions.")
    if (A.shape[-1] != B.shape[-2]) if left else (A.shape[-2] != B.shape[-1]):
        eq = "AX = B" if left else "XA = B"
        raise RuntimeError(f"{fn}: Incompatible shapes of A and B for the equation {eq} "
                           f"({A.shape[-2]}x{A.shape[-1]} and {B.shape[-2]}x{B.shape[-1]})")


def _info(array):
    return wrap(array)


def _eye_like(A, m):
    from .runtime.creation import eye
    return eye(m, dtype=A.dtype, device=A.device).expand(tuple(A.shape[:-2]) + (m, m))


# -- triangular solves -------------------------------------------------------------------------

def solve_triangular(A, B, *, upper, left=True, unitriangular=False):
    """``A X = B`` (``left=False``: ``X A = B``) for triangular ``A`` (its upper or lower
    triangle is read; ``unitriangular``: its diagonal is taken as ones)."""
    fn = "linalg.solve_triangular"
    _kernel_dtype(A, "triangular_solve_cpu")
    _float_matrix(A, fn, square=True)
    _check_rhs(fn, A, B, left)
    if left:
        return _st(A, B, lower=not upper, unit_diagonal=unitriangular)
    return _st(A, B.mT, lower=not upper, trans=1, unit_diagonal=unitriangular).mT


def triangular_solve(b, A, upper=True, transpose=False, unitriangular=False):
    """The legacy ``torch.triangular_solve``: ``(solution, cloned_coefficient)``."""
    _kernel_dtype(A, "triangular_solve_cpu")
    _float_matrix(A, "torch.triangular_solve", square=True)
    _check_rhs("torch.triangular_solve", A, b)
    x = _st(A, b, lower=not upper, trans=1 if transpose else 0, unit_diagonal=unitriangular)
    batch = tuple(x.shape[:-2])
    return triangular_solve_result(x, A.expand(batch + tuple(A.shape[-2:])).clone())


# -- lu ------------------------------------------------------------------------------------------

def _no_pivot(pivot, fn):
    if not pivot:
        raise RuntimeError(f"{fn}: LU without pivoting is not implemented on the CPU")


def _infos(A, info_of):
    """LAPACK's ``info`` of each matrix of ``A`` (``info_of`` of its array), as a Tensor: per
    sample under vmap, where ``A._data`` is sample 0 only."""
    return on_samples(lambda a: wrap(info_of(a._data)), A, leading=True)


def _raise_for(info, function, detail, plain=False):
    """:func:`lapack.raise_for` over every sample's ``info`` Tensor."""
    every = every_sample(info)._data
    lapack.raise_for(namespace_of(every), every, function, detail, plain=plain)


def _lu_info(LU):
    return _infos(LU, lambda lu: lapack.lu_info(namespace_of(lu), lu))


def lu_factor_ex(A, *, pivot=True, check_errors=False):
    """``(LU, pivots, info)``: LAPACK's packed LU with partial pivoting."""
    if A.ndim < 2:
        raise RuntimeError(f"torch.lu_factor: Expected tensor with 2 or more dimensions. Got size: "
                           f"{list(A.shape)} instead")
    _no_pivot(pivot, "linalg.lu_factor")
    _kernel_dtype(A, "lu_cpu")
    LU, pivots = TR.lu_factor(A)
    info = _lu_info(LU)
    if check_errors:
        _raise_for(info, "torch.linalg.lu_factor_ex", _LU_SINGULAR, plain=True)
    return linalg_lu_factor_ex(LU, pivots, info)


def lu_factor(A, *, pivot=True):
    LU, pivots, info = lu_factor_ex(A, pivot=pivot)
    _raise_for(info, "torch.linalg.lu_factor", _LU_SINGULAR, plain=True)
    return linalg_lu_factor(LU, pivots)


def lu(A, *, pivot=True):
    """``(P, L, U)`` with ``A = P L U`` (P is not differentiable, as in PyTorch)."""
    LU, pivots, _ = lu_factor_ex(A, pivot=pivot)
    return linalg_lu(*lu_unpack(LU, pivots))


def lu_unpack(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True):
    """``(P, L, U)`` from a packed LU and its pivots; the parts not asked for are empty."""
    from .runtime.creation import empty
    L = U = P = empty(0, dtype=LU_data.dtype, device=LU_data.device)
    if unpack_data:
        L, U = TR.unpack(LU_data)
    if unpack_pivots:
        P = TR.lu_permute(_eye_like(LU_data.detach(), LU_data.shape[-2]), LU_pivots)
    return lu_unpack_result(P, L, U)


def lu_solve(LU, pivots, B, *, left=True, adjoint=False):
    """``A X = B`` from ``A``'s LU (``adjoint``: ``A^H X = B``; ``left=False``: ``X A = B``)."""
    fn = "linalg.lu_solve"
    if LU.ndim >= 2 and LU.shape[-1] != LU.shape[-2]:
        raise RuntimeError(f"torch.{fn}: A must be batches of square matrices, but they are "
                           f"{LU.shape[-2]} by {LU.shape[-1]} matrices")
    _same_dtype(fn, LU, B, "LU", "B")
    _check_rhs(fn, LU, B, left)
    if left:
        return _lu_apply(LU, pivots, B, 2 if adjoint else 0)
    if adjoint:  # X A^H = B  <=>  A X^H = B^H
        return _lu_apply(LU, pivots, B.mH, 0).mH
    return _lu_apply(LU, pivots, B.mT, 1).mT   # X A = B  <=>  A^T X^T = B^T


def _lu_apply(LU, pivots, B, trans):
    """``op(A)^{-1} B`` for ``A = P L U`` and ``op`` the identity, the transpose or the
    conjugate transpose (``trans`` 0, 1, 2)."""
    if trans == 0:
        y = _st(LU, TR.lu_permute(B, pivots, transpose=True), lower=True, unit_diagonal=True)
        return _st(LU, y, lower=False)
    y = _st(LU, B, lower=False, trans=trans)
    return TR.lu_permute(_st(LU, y, lower=True, trans=trans, unit_diagonal=True), pivots)


def lu_solve_legacy(b, LU_data, LU_pivots):
    """``torch.lu_solve(b, LU, pivots)`` (arguments in the legacy order)."""
    return lu_solve(LU_data, LU_pivots, b)


def lu_legacy(A, pivot=True, get_infos=False):
    """``torch.lu`` / ``Tensor.lu``: ``(LU, pivots)``, with ``info`` when ``get_infos``
    (otherwise a singular matrix raises)."""
    LU, pivots, info = lu_factor_ex(A, pivot=pivot, check_errors=not get_infos)
    return lu_with_info(LU, pivots, info) if get_infos else (LU, pivots)


# -- cholesky_solve, cholesky_inverse ----------------------------------------------------------------

def _from_factor(L, upper):
    """``L L^H`` (``upper``: ``U^H U``) with every entry of the factor taking part: PyTorch
    differentiates its Cholesky solves so, not only through the triangle LAPACK reads."""
    return L.mH @ L if upper else L @ L.mH


def cholesky_solve(B, L, upper=False):
    """``A X = B`` for ``A = L L^H`` (``upper``: ``A = U^H U``) given the factor."""
    _kernel_dtype(L, "cholesky_solve_cpu")
    _float_matrix(L, "linalg.cholesky_solve", square=True)
    _same_dtype("cholesky_solve", B, L, "b", "A")
    _check_rhs("linalg.cholesky_solve", L, B)
    return D.solve(_from_factor(L, upper), B)


def cholesky_inverse(L, upper=False):
    """``A^{-1}`` for ``A = L L^H`` (``upper``: ``U^H U``) given the factor."""
    _kernel_dtype(L, "cholesky_inverse_out_cpu")
    _float_matrix(L, "cholesky_inverse", square=True)
    return D.inv(_from_factor(L, upper))


# -- the _ex variants ------------------------------------------------------------------------------

def _guarded(A, compute, info_of, fn, detail, check_errors):
    """``(result, info)``: ``compute(A)``, or, where some matrix fails, ``compute`` of ``A``
    with those matrices replaced by identities and their results by nan."""
    try:
        with lapack.reporting_as(fn):
            result = compute(A)
        return result, _info(namespace_of(A._data).zeros(tuple(A.shape[:-2]), dtype="int32"))
    except LinAlgError:
        if check_errors:
            raise
    info = _infos(A, info_of)
    bad = (info != 0)[..., None, None]
    safe = where(bad, _eye_like(A.detach(), A.shape[-1]), A)
    return where(bad, float("nan"), compute(safe)), info


def _lu_info_of(a):
    """LAPACK's info of LU-factoring each matrix of array ``a``."""
    xp = namespace_of(a)
    return lapack.lu_info(xp, lapack.lu_factor(xp, a)[0])


def inv_ex(A, *, check_errors=False):
    _float_matrix(A, "linalg.inv", square=True)
    inv, info = _guarded(A, D.inv, _lu_info_of,
                         "linalg.inv_ex", lapack.SINGULAR_INV, check_errors)
    return linalg_inv_ex(inv, info)


def cholesky_ex(A, *, upper=False, check_errors=False):
    _float_matrix(A, "linalg.cholesky", square=True)
    from .linalg import _symmetric_gradient
    L, info = _guarded(_symmetric_gradient(A), lambda a: D.cholesky(a, upper=upper),
                       lambda a: lapack.cholesky_info(namespace_of(a), a, upper),
                       "linalg.cholesky_ex", lapack.NOT_PD, check_errors)
    return linalg_cholesky_ex(L, info)


def solve_ex(A, B, *, left=True, check_errors=False):
    from . import linalg
    _float_matrix(A, "linalg.solve_ex", square=True)
    xp = namespace_of(A._data)
    if not check_errors:
        info = _infos(A, _lu_info_of)
        if bool((every_sample(info)._data != 0).any()):
            bad = (info != 0)[..., None, None]
            x = linalg.solve(where(bad, _eye_like(A.detach(), A.shape[-1]), A), B, left=left)
            mask = bad if x.ndim == A.ndim else bad[..., 0]
            return linalg_solve_ex(where(mask, float("nan"), x), info)
    with lapack.reporting_as("torch.linalg.solve_ex"):
        x = linalg.solve(A, B, left=left)
    return linalg_solve_ex(x, _info(xp.zeros(tuple(A.shape[:-2]), dtype="int32")))


# -- lstsq ---------------------------------------------------------------------------------------

_DRIVERS = ("gels", "gelsy", "gelsd", "gelss")


def lstsq(A, B, rcond=None, *, driver=None):
    """The least-squares solution ``pinv(A) B`` (the minimum-norm one where A is rank
    deficient), with the fields PyTorch's CPU drivers fill: ``residuals`` (gels, gelsd,
    gelss; tall full-rank A only), ``rank`` (all but gels), ``singular_values`` (gelsd,
    gelss). Differentiable in A and B through the pseudo-inverse, as PyTorch."""
    fn = "torch.linalg.lstsq"
    from .runtime.creation import empty
    if A.dtype not in (_dt.float32, _dt.float64, _dt.complex64, _dt.complex128):
        raise RuntimeError("This function doesn't handle types other than float and double")
    _float_matrix(A, fn, "input")
    if A.dtype is not B.dtype:
        raise RuntimeError(f"{fn}: Expected input and other to have the same dtype, but got input's dtype "
                           f"{A.dtype.scalar_name} and other's dtype {B.dtype.scalar_name}")
    if driver is None:
        driver = "gelsy"
    if driver not in _DRIVERS:
        raise RuntimeError(f"{fn}: parameter `driver` should be one of (gels, gelsy, gelsd, gelss)")
    vector = B.ndim == 1 or (B.ndim == A.ndim - 1 and tuple(B.shape) == tuple(A.shape[:-1]))
    b = B.unsqueeze(-1) if vector else B
    if A.shape[-2] != b.shape[-2]:
        raise RuntimeError(f"{fn}: input.size(-2) should match other.size(-2)")
    m, n = A.shape[-2:]
    eps = 1.1102230246251565e-16 * 2 if A.dtype in (_dt.float64, _dt.complex128) else 1.1920928955078125e-07
    rtol = max(m, n) * eps if rcond is None or rcond < 0 else float(rcond)
    x = _matmul(MF.pinv(A, rtol=rtol, atol=0.0), b)
    real = A.abs().dtype if A.is_complex() else A.dtype
    residuals = empty(0, dtype=real, device=A.device)
    rank = empty(0, dtype=_dt.int64, device=A.device)
    svals = empty(0, dtype=real, device=A.device)
    if driver != "gels" or m > n:
        s = SP.singular_values(A.detach())
        kept = (s > rtol * s.amax(-1, keepdim=True)).sum(-1) if s.shape[-1] else s.sum(-1).to(_dt.int64)
        if driver != "gels":
            rank = kept
        if driver in ("gelsd", "gelss"):
            svals = s
        if m > n and driver != "gelsy" and bool((kept == n).all()):
            r = _matmul(A, x) - b
            residuals = (r.abs() ** 2 if r.is_complex() else r ** 2).sum(-2)
    if vector:
        x = x.squeeze(-1)
    return linalg_lstsq(x, residuals, rank, svals)

