"""F.gelu on the CPU, float32: tracegrad against torch, in the same process.

    OMP_NUM_THREADS=1 python benchmarks/gelu.py            # exact form, (8, 32, 128)
    OMP_NUM_THREADS=1 python benchmarks/gelu.py --approximate tanh --shape 64 256 512
    OMP_NUM_THREADS=1 python benchmarks/gelu.py --compiled  # the Numba loops, as a long run has them

Three cases per library: the forward under no_grad (an eval), the forward recording its
node, and forward + backward (a training step's share). Each figure is the median of many
calls; the rounds alternate between the libraries, and the ratio printed is the median
of the rounds' ratios (a shared machine's load moves both sides of a round alike). torch
runs on one thread, as NumPy does.
"""
import argparse
import time

import numpy as np

import tracegrad


def cases(lib, x, g, approximate):
    F = lib.nn.functional
    h = lib.tensor(x, requires_grad=True)
    grad = lib.tensor(g)

    def no_grad():
        with lib.no_grad():
            F.gelu(h, approximate=approximate)

    def forward_backward():
        F.gelu(h, approximate=approximate).backward(grad)
        h.grad = None
    return {"no_grad": no_grad, "grad": lambda: F.gelu(h, approximate=approximate),
            "fwd+bwd": forward_backward}


def median_us(fn, calls):
    for _ in range(5):
        fn()
    times = []
    for _ in range(calls):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return sorted(times)[len(times) // 2] * 1e6


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--approximate", default="none", choices=("none", "tanh"))
    parser.add_argument("--shape", type=int, nargs="+", default=[8, 32, 128])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--compiled", action="store_true",
                        help="load the optional compiled kernels at once (by default: once worth it)")
    args = parser.parse_args()
    if args.compiled:
        from tracegrad.rules import compiled
        compiled.FIRST_LOAD_S = compiled.LOAD_S = 0.0
    import torch
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    x = rng.standard_normal(args.shape).astype(np.float32)
    g = rng.standard_normal(args.shape).astype(np.float32)
    ours, theirs = (cases(lib, x, g, args.approximate) for lib in (tracegrad, torch))
    results = {name: [] for name in ours}
    for _ in range(args.rounds):
        for name in ours:
            a, b = median_us(ours[name], args.calls), median_us(theirs[name], args.calls)
            results[name].append((a / b, a, b))
    print(f"F.gelu(approximate={args.approximate!r}), float32 {tuple(args.shape)}"
          + (", compiled kernels" if args.compiled else ""))
    for name, rows in results.items():
        ratio, a, b = sorted(rows)[len(rows) // 2]
        print(f"  {name:8s} tracegrad {a:8.1f} us   torch {b:8.1f} us   ratio {ratio:.2f}x "
              f"(rounds: {min(r[0] for r in rows):.2f}-{max(r[0] for r in rows):.2f})")


if __name__ == "__main__":
    main()
