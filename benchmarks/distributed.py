"""tracegrad.distributed on this machine: all-reduce bandwidth against torch.distributed's
gloo backend, and DDP's step time with and without overlapping communication.

  allreduce: float32 all_reduce(SUM) of 4 KiB .. 64 MiB on 2 ranks; per size the best of
             ``--repeats`` rounds of ``iters`` calls, as time per call and bus bandwidth
             2(n-1)/n * S / t (the bytes each rank moves in a ring all-reduce, per second).
             Contenders: tracegrad.distributed.all_reduce (2 ranks under mpiexec), the same
             with TRACEGRAD_DISTRIBUTED_CHECK=0 (no signature exchange before it), mpi4py's
             bare Allreduce on the same buffer (what tracegrad adds: the Python around it),
             torch.distributed.all_reduce with gloo (2 processes meeting over TCP on
             localhost, as torch runs on one machine without NCCL).
  ddp:       one SGD step of an MLP (8 -> 1024 -> 1024 -> 1024 -> 1024 -> 10, 3.2 M
             float32 parameters, 12.6 MB of gradients) on a batch of 256 per rank:
               local    no communication (the compute alone),
               ddp      DistributedDataParallel: buckets all-reduced while backward runs,
               after    the averaging started only after backward: one all_reduce per
                        parameter (what DDP replaces), or
               flat     all gradients in one array and one all_reduce (DDP's work without
                        the overlap), on 1 and 2 ranks.

Run: ``python benchmarks/distributed.py`` (``--quick``: fewer rounds, sizes up to 16 MiB).
Needs mpi4py + mpiexec (pip install "tracegrad[distributed]"); the gloo rows need torch.
"""
import argparse
import json
import os
import pathlib
import shutil
import subprocess
import sys
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
SIZES = [4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20, 64 << 20]


