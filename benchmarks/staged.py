"""Staged differentiation (tape and AST modes), as ratios against hand-written NumPy (and
HIPS autograd when installed).

  chain:   grad of 200 steps of ``y = np.tanh(y * 1.01 + 0.1)`` on 16 float32 values,
           staged once, then run from the cache (warm) -- the tape's compiled code and
           the AST path's generated adjoint against the same forward and backward
           written by hand;
  fused:   the same gradient once its variant is hot (see tracegrad.transform.jit): the
           200-step chain on 16 float32 and a 20-step one on 2**20 float64, with the
           CPU kernels (Numba) and without (``tracegrad.fusion(False)``); the large one
           also with ``tracegrad.set_num_threads(<cores>)`` (kernels run on one thread
           by default, as tracegrad's other intra-op work);
  compile: the 20-step chain's kernel compiled in a fresh process, then read from the
           on-disk cache by a second one (each in a subprocess, a new cache directory);
  staging: tracing, differentiating, optimising and compiling that function once (a new
           ``grad`` object each time, so nothing is cached); and the AST transformation
           of a 50-line function with loops and branches (cache cleared each time);
  memory:  peak memory (tracemalloc) of the gradient of a 100-layer tanh MLP
           (width 256, batch 64, float64) against the hand-written backward.

Run: ``python benchmarks/staged.py`` (``--quick`` for fewer repeats; ``--system-heap`` to
leave glibc's malloc returning freed memory to the system, see chain.hold_heap).
"""
import argparse
import importlib.util
import inspect
import os
import subprocess
import sys
import tempfile
import time
import tracemalloc

import numpy as np

import tracegrad as tg
from tracegrad.transform import jit
from tracegrad.transform.ast import clear_cache

from chain import HEAP_PAD, STEPS, WIDTH, best_times, chain_autograd, chain_numpy, hold_heap

LAYERS, HIDDEN, BATCH = 100, 256, 64


# -- chain --------------------------------------------------------------------------------------

def chain(y):
    for _ in range(STEPS):
        y = np.tanh(y * 1.01 + 0.1)
    return y.sum()


def bench_chain(repeats):
    x0 = np.linspace(-1, 1, WIDTH).astype(np.float32)
    g = tg.grad(chain, mode="tape")
    a = tg.grad(chain, mode="ast")
    fns = {"numpy (hand-written)": chain_numpy(x0), "tracegrad grad (tape)": lambda: g(x0),
           "tracegrad grad (ast)": lambda: a(x0)}
    if importlib.util.find_spec("autograd"):
        fns["autograd (HIPS)"] = chain_autograd(x0)
    np.testing.assert_allclose(g(x0), chain_numpy(x0)(), rtol=1e-5)
    np.testing.assert_allclose(a(x0), chain_numpy(x0)(), rtol=1e-5)
    times = best_times(fns, repeats, 20)
    base = times["numpy (hand-written)"]
    print(f"chain: grad of tanh(y*1.01+0.1), {WIDTH} float32, {STEPS} steps, warm cache")
    for name, t in times.items():
        ratio = "" if t is base else f"{t / base:8.2f}x numpy"
        print(f"  {name:24s} {t * 1e6:9.1f} us/call{ratio}")
    if "autograd (HIPS)" in times:
        for mode in ("tape", "ast"):
            print(f"  tracegrad ({mode}) is {times['autograd (HIPS)'] / times[f'tracegrad grad ({mode})']:.1f}x "
                  "faster than HIPS autograd")


def short_chain(y):
    for _ in range(SHORT_STEPS):
        y = np.tanh(y * 1.01 + 0.1)
    return y.sum()


SHORT_STEPS, LARGE = 20, 2 ** 20


