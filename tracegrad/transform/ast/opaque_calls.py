"""Calls the forward lines run without reading the callee, made to run it read-only.

The adjoint reads the forward's arrays after the forward has run: a saved operand of a
product, the arguments a callee's derivative is traced from (support.call_vjp_at). A
callee that writes into an array passed to it would change them under the adjoint, which
would then differentiate values other than the ones the forward computed with -- a wrong
gradient, without an error. For the callees the AST path reads (a user function it
transforms, or whose source it reads: argument_writes.py) such a write is
refused before anything runs. The others are only known when they run: a function passed
as a value (``def f(x, h=helper)``), an object's method (``model.loss(x)``), a callable
object or ``functools.partial``, a class's constructor. Their forward line becomes
``read_only_call(h, x)``: the arrays passed are read-only while the callee runs, so a
write raises (support.WritesIntoArgument) instead of changing them, and ``mode="auto"``
takes the tape, which follows the write.

NumPy's, SciPy's, tracegrad's and Python's own functions, and the methods of arrays,
lists, dicts and the other built-in types, are known not to write into their arguments
(the in-place ones -- ``np.copyto``, ``x.fill``, ``lst.append`` -- are seen by name
elsewhere) and run as written.
"""
import ast

from .argument_writes import UNKNOWN, argument_writes, known_callable, known_method
from .nograd import _made_by_library, _walk
from .resolve import CONSTANT, Direct, User

__all__ = ["guard_opaque_calls"]


def guard_opaque_calls(stmts, resolver):
    """Rewrite, in place, each ANF line of ``stmts`` (``t = h(x)``, ``h(x)``) whose callee
    cannot be read (see the module docstring) to ``t = read_only_call(h, x)``."""
    made = _made_by_library(stmts, resolver)
    for s in _walk(stmts):
        call = s.value if isinstance(s, (ast.Assign, ast.Expr)) else None
        if isinstance(call, ast.Call) and _opaque(call, resolver, made):
            helper = ast.Name(id="read_only_call", ctx=ast.Load())
            helper._helper = True  # (a support function: see driver.render)
            s.value = ast.copy_location(ast.Call(func=helper, args=[call.func] + call.args,
                                                 keywords=call.keywords), call)


def _opaque(call, resolver, made):
    f = call.func
    if isinstance(f, ast.Name) and f.id in made:
        return False  # (a function NumPy's or tracegrad's made: tracegrad.grad(h))
    ok, obj = resolver.value(f)
    if not ok:
        if isinstance(f, ast.Attribute):  # a method of a local value (its object's arrays too)
            return not known_method(f.attr)
        return bool(call.args or call.keywords)  # a local name or a parameter holding a function
    if not (call.args or call.keywords):
        return False  # (no argument to write into; a global it writes: argument_writes)
    callee = resolver.callee(call)
    if callee is CONSTANT or isinstance(callee, Direct):
        return False
    if isinstance(callee, User):  # (a write it surely makes is refused: driver.py)
        return argument_writes(callee.fn) == UNKNOWN
    return not known_callable(obj)
