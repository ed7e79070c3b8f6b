"""Gamma, Chi2, InverseGamma, Beta, Dirichlet, the relaxed Bernoulli and one-hot
categorical, MixtureSameFamily and ContinuousBernoulli.

Values against SciPy and hand formulas, log_prob gradients against finite differences,
the implicit reparameterization gradients of Gamma/Beta/Dirichlet draws against finite
differences of the inverse CDF, sampling moments, validation errors, expand, KL against
closed forms; then PyTorch itself as an oracle."""
import math

import numpy as np
import pytest

import tracegrad as tg
from tracegrad.distributions import Categorical, Independent, Normal, Uniform, kl_divergence
from tracegrad.distributions._gamma_sampling import (_dirichlet_grad, _sample_dirichlet, _standard_gamma,
                                                     _standard_gamma_grad, dirichlet_grad, standard_gamma_grad)
from tracegrad.distributions.beta import Beta
from tracegrad.distributions.chi2 import Chi2
from tracegrad.distributions.continuous_bernoulli import ContinuousBernoulli
from tracegrad.distributions.dirichlet import Dirichlet
from tracegrad.distributions.exponential import Exponential
from tracegrad.distributions.gamma import Gamma
from tracegrad.distributions.inverse_gamma import InverseGamma
from tracegrad.distributions.mixture_same_family import MixtureSameFamily
from tracegrad.distributions.relaxed_bernoulli import LogitRelaxedBernoulli, RelaxedBernoulli
from tracegrad.distributions.relaxed_categorical import ExpRelaxedCategorical, RelaxedOneHotCategorical
from tracegrad.distributions.transformed_distribution import TransformedDistribution

from ._helpers import F64, check_grad, t64

# ------------------------------------------------------------------- the implicit gradients

ALPHAS = [0.1, 1.0, 5.0, 50.0]


@pytest.mark.scipy
@pytest.mark.parametrize("alpha", ALPHAS)
def test_standard_gamma_grad_is_the_inverse_cdf_derivative(alpha):
    sc = pytest.importorskip("scipy.special")
    u = np.array([1e-6, 1e-3, 0.05, 0.3, 0.5, 0.7, 0.95, 0.999, 1 - 1e-7])
    x = sc.gammaincinv(alpha, u)
    h = 1e-5 * alpha
    want = (sc.gammaincinv(alpha + h, u) - sc.gammaincinv(alpha - h, u)) / (2 * h)
    np.testing.assert_allclose(standard_gamma_grad(np.full_like(x, alpha), x), want, rtol=2e-6)


@pytest.mark.scipy
def test_standard_gamma_grad_closed_form_for_alpha_one():
    """For alpha = 1, dx/dalpha = e^x int_x^inf e^-t (log t - psi(1)) dt (the upper tail's
    alpha-derivative over the density) = log x + euler + e^x E1(x)."""
    sc = pytest.importorskip("scipy.special")
    x = np.array([1e-8, 0.01, 0.5, 1.0, 2.0, 10.0, 300.0])
    want = np.log(x) + 0.5772156649015329 + sc.exp1(x) * np.exp(x)
    np.testing.assert_allclose(standard_gamma_grad(np.ones_like(x), x), want, rtol=1e-12, atol=1e-14)


def test_standard_gamma_grad_edges():
    assert standard_gamma_grad(2.0, 0.0) == 0.0
    assert 0 < standard_gamma_grad(0.01, 1e-38) < 1e-30  # (an underflowed draw moves hardly at all)
    assert np.isfinite(standard_gamma_grad(1.0, 1e30))
    assert np.isnan(standard_gamma_grad(-1.0, 1.0))


@pytest.mark.parametrize("alpha", [100.0, 1e3, 1e4])
def test_large_alpha_quadrature_agrees_with_the_series_and_fraction(alpha):
    from tracegrad.distributions import _gamma_sampling as gs
    z = np.array([-8.0, -3.0, -1.0, -0.01, 0.0, 0.01, 1.0, 3.0, 8.0, 20.0])
    x = alpha + np.sqrt(alpha) * z
    a = np.full_like(x, alpha)
    low = x < alpha + 1
    exact = np.where(low, gs._gamma_grad_series(a, np.where(low, x, alpha)),
                     gs._gamma_grad_fraction(a, np.where(low, alpha + 2, x)))
    np.testing.assert_allclose(gs._gamma_grad_quadrature(a, x), exact, rtol=1e-11)


def test_huge_alpha_gradients_follow_the_cornish_fisher_expansion():
    """x = a + sqrt(a) z + (z^2 - 1)/3 + O(1/sqrt(a)) gives dx/da = 1 + (x - a)/(2a) -
    (z^2 - 1)/(6a) + O(a^-3/2) at fixed z; at a = 1e9 that leaves ~1e-12."""
    a, z = 1e9, np.array([-5.0, -1.0, 0.0, 2.0, 6.0])
    x = a + np.sqrt(a) * z
    want = 1 + (x - a) / (2 * a) - (z ** 2 - 1) / (6 * a)
    np.testing.assert_allclose(standard_gamma_grad(np.full_like(x, a), x), want, rtol=1e-11)


@pytest.mark.scipy
@pytest.mark.parametrize("a,b", [(0.1, 0.1), (0.5, 2.0), (1.0, 1.0), (2.0, 5.0), (5.0, 0.3), (30.0, 50.0),
                                 (200.0, 3.0)])
def test_dirichlet_grad_is_the_beta_inverse_cdf_derivative_over_one_minus_x(a, b):
    sc = pytest.importorskip("scipy.special")
    u = np.array([1e-4, 0.01, 0.3, 0.5, 0.7, 0.99, 1 - 1e-4])
    x = sc.betaincinv(a, b, u)
    keep = (x > 1e-300) & (x < 1 - 1e-12)
    x, u = x[keep], u[keep]
    h = 1e-6 * a
    dx = (sc.betaincinv(a + h, b, u) - sc.betaincinv(a - h, b, u)) / (2 * h)
    # near 1, 1 - x is a Beta(b, a) draw: differentiating it keeps the digits x lacks
    dy = (sc.betaincinv(b, a + h, 1 - u) - sc.betaincinv(b, a - h, 1 - u)) / (2 * h)
    dx = np.where(u > 0.5, -dy, dx)
    got = dirichlet_grad(x, np.full_like(x, a), np.full_like(x, a + b))
    np.testing.assert_allclose(got, dx / (1 - x), rtol=1e-5)


@pytest.mark.scipy
@pytest.mark.parametrize("alpha", ALPHAS)
def test_gamma_rsample_gradients_match_inverse_cdf_finite_differences(alpha):
    sc = pytest.importorskip("scipy.special")
    tg.manual_seed(7)
    conc = tg.tensor(alpha, dtype=F64, requires_grad=True)
    rate = tg.tensor(2.5, dtype=F64, requires_grad=True)
    draws = Gamma(conc, rate).rsample((40,))
    weights = t64(np.linspace(0.5, 1.5, 40))
    (draws * weights).sum().backward()
    x = draws.detach().numpy() * 2.5  # (standard gamma draws)
    u = sc.gammainc(alpha, x)
    inner = (u > 1e-12) & (u < 1 - 1e-12)  # (where the inverse CDF is well conditioned)
    h = 1e-5 * alpha
    dx = (sc.gammaincinv(alpha + h, u) - sc.gammaincinv(alpha - h, u)) / (2 * h)
    dx = np.where(inner, dx, standard_gamma_grad(np.full_like(x, alpha), x))
    np.testing.assert_allclose(conc.grad.item(), (weights.numpy() * dx / 2.5).sum(), rtol=1e-5)
    np.testing.assert_allclose(rate.grad.item(), -(weights.numpy() * x / 2.5 ** 2).sum(), rtol=1e-10)


