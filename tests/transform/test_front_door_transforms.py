"""The staged front door beyond ``grad``: ``vjp`` in every mode, ``jvp``/``vjp`` over
pytrees, ``jacrev``/``jacfwd``/``jacobian(mode=...)``, ``elementwise_grad``, ``hvp``,
gradients with respect to empty containers, and ``pow`` at zero to second order -- each
against hand formulas or finite differences, in tape, AST and auto mode (auto equal to
tape)."""
import numpy as np
import pytest

import tracegrad as tg

from .numeric import numeric

MODES = ["tape", "ast", "auto"]
X = np.array([0.1, 0.5, -1.0])
W = np.arange(6.0).reshape(2, 3) / 5


def layer(x, W):
    return np.tanh(W @ x)


def layer_jacobian(x, W):
    return (1 - np.tanh(W @ x) ** 2)[:, None] * W


def two_outputs(x, y):
    return np.sin(x) * y, x ** 2


@pytest.mark.parametrize("mode", MODES)
def test_vjp_matches_hand_formulas(mode):
    y, ct = np.array([2.0, -1.0, 0.5]), (np.array([1.0, 2.0, 3.0]), np.array([0.5, 0.0, -1.0]))
    out, pull = tg.vjp(two_outputs, X, y, mode=mode)
    np.testing.assert_allclose(out[0], np.sin(X) * y)
    gx, gy = pull(ct)
    np.testing.assert_allclose(gx, np.cos(X) * y * ct[0] + 2 * X * ct[1])
    np.testing.assert_allclose(gy, np.sin(X) * ct[0])


@pytest.mark.parametrize("mode", MODES)
def test_vjp_refuses_mismatched_cotangents(mode):
    _, pull = tg.vjp(layer, X, W, mode=mode)
    with pytest.raises(ValueError, match=r"cotangent of shape \(3,\) for a output of shape \(2,\)"):
        pull(np.ones(3))
    _, pull = tg.vjp(two_outputs, X, X, mode=mode)
    with pytest.raises(ValueError, match="the cotangents have 1 leaves"):
        pull(np.ones(3))


def net(t, s):
    a, b = t
    return a * b + s, [a - b]


T = (np.array([0.1, 0.4]), np.array([2.0, -1.0]))
S = np.array([1.0, 1.0])


@pytest.mark.parametrize("mode", MODES)
def test_jvp_and_vjp_over_pytrees(mode):
    tt, ts = (np.array([1.0, 0.0]), np.array([0.0, 1.0])), np.array([0.5, 0.5])
    (o1, (o2,)), (d1, (d2,)) = tg.jvp(net, (T, S), (tt, ts), mode=mode)
    a, b = T
    np.testing.assert_allclose(d1, tt[0] * b + a * tt[1] + ts)
    np.testing.assert_allclose(d2, tt[0] - tt[1])
    _, pull = tg.vjp(net, T, S, mode=mode)
    (ga, gb), gs = pull((np.ones(2), [2 * np.ones(2)]))
    np.testing.assert_allclose(ga, b + 2)
    np.testing.assert_allclose(gb, a - 2)
    np.testing.assert_allclose(gs, np.ones(2))


@pytest.mark.parametrize("mode", MODES)
def test_jacobians(mode):
    J = layer_jacobian(X, W)
    np.testing.assert_allclose(tg.jacrev(layer, mode=mode)(X, W), J)
    np.testing.assert_allclose(tg.jacfwd(layer, mode=mode)(X, W), J)
    np.testing.assert_allclose(tg.jacobian(layer, mode=mode)(X, W), J)
    jw_rev = tg.jacrev(layer, argnums=1, mode=mode)(X, W)
    jx, jw = tg.jacfwd(layer, argnums=(0, 1), mode=mode)(X, W)
    assert jw_rev.shape == (2, 2, 3)
    np.testing.assert_allclose(jw_rev, jw)
    np.testing.assert_allclose(jx, J)
    eps, fd = 1e-6, np.zeros((2, 2, 3))
    for i in range(2):
        for j in range(3):
            E = np.zeros_like(W)
            E[i, j] = eps
            fd[:, i, j] = (layer(X, W + E) - layer(X, W - E)) / (2 * eps)
    np.testing.assert_allclose(jw, fd, rtol=1e-6, atol=1e-9)


