"""Central finite differences: the reference gradient the staged paths are checked against."""
import numpy as np


def numeric(f, x, *rest, eps=1e-6):
    """d f(x, *rest) / dx by central differences, one element of ``x`` at a time."""
    g = np.zeros_like(x)
    for i in range(x.size):
        e = np.zeros_like(x)
        e.flat[i] = eps
        g.flat[i] = (f(x + e, *rest) - f(x - e, *rest)) / (2 * eps)
    return g


def _weights(shape):
    return np.cos(np.arange(int(np.prod(shape))) * 1.3 + 0.2).reshape(shape)


def objective(case):
    """A real scalar that every element of ``case(x)`` reaches with its own weight (so a
    gradient error in any element shows)."""
    def obj(x):
        y = case(x)
        return np.sum(np.sin(y) * _weights(np.shape(y)))
    return obj
