"""torch.distributed's collectives on MPI's non-blocking ones (MPI_Iallreduce...): with
``async_op=True`` they return a :class:`Work` at once, else they wait. Tensors are
reduced/filled in place through their NumPy memory (see ``_buffers``); every call first
checks with a few ints that all ranks passed the same kind of tensor (see ``agree``)."""
import enum

import numpy as np

from . import _mpi
from ._buffers import Work, agree, check_tensor, dtype_name, finished, lend, signature
from .process_group import group_rank, resolve

__all__ = ["ReduceOp", "all_reduce", "reduce", "broadcast", "all_gather", "all_gather_into_tensor",
           "reduce_scatter", "reduce_scatter_tensor", "gather", "scatter", "all_to_all", "all_to_all_single",
           "barrier", "monitored_barrier", "reduce_in_place"]


class ReduceOp:
    """The reductions, as torch's ``ReduceOp.SUM``... (``RedOpType`` members)."""

    class RedOpType(enum.IntEnum):
        SUM = 0
        AVG = 1
        PRODUCT = 2
        MIN = 3
        MAX = 4
        BAND = 5
        BOR = 6
        BXOR = 7
        PREMUL_SUM = 8

    SUM, AVG, PRODUCT, MIN, MAX = RedOpType.SUM, RedOpType.AVG, RedOpType.PRODUCT, RedOpType.MIN, RedOpType.MAX
    BAND, BOR, BXOR, PREMUL_SUM = RedOpType.BAND, RedOpType.BOR, RedOpType.BXOR, RedOpType.PREMUL_SUM


# kinds of call, so that two ranks calling different collectives disagree in `agree`
(ALL_REDUCE, REDUCE, BROADCAST, ALL_GATHER, GATHER, SCATTER, REDUCE_SCATTER, ALL_TO_ALL, BARRIER) = range(1, 10)


def _op_name(code):
    try:
        return f", op {ReduceOp.RedOpType(code % 16).name}"
    except ValueError:
        return ""


_MPI_OPS = {}  # (op, is_bool) -> MPI.Op, filled once MPI is loaded


def _mpi_op(op, arr):
    """The MPI reduction for ``op`` on ``arr`` (bool: as bytes, where sum is ``or`` and
    product is ``and``); AVG is a SUM, divided afterwards."""
    if not _MPI_OPS:
        MPI = _mpi.MPI()
        R = ReduceOp
        _MPI_OPS.update({(R.SUM, False): MPI.SUM, (R.AVG, False): MPI.SUM, (R.PRODUCT, False): MPI.PROD,
                         (R.MIN, False): MPI.MIN, (R.MAX, False): MPI.MAX, (R.BAND, False): MPI.BAND,
                         (R.BOR, False): MPI.BOR, (R.BXOR, False): MPI.BXOR, (R.SUM, True): MPI.LOR,
                         (R.MAX, True): MPI.LOR, (R.BOR, True): MPI.LOR, (R.PRODUCT, True): MPI.LAND,
                         (R.MIN, True): MPI.LAND, (R.BAND, True): MPI.LAND, (R.BXOR, True): MPI.LXOR})
    return _MPI_OPS[op, arr.dtype.kind == "b"]


def _code(op):
    if not isinstance(op, ReduceOp.RedOpType):
        raise TypeError(f"op must be a tracegrad.distributed.ReduceOp (ReduceOp.SUM...), got {op!r}")
    return int(op)


def _op_error(op, arr):
    """What is wrong with reducing ``arr`` with ``op`` (None: nothing), for ``agree``."""
    kind = arr.dtype.kind
    if op is ReduceOp.SUM or (op is ReduceOp.AVG and kind in "fc"):  # (the usual case, at once)
        return None
    if op is ReduceOp.PREMUL_SUM:
        return f"ReduceOp.{op.name} is not supported by tracegrad.distributed"
    if op is ReduceOp.AVG:
        return f"result type Float can't be cast to the desired output type {_torch_name(arr)}"
    if op in (ReduceOp.BAND, ReduceOp.BOR, ReduceOp.BXOR) and kind not in "biu":
        return f"Cannot use ReduceOp.{op.name} with {_torch_name(arr)}"
    if op in (ReduceOp.MIN, ReduceOp.MAX) and kind == "c":
        return f"{op.name} is not defined on complex tensors"
    return None


