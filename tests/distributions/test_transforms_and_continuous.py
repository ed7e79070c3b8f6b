"""torch.distributions' transforms, TransformedDistribution, biject_to/transform_to and
the continuous families LogNormal, Exponential, Laplace, Cauchy, HalfNormal, HalfCauchy,
Gumbel, StudentT, LogisticNormal. Log-Jacobians against autograd's derivatives, values
against SciPy, gradients against finite differences, samples by their moments, KL
divergences against Monte Carlo, errors by type and message; then PyTorch itself."""
import math

import numpy as np
import pytest

import tracegrad as tg
from tracegrad.distributions import Independent, Normal, Uniform, constraints, kl_divergence
from tracegrad.distributions import transforms as T
from tracegrad.distributions.cauchy import Cauchy
from tracegrad.distributions.constraint_registry import biject_to, transform_to
from tracegrad.distributions.exponential import Exponential
from tracegrad.distributions.gamma import Gamma
from tracegrad.distributions.gumbel import Gumbel
from tracegrad.distributions.half_cauchy import HalfCauchy
from tracegrad.distributions.half_normal import HalfNormal
from tracegrad.distributions.laplace import Laplace
from tracegrad.distributions.log_normal import LogNormal
from tracegrad.distributions.logistic_normal import LogisticNormal
from tracegrad.distributions.studentT import StudentT
from tracegrad.distributions.transformed_distribution import TransformedDistribution

from ._helpers import F64, grad_of, read, t64, to_torch

# ----------------------------------------------------------------------------- transforms

ELEMENTWISE = {
    "exp": lambda: T.ExpTransform(),
    "sigmoid": lambda: T.SigmoidTransform(),
    "tanh": lambda: T.TanhTransform(),
    "softplus": lambda: T.SoftplusTransform(),
    "affine_number": lambda: T.AffineTransform(1.5, -2.0),
    "affine_tensor": lambda: T.AffineTransform(t64([0.5, 1.0, -1.0, 2.0]), t64([2.0, -0.5, 3.0, 1.0])),
    "power": lambda: T.PowerTransform(t64(-1.5)),
    "exp_inv": lambda: T.ExpTransform().inv,
    "compose": lambda: T.ComposeTransform([T.AffineTransform(0.5, 2.0), T.SigmoidTransform(),
                                           T.AffineTransform(-1.0, 2.0)]),
}


@pytest.mark.parametrize("name", ELEMENTWISE)
def test_elementwise_round_trip_log_det_and_sign_against_autograd(name):
    t = ELEMENTWISE[name]()
    x = t64([0.3, 1.2, 0.7, 2.5])  # (positive: in every domain here)
    y = t(x)
    np.testing.assert_allclose(t.inv(y).numpy(), x.numpy(), rtol=1e-10)
    xr = x.clone().requires_grad_()
    (dy,) = tg.autograd.grad(t(xr).sum(), xr)  # the diagonal Jacobian, elementwise
    np.testing.assert_allclose(t.log_abs_det_jacobian(x, y).numpy(), np.log(np.abs(dy.numpy())), rtol=1e-9)
    sign = t.sign
    np.testing.assert_array_equal(np.broadcast_to(np.asarray(sign if isinstance(sign, int) else sign.numpy()),
                                                  (4,)), np.sign(dy.numpy()))
    assert t.bijective and t.event_dim == 0


@pytest.mark.parametrize("name", ["tanh", "sigmoid", "softplus", "power", "compose"])
def test_log_abs_det_jacobian_gradient_matches_finite_differences(name):
    t = ELEMENTWISE[name]()
    got, want = grad_of(lambda x: t.log_abs_det_jacobian(x, t(x)), np.array([0.3, 1.2, 0.7, 2.5]))
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-9)


def test_tanh_log_det_is_stable_where_tanh_rounds_to_one_and_the_cache_inverts():
    t = T.TanhTransform()
    x = t64([0.5, 20.0, 50.0, -400.0])
    lad = t.log_abs_det_jacobian(x, t(x)).numpy()
    assert np.all(np.isfinite(lad))
    np.testing.assert_allclose(lad[0], math.log(1 - math.tanh(0.5) ** 2), rtol=1e-12)
    np.testing.assert_allclose(lad[1:], 2 * (math.log(2) - np.abs(x.numpy()[1:])), rtol=1e-12)
    y = t(x)
    assert np.isinf(t.inv(y).numpy()[1])  # (no cache: atanh(1.0))
    cached = t.with_cache(1)
    y = cached(x)
    assert cached.inv(y) is x
    assert t.codomain.check(t(t64([-1e3, 0.0, 1e3]))).all()


def test_sac_style_tanh_squashed_policy():
    """A squashed Gaussian policy: reparameterized actions, their log-probability through
    the cache (finite even where tanh saturates), gradients to the policy's outputs."""
    mu = t64([0.0, 30.0]).requires_grad_()
    std = t64([1.0, 0.5]).requires_grad_()
    policy = TransformedDistribution(Normal(mu, std), [T.TanhTransform(cache_size=1)])
    tg.manual_seed(0)
    action = policy.rsample()
    log_prob = policy.log_prob(action)
    assert action[1].item() == 1.0 and np.all(np.isfinite(log_prob.detach().numpy()))
    (log_prob.sum() + action.sum()).backward()
    assert np.all(np.isfinite(mu.grad.numpy())) and np.all(np.isfinite(std.grad.numpy()))
    x = tg.atanh(action[:1].detach())  # (unsaturated: the formula by hand)
    want = Normal(mu[:1], std[:1]).log_prob(x) - tg.log1p(-action[:1].detach() ** 2)
    np.testing.assert_allclose(log_prob[:1].detach().numpy(), want.detach().numpy(), rtol=1e-8)


