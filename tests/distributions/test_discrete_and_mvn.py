"""MultivariateNormal, LowRankMultivariateNormal, OneHotCategorical(StraightThrough),
Multinomial, Binomial, Geometric, Poisson and NegativeBinomial: values against hand
formulas and SciPy, gradients against finite differences, draws by their moments,
validation errors, ``expand``, KL divergences (closed forms against sums and Monte Carlo),
then PyTorch itself as an oracle on the same parameters."""
import math
import re

import numpy as np
import pytest

import tracegrad as tg
from tracegrad.distributions import kl_divergence
from tracegrad.distributions.bernoulli import Bernoulli
from tracegrad.distributions.binomial import Binomial
from tracegrad.distributions.geometric import Geometric
from tracegrad.distributions.lowrank_multivariate_normal import LowRankMultivariateNormal
from tracegrad.distributions.multinomial import Multinomial
from tracegrad.distributions.multivariate_normal import MultivariateNormal
from tracegrad.distributions.negative_binomial import NegativeBinomial
from tracegrad.distributions.one_hot_categorical import OneHotCategorical, OneHotCategoricalStraightThrough
from tracegrad.distributions.poisson import Poisson

from ._helpers import F64, npy, raised, spd, t64

needs_scipy = pytest.mark.scipy  # (lgamma's kernel is SciPy's; conftest skips these without it)


@pytest.fixture
def stats():
    return pytest.importorskip("scipy.stats")


RNG = np.random.default_rng(1)
LOC, COV = RNG.normal(size=(2, 3)), spd(RNG, (2,), 3)
W, DIAG = RNG.normal(size=(2, 3, 2)), RNG.uniform(0.5, 2.0, size=(2, 3))
X = RNG.normal(size=(4, 2, 3))


