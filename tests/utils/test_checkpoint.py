"""Activation checkpointing: the same gradients as without it (and as PyTorch), the
function really rerun in backward, its intermediates not kept, dropout replayed."""
import gc
import warnings
import weakref

import numpy as np
import pytest

import tracegrad as torch
from tracegrad import nn
from tracegrad.utils.checkpoint import CheckpointError, checkpoint, checkpoint_sequential

BOTH = pytest.mark.parametrize("reentrant", [True, False])


def _mlp(x, w1, w2):
    return ((x @ w1).tanh() @ w2).sigmoid()


def _params(seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s) for s in [(3, 4), (4, 5), (5, 2)]]


def _leaves(arrays, lib=torch):
    return [lib.tensor(a, dtype=lib.float64, requires_grad=True) for a in arrays]


@BOTH
def test_gradients_equal_the_uncheckpointed_ones(reentrant):
    plain, ck = _leaves(_params()), _leaves(_params())
    _mlp(*plain).pow(2).sum().backward()
    checkpoint(_mlp, *ck, use_reentrant=reentrant).pow(2).sum().backward()
    for a, b in zip(plain, ck):
        np.testing.assert_allclose(b.grad.numpy(), a.grad.numpy(), rtol=1e-12)


@pytest.mark.torch
@BOTH
def test_gradients_equal_torchs(reentrant):
    import torch as real
    from torch.utils.checkpoint import checkpoint as real_checkpoint
    ours, theirs = _leaves(_params(1)), _leaves(_params(1), real)
    checkpoint(_mlp, *ours, use_reentrant=reentrant).pow(2).sum().backward()
    real_checkpoint(_mlp, *theirs, use_reentrant=reentrant).pow(2).sum().backward()
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-10)


@BOTH
def test_the_function_is_rerun_in_backward(reentrant):
    calls = []

    def f(x, w1, w2):
        calls.append(1)
        return _mlp(x, w1, w2)
    y = checkpoint(f, *_leaves(_params()), use_reentrant=reentrant).sum()
    assert len(calls) == 1
    y.backward()
    assert len(calls) == 2


@BOTH
def test_intermediates_are_not_kept(reentrant):
    """Without checkpointing the graph holds the tanh output; with it nothing does."""
    kept = []

    def f(x, w1, w2):
        h = (x @ w1).tanh()
        kept.append(weakref.ref(h))
        return (h @ w2).sum()
    x, w1, w2 = _leaves(_params())
    y_plain = f(x, w1, w2)
    y_ck = checkpoint(f, x, w1, w2, use_reentrant=reentrant)
    gc.collect()
    assert kept[0]() is not None  # the plain graph saved it for tanh's and matmul's vjps
    assert kept[1]() is None
    y_ck.backward()
    y_plain.backward()


def test_non_reentrant_saves_handles_not_tensors():
    """An outer saved-tensor hook sees no tensor from inside the checkpoint."""
    seen = []
    x, w1, w2 = _leaves(_params())
    with torch.autograd.graph.saved_tensors_hooks(lambda t: seen.append(t.shape) or t, lambda t: t):
        checkpoint(_mlp, x, w1, w2, use_reentrant=False).sum().backward()
    assert seen == []
    assert x.grad is not None


@BOTH
def test_dropout_mask_is_replayed(reentrant):
    drop = nn.Dropout(0.5)
    x = torch.ones(50, dtype=torch.float64, requires_grad=True)
    torch.manual_seed(3)
    y = checkpoint(lambda t: drop(t * 2.0), x, use_reentrant=reentrant)
    mask = y.detach().numpy() != 0
    after = torch.rand(4)  # the rerun must not disturb the random stream either
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy() != 0, mask)
    np.testing.assert_allclose(x.grad.numpy()[mask], 4.0)
    torch.manual_seed(3)
    drop(x * 2.0)  # the forward's draws, then the same stream position as `after`
    np.testing.assert_array_equal(torch.rand(4).numpy(), after.numpy())


def test_without_preserve_rng_state_the_mask_is_redrawn():
    drop = nn.Dropout(0.5)
    x = torch.ones(200, dtype=torch.float64, requires_grad=True)
    y = checkpoint(drop, x, use_reentrant=False, preserve_rng_state=False)
    y.sum().backward()
    assert ((x.grad.numpy() != 0) != (y.detach().numpy() != 0)).any()


def test_non_reentrant_takes_keywords_and_nested_inputs():
    x, w1, w2 = _leaves(_params())

    def f(pair, *, scale):
        return _mlp(pair[0], *pair[1]) * scale
    y = checkpoint(f, (x, [w1, w2]), scale=3.0, use_reentrant=False).sum()
    gx, gw = torch.autograd.grad(y, [x, w2])
    rx, rw = torch.autograd.grad((_mlp(x, w1, w2) * 3.0).sum(), [x, w2])
    np.testing.assert_allclose(gx.numpy(), rx.numpy(), rtol=1e-12)
    np.testing.assert_allclose(gw.numpy(), rw.numpy(), rtol=1e-12)