def test_gamma_rsample_gradient_is_unbiased_for_the_mean():
    """E[d x / d alpha] = d E[x] / d alpha = 1 / rate."""
    tg.manual_seed(0)
    conc = tg.tensor([0.3, 2.0, 20.0], dtype=F64, requires_grad=True)
    Gamma(conc, 2.0).rsample((20000,)).mean(0).sum().backward()
    np.testing.assert_allclose(conc.grad.numpy(), [0.5, 0.5, 0.5], rtol=0.03)


@pytest.mark.scipy
@pytest.mark.parametrize("c1,c0", [(0.5, 0.5), (2.0, 3.0), (10.0, 1.5)])
def test_beta_rsample_gradients_match_inverse_cdf_finite_differences(c1, c0):
    sc = pytest.importorskip("scipy.special")
    tg.manual_seed(3)
    a = tg.tensor(c1, dtype=F64, requires_grad=True)
    b = tg.tensor(c0, dtype=F64, requires_grad=True)
    draws = Beta(a, b).rsample((30,))
    draws.sum().backward()
    x = draws.detach().numpy()
    u = sc.betainc(c1, c0, x)
    inner = (x > 1e-8) & (x < 1 - 1e-8)
    h = 1e-6
    da = (sc.betaincinv(c1 + h, c0, u) - sc.betaincinv(c1 - h, c0, u)) / (2 * h)
    db = (sc.betaincinv(c1, c0 + h, u) - sc.betaincinv(c1, c0 - h, u)) / (2 * h)
    assert inner.sum() > 20  # (draws too near 0 or 1 for the inverse CDF: our own values)
    np.testing.assert_allclose(a.grad.item(), da[inner].sum() + _beta_dx(x[~inner], c1, c0).sum(), rtol=1e-5)
    np.testing.assert_allclose(b.grad.item(), db[inner].sum() - _beta_dx(1 - x[~inner], c0, c1).sum(), rtol=1e-5)


def _beta_dx(x, a, b):
    return dirichlet_grad(x, np.full_like(x, a), np.full_like(x, a + b)) * (1 - x)


def test_beta_and_dirichlet_rsample_gradients_are_unbiased_for_the_mean():
    tg.manual_seed(1)
    a = tg.tensor([2.0, 0.5], dtype=F64, requires_grad=True)
    b = tg.tensor([3.0, 0.5], dtype=F64, requires_grad=True)
    Beta(a, b).rsample((20000,)).mean(0).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), [3 / 25, 0.5], rtol=0.05)  # d/da a/(a+b) = b/(a+b)^2
    np.testing.assert_allclose(b.grad.numpy(), [-2 / 25, -0.5], rtol=0.05)
    conc = tg.tensor([1.0, 2.0, 3.0], dtype=F64, requires_grad=True)
    (Dirichlet(conc).rsample((20000,)).mean(0) * t64([1.0, 0.0, 0.0])).sum().backward()
    np.testing.assert_allclose(conc.grad.numpy(), [5 / 36, -1 / 36, -1 / 36], rtol=0.05, atol=0.003)


@pytest.mark.scipy
def test_dirichlet_rsample_gradient_is_the_marginal_beta_one_with_the_rest_shrinking():
    sc = pytest.importorskip("scipy.special")
    tg.manual_seed(5)
    alpha = np.array([0.7, 2.0, 4.0])
    conc = tg.tensor(alpha, requires_grad=True)
    x = Dirichlet(conc).rsample()
    xs = x.detach().numpy()
    for i in range(3):
        (g,) = tg.autograd.grad(x[0] if i == 0 else x[i], conc, retain_graph=True)
        b = alpha.sum() - alpha[i]
        u = sc.betainc(alpha[i], b, xs[i])
        h = 1e-6
        dxi = (sc.betaincinv(alpha[i] + h, b, u) - sc.betaincinv(alpha[i] - h, b, u)) / (2 * h)
        np.testing.assert_allclose(g[i].item(), dxi, rtol=1e-5)  # x_i moves as its marginal Beta's draw
    (g,) = tg.autograd.grad(x.sum(), conc)
    np.testing.assert_allclose(g.numpy(), 0, atol=1e-12)  # (the draws stay on the simplex)


def test_standard_gamma_is_a_function_with_one_derivative():
    tg.manual_seed(0)
    a = tg.tensor([1.5, 3.0], dtype=F64, requires_grad=True)
    x = _standard_gamma(a)
    assert x.grad_fn.name() == "StandardGammaBackward0"
    (g,) = tg.autograd.grad(x.sum(), a, create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), _standard_gamma_grad(a.detach(), x.detach()).numpy())
    with pytest.raises(RuntimeError):
        g.sum().backward()  # (no second derivative, as in PyTorch: an error, not a wrong zero)


def test_standard_gamma_draws_follow_manual_seed_and_dtype():
    a = tg.tensor([0.5, 1.0, 7.0])
    tg.manual_seed(11)
    first = _standard_gamma(a)
    tg.manual_seed(11)
    assert (first == _standard_gamma(a)).all()
    assert first.dtype == tg.float32 and _standard_gamma(a.double()).dtype == F64
    gen = tg.Generator().manual_seed(3)
    assert (_standard_gamma(a, gen) == _standard_gamma(a, tg.Generator().manual_seed(3))).all()
    tiny = _standard_gamma(tg.tensor([-1.0, 0.0, 1e-30]))
    assert (tiny == tg.finfo(tg.float32).tiny).all()  # (PyTorch's floor for invalid or underflowed)


def test_sample_dirichlet_is_on_the_simplex_even_for_tiny_concentrations():
    tg.manual_seed(2)
    x = _sample_dirichlet(tg.tensor([[1e-3, 1e-3, 1e-3], [0.5, 1.0, 2.0], [1e-30, 1.0, 1e-30]], dtype=F64))
    np.testing.assert_allclose(x.sum(-1).numpy(), 1.0, atol=1e-12)
    assert (x > 0).all()
    np.testing.assert_allclose(x[2].numpy(), [0, 1, 0], atol=1e-12)


def test_private_ops_check_their_arguments_as_pytorch_does():
    with pytest.raises(NotImplementedError, match="\"gamma_cpu\" not implemented for 'Long'"):
        _standard_gamma(tg.tensor([1, 2]))
    with pytest.raises(TypeError, match=r"_standard_gamma\(\): argument 'input' \(position 1\) must be Tensor"):
        _standard_gamma([1.0])
    with pytest.raises(NotImplementedError, match="\"dirichlet\" not implemented for 'Long'"):
        _sample_dirichlet(tg.tensor([1, 2]))
    with pytest.raises(NotImplementedError, match="_dirichlet_grad_cpu"):
        _dirichlet_grad(tg.tensor([1, 2]), tg.tensor([1, 2]), tg.tensor([3, 3]))


# ------------------------------------------------------------------------------- Gamma, Chi2

