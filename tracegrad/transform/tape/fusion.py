"""Elementwise fusion for compiled tapes on CUDA, and the switch for the CPU's too.

On a GPU every elementwise line of a compiled tape (``g = dh * (1 - h * h)`` is three) is
a kernel launch and a round trip of its operands through device memory. Where the array
namespace has a fusing compiler (CuPy's ``cupy.fuse``), runs of consecutive elementwise
lines -- the ones the shared emitter writes as operators or ``xp.<ufunc>`` calls -- are
emitted as one helper function compiled into a single kernel. The generated source shows
the helper, so what was fused stays readable.

On by default; ``tracegrad.set_fusion(False)`` (or ``with tracegrad.fusion(False):``)
turns it off for functions compiled from then on. NumPy has no fusing compiler: on the
CPU, runs of the same lines become Numba kernels once a staged variant is hot (see
:mod:`.cpu_fusion` and :mod:`tracegrad.transform.jit`); the same switch turns that off.
"""
import contextlib

__all__ = ["fusion_enabled", "set_fusion", "fusion", "fusable_runs"]

_ENABLED = [True]

MIN_RUN = 2    # a single line gains nothing from a helper of its own
MAX_ARGS = 24  # arrays in and out of one fused kernel (its parameters are limited)


def fusion_enabled():
    return _ENABLED[0]


def set_fusion(enabled):
    """Turn elementwise fusion on or off for tapes compiled from now on; returns the
    previous setting."""
    previous, _ENABLED[0] = _ENABLED[0], bool(enabled)
    return previous


@contextlib.contextmanager
def fusion(enabled=True):
    """``with tracegrad.fusion(False):`` compiles the tapes staged inside without fusion."""
    previous = set_fusion(enabled)
    try:
        yield
    finally:
        set_fusion(previous)


def fusable_runs(keys, min_run=MIN_RUN):
    """``[(start, stop), ...]``: the maximal runs of consecutive equal keys other than None
    in ``keys`` (one per eqn: None where it cannot be fused, else its result's shape), at
    least ``min_run`` long. A fused kernel gives every output the broadcast shape of
    all its inputs, so one run holds one result shape."""
    runs, start, current = [], None, None
    for i, key in enumerate(list(keys) + [None]):
        if start is not None and key != current:
            if i - start >= min_run:
                runs.append((start, i))
            start = None
        if key is not None and start is None:
            start, current = i, key
    return runs
