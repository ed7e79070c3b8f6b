"""Reading checkpoints that PyTorch's ``torch.save`` wrote (its zip format).

Such a file is a zip of ``<name>/data.pkl``, a pickle of the saved object, and one record
``<name>/data/<key>`` of raw bytes per storage. The pickle names the few functions that
rebuild tensors (``torch._utils._rebuild_tensor_v2``: a storage, an offset, a size and
strides) and refers to storages by key (its persistent ids). Here the pickle is read by an
unpickler that resolves those names itself: a storage becomes one NumPy array of the
record's bytes, and every tensor on it a strided view of that array, so tensors that
shared storage in PyTorch (a view and its base) share memory again.

``weights_only=True`` (the default, as in PyTorch) allows nothing else than what PyTorch's
weights-only loader allows by default: tensors, parameters, ``OrderedDict``, ``Size``,
dtypes, devices and plain containers and values; any other name in the pickle is refused
with ``pickle.UnpicklingError`` naming it, before anything is called. With
``weights_only=False`` (for a trusted file: it runs the file's code) a name under ``torch``
is looked up under ``tracegrad`` (a whole pickled ``nn.Module`` comes back as tracegrad's),
and any other is imported. PyTorch's older, non-zip format is refused by name.
"""
import importlib
import pickle

from . import backend
from ._map_location import restore
from .backend import dtypes as _dt
from .backend.device import device
from .runtime.tensor import Size

__all__ = ["is_torch_archive", "load_torch_archive"]

_STORAGES = {"DoubleStorage": "float64", "FloatStorage": "float32", "HalfStorage": "float16",
             "LongStorage": "int64", "IntStorage": "int32", "ShortStorage": "int16", "CharStorage": "int8",
             "ByteStorage": "uint8", "BoolStorage": "bool", "ComplexDoubleStorage": "complex128",
             "ComplexFloatStorage": "complex64", "BFloat16Storage": "bfloat16"}
_DTYPES = {**{d.name: d for d in _dt.ALL}, "bfloat16": _dt.bfloat16}
_PLAIN = {("builtins", n) for n in ("set", "frozenset", "complex", "slice", "range", "bytearray", "tuple", "list",
                                    "dict", "int", "float", "bool", "str", "bytes")}


def is_torch_archive(names):
    """Whether a zip archive's entry names are those of a PyTorch checkpoint."""
    return any(n.endswith("/data.pkl") for n in names)


class _StorageType:
    """What a ``torch.<X>Storage`` name stands for in the pickle: the dtype of its records."""

    def __init__(self, name):
        self.name = name
        self.dtype = _DTYPES[_STORAGES[name]]


class _Storage:
    """One record's bytes as an array of its dtype, and the device it was saved from."""

    def __init__(self, array, location):
        self.array, self.location = array, location


def load_torch_archive(zf, name, map_location, weights_only):
    """The object PyTorch saved in the open archive ``zf`` (``name``: the file, for errors)."""
    names = zf.namelist()
    pkl = next(n for n in names if n.endswith("/data.pkl"))
    prefix = pkl[:-len("data.pkl")]
    order = prefix + "byteorder"
    if order in names and zf.read(order).decode().strip() != "little":
        raise RuntimeError(f"cannot load {name}: a PyTorch file written on a big-endian machine")
    records = {}

    def storage(key, storage_type, numel, location):
        if key not in records:
            dtype = storage_type.dtype
            if not isinstance(dtype, _dt.dtype):
                raise RuntimeError(f"cannot load {name}: it holds {dtype} tensors, which tracegrad has no dtype for")
            raw = bytearray(zf.read(f"{prefix}data/{key}"))  # (writable: the tensors' own memory)
            array = backend.cpu.frombuffer(raw, dtype=dtype.np) if raw else backend.cpu.empty(0, dtype.np)
            if array.size < numel:
                raise RuntimeError(f"cannot load {name}: storage {key} holds {array.size} values, not {numel}")
            records[key] = _Storage(array[:numel], location)
        return records[key]

    unpickler = _Unpickler(zf.open(pkl), storage, map_location, weights_only, name)
    return unpickler.load()


class _Unpickler(pickle.Unpickler):
    def __init__(self, file, storage, map_location, weights_only, name):
        super().__init__(file)
        self._storage, self._map_location = storage, map_location
        self._weights_only, self._name = weights_only is not False, name

    def persistent_load(self, pid):
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage"
                and isinstance(pid[1], _StorageType)):
            raise pickle.UnpicklingError(f"cannot load {self._name}: an unknown persistent id {pid!r}")
        _, storage_type, key, location, numel = pid
        return self._storage(str(key), storage_type, int(numel), str(location))

    def find_class(self, module, name):
        if module == "torch._utils" and name == "_rebuild_tensor_v2":
            return self._tensor
        if module == "torch._utils" and name in ("_rebuild_parameter", "_rebuild_parameter_with_state"):
            return _parameter
        if module == "torch" and name in _STORAGES:
            return _StorageType(name)
        if module == "torch" and name == "Size":
            return Size
        if module == "torch" and name == "device":
            return device
        if module == "torch" and name in _DTYPES:
            return _DTYPES[name]
        if (module, name) == ("collections", "OrderedDict") or (module, name) in _PLAIN:
            return super().find_class(module, name)
        if self._weights_only:
            raise pickle.UnpicklingError(
                f"Weights only load failed: cannot load {self._name}, which names the global "
                f"{module}.{name}: tracegrad reads PyTorch files' tensors, parameters, containers and "
                "plain values (weights_only=True); pass weights_only=False only for a trusted file.")
        if module == "torch" or module.startswith("torch."):
            try:
                target = importlib.import_module("tracegrad" + module[len("torch"):])
                for part in name.split("."):
                    target = getattr(target, part)
                return target
            except (ImportError, AttributeError):
                raise pickle.UnpicklingError(f"cannot load {self._name}: it names {module}.{name}, which "
                                             "tracegrad does not have") from None
        return super().find_class(module, name)

    def _tensor(self, storage, offset, size, stride, requires_grad, backward_hooks, metadata=None):
        """``torch._utils._rebuild_tensor_v2``: a view of the storage's array."""
        a = storage.array
        end = offset + sum((n - 1) * s for n, s in zip(size, stride)) + 1 if all(size) else offset
        if offset < 0 or any(s < 0 for s in stride) or end > a.size:
            raise pickle.UnpicklingError(f"cannot load {self._name}: a tensor reaches outside its storage")
        view = backend.cpu.lib.stride_tricks.as_strided(a[offset:], shape=tuple(size),
                                                         strides=tuple(s * a.itemsize for s in stride))
        entry = {"device": storage.location, "requires_grad": bool(requires_grad), "parameter": False}
        return restore(entry, view, self._map_location)


def _parameter(data, requires_grad, backward_hooks, state=None):
    """``torch._utils._rebuild_parameter``: ``nn.Parameter(data, requires_grad)``."""
    from .nn.parameter import Parameter
    return Parameter(data, requires_grad=requires_grad)
