"""float32 GELU (exact form) on the CPU computes erf as PyTorch's CPU kernel does, by
Abramowitz & Stegun 7.1.26 (tracegrad/rules/gelu_kernels.py): its values against the
formula evaluated in float64 (no torch needed), against PyTorch over a dense grid with its
tails, infinities, nan, signed zeros, denormals and huge values -- at least as close as the
accurate form's float32 values are -- and its derivatives, first and second, in every
mode; float64 and ``erf`` itself stay accurate."""
import math

import numpy as np
import pytest

import tracegrad as tg
from tracegrad.backend import cpu
from tracegrad.rules import gelu_kernels

from .torch_gelu_avx2 import torch_gelu

F = tg.nn.functional
AS_C = (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)
SPECIAL = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-40, -1e-40, 1e-45, -1e-45, 1e-30, -1e-30, 3e38,
           -3e38, 1e20, -1e20, -5.5, -5.4, -6.0, 20.0, -20.0, -0.75, 0.0985, -0.0985]


def _grid():
    return np.concatenate([np.linspace(-10, 10, 400001), SPECIAL]).astype(np.float32)


def _as_cdf(x):
    """Phi(x) by A&S 7.1.26, in float64."""
    x = np.asarray(x, np.float64)
    z = np.abs(x) / math.sqrt(2)
    t = 1 / (1 + 0.3275911 * z)
    q = 0.5 * sum(c * t ** (i + 1) for i, c in enumerate(AS_C)) * np.exp(-z * z)
    return np.where(x < 0, q, 1 - q)


def _accurate(x):
    """The exact form's value and derivative in float64 (math.erf)."""
    x = np.asarray(x, np.float64)
    cdf = 0.5 * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))
    with np.errstate(invalid="ignore", over="ignore"):
        return x * cdf, cdf + x * np.exp(-x * x / 2) / math.sqrt(2 * math.pi)


def _value_and_grad(lib, x, g):
    t = lib.tensor(x, requires_grad=True)
    y = lib.nn.functional.gelu(t)
    y.backward(lib.tensor(g))
    return y.detach().numpy(), t.grad.numpy()


def _finite_points(x):
    return x[np.isfinite(x) & (np.abs(x) < 1e6)]


# -- the formula (no torch) --------------------------------------------------------------------------

def test_the_cdf_is_abramowitz_and_stegun():
    x = _finite_points(_grid())
    cdf = gelu_kernels.cdf(cpu, x)
    assert cdf.dtype == np.float32
    off = np.abs(cdf - _as_cdf(x))
    # (A&S is within 7.5e-8 of the exact cdf: the mean tells them apart, the rounded
    # exact cdf's being 2e-8)
    assert off.max() <= 1e-7 and off.mean() <= 1.2e-8  # (measured: 9.1e-8, 8.3e-9)


def test_forward_and_backward_follow_the_formula():
    x = _finite_points(_grid())
    y = gelu_kernels.gelu_forward(cpu, x, "none")
    dx = gelu_kernels.gelu_backward(cpu, np.ones_like(x), x, "none")
    assert y.dtype == dx.dtype == np.float32
    xd = x.astype(np.float64)
    want = xd * _as_cdf(xd)
    # (x Phi(x) as 0.5 x + |x| (0.5 - Phi(-|x|)): an error of float32's eps relative to x;
    # and a denormal's half rounds)
    assert (np.abs(y - want) <= 6e-8 * np.abs(xd) + 1.5e-7 * np.abs(want) + 1e-45).all()
    pdf = np.exp(-xd * xd / 2) / math.sqrt(2 * math.pi)
    np.testing.assert_allclose(dx, _as_cdf(xd) + xd * pdf, rtol=0, atol=1.5e-7)


def test_the_formula_is_within_4e_7_of_the_exact_value():
    x = _finite_points(_grid())
    y, dx = _value_and_grad(tg, x, np.ones_like(x))
    want, dwant = _accurate(x)
    np.testing.assert_allclose(y, want, rtol=1e-7, atol=4e-7)
    np.testing.assert_allclose(dx, dwant, rtol=0, atol=4e-7)


def test_special_values():
    x = np.array([np.inf, -np.inf, np.nan, 0.0, -0.0, -1e30, 1e30, 1e-40, -1e-40], np.float32)
    y, dx = _value_and_grad(tg, x, np.ones_like(x))
    assert y[0] == np.inf and np.isnan(y[1:3]).all()  # (gelu(-inf): inf * 0, nan as in torch)
    assert y[3] == y[4] == y[5] == 0 and not np.signbit(y[3:6]).any()  # +0: torch's signs
    assert y[6] == np.float32(1e30)
    np.testing.assert_allclose(y[7:], 0.5 * x[7:].astype(np.float64), rtol=1e-6)
    # (at +-inf, cdf + x pdf is inf * 0: nan, as in torch)
    assert np.isnan(dx[:3]).all() and dx[3] == dx[4] == 0.5 and dx[5] == 0 and dx[6] == 1


