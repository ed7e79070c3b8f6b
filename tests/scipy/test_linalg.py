"""tracegrad.scipy.linalg against scipy.linalg: values (batches, vector right-hand sides,
every trans/lower/unit_diagonal form, complex results of sqrtm), gradients in every array
operand through tracegrad.grad in tape and AST mode against finite differences, second
order, and eager Tensors. (The rules themselves are walked by tests/rules/test_table.py
through tests/rules/samples_scipy.py.)"""
import functools

import numpy as np
import pytest

import tracegrad as tg
from tracegrad.scipy import linalg as tgl

from .helpers import MODES, check_grads, check_second_order, loss_of

pytestmark = pytest.mark.scipy

_rng = np.random.default_rng(2020)


def R(*shape):
    return _rng.standard_normal(shape)


def invertible(*shape):
    return R(*shape) + 3 * np.eye(shape[-1])


def spd(*shape):
    m = R(*shape)
    return m @ np.swapaxes(m, -1, -2) + shape[-1] * np.eye(shape[-1])


def positive_spectrum(n):
    p = invertible(n, n)
    return (p * np.arange(1.0, n + 1)) @ np.linalg.inv(p)


def banded(l, u, m):
    ab = 0.5 * R(l + u + 1, m)
    ab[u] += 4.0
    return ab


def _sym(a):
    return 0.5 * (a + np.swapaxes(a, -1, -2))


def sla():
    import scipy.linalg
    return scipy.linalg


# (function name, operands, keyword arguments, the operands that take a gradient)
CASES = [
    ("solve_triangular", (invertible(4, 4), R(4, 2)), {}, (0, 1)),
    ("solve_triangular", (invertible(4, 4), R(4)), {"lower": True}, (0, 1)),
    ("solve_triangular", (invertible(3, 3), R(3, 2)), {"trans": "T"}, (0, 1)),
    ("solve_triangular", (invertible(3, 3), R(3, 2)), {"trans": 2, "lower": True}, (0, 1)),
    ("solve_triangular", (invertible(3, 3), R(3)), {"unit_diagonal": True, "trans": 1}, (0, 1)),
    ("solve_triangular", (invertible(2, 3, 3), R(2, 3, 2)), {"lower": True}, (0, 1)),
    ("solve_triangular", (invertible(2, 3, 3), R(3)), {}, (0, 1)),
    ("solve_banded", ((1, 1), banded(1, 1, 5), R(5)), {}, (1, 2)),
    ("solve_banded", ((2, 1), banded(2, 1, 6), R(6, 3)), {}, (1, 2)),
    ("solve_banded", ((0, 2), banded(0, 2, 4), R(4, 2)), {}, (1, 2)),
    ("solve_sylvester", (invertible(3, 3), invertible(2, 2), R(3, 2)), {}, (0, 1, 2)),
    ("solve_sylvester", (invertible(2, 3, 3), invertible(3, 3), R(3, 3)), {}, (0, 1, 2)),
    ("sqrtm", (positive_spectrum(3),), {}, (0,)),
    ("sqrtm", (spd(2, 3, 3),), {}, (0,)),
    ("expm", (0.5 * R(3, 3),), {}, (0,)),
    ("expm", (0.5 * R(2, 3, 3),), {}, (0,)),
    ("solve", (invertible(3, 3), R(3)), {}, (0, 1)),
    ("solve", (invertible(3, 3), R(3, 2)), {"transposed": True}, (0, 1)),
    ("solve", (invertible(3, 3), R(3, 2)), {"assume_a": "lower triangular"}, (0, 1)),
    ("inv", (invertible(3, 3),), {}, (0,)),
    ("det", (invertible(3, 3),), {}, (0,)),
]
IDS = [f"{name}-{k}" for k, (name, _, _, _) in enumerate(CASES)]


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_values_match_scipy(case):
    name, args, kwargs, _ = case
    ours, theirs = getattr(tgl, name)(*args, **kwargs), getattr(sla(), name)(*args, **kwargs)
    assert np.shape(ours) == np.shape(theirs)
    np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-12)


def _loss(case, seed=5):
    name, args, kwargs, _ = case
    out = getattr(sla(), name)(*args, **kwargs)
    fn = getattr(tgl, name)
    if name == "solve_banded":  # (the band widths are static)
        l_and_u = args[0]

        def fn(_, ab, b, **kw):
            return tgl.solve_banded(l_and_u, ab, b, **kw)
    return loss_of(fn, len(args), np.random.default_rng(seed).standard_normal(np.shape(out)), **kwargs)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_gradients_match_finite_differences(case, mode):
    check_grads(_loss(case), case[1], case[3], mode)


SECOND = [k for k, (name, _, _, _) in enumerate(CASES) if name != "inv" and name != "det"]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("k", SECOND, ids=[IDS[k] for k in SECOND])
def test_second_order(k, mode):
    loss, (_, args, _, argnums) = _loss(CASES[k]), CASES[k]
    for i in argnums:
        check_second_order(loss, args, i, mode)
    if len(argnums) > 1:
        check_second_order(loss, args, argnums[0], mode, j=argnums[-1])


