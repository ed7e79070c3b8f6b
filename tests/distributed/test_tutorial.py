"""PyTorch's DDP tutorial (workers/ddp_tutorial.py: its basic and checkpoint demos, CPU
form) runs under mpiexec with only its imports changed to tracegrad's."""
from .launch import needs_mpi, run


@needs_mpi
def test_torch_ddp_tutorial_runs_under_mpiexec():
    done = run(2, "ddp_tutorial.py", 2)
    lines = set(done.stdout.replace("Running", "\nRunning").replace("Finished", "\nFinished").split("\n"))
    for rank in (0, 1):
        for demo in ("basic DDP example", "DDP checkpoint example"):
            assert f"Running {demo} on rank {rank}." in lines, done.stdout
            assert f"Finished running {demo} on rank {rank}." in lines, done.stdout


def test_the_tutorial_imports_nothing_but_tracegrad():
    from .launch import WORKERS
    source = (WORKERS / "ddp_tutorial.py").read_text()
    imports = [line for line in source.splitlines() if line.startswith(("import ", "from "))]
    assert imports == ["import os", "import sys", "import tempfile", "import tracegrad as torch",
                       "import tracegrad.distributed as dist", "import tracegrad.nn as nn",
                       "import tracegrad.optim as optim", "import tracegrad.multiprocessing as mp",
                       "from tracegrad.nn.parallel import DistributedDataParallel as DDP"]
