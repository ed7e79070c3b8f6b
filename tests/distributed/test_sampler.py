"""DistributedSampler asks tracegrad.distributed for num_replicas and rank when not given,
with torch's errors where it cannot (the sampler's shares themselves: tests/utils, and on
two MPI ranks: tests/examples/test_ddp_train.py)."""
import sys

import pytest

from tracegrad.utils.data import DistributedSampler


def test_before_init_process_group_is_torchs_error():
    with pytest.raises(ValueError, match="^Default process group has not been initialized, please make sure to "
                                         "call init_process_group.$"):
        DistributedSampler(range(4))
    assert DistributedSampler(range(4), num_replicas=2, rank=1).rank == 1  # (given: no process group needed)


def test_without_mpi4py_is_torchs_error(monkeypatch):
    from tracegrad.distributed import _mpi
    monkeypatch.setattr(_mpi, "_cache", [])
    monkeypatch.setitem(sys.modules, "mpi4py", None)
    with pytest.raises(RuntimeError, match="^Requires distributed package to be available$"):
        DistributedSampler(range(4))
