"""ResNet-18 training step on the CPU, tracegrad against torch eager.

  forward + backward of ``model(x).sum()`` in train mode, batch 8 of 3x64x64 float32 images,
  the same weights on both sides (torch's state dict copied into tracegrad's model).

Run: ``python benchmarks/resnet18.py`` (``--quick`` for fewer repeats, ``--profile`` to
print where tracegrad's time goes: per operator from tracegrad.profiler, and per Python
function from cProfile). torch runs with ``torch.set_num_threads(os.cpu_count())``; NumPy's
BLAS uses its own default (all cores); both counts are printed.
"""
import argparse
import cProfile
import importlib.util
import os
import pathlib
import pstats
import sys
import time

import numpy as np

import tracegrad as tg
from tracegrad.models import resnet18

BATCH, SIZE = 8, 64


def best_time(fn, repeats, sync=lambda: None):
    """The best of ``repeats`` timed calls after a warm-up; ``sync`` waits for queued GPU
    work (benchmarks/gpu.py), before and after each call."""
    fn()                                    # warm-up (allocations, caches, compiled kernels)
    sync()
    times = []
    for _ in range(repeats):
        sync()
        start = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - start)
    return min(times)


def train_step(model, x):
    """One forward + backward, gradients cleared first (as ``zero_grad(set_to_none=True)``)."""
    def step():
        for p in model.parameters():
            p.grad = None
        model(x).sum().backward()
    return step


def torch_model(torch):
    """torchvision's resnet18 when installed, else the same network written with torch.nn."""
    if importlib.util.find_spec("torchvision") is not None:
        import torchvision
        return torchvision.models.resnet18()
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
    from tests.models.torch_resnet import torch_resnet18
    return torch_resnet18(torch)


def blas_threads():
    try:
        from threadpoolctl import threadpool_info
        return ", ".join(f"{i['internal_api']} {i['num_threads']}" for i in threadpool_info()
                         if i["user_api"] == "blas") or "unknown"
    except ImportError:
        return os.environ.get("OPENBLAS_NUM_THREADS", os.environ.get("OMP_NUM_THREADS", "default"))


def profile_tracegrad(step):
    """Where tracegrad's step spends its time: the operator table, then the top Python
    functions by their own time."""
    with tg.profiler.profile() as prof:
        step()
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=20))
    profiler = cProfile.Profile()
    profiler.enable()
    step()
    profiler.disable()
    pstats.Stats(profiler).sort_stats("tottime").print_stats(15)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats")
    parser.add_argument("--profile", action="store_true", help="profile tracegrad's step")
    args = parser.parse_args()
    repeats = 3 if args.quick else 7

    rng = np.random.default_rng(0)
    x = rng.standard_normal((BATCH, 3, SIZE, SIZE)).astype(np.float32)
    ours = resnet18().train()
    step_ours = train_step(ours, tg.tensor(x))

    has_torch = importlib.util.find_spec("torch") is not None
    if has_torch:
        import torch
        torch.set_num_threads(os.cpu_count())
        theirs = torch_model(torch).train()
        ours.load_state_dict({k: tg.tensor(v.numpy()) for k, v in theirs.state_dict().items()})

    t_ours = best_time(step_ours, repeats)
    print(f"resnet18 forward+backward, train mode, batch {BATCH}x3x{SIZE}x{SIZE}, float32")
    print(f"  {os.cpu_count()} cores; NumPy BLAS threads: {blas_threads()}")
    print(f"  tracegrad {t_ours * 1e3:9.1f} ms/step")
    if has_torch:
        t_torch = best_time(train_step(theirs, torch.tensor(x)), repeats)
        print(f"  torch     {t_torch * 1e3:9.1f} ms/step   (torch threads: {torch.get_num_threads()})")
        print(f"  ratio     {t_ours / t_torch:9.2f}x torch")
    if args.profile:
        print()
        profile_tracegrad(step_ours)


if __name__ == "__main__":
    main()
