"""A derivative that does not exist, kept as a value until something needs it.

The AST path differentiates a call it cannot see into (``fun(*args)``, a library
function) with respect to every floating-point argument, since which of them depend on
the inputs is only known at run time. Some rules have no derivative for some operands
(a Bessel function's order, the degrees of freedom of a t distribution): asking for one
raises ``NotImplementedError``. When the argument was a constant all along, the adjoint
drops that gradient and the error would be spurious. So the reverse sweep, asked to
(``reverse(..., defer=True)``), gives such an operand an :class:`Undefined` cotangent
instead of raising: it propagates backwards unchanged through the eqns that produced
the operand, and *any* use of it -- arithmetic, conversion to an array, truth, being
returned as a gradient -- raises the rule's own error. A dropped one is never seen.
Never a silent value: an Undefined is not a number, and nothing treats it as zero.
"""

__all__ = ["Undefined", "check_defined", "is_undefined"]


class Undefined:
    """The cotangent a rule could not give; ``error`` is what it raised."""

    __slots__ = ("error",)
    __array_ufunc__ = None  # (NumPy's operators defer to ours, which raise)

    def __init__(self, error):
        self.error = error

    def fail(self, *_args, **_kwargs):
        raise type(self.error)(*self.error.args)

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = fail
    __truediv__ = __rtruediv__ = __pow__ = __rpow__ = __matmul__ = __rmatmul__ = fail
    __neg__ = __pos__ = __abs__ = __bool__ = __float__ = __complex__ = __int__ = fail
    __getitem__ = __iter__ = __len__ = __array__ = __array_function__ = fail

    def __repr__(self):
        return f"Undefined({self.error})"


def is_undefined(g):
    return type(g) is Undefined


def check_defined(g):
    """``g``, unless it is an :class:`Undefined` (then its error is raised)."""
    if type(g) is Undefined:
        g.fail()
    return g
