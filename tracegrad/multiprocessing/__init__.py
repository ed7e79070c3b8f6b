"""``tracegrad.multiprocessing``: Python's multiprocessing (as torch's module re-exports it)
plus ``spawn``, the launcher of torch's DDP tutorials.

torch's ``spawn(fn, args, nprocs)`` starts ``nprocs`` processes that meet through
MASTER_ADDR/MASTER_PORT. tracegrad's processes meet through MPI instead, which must start
them: run the script with ``mpiexec -n NPROCS python script.py`` and ``spawn`` calls
``fn(rank, *args)`` once, in each MPI process, with that process's rank. Outside mpiexec
only ``nprocs=1`` can run (in this process); more is refused, saying how to launch."""
from multiprocessing import *  # noqa: F401,F403 -- torch.multiprocessing re-exports these
from multiprocessing import get_all_start_methods, get_start_method, set_start_method  # noqa: F401

__all__ = ["spawn", "start_processes", "ProcessContext", "ProcessRaisedException", "ProcessExitedException"]


class ProcessRaisedException(Exception):
    pass


class ProcessExitedException(Exception):
    pass


class ProcessContext:
    """What ``spawn(join=False)`` returns: here the function has already run on this rank."""

    def __init__(self, ranks):
        self.processes = []
        self.ranks = ranks

    def join(self, timeout=None):
        return True

    def pids(self):
        return []


def _mpi_world():
    """(rank, size) of this process in the MPI job that started it, or None outside mpiexec."""
    from ..distributed import _mpi
    if not _mpi.under_launcher():
        return None
    comm = _mpi.MPI().COMM_WORLD
    return comm.Get_rank(), comm.Get_size()


def spawn(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    """Run ``fn(rank, *args)`` as this MPI process's share of ``nprocs`` (see the module docstring)."""
    world = _mpi_world()
    if world is None:
        if nprocs != 1:
            raise RuntimeError(f"tracegrad.multiprocessing.spawn(nprocs={nprocs}) cannot start processes itself: "
                               "tracegrad.distributed runs on MPI, which starts them. Run the script with "
                               f"`mpiexec -n {nprocs} python <script>` (mpiexec comes with "
                               "pip install \"tracegrad[distributed]\"); spawn then runs fn on each rank.")
        world = (0, 1)
    rank, size = world
    if size != nprocs:
        raise RuntimeError(f"spawn(nprocs={nprocs}) in an MPI job of {size} processes: launch it with "
                           f"`mpiexec -n {nprocs}`")
    fn(rank, *args)
    return None if join else ProcessContext([rank])


start_processes = spawn
