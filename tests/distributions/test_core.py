"""torch.distributions' base and first families: Normal, Categorical, Bernoulli, Uniform,
Independent, kl_divergence. Values against hand formulas, gradients against finite
differences, samples by their moments, errors by type and message; then PyTorch itself."""
import math

import numpy as np
import pytest

import tracegrad as tg
from tracegrad.distributions import (Bernoulli, Categorical, Distribution, Independent, Normal, Uniform,
                                     constraints, kl_divergence, register_kl)

from ._helpers import grad_of


# ----------------------------------------------------------------------------- Normal

def test_normal_log_prob_cdf_icdf_entropy_by_hand():
    loc, scale, v = np.array([0.0, 1.5]), np.array([1.0, 0.5]), np.array([0.3, 2.0])
    d = Normal(tg.tensor(loc), tg.tensor(scale))
    expected = -((v - loc) ** 2) / (2 * scale ** 2) - np.log(scale) - 0.5 * math.log(2 * math.pi)
    np.testing.assert_allclose(d.log_prob(tg.tensor(v)).numpy(), expected, rtol=1e-12)
    cdf = 0.5 * (1 + np.array([math.erf(z) for z in (v - loc) / scale / math.sqrt(2)]))
    np.testing.assert_allclose(d.cdf(tg.tensor(v)).numpy(), cdf, rtol=1e-12)
    np.testing.assert_allclose(d.icdf(tg.tensor(cdf)).numpy(), v, rtol=1e-9)
    np.testing.assert_allclose(d.entropy().numpy(), 0.5 + 0.5 * math.log(2 * math.pi) + np.log(scale))
    assert d.batch_shape == (2,) and d.event_shape == () and d.mean is d.loc and d.stddev is d.scale
    np.testing.assert_allclose(d.variance.numpy(), scale ** 2)


def test_normal_of_numbers_has_an_empty_batch_and_default_dtype():
    d = Normal(0.0, 2.0)
    assert d.batch_shape == () and d.loc.dtype == tg.float32
    assert Normal(tg.zeros(3, dtype=tg.float64), 1.0).scale.dtype == tg.float64
    assert repr(d) == "Normal(loc: 0.0, scale: 2.0)"


def test_normal_log_prob_gradients_match_finite_differences():
    v = tg.tensor([0.3, -1.0, 2.0], dtype=tg.float64)
    got, want = grad_of(lambda loc: Normal(loc, 0.7).log_prob(v), np.array([0.1, 0.2, -0.5]))
    np.testing.assert_allclose(got, want, rtol=1e-6)
    got, want = grad_of(lambda s: Normal(0.5, s).log_prob(v) + Normal(0.5, s).entropy(), np.array([0.4, 1.0, 3.0]))
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_normal_rsample_is_reparameterized_and_sample_is_not():
    tg.manual_seed(0)
    loc = tg.tensor([1.0, -2.0], requires_grad=True)
    scale = tg.tensor([0.5, 2.0], requires_grad=True)
    d = Normal(loc, scale)
    x = d.rsample((5,))
    assert x.shape == (5, 2) and x.requires_grad and d.has_rsample
    x.sum().backward()
    np.testing.assert_allclose(loc.grad.numpy(), [5.0, 5.0])
    eps = (x.detach() - loc.detach()) / scale.detach()
    np.testing.assert_allclose(scale.grad.numpy(), eps.sum(0).numpy(), rtol=1e-5)
    assert not d.sample((3,)).requires_grad


def test_normal_samples_have_its_moments():
    tg.manual_seed(1)
    s = Normal(tg.tensor([2.0, -1.0]), tg.tensor([0.5, 3.0])).sample((20000,))
    np.testing.assert_allclose(s.mean(0).numpy(), [2.0, -1.0], atol=0.06)
    np.testing.assert_allclose(s.std(0).numpy(), [0.5, 3.0], rtol=0.03)


def test_normal_validates_its_arguments_and_values():
    with pytest.raises(ValueError, match=r"Expected parameter scale \(Tensor of shape \(2,\)\) of distribution "
                                         r"Normal\(.*\) to satisfy the constraint GreaterThan\(lower_bound=0.0\)"):
        Normal(tg.zeros(2), tg.tensor([1.0, -1.0]))
    Normal(tg.zeros(2), tg.tensor([1.0, -1.0]), validate_args=False)  # no check
    with pytest.raises(ValueError, match="The value argument to log_prob must be a Tensor"):
        Normal(0.0, 1.0).log_prob(0.5)
    with pytest.raises(ValueError, match="Value is not broadcastable with batch_shape"):
        Normal(tg.zeros(3), 1.0).log_prob(tg.zeros(2))


