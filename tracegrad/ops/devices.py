"""Moving tensors between devices: one differentiable primitive (``to_device``, recorded as
``ToCopyBackward0`` like PyTorch's), so a gradient flows back to the device its input came
from. CUDA runs through CuPy (the ``gpu`` extra); without it, asking for CUDA is a clear
error rather than an import failure deep inside."""
from .. import backend
from ..rules import memory as M
from ..runtime.tensor import Tensor


def to_device(t, device):
    if not isinstance(t, Tensor) and not getattr(t, "is_traced_tensor", False):
        raise TypeError(f"to_device expects a Tensor, got {type(t).__name__}")
    device = backend.device(device)
    backend.namespace_for(device)  # raises when the device is not available
    return M.to_device(t, device=device.type, src=t.device.type)


def on_device_of(src, dst):
    """``src`` moved to ``dst``'s device when it is a Tensor on another one (``copy_`` and
    ``x[i] = value`` take a source from anywhere, as PyTorch's; the move is
    differentiable); anything else as it is. Compares array types, not devices: cheaper,
    and it is what a kernel cannot mix."""
    if isinstance(src, Tensor) and type(src._data) is not type(dst._data):
        return src.to(dst.device)
    return src
