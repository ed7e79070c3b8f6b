"""GELU's exact form keeps its forward's cdf values for the backward
(tracegrad/rules/gelu_kernels.py: float32's A&S parts, float64's erf): the backward takes
them instead of recomputing them, once, for the very input array the forward saw; the
entries die with that array and are bounded; the results are those of a recomputation
bit for bit."""
import gc

import numpy as np
import pytest

import tracegrad as tg
from tracegrad.backend import cpu
from tracegrad.rules import gelu_kernels


@pytest.fixture
def cdf_calls(monkeypatch):
    """The cdf's computations counted (float64's cpu.erf, float32's A&S parts); the kept
    entries cleared."""
    monkeypatch.setattr(gelu_kernels, "_KEPT", {})
    calls = []

    def counting(real):
        def counted(xp_or_x, *a, **k):
            calls.append(1)
            return real(xp_or_x, *a, **k)
        return counted
    monkeypatch.setattr(cpu, "erf", counting(cpu.erf))
    monkeypatch.setattr(gelu_kernels, "_as_s_parts", counting(gelu_kernels._as_s_parts))
    return calls


def _arrays(dtype, shape=(6, 50), seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape) * 2).astype(dtype), rng.standard_normal(shape).astype(dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_the_backward_takes_the_forwards_values_once(cdf_calls, dtype):
    x, g = _arrays(dtype)
    gelu_kernels.gelu_forward(cpu, x, "none")
    assert len(cdf_calls) == 1
    kept = gelu_kernels.gelu_backward(cpu, g, x, "none")
    assert len(cdf_calls) == 1  # nothing recomputed
    again = gelu_kernels.gelu_backward(cpu, g, x, "none")  # (taken once: recomputed now)
    assert len(cdf_calls) == 2
    np.testing.assert_array_equal(kept, again)
    assert not gelu_kernels._KEPT


def test_only_the_same_array_gets_the_kept_values(cdf_calls):
    x, g = _arrays("float32")
    gelu_kernels.gelu_forward(cpu, x, "none")
    same_values = x.copy()
    gelu_kernels.gelu_backward(cpu, g, same_values, "none")
    assert len(cdf_calls) == 2  # another array (even equal): recomputed
    assert len(gelu_kernels._KEPT) == 1  # x's entry stays for x's backward


def test_entries_die_with_their_input_and_are_bounded(cdf_calls, monkeypatch):
    x, _ = _arrays("float32")
    gelu_kernels.gelu_forward(cpu, x, "none")
    assert len(gelu_kernels._KEPT) == 1
    del x
    gc.collect()
    assert not gelu_kernels._KEPT
    monkeypatch.setattr(gelu_kernels, "_KEPT_MAX", 2)
    xs = [_arrays("float32", seed=s)[0] for s in range(3)]
    for x in xs:
        gelu_kernels.gelu_forward(cpu, x, "none")
    assert list(gelu_kernels._KEPT) == [id(xs[1]), id(xs[2])]  # the oldest dropped
    monkeypatch.setattr(gelu_kernels, "_KEPT_BYTES", 2 * xs[0].nbytes * 4 // 3)  # room for one (h and e)
    gelu_kernels.gelu_forward(cpu, xs[0], "none")
    assert list(gelu_kernels._KEPT) == [id(xs[0])]


def test_tanh_form_keeps_nothing(cdf_calls):
    x, g = _arrays("float32")
    gelu_kernels.gelu_forward(cpu, x, "tanh")
    assert not gelu_kernels._KEPT and not cdf_calls


def test_eager_gradients_equal_the_composite_and_the_derivative(cdf_calls):
    """Through the eager runtime: the first-order gradient (kept values) equals the composite
    vjp's (create_graph, recomputed) bit for bit, and the exact derivative."""
    x, g = _arrays("float64")
    a = tg.tensor(x, requires_grad=True)
    tg.nn.functional.gelu(a).backward(tg.tensor(g))
    b = tg.tensor(x, requires_grad=True)
    (grad,) = tg.autograd.grad(tg.nn.functional.gelu(b), b, tg.tensor(g), create_graph=True)
    np.testing.assert_array_equal(a.grad.numpy(), grad.detach().numpy())
    from math import erf, exp, pi, sqrt
    want = [gi * (0.5 * (1 + erf(xi / sqrt(2))) + xi * exp(-xi * xi / 2) / sqrt(2 * pi))
            for xi, gi in zip(x.ravel(), g.ravel())]
    np.testing.assert_allclose(a.grad.numpy().ravel(), want, rtol=1e-12, atol=1e-14)


def test_float32_eager_gradients_equal_the_composite(cdf_calls):
    """float32 (PyTorch's approximate cdf): the kernel's gradient from the kept values, the
    kernel's recomputed one and the composite vjp's (create_graph) are the same bits."""
    x, g = _arrays("float32")
    x[0, :4] = [0.0, -0.0, 30.0, -30.0]
    a = tg.tensor(x, requires_grad=True)
    tg.nn.functional.gelu(a).backward(tg.tensor(g))
    assert len(cdf_calls) == 1
    recomputed = gelu_kernels.gelu_backward(cpu, g, x, "none")
    b = tg.tensor(x, requires_grad=True)
    (grad,) = tg.autograd.grad(tg.nn.functional.gelu(b), b, tg.tensor(g), create_graph=True)
    for other in (recomputed, grad.detach().numpy()):
        np.testing.assert_array_equal(a.grad.numpy().view(np.int32), other.view(np.int32))


def test_an_input_modified_in_place_is_refused_not_served_stale(cdf_calls):
    x, _ = _arrays("float32")
    a = tg.tensor(x, requires_grad=True)
    h = a * 1
    y = tg.nn.functional.gelu(h)
    with tg.no_grad():
        h.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_threads_keeping_and_taking_at_once_get_their_own_values(cdf_calls):
    # every thread's backward gets the values of its own forward (or recomputes them),
    # whatever the others keep, take or drop meanwhile
    import threading
    want = {}
    for k in range(8):
        x, g = _arrays("float32", seed=k)
        gelu_kernels.gelu_forward(cpu, x.copy(), "none")  # (a copy: kept, then freed)
        want[k] = gelu_kernels.gelu_backward(cpu, g, x, "none")
    errors = []

    def work(k):
        try:
            for _ in range(30):
                x, g = _arrays("float32", seed=k)
                gelu_kernels.gelu_forward(cpu, x, "none")
                np.testing.assert_array_equal(gelu_kernels.gelu_backward(cpu, g, x, "none"), want[k])
        except Exception as e:  # noqa: BLE001  (reported below)
            errors.append(e)
    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]