@pytest.mark.scipy
def test_gamma_values_against_scipy():
    st = pytest.importorskip("scipy.stats")
    a, r, v = np.array([0.5, 2.0, 7.5]), np.array([1.0, 0.3, 4.0]), np.array([0.2, 5.0, 1.7])
    d = Gamma(t64(a), t64(r))
    ref = st.gamma(a, scale=1 / r)
    np.testing.assert_allclose(d.log_prob(t64(v)).numpy(), ref.logpdf(v), rtol=1e-12)
    np.testing.assert_allclose(d.entropy().numpy(), ref.entropy(), rtol=1e-12)
    np.testing.assert_allclose(d.cdf(t64(v)).numpy(), ref.cdf(v), rtol=1e-10)
    np.testing.assert_allclose(d.mean.numpy(), ref.mean())
    np.testing.assert_allclose(d.variance.numpy(), ref.var())
    np.testing.assert_allclose(d.mode.numpy(), np.maximum((a - 1) / r, 0))
    assert d.log_prob(1.0).shape == (3,)  # (a number is made a Tensor)


@pytest.mark.scipy
def test_gamma_log_prob_and_entropy_gradients_match_finite_differences():
    v = t64([0.4, 2.0, 3.3])
    check_grad(lambda a: Gamma(a, 1.7).log_prob(v) + Gamma(a, 1.7).entropy(), [0.7, 2.0, 9.0])
    check_grad(lambda r: Gamma(2.5, r).log_prob(v) + Gamma(2.5, r).entropy(), [0.3, 1.0, 4.0])
    check_grad(lambda x: Gamma(t64([0.7, 2.0, 9.0]), 1.3).log_prob(x), [0.4, 2.0, 3.3])


@pytest.mark.scipy
def test_chi2_is_gamma_of_half_df():
    st = pytest.importorskip("scipy.stats")
    df, v = np.array([1.0, 3.0, 10.5]), np.array([0.5, 2.0, 12.0])
    d = Chi2(t64(df))
    np.testing.assert_allclose(d.log_prob(t64(v)).numpy(), st.chi2(df).logpdf(v), rtol=1e-12)
    np.testing.assert_allclose(d.entropy().numpy(), st.chi2(df).entropy(), rtol=1e-12)
    np.testing.assert_allclose(d.df.numpy(), df)
    np.testing.assert_allclose(d.variance.numpy(), 2 * df)
    e = d.expand((2, 3))
    assert type(e) is Chi2 and e.batch_shape == (2, 3) and e.df.shape == (2, 3)
    assert repr(Chi2(4.0)) == "Chi2()" and Chi2(4.0).batch_shape == ()
    with pytest.raises(ValueError, match="Expected parameter df"):
        Chi2(tg.tensor([-1.0]))


def test_gamma_sampling_moments():
    tg.manual_seed(0)
    d = Gamma(tg.tensor([0.3, 2.0, 40.0], dtype=F64), tg.tensor([1.0, 0.5, 4.0], dtype=F64))
    s = d.sample((40000,))
    assert s.shape == (40000, 3) and not s.requires_grad and (s > 0).all()
    np.testing.assert_allclose(s.mean(0).numpy(), d.mean.numpy(), rtol=0.03)
    np.testing.assert_allclose(s.var(0).numpy(), d.variance.numpy(), rtol=0.06)
    tg.manual_seed(0)
    c = Chi2(tg.tensor(3.0, dtype=F64)).sample((40000,))
    assert abs(c.mean().item() - 3.0) < 0.06


def test_gamma_validation_expand_and_repr():
    with pytest.raises(ValueError, match=r"Expected parameter concentration \(Tensor of shape \(1,\)\) of "
                                         r"distribution Gamma\(.*GreaterThan\(lower_bound=0.0\)"):
        Gamma(tg.tensor([-1.0]), 1.0)
    with pytest.raises(ValueError, match="Expected parameter rate"):
        Gamma(1.0, tg.tensor([0.0]))
    Gamma(tg.tensor([-1.0]), 1.0, validate_args=False)  # (no check asked)
    with pytest.raises(ValueError, match="within the support"):
        Gamma(2.0, 1.0).log_prob(tg.tensor(-1.0))
    d = Gamma(tg.tensor([2.0]), tg.tensor([3.0]))
    e = d.expand((4, 1))
    assert e.batch_shape == (4, 1) and e.concentration.shape == (4, 1) and e.rsample().shape == (4, 1)
    assert repr(Gamma(2.0, 3.0)) == "Gamma(concentration: 2.0, rate: 3.0)"
    assert Gamma(2.0, 3.0).batch_shape == () and Gamma(2.0, 3.0).rsample((5,)).shape == (5,)
    assert Gamma.has_rsample and Gamma(1.0, 1.0).support.lower_bound == 0.0


# ------------------------------------------------------------------------------- InverseGamma

@pytest.mark.scipy
def test_inverse_gamma_values_against_scipy():
    st = pytest.importorskip("scipy.stats")
    a, r, v = np.array([0.5, 2.5, 3.5]), np.array([1.0, 2.0, 0.5]), np.array([0.3, 1.0, 4.0])
    d = InverseGamma(t64(a), t64(r))
    ref = st.invgamma(a, scale=r)
    assert isinstance(d, TransformedDistribution)
    np.testing.assert_allclose(d.log_prob(t64(v)).numpy(), ref.logpdf(v), rtol=1e-10)
    np.testing.assert_allclose(d.entropy().numpy(), ref.entropy(), rtol=1e-10)
    np.testing.assert_allclose(d.cdf(t64(v)).numpy(), ref.cdf(v), rtol=1e-10)
    np.testing.assert_allclose(d.mean.numpy(), [math.inf, 2.0 / 1.5, 0.5 / 2.5])
    np.testing.assert_allclose(d.variance.numpy(), [math.inf, 4.0 / (1.5 ** 2 * 0.5), 0.25 / (2.5 ** 2 * 1.5)])
    np.testing.assert_allclose(d.mode.numpy(), r / (a + 1))
    e = d.expand((2, 3))
    assert type(e) is InverseGamma and e.batch_shape == (2, 3) and e.concentration.shape == (2, 3)


def test_inverse_gamma_rsample_moments_and_gradient():
    tg.manual_seed(4)
    conc = tg.tensor(5.0, dtype=F64, requires_grad=True)
    draws = InverseGamma(conc, 2.0).rsample((40000,))
    assert abs(draws.mean().item() - 0.5) < 0.01
    draws.mean().backward()  # d/da (rate / (a - 1)) = -rate / (a - 1)^2
    assert abs(conc.grad.item() + 2.0 / 16) < 0.01


# --------------------------------------------------------------------------- Beta, Dirichlet

@pytest.mark.scipy
def test_beta_values_against_scipy():
    st = pytest.importorskip("scipy.stats")
    a, b, v = np.array([0.5, 2.0, 5.0]), np.array([1.5, 3.0, 0.7]), np.array([0.3, 0.9, 0.999])
    d = Beta(t64(a), t64(b))
    ref = st.beta(a, b)
    np.testing.assert_allclose(d.log_prob(t64(v)).numpy(), ref.logpdf(v), rtol=1e-11)
    np.testing.assert_allclose(d.entropy().numpy(), ref.entropy(), rtol=1e-11)
    np.testing.assert_allclose(d.mean.numpy(), ref.mean())
    np.testing.assert_allclose(d.variance.numpy(), ref.var())
    np.testing.assert_allclose(d.mode.numpy(), [0.0, 1 / 3, 1.0])  # (corners where a concentration < 1)
    np.testing.assert_allclose(d.concentration1.numpy(), a)
    np.testing.assert_allclose(d.concentration0.numpy(), b)


