"""Convolution and pooling, forward + backward, tracegrad against torch eager on the CPU.

Each case times ``op(x, ...).sum().backward()`` with the input (and weight) requiring grad,
on ResNet-like float32 shapes, and the forward alone under ``no_grad``:

  conv3x3:      batch 8, 64 -> 64 channels, 16x16, 3x3, padding 1 (a ResNet basic block)
  conv3x3/s2:   the same with stride 2 (the first conv of a downsampling block)
  conv1x1/s2:   64 -> 128 channels, 1x1, stride 2 (a downsampling shortcut)
  stem7x7:      batch 8, 3 -> 64 channels, 64x64, 7x7, stride 2, padding 3 (input without grad)
  small conv:   batch 2, 4 -> 8 channels, 8x8, 3x3 (per-call overhead)
  maxpool:      batch 8, 64 channels, 32x32, 3x3, stride 2, padding 1
  avgpool:      batch 8, 64 channels, 16x16, 2x2
  gap:          adaptive_avg_pool2d to 1x1 of batch 8, 512 channels, 4x4

Run: ``python benchmarks/conv.py`` (``--quick`` for fewer repeats, ``--threads N`` to give
NumPy's BLAS and torch N threads each; the default is every core). Each figure is the best of
several timed rounds after a warm-up; torch runs in its own block (its OpenMP threads keep
spinning after each call and would slow whatever runs next). Ratios above 1 mean tracegrad is
slower. On a shared machine, ``--threads 1`` gives the steadiest figures.
"""
import argparse
import importlib.util
import os
import sys
import time

if "--threads" in sys.argv[:-1]:  # BLAS reads its thread count once, when NumPy loads
    _n = sys.argv[sys.argv.index("--threads") + 1]
    for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[_var] = _n

import numpy as np  # noqa: E402

import tracegrad as tg  # noqa: E402

CASES = {
    "conv3x3": dict(x=(8, 64, 16, 16), w=(64, 64, 3, 3), kw=dict(padding=1)),
    "conv3x3/s2": dict(x=(8, 64, 16, 16), w=(64, 64, 3, 3), kw=dict(stride=2, padding=1)),
    "conv1x1/s2": dict(x=(8, 64, 16, 16), w=(128, 64, 1, 1), kw=dict(stride=2)),
    "stem7x7": dict(x=(8, 3, 64, 64), w=(64, 3, 7, 7), kw=dict(stride=2, padding=3), x_grad=False),
    "small conv": dict(x=(2, 4, 8, 8), w=(8, 4, 3, 3), kw=dict(padding=1)),
    "maxpool": dict(x=(8, 64, 32, 32), pool="max_pool2d", kw=dict(kernel_size=3, stride=2, padding=1)),
    "avgpool": dict(x=(8, 64, 16, 16), pool="avg_pool2d", kw=dict(kernel_size=2)),
    "gap": dict(x=(8, 512, 4, 4), pool="adaptive_avg_pool2d", kw=dict(output_size=1)),
}


def best_time(fn, repeats, inner):
    fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(inner):
            fn()
        times.append((time.perf_counter() - start) / inner)
    return min(times)


def make(lib, case, arrays, backward):
    """A function running one case with ``lib`` (tracegrad or torch)."""
    F = lib.nn.functional
    x = lib.tensor(arrays["x"], requires_grad=backward and case.get("x_grad", True))
    if "pool" in case:
        op = getattr(F, case["pool"])
        args = (x,)
    else:
        op = F.conv2d
        args = (x, lib.tensor(arrays["w"], requires_grad=backward))
    kw = case["kw"]
    if backward:
        def run():
            op(*args, **kw).sum().backward()
    else:
        def run():
            with lib.no_grad():
                op(*args, **kw)
    return run


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1,
                        help="threads for NumPy's BLAS, tracegrad and torch (default: every core)")
    args = parser.parse_args()
    repeats = 3 if args.quick else 7
    tg.set_num_threads(args.threads)  # tracegrad's intra-op threads (copies, normalisation)
    has_torch = importlib.util.find_spec("torch") is not None
    rng = np.random.default_rng(0)
    inputs = {name: {k: rng.standard_normal(case[k]).astype(np.float32) for k in ("x", "w") if k in case}
              for name, case in CASES.items()}
    mine = {(name, bw): best_time(make(tg, case, inputs[name], bw), repeats, 10 if "small" in name else 3)
            for name, case in CASES.items() for bw in (False, True)}
    theirs = {}
    if has_torch:
        import torch
        torch.set_num_threads(args.threads)
        theirs = {(name, bw): best_time(make(torch, case, inputs[name], bw), repeats,
                                        10 if "small" in name else 3)
                  for name, case in CASES.items() for bw in (False, True)}
    print(f"threads: {args.threads} (NumPy's BLAS, tracegrad's intra-op threads and torch)")
    print(f"{'case':12s} {'pass':17s} {'tracegrad':>11s}" + (f" {'torch':>11s} {'ratio':>7s}" if theirs else ""))
    for (name, bw), t in mine.items():
        line = f"{name:12s} {'forward+backward' if bw else 'forward':17s} {t * 1e3:8.3f} ms"
        if theirs:
            line += f" {theirs[name, bw] * 1e3:8.3f} ms {t / theirs[name, bw]:6.2f}x"
        print(line)


if __name__ == "__main__":
    main()
