"""Every collective of tracegrad.distributed against NumPy arithmetic on this job's ranks
(run by tests/distributed/test_collectives.py under mpiexec -n 2 and -n 4). Prints one
``ok <name>`` line per check on rank 0; any failure raises, which aborts the job."""
import numpy as np

import tracegrad as torch
import tracegrad.distributed as dist

dist.init_process_group("mpi")
rank, n = dist.get_rank(), dist.get_world_size()
ReduceOp = dist.ReduceOp


def value(r, shape=(2, 3), dtype=np.float64):
    """Rank r's data: different on every rank, exact in every dtype used."""
    return (np.arange(np.prod(shape)).reshape(shape) % 5 + r + 1).astype(dtype)


def all_values(shape=(2, 3), dtype=np.float64):
    return np.stack([value(r, shape, dtype) for r in range(n)])


def same(t, expected, name):
    got = t.numpy() if hasattr(t, "numpy") else np.asarray(t)
    assert got.dtype == np.asarray(expected).dtype, (name, got.dtype, np.asarray(expected).dtype)
    assert np.array_equal(got, expected), (name, rank, got, expected)


def ok(name):
    if rank == 0:
        print("ok", name, flush=True)


# -- all_reduce: every op, several dtypes, sync and async -----------------------------------------
for dtype in (np.float32, np.float64, np.int64, np.int32):
    for op, reduce_ in ((ReduceOp.SUM, np.sum), (ReduceOp.PRODUCT, np.prod), (ReduceOp.MIN, np.min),
                        (ReduceOp.MAX, np.max)):
        t = torch.from_numpy(value(rank, dtype=dtype))
        version = t._version
        assert dist.all_reduce(t, op=op) is None
        same(t, reduce_(all_values(dtype=dtype), axis=0).astype(dtype), f"all_reduce {op.name} {dtype}")
        assert t._version > version
t = torch.from_numpy(value(rank))
dist.all_reduce(t, op=ReduceOp.AVG)
same(t, all_values().mean(axis=0), "all_reduce AVG")
for op, fn in ((ReduceOp.BAND, np.bitwise_and), (ReduceOp.BOR, np.bitwise_or), (ReduceOp.BXOR, np.bitwise_xor)):
    t = torch.from_numpy(value(rank, dtype=np.int64) * 7)
    dist.all_reduce(t, op=op)
    same(t, fn.reduce(all_values(dtype=np.int64) * 7, axis=0), f"all_reduce {op.name}")
t = torch.tensor([rank == 0, True, False])
dist.all_reduce(t)  # bool: sum is "or"
same(t, np.array([True, True, False]), "all_reduce bool")
t = torch.from_numpy(value(rank))
work = dist.all_reduce(t, async_op=True)
assert work.wait() is True and work.is_completed()
same(t, all_values().sum(axis=0), "all_reduce async")
ok("all_reduce")

# a view of a bigger tensor is reduced in place in its base's memory
base = torch.zeros(4, 3, dtype=torch.float64)
base[1:3] = torch.from_numpy(value(rank))
dist.all_reduce(base[1:3])
same(base[1:3], all_values().sum(axis=0), "all_reduce view")
same(base[0], np.zeros(3), "all_reduce view leaves the rest")
ok("all_reduce of a view")

# -- reduce, broadcast --------------------------------------------------------------------------
for root in range(n):
    t = torch.from_numpy(value(rank))
    dist.reduce(t, dst=root, op=ReduceOp.SUM)
    same(t, all_values().sum(axis=0) if rank == root else value(rank), f"reduce to {root}")
    t = torch.from_numpy(value(rank, dtype=np.float32))
    dist.broadcast(t, src=root)
    same(t, value(root, dtype=np.float32), f"broadcast from {root}")
t = torch.from_numpy(value(rank))
dist.reduce(t, dst=n - 1, op=ReduceOp.AVG)
same(t, all_values().mean(axis=0) if rank == n - 1 else value(rank), "reduce AVG")
ok("reduce")
ok("broadcast")

