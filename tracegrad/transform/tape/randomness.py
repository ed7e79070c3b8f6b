"""Random draws while tracing: a tape must not replay them.

A function that calls ``np.random.randn`` (or a ``Generator`` it reads from its globals
or closure, or tracegrad's own ``randn``) draws new numbers on every call; a replayed
tape would hand back the first call's numbers every time -- a silently wrong value.
Nothing hands those draws to the tracer (they take no traced argument), so the tape
notices them by their effect: a generator whose state moved while the function was
traced. Such a trace is used for its own call only and never cached.
"""
import random as _random

from ...backend import cpu as np  # host-side generator states only
from ..reads import Reads

__all__ = ["Draws", "DrawsDiffer"]


def _raw_state(gen):
    """A generator's state, as its setter takes it back (NumPy's legacy global one, a
    ``Generator`` or a ``RandomState``)."""
    if isinstance(gen, np.random.Generator):
        return gen.bit_generator.state
    if isinstance(gen, _random.Random):  # (Python's own: random.random(), random.Random)
        return gen.getstate()
    return gen.get_state()


def _comparable(gen, raw):
    if isinstance(gen, np.random.Generator):
        return repr(raw)
    if isinstance(gen, _random.Random):
        return raw
    kind, key, pos, *_ = raw
    return (kind, key.tobytes(), pos)


def _generators(f):
    """The generators ``f`` may draw from: NumPy's global one, tracegrad's, and those it
    reads by name (see :class:`~..reads.Reads`)."""
    gens = [np.random.mtrand._rand, _random._inst]
    from ...backend import loaded
    for xp in loaded():
        rng = getattr(xp, "rng", None)
        if callable(rng):
            gens.append(rng())
    gens += Reads(f).values()  # (what it reads by name, through its helpers too)
    return [g for g in gens if isinstance(g, (np.random.Generator, np.random.RandomState, _random.Random))]


class Draws:
    """``Draws(f)`` before tracing ``f``; ``.happened()`` after: whether it drew random
    numbers meanwhile (then its trace must not be replayed)."""

    def __init__(self, f):
        self._gens = _generators(f)
        self._raw = [_raw_state(g) for g in self._gens]
        self._before = [_comparable(g, r) for g, r in zip(self._gens, self._raw)]

    def happened(self):
        return any(_comparable(g, _raw_state(g)) != s for g, s in zip(self._gens, self._before))

    def undo(self):
        """Put every generator back where it was: the numbers drawn will be drawn again
        (by the run that replaces a refused one)."""
        _set_states(self._gens, self._raw)

    def replay(self):
        """After the run that drew: a context in which each generator starts where it
        started before that run (a second run of the same code draws the same numbers),
        checked to end where that run ended (else :class:`DrawsDiffer`), and is put back
        where it was on entering (the caller's stream of numbers goes on unchanged)."""
        return _Replay(self._gens, self._raw, [_comparable(g, _raw_state(g)) for g in self._gens])


class DrawsDiffer(RuntimeError):
    """A run replayed with :meth:`Draws.replay` drew other numbers than the first run."""


class _Replay:
    def __init__(self, gens, start, end):
        self.gens, self.start, self.end = gens, start, end

    def __enter__(self):
        self.now = [_raw_state(g) for g in self.gens]
        _set_states(self.gens, self.start)

    def __exit__(self, kind, *_):
        ended = [_comparable(g, _raw_state(g)) for g in self.gens]
        _set_states(self.gens, self.now)
        if kind is None and ended != self.end:
            raise DrawsDiffer("the run repeated to differentiate drew other random numbers than "
                              "the run that computed the value")


def _set_states(gens, raws):
    for g, r in zip(gens, raws):
        if isinstance(g, np.random.Generator):
            g.bit_generator.state = r
        elif isinstance(g, _random.Random):
            g.setstate(r)
        else:
            g.set_state(r)
