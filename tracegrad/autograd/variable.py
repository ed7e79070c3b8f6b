"""``torch.autograd.variable``: the module of the legacy :class:`Variable`."""
from ..runtime.engine import queue_callback as _queue_callback
from ..runtime.tensor import Tensor

__all__ = ["Variable"]


class _VariableMeta(type):
    def __instancecheck__(cls, obj):
        return isinstance(obj, Tensor)


class Variable(metaclass=_VariableMeta):
    """The pre-0.4 wrapper, kept for old code: ``Variable(t, requires_grad=True)`` returns a
    Tensor sharing ``t``'s storage, and every Tensor is an instance of ``Variable``."""

    def __new__(cls, data, requires_grad=False, volatile=False):
        if not isinstance(data, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        t = data.detach()
        t.requires_grad_(requires_grad)
        return t


class _ExecutionEngine:
    """``Variable._execution_engine``: torch's handle on the backward engine."""

    def queue_callback(self, callback):
        _queue_callback(callback)


Variable._execution_engine = _ExecutionEngine()
