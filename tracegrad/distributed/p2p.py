"""Point-to-point: send/recv and their non-blocking forms. Each message is preceded by a
small header (dtype and shape) with the same tag, which MPI delivers first (messages between
two ranks with one tag never overtake each other), so a receive into a tensor of another
shape or dtype raises instead of truncating or reinterpreting bytes."""
import numpy as np

from . import _mpi
from ._buffers import Work, lend, row, _describe
from .process_group import group_rank, resolve

__all__ = ["send", "recv", "isend", "irecv", "P2POp", "batch_isend_irecv"]

_HEADER_LEN = len(row(0, 0, shape=(), dtype="bool"))


def _peer(pg, rank, group_rank_, what):
    if rank is not None and group_rank_ is not None:
        raise ValueError(f"Can not specify both {what} and group_{what}")
    if group_rank_ is not None:
        return group_rank_
    if rank is None:
        raise ValueError(f"{what} must be given")
    return group_rank(pg, rank, what)


def _mpi_buf(arr):
    return arr.view(np.uint8) if arr.dtype.kind == "b" else arr


def isend(tensor, dst=None, group=None, tag=0, group_dst=None):
    """Start sending ``tensor`` to rank ``dst``: the Work completes once it is sent."""
    pg = resolve(group)
    if pg is None:
        return None
    peer = _peer(pg, dst, group_dst, "dst")
    if peer == pg.rank():
        raise ValueError("Invalid destination rank: destination rank should not be the same as the rank of the "
                         "current process.")
    lent = lend(tensor)
    header = np.array(row(0, 0, lent.buf), dtype=np.int64)
    data = np.ascontiguousarray(lent.buf)
    requests = [pg.comm.Isend(header, peer, tag), pg.comm.Isend(_mpi_buf(data), peer, tag)]
    return Work(requests, lambda: (header, data), [tensor])  # (keeps both alive until then)


def irecv(tensor, src=None, group=None, tag=0, group_src=None):
    """Start receiving into ``tensor`` from rank ``src`` (None: from any rank)."""
    pg = resolve(group)
    if pg is None:
        return None
    MPI = _mpi.MPI()
    peer = MPI.ANY_SOURCE if src is None and group_src is None else _peer(pg, src, group_src, "src")
    if peer == pg.rank():
        raise ValueError("Invalid source rank: source rank should not be the same as the rank of the current "
                         "process.")
    lent = lend(tensor)
    header = np.empty(_HEADER_LEN, dtype=np.int64)
    status = MPI.Status()
    expected = row(0, 0, lent.buf)
    if peer == MPI.ANY_SOURCE:  # the data must come from whoever sent the header: received after it
        request = pg.comm.Irecv(header, peer, tag)

        def finish():
            request.Wait(status)
            _check_header(header, expected, status.Get_source())
            pg.comm.Recv(_mpi_buf(lent.buf), status.Get_source(), tag)
            lent.give_back()
        return Work([], finish, [tensor])  # (completes when waited on: the sender is known then)
    requests = [pg.comm.Irecv(header, peer, tag), pg.comm.Irecv(_mpi_buf(lent.buf), peer, tag)]

    def check():
        _check_header(header, expected, peer)
        lent.give_back()
    return Work(requests, check, [tensor])


def _check_header(header, expected, peer):
    if list(header) != list(expected):
        raise RuntimeError(f"recv: rank {peer} sent a {_describe(header)} but this rank receives into a "
                           f"{_describe(expected)}")


def send(tensor, dst=None, group=None, tag=0, group_dst=None):
    """Send ``tensor`` to rank ``dst`` and wait until it is sent."""
    work = isend(tensor, dst, group, tag, group_dst)
    if work is not None:
        work.wait()


def recv(tensor, src=None, group=None, tag=0, group_src=None):
    """Receive into ``tensor`` from rank ``src`` (None: any rank); returns the sender's rank."""
    pg = resolve(group)
    if pg is None:
        return -1
    MPI = _mpi.MPI()
    if src is None and group_src is None:
        lent = lend(tensor)
        header = np.empty(_HEADER_LEN, dtype=np.int64)
        status = MPI.Status()
        pg.comm.Recv(header, MPI.ANY_SOURCE, tag, status)
        peer = status.Get_source()
        _check_header(header, row(0, 0, lent.buf), peer)
        pg.comm.Recv(_mpi_buf(lent.buf), peer, tag)
        lent.give_back()
        return pg.ranks[peer]
    irecv(tensor, src, group, tag, group_src).wait()
    return src if src is not None else pg.ranks[group_src]


class P2POp:
    """One send or receive for :func:`batch_isend_irecv` (``op`` is ``isend`` or ``irecv``)."""

    def __init__(self, op, tensor, peer=None, group=None, tag=0, group_peer=None):
        if op not in (isend, irecv):
            raise ValueError("Invalid ``op``. Expected ``op`` to be of type ``torch.distributed.isend`` or "
                             "``torch.distributed.irecv``.")
        self.op, self.tensor, self.peer, self.group, self.tag, self.group_peer = op, tensor, peer, group, tag, group_peer


def batch_isend_irecv(p2p_op_list):
    """Start every send and receive of the list; their Works, in order."""
    return [p.op(p.tensor, p.peer, p.group, p.tag, p.group_peer) for p in p2p_op_list]
