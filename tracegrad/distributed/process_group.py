"""Process groups: the default one (``init_process_group``) is MPI's COMM_WORLD, and
``new_group`` makes a sub-communicator. Ranks and sizes come from MPI, whatever launched
the job (the venv's ``mpiexec``, a cluster's ``srun``/``mpirun``); the arguments torch's
rendezvous needs (``init_method``, ``rank``, ``world_size``) are accepted and checked
against MPI's answer. Every backend name runs on MPI; ``get_backend`` returns the one asked
for, so that scripts which test it keep working."""
import os
import sys
import traceback

from . import _mpi

__all__ = ["Backend", "ProcessGroup", "GroupMember", "group", "init_process_group", "is_initialized",
           "destroy_process_group", "new_group", "get_rank", "get_world_size", "get_backend",
           "get_process_group_ranks", "get_global_rank", "get_group_rank", "is_mpi_available", "is_gloo_available", "is_nccl_available",
           "default_group", "resolve"]

NOT_INITIALIZED = ("Default process group has not been initialized, please make sure to call "
                   "init_process_group.")


class Backend(str):
    """A backend's name, as torch's (``Backend("GLOO") == "gloo"``); all run on MPI here."""
    UNDEFINED, GLOO, NCCL, UCC, MPI = "undefined", "gloo", "nccl", "ucc", "mpi"
    backend_list = [UNDEFINED, GLOO, NCCL, UCC, MPI]

    def __new__(cls, name):
        if not isinstance(name, str):
            raise ValueError("Backend constructor parameter must be string-ish")
        return str.__new__(cls, name.lower())


# the names init_process_group takes: torch's, all carried by MPI (nccl: host-staged CuPy
# arrays, or CUDA-aware MPI where the build has it)
_ACCEPTED = {"mpi", "gloo", "nccl", "cpu:gloo,cuda:nccl"}


class ProcessGroup:
    """A set of ranks that run collectives together: one MPI communicator."""

    def __init__(self, comm, backend, ranks):
        self.comm = comm
        self.backend = backend
        self.ranks = ranks  # global ranks, in group-rank order

    def rank(self):
        return self.comm.Get_rank()

    def size(self):
        return self.comm.Get_size()

    def name(self):
        return self.backend

    def __repr__(self):
        return f"<tracegrad.distributed.ProcessGroup ranks={self.ranks} backend={self.backend!r}>"


class GroupMember:
    """torch's markers: ``WORLD`` (the default group once initialised) and
    ``NON_GROUP_MEMBER`` (what ``new_group`` gives the ranks it leaves out)."""
    WORLD = None
    NON_GROUP_MEMBER = -100


class group:  # noqa: N801 -- torch's name
    WORLD = None


_default = []   # [ProcessGroup] once initialised
_groups = []    # every group made by new_group (freed by destroy_process_group)


def is_mpi_available():
    return _mpi.available()


is_gloo_available = is_nccl_available = is_mpi_available  # (both names run on MPI)


def is_initialized():
    """True between ``init_process_group`` and ``destroy_process_group``."""
    return bool(_default)


def default_group():
    if not _default:
        raise ValueError(NOT_INITIALIZED)
    return _default[0]


def resolve(grp):
    """The ProcessGroup of a collective's ``group=`` argument (None: the default one);
    None when this rank is not in it (the collective is then skipped, as torch does)."""
    pg = default_group() if grp is None or grp is group.WORLD else grp
    if pg is GroupMember.NON_GROUP_MEMBER:
        return None
    if not isinstance(pg, ProcessGroup):
        raise TypeError(f"group must be a ProcessGroup made by tracegrad.distributed, got {type(pg).__name__}")
    return pg


def init_process_group(backend=None, init_method=None, timeout=None, world_size=-1, rank=-1, store=None,
                       group_name="", pg_options=None, device_id=None):
    """Join the job MPI launched: rank and world size are MPI's. ``rank``/``world_size``
    (and the RANK/WORLD_SIZE a torch launcher exports) must agree with them when given."""
    if _default:
        raise ValueError("trying to initialize the default process group twice!")
    backend = Backend("mpi" if backend is None else backend)
    if backend not in _ACCEPTED:
        raise ValueError(f"Unknown backend {str(backend)!r}: tracegrad.distributed runs every process group on "
                         f"MPI and accepts the backend names {sorted(_ACCEPTED)}")
    if init_method is not None and store is not None:
        raise ValueError("Cannot specify both init_method and store.")
    if init_method is not None and not isinstance(init_method, str):
        raise TypeError(f"init_method must be a URL string, got {type(init_method).__name__}")
    MPI = _mpi.MPI()
    comm = MPI.COMM_WORLD
    _check_agrees("rank", rank, comm.Get_rank())
    _check_agrees("world_size", world_size, comm.Get_size())
    for var, actual in (("RANK", comm.Get_rank()), ("WORLD_SIZE", comm.Get_size())):
        if os.environ.get(var, "").isdigit():
            _check_agrees(f"environment variable {var}", int(os.environ[var]), actual)
    comm.Set_errhandler(MPI.ERRORS_RETURN)  # MPI errors become Python exceptions
    pg = ProcessGroup(comm, backend, list(range(comm.Get_size())))
    _default.append(pg)
    group.WORLD = GroupMember.WORLD = pg
    if comm.Get_size() > 1:
        _abort_on_uncaught_exception(comm)


