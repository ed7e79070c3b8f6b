"""Eager-mode overhead, as ratios against hand-written NumPy (and torch / HIPS autograd
when installed).

  chain: 200 steps of ``x = tanh(x * 1.01 + 0.1)`` on 16 float32 values (``--dtype
         float64`` for doubles), forward and backward -- almost pure per-operation overhead;
  mlp:   one SGD training step of a 784-512-512-10 ReLU network with softmax
         cross-entropy at batch 256 (float32) -- almost pure array work; tracegrad and
         torch run it with nn.Sequential, F.cross_entropy and optim.SGD.

Run: ``python benchmarks/eager_overhead.py`` (``--quick`` for fewer repeats, ``--dtype
float64`` for the chain in doubles, ``--chain-only`` to skip the MLP).
Each figure is the best of several timed rounds, after a warm-up; the contenders run in
alternating rounds so that the machine's slow spells hit them alike.
"""
import argparse
import importlib.util

import numpy as np

import tracegrad as tg

from chain import STEPS, WIDTH, best_times, chain_autograd, chain_numpy

SIZES, BATCH, LR = (784, 512, 512, 10), 256, 0.01


# -- chain ------------------------------------------------------------------------------------

def chain_eager(lib, x0):
    def run():
        x = lib.tensor(x0, requires_grad=True)
        h = x
        for _ in range(STEPS):
            h = (h * 1.01 + 0.1).tanh()
        h.sum().backward()
        return x.grad
    return run


# -- MLP --------------------------------------------------------------------------------------

def init_params(rng):
    params = []
    for fan_in, fan_out in zip(SIZES[:-1], SIZES[1:]):
        bound = 1 / np.sqrt(fan_in)
        params += [rng.uniform(-bound, bound, (fan_in, fan_out)).astype(np.float32),
                   rng.uniform(-bound, bound, fan_out).astype(np.float32)]
    return params


def mlp_numpy(params, x, y):
    params = [p.copy() for p in params]
    rows = np.arange(len(y))

    def step():
        w1, b1, w2, b2, w3, b3 = params
        h1 = x @ w1 + b1
        a1 = np.maximum(h1, 0)
        h2 = a1 @ w2 + b2
        a2 = np.maximum(h2, 0)
        z = a2 @ w3 + b3
        e = np.exp(z - z.max(1, keepdims=True))
        p = e / e.sum(1, keepdims=True)
        loss = -np.log(p[rows, y]).mean()
        dz = p
        dz[rows, y] -= 1
        dz /= len(y)
        grads = [None] * 6
        grads[4], grads[5] = a2.T @ dz, dz.sum(0)
        dh2 = (dz @ w3.T) * (h2 > 0)
        grads[2], grads[3] = a1.T @ dh2, dh2.sum(0)
        dh1 = (dh2 @ w2.T) * (h1 > 0)
        grads[0], grads[1] = x.T @ dh1, dh1.sum(0)
        for q, g in zip(params, grads):
            q -= LR * g
        return loss
    return step


def mlp_eager(lib, params, x, y, device="cpu"):
    """The same step as a user writes it: nn.Linear + nn.ReLU in nn.Sequential,
    F.cross_entropy and optim.SGD, starting from the same weights as the NumPy step, on
    ``device`` (benchmarks/gpu.py runs it on CUDA)."""
    nn = lib.nn
    model = nn.Sequential(nn.Linear(SIZES[0], SIZES[1]), nn.ReLU(),
                          nn.Linear(SIZES[1], SIZES[2]), nn.ReLU(),
                          nn.Linear(SIZES[2], SIZES[3]))
    linears = [m for m in model if isinstance(m, nn.Linear)]
    with lib.no_grad():
        for layer, w, b in zip(linears, params[::2], params[1::2]):
            layer.weight.copy_(lib.tensor(w.T))     # nn.Linear keeps (out, in)
            layer.bias.copy_(lib.tensor(b))
    model.to(device)
    optimizer = lib.optim.SGD(model.parameters(), lr=LR)
    xt, yt = lib.tensor(x, device=device), lib.tensor(y, device=device)

    def step():
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(xt), yt)
        loss.backward()
        optimizer.step()
        return loss
    return step


def report(title, rows, unit, scale):
    print(title)
    base = rows["numpy (hand-written)"]
    torch_time = rows.get("torch")
    for name, t in rows.items():
        line = f"  {name:22s} {t * scale:9.2f} {unit}"
        if name != "numpy (hand-written)":
            line += f"   {t / base:5.2f}x numpy"
            if torch_time and name != "torch":
                line += f"   {t / torch_time:5.2f}x torch"
        print(line)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats")
    parser.add_argument("--dtype", choices=("float32", "float64"), default="float32",
                        help="dtype of the chain (the MLP runs in float32)")
    parser.add_argument("--chain-only", action="store_true", help="skip the MLP step")
    args = parser.parse_args()
    repeats = 3 if args.quick else 9
    has_torch = importlib.util.find_spec("torch") is not None
    has_autograd = importlib.util.find_spec("autograd") is not None
    if has_torch:
        import torch
        torch.set_num_threads(max(1, torch.get_num_threads()))

    rng = np.random.default_rng(0)
    x0 = rng.standard_normal(WIDTH).astype(args.dtype)
    chain = {"numpy (hand-written)": chain_numpy(x0), "tracegrad": chain_eager(tg, x0)}
    if has_autograd:
        chain["autograd (HIPS)"] = chain_autograd(x0.astype(np.float64))
    if has_torch:  # (16 elements: below torch's grain for threads, so in the same rounds)
        chain["torch"] = chain_eager(torch, x0)
    chain = best_times(chain, repeats, 20)
    report(f"chain: tanh(x*1.01+0.1), {WIDTH} {args.dtype}, {STEPS} steps, forward+backward",
           chain, "us/step", 1e6 / STEPS)
    if args.chain_only:
        return

    params = init_params(rng)
    x = rng.standard_normal((BATCH, SIZES[0])).astype(np.float32)
    y = rng.integers(0, SIZES[-1], BATCH)
    mlp = best_times({"numpy (hand-written)": mlp_numpy(params, x, y),
                      "tracegrad": mlp_eager(tg, params, x, y)}, repeats, 3,
                     apart={"torch": mlp_eager(torch, params, x, y)} if has_torch else None)
    print()
    report(f"mlp: {'-'.join(map(str, SIZES))}, batch {BATCH}, float32, one SGD step",
           mlp, "ms/step", 1e3)


if __name__ == "__main__":
    main()
