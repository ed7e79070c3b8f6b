"""Samples for the LU rules (``lu_factor``, ``lu_permute``): square, wide, tall, stacked,
1x1 and empty matrices. Each matrix is a row permutation of a diagonally dominant one, so
partial pivoting swaps rows (the permutation is exercised) with a clear margin between
candidate pivots (finite differences do not change the pivots)."""
import numpy as np

from .sampling import S

_rng = np.random.default_rng(1622)


def r(*shape):
    return _rng.standard_normal(shape)


def pivoted(*shape, complex_=False):
    m, n = shape[-2:]
    base = r(*shape) + (1j * r(*shape) if complex_ else 0) + 4 * np.eye(m, n)
    return base[..., _rng.permutation(m), :]


def pivots(*shape, k=None):
    """Valid LAPACK pivots (1-based, row j swapped with a row >= j) for ``m`` rows."""
    *batch, m = shape
    k = m if k is None else k
    out = np.empty(tuple(batch) + (k,), dtype=np.int32)
    for j in range(k):
        out[..., j] = _rng.integers(j, m, size=tuple(batch)) + 1
    return out


SAMPLES = {
    "lu_factor": [S(pivoted(3, 3)), S(pivoted(2, 3, 3)), S(pivoted(3, 5)), S(pivoted(5, 3)),
                  S(pivoted(2, 4, 2)), S(pivoted(2, 2, 4)), S(r(1, 1) + 2),
                  S(r(0, 0), tags="empty"), S(r(2, 0, 0), tags="empty")],
    "lu_permute": [S(r(4, 2), pivots(4), float32=False), S(r(4, 2), pivots(4), transpose=True, float32=False),
                   S(r(2, 3, 3), pivots(2, 3), float32=False), S(r(3, 2), pivots(2, 3), tags="broadcast", float32=False),
                   S(r(4, 3), pivots(4, k=2), transpose=True, float32=False),
                   S(r(0, 2), pivots(0), tags="empty", float32=False)],
}
EXEMPT = {"lu_factor": {"0d": "operands are (stacks of) matrices"},
          "lu_permute": {"0d": "operands are (stacks of) matrices"}}

COMPLEX_SAMPLES = {
    "lu_factor": [S(pivoted(3, 3, complex_=True)), S(pivoted(2, 3, 5, complex_=True)),
                  S(pivoted(4, 2, complex_=True))],
    "lu_permute": [S(r(3, 2) + 1j * r(3, 2), pivots(3), float32=False)],
}


# -- PyTorch's equivalents (walked by test_oracle_table.py) ----------------------------------------

def _torch_lu_permute(x, pivots, transpose=False):
    import torch
    m, k = x.shape[-2], pivots.shape[-1]
    perm = torch.lu_unpack(torch.zeros(tuple(pivots.shape[:-1]) + (m, k), dtype=x.dtype), pivots,
                           unpack_data=False).P
    return (perm.mT if transpose else perm) @ x


def _torch_lu_factor(a):
    import torch
    return tuple(torch.linalg.lu_factor(a))


TORCH = {"lu_factor": _torch_lu_factor, "lu_permute": _torch_lu_permute}
