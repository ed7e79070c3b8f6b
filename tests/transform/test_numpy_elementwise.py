"""NumPy's elementwise functions and reductions, and SciPy's special functions, through
tracegrad's front door in tape and AST mode: each case's gradient against central
differences, its Hessian-vector product (grad of grad) against differences of the
gradient, forward mode against differences, and the conventions where the derivative is
not defined (ties of max/min, zeros of prod, NaNs of the nan* reductions).

A case is a function of one array returning an array; the objective differentiated is
``sum(sin(case(x)) * weights)`` (non-uniform weights, so a gradient sent to the wrong
element shows)."""
import subprocess
import sys

import numpy as np
import pytest

import tracegrad as tg
import tracegrad.scipy.special as ts

from .numeric import numeric, objective

try:
    import scipy.special as sp
except ImportError:  # the cases marked scipy are skipped (tests/conftest.py)
    sp = None

_rng = np.random.default_rng(21)
V4 = _rng.uniform(-0.9, 0.9, 4)
M34 = _rng.uniform(-0.9, 0.9, (3, 4))
P34 = _rng.uniform(0.3, 1.8, (3, 4))  # (positive, away from 0)
W4 = np.array([0.5, 2.0, 1.0, 3.0])
B34 = _rng.uniform(-1.0, 1.0, (3, 4))
NAN_AT = np.array([[False, True, False, False], [False, False, False, True], [True, False, False, False]])


# -- elementwise NumPy --------------------------------------------------------------------------

def inverse_hyperbolic(x):
    return np.arcsinh(3 * x) + np.arccosh(x * x + 1.5) + np.arctanh(0.9 * x)


def sinc_through_zero(x):
    return np.sinc(x * 2) + np.sinc(np.where(np.abs(x) < 0.2, 0.0, x))


def cbrt_(x):
    return np.cbrt(x + 2.0) * np.cbrt(x - 2.0)


def fmax_fmin_with_nans(x):
    y = np.where(NAN_AT, np.nan, B34)
    return np.fmax(x, y) + np.fmin(x * 2, y) + np.fmax(np.where(NAN_AT, np.nan, x), 0.1)


def hypot_broadcast(x):
    return np.hypot(x, x[0]) + np.hypot(x * 1e200, 2e200)[:, :1] / 1e200


def logaddexps(x):
    return np.logaddexp(x, x[:, ::-1] * 3) + np.logaddexp2(x * 40, 0.5)


def angles_exps_logs(x):
    return (np.deg2rad(x * 90) + np.rad2deg(x) / 60 + np.radians(x * 30) + np.degrees(x) / 90
            + np.exp2(x) + np.log2(x + 2) + np.log10(x + 3) + np.expm1(x) + np.log1p(x * 0.5))


def divides_powers(x):
    return (np.true_divide(x, P34) + np.power(P34, x) + np.float_power(P34, x * 2)
            + np.power(x + 2, 3) + np.float_power(x + 2, 0.5))


def mods(x):
    return np.mod(x * 3 + 5, P34) + np.fmod(x * 3 - 0.05, P34) + np.remainder(7.0, x + 2)


def small_ufuncs(x):
    return np.negative(x) + np.positive(x * 2) + np.reciprocal(x + 2) + np.square(x) + np.sign(x) * x


def clip_where_select(x):
    lo, hi = B34[0] - 0.5, B34[:, :1] + 0.5
    return (np.clip(x, lo, hi) + np.where(x[0] > 0, x, x[:, :1] ** 2)
            + np.select([x < -0.3, x > 0.3], [x ** 2, x[0] * 3], -x))  # (AST mode: traced values by position)


def copysign_ldexp_frexp(x):
    mantissa, exponent = np.frexp(x * 5)
    return np.copysign(x, B34) + np.ldexp(x, np.array([1, -2, 0, 3])) + mantissa * exponent


def nan_to_num_(x):
    return np.nan_to_num(np.where(NAN_AT, np.nan, x), nan=0.5) + np.nan_to_num(np.where(x > 0.7, np.inf, x),
                                                                                posinf=2.0)


# -- reductions ---------------------------------------------------------------------------------

def with_nans(x):
    return np.where(NAN_AT, np.nan, x)


def nan_reductions(x):
    y = with_nans(x)
    return np.stack([np.nansum(y, axis=0) + np.nanmean(y, axis=0), np.nanmax(y, axis=0) * np.nanmin(y, axis=0),
                     np.nanprod(y + 1, axis=0) + np.nanstd(y, axis=0) + np.nanvar(y, axis=0, ddof=1),
                     np.nansum(y) + np.nanmean(y, axis=1, keepdims=True)[:, 0][:1].repeat(4) + np.nanstd(y)])


