"""Collectives on picklable Python objects (torch's ``*_object*``): these, unlike the tensor
collectives, go through pickle (mpi4py's lowercase methods)."""
from .process_group import resolve
from .collectives import _root

__all__ = ["broadcast_object_list", "all_gather_object", "gather_object", "scatter_object_list"]


def broadcast_object_list(object_list, src=None, group=None, device=None, group_src=None):
    """Rank ``src``'s ``object_list`` items into every rank's list (same length everywhere)."""
    pg = resolve(group)
    if pg is None:
        return
    root = _root(pg, src, group_src, "src")
    objects = pg.comm.bcast(list(object_list) if pg.rank() == root else len(object_list), root)
    if len(objects) != len(object_list):
        raise RuntimeError(f"broadcast_object_list: rank {pg.ranks[root]} broadcasts {len(objects)} objects "
                           f"into a list of {len(object_list)} here")
    object_list[:] = objects


def all_gather_object(object_list, obj, group=None):
    """Every rank's ``obj`` into ``object_list`` (index = rank; it must have world_size items)."""
    pg = resolve(group)
    if pg is None:
        return
    gathered = pg.comm.allgather(obj)
    if len(object_list) != len(gathered):
        raise RuntimeError(f"all_gather_object: object_list has {len(object_list)} items, expected "
                           f"world_size ({len(gathered)})")
    object_list[:] = gathered


def gather_object(obj, object_gather_list=None, dst=None, group=None, group_dst=None):
    """Every rank's ``obj`` into rank ``dst``'s ``object_gather_list``."""
    pg = resolve(group)
    if pg is None:
        return
    root = _root(pg, dst, group_dst, "dst")
    gathered = pg.comm.gather(obj, root)
    if pg.rank() == root:
        object_gather_list[:] = gathered


def scatter_object_list(scatter_object_output_list, scatter_object_input_list=None, src=None, group=None,
                        group_src=None):
    """Rank ``src``'s ``scatter_object_input_list[r]`` into rank r's ``scatter_object_output_list[0]``."""
    pg = resolve(group)
    if pg is None:
        return
    root = _root(pg, src, group_src, "src")
    mine = pg.comm.scatter(list(scatter_object_input_list) if pg.rank() == root else None, root)
    scatter_object_output_list[0] = mine
