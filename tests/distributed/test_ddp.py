"""DistributedDataParallel on 2 and 4 MPI ranks (one mpiexec launch each runs every check of
workers/ddp.py: gradients equal the full batch's on one process, overlap, no_sync,
uneven last batch, unused parameters, buffers, device tensors), and its bucketing."""
import pytest

import tracegrad as tg
from tracegrad.distributed._reducer import bucket_assignment

from .launch import needs_mpi, run

CHECKS = ["construction", "gradients", "overlap", "no_sync", "uneven batch", "find_unused_parameters",
          "unused parameters refused", "broadcast_buffers", "device tensors", "done"]


@needs_mpi
@pytest.mark.parametrize("ranks", [2, 4])
def test_ddp_matches_single_process(ranks):
    done = run(ranks, "ddp.py")
    assert [line[3:] for line in done.stdout.splitlines() if line.startswith("ok ")] == CHECKS


def test_buckets_in_reverse_order_capped_by_size():
    params = [tg.zeros(n) for n in (100, 10, 300, 50, 200)]  # float32: 4 bytes each
    assert bucket_assignment(params, cap_bytes=1000, first_cap_bytes=500) == [[4], [3, 2], [1, 0]]
    assert bucket_assignment(params, cap_bytes=10 ** 9, first_cap_bytes=10 ** 9) == [[4, 3, 2, 1, 0]]


def test_one_dtype_per_bucket():
    params = [tg.zeros(10), tg.zeros(10, dtype=tg.float64), tg.zeros(10)]
    assert bucket_assignment(params, cap_bytes=10 ** 9, first_cap_bytes=10 ** 9) == [[2, 0], [1]]


def test_ddp_before_init_process_group_is_torchs_error():
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        tg.nn.parallel.DistributedDataParallel(tg.nn.Linear(2, 2))