def dict_out(t):
    return {"a": t[0] * t[1], "b": np.exp(t[0])}


@pytest.mark.parametrize("mode", MODES)
def test_jacobian_of_pytrees(mode):
    J = tg.jacrev(dict_out, mode=mode)(T)
    F = tg.jacfwd(dict_out, mode=mode)(T)
    a, b = T
    for jac in (J, F):
        np.testing.assert_allclose(jac["a"][0], np.diag(b))
        np.testing.assert_allclose(jac["a"][1], np.diag(a))
        np.testing.assert_allclose(jac["b"][0], np.diag(np.exp(a)))
        np.testing.assert_allclose(jac["b"][1], np.zeros((2, 2)))


def squares_and_sines(x):
    return np.sum(np.sin(x) * x ** 2)


def squares_and_sines_hessian(x):
    return np.diag(2 * np.sin(x) + 4 * x * np.cos(x) - x ** 2 * np.sin(x))


@pytest.mark.parametrize("mode", MODES)
def test_hessian_and_hvp(mode):
    H, v = squares_and_sines_hessian(X), np.array([1.0, -2.0, 0.5])
    np.testing.assert_allclose(tg.hessian(squares_and_sines, mode=mode)(X), H)
    (hv,) = tg.hvp(squares_and_sines, (X,), (v,), mode=mode)
    np.testing.assert_allclose(hv, H @ v)


def softsign(x):
    return x / (1 + np.abs(x))


@pytest.mark.parametrize("mode", MODES)
def test_elementwise_grad(mode):
    np.testing.assert_allclose(tg.elementwise_grad(softsign, mode=mode)(X), 1 / (1 + np.abs(X)) ** 2)


def uses_only_x(t, x):
    return np.sum(x ** 2)


@pytest.mark.parametrize("mode", MODES)
def test_gradients_of_empty_containers_are_empty(mode):
    assert tg.grad(uses_only_x, mode=mode)((), X) == ()
    g_empty, gx = tg.grad(uses_only_x, argnums=(0, 1), mode=mode)([], X)
    assert g_empty == [] and np.allclose(gx, 2 * X)
    value, g = tg.value_and_grad(uses_only_x, mode=mode)({}, X)
    assert g == {} and np.isclose(value, np.sum(X ** 2))
    assert tg.vjp(uses_only_x, (), X, mode=mode)[1](1.0)[0] == ()


def power_zero_exponent(x):
    return np.power(x, 0.0)


def zero_base(y):
    return np.power(0.0, y)


def int_zero_base(y):
    return 0 ** y


@pytest.mark.parametrize("mode", MODES)
def test_pow_at_zero_to_second_order(mode):
    """x**0 and 0**y are constant (1, and 0 for y > 0): every derivative is 0 -- also at
    the point where a masked-out inf used to make the second one nan (HIPS autograd #116)."""
    for f, points in ((power_zero_exponent, (0.0, 1.5)), (zero_base, (0.0, 0.5)), (int_zero_base, (0.0, 0.5))):
        first = tg.grad(f, mode=mode)
        second = tg.grad(first, mode=mode)
        for p in points:
            assert first(p) == 0.0 and second(p) == 0.0, (f.__name__, p)


def smooth_power(x, y):
    return np.sum(x ** y)


def dx_power_sum(x, y):
    return np.sum(tg.grad(smooth_power, mode="tape")(x, y))


@pytest.mark.parametrize("mode", MODES)
def test_pow_second_order_away_from_zero(mode):
    x, y = np.array([0.5, 1.5, 2.0]), np.array([2.0, -0.5, 0.0])
    np.testing.assert_allclose(tg.grad(dx_power_sum, mode=mode)(x, y), numeric(dx_power_sum, x, y), rtol=1e-5)


A53 = np.arange(15.0).reshape(5, 3) / 7


def through_numpy(x):
    """np.dot is differentiated through the tape inside AST mode (a "generic" call)."""
    return np.tanh(np.dot(A53, x))


