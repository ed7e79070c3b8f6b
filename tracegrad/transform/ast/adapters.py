"""Functions standing for a call's function, for the AST path's calls traced on a tape:
``by_keyword`` (values being differentiated passed by keyword, taken positionally),
``numbers_bound`` (Python numbers given by keyword, bound as options rather than
traced), and the tangents of a forward-mode call with its zero ones dropped."""
import weakref

import numpy as _np

from ..tree import flatten, unflatten
from .resolve import host_function

__all__ = ["by_keyword", "numbers_bound", "without_zero_tangents"]


def by_keyword(fn, names):
    """``fn`` taking the values of its keyword arguments ``names`` as its last positional
    arguments (see on_tape.keywords_as_positions): one function per ``(fn, names)``, so
    that the tape's cache of its derivative is kept."""
    try:
        per, held = _BY_KEYWORD.setdefault(fn, {}), weakref.ref(fn)  # (the adapter keeps fn weakly)
    except TypeError:  # (no weak reference to it: one held here)
        per, held = _BY_KEYWORD_HELD.setdefault(id(fn), (fn, {}))[1], (lambda: fn)
    call = per.get(names)
    if call is None:
        def call(*args, **kwargs):
            from .support import (
                _constructor,  # (what the tape traces for fn, as _staged does)
            )
            n = len(args) - len(names)
            return _constructor(host_function(held()))(*args[:n], **dict(zip(names, args[n:])), **kwargs)
        call.__name__ = call.__qualname__ = f"{getattr(fn, '__name__', 'f')}_by_keyword"
        per[names] = call
    return call


_BY_KEYWORD, _BY_KEYWORD_HELD = weakref.WeakKeyDictionary(), {}


def numbers_bound(fn, kwargs):
    """``(fn, kwargs)`` with the keyword arguments that are Python numbers bound into a
    function (one per ``fn`` and values, the last few kept): the tape would trace a
    float given there (``pinv(a, rcond=1e-3)``), which is an option, not a value being
    differentiated (those were moved to positions: see on_tape.keywords_as_positions)."""
    numbers = tuple(sorted((k, v) for k, v in kwargs.items() if type(v) in (int, float, complex, bool)))
    if not numbers:
        return fn, kwargs
    bound = by_keyword(fn, ())  # (one function per fn, held weakly)
    per = _BOUND.setdefault(bound, {})
    call = per.get(numbers)
    if call is None:
        if len(per) >= 16:
            per.pop(next(iter(per)))
        held = weakref.ref(bound)  # (the cache's value must not keep its key alive)

        def call(*args, **rest):
            return held()(*args, **dict(numbers), **rest)
        call.__name__ = call.__qualname__ = getattr(fn, "__name__", "f")
        per[numbers] = call
    return call, {k: v for k, v in kwargs.items() if type(v) not in (int, float, complex, bool)}


_BOUND = weakref.WeakKeyDictionary()


def without_zero_tangents(tangents):
    """``tangents`` with each concrete all-zero leaf None (a constant, as the tape sees
    it: a jvp is linear in the tangents), or None when there is none."""
    leaves, spec = flatten(tuple(tangents))
    zero = [(type(t) in (float, complex) or isinstance(t, (_np.ndarray, _np.generic))) and not _np.any(t)
            for t in leaves]
    if not any(zero):
        return None
    return unflatten(spec, [None if z else t for t, z in zip(leaves, zero)])