def _torch_name(arr):
    return {"int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte",
            "bool": "Bool"}.get(arr.dtype.name, arr.dtype.name)


def _mpi_buf(arr):
    """``arr`` as MPI reads it: bool as bytes; dtypes MPI lacks (bfloat16) are refused."""
    if arr.dtype.kind == "b":
        return arr.view(np.uint8)
    if dtype_name(arr) == "bfloat16":
        raise NotImplementedError("tracegrad.distributed cannot send bfloat16 tensors through MPI; cast them "
                                  "to float32 first")
    return arr


def _avg(arr, n):
    def finish():
        np.divide(arr, n, out=arr)
    return finish


def _then(*steps):
    def run():
        for step in steps:
            if step is not None:
                step()
    return run


def start(pg, name, async_op, *args):
    """Run MPI collective ``name`` (``"Allreduce"``...): with ``async_op`` its non-blocking
    form (``Iallreduce``), whose request is returned for a Work to wait on; else the
    blocking one, at once (MPICH's blocking collectives are the faster on one node)."""
    if async_op:
        return [getattr(pg.comm, "I" + name[0].lower() + name[1:])(*args)]
    getattr(pg.comm, name)(*args)
    return []


def reduce_in_place(pg, arr, op=ReduceOp.SUM):
    """Start an all-reduce of host array ``arr`` in place on ``pg``, unchecked (DDP's
    buckets, whose layout is agreed once at construction): the MPI request."""
    return pg.comm.Iallreduce(_mpi.MPI().IN_PLACE, _mpi_buf(arr), _mpi_op(op, arr))


# -- reductions and broadcast -------------------------------------------------------------------

def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce ``tensor`` over the ranks with ``op``, leaving the result in every rank's tensor."""
    pg = resolve(group)
    if pg is None:
        return None
    lent = lend(tensor)
    agree(pg, "all_reduce", signature(ALL_REDUCE, _code(op), lent.buf), _op_error(op, lent.buf),
          describe_arg=_op_name)
    requests = start(pg, "Allreduce", async_op, _mpi.MPI().IN_PLACE, _mpi_buf(lent.buf), _mpi_op(op, lent.buf))
    finish = _then(_avg(lent.buf, pg.size()) if op is ReduceOp.AVG else None, lent.give_back)
    return finished(Work(requests, finish, [tensor]), async_op)


def reduce(tensor, dst=None, op=ReduceOp.SUM, group=None, async_op=False, group_dst=None):
    """Reduce ``tensor`` over the ranks into rank ``dst``'s tensor (the others keep theirs)."""
    pg = resolve(group)
    if pg is None:
        return None
    root = _root(pg, dst, group_dst, "dst")
    lent = lend(tensor)
    agree(pg, "reduce", signature(REDUCE, root * 16 + _code(op), lent.buf), _op_error(op, lent.buf),
          describe_arg=_op_name)
    MPI = _mpi.MPI()
    buf = _mpi_buf(lent.buf)
    mpi_op = _mpi_op(op, lent.buf)
    mine = pg.rank() == root
    requests = start(pg, "Reduce", async_op, MPI.IN_PLACE if mine else buf, buf if mine else None, mpi_op, root)
    finish = _then(_avg(lent.buf, pg.size()) if op is ReduceOp.AVG and mine else None,
                   lent.give_back if mine else None)
    return finished(Work(requests, finish, [tensor]), async_op)


def broadcast(tensor, src=None, group=None, async_op=False, group_src=None):
    """Copy rank ``src``'s tensor into every rank's."""
    pg = resolve(group)
    if pg is None:
        return None
    root = _root(pg, src, group_src, "src")
    lent = lend(tensor)
    agree(pg, "broadcast", signature(BROADCAST, root, lent.buf), describe_arg=lambda r: f", src rank {r}")
    requests = start(pg, "Bcast", async_op, _mpi_buf(lent.buf), root)
    return finished(Work(requests, lent.give_back if pg.rank() != root else None, [tensor]), async_op)