@pytest.mark.parametrize("inner", MODES)
@pytest.mark.parametrize("outer", MODES)
def test_transforms_of_a_pullback(inner, outer):
    """A pullback (and a pushforward) differentiated again -- a Gauss-Newton product, as
    HIPS autograd's make_ggnvp builds it. The inner AST pullback's NumPy calls get the
    outer transform's cotangent as a tracer while their own arguments are plain arrays:
    they must still be differentiated (they once gave a silent zero)."""
    x, v = np.array([0.3, -0.2, 0.5]), np.array([1.0, 2.0, -1.0])
    J = (1 - np.tanh(A53 @ x) ** 2)[:, None] * A53
    _, pull = tg.vjp(through_numpy, x, mode=inner)

    def pulled(g):
        return pull(g)[0]
    _, pull2 = tg.vjp(pulled, np.zeros(5), mode=outer)       # the transpose of a pullback
    np.testing.assert_allclose(pull2(v)[0], J @ v, rtol=1e-12)
    _, t = tg.jvp(pulled, (np.zeros(5),), (J @ v,), mode=outer)
    np.testing.assert_allclose(t, J.T @ (J @ v), rtol=1e-12)

    def pushed(t):
        return tg.jvp(through_numpy, (x,), (t,), mode=inner)[1]
    _, pull3 = tg.vjp(pushed, np.zeros(3), mode=outer)        # the transpose of a pushforward
    np.testing.assert_allclose(pull3(np.ones(5))[0], J.T @ np.ones(5), rtol=1e-12)


def noisy(x):
    return x * np.random.rand(3)


@pytest.mark.parametrize("mode", MODES)
def test_vjp_runs_the_function_once(mode):
    """The value vjp returns and every pullback come from one run: a function drawing
    random numbers is pulled back through the draws its value used, and the generator
    moves as for one call (the AST path's pullback runs the function again, from the
    generator states the first run started from, and puts them back afterwards)."""
    np.random.seed(0)
    r, after = np.random.rand(3), np.random.rand()
    np.random.seed(0)
    out, pull = tg.vjp(noisy, np.ones(3), mode=mode)
    np.testing.assert_allclose(out, r)
    np.testing.assert_allclose(pull(np.ones(3))[0], r)
    np.testing.assert_allclose(pull(np.full(3, 2.0))[0], 2 * r)
    assert np.random.rand() == after


def test_ast_pullbacks_leave_the_callers_random_stream_alone():
    np.random.seed(0)
    out, pull = tg.vjp(noisy, np.ones(3), mode="ast")
    between = np.random.rand()
    g = pull(np.ones(3))[0]
    later = np.random.rand()
    expected = np.random.RandomState(0).rand(5)
    np.testing.assert_allclose(out, expected[:3])
    np.testing.assert_allclose(g, expected[:3])
    assert (between, later) == (expected[3], expected[4])


def _draws_unless_cached(x):
    _DRAWN.append(1)
    return x * np.random.rand(3) if len(_DRAWN) == 1 else x * 2.0


_DRAWN = []


def test_an_ast_pullback_drawing_other_numbers_is_refused():
    """A run repeated for the pullback that does not draw what the first run drew (here:
    code that draws only the first time) is refused, never pulled back through other
    numbers."""
    _DRAWN.clear()
    _, pull = tg.vjp(_draws_unless_cached, np.ones(3), mode="ast")
    with pytest.raises(tg.TransformError, match="drew other"):
        pull(np.ones(3))


def test_a_random_pullback_differentiated_later_is_refused():
    _, pull = tg.vjp(noisy, np.ones(3), mode="tape")
    with pytest.raises(tg.TracerError, match="draws random numbers"):
        tg.grad(lambda g: np.sum(pull(g)[0]), mode="tape")(np.ones(3))


@pytest.mark.parametrize("mode", MODES)
def test_jacobian_refuses_complex_outputs(mode):
    """A complex output of a non-holomorphic function has no Jacobian over the reals a
    user could mean: every mode refuses it (JAX's message), none drops the imaginary part."""
    def phase(x):
        return np.exp(1j * x)
    for jac in (tg.jacobian, tg.jacrev, tg.jacfwd):
        with pytest.raises(TypeError, match="requires real-valued outputs"):
            jac(phase, mode=mode)(np.array([0.3, 1.1]))
    np.testing.assert_allclose(tg.jacobian(phase, mode=mode, holomorphic=True)(np.array([0.3, 1.1]) + 0j),
                               np.diag(1j * np.exp(1j * np.array([0.3, 1.1]))))


