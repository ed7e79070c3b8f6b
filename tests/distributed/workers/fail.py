"""Rank 1 raises while the other ranks wait for it in a collective: the job must end (the
excepthook installed by init_process_group calls MPI_Abort) with a non-zero exit and rank
1's traceback, instead of hanging. argv[1] is where: "collective" (the others wait in an
all_reduce) or "training" (in DDP's end-of-backward wait, at the second step)."""
import sys

import tracegrad as torch
import tracegrad.distributed as dist
import tracegrad.nn as nn
from tracegrad.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("mpi")
rank = dist.get_rank()
if sys.argv[1] == "collective":
    if rank == 1:
        raise ValueError("boom on rank 1")
    dist.all_reduce(torch.ones(3))
else:
    model = DDP(nn.Linear(4, 2))
    for step in range(3):
        if rank == 1 and step == 1:
            raise ValueError("boom on rank 1 in training")
        model(torch.ones(8, 4)).sum().backward()
print("unreachable: rank", rank, flush=True)