def iterations(nbytes):
    return max(5, min(200, (64 << 20) // nbytes // 4))


def best_time(fn, iters, repeats):
    fn()  # warm-up
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        for _ in range(iters):
            fn()
        best = min(best, (time.perf_counter() - t) / iters)
    return best


# -- children -------------------------------------------------------------------------------------

def child_mpi_allreduce(sizes, repeats):
    import tracegrad as tg
    import tracegrad.distributed as dist
    from mpi4py import MPI
    from tracegrad.distributed import _buffers
    dist.init_process_group("mpi")
    comm = MPI.COMM_WORLD
    rows = {}
    for nbytes in sizes:
        t = tg.ones(nbytes // 4)
        raw = np.ones(nbytes // 4, np.float32)
        iters = iterations(nbytes)
        best = {"tracegrad": [], "unchecked": [], "mpi4py": []}
        for _ in range(repeats):  # alternate the contenders round by round
            for name, fn in (("tracegrad", lambda: dist.all_reduce(t)), ("unchecked", lambda: dist.all_reduce(t)),
                             ("mpi4py", lambda: comm.Allreduce(MPI.IN_PLACE, raw, MPI.SUM))):
                _buffers.CHECK = name != "unchecked"
                comm.Barrier()
                best[name].append(best_time(fn, iters, 1))
        rows[nbytes] = {name: min(times) for name, times in best.items()}
    if dist.get_rank() == 0:
        print(json.dumps(rows))


def child_gloo_allreduce(rank, world, port, sizes, repeats):
    import torch
    import torch.distributed as dist
    torch.set_num_threads(1)
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    rows = {}
    for nbytes in sizes:
        t = torch.ones(nbytes // 4)
        dist.barrier()
        rows[nbytes] = {"gloo": best_time(lambda: dist.all_reduce(t), iterations(nbytes), repeats)}
    if rank == 0:
        print(json.dumps(rows))
    dist.destroy_process_group()


def average_flat(params):
    """All gradients in one array, one all_reduce, copied back: DDP's buckets without overlap."""
    import tracegrad as tg
    import tracegrad.distributed as dist
    flat = tg.cat([p.grad.reshape(-1) for p in params])
    dist.all_reduce(flat, op=dist.ReduceOp.AVG)
    offset = 0
    for p in params:
        p.grad.copy_(flat[offset:offset + p.numel()].view_as(p.grad))
        offset += p.numel()


def child_ddp(steps, repeats):
    import tracegrad as tg
    import tracegrad.distributed as dist
    import tracegrad.nn as nn
    from tracegrad.nn.parallel import DistributedDataParallel as DDP
    dist.init_process_group("mpi")
    rank, world = dist.get_rank(), dist.get_world_size()

    def model():
        tg.manual_seed(0)
        return nn.Sequential(nn.Linear(8, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(),
                             nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(),
                             nn.Linear(1024, 10))
    x, y = tg.randn(256, 8), tg.randint(0, 10, (256,))
    local, after, flat = model(), model(), model()
    ddp = DDP(model())
    contenders = {}
    for name, net in (("local", local), ("ddp", ddp), ("after", after), ("flat", flat)):
        opt = tg.optim.SGD(net.parameters(), lr=1e-3)

        def step(net=net, opt=opt, name=name):
            opt.zero_grad()
            nn.functional.cross_entropy(net(x), y).backward()
            if name == "after":
                for p in net.parameters():
                    dist.all_reduce(p.grad, op=dist.ReduceOp.AVG)
            elif name == "flat":
                average_flat(list(net.parameters()))
            opt.step()
        contenders[name] = step
    best = {name: float("inf") for name in contenders}
    for _ in range(repeats):
        for name, step in contenders.items():
            dist.barrier()
            best[name] = min(best[name], best_time(step, steps, 1))
    if rank == 0:
        print(json.dumps({"world": world, **best}))


# -- driver ---------------------------------------------------------------------------------------

def mpiexec():
    local = pathlib.Path(sys.executable).parent / "mpiexec"
    return str(local) if local.exists() else shutil.which("mpiexec")


def launch_mpi(n, *args):
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    out = subprocess.run([mpiexec(), "-n", str(n), sys.executable, __file__, "--child", *map(str, args)],
                         env=env, capture_output=True, text=True, check=True, timeout=1200)
    return json.loads(out.stdout.strip().splitlines()[-1])


def launch_gloo(n, sizes, repeats):
    env = dict(os.environ, OMP_NUM_THREADS="1")
    port = 29400 + os.getpid() % 500
    procs = [subprocess.Popen([sys.executable, __file__, "--child", "gloo", str(r), str(n), str(port),
                               ",".join(map(str, sizes)), str(repeats)], env=env, stdout=subprocess.PIPE, text=True)
             for r in range(n)]
    outs = [p.communicate(timeout=1200)[0] for p in procs]
    return {int(k): v for k, v in json.loads(outs[0].strip().splitlines()[-1]).items()}


def human(nbytes):
    return f"{nbytes >> 20} MiB" if nbytes >= 1 << 20 else f"{nbytes >> 10} KiB"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--child", nargs="+")
    args = parser.parse_args()
    if args.child:
        kind, rest = args.child[0], args.child[1:]
        if kind == "mpi":
            return child_mpi_allreduce(list(map(int, rest[0].split(","))), int(rest[1]))
        if kind == "gloo":
            return child_gloo_allreduce(int(rest[0]), int(rest[1]), int(rest[2]),
                                        list(map(int, rest[3].split(","))), int(rest[4]))
        return child_ddp(int(rest[0]), int(rest[1]))
    sizes = [s for s in SIZES if s <= (16 << 20 if args.quick else 64 << 20)]
    repeats = 3 if args.quick else 7
    n = 2
    ours = {int(k): v for k, v in launch_mpi(n, "mpi", ",".join(map(str, sizes)), repeats).items()}
    try:
        import torch  # noqa: F401
        gloo = launch_gloo(n, sizes, repeats)
    except ImportError:
        gloo = {}
    factor = 2 * (n - 1) / n
    print(f"all_reduce float32 SUM, {n} ranks on this machine: time per call, bus bandwidth 2(n-1)/n*S/t")
    print(f"{'size':>8} {'tracegrad':>22} {'unchecked':>22} {'mpi4py bare':>22} {'torch gloo':>22} "
          f"{'gloo/tracegrad':>15}")
    for s in sizes:
        cells = []
        for t in (ours[s]["tracegrad"], ours[s]["unchecked"], ours[s]["mpi4py"], gloo.get(s, {}).get("gloo")):
            cells.append(f"{t * 1e6:9.1f} us {factor * s / t / 1e9:6.2f} GB/s" if t else f"{'-':>22}")
        speed = f"{gloo[s]['gloo'] / ours[s]['tracegrad']:13.2f}x" if s in gloo else ""
        print(f"{human(s):>8} {cells[0]:>22} {cells[1]:>22} {cells[2]:>22} {cells[3]:>22} {speed:>15}")
    steps, ddp_repeats = (3, 3) if args.quick else (5, 5)
    print("\nDDP step: MLP 8-1024x4-10 (3.2 M params), batch 256 per rank, SGD; best of "
          f"{ddp_repeats} rounds of {steps} steps")
    for world in (1, 2):
        r = launch_mpi(world, "ddp", steps, ddp_repeats)
        print(f"  {world} rank(s): local {r['local'] * 1e3:6.1f} ms | ddp (buckets during backward) "
              f"{r['ddp'] * 1e3:6.1f} ms | after backward: per parameter {r['after'] * 1e3:6.1f} ms, "
              f"one flat array {r['flat'] * 1e3:6.1f} ms | ddp/flat {r['ddp'] / r['flat']:.2f}")


if __name__ == "__main__":
    main()