def test_set_default_validate_args_turns_validation_off():
    try:
        Distribution.set_default_validate_args(False)
        Normal(0.0, -1.0)
    finally:
        Distribution.set_default_validate_args(True)
    with pytest.raises(ValueError):
        Normal(0.0, -1.0)
    with pytest.raises(ValueError):
        Distribution.set_default_validate_args("yes")


def test_expand_gives_views_with_the_new_batch_shape():
    d = Normal(tg.tensor([0.0, 1.0]), tg.tensor([1.0, 2.0]))
    e = d.expand((3, 2))
    assert e.batch_shape == (3, 2) and e.loc.shape == (3, 2) and type(e) is Normal
    np.testing.assert_allclose(e.log_prob(tg.zeros(3, 2)).numpy(), np.tile(d.log_prob(tg.zeros(2)).numpy(), (3, 1)))
    c = Categorical(logits=tg.tensor([0.0, 1.0, 2.0])).expand((4,))
    assert c.batch_shape == (4,) and c.logits.shape == (4, 3) and c.sample().shape == (4,)


# ----------------------------------------------------------------------------- Categorical

def test_categorical_from_probs_and_from_logits_agree():
    p = np.array([[0.2, 0.3, 0.5], [0.6, 0.3, 0.1]])
    a, b = Categorical(probs=tg.tensor(p * 3)), Categorical(logits=tg.tensor(np.log(p) + 7))
    np.testing.assert_allclose(a.probs.numpy(), p)
    np.testing.assert_allclose(b.probs.numpy(), p, rtol=1e-12)
    v = tg.tensor([2, 0])
    np.testing.assert_allclose(a.log_prob(v).numpy(), np.log([0.5, 0.6]))
    np.testing.assert_allclose(b.log_prob(v).numpy(), np.log([0.5, 0.6]), rtol=1e-12)
    np.testing.assert_allclose(a.entropy().numpy(), -(p * np.log(p)).sum(-1))
    assert a.batch_shape == (2,) and a.event_shape == () and a.param_shape == (2, 3)
    np.testing.assert_array_equal(a.mode.numpy(), [2, 0])
    assert np.isnan(a.mean.numpy()).all() and a.mean.shape == (2,)


def test_categorical_log_prob_gradient_and_broadcast_values():
    got, want = grad_of(lambda lg: Categorical(logits=lg).log_prob(tg.tensor([[1], [2]])),
                        np.array([0.1, -0.3, 0.8]))
    np.testing.assert_allclose(got, want, rtol=1e-6)
    lp = Categorical(logits=tg.zeros(2, 4)).log_prob(tg.tensor([[0], [3], [1]]))
    assert lp.shape == (3, 2)
    np.testing.assert_allclose(lp.numpy(), np.full((3, 2), -math.log(4)))


def test_categorical_samples_follow_the_probabilities():
    tg.manual_seed(2)
    s = Categorical(tg.tensor([0.1, 0.6, 0.3])).sample((30000,))
    assert s.dtype == tg.int64 and s.shape == (30000,)
    np.testing.assert_allclose(np.bincount(s.numpy(), minlength=3) / 30000, [0.1, 0.6, 0.3], atol=0.012)
    assert Categorical(tg.ones(2, 5)).sample((4, 3)).shape == (4, 3, 2)


def test_categorical_enumerate_support_and_errors():
    c = Categorical(tg.ones(2, 3))
    np.testing.assert_array_equal(c.enumerate_support().numpy(), [[0, 0], [1, 1], [2, 2]])
    assert c.enumerate_support(expand=False).shape == (3, 1)
    with pytest.raises(ValueError, match="Either `probs` or `logits` must be specified, but not both."):
        Categorical()
    with pytest.raises(ValueError, match="`probs` parameter must be at least one-dimensional."):
        Categorical(tg.tensor(1.0))
    with pytest.raises(ValueError, match=r"to be within the support \(IntegerInterval\(lower_bound=0, upper_bound=2\)\)"):
        Categorical(tg.ones(3)).log_prob(tg.tensor(3))
    with pytest.raises(ValueError, match="to satisfy the constraint Simplex"):
        Categorical(tg.tensor([0.5, -0.5, 1.0]))


