"""Rank 1 raises while the others wait in a collective for it: the job must end (MPI
abort), with a non-zero exit and rank 1's traceback, instead of hanging. ``when``
(argv[1]): "after-init" (the excepthook installed by init_process_group aborts) or
"before-init" (the rank exits before joining: the launcher ends the job)."""
import sys

import tracegrad as torch
import tracegrad.distributed as dist

when = sys.argv[1]
if when == "before-init":
    from mpi4py import MPI
    if MPI.COMM_WORLD.Get_rank() == 1:
        raise ValueError("boom on rank 1 before init")
dist.init_process_group("mpi")
if dist.get_rank() == 1:
    raise ValueError("boom on rank 1")
dist.all_reduce(torch.ones(3))  # the others wait here for rank 1
print("unreachable: rank", dist.get_rank(), flush=True)
