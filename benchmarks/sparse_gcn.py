"""A graph convolutional network (PyTorch's examples/gcn) training step with a sparse COO
adjacency and sparse features: tracegrad against torch.

    OPENBLAS_NUM_THREADS=1 python benchmarks/sparse_gcn.py      # --nodes 5000 for a larger graph

One Adam step = ``spmm(adj, mm(features, W1))``, relu, a second graph convolution,
log_softmax, NLL loss, backward (the kernels' gradients go through the ``sparse_mm`` rule's
vjp, ``A^T @ g``) and the update. Best of several rounds, in CPU time of this process;
torch on one thread.
"""
import argparse
import time

import numpy as np

import tracegrad


def gcn_step(lib, nodes, features, edges, hidden=16, classes=7, seed=0):
    rng = np.random.RandomState(seed)
    feats = (rng.rand(nodes, features) < 0.1).astype(np.float32)
    pairs = rng.randint(0, nodes, (2, edges))
    adj = (lib.eye(nodes) + lib.sparse_coo_tensor(pairs, lib.ones(edges), (nodes, nodes))).to_sparse()
    x = lib.tensor(feats).to_sparse()
    w1 = lib.tensor(rng.standard_normal((features, hidden)).astype(np.float32) * 0.1, requires_grad=True)
    w2 = lib.tensor(rng.standard_normal((hidden, classes)).astype(np.float32) * 0.1, requires_grad=True)
    y = lib.tensor(rng.randint(0, classes, nodes))
    opt = lib.optim.Adam([w1, w2], lr=0.01)
    F = lib.nn.functional

    def step():
        opt.zero_grad()
        h = lib.relu(lib.spmm(adj, lib.mm(x, w1)))
        F.nll_loss(F.log_softmax(lib.spmm(adj, h @ w2), dim=1), y).backward()
        opt.step()
    return step


def best_time(step, rounds, calls):
    step()
    best = float("inf")
    for _ in range(rounds):
        t = time.process_time()
        for _ in range(calls):
            step()
        best = min(best, (time.process_time() - t) / calls)
    return best


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--nodes", type=int, default=300)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    libs = {"tracegrad": tracegrad}
    try:
        import torch
        torch.set_num_threads(1)
        libs["torch"] = torch
    except ImportError:
        pass
    rounds, calls = (3, 10) if args.quick else (7, 30)
    n = args.nodes
    times = {name: best_time(gcn_step(lib, n, 50, 2 * n), rounds, calls) for name, lib in libs.items()}
    line = ", ".join(f"{name} {t * 1e3:.2f} ms" for name, t in times.items())
    if "torch" in times:
        line += f"  (ratio {times['tracegrad'] / times['torch']:.2f})"
    print(f"GCN Adam step, {n} nodes, {2 * n} edges: {line}")


if __name__ == "__main__":
    main()
