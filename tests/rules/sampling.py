"""How the table-walking tests describe inputs: a ``Sample`` is one call of a primitive.

Each ``samples_*.py`` module in this folder defines ``SAMPLES = {primitive name: [Sample,
...]}``. Operands are float64 NumPy arrays (or numbers, bools, int index arrays); ``tags``
say which shapes the sample covers ("broadcast", "0d", "empty") so the tests can check
that every rule is exercised on them.
"""
import dataclasses

import numpy as np

_rng = np.random.default_rng(20261122)


@dataclasses.dataclass
class Sample:
    args: tuple
    params: dict
    tags: frozenset = frozenset()
    rtol: float = 1e-6  # for the finite-difference comparison
    smooth: bool = True  # False at ties or exact zeros: the gradient jumps, so no 2nd-order check
    float32: bool = True  # False when static params fix the dtype (cast)

    def __repr__(self):
        shapes = ",".join(str(getattr(a, "shape", a)) for a in self.args)
        extra = ",".join(f"{k}={v!r}" for k, v in self.params.items() if k != "chain")
        return f"[{shapes}{';' + extra if extra else ''}{' ' + '/'.join(sorted(self.tags)) if self.tags else ''}]"


def S(*args, tags=(), rtol=1e-6, smooth=True, float32=True, **params):
    """A sample: operands positionally, static parameters by keyword."""
    if isinstance(tags, str):
        tags = tags.split()
    return Sample(tuple(args), params, frozenset(tags), rtol, smooth, float32)


def r(*shape):
    """Standard normal values."""
    return _rng.standard_normal(shape)


def pos(*shape):
    """Positive values away from zero (for log, sqrt, division)."""
    return _rng.uniform(0.5, 2.0, shape)


def unit(*shape):
    """Values inside (-1, 1) away from the ends (for asin, acos)."""
    return _rng.uniform(-0.9, 0.9, shape)


def away(*shape):
    """Values of either sign, at least 0.3 from zero (for kinks and division)."""
    v = _rng.uniform(0.3, 2.0, shape)
    return v * np.where(_rng.random(shape) < 0.5, -1.0, 1.0)


def ints(high, *shape):
    return _rng.integers(0, high, shape)


def mask(*shape):
    return _rng.random(shape) < 0.5


def zd(domain=r):
    """A 0-d array (not a NumPy scalar) drawn from ``domain``."""
    return np.array(domain(), dtype=np.float64)
