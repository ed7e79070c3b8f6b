"""Which names of an A-normal-form body may hold a list or a tuple.

``a + b`` and ``a * b`` are array arithmetic for arrays and numbers, but concatenation
and repetition for lists and tuples, whose adjoints differ (a split, a sum of
repeats). The adjoint writes the rule table's array expressions where no operand being
differentiated can be a list or a tuple, and otherwise decides at run time (see
:func:`.support.binop_grads`). The analysis is conservative: a parameter, a loop
variable, an element of a container and the result of a call the rule table does not
cover may hold anything.
"""
import ast

from .activity import NONDIFF_ATTRS
from .resolve import Direct, method_primitive

__all__ = ["sequence_names", "maybe_sequences"]

_ARRAY_OPS = (ast.Sub, ast.Div, ast.Pow, ast.MatMult, ast.Mod, ast.FloorDiv)


def sequence_names(body, params, resolver):
    """``(maybe, surely)``: the names that may hold a list or a tuple somewhere in
    ``body`` (every name it reads but does not bind, parameters included, may), and
    those that always do (bound to list and tuple displays and their concatenations
    only)."""
    defs, other = _definitions(body)
    local = set(defs) - set(params) - other
    maybe = {n for n in _loaded(body) if n not in local}
    while True:  # (grows only: ends)
        grown = {n for n in local - maybe if any(_maybe(v, maybe, resolver) for v in defs[n])}
        if not grown:
            break
        maybe |= grown
    surely = set(local)
    while True:  # (shrinks only: ends)
        shrunk = {n for n in surely if not all(_surely(v, surely) for v in defs[n])}
        if not shrunk:
            break
        surely -= shrunk
    return maybe, surely


def maybe_sequences(value, active, maybe):
    """Whether BinOp ``value`` may be ``+`` or ``*`` of lists or tuples (concatenation,
    repetition), or array arithmetic with a list or tuple being differentiated: an
    operand in ``active`` may be one (is in ``maybe``), and no other operand is a number
    that would make that a TypeError."""
    if not isinstance(value.op, (ast.Add, ast.Mult)):
        return False
    operands = (value.left, value.right)
    if not any(isinstance(o, ast.Name) and o.id in active and o.id in maybe for o in operands):
        return False
    numbers = (int, float, complex) if isinstance(value.op, ast.Add) else (float, complex)
    return not any(isinstance(o, ast.Constant) and isinstance(o.value, numbers) and not isinstance(o.value, bool)
                   for o in operands)


def _loaded(body):
    return {n.id for s in body for n in ast.walk(s) if isinstance(n, ast.Name)}


def _definitions(body):
    """``(defs, other)``: for each name bound by a plain assignment or a ``for`` loop,
    the values bound to it (an :class:`_Element` for an element of one); the names
    bound otherwise (a ``with`` target, an unpacked loop variable: anything)."""
    defs, other, covered = {}, set(), set()
    tree = ast.Module(body=list(body), type_ignores=[])
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, ast.Name):
                    defs.setdefault(t.id, []).append(node.value)
                    covered.add(id(t))
                elif isinstance(t, ast.Subscript):  # (changes the contents, not the kind)
                    covered.update(id(n) for n in ast.walk(t))
        elif isinstance(node, ast.For) and isinstance(node.target, ast.Name):
            defs.setdefault(node.target.id, []).append(_Element(node.iter))
            covered.add(id(node.target))
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) and id(node) not in covered:
            other.add(node.id)
    return defs, other


class _Element:
    """An element of ``value`` (a loop variable)."""

    def __init__(self, value):
        self.value = value


def _maybe(v, maybe, resolver):
    """Whether expression ``v`` may be a list or a tuple."""
    if isinstance(v, _Element):  # (rows of an array are arrays; range gives ints)
        it = v.value
        if isinstance(it, ast.Call) and resolver.value(it.func) == (True, range):
            return False
        return _maybe(it, maybe, resolver)
    if isinstance(v, ast.Constant):
        return False
    if isinstance(v, ast.Name):
        return v.id in maybe
    if isinstance(v, ast.BinOp):
        if isinstance(v.op, _ARRAY_OPS):
            return False
        left, right = _maybe(v.left, maybe, resolver), _maybe(v.right, maybe, resolver)
        return (left and right) if isinstance(v.op, ast.Add) else (left or right)
    if isinstance(v, (ast.UnaryOp, ast.Compare)):
        return False
    if isinstance(v, ast.BoolOp):
        return any(_maybe(e, maybe, resolver) for e in v.values)
    if isinstance(v, ast.IfExp):
        return _maybe(v.body, maybe, resolver) or _maybe(v.orelse, maybe, resolver)
    if isinstance(v, ast.Subscript):  # (an element or a slice of an array is an array)
        return _maybe(v.value, maybe, resolver)
    if isinstance(v, ast.Attribute):
        return v.attr in NONDIFF_ATTRS or _maybe(v.value, maybe, resolver)
    if isinstance(v, ast.Call):  # (a rule's result is an array)
        try:
            callee = resolver.callee(v)
        except Exception:  # (refused later, where the transformation says why)
            return True
        if callee is None and isinstance(v.func, ast.Attribute):
            return method_primitive(v) is None
        return not isinstance(callee, Direct)
    return True  # (displays, comprehensions, anything else)


def _surely(v, surely):
    if isinstance(v, (ast.List, ast.Tuple)):
        return True
    if isinstance(v, ast.Name):
        return v.id in surely
    if isinstance(v, ast.BinOp) and isinstance(v.op, (ast.Add, ast.Mult)):
        left, right = _surely(v.left, surely), _surely(v.right, surely)
        return (left and right) if isinstance(v.op, ast.Add) else (left or right)
    return False