def test_categorical_logits_are_normalized_and_lazy():
    c = Categorical(probs=tg.tensor([0.25, 0.75]))
    assert "logits" not in c.__dict__
    np.testing.assert_allclose(c.logits.numpy(), np.log([0.25, 0.75]), rtol=1e-6)
    assert "logits" in c.__dict__
    with tg.no_grad():  # computed with gradients on, whatever the mode
        p = tg.tensor([1.0, 3.0], requires_grad=True)
        assert Categorical(logits=p).probs.requires_grad is False  # (the normalisation ran under no_grad)


# ----------------------------------------------------------------------------- Bernoulli, Uniform

def test_bernoulli_by_hand_and_gradient():
    p = np.array([0.2, 0.9])
    d = Bernoulli(tg.tensor(p))
    np.testing.assert_allclose(d.log_prob(tg.tensor([1.0, 0.0])).numpy(), np.log([0.2, 0.1]), rtol=1e-6)
    np.testing.assert_allclose(d.entropy().numpy(), -(p * np.log(p) + (1 - p) * np.log(1 - p)), rtol=1e-6)
    np.testing.assert_allclose(d.variance.numpy(), p * (1 - p))
    np.testing.assert_allclose(Bernoulli(logits=tg.tensor(0.0)).probs.numpy(), 0.5)
    got, want = grad_of(lambda lg: Bernoulli(logits=lg).log_prob(tg.tensor([1.0, 0.0, 1.0], dtype=tg.float64)),
                        np.array([0.3, -1.2, 2.0]))
    np.testing.assert_allclose(got, want, rtol=1e-6)
    assert np.isnan(Bernoulli(0.5).mode.numpy()) and Bernoulli(tg.tensor(0.7)).mode.item() == 1.0
    with pytest.raises(ValueError, match=r"to be within the support \(Boolean\(\)\)"):
        d.log_prob(tg.tensor([0.5, 1.0]))


def test_bernoulli_samples():
    tg.manual_seed(3)
    s = Bernoulli(tg.tensor([0.2, 0.7])).sample((20000,))
    assert s.dtype == tg.float32 and set(np.unique(s.numpy())) <= {0.0, 1.0}
    np.testing.assert_allclose(s.mean(0).numpy(), [0.2, 0.7], atol=0.015)


def test_uniform_by_hand_support_and_rsample():
    d = Uniform(tg.tensor([0.0, -1.0]), tg.tensor([2.0, 3.0]))
    np.testing.assert_allclose(d.log_prob(tg.tensor([1.0, 0.0])).numpy(), -np.log([2.0, 4.0]))
    np.testing.assert_allclose(d.cdf(tg.tensor([0.5, 2.0])).numpy(), [0.25, 0.75])
    wide = Uniform(tg.tensor([0.0, -1.0]), tg.tensor([2.0, 3.0]), validate_args=False)
    np.testing.assert_allclose(wide.cdf(tg.tensor([-0.5, 5.0])).numpy(), [0.0, 1.0])
    np.testing.assert_allclose(d.icdf(tg.tensor([0.5, 0.25])).numpy(), [1.0, 0.0])
    np.testing.assert_allclose(d.entropy().numpy(), np.log([2.0, 4.0]))
    assert repr(d.support) == "Interval(lower_bound=tensor([ 0., -1.]), upper_bound=tensor([2., 3.]))"
    with pytest.raises(ValueError, match="to be within the support"):
        d.log_prob(tg.tensor([2.5, 0.0]))
    tg.manual_seed(4)
    low = tg.tensor(1.0, requires_grad=True)
    x = Uniform(low, 3.0).rsample((1000,))
    assert float(x.min()) >= 1.0 and float(x.max()) < 3.0
    x.sum().backward()
    u = (x.detach() - 1.0) / 2.0
    np.testing.assert_allclose(low.grad.item(), float((1 - u).sum()), rtol=1e-5)
    with pytest.raises(ValueError, match=r"Expected parameter low \(Tensor of shape \(\)\) of distribution "
                                         r"Uniform\(low: 1.0, high: 1.0\) to satisfy the constraint LessThan"):
        Uniform(1.0, 1.0)


# ----------------------------------------------------------------------------- Independent, KL

