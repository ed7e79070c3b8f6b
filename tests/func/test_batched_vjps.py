"""vjps with one cotangent per sample: ``vmap`` over ``autograd.grad`` of a graph built
outside the vmap, ``autograd.grad(is_grads_batched=True)``, and jacrev's vmapped rows (and
its row-by-row pass for chunk_size=1 or where a batching rule is missing)."""
import numpy as np
import pytest

import tracegrad as tg
from tracegrad import func as F

from .test_finite_differences import numeric_jacobian

RNG = np.random.default_rng(5)
W = RNG.standard_normal((5, 4))
B = RNG.standard_normal(5)


def f(lib, x):
    return lib.nn.functional.linear(x, lib.tensor(W), lib.tensor(B)).tanh() * x.sum()


def _f_numpy(x):
    return f(tg, tg.tensor(x)).numpy()


def _graph(x):
    xt = tg.tensor(x, requires_grad=True)
    return xt, f(tg, xt)


def test_vmap_over_grad_of_an_outer_graph_takes_each_samples_cotangent():
    # Each row of the result is the vjp of its own cotangent (each row was the first
    # sample's before: the engine read the batched cotangent's array, one sample only).
    x = RNG.standard_normal(4)
    xt, out = _graph(x)
    cotangents = tg.tensor(RNG.standard_normal((3, 5)))
    rows = F.vmap(lambda v: tg.autograd.grad(out, xt, v, retain_graph=True)[0])(cotangents)
    jac = numeric_jacobian(_f_numpy, x)
    np.testing.assert_allclose(rows.numpy(), cotangents.numpy() @ jac, rtol=1e-6, atol=1e-8)
    assert not rows.requires_grad


def test_is_grads_batched():
    x = RNG.standard_normal(4)
    xt, out = _graph(x)
    (rows,) = tg.autograd.grad(out, xt, tg.eye(5, dtype=tg.float64), is_grads_batched=True, retain_graph=True)
    np.testing.assert_allclose(rows.numpy(), numeric_jacobian(_f_numpy, x), rtol=1e-6, atol=1e-8)
    with pytest.raises(RuntimeError, match="we interpret the first dimension of each grad_output as the batch"):
        tg.autograd.grad(out, xt, tg.ones(5, dtype=tg.float64), is_grads_batched=True, retain_graph=True)
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar outputs"):
        tg.autograd.grad(out, xt, None, is_grads_batched=True)


def test_backward_with_batched_grad_tensors_is_refused_in_vmap():
    xt, out = _graph(RNG.standard_normal(4))
    with pytest.raises(RuntimeError, match="backward"):
        F.vmap(lambda v: out.backward(v, retain_graph=True))(tg.ones(2, 5, dtype=tg.float64))
    assert xt.grad is None


@pytest.mark.parametrize("chunk_size", [None, 1, 2, 3, 7])
def test_jacrev_in_chunks(chunk_size):
    x = RNG.standard_normal(4)
    jac = F.jacrev(lambda v: f(tg, v), chunk_size=chunk_size)(tg.tensor(x))
    np.testing.assert_allclose(jac.numpy(), numeric_jacobian(_f_numpy, x), rtol=1e-6, atol=1e-8)


def test_jacrev_of_a_function_whose_vjp_has_no_batching_rule(monkeypatch):
    from tracegrad.func import _vmap

    def refuse(*args, **kwargs):
        raise RuntimeError("vmap: no batching rule")
    monkeypatch.setattr(_vmap, "vmap", refuse)  # every batched pass fails: rows one by one
    x = RNG.standard_normal(4)
    jac = F.jacrev(lambda v: f(tg, v))(tg.tensor(x))
    np.testing.assert_allclose(jac.numpy(), numeric_jacobian(_f_numpy, x), rtol=1e-6, atol=1e-8)


@pytest.mark.torch
def test_jacrev_and_hessian_against_torch():
    torch = pytest.importorskip("torch")
    x = RNG.standard_normal(4)
    ours = F.jacrev(lambda v: f(tg, v))(tg.tensor(x)).numpy()
    theirs = torch.func.jacrev(lambda v: f(torch, v))(torch.tensor(x)).numpy()
    np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-12)
    ours = F.hessian(lambda v: f(tg, v).sum())(tg.tensor(x)).numpy()
    theirs = torch.func.hessian(lambda v: f(torch, v).sum())(torch.tensor(x)).numpy()
    np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-12)
