"""``torch.autograd.grad_mode``: the grad-mode context managers, importable from where
PyTorch defines them (libraries import ``no_grad`` from here)."""
from ..runtime.grad_mode import enable_grad, inference_mode, no_grad, set_grad_enabled

__all__ = ["no_grad", "enable_grad", "set_grad_enabled", "inference_mode", "set_multithreading_enabled"]


class set_multithreading_enabled:
    """``torch.autograd.set_multithreading_enabled(mode)``: accepted, as a context manager or a
    call. PyTorch runs the backward of each device on a thread of its own when enabled;
    tracegrad's engine runs every backward pass in the thread that asks for it (several
    threads may run their own passes at once), so there is nothing to switch."""

    def __init__(self, mode):
        self.mode = bool(mode)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def clone(self):
        return set_multithreading_enabled(self.mode)
