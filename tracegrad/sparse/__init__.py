"""``torch.sparse`` and the sparse COO layout (:mod:`.coo`: the tensor, construction,
conversion, printing; :mod:`.arith`: products, sums, additions; :mod:`.elementwise`:
elementwise products and functions, softmax, addmm; :mod:`.legacy`: the legacy
constructors; the differentiable product is the ``sparse_mm`` rule of
:mod:`tracegrad.rules.sparse`)."""
from .arith import install
from .arith import sparse_mm_ as mm
from .arith import sum as _sum
from .coo import SparseCooTensor, sparse_coo, sparse_coo_tensor, to_sparse
from .elementwise import addmm, log_softmax, softmax
from .legacy import SPARSE_LEGACY_TYPES

globals().update(SPARSE_LEGACY_TYPES)  # FloatTensor, LongTensor...: legacy constructors

__all__ = [
    "SparseCooTensor",
    "addmm",
    "check_sparse_tensor_invariants",
    "install",
    "log_softmax",
    "mm",
    "softmax",
    "sparse_coo",
    "sparse_coo_tensor",
    "sum",
    "to_sparse",
]


def sum(input, dim=None, dtype=None):
    """``torch.sparse.sum``: the full sum (dense 0-d) or a sum over ``dim`` (sparse while
    sparse dimensions remain)."""
    return _sum(input, dim, dtype=dtype)


class check_sparse_tensor_invariants:
    """Accepted for PyTorch compatibility: tracegrad always checks a new sparse tensor's
    coordinates against its size (it never reads out of bounds), so there is nothing to
    switch; usable as a context manager and a decorator, as in PyTorch."""

    _enabled = False

    def __init__(self, enable=True):
        self.enable_ = enable

    @staticmethod
    def is_enabled():
        return check_sparse_tensor_invariants._enabled

    @staticmethod
    def enable():
        check_sparse_tensor_invariants._enabled = True

    @staticmethod
    def disable():
        check_sparse_tensor_invariants._enabled = False

    def __enter__(self):
        self._saved = check_sparse_tensor_invariants._enabled
        check_sparse_tensor_invariants._enabled = self.enable_
        return self

    def __exit__(self, *exc):
        check_sparse_tensor_invariants._enabled = self._saved

    def __call__(self, fn):
        def wrapped(*args, **kwargs):
            with check_sparse_tensor_invariants(self.enable_):
                return fn(*args, **kwargs)
        return wrapped
