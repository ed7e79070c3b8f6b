"""Pareto, Weibull, Kumaraswamy, GeneralizedPareto, FisherSnedecor, VonMises, Wishart and
LKJCholesky: values against SciPy and hand formulas, gradients against finite
differences, samples by their moments, KL divergences against closed forms and Monte
Carlo, validation by type and message, ``expand``; then PyTorch itself as an oracle."""
import math
import warnings

import numpy as np
import pytest

import tracegrad as tg
from tracegrad.distributions import (
    Beta,
    ContinuousBernoulli,
    Exponential,
    FisherSnedecor,
    Gamma,
    GeneralizedPareto,
    Gumbel,
    Kumaraswamy,
    Laplace,
    LKJCholesky,
    Normal,
    Pareto,
    Uniform,
    VonMises,
    Weibull,
    Wishart,
    constraints,
    kl_divergence,
)

from ._helpers import F64, check_grad, npy, raised, read, spd, t64, to_torch

# ----------------------------------------------------------------------------- scalar families

SCALAR = {  # name: (class, parameters, values inside the support)
    "Pareto": (Pareto, [[1.0, 2.0], [2.5, 3.5]], [1.5, 4.0]),
    "Weibull": (Weibull, [[1.0, 2.0], [0.7, 3.5]], [0.5, 4.0]),
    "Kumaraswamy": (Kumaraswamy, [[1.5, 2.0], [2.5, 0.7]], [0.3, 0.8]),
    "GeneralizedPareto": (GeneralizedPareto, [[0.1, -1.0], [1.5, 2.0], [0.3, -0.2]], [0.4, 2.0]),
    "FisherSnedecor": (FisherSnedecor, [[3.0, 7.0], [5.0, 9.0]], [0.4, 2.0]),
    "VonMises": (VonMises, [[0.3, -1.0], [0.5, 4.0]], [0.4, 2.0]),
}


def make(name, dtype=F64):
    cls, params, values = SCALAR[name]
    return cls(*[tg.tensor(p, dtype=dtype) for p in params]), tg.tensor(values, dtype=dtype)


def _scipy_law(stats, name):
    """SciPy's frozen law (batched) for ``SCALAR[name]``'s parameters."""
    p = [np.array(v) for v in SCALAR[name][1]]
    return {"Pareto": lambda: stats.pareto(b=p[1], scale=p[0]),
            "Weibull": lambda: stats.weibull_min(c=p[1], scale=p[0]),
            "GeneralizedPareto": lambda: stats.genpareto(c=p[2], loc=p[0], scale=p[1]),
            "FisherSnedecor": lambda: stats.f(p[0], p[1]),
            "VonMises": lambda: stats.vonmises(p[1], loc=p[0])}[name]()


@pytest.mark.scipy
@pytest.mark.parametrize("name", ["Pareto", "Weibull", "GeneralizedPareto", "FisherSnedecor", "VonMises"])
def test_values_against_scipy(name):
    stats = pytest.importorskip("scipy.stats")
    d, v = make(name)
    ref = _scipy_law(stats, name)
    np.testing.assert_allclose(npy(d.log_prob(v)), ref.logpdf(v.numpy()), rtol=1e-10)
    if name not in ("FisherSnedecor", "VonMises"):  # (PyTorch's have no entropy)
        np.testing.assert_allclose(npy(d.entropy()), ref.entropy(), rtol=1e-9)
    if name in ("Pareto", "Weibull", "GeneralizedPareto"):
        np.testing.assert_allclose(npy(d.cdf(v)), ref.cdf(v.numpy()), rtol=1e-10)
        np.testing.assert_allclose(npy(d.icdf(d.cdf(v))), v.numpy(), rtol=1e-9)
    if name != "VonMises":  # (its mean and variance are circular ones)
        np.testing.assert_allclose(npy(d.mean), ref.mean(), rtol=1e-10)
        np.testing.assert_allclose(npy(d.variance), ref.var(), rtol=1e-10)
    mode = npy(d.mode)
    ok = np.isfinite(mode)
    assert np.all(ref.pdf(mode)[ok] >= ref.pdf(mode + 1e-4)[ok])
    assert d.batch_shape == (2,) and d.event_shape == ()