def test_non_reentrant_nested_and_twice_with_retain_graph():
    x, w1, w2 = _leaves(_params())

    def inner(h):
        return h.tanh() * h

    def outer(x):
        return checkpoint(inner, x @ w1, use_reentrant=False) @ w2
    y = checkpoint(outer, x, use_reentrant=False).sum()
    y.backward(retain_graph=True)
    first = x.grad.clone()
    y.backward()
    expected = torch.autograd.grad(inner(x @ w1).matmul(w2).sum(), x)[0]
    np.testing.assert_allclose(first.numpy(), expected.numpy(), rtol=1e-12)
    np.testing.assert_allclose(x.grad.numpy(), 2 * expected.numpy(), rtol=1e-12)


def test_non_reentrant_double_backward():
    x = torch.tensor([0.3, -1.2], dtype=torch.float64, requires_grad=True)
    y = checkpoint(lambda t: t.sin() * t, x, use_reentrant=False).sum()
    (g,) = torch.autograd.grad(y, x, create_graph=True)
    (h,) = torch.autograd.grad(g.sum(), x)
    xn = x.detach().numpy()
    np.testing.assert_allclose(h.numpy(), 2 * np.cos(xn) - xn * np.sin(xn), rtol=1e-12)


def test_rerun_that_saves_differently_is_a_checkpoint_error():
    state = {"n": 0}

    def f(x):
        state["n"] += 1
        return x.exp() if state["n"] == 1 else x.sin().cos()
    x = torch.ones(2, requires_grad=True)
    y = checkpoint(f, x, use_reentrant=False).sum()
    with pytest.raises(CheckpointError, match="A different number of tensors was saved"):
        y.backward()


def test_reentrant_errors():
    x = torch.ones(2, requires_grad=True)
    y = checkpoint(torch.sin, x, use_reentrant=True).sum()
    with pytest.raises(RuntimeError, match=r"use_reentrant=True, torch.utils.checkpoint is incompatible with \.grad\(\)"):
        torch.autograd.grad(y, x)
    with pytest.raises(ValueError, match="Unexpected keyword arguments: scale"):
        checkpoint(torch.sin, x, use_reentrant=True, scale=2)
    with pytest.raises(ValueError, match="`context_fn` or `debug` is only supported when use_reentrant=False"):
        checkpoint(torch.sin, x, use_reentrant=True, debug=True)
    with pytest.warns(UserWarning, match="None of the inputs have requires_grad=True"):
        y = checkpoint(torch.sin, torch.ones(2), use_reentrant=True)
    assert not y.requires_grad


def test_missing_use_reentrant_warns_and_means_true():
    x = torch.ones(2, requires_grad=True)
    with pytest.warns(UserWarning, match="the use_reentrant parameter should be passed explicitly"):
        y = checkpoint(torch.sin, x)
    assert "CheckpointFunction" in type(y.grad_fn).__name__
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        checkpoint(torch.sin, x, use_reentrant=False)


@BOTH
def test_checkpoint_sequential_matches_the_plain_model(reentrant):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 6), nn.Tanh(), nn.Linear(6, 6), nn.ReLU(), nn.Linear(6, 1))
    x = torch.randn(5, 4, requires_grad=True)
    model(x).sum().backward()
    expected = [p.grad.clone() for p in model.parameters()] + [x.grad.clone()]
    model.zero_grad()
    x.grad = None
    checkpoint_sequential(model, 2, x, use_reentrant=reentrant).sum().backward()
    got = [p.grad for p in model.parameters()] + [x.grad]
    for a, b in zip(got, expected):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-6)


def test_checkpoint_sequential_rejects_unknown_keywords():
    with pytest.raises(ValueError, match="Unexpected keyword arguments: foo"):
        checkpoint_sequential([torch.sin], 1, torch.ones(1), use_reentrant=False, foo=1)


def test_reached_through_the_package():
    import tracegrad.utils
    assert torch.utils.checkpoint.checkpoint is checkpoint
    assert tracegrad.utils.checkpoint.checkpoint_sequential is checkpoint_sequential


@BOTH
def test_dropout_is_replayed_on_a_generator_without_readable_state(reentrant, monkeypatch):
    """CuPy's generators cannot report their state: the device is reseeded at the forward
    from its own stream and the rerun reseeds the same way (simulated here on the CPU)."""
    import tracegrad.random as tr
    monkeypatch.setattr(tr, "_readable", lambda ns: False)
    _dropout_replay(reentrant)


def _dropout_replay(reentrant):
    drop = nn.Dropout(0.5)
    x = torch.ones(50, dtype=torch.float64, requires_grad=True)
    y = checkpoint(lambda t: drop(t * 2.0), x, use_reentrant=reentrant)
    mask = y.detach().numpy() != 0
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy() != 0, mask)
    assert 0 < mask.sum() < 50


def test_set_checkpoint_early_stop_is_accepted_and_restored():
    """PyTorch's switch for stopping recomputation early: the gradients do not depend on it."""
    from tracegrad.utils import checkpoint as ckpt
    x = torch.tensor([0.5, 1.5], requires_grad=True)
    with ckpt.set_checkpoint_early_stop(False):
        assert ckpt._early_stop is False
        y = ckpt.checkpoint(lambda a: (a * a).sin(), x, use_reentrant=False)
    assert ckpt._early_stop is True
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.array([0.5, 1.5]) * np.cos(np.array([0.25, 2.25])), rtol=1e-6)