def nan_scans(x):
    y = with_nans(x)
    return np.nancumsum(y, axis=1) + np.nancumprod(y + 1, axis=0) + np.nancumsum(y)[:12].reshape(3, 4)


def moments_ddof(x):
    return np.stack([np.var(x, axis=0, ddof=1), np.std(x, axis=0, ddof=2), np.std(x, ddof=1) + np.var(x) * W4])


def scans_with_zeros(x):
    z = np.where(np.abs(np.arange(12).reshape(3, 4) - 5) < 2, 0.0, x)  # zeros in the middle of rows
    return np.cumsum(x, axis=1) + np.cumprod(z, axis=1) + np.cumprod(x + 1.0)[:12].reshape(3, 4)


def prod_with_zeros(x):
    one_zero = np.where(np.arange(4) == 2, 0.0, x)
    two_zeros = np.where(np.arange(4) % 2 == 0, 0.0, x)
    return np.stack([np.prod(one_zero, axis=1), np.prod(two_zeros, axis=1), np.prod(x + 1.0, axis=1)])


def ptp_average(x):
    avg, total = np.average(x, axis=1, weights=W4, returned=True)
    return np.ptp(x, axis=0)[:3] + avg * total + np.average(x, axis=1) + np.average(x.T, 0, x[0] ** 2 + 1)


def order_statistics(x):
    return np.concatenate([np.median(x, axis=1), np.percentile(x, [10, 75], axis=0).ravel(),
                           np.quantile(x, 0.3, axis=(0, 1), keepdims=True).ravel(), [np.median(x)],
                           np.quantile(x, [0.2, 0.9], axis=1, method="midpoint").ravel()])


def accumulate(x):
    return np.add.accumulate(x, axis=0) * np.multiply.accumulate(x + 1, axis=1)


# -- scipy.special ------------------------------------------------------------------------------

def sigmoids_and_errors(x):
    u = 0.5 + 0.4 * x
    return (sp.expit(3 * x) + sp.logit(u) + sp.erf(x) + sp.erfc(x) + sp.erfinv(0.9 * x)
            + sp.erfcinv(u) + sp.ndtr(x) + sp.log_ndtr(x) + sp.ndtri(u) + sp.erfcx(x))


def gammas(x):
    p = x + 2.0
    return (sp.gammaln(p) + sp.digamma(p) + sp.psi(p * 2) + sp.gamma(p) + sp.beta(p, p[0])
            + sp.betaln(p, 1.5) + sp.rgamma(p) + sp.gammasgn(p)
            + sp.zeta(3, p) + ts.polygamma(2, p))  # (SciPy's own polygamma: see python_level_scipy)


def logs_and_entropy(x):
    p = x + 1.5
    return sp.xlogy(x, p) + sp.xlog1py(x, x * 0.5) + sp.entr(p) + sp.xlogy(np.where(x > 0.5, 0.0, x), p)


def bessels(x):
    p = x + 2.0
    return (sp.i0(x) + sp.i1(x) + sp.i0e(x) + sp.i1e(p) + sp.j0(p) + sp.j1(p) + sp.y0(p) + sp.y1(p)
            + sp.jv(2, p) + sp.jn(1, p) + sp.yn(2, p) + sp.iv(3, p) + sp.ive(2, p) + np.i0(x))


def incomplete(x):
    # (integer orders and shapes: AST mode differentiates a traced call in every float
    # argument, and these take no gradient; see test_order_and_shape_parameters_refuse...)
    p = x + 2.0
    return sp.gammainc(2, p) + sp.gammaincc(3, p) + sp.betainc(2, 3, 0.5 + 0.4 * x)


def python_level(x):
    """logsumexp, softmax, log_softmax, polygamma, multigammaln: SciPy's own in AST mode (which
    differentiates them through tracegrad.scipy.special); tracegrad.scipy.special's on the tape."""
    return (ts.logsumexp(x, axis=1, keepdims=True) + ts.softmax(x, axis=0) + ts.log_softmax(x)
            + ts.logsumexp(x, axis=0, b=P34) + ts.logsumexp(x, b=P34 - 1, return_sign=True)[0]
            + ts.polygamma(1, x + 2) + ts.multigammaln(x + 3, 2))


def python_level_scipy(x):
    return (sp.logsumexp(x, axis=1, keepdims=True) + sp.softmax(x, axis=0) + sp.log_softmax(x)
            + sp.logsumexp(x, axis=0, b=P34) + sp.polygamma(1, x + 2) + sp.multigammaln(x + 3, 2))


