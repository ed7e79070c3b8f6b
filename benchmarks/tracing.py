"""The cost of staging long tapes: tracing, sweeping, optimising and compiling a function
that records ~100k primitives, and what that leaves behind in ``linecache``.

  tanh3:    ``for i in range(33000): x = np.tanh(x) * 0.5 + x`` on 3 floats (99k forward
            ops; the values are negligible, so memory is the tape's own);
  tanh1000: the same loop on 1000 floats (the values are 8 KB each: reverse mode has to
            keep one per step);
  scale:    ``for i in range(100000): x = x * 1.0001`` on 3 floats;
  index:    ``x[i % 3] = x[i % 3] * 0.999 + y`` 20000 times (four ops per step: a read,
            two arithmetic ops and an index write);
  linecache: grad of a small function called with 1500 distinct shapes, then dropped.

For each case a fresh child process makes the first call (trace + reverse sweep +
optimise + compile + result) and then replays the cached variant. Figures:

  first call   wall time of the first call (and the process's CPU time, steadier on a
               busy machine);
  replay       wall time of a later call of the same signature (the compiled code);
  B/op         bytes of peak resident memory per recorded forward op. Peak RSS is read
               from /proc (VmHWM, reset before each measured call through clear_refs).
               Small arrays: (peak of the first call - RSS before it) / ops. 1000-float
               arrays: (peak of the first call - peak of a replay) / ops -- a replay holds
               what reverse mode inherently keeps (every step's value) and the compiled
               variant, so the difference is the staging's own cost. The raw growth is
               printed too.

Run: ``python benchmarks/tracing.py`` (``--scale 0.1`` for a tenth of the iterations;
``--cases tanh3,index`` to pick cases).
"""
import argparse
import ctypes
import gc
import json
import os
import re
import subprocess
import sys
import time

import numpy as np

CASES = {  # name: (iterations, length of x, what one step records)
    "tanh3": (33000, 3, "x = np.tanh(x) * 0.5 + x"),
    "tanh1000": (33000, 1000, "x = np.tanh(x) * 0.5 + x"),
    "scale": (100000, 3, "x = x * 1.0001"),
    "index": (20000, 3, "x[i % 3] = x[i % 3] * 0.999 + y"),
}
SHAPES = 1500


def _status(field):
    with open("/proc/self/status") as f:
        return int(re.search(rf"{field}:\s+(\d+)", f.read()).group(1)) * 1024


def _reset_peak():
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")


def _function(case, n):
    if case == "index":
        def f(x, y):
            x = x + 0.0
            for i in range(n):
                x[i % 3] = x[i % 3] * 0.999 + y
            return np.sum(x)
    elif case == "scale":
        def f(x):
            for i in range(n):
                x = x * 1.0001
            return np.sum(x)
    else:
        def f(x):
            for i in range(n):
                x = np.tanh(x) * 0.5 + x
            return np.sum(x)
    return f


def _measured(fn):
    """``(seconds, peak RSS, RSS before)`` of one call of ``fn``. Freed heap memory is
    handed back to the system first (malloc_trim), so that what an earlier call freed
    does not count as this call's."""
    gc.collect()
    ctypes.CDLL("libc.so.6").malloc_trim(0)
    _reset_peak()
    before = _status("VmRSS")
    start, cpu = time.perf_counter(), time.process_time()
    fn()
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    return (seconds, cpu), _status("VmHWM"), before


def child(case, scale):
    """One case, in this (fresh) process; prints a JSON line of figures."""
    import tracegrad as tg
    iters, width, _ = CASES[case]
    n = max(1, int(iters * scale))
    x = np.linspace(0.1, 0.2, width)
    args = (x, np.float64(0.5)) if case == "index" else (x,)
    tg.grad(_function(case, 3), mode="tape")(*args)  # imports and one-time set-up
    g = tg.grad(_function(case, n), mode="tape")
    (first, first_cpu), peak_first, before = _measured(lambda: g(*args))
    (replay, _), peak_replay, _ = _measured(lambda: g(*args))
    # ops counted after the measurements (a tracing of its own)
    ops = len(tg.trace(_function(case, n))(*args).eqns)
    print(json.dumps(dict(case=case, n=n, ops=ops, first=first, first_cpu=first_cpu, replay=replay,
                          growth=peak_first - before, over_replay=peak_first - peak_replay)))


def child_linecache(scale):
    import linecache
    import tracegrad as tg

    def tagged(tag):
        return sum(1 for k in list(linecache.cache) if k.startswith(f"<{tag}:"))

    def f(x):
        return np.sum(np.tanh(x) * x)
    shapes = max(40, int(SHAPES * scale))
    g = tg.grad(f, mode="tape")
    for k in range(1, shapes + 1):
        g(np.ones(k))
    gc.collect()
    after = tagged("tape")
    del g
    gc.collect()
    dropped = tagged("tape")
    print(json.dumps(dict(case="linecache", shapes=shapes, after=after, dropped=dropped)))


def run_child(case, scale):
    cmd = [sys.executable, __file__, "--child", case, "--scale", str(scale)]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True,
                         cwd=os.path.dirname(os.path.abspath(__file__)))
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--scale", type=float, default=1.0, help="fraction of the iterations")
    p.add_argument("--cases", default=",".join([*CASES, "linecache"]))
    p.add_argument("--child", help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.child == "linecache":
        return child_linecache(a.scale)
    if a.child:
        return child(a.child, a.scale)
    print("staging long tapes: first call = trace + reverse sweep + optimise + compile + result")
    for case in a.cases.split(","):
        r = run_child(case, a.scale)
        if case == "linecache":
            print(f"linecache: grad called with {r['shapes']} distinct shapes: {r['after']} "
                  f"<tape:...> entries while cached, {r['dropped']} after `del` + gc")
            continue
        iters, width, step = CASES[case]
        per_op = r["over_replay"] if width > 3 else r["growth"]
        print(f"{case:9s} {step} x{r['n']}, x of {width} floats: {r['ops']} forward ops")
        print(f"          first call {r['first']:7.2f} s (CPU {r['first_cpu']:6.2f} s, "
              f"{r['first_cpu'] / r['ops'] * 1e6:6.1f} us/op)"
              f"   replay {r['replay'] * 1e3:8.1f} ms   "
              f"first/replay {r['first'] / max(r['replay'], 1e-9):6.0f}x")
        print(f"          peak RSS growth {r['growth'] / 2**20:7.1f} MiB, over a replay's "
              f"{r['over_replay'] / 2**20:7.1f} MiB   -> {per_op / r['ops']:7.0f} B/op")


if __name__ == "__main__":
    main()
