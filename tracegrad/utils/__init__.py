"""``tracegrad.utils``: torch.utils's helpers (one import per submodule)."""
from . import data  # noqa: F401