def python_level_no_scipy(x):
    return ts.logsumexp(x, axis=1, keepdims=True) + ts.softmax(x, axis=0) + ts.log_softmax(x, axis=(0, 1))


NUMPY_CASES = [inverse_hyperbolic, sinc_through_zero, cbrt_, fmax_fmin_with_nans, hypot_broadcast, logaddexps,
               angles_exps_logs, divides_powers, mods, small_ufuncs, clip_where_select, copysign_ldexp_frexp,
               nan_to_num_, nan_reductions, nan_scans, moments_ddof, scans_with_zeros, prod_with_zeros,
               ptp_average, order_statistics, accumulate, python_level_no_scipy]
SCIPY_CASES = [sigmoids_and_errors, gammas, logs_and_entropy, bessels, incomplete, python_level]
CASES = NUMPY_CASES + SCIPY_CASES
MODES = ["tape", "ast"]
# (kinks, ties and piecewise-constant parts: a second derivative finite differences cannot check)
NOT_TWICE = {"clip_where_select", "small_ufuncs", "mods", "copysign_ldexp_frexp", "nan_to_num_", "ptp_average",
             "order_statistics", "fmax_fmin_with_nans"}




def _params(cases):
    return [pytest.param(c, id=c.__name__, marks=[pytest.mark.scipy] if c in SCIPY_CASES else [])
            for c in cases]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", _params(CASES))
def test_gradient_matches_finite_differences(case, mode):
    obj = objective(case)
    got = tg.grad(obj, mode=mode)(M34.copy())
    np.testing.assert_allclose(got, numeric(obj, M34), rtol=1e-5, atol=1e-7)


@pytest.mark.scipy
def test_scipy_python_level_functions_in_ast_mode():
    """AST mode differentiates SciPy's own logsumexp, softmax... through their counterparts."""
    obj = objective(python_level_scipy)
    got = tg.grad(obj, mode="ast")(M34.copy())
    np.testing.assert_allclose(got, numeric(obj, M34), rtol=1e-5, atol=1e-7)


TWICE = [c for c in CASES if c.__name__ not in NOT_TWICE]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", _params(TWICE))
def test_hessian_matches_finite_differences(case, mode):
    obj = objective(case)
    first = tg.grad(obj, mode="tape")
    v = np.cos(np.arange(M34.size) + 0.5).reshape(M34.shape)

    def hvp(x):
        return np.sum(tg.grad(obj, mode=mode)(x) * v)
    got = tg.grad(hvp, mode="tape")(M34.copy())
    want = numeric(lambda z: np.sum(first(z) * v), M34)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", _params([inverse_hyperbolic, hypot_broadcast, nan_reductions, scans_with_zeros,
                                          order_statistics, gammas, python_level]))
def test_jvp_matches_finite_differences(case, mode):
    t = np.sin(np.arange(M34.size) + 1.0).reshape(M34.shape)
    out, tangent = tg.jvp(case, (M34.copy(),), (t,), mode=mode)
    eps = 1e-6
    want = (case(M34 + eps * t) - case(M34 - eps * t)) / (2 * eps)
    np.testing.assert_allclose(out, case(M34), rtol=1e-12)
    np.testing.assert_allclose(tangent, want, rtol=1e-5, atol=1e-7)


# -- conventions --------------------------------------------------------------------------------

@pytest.mark.parametrize("mode", MODES)
def test_max_min_ties_share_the_gradient_evenly(mode):
    """NumPy's max/min/amax/amin/nanmax/ptp: tied extrema split the gradient (autograd's
    and torch.amax's convention; torch.max(x, dim) would pick one index)."""
    x = np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]])

    def f(x):
        return np.max(x) + np.sum(np.min(x, axis=1)) + np.sum(np.amax(x, axis=0)) + np.nanmax(x) + np.ptp(x)
    got = tg.grad(f, mode=mode)(x)
    # max: 1/2 to each 3; min rows: row 0 -> the 1, row 1 -> thirds; amax axis 0: column 1 and 2
    # single, column 0 -> the 2; nanmax like max; ptp = max - min over all: -1 to the 1
    want = np.array([[1.0 - 1.0, 0.5 + 1 + 0.5 + 0.5, 0.5 + 1 + 0.5 + 0.5],
                     [1.0 + 1 / 3, 1 / 3, 1 / 3]])
    np.testing.assert_allclose(got, want)


