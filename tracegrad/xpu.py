"""``tracegrad.xpu``: PyTorch's Intel GPU namespace. tracegrad runs on no XPU, so it answers
as PyTorch does on a machine without one (programs probe it before choosing a device)."""

__all__ = ["is_available", "device_count"]


def is_available():
    return False


def device_count():
    return 0