def test_caching_and_with_cache():
    x = t64([0.1, 0.2])
    plain, cached = T.ExpTransform(), T.ExpTransform(cache_size=1)
    assert plain.inv(plain(x)) is not x
    y = cached(x)
    assert cached(x) is y and cached.inv(y) is x and cached.inv.inv is cached
    assert plain.with_cache(0) is plain and plain.with_cache(1)._cache_size == 1
    aff = T.AffineTransform(1.0, 2.0).with_cache()
    assert aff._cache_size == 1 and aff == T.AffineTransform(1.0, 2.0)
    comp = T.ComposeTransform([T.ExpTransform(), T.AffineTransform(1.0, 2.0)], cache_size=1)
    assert all(p._cache_size == 1 for p in comp.parts)
    y = comp(x)
    assert comp.inv(y) is x  # (each part returns its remembered input)
    assert T.ExpTransform().inv.with_cache(1).inv._cache_size == 1
    assert T.IndependentTransform(T.ExpTransform(), 1, cache_size=1).base_transform._cache_size == 1
    with pytest.raises(ValueError, match="cache_size must be 0 or 1"):
        T.ExpTransform(cache_size=2)

    class Custom(T.Transform):
        def __init__(self, k):
            super().__init__()
    with pytest.raises(NotImplementedError, match="with_cache is not implemented"):
        Custom(1).with_cache(1)


def test_equality_inverse_identity_and_repr():
    assert T.ExpTransform() == T.ExpTransform() and T.ExpTransform() != T.SigmoidTransform()
    assert T.AffineTransform(1.0, 2.0) == T.AffineTransform(1.0, 2.0) != T.AffineTransform(1.0, 3.0)
    assert T.AffineTransform(t64([1.0, 2.0]), 2.0) == T.AffineTransform(t64([1.0, 2.0]), 2.0)
    assert T.PowerTransform(2.0) == T.PowerTransform(2.0) != T.PowerTransform(3.0)
    assert T.ExpTransform().inv == T.ExpTransform().inv != T.ExpTransform()
    assert T.ComposeTransform([T.ExpTransform()]) == T.ComposeTransform([T.ExpTransform()])
    t = T.SigmoidTransform()
    assert t.inv.inv is t and t.inv is t.inv
    comp = T.ComposeTransform([T.ExpTransform(), T.AffineTransform(1.0, 2.0)])
    assert comp.inv.inv is comp and comp.inv.parts[0] == T.AffineTransform(1.0, 2.0).inv
    with pytest.raises(TypeError, match="unhashable"):
        hash(T.ExpTransform())
    x = t64([0.5, -1.0])
    assert T.identity_transform(x) is x and bool((T.identity_transform.log_abs_det_jacobian(x, x) == 0).all())
    assert repr(T.ExpTransform().inv) == "_InverseTransform(ExpTransform())"
    assert repr(comp) == "ComposeTransform(\n    ExpTransform(),\n    AffineTransform()\n)"
    assert repr(T.IndependentTransform(T.ExpTransform(), 2)) == "IndependentTransform(ExpTransform(), 2)"
    assert repr(T.TanhTransform().codomain) == "Interval(lower_bound=-1.0, upper_bound=1.0)"
    assert T.ExpTransform().inv.domain is constraints.positive and T.AbsTransform().bijective is False


def test_compose_event_dims_sum_the_smaller_parts():
    comp = T.ComposeTransform([T.ExpTransform(), T.StickBreakingTransform()])
    assert comp.domain.event_dim == 1 and comp.codomain.event_dim == 1 and comp.bijective
    x = t64([[0.2, -0.5, 1.0], [0.0, 0.3, -0.2]])
    y = comp(x)
    sb = T.StickBreakingTransform()
    want = x.sum(-1) + sb.log_abs_det_jacobian(x.exp(), y)
    np.testing.assert_allclose(comp.log_abs_det_jacobian(x, y).numpy(), want.numpy(), rtol=1e-12)
    assert comp.forward_shape((2, 3)) == (2, 4) and comp.inverse_shape((2, 4)) == (2, 3)
    signs = T.ComposeTransform([T.AffineTransform(0.0, -1.0), T.ExpTransform(), T.AffineTransform(0.0, -2.0)])
    assert signs.sign == 1


def test_independent_and_reshape_transforms():
    it = T.IndependentTransform(T.ExpTransform(), 1)
    x = t64([[0.1, 0.2], [0.3, 0.4]])
    np.testing.assert_allclose(it.log_abs_det_jacobian(x, it(x)).numpy(), [0.3, 0.7])
    assert it.domain.event_dim == 1 and repr(it.codomain) == "IndependentConstraint(GreaterThan(lower_bound=0.0), 1)"
    with pytest.raises(ValueError, match="Too few dimensions on input"):
        T.IndependentTransform(T.ExpTransform(), 2)(t64([1.0]))
    r = T.ReshapeTransform((2, 3), (6,))
    x = tg.arange(24, dtype=F64).reshape(4, 2, 3)
    assert r(x).shape == (4, 6) and r.inv(r(x)).shape == (4, 2, 3)
    assert r.log_abs_det_jacobian(x, r(x)).shape == (4,) and r.forward_shape((5, 2, 3)) == (5, 6)
    assert r.inverse_shape((5, 6)) == (5, 2, 3) and r.domain.event_dim == 2 and r.codomain.event_dim == 1
    with pytest.raises(ValueError, match="in_shape, out_shape have different numbers of elements"):
        T.ReshapeTransform((2, 3), (5,))
    with pytest.raises(ValueError, match=r"Shape mismatch: expected \(3, 2\) but got tracegrad.Size\(\[2, 3\]\)"):
        r.forward_shape((3, 2))


def _log_abs_det(fn, x):
    """log |det J| of ``fn`` (vector -> vector of the same length) at ``x``, by autograd."""
    jac = tg.autograd.functional.jacobian(fn, x).numpy()
    return np.linalg.slogdet(jac)[1]


