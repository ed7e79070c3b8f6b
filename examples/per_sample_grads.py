"""Per-sample gradients of the digits convnet with ``func.vmap(func.grad(...))``.

    python examples/per_sample_grads.py [--batch 64]

PyTorch's per-sample-gradients recipe with the import changed: the model's parameters are
pulled out with ``dict(model.named_parameters())``, ``func.functional_call`` runs the model
on them for one sample, ``func.grad`` differentiates that sample's loss, and ``func.vmap``
maps it over the batch in one call. The loop it replaces (one backward pass per sample)
gives the same numbers; the script prints both timings and the largest difference.
"""
import argparse
import time

import tracegrad as torch
from tracegrad import nn
from tracegrad.datasets import digits_split
from tracegrad.func import functional_call, grad, vmap
from tracegrad.nn import functional as F


def make_model():
    """The convnet of examples/train_digits.py, smaller."""
    return nn.Sequential(
        nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),   # 8 x 4 x 4
        nn.Flatten(), nn.Linear(8 * 4 * 4, 10))


def per_sample_grads_vmap(model, x, y):
    params = {k: v.detach() for k, v in model.named_parameters()}

    def sample_loss(params, sample, target):
        prediction = functional_call(model, params, (sample.unsqueeze(0),))
        return F.cross_entropy(prediction, target.unsqueeze(0))

    return vmap(grad(sample_loss), in_dims=(None, 0, 0))(params, x, y)


def per_sample_grads_loop(model, x, y):
    grads = []
    for sample, target in zip(x, y):
        loss = F.cross_entropy(model(sample.unsqueeze(0)), target.unsqueeze(0))
        grads.append(torch.autograd.grad(loss, list(model.parameters())))
    return {name: torch.stack([g[i] for g in grads])
            for i, (name, _) in enumerate(model.named_parameters())}


def main(batch=64, seed=0, log=print):
    """Return the largest absolute difference between the two methods' gradients."""
    torch.manual_seed(seed)
    (x, y), _ = digits_split()
    x, y = (x[:batch] - x.mean()) / x.std(), y[:batch]
    model = make_model()
    start = time.perf_counter()
    batched = per_sample_grads_vmap(model, x, y)
    vmap_s = time.perf_counter() - start
    start = time.perf_counter()
    looped = per_sample_grads_loop(model, x, y)
    loop_s = time.perf_counter() - start
    worst = max((batched[k] - looped[k]).abs().max().item() for k in looped)
    for name, g in batched.items():
        log(f"{name:10s} per-sample gradients {tuple(g.shape)}")
    log(f"vmap {vmap_s * 1e3:.1f} ms, loop {loop_s * 1e3:.1f} ms, largest difference {worst:.2e}")
    return worst


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    main(args.batch, args.seed)
