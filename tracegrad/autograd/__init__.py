"""``tracegrad.autograd``: the engine's front doors, as in ``torch.autograd``."""
from ..runtime.engine import backward, grad
from ..runtime.engine import is_checkpoint_valid as _is_checkpoint_valid
from ..runtime.engine import queue_callback as _queue_callback
from ..runtime.function import Function, FunctionCtx, once_differentiable
from . import forward_ad, function, functional, graph, profiler
from ..runtime.anomaly import (detect_anomaly, is_anomaly_check_nan_enabled, is_anomaly_enabled,
                               set_detect_anomaly)
from .gradcheck import GradcheckError, gradcheck, gradgradcheck
from ..runtime.grad_mode import enable_grad, inference_mode, no_grad, set_grad_enabled
from ..runtime.tensor import Tensor


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


__all__ = ["backward", "grad", "Variable", "graph", "forward_ad", "function", "functional", "profiler", "Function", "FunctionCtx",
           "once_differentiable", "gradcheck", "gradgradcheck", "GradcheckError", "detect_anomaly",
           "set_detect_anomaly", "is_anomaly_enabled", "is_anomaly_check_nan_enabled", "no_grad",
           "enable_grad", "set_grad_enabled", "inference_mode"]