@pytest.mark.parametrize("shape", [(), (1,), (0,), (0, 3), (3, 4)])
def test_every_shape_gets_the_same_formula(shape):
    x = (np.arange(max(1, math.prod(shape)), dtype=np.float32) * 0.37 - 1.1)[:math.prod(shape)].reshape(shape)
    y = F.gelu(tg.tensor(x)).numpy()
    assert y.shape == shape and y.dtype == np.float32
    flat = gelu_kernels.gelu_forward(cpu, np.ascontiguousarray(x.reshape(-1)), "none")
    np.testing.assert_array_equal(y.reshape(-1).view(np.int32), flat.view(np.int32))
    for scalar in (np.float32(-1.1), np.float32(0.0)):  # a NumPy scalar, as 0-d arithmetic gives
        one = gelu_kernels.gelu_forward(cpu, np.array([scalar]), "none")
        assert gelu_kernels.gelu_forward(cpu, scalar, "none").view(np.int32) == one.view(np.int32)[0]


def test_a_strided_input_gets_the_same_values():
    x = np.linspace(-4, 4, 600, dtype=np.float32).reshape(20, 30)
    for view in (x.T, x[:, ::3], x[::-1]):
        g = np.cos(np.arange(view.size, dtype=np.float32)).reshape(view.shape)
        dense = np.ascontiguousarray(view)
        for a, b in ((gelu_kernels.gelu_forward(cpu, view, "none"), gelu_kernels.gelu_forward(cpu, dense, "none")),
                     (gelu_kernels.gelu_backward(cpu, g, view, "none"), gelu_kernels.gelu_backward(cpu, g, dense, "none")),
                     (gelu_kernels.cdf(cpu, view), gelu_kernels.cdf(cpu, dense))):
            assert a.shape == view.shape
            np.testing.assert_array_equal(a, b)


def test_float32_of_the_other_byte_order_takes_the_accurate_form():
    """(The float32 form reads the sign from the bits: a byte-swapped array, which only
    NumPy code can hand a kernel, takes the accurate form, forward and backward alike.)"""
    x = np.linspace(-3, 3, 61).astype(np.float32)
    swapped = x.astype(x.dtype.newbyteorder())
    y = gelu_kernels.gelu_forward(cpu, swapped, "none")
    dx = gelu_kernels.gelu_backward(cpu, np.ones_like(swapped), swapped, "none")
    want, dwant = _accurate(x)
    np.testing.assert_allclose(y, want, rtol=0, atol=3e-7)
    np.testing.assert_allclose(dx, dwant, rtol=0, atol=3e-7)
    exact_cdf = 0.5 * (1 + np.vectorize(math.erf)(x.astype(np.float64) / math.sqrt(2)))
    np.testing.assert_allclose(gelu_kernels.cdf(cpu, swapped), exact_cdf, rtol=0, atol=1.2e-7)


def test_double_backward_is_the_exact_second_derivative():
    """The cdf's derivative is the exact density (as in PyTorch's double backward), so the
    second derivative is pdf(x) (2 - x^2), in float32 and float64."""
    x = np.linspace(-8, 8, 3201)
    for dtype, tol in (("float32", 2e-7), ("float64", 1e-15)):
        t = tg.tensor(x.astype(dtype), requires_grad=True)
        (d1,) = tg.autograd.grad(F.gelu(t).sum(), t, create_graph=True)
        (d2,) = tg.autograd.grad(d1.sum(), t)
        assert d2.dtype == getattr(tg, dtype)
        xd = x.astype(dtype).astype(np.float64)
        np.testing.assert_allclose(d2.numpy(), np.exp(-xd * xd / 2) / math.sqrt(2 * math.pi) * (2 - xd * xd),
                                   rtol=0, atol=tol)


def test_float64_double_backward_matches_finite_differences():
    x = np.linspace(-5, 5, 101)
    h = 1e-6

    def first(v):
        t = tg.tensor(v, requires_grad=True)
        (d,) = tg.autograd.grad(F.gelu(t).sum(), t)
        return d.numpy()
    t = tg.tensor(x, requires_grad=True)
    (d1,) = tg.autograd.grad(F.gelu(t).sum(), t, create_graph=True)
    (d2,) = tg.autograd.grad(d1.sum(), t)
    np.testing.assert_allclose(d2.numpy(), (first(x + h) - first(x - h)) / (2 * h), rtol=1e-7, atol=1e-8)


def test_the_composite_and_compiled_gradients_are_the_kernels(monkeypatch):
    """One cdf everywhere: create_graph's gradient, a compiled function's and the composite
    vjp on plain arrays (the kernel switched off) equal the eager kernel's bit for bit."""
    x = np.concatenate([np.linspace(-9, 9, 1001), [v for v in SPECIAL if abs(v) < 1e6]]).astype(np.float32)
    g = np.cos(np.arange(x.size)).astype(np.float32)
    _, eager = _value_and_grad(tg, x, g)
    t = tg.tensor(x, requires_grad=True)
    (composite,) = tg.autograd.grad(F.gelu(t), t, tg.tensor(g), create_graph=True)
    compiled = tg.compile(lambda v: F.gelu(v * 1.0))
    c = tg.tensor(x, requires_grad=True)
    compiled(c).backward(tg.tensor(g))
    assert compiled._compiled.graph_breaks == []
    monkeypatch.setattr(gelu_kernels, "gelu_backward", lambda *args: None)
    _, plain = _value_and_grad(tg, x, g)
    for other in (composite.detach().numpy(), c.grad.numpy(), plain):
        np.testing.assert_array_equal(other.view(np.int32), eager.view(np.int32))


