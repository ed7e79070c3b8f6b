"""``data_parallel``: the functional form of :class:`DataParallel` (one device at most)."""
from ..modules.parallel import DataParallel

__all__ = ["DataParallel", "data_parallel"]


def data_parallel(module, inputs, device_ids=None, output_device=None, dim=0, module_kwargs=None):
    """``module(*inputs, **module_kwargs)`` on its one device, as ``DataParallel`` runs it."""
    inputs = inputs if isinstance(inputs, tuple) else (inputs,)
    return DataParallel(module, device_ids, output_device, dim)(*inputs, **(module_kwargs or {}))
