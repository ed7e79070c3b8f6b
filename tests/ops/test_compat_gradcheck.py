"""The composed torch names (ops/compat_*.py) without PyTorch: finite-difference gradient
checks and hand formulas."""
import numpy as np
import pytest

import tracegrad
from tracegrad.autograd import gradcheck

RNG = np.random.default_rng(1)


def leaf(*shape):
    return tracegrad.tensor(RNG.standard_normal(shape), dtype=tracegrad.float64, requires_grad=True)


@pytest.mark.parametrize("fn, shapes", [
    (lambda x: tracegrad.cov(x), [(3, 5)]),
    (lambda x: tracegrad.corrcoef(x), [(3, 5)]),
    (lambda x: tracegrad.logcumsumexp(x, 1), [(2, 4)]),
    (lambda x, s: tracegrad.index_add(x, 0, tracegrad.tensor([2, 0, 2]), s, alpha=2.0), [(3, 2), (3, 2)]),
    (lambda x, m, v: tracegrad.addmv(x, m, v, beta=0.5, alpha=2.0), [(3,), (3, 4), (4,)]),
    (lambda x, a, b: tracegrad.addr(x, a, b), [(3, 4), (3,), (4,)]),
    (lambda a, b: tracegrad.cosine_similarity(a, b), [(2, 3), (2, 3)]),
    (lambda a, b: tracegrad.pairwise_distance(a, b), [(2, 3), (2, 3)]),
    (lambda y: tracegrad.trapezoid(y), [(2, 5)]),
    (lambda y: tracegrad.cumulative_trapezoid(y, dx=0.5), [(2, 5)]),
    (lambda x: tracegrad.vander(x, 4), [(3,)]),
    (lambda x: tracegrad.pixel_shuffle(x, 2), [(1, 4, 2, 2)]),
    (lambda x: tracegrad.masked_scatter(x, tracegrad.tensor([[True, False, True], [False, False, True]]), x * 3), [(2, 3)]),
    (lambda x: (x * 1.0).addcmul_(x, x, value=0.5), [(2, 3)]),
    (lambda x: (x * 1.0).lerp_(x.exp(), 0.25), [(2, 3)]),
    (lambda x, y: tracegrad.dist(x, y, 3), [(4,), (4,)]),
    (lambda x: tracegrad.renorm(x, 2, 0, 0.5), [(3, 4)]),
    (lambda x: tracegrad.matrix_exp(x), [(3, 3)]),
    (lambda x: tracegrad.matrix_exp(x * 3), [(2, 2)]),
    (lambda x, s: tracegrad.slice_scatter(x, s, 1, 0, 4, 2), [(3, 4), (3, 2)]),
    (lambda x: tracegrad.pdist(x), [(3, 2)]),
])
def test_gradients_by_finite_differences(fn, shapes):
    assert gradcheck(fn, tuple(leaf(*s) for s in shapes))


def test_hand_formulas():
    x = tracegrad.tensor([2.0, 3.0], dtype=tracegrad.float64)
    np.testing.assert_array_equal(tracegrad.vander(x).numpy(), [[2.0, 1.0], [3.0, 1.0]])
    y = tracegrad.tensor([1.0, 2.0, 4.0], dtype=tracegrad.float64)
    assert tracegrad.trapezoid(y).item() == 1.5 + 3.0
    assert tracegrad.trapezoid(y, tracegrad.tensor([0.0, 1.0, 3.0], dtype=tracegrad.float64)).item() == 1.5 + 6.0
    c = tracegrad.cov(tracegrad.tensor([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0]], dtype=tracegrad.float64))
    np.testing.assert_allclose(c.numpy(), [[1.0, 2.0], [2.0, 4.0]])
    np.testing.assert_allclose(tracegrad.logcumsumexp(y, 0).numpy(), np.logaddexp.accumulate([1.0, 2.0, 4.0]))
    g = tracegrad.meshgrid(tracegrad.arange(3), tracegrad.arange(2), indexing="xy")
    assert g[0].shape == (2, 3) and g[0][1].tolist() == [0, 1, 2] and g[1][:, 0].tolist() == [0, 1]
    assert tracegrad.combinations(tracegrad.tensor([1, 2, 3])).tolist() == [[1, 2], [1, 3], [2, 3]]
    assert tracegrad.tril_indices(2, 2).tolist() == [[0, 1, 1], [0, 0, 1]]
    rows, cols = tracegrad.unravel_index(tracegrad.tensor([5]), (2, 3))
    assert (rows.item(), cols.item()) == (1, 2)
    np.testing.assert_allclose(tracegrad.hann_window(4).numpy(), [0.0, 0.5, 1.0, 0.5], atol=1e-7)
    rot = tracegrad.matrix_exp(tracegrad.tensor([[0.0, 1.0], [-1.0, 0.0]], dtype=tracegrad.float64))
    np.testing.assert_allclose(rot.numpy(), [[np.cos(1), np.sin(1)], [-np.sin(1), np.cos(1)]], rtol=1e-14)
