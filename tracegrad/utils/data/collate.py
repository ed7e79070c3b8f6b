"""Turning fetched samples into batches: ``default_collate`` (a list of samples -> one
batch, stacked along a new first dimension) and ``default_convert`` (one sample -> the
same sample with NumPy arrays made tensors), exactly as ``torch.utils.data`` does.

Both walk containers the same way torch does -- mappings keep their type, namedtuples
stay namedtuples, plain tuples become lists (torch's "backwards compatibility") -- and
``collate`` looks element types up in ``default_collate_fn_map``, so a user extends it by
adding an entry, as in torch. ``pin_memory`` walks a batch the same way.
"""
import collections
import copy
import re

from ...backend import (
    cpu as host,  # host-side (NumPy) arithmetic, never on device arrays
)
from ...runtime.tensor import Tensor

__all__ = ["collate", "default_collate", "default_collate_fn_map", "default_convert", "pin_memory"]

np_str_obj_array_pattern = re.compile(r"[SaUO]")  # dtypes of strings and objects: no tensor

default_collate_err_msg_format = (
    "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; found {}")


def _torch():
    import tracegrad  # the package imports this module: bind the namespace when first called
    return tracegrad


def _rebuild_mapping(data, items):
    """``data``'s mapping type holding ``items`` (a plain dict when the type cannot be
    rebuilt from one), as torch keeps a batch's ``OrderedDict``/``defaultdict``."""
    try:
        if isinstance(data, collections.abc.MutableMapping):
            clone = copy.copy(data)
            clone.update(items)
            return clone
        return type(data)(items)
    except TypeError:
        return dict(items)


def _rebuild_sequence(data, items):
    """``data``'s sequence type holding ``items`` (a list when it cannot be rebuilt)."""
    try:
        if isinstance(data, collections.abc.MutableSequence):
            clone = copy.copy(data)
            for i, item in enumerate(items):
                clone[i] = item
            return clone
        return type(data)(items)
    except TypeError:
        return list(items)


def default_convert(data):
    """Each NumPy array (or NumPy scalar) inside ``data`` made a tensor; anything else as
    it is. The collate function of a DataLoader without automatic batching."""
    elem_type = type(data)
    if isinstance(data, Tensor):
        return data
    if elem_type.__module__ == "numpy" and elem_type.__name__ not in ("str_", "string_"):
        if elem_type.__name__ == "ndarray" and np_str_obj_array_pattern.search(data.dtype.str) is not None:
            return data
        return _torch().as_tensor(data)
    if isinstance(data, collections.abc.Mapping):
        return _rebuild_mapping(data, {key: default_convert(data[key]) for key in data})
    if isinstance(data, tuple) and hasattr(data, "_fields"):  # namedtuple
        return elem_type(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]  # torch's "backwards compatibility"
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        return _rebuild_sequence(data, [default_convert(d) for d in data])
    return data


def collate(batch, *, collate_fn_map=None):
    """Collate ``batch`` (a list of samples): an element type found in ``collate_fn_map``
    (exactly, else the first key it is an instance of) uses that function; mappings,
    namedtuples and sequences are collated field by field; anything else is a TypeError."""
    elem = batch[0]
    elem_type = type(elem)
    if collate_fn_map is not None:
        if elem_type in collate_fn_map:
            return collate_fn_map[elem_type](batch, collate_fn_map=collate_fn_map)
        for collate_type in collate_fn_map:
            if isinstance(elem, collate_type):
                return collate_fn_map[collate_type](batch, collate_fn_map=collate_fn_map)
    if isinstance(elem, collections.abc.Mapping):
        return _rebuild_mapping(elem, {key: collate([d[key] for d in batch], collate_fn_map=collate_fn_map)
                                       for key in elem})
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):  # namedtuple
        return elem_type(*(collate(samples, collate_fn_map=collate_fn_map) for samples in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        elem_size = len(elem)
        if not all(len(e) == elem_size for e in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        collated = [collate(samples, collate_fn_map=collate_fn_map) for samples in zip(*batch)]
        if isinstance(elem, tuple):
            return collated  # torch's "backwards compatibility": tuples come back as lists
        return _rebuild_sequence(elem, collated)
    raise TypeError(default_collate_err_msg_format.format(elem_type))


def collate_tensor_fn(batch, *, collate_fn_map=None):
    return _torch().stack(batch, 0)


def collate_numpy_array_fn(batch, *, collate_fn_map=None):
    elem = batch[0]
    if np_str_obj_array_pattern.search(elem.dtype.str) is not None:
        raise TypeError(default_collate_err_msg_format.format(elem.dtype))
    return collate([_torch().as_tensor(b) for b in batch], collate_fn_map=collate_fn_map)


def collate_numpy_scalar_fn(batch, *, collate_fn_map=None):
    return _torch().as_tensor(batch)


def collate_float_fn(batch, *, collate_fn_map=None):
    return _torch().tensor(batch, dtype=_torch().float64)  # Python floats are doubles


def collate_int_fn(batch, *, collate_fn_map=None):
    return _torch().tensor(batch)  # int64, or bool for a batch of bools


def collate_str_fn(batch, *, collate_fn_map=None):
    return batch


default_collate_fn_map = {
    Tensor: collate_tensor_fn,
    host.ndarray: collate_numpy_array_fn,
    (host.bool_, host.number, host.object_): collate_numpy_scalar_fn,
    float: collate_float_fn,
    int: collate_int_fn,
    str: collate_str_fn,
    bytes: collate_str_fn,
}


def default_collate(batch):
    """Stack a list of samples into a batch with a new first dimension: tensors stacked,
    NumPy arrays and numbers made tensors (Python floats float64, ints int64), strings kept
    as a list, and mappings, namedtuples, tuples and lists collated field by field. The
    collate function of a DataLoader with automatic batching."""
    return collate(batch, collate_fn_map=default_collate_fn_map)


def pin_memory(data, device=None):
    """``data`` with every tensor (or object with a ``pin_memory`` method) pinned, walked
    like a batch; what a DataLoader with ``pin_memory=True`` does to each batch."""
    if hasattr(data, "pin_memory"):
        return data.pin_memory()
    if isinstance(data, (str, bytes)):
        return data
    if isinstance(data, collections.abc.Mapping):
        return _rebuild_mapping(data, {k: pin_memory(sample, device) for k, sample in data.items()})
    if isinstance(data, tuple):
        if hasattr(data, "_fields"):
            return type(data)(*(pin_memory(sample, device) for sample in data))
        return type(data)(pin_memory(sample, device) for sample in data)
    if isinstance(data, collections.abc.Sequence):
        return _rebuild_sequence(data, [pin_memory(sample, device) for sample in data])
    return data
