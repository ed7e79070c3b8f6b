"""tracegrad.scipy.stats against scipy.stats: values (broadcasting, support edges, invalid
parameters), gradients in x and in the parameters through tracegrad.grad in tape and AST
mode against finite differences, second order, eager Tensors, and the refusal to
differentiate the shape parameters of incomplete gamma/beta functions."""
import subprocess
import sys

import numpy as np
import pytest

import tracegrad as tg
from tracegrad.scipy import stats as tgs

from .helpers import MODES, check_grads, check_second_order, loss_of

pytestmark = pytest.mark.scipy

_rng = np.random.default_rng(1515)


def R(*shape):
    return _rng.standard_normal(shape)


def pos(*shape):
    return R(*shape) ** 2 + 1.1


def unit(*shape):
    return _rng.uniform(0.05, 0.95, shape)


def counts(*shape):
    return np.round(R(*shape) ** 2 + 0.2)


# (distribution, method, operands, the operands that take a gradient)
CASES = [
    ("norm", "pdf", (R(4, 3), R(1, 3), pos(4, 1)), (0, 1, 2)),
    ("norm", "logpdf", (R(4), R(4), pos(4)), (0, 1, 2)),
    ("norm", "cdf", (R(4, 3), R(1, 3), pos(4, 1)), (0, 1, 2)),
    ("norm", "logcdf", (R(4), R(4), pos(4)), (0, 1, 2)),
    ("norm", "sf", (R(4), R(4), pos(4)), (0, 1, 2)),
    ("norm", "logsf", (R(4, 3), R(1, 3), pos(4, 1)), (0, 1, 2)),
    ("norm", "ppf", (unit(4), R(4), pos(4)), (0, 1, 2)),
    ("norm", "isf", (unit(4), R(4), pos(4)), (0, 1, 2)),
    ("t", "pdf", (R(4, 3), pos(1, 3) + 1, R(4, 3), pos(4, 1)), (0, 1, 2, 3)),
    ("t", "logpdf", (R(4), pos(4) + 1, R(4), pos(4)), (0, 1, 2, 3)),
    ("t", "cdf", (R(4, 3), pos(1, 3) + 1, R(4, 3), pos(4, 1)), (0, 2, 3)),
    ("t", "logcdf", (R(4), pos(4) + 1, R(4), pos(4)), (0, 2, 3)),
    ("t", "sf", (R(4), pos(4) + 1, R(4), pos(4)), (0, 2, 3)),
    ("beta", "pdf", (unit(4), pos(4), pos(4)), (0, 1, 2)),
    ("beta", "logpdf", (unit(4, 3), pos(1, 3), pos(4, 1)), (0, 1, 2)),
    ("beta", "pdf", (unit(4) + 1, pos(4), pos(4), np.ones(4), 1 + unit(4)), (0, 1, 2, 3, 4)),
    ("beta", "cdf", (unit(4), pos(4), pos(4)), (0,)),
    ("beta", "sf", (unit(4), pos(4), pos(4), 0.1 * unit(4), 1 + unit(4)), (0, 3, 4)),
    ("gamma", "pdf", (pos(4), pos(4)), (0, 1)),
    ("gamma", "logpdf", (pos(4, 3), pos(1, 3), 0.5 * unit(4, 1), pos(4, 1)), (0, 1, 2, 3)),
    ("gamma", "cdf", (pos(4), pos(4), 0.5 * unit(4), pos(4)), (0, 2, 3)),
    ("gamma", "sf", (pos(4), pos(4)), (0,)),
    ("chi2", "pdf", (pos(4), pos(4)), (0, 1)),
    ("chi2", "logpdf", (pos(4), pos(4)), (0, 1)),
    ("chi2", "cdf", (pos(4), pos(4)), (0,)),
    ("poisson", "pmf", (counts(4, 3), pos(4, 1)), (1,)),
    ("poisson", "logpmf", (counts(4), pos(4)), (1,)),
    ("poisson", "cdf", (counts(4, 3), pos(4, 1)), (1,)),
    ("poisson", "sf", (counts(4), pos(4)), (1,)),
]
IDS = [f"{d}.{m}-{k}" for k, (d, m, _, _) in enumerate(CASES)]


