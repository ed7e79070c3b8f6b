"""DistributedDataParallel on 2 and 4 MPI ranks (one mpiexec launch each runs every check of
workers/ddp.py: gradients equal the full batch's on one process, overlap, no_sync,
uneven last batch, unused parameters, buffers, device tensors), and its bucketing."""
import pytest

import tracegrad as tg
from tracegrad.distributed._reducer import bucket_assignment

from .launch import needs_mpi, run

CHECKS = ["construction", "gradients", "overlap", "no_sync", "second backward refused", "uneven batch", "find_unused_parameters",
          "unused parameters refused", "broadcast_buffers", "SyncBatchNorm", "device tensors", "done"]


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


@needs_mpi
def test_ddp_in_one_process_is_the_module_itself():
    """A plain ``python script.py`` (world size 1): the gradients are the module's own, and
    unused parameters are still reported as torch reports them."""
    from .test_collectives import _python
    done = _python("import tracegrad as tg, tracegrad.distributed as dist, tracegrad.nn as nn\n"
                   "from tracegrad.nn.parallel import DistributedDataParallel as DDP\n"
                   "dist.init_process_group()\n"
                   "tg.manual_seed(0); alone = nn.Linear(3, 2); tg.manual_seed(0); m = DDP(nn.Linear(3, 2))\n"
                   "x = tg.randn(4, 3); m(x).pow(2).sum().backward(); alone(x).pow(2).sum().backward()\n"
                   "print(tg.equal(m.module.weight.grad, alone.weight.grad), list(m.state_dict()))\n"
                   "class Two(nn.Module):\n"
                   "    def __init__(self):\n"
                   "        super().__init__(); self.a = nn.Linear(2, 2); self.b = nn.Linear(2, 2)\n"
                   "    def forward(self, x):\n"
                   "        return self.a(x)\n"
                   "try:\n    DDP(Two())(tg.ones(1, 2)).sum().backward()\nexcept RuntimeError as e:\n"
                   "    print(str(e).splitlines()[-2])\n")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "True ['module.weight', 'module.bias']"
    assert lines[1] == "Parameter indices which did not receive grad for rank 0: 2 3"
