"""tracegrad.distributed's collectives on 2 and 4 MPI ranks against NumPy arithmetic (one
mpiexec launch runs them all: see workers/collectives.py), and its behaviour in one process:
torch's errors before init_process_group, and without mpi4py."""
import subprocess
import sys

import pytest

import tracegrad as tg
import tracegrad.distributed as dist

from .launch import ROOT, needs_mpi, run

CHECKS = ["all_reduce", "all_reduce of a view", "reduce", "broadcast", "all_gather", "all_gather_into_tensor",
          "gather", "scatter", "reduce_scatter", "reduce_scatter_tensor", "all_to_all", "all_to_all_single",
          "send/recv", "objects", "new_group", "mismatches", "unchecked", "done"]


@needs_mpi
@pytest.mark.parametrize("ranks", [2, 4])
def test_every_collective_matches_numpy(ranks):
    done = run(ranks, "collectives.py")
    assert [line[3:] for line in done.stdout.splitlines() if line.startswith("ok ")] == CHECKS


def _python(code):
    """Run ``code`` in a fresh interpreter (not under mpiexec) with this checkout first on the path."""
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=ROOT,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})


def test_import_tracegrad_does_not_load_mpi():
    done = _python("import sys, tracegrad, tracegrad.distributed, tracegrad.nn.parallel\n"
                   "print('mpi4py' in sys.modules)")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"


@needs_mpi
def test_one_process_without_mpiexec():
    """A plain ``python script.py`` is an MPI job of one rank (MPI's singleton start)."""
    done = _python("import tracegrad as tg, tracegrad.distributed as dist\n"
                   "dist.init_process_group('gloo', init_method='env://', rank=0, world_size=1)\n"
                   "t = tg.tensor([1., 2.]); dist.all_reduce(t); dist.broadcast(t, src=0)\n"
                   "print(dist.get_rank(), dist.get_world_size(), dist.get_backend(), t.tolist())\n"
                   "try:\n    dist.init_process_group('mpi')\nexcept ValueError as e:\n    print(e)\n"
                   "dist.destroy_process_group(); print(dist.is_initialized())\n"
                   "try:\n    dist.init_process_group('mpi', rank=1, world_size=2)\nexcept ValueError as e:\n"
                   "    print(e)\n")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "0 1 gloo [1.0, 2.0]"
    assert lines[1] == "trying to initialize the default process group twice!"
    assert lines[2] == "False"
    assert lines[3].startswith("init_process_group: rank=1 but MPI started this process as rank 0")


@pytest.mark.parametrize("call", [dist.get_rank, dist.get_world_size, dist.get_backend, dist.barrier, dist.new_group,
                                  lambda: dist.all_reduce(tg.ones(2)), lambda: dist.broadcast(tg.ones(2), 0)])
def test_before_init_process_group_errors_as_torch(call):
    with pytest.raises(ValueError, match="Default process group has not been initialized, please make sure to "
                                         "call init_process_group."):
        call()


@pytest.mark.torch
def test_errors_before_init_are_torchs():
    import torch.distributed as tdist
    for name in ["get_rank", "get_world_size", "barrier"]:
        with pytest.raises(ValueError) as theirs:
            getattr(tdist, name)()
        with pytest.raises(ValueError) as ours:
            getattr(dist, name)()
        assert str(ours.value) == str(theirs.value)
    assert not dist.is_initialized() and not tdist.is_initialized()
    with pytest.raises(AssertionError, match="Process group cannot be None"):
        dist.destroy_process_group()
    theirs = {name: int(op) for name, op in tdist.ReduceOp.RedOpType.__members__.items()}
    assert {op.name: int(op) for op in dist.ReduceOp.RedOpType} == theirs
    assert repr(dist.ReduceOp.SUM) == repr(tdist.ReduceOp.SUM)
    assert dist.Backend("GLOO") == tdist.Backend("GLOO") == "gloo"


def test_without_mpi4py_is_unavailable_and_names_the_extra(monkeypatch):
    from tracegrad.distributed import _mpi
    monkeypatch.setattr(_mpi, "_cache", [])
    monkeypatch.setitem(sys.modules, "mpi4py", None)
    monkeypatch.setitem(sys.modules, "mpi4py.MPI", None)
    assert dist.is_available() is False
    with pytest.raises(ImportError, match=r'pip install "tracegrad\[distributed\]"'):
        dist.init_process_group("gloo")
    assert not dist.is_initialized()


def test_unknown_backend_is_refused():
    with pytest.raises(ValueError, match="Unknown backend 'fake'"):
        dist.init_process_group("fake")


def test_spawn_outside_mpiexec_says_how_to_launch(monkeypatch):
    from tracegrad.distributed import _mpi
    monkeypatch.setattr(_mpi, "under_launcher", lambda: False)
    with pytest.raises(RuntimeError, match=r"mpiexec -n 2 python <script>"):
        tg.multiprocessing.spawn(print, nprocs=2)
    seen = []
    tg.multiprocessing.spawn(lambda rank, x: seen.append((rank, x)), args=("a",), nprocs=1)
    assert seen == [(0, "a")]


def test_differentiable_all_reduce_is_sum_only():
    with pytest.raises(NotImplementedError, match="supports ReduceOp.SUM only"):
        dist.nn.functional.all_reduce(tg.ones(2), op=dist.ReduceOp.MAX)