@pytest.mark.scipy
def test_kumaraswamy_by_hand():
    a, b = np.array([1.5, 2.0, 0.6]), np.array([2.5, 0.7, 3.0])
    d = Kumaraswamy(t64(a), t64(b))
    x = np.array([0.3, 0.8, 0.05])
    want = np.log(a * b) + (a - 1) * np.log(x) + (b - 1) * np.log1p(-x ** a)
    np.testing.assert_allclose(npy(d.log_prob(t64(x))), want, rtol=1e-12)
    np.testing.assert_allclose(npy(d.cdf(t64(x))), 1 - (1 - x ** a) ** b, rtol=1e-12)
    np.testing.assert_allclose(npy(d.icdf(d.cdf(t64(x)))), x, rtol=1e-10)
    quad = pytest.importorskip("scipy.integrate").quad  # (moments and entropy by quadrature)

    def integral(f, i):
        def dens(y):
            return a[i] * b[i] * y ** (a[i] - 1) * (1 - y ** a[i]) ** (b[i] - 1)
        return quad(lambda y: f(y, dens(y)), 0, 1, limit=200)[0]
    mean = np.array([integral(lambda y, p: y * p, i) for i in range(3)])
    second = np.array([integral(lambda y, p: y * y * p, i) for i in range(3)])
    entropy = np.array([integral(lambda y, p: -p * np.log(p), i) for i in range(3)])
    np.testing.assert_allclose(npy(d.mean), mean, rtol=1e-8)
    np.testing.assert_allclose(npy(d.variance), second - mean ** 2, rtol=1e-8)
    np.testing.assert_allclose(npy(d.entropy()), entropy, rtol=1e-6)
    # The mode ((a - 1) / (a b - 1))^(1/a), an end of [0, 1] when a or b is 1, NaN below 1.
    m = Kumaraswamy(t64([2.0, 1.0, 3.0, 0.5, 2.0, 1.0]), t64([3.0, 2.0, 1.0, 2.0, 0.5, 1.0])).mode.numpy()
    np.testing.assert_allclose(m[:3], [(1 / 5) ** 0.5, 0.0, 1.0], rtol=1e-12)
    assert np.all(np.isnan(m[3:]))


def test_generalized_pareto_special_cases():
    x = t64([0.3, 1.0, 2.5])
    gp0 = GeneralizedPareto(0.2, 2.0, 0.0)  # (exponential, shifted)
    np.testing.assert_allclose(npy(gp0.log_prob(x + 0.2)), npy(Exponential(0.5).log_prob(x).double()), rtol=1e-7)
    np.testing.assert_allclose(npy(gp0.cdf(x + 0.2)), npy(Exponential(0.5).cdf(x).double()), rtol=1e-7)
    gpu = GeneralizedPareto(t64(1.0), t64(3.0), t64(-1.0))  # (uniform on [1, 4])
    np.testing.assert_allclose(npy(gpu.log_prob(x + 1)), [-math.log(3)] * 3, rtol=1e-12)
    assert repr(gpu.support) == "Interval(lower_bound=1.0, upper_bound=4.0)"
    np.testing.assert_allclose(npy(gpu.cdf(x + 1)), npy(x) / 3, rtol=1e-12)
    xi, sigma = 0.4, 1.5  # (Pareto with scale sigma / xi and alpha 1 / xi)
    gpp, par = GeneralizedPareto(t64(sigma / xi), t64(sigma), t64(xi)), Pareto(t64(sigma / xi), t64(1 / xi))
    y = x + sigma / xi
    np.testing.assert_allclose(npy(gpp.log_prob(y)), npy(par.log_prob(y)), rtol=1e-12)
    np.testing.assert_allclose(npy(gpp.cdf(y)), npy(par.cdf(y)), rtol=1e-12)
    heavy = GeneralizedPareto(t64([0.0, 0.0]), t64([1.0, 1.0]), t64([1.0, 0.5]))
    assert np.isnan(npy(heavy.mean)[0]) and npy(heavy.mean)[1] == 2.0 and np.all(np.isnan(npy(heavy.variance)))
    np.testing.assert_allclose(npy(heavy.log_survival_function(t64(2.0))), [-math.log(3), -2 * math.log(2)])
    np.testing.assert_allclose(npy(heavy.log_cdf(t64(2.0))), np.log([2 / 3, 3 / 4]), rtol=1e-12)
    assert GeneralizedPareto(0.0, 1.0, t64([0.5, 0.5])).entropy().shape == (2,)


@pytest.mark.parametrize("name", SCALAR)
def test_log_prob_and_moment_gradients_match_finite_differences(name):
    cls, params, values = SCALAR[name]
    v = t64(values)
    for i in range(len(params)):
        def f(p, i=i):
            d = cls(*[p if j == i else t64(params[j]) for j in range(len(params))])
            out = d.log_prob(v) + d.mean + d.variance
            return out if name in ("FisherSnedecor", "VonMises") else out + d.entropy()
        check_grad(f, params[i])


RSAMPLED = ["Pareto", "Weibull", "Kumaraswamy", "GeneralizedPareto"]


@pytest.mark.parametrize("name", RSAMPLED)
def test_rsample_gradients_match_finite_differences_of_the_same_noise(name):
    cls, params, _ = SCALAR[name]
    assert make(name)[0].has_rsample
    for i in range(len(params)):
        def f(p, i=i):
            tg.manual_seed(7)
            return cls(*[p if j == i else t64(params[j]) for j in range(len(params))]).rsample((3,))
        check_grad(f, params[i], rtol=1e-5, atol=1e-8)


