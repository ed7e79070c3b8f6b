"""What every collective shares: tensors lent to MPI as buffers, the Work handle of a
non-blocking operation, and the argument check that turns a mismatch between ranks into
an error on every rank instead of a hang or silently wrong values.

CPU tensors are passed to MPI as their NumPy memory: MPI reads and writes it in place, no
copy, no pickling. Device (CuPy) tensors go to MPI directly when the MPI build is
CUDA-aware (MPIX_Query_cuda_support), else through a host copy that is written back when
the operation completes ("host staging")."""
import os

import numpy as np

from .. import backend
from ..runtime.tensor import Tensor
from . import _mpi

__all__ = ["Work", "Lent", "lend", "agree", "check_tensor", "signature", "row"]

# dtypes by index, so that a signature (ints) can name each rank's dtype in an error
_DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64", "complex64",
           "complex128", "uint16", "uint32", "uint64", "bfloat16"]
_MAX_DIMS = 6
# TRACEGRAD_DISTRIBUTED_CHECK=0 skips the exchange of signatures before each collective (one
# small collective: it doubles the latency of small messages); a mismatch is then MPI's
# to find, or not. Errors found on this rank alone are still raised.
CHECK = os.environ.get("TRACEGRAD_DISTRIBUTED_CHECK", "1") != "0"


def check_tensor(t, what="tensor"):
    """``t`` as a collective accepts it: a contiguous Tensor."""
    if not isinstance(t, Tensor):
        raise TypeError(f"Invalid function argument. Expected parameter `{what}` of type torch.Tensor\n"
                        f"             but got {type(t)} instead.")
    if not t.is_contiguous():
        raise ValueError("Tensors must be contiguous")
    return t


class Lent:
    """A tensor's memory as MPI sees it (``buf``: a NumPy array, or a device array on a
    CUDA-aware MPI) and how to give the result back to the tensor (``give_back``)."""

    __slots__ = ("tensor", "buf", "_staged")

    def __init__(self, tensor, buf, staged):
        self.tensor, self.buf, self._staged = tensor, buf, staged

    def give_back(self):
        """Copy the host copy back to the device (when staged) and mark the tensor written."""
        if self._staged:
            data = self.tensor._data
            data[...] = backend.namespace_of(data).from_host(self.buf)
        self.tensor._bump_version()


_CUDA_AWARE = []


def _cuda_aware():
    """Whether MPI reads and writes device memory itself: MPIX_Query_cuda_support(), which
    MPICH and Open MPI export (mpi4py does not wrap it); TRACEGRAD_MPI_CUDA_AWARE=0/1
    overrides. Asked once."""
    if not _CUDA_AWARE:
        forced = os.environ.get("TRACEGRAD_MPI_CUDA_AWARE")
        _CUDA_AWARE.append(forced == "1" if forced in ("0", "1") else _query_cuda_support())
    return _CUDA_AWARE[0]


def _query_cuda_support():
    import ctypes
    _mpi.MPI()  # (the library is loaded, and initialised)
    for name in ("libmpi.so.12", "libmpi.so.40", "libmpi.so"):
        try:
            query = getattr(ctypes.CDLL(name), "MPIX_Query_cuda_support", None)
        except OSError:
            continue
        return bool(query is not None and query())
    return False


def lend(t, what="tensor"):
    """Lend tensor ``t``'s memory to MPI (see :class:`Lent`)."""
    data = check_tensor(t, what)._data
    if isinstance(data, np.ndarray):
        return Lent(t, data, False)
    ns = backend.namespace_of(data)
    if ns.name == "cuda" and _cuda_aware() and type(data).__module__.startswith("cupy"):
        ns.synchronize()  # the kernels that wrote it have finished before MPI reads it
        return Lent(t, data, False)
    return Lent(t, ns.to_host(data), True)


_NAMES = {}  # dtype -> its name (numpy's dtype.name is slow to compute)


def dtype_name(arr):
    name = _NAMES.get(arr.dtype)
    if name is None:
        name = _NAMES[arr.dtype] = "bfloat16" if "bfloat16" in arr.dtype.name else arr.dtype.name
    return name


