"""The torch-named functions of the elementwise and special-function rules
(``tracegrad.hypot``, ``tracegrad.lgamma``, ``tracegrad.special.*``, ``nan_to_num``,
``nanmean``...) against real PyTorch (the oracle): values, gradients through backward, and
node names. (The rules themselves are walked against PyTorch by
tests/rules/test_oracle_table.py, through ``TORCH`` in tests/rules/samples_special.py.)

Where the table's convention differs from PyTorch's on purpose (xlogy's d/dx at x == 0:
the true derivative log(y), where PyTorch takes 0), the difference is pinned in
test_xlogy_convention_differs_from_torch_at_zero."""
import numpy as np
import pytest

import tracegrad as tg

from ..rules.samples_special import COMPLEX_SAMPLES

pytestmark = pytest.mark.torch

RTOL, ATOL = 1e-9, 1e-12


def _torch():
    """PyTorch, imported by each test (this module must load without it)."""
    import torch
    return torch


def _close(ours, theirs, what, rtol=RTOL):
    theirs = theirs.detach().numpy() if hasattr(theirs, "detach") else np.asarray(theirs)
    np.testing.assert_allclose(np.asarray(ours), theirs, rtol=rtol, atol=ATOL, err_msg=what)


@pytest.mark.parametrize("name", ["asinh", "acosh", "atanh"])  # (PyTorch's erfc takes no complex values)
def test_complex_eager_gradient_is_torchs(name):
    """Eager gradients of complex inputs follow PyTorch's (conjugate) convention."""
    torch = _torch()
    z = COMPLEX_SAMPLES[name][0].args[0]
    w = np.random.default_rng(3).standard_normal(z.shape) + 1j * np.random.default_rng(4).standard_normal(z.shape)
    ours = tg.tensor(z, requires_grad=True)
    getattr(tg, name)(ours).backward(tg.tensor(w))
    theirs = torch.tensor(z, requires_grad=True)
    getattr(torch, name)(theirs).backward(torch.tensor(w))
    _close(ours.grad.numpy(), theirs.grad, name)


def _pair(values, dtype=np.float64):
    return tg.tensor(values.astype(dtype), requires_grad=True), _torch().tensor(values.astype(dtype),
                                                                             requires_grad=True)


def _both(fn_ours, fn_theirs, *arrays, check_node=True, rtol=RTOL):
    """Run both sides on leaves made of ``arrays``; compare values, gradients, node names."""
    torch = _torch()
    leaves = [_pair(a) for a in arrays]
    y_ours = fn_ours(tg, *[p[0] for p in leaves])
    y_theirs = fn_theirs(torch, *[p[1] for p in leaves])
    _close(y_ours.detach().numpy(), y_theirs, "value", rtol)
    if check_node:
        assert y_ours.grad_fn.name() == y_theirs.grad_fn.name()
    w = np.random.default_rng(0).standard_normal(tuple(y_theirs.shape))
    y_ours.backward(tg.tensor(w))
    y_theirs.backward(torch.tensor(w))
    for (a, b) in leaves:
        _close(a.grad.numpy() if a.grad is not None else np.zeros(a.shape), b.grad if b.grad is not None
               else np.zeros(tuple(b.shape)), "gradient", rtol)


