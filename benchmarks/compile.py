"""``tracegrad.compile``: a staged MLP training step against torch's eager one.

  mlp:   one SGD step of the 784-512-512-10 ReLU network of eager_overhead.py at batch
         256 (float32): array work, where staging saves the per-operation overhead and
         the autograd graph only;
  small: the same step for a 32-64-64-10 network at batch 16, where per-operation
         overhead is most of the time.

Each network runs as a user writes it (nn.Sequential, F.cross_entropy, optim.SGD with
zero_grad / backward / step); "compiled" stages ``F.cross_entropy(model(x), y)`` with
``tracegrad.compile`` (the forward and the backward ``loss.backward()`` runs), the
optimizer step staying eager. "compiled module" compiles only the model, as
``model = torch.compile(model)`` does.

Run: ``python benchmarks/compile.py`` (``--quick`` for fewer repeats).
"""
import argparse
import importlib.util

import numpy as np

import tracegrad as tg

from chain import best_times
from eager_overhead import init_params, mlp_eager

SMALL = (32, 64, 64, 10)


def mlp_step(lib, sizes, batch, rng, compiled=None):
    """One SGD training step of a ReLU MLP with ``sizes`` at ``batch``; ``compiled``:
    None (eager), "loss" (the loss function staged) or "module" (the model staged)."""
    nn = lib.nn
    layers = []
    for a, b in zip(sizes[:-1], sizes[1:]):
        layers += [nn.Linear(a, b), nn.ReLU()]
    model = nn.Sequential(*layers[:-1])
    params = [p.detach().numpy().copy() for p in model.parameters()]
    x = rng.standard_normal((batch, sizes[0])).astype(np.float32)
    y = rng.integers(0, sizes[-1], batch)
    return _step(lib, model, params, x, y, compiled)


def _step(lib, model, params, x, y, compiled):
    with lib.no_grad():
        for p, v in zip(model.parameters(), params):
            p.copy_(lib.tensor(v))
    optimizer = lib.optim.SGD(model.parameters(), lr=0.01)
    xt, yt = lib.tensor(x), lib.tensor(y)
    run = model

    def loss_of(x, y):
        return lib.nn.functional.cross_entropy(run(x), y)
    if compiled == "module":
        run = lib.compile(model)
    elif compiled == "loss":
        loss_of = lib.compile(loss_of)

    def step():
        optimizer.zero_grad()
        loss = loss_of(xt, yt)
        loss.backward()
        optimizer.step()
        return loss
    return step


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
    args = parser.parse_args()
    repeats = 3 if args.quick else 9
    has_torch = importlib.util.find_spec("torch") is not None
    if has_torch:
        import torch
        torch.set_num_threads(max(1, torch.get_num_threads()))
    for title, sizes, batch, inner, unit, scale in (
            ("mlp: 784-512-512-10, batch 256, float32, one SGD step", (784, 512, 512, 10), 256, 3, "ms/step", 1e3),
            (f"small: {'-'.join(map(str, SMALL))}, batch 16, float32, one SGD step", SMALL, 16, 200, "us/step", 1e6)):
        rows = {}
        for name, compiled in (("tracegrad eager", None), ("tracegrad compiled", "loss"),
                               ("tracegrad compiled module", "module")):
            rows[name] = mlp_step(tg, sizes, batch, np.random.default_rng(0), compiled)
        rows = best_times(rows, repeats, inner)
        if has_torch:
            rows.update(best_times({"torch": mlp_step(torch, sizes, batch, np.random.default_rng(0))},
                                   repeats, inner))
        report(title, rows, unit, scale)
        print()


if __name__ == "__main__":
    main()
