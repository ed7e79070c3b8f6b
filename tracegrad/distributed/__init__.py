"""``tracegrad.distributed``: torch.distributed's API on MPI (through mpi4py).

Launch every process with MPI (``mpiexec -n 4 python train.py``, or a cluster's own
launcher); ``init_process_group()`` then joins them, ranks and world size being MPI's.
Tensor collectives pass the tensors' memory to MPI in place (no pickling); with
``async_op=True`` they return a :class:`Work` whose ``wait()`` finishes them.

mpi4py is imported on first use (``init_process_group``), never by ``import tracegrad``;
without it ``is_available()`` is False and ``init_process_group`` raises an ImportError
naming the extra that installs it (``pip install "tracegrad[distributed]"``)."""
from ._buffers import Work
from .collectives import (ReduceOp, all_gather, all_gather_into_tensor, all_reduce, all_to_all, all_to_all_single,
                          barrier, broadcast, gather, monitored_barrier, reduce, reduce_scatter,
                          reduce_scatter_tensor, scatter)
from .objects import all_gather_object, broadcast_object_list, gather_object, scatter_object_list
from .p2p import P2POp, batch_isend_irecv, irecv, isend, recv, send
from .process_group import (Backend, GroupMember, ProcessGroup, destroy_process_group, get_backend,
                            get_global_rank, get_group_rank, get_process_group_ranks, get_rank,
                            get_world_size, group, init_process_group, is_gloo_available, is_initialized,
                            is_mpi_available, is_nccl_available, new_group)
from . import _mpi, nn  # noqa: F401  (tracegrad.distributed.nn.functional: differentiable collectives)


def is_available():
    """True when the distributed package can run here (mpi4py is installed)."""
    return _mpi.available()


def is_torchelastic_launched():
    return False


__all__ = ["is_available", "init_process_group", "destroy_process_group", "is_initialized", "get_rank",
           "get_world_size", "get_backend", "new_group", "get_process_group_ranks", "get_global_rank",
           "get_group_rank", "Backend", "ProcessGroup", "GroupMember", "group", "ReduceOp", "Work", "all_reduce",
           "reduce", "broadcast", "all_gather", "all_gather_into_tensor", "reduce_scatter", "reduce_scatter_tensor",
           "gather", "scatter", "all_to_all", "all_to_all_single", "barrier", "monitored_barrier", "send", "recv",
           "isend", "irecv", "P2POp", "batch_isend_irecv", "broadcast_object_list", "all_gather_object",
           "gather_object", "scatter_object_list", "is_mpi_available", "is_gloo_available", "is_nccl_available",
           "is_torchelastic_launched"]
