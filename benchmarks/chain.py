"""What the benchmark scripts share: the timing loop, the allocator setting of the runs on
large arrays, and the 200-step tanh chain written by hand in NumPy and with HIPS autograd
(the baselines of the eager and staged runs)."""
import ctypes
import sys
import time

import numpy as np

STEPS, WIDTH = 200, 16


def best_times(fns, repeats, inner, *, apart=None, clock=time.perf_counter, pause=0.3):
    """The best time per call of each function in ``fns`` (a dict), measured in alternating
    rounds after a warm-up, so that a slow spell of the machine affects every contender
    alike. ``apart``: contenders (torch's) that run in a block of their own in each round,
    with ``pause`` seconds before and after it: their OpenMP threads, and NumPy's BLAS
    threads, keep spinning for a while after a call that used them and would slow
    whatever runs next. ``clock``: ``time.process_time`` measures CPU time instead."""
    groups = [fns] + ([apart] if apart else [])
    for group in groups:
        for fn in group.values():
            fn()
    times = {name: [] for group in groups for name in group}
    for _ in range(repeats):
        for group in groups:
            if group is apart:
                time.sleep(pause)
            for name, fn in group.items():
                start = clock()
                for _ in range(inner):
                    fn()
                times[name].append((clock() - start) / inner)
            if group is apart:
                time.sleep(pause)
    return {name: min(ts) for name, ts in times.items()}


HEAP_PAD = 256 << 20  # bytes glibc keeps above the heap's top (M_TOP_PAD)


def hold_heap(pad=HEAP_PAD):
    """Ask glibc's malloc to keep ``pad`` bytes of freed memory instead of returning it to
    the system; True where that was done (glibc, Linux).

    On arrays of megabytes the timings otherwise measure the allocator: when a call frees
    its arrays, glibc may give the pages back, and the next call faults them in again
    (each fault zeroes a page; on the development VM 8,000 of them, ~32 MB, cost ~17 ms,
    40% of the hand-written 2**20 chain). Whether it happens depends on what else the
    process allocated, not on the contender timed: in one process every contender but
    the fused tape faulted ~32 MB a call, in another none did. A pad larger than one
    call's arrays makes the steady state of a loop, no faults, the same for all."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    return bool(mallopt(-2, pad))  # M_TOP_PAD


def chain_numpy(x0, steps=STEPS):
    """Forward and backward of the chain by hand: the activations kept, then reused."""
    def run():
        x, outs = x0, []
        for _ in range(steps):
            x = np.tanh(x * 1.01 + 0.1)
            outs.append(x)
        g = np.ones_like(x)
        for y in reversed(outs):
            g = g * (1 - y * y) * 1.01
        return g
    return run


def chain_autograd(x0):
    import autograd
    import autograd.numpy as anp

    def f(x):
        for _ in range(STEPS):
            x = anp.tanh(x * 1.01 + 0.1)
        return anp.sum(x)
    g = autograd.grad(f)
    return lambda: g(x0)