@pytest.mark.scipy
def test_beta_and_dirichlet_log_prob_gradients_match_finite_differences():
    v = t64([0.3, 0.8])
    check_grad(lambda a: Beta(a, t64([2.0, 0.6])).log_prob(v) + Beta(a, t64([2.0, 0.6])).entropy(), [0.7, 3.0])
    check_grad(lambda b: Beta(t64([2.0, 0.6]), b).log_prob(v), [0.7, 3.0])
    value = t64([[0.2, 0.3, 0.5], [0.6, 0.1, 0.3]])
    check_grad(lambda c: Dirichlet(c).log_prob(value) + Dirichlet(c).entropy(), [[0.5, 2.0, 3.0], [1.0, 1.0, 7.0]])


@pytest.mark.scipy
def test_dirichlet_values_against_scipy():
    st = pytest.importorskip("scipy.stats")
    alpha = np.array([0.5, 2.0, 3.0])
    v = np.array([0.2, 0.3, 0.5])
    d = Dirichlet(t64(alpha))
    np.testing.assert_allclose(d.log_prob(t64(v)).item(), st.dirichlet(alpha).logpdf(v), rtol=1e-12)
    np.testing.assert_allclose(d.entropy().item(), st.dirichlet(alpha).entropy(), rtol=1e-12)
    np.testing.assert_allclose(d.mean.numpy(), st.dirichlet(alpha).mean())
    np.testing.assert_allclose(d.variance.numpy(), st.dirichlet(alpha).var())
    np.testing.assert_allclose(Dirichlet(t64([2.0, 3.0, 5.0])).mode.numpy(), [1 / 7, 2 / 7, 4 / 7])
    np.testing.assert_allclose(Dirichlet(t64([0.5, 0.9, 0.2])).mode.numpy(), [1, 0, 0])  # (PyTorch's corner)


def test_beta_and_dirichlet_sampling_moments():
    tg.manual_seed(9)
    d = Beta(t64([0.5, 2.0, 30.0]), t64([0.5, 5.0, 10.0]))
    s = d.sample((40000,))
    assert s.shape == (40000, 3) and ((s >= 0) & (s <= 1)).all()
    np.testing.assert_allclose(s.mean(0).numpy(), d.mean.numpy(), rtol=0.02)
    np.testing.assert_allclose(s.var(0).numpy(), d.variance.numpy(), rtol=0.05)
    dd = Dirichlet(t64([[0.3, 1.0, 4.0]]))
    s = dd.sample((40000,))
    assert s.shape == (40000, 1, 3)
    np.testing.assert_allclose(s.sum(-1).numpy(), 1.0, atol=1e-12)
    np.testing.assert_allclose(s.mean(0).numpy(), dd.mean.numpy(), rtol=0.03)
    np.testing.assert_allclose(s.var(0).numpy(), dd.variance.numpy(), rtol=0.06)


def test_beta_and_dirichlet_validation_expand_and_repr():
    with pytest.raises(ValueError, match="`concentration` parameter must be at least one-dimensional."):
        Dirichlet(tg.tensor(1.0))
    with pytest.raises(ValueError, match=r"IndependentConstraint\(GreaterThan\(lower_bound=0.0\), 1\)"):
        Dirichlet(tg.tensor([1.0, -1.0]))
    with pytest.raises(ValueError, match="Expected parameter concentration"):
        Beta(-1.0, 2.0)
    with pytest.raises(ValueError, match=r"within the support \(Simplex\(\)\)"):
        Dirichlet(tg.tensor([1.0, 2.0])).log_prob(tg.tensor([0.5, 0.6]))
    with pytest.raises(ValueError, match=r"Interval\(lower_bound=0.0, upper_bound=1.0\)"):
        Beta(2.0, 3.0).log_prob(tg.tensor(1.5))
    d = Dirichlet(tg.tensor([[1.0, 2.0, 3.0]]))
    e = d.expand((4, 1))
    assert e.batch_shape == (4, 1) and e.event_shape == (3,) and e.concentration.shape == (4, 1, 3)
    assert e.rsample((2,)).shape == (2, 4, 1, 3)
    b = Beta(tg.tensor([1.0, 2.0]), tg.tensor(3.0))
    be = b.expand((5, 2))
    assert type(be) is Beta and be.batch_shape == (5, 2) and be.concentration1.shape == (5, 2)
    assert be.rsample().shape == (5, 2)
    assert repr(Beta(2.0, 3.0)) == "Beta()" and Beta(2.0, 3.0).batch_shape == ()
    assert repr(Dirichlet(tg.tensor([1.0, 2.0]))).startswith("Dirichlet(concentration: ")


# ------------------------------------------------------------------------------ KL divergence

@pytest.mark.scipy
def test_kl_same_family_against_monte_carlo_and_closed_forms():
    tg.manual_seed(0)
    p, q = Gamma(t64([2.0, 0.7]), t64([1.0, 3.0])), Gamma(t64([3.0, 1.0]), t64([0.5, 2.0]))
    x = p.sample((200000,))
    mc = (p.log_prob(x) - q.log_prob(x)).mean(0).numpy()
    np.testing.assert_allclose(kl_divergence(p, q).numpy(), mc, rtol=0.02, atol=0.005)
    # Gamma(1, r) is Exponential(r): both ways round, KL(Exp || Exp) = log(r1/r2) + r2/r1 - 1
    np.testing.assert_allclose(kl_divergence(Gamma(t64(1.0), t64(2.0)), Gamma(t64(1.0), t64(5.0))).item(),
                               math.log(2 / 5) + 5 / 2 - 1, rtol=1e-12)
    np.testing.assert_allclose(kl_divergence(Exponential(t64(2.0)), Gamma(t64(1.0), t64(5.0))).item(),
                               math.log(2 / 5) + 5 / 2 - 1, rtol=1e-12)
    np.testing.assert_allclose(kl_divergence(Gamma(t64(1.0), t64(2.0)), Exponential(t64(5.0))).item(),
                               math.log(2 / 5) + 5 / 2 - 1, rtol=1e-12)
    # Beta(a, b) is Dirichlet([a, b])
    pb, qb = Beta(t64([0.5, 3.0]), t64([2.0, 1.0])), Beta(t64([1.0, 2.0]), t64([1.0, 4.0]))
    pd = Dirichlet(tg.stack([pb.concentration1, pb.concentration0], -1))
    qd = Dirichlet(tg.stack([qb.concentration1, qb.concentration0], -1))
    np.testing.assert_allclose(kl_divergence(pb, qb).numpy(), kl_divergence(pd, qd).numpy(), rtol=1e-12)
    # against Beta(1, 1) = Uniform(0, 1): KL = -entropy
    np.testing.assert_allclose(kl_divergence(pb, Beta(t64([1.0, 1.0]), t64([1.0, 1.0]))).numpy(),
                               -pb.entropy().numpy(), rtol=1e-12)
    np.testing.assert_allclose(kl_divergence(pb, Uniform(t64([0.0, -1.0]), t64([1.0, 2.0]))).numpy(),
                               -pb.entropy().numpy() + np.log([1.0, 3.0]), rtol=1e-12)
    assert kl_divergence(pb, Uniform(t64(0.1), t64(2.0))).isinf().all()  # (mass below q's support)
    np.testing.assert_allclose(kl_divergence(pd, pd).numpy(), 0.0, atol=1e-12)


