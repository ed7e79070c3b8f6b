"""Python's own arithmetic for tracers that stand for Python floats.

A Python float argument is traced as a float64 value, but the function run plainly
computes with Python floats, whose operators differ from NumPy's in one way that changes a
value: ``(-8.0) ** (1 / 3)`` is a complex number in Python 3 (the principal root) and nan
for NumPy's float64; and Python raises ZeroDivisionError where NumPy gives inf or nan
(``x / 0.0``, ``x // 0.0``, ``x % 0.0``, ``0.0 ** -1.0``). The tape keeps track of which tracers stand for Python floats (the
arguments that were, and what Python's operators make of them and Python numbers -- a
NumPy function's result is NumPy's, and follows NumPy) and gives ``**`` of such operands
Python's meaning: a negative base and a finite non-integer exponent make the base complex
first, as Python does. The sign and integrality seen are guarded, so a replay where they
change traces again. (AST mode runs the user's operators on the Python floats themselves.)
"""
import math

from .numpy_map import P
from .tape import Var

__all__ = ["arithmetic", "unary"]

_NUMBERS = (float, int, bool)


def _is_python(v, tape):
    return type(v) in _NUMBERS or (isinstance(v, Var) and v.tape is tape and v.id in tape.python_floats)


def arithmetic(prim, reflected=False):
    """The operator ``prim`` of a tracer (``__add__``, or ``__radd__`` when ``reflected``):
    the result stands for a Python float where both operands do."""
    def op(self, other):
        tape = self.tape
        if not tape.python_floats or not _is_python(other, tape) or self.id not in tape.python_floats:
            return prim(other, self) if reflected else prim(self, other)
        x, y = (other, self) if reflected else (self, other)
        _refuse_zero_division(prim, x, y)
        if prim is P.pow:
            x = _python_base(x, y)
        out = prim(x, y)
        if isinstance(out, Var):
            tape.python_floats.add(out.id)
        return out
    return op


def unary(prim):
    """``-x``, ``abs(x)``: a Python float's stays one."""
    def op(self):
        out = prim(self)
        if self.id in self.tape.python_floats and isinstance(out, Var):
            self.tape.python_floats.add(out.id)
        return out
    return op


_DIVISIONS = {P.div: lambda a, b: a / b, P.floor_divide: lambda a, b: a // b, P.remainder: lambda a, b: a % b}


def _refuse_zero_division(prim, x, y):
    """Python's ZeroDivisionError (its own message: the operator run on the values) where
    the divisor is 0, or the base of a negative power is."""
    if prim in _DIVISIONS:
        if _holds(P.eq, y, 0.0):
            _DIVISIONS[prim](_number(x), _number(y))
    elif prim is P.pow:
        tests = ((P.lt, y, 0.0), (P.eq, x, 0.0))  # (a constant operand's first: it may settle it,
        if all(_holds(*t) for t in (tests if isinstance(x, Var) else tests[::-1])):  # unguarded)
            _number(x) ** _number(y)


def _holds(compare, v, c):
    """``compare(v, c)`` as a Python bool, guarded where ``v`` is traced."""
    if isinstance(v, Var):
        return v.npdtype.kind != "c" and bool(compare(v, c))
    return not isinstance(v, complex) and bool(compare(v, c))


def _number(v):
    return v.value.item() if isinstance(v, Var) else v


def _python_base(x, y):
    """``x`` as Python's ``x ** y`` takes it: complex where ``x < 0`` and ``y`` is finite
    and not an integer. A traced exponent's integrality and a traced base's sign are
    guarded (``bool`` of a traced comparison records the guard); a constant operand is
    looked at first, so that ``a ** 2`` and ``2.0 ** a`` guard nothing."""
    if not isinstance(x, Var) and (isinstance(x, complex) or not x < 0):  # (nan too)
        return x
    if isinstance(y, Var):
        if y.npdtype.kind == "c" or not bool(P.logical_and(P.ne(P.floor(y), y), P.isfinite(y))):
            return x
    elif type(y) is bool or isinstance(y, complex) or not math.isfinite(y) or float(y).is_integer():
        return x
    if isinstance(x, Var):
        if x.npdtype.kind == "c" or not bool(P.lt(x, 0.0)):
            return x
        return P.add(x, 0j)  # (the complex base; its gradient's real part reaches a real x)
    return complex(x)
