"""``tracegrad.autograd.function``: custom differentiable operations."""
from ..runtime.function import BackwardCFunction, Function, FunctionCtx, once_differentiable

__all__ = ["Function", "FunctionCtx", "BackwardCFunction", "once_differentiable"]
