"""tracegrad on CUDA (through CuPy) against tracegrad on the CPU and torch on CUDA.

  mlp:      one SGD step of eager_overhead.py's 784-512-512-10 ReLU network with softmax
            cross-entropy (nn.Sequential, F.cross_entropy, optim.SGD), batch 1024, float32;
  resnet18: forward + backward of ``model(x).sum()`` in train mode, batch 64 of 3x64x64
            float32 images (the same weights everywhere);
  chain:    the gradient of the 200-step tanh chain staged on the tape (``tracegrad.grad``)
            on 2**20 float32 values, with and without elementwise fusion (``cupy.fuse``),
            against the chain written by hand (NumPy on the CPU, the same code on CuPy
            arrays on the GPU).

Run: ``python benchmarks/gpu.py`` (``--quick`` for fewer repeats). Without CUDA it says
so and times the CPU side only. GPU calls are timed with the device synchronised before
and after each call; each figure is the best of several rounds after a warm-up.
"""
import argparse
import importlib.util

import numpy as np

import tracegrad as tg
from tracegrad.models import resnet18
from tracegrad.transform import jit

from chain import STEPS, chain_numpy
from eager_overhead import SIZES, init_params, mlp_eager
from resnet18 import best_time, torch_model, train_step

MLP_BATCH, RESNET_BATCH, RESNET_SIZE, CHAIN_WIDTH = 1024, 64, 64, 2 ** 20


def staged_chain(x0, fuse):
    """The chain's gradient on the tape; compiled at the first call (here: inside the
    fusion setting asked for)."""
    def f(x):
        for _ in range(STEPS):
            x = np.tanh(x * 1.01 + 0.1)
        return np.sum(x)
    g = tg.grad(f, mode="tape")
    with tg.fusion(fuse):
        for _ in range(jit.HOT_CALLS + 2):  # hot: on the CPU, compiled with Numba kernels
            g(x0)
    return lambda: g(x0), g


def row(name, t, unit, scale, base=None, base_name=""):
    line = f"  {name:28s} {t * scale:10.2f} {unit}"
    if base:
        line += f"   {base / t:6.2f}x faster than {base_name}" if t < base else \
            f"   {t / base:6.2f}x slower than {base_name}"
    print(line)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats")
    args = parser.parse_args()
    repeats = 3 if args.quick else 7
    cuda = tg.cuda.is_available()
    torch = None
    if importlib.util.find_spec("torch") is not None:
        import torch
        if not torch.cuda.is_available():
            torch = None
    if cuda:
        import cupy
        print(f"GPU: {tg.cuda.get_device_name()} (CuPy {cupy.__version__})"
              + (f", torch {torch.__version__}" if torch else ", no CUDA torch"))
        sync = tg.cuda.synchronize
    else:
        print("CUDA is not available (no CuPy or no GPU): CPU figures only")
        sync = None

    rng = np.random.default_rng(0)
    params = init_params(rng)
    x = rng.standard_normal((MLP_BATCH, SIZES[0])).astype(np.float32)
    y = rng.integers(0, SIZES[-1], MLP_BATCH)
    print(f"\nmlp: {'-'.join(map(str, SIZES))}, batch {MLP_BATCH}, float32, one SGD step")
    t_cpu = best_time(mlp_eager(tg, params, x, y), repeats)
    row("tracegrad cpu", t_cpu, "ms/step", 1e3)
    if cuda:
        row("tracegrad cuda", best_time(mlp_eager(tg, params, x, y, "cuda"), repeats, sync),
            "ms/step", 1e3, t_cpu, "tracegrad cpu")
    if torch:
        t_torch = best_time(mlp_eager(torch, params, x, y, "cuda"), repeats, torch.cuda.synchronize)
        row("torch cuda", t_torch, "ms/step", 1e3, t_cpu, "tracegrad cpu")

    images = rng.standard_normal((RESNET_BATCH, 3, RESNET_SIZE, RESNET_SIZE)).astype(np.float32)
    print(f"\nresnet18: forward+backward, train mode, batch {RESNET_BATCH}x3x{RESNET_SIZE}x{RESNET_SIZE}, float32")
    model = resnet18().train()
    if torch:  # the same weights on every side: torch's, copied into tracegrad's model
        theirs = torch_model(torch).train()
        model.load_state_dict({k: tg.tensor(v.numpy()) for k, v in theirs.state_dict().items()})
    t_cpu = best_time(train_step(model, tg.tensor(images)), max(2, repeats // 3))
    row("tracegrad cpu", t_cpu, "ms/step", 1e3)
    if cuda:
        model.to("cuda")
        t_cuda = best_time(train_step(model, tg.tensor(images, device="cuda")), repeats, sync)
        row("tracegrad cuda", t_cuda, "ms/step", 1e3, t_cpu, "tracegrad cpu")
    if torch:
        theirs.cuda()
        t_torch = best_time(train_step(theirs, torch.tensor(images, device="cuda")), repeats,
                            torch.cuda.synchronize)
        row("torch cuda", t_torch, "ms/step", 1e3, t_cpu, "tracegrad cpu")
        if cuda:
            print(f"  tracegrad cuda / torch cuda: {t_cuda / t_torch:.2f}x")

    x0 = rng.standard_normal(CHAIN_WIDTH).astype(np.float32)
    print(f"\nchain: grad of tanh(x*1.01+0.1), {STEPS} steps, {CHAIN_WIDTH} float32, staged (tape)")
    t_numpy = best_time(chain_numpy(x0), max(2, repeats // 3))
    row("numpy (hand-written, cpu)", t_numpy, "ms/call", 1e3)
    row("tracegrad tape cpu", best_time(staged_chain(x0, True)[0], max(2, repeats // 3)),
        "ms/call", 1e3, t_numpy, "numpy")
    if cuda:
        import cupy
        xd = cupy.asarray(x0)
        t_cupy = best_time(chain_numpy(xd), repeats, sync)  # the same code on CuPy arrays
        row("cupy (hand-written)", t_cupy, "ms/call", 1e3, t_numpy, "numpy")
        for fuse in (False, True):
            run, g = staged_chain(xd, fuse)
            t = best_time(run, repeats, sync)
            row(f"tracegrad tape cuda, fusion {'on' if fuse else 'off'}", t, "ms/call", 1e3,
                t_cupy, "cupy")
            print(f"    ({g.source.count('@xp.fuse(')} fused kernels in the generated code)")


if __name__ == "__main__":
    main()