def _ours(dist, method):
    return getattr(getattr(tgs, dist), method)


def _scipys(dist, method):
    import scipy.stats
    return getattr(getattr(scipy.stats, dist), method)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_values_match_scipy(case):
    dist, method, args, _ = case
    np.testing.assert_allclose(_ours(dist, method)(*args), _scipys(dist, method)(*args), rtol=1e-10, atol=1e-14)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_gradients_match_finite_differences(case, mode):
    dist, method, args, argnums = case
    out = _scipys(dist, method)(*args)
    loss = loss_of(_ours(dist, method), len(args), np.random.default_rng(7).standard_normal(np.shape(out)))
    check_grads(loss, args, argnums, mode)


SECOND = [k for k, (d, m, _, _) in enumerate(CASES) if m in ("logpdf", "cdf", "logpmf", "ppf")]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("k", SECOND, ids=[IDS[k] for k in SECOND])
def test_second_order(k, mode):
    dist, method, args, argnums = CASES[k]
    out = _scipys(dist, method)(*args)
    loss = loss_of(_ours(dist, method), len(args), np.random.default_rng(8).standard_normal(np.shape(out)))
    for i in argnums:
        check_second_order(loss, args, i, mode)


# -- SciPy's answers at the edges ---------------------------------------------------------------------

EDGES = [
    ("norm", "pdf", (np.array([0.0, 1.0, np.nan]), 0.0, np.array([[1.0], [0.0], [-1.0]]))),
    ("norm", "cdf", (np.array([0.0, 1.0]), 0.0, np.array([[1.0], [-1.0]]))),
    ("norm", "logsf", (np.array([-40.0, 0.0, 40.0]),)),
    ("gamma", "pdf", (np.array([-1.0, 0.0, 0.5]), np.array([[0.5], [1.0], [2.0], [-1.0]]))),
    ("gamma", "logpdf", (np.array([-1.0, 0.0, 0.5]), np.array([[0.5], [1.0], [2.0]]))),
    ("gamma", "cdf", (np.array([-1.0, 0.0, 0.5]), np.array([[0.5], [2.0], [-1.0]]))),
    ("chi2", "pdf", (np.array([0.0, 1.0]), np.array([[1.0], [2.0], [3.0]]))),
    ("beta", "pdf", (np.array([-0.5, 0.0, 0.3, 1.0, 1.5]), np.array([[0.5], [1.0], [2.0]]), 2.0)),
    ("beta", "logpdf", (np.array([-0.5, 0.0, 0.3, 1.0, 1.5]), 1.0, np.array([[0.5], [1.0], [3.0], [0.0]]))),
    ("beta", "cdf", (np.array([-1.0, 0.0, 0.5, 1.0, 2.0]), 2.0, 3.0)),
    ("t", "pdf", (np.array([0.0, 1.0]), np.array([[1.0], [0.0], [-2.0]]))),
    ("t", "cdf", (np.array([-3.0, 0.0, 2.0]), np.array([[1.0], [5.0], [-1.0]]))),
    ("poisson", "pmf", (np.array([-1.0, 0.0, 1.5, 2.0, 3.0]), np.array([[0.0], [2.0], [-1.0]]))),
    ("poisson", "logpmf", (np.array([-1.0, 0.0, 1.5, 2.0]), np.array([[0.0], [2.0]]))),
    ("poisson", "cdf", (np.array([-1.0, 0.0, 1.5, 2.0]), np.array([[0.0], [2.0], [-1.0]]))),
    ("poisson", "sf", (np.array([-1.0, 0.0, 1.5]), np.array([[0.0], [2.0]]))),
]


