"""What the benchmark scripts share: the timing loop, and the 200-step tanh chain written
by hand in NumPy and with HIPS autograd (the baselines of the eager and staged runs)."""
import time

import numpy as np

STEPS, WIDTH = 200, 16


def best_times(fns, repeats, inner):
    """The best time per call of each function in ``fns`` (a dict), measured in alternating
    rounds so that a slow spell of the machine affects every contender alike. (torch is
    timed in its own block: its OpenMP threads keep spinning after each call and would
    slow whatever runs next.)"""
    for fn in fns.values():
        fn()
    times = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            start = time.perf_counter()
            for _ in range(inner):
                fn()
            times[name].append((time.perf_counter() - start) / inner)
    return {name: min(ts) for name, ts in times.items()}


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
