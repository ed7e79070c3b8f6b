"""Staged differentiation: tracing functions onto a tape, transforming, compiling.

``trace(f)(*args)`` gives the :class:`Tape` of a function; ``grad``, ``value_and_grad``,
``vjp``, ``jvp``, ``jacobian`` and ``hessian`` differentiate over it, compile the result
to straight-line Python (see ``.source``) and cache it per argument signature.
"""
from .tape import tracer  # noqa: F401  (gives tracers their operators and NumPy protocols)
from .api import grad, hessian, jacobian, jvp, value_and_grad, vjp
from .derived import elementwise_grad, hvp, jacfwd, jacrev
from .ast import TransformError, grad_of
from .tape.codegen import GuardFailed
from .tape.custom import custom_vjp
from .tape.fusion import fusion, fusion_enabled, set_fusion
from .tape.sweeps import stop_gradient
from .tape.tape import Tape, TracerError
from .tape.tracing import trace

__all__ = ["trace", "grad", "value_and_grad", "vjp", "jvp", "jacobian", "hessian", "jacrev", "jacfwd",
           "elementwise_grad", "hvp", "Tape",
           "TracerError", "GuardFailed", "custom_vjp", "stop_gradient", "TransformError", "grad_of",
           "fusion", "fusion_enabled", "set_fusion"]
