"""Scratch memory for the temporaries of the convolution kernels: the padded copy, the
unfolded (im2col) columns, a product before its transposing copy -- arrays that never
leave the kernel that makes them.

A fresh NumPy array of megabytes is, as often as not, fresh pages from the OS (glibc maps
large blocks afresh and hands freed heap tops back), so every first touch is a page fault
and the data starts cold: the convolution temporaries of a resnet18 step (batch 8) were
~3,400 faults, 13 MB. A buffer kept per thread and per use ("slot"), grown as needed, is
warm and faults once. Blocks over :data:`KEEP_BYTES` are not kept (a one-off huge call
should not pin its memory for the life of the process). On CUDA, CuPy's memory pool
already reuses blocks, so :func:`scratch` is ``xp.empty`` there.

:func:`constant_vector` keeps the small read-only vectors that row sums and means are
BLAS products with (a layer norm's width, a vocabulary): the same sizes recur call after
call, and making one costs as much as the product.
"""
import math
import threading

import numpy

__all__ = ["scratch", "constant_vector", "KEEP_BYTES"]

KEEP_BYTES = 64 * 2 ** 20
"""The largest scratch block kept between calls (per thread and slot)."""

_local = threading.local()


def scratch(xp, slot, shape, dtype):
    """An uninitialised C-contiguous array of ``shape`` and ``dtype`` in the calling
    thread's buffer for ``slot``, valid until the next request for that slot: use one slot
    per temporary alive at the same time."""
    dtype = xp.dtype(dtype)
    nbytes = math.prod(shape) * dtype.itemsize
    if xp.name != "cpu" or nbytes > KEEP_BYTES:
        return xp.empty(shape, dtype=dtype)
    buffers = getattr(_local, "buffers", None)
    if buffers is None:
        buffers = _local.buffers = {}
    buf = buffers.get(slot)
    if buf is None or buf.nbytes < nbytes:
        buf = buffers[slot] = xp.empty(max(nbytes, 64), dtype=xp.uint8)
    return buf[:nbytes].view(dtype).reshape(shape)


_VECTORS = {}  # (n, dtype char, value) -> a read-only NumPy vector


def constant_vector(xp, n, dtype, value):
    """A read-only vector of ``n`` times ``value`` in ``dtype``, on CPU made once per (n,
    dtype, value) (a fresh one on a device, where CuPy's pool makes it cheap)."""
    if xp.name != "cpu":
        return xp.full(n, value, dtype=dtype)
    key = (n, dtype.char, value)
    v = _VECTORS.get(key)
    if v is None:
        v = _VECTORS[key] = numpy.full(n, value, dtype=dtype)
        v.flags.writeable = False
    return v