def _root(pg, global_rank, group_rank_, what):
    """The group rank of a collective's root, given as a global rank or (``group_*``) a group rank."""
    if global_rank is not None and group_rank_ is not None:
        raise ValueError(f"Can not specify both {what} and group_{what}")
    if group_rank_ is not None:
        if not 0 <= group_rank_ < pg.size():
            raise ValueError(f"Group rank {group_rank_} is not part of group {pg}")
        return group_rank_
    return group_rank(pg, 0 if global_rank is None else global_rank, what)


# -- gathers and scatters ------------------------------------------------------------------------

def _list_error(what, tensors, like, n, role):
    """What is wrong with a list of tensors that must hold ``n`` tensors shaped as ``like``."""
    if not isinstance(tensors, (list, tuple)):
        return f"{what}: {role} must be a list of tensors"
    if len(tensors) != n:
        return f"{what}: invalid {role} (expected length {n}, got {len(tensors)})"
    for i, t in enumerate(tensors):
        check_tensor(t, role)
        if tuple(t.shape) != tuple(like.shape) or t._data.dtype != like._data.dtype:
            return (f"{what}: invalid tensor at index {i} of {role} (expected {dtype_name(like._data)} of shape "
                    f"{list(like.shape)}, got {dtype_name(t._data)} of shape {list(t.shape)})")
    return None


def _size_error(what, out, inp, n):
    if out._data.dtype != inp._data.dtype:
        return f"{what}: output and input dtypes differ ({dtype_name(out._data)} and {dtype_name(inp._data)})"
    if out.numel() != n * inp.numel():
        return (f"{what}: the output tensor must have world_size ({n}) times as many elements as the input: "
                f"got {list(out.shape)} for an input of {list(inp.shape)}")
    return None


def _scatter_into(flat, tensors):
    """Give ``flat``'s consecutive blocks to ``tensors`` (their host copies are written back)."""
    def finish():
        for block, t in zip(flat, tensors):
            lent = lend(t)
            lent.buf[...] = block.reshape(lent.buf.shape)
            lent.give_back()
    return finish


def _stack(tensors, like):
    """The tensors' values one after the other, in one host array of shape (len, *like.shape)."""
    return np.stack([lend(t).buf for t in tensors]) if tensors else np.empty((0,) + like.shape, like.dtype)


def all_gather(tensor_list, tensor, group=None, async_op=False):
    """Every rank's ``tensor`` into every rank's ``tensor_list`` (index = rank)."""
    pg = resolve(group)
    if pg is None:
        return None
    lent = lend(tensor)
    error = _list_error("all_gather", tensor_list, tensor, pg.size(), "output tensor list")
    agree(pg, "all_gather", signature(ALL_GATHER, 0, lent.buf), error)
    out = np.empty((pg.size(),) + lent.buf.shape, lent.buf.dtype)
    requests = start(pg, "Allgather", async_op, _mpi_buf(lent.buf), _mpi_buf(out))
    return finished(Work(requests, _scatter_into(out, tensor_list), [tensor_list]), async_op)


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):
    """Every rank's ``input_tensor`` one after the other in ``output_tensor``."""
    pg = resolve(group)
    if pg is None:
        return None
    inp, out = lend(input_tensor, "input_tensor"), lend(output_tensor, "output_tensor")
    error = _size_error("all_gather_into_tensor", output_tensor, input_tensor, pg.size())
    agree(pg, "all_gather_into_tensor", signature(ALL_GATHER, 1, inp.buf), error)
    requests = start(pg, "Allgather", async_op, _mpi_buf(inp.buf), _mpi_buf(out.buf))
    return finished(Work(requests, out.give_back, [output_tensor]), async_op)


def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce ``input_list`` over the ranks; rank r gets the reduction of everyone's ``input_list[r]``."""
    pg = resolve(group)
    if pg is None:
        return None
    lent = lend(output, "output")
    error = _list_error("reduce_scatter", input_list, output, pg.size(), "input tensor list")
    agree(pg, "reduce_scatter", signature(REDUCE_SCATTER, _code(op), lent.buf), error or _op_error(op, lent.buf),
          describe_arg=_op_name)
    send = _stack(input_list, lent.buf)
    return _reduce_scatter(pg, send, lent, op, async_op)


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None, async_op=False):
    """``reduce_scatter`` of ``input`` cut into world_size equal blocks."""
    pg = resolve(group)
    if pg is None:
        return None
    lent, inp = lend(output, "output"), lend(input, "input")
    error = _size_error("reduce_scatter_tensor", input, output, pg.size())
    agree(pg, "reduce_scatter_tensor", signature(REDUCE_SCATTER, 32 + _code(op), lent.buf),
          error or _op_error(op, lent.buf),
          describe_arg=_op_name)
    return _reduce_scatter(pg, inp.buf, lent, op, async_op)