@pytest.mark.scipy
def test_kl_mixed_pairs_against_monte_carlo():
    tg.manual_seed(1)
    pairs = [(Gamma(t64(2.0), t64(1.5)), Normal(t64(1.0), t64(2.0))),
             (Beta(t64(2.0), t64(3.0)), Normal(t64(0.3), t64(0.5))),
             (Beta(t64(2.0), t64(3.0)), Gamma(t64(2.0), t64(3.0))),
             (Beta(t64(2.0), t64(3.0)), Exponential(t64(2.0))),
             (Uniform(t64(0.5), t64(2.0)), Gamma(t64(2.0), t64(1.0))),
             (Uniform(t64(0.2), t64(0.7)), Beta(t64(2.0), t64(3.0))),
             (ContinuousBernoulli(t64(0.3)), Normal(t64(0.3), t64(0.5))),
             (ContinuousBernoulli(t64(0.8)), ContinuousBernoulli(t64(0.1))),
             (Beta(t64(2.0), t64(3.0)), ContinuousBernoulli(t64(0.8))),
             (ContinuousBernoulli(t64(0.7)), Exponential(t64(2.0)))]
    for p, q in pairs:
        x = p.sample((200000,))
        mc = (p.log_prob(x) - q.log_prob(x)).mean().item()
        assert kl_divergence(p, q).item() == pytest.approx(mc, rel=0.02, abs=0.005), (p, q)
    for p, q in [(Gamma(t64(2.0), t64(1.0)), Uniform(t64(0.0), t64(1.0))),
                 (Gamma(t64(2.0), t64(1.0)), Beta(t64(2.0), t64(1.0))),
                 (Normal(t64(0.0), t64(1.0)), Gamma(t64(2.0), t64(1.0))),
                 (Normal(t64(0.0), t64(1.0)), Beta(t64(2.0), t64(1.0))),
                 (Exponential(t64(1.0)), Beta(t64(2.0), t64(1.0))),
                 (Uniform(t64(-1.0), t64(1.0)), Gamma(t64(2.0), t64(1.0))),
                 (Uniform(t64(0.5), t64(1.5)), Beta(t64(2.0), t64(1.0)))]:
        assert kl_divergence(p, q).item() == math.inf
    chi = Chi2(t64(4.0))  # (a Gamma subclass: the Gamma pair serves it)
    np.testing.assert_allclose(kl_divergence(chi, Gamma(t64(2.0), t64(0.5))).item(), 0.0, atol=1e-12)


# --------------------------------------------------------------------- relaxed distributions

def test_relaxed_bernoulli_log_prob_by_hand_and_samples():
    temp, probs = tg.tensor([0.5], dtype=F64), t64([0.1, 0.6, 0.9])
    d = RelaxedBernoulli(temp, probs)
    assert isinstance(d, TransformedDistribution) and isinstance(d.base_dist, LogitRelaxedBernoulli)
    y = np.array([0.2, 0.5, 0.95])
    # density of the binary concrete: lam a y^(-lam-1) (1-y)^(-lam-1) / (a y^-lam + (1-y)^-lam)^2
    lam, a = 0.5, probs.numpy() / (1 - probs.numpy())
    dens = lam * a * y ** (-lam - 1) * (1 - y) ** (-lam - 1) / (a * y ** -lam + (1 - y) ** -lam) ** 2
    np.testing.assert_allclose(d.log_prob(t64(y)).numpy(), np.log(dens), rtol=1e-10)
    tg.manual_seed(0)
    s = d.sample((50000,))
    assert s.shape == (50000, 3) and ((s > 0) & (s < 1)).all()
    np.testing.assert_allclose((s > 0.5).double().mean(0).numpy(), probs.numpy(), atol=0.01)  # P(y > 1/2) = p
    np.testing.assert_allclose(d.temperature.numpy(), [0.5])
    np.testing.assert_allclose(d.logits.numpy(), np.log(a))
    e = d.expand((2, 3))
    assert type(e) is RelaxedBernoulli and e.batch_shape == (2, 3) and e.probs.shape == (2, 3)


def test_relaxed_bernoulli_gradients():
    check_grad(lambda lg: RelaxedBernoulli(t64(0.7), logits=lg).log_prob(t64([0.2, 0.9])), [0.3, -1.2])
    check_grad(lambda tmp: LogitRelaxedBernoulli(tmp, logits=t64([0.3, 2.0])).log_prob(t64([0.5, -1.0])),
               [0.4, 2.0])
    lg = t64([0.5, -0.5]).requires_grad_()
    tg.manual_seed(0)
    RelaxedBernoulli(t64(0.5), logits=lg).rsample((3,)).sum().backward()
    assert lg.grad is not None and (lg.grad > 0).all()


@pytest.mark.scipy
def test_relaxed_one_hot_categorical_log_prob_by_hand_and_samples():
    probs = np.array([0.1, 0.2, 0.3, 0.4])
    temp = 0.7
    d = RelaxedOneHotCategorical(t64(temp), t64(probs))
    assert isinstance(d.base_dist, ExpRelaxedCategorical) and d.event_shape == (4,)
    y = np.array([0.1, 0.2, 0.3, 0.4])
    k = 4
    # the concrete density (Maddison et al.), in the coordinates of the simplex's embedding:
    # (k-1)! lam^(k-1) prod(p_i y_i^(-lam-1)) / (sum p_i y_i^-lam)^k, times the exp transform's 1/prod(y)
    # relative to ExpRelaxedCategorical -- which is what log_prob gives
    dens = (math.factorial(k - 1) * temp ** (k - 1) * np.prod(probs * y ** (-temp - 1))
            / np.sum(probs * y ** -temp) ** k)
    np.testing.assert_allclose(d.log_prob(t64(y)).item(), math.log(dens), rtol=1e-10)
    tg.manual_seed(0)
    s = d.sample((40000,))
    np.testing.assert_allclose(s.sum(-1).numpy(), 1.0, atol=1e-12)
    winners = np.bincount(s.numpy().argmax(-1), minlength=4) / 40000
    np.testing.assert_allclose(winners, probs, atol=0.01)  # (the Gumbel-max trick)
    e = d.expand((2,))
    assert type(e) is RelaxedOneHotCategorical and e.batch_shape == (2,) and e.rsample().shape == (2, 4)
    logits = t64([0.1, 0.2, -0.3]).requires_grad_()
    RelaxedOneHotCategorical(t64(0.5), logits=logits).rsample()[0].backward()
    assert logits.grad is not None and logits.grad[0] > 0


def test_relaxed_validation_messages():
    with pytest.raises(ValueError, match="Either `probs` or `logits` must be specified, but not both."):
        RelaxedBernoulli(tg.tensor(1.0))
    with pytest.raises(ValueError, match="Either `probs` or `logits` must be specified, but not both."):
        RelaxedOneHotCategorical(tg.tensor(1.0), tg.tensor([0.5, 0.5]), tg.tensor([0.0, 0.0]))
    with pytest.raises(ValueError, match="Expected parameter probs"):
        RelaxedBernoulli(tg.tensor(1.0), tg.tensor([1.5]))
    with pytest.raises(ValueError, match="within the support"):
        RelaxedBernoulli(tg.tensor(1.0), tg.tensor([0.5])).log_prob(tg.tensor([1.5]))


# ------------------------------------------------------------------------ MixtureSameFamily