# -- MultivariateNormal ----------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["covariance_matrix", "precision_matrix", "scale_tril"])
def test_mvn_log_prob_entropy_and_matrices_match_scipy(stats, kind):
    given = {"covariance_matrix": COV, "precision_matrix": np.linalg.inv(COV),
             "scale_tril": np.linalg.cholesky(COV)}[kind]
    d = MultivariateNormal(t64(LOC), **{kind: t64(given)})
    assert d.batch_shape == (2,) and d.event_shape == (3,)
    want = np.stack([stats.multivariate_normal(LOC[b], COV[b]).logpdf(X[:, b]) for b in range(2)], -1)
    np.testing.assert_allclose(npy(d.log_prob(t64(X))), want, rtol=1e-10)
    np.testing.assert_allclose(npy(d.entropy()), [stats.multivariate_normal(LOC[b], COV[b]).entropy()
                                                  for b in range(2)], rtol=1e-10)
    np.testing.assert_allclose(npy(d.covariance_matrix), COV, rtol=1e-10)
    np.testing.assert_allclose(npy(d.precision_matrix), np.linalg.inv(COV), rtol=1e-9)
    np.testing.assert_allclose(npy(d.scale_tril), np.linalg.cholesky(COV), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(npy(d.variance), np.diagonal(COV, axis1=-2, axis2=-1), rtol=1e-10)
    assert d.mean is d.loc and d.mode is d.loc


def test_mvn_mahalanobis_broadcasts_matrices_against_values():
    """Matrices with size-1 batch dims, values with extra leading dims: each pair agrees
    with its own unbatched density."""
    L = np.linalg.cholesky(spd(RNG, (2, 1), 3))  # batch (2, 1)
    loc = RNG.normal(size=(4, 3))                 # batch (4,) -> (2, 4)
    x = RNG.normal(size=(5, 1, 4, 3))
    d = MultivariateNormal(t64(loc), scale_tril=t64(L))
    assert d.batch_shape == (2, 4)
    got = npy(d.log_prob(t64(x)))
    assert got.shape == (5, 2, 4)
    for s in range(5):
        for i in range(2):
            for j in range(4):
                one = MultivariateNormal(t64(loc[j]), scale_tril=t64(L[i, 0])).log_prob(t64(x[s, 0, j]))
                assert got[s, i, j] == pytest.approx(float(one), rel=1e-12)


def test_mvn_log_prob_and_rsample_gradients_match_finite_differences():
    x, loc, L = t64(X), t64(LOC, True), t64(np.linalg.cholesky(COV), True)

    def spd_of(a):
        return a @ a.mT + tg.eye(3, dtype=F64)

    def draw(loc, L):
        tg.manual_seed(3)  # (the same noise at every evaluation)
        return MultivariateNormal(loc, scale_tril=L, validate_args=False).rsample((2,))
    assert tg.autograd.gradcheck(lambda loc, a: MultivariateNormal(loc, spd_of(a)).log_prob(x), (loc, L))
    assert tg.autograd.gradcheck(lambda a: MultivariateNormal(t64(LOC), precision_matrix=spd_of(a)).entropy(), (L,))
    assert tg.autograd.gradcheck(lambda loc, L: MultivariateNormal(loc, scale_tril=L, validate_args=False)
                                 .log_prob(x), (loc, L))
    assert tg.autograd.gradcheck(draw, (loc, L))


@pytest.mark.parametrize("dtype", [tg.float32, tg.float64])
def test_mvn_samples_have_the_moments(dtype):
    tg.manual_seed(0)
    d = MultivariateNormal(tg.tensor(LOC, dtype=dtype), tg.tensor(COV, dtype=dtype))
    x = d.sample((40000,))
    assert x.shape == (40000, 2, 3) and x.dtype == dtype and not x.requires_grad
    xs = npy(x).astype(np.float64)
    np.testing.assert_allclose(xs.mean(0), LOC, atol=0.06)
    cov = np.einsum("sbi,sbj->bij", xs - LOC, xs - LOC) / len(xs)
    np.testing.assert_allclose(cov, COV, atol=0.15 * np.abs(COV).max())


def test_mvn_validation_errors():
    loc, cov = t64(LOC[0]), t64(COV[0])
    cases = [((t64(1.0), cov), {}, "loc must be at least one-dimensional."),
             ((loc,), {}, "Exactly one of covariance_matrix or precision_matrix or scale_tril may be specified."),
             ((loc, cov), {"scale_tril": cov}, "Exactly one of"),
             ((loc, t64([1.0, 2.0, 3.0])), {}, "covariance_matrix must be at least two-dimensional, with optional"),
             ((loc,), {"scale_tril": t64([1.0])}, "scale_tril matrix must be at least two-dimensional"),
             ((loc,), {"precision_matrix": t64(1.0)}, "precision_matrix must be at least two-dimensional"),
             ((loc, -cov), {}, "to satisfy the constraint PositiveDefinite()"),
             ((loc,), {"scale_tril": cov}, "to satisfy the constraint LowerCholesky()")]
    for args, kwargs, message in cases:
        with pytest.raises(ValueError, match=re.escape(message)):
            MultivariateNormal(*args, **kwargs)
    with pytest.raises(ValueError, match="The right-most size of value must match event_shape"):
        MultivariateNormal(loc, cov).log_prob(t64([1.0, 2.0]))


def test_mvn_expand_shares_the_factor():
    d = MultivariateNormal(t64(LOC[0]), t64(COV[0]))
    e = d.expand((4, 2))
    assert type(e) is MultivariateNormal and e.batch_shape == (4, 2) and e.event_shape == (3,)
    assert e._unbroadcasted_scale_tril is d._unbroadcasted_scale_tril
    assert e.covariance_matrix.shape == (4, 2, 3, 3) and e.loc.shape == (4, 2, 3)
    assert e._validate_args == d._validate_args
    np.testing.assert_allclose(npy(e.log_prob(t64(X))), npy(d.log_prob(t64(X))), rtol=1e-12)
    assert e.entropy().shape == (4, 2) and e.rsample((5,)).shape == (5, 4, 2, 3)


def _kl_gauss(m0, S0, m1, S1):
    inv1 = np.linalg.inv(S1)
    dm = m1 - m0
    return 0.5 * (np.trace(inv1 @ S0) + dm @ inv1 @ dm - len(m0) + np.log(np.linalg.det(S1) / np.linalg.det(S0)))


def test_mvn_kl_closed_form_and_monte_carlo():
    p = MultivariateNormal(t64(LOC), t64(COV))
    q = MultivariateNormal(t64(LOC[::-1].copy()), scale_tril=t64(np.linalg.cholesky(COV[::-1])))
    kl = npy(kl_divergence(p, q))
    np.testing.assert_allclose(kl, [_kl_gauss(LOC[b], COV[b], LOC[1 - b], COV[1 - b]) for b in range(2)], rtol=1e-10)
    tg.manual_seed(1)
    x = p.sample((100000,))
    np.testing.assert_allclose(npy((p.log_prob(x) - q.log_prob(x)).mean(0)), kl, rtol=0.03)
    with pytest.raises(ValueError, match="different event shapes"):
        kl_divergence(p, MultivariateNormal(tg.zeros(2, dtype=F64), tg.eye(2, dtype=F64)))


# -- LowRankMultivariateNormal ---------------------------------------------------------------------

def _lowrank(i=slice(None)):
    return LowRankMultivariateNormal(t64(LOC[i]), t64(W[i]), t64(DIAG[i]))


def _dense_cov(i=slice(None)):
    return W[i] @ np.swapaxes(W[i], -1, -2) + DIAG[i][..., None] * np.eye(3)


def test_lowrank_equals_the_dense_normal():
    d, full = _lowrank(), MultivariateNormal(t64(LOC), t64(_dense_cov()))
    np.testing.assert_allclose(npy(d.log_prob(t64(X))), npy(full.log_prob(t64(X))), rtol=1e-10)
    np.testing.assert_allclose(npy(d.entropy()), npy(full.entropy()), rtol=1e-10)
    for name in ("covariance_matrix", "precision_matrix", "scale_tril", "variance"):
        np.testing.assert_allclose(npy(getattr(d, name)), npy(getattr(full, name)), rtol=1e-9, atol=1e-12)


def test_lowrank_gradients_and_rsample():
    x = t64(X)
    assert tg.autograd.gradcheck(lambda loc, w, dg: LowRankMultivariateNormal(loc, w, dg).log_prob(x),
                                 (t64(LOC, True), t64(W, True), t64(DIAG, True)))

    def draw(loc, w, dg):
        tg.manual_seed(5)
        return LowRankMultivariateNormal(loc, w, dg).rsample((3,))
    assert tg.autograd.gradcheck(draw, (t64(LOC, True), t64(W, True), t64(DIAG, True)))
    tg.manual_seed(0)
    xs = npy(_lowrank().sample((40000,)))
    np.testing.assert_allclose(xs.mean(0), LOC, atol=0.06)
    np.testing.assert_allclose(np.einsum("sbi,sbj->bij", xs - LOC, xs - LOC) / len(xs), _dense_cov(), atol=0.15)


def test_lowrank_validation_and_expand():
    loc, w, dg = t64(LOC[0]), t64(W[0]), t64(DIAG[0])
    for args, message in [((t64(1.0), w, dg), "loc must be at least one-dimensional."),
                          ((loc, dg, dg), "cov_factor must be at least two-dimensional"),
                          ((loc, t64(W[0, :2]), dg), "cov_factor must be a batch of matrices with shape 3 x m"),
                          ((loc, w, dg[:2]), r"cov_diag must be a batch of vectors with shape"),
                          ((t64(np.zeros((4, 3))), t64(W), dg), "Incompatible batch shapes"),
                          ((loc, w, -dg), r"parameter cov_diag .* IndependentConstraint\(GreaterThan")]:
        with pytest.raises(ValueError, match=message):
            LowRankMultivariateNormal(*args)
    e = _lowrank(0).expand((5,))
    assert e.batch_shape == (5,) and e.cov_factor.shape == (5, 3, 2) and e.cov_diag.shape == (5, 3)
    assert e._capacitance_tril is not None and e.log_prob(t64(X[:, :1])).shape == (4, 5)


def test_lowrank_kl_pairs_equal_the_dense_kl():
    p, q = _lowrank(), _lowrank(slice(None, None, -1))
    dp, dq = (MultivariateNormal(d.loc, d.covariance_matrix) for d in (p, q))
    want = npy(kl_divergence(dp, dq))
    np.testing.assert_allclose(want, [_kl_gauss(LOC[b], _dense_cov()[b], LOC[1 - b], _dense_cov()[1 - b])
                                      for b in range(2)], rtol=1e-10)
    for a, b in [(p, q), (dp, q), (p, dq)]:
        np.testing.assert_allclose(npy(kl_divergence(a, b)), want, rtol=1e-9)


# -- OneHotCategorical -----------------------------------------------------------------------------

PROBS = np.array([[0.1, 0.2, 0.3, 0.4], [0.25, 0.25, 0.45, 0.05]])


def test_one_hot_categorical_values():
    d = OneHotCategorical(t64(PROBS * 3))  # (normalized)
    assert d.batch_shape == (2,) and d.event_shape == (4,)
    v = np.eye(4)[[3, 1]]
    np.testing.assert_allclose(npy(d.log_prob(t64(v))), np.log([0.4, 0.25]), rtol=1e-12)
    np.testing.assert_allclose(npy(d.entropy()), -(PROBS * np.log(PROBS)).sum(-1), rtol=1e-12)
    np.testing.assert_allclose(npy(d.mode), np.eye(4)[[3, 2]])
    np.testing.assert_allclose(npy(d.mean), PROBS, rtol=1e-12)
    np.testing.assert_allclose(npy(d.variance), PROBS * (1 - PROBS), rtol=1e-12)
    support = d.enumerate_support()
    assert support.shape == (4, 2, 4) and d.enumerate_support(expand=False).shape == (4, 1, 4)
    np.testing.assert_allclose(npy(tg.exp(d.log_prob(support)).sum(0)), [1, 1], rtol=1e-12)


def test_one_hot_categorical_samples_and_straight_through():
    tg.manual_seed(0)
    d = OneHotCategorical(logits=t64(np.log(PROBS)))
    x = d.sample((20000,))
    assert x.shape == (20000, 2, 4) and x.dtype == F64
    assert bool((x.sum(-1) == 1).all())
    np.testing.assert_allclose(npy(x.mean(0)), PROBS, atol=0.015)
    logits = t64(np.log(PROBS), True)
    st = OneHotCategoricalStraightThrough(logits=logits)
    assert st.has_rsample and not OneHotCategorical.has_rsample
    r = st.rsample((3,))
    assert bool((r.sum(-1) - 1).abs().max() < 1e-12)
    weights = t64(RNG.normal(size=(3, 2, 4)))
    (g,) = tg.autograd.grad((r * weights).sum(), logits, retain_graph=True)
    (want,) = tg.autograd.grad((st.probs * weights.sum(0)).sum(), logits)
    np.testing.assert_allclose(npy(g), npy(want), rtol=1e-12)
    assert type(st.expand((5, 2))) is OneHotCategoricalStraightThrough


def test_one_hot_categorical_validation_expand_and_kl():
    d = OneHotCategorical(t64(PROBS))
    with pytest.raises(ValueError, match="Either `probs` or `logits` must be specified, but not both."):
        OneHotCategorical()
    with pytest.raises(ValueError, match=r"to be within the support \(OneHot\(\)\)"):
        d.log_prob(t64([[1.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0]]))
    with pytest.raises(ValueError, match="Simplex"):
        OneHotCategorical(t64([-0.5, 1.5]))
    e = d.expand((3, 2))
    assert e.batch_shape == (3, 2) and e.probs.shape == (3, 2, 4) and e.sample().shape == (3, 2, 4)
    q = OneHotCategorical(t64(PROBS[::-1].copy()))
    want = (PROBS * np.log(PROBS / PROBS[::-1])).sum(-1)
    np.testing.assert_allclose(npy(kl_divergence(d, q)), want, rtol=1e-12)


# -- Multinomial -----------------------------------------------------------------------------------

@needs_scipy
def test_multinomial_log_prob_and_entropy_match_scipy(stats):
    d = Multinomial(6, t64(PROBS))
    counts = np.array([[1.0, 2.0, 0.0, 3.0], [6.0, 0.0, 0.0, 0.0]])
    want = [stats.multinomial(6, PROBS[b]).logpmf(counts[b]) for b in range(2)]
    np.testing.assert_allclose(npy(d.log_prob(t64(counts))), want, rtol=1e-10)
    np.testing.assert_allclose(npy(d.entropy()), [stats.multinomial(6, PROBS[b]).entropy() for b in range(2)],
                               rtol=1e-10)
    np.testing.assert_allclose(npy(d.mean), 6 * PROBS)
    np.testing.assert_allclose(npy(d.variance), 6 * PROBS * (1 - PROBS))
    zero = Multinomial(3, logits=t64([0.0, -math.inf, 0.0]))  # (an impossible category counted 0 times)
    assert float(zero.log_prob(t64([1.0, 0.0, 2.0]))) == pytest.approx(math.log(3 / 8))
    assert tg.autograd.gradcheck(lambda lg: Multinomial(6, logits=lg).log_prob(t64(counts)),
                                 (t64(np.log(PROBS), True),))


def test_multinomial_samples_count_the_trials():
    tg.manual_seed(0)
    d = Multinomial(10, tg.tensor(PROBS, dtype=tg.float32))
    x = d.sample((20000,))
    assert x.shape == (20000, 2, 4) and x.dtype == tg.float32
    assert bool((x.sum(-1) == 10).all())
    np.testing.assert_allclose(npy(x.mean(0)), 10 * PROBS, atol=0.05)
    np.testing.assert_allclose(npy(x.var(0)), 10 * PROBS * (1 - PROBS), rtol=0.05)


@needs_scipy
def test_multinomial_validation_and_expand():
    with pytest.raises(NotImplementedError, match="inhomogeneous total_count is not supported"):
        Multinomial(t64(3.0), t64(PROBS))
    d = Multinomial(4, t64(PROBS))
    with pytest.raises(ValueError, match=r"within the support \(Multinomial"):
        d.log_prob(t64([[1.0, 2.0, 2.0, 0.0], [4.0, 0.0, 0.0, 0.0]]))
    e = d.expand((3, 2))
    assert e.batch_shape == (3, 2) and e.total_count == 4 and e.sample().shape == (3, 2, 4)
    np.testing.assert_allclose(npy(e.entropy()), np.broadcast_to(npy(d.entropy()), (3, 2)), rtol=1e-12)


# -- Binomial --------------------------------------------------------------------------------------

@needs_scipy
def test_binomial_values_match_scipy(stats):
    n, p = np.array([[5.0], [10.0]]), np.array([0.1, 0.3, 0.95])
    d = Binomial(t64(n), t64(p))
    k = np.array([[0.0, 2.0, 5.0], [3.0, 0.0, 10.0]])
    np.testing.assert_allclose(npy(d.log_prob(t64(k))), stats.binom(n, p).logpmf(k), rtol=1e-10)
    certain = Binomial(t64([4.0, 4.0]), t64([0.0, 1.0]))  # (probs clamped to [eps, 1 - eps]: logs stay finite)
    np.testing.assert_allclose(npy(certain.log_prob(t64([0.0, 4.0]))), 0, atol=1e-14)
    assert bool((certain.log_prob(t64([1.0, 3.0])) < -30).all())
    np.testing.assert_allclose(npy(d.mean), n * p)
    np.testing.assert_allclose(npy(d.variance), n * p * (1 - p))
    np.testing.assert_allclose(npy(d.mode), np.minimum(np.floor((n + 1) * p), n))
    d = Binomial(10, logits=t64([-1.0, 0.5]))
    p = 1 / (1 + np.exp([1.0, -0.5]))
    np.testing.assert_allclose(npy(d.entropy()), stats.binom(10, p).entropy(), rtol=1e-10)
    assert d.enumerate_support().shape == (11, 2) and d.enumerate_support(False).shape == (11, 1)
    k = t64([[3.0], [7.0]])
    assert tg.autograd.gradcheck(lambda lg: Binomial(10, logits=lg).log_prob(k), (t64([-1.0, 0.5], True),))
    assert tg.autograd.gradcheck(lambda pr: Binomial(10, probs=pr).log_prob(k), (t64([0.2, 0.7], True),))


def test_binomial_samples_and_validation():
    tg.manual_seed(0)
    d = Binomial(t64([[4.0], [20.0]]), t64([0.2, 0.9]))
    x = d.sample((20000,))
    assert x.shape == (20000, 2, 2) and x.dtype == F64
    np.testing.assert_allclose(npy(x.mean(0)), npy(d.mean), rtol=0.03)
    np.testing.assert_allclose(npy(x.var(0)), npy(d.variance), rtol=0.06)
    with pytest.raises(ValueError, match=r"parameter total_count .* IntegerGreaterThan\(lower_bound=0\)"):
        Binomial(t64(2.5), t64(0.5))
    with pytest.raises(ValueError, match=r"parameter probs .* Interval\(lower_bound=0.0, upper_bound=1.0\)"):
        Binomial(3, t64(1.5))
    with pytest.raises(ValueError, match="Either `probs` or `logits`"):
        Binomial(3)
    with pytest.raises(ValueError, match="to be within the support"):
        Binomial(3, t64(0.5)).log_prob(t64(4.0))
    with pytest.raises(NotImplementedError, match="Inhomogeneous total count not supported by `entropy`."):
        d.entropy()
    with pytest.raises(NotImplementedError, match="by `enumerate_support`"):
        d.enumerate_support()
    e = Binomial(5, logits=t64(0.3)).expand((3,))
    assert e.batch_shape == (3,) and e.total_count.shape == (3,) and e.logits.shape == (3,)
    assert "probs" not in e.__dict__ and e._param is e.logits


@needs_scipy
def test_binomial_kl():
    p, q = Binomial(8, t64([0.2, 0.6])), Binomial(8, logits=t64([0.4, -1.0]))
    k = p.enumerate_support()
    want = (tg.exp(p.log_prob(k)) * (p.log_prob(k) - q.log_prob(k))).sum(0)
    np.testing.assert_allclose(npy(kl_divergence(p, q)), npy(want), rtol=1e-10)
    wider = Binomial(t64([8.0, 9.0]), t64([0.2, 0.6]))
    assert npy(kl_divergence(wider, Binomial(8, t64([0.3, 0.3]))))[1] == math.inf
    with pytest.raises(NotImplementedError, match="q.total_count > p.total_count is not implemented"):
        kl_divergence(p, wider)


# -- Geometric -------------------------------------------------------------------------------------

def test_geometric_values_match_scipy(stats):
    p = np.array([0.2, 0.5, 1.0])
    d = Geometric(t64(p))
    k = np.array([3.0, 0.0, 0.0])
    np.testing.assert_allclose(npy(d.log_prob(t64(k))), stats.geom(p).logpmf(k + 1), rtol=1e-12)
    np.testing.assert_allclose(npy(d.mean), 1 / p - 1)
    np.testing.assert_allclose(npy(d.variance), (1 - p) / p ** 2)
    np.testing.assert_allclose(npy(d.mode), 0)
    q = Geometric(logits=t64([0.3, -2.0]))
    np.testing.assert_allclose(npy(q.entropy()), stats.geom(npy(q.probs)).entropy(), rtol=1e-10)
    assert tg.autograd.gradcheck(lambda lg: Geometric(logits=lg).log_prob(t64([2.0, 5.0])), (t64([0.3, -2.0], True),))
    assert tg.autograd.gradcheck(lambda lg: Geometric(logits=lg).entropy(), (t64([0.3, -2.0], True),))


def test_geometric_samples_validation_expand_and_kl():
    tg.manual_seed(0)
    d = Geometric(t64([0.2, 0.7]))
    x = d.sample((40000,))
    assert x.shape == (40000, 2) and x.dtype == F64 and bool((x >= 0).all()) and bool((x == x.floor()).all())
    np.testing.assert_allclose(npy(x.mean(0)), npy(d.mean), rtol=0.03)
    np.testing.assert_allclose(npy(x.var(0)), npy(d.variance), rtol=0.06)
    with pytest.raises(ValueError, match=r"Expected parameter probs \(Tensor of shape \(2,\)\) of distribution "
                                         r"Geometric\(probs: .*\) to be positive but found invalid values:\n"):
        Geometric(t64([0.0, 0.5]))
    with pytest.raises(ValueError, match="IntegerGreaterThan"):
        d.log_prob(t64([0.5, 1.0]))
    assert d.expand((3, 2)).sample().shape == (3, 2)
    q = Geometric(t64([0.4, 0.1]))
    k = t64(np.arange(2000.0)[:, None])
    want = (tg.exp(d.log_prob(k)) * (d.log_prob(k) - q.log_prob(k))).sum(0)
    np.testing.assert_allclose(npy(kl_divergence(d, q)), npy(want), rtol=1e-9)


# -- Poisson ---------------------------------------------------------------------------------------

@needs_scipy
def test_poisson_values_samples_and_kl(stats):
    rate = np.array([0.0, 1.5, 4.0])
    d = Poisson(t64(rate))
    k = np.array([0.0, 2.0, 7.0])
    np.testing.assert_allclose(npy(d.log_prob(t64(k))), stats.poisson(rate).logpmf(k), rtol=1e-12)
    np.testing.assert_allclose(npy(d.mode), np.floor(rate))
    assert tg.autograd.gradcheck(lambda r: Poisson(r).log_prob(t64(k)), (t64([0.5, 1.5, 4.0], True),))
    with pytest.raises(NotImplementedError):
        d.entropy()
    tg.manual_seed(0)
    x = Poisson(t64([0.5, 6.0])).sample((40000,))
    assert x.shape == (40000, 2) and x.dtype == F64
    np.testing.assert_allclose(npy(x.mean(0)), [0.5, 6.0], rtol=0.03)
    np.testing.assert_allclose(npy(x.var(0)), [0.5, 6.0], rtol=0.05)
    with pytest.raises(ValueError, match=r"parameter rate .* GreaterThanEq\(lower_bound=0.0\)"):
        Poisson(t64(-1.0))
    assert Poisson(2.0).batch_shape == () and Poisson(t64(2.0)).expand((4,)).rate.shape == (4,)
    p, q = Poisson(t64([1.5, 4.0])), Poisson(t64([3.0, 0.7]))
    k = t64(np.arange(200.0)[:, None])
    want = (tg.exp(p.log_prob(k)) * (p.log_prob(k) - q.log_prob(k))).sum(0)
    np.testing.assert_allclose(npy(kl_divergence(p, q)), npy(want), rtol=1e-10)
    b = Bernoulli(t64([0.3, 0.9]))
    v = t64([[0.0], [1.0]])
    want = (tg.exp(b.log_prob(v)) * (b.log_prob(v) - q.log_prob(v))).sum(0)
    np.testing.assert_allclose(npy(kl_divergence(b, q)), npy(want), rtol=1e-10)
    assert bool((kl_divergence(p, b) == math.inf).all())
    assert bool((kl_divergence(p, Binomial(3, t64([0.3, 0.9]))) == math.inf).all())


# -- NegativeBinomial ------------------------------------------------------------------------------

@needs_scipy
def test_negative_binomial_values_match_scipy(stats):
    r, p = np.array([2.5, 4.0, 0.0]), np.array([0.2, 0.7, 0.4])
    d = NegativeBinomial(t64(r), t64(p))
    k = np.array([3.0, 0.0, 0.0])
    want = stats.nbinom(r[:2], 1 - p[:2]).logpmf(k[:2])  # (SciPy counts failures before successes)
    np.testing.assert_allclose(npy(d.log_prob(t64(k)))[:2], want, rtol=1e-10)
    assert float(d.log_prob(t64(k))[2]) == 0.0  # (no failures to wait for: zero successes surely)
    np.testing.assert_allclose(npy(d.mean), r * p / (1 - p), rtol=1e-12)
    np.testing.assert_allclose(npy(d.variance), r * p / (1 - p) ** 2, rtol=1e-12)
    np.testing.assert_allclose(npy(d.mode), np.maximum(np.floor((r - 1) * p / (1 - p)), 0))
    k = t64([3.0, 1.0])
    assert tg.autograd.gradcheck(lambda r, lg: NegativeBinomial(r, logits=lg).log_prob(k),
                                 (t64([2.5, 4.0], True), t64([0.3, -1.0], True)))


def test_negative_binomial_samples_validation_and_expand():
    tg.manual_seed(0)
    d = NegativeBinomial(t64([2.5, 6.0]), t64([0.3, 0.6]))
    x = d.sample((40000,))
    assert x.shape == (40000, 2) and x.dtype == F64 and bool((x == x.floor()).all())
    np.testing.assert_allclose(npy(x.mean(0)), npy(d.mean), rtol=0.03)
    np.testing.assert_allclose(npy(x.var(0)), npy(d.variance), rtol=0.06)
    with pytest.raises(ValueError, match=r"HalfOpenInterval\(lower_bound=0.0, upper_bound=1.0\)"):
        NegativeBinomial(2.0, t64(1.0))
    with pytest.raises(ValueError, match=r"GreaterThanEq\(lower_bound=0\)"):
        NegativeBinomial(t64(-1.0), t64(0.5))
    e = d.expand((3, 2))
    assert e.batch_shape == (3, 2) and e.total_count.shape == (3, 2) and e.sample((4,)).shape == (4, 3, 2)


# -- PyTorch as the oracle -------------------------------------------------------------------------

def _both(make, *arrays):
    """``make(lib, *tensors)`` for tracegrad and for torch on the same float64 values."""
    import torch
    import torch.distributions as td

    import tracegrad.distributions as gd
    ours = make(tg, _Namespace(gd), *[t64(a) for a in arrays])
    theirs = make(torch, td, *[torch.tensor(np.asarray(a, dtype=np.float64)) for a in arrays])
    return ours, theirs


class _Namespace:
    """tracegrad.distributions with this file's new families (not yet in its __init__)."""
    _extra = {c.__name__: c for c in (MultivariateNormal, LowRankMultivariateNormal, OneHotCategorical,
                                      OneHotCategoricalStraightThrough, Multinomial, Binomial, Geometric,
                                      Poisson, NegativeBinomial)}

    def __init__(self, module):
        self._module = module

    def __getattr__(self, name):
        return self._extra[name] if name in self._extra else getattr(self._module, name)


CK = np.linalg.cholesky(COV)
ORACLE = {
    "mvn_cov": (lambda m, D, loc, c: D.MultivariateNormal(loc, c), (LOC, COV), X),
    "mvn_prec": (lambda m, D, loc, c: D.MultivariateNormal(loc, precision_matrix=c), (LOC, COV), X),
    "mvn_tril": (lambda m, D, loc, c: D.MultivariateNormal(loc, scale_tril=c), (LOC, CK), X),
    "lowrank": (lambda m, D, loc, w, dg: D.LowRankMultivariateNormal(loc, w, dg), (LOC, W, DIAG), X),
    "onehot": (lambda m, D, p: D.OneHotCategorical(p), (PROBS,), np.eye(4)[[[0, 3], [2, 2]]]),
    "onehot_st": (lambda m, D, lg: D.OneHotCategoricalStraightThrough(logits=lg), (np.log(PROBS),), np.eye(4)[[1, 0]]),
    "multinomial": (lambda m, D, p: D.Multinomial(5, p), (PROBS,), [[1.0, 0, 4, 0], [2, 1, 1, 1]]),
    "binomial": (lambda m, D, n, p: D.Binomial(n, p), ([[3.0], [7.0]], [0.1, 0.5, 1.0]), [[0.0, 2, 3], [7, 5, 1]]),
    "binomial_logits": (lambda m, D, lg: D.Binomial(9, logits=lg), ([-2.0, 0.3],), [4.0, 9.0]),
    "geometric": (lambda m, D, p: D.Geometric(p), ([0.2, 1.0],), [3.0, 0.0]),
    "geometric_logits": (lambda m, D, lg: D.Geometric(logits=lg), ([-0.5, 2.0],), [[3.0], [0.0]]),
    "poisson": (lambda m, D, r: D.Poisson(r), ([0.0, 0.5, 9.0],), [0.0, 1.0, 4.0]),
    "negative_binomial": (lambda m, D, r, p: D.NegativeBinomial(r, p), ([0.0, 1.5, 3.0], [0.4, 0.0, 0.9]),
                          [0.0, 2.0, 5.0]),
}
PROPERTIES = ("mean", "variance", "mode", "entropy", "enumerate_support", "covariance_matrix",
              "precision_matrix", "scale_tril", "probs", "logits")


def _values(d, name):
    try:
        value = getattr(d, name)
        return value() if callable(value) else value
    except (NotImplementedError, AttributeError) as e:
        return type(e)


def _same(a, b, rtol=1e-9):
    if isinstance(a, type) or isinstance(b, type):
        assert a is b
    else:
        assert tuple(a.shape) == tuple(b.shape) and str(a.dtype).split(".")[-1] == str(b.dtype).split(".")[-1]
        np.testing.assert_allclose(npy(a), b.detach().numpy(), rtol=rtol, atol=1e-10)


@pytest.mark.torch
@pytest.mark.scipy
@pytest.mark.parametrize("name", sorted(ORACLE))
def test_oracle_values_and_repr(name):
    make, params, value = ORACLE[name]
    ours, theirs = _both(make, *params)
    assert (ours.batch_shape, ours.event_shape) == (tuple(theirs.batch_shape), tuple(theirs.event_shape))
    assert repr(ours).replace("tracegrad.", "torch.") == repr(theirs)
    assert ours.has_rsample == theirs.has_rsample and ours.has_enumerate_support == theirs.has_enumerate_support
    assert repr(ours.support).split("(")[0] == repr(theirs.support).split("(")[0]
    for prop in PROPERTIES:
        # (PyTorch's Multinomial entropy takes log n! in float32: agreement to ~1e-8 only)
        _same(_values(ours, prop), _values(theirs, prop), rtol=1e-6 if (name, prop) == ("multinomial", "entropy")
              else 1e-9)
    import torch
    _same(ours.log_prob(t64(value)), theirs.log_prob(torch.tensor(np.asarray(value, dtype=np.float64))))
    shape = tuple(ours.batch_shape + ours.event_shape)
    one = np.broadcast_to(value, np.broadcast_shapes(np.shape(value), shape)).reshape((-1,) + shape)[0]
    e = (3,) + tuple(ours.batch_shape)
    _same(ours.expand(e).log_prob(t64(one)), theirs.expand(e).log_prob(torch.tensor(one)))


def _score(d, value):
    """A scalar touching every differentiable output of ``d``."""
    total = d.log_prob(value).sum() + d.mean.nan_to_num().sum() + d.variance.nan_to_num().sum()
    try:
        total = total + d.entropy().sum()
    except NotImplementedError:
        pass
    return total


@pytest.mark.torch
@pytest.mark.scipy
@pytest.mark.parametrize("name", sorted(ORACLE))
def test_oracle_gradients(name):
    """The parameters' gradients agree. A covariance or precision leaf is compared after
    symmetrizing ours: tracegrad's cholesky gradient lives on the triangle the factorization
    reads, PyTorch's is its symmetric counterpart (the same derivative along every
    symmetric direction)."""
    import torch
    import torch.distributions as td

    import tracegrad.distributions as gd
    make, params, value = ORACLE[name]
    grads = []
    for m, D in ((tg, _Namespace(gd)), (torch, td)):
        leaves = [m.tensor(np.asarray(a, dtype=np.float64), requires_grad=True) for a in params]
        _score(make(m, D, *leaves), m.tensor(np.asarray(value, dtype=np.float64))).backward()
        grads.append([None if v.grad is None else v.grad.numpy() for v in leaves])
    for i, (ours, theirs) in enumerate(zip(*grads)):
        assert (ours is None) == (theirs is None)
        if ours is not None and name in ("mvn_cov", "mvn_prec") and i == 1:
            ours = (ours + np.swapaxes(ours, -1, -2)) / 2
        if ours is not None and name == "poisson":
            # (rate 0, value 0: d(0 log r)/dr is 0 for tracegrad's xlogy, nan for PyTorch's)
            assert np.isnan(theirs[0]) and ours[0] == 1.0
            ours, theirs = ours[1:], theirs[1:]
        if ours is not None:
            np.testing.assert_allclose(ours, theirs, rtol=1e-8, atol=1e-12)


@pytest.mark.torch
@pytest.mark.parametrize("shapes", [((3, 3), (3,)), ((3, 3), (5, 3)), ((2, 3, 3), (4, 2, 3)),
                                    ((2, 1, 3, 3), (7, 2, 5, 3)), ((1, 3, 3), (4, 3)), ((2, 3, 3), (0, 2, 3))],
                         ids=str)
def test_oracle_batch_mahalanobis(shapes):
    from torch.distributions.multivariate_normal import _batch_mahalanobis as theirs

    from tracegrad.distributions.multivariate_normal import _batch_mahalanobis as ours
    L = np.tril(RNG.normal(size=shapes[0])) + 3 * np.eye(3)
    x = RNG.normal(size=shapes[1])
    import torch
    _same(ours(t64(L), t64(x)), theirs(torch.tensor(L), torch.tensor(x)))


KL_PAIRS = [("mvn_cov", "mvn_tril"), ("lowrank", "lowrank"), ("mvn_prec", "lowrank"), ("lowrank", "mvn_cov"),
            ("onehot", "onehot_st"), ("binomial_logits", "binomial_logits"), ("geometric", "geometric_logits"),
            ("poisson", "poisson")]


@pytest.mark.torch
@pytest.mark.scipy
@pytest.mark.parametrize("pair", KL_PAIRS, ids="-".join)
def test_oracle_kl(pair):
    import torch.distributions as td
    p, tp = _both(ORACLE[pair[0]][0], *ORACLE[pair[0]][1])
    # (q: its parameters reversed along the first dim, so that p and q differ)
    q, tq = _both(ORACLE[pair[1]][0], *[np.asarray(a)[::-1].copy() for a in ORACLE[pair[1]][1]])
    _same(kl_divergence(p, q), td.kl_divergence(tp, tq))


ERRORS = [
    lambda m, D: D.MultivariateNormal(m.tensor(1.0), m.eye(2)),
    lambda m, D: D.MultivariateNormal(m.zeros(2)),
    lambda m, D: D.MultivariateNormal(m.zeros(2), m.zeros(2)),
    lambda m, D: D.MultivariateNormal(m.zeros(2), scale_tril=m.ones(2)),
    lambda m, D: D.MultivariateNormal(m.zeros(2), precision_matrix=-m.eye(2)),
    lambda m, D: D.MultivariateNormal(m.zeros(2), scale_tril=m.ones(2, 2)),
    lambda m, D: D.MultivariateNormal(m.zeros(2), m.eye(2)).log_prob(m.zeros(3)),
    lambda m, D: D.LowRankMultivariateNormal(m.zeros(2), m.ones(2), m.ones(2)),
    lambda m, D: D.LowRankMultivariateNormal(m.zeros(2), m.ones(3, 1), m.ones(2)),
    lambda m, D: D.LowRankMultivariateNormal(m.zeros(2), m.ones(2, 1), m.ones(3)),
    lambda m, D: D.LowRankMultivariateNormal(m.zeros(3, 2), m.ones(4, 2, 1), m.ones(2)),
    lambda m, D: D.LowRankMultivariateNormal(m.zeros(2), m.zeros(2, 1), m.tensor([-1.0, 1.0])),
    lambda m, D: D.OneHotCategorical(),
    lambda m, D: D.OneHotCategorical(m.tensor([0.5, 0.5])).log_prob(m.tensor([1.0, 1.0])),
    lambda m, D: D.Multinomial(2.0, m.tensor([0.5, 0.5])),
    lambda m, D: D.Multinomial(2, m.tensor([0.5, 0.5])).log_prob(m.tensor([2.0, 1.0])),
    lambda m, D: D.Binomial(m.tensor(-1.0), m.tensor(0.5)),
    lambda m, D: D.Binomial(3, m.tensor(1.5)),
    lambda m, D: D.Binomial(3, m.tensor(0.5), m.tensor(0.0)),
    lambda m, D: D.Binomial(m.tensor([2.0, 3.0]), m.tensor(0.5)).entropy(),
    lambda m, D: D.kl_divergence(D.Binomial(2, m.tensor(0.5)), D.Binomial(3, m.tensor(0.5))),
    lambda m, D: D.Geometric(m.tensor([0.0, 0.5])),
    lambda m, D: D.Geometric(m.tensor(0.5)).log_prob(m.tensor(-1.0)),
    lambda m, D: D.Poisson(m.tensor([-1.0])),
    lambda m, D: D.Poisson(m.tensor([1.0])).entropy(),
    lambda m, D: D.NegativeBinomial(1.0, m.tensor(1.0)),
    lambda m, D: D.NegativeBinomial(1.0, m.tensor(0.5)).entropy(),
    lambda m, D: D.kl_divergence(D.MultivariateNormal(m.zeros(2), m.eye(2)), D.MultivariateNormal(m.zeros(3), m.eye(3))),
    lambda m, D: D.kl_divergence(D.Poisson(m.tensor(1.0)), D.Geometric(m.tensor(0.5))),
]


@pytest.mark.torch
@pytest.mark.parametrize("index", range(len(ERRORS)))
def test_oracle_errors(index):
    import torch
    import torch.distributions as td

    import tracegrad.distributions as gd
    ours, theirs = raised(ERRORS[index], tg, _Namespace(gd)), raised(ERRORS[index], torch, td)
    assert theirs is not None and ours is not None
    assert ours[0] == theirs[0].lstrip("_")  # (torch.linalg.LinAlgError is torch._C._LinAlgError)
    assert ours[1] == theirs[1] or (theirs[1] == "" and ours[0] == "NotImplementedError")