rng = np.random.default_rng(11)
X = rng.uniform(0.2, 0.8, (3, 4))
Y = rng.uniform(0.3, 1.7, (3, 4))
NODED = {  # eager function -> same on torch (values, gradients and node names compared)
    "asinh": lambda m, x: m.asinh(x), "arcsinh_method": lambda m, x: x.arcsinh(),
    "acosh": lambda m, x: m.acosh(x + 1), "atanh": lambda m, x: m.atanh(x), "sinc": lambda m, x: m.sinc(x),
    "hypot": lambda m, x, y: m.hypot(x, y), "logaddexp": lambda m, x, y: m.logaddexp(x, y),
    "logaddexp2": lambda m, x, y: m.logaddexp2(x, y), "fmax": lambda m, x, y: m.fmax(x, y),
    "fmin": lambda m, x, y: m.fmin(x, y), "fmod": lambda m, x, y: m.fmod(x, y),
    "fmod_scalar": lambda m, x, y: m.fmod(x, 0.3), "copysign": lambda m, x, y: m.copysign(x, y - 1),
    "xlogy": lambda m, x, y: m.xlogy(x, y), "xlogy_method": lambda m, x, y: x.xlogy(y),
    "logit": lambda m, x: m.logit(x), "logit_eps": lambda m, x: m.logit(x, eps=0.3),
    "frexp": lambda m, x: m.frexp(x * 10).mantissa,
    "special.xlog1py": lambda m, x, y: m.special.xlog1py(x, y), "special.entr": lambda m, x: m.special.entr(x),
    "float_power": lambda m, x: m.float_power(x, 2.5),
}
SCIPY_NODED = {
    "erfc": lambda m, x: m.erfc(x), "erfinv": lambda m, x: m.erfinv(x), "lgamma": lambda m, x: m.lgamma(x),
    "digamma": lambda m, x: m.digamma(x), "polygamma": lambda m, x: m.polygamma(2, x),
    "polygamma_method": lambda m, x: x.polygamma(1), "i0": lambda m, x: m.i0(x),
    "special.i1": lambda m, x: m.special.i1(x), "special.i0e": lambda m, x: m.special.i0e(x - 0.5),
    "special.i1e": lambda m, x: m.special.i1e(x - 0.5), "special.erfcx": lambda m, x: m.special.erfcx(x),
    "special.ndtri": lambda m, x: m.special.ndtri(x), "special.log_ndtr": lambda m, x: m.special.log_ndtr(x),
    "special.gammaln": lambda m, x: m.special.gammaln(x), "special.psi": lambda m, x: m.special.psi(x),
    "special.gammainc": lambda m, x, y: m.special.gammainc(y.detach(), x),
    "special.gammaincc": lambda m, x, y: m.special.gammaincc(y.detach(), x),
}
UNNODED = {  # compositions: PyTorch has a node of its own, the values and gradients agree
    "deg2rad": lambda m, x: m.deg2rad(x), "rad2deg": lambda m, x: m.rad2deg(x),
    "nanmean": lambda m, x: m.nanmean(m.where(x > 0.6, float("nan"), x), dim=1),
    "nan_to_num": lambda m, x: m.nan_to_num(m.log(x - 0.5) * m.where(x > 0.7, float("inf"), 1.0), posinf=3.0),
    "special.ndtr": lambda m, x: m.special.ndtr(x), "special.expit": lambda m, x: m.special.expit(x),
    "special.logsumexp": lambda m, x: m.special.logsumexp(x, (0, 1)),
    "special.softmax": lambda m, x: m.special.softmax(x, 1),
    "special.log_softmax": lambda m, x: m.special.log_softmax(x, 0),
    "special.multigammaln": lambda m, x: m.special.multigammaln(x + 2, 2),
    "mvlgamma": lambda m, x: m.mvlgamma(x + 2, 3),
    "special.sinc": lambda m, x: m.special.sinc(x), "special.logit": lambda m, x: m.special.logit(x),
}


def _arity(fn):
    return fn.__code__.co_argcount - 1


@pytest.mark.parametrize("name", sorted(NODED))
def test_eager_function_matches_torch(name):
    fn = NODED[name]
    _both(fn, fn, *(X, Y)[:_arity(fn)])


@pytest.mark.parametrize("name", sorted(SCIPY_NODED))
def test_eager_scipy_kernel_function_matches_torch(name):
    pytest.importorskip("scipy")
    fn = SCIPY_NODED[name]
    _both(fn, fn, *(X, Y)[:_arity(fn)], rtol=1e-8)


@pytest.mark.parametrize("name", sorted(UNNODED))
def test_eager_composite_matches_torch(name):
    pytest.importorskip("scipy")
    fn = UNNODED[name]
    _both(fn, fn, *(X, Y)[:_arity(fn)], check_node=False, rtol=1e-8)


def test_bessel_values_match_torch():
    """torch.special's Bessel functions have no gradient; their values agree with ours to
    PyTorch's accuracy (about 3e-7 relative: SciPy's, which we use, matches mpmath to 1e-16)."""
    pytest.importorskip("scipy")
    torch = _torch()
    x = np.linspace(0.3, 9.0, 7)
    for name in ("bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1"):
        _close(getattr(tg.special, name)(tg.tensor(x)).numpy(), getattr(torch.special, name)(torch.tensor(x)),
               name, rtol=1e-6)


def test_frexp_result_and_ldexp_match_torch():
    torch = _torch()
    x = np.array([3.0, -0.1, 0.0, 1e-300, 7.5])
    m, e = tg.frexp(tg.tensor(x))
    tm, te = torch.frexp(torch.tensor(x))
    _close(m.numpy(), tm, "mantissa")
    assert e.dtype == tg.int32 and np.array_equal(e.numpy(), te.numpy())
    _close(tg.ldexp(tg.tensor(x), tg.tensor([1, -2, 3, 4, 0])).numpy(),
           torch.ldexp(torch.tensor(x), torch.tensor([1.0, -2.0, 3.0, 4.0, 0.0])), "ldexp")


def test_xlogy_convention_differs_from_torch_at_zero():
    """d/dx xlogy(x, y) at x == 0 is log(y) here (what the function's slope is; JAX
    agrees), 0 in PyTorch; both give 0 at x == y == 0, and agree on d/dy."""
    x = tg.tensor([0.0, 0.0], dtype=tg.float64, requires_grad=True)
    y = tg.tensor([2.0, 0.0], dtype=tg.float64, requires_grad=True)
    tg.xlogy(x, y).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [np.log(2.0), 0.0])
    np.testing.assert_allclose(y.grad.numpy(), [0.0, 0.0])