class Work:
    """The handle of an operation started with ``async_op=True`` (torch's ``Work``):
    ``wait()`` blocks until it is done and the tensors hold the result."""

    def __init__(self, requests, finish=None, result=()):
        self._requests = list(requests)
        self._finish = finish
        self._result = list(result)
        self._done = False

    def _complete(self):
        if not self._done:
            self._done = True
            if self._finish is not None:
                self._finish()

    def is_completed(self):
        """True once the operation has finished (it drives MPI's progress as it asks)."""
        if not self._done and (not self._requests or _mpi.MPI().Request.Testall(self._requests)):
            self._complete()
        return self._done

    def wait(self, timeout=None):
        if not self._done:
            if self._requests:
                _mpi.MPI().Request.Waitall(self._requests)
            self._complete()
        return True

    def is_success(self):
        return self._done

    def exception(self):
        return None

    def result(self):
        self.wait()
        return self._result

    def synchronize(self):
        self.wait()

    def __repr__(self):
        return f"<tracegrad.distributed.Work {'completed' if self._done else 'pending'}>"


def finished(work, async_op):
    """What a collective returns: its Work with ``async_op``, else None once it is done."""
    if async_op:
        return work
    work.wait()
    return None


def signature(kind, arg, arr=None, shape=None, dtype=None):
    """One rank's call as :func:`row` describes it, for :func:`agree` (None when unchecked)."""
    return row(kind, arg, arr, shape, dtype) if CHECK else None


def row(kind, arg, arr=None, shape=None, dtype=None):
    """A fixed-length row of ints describing one rank's call (``arr`` or ``shape``/``dtype``)."""
    if arr is not None:
        shape, dtype, size = arr.shape, dtype_name(arr), arr.size
    else:
        size = int(np.prod(shape, dtype=np.int64))
    dims = list(shape)[:_MAX_DIMS]
    code = _DTYPES.index(dtype) if dtype in _DTYPES else len(_DTYPES)
    return [0, kind, arg, code, size, len(shape)] + dims + [0] * (_MAX_DIMS - len(dims))


def _describe(row):
    dtype = _DTYPES[row[3]] if row[3] < len(_DTYPES) else "another dtype"
    shape = [int(d) for d in row[6:6 + min(row[5], _MAX_DIMS)]] if row[5] <= _MAX_DIMS else f"{row[5]}-d with {row[4]} elements"
    return f"{dtype} tensor of shape {shape}"


def agree(pg, what, sig, local_error=None, describe_arg=None):
    """Check that every rank of ``pg`` called ``what`` with the same arguments (``sig``,
    from :func:`signature`). One all-reduce (MAX) of the row and its negation, a few ints
    whatever the number of ranks, tells whether all rows are equal; only when they are not
    are the rows gathered, to name what each rank passed. ``local_error``: what this rank
    found wrong on its own. Every rank raises when any rank disagrees, so that a mistake on
    one rank never leaves the others waiting."""
    if local_error is None and (pg.size() == 1 or not CHECK):
        return
    if not CHECK:
        raise RuntimeError(local_error)
    row = np.array(sig, dtype=np.int64)
    if local_error is not None:
        row[0] = 1
    both = np.concatenate([row, -row])
    pg.comm.Allreduce(_mpi.MPI().IN_PLACE, both, _mpi.MPI().MAX)
    if (both[:row.size] == -both[row.size:]).all():  # every rank passed this very row
        if local_error is not None:
            raise RuntimeError(local_error)  # (all ranks made the same mistake)
        return
    rows = np.empty((pg.size(), row.size), dtype=np.int64)
    pg.comm.Allgather(row, rows)
    if local_error is not None:
        raise RuntimeError(local_error)
    bad = [r for r in range(pg.size()) if rows[r, 0]]
    if bad:
        raise RuntimeError(f"{what}: rank(s) {bad} of the group were called with invalid arguments (see their "
                           "error); no rank ran the collective")
    lines = []
    for r in range(pg.size()):
        arg = describe_arg(int(rows[r, 2])) if describe_arg else ""
        other = " (a different collective)" if rows[r, 1] != rows[0, 1] else ""
        lines.append(f"  rank {r}: {_describe(rows[r])}{arg}{other}")
    raise RuntimeError(f"{what}: the ranks called it with mismatching arguments, so it was not run:\n"
                       + "\n".join(lines))
