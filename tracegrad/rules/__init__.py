"""THE derivative table: one entry per primitive (forward kernel, vjps, jvp), shared by
the eager, tape and AST paths. ``TABLE`` maps each primitive's name to its entry.

To add a rule: decorate a kernel ``impl(xp, *operands, **params)`` with ``@primitive``
(see :mod:`tracegrad.rules.core`), give each differentiable operand a vjp with
``@prim.vjp("x", uses=...)`` written with operators and other primitives only, add a jvp
unless the rule is ``diagonal`` or ``linear``, and add samples for it to
a ``tests/rules/samples_*.py`` module (the table-walking gradient check refuses rules
without them).
"""
from . import core, broadcast, unary, arith, views, memory, shape, index, reduce  # noqa: F401
from . import linalg, activation, conv, pool, loss, nn, complex_, arrays  # noqa: F401
from . import fft  # noqa: F401
from . import attention, counting, distance  # noqa: F401
from . import sparse  # noqa: F401  (sparse COO matrix products)
from . import special, gamma, bessel  # noqa: F401
from . import decomp, spectral, matrix_functions  # noqa: F401
from . import lapack, triangular, matrix_exp  # noqa: F401
from . import scipy_linalg, scipy_signal, scipy_stats  # noqa: F401  (SciPy kernels, imported lazily)
from . import ode  # noqa: F401  (SciPy's odeint, imported lazily)
from . import scatter_reduce, extrema  # noqa: F401
from .core import OUT, TABLE, Meta, Primitive, primitive  # noqa: F401

__all__ = ["TABLE", "Primitive", "primitive", "Meta", "OUT"]