def bench_fused(repeats):
    """Hot gradients with and without CPU kernels, against the chain by hand."""
    if not jit.available():
        print("fused: Numba is not installed (pip install tracegrad[jit]): skipped")
        return
    cases = [(chain, STEPS, WIDTH, np.float32, 20), (short_chain, SHORT_STEPS, LARGE, np.float64, 1)]
    for fn, steps, width, dtype, inner in cases:
        x0 = np.linspace(-1, 1, width).astype(dtype)
        fns = {"numpy (hand-written)": chain_numpy(x0, steps)}
        threaded_fns = {}  # (in a block of their own: their threads keep spinning after a call)
        expected = fns["numpy (hand-written)"]()
        for mode in ("tape", "ast"):
            for fused in (True, False):
                with tg.fusion(fused):
                    g = tg.grad(fn, mode=mode)
                    for _ in range(jit.HOT_CALLS + 2):  # hot: compiled with kernels
                        got = g(x0)
                np.testing.assert_allclose(got, expected, rtol=1e-4 if dtype == np.float32 else 1e-10,
                                           atol=1e-30)
                fns[f"{mode} {'fused' if fused else 'unfused'}"] = (lambda g: lambda: g(x0))(g)
                if fused and mode == "tape" and width >= jit.PARALLEL_MIN and CORES > 1:
                    threaded_fns[f"tape fused, {CORES} threads"] = threaded(g, x0, CORES)
        times = best_times(fns, repeats, inner, apart=threaded_fns or None)
        base = times["numpy (hand-written)"]
        print(f"fused: grad of tanh(y*1.01+0.1), {steps} steps, {width} {np.dtype(dtype).name}, hot")
        for name, t in times.items():
            ratio = "" if t is base else f"{t / base:8.2f}x numpy"
            print(f"  {name:24s} {t * 1e6:11.1f} us/call{ratio}")


CORES = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()


def threaded(g, x0, n):
    """``g(x0)`` with tracegrad's intra-op threads (which large kernels use) set to ``n``."""
    def run():
        before = tg.get_num_threads()
        tg.set_num_threads(n)
        try:
            return g(x0)
        finally:
            tg.set_num_threads(before)
    return run


_COMPILE_SCRIPT = """
import time, numpy as np
start = time.perf_counter()
import numba  # Numba's start-up, once per process: its import and its JIT's first compile
numba.njit(lambda v: v + 1)(1.0)
numba_start = time.perf_counter() - start
import tracegrad as tg
from tracegrad.transform import jit
from staged import short_chain
jit.HOT_CALLS = 0
x0 = np.linspace(-1, 1, 64)
g = tg.grad(short_chain, mode="tape")
start = time.perf_counter(); g(x0); staged = time.perf_counter() - start
start = time.perf_counter(); g(x0); g(x0); kernels = time.perf_counter() - start  # compiled or read
start = time.perf_counter(); g(x0); g(x0); warm = time.perf_counter() - start
print(numba_start, staged, kernels - warm)
"""