def test_fisher_snedecor_implicit_gradient_is_unbiased_for_the_mean():
    df2 = t64([6.0, 10.0]).requires_grad_()
    tg.manual_seed(0)
    x = FisherSnedecor(t64([3.0, 4.0]), df2).rsample((100000,))
    x.mean(0).sum().backward()
    np.testing.assert_allclose(df2.grad.numpy(), -2 / (np.array([6.0, 10.0]) - 2) ** 2, rtol=0.05)
    assert not VonMises(0.0, 1.0).has_rsample and FisherSnedecor(1.0, 2.0).has_rsample


MOMENTS = {"Pareto": ([1.5], [4.5]), "Weibull": ([2.0], [1.7]), "Kumaraswamy": ([2.0], [3.0]),
           "GeneralizedPareto": ([0.5], [2.0], [0.1]), "FisherSnedecor": ([4.0], [12.0])}


@pytest.mark.parametrize("name", MOMENTS)
def test_samples_have_the_moments(name):
    tg.manual_seed(11)
    d = SCALAR[name][0](*[tg.tensor(p) for p in MOMENTS[name]])
    s = d.sample((200000,))
    assert s.shape == (200000, 1) and s.dtype == tg.float32 and not s.requires_grad
    np.testing.assert_allclose(npy(s.double().mean(0)), npy(d.mean), rtol=0.02)
    np.testing.assert_allclose(npy(s.double().var(0)), npy(d.variance), rtol=0.1)
    assert bool(d.support.check(s).all())


def test_von_mises_samples_are_circular_with_the_moments():
    loc, kappa = t64([0.3, -3.0, 2.0, 0.5]), t64([1e-6, 0.5, 3.0, 30.0])
    d = VonMises(loc, kappa)
    tg.manual_seed(0)
    s = d.sample((40000,))
    assert s.dtype == F64 and float(s.min()) >= -math.pi and float(s.max()) < math.pi
    c = tg.cos(s - loc).mean(0)  # E[cos(x - loc)] = I1/I0 = 1 - circular variance
    np.testing.assert_allclose(npy(c), 1 - npy(d.variance), atol=0.01)
    np.testing.assert_allclose(npy(tg.sin(s - loc).mean(0)), 0.0, atol=0.01)
    small = VonMises(0.0, tg.tensor([1e-5, 1e-4]))  # (float32: sampled in float64, no stall)
    assert small.sample((100,)).dtype == tg.float32
    mine = VonMises(t64(0.5), t64(2.0))
    grid = np.linspace(-math.pi, math.pi, 20001)[:-1]  # (one period: the rectangle rule is exact-ish)
    mass = np.exp(npy(mine.log_prob(t64(grid)))).sum() * (grid[1] - grid[0])
    np.testing.assert_allclose(mass, 1.0, rtol=1e-6)
    np.testing.assert_allclose(npy(mine.log_prob(t64(0.5 + 2 * math.pi))), npy(mine.log_prob(t64(0.5))))


@pytest.mark.parametrize("name", SCALAR)
def test_expand_shapes_and_repr(name):
    d, v = make(name)
    e = d.expand((3, 2))
    assert type(e) is type(d) and e.batch_shape == (3, 2) and e.sample((4,)).shape == (4, 3, 2)
    np.testing.assert_allclose(npy(e.log_prob(v)), np.broadcast_to(npy(d.log_prob(v)), (3, 2)))
    assert e.sample().dtype == F64 and e._validate_args == d._validate_args
    for p in SCALAR[name][0].arg_constraints:
        assert getattr(e, p).shape == (3, 2)
    scalar = SCALAR[name][0](*[p[1] for p in SCALAR[name][1]])
    assert scalar.batch_shape == () and repr(scalar).startswith(name + "(")


def test_validation_errors():
    with pytest.raises(ValueError, match=r"Expected parameter rate .* of distribution Exponential"):
        Pareto(1.0, -2.0)  # (the base distribution checks alpha first, as in PyTorch)
    with pytest.raises(ValueError, match=r"Expected parameter scale .* of distribution Pareto"):
        Pareto(-1.0, 2.0)
    with pytest.raises(ValueError, match=r"Expected parameter concentration .* of distribution Weibull"):
        Weibull(1.0, t64([-1.0]))
    with pytest.raises(ValueError, match=r"Expected parameter scale \(Tensor of shape \(\)\) of distribution "
                                         r"GeneralizedPareto\(loc: 0.0, scale: -1.0, concentration: 0.5\)"):
        GeneralizedPareto(0.0, -1.0, 0.5)
    with pytest.raises(ValueError, match=r"Expected parameter concentration .* of distribution Gamma"):
        FisherSnedecor(-1.0, 2.0)
    for bad in (lambda: Kumaraswamy(1.0, 0.0), lambda: VonMises(0.0, -1.0), lambda: VonMises(math.nan, 1.0)):
        with pytest.raises(ValueError, match="Expected parameter"):
            bad()
    with pytest.raises(ValueError, match=r"to be within the support \(GreaterThanEq\(lower_bound=2.0\)\)"):
        Pareto(2.0, 1.0).log_prob(tg.tensor(1.5))
    with pytest.raises(ValueError, match=r"within the support \(Interval\(lower_bound=0.0, upper_bound=2.0\)\)"):
        GeneralizedPareto(0.0, 1.0, -0.5).log_prob(tg.tensor(2.5))
    with pytest.raises(ValueError, match="to be within the support"):
        Kumaraswamy(1.0, 2.0).log_prob(tg.tensor(1.5))
    with pytest.raises(ValueError, match="The value argument to log_prob must be a Tensor"):
        VonMises(0.0, 1.0).log_prob(0.5)
    with pytest.raises(NotImplementedError):
        FisherSnedecor(1.0, 2.0).entropy()
    assert Pareto(2.0, 1.0, validate_args=False).log_prob(tg.tensor(3.0)).item() < 0
    assert VonMises(0.0, 1.0).support is constraints.real and Weibull(1.0, 1.0).support is constraints.positive