def _reduce_scatter(pg, send, lent, op, async_op):
    requests = start(pg, "Reduce_scatter_block", async_op, _mpi_buf(np.ascontiguousarray(send)),
                     _mpi_buf(lent.buf), _mpi_op(op, lent.buf))
    finish = _then(_avg(lent.buf, pg.size()) if op is ReduceOp.AVG else None, lent.give_back)
    return finished(Work(requests, finish, [lent.tensor]), async_op)


def gather(tensor, gather_list=None, dst=None, group=None, async_op=False, group_dst=None):
    """Every rank's ``tensor`` into rank ``dst``'s ``gather_list`` (index = rank)."""
    pg = resolve(group)
    if pg is None:
        return None
    root = _root(pg, dst, group_dst, "dst")
    lent = lend(tensor)
    mine = pg.rank() == root
    if mine:
        error = _list_error("gather", gather_list, tensor, pg.size(), "gather_list")
    else:
        error = "gather: Argument ``gather_list`` must NOT be specified on non-destination ranks." if gather_list else None
    agree(pg, "gather", signature(GATHER, root, lent.buf), error, describe_arg=lambda r: f", dst rank {r}")
    out = np.empty((pg.size(),) + lent.buf.shape, lent.buf.dtype) if mine else None
    requests = start(pg, "Gather", async_op, _mpi_buf(lent.buf), _mpi_buf(out) if mine else None, root)
    return finished(Work(requests, _scatter_into(out, gather_list) if mine else None), async_op)


def scatter(tensor, scatter_list=None, src=None, group=None, async_op=False, group_src=None):
    """Rank ``src``'s ``scatter_list[r]`` into rank r's ``tensor``."""
    pg = resolve(group)
    if pg is None:
        return None
    root = _root(pg, src, group_src, "src")
    lent = lend(tensor)
    mine = pg.rank() == root
    if mine:
        error = _list_error("scatter", scatter_list, tensor, pg.size(), "scatter_list")
    else:
        error = "scatter: Argument ``scatter_list`` must NOT be specified on non-source ranks." if scatter_list else None
    agree(pg, "scatter", signature(SCATTER, root, lent.buf), error, describe_arg=lambda r: f", src rank {r}")
    send = _mpi_buf(_stack(scatter_list, lent.buf)) if mine else None
    requests = start(pg, "Scatter", async_op, send, _mpi_buf(lent.buf), root)
    return finished(Work(requests, lent.give_back, [tensor]), async_op)


# -- all to all ------------------------------------------------------------------------------

def all_to_all(output_tensor_list, input_tensor_list, group=None, async_op=False):
    """Rank r's ``input_tensor_list[j]`` into rank j's ``output_tensor_list[r]`` (any sizes,
    as long as each pair agrees). It runs at once (MPI_Alltoallv after an exchange of the
    sizes): with ``async_op`` the Work returned is already complete."""
    pg = resolve(group)
    if pg is None:
        return None
    n = pg.size()
    error = None
    for name, tensors in (("output_tensor_list", output_tensor_list), ("input_tensor_list", input_tensor_list)):
        if not isinstance(tensors, (list, tuple)) or len(tensors) != n:
            error = error or f"all_to_all: {name} must be a list of world_size ({n}) tensors"
    if error is None:
        sends = [lend(t).buf for t in input_tensor_list]
        recvs = [lend(t) for t in output_tensor_list]
        dtypes = {a.dtype for a in sends} | {r.buf.dtype for r in recvs}
        if len(dtypes) > 1:
            error = f"all_to_all: all tensors must have one dtype, got {sorted(str(d) for d in dtypes)}"
    like = sends[0] if error is None else np.empty(0)
    agree(pg, "all_to_all", signature(ALL_TO_ALL, 0, shape=(), dtype=dtype_name(like)), error)
    send = np.concatenate([a.ravel() for a in sends]) if sends else like
    recv = np.empty(sum(r.buf.size for r in recvs), like.dtype)
    _exchange(pg, send, [a.size for a in sends], recv, [r.buf.size for r in recvs])

    def finish():
        offset = 0
        for r in recvs:
            r.buf.ravel()[...] = recv[offset:offset + r.buf.size]
            offset += r.buf.size
            r.give_back()
    return finished(Work([], finish, [output_tensor_list]), async_op)