def test_stick_breaking_maps_onto_the_simplex_with_its_log_det():
    t = T.StickBreakingTransform()
    x = t64([0.3, -1.2, 2.0])
    y = t(x)
    assert y.shape == (4,) and constraints.simplex.check(y) and float(y.min()) > 0
    np.testing.assert_allclose(t.inv(y).numpy(), x.numpy(), rtol=1e-10)
    want = _log_abs_det(lambda v: t(v)[:-1], x)  # (y's last entry is 1 - the others)
    np.testing.assert_allclose(float(t.log_abs_det_jacobian(x, y)), want, rtol=1e-10)
    np.testing.assert_allclose(t(tg.zeros(3, dtype=F64)).numpy(), [0.25] * 4)  # (the offset centres 0)
    got, want = grad_of(lambda v: t.log_abs_det_jacobian(v, t(v)), x.numpy())
    np.testing.assert_allclose(got, want, rtol=1e-6)
    with pytest.raises(ValueError, match="Too few dimensions on input"):
        t.forward_shape(())


def test_softmax_lower_cholesky_positive_definite_and_corr_cholesky():
    sm = T.SoftmaxTransform()
    y = sm(t64([1.0, 2.0, -1.0]))
    assert constraints.simplex.check(y) and not sm.bijective
    np.testing.assert_allclose(sm(sm.inv(y)).numpy(), y.numpy(), rtol=1e-12)
    x = t64([[0.5, 3.0, 1.0], [-1.0, 0.2, 7.0], [2.0, 0.1, -0.3]])
    lc = T.LowerCholeskyTransform()
    assert constraints.lower_cholesky.check(lc(x)) and np.allclose(lc.inv(lc(x)).numpy(), np.tril(x.numpy()))
    pd = T.PositiveDefiniteTransform()
    assert constraints.positive_definite.check(pd(x))
    np.testing.assert_allclose(pd.inv(pd(x)).numpy(), np.tril(x.numpy()), rtol=1e-10, atol=1e-12)
    cc = T.CorrCholeskyTransform()
    v = t64([0.4, -1.0, 0.7])
    y = cc(v)
    assert y.shape == (3, 3) and constraints.corr_cholesky.check(y)
    np.testing.assert_allclose(cc.inv(y).numpy(), v.numpy(), rtol=1e-9)
    rows, cols = np.tril_indices(3, -1)
    want = _log_abs_det(lambda u: cc(u)[rows, cols], v)
    np.testing.assert_allclose(float(cc.log_abs_det_jacobian(v, y)), want, rtol=1e-9)
    assert cc.forward_shape((2, 6)) == (2, 4, 4) and cc.inverse_shape((4, 4)) == (6,)
    with pytest.raises(ValueError, match="Input is not a flattened lower-diagonal number"):
        cc.forward_shape((5,))


def test_cat_and_stack_transforms():
    cat = T.CatTransform([T.ExpTransform(), T.identity_transform, T.AffineTransform(0.0, 3.0)], dim=0,
                         lengths=[2, 1, 1])
    x = t64([0.1, 0.2, 5.0, 1.0])
    y = cat(x)
    np.testing.assert_allclose(y.numpy(), [math.exp(0.1), math.exp(0.2), 5.0, 3.0], rtol=1e-12)
    np.testing.assert_allclose(cat.inv(y).numpy(), x.numpy(), rtol=1e-12)
    np.testing.assert_allclose(cat.log_abs_det_jacobian(x, y).numpy(), [0.1, 0.2, 0.0, math.log(3)], rtol=1e-12)
    assert cat.bijective and cat.event_dim == 0 and cat.length == 4
    assert cat.domain.check(x).shape == (4,) and bool(cat.codomain.check(y).all())
    with pytest.raises(AssertionError, match=r"x.size\(0\) = 3 must equal length 4"):
        cat(x[:3])
    st = T.StackTransform([T.ExpTransform(), T.AffineTransform(1.0, -2.0)], dim=1)
    x = t64([[0.1, 0.2], [0.3, 0.4], [0.5, 0.6]])
    y = st(x)
    np.testing.assert_allclose(y.numpy(), np.stack([np.exp([0.1, 0.3, 0.5]), [0.6, 0.2, -0.2]], 1), rtol=1e-12)
    np.testing.assert_allclose(st.inv(y).numpy(), x.numpy(), rtol=1e-12)
    np.testing.assert_allclose(st.log_abs_det_jacobian(x, y)[:, 1].numpy(), [math.log(2)] * 3)
    with pytest.raises(AssertionError, match=r"dim 1 out of range for tensor with 1 dimensions"):
        st(t64([1.0, 2.0]))
    with pytest.raises(AssertionError, match="All elements of tseq must be Transform instances"):
        T.StackTransform([T.ExpTransform(), 3])


def test_abs_power_affine_event_dim_and_cdf_transforms():
    a = T.AbsTransform()
    assert a(t64([-2.0, 3.0])).tolist() == [2.0, 3.0] and a.inv(t64([2.0])).tolist() == [2.0]
    p = T.PowerTransform(t64([2.0, -1.0]))
    assert p.sign.tolist() == [1.0, -1.0] and p.forward_shape((3, 1)) == (3, 2)
    aff = T.AffineTransform(t64([1.0, 2.0]), t64([2.0, 4.0]), event_dim=1)
    x = t64([[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]])
    assert aff.domain.event_dim == 1 and aff.codomain.event_dim == 1
    np.testing.assert_allclose(aff.log_abs_det_jacobian(x, aff(x)).numpy(), [math.log(8)] * 3)
    assert T.AffineTransform(0.0, -3.0).sign == -1 and T.AffineTransform(0.0, 0.0).sign == 0
    normal = Normal(t64(0.5), t64(2.0))
    c = T.CumulativeDistributionTransform(normal)
    v = t64([0.0, 1.0])
    np.testing.assert_allclose(c(v).numpy(), normal.cdf(v).numpy())
    np.testing.assert_allclose(c.inv(c(v)).numpy(), v.numpy(), rtol=1e-10)
    np.testing.assert_allclose(c.log_abs_det_jacobian(v, c(v)).numpy(), normal.log_prob(v).numpy())
    assert c.domain is constraints.real and c.with_cache(1).distribution is normal