@pytest.mark.parametrize("mode", MODES)
def test_prod_with_zeros_is_exact(mode):
    def f(x):
        return np.prod(x)
    g = tg.grad(f, mode=mode)
    np.testing.assert_allclose(g(np.array([2.0, 0.0, 3.0])), [0.0, 6.0, 0.0])
    np.testing.assert_allclose(g(np.array([0.0, 5.0, 0.0])), [0.0, 0.0, 0.0])
    np.testing.assert_allclose(g(np.array([1e-200, 1e-200, 1e200])), [1.0, 1.0, 0.0])


def nansum_(x):
    return np.nansum(x)


def nanmean_(x):
    return np.nanmean(x)


def nanmax_(x):
    return np.nanmax(x)


def nanprod_(x):
    return np.nanprod(x)


@pytest.mark.parametrize("mode", MODES)
def test_nan_reductions_give_nan_elements_no_gradient(mode):
    x = np.array([1.0, np.nan, 2.0, 4.0])
    for fn, want in ((nansum_, [1, 0, 1, 1]), (nanmean_, [1 / 3, 0, 1 / 3, 1 / 3]),
                     (nanmax_, [0, 0, 0, 1]), (nanprod_, [8, 0, 4, 2])):
        np.testing.assert_allclose(tg.grad(fn, mode=mode)(x), want, err_msg=fn.__name__)


@pytest.mark.filterwarnings("ignore:All-NaN slice:RuntimeWarning")
def test_nanmax_of_an_all_nan_slice_is_nan():
    x = np.array([[np.nan, np.nan], [1.0, 2.0]])
    out, pull = tg.vjp(lambda x: np.nanmax(x, axis=1), x)
    np.testing.assert_array_equal(np.isnan(out), [True, False])
    np.testing.assert_allclose(pull(np.array([1.0, 1.0]))[0], [[0, 0], [0, 1]])


def test_hypot_does_not_overflow_and_is_zero_at_the_origin():
    g = tg.grad(lambda x: np.sum(np.hypot(x, 3e300)), mode="tape")(np.array([4e300, 0.0]))
    np.testing.assert_allclose(g, [0.8, 0.0])
    g = tg.grad(lambda x: np.hypot(x[0], x[1]), mode="tape")(np.array([0.0, 0.0]))
    np.testing.assert_array_equal(g, [0.0, 0.0])


def test_cbrt_and_sinc_second_derivatives_at_zero():
    """cbrt's slope is infinite at 0 (not nan); sinc'' at 0 is -pi^2/3, with no 0/0."""
    assert tg.grad(np.cbrt, mode="tape")(0.0) == np.inf
    d2 = tg.grad(tg.grad(np.sinc, mode="tape"), mode="tape")(0.0)
    np.testing.assert_allclose(d2, -np.pi ** 2 / 3)
    np.testing.assert_allclose(tg.grad(tg.grad(np.cbrt, mode="tape"), mode="tape")(8.0), -2 / 9 / 8 ** (5 / 3))


@pytest.mark.scipy
@pytest.mark.parametrize("mode", MODES)
def test_order_and_shape_parameters_refuse_a_gradient(mode):
    def f(a):
        return np.sum(sp.gammainc(a, np.array([1.0, 2.0])))
    with pytest.raises(NotImplementedError, match="gammainc with respect to its operand 'a'"):
        tg.grad(f, mode=mode)(np.array([1.5, 2.5]))


@pytest.mark.scipy
def test_eager_order_parameter_refuses_a_gradient():
    a = tg.tensor([1.5, 2.5], dtype=tg.float64, requires_grad=True)
    with pytest.raises(NotImplementedError, match="jv with respect to its operand 'v'"):
        ts.jv(a, tg.tensor([1.0, 2.0], dtype=tg.float64)).sum().backward()


@pytest.mark.scipy
def test_scipy_counterparts_work_on_arrays_and_tensors():
    x = M34.copy()
    np.testing.assert_allclose(ts.logsumexp(x, axis=0, b=P34), sp.logsumexp(x, axis=0, b=P34))
    r, s = ts.logsumexp(x, b=B34, return_sign=True)
    np.testing.assert_allclose((r, s), sp.logsumexp(x, b=B34, return_sign=True))
    np.testing.assert_allclose(ts.softmax(x), sp.softmax(x))
    np.testing.assert_allclose(ts.log_softmax(x, axis=(0, 1)), sp.log_softmax(x, axis=(0, 1)))
    np.testing.assert_allclose(ts.multigammaln(x + 3, 3), sp.multigammaln(x + 3, 3))
    assert np.shape(ts.logsumexp(2.0)) == () and np.shape(ts.logsumexp(np.float64(1), keepdims=True)) == (1,)
    t = tg.tensor(x, requires_grad=True)
    ts.logsumexp(t, axis=1).sum().backward()
    np.testing.assert_allclose(t.grad.numpy(), sp.softmax(x, axis=1))