# -- gathers ----------------------------------------------------------------------------------
out = [torch.zeros(2, 3, dtype=torch.float64) for _ in range(n)]
dist.all_gather(out, torch.from_numpy(value(rank)))
for r in range(n):
    same(out[r], value(r), "all_gather")
ok("all_gather")
out = torch.zeros(2 * n, 3, dtype=torch.float64)
dist.all_gather_into_tensor(out, torch.from_numpy(value(rank)))
same(out, all_values().reshape(2 * n, 3), "all_gather_into_tensor")
out = torch.zeros(n, 2, 3, dtype=torch.float64)
dist.all_gather_into_tensor(out, torch.from_numpy(value(rank)), async_op=True).wait()
same(out, all_values(), "all_gather_into_tensor stacked")
ok("all_gather_into_tensor")
for root in range(n):
    gathered = [torch.zeros(2, 3, dtype=torch.float64) for _ in range(n)] if rank == root else None
    dist.gather(torch.from_numpy(value(rank)), gathered, dst=root)
    if rank == root:
        for r in range(n):
            same(gathered[r], value(r), "gather")
ok("gather")
for root in range(n):
    mine = torch.zeros(2, 3, dtype=torch.float64)
    pieces = [torch.from_numpy(value(r) * 10) for r in range(n)] if rank == root else None
    dist.scatter(mine, pieces, src=root)
    same(mine, value(rank) * 10, "scatter")
ok("scatter")

# -- reduce_scatter ---------------------------------------------------------------------------
inputs = [torch.from_numpy(value(rank) + 100 * j) for j in range(n)]
out = torch.zeros(2, 3, dtype=torch.float64)
dist.reduce_scatter(out, inputs)
same(out, (all_values() + 100 * rank).sum(axis=0), "reduce_scatter")
out = torch.zeros(2, 3, dtype=torch.float64)
dist.reduce_scatter(out, [torch.from_numpy(value(rank) + 100 * j) for j in range(n)], op=ReduceOp.MAX)
same(out, (all_values() + 100 * rank).max(axis=0), "reduce_scatter MAX")
ok("reduce_scatter")
big = torch.from_numpy(np.concatenate([value(rank) + 100 * j for j in range(n)]))
out = torch.zeros(2, 3, dtype=torch.float64)
dist.reduce_scatter_tensor(out, big)
same(out, (all_values() + 100 * rank).sum(axis=0), "reduce_scatter_tensor")
out = torch.zeros(2, 3, dtype=torch.float64)
dist.reduce_scatter_tensor(out, big, op=ReduceOp.AVG)
same(out, (all_values() + 100 * rank).mean(axis=0), "reduce_scatter_tensor AVG")
ok("reduce_scatter_tensor")

# -- all_to_all: rank r sends j+1 copies of 10r+j to rank j -------------------------------------
inputs = [torch.full((j + 1,), 10 * rank + j, dtype=torch.int64) for j in range(n)]
outputs = [torch.zeros(rank + 1, dtype=torch.int64) for _ in range(n)]
dist.all_to_all(outputs, inputs)
for r in range(n):
    same(outputs[r], np.full(rank + 1, 10 * r + rank), "all_to_all")
ok("all_to_all")
inp = torch.from_numpy(np.arange(2 * n, dtype=np.float32) + 100 * rank)
out = torch.zeros(2 * n)
dist.all_to_all_single(out, inp)
same(out, np.concatenate([np.arange(2 * rank, 2 * rank + 2, dtype=np.float32) + 100 * r for r in range(n)]),
     "all_to_all_single")
ok("all_to_all_single")

# -- point to point: a ring ---------------------------------------------------------------------
right, left = (rank + 1) % n, (rank - 1) % n
got = torch.zeros(2, 3, dtype=torch.float64)
if rank % 2 == 0:
    dist.send(torch.from_numpy(value(rank)), dst=right)
    assert dist.recv(got, src=left) == left
else:
    assert dist.recv(got, src=left) == left
    dist.send(torch.from_numpy(value(rank)), dst=right)