# ----------------------------------------------------------------------------- Wishart

RNG = np.random.default_rng(3)
COV, DF = spd(RNG, (2,), 3), np.array([4.5, 6.0])
VALUES = spd(RNG, (4, 2), 3)


@pytest.mark.scipy
@pytest.mark.parametrize("kind", ["covariance_matrix", "precision_matrix", "scale_tril"])
def test_wishart_values_against_scipy(kind):
    stats = pytest.importorskip("scipy.stats")
    given = {"covariance_matrix": COV, "precision_matrix": np.linalg.inv(COV),
             "scale_tril": np.linalg.cholesky(COV)}[kind]
    d = Wishart(t64(DF), **{kind: t64(given)})
    assert d.batch_shape == (2,) and d.event_shape == (3, 3)
    laws = [stats.wishart(df=DF[b], scale=COV[b]) for b in range(2)]
    want = np.stack([np.array([laws[b].logpdf(VALUES[i, b]) for i in range(4)]) for b in range(2)], -1)
    np.testing.assert_allclose(npy(d.log_prob(t64(VALUES))), want, rtol=1e-10)
    np.testing.assert_allclose(npy(d.entropy()), [law.entropy() for law in laws], rtol=1e-10)
    np.testing.assert_allclose(npy(d.mean), [law.mean() for law in laws], rtol=1e-10)
    np.testing.assert_allclose(npy(d.variance), [law.var() for law in laws], rtol=1e-10)
    np.testing.assert_allclose(npy(d.covariance_matrix), COV, rtol=1e-10)
    np.testing.assert_allclose(npy(d.precision_matrix), np.linalg.inv(COV), rtol=1e-10)
    np.testing.assert_allclose(npy(d.mode), (DF - 4)[:, None, None] * COV, rtol=1e-10)
    np.testing.assert_allclose(npy(d.scale_tril), np.linalg.cholesky(COV), rtol=1e-10)


def test_wishart_entropy_is_the_exponential_family_one():
    d = Wishart(t64(DF), covariance_matrix=t64(COV))
    from tracegrad.distributions.exp_family import ExponentialFamily
    np.testing.assert_allclose(npy(ExponentialFamily.entropy(d)), npy(d.entropy()), rtol=1e-10)


def test_wishart_gradients_match_finite_differences():
    L = np.linalg.cholesky(COV[0])
    check_grad(lambda df: Wishart(df, scale_tril=t64(L)).log_prob(t64(VALUES[0, 0])) + Wishart(
        df, scale_tril=t64(L)).entropy(), [4.5, 6.0])
    check_grad(lambda m: Wishart(t64(5.0), covariance_matrix=(m + m.mT) / 2).log_prob(t64(VALUES[:, 0])), COV[0])
    check_grad(lambda m: Wishart(t64(5.0), precision_matrix=(m + m.mT) / 2).entropy(), COV[0])

    def draws(m):
        tg.manual_seed(3)
        return Wishart(t64(5.0), scale_tril=m.tril()).rsample((2,))
    check_grad(draws, L, rtol=1e-5, atol=1e-8)


def test_wishart_samples_have_the_moments_and_df_gradient():
    df = t64(5.0).requires_grad_()
    d = Wishart(df, covariance_matrix=t64(COV[0]))
    tg.manual_seed(0)
    s = d.rsample((40000,))
    assert s.shape == (40000, 3, 3) and bool(d.support.check(s).all())
    np.testing.assert_allclose(npy(s.mean(0)), npy(d.mean), rtol=0.03, atol=0.1)
    np.testing.assert_allclose(npy(s.var(0)), npy(d.variance), rtol=0.1)
    s.mean(0).sum().backward()  # d E[X] / d df = Sigma, through the chi-squares' implicit gradients
    np.testing.assert_allclose(df.grad.item(), COV[0].sum(), rtol=0.03)
    e = Wishart(t64(DF), covariance_matrix=t64(COV)).expand((5, 2))
    assert e.sample((3,)).shape == (3, 5, 2, 3, 3) and e.df.shape == (5, 2)
    assert e.log_prob(t64(VALUES[:, None])).shape == (4, 5, 2)
    assert e.covariance_matrix.shape == (5, 2, 3, 3) and e._dist_chi2.batch_shape == (5, 2, 3)
    assert Wishart(7.0, scale_tril=t64(np.eye(3))).sample().dtype == F64


