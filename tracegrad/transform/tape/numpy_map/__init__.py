"""NumPy's API on tracers: which rule-table primitive each NumPy function, ufunc and
ndarray method records.

Plain NumPy code reaches the tracer through ``__array_ufunc__`` (ufunc calls and
reductions) and ``__array_function__`` (everything else); both look the function up in
the registry here (``UFUNCS``, ``FUNCTIONS``), which the modules of this package fill, one
area each. Anything not here raises an error naming the NumPy function, so a function the
table cannot differentiate never silently becomes a constant.
"""
from .base import FUNCTIONS, UFUNCS, P, astype, call_function, dims, npdtype, register, unsupported
from .ufuncs import call_ufunc
from . import arrays, linalg, products, reductions, shapes  # noqa: F401  (they register)
from . import construct, indexing, matrices, padding  # noqa: F401
from . import fft  # noqa: F401
from . import complex_  # noqa: F401
from . import special  # noqa: F401

__all__ = ["UFUNCS", "FUNCTIONS", "P", "call_ufunc", "call_function", "dims", "npdtype", "astype",
           "register", "unsupported"]