same(got, value(left), "send/recv")
got = torch.zeros(2, 3, dtype=torch.float64)
works = [dist.isend(torch.from_numpy(value(rank) * 2), dst=right, tag=7), dist.irecv(got, src=left, tag=7)]
for w in works:
    w.wait()
same(got, value(left) * 2, "isend/irecv")
if rank == 0:
    seen = set()
    for _ in range(n - 1):
        got = torch.zeros(1, dtype=torch.int64)
        sender = dist.recv(got)  # from any rank
        assert got.item() == sender * 3, (got, sender)
        seen.add(sender)
    assert seen == set(range(1, n))
else:
    dist.send(torch.tensor([rank * 3]), dst=0)
ok("send/recv")

# -- objects ----------------------------------------------------------------------------------
objects = [None, None] if rank else [{"a": 1}, "two"]
dist.broadcast_object_list(objects, src=0)
assert objects == [{"a": 1}, "two"], objects
gathered = [None] * n
dist.all_gather_object(gathered, ("rank", rank))
assert gathered == [("rank", r) for r in range(n)], gathered
ok("objects")

# -- groups -----------------------------------------------------------------------------------
evens = dist.new_group([r for r in range(n) if r % 2 == 0])
if rank % 2 == 0:
    assert dist.get_world_size(evens) == (n + 1) // 2 and dist.get_rank(evens) == rank // 2
    assert dist.get_global_rank(evens, rank // 2) == rank and dist.get_group_rank(evens, rank) == rank // 2
    assert dist.get_process_group_ranks(evens) == list(range(0, n, 2))
    t = torch.tensor([float(rank)])
    dist.all_reduce(t, group=evens)
    same(t, np.array([float(sum(range(0, n, 2)))], dtype=np.float32), "group all_reduce")
else:
    assert evens is dist.GroupMember.NON_GROUP_MEMBER and dist.get_rank(evens) == -1
    assert dist.all_reduce(torch.ones(1), group=evens) is None
ok("new_group")

# -- mismatches raise on every rank instead of hanging -----------------------------------------
def raises(fn, *words):
    try:
        fn()
    except RuntimeError as e:
        for w in words:
            assert w in str(e), (w, str(e))
        return
    raise AssertionError(f"no error on rank {rank}")


raises(lambda: dist.all_reduce(torch.zeros(3 + rank)), "all_reduce", "mismatching", "rank 1: float32 tensor of shape [4]")
raises(lambda: dist.all_reduce(torch.zeros(3, dtype=torch.float32 if rank else torch.float64)), "mismatching",
       "float64", "float32")
raises(lambda: dist.broadcast(torch.zeros(2), src=0) if rank else dist.all_reduce(torch.zeros(2)), "mismatching",
       "different collective")
raises(lambda: dist.all_gather([torch.zeros(2)] * (n + (rank == 1)), torch.zeros(2)), "all_gather")
raises(lambda: dist.all_reduce(torch.ones(2, dtype=torch.int64), op=ReduceOp.AVG),
       "result type Float can't be cast to the desired output type Long")
if rank < 2:
    got = torch.zeros(3)
    if rank == 0:
        dist.send(torch.zeros(2), dst=1)
    else:
        raises(lambda: dist.recv(got, src=0), "recv: rank 0 sent a float32 tensor of shape [2]", "shape [3]")
t = torch.from_numpy(value(rank))
dist.all_reduce(t)  # still in step after all that
same(t, all_values().sum(axis=0), "all_reduce after errors")
ok("mismatches")

# TRACEGRAD_DISTRIBUTED_CHECK=0: no signature exchange, same results
from tracegrad.distributed import _buffers  # noqa: E402
_buffers.CHECK = False
t = torch.from_numpy(value(rank))
dist.all_reduce(t, op=ReduceOp.MAX)
same(t, all_values().max(axis=0), "all_reduce unchecked")
_buffers.CHECK = True
ok("unchecked")

dist.barrier()
dist.destroy_process_group()
assert not dist.is_initialized()
ok("done")
