"""``numpy.linalg`` on tracers."""
import math

import numpy as np

from .base import FUNCTIONS, P, as_float, dims, ndim, unsupported


def _norm(x, ord=None, axis=None, keepdims=False):
    matrix = (isinstance(axis, (tuple, list)) and len(axis) == 2) or (
        axis is None and ord is not None and ndim(x) >= 2)
    if matrix or ord not in (None, 2, 1, math.inf, -math.inf, 0):
        raise unsupported(f"numpy.linalg.norm(..., ord={ord!r}, axis={axis!r}) (only vector norms)")
    return P.vector_norm(as_float(x), ord=2 if ord is None else ord, dim=dims(axis, ndim(x)), keepdim=keepdims)


FUNCTIONS.update({np.linalg.norm: _norm})