@pytest.mark.parametrize("mode", MODES)
def test_jvp_refuses_a_complex_tangent_for_a_real_primal(mode):
    with pytest.raises(TypeError, match="a real primal takes real tangents"):
        tg.jvp(np.sin, (np.ones(2),), (1j * np.ones(2),), mode=mode)


# -- JAX's layout of Jacobians and Hessians over several outputs and arguments -----------------

def mixed(x, y):
    return np.sum(np.sin(x) * y[:3] ** 2) + np.sum(x ** 3) * np.sum(y)


def outputs_pair(x, y):
    return np.sin(x) * y[:3], np.sum(x) * y


def by_parts(t):
    return np.sum(t[0] ** 2 * np.cos(t[1]))


def by_keys(d):
    return np.sum(d["u"] ** 2 * np.cos(d["v"]))


XY = (np.array([0.3, -0.7, 1.2]), np.array([0.5, 1.5, -0.4, 2.0]))


def _fd_jac(f, args, n, out_index=None):
    """d f(args)[out_index] / d args[n] by central differences: out.shape + arg.shape."""
    def at(a):
        full = list(args)
        full[n] = a
        out = f(*full)
        return np.asarray(out if out_index is None else out[out_index], dtype=float)
    x = args[n]
    cols = []
    for k in range(x.size):
        e = np.zeros_like(x)
        e.flat[k] = 1e-6
        cols.append((at(x + e) - at(x - e)) / 2e-6)
    return np.moveaxis(np.array(cols).reshape(x.shape + at(x).shape), list(range(x.ndim)),
                       list(range(-x.ndim, 0)))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("transform", ["jacobian", "jacrev", "jacfwd"])
def test_jacobians_of_several_outputs_and_arguments(transform, mode):
    # J[out][arg] (output structure outside, argnums inside), each out.shape + arg.shape;
    # the tape's jacobian once gave zeros for a tuple output
    J = getattr(tg, transform)(outputs_pair, argnums=(0, 1), mode=mode)(*XY)
    assert isinstance(J, tuple) and len(J) == 2 and all(isinstance(j, tuple) and len(j) == 2 for j in J)
    for i in range(2):
        for n in range(2):
            np.testing.assert_allclose(J[i][n], _fd_jac(outputs_pair, XY, n, i), rtol=1e-6, atol=1e-8)
    J0 = getattr(tg, transform)(outputs_pair, argnums=0, mode=mode)(*XY)
    for i in range(2):
        np.testing.assert_allclose(J0[i], _fd_jac(outputs_pair, XY, 0, i), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("mode", MODES)
def test_hessian_blocks_are_laid_out_as_jax(mode):
    # H[i][j] = d2f / dx_i dx_j, shaped x_i.shape + x_j.shape
    H = tg.hessian(mixed, argnums=(0, 1), mode=mode)(*XY)
    grads = [lambda x, y, n=n: tg.grad(mixed, argnums=n, mode="tape")(x, y) for n in range(2)]
    for i in range(2):
        for j in range(2):
            assert H[i][j].shape == XY[i].shape + XY[j].shape
            np.testing.assert_allclose(H[i][j], _fd_jac(grads[i], XY, j), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("mode", MODES)
def test_hessian_of_a_tuple_or_dict_argument(mode):
    u, v = np.array([0.3, -0.7]), np.array([1.1, 0.2])
    H = tg.hessian(by_parts, mode=mode)((u, v))
    np.testing.assert_allclose(H[0][0], np.diag(2 * np.cos(v)), rtol=1e-12)
    np.testing.assert_allclose(H[0][1], np.diag(-2 * u * np.sin(v)), rtol=1e-12)
    np.testing.assert_allclose(H[1][1], np.diag(-u ** 2 * np.cos(v)), rtol=1e-12)
    D = tg.hessian(by_keys, mode=mode)({"u": u, "v": v})
    np.testing.assert_allclose(D["u"]["v"], np.diag(-2 * u * np.sin(v)), rtol=1e-12)
    np.testing.assert_allclose(D["v"]["v"], np.diag(-u ** 2 * np.cos(v)), rtol=1e-12)