def test_wishart_redraws_singular_samples_with_a_warning():
    d = Wishart(t64(DF), covariance_matrix=t64(COV))
    tg.manual_seed(1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (a regular draw: no warning)
        d.rsample((3,))
    draws = iter([tg.zeros(3, 2, 3, 3, dtype=F64), d._bartlett_sampling((3,))])
    d._bartlett_sampling = lambda shape: next(draws)
    with pytest.warns(UserWarning, match="Singular sample detected."):
        s = d.rsample((3,))
    assert bool(d.support.check(s).all())
    stuck = Wishart(t64(DF), covariance_matrix=t64(COV))
    stuck._bartlett_sampling = lambda shape: tg.zeros(tuple(shape) + (2, 3, 3), dtype=F64)
    with pytest.warns(UserWarning, match="Singular sample detected."):
        assert float(stuck.rsample((2,), max_try_correction=2).abs().sum()) == 0.0


def _kl_wishart_by_hand(nu_p, cov_p, nu_q, cov_q):
    from scipy.special import multigammaln, psi
    d = cov_p.shape[-1]
    mvdigamma = sum(psi(nu_p / 2 - i / 2) for i in range(d))
    return (nu_q / 2 * (np.linalg.slogdet(cov_q)[1] - np.linalg.slogdet(cov_p)[1])
            + nu_p / 2 * (np.trace(np.linalg.solve(cov_q, cov_p)) - d)
            + multigammaln(nu_q / 2, d) - multigammaln(nu_p / 2, d) + (nu_p - nu_q) / 2 * mvdigamma)


@pytest.mark.scipy
def test_wishart_kl_divergence_closed_form_batched_and_monte_carlo():
    pytest.importorskip("scipy")
    p = Wishart(t64(DF), covariance_matrix=t64(COV))
    q = Wishart(t64([6.0, 4.0]), scale_tril=t64(np.linalg.cholesky(COV[::-1])))
    got = npy(kl_divergence(p, q))
    want = [_kl_wishart_by_hand(DF[b], COV[b], [6.0, 4.0][b], COV[::-1][b]) for b in range(2)]
    np.testing.assert_allclose(got, want, rtol=1e-10)
    from tracegrad.distributions.kl import _kl_expfamily_expfamily  # (the Bregman form agrees, one at a time)
    p0, q0 = Wishart(t64(DF[0]), covariance_matrix=t64(COV[0])), Wishart(t64(6.0), covariance_matrix=t64(COV[1]))
    np.testing.assert_allclose(npy(_kl_expfamily_expfamily(p0, q0)), want[0], rtol=1e-10)
    tg.manual_seed(2)
    x = p.sample((40000,))
    np.testing.assert_allclose(npy((p.log_prob(x) - q.log_prob(x)).mean(0)), want, rtol=0.03)
    df = t64(DF).requires_grad_()
    kl_divergence(Wishart(df, covariance_matrix=t64(COV)), q).sum().backward()  # (gradients reach p too)
    assert np.all(np.isfinite(df.grad.numpy())) and np.all(df.grad.numpy() != 0)
    with pytest.raises(ValueError, match="different event shapes"):
        kl_divergence(p, Wishart(3.0, covariance_matrix=t64(np.eye(2))))


def test_wishart_validation_errors_and_warnings():
    with pytest.raises(AssertionError, match="Exactly one of covariance_matrix or precision_matrix or scale_tril"):
        Wishart(4.0, covariance_matrix=t64(np.eye(3)), scale_tril=t64(np.eye(3)))
    with pytest.raises(AssertionError, match="Exactly one of"):
        Wishart(4.0)
    with pytest.raises(ValueError, match="scale_tril must be at least two-dimensional"):
        Wishart(4.0, covariance_matrix=t64([1.0, 2.0]))
    with pytest.raises(ValueError, match=r"Value of df=2.0 expected to be greater than ndim - 1 = 2."):
        Wishart(2.0, covariance_matrix=t64(np.eye(3)))
    with pytest.warns(UserWarning, match="Low df values detected"):
        Wishart(2.5, covariance_matrix=t64(np.eye(3)))
    with pytest.raises(ValueError, match=r"Expected parameter covariance_matrix .* PositiveDefinite\(\)"):
        Wishart(4.0, covariance_matrix=t64(-np.eye(3)))
    with pytest.raises(ValueError, match=r"Expected parameter df .* GreaterThan\(lower_bound=2\)"):
        Wishart(t64([4.0, math.nan]), covariance_matrix=t64(np.eye(3)))
    with pytest.raises(ValueError, match=r"to be within the support \(PositiveDefinite\(\)\)"):
        Wishart(4.0, covariance_matrix=t64(np.eye(3))).log_prob(t64(-np.eye(3)))
    assert repr(Wishart(4.0, scale_tril=t64(np.eye(3)))) == "Wishart(scale_tril: tracegrad.Size([3, 3]), df: 4.0)"


# ----------------------------------------------------------------------------- LKJCholesky

def test_lkj_cholesky_log_prob_is_normalized():
    """For dim 2 the free coordinate is ``L_10``; for dim 3, ``L_10`` in (-1, 1) and
    ``(L_20, L_21)`` in the unit disc (a Monte Carlo integral)."""
    for eta in (0.5, 1.0, 3.0):
        d = LKJCholesky(2, t64(eta))
        theta = (np.arange(20000) + 0.5) / 20000 * math.pi - math.pi / 2  # (L_10 = sin(theta): smooth)
        L = np.zeros(theta.shape + (2, 2))
        L[:, 0, 0], L[:, 1, 0], L[:, 1, 1] = 1, np.sin(theta), np.cos(theta)
        dens = np.exp(npy(d.log_prob(t64(L)))) * np.cos(theta)
        np.testing.assert_allclose(dens.sum() * math.pi / 20000, 1.0, rtol=1e-6)
    rng = np.random.default_rng(0)
    n = 400000
    a, rad, ang = rng.uniform(-1, 1, n), np.sqrt(rng.uniform(0, 1, n)), rng.uniform(0, 2 * math.pi, n)
    L = np.zeros((n, 3, 3))
    L[:, 0, 0], L[:, 1, 0], L[:, 1, 1] = 1, a, np.sqrt(1 - a ** 2)
    L[:, 2, 0], L[:, 2, 1] = rad * np.cos(ang), rad * np.sin(ang)
    L[:, 2, 2] = np.sqrt(np.clip(1 - rad ** 2, 1e-300, None))
    for eta in (1.0, 2.5):
        dens = np.exp(npy(LKJCholesky(3, t64(eta)).log_prob(t64(L))))
        np.testing.assert_allclose(dens.mean() * 2 * math.pi, 1.0, rtol=0.01)


def test_lkj_cholesky_samples_gradients_and_shapes():
    eta = t64([0.5, 1.0, 3.0])
    for dim in (2, 4):
        d = LKJCholesky(dim, eta)
        tg.manual_seed(0)
        s = d.sample((20000,))
        assert s.shape == (20000, 3, dim, dim) and bool(d.support.check(s).all()) and not s.requires_grad
        corr = (s @ s.mT)[..., 1, 0]  # each correlation: Beta(eta - 1 + dim/2, same) on (-1, 1)
        np.testing.assert_allclose(npy(corr.var(0)), 1 / (2 * npy(eta) + dim - 1), rtol=0.05)
        np.testing.assert_allclose(npy(corr.mean(0)), 0.0, atol=0.02)
    value = t64([[1.0, 0, 0], [0.6, 0.8, 0], [0.0, 0.6, 0.8]])
    check_grad(lambda c: LKJCholesky(3, c).log_prob(value), [0.5, 2.0])
    e = LKJCholesky(3, 2.0).expand((4, 2))
    assert e.batch_shape == (4, 2) and e.event_shape == (3, 3) and e.sample().shape == (4, 2, 3, 3)
    assert e.dim == 3 and e._beta.batch_shape == (4, 2, 3) and e.log_prob(value).shape == (4, 2)
    assert LKJCholesky(3).sample().dtype == tg.float32 and not LKJCholesky(3).has_rsample
    assert repr(LKJCholesky(3, 0.5)) == "LKJCholesky(concentration: 0.5)"
    with pytest.raises(ValueError, match="Expected dim to be an integer greater than or equal to 2. Found dim=1."):
        LKJCholesky(1)
    with pytest.raises(ValueError, match="Expected parameter concentration"):
        LKJCholesky(3, -1.0)
    with pytest.raises(ValueError, match=r"to be within the support \(CorrCholesky\(\)\)"):
        LKJCholesky(3).log_prob(2 * value)


# ----------------------------------------------------------------------------- KL divergence

KL_PAIRS = {
    "pareto_pareto": lambda: (Pareto(t64([1.0, 2.0]), t64([2.5, 3.5])), Pareto(t64([0.5, 1.5]), t64([1.5, 4.0]))),
    "pareto_exponential": lambda: (Pareto(t64([1.0, 2.0]), t64([2.5, 3.5])), Exponential(t64([0.5, 2.0]))),
    "pareto_gamma": lambda: (Pareto(t64([1.0, 2.0]), t64([2.5, 3.5])), Gamma(t64([0.5, 2.0]), t64([1.5, 0.5]))),
    "pareto_normal": lambda: (Pareto(t64([1.0, 2.0]), t64([4.5, 3.5])), Normal(t64([0.5, 2.0]), t64([1.5, 2.5]))),
    "uniform_pareto": lambda: (Uniform(t64([1.0, 3.0]), t64([2.0, 5.0])), Pareto(t64([0.5, 2.0]), t64([1.5, 3.0]))),
}


@pytest.mark.parametrize("pair", KL_PAIRS)
def test_kl_divergence_matches_monte_carlo(pair):
    p, q = KL_PAIRS[pair]()
    tg.manual_seed(13)
    x = p.sample((400000,))
    mc = npy((p.log_prob(x) - q.log_prob(x)).mean(0))
    np.testing.assert_allclose(npy(kl_divergence(p, q)), mc, rtol=0.03, atol=0.01)


def test_kl_infinite_pairs_and_gradients():
    par = Pareto(t64([1.0]), t64([2.5]))
    others = [Beta(t64([1.0]), t64([2.0])), ContinuousBernoulli(t64([0.3])), Exponential(t64([1.0])),
              Gamma(t64([1.0]), t64([1.0])), Gumbel(t64([0.0]), t64([1.0])), Laplace(t64([0.0]), t64([1.0])),
              Normal(t64([0.0]), t64([1.0]))]
    for o in others:
        assert kl_divergence(o, par).tolist() == [math.inf], o
    for o in (Beta(t64([1.0]), t64([2.0])), ContinuousBernoulli(t64([0.3])), Uniform(t64([0.0]), t64([9.0]))):
        assert kl_divergence(par, o).tolist() == [math.inf], o
    assert kl_divergence(Pareto(t64([1.0]), t64([0.9])), Exponential(t64([1.0]))).tolist() == [math.inf]
    assert kl_divergence(Pareto(t64([1.0]), t64([0.9])), Gamma(t64([1.0]), t64([1.0]))).tolist() == [math.inf]
    assert kl_divergence(Pareto(t64([1.0]), t64([1.9])), Normal(t64([0.0]), t64([1.0]))).tolist() == [math.inf]
    assert kl_divergence(Pareto(t64([1.0]), t64([2.0])), Pareto(t64([2.0]), t64([2.0]))).tolist() == [math.inf]
    assert kl_divergence(Uniform(t64([0.5]), t64([2.0])), Pareto(t64([1.0]), t64([2.0]))).tolist() == [math.inf]
    check_grad(lambda a: kl_divergence(Pareto(t64(1.0), a), Pareto(t64(0.5), t64(2.0))), [0.7, 3.0])
    with pytest.raises(NotImplementedError):
        kl_divergence(Pareto(1.0, 2.0), Weibull(1.0, 2.0))  # (transforms differ)


# ----------------------------------------------------------------------------- PyTorch itself

ORACLE_DTYPES = [(name, dtype) for name in SCALAR for dtype in ("float64", "float32")
                 if (name, dtype) != ("GeneralizedPareto", "float64")]  # (PyTorch's log_prob raises
# there: it compares the concentration with a float32 zero)


@pytest.mark.torch
@pytest.mark.parametrize("name,dtype", ORACLE_DTYPES)
def test_scalar_families_match_torch(name, dtype):
    import torch
    import torch.distributions as TD
    mine, v1 = make(name, getattr(tg, dtype))
    _, params, values = SCALAR[name]
    theirs = getattr(TD, name)(*[torch.tensor(p, dtype=getattr(torch, dtype)) for p in params])
    v2 = torch.tensor(values, dtype=getattr(torch, dtype))
    assert repr(mine).replace("tracegrad", "torch") == repr(theirs)
    assert repr(mine.support).replace("tracegrad", "torch") == repr(theirs.support)
    assert mine.has_rsample == theirs.has_rsample
    rtol = 1e-10 if dtype == "float64" else 1e-5
    if name == "VonMises":
        rtol = 1e-6  # (PyTorch's Bessel functions are polynomial fits)
    for attr in ("log_prob", "mean", "mode", "variance", "stddev", "entropy", "cdf", "icdf"):
        if name == "Kumaraswamy" and attr == "mode":
            continue  # (PyTorch's is NaN everywhere; ours is checked by hand above)
        try:
            want = read(theirs, attr, v2)
        except NotImplementedError:
            with pytest.raises(NotImplementedError):
                read(mine, attr, v1)
            continue
        np.testing.assert_allclose(npy(read(mine, attr, v1)), want.detach().numpy(), rtol=rtol, err_msg=attr)
    e, te = mine.expand((3, 2)), theirs.expand((3, 2))
    assert type(e).__name__ == type(te).__name__ and e.batch_shape == tuple(te.batch_shape)
    np.testing.assert_allclose(npy(e.log_prob(v1)), te.log_prob(v2).numpy(), rtol=rtol)


@pytest.mark.torch
@pytest.mark.parametrize("kind", ["covariance_matrix", "precision_matrix", "scale_tril"])
def test_wishart_matches_torch(kind):
    import torch
    import torch.distributions as TD
    given = {"covariance_matrix": COV, "precision_matrix": np.linalg.inv(COV),
             "scale_tril": np.linalg.cholesky(COV)}[kind]
    mine, theirs = Wishart(t64(DF), **{kind: t64(given)}), TD.Wishart(torch.tensor(DF), **{kind: torch.tensor(given)})
    assert repr(mine).replace("tracegrad", "torch") == repr(theirs)
    np.testing.assert_allclose(npy(mine.log_prob(t64(VALUES))), theirs.log_prob(torch.tensor(VALUES)).numpy(),
                               rtol=1e-10)
    for attr in ("mean", "mode", "variance", "entropy", "covariance_matrix", "precision_matrix", "scale_tril"):
        np.testing.assert_allclose(npy(read(mine, attr, None)), read(theirs, attr, None).detach().numpy(),
                                   rtol=1e-10, err_msg=attr)
    for b in range(2):  # (unbatched: PyTorch's Bregman KL mixes a batch's df terms together)
        p1 = Wishart(t64(DF[b]), covariance_matrix=t64(COV[b]))
        p2 = Wishart(t64(5.0), covariance_matrix=t64(COV[1 - b]))
        q1 = TD.Wishart(torch.tensor(DF[b]), covariance_matrix=torch.tensor(COV[b]))
        q2 = TD.Wishart(torch.tensor(5.0, dtype=torch.float64), covariance_matrix=torch.tensor(COV[1 - b]))
        np.testing.assert_allclose(kl_divergence(p1, p2).item(), TD.kl_divergence(q1, q2).item(), rtol=1e-10)


@pytest.mark.torch
def test_lkj_cholesky_matches_torch():
    import torch
    import torch.distributions as TD
    for dim in (2, 3, 5):
        mine, theirs = LKJCholesky(dim, t64([0.5, 1.0, 3.0])), TD.LKJCholesky(dim, torch.tensor([0.5, 1.0, 3.0],
                                                                                              dtype=torch.float64))
        tg.manual_seed(0)
        s = mine.sample((5,))
        np.testing.assert_allclose(npy(mine.log_prob(s)), theirs.log_prob(torch.tensor(s.numpy())).numpy(), rtol=1e-12)
        assert repr(mine).replace("tracegrad", "torch") == repr(theirs) and repr(mine.support) == repr(theirs.support)
        assert mine.event_shape == tuple(theirs.event_shape) and mine.has_rsample == theirs.has_rsample


@pytest.mark.torch
@pytest.mark.parametrize("pair", KL_PAIRS)
def test_kl_pairs_match_torch(pair):
    import torch.distributions as TD
    p, q = KL_PAIRS[pair]()
    np.testing.assert_allclose(npy(kl_divergence(p, q)), TD.kl_divergence(to_torch(p), to_torch(q)).numpy(), rtol=1e-10)


ERRORS = [
    lambda m, D: D.Pareto(1.0, m.tensor([-2.0])),
    lambda m, D: D.Pareto(m.tensor([-1.0]), 2.0),
    lambda m, D: D.Pareto(2.0, 1.0).log_prob(m.tensor([1.5])),
    lambda m, D: D.Weibull(1.0, m.tensor([-1.0])),
    lambda m, D: D.Weibull(1.0, 1.0).log_prob(m.tensor([-1.0])),
    lambda m, D: D.Kumaraswamy(m.tensor([1.0]), 0.0),
    lambda m, D: D.GeneralizedPareto(0.0, -1.0, 0.5),
    lambda m, D: D.GeneralizedPareto(0.0, 1.0, -0.5).log_prob(m.tensor(2.5)),
    lambda m, D: D.FisherSnedecor(-1.0, 2.0),
    lambda m, D: D.FisherSnedecor(1.0, 2.0).entropy(),
    lambda m, D: D.VonMises(0.0, m.tensor([-1.0])),
    lambda m, D: D.VonMises(m.zeros(3), 1.0).log_prob(m.zeros(2)),
    lambda m, D: D.Wishart(4.0),
    lambda m, D: D.Wishart(4.0, covariance_matrix=m.ones(3)),
    lambda m, D: D.Wishart(2.0, covariance_matrix=m.eye(3)),
    lambda m, D: D.Wishart(m.tensor([4.0, 2.0]), covariance_matrix=m.eye(3)),
    lambda m, D: D.Wishart(4.0, covariance_matrix=-m.eye(3)),
    lambda m, D: D.Wishart(4.0, covariance_matrix=m.eye(3)).log_prob(-m.eye(3)),
    lambda m, D: D.LKJCholesky(1),
    lambda m, D: D.LKJCholesky(3, m.tensor([-1.0])),
    lambda m, D: D.LKJCholesky(3).log_prob(2 * m.eye(3)),
]


@pytest.mark.torch
@pytest.mark.parametrize("index", range(len(ERRORS)))
def test_error_messages_match_torch(index):
    import torch
    import torch.distributions as TD

    import tracegrad.distributions as D
    ours, theirs = raised(ERRORS[index], tg, D), raised(ERRORS[index], torch, TD)
    assert theirs is not None and ours == theirs