# ----------------------------------------------------------------------------- constraint registry

def registry_cases(C):
    """Constraints with a registered transform, built from constraints module ``C``."""
    return [C.real, C.positive, C.nonnegative, C.greater_than(2.0), C.greater_than_eq(-1.0), C.less_than(3.0),
            C.interval(-1.0, 3.0), C.unit_interval, C.half_open_interval(0.0, 2.0), C.simplex, C.real_vector,
            C.independent(C.positive, 1), C.corr_cholesky, C.cat([C.positive, C.real], 0, [2, 1]),
            C.stack([C.positive, C.unit_interval], 0)]


REGISTRY_CASES = registry_cases(constraints)


@pytest.mark.parametrize("c", REGISTRY_CASES, ids=repr)
def test_biject_to_and_transform_to_land_in_the_constraint(c):
    tg.manual_seed(0)
    x = tg.randn(2 if type(c).__name__ == "_Stack" else 3, dtype=F64) * 3
    for registry in (biject_to, transform_to):
        t = registry(c)
        y = t(x)
        assert bool(c.check(y).all()), (registry, c, y)
        if registry is biject_to:
            assert t.bijective
            np.testing.assert_allclose(t.inv(y).numpy(), x.numpy(), rtol=1e-6)


def test_registry_picks_and_errors():
    assert isinstance(biject_to(constraints.simplex), T.StickBreakingTransform)
    assert isinstance(transform_to(constraints.simplex), T.SoftmaxTransform)
    assert isinstance(transform_to(constraints.unit_interval), T.SigmoidTransform)
    assert isinstance(transform_to(constraints.lower_cholesky), T.LowerCholeskyTransform)
    assert isinstance(transform_to(constraints.positive_definite), T.PositiveDefiniteTransform)
    assert biject_to(constraints.real) is T.identity_transform
    scale = transform_to(Normal.arg_constraints["scale"])(tg.zeros(2, requires_grad=True))
    assert scale.requires_grad and scale.tolist() == [1.0, 1.0]
    with pytest.raises(NotImplementedError, match="Cannot transform _LowerCholesky constraints"):
        biject_to(constraints.lower_cholesky)
    with pytest.raises(TypeError, match="Expected constraint to be either a Constraint subclass or instance"):
        transform_to.register(3, lambda c: None)

    class Odd(constraints.Constraint):
        pass
    registry = type(biject_to)()
    registry.register(Odd, lambda c: T.ExpTransform())
    assert isinstance(registry(Odd()), T.ExpTransform)


# ----------------------------------------------------------------------------- TransformedDistribution

def test_transformed_distribution_change_of_variables():
    loc, scale = t64([0.2, -1.0]), t64([0.5, 1.5])
    base = Normal(t64([0.0, 0.0]), t64([1.0, 1.0]))
    d = TransformedDistribution(base, [T.AffineTransform(loc, scale)])
    v = t64([0.3, -2.0])
    np.testing.assert_allclose(d.log_prob(v).numpy(), Normal(loc, scale).log_prob(v).numpy(), rtol=1e-12)
    np.testing.assert_allclose(d.cdf(v).numpy(), Normal(loc, scale).cdf(v).numpy(), rtol=1e-12)
    flipped = TransformedDistribution(base, T.AffineTransform(0.0, -1.0))  # (decreasing: the cdf flips)
    np.testing.assert_allclose(flipped.cdf(v).numpy(), 1 - base.cdf(-v).numpy(), rtol=1e-12)
    np.testing.assert_allclose(flipped.icdf(flipped.cdf(v)).numpy(), v.numpy(), rtol=1e-10)
    ln = TransformedDistribution(Normal(loc, scale), T.ExpTransform())
    np.testing.assert_allclose(ln.log_prob(v.exp()).numpy(), LogNormal(loc, scale).log_prob(v.exp()).numpy())
    assert ln.support is constraints.positive and ln.has_rsample and repr(ln) == "TransformedDistribution()"
    with pytest.raises(ValueError, match="Expected value argument"):
        ln.log_prob(t64([-1.0, 1.0]))
    with pytest.raises(ValueError, match="transforms must be a Transform or list, but was 3"):
        TransformedDistribution(base, 3)
    with pytest.raises(ValueError, match="transforms must be a Transform or a list of Transforms"):
        TransformedDistribution(base, [T.ExpTransform(), 3])


def test_transformed_distribution_shapes_rsample_and_expand():
    base = Normal(tg.zeros(3, dtype=F64), tg.ones(3, dtype=F64))
    d = TransformedDistribution(base, T.StickBreakingTransform())
    assert d.batch_shape == () and d.event_shape == (4,) and isinstance(d.base_dist, Independent)
    assert repr(d.support) == "Simplex()" and d.sample((5,)).shape == (5, 4)
    e = d.expand((2,))
    assert e.batch_shape == (2,) and e.sample().shape == (2, 4) and e.log_prob(d.sample((2,))).shape == (2,)
    broad = TransformedDistribution(Normal(t64(0.0), t64(1.0)), T.AffineTransform(t64([1.0, 2.0]), 1.0))
    assert broad.batch_shape == (2,) and broad.base_dist.batch_shape == (2,)
    scale = t64([0.5, 2.0]).requires_grad_()
    tg.manual_seed(3)
    x = TransformedDistribution(Normal(t64([0.0, 0.0]), scale), T.ExpTransform()).rsample((4,))
    assert x.shape == (4, 2) and x.requires_grad
    x.sum().backward()
    assert scale.grad is not None and np.all(np.isfinite(scale.grad.numpy()))
    with pytest.raises(ValueError, match="base_distribution needs to have shape with size at least 1"):
        TransformedDistribution(Normal(0.0, 1.0), T.StickBreakingTransform())


# ----------------------------------------------------------------------------- the families

