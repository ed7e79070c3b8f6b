"""Per-call cost of the view-family ops and F.linear, tracegrad against torch (eager).

nanoGPT's forward is full of them: per attention layer ``c_attn(x).split(C, dim=2)``,
three ``.view(B, T, nh, hs).transpose(1, 2)`` and ``y.transpose(1, 2).contiguous().view(B,
T, C)``. On (8, 32, 32) float32 tensors the view itself is a few hundred nanoseconds of
NumPy: what is timed is the Python around it (checks, node, the view's links to its base).
Each op runs in grad mode (its operand requires grad) and under ``no_grad``.

Run: ``python benchmarks/view_ops.py`` (``--quick`` for fewer repeats). Needs torch.
Each figure is the best of several rounds, tracegrad and torch alternating.
"""
import argparse
import contextlib

import numpy as np

import tracegrad as tg

from chain import best_times


def cases(lib):
    rng = np.random.default_rng(0)
    x = lib.tensor(rng.standard_normal((8, 32, 32)).astype("f"), requires_grad=True)
    w = lib.tensor((rng.standard_normal((96, 32)) * 0.1).astype("f"), requires_grad=True)
    q = lib.tensor(rng.standard_normal((8, 2, 32, 16)).astype("f"), requires_grad=True)
    y = x * 1.0  # (a non-leaf, as in a model)
    F = lib.nn.functional
    return {
        "view": lambda: y.view(8, 32, 2, 16),
        "view+transpose": lambda: y.view(8, 32, 2, 16).transpose(1, 2),
        "split(16, dim=2)": lambda: y.split(16, dim=2),
        "transpose.contiguous": lambda: q.transpose(1, 2).contiguous(),
        "view(-1)": lambda: y.view(-1),
        "F.linear (no bias)": lambda: F.linear(y, w),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats")
    args = parser.parse_args()
    import torch
    torch.set_num_threads(1)
    mine, theirs = cases(tg), cases(torch)
    repeats, inner = (5, 200) if args.quick else (15, 1000)
    print(f"{'op':24s} {'mode':8s} {'tracegrad us':>13s} {'torch us':>9s} {'ratio':>6s}")
    for mode in ("grad", "no_grad"):
        for name in mine:
            n = max(inner // 10, 20) if "linear" in name else inner
            with (tg.no_grad() if mode == "no_grad" else contextlib.nullcontext()), \
                    (torch.no_grad() if mode == "no_grad" else contextlib.nullcontext()):
                t = best_times({"tg": mine[name], "torch": theirs[name]}, repeats, n)
            print(f"{name:24s} {mode:8s} {t['tg'] * 1e6:13.2f} {t['torch'] * 1e6:9.2f} {t['tg'] / t['torch']:6.2f}")


if __name__ == "__main__":
    main()
