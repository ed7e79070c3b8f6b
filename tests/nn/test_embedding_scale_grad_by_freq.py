"""``embedding(..., scale_grad_by_freq=True)``: each row's gradient divided by how often the
indices pick it -- first order, with ``create_graph``, under ``vmap`` (each sample's own
counts), compiled, and the ``padding_idx`` row still zero."""
import warnings

import numpy as np
import pytest

import tracegrad as tg

F = tg.nn.functional
W = np.arange(40, dtype=np.float64).reshape(10, 4) / 10
IDX = np.array([[1, 1, 2], [3, 3, 3]])
G = np.random.default_rng(0).standard_normal((2, 3, 4))


def _want(idx, g, padding_idx=None):
    dw = np.zeros_like(W)
    np.add.at(dw, idx.reshape(-1), g.reshape(-1, 4))
    counts = np.bincount(idx.reshape(-1), minlength=10)
    dw /= np.maximum(counts, 1)[:, None]
    if padding_idx is not None:
        dw[padding_idx] = 0
    return dw


def test_each_rows_gradient_is_divided_by_its_count():
    w = tg.tensor(W, requires_grad=True)
    out = F.embedding(tg.tensor(IDX), w, scale_grad_by_freq=True)
    assert out.grad_fn._saved_scale_grad_by_freq is True
    out.backward(tg.tensor(G))
    np.testing.assert_allclose(w.grad.numpy(), _want(IDX, G), rtol=1e-15)
    (dw,) = tg.autograd.grad(F.embedding(tg.tensor(IDX), w, padding_idx=3, scale_grad_by_freq=True), w,
                             tg.tensor(G), create_graph=True)
    np.testing.assert_allclose(dw.detach().numpy(), _want(IDX, G, padding_idx=3), rtol=1e-15)
    e = tg.nn.Embedding(10, 4, scale_grad_by_freq=True)
    with tg.no_grad():
        e.weight.copy_(tg.tensor(W, dtype=tg.float32))
    e(tg.tensor(IDX)).sum().backward()
    np.testing.assert_allclose(e.weight.grad.numpy(), _want(IDX, np.ones_like(G)), rtol=1e-6)


def test_under_vmap_each_sample_counts_its_own_indices():
    per_sample = tg.func.vmap(tg.func.grad(lambda w, i: (F.embedding(i, w, scale_grad_by_freq=True) * tg.tensor(G[0])).sum()),
                              in_dims=(None, 0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (a loop over the samples: vmap says so once per process)
        got = per_sample(tg.tensor(W), tg.tensor(IDX))
    for k in range(2):
        np.testing.assert_allclose(got[k].numpy(), _want(IDX[k:k + 1], G[:1]), rtol=1e-15)


def test_compiled_equals_eager():
    model = tg.nn.Embedding(10, 4, scale_grad_by_freq=True)
    with tg.no_grad():
        model.weight.copy_(tg.tensor(W, dtype=tg.float32))
    compiled = tg.compile(model)
    for _ in range(3):
        model.weight.grad = None
        compiled(tg.tensor(IDX)).sum().backward()
    np.testing.assert_allclose(model.weight.grad.numpy(), _want(IDX, np.ones_like(G)), rtol=1e-6)


def test_sparse_gradients_are_refused_by_name():
    with pytest.raises(NotImplementedError, match="sparse gradients are not supported"):
        F.embedding(tg.tensor(IDX), tg.tensor(W, requires_grad=True), sparse=True)


@pytest.mark.torch
def test_as_in_pytorch():
    import torch
    w = torch.tensor(W, requires_grad=True)
    torch.nn.functional.embedding(torch.tensor(IDX), w, padding_idx=2, scale_grad_by_freq=True).backward(torch.tensor(G))
    ours = tg.tensor(W, requires_grad=True)
    F.embedding(tg.tensor(IDX), ours, padding_idx=2, scale_grad_by_freq=True).backward(tg.tensor(G))
    np.testing.assert_allclose(ours.grad.numpy(), w.grad.numpy(), rtol=1e-15)
