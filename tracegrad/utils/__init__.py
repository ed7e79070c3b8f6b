"""``tracegrad.utils``: torch.utils's helpers (one import per submodule)."""
from . import checkpoint, data  # noqa: F401
