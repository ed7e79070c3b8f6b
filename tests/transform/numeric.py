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