def _gmm():
    mix = Categorical(t64([1.0, 2.0, 3.0]))
    comp = Normal(t64([-1.0, 0.0, 2.0]), t64([0.5, 1.0, 2.0]))
    return MixtureSameFamily(mix, comp), np.array([1, 2, 3]) / 6, np.array([-1.0, 0.0, 2.0]), np.array([0.5, 1, 2])


def test_mixture_log_prob_cdf_mean_variance_by_hand():
    m, w, mu, sd = _gmm()
    x = np.array([-1.0, 0.5, 3.0])
    dens = (w * np.exp(-0.5 * ((x[:, None] - mu) / sd) ** 2) / (sd * math.sqrt(2 * math.pi))).sum(-1)
    np.testing.assert_allclose(m.log_prob(t64(x)).numpy(), np.log(dens), rtol=1e-12)
    cdf = (w * 0.5 * (1 + np.vectorize(math.erf)((x[:, None] - mu) / (sd * math.sqrt(2))))).sum(-1)
    np.testing.assert_allclose(m.cdf(t64(x)).numpy(), cdf, rtol=1e-12)
    mean = (w * mu).sum()
    np.testing.assert_allclose(m.mean.item(), mean)
    np.testing.assert_allclose(m.variance.item(), (w * (sd ** 2 + (mu - mean) ** 2)).sum())
    assert m.batch_shape == () and m.event_shape == () and not m.has_rsample


def test_mixture_gradients_and_sampling():
    check_grad(lambda loc: MixtureSameFamily(Categorical(t64([0.2, 0.8])), Normal(loc, t64([1.0, 0.5])))
               .log_prob(t64([0.3, -1.0, 2.0])), [0.1, 1.0])
    check_grad(lambda lg: MixtureSameFamily(Categorical(logits=lg), Normal(t64([0.0, 2.0]), t64([1.0, 0.5])))
               .log_prob(t64([0.3, -1.0, 2.0])), [0.1, 1.0])
    m = _gmm()[0]
    tg.manual_seed(0)
    s = m.sample((60000,))
    assert s.shape == (60000,)
    assert abs(s.mean().item() - m.mean.item()) < 0.03
    assert abs(s.var().item() / m.variance.item() - 1) < 0.03


def test_mixture_of_multivariate_components_shapes_and_expand():
    tg.manual_seed(0)
    mix = Categorical(tg.rand(3, 5, dtype=F64))
    comp = Independent(Normal(tg.randn(3, 5, 2, dtype=F64), tg.rand(3, 5, 2, dtype=F64) + 0.1), 1)
    m = MixtureSameFamily(mix, comp)
    assert m.batch_shape == (3,) and m.event_shape == (2,)
    assert m.sample((4,)).shape == (4, 3, 2)
    x = tg.randn(4, 3, 2, dtype=F64)
    want = tg.logsumexp(comp.log_prob(x.unsqueeze(-2)) + mix.logits.log_softmax(-1), -1)
    np.testing.assert_allclose(m.log_prob(x).numpy(), want.numpy(), rtol=1e-12)
    assert m.mean.shape == (3, 2) and m.variance.shape == (3, 2)
    e = m.expand((6, 3))
    assert type(e) is MixtureSameFamily and e.batch_shape == (6, 3) and e.sample().shape == (6, 3, 2)
    assert repr(m.support) == "MixtureSameFamilyConstraint(IndependentConstraint(Real(), 1))"
    shared = MixtureSameFamily(Categorical(t64([0.5, 0.5])), Normal(tg.randn(3, 2, dtype=F64), t64(1.0)))
    assert shared.batch_shape == (3,) and shared.mean.shape == (3,)


def test_mixture_validation_messages():
    comp = Normal(tg.zeros(3), tg.ones(3))
    with pytest.raises(ValueError, match="The Mixture distribution needs to be an"):
        MixtureSameFamily(comp, comp)
    with pytest.raises(ValueError, match="The Component distribution needs to be an"):
        MixtureSameFamily(Categorical(tg.ones(3)), "normal")
    with pytest.raises(ValueError, match=r"`mixture_distribution component` \(2\) does not equal "
                                         r"`component_distribution.batch_shape\[-1\]` \(3\)"):
        MixtureSameFamily(Categorical(tg.ones(2)), comp)
    with pytest.raises(ValueError, match="is not compatible with"):
        MixtureSameFamily(Categorical(tg.ones(4, 3)), Normal(tg.zeros(2, 3), tg.ones(2, 3)))
    m = MixtureSameFamily(Categorical(tg.ones(2)), Gamma(tg.ones(2), tg.ones(2)))
    with pytest.raises(ValueError, match="within the support"):
        m.log_prob(tg.tensor([-1.0]))


# ---------------------------------------------------------------------- ContinuousBernoulli

def _cb_norm(p):
    return np.where(np.abs(p - 0.5) < 1e-9, 2.0, 2 * np.arctanh(1 - 2 * p) / (1 - 2 * p))


def test_continuous_bernoulli_values_by_hand():
    p = np.array([0.1, 0.3, 0.4999, 0.7, 0.99])
    x = np.array([0.2, 0.9, 0.5, 0.0, 1.0])
    d = ContinuousBernoulli(t64(p))
    np.testing.assert_allclose(d.log_prob(t64(x)).numpy(),
                               np.log(_cb_norm(p)) + x * np.log(p) + (1 - x) * np.log1p(-p), rtol=1e-6)
    grid = np.linspace(0, 1, 200001)
    dens = _cb_norm(p)[:, None] * p[:, None] ** grid * (1 - p[:, None]) ** (1 - grid)
    trap = np.trapezoid if hasattr(np, "trapezoid") else np.trapz
    np.testing.assert_allclose(d.mean.numpy(), trap(grid * dens, grid), rtol=1e-6)
    np.testing.assert_allclose(d.variance.numpy(), trap(grid ** 2 * dens, grid) - d.mean.numpy() ** 2, rtol=1e-5)
    np.testing.assert_allclose(d.entropy().numpy(), -trap(dens * np.log(dens), grid), rtol=1e-5, atol=1e-7)
    u = t64([0.1, 0.5, 0.7, 0.25, 0.9])
    np.testing.assert_allclose(d.cdf(d.icdf(u)).numpy(), u.numpy(), rtol=1e-6)


def test_continuous_bernoulli_gradients_sampling_and_checks():
    check_grad(lambda lg: ContinuousBernoulli(logits=lg).log_prob(t64([0.2, 0.7, 0.5])), [-2.0, 1.0, 3.0])
    check_grad(lambda lg: ContinuousBernoulli(logits=lg).entropy(), [-2.0, 1.0, 3.0], rtol=1e-5)
    tg.manual_seed(0)
    d = ContinuousBernoulli(t64([0.2, 0.8]))
    s = d.sample((40000,))
    np.testing.assert_allclose(s.mean(0).numpy(), d.mean.numpy(), atol=0.005)
    lg = t64([0.4]).requires_grad_()
    ContinuousBernoulli(logits=lg).rsample((5,)).sum().backward()
    assert lg.grad is not None
    with pytest.raises(ValueError, match="The parameter probs has invalid values"):
        ContinuousBernoulli(tg.tensor([1.5]), validate_args=True)
    with pytest.raises(ValueError, match="Either `probs` or `logits` must be specified, but not both."):
        ContinuousBernoulli()
    e = d.expand((3, 2))
    assert e.batch_shape == (3, 2) and e._lims == d._lims
    np.testing.assert_allclose(kl_divergence(d, d).numpy(), 0, atol=1e-12)


