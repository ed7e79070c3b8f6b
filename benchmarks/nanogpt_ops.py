"""layer_norm, scaled_dot_product_attention, cross_entropy and embedding at a tiny
nanoGPT's sizes (batch 8, 32 tokens, width 32, 2 heads, 13 characters): tracegrad
against torch, in no_grad (nanoGPT's evaluation), recording (the training forward) and
forward + backward.

    OPENBLAS_NUM_THREADS=1 python benchmarks/nanogpt_ops.py   # --quick for fewer rounds; names filter

The query, key and value are transposed views of a split projection, as in nanoGPT. The
optional compiled kernels (tracegrad/rules/compiled.py) are kept from loading, as in a
run of nanoGPT's length (their savings never pay for Numba's start there). Each figure
is the best of several rounds of CPU time of this process, the two libraries' rounds
alternating (a shared machine's load then weighs on both alike).
"""
import argparse
import time

import numpy as np

import tracegrad
from tracegrad.rules import compiled


def cases(lib, rng):
    F = lib.nn.functional
    arr = lambda *s: rng.standard_normal(s).astype(np.float32)
    leaf = lambda a: lib.tensor(a, requires_grad=True)
    x, w, lin, logits, table = leaf(arr(8, 32, 32)), leaf(np.ones(32, np.float32)), leaf(arr(8, 32, 96)), \
        leaf(arr(256, 13)), leaf(arr(13, 32))
    q, k, v = [a.view(8, 32, 2, 16).transpose(1, 2) for a in lin.split(32, dim=2)]
    targets, idx = lib.tensor(rng.integers(0, 13, 256)), lib.tensor(rng.integers(0, 13, (8, 32)))
    gx, gy = lib.tensor(arr(8, 32, 32)), lib.tensor(arr(8, 2, 32, 16))
    ops = {
        "layer_norm": (lambda: F.layer_norm(x, (32,), w, None, 1e-5), gx),
        "sdpa": (lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True), gy),
        "cross_entropy": (lambda: F.cross_entropy(logits, targets, ignore_index=-1), None),
        "embedding": (lambda: F.embedding(idx, table), gx),
    }
    out = {}
    for name, (f, g) in ops.items():
        def nograd(f=f):
            with lib.no_grad():
                f()
        out[name + " no_grad"] = nograd
        out[name + " forward"] = f
        out[name + " fwd+bwd"] = (lambda f=f, g=g: f().backward(g)) if g is not None else (lambda f=f: f().backward())
    return out


def cpu_time(f, n):
    t = time.process_time()
    for _ in range(n):
        f()
    return (time.process_time() - t) / n


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("names", nargs="*", help="only the cases whose name holds one of these")
    args = ap.parse_args()
    import torch
    torch.set_num_threads(1)
    compiled.FIRST_LOAD_S = compiled.LOAD_S = float("inf")
    ours, theirs = cases(tracegrad, np.random.default_rng(0)), cases(torch, np.random.default_rng(0))
    rounds, calls = (3, 50) if args.quick else (9, 200)
    print(f"{'case':26s} {'tracegrad':>10s} {'torch':>10s}  ratio")
    for name in ours:
        if args.names and not any(s in name for s in args.names):
            continue
        a = b = float("inf")
        for f in (ours[name], theirs[name]):
            cpu_time(f, 20)
        for _ in range(rounds):
            a = min(a, cpu_time(ours[name], calls))
            b = min(b, cpu_time(theirs[name], calls))
        print(f"{name:26s} {a * 1e6:8.1f}us {b * 1e6:8.1f}us  {a / b:5.2f}", flush=True)


if __name__ == "__main__":
    main()
