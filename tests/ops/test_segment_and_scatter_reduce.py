"""``segment_reduce`` (DIN-style recommender code, GNN readouts) and the older
``scatter(..., reduce="add" | "multiply")``, against hand values and PyTorch."""
import warnings

import numpy as np
import pytest

import tracegrad as tg

DATA = [1.0, 2.0, 3.0, 4.0, 5.0]


@pytest.mark.parametrize("reduce, expected", [
    ("sum", [1.0, 9.0, 0.0, 5.0]), ("mean", [1.0, 3.0, np.nan, 5.0]), ("max", [1.0, 4.0, -np.inf, 5.0]),
    ("amin", [1.0, 2.0, np.inf, 5.0]), ("prod", [1.0, 24.0, 1.0, 5.0])])
def test_segments_by_lengths_with_an_empty_one(reduce, expected):
    got = tg.segment_reduce(tg.tensor(DATA), reduce, lengths=tg.tensor([1, 3, 0, 1]))
    np.testing.assert_array_equal(got.numpy(), np.array(expected, np.float32))


def test_offsets_initial_axis_and_batched_lengths():
    d = tg.tensor(DATA)
    assert tg.segment_reduce(d, "max", offsets=tg.tensor([0, 2, 2, 5])).tolist() == [2.0, -np.inf, 5.0]
    assert tg.segment_reduce(d, "sum", lengths=tg.tensor([2, 0, 3]), initial=10.0).tolist() == [13.0, 10.0, 22.0]
    mean = tg.segment_reduce(d, "mean", lengths=tg.tensor([2, 0, 3]), initial=10.0)
    np.testing.assert_allclose(mean.numpy(), [13 / 2, 10.0, 22 / 3], rtol=1e-6)  # (initial + sum) / length
    x = tg.arange(12.0).reshape(6, 2)
    assert tg.segment_reduce(x, "sum", lengths=tg.tensor([2, 4])).tolist() == [[2.0, 4.0], [28.0, 32.0]]
    y = tg.arange(12.0).reshape(2, 6)
    got = tg.segment_reduce(y, "mean", lengths=tg.tensor([[2, 4], [3, 3]]), axis=1)
    assert got.tolist() == [[0.5, 3.5], [7.0, 10.0]]


@pytest.mark.parametrize("reduce, expected", [
    ("max", [0.5, 0.5, 0.0, 1.0]), ("mean", [1 / 3, 1 / 3, 1 / 3, 1.0]), ("prod", [15.0, 15.0, 25.0, 1.0]),
    ("sum", [1.0, 1.0, 1.0, 1.0])])
def test_gradients(reduce, expected):
    d = tg.tensor([5.0, 5.0, 3.0, 2.0], requires_grad=True)
    tg.segment_reduce(d, reduce, lengths=tg.tensor([3, 1])).sum().backward()
    np.testing.assert_allclose(d.grad.numpy(), expected, rtol=1e-6)


ERRORS = [
    (lambda L: L.segment_reduce(L.tensor(DATA), "sum", lengths=L.tensor([1, 3])), RuntimeError),
    (lambda L: L.segment_reduce(L.tensor(DATA), "foo", lengths=L.tensor([5])), RuntimeError),
    (lambda L: L.segment_reduce(L.tensor(DATA), "sum"), RuntimeError),
    (lambda L: L.segment_reduce(L.tensor(DATA), "sum", indices=L.tensor([0, 0, 1, 1, 1])), RuntimeError),
    (lambda L: L.segment_reduce(L.arange(6.0).reshape(2, 3), "sum", lengths=L.tensor([1, 2]), axis=1), RuntimeError),
    (lambda L: L.segment_reduce(L.tensor([1, 2, 3]), "sum", lengths=L.tensor([1, 2])), NotImplementedError),
    (lambda L: L.segment_reduce(L.tensor(DATA), "sum", lengths=L.tensor([2, -1, 4])), RuntimeError),
]


@pytest.mark.torch
@pytest.mark.parametrize("k", range(len(ERRORS)))
def test_errors_match_torch(k):
    torch = pytest.importorskip("torch")
    call, error = ERRORS[k]
    with pytest.raises(error) as theirs:
        call(torch)
    with pytest.raises(error) as ours:
        call(tg)
    assert str(ours.value) == str(theirs.value)


@pytest.mark.torch
@pytest.mark.parametrize("reduce", ["sum", "mean", "max", "min", "prod"])
def test_values_and_gradients_match_torch(reduce):
    torch = pytest.importorskip("torch")
    data = np.random.default_rng(3).standard_normal((3, 7))
    lengths = [[2, 0, 5], [7, 0, 0], [1, 3, 3]]
    outs = []
    for L in (tg, torch):
        d = L.tensor(data, requires_grad=True)
        out = L.segment_reduce(d, reduce, lengths=L.tensor(lengths), axis=1, initial=None)
        (out.nan_to_num(0.0, 0.0, 0.0) * L.arange(9.0, dtype=L.float64).reshape(3, 3)).sum().backward()
        outs.append((out.detach().numpy(), d.grad.numpy()))
    np.testing.assert_allclose(outs[0][0], outs[1][0], rtol=1e-12)
    np.testing.assert_allclose(outs[0][1], outs[1][1], rtol=1e-12)


# -- scatter(reduce=) -----------------------------------------------------------------------------

def test_scatter_with_add_and_multiply():
    index = tg.tensor([0, 0, 2])
    with pytest.warns(UserWarning, match="The reduce argument of torch.scatter with Tensor src is deprecated"):
        added = tg.zeros(3).scatter(0, index, tg.tensor([1.0, 2.0, 3.0]), reduce="add")
    assert added.tolist() == [3.0, 0.0, 3.0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert tg.ones(3).scatter(0, index, tg.tensor([2.0, 3.0, 4.0]), reduce="multiply").tolist() == [6.0, 1.0, 4.0]
        x = tg.zeros(3)
        assert x.scatter_(0, index, tg.tensor([1.0, 2.0, 3.0]), reduce="add") is x and x.tolist() == [3.0, 0.0, 3.0]
    assert tg.ones(3).scatter(0, index, 5.0, reduce="add").tolist() == [11.0, 1.0, 6.0]  # (a number: no warning)
    assert tg.ones(3).scatter(0, index, 5.0, reduce="multiply").tolist() == [25.0, 1.0, 5.0]
    with pytest.raises(RuntimeError, match="reduce argument must be either add or multiply."):
        tg.ones(3).scatter(0, index, 1.0, reduce="mean")


def test_scatter_with_reduce_has_no_derivative():
    """As in PyTorch: the result requires grad, and a backward through it raises."""
    src = tg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = tg.zeros(3).scatter(0, tg.tensor([0, 0, 2]), src, reduce="add")
        y = src * 1
        y.scatter_(0, tg.tensor([0, 0, 2]), tg.tensor([1.0, 2.0, 3.0]), reduce="add")
    assert out.requires_grad and out.grad_fn.name() == "torch::autograd::NotImplemented"
    for t in (out, y):
        with pytest.raises(RuntimeError, match="derivative for aten::scatter is not implemented"):
            t.sum().backward()