def all_to_all_single(output, input, output_split_sizes=None, input_split_sizes=None, group=None,
                      async_op=False):
    """``all_to_all`` on blocks of dim 0 of ``input``/``output`` (equal blocks, or the split sizes)."""
    pg = resolve(group)
    if pg is None:
        return None
    n = pg.size()
    out, inp = lend(output, "output"), lend(input, "input")
    row_out = int(np.prod(output.shape[1:], dtype=np.int64)) if output.ndim else 1
    row_in = int(np.prod(input.shape[1:], dtype=np.int64)) if input.ndim else 1
    error = None
    splits = []
    for t, given in ((input, input_split_sizes), (output, output_split_sizes)):
        if given is None:
            if t.ndim == 0 or t.shape[0] % n:
                error = error or f"all_to_all_single: dim 0 of {list(t.shape)} does not split into {n} equal blocks"
            given = [t.shape[0] // n if t.ndim else 0] * n
        elif len(given) != n or sum(given) != (t.shape[0] if t.ndim else 0):
            error = error or f"all_to_all_single: split sizes {list(given)} do not split dim 0 of {list(t.shape)}"
        splits.append(list(given))
    if out.buf.dtype != inp.buf.dtype:
        error = error or "all_to_all_single: output and input dtypes differ"
    agree(pg, "all_to_all_single", signature(ALL_TO_ALL, 1, shape=(), dtype=dtype_name(inp.buf)), error)
    _exchange(pg, inp.buf.ravel(), [s * row_in for s in splits[0]], out.buf.reshape(-1),
              [s * row_out for s in splits[1]])
    return finished(Work([], out.give_back, [output]), async_op)


def _exchange(pg, send, send_counts, recv, recv_counts):
    """MPI_Alltoallv, after checking (one MPI_Alltoall of the counts) that what each rank
    sends to each other is what that one expects: else every rank raises."""
    mine = np.array(send_counts, dtype=np.int64)
    theirs = np.empty_like(mine)
    pg.comm.Alltoall(mine, theirs)
    wrong = [r for r in range(pg.size()) if theirs[r] != recv_counts[r]]
    flag = np.array([1 if wrong else 0], dtype=np.int64)
    pg.comm.Allreduce(_mpi.MPI().IN_PLACE, flag, _mpi.MPI().SUM)
    if wrong:
        raise RuntimeError(f"all_to_all: rank {pg.rank()} expects {recv_counts[wrong[0]]} elements from rank "
                           f"{wrong[0]}, which sends {int(theirs[wrong[0]])}")
    if flag[0]:
        raise RuntimeError("all_to_all: the tensor sizes of some ranks do not match (see their error); "
                           "nothing was exchanged")

    def displacements(counts):
        return np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64) if len(counts) else counts
    pg.comm.Alltoallv([_mpi_buf(send), (list(send_counts), list(displacements(send_counts)))],
                      [_mpi_buf(recv), (list(recv_counts), list(displacements(recv_counts)))])


# -- synchronisation ---------------------------------------------------------------------------

def barrier(group=None, async_op=False, device_ids=None, timeout=None):
    """Wait until every rank of the group has reached it."""
    pg = resolve(group)
    if pg is None:
        return None
    agree(pg, "barrier", signature(BARRIER, 0, shape=(), dtype="bool"))
    return finished(Work(start(pg, "Barrier", async_op)), async_op)


def monitored_barrier(group=None, timeout=None, wait_all_ranks=False):
    """A barrier (MPI ends the job if a rank dies, so there is nothing more to monitor)."""
    barrier(group)