@pytest.mark.parametrize("case", EDGES, ids=[f"{d}.{m}-{k}" for k, (d, m, _) in enumerate(EDGES)])
def test_edges_match_scipy(case):
    dist, method, args = case
    with np.errstate(all="ignore"):
        np.testing.assert_allclose(_ours(dist, method)(*args), _scipys(dist, method)(*args), rtol=1e-10,
                                   atol=1e-14, equal_nan=True)


def test_scalars_and_lists_as_scipy_takes_them():
    import scipy.stats
    assert np.isclose(tgs.norm.pdf(0.3), scipy.stats.norm.pdf(0.3))
    assert np.isclose(tgs.norm.logpdf(0.3, 1, 2), scipy.stats.norm.logpdf(0.3, 1, 2))
    np.testing.assert_allclose(tgs.t.cdf([0.1, 0.7], 3), scipy.stats.t.cdf([0.1, 0.7], 3))
    np.testing.assert_allclose(tgs.poisson.pmf([0, 1, 2], 1.5), scipy.stats.poisson.pmf([0, 1, 2], 1.5))
    np.testing.assert_allclose(tgs.poisson.cdf([0, 1, 2], 1.5, loc=1), scipy.stats.poisson.cdf([0, 1, 2], 1.5, loc=1))


# -- shape parameters of incomplete gamma/beta functions: refused, never a silent zero ----------------

