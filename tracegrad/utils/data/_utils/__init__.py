"""``torch.utils.data._utils``: the private modules that older code, and the documentation
of ``default_collate`` (extending ``default_collate_fn_map``), import from. Its
``collate``, ``fetch`` and ``worker`` are :mod:`tracegrad.utils.data`'s own modules under
these names, so a collate function registered through one path is seen by the other."""
import sys

from .. import collate, fetch, worker
from . import pin_memory

for _module in (collate, fetch, worker):
    sys.modules[f"{__name__}.{_module.__name__.rsplit('.', 1)[1]}"] = _module

IS_WINDOWS = sys.platform == "win32"
MP_STATUS_CHECK_INTERVAL = 5.0  # (seconds; PyTorch's, read by code that subclasses its loaders)

__all__ = ["collate", "fetch", "pin_memory", "worker"]
