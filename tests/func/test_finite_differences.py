"""The transforms against central finite differences (float64), without PyTorch: grad,
jacrev, hessian, grad of grad, and vmap(grad) per sample."""
import numpy as np

import tracegrad as tg
from tracegrad.func import grad, hessian, jacrev, vjp, vmap

EPS = 1e-6
RNG = np.random.default_rng(7)


def f(x):
    return (np.tanh(x) * np.roll(x, 1)).sum() + (x ** 3).sum() / 3 if isinstance(x, np.ndarray) else \
        (tg.tanh(x) * tg.roll(x, 1)).sum() + (x ** 3).sum() / 3


def vec_f(x):
    return np.sin(x) * x.sum() if isinstance(x, np.ndarray) else tg.sin(x) * x.sum()


def numeric_jacobian(fn, x):
    cols = []
    for i in range(x.size):
        e = np.zeros_like(x)
        e.flat[i] = EPS
        cols.append((np.asarray(fn(x + e)) - np.asarray(fn(x - e))) / (2 * EPS))
    return np.stack(cols, -1).reshape(np.shape(fn(x)) + x.shape)


def test_grad():
    x = RNG.standard_normal(5)
    np.testing.assert_allclose(grad(f)(tg.tensor(x)).numpy(), numeric_jacobian(f, x), rtol=1e-6, atol=1e-8)


def test_jacrev():
    x = RNG.standard_normal(4)
    np.testing.assert_allclose(jacrev(vec_f)(tg.tensor(x)).numpy(), numeric_jacobian(vec_f, x), rtol=1e-6, atol=1e-8)


def test_hessian_and_grad_of_grad():
    x = RNG.standard_normal(4)
    numeric = numeric_jacobian(lambda v: grad(f)(tg.tensor(v)).numpy(), x)
    np.testing.assert_allclose(hessian(f)(tg.tensor(x)).numpy(), numeric, rtol=1e-5, atol=1e-7)
    gg = grad(lambda v: grad(f)(v).sum())(tg.tensor(x))
    np.testing.assert_allclose(gg.numpy(), numeric.sum(0), rtol=1e-5, atol=1e-7)


def test_vjp():
    x = RNG.standard_normal(4)
    ct = RNG.standard_normal(4)
    out, pull = vjp(vec_f, tg.tensor(x))
    np.testing.assert_allclose(out.numpy(), vec_f(x))
    np.testing.assert_allclose(pull(tg.tensor(ct))[0].numpy(), ct @ numeric_jacobian(vec_f, x), rtol=1e-6, atol=1e-8)


def test_vmap_of_grad_per_sample():
    xs = RNG.standard_normal((3, 5))
    got = vmap(grad(f))(tg.tensor(xs)).numpy()
    for i in range(3):
        np.testing.assert_allclose(got[i], numeric_jacobian(f, xs[i]), rtol=1e-6, atol=1e-8)


def test_vmap_of_hessian_per_sample():
    xs = RNG.standard_normal((2, 3))
    got = vmap(hessian(f))(tg.tensor(xs)).numpy()
    for i in range(2):
        numeric = numeric_jacobian(lambda v: grad(f)(tg.tensor(v)).numpy(), xs[i])
        np.testing.assert_allclose(got[i], numeric, rtol=1e-5, atol=1e-7)
