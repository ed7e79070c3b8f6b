"""Samples for ``sparse_mm`` (tracegrad/rules/sparse.py): a COO matrix, given as row and
column coordinates plus values, times a dense matrix or vector. Repeated coordinates
(an uncoalesced matrix) are included: they must add up."""
import numpy as np

from .sampling import S, r

_ROWS = np.array([0, 2, 2, 1, 0, 2])
_COLS = np.array([1, 0, 3, 3, 1, 0])  # (0, 1) and (2, 0) appear twice
SAMPLES = {
    "sparse_mm": [
        S(_ROWS, _COLS, r(6), r(4, 5), nrows=3),
        S(_ROWS, _COLS, r(6), r(4), nrows=3, tags="vector"),
        S(_ROWS[:2], _COLS[:2], r(2), r(4, 1), nrows=5),
        S(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), r(0), r(4, 3), nrows=2, tags="empty"),
        S(_ROWS, _COLS, r(6), r(4, 0), nrows=3, tags="empty"),
    ],
}
EXEMPT = {"sparse_mm": {"0d": "a matrix product needs a matrix"}}


def _torch_sparse_mm(rows, cols, values, dense, nrows):
    import torch
    matrix = torch.sparse_coo_tensor(torch.stack([rows, cols]), values, (nrows, dense.shape[0]),
                                     check_invariants=True)
    return torch.mv(matrix, dense) if dense.ndim == 1 else torch.sparse.mm(matrix, dense)


TORCH = {"sparse_mm": _torch_sparse_mm}
