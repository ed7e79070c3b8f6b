"""Elementwise arithmetic on sparse COO tensors (tracegrad.sparse.elementwise): products
with dense and sparse tensors, zero-keeping unary functions, sparse softmax, addmm,
sparse_mask and index_select -- values against the dense computation, gradients into the
values against the dense gradient restricted to the stored entries, and PyTorch."""
import warnings

import numpy as np
import pytest

import tracegrad as tg

IND = [[0, 0, 1, 2, 2], [1, 2, 0, 0, 2]]
VAL = [1.0, -2.0, 3.0, 4.0, -5.0]
DENSE = np.zeros((3, 3))
DENSE[tuple(IND)] = VAL


def sparse(values=None):
    v = tg.tensor(VAL if values is None else values, dtype=tg.float64, requires_grad=True)
    return tg.sparse_coo_tensor(tg.tensor(IND), v, (3, 3)), v


def test_products_keep_the_sparse_structure():
    s, v = sparse()
    d = np.arange(9.0).reshape(3, 3)
    for product in (s * tg.tensor(d), tg.tensor(d) * s, tg.mul(s, tg.tensor(d))):
        assert product.is_sparse and product._nnz() == 5
        np.testing.assert_array_equal(product.to_dense().detach().numpy(), DENSE * d)
    np.testing.assert_array_equal((s * s).to_dense().detach().numpy(), DENSE * DENSE)
    other = tg.sparse_coo_tensor(tg.tensor([[0, 1], [1, 1]]), tg.tensor([10.0, 7.0], dtype=tg.float64), (3, 3))
    meet = s * other  # (stored where both are: one entry)
    assert meet._nnz() == 1 and meet.to_dense().detach().numpy()[0, 1] == 10.0
    (s * tg.tensor(d)).to_dense().sum().backward()
    np.testing.assert_array_equal(v.grad.numpy(), d[tuple(IND)])


def test_unary_functions_that_keep_zeros():
    s, _ = sparse()
    np.testing.assert_array_equal(s.abs().to_dense().detach().numpy(), np.abs(DENSE))
    np.testing.assert_array_equal(s.pow(2).to_dense().detach().numpy(), DENSE ** 2)
    np.testing.assert_allclose(s.tanh().to_dense().detach().numpy(), np.tanh(DENSE))
    assert (s.neg() if hasattr(s, "neg") else -s).to_dense().tolist() == (-DENSE).tolist()
    np.testing.assert_array_equal(s.pow(-1).to_dense().detach().numpy()[DENSE != 0], DENSE[DENSE != 0] ** -1)
    with pytest.raises(NotImplementedError, match="aten::pow"):
        s.pow(0)  # (0 ** 0 is 1: a dense result, which PyTorch refuses too)
    assert (s * tg.tensor([1.0, 2.0, 3.0], dtype=tg.float64)).to_dense().detach().numpy().tolist() == \
        (DENSE * [1.0, 2.0, 3.0]).tolist()  # (a dense operand broadcasts)
    assert s.index_select(1, tg.tensor([-1])).to_dense().detach().numpy().tolist() == DENSE[:, [-1]].tolist()


def test_softmax_over_the_stored_entries():
    s, v = sparse()
    got = tg.sparse.softmax(s, 1).to_dense().detach().numpy()
    masked = np.where(DENSE != 0, DENSE, -np.inf)
    expected = np.exp(masked - masked.max(1, keepdims=True))
    expected /= expected.sum(1, keepdims=True)
    np.testing.assert_allclose(got, expected, rtol=1e-12)
    np.testing.assert_allclose(tg.sparse.log_softmax(s, 1).to_dense().detach().numpy()[DENSE != 0],
                               np.log(expected[DENSE != 0]), rtol=1e-12)
    w = np.arange(9.0).reshape(3, 3)
    (tg.sparse.softmax(s, 1).to_dense() * tg.tensor(w)).sum().backward()
    # d/dv of sum_j w_j p_j within a row: p_i (w_i - sum_j w_j p_j)
    p = expected[tuple(IND)]
    row_mean = (expected * w).sum(1)[IND[0]]
    np.testing.assert_allclose(v.grad.numpy(), p * (w[tuple(IND)] - row_mean), rtol=1e-10)


def test_addmm_sparse_mask_and_index_select():
    s, _ = sparse()
    got = tg.sparse.addmm(tg.ones(3, 2, dtype=tg.float64), s, tg.ones(3, 2, dtype=tg.float64), beta=0.5, alpha=2.0)
    np.testing.assert_allclose(got.detach().numpy(), 0.5 + 2.0 * DENSE @ np.ones((3, 2)))
    d = np.arange(9.0).reshape(3, 3)
    masked = tg.tensor(d).sparse_mask(s.coalesce())
    np.testing.assert_array_equal(masked.to_dense().detach().numpy(), np.where(DENSE != 0, d, 0.0))
    picked = s.index_select(0, tg.tensor([2, 0, 2]))
    np.testing.assert_array_equal(picked.to_dense().detach().numpy(), DENSE[[2, 0, 2]])
    np.testing.assert_array_equal(tg.index_select(s, 1, tg.tensor([0])).to_dense().detach().numpy(), DENSE[:, [0]])
    with pytest.raises(IndexError, match="index out of range"):
        s.index_select(0, tg.tensor([3]))


@pytest.mark.torch
def test_against_torch():
    torch = pytest.importorskip("torch")
    results = []
    for L in (tg, torch):
        v = L.tensor(VAL, dtype=L.float64, requires_grad=True)
        s = L.sparse_coo_tensor(L.tensor(IND), v, (3, 3))
        d = L.arange(9.0, dtype=L.float64).reshape(3, 3)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            outs = [(s * s).to_dense(), (d * s).to_dense(), L.sparse.softmax(s, 0).to_dense(),
                    L.sparse.log_softmax(s, 1).to_dense(), s.sqrt().to_dense(), s.index_select(1, L.tensor([2, 2])).to_dense()]
            (L.sparse.softmax(s, 0).to_dense() * d).sum().backward()
        results.append([o.detach().numpy() for o in outs] + [v.grad.numpy()])
    for ours, theirs in zip(*results):
        np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-14, equal_nan=True)
