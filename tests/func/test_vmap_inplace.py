"""In-place writes under vmap(grad): into a batched tensor and into views of it, the
per-sample gradients equal a loop of grad over the samples (and torch.func)."""
import numpy as np
import pytest

import tracegrad as tg
from tracegrad.func import grad, vmap

X = np.random.default_rng(5).standard_normal((3, 4))


def write_a_row(x):
    y = x.clone()
    y[0] = y[0] * 3
    return (y ** 2).sum()


def multiply_a_slice(x):
    y = x.clone()
    y[1:].mul_(x[:3])
    return (y ** 2).sum()


def chain_of_writes(x):
    y = x * 1
    y.mul_(2)
    y.add_(x)
    return (y.exp() * x).sum()


def write_through_a_view(x):
    y = x * 1
    v = y[1:]
    v.mul_(2)
    return (y ** 2 * x).sum()


CASES = [write_a_row, multiply_a_slice, chain_of_writes, write_through_a_view]


@pytest.mark.parametrize("f", CASES, ids=[f.__name__ for f in CASES])
def test_per_sample_gradients_through_in_place_writes(f):
    x = tg.tensor(X)
    loop = np.stack([grad(f)(x[i]).numpy() for i in range(3)])
    np.testing.assert_allclose(vmap(grad(f))(x).numpy(), loop, rtol=1e-12, atol=1e-12)


@pytest.mark.torch
@pytest.mark.parametrize("f", CASES, ids=[f.__name__ for f in CASES])
def test_against_torch(f):
    torch = pytest.importorskip("torch")
    want = torch.func.vmap(torch.func.grad(f))(torch.tensor(X)).numpy()
    np.testing.assert_allclose(vmap(grad(f))(tg.tensor(X)).numpy(), want, rtol=1e-12, atol=1e-12)


def test_in_place_on_a_per_sample_leaf_is_refused():
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place"):
        vmap(grad(lambda x: x.mul_(2).sum()))(tg.tensor(X))