def _scipy():
    return pytest.importorskip("scipy.stats")


FAMILIES = {  # name: (class, parameters, values inside the support, SciPy's frozen law)
    "LogNormal": (LogNormal, [[0.2, -1.0], [0.5, 1.5]], [0.5, 2.0],
                  lambda s, loc, scale: s.lognorm(s=scale, scale=np.exp(loc))),
    "Exponential": (Exponential, [[0.5, 2.0]], [0.3, 1.7], lambda s, rate: s.expon(scale=1 / rate)),
    "Laplace": (Laplace, [[0.2, -1.0], [0.5, 1.5]], [0.3, -3.0], lambda s, loc, scale: s.laplace(loc, scale)),
    "Cauchy": (Cauchy, [[0.2, -1.0], [0.5, 1.5]], [0.3, -3.0], lambda s, loc, scale: s.cauchy(loc, scale)),
    "HalfNormal": (HalfNormal, [[0.5, 1.5]], [0.3, 2.0], lambda s, scale: s.halfnorm(scale=scale)),
    "HalfCauchy": (HalfCauchy, [[0.5, 1.5]], [0.3, 2.0], lambda s, scale: s.halfcauchy(scale=scale)),
    "Gumbel": (Gumbel, [[0.2, -1.0], [0.5, 1.5]], [0.3, -3.0], lambda s, loc, scale: s.gumbel_r(loc, scale)),
    "StudentT": (StudentT, [[3.0, 7.5], [0.2, -1.0], [0.5, 1.5]], [0.3, -3.0],
                 lambda s, df, loc, scale: s.t(df, loc, scale)),
}


def make(name, dtype=F64):
    cls, params, values, _ = FAMILIES[name]
    return cls(*[tg.tensor(p, dtype=dtype) for p in params]), tg.tensor(values, dtype=dtype)


@pytest.mark.parametrize("name", FAMILIES)
def test_values_against_scipy(name):
    stats = _scipy()
    d, v = make(name)
    ref = FAMILIES[name][3](stats, *[np.array(p) for p in FAMILIES[name][1]])
    np.testing.assert_allclose(d.log_prob(v).numpy(), ref.logpdf(v.numpy()), rtol=1e-10)
    np.testing.assert_allclose(d.entropy().numpy(), ref.entropy(), rtol=1e-9)
    if name != "Cauchy":  # (SciPy: NaN variance; PyTorch: inf, checked below)
        np.testing.assert_allclose(d.mean.numpy(), ref.mean(), rtol=1e-10)
        np.testing.assert_allclose(d.variance.numpy(), ref.var(), rtol=1e-10)
        np.testing.assert_allclose(d.stddev.numpy(), ref.std(), rtol=1e-10)
    if name != "StudentT":  # (PyTorch's StudentT has no cdf either)
        np.testing.assert_allclose(d.cdf(v).numpy(), ref.cdf(v.numpy()), rtol=1e-9)
        np.testing.assert_allclose(d.icdf(d.cdf(v)).numpy(), v.numpy(), rtol=1e-8)
    mode = d.mode.numpy()
    assert np.all(ref.pdf(mode) >= ref.pdf(mode + 1e-3))
    assert np.all(ref.pdf(mode) >= ref.pdf(np.maximum(mode - 1e-3, 0)))
    assert d.batch_shape == (2,) and d.event_shape == () and d.has_rsample


GRAD_PARAMS = {"LogNormal": [0.3, 0.8], "Exponential": [1.3], "Laplace": [0.3, 0.8], "Cauchy": [0.3, 0.8],
               "HalfNormal": [0.8], "HalfCauchy": [0.8], "Gumbel": [0.3, 0.8], "StudentT": [4.0, 0.3, 0.8]}


@pytest.mark.parametrize("name", FAMILIES)
def test_log_prob_and_entropy_gradients_match_finite_differences(name):
    cls, _, values, _ = FAMILIES[name]
    v = t64(values)
    params = GRAD_PARAMS[name]
    for i in range(len(params)):
        def f(p, i=i):
            args = [p if j == i else t64(params[j]) for j in range(len(params))]
            d = cls(*args)
            return d.log_prob(v) + d.entropy()
        got, want = grad_of(f, np.array(params[i]))
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-9)


RSAMPLED = ["LogNormal", "Exponential", "Laplace", "Cauchy", "HalfNormal", "HalfCauchy", "Gumbel"]


@pytest.mark.parametrize("name", RSAMPLED + ["StudentT"])
def test_rsample_gradients_match_finite_differences_of_the_same_noise(name):
    cls, params = FAMILIES[name][0], GRAD_PARAMS[name]
    for i in range(len(params)):
        if name == "StudentT" and i == 0:
            continue  # (df: a gamma draw's gradient is implicit, not its derivative at fixed noise)

        def f(p, i=i):
            tg.manual_seed(7)
            return cls(*[p if j == i else t64(params[j]) for j in range(len(params))]).rsample((3,))
        got, want = grad_of(f, np.array(params[i]))
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-8)


MOMENTS = {"LogNormal": ([0.1], [0.4]), "Exponential": ([1.5],), "Laplace": ([0.5], [2.0]), "HalfNormal": ([1.5],),
           "Gumbel": ([0.5], [2.0]), "StudentT": ([6.5], [0.5], [2.0])}


@pytest.mark.parametrize("name", MOMENTS)
def test_samples_have_the_moments(name):
    tg.manual_seed(11)
    d = FAMILIES[name][0](*[tg.tensor(p) for p in MOMENTS[name]])
    s = d.sample((100000,))
    assert s.shape == (100000, 1) and s.dtype == tg.float32 and not s.requires_grad
    np.testing.assert_allclose(s.double().mean(0).numpy(), d.mean.numpy(), rtol=0.03, atol=0.02)
    np.testing.assert_allclose(s.double().var(0).numpy(), d.variance.numpy(), rtol=0.06)
    assert bool(d.support.check(s).all())


