"""What LAPACK's ``info`` codes say, in PyTorch's words: :class:`LinAlgError`, the batched
LU factorisation with partial pivoting (``getrf``) whose pivots and ``info`` PyTorch's
``lu_factor``, ``inv_ex`` and ``solve_ex`` report, and the row permutations its pivots
stand for.

The LU is written with array operations (one Python step per column, vectorised over the
batch) so that it runs on any backend namespace and picks the pivots LAPACK picks: the
first entry of largest magnitude (``|re| + |im|`` for complex values, as ``izamax``).
"""
import contextlib

from ..backend import cpu as np

__all__ = ["LinAlgError", "cholesky_info", "lu_factor", "lu_info", "permutation", "raise_for", "reporting_as"]


class LinAlgError(RuntimeError, np.linalg.LinAlgError):
    """``torch.linalg.LinAlgError``: a matrix had no inverse, factorisation or solution
    (singular, not positive-definite). ``function`` is the name the message starts with,
    ``detail`` the rest, so that a caller may report it under its own name. It is also
    NumPy's LinAlgError, which the NumPy front end (the same kernels) promises."""

    def __init__(self, function, detail):
        super().__init__(f"{function}: {detail}")
        self.function = function
        self.detail = detail


@contextlib.contextmanager
def reporting_as(function):
    """Re-raise the LinAlgErrors of the block under ``function``'s name (``inv_ex`` reports
    what ``inv`` found, ``tensorinv`` reports as ``inv``)."""
    try:
        yield
    except LinAlgError as e:
        raise LinAlgError(function, e.detail) from None


def _batched(xp, a):
    """``a`` as a stack ``(B, m, n)`` of copies in a floating dtype."""
    a = xp.asarray(a)
    return xp.array(a.reshape((_count(a.shape[:-2]),) + a.shape[-2:]), copy=True)


def _count(batch):
    n = 1
    for s in batch:
        n *= s
    return n


def lu_factor(xp, a):
    """``(LU, pivots)`` as LAPACK's getrf: ``LU`` holds unit-lower L below its diagonal and
    U on and above it, ``pivots`` (int32, 1-based) the row swapped with row i at step i.
    A zero pivot column is skipped, as getrf does (info reports it)."""
    shape = a.shape
    m, n = shape[-2:]
    k = min(m, n)
    lu = _batched(xp, a)
    batch = lu.shape[0]
    pivots = xp.zeros((batch, k), dtype=xp.int32)
    rows = xp.arange(batch)
    for j in range(k):
        col = lu[:, j:, j]
        score = (xp.abs(col.real) + xp.abs(col.imag)) if xp.iscomplexobj(col) else xp.abs(col)
        p = (xp.argmax(score, axis=-1) + j) if batch else xp.zeros((0,), dtype=xp.int64)
        pivots[:, j] = p + 1
        row_j = lu[rows, j].copy()
        lu[rows, j] = lu[rows, p]
        lu[rows, p] = row_j
        pivot = lu[:, j, j:j + 1]
        safe = xp.where(pivot == 0, 1, pivot)
        lu[:, j + 1:, j] = lu[:, j + 1:, j] / safe
        lu[:, j + 1:, j + 1:] -= lu[:, j + 1:, j:j + 1] * lu[:, j:j + 1, j + 1:]
    return lu.reshape(shape), pivots.reshape(shape[:-2] + (k,))


def lu_info(xp, lu):
    """getrf's info per matrix: the (1-based) index of U's first zero diagonal entry, 0 if none."""
    k = min(lu.shape[-2:])
    d = xp.diagonal(lu, axis1=-2, axis2=-1)[..., :k]
    zero = d == 0
    first = xp.argmax(zero, axis=-1) + 1 if k else xp.zeros(lu.shape[:-2], dtype=xp.int64)
    return xp.where(xp.any(zero, axis=-1), first, 0).astype(xp.int32) if k else first.astype(xp.int32)


def cholesky_info(xp, a, upper=False):
    """potrf's info per matrix: the order of the first leading minor that is not
    positive-definite, 0 if none (found by factorising growing leading blocks)."""
    n = a.shape[-1]
    flat = _batched(xp, xp.conj(xp.swapaxes(a, -1, -2)) if upper else a)
    info = np.zeros(flat.shape[0], dtype=np.int32)
    for b in range(flat.shape[0]):
        for j in range(1, n + 1):
            try:
                xp.linalg.cholesky(flat[b, :j, :j])
            except Exception:  # NumPy's or CuPy's LinAlgError
                info[b] = j
                break
    return xp.asarray(info.reshape(a.shape[:-2]))


def permutation(xp, pivots, m):
    """The row order ``perm`` (int64, ``(..., m)``) the pivots' swaps make: ``A[perm] = L U``."""
    pivots = xp.asarray(pivots)
    flat = pivots.reshape((_count(pivots.shape[:-1]), pivots.shape[-1]))
    perm = xp.broadcast_to(xp.arange(m), (flat.shape[0], m)).copy()
    rows = xp.arange(flat.shape[0])
    for j in range(flat.shape[-1]):
        p = flat[:, j].astype(xp.int64) - 1
        pj = perm[rows, j].copy()
        perm[rows, j] = perm[rows, p]
        perm[rows, p] = pj
    return perm.reshape(pivots.shape[:-1] + (m,))


def raise_for(xp, info, function, detail, plain=False):
    """Raise ``LinAlgError(function, detail)`` for the first matrix whose ``info`` is
    nonzero, naming its batch element when there is a batch (``detail`` is formatted
    with ``info``); ``plain``: a RuntimeError with that message (lu_factor's)."""
    info = np.asarray(info.get() if hasattr(info, "get") else info)
    bad = np.flatnonzero(info.reshape(-1))
    if bad.size:
        first = int(bad[0])
        text = detail.format(info=int(info.reshape(-1)[first]))
        error = LinAlgError(function, f"(Batch element {first}): {text}" if info.ndim else text)
        raise RuntimeError(str(error)) if plain else error


def is_lapack_error(e):
    """Whether ``e`` is NumPy's or CuPy's LinAlgError."""
    return type(e).__name__ == "LinAlgError" and not isinstance(e, LinAlgError)


SINGULAR_INV = ("The diagonal element {info} is zero, the inversion could not be completed because the "
                "input matrix is singular.")
SINGULAR_SOLVE = "The solver failed because the input matrix is singular."
NOT_PD = ("The factorization could not be completed because the input is not positive-definite (the "
          "leading minor of order {info} is not positive-definite).")
