"""Intra-op threads for the CPU kernels that move memory rather than multiply matrices.

NumPy's BLAS spreads a matrix product over every core, but NumPy's copies, ufuncs and
reductions run on one. In a convolutional network's training step the products are about
two thirds of the single-threaded time; the rest -- unfolding (im2col) copies, layout
transposes, folds, batch-norm passes -- then dominates on two or more cores (resnet18, batch
8, 2 cores: 1.4-1.7x torch, whose oneDNN and ATen kernels run all of it on every core).
NumPy releases the GIL inside those loops, so splitting one such operation into slabs run by
a few Python threads makes it parallel: :func:`parallel` runs ``fn(lo, hi)`` over slabs of
``range(n)``, one slab in the calling thread and the others in a small pool.

The number of threads is PyTorch's intra-op setting, ``tracegrad.set_num_threads``. Its
default is 1 (``TRACEGRAD_NUM_THREADS`` sets another): after each parallel matrix product
OpenBLAS's threads keep spinning for a while, and a pool thread competes with them for the
cores -- resnet18 on the 2-core development machine took 0.85x torch's time with one thread
and 1.16x with two (benchmarks/resnet18.py --threads 2, with and without ``--intra-op 1``).
With one thread nothing is started. Work under
:data:`MIN_BYTES` per thread stays in the calling thread (handing a slab to another thread
costs ~15-30 us). The pool is made on first use and again in a forked child (a fork copies
no threads).
"""
import os
import threading
from concurrent.futures import ThreadPoolExecutor

__all__ = ["parallel", "set_threads", "get_threads", "MIN_BYTES"]

MIN_BYTES = 1 << 19
"""The least memory traffic (bytes read and written) worth a thread of its own."""


def _default_threads():
    """``TRACEGRAD_NUM_THREADS`` when set to a positive count, else 1 (see the module
    docstring for why not the cores)."""
    try:
        n = int(os.environ.get("TRACEGRAD_NUM_THREADS", ""))
    except ValueError:
        return 1
    return n if n > 0 else 1


_state = {"threads": _default_threads(), "pool": None, "pid": None}
_PREFIX = "tracegrad-intra-op"
_lock = threading.Lock()


def set_threads(n):
    """Use ``n`` threads (the caller's included) for :func:`parallel`."""
    _state["threads"] = int(n)


def get_threads():
    return _state["threads"]


def _pool(workers):
    pool = _state["pool"]
    if pool is not None and _state["pid"] == os.getpid() and pool._max_workers >= workers:
        return pool
    with _lock:
        pool = _state["pool"]
        if pool is None or _state["pid"] != os.getpid() or pool._max_workers < workers:
            if pool is not None and _state["pid"] == os.getpid():
                pool.shutdown(wait=False)
            pool = _state["pool"] = ThreadPoolExecutor(workers, thread_name_prefix=_PREFIX)
            _state["pid"] = os.getpid()
    return pool


def parts(n, nbytes):
    """How many slabs to cut ``n`` rows moving ``nbytes`` into (1: do it in one go, as
    always inside a pool thread: a slab that split again could wait on itself)."""
    if _state["threads"] == 1 or threading.current_thread().name.startswith(_PREFIX):
        return 1
    return max(1, min(_state["threads"], n, nbytes // MIN_BYTES))


def parallel(fn, n, nbytes):
    """Call ``fn(lo, hi)`` over consecutive slabs covering ``range(n)``, in parallel when
    the work (``nbytes`` of memory traffic in all) is worth it. The slabs must touch
    disjoint memory. Exceptions propagate (the first slab's, else the first raised)."""
    k = parts(n, nbytes)
    if k == 1:
        fn(0, n)
        return
    bounds = [n * i // k for i in range(k + 1)]
    pool = _pool(k - 1)
    futures = [pool.submit(fn, bounds[i], bounds[i + 1]) for i in range(1, k)]
    try:
        fn(bounds[0], bounds[1])
    finally:
        for f in futures:  # every slab done (they write the caller's memory) before leaving
            f.exception()
    for f in futures:
        f.result()