def test_a_missing_scipy_is_named(monkeypatch):
    """Without SciPy, a kernel that needs it raises an ImportError naming SciPy; erfc falls
    back to the C library's."""
    import sys
    from tracegrad.rules import gamma as G
    for name in ("scipy", "scipy.special"):
        monkeypatch.setitem(sys.modules, name, None)  # an import of it fails
    with pytest.raises(ImportError, match=r"gammaln .*install SciPy"):
        G.gammaln(np.array([1.5]))
    np.testing.assert_allclose(G.erfc(np.array([0.5, -1.0])), [0.4795001221869535, 1.8427007929497148])


def test_importing_tracegrad_does_not_import_scipy():
    code = ("import sys, tracegrad, tracegrad.special, tracegrad.scipy.special; "
            "assert not any(m == 'scipy' or m.startswith('scipy.') for m in sys.modules), 'scipy imported'")
    subprocess.run([sys.executable, "-c", code], check=True)


def clip_at_its_bounds(x, lo, hi):
    return np.sum(np.clip(x, lo, hi) ** 2) + np.sum(x.clip(-0.5, 0.5))


@pytest.mark.parametrize("mode", ["tape", "ast", "auto"])
def test_clip_at_its_bounds_follows_torch_clamp(mode):
    # a value exactly at a bound keeps its whole gradient, number or array bounds alike
    # (the AST path traces number bounds: it once split the tie in halves); a bound gets
    # one only where it strictly is the result -- torch.clamp's rule
    x = np.array([0.5, -0.5, 0.2, 0.9, -0.9])
    lo, hi = np.full(5, -0.5), np.full(5, 0.5)
    gx, glo, ghi = tg.grad(clip_at_its_bounds, argnums=(0, 1, 2), mode=mode)(x, lo, hi)
    inside = (x >= -0.5) & (x <= 0.5)
    np.testing.assert_allclose(gx, 2 * x * inside + inside)
    np.testing.assert_allclose(glo, np.where(x < -0.5, 2 * -0.5, 0.0))
    np.testing.assert_allclose(ghi, np.where(x > 0.5, 2 * 0.5, 0.0))
    gn = tg.grad(lambda y: clip_at_its_bounds(y, -0.5, 0.5), mode="tape")(x)
    np.testing.assert_allclose(gn, gx)


def weighted_cumprod(x):
    c = np.cumprod(x, axis=-1)
    return np.sum(c + 0.5 * c * c)


@pytest.mark.parametrize("mode", ["tape", "ast", "auto"])
@pytest.mark.parametrize("x", [[0.0, 1.0, 2.0], [0.5, 0.0, 2.0, 0.0, 1.5], [[0.0, 0.0, 2.0], [1.5, 0.0, -1.0]]],
                         ids=["first", "two zeros", "rows"])
def test_cumprod_second_order_at_zeros(x, mode):
    # after a slice's first zero the gradient is 0, but not its derivative in that zero:
    # the Hessian is checked against differences of the (exact) gradient
    x = np.array(x)
    grad = tg.grad(weighted_cumprod, mode="tape")
    want = np.zeros(x.shape + x.shape)
    for k in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[k] = 1e-6
        want[(Ellipsis,) + k] = (grad(x + e) - grad(x - e)) / 2e-6
    np.testing.assert_allclose(tg.hessian(weighted_cumprod, mode=mode)(x), want, rtol=1e-6, atol=1e-6)


def std_of(x):
    return np.std(x)


def std_of_roots(z):
    return np.std(np.sqrt(z + 2.0))


@pytest.mark.parametrize("mode", ["tape", "ast", "auto"])
def test_std_of_values_equal_but_for_rounding(mode):
    # the mean of three 0.1s is not 0.1 exactly: std's slope there was a ratio of rounding
    # errors (about 1/3); the values are equal, and the gradient is 0, as finite differences say
    np.testing.assert_allclose(tg.grad(std_of, mode=mode)(np.full(3, 0.1)), np.zeros(3), atol=1e-12)
    np.testing.assert_allclose(tg.grad(std_of_roots, mode=mode)(np.full(3, 1.5 + 1.4j)), np.zeros(3), atol=1e-12)
    y = np.array([0.3, -1.2, 2.0])
    np.testing.assert_allclose(tg.grad(std_of, mode=mode)(y), (y - y.mean()) / (3 * np.std(y)), rtol=1e-12)
