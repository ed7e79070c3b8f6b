"""Staged (tape) differentiation, as ratios against hand-written NumPy (and HIPS autograd
when installed).

  chain:   grad of 200 steps of ``y = np.tanh(y * 1.01 + 0.1)`` on 16 float32 values,
           traced once, then replayed from the cache (warm) -- the compiled code against
           the same forward and backward written by hand;
  staging: tracing, differentiating, optimising and compiling that function once (a new
           ``grad`` object each time, so nothing is cached);
  memory:  peak memory (tracemalloc) of the gradient of a 100-layer tanh MLP
           (width 256, batch 64, float64) against the hand-written backward.

Run: ``python benchmarks/staged.py`` (``--quick`` for fewer repeats).
"""
import argparse
import importlib.util
import time
import tracemalloc

import numpy as np

import tracegrad as tg

from chain import STEPS, WIDTH, best_times, chain_autograd, chain_numpy

LAYERS, HIDDEN, BATCH = 100, 256, 64


# -- chain --------------------------------------------------------------------------------------

def chain(y):
    for _ in range(STEPS):
        y = np.tanh(y * 1.01 + 0.1)
    return y.sum()


def bench_chain(repeats):
    x0 = np.linspace(-1, 1, WIDTH).astype(np.float32)
    g = tg.grad(chain)
    fns = {"numpy (hand-written)": chain_numpy(x0), "tracegrad grad (tape)": lambda: g(x0)}
    if importlib.util.find_spec("autograd"):
        fns["autograd (HIPS)"] = chain_autograd(x0)
    np.testing.assert_allclose(g(x0), chain_numpy(x0)(), rtol=1e-5)
    times = best_times(fns, repeats, 20)
    base = times["numpy (hand-written)"]
    print(f"chain: grad of tanh(y*1.01+0.1), {WIDTH} float32, {STEPS} steps, warm cache")
    for name, t in times.items():
        ratio = "" if t is base else f"{t / base:8.2f}x numpy"
        print(f"  {name:24s} {t * 1e6:9.1f} us/call{ratio}")
    if "autograd (HIPS)" in times:
        print(f"  tracegrad is {times['autograd (HIPS)'] / times['tracegrad grad (tape)']:.1f}x "
              "faster than HIPS autograd")


def bench_staging(repeats):
    x0 = np.linspace(-1, 1, WIDTH).astype(np.float32)
    tg.grad(chain)(x0)  # imports and one-time set-up out of the way
    best = float("inf")
    for _ in range(max(repeats, 3)):
        start = time.perf_counter()
        tg.grad(chain)(x0)  # a new grad object: trace, sweep, optimise, compile
        best = min(best, time.perf_counter() - start)
    print(f"staging: trace + differentiate + optimise + compile the chain once: {best * 1e3:.1f} ms")


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
    g = tg.grad(mlp_loss, argnums=1)
    hand_peak, hand = peak_memory(lambda: mlp_by_hand(x, weights))
    tape_peak, tape = peak_memory(lambda: g(x, weights))
    for a, b in zip(hand, tape):
        np.testing.assert_allclose(b, a, rtol=1e-8, atol=1e-10)
    print(f"memory: gradient of a {LAYERS}-layer tanh MLP ({HIDDEN} wide, batch {BATCH}, float64)")
    print(f"  numpy (hand-written)   {hand_peak / 2**20:8.1f} MiB peak")
    print(f"  tracegrad grad (tape)  {tape_peak / 2**20:8.1f} MiB peak   {tape_peak / hand_peak:.2f}x numpy")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer timed rounds")
    args = parser.parse_args()
    repeats = 3 if args.quick else 9
    bench_chain(repeats)
    bench_staging(repeats)
    bench_memory()


if __name__ == "__main__":
    main()
