"""``tracegrad.compile``: a staged MLP training step against torch's eager one.

One SGD step (zero_grad / forward / cross-entropy / backward / step) of a ReLU MLP,
written as a user writes it (nn.Sequential of nn.Linear + nn.ReLU, F.cross_entropy,
optim.SGD), at three sizes:

  small:  32-64-64-10 at batch 16 -- per-operation overhead is most of the time;
  medium: 256-256-256-10 at batch 64;
  large:  784-512-512-10 at batch 256 (eager_overhead.py's network) -- matrix products
          are most of the time; hand-written NumPy is the floor here.

Contenders: tracegrad eager; "tracegrad compiled", where ``F.cross_entropy(model(x), y)``
is one ``tracegrad.compile``d function (its forward and the backward ``loss.backward()``
runs are staged; the optimizer stays eager); "tracegrad compiled module", where only the
model is compiled (``model = torch.compile(model)``); torch eager. Two floors, in plain
NumPy: "hand-written NumPy", the same step written out (forward, softmax cross-entropy,
backward without the input's gradient, SGD update), and "matrix products only", its five
(or more) products and nothing else -- what no staging of this step can go below with
NumPy's BLAS.

Run: ``python benchmarks/compile.py`` (``--quick`` for fewer repeats). By default each
figure is the best wall-clock time of several rounds, each library with its default
threads: each round runs the tracegrad and NumPy contenders, then torch, with a pause
between them for the other's idle threads to stop spinning. ``--cpu-time`` instead runs
every BLAS and torch on one thread, all contenders in the same rounds, and measures
process CPU time, which a busy machine disturbs much less.
"""
import argparse
import importlib.util
import os
import sys
import time

import numpy as np

from chain import best_times

SIZES = {"small": ((32, 64, 64, 10), 16, 200, "us/step", 1e6),
         "medium": ((256, 256, 256, 10), 64, 30, "ms/step", 1e3),
         "large": ((784, 512, 512, 10), 256, 3, "ms/step", 1e3)}


def mlp_step(lib, sizes, batch, rng, compiled=None):
    """One SGD training step of a ReLU MLP with ``sizes`` at ``batch`` (weights and data
    drawn from ``rng``); ``compiled``: None (eager), "loss" (the loss function staged) or
    "module" (the model staged)."""
    nn = lib.nn
    layers = []
    for a, b in zip(sizes[:-1], sizes[1:]):
        layers += [nn.Linear(a, b), nn.ReLU()]
    model = nn.Sequential(*layers[:-1])
    with lib.no_grad():
        for p in model.parameters():
            bound = 1 / np.sqrt(p.shape[-1])
            p.copy_(lib.tensor(rng.uniform(-bound, bound, tuple(p.shape)).astype(np.float32)))
    optimizer = lib.optim.SGD(model.parameters(), lr=0.01)
    x = lib.tensor(rng.standard_normal((batch, sizes[0])).astype(np.float32))
    y = lib.tensor(rng.integers(0, sizes[-1], batch))
    run = lib.compile(model) if compiled == "module" else model

    def loss_of(x, y):
        return nn.functional.cross_entropy(run(x), y)
    if compiled == "loss":
        loss_of = lib.compile(loss_of)

    def step():
        optimizer.zero_grad()
        loss = loss_of(x, y)
        loss.backward()
        optimizer.step()
        return loss
    return step


def numpy_step(sizes, batch, rng, products_only=False):
    """The same SGD step in hand-written NumPy (weights and data drawn as in ``mlp_step``);
    ``products_only``: its matrix products alone."""
    weights, biases = [], []
    for a, b in zip(sizes[:-1], sizes[1:]):
        bound = 1 / np.sqrt(a)
        weights.append(rng.uniform(-bound, bound, (b, a)).astype(np.float32))
        biases.append(rng.uniform(-bound, bound, b).astype(np.float32))
    x = rng.standard_normal((batch, sizes[0])).astype(np.float32)
    y = rng.integers(0, sizes[-1], batch)
    rows = np.arange(batch)

    def products():
        hs = [x]
        for w in weights:
            hs.append(hs[-1] @ w.T)
        g = hs[-1]
        for i in range(len(weights) - 1, -1, -1):
            g.T @ hs[i]
            if i:
                g = g @ weights[i]

    def step():
        hs = [x]
        for i, (w, b) in enumerate(zip(weights, biases)):
            h = hs[-1] @ w.T
            h += b
            if i < len(weights) - 1:
                np.maximum(h, 0, out=h)
            hs.append(h)
        e = np.exp(h - h.max(1, keepdims=True))
        p = e / e.sum(1, keepdims=True)
        loss = -np.log(p[rows, y]).mean()
        g = p
        g[rows, y] -= 1
        g /= batch
        for i in range(len(weights) - 1, -1, -1):
            gw, gb = g.T @ hs[i], g.sum(0)
            if i:
                g = g @ weights[i]
                g *= hs[i] > 0
            weights[i] -= 0.01 * gw
            biases[i] -= 0.01 * gb
        return loss
    return products if products_only else step


def report(title, rows, unit, scale):
    print(title)
    torch_time = rows.get("torch")
    for name, t in rows.items():
        line = f"  {name:26s} {t * scale:9.2f} {unit}"
        if torch_time and name != "torch":
            line += f"   {t / torch_time:5.2f}x torch"
        print(line)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats")
    parser.add_argument("--cpu-time", action="store_true",
                        help="one thread everywhere, process CPU time (steadier on a busy machine)")
    parser.add_argument("--sizes", default="small,medium,large")
    args = parser.parse_args()
    if args.cpu_time and os.environ.get("OPENBLAS_NUM_THREADS") != "1":
        os.environ.update(OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
        os.execv(sys.executable, [sys.executable] + sys.argv)  # (BLAS reads them when loaded)
    import tracegrad as tg
    repeats = 3 if args.quick else 9
    clock = time.process_time if args.cpu_time else time.perf_counter
    has_torch = importlib.util.find_spec("torch") is not None
    if has_torch:
        import torch
        if args.cpu_time:
            torch.set_num_threads(1)
    pinned = (f"; OPENBLAS_CORETYPE={os.environ['OPENBLAS_CORETYPE']}"  # (kernels the environment
              if "OPENBLAS_CORETYPE" in os.environ else "")  # chose for NumPy's products)
    for size in args.sizes.split(","):
        sizes, batch, inner, unit, scale = SIZES[size]
        rows = {}
        for name, compiled in (("tracegrad eager", None), ("tracegrad compiled", "loss"),
                               ("tracegrad compiled module", "module")):
            rows[name] = mlp_step(tg, sizes, batch, np.random.default_rng(0), compiled)
        rows["hand-written NumPy"] = numpy_step(sizes, batch, np.random.default_rng(0))
        rows["matrix products only"] = numpy_step(sizes, batch, np.random.default_rng(0), True)
        apart = None
        if has_torch:  # one thread each under --cpu-time: torch then runs among the others;
            torch_step = {"torch": mlp_step(torch, sizes, batch, np.random.default_rng(0))}
            if args.cpu_time:  # else in a block of its own in each round (its threads and
                rows.update(torch_step)  # BLAS's would spin against each other)
            else:
                apart = torch_step
        rows = best_times(rows, repeats, inner, apart=apart, clock=clock)
        report(f"{size}: {'-'.join(map(str, sizes))}, batch {batch}, float32, one SGD step"
               f"{' (CPU time, 1 thread)' if args.cpu_time else f' (wall clock, default threads; {os.cpu_count()} cores)'}"
               f"{pinned}", rows, unit, scale)
        print()


if __name__ == "__main__":
    main()