# ---------------------------------------------------------------------------- PyTorch oracle

def _torch():
    return pytest.importorskip("torch")


def _same(ours, theirs, rtol=1e-6, atol=1e-8):
    np.testing.assert_allclose(np.asarray(ours.detach().numpy(), dtype=np.float64),
                               theirs.detach().double().numpy(), rtol=rtol, atol=atol)


_MODULES = {"Gamma": "gamma", "Chi2": "chi2", "InverseGamma": "inverse_gamma", "Beta": "beta",
            "Dirichlet": "dirichlet", "RelaxedBernoulli": "relaxed_bernoulli",
            "RelaxedOneHotCategorical": "relaxed_categorical", "ContinuousBernoulli": "continuous_bernoulli"}


def _both(name, *args, **kwargs):
    """Our distribution ``name`` and PyTorch's, made from the same (float64) arguments:
    lists become tensors, anything else is passed as it is."""
    import importlib
    torch = _torch()
    ours_cls = getattr(importlib.import_module(f"tracegrad.distributions.{_MODULES[name]}"), name)

    def ours(a):
        return t64(a) if isinstance(a, list) else a

    def theirs(a):
        return torch.tensor(a, dtype=torch.float64) if isinstance(a, list) else a

    return (ours_cls(*map(ours, args), **{k: ours(v) for k, v in kwargs.items()}),
            getattr(torch.distributions, name)(*map(theirs, args), **{k: theirs(v) for k, v in kwargs.items()}))


ORACLE_CASES = [
    ("Gamma", ([0.5, 2.0, 7.5], [1.0, 0.3, 4.0]), {}, [0.2, 5.0, 1.7]),
    ("Chi2", ([1.0, 3.0, 10.5],), {}, [0.5, 2.0, 12.0]),
    ("InverseGamma", ([0.5, 2.5, 3.5], [1.0, 2.0, 0.5]), {}, [0.3, 1.0, 4.0]),
    ("Beta", ([0.5, 2.0, 5.0], [1.5, 3.0, 0.7]), {}, [0.3, 0.9, 0.999]),
    ("Dirichlet", ([[0.5, 2.0, 3.0], [0.3, 0.2, 0.9]],), {}, [[0.2, 0.3, 0.5], [0.1, 0.1, 0.8]]),
    ("RelaxedBernoulli", ([2.2], [0.1, 0.2, 0.99]), {}, [0.2, 0.5, 0.9]),
    ("RelaxedBernoulli", ([0.5],), {"logits": [0.1, -2.0, 3.0]}, [0.2, 0.5, 0.9]),
    ("RelaxedOneHotCategorical", ([2.2], [0.1, 0.2, 0.3, 0.4]), {}, [0.1, 0.2, 0.3, 0.4]),
    ("ContinuousBernoulli", ([0.1, 0.4995, 0.7, 0.999],), {}, [0.2, 0.5, 0.7, 0.99]),
    ("ContinuousBernoulli", (), {"logits": [0.3, -1.0, 2.0, 0.0]}, [0.2, 0.5, 0.7, 0.99]),
]


@pytest.mark.torch
@pytest.mark.scipy
@pytest.mark.parametrize("name,args,kwargs,value", ORACLE_CASES)
def test_oracle_values(name, args, kwargs, value):
    torch = _torch()
    ours, theirs = _both(name, *args, **kwargs)
    _same(ours.log_prob(t64(value)), theirs.log_prob(torch.tensor(value, dtype=torch.float64)), rtol=1e-10)
    for attr in ("mean", "variance", "mode", "stddev"):
        try:
            want = getattr(theirs, attr)
        except NotImplementedError:
            with pytest.raises(NotImplementedError):
                getattr(ours, attr)
            continue
        _same(getattr(ours, attr), want, rtol=1e-10)
    try:
        want = theirs.entropy()
    except NotImplementedError:
        want = None
    if want is not None:
        _same(ours.entropy(), want, rtol=1e-10)
    assert ours.batch_shape == tuple(theirs.batch_shape) and ours.event_shape == tuple(theirs.event_shape)
    assert repr(ours).replace("tracegrad", "torch") == repr(theirs)
    assert ours.has_rsample == theirs.has_rsample
    assert repr(ours.support) == repr(theirs.support)
    if name in ("Gamma", "Chi2", "InverseGamma", "ContinuousBernoulli"):
        _same(ours.cdf(t64(value)), theirs.cdf(torch.tensor(value, dtype=torch.float64)), rtol=1e-8)
    e, te = ours.expand((2,) + tuple(ours.batch_shape)), theirs.expand((2,) + tuple(theirs.batch_shape))
    assert type(e).__name__ == type(te).__name__ and e.batch_shape == tuple(te.batch_shape)
    _same(e.log_prob(t64(value)), te.log_prob(torch.tensor(value, dtype=torch.float64)), rtol=1e-10)


@pytest.mark.torch
@pytest.mark.scipy
def test_oracle_kl_divergences():
    torch = _torch()
    TD = torch.distributions
    g1, tg1 = _both("Gamma", [2.0, 0.7], [1.0, 3.0])
    g2, tg2 = _both("Gamma", [3.0, 1.0], [0.5, 2.0])
    b1, tb1 = _both("Beta", [0.5, 3.0], [2.0, 1.0])
    b2, tb2 = _both("Beta", [1.0, 2.0], [1.0, 4.0])
    d1, td1 = _both("Dirichlet", [[0.5, 2.0, 3.0], [0.3, 0.2, 0.9]])
    d2, td2 = _both("Dirichlet", [[1.0, 1.0, 1.0], [2.0, 0.5, 0.9]])
    c1, tc1 = _both("ContinuousBernoulli", [0.2, 0.7])
    c2, tc2 = _both("ContinuousBernoulli", [0.9, 0.4])
    i1, ti1 = _both("InverseGamma", [2.0, 0.7], [1.0, 3.0])
    i2, ti2 = _both("InverseGamma", [3.0, 1.0], [0.5, 2.0])

    def tt(a):
        return torch.tensor(a, dtype=torch.float64)

    n, tn = Normal(t64([0.3, 1.0]), t64([0.5, 2.0])), TD.Normal(tt([0.3, 1.0]), tt([0.5, 2.0]))
    u, tu = Uniform(t64([0.2, -1.0]), t64([0.7, 2.0])), TD.Uniform(tt([0.2, -1.0]), tt([0.7, 2.0]))
    ex, tex = Exponential(t64([2.0, 0.5])), TD.Exponential(tt([2.0, 0.5]))
    pairs = [((g1, g2), (tg1, tg2)), ((b1, b2), (tb1, tb2)), ((d1, d2), (td1, td2)), ((c1, c2), (tc1, tc2)),
             ((i1, i2), (ti1, ti2)), ((g1, n), (tg1, tn)), ((g1, u), (tg1, tu)), ((g1, ex), (tg1, tex)),
             ((ex, g1), (tex, tg1)), ((g1, b1), (tg1, tb1)), ((b1, n), (tb1, tn)), ((b1, u), (tb1, tu)),
             ((b1, ex), (tb1, tex)), ((b1, g1), (tb1, tg1)), ((n, b1), (tn, tb1)), ((n, g1), (tn, tg1)),
             ((u, g1), (tu, tg1)), ((u, b1), (tu, tb1)), ((ex, b1), (tex, tb1)), ((b1, c1), (tb1, tc1)),
             ((c1, n), (tc1, tn)), ((c1, u), (tc1, tu)), ((c1, ex), (tc1, tex)), ((n, c1), (tn, tc1)),
             ((u, c1), (tu, tc1)), ((ex, c1), (tex, tc1)), ((g1, c1), (tg1, tc1))]
    for (p, q), (tp, tq) in pairs:
        _same(kl_divergence(p, q), TD.kl_divergence(tp, tq), rtol=1e-10)