def test_float64_and_erf_stay_accurate():
    x = np.linspace(-6, 6, 2001)
    y, dx = _value_and_grad(tg, x, np.ones_like(x))
    want, dwant = _accurate(x)
    # (1 + erf cancels for negative x: an error of float64's eps relative to x)
    assert (np.abs(y - want) <= 1e-14 * np.abs(want) + 2.3e-16 * np.abs(x)).all()
    np.testing.assert_allclose(dx, dwant, rtol=1e-14, atol=1e-16)
    x32 = x.astype(np.float32)
    e = tg.erf(tg.tensor(x32)).numpy()
    exact = np.vectorize(math.erf)(x32.astype(np.float64))
    assert (np.abs(e - exact) <= np.spacing(np.abs(exact).astype(np.float32))).all()  # 1 ulp


# -- against PyTorch -----------------------------------------------------------------------------------

def _torch_and_accurate(x, g):
    ty, tdx = torch_gelu(x, g)  # (torch's AVX2 kernel: see torch_gelu_avx2.py)
    want, dwant = _accurate(x)
    with np.errstate(invalid="ignore"):
        return ty, tdx, want.astype(np.float32), (dwant * g).astype(np.float32)


def _diffs(mine, theirs):
    finite = np.isfinite(theirs)
    d = np.abs(mine[finite].astype(np.float64) - theirs[finite])
    return d.max(), d.mean()


@pytest.mark.torch
def test_forward_matches_torch_at_least_as_closely_as_the_accurate_form():
    x = _grid()
    g = np.ones_like(x)
    y, _ = _value_and_grad(tg, x, g)
    ty, _, accurate, _ = _torch_and_accurate(x, g)
    np.testing.assert_array_equal(np.isnan(y), np.isnan(ty))
    np.testing.assert_array_equal(np.isinf(y), np.isinf(ty))
    assert (np.signbit(y) == np.signbit(ty))[~np.isnan(y)].all()  # torch's signs of zero too
    (worst, mean), (accurate_worst, accurate_mean) = _diffs(y, ty), _diffs(accurate, ty)
    assert worst <= 4.8e-7 and mean <= 3.5e-8  # (measured: 4.77e-7, 2.9e-8)
    assert worst <= accurate_worst and mean <= 0.8 * accurate_mean  # (4.77e-7, 4.1e-8)


@pytest.mark.torch
@pytest.mark.parametrize("seed", [None, 0])
def test_backward_matches_torch_at_least_as_closely_as_the_accurate_form(seed):
    x = _grid()
    g = np.ones_like(x) if seed is None else np.random.default_rng(seed).standard_normal(x.shape).astype(np.float32)
    _, dx = _value_and_grad(tg, x, g)
    _, tdx, _, accurate = _torch_and_accurate(x, g)
    np.testing.assert_array_equal(np.isnan(dx), np.isnan(tdx))
    (worst, mean), (accurate_worst, accurate_mean) = _diffs(dx, tdx), _diffs(accurate, tdx)
    scale = np.abs(g).max()
    assert worst <= 2.4e-7 * scale and mean <= 2e-8 * scale  # (g = 1: 2.38e-7, 1.5e-8)
    assert worst <= accurate_worst * 1.01 and mean <= 0.8 * accurate_mean  # (2.38e-7, 2.3e-8)


@pytest.mark.torch
def test_double_backward_matches_torch_in_float32():
    import torch
    x = np.linspace(-8, 8, 3201).astype(np.float32)
    grads = []
    for lib in (tg, torch):
        t = lib.tensor(x, requires_grad=True)
        (d1,) = lib.autograd.grad(lib.nn.functional.gelu(t).sum(), t, create_graph=True)
        (d2,) = lib.autograd.grad((d1 * d1).sum(), t)
        grads.append((d1.detach().numpy(), d2.numpy()))
    (d1, d2), (td1, td2) = grads
    np.testing.assert_allclose(d1, td1, rtol=0, atol=2.4e-7)
    np.testing.assert_allclose(d2, td2, rtol=0, atol=1e-6)


@pytest.mark.torch
@pytest.mark.parametrize("shape", [(), (1,), (7,), (0,), (3, 5)])
def test_small_and_odd_shapes_match_torch(shape):
    import torch
    x = (np.arange(math.prod(shape), dtype=np.float32) * 0.61 - 1.9).reshape(shape)
    g = np.ones_like(x)
    (y, dx), (ty, tdx) = _value_and_grad(tg, x, g), _value_and_grad(torch, x, g)
    assert y.shape == ty.shape and y.dtype == ty.dtype
    np.testing.assert_allclose(y, ty, rtol=0, atol=4.8e-7)
    np.testing.assert_allclose(dx, tdx, rtol=0, atol=2.4e-7)