def bench_compile(repeats):
    """Staging and kernel compilation of the 20-step chain in fresh processes: the first
    with an empty kernel cache, the second reading it."""
    if not jit.available():
        return
    here = os.path.dirname(os.path.abspath(__file__))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([here, os.path.dirname(here),
                                                       os.environ.get("PYTHONPATH", "")]))
    firsts, cached = [], []
    for _ in range(max(1, repeats // 3)):
        with tempfile.TemporaryDirectory() as cache:
            env["TRACEGRAD_CACHE_DIR"] = cache
            for runs in (firsts, cached):
                out = subprocess.run([sys.executable, "-c", _COMPILE_SCRIPT], env=env, cwd=here,
                                     capture_output=True, text=True, check=True).stdout
                runs.append([float(v) for v in out.split()])
    first, again = min(firsts, key=lambda r: r[2]), min(cached, key=lambda r: r[2])
    print(f"compile: the {SHORT_STEPS}-step chain's kernel in a fresh process (Numba's start-up "
          f"-- import, first JIT compile -- {again[0] * 1e3:.0f} ms before, once per process)")
    print(f"  first process (compiled)  {first[2] * 1e3:9.1f} ms   (staging {first[1] * 1e3:.1f} ms)")
    print(f"  second process (cached)   {again[2] * 1e3:9.1f} ms   (staging {again[1] * 1e3:.1f} ms)")


def bench_staging(repeats):
    x0 = np.linspace(-1, 1, WIDTH).astype(np.float32)
    tg.grad(chain, mode="tape")(x0)  # imports and one-time set-up out of the way
    best = float("inf")
    for _ in range(max(repeats, 3)):
        start = time.perf_counter()
        tg.grad(chain, mode="tape")(x0)  # a new grad object: trace, sweep, optimise, compile
        best = min(best, time.perf_counter() - start)
    print(f"staging: trace + differentiate + optimise + compile the chain once: {best * 1e3:.1f} ms")
    args = (np.linspace(-1, 1, 8), np.linspace(0.5, 1.5, 8))
    expected = tg.grad(fifty_lines, argnums=(0, 1), mode="tape")(*args)
    best = float("inf")
    for _ in range(max(repeats, 3)):
        clear_cache()
        start = time.perf_counter()
        got = tg.grad(fifty_lines, argnums=(0, 1), mode="ast")(*args)  # transform + first call
        best = min(best, time.perf_counter() - start)
    for e, g in zip(expected, got):
        np.testing.assert_allclose(g, e, rtol=1e-10)
    lines = len(inspect.getsource(fifty_lines).splitlines())
    print(f"staging: AST transformation of a {lines}-line function with loops and branches: "
          f"{best * 1e3:.1f} ms")


def fifty_lines(x, w):
    """Loops, branches, a while loop, subscripts, early exits: what a transformation walks."""
    total = 0.0
    h = x * w
    for i in range(3):
        h = np.tanh(h * 0.9 + 0.1)
        if np.sum(h) > 0:
            h = h * w
        else:
            h = h - w * 0.5
        total = total + np.sum(h * h)
    k = 0
    while k < 4:
        k = k + 1
        total = total + np.mean(np.sin(x * k))
        if k == 3:
            break
    buf = np.zeros_like(x)
    for j in range(len(x)):
        if j % 2 == 0:
            continue
        buf[j] = x[j] * w[j]
    total = total + np.sum(buf)
    for a, b in zip(x, w):
        total = total + a * b
    scale = 1.0
    for t, v in enumerate(w):
        scale = scale * 1.01
        total = total + np.exp(-v * v) * scale
    y = x.copy()
    y[0] = y[0] * 2.0
    y[-1] += w[0]
    m = np.maximum(y, 0.0)
    total = total + np.sum(m * m)
    p, q = np.sum(x), np.sum(w)
    p, q = q, p
    total = total + p * q
    s = 0.0
    for r in range(2):
        s = s + np.sum(np.cos(x + r))
    if s > 100.0:
        return total
    u = np.log1p(w * w)
    v = np.sqrt(x * x + 1.0)
    total = total + np.sum(u * v) + s
    z = np.tanh(total)
    return z * 3.0


# -- memory ------------------------------------------------------------------------------------

def mlp_loss(x, weights):
    h = x
    for w in weights:
        h = np.tanh(h @ w)
    return np.sum(h * h)


def mlp_by_hand(x, weights):
    hs = [x]
    for w in weights:
        hs.append(np.tanh(hs[-1] @ w))
    g = 2 * hs[-1]
    grads = [None] * len(weights)
    for i in range(len(weights) - 1, -1, -1):
        g = g * (1 - hs[i + 1] * hs[i + 1])
        hs[i + 1] = None
        grads[i] = hs[i].T @ g
        g = g @ weights[i].T
    return grads


def peak_memory(fn):
    fn()  # warm: compile outside the measurement
    tracemalloc.start()
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    result = fn()
    peak = tracemalloc.get_traced_memory()[1] - base
    tracemalloc.stop()
    return peak, result


def bench_memory():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((BATCH, HIDDEN))
    weights = [rng.standard_normal((HIDDEN, HIDDEN)) / np.sqrt(HIDDEN) for _ in range(LAYERS)]
    hand_peak, hand = peak_memory(lambda: mlp_by_hand(x, weights))
    print(f"memory: gradient of a {LAYERS}-layer tanh MLP ({HIDDEN} wide, batch {BATCH}, float64)")
    print(f"  numpy (hand-written)   {hand_peak / 2**20:8.1f} MiB peak")
    for mode in ("tape", "ast"):
        g = tg.grad(mlp_loss, argnums=1, mode=mode)
        peak, got = peak_memory(lambda: g(x, weights))
        for a, b in zip(hand, got):
            np.testing.assert_allclose(b, a, rtol=1e-8, atol=1e-10)
        print(f"  tracegrad grad ({mode}) {peak / 2**20:8.1f} MiB peak   {peak / hand_peak:.2f}x numpy")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer timed rounds")
    parser.add_argument("--system-heap", action="store_true",
                        help="leave glibc's malloc as it is (see chain.hold_heap)")
    args = parser.parse_args()
    repeats = 3 if args.quick else 9
    if not args.system_heap and hold_heap():
        print(f"heap: glibc keeps {HEAP_PAD >> 20} MiB of freed memory (chain.hold_heap: no page "
              "faults from one call to the next; --system-heap: its default)")
    bench_chain(repeats)
    bench_fused(repeats)
    bench_compile(repeats)
    bench_staging(repeats)
    bench_memory()


if __name__ == "__main__":
    main()