@pytest.mark.torch
def test_oracle_mixture_same_family():
    torch = _torch()
    TD = torch.distributions
    probs, locs, scales = [[1.0, 2.0, 3.0], [3.0, 1.0, 1.0]], np.random.default_rng(0).normal(size=(2, 3, 2)), \
        np.random.default_rng(1).uniform(0.2, 2.0, size=(2, 3, 2))
    ours = MixtureSameFamily(Categorical(t64(probs)), Independent(Normal(t64(locs), t64(scales)), 1))
    theirs = TD.MixtureSameFamily(TD.Categorical(torch.tensor(probs, dtype=torch.float64)),
                                  TD.Independent(TD.Normal(torch.tensor(locs), torch.tensor(scales)), 1))
    x = np.random.default_rng(2).normal(size=(4, 2, 2))
    _same(ours.log_prob(t64(x)), theirs.log_prob(torch.tensor(x)), rtol=1e-10)
    _same(ours.mean, theirs.mean, rtol=1e-10)
    _same(ours.variance, theirs.variance, rtol=1e-10)
    assert repr(ours).replace("tracegrad", "torch") == repr(theirs)
    assert repr(ours.support) == repr(theirs.support)
    flat = MixtureSameFamily(Categorical(t64([0.2, 0.8])), Normal(t64([0.0, 1.0]), t64([1.0, 0.3])))
    tflat = TD.MixtureSameFamily(TD.Categorical(torch.tensor([0.2, 0.8], dtype=torch.float64)),
                                 TD.Normal(torch.tensor([0.0, 1.0], dtype=torch.float64),
                                           torch.tensor([1.0, 0.3], dtype=torch.float64)))
    v = [-1.0, 0.5, 2.0]
    _same(flat.cdf(t64(v)), tflat.cdf(torch.tensor(v, dtype=torch.float64)), rtol=1e-10)


@pytest.mark.torch
def test_oracle_error_messages():
    torch = _torch()
    TD = torch.distributions
    cases = [
        (lambda: Gamma(tg.tensor([-1.0]), 1.0), lambda: TD.Gamma(torch.tensor([-1.0]), 1.0)),
        (lambda: Chi2(tg.tensor([-1.0])), lambda: TD.Chi2(torch.tensor([-1.0]))),
        (lambda: Beta(-1.0, 2.0), lambda: TD.Beta(-1.0, 2.0)),
        (lambda: Dirichlet(tg.tensor(1.0)), lambda: TD.Dirichlet(torch.tensor(1.0))),
        (lambda: Dirichlet(tg.tensor([1.0, -1.0])), lambda: TD.Dirichlet(torch.tensor([1.0, -1.0]))),
        (lambda: Beta(2.0, 3.0).log_prob(tg.tensor(1.5)), lambda: TD.Beta(2.0, 3.0).log_prob(torch.tensor(1.5))),
        (lambda: Gamma(2.0, 1.0).log_prob(tg.tensor(-1.0)), lambda: TD.Gamma(2.0, 1.0).log_prob(torch.tensor(-1.0))),
        (lambda: RelaxedBernoulli(tg.tensor(1.0)), lambda: TD.RelaxedBernoulli(torch.tensor(1.0))),
        (lambda: ContinuousBernoulli(tg.tensor([1.5]), validate_args=True),
         lambda: TD.ContinuousBernoulli(torch.tensor([1.5]), validate_args=True)),
        (lambda: MixtureSameFamily(Categorical(tg.ones(2)), Normal(tg.zeros(3), tg.ones(3))),
         lambda: TD.MixtureSameFamily(TD.Categorical(torch.ones(2)), TD.Normal(torch.zeros(3), torch.ones(3)))),
        (lambda: _standard_gamma(tg.tensor([1, 2])), lambda: torch._standard_gamma(torch.tensor([1, 2]))),
        (lambda: _sample_dirichlet(tg.tensor([1, 2])), lambda: torch._sample_dirichlet(torch.tensor([1, 2]))),
    ]
    for ours, theirs in cases:
        with pytest.raises(Exception) as want:
            theirs()
        with pytest.raises(type(want.value)) as got:
            ours()
        assert str(got.value).replace("tracegrad", "torch") == str(want.value)


@pytest.mark.torch
def test_oracle_implicit_gradients_agree_with_pytorchs_approximations():
    """PyTorch's _standard_gamma_grad and _dirichlet_grad are fitted approximations (off
    by up to ~1e-3 and ~1e-2 relative: checked against mpmath); ours sum the series and
    agree with mpmath to ~1e-13. So they agree to PyTorch's tolerance."""
    torch = _torch()
    rng = np.random.default_rng(0)
    alpha = np.repeat([0.1, 0.5, 1.0, 3.0, 5.0, 20.0, 50.0, 500.0], 50)
    x = rng.gamma(alpha)
    want = torch._standard_gamma_grad(torch.tensor(alpha), torch.tensor(x)).numpy()
    got = _standard_gamma_grad(t64(alpha), t64(x)).numpy()
    np.testing.assert_allclose(got, want, rtol=2e-3, atol=1e-12)
    conc = rng.uniform(0.2, 10.0, size=(300, 3))
    xs = rng.dirichlet(conc[0], size=300)
    total = conc.sum(-1, keepdims=True).repeat(3, -1)
    want = torch._dirichlet_grad(torch.tensor(xs), torch.tensor(conc), torch.tensor(total)).numpy()
    got = _dirichlet_grad(t64(xs), t64(conc), t64(total)).numpy()
    np.testing.assert_allclose(got, want, rtol=1.5e-2, atol=1e-9)
    # the concentration's gradient through a Dirichlet draw: PyTorch's formula given the same draw
    from torch.distributions.dirichlet import _Dirichlet_backward
    g = rng.normal(size=xs.shape)
    from tracegrad.distributions._gamma_sampling import _dirichlet_backward
    np.testing.assert_allclose(_dirichlet_backward(t64(xs), t64(conc), t64(g)).numpy(),
                               _Dirichlet_backward(torch.tensor(xs), torch.tensor(conc), torch.tensor(g)).numpy(),
                               rtol=1.5e-2, atol=1e-4)


def test_float32_draws_and_gradients_keep_their_dtype():
    tg.manual_seed(0)
    conc, rate = tg.tensor([0.5, 4.0], requires_grad=True), tg.tensor([2.0, 1.0], requires_grad=True)
    x = Gamma(conc, rate).rsample((3,))
    assert x.dtype == tg.float32 and x.grad_fn is not None
    x.sum().backward()
    assert conc.grad.dtype == tg.float32 and rate.grad.dtype == tg.float32 and tg.isfinite(conc.grad).all()
    c = tg.tensor([0.3, 1.0, 5.0], requires_grad=True)
    Dirichlet(c).rsample((4,))[..., 0].sum().backward()
    assert c.grad.dtype == tg.float32 and tg.isfinite(c.grad).all()
    assert Gamma(conc, rate).sample().grad_fn is None and Beta(conc, rate).sample().grad_fn is None
