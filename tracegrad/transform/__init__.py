"""Staged differentiation: tracing functions onto a tape, transforming, compiling.

``trace(f)(*args)`` gives the :class:`Tape` of a function; ``grad``, ``value_and_grad``,
``vjp``, ``jvp``, ``jacobian`` and ``hessian`` differentiate over it, compile the result
to straight-line Python (see ``.source``) and cache it per argument signature.
"""
from . import tracer  # noqa: F401  (gives tracers their operators and NumPy protocols)
from .api import grad, hessian, jacobian, jvp, value_and_grad, vjp
from .ast import TransformError, grad_of
from .codegen import GuardFailed
from .custom import custom_vjp
from .fusion import fusion, fusion_enabled, set_fusion
from .sweeps import stop_gradient
from .tape import Tape, TracerError
from .tracing import trace

__all__ = ["trace", "grad", "value_and_grad", "vjp", "jvp", "jacobian", "hessian", "Tape",
           "TracerError", "GuardFailed", "custom_vjp", "stop_gradient", "TransformError", "grad_of",
           "fusion", "fusion_enabled", "set_fusion"]
