"""Python numbers as 0-d NumPy arrays, for operations on small arrays.

NumPy spends about as long converting a Python number operand (``x * 1.01``) as on the
whole operation on a small array (~170-250 ns of a ~200 ns multiply of 16 floats); a 0-d
array of the array's own dtype gives the same result (NEP 50: the number is cast to that
dtype first) at the cost of an array operand. So one such array is kept per (dtype, value)
met, on float and complex NumPy arrays: the eager fast paths
(:mod:`tracegrad.runtime.fastpath`) use them for the ``scalar`` rules (whose kernel is
exactly their operator). The rules' vjps keep their numbers as written (``g * y``, tanh's
``1.0 - out * out``): the table is read as mathematics, and the tour shows it. (Written as
floats where the operand is a float: NumPy converts an int against a float64 array ~115
ns slower than a float, 3% of the eager float64 chain's step.)

Zero is never kept (0.0 and -0.0 are one key), nor NaN (no key finds it) nor a value the
dtype cannot hold (NumPy warns at each operation: the number itself keeps that); the
tables are bounded (all emptied when full). Kept per dtype (``CONSTANTS[dtype][number]``):
finding the dtype's table also tells that the array is of a float or complex dtype NumPy
holds natively -- a real one when found in ``REAL``, which shares the tables.
"""
import math

import numpy as _np

__all__ = ["CONSTANTS", "REAL", "constant_of"]

CONSTANTS = {}
REAL = {}
for _name in ("float16", "float32", "float64", "longdouble", "complex64", "complex128", "clongdouble"):
    CONSTANTS[_np.dtype(_name)] = {}
    if not _name.startswith("c"):
        REAL[_np.dtype(_name)] = CONSTANTS[_np.dtype(_name)]
KEPT_MAX = 1024
_kept = [0]  # numbers kept in all the tables


def constant_of(b, dtype):
    """``b`` as a 0-d array of ``dtype``, kept for the next time when it may be; ``b``
    itself when it may not."""
    if not b or (type(b) is float and math.isnan(b)) or not dtype.isnative:
        return b
    try:
        with _np.errstate(over="ignore"):
            c = _np.asarray(b, dtype=dtype)
    except OverflowError:  # (an int beyond any float: the kernel raises NumPy's error itself)
        return b
    if not _np.isfinite(c) and not (type(b) is float and math.isinf(b)):  # (the dtype cannot
        return b  # hold it: NumPy warns at each operation)
    if _kept[0] >= KEPT_MAX:
        for table in CONSTANTS.values():
            table.clear()
        _kept[0] = 0
    c.flags.writeable = False
    CONSTANTS[dtype][b] = c
    _kept[0] += 1
    return c