def test_independent_sums_log_prob_over_reinterpreted_dims():
    base = Normal(tg.zeros(4, 3), tg.ones(4, 3))
    d = Independent(base, 1)
    assert d.batch_shape == (4,) and d.event_shape == (3,) and d.has_rsample
    v = tg.randn(4, 3)
    np.testing.assert_allclose(d.log_prob(v).numpy(), base.log_prob(v).sum(-1).numpy(), rtol=1e-6)
    np.testing.assert_allclose(d.entropy().numpy(), base.entropy().sum(-1).numpy(), rtol=1e-6)
    assert repr(d.support) == "IndependentConstraint(Real(), 1)"
    assert d.expand((2, 4)).batch_shape == (2, 4)
    with pytest.raises(ValueError, match="Expected reinterpreted_batch_ndims <= len"):
        Independent(base, 3)


@pytest.mark.parametrize("make", [
    lambda a, b: (Normal(a, b.abs() + 0.2), Normal(b - 1, a.abs() + 0.5)),
    lambda a, b: (Categorical(logits=a), Categorical(logits=b)),
    lambda a, b: (Bernoulli(logits=a), Bernoulli(logits=b)),
    lambda a, b: (Uniform(a, a + 2), Uniform(a - 1, a + 3)),
    lambda a, b: (Uniform(a, a + 2), Normal(b, 1.5)),
])
def test_kl_divergence_matches_monte_carlo(make):
    tg.manual_seed(5)
    a = tg.tensor([0.3, -0.4, 1.1], dtype=tg.float64)
    b = tg.tensor([0.9, 0.5, -0.2], dtype=tg.float64)
    p, q = make(a, b)
    kl = kl_divergence(p, q)
    x = p.sample((200000,))
    mc = (p.log_prob(x) - q.log_prob(x)).mean(0)
    np.testing.assert_allclose(kl.numpy(), mc.numpy(), atol=0.02)


def test_kl_is_infinite_outside_the_support_and_registry_errors():
    assert math.isinf(kl_divergence(Uniform(0.0, 2.0), Uniform(0.5, 3.0)).item())
    assert math.isinf(kl_divergence(Normal(0.0, 1.0), Uniform(0.0, 1.0)).item())
    assert math.isinf(kl_divergence(Bernoulli(0.5), Bernoulli(0.0)).item())
    with pytest.raises(NotImplementedError, match="No KL\\(p \\|\\| q\\) is implemented for p type Bernoulli and q type Uniform"):
        kl_divergence(Bernoulli(0.5), Uniform(0.0, 1.0))
    with pytest.raises(NotImplementedError, match="between different exponential families"):
        kl_divergence(Bernoulli(0.5), Normal(0.0, 1.0))
    with pytest.raises(TypeError, match="Expected type_p to be a Distribution subclass"):
        register_kl(int, Normal)


def test_register_kl_serves_subclasses_by_specificity():
    class MyNormal(Normal):
        pass

    assert kl_divergence(MyNormal(0.0, 1.0), Normal(1.0, 1.0)).item() == pytest.approx(0.5)

    @register_kl(MyNormal, Normal)
    def _mine(p, q):
        return tg.tensor(-1.0)
    try:
        assert kl_divergence(MyNormal(0.0, 1.0), Normal(1.0, 1.0)).item() == -1.0
        assert kl_divergence(Normal(0.0, 1.0), Normal(1.0, 1.0)).item() == pytest.approx(0.5)
    finally:
        from tracegrad.distributions import kl
        del kl._KL_REGISTRY[MyNormal, Normal]
        kl._KL_MEMOIZE.clear()


def test_kl_through_the_exponential_family_bregman_form():
    from tracegrad.distributions.kl import _kl_expfamily_expfamily
    p, q = Normal(tg.tensor([0.2, 1.0]), tg.tensor([1.0, 0.5])), Normal(tg.tensor([0.0, 0.3]), tg.tensor([2.0, 1.5]))
    np.testing.assert_allclose(_kl_expfamily_expfamily(p, q).detach().numpy(), kl_divergence(p, q).numpy(), rtol=1e-5)
    np.testing.assert_allclose(super(Normal, p).entropy().detach().numpy(), p.entropy().numpy(), rtol=1e-5)