@pytest.mark.parametrize("name", ["Cauchy", "HalfCauchy"])
def test_heavy_tailed_samples_follow_the_cdf(name):
    tg.manual_seed(5)
    d, v = make(name)
    s = d.sample((50000,))
    assert s.shape == (50000, 2) and s.dtype == F64
    np.testing.assert_allclose((s <= v).double().mean(0).numpy(), d.cdf(v).numpy(), atol=0.01)
    assert np.all(np.isnan(Cauchy(0.0, 1.0).mean.numpy())) and np.isinf(Cauchy(0.0, 1.0).variance.item())
    assert HalfCauchy(1.0).mean.item() == math.inf


@pytest.mark.parametrize("name", FAMILIES)
def test_expand_and_sample_shapes(name):
    d, v = make(name)
    e = d.expand((3, 2))
    assert type(e) is type(d) and e.batch_shape == (3, 2) and e.sample((4,)).shape == (4, 3, 2)
    np.testing.assert_allclose(e.log_prob(v).numpy(), np.broadcast_to(d.log_prob(v).numpy(), (3, 2)))
    assert e.rsample().dtype == F64 and e._validate_args == d._validate_args
    for p in FAMILIES[name][0].arg_constraints:
        assert getattr(e, p).shape == (3, 2)


def test_studentt_special_moments_and_sampling_paths():
    d = StudentT(t64([0.5, 1.5, 3.0]), 1.0, 2.0)
    assert np.isnan(d.mean[0].item()) and d.mean[1:].tolist() == [1.0, 1.0]
    v = d.variance
    assert np.isnan(v[0].item()) and v[1].item() == math.inf and v[2].item() == 12.0
    df = t64([3.0, 5.0]).requires_grad_()
    StudentT(df, 0.0, 2.0).variance.sum().backward()
    np.testing.assert_allclose(df.grad.numpy(), [-8.0, -8.0 / 9.0])
    assert StudentT(2.0).batch_shape == () and StudentT(t64([2.0])).batch_shape == (1,)
    assert repr(StudentT(2.0)) == "StudentT(df: 2.0, loc: 0.0, scale: 1.0)"
    tg.manual_seed(2)
    e = StudentT(t64([1.0, 2.5]), 0.0, 1.0).expand((3, 2))
    assert e.sample((6,)).shape == (6, 3, 2) and e._chi2.batch_shape == (3, 2)
    df = t64([2.5, 7.0]).requires_grad_()
    StudentT(df).rsample((5,)).sum().backward()  # (through the chi-square's implicit gradient)
    assert np.all(np.isfinite(df.grad.numpy())) and np.all(df.grad.numpy() != 0)
    with pytest.raises(ValueError, match=r"Expected parameter df .* of distribution Chi2\(\)"):
        StudentT(-1.0)


def test_logistic_normal():
    loc, scale = t64([0.3, -0.2]), t64([0.5, 1.2])
    d = LogisticNormal(loc, scale)
    assert d.batch_shape == () and d.event_shape == (3,)
    assert d.loc.tolist() == loc.tolist() and d.scale.tolist() == scale.tolist()
    tg.manual_seed(4)
    s = d.sample((7,))
    assert s.shape == (7, 3) and bool(constraints.simplex.check(s).all())
    sb = T.StickBreakingTransform()
    x = sb.inv(s)
    want = Normal(loc, scale).log_prob(x).sum(-1) - sb.log_abs_det_jacobian(x, s)
    np.testing.assert_allclose(d.log_prob(s).numpy(), want.numpy(), rtol=1e-10)
    assert LogisticNormal(0.0, 1.0).event_shape == (2,) and d.expand((4,)).sample().shape == (4, 3)


def test_validation_errors():
    with pytest.raises(ValueError, match=r"Expected parameter rate \(Tensor of shape \(2,\)\) of distribution "
                                         r"Exponential\(rate: tracegrad.Size\(\[2\]\)\) to satisfy the constraint "
                                         r"GreaterThan\(lower_bound=0.0\), but found invalid values"):
        Exponential(t64([1.0, -1.0]))
    for bad in (lambda: Laplace(0.0, 0.0), lambda: Cauchy(math.nan, 1.0), lambda: HalfNormal(-1.0),
                lambda: HalfCauchy(-1.0), lambda: Gumbel(0.0, -2.0), lambda: StudentT(-1.0),
                lambda: LogNormal(0.0, -1.0), lambda: LogisticNormal(t64([0.0]), t64([-1.0]))):
        with pytest.raises(ValueError, match="Expected parameter"):
            bad()
    with pytest.raises(ValueError, match=r"Expected value argument .* to be within the support "
                                         r"\(GreaterThanEq\(lower_bound=0.0\)\)"):
        HalfNormal(1.0).log_prob(tg.tensor(-1.0))
    with pytest.raises(ValueError, match="to be within the support"):
        Exponential(1.0).log_prob(tg.tensor([-0.5]))
    with pytest.raises(ValueError, match="The value argument to log_prob must be a Tensor"):
        Laplace(0.0, 1.0).log_prob(0.5)
    assert HalfNormal(1.0, validate_args=False).log_prob(tg.tensor(-1.0)).item() == -math.inf
    assert HalfCauchy(1.0, validate_args=False).log_prob(-1.0).item() == -math.inf
    assert Exponential(-1.0, validate_args=False).rate.item() == -1.0


# ----------------------------------------------------------------------------- KL divergence

