"""What the NumPy map claims: every public NumPy and SciPy name a tracer records, found in
the registry itself (``FUNCTIONS``, ``UFUNCS``, the ufuncs written with several
primitives, the ufunc reductions), and the functions of :mod:`tracegrad.scipy.special`.
The README's table of supported functions is written from this (``python
tools/numpy_table.py``), and the coverage test differentiates each name it lists, so
neither can drift from what the tape really takes."""
import importlib
import types

import numpy as np

from .base import FUNCTIONS, UFUNCS
from .ufuncs import REDUCE, UFUNC_EXTRA

__all__ = ["claimed", "SECTIONS"]

SECTIONS = ("numpy", "numpy.linalg", "numpy.fft", "scipy.special", "tracegrad.scipy.special")


def _modules():
    mods = [np, np.linalg, np.fft]
    try:  # (SciPy is optional: without it, its ufuncs are simply not listed)
        mods.append(importlib.import_module("scipy.special"))
    except ImportError:
        pass
    return mods


def _public_name(obj, modules):
    """``numpy.linalg.inv`` for NumPy's inv: the first module (of ``modules``) that has
    ``obj`` under a public name, preferring the object's own ``__name__``."""
    own = getattr(obj, "__name__", None)
    for mod in modules:
        if own and not own.startswith("_") and getattr(mod, own, None) is obj:
            return f"{mod.__name__}.{own}"
    for mod in modules:
        for name, value in vars(mod).items():
            if value is obj and not name.startswith("_"):
                return f"{mod.__name__}.{name}"
    return None


def claimed():
    """``{public name: kind}`` of every name the tape differentiates (``kind``: "function",
    "ufunc", "reduction" or "tracegrad"), sorted by name."""
    modules = _modules()
    out = {}
    for fn in FUNCTIONS:
        name = _public_name(fn, modules)
        if name is not None:
            out[name] = "function"
    for uname in set(UFUNCS) | set(UFUNC_EXTRA):
        for mod in modules:
            u = getattr(mod, uname, None)
            if isinstance(u, np.ufunc):
                out.setdefault(_public_name(u, modules) or f"{mod.__name__}.{uname}", "ufunc")
                break
    for uname in REDUCE:
        out[f"numpy.{uname}.reduce"] = "reduction"
    from ....scipy import special as tsp
    for name in tsp.__all__:
        if isinstance(getattr(tsp, name, None), types.FunctionType):
            out[f"tracegrad.scipy.special.{name}"] = "tracegrad"
    return dict(sorted(out.items()))


def section_of(name):
    """The table section a public name belongs to (its longest listed module prefix)."""
    best = "numpy"
    for s in SECTIONS:
        if name.startswith(s + ".") and len(s) > len(best):
            best = s
    return best
