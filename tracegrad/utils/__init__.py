"""``tracegrad.utils``: torch.utils's helpers (one import per submodule)."""
from . import _pytree, checkpoint, data  # noqa: F401