KL_PAIRS = {
    "exp_exp": lambda: (Exponential(t64([0.5, 2.0])), Exponential(t64([1.5, 0.7]))),
    "laplace_laplace": lambda: (Laplace(t64([0.0, 1.0]), t64([1.0, 0.5])), Laplace(t64([0.5, -1.0]), t64([2.0, 1.0]))),
    "gumbel_gumbel": lambda: (Gumbel(t64([0.0, 1.0]), t64([1.0, 0.5])), Gumbel(t64([0.5, -1.0]), t64([2.0, 1.0]))),
    "halfnormal": lambda: (HalfNormal(t64([1.0, 0.5])), HalfNormal(t64([2.0, 0.7]))),
    "cauchy_cauchy": lambda: (Cauchy(t64([0.0, 1.0]), t64([1.0, 0.5])), Cauchy(t64([0.5, -1.0]), t64([2.0, 1.0]))),
    "lognormal": lambda: (LogNormal(t64([0.0, 1.0]), t64([1.0, 0.5])), LogNormal(t64([0.5, -1.0]), t64([2.0, 1.0]))),
    "exp_normal": lambda: (Exponential(t64([0.5, 2.0])), Normal(t64([1.0, -1.0]), t64([2.0, 1.5]))),
    "exp_gumbel": lambda: (Exponential(t64([0.5, 2.0])), Gumbel(t64([1.0, -1.0]), t64([2.0, 1.5]))),
    "gumbel_normal": lambda: (Gumbel(t64([0.0, 1.0]), t64([1.0, 0.5])), Normal(t64([0.5, -1.0]), t64([2.0, 1.0]))),
    "laplace_normal": lambda: (Laplace(t64([0.0, 1.0]), t64([1.0, 0.5])), Normal(t64([0.5, -1.0]), t64([2.0, 1.0]))),
    "normal_laplace": lambda: (Normal(t64([0.0, 1.0]), t64([1.0, 0.5])), Laplace(t64([0.5, -1.0]), t64([2.0, 1.0]))),
    "normal_gumbel": lambda: (Normal(t64([0.0, 1.0]), t64([1.0, 0.5])), Gumbel(t64([0.5, -1.0]), t64([2.0, 1.0]))),
    "uniform_exp": lambda: (Uniform(t64([0.5, 1.0]), t64([2.0, 4.0])), Exponential(t64([0.5, 2.0]))),
    "uniform_gumbel": lambda: (Uniform(t64([0.5, -1.0]), t64([2.0, 4.0])), Gumbel(t64([1.0, -1.0]), t64([2.0, 1.5]))),
    "gamma_gumbel": lambda: (Gamma(t64([0.5, 3.0]), t64([2.0, 1.0])), Gumbel(t64([1.0, -1.0]), t64([2.0, 1.5]))),
    "halfcauchy_via_td": lambda: (HalfCauchy(t64([1.0, 0.5])), HalfCauchy(t64([2.0, 0.7]))),
}


@pytest.mark.parametrize("pair", KL_PAIRS)
def test_kl_divergence_matches_monte_carlo(pair):
    p, q = KL_PAIRS[pair]()
    tg.manual_seed(13)
    x = p.sample((200000,))
    mc = (p.log_prob(x) - q.log_prob(x)).mean(0).numpy()
    np.testing.assert_allclose(kl_divergence(p, q).numpy(), mc, rtol=0.03, atol=0.01)


def test_kl_infinite_pairs_gradients_and_unregistered():
    inf_pairs = [(Exponential(t64([1.0])), Uniform(t64([0.0]), t64([1.0]))),
                 (Normal(t64([0.0]), t64([1.0])), Exponential(t64([1.0]))),
                 (Laplace(t64([0.0]), t64([1.0])), Exponential(t64([1.0]))),
                 (Laplace(t64([0.0]), t64([1.0])), Uniform(t64([0.0]), t64([1.0]))),
                 (Gumbel(t64([0.0]), t64([1.0])), Exponential(t64([1.0]))),
                 (Gumbel(t64([0.0]), t64([1.0])), Uniform(t64([0.0]), t64([1.0]))),
                 (Gumbel(t64([0.0]), t64([1.0])), Gamma(t64([1.0]), t64([1.0]))),
                 (Laplace(t64([0.0]), t64([1.0])), Gamma(t64([1.0]), t64([1.0]))),
                 (Uniform(t64([-1.0]), t64([1.0])), Exponential(t64([1.0])))]
    for p, q in inf_pairs:
        assert kl_divergence(p, q).tolist() == [math.inf], (p, q)
    got, want = grad_of(lambda r: kl_divergence(Exponential(r), Exponential(t64(2.0))), np.array([0.7, 3.0]))
    np.testing.assert_allclose(got, want, rtol=1e-6)
    with pytest.raises(NotImplementedError):
        kl_divergence(HalfNormal(1.0), HalfCauchy(1.0))  # (different transforms' bases)
    with pytest.raises(NotImplementedError, match="No KL"):
        kl_divergence(Cauchy(0.0, 1.0), Normal(0.0, 1.0))


# ----------------------------------------------------------------------------- PyTorch itself

@pytest.mark.torch
@pytest.mark.parametrize("name", list(FAMILIES) + ["LogisticNormal"])
def test_families_match_torch(name):
    import torch
    import torch.distributions as TD
    params = FAMILIES[name][1] if name in FAMILIES else [[0.3, -0.2], [0.5, 1.2]]
    values = FAMILIES[name][2] if name in FAMILIES else [[0.2, 0.5, 0.3]]
    mine_cls = FAMILIES[name][0] if name in FAMILIES else LogisticNormal
    mine = mine_cls(*[tg.tensor(p, dtype=F64) for p in params])
    theirs = getattr(TD, name)(*[torch.tensor(p, dtype=torch.float64) for p in params])
    v1, v2 = tg.tensor(values, dtype=F64), torch.tensor(values, dtype=torch.float64)
    assert repr(mine).replace("tracegrad", "torch") == repr(theirs)
    assert repr(mine.support) == repr(theirs.support)
    assert mine.batch_shape == tuple(theirs.batch_shape) and mine.event_shape == tuple(theirs.event_shape)
    np.testing.assert_allclose(mine.log_prob(v1).numpy(), theirs.log_prob(v2).numpy(), rtol=1e-12)
    for attr in ("mean", "mode", "variance", "stddev", "entropy", "cdf", "icdf"):
        try:
            want = read(theirs, attr, v2)
        except NotImplementedError:  # (StudentT's cdf, in both)
            continue
        np.testing.assert_allclose(read(mine, attr, v1).numpy(), want.numpy(), rtol=1e-10, err_msg=attr)
    q_mine, q_theirs = mine.expand(mine.batch_shape), theirs.expand(theirs.batch_shape)
    if name not in ("StudentT", "LogisticNormal"):
        np.testing.assert_allclose(kl_divergence(mine, q_mine).numpy(), TD.kl_divergence(theirs, q_theirs).numpy(),
                                   atol=1e-12)


