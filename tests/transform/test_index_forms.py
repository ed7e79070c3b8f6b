"""Every form NumPy gives an index -- tuples and lists inside the index tuple (sequences,
hence advanced indexing), ranges, scalar booleans (0-d masks), ellipsis, new axes --
differentiated on the tape and in AST mode against finite differences, reading and
writing. A tuple inside the index was once recorded as basic indexing: the value was
right and the gradient silently zero."""
import numpy as np
import pytest

import tracegrad as tg

from .numeric import numeric

X = np.arange(20.0).reshape(4, 5) / 10 + 0.05
INDEXES = [
    ((0, 1, 0), (3, 3, 2)), ([0, 1, 0], [3, 3, 2]), ((0, 1), slice(None)), (np.array([0, 1]), (1, 2)),
    ((0,),), (True,), (False,), (range(2), 1), (1, Ellipsis), (None, 2), (Ellipsis, (4, 0)),
    (slice(1, None), [[0], [2]]), ([True, False, True, True],), (np.array([[1, 0], [3, 3]]),),
]


def reader(idx):
    def f(x):
        return np.sum(np.sin(x)[idx] ** 2)
    return f


def writer(idx):
    def f(x):
        y = x * 1.0
        y[idx] = np.tanh(y[idx]) * 2
        return np.sum(y * x)
    return f


@pytest.mark.parametrize("mode", ["tape", "ast"])
@pytest.mark.parametrize("make", [reader, writer])
@pytest.mark.parametrize("k", range(len(INDEXES)))
def test_index_forms(k, make, mode):
    f = make(INDEXES[k])
    np.testing.assert_allclose(tg.grad(f, mode=mode)(X), numeric(f, X), rtol=1e-6, atol=1e-8)