REFUSED = [
    ("gamma", "cdf", (pos(3), pos(3)), 1),
    ("gamma", "sf", (pos(3), pos(3)), 1),
    ("chi2", "cdf", (pos(3), pos(3)), 1),
    ("beta", "cdf", (unit(3), pos(3), pos(3)), 1),
    ("beta", "cdf", (unit(3), pos(3), pos(3)), 2),
    ("t", "cdf", (R(3), pos(3)), 1),
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", REFUSED, ids=[f"{d}.{m}-{i}" for d, m, _, i in REFUSED])
def test_shape_parameters_of_cdfs_are_refused(case, mode):
    dist, method, args, i = case
    loss = loss_of(_ours(dist, method), len(args), np.ones(3))
    with pytest.raises(NotImplementedError, match="derivative of"):
        tg.grad(loss, argnums=i, mode=mode)(*args)


@pytest.mark.parametrize("mode", MODES)
def test_poisson_cdf_is_a_step_in_k(mode):
    k, mu = counts(4) + 0.3, pos(4)
    grad = tg.grad(loss_of(tgs.poisson.cdf, 2, np.ones(4)), argnums=0, mode=mode)(k, mu)
    np.testing.assert_array_equal(grad, np.zeros(4))


# -- eager Tensors ------------------------------------------------------------------------------------

def test_eager_tensors_give_the_tapes_gradients():
    x, loc, scale = R(5), R(5), pos(5)
    tx, tl, ts = (tg.tensor(a, requires_grad=True) for a in (x, loc, scale))
    out = tgs.t.logpdf(tx, 4.0, tl, ts).sum() + tgs.norm.cdf(tx, tl, ts).sum() + tgs.gamma.logpdf(ts, 2.5).sum()
    out.backward()

    def loss(x, loc, scale):
        return np.sum(tgs.t.logpdf(x, 4.0, loc, scale)) + np.sum(tgs.norm.cdf(x, loc, scale)) + \
            np.sum(tgs.gamma.logpdf(scale, 2.5))
    want = tg.grad(loss, argnums=(0, 1, 2), mode="tape")(x, loc, scale)
    for t, w in zip((tx, tl, ts), want):
        np.testing.assert_allclose(t.grad.numpy(), w, rtol=1e-12)


# -- dirichlet ----------------------------------------------------------------------------------------

ALPHA = _rng.random(4) ** 2 + 1.2
SIMPLEX = _rng.dirichlet(ALPHA, size=3).T  # (K, N): SciPy's layout, components first


def _normalized(fn):
    def f(x, alpha):
        return fn(x / np.sum(x, axis=0), alpha)
    return f


@pytest.mark.parametrize("x", [SIMPLEX[:, 0], SIMPLEX, SIMPLEX[:-1, 0], SIMPLEX[:-1]], ids=["K", "KxN", "K-1", "K-1xN"])
@pytest.mark.parametrize("method", ["pdf", "logpdf"])
def test_dirichlet_values(x, method):
    np.testing.assert_allclose(_ours("dirichlet", method)(x, ALPHA), _scipys("dirichlet", method)(x, ALPHA),
                               rtol=1e-12)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("method", ["pdf", "logpdf"])
def test_dirichlet_gradients(method, mode):
    fn = _normalized(_ours("dirichlet", method))
    for x in (SIMPLEX[:, 0], SIMPLEX):
        loss = loss_of(fn, 2, np.random.default_rng(3).standard_normal(x.shape[1:]))
        check_grads(loss, (x, ALPHA), (0, 1), mode)
        check_second_order(loss, (x, ALPHA), 1, mode)
    loss = loss_of(_ours("dirichlet", method), 2, 1.0)
    check_grads(loss, (SIMPLEX[:-1, 0], ALPHA), (0, 1), mode)  # (the last component is 1 - sum)


@pytest.mark.parametrize("args", [
    (SIMPLEX[:, 0], -ALPHA), (SIMPLEX[:, 0], np.stack([ALPHA, ALPHA])), (SIMPLEX[:2, 0], ALPHA),
    (SIMPLEX[:, 0] * 1.1, ALPHA), (np.array([1.2, -0.2, 0.0, 0.0]), ALPHA),
    (np.array([0.0, 0.5, 0.25, 0.25]), np.array([0.5, 1.0, 1.0, 1.0]))])
def test_dirichlet_refuses_what_scipy_refuses(args):
    with pytest.raises(ValueError):
        _scipys("dirichlet", "logpdf")(*args)
    with pytest.raises(ValueError):
        tgs.dirichlet.logpdf(*args)


def test_rvs_is_scipys_sampler():
    assert tgs.dirichlet.rvs(ALPHA, size=2, random_state=0).shape == (2, 4)
    assert np.shape(tgs.norm.rvs(size=3, random_state=0)) == (3,)


# -- multivariate_normal ------------------------------------------------------------------------------

def _psd(n):
    m = R(n, n)
    return m @ m.T + np.eye(n)


def _sym(c):
    return 0.5 * (c + np.swapaxes(c, -1, -2))


COV = _psd(4)
MVN = [
    (R(4), R(4), COV), (R(5, 4), R(4), COV), (R(2, 3, 4), R(4), COV), (R(1, 4), R(4), COV),
    (R(4), None, COV), (R(4), R(4), pos(4)), (R(4), R(4), 2.5), (R(5), 0.3, 2.0), (0.7, None, 1.0),
    (R(6, 1), R(1), np.array([[1.7]])),
]


@pytest.mark.parametrize("args", MVN, ids=[str(k) for k in range(len(MVN))])
@pytest.mark.parametrize("method", ["pdf", "logpdf"])
@pytest.mark.parametrize("allow_singular", [False, True])
def test_mvn_values(args, method, allow_singular):
    ours = _ours("multivariate_normal", method)(*args, allow_singular=allow_singular)
    theirs = _scipys("multivariate_normal", method)(*args, allow_singular=allow_singular)
    assert np.shape(ours) == np.shape(theirs)
    np.testing.assert_allclose(ours, theirs, rtol=1e-10)


def test_mvn_entropy_values():
    for mean, cov in ((None, COV), (R(4), pos(4)), (None, 3.0), (R(3), np.diag([1.0, 2.0, 0.0]))):
        assert np.isclose(tgs.multivariate_normal.entropy(mean, cov),
                          _scipys("multivariate_normal", "entropy")(mean, cov), rtol=1e-12)


def test_mvn_singular_covariance():
    cov = np.diag([1.0, 2.0, 0.0, 0.0])
    mean = R(4)
    x = np.stack([np.concatenate([R(2), mean[2:]]), R(4)])  # on the support, off it
    for method in ("pdf", "logpdf"):
        np.testing.assert_allclose(tgs.multivariate_normal.__dict__[method](x, mean, cov, allow_singular=True),
                                   _scipys("multivariate_normal", method)(x, mean, cov, allow_singular=True))
    with pytest.raises(np.linalg.LinAlgError):
        tgs.multivariate_normal.logpdf(x, mean, cov)
    with pytest.raises(ValueError, match="positive semidefinite"):
        tgs.multivariate_normal.logpdf(x, mean, -COV, allow_singular=True)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("method", ["pdf", "logpdf"])
@pytest.mark.parametrize("allow_singular", [False, True])
def test_mvn_gradients(method, allow_singular, mode):
    fn = _ours("multivariate_normal", method)

    def f(x, mean, cov):  # (a symmetric parametrisation of cov, as SciPy reads a symmetric matrix)
        return fn(x, mean, _sym(cov), allow_singular=allow_singular)
    for x in (R(4), R(5, 4)):
        loss = loss_of(f, 3, np.random.default_rng(4).standard_normal(x.shape[:-1]))
        check_grads(loss, (x, R(4), COV), (0, 1, 2), mode)
    if method == "logpdf":
        for i in (0, 1, 2):
            check_second_order(loss, (x, R(4), COV), i, mode)


@pytest.mark.parametrize("mode", MODES)
def test_mvn_gradients_with_a_singular_covariance(mode):
    cov = np.diag([1.0, 1.0, 0.0, 0.0])

    def logpdf(x, mean):
        x = np.concatenate([x[:2], mean[2:]])  # (variations on the support only)
        return tgs.multivariate_normal.logpdf(x, mean, cov, allow_singular=True)
    loss = loss_of(logpdf, 2, 1.0)
    check_grads(loss, (R(4), R(4)), (0, 1), mode)


@pytest.mark.parametrize("mode", MODES)
def test_mvn_entropy_gradients(mode):
    def entropy(mean, cov):
        return tgs.multivariate_normal.entropy(mean, _sym(cov))
    loss = loss_of(entropy, 2, 1.0)
    check_grads(loss, (R(4), COV), (1,), mode)
    check_second_order(loss, (R(4), COV), 1, mode)
    np.testing.assert_allclose(tg.grad(loss, argnums=1, mode=mode)(R(4), COV), 0.5 * np.linalg.inv(COV), rtol=1e-10)


def test_mvn_eager_tensors():
    x, mean = tg.tensor(R(3, 4), requires_grad=True), tg.tensor(R(4), requires_grad=True)
    cov = tg.tensor(COV, requires_grad=True)
    tgs.multivariate_normal.logpdf(x, mean, cov).sum().backward()
    want = tg.grad(lambda a, b, c: np.sum(tgs.multivariate_normal.logpdf(a, b, c)), argnums=(0, 1, 2),
                   mode="tape")(x.detach().numpy(), mean.detach().numpy(), COV)
    for t, w in zip((x, mean, cov), want):
        np.testing.assert_allclose(t.grad.numpy(), w, rtol=1e-10)


def test_importing_tracegrad_scipy_does_not_import_scipy():
    code = ("import sys, tracegrad, tracegrad.scipy, tracegrad.scipy.stats, tracegrad.scipy.linalg, "
            "tracegrad.scipy.signal; assert not [m for m in sys.modules if m.split('.')[0] == 'scipy'], "
            "'scipy imported'")
    subprocess.run([sys.executable, "-c", code], check=True)
