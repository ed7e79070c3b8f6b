"""DataParallel with the one device tracegrad drives (see the package docstring)."""
from ... import cuda
from ...backend import device as _device
from ..modules.module import Module


def _device_ids(device_ids):
    """PyTorch's defaults: every visible CUDA device, none without CUDA."""
    if device_ids is None:
        device_ids = list(range(cuda.device_count())) if cuda.is_available() else []
    ids = [d.index if isinstance(d, _device) else int(d) for d in device_ids]
    if len(ids) > 1:
        raise RuntimeError(f"DataParallel over devices {ids}: tracegrad drives one device per process; "
                           "use one device id (or none on the CPU)")
    return ids


def _to(obj, device):
    """``obj``'s tensors (in tuples, lists and dicts) moved to ``device``."""
    if hasattr(obj, "to") and hasattr(obj, "device"):
        return obj.to(device)
    if isinstance(obj, (tuple, list)):
        return type(obj)(_to(o, device) for o in obj)
    if isinstance(obj, dict):
        return {k: _to(v, device) for k, v in obj.items()}
    return obj


class DataParallel(Module):
    """``DataParallel(module, device_ids=None, output_device=None, dim=0)``: runs ``module``
    on its one device. The wrapped module is ``self.module`` (state dict keys gain the
    ``module.`` prefix, as in PyTorch)."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0):
        super().__init__()
        self.module = module
        self.device_ids = _device_ids(device_ids)
        self.output_device = output_device if output_device is not None else (
            self.device_ids[0] if self.device_ids else None)
        self.dim = dim

    def forward(self, *inputs, **kwargs):
        if not self.device_ids:
            return self.module(*inputs, **kwargs)
        device = _device("cuda", self.device_ids[0])
        return self.module(*_to(inputs, device), **_to(kwargs, device))


def data_parallel(module, inputs, device_ids=None, output_device=None, dim=0, module_kwargs=None):
    """The functional form: ``module(*inputs, **module_kwargs)`` on its one device."""
    inputs = inputs if isinstance(inputs, tuple) else (inputs,)
    return DataParallel(module, device_ids, output_device, dim)(*inputs, **(module_kwargs or {}))
