"""tracegrad.scipy.integrate.odeint against scipy.integrate.odeint: its values (arguments,
a number as y0, tfirst, solver options, a Jacobian), and its derivatives in y0, t and
args through tracegrad.grad in tape and AST mode against finite differences -- reverse
mode (the adjoint method), forward mode (sensitivities), second order -- and through
eager Tensors."""
import numpy as np
import pytest

import tracegrad as tg
from tracegrad.scipy.integrate import odeint

from .helpers import MODES, numeric_derivative

pytestmark = pytest.mark.scipy
sp_odeint = pytest.importorskip("scipy.integrate").odeint

_rng = np.random.default_rng(5150)
TIGHT = {"rtol": 1e-11, "atol": 1e-11}
EPS = 1e-4  # (a solution is accurate to about its tolerances: smaller steps measure its noise)


def drift(y, t, rate, pull):
    """A nonlinear right-hand side with NumPy calls, a vector and a matrix argument."""
    return -np.sqrt(t) - rate * y + np.tanh(pull @ y) - np.mean((y + 0.5) ** 2)


Y0, T = _rng.normal(size=3), np.array([0.1, 0.3, 0.35, 0.6])
RATE, PULL = _rng.uniform(0.5, 1.5, 3), 0.3 * _rng.normal(size=(3, 3))


def loss(y0, t, rate, pull):
    ys = odeint(drift, y0, t, args=(rate, pull), **TIGHT)
    return np.sum(np.sin(ys) * np.arange(1.0, 4.0))


def test_values_are_scipys():
    np.testing.assert_allclose(odeint(drift, Y0, T, args=(RATE, PULL)), sp_odeint(drift, Y0, T, args=(RATE, PULL)),
                               rtol=1e-12)
    np.testing.assert_allclose(odeint(lambda y, t: -y, 2.0, T), sp_odeint(lambda y, t: -y, 2.0, T), rtol=1e-12)
    np.testing.assert_allclose(odeint(lambda t, y, k: -k * y, Y0, T, args=(2.0,), tfirst=True),
                               sp_odeint(lambda t, y, k: -k * y, Y0, T, args=(2.0,), tfirst=True), rtol=1e-12)
    np.testing.assert_allclose(odeint(drift, Y0, T, args=(RATE, PULL), rtol=1e-4, mxstep=50),
                               sp_odeint(drift, Y0, T, args=(RATE, PULL), rtol=1e-4, mxstep=50), rtol=1e-12)


ARGS = (Y0, T, RATE, PULL)


def _direction(a, seed):
    return np.random.default_rng(seed).normal(size=np.shape(a))


@pytest.mark.parametrize("mode", MODES)
def test_gradients_in_y0_t_and_args(mode):
    grads = tg.grad(loss, argnums=(0, 1, 2, 3), mode=mode)(*ARGS)
    for i, g in enumerate(grads):
        v = _direction(ARGS[i], i)
        np.testing.assert_allclose(np.sum(g * v), numeric_derivative(loss, ARGS, i, v, eps=EPS), rtol=1e-6)


@pytest.mark.parametrize("mode", MODES)
def test_forward_mode(mode):
    v = [_direction(a, 10 + i) for i, a in enumerate(ARGS)]
    _, t = tg.jvp(loss, ARGS, tuple(v), mode=mode)
    numeric = sum(numeric_derivative(loss, ARGS, i, v[i], eps=EPS) for i in range(4))
    np.testing.assert_allclose(t, numeric, rtol=1e-6)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("i,j", [(0, 0), (2, 0), (1, 1)])
def test_second_order(mode, i, j):
    """The gradient in argument j of <gradient in argument i, u>."""
    u = _direction(ARGS[i], 20 + i)
    first = tg.grad(loss, argnums=i, mode=mode)

    def along_u(*a):
        return np.sum(first(*a) * u)
    hv = tg.grad(along_u, argnums=j, mode=mode)(*ARGS)
    v = _direction(ARGS[j], 30 + j)
    np.testing.assert_allclose(np.sum(hv * v), numeric_derivative(along_u, ARGS, j, v, eps=EPS), rtol=1e-5)


def test_a_jacobian_given_to_the_solver_is_not_used_for_the_derivatives():
    def linear(y, t, a):
        return a * y

    def jac(y, t, a):
        return np.diag(a * np.ones_like(y))

    def f(a):
        return np.sum(odeint(linear, Y0, T, args=(a,), Dfun=jac, **TIGHT)[-1])
    a = np.array([-0.5, 0.2, -1.0])
    want = Y0 * (T[-1] - T[0]) * np.exp(a * (T[-1] - T[0]))  # (d/da of y0 exp(a dt))
    for mode in MODES:
        np.testing.assert_allclose(tg.grad(f, mode=mode)(a), want, rtol=1e-8)


def test_eager_tensors():
    y0 = tg.tensor(Y0, requires_grad=True)
    rate = tg.tensor(RATE, requires_grad=True)
    ys = odeint(drift, y0, tg.tensor(T), args=(rate, tg.tensor(PULL)), **TIGHT)
    (ys.sin() * tg.tensor(np.arange(1.0, 4.0))).sum().backward()
    g0, grate = tg.grad(loss, argnums=(0, 2), mode="tape")(Y0, T, RATE, PULL)
    np.testing.assert_allclose(y0.grad.numpy(), g0, rtol=1e-9)
    np.testing.assert_allclose(rate.grad.numpy(), grate, rtol=1e-9)


def test_solver_diagnostics_are_refused():
    with pytest.raises(NotImplementedError, match="full_output"):
        odeint(drift, Y0, T, args=(RATE, PULL), full_output=True)


def test_scipys_own_odeint_in_ast_mode():
    """The AST path differentiates a call of SciPy's own odeint through this one (the tape
    cannot: SciPy's compiled solver takes no tracer)."""
    def plain(y0, rate, pull):
        return np.sum(np.sin(sp_odeint(drift, y0, T, args=(rate, pull), **TIGHT)))

    def ours(y0, rate, pull):
        return np.sum(np.sin(odeint(drift, y0, T, args=(rate, pull), **TIGHT)))
    got = tg.grad(plain, argnums=(0, 1, 2), mode="ast")(Y0, RATE, PULL)
    want = tg.grad(ours, argnums=(0, 1, 2), mode="tape")(Y0, RATE, PULL)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-12)
