"""ResNet-18 training step on the CPU, tracegrad against torch eager.

  forward + backward of ``model(x).sum()`` in train mode, batch 8 of 3x64x64 float32 images,
  the same weights on both sides (torch's state dict copied into tracegrad's model).

Run: ``python benchmarks/resnet18.py`` (``--quick`` for fewer repeats, ``--threads N`` for N
threads on both sides, ``--profile`` to print where tracegrad's time goes: per operator from
tracegrad.profiler, and per Python function from cProfile). By default each library runs
with its own defaults, as a user gets them: torch's threads and NumPy's BLAS threads on
every core, tracegrad's intra-op threads (its copy and normalisation kernels) at their
default, 1 (see tracegrad/backend/threads.py). ``--threads N`` sets torch's
``set_num_threads``, NumPy's BLAS threads (``OPENBLAS_NUM_THREADS``, set before NumPy loads)
and ``tracegrad.set_num_threads`` to N; ``--intra-op`` sets the last alone. The header
names ``OPENBLAS_CORETYPE`` where the environment pins OpenBLAS's kernels (a machine
whose environment pins ``Haswell`` runs NumPy's products without AVX-512 while torch's
oneDNN uses it).

Steady state: tracegrad's optional compiled kernels (batch norm, the convolution's fold;
Numba, the ``jit`` extra) load once the time they would have saved pays for loading them
(tracegrad/rules/compiled.py), a few hundred steps into a run. Before timing, tracegrad's
step therefore runs until no kernel is pending (at most ``--warm-up`` seconds, 60 by
default; ``--warm-up 0`` times the NumPy kernels alone); the header says what loaded.

The contenders run in alternating blocks (torch's OpenMP threads keep spinning after each
call and would slow whatever ran right after it inside a block), each block the best of
its steps; the ratio is printed per block pair and for the best of all blocks. CPU time
(process_time, all threads) is printed beside wall time: on a machine shared with other
jobs the wall figures of the threaded runs are the noisy ones.
"""
import os
import sys

if "--threads" in sys.argv[:-1]:  # BLAS reads its thread count once, when NumPy loads
    _n = sys.argv[sys.argv.index("--threads") + 1]
    for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[_var] = _n

import argparse  # noqa: E402
import cProfile  # noqa: E402
import importlib.util  # noqa: E402
import pathlib  # noqa: E402
import pstats  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

import tracegrad as tg  # noqa: E402
from tracegrad.models import resnet18  # noqa: E402
from tracegrad.rules import compiled  # noqa: E402

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


def warm_up(step, seconds):
    """Run ``step`` until tracegrad's compiled kernels that it would use have loaded (none
    pending after a step that counted some), at most ``seconds``: (steps, seconds taken)."""
    start, steps = time.perf_counter(), 0
    while time.perf_counter() - start < seconds:
        step()
        steps += 1
        if not compiled.pending() and (compiled.loaded() or steps >= 3):
            break
    return steps, time.perf_counter() - start


def timed_block(fn, repeats):
    """(best wall, best CPU) seconds of ``repeats`` calls after a warm-up call."""
    fn()
    wall, cpu = [], []
    for _ in range(repeats):
        start, start_cpu = time.perf_counter(), time.process_time()
        fn()
        wall.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    return min(wall), min(cpu)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats")
    parser.add_argument("--threads", type=int, default=None,
                        help="threads for each side (default: each library's own default)")
    parser.add_argument("--intra-op", type=int, default=None,
                        help="tracegrad's intra-op threads (default: --threads, else tracegrad's default)")
    parser.add_argument("--blocks", type=int, default=3, help="alternating blocks per contender")
    parser.add_argument("--profile", action="store_true", help="profile tracegrad's step")
    parser.add_argument("--warm-up", type=float, default=60.0,
                        help="at most this many seconds of tracegrad steps before timing, until its "
                             "compiled kernels have loaded (0: none, the NumPy kernels alone)")
    args = parser.parse_args()
    repeats = 3 if args.quick else 7
    if args.intra_op or args.threads:
        tg.set_num_threads(args.intra_op or args.threads)

    rng = np.random.default_rng(0)
    x = rng.standard_normal((BATCH, 3, SIZE, SIZE)).astype(np.float32)
    ours = resnet18().train()
    step_ours = train_step(ours, tg.tensor(x))

    has_torch = importlib.util.find_spec("torch") is not None
    if has_torch:
        import torch
        if args.threads:
            torch.set_num_threads(args.threads)
        theirs = torch_model(torch).train()
        ours.load_state_dict({k: tg.tensor(v.numpy()) for k, v in theirs.state_dict().items()})
        step_theirs = train_step(theirs, torch.tensor(x))

    if args.warm_up > 0:
        steps, took = warm_up(step_ours, args.warm_up)
        warmed = (f"warm-up {steps} steps ({took:.1f} s); compiled kernels: "
                  f"{', '.join(compiled.loaded()) or 'none'}"
                  + (f"; still pending: {', '.join(compiled.pending())}" if compiled.pending() else ""))
    else:
        warmed = "no warm-up: NumPy kernels"
    print(f"resnet18 forward+backward, train mode, batch {BATCH}x3x{SIZE}x{SIZE}, float32")
    print(f"  {warmed}")
    print(f"  {os.cpu_count()} cores; threads per side: {args.threads or 'defaults'} "
          f"(NumPy BLAS: {blas_threads()}; tracegrad intra-op: {tg.get_num_threads()}"
          + (f"; torch: {torch.get_num_threads()})" if has_torch else ")")
          + (f"; OPENBLAS_CORETYPE={os.environ['OPENBLAS_CORETYPE']}" if "OPENBLAS_CORETYPE" in os.environ else ""))
    mine, others = [], []
    for _ in range(args.blocks if has_torch else 1):
        mine.append(timed_block(step_ours, repeats))
        if has_torch:
            others.append(timed_block(step_theirs, repeats))
    for i, (m, o) in enumerate(zip(mine, others or [None] * len(mine))):
        line = f"  block {i}: tracegrad {m[0] * 1e3:7.1f} ms (cpu {m[1] * 1e3:7.1f})"
        if o is not None:
            line += (f"   torch {o[0] * 1e3:7.1f} ms (cpu {o[1] * 1e3:7.1f})"
                     f"   ratio {m[0] / o[0]:5.2f}x (cpu {m[1] / o[1]:5.2f}x)")
        print(line)
    best_mine = min(w for w, _ in mine)
    print(f"  tracegrad {best_mine * 1e3:9.1f} ms/step")
    if has_torch:
        best_theirs = min(w for w, _ in others)
        print(f"  torch     {best_theirs * 1e3:9.1f} ms/step")
        print(f"  ratio     {best_mine / best_theirs:9.2f}x torch (best of all blocks)")
    if args.profile:
        print()
        profile_tracegrad(step_ours)


if __name__ == "__main__":
    main()