# -- sqrtm's complex roots ----------------------------------------------------------------------------

INDEFINITE = _sym(R(3, 3)) - 0.5 * np.eye(3)  # (symmetric, with negative eigenvalues)


def test_sqrtm_of_a_matrix_with_negative_eigenvalues_is_complex():
    assert np.linalg.eigvalsh(INDEFINITE).min() < 0
    root = tgl.sqrtm(INDEFINITE)
    assert root.dtype == np.complex128
    np.testing.assert_allclose(root, sla().sqrtm(INDEFINITE), rtol=1e-10)
    np.testing.assert_allclose(root @ root, INDEFINITE, atol=1e-10)


@pytest.mark.parametrize("mode", MODES)
def test_sqrtm_gradient_through_a_complex_root(mode):
    w = R(3, 3) + 1j * R(3, 3)

    def loss(a):
        return np.sum(np.real(w * tgl.sqrtm(a)))
    check_grads(loss, (INDEFINITE,), (0,), mode)
    grad = tg.grad(loss, mode=mode)(INDEFINITE)
    assert grad.dtype == np.float64  # (a real operand takes a real gradient)


def test_sqrtm_disp_false_returns_the_error_estimate():
    a = spd(3, 3)
    root, err = tgl.sqrtm(a, disp=False)
    np.testing.assert_allclose(root, sla().sqrtm(a), rtol=1e-10)
    assert err < 1e-12


# -- Cholesky ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("lower", [False, True])
def test_cholesky_and_cho_solve_match_scipy(lower):
    a, b = spd(4, 4), R(4, 2)
    np.testing.assert_allclose(tgl.cholesky(a, lower=lower), sla().cholesky(a, lower=lower), rtol=1e-10)
    c, low = tgl.cho_factor(a, lower=lower)
    assert low == lower
    np.testing.assert_allclose(tgl.cho_solve((c, low), b), sla().cho_solve(sla().cho_factor(a, lower=lower), b),
                               rtol=1e-10)
    np.testing.assert_allclose(tgl.cho_solve((c, low), b[:, 0]), np.linalg.solve(a, b[:, 0]), rtol=1e-10)
    np.testing.assert_allclose(tgl.solve(a, b, assume_a="pos", lower=lower), np.linalg.solve(a, b), rtol=1e-10)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("lower", [False, True])
def test_cho_solve_gradients(lower, mode):
    w = R(4, 2)

    def loss(a, b):  # (a symmetric parametrisation: the factor reads one triangle)
        return np.sum(w * tgl.cho_solve(tgl.cho_factor(_sym(a), lower=lower), b))
    args = (spd(4, 4), R(4, 2))
    check_grads(loss, args, (0, 1), mode)
    check_second_order(loss, args, 0, mode)
    np.testing.assert_allclose(tg.grad(loss, argnums=0, mode=mode)(*args),
                               tg.grad(lambda a, b: np.sum(w * np.linalg.solve(_sym(a), b)), argnums=0,
                                       mode="tape")(*args), rtol=1e-9)


def test_triangular_gradient_stays_on_the_triangle_read():
    a, b = invertible(4, 4), R(4, 2)
    for lower, unit in ((True, False), (False, False), (True, True)):
        solve = functools.partial(tgl.solve_triangular, b=b, lower=lower, unit_diagonal=unit)
        g = tg.grad(lambda a: np.sum(solve(a)), mode="tape")(a)  # noqa: B023 (called at once)
        unread = np.triu(np.ones((4, 4)), 1 - unit) if lower else np.tril(np.ones((4, 4)), -1)
        assert np.all(g[unread.astype(bool)] == 0)


def test_errors_name_the_problem():
    with pytest.raises(ValueError, match="square"):
        tgl.sqrtm(R(2, 3))
    with pytest.raises(ValueError, match="lower and upper diagonals"):
        tgl.solve_banded((1, 1), banded(1, 0, 4), R(4))
    with pytest.raises(ValueError, match="trans"):
        tgl.solve_triangular(invertible(3, 3), R(3), trans="X")


def test_eager_tensors():
    a, b = tg.tensor(invertible(3, 3), requires_grad=True), tg.tensor(R(3, 2), requires_grad=True)
    s = tg.tensor(positive_spectrum(3), requires_grad=True)
    out = tgl.solve_triangular(a, b, lower=True).sum() + tgl.sqrtm(s).sum() + tgl.expm(0.1 * s).sum()
    out.backward()

    def loss(a, b, s):
        return (np.sum(tgl.solve_triangular(a, b, lower=True)) + np.sum(tgl.sqrtm(s)) +
                np.sum(tgl.expm(0.1 * s)))
    want = tg.grad(loss, argnums=(0, 1, 2), mode="tape")(*(t.detach().numpy() for t in (a, b, s)))
    for t, w in zip((a, b, s), want):
        np.testing.assert_allclose(t.grad.numpy(), w, rtol=1e-10)
