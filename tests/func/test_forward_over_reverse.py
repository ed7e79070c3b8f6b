"""torch.func's forward transforms composed with its reverse ones: every Hessian spelling
(jacfwd(jacrev), jacfwd(grad), jacfwd(jacfwd), jvp(grad)...) gives the Hessian of
jacrev(jacrev), results of the outermost transform carry no graph, and torch.func agrees."""
import numpy as np
import pytest

import tracegrad as tg
from tracegrad.func import grad, jacfwd, jacrev, jvp, vjp

RNG = np.random.default_rng(5)
X = RNG.standard_normal(4)
W = RNG.standard_normal((3, 4))
ONES = np.ones(4)


def f(lib, v, w):
    return (w @ v.sin()).tanh().sum() * v.cos().sum()


def _t(a):
    return tg.tensor(a)


def hessian_ref(argnums=0):
    return jacrev(jacrev(lambda v, w: f(tg, v, w), argnums=argnums), argnums=argnums)(_t(X), _t(W))


SPELLINGS = {
    "jacfwd(jacrev)": lambda g: jacfwd(jacrev(g)),
    "jacfwd(grad)": lambda g: jacfwd(grad(g)),
    "jacfwd(jacfwd)": lambda g: jacfwd(jacfwd(g)),
    "jacrev(jacfwd)": lambda g: jacrev(jacfwd(g)),
}


@pytest.mark.parametrize("name", list(SPELLINGS))
def test_every_hessian_spelling_gives_the_hessian(name):
    h = SPELLINGS[name](lambda v, w: f(tg, v, w))(_t(X), _t(W))
    np.testing.assert_allclose(h.numpy(), hessian_ref().numpy(), rtol=1e-12, atol=1e-12)
    assert not h.requires_grad and h.grad_fn is None


def test_hessian_with_respect_to_a_matrix_argument():
    g = lambda v, w: f(tg, v, w)  # noqa: E731
    h = jacfwd(jacfwd(g, argnums=1), argnums=1)(_t(X), _t(W))
    assert tuple(h.shape) == (3, 4, 3, 4)
    np.testing.assert_allclose(h.numpy(), hessian_ref(1).numpy(), rtol=1e-12, atol=1e-12)


def test_hessian_vector_products_forward_over_reverse():
    g = lambda v: f(tg, v, _t(W))  # noqa: E731
    h = hessian_ref().numpy()
    _, hv = jvp(grad(g), (_t(X),), (_t(ONES),))
    np.testing.assert_allclose(hv.numpy(), h @ ONES, rtol=1e-12, atol=1e-12)
    assert not hv.requires_grad
    _, hv2 = jvp(lambda v: vjp(g, v)[1](tg.tensor(1.0, dtype=tg.float64))[0], (_t(X),), (_t(ONES),))
    np.testing.assert_allclose(hv2.numpy(), h @ ONES, rtol=1e-12, atol=1e-12)
    vh = grad(lambda v: jvp(g, (v,), (_t(ONES),))[1])(_t(X))  # reverse over forward
    np.testing.assert_allclose(vh.numpy(), ONES @ h, rtol=1e-12, atol=1e-12)


def test_jvp_of_a_primal_that_requires_grad_stays_differentiable():
    x = _t(X).requires_grad_()
    value, tangent = jvp(lambda v: f(tg, v, _t(W)), (x,), (_t(ONES),))
    assert value.requires_grad and tangent.requires_grad
    (d,) = tg.autograd.grad(tangent, x)  # d/dx (grad f . 1) = H 1
    np.testing.assert_allclose(d.numpy(), hessian_ref().numpy() @ ONES, rtol=1e-10)


@pytest.mark.torch
@pytest.mark.parametrize("name", list(SPELLINGS))
def test_hessian_spellings_match_torch_func(name):
    import torch
    import torch.func as tf
    spell = {"jacfwd(jacrev)": lambda g: tf.jacfwd(tf.jacrev(g)), "jacfwd(grad)": lambda g: tf.jacfwd(tf.grad(g)),
             "jacfwd(jacfwd)": lambda g: tf.jacfwd(tf.jacfwd(g)), "jacrev(jacfwd)": lambda g: tf.jacrev(tf.jacfwd(g))}
    theirs = spell[name](lambda v, w: f(torch, v, w))(torch.tensor(X), torch.tensor(W))
    ours = SPELLINGS[name](lambda v, w: f(tg, v, w))(_t(X), _t(W))
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12, atol=1e-12)
