"""Silent wrong answers found by a review of vmap: code outside the batching rules that
read a BatchedTensor's ``_data`` (sample 0 only) as its value. Each case is checked
against a loop over the samples (and against torch.func.vmap where torch runs it), or
for the error that names the construct."""
import re

import numpy as np
import pytest

import tracegrad as tg
import tracegrad.nn.functional as F
from tracegrad.func import grad, vmap

pytestmark = pytest.mark.filterwarnings("ignore:There is a performance drop")


def _x(seed=0, shape=(3, 4)):
    return tg.tensor(np.random.default_rng(seed).standard_normal(shape))


def _loop(fn, *batches):
    outs = [fn(*sample) for sample in zip(*batches)]
    if isinstance(outs[0], tuple):
        return tuple(tg.stack([o[k] for o in outs]) for k in range(len(outs[0])))
    return tg.stack(outs)


def _close(a, b):
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-10, atol=1e-12)


def _torch(fn, *arrays, **kw):
    import torch
    return torch.func.vmap(fn, **kw)(*[torch.tensor(a.numpy()) for a in arrays]).numpy()


# -- saved-tensor hooks (checkpoint) under vmap(grad) ------------------------------------------

def test_checkpoint_inside_per_sample_grad_recomputes_every_sample():
    from tracegrad.utils.checkpoint import checkpoint
    x = _x(1)

    def loss(a):
        return checkpoint(lambda b: (b.sin() * b).sum(), a, use_reentrant=False)
    _close(vmap(grad(loss))(x), x.sin() + x * x.cos())
    _close(vmap(grad(loss))(x), _loop(grad(loss), x))


def test_saved_tensor_hooks_inside_per_sample_grad_unpack_every_sample():
    x = _x(2)
    seen = []

    def loss(a):
        with tg.autograd.graph.saved_tensors_hooks(lambda t: seen.append(1) or t * 1, lambda t: t):
            return (a * a * a).sum()
    _close(vmap(grad(loss))(x), 3 * x * x)
    assert seen  # (the hooks ran)


# -- pooling that searches the values in array code --------------------------------------------

def test_adaptive_max_pool_searches_every_sample():
    x = _x(3, (3, 2, 3, 5, 5))
    fn = lambda v: F.adaptive_max_pool2d(v, (2, 3), return_indices=True)
    for got, want in zip(vmap(fn)(x), _loop(fn, x)):
        _close(got, want)
    one_d = lambda v: F.adaptive_max_pool1d(v, 3, return_indices=True)[1]
    _close(vmap(one_d)(x[:, 0, 0]), _loop(one_d, x[:, 0, 0]))


def test_adaptive_max_pool_in_nested_vmaps_and_per_sample_grads():
    a, b = _x(4, (2, 1, 4, 4)), _x(5, (3, 1, 4, 4))
    fn = lambda u, v: F.adaptive_max_pool2d(u * v, 2, return_indices=True)[1]
    got = vmap(lambda u: vmap(lambda v: fn(u, v))(b))(a)
    want = tg.stack([tg.stack([fn(u, v) for v in b]) for u in a])
    assert tg.equal(got, want)
    loss = lambda v: F.adaptive_max_pool2d(v * v, 2).sum()
    _close(vmap(grad(loss))(b), _loop(grad(loss), b))


def test_fractional_max_pool_searches_every_sample():
    x = _x(6, (3, 1, 2, 5, 5))
    fixed = tg.full((1, 2, 2), 0.5, dtype=tg.float64)
    fn = lambda v: F.fractional_max_pool2d(v, 2, output_size=(2, 2), _random_samples=fixed, return_indices=True)
    for got, want in zip(vmap(fn)(x), _loop(fn, x)):
        _close(got, want)
    samples = tg.tensor([0.1, 0.5, 0.9], dtype=tg.float64).reshape(3, 1, 1, 1).expand(3, 1, 2, 2)
    fn2 = lambda v, u: F.fractional_max_pool2d(v, 2, output_size=(2, 2), _random_samples=u)
    _close(vmap(fn2)(x, samples), _loop(fn2, x, samples))


@pytest.mark.torch
def test_pooling_indices_match_torch():
    import torch
    x = _x(7, (3, 1, 2, 5, 5))
    got = vmap(lambda v: F.adaptive_max_pool2d(v, 2, return_indices=True)[1])(x)
    want = _torch(lambda v: torch.nn.functional.adaptive_max_pool2d(v, 2, return_indices=True)[1], x)
    np.testing.assert_array_equal(got.numpy(), want)