def test_constraints_check_and_repr():
    v = tg.tensor([-1.0, 0.0, 0.5, 1.0, float("nan")])
    np.testing.assert_array_equal(constraints.real.check(v).numpy(), [True, True, True, True, False])
    np.testing.assert_array_equal(constraints.positive.check(v).numpy(), [False, False, True, True, False])
    np.testing.assert_array_equal(constraints.unit_interval.check(v).numpy(), [False, True, True, True, False])
    np.testing.assert_array_equal(constraints.simplex.check(tg.tensor([[0.5, 0.5], [0.7, 0.7]])).numpy(), [True, False])
    np.testing.assert_array_equal(constraints.lower_cholesky.check(
        tg.tensor([[[1.0, 0.0], [2.0, 3.0]], [[1.0, 1.0], [0.0, 1.0]]])).numpy(), [True, False])
    np.testing.assert_array_equal(constraints.positive_definite.check(
        tg.tensor([[[2.0, 1.0], [1.0, 2.0]], [[1.0, 2.0], [2.0, 1.0]]])).numpy(), [True, False])
    assert repr(constraints.integer_interval(0, 3)) == "IntegerInterval(lower_bound=0, upper_bound=3)"
    assert constraints.is_dependent(constraints.dependent) and not constraints.is_dependent(constraints.real)
    with pytest.raises(ValueError, match="Cannot determine validity of dependent constraint"):
        constraints.dependent.check(v)
    with pytest.raises(NotImplementedError, match=".event_dim cannot be determined statically"):
        constraints.dependent.event_dim  # noqa: B018


# ----------------------------------------------------------------------------- PyTorch itself

@pytest.mark.torch
@pytest.mark.parametrize("case", ["normal", "categorical", "bernoulli", "uniform", "independent"])
def test_values_and_reprs_match_torch(case):
    import torch
    import torch.distributions as TD

    import tracegrad.distributions as D

    def build(lib, mod):
        t = lambda v: lib.tensor(v, dtype=lib.float64)  # noqa: E731
        return {
            "normal": lambda: (mod.Normal(t([0.1, -1.0]), t([0.5, 2.0])), t([0.3, 0.4])),
            "categorical": lambda: (mod.Categorical(logits=t([[0.1, 0.5, -1.0], [2.0, 0.0, 0.0]])), lib.tensor([2, 1])),
            "bernoulli": lambda: (mod.Bernoulli(probs=t([0.25, 0.9])), t([1.0, 0.0])),
            "uniform": lambda: (mod.Uniform(t([0.0, 1.0]), t([1.5, 4.0])), t([0.5, 3.9])),
            "independent": lambda: (mod.Independent(mod.Normal(t([[0.0, 1.0]]), t([[1.0, 3.0]])), 1), t([0.3, 0.2])),
        }[case]()
    (mine, v1), (theirs, v2) = build(tg, D), build(torch, TD)
    assert repr(mine).replace("tracegrad", "torch") == repr(theirs)
    np.testing.assert_allclose(mine.log_prob(v1).numpy(), theirs.log_prob(v2).numpy(), rtol=1e-12)
    np.testing.assert_allclose(mine.entropy().numpy(), theirs.entropy().numpy(), rtol=1e-12)
    assert mine.batch_shape == tuple(theirs.batch_shape) and mine.event_shape == tuple(theirs.event_shape)
    assert repr(mine.support).split("(")[0] == repr(theirs.support).split("(")[0]
    q_mine, q_theirs = mine.expand(mine.batch_shape), theirs.expand(theirs.batch_shape)
    np.testing.assert_allclose(kl_divergence(mine, q_mine).numpy(), TD.kl_divergence(theirs, q_theirs).numpy(), atol=1e-12)


@pytest.mark.torch
def test_validation_messages_match_torch():
    import torch
    import torch.distributions as TD

    import tracegrad.distributions as D
    for make in (lambda lib, m: m.Normal(lib.zeros(2), lib.tensor([1.0, -1.0])),
                 lambda lib, m: m.Categorical(lib.tensor([0.5, -0.5])),
                 lambda lib, m: m.Normal(lib.zeros(3), 1.0).log_prob(lib.zeros(2)),
                 lambda lib, m: m.Categorical(lib.ones(3)).log_prob(lib.tensor(3)),
                 lambda lib, m: m.Bernoulli(0.3).log_prob(lib.tensor(0.5)),
                 lambda lib, m: m.Uniform(2.0, 1.0)):
        with pytest.raises(ValueError) as mine:
            make(tg, D)
        with pytest.raises(ValueError) as theirs:
            make(torch, TD)
        assert str(mine.value).replace("tracegrad", "torch") == str(theirs.value)
