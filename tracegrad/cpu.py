"""``tracegrad.cpu``: the CPU as a device module, as ``torch.cpu`` (the counterpart of
:mod:`tracegrad.cuda` for code written against any device)."""
import contextlib

__all__ = ["current_device", "device_count", "is_available", "is_initialized", "set_device", "synchronize",
           "current_stream", "stream", "Stream", "Event"]


def is_available():
    return True


def is_initialized():
    return True


def device_count():
    return 1


def current_device():
    return "cpu"


def set_device(device):
    """Accepted and ignored: there is one CPU device."""


def synchronize(device=None):
    """Nothing to wait for: CPU work is done when its call returns."""


class Stream:
    """The CPU's one stream: work runs in order, at once."""

    def __init__(self, priority=-1):
        self.priority = priority

    def wait_stream(self, stream):
        pass

    def synchronize(self):
        pass

    def query(self):
        return True


class Event:
    def record(self, stream=None):
        pass

    def wait(self, stream=None):
        pass

    def query(self):
        return True

    def synchronize(self):
        pass


_STREAM = Stream()


def current_stream(device=None):
    return _STREAM


@contextlib.contextmanager
def stream(stream):
    yield


from .amp import device_amp_module as _device_amp_module  # noqa: E402
amp = _device_amp_module("cpu", __name__)  # (PyTorch's deprecated torch.cpu.amp)
