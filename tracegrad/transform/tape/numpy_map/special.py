"""NumPy's elementwise functions that are Python functions rather than ufuncs (``np.sinc``,
``np.i0``): they reach the tracer through ``__array_function__``, so they are registered
here by function. (SciPy's special functions are ufuncs: see ``UFUNCS`` in ufuncs.py; its
Python-level ones -- logsumexp, softmax, polygamma -- are in :mod:`tracegrad.scipy.special`.)
"""
import numpy as np

from .base import P, register


@register(np.sinc)
def _sinc(x):
    return P.sinc(x)


@register(np.i0)
def _i0(x):
    return P.i0(x)
