"""Where :func:`tracegrad.load` puts each tensor: PyTorch's ``map_location`` (None, a
device, a dict of device names, or a callable), checked before reading and applied to each
tensor as it is restored (as a leaf, or a Parameter)."""
from . import backend
from .backend.device import device
from .runtime.tensor import Tensor, wrap


def check_map_location(map_location):
    ok = (map_location is None or isinstance(map_location, (str, device)) or callable(map_location)
          or isinstance(map_location, dict) and all(isinstance(k, str) and isinstance(v, (str, device))
                                                    for k, v in map_location.items()))
    if not ok:
        raise TypeError("map_location should be None, a str, a tracegrad.device, a dict of device "
                        f"names or a callable, not {type(map_location).__name__}")
    if isinstance(map_location, (str, device)):
        device(map_location)  # a bad device string fails now, before reading


def restore(entry, array, map_location):
    """A leaf tensor (or Parameter) with ``array``'s values, on the device asked for."""
    saved = entry["device"]
    t = wrap(array)
    if callable(map_location):
        moved = map_location(t, saved)
        if moved is not None and not isinstance(moved, Tensor):
            raise TypeError(f"map_location returned {type(moved).__name__}; expected a Tensor or None")
        target = None if moved is not None else device(saved)
        t = moved if moved is not None else t
    elif isinstance(map_location, dict):
        target = device(map_location.get(saved, saved))
    else:
        target = device(saved if map_location is None else map_location)
    if target is not None and target.type != "cpu":
        if not _has_device(target):
            raise RuntimeError("Attempting to deserialize object on a CUDA device but "
                               "tracegrad.cuda.is_available() is False. If you are running on a "
                               "CPU-only machine, please use tracegrad.load with "
                               "map_location=tracegrad.device('cpu') to map your storages to the CPU.")
        t = t.to(target)
    if t.grad_fn is not None:  # a callable map_location may hand back a computed tensor
        t = t.detach()
    t.requires_grad_(entry["requires_grad"])
    param = parameter_class()
    if entry["parameter"] and param is not None:
        t = param(t, requires_grad=entry["requires_grad"])
    return t


def _has_device(target):
    """True when tensors can be made on ``target``'s device type (its namespace is loaded,
    or can be; the meta device always can)."""
    from . import cuda
    return target.type == "meta" or target.type in {ns.name for ns in backend.loaded()} or cuda.is_available()


def parameter_class():
    """``tracegrad.nn.Parameter`` once it exists (None while nn is being built)."""
    from . import nn
    return getattr(nn, "Parameter", None)
