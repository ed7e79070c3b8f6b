"""The one door to mpi4py: imported on first use, so that ``import tracegrad`` never
loads MPI (loading it initialises the MPI library, which a single-process user does not
want). Without mpi4py the distributed package is unavailable and says how to install it."""
import importlib
import importlib.util
import sys

__all__ = ["MPI", "available", "under_launcher", "INSTALL_HINT"]

INSTALL_HINT = 'pip install "tracegrad[distributed]"'
_cache = []


def available():
    """True when mpi4py can be imported (without importing it: importing initialises MPI)."""
    if _cache:
        return True
    if "mpi4py" in sys.modules and sys.modules["mpi4py"] is None:  # (blocked, as tests do)
        return False
    return importlib.util.find_spec("mpi4py") is not None


def MPI():
    """``mpi4py.MPI`` (initialising MPI the first time), or an ImportError naming the extra."""
    if not _cache:
        try:
            module = importlib.import_module("mpi4py.MPI")
        except ImportError as e:
            raise ImportError("tracegrad.distributed runs on MPI through mpi4py, which is not installed: "
                              f'{INSTALL_HINT} (installs mpi4py and the MPICH wheel, with its mpiexec)') from e
        _cache.append(module)
    return _cache[0]


def under_launcher():
    """True when this process was started by mpiexec/mpirun (MPICH's or Open MPI's), read
    from the environment so that MPI need not be initialised to know it."""
    import os
    return any(k in os.environ for k in ("PMI_RANK", "PMI_SIZE", "PMIX_RANK", "OMPI_COMM_WORLD_SIZE",
                                         "MPI_LOCALRANKID", "HYDI_CONTROL_FD"))
