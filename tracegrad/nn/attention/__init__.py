"""``torch.nn.attention``: the backend choice for ``scaled_dot_product_attention``.

tracegrad has one implementation (the fused rule of :mod:`tracegrad.rules.attention`, or
PyTorch's math composition under dropout), which computes what every PyTorch backend
computes; ``sdpa_kernel`` therefore checks its argument and otherwise changes nothing, so
programs that pick a backend run unchanged.
"""
import contextlib
import enum

__all__ = ["SDPBackend", "sdpa_kernel"]


class SDPBackend(enum.IntEnum):
    """Printed as ``SDPBackend.MATH`` (not as its number), as PyTorch's enum is."""

    __str__ = enum.Enum.__str__
    ERROR = -1
    MATH = 0
    FLASH_ATTENTION = 1
    EFFICIENT_ATTENTION = 2
    CUDNN_ATTENTION = 3
    OVERRIDEABLE = 4


@contextlib.contextmanager
def sdpa_kernel(backends, set_priority=False):
    """Accepts a backend or a list of them (PyTorch's check and message); a no-op here."""
    chosen = [backends] if isinstance(backends, SDPBackend) else backends
    if not isinstance(chosen, (list, tuple)) or not all(isinstance(b, SDPBackend) for b in chosen):
        raise AssertionError("Backend must be an instance of SDPBackend or a list of SDPBackend instances, got "
                             f"{type(backends).__name__}")
    yield
