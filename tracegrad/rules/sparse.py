"""The one differentiable kernel of the sparse COO layout: a sparse matrix times a dense one.

A sparse matrix enters the table as its parts -- row and column coordinates (integers, no
gradient) and one value per stored entry -- so the rule is written on plain arrays and the
table walker checks it like any other. Repeated coordinates (an uncoalesced matrix) simply
add up, as the matrix they stand for does.

On the CPU the product runs through SciPy's sparse matrices when SciPy is installed (15x
faster than NumPy's unbuffered ``add.at`` on a large graph); without it, and on CUDA, the
entries are scattered with the backend's ``scatter_add``.
"""
from .core import primitive
from .index import index_select
from .reduce import sum as sum_

_SCIPY = []  # [scipy.sparse or None], looked up on first use


def scipy_sparse():
    """SciPy's sparse module, or None when SciPy is not installed."""
    if not _SCIPY:
        try:
            import scipy.sparse as sp
        except ImportError:
            sp = None
        _SCIPY.append(sp)
    return _SCIPY[0]


@primitive("MmBackward0", cast=(2, 3))
def sparse_mm(xp, rows, cols, values, dense, *, nrows):
    """``A @ dense`` for the ``nrows``-row matrix ``A`` with ``A[rows[e], cols[e]] += values[e]``."""
    dtype = xp.result_type(values, dense)
    sp = scipy_sparse() if xp.name == "cpu" and dtype.kind in "fciu" else None
    if sp is not None:
        matrix = sp.coo_matrix((values, (rows, cols)), shape=(nrows, dense.shape[0]))
        return xp.asarray(matrix @ dense, dtype=dtype)
    out = xp.zeros((nrows,) + tuple(dense.shape[1:]), dtype=dtype)
    products = values.reshape((-1,) + (1,) * (dense.ndim - 1)) * dense[cols]
    xp.scatter_add(out, rows, products)
    return out


@sparse_mm.vjp("values", uses="rows cols dense")
def sparse_mm_vjp_values(g, out, rows, cols, values, dense, *, nrows):
    """Entry ``e`` scales row ``cols[e]`` of ``dense`` into row ``rows[e]``: its gradient is
    the dot product of those two rows (of ``dense`` and of ``g``)."""
    picked = index_select(g, rows, dim=0) * index_select(dense, cols, dim=0)
    return picked if dense.ndim == 1 else sum_(picked, dim=(1,))


@sparse_mm.vjp("dense", uses="rows cols values")
def sparse_mm_vjp_dense(g, out, rows, cols, values, dense, *, nrows):
    """``A^T @ g``: the same entries with rows and columns swapped."""
    return sparse_mm(cols, rows, values, g, nrows=dense.shape[0])


@sparse_mm.jvp("values")
def sparse_mm_jvp_values(t, out, rows, cols, values, dense, *, nrows):
    return sparse_mm(rows, cols, t, dense, nrows=nrows)


@sparse_mm.jvp("dense")
def sparse_mm_jvp_dense(t, out, rows, cols, values, dense, *, nrows):
    return sparse_mm(rows, cols, values, t, nrows=nrows)
