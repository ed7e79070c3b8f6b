"""``torch.utils.data._utils.pin_memory``: :func:`pin_memory` of a batch (see
:func:`tracegrad.utils.data.collate.pin_memory`)."""
from ..collate import pin_memory

__all__ = ["pin_memory"]
