"""The tape path: a function traced into a flat list of primitive applications, swept
for derivatives, optimised and compiled to straight-line Python.

One module per step: :mod:`.tape` (the tape, its variables and eqns), :mod:`.tracing`
(recording primitives, guards, ``trace``), :mod:`.tracer` and :mod:`.numpy_map` (what a
tracer answers to: operators, NumPy's protocols, methods), :mod:`.sweeps` (reverse and
forward differentiation over a tape), :mod:`.optimize`, :mod:`.codegen` and
:mod:`.fusion` (from tape to Python source), :mod:`.staged` (trace once per signature,
cache, replay) and :mod:`.custom` (user rules on the tape).
"""
from . import tracer  # noqa: F401  (gives tracers their operators and NumPy protocols)
from .codegen import GuardFailed
from .custom import custom_vjp
from .staged import Staged
from .sweeps import stop_gradient
from .tape import Eqn, Tape, TracerError, Var
from .tracing import active_tape, trace

__all__ = ["Tape", "Var", "Eqn", "TracerError", "GuardFailed", "Staged", "trace", "active_tape",
           "custom_vjp", "stop_gradient"]