@pytest.mark.torch
@pytest.mark.parametrize("pair", [k for k in KL_PAIRS if k != "halfcauchy_via_td"])
def test_kl_pairs_match_torch(pair):
    import torch.distributions as TD
    p, q = KL_PAIRS[pair]()
    np.testing.assert_allclose(kl_divergence(p, q).numpy(), TD.kl_divergence(to_torch(p), to_torch(q)).numpy(),
                               rtol=1e-10)


TRANSFORMS = {
    "Exp": ([], [0.3, -1.2]), "Sigmoid": ([], [0.3, -1.2]), "Tanh": ([], [0.3, 25.0]), "Softplus": ([], [0.3, -1.2]),
    "Power": ([2.5], [0.3, 1.2]), "Affine": ([0.5, -2.0], [0.3, -1.2]), "Abs": ([], [0.3, -1.2]),
    "StickBreaking": ([], [0.3, -1.2]), "Softmax": ([], [0.3, -1.2]), "CorrCholesky": ([], [0.3, -1.2, 0.5]),
    "LowerCholesky": ([], [[0.3, 2.0], [-1.2, 0.1]]),
}


@pytest.mark.torch
@pytest.mark.parametrize("name", TRANSFORMS)
def test_transforms_match_torch(name):
    import torch
    import torch.distributions.transforms as TT
    args, x = TRANSFORMS[name]
    mine, theirs = getattr(T, name + "Transform")(*args), getattr(TT, name + "Transform")(*args)
    x1, x2 = t64(x), torch.tensor(x, dtype=torch.float64)
    y1, y2 = mine(x1), theirs(x2)
    np.testing.assert_allclose(y1.numpy(), y2.numpy(), rtol=1e-12)
    np.testing.assert_allclose(mine.inv(y1).numpy(), theirs.inv(y2).numpy(), rtol=1e-10)
    if mine.bijective:
        np.testing.assert_allclose(mine.log_abs_det_jacobian(x1, y1).numpy(),
                                   theirs.log_abs_det_jacobian(x2, y2).numpy(), rtol=1e-10)
    for attr in ("domain", "codomain", "bijective"):
        assert repr(getattr(mine, attr)) == repr(getattr(theirs, attr)), attr
    assert repr(mine) == repr(theirs) and repr(mine.inv) == repr(theirs.inv)
    try:
        sign = theirs.sign
    except NotImplementedError:
        with pytest.raises(NotImplementedError):
            mine.sign  # noqa: B018
    else:
        assert np.all(np.asarray(getattr(mine.sign, "tolist", lambda: mine.sign)()) ==
                      np.asarray(getattr(sign, "tolist", lambda: sign)()))


@pytest.mark.torch
def test_registry_reprs_match_torch():
    import torch.distributions as TD
    for mine, theirs in zip(REGISTRY_CASES, registry_cases(TD.constraints)):
        assert repr(biject_to(mine)) == repr(TD.biject_to(theirs))
        assert repr(transform_to(mine)) == repr(TD.transform_to(theirs))


@pytest.mark.torch
def test_error_messages_match_torch():
    import torch
    import torch.distributions as TD

    from tracegrad.distributions import cauchy, exponential, half_normal, laplace, studentT, transformed_distribution
    mods = {"Exponential": exponential, "Laplace": laplace, "HalfNormal": half_normal, "StudentT": studentT,
            "Cauchy": cauchy, "TransformedDistribution": transformed_distribution}
    cases = [
        (ValueError, lambda lib, M, TT: M("Exponential")(lib.tensor([1.0, -1.0]))),
        (ValueError, lambda lib, M, TT: M("Laplace")(0.0, lib.tensor([0.0, 1.0]))),
        (ValueError, lambda lib, M, TT: M("HalfNormal")(1.0).log_prob(lib.tensor([-1.0]))),
        (ValueError, lambda lib, M, TT: M("StudentT")(lib.tensor([2.0]), 0.0, lib.tensor([-2.0]))),
        (ValueError, lambda lib, M, TT: M("StudentT")(lib.tensor([-2.0]))),
        (ValueError, lambda lib, M, TT: M("Cauchy")(lib.zeros(3), 1.0).log_prob(lib.zeros(2))),
        (ValueError, lambda lib, M, TT: M("TransformedDistribution")(M("Laplace")(0.0, 1.0), 3)),
        (ValueError, lambda lib, M, TT: TT.ReshapeTransform((2, 3), (5,))),
        (ValueError, lambda lib, M, TT: TT.ExpTransform(cache_size=2)),
        (ValueError, lambda lib, M, TT: TT.ReshapeTransform((2, 3), (6,)).forward_shape((3, 2))),
        (AssertionError, lambda lib, M, TT: TT.CatTransform([TT.ExpTransform()], 0, [2])(lib.zeros(3))),
    ]
    for kind, case in cases:
        with pytest.raises(kind) as mine:
            case(tg, lambda n: getattr(mods[n], n), T)
        with pytest.raises(kind) as theirs:
            case(torch, lambda n: getattr(TD, n), TD.transforms)
        assert str(mine.value).replace("tracegrad", "torch") == str(theirs.value)
    with pytest.raises(NotImplementedError) as mine:
        biject_to(constraints.lower_cholesky)
    with pytest.raises(NotImplementedError) as theirs:
        TD.biject_to(TD.constraints.lower_cholesky)
    assert str(mine.value) == str(theirs.value)
