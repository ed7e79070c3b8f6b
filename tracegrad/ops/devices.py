"""Moving tensors between devices. CUDA runs through CuPy (the ``gpu`` extra); without it,
asking for CUDA is a clear error rather than an import failure deep inside."""
from .. import backend
from ..runtime.tensor import Tensor


def to_device(t, device):
    if not isinstance(t, Tensor):
        raise TypeError(f"to_device expects a Tensor, got {type(t).__name__}")
    backend.namespace_for(device)  # raises when the device is not available
    raise NotImplementedError(f"copying tensors to device '{device}' is not implemented yet")
