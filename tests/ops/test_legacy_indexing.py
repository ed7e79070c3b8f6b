"""Index forms older PyTorch code writes, which torch 2.13 still reads its own way (with
deprecation warnings): a list holding sequences is a tuple of indices (``adj[[src, dst]]
= 1``), a uint8 tensor is a mask, and an empty list selects nothing."""
import warnings

import numpy as np
import pytest

import tracegrad as tg


def quiet(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn()


def test_a_list_of_sequences_is_a_tuple_of_indices():
    adj = tg.zeros(3, 3)
    with pytest.warns(UserWarning, match="Using a non-tuple sequence for multidimensional indexing is deprecated"):
        adj[[[0, 1, 2], [2, 0, 1]]] = 1
    expected = np.zeros((3, 3))
    expected[[0, 1, 2], [2, 0, 1]] = 1
    np.testing.assert_array_equal(adj.numpy(), expected)
    b = tg.arange(9).view(3, 3)
    assert quiet(lambda: b[[tg.tensor([0, 1]), tg.tensor([1, 2])]]).tolist() == [1, 5]
    assert quiet(lambda: b[[slice(0, 2), 1]]).tolist() == [1, 4]
    assert quiet(lambda: b[[[0, 1]]]).tolist() == [[0, 1, 2], [3, 4, 5]]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert b[[0, 2]].tolist() == [[0, 1, 2], [6, 7, 8]]  # (a list of ints: one index, no warning)
    x = tg.ones(3, 3, requires_grad=True)
    quiet(lambda: x[[[0, 2], [1, 1]]]).sum().backward()
    assert x.grad.tolist() == [[0.0, 1.0, 0.0], [0.0, 0.0, 0.0], [0.0, 1.0, 0.0]]


def test_a_uint8_tensor_is_a_mask():
    b = tg.arange(9).view(3, 3)
    with pytest.warns(UserWarning, match="indexing with dtype torch.uint8 is now deprecated"):
        assert b[tg.tensor([1, 0, 1], dtype=tg.uint8)].tolist() == [[0, 1, 2], [6, 7, 8]]
    c = tg.zeros(3)
    quiet(lambda: c.__setitem__(tg.tensor([1, 0, 1], dtype=tg.uint8), 5.0))
    assert c.tolist() == [5.0, 0.0, 5.0]


def test_an_empty_list_selects_nothing():
    b = tg.arange(9.0).view(3, 3)
    assert b[[]].shape == (0, 3) and b[:, []].shape == (3, 0)
    e = tg.zeros(3)
    e[[]] = 1.0
    assert e.tolist() == [0.0, 0.0, 0.0]


@pytest.mark.torch
def test_against_torch():
    torch = pytest.importorskip("torch")
    calls = [lambda L: L.arange(9).view(3, 3)[[L.tensor([0, 1]), L.tensor([1, 2])]],
             lambda L: L.arange(9).view(3, 3)[[slice(0, 2), 1]],
             lambda L: L.arange(9).view(3, 3)[[[2, 0], [1, 1]]],
             lambda L: L.arange(9).view(3, 3)[[None, 1]],
             lambda L: L.arange(9).view(3, 3)[L.tensor([1, 0, 1], dtype=L.uint8)],
             lambda L: L.arange(9).view(3, 3)[[]]]
    for call in calls:
        ours, theirs = quiet(lambda: call(tg)), quiet(lambda: call(torch))
        assert tuple(ours.shape) == tuple(theirs.shape) and ours.tolist() == theirs.tolist()