def _check_agrees(what, given, actual):
    if given is not None and given != -1 and given != actual:
        raise ValueError(f"init_process_group: {what}={given} but MPI started this process as "
                         f"{'rank' if 'rank' in what.lower() else 'world size'} {actual}: tracegrad.distributed takes "
                         "ranks from the MPI launcher (mpiexec -n N python script.py)")


def _abort_on_uncaught_exception(comm):
    """An exception nobody catches on one rank must end the whole job (the other ranks
    would wait for it forever in their next collective): print it, then MPI_Abort."""
    previous = sys.excepthook

    def hook(kind, value, tb):
        rank = comm.Get_rank()
        text = "".join(traceback.format_exception(kind, value, tb))
        sys.stderr.write("".join(f"[rank{rank}]: {line}\n" for line in text.rstrip("\n").split("\n")))
        sys.stderr.write(f"[rank{rank}]: tracegrad.distributed: aborting the job (MPI_Abort) after an "
                         "uncaught exception on this rank\n")
        sys.stderr.flush()
        if previous is not hook and previous is not sys.__excepthook__:
            previous(kind, value, tb)
        comm.Abort(1)

    hook.tracegrad_abort = True
    sys.excepthook = hook


def destroy_process_group(group=None):
    """Leave the default group (``group=None``: and every group made from it) or free one group."""
    if group is None or group is GroupMember.WORLD:
        if not _default:
            raise AssertionError("Process group cannot be None")
        for pg in _groups:
            pg.comm.Free()
        _groups.clear()
        _default.clear()
        globals()["group"].WORLD = GroupMember.WORLD = None
        if getattr(sys.excepthook, "tracegrad_abort", False):
            sys.excepthook = sys.__excepthook__
        return
    if group is GroupMember.NON_GROUP_MEMBER:
        return
    if group in _groups:
        _groups.remove(group)
        group.comm.Free()


def new_group(ranks=None, timeout=None, backend=None, pg_options=None, use_local_synchronization=False,
              group_desc=None, device_id=None):
    """A group of ``ranks`` (global ranks; all of them when None). Every rank of the default
    group must call it, in the same order; those left out get ``GroupMember.NON_GROUP_MEMBER``."""
    world = default_group()
    size = world.size()
    ranks = list(range(size)) if ranks is None else sorted(int(r) for r in ranks)
    for r in ranks:
        if not 0 <= r < size:
            raise ValueError(f"The new group's rank should be within the world_size set by init_process_group "
                             f"(got rank {r} with world_size {size})")
    if len(set(ranks)) != len(ranks):
        raise ValueError(f"new_group: ranks must be distinct, got {ranks}")
    comm = world.comm.Create(world.comm.Get_group().Incl(ranks))
    if comm == _mpi.MPI().COMM_NULL:
        return GroupMember.NON_GROUP_MEMBER
    comm.Set_errhandler(_mpi.MPI().ERRORS_RETURN)
    pg = ProcessGroup(comm, Backend(backend) if backend else world.backend, ranks)
    _groups.append(pg)
    return pg


def get_rank(group=None):
    """This process's rank in ``group`` (-1 when it is not a member)."""
    pg = resolve(group)
    return -1 if pg is None else pg.rank()


def get_world_size(group=None):
    """How many ranks ``group`` has (-1 when this process is not a member)."""
    pg = resolve(group)
    return -1 if pg is None else pg.size()


def get_backend(group=None):
    pg = resolve(group)
    if pg is None:
        raise ValueError("Invalid process group specified")
    return pg.backend


def get_process_group_ranks(group):
    pg = resolve(group)
    return list(pg.ranks)


def get_global_rank(group, group_rank):
    """The global rank of ``group``'s rank ``group_rank``."""
    return resolve(group).ranks[group_rank]


def get_group_rank(group, global_rank):
    """``global_rank``'s rank inside ``group``."""
    return group_rank(resolve(group), global_rank, "global_rank")


def group_rank(pg, global_rank, what):
    """``global_rank``'s rank inside ``pg``, or torch's error when it is not in it."""
    if not isinstance(global_rank, int) or isinstance(global_rank, bool):
        raise TypeError(f"{what} must be an int rank, got {type(global_rank).__name__}")
    try:
        return pg.ranks.index(global_rank)
    except ValueError:
        raise ValueError(f"Global rank {global_rank} is not part of group {pg}") from None
