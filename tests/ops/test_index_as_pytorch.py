"""Advanced indexing as PyTorch reads it where NumPy reads it otherwise: integers mixed
with index arrays are selects applied first (NumPy counts them among the advanced
indices, which moves the indexed dims to the front when a slice stands between them),
and index tensors are saved for the backward with their version checked (an index
changed in place afterwards would send the gradient elsewhere)."""
import random

import numpy as np
import pytest

import tracegrad as tg


def test_an_integer_and_an_array_apart_index_as_a_select_then_the_array():
    x = tg.arange(18).view(2, 3, 3)
    assert x[1, :, [2, 0, 1]].tolist() == [[11, 9, 10], [14, 12, 13], [17, 15, 16]]
    assert tuple(tg.zeros(2, 3, 4, 5)[1, :, tg.tensor([0, 1])].shape) == (3, 2, 5)
    assert tuple(tg.zeros(2, 3, 4, 5)[:, 1, :, tg.tensor([0, 1])].shape) == (2, 4, 2)  # (adjacent: as NumPy)
    y = tg.zeros(2, 3, 4, 5)
    y[1, :, tg.tensor([0, 1])] = tg.arange(30.0).view(3, 2, 5)
    assert y[1, 2, 1].tolist() == list(range(25, 30)) and y[0].abs().sum().item() == 0


def test_its_gradient_goes_where_the_values_came_from():
    w = tg.arange(18.0).view(2, 3, 3).requires_grad_()
    picked = w[0, :, [2, 0, 1]]
    weights = tg.arange(9.0).view(3, 3)
    (picked * weights).sum().backward()
    expected = np.zeros((2, 3, 3))
    for r in range(3):
        for k, c in enumerate([2, 0, 1]):
            expected[0, r, c] += 3 * r + k
    assert w.grad.numpy().tolist() == expected.tolist()
    assert picked.grad_fn.name() == "IndexBackward0"


@pytest.mark.parametrize("make", [lambda: tg.tensor([0, 1]), lambda: tg.tensor([True, True, False])])
def test_an_index_changed_in_place_after_use_is_refused_at_backward(make):
    a = tg.ones(3, requires_grad=True)
    idx = make()
    y = a[idx] * tg.tensor([1.0, 10.0])
    if idx.dtype is tg.bool:
        idx[2] = True
    else:
        idx.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation.*is at version 1; expected version 0"):
        y.sum().backward()


def test_an_index_left_alone_gives_its_gradient():
    a = tg.ones(4, requires_grad=True)
    idx = tg.tensor([0, 3, 3])
    (a[idx] * tg.tensor([1.0, 2.0, 5.0])).sum().backward()
    assert a.grad.tolist() == [1.0, 0.0, 0.0, 7.0]


def _random_indices(count, shape, seed):
    rng = random.Random(seed)
    for _ in range(count):
        parts, dim, ellipsis = [], 0, False
        for _ in range(rng.randint(1, 4)):
            if dim >= len(shape):
                break
            kind = rng.choice(["int", "slice", "array", "none", "mask", "ellipsis"])
            if kind == "ellipsis":
                if not ellipsis:
                    ellipsis = True
                    parts.append(("ellipsis", None))
                continue
            if kind == "int":
                parts.append((kind, rng.randrange(-shape[dim], shape[dim])))
            elif kind == "slice":
                parts.append((kind, rng.choice([slice(None), slice(1, None), slice(None, None, 2)])))
            elif kind == "array":
                parts.append((kind, [rng.randrange(shape[dim]) for _ in range(2)]))
            elif kind == "mask":
                parts.append((kind, [rng.random() < 0.5 for _ in range(shape[dim])]))
            else:
                parts.append((kind, None))
                continue
            dim += 1
        yield parts


def _built(lib, parts):
    out = []
    for kind, v in parts:
        out.append(Ellipsis if kind == "ellipsis" else lib.tensor(v) if kind in ("array", "mask") else v)
    return tuple(out)


@pytest.mark.torch
def test_random_mixed_indices_read_write_and_differentiate_as_pytorch():
    import torch
    shape = (2, 3, 4, 5)
    base = np.arange(np.prod(shape), dtype=np.float64).reshape(shape)
    rng = np.random.default_rng(0)
    tried = 0
    for parts in _random_indices(800, shape, seed=1):
        theirs = torch.tensor(base, requires_grad=True)
        try:
            want = theirs[_built(torch, parts)]
        except (IndexError, RuntimeError):
            continue
        ours = tg.tensor(base, requires_grad=True)
        got = ours[_built(tg, parts)]
        assert tuple(got.shape) == tuple(want.shape), parts
        assert np.array_equal(got.detach().numpy(), want.detach().numpy()), parts
        w = rng.standard_normal(tuple(want.shape))
        (want * torch.tensor(w)).sum().backward()
        (got * tg.tensor(w)).sum().backward()
        np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), err_msg=str(parts))
        a, b = torch.tensor(base), tg.tensor(base)
        a[_built(torch, parts)] = torch.tensor(w)
        b[_built(tg, parts)] = tg.tensor(w)
        assert np.array_equal(a.numpy(), b.numpy()), parts
        tried += 1
    assert tried > 500
