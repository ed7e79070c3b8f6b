"""Backward-pass surgery with ``tracegrad.grad_of`` (code that runs in the adjoint, where a
variable's gradient is complete), forward mode written from source, and higher order."""
import numpy as np
import pytest

import tracegrad as tg

W = np.random.default_rng(0).normal(size=(3, 3))


def rnn_clipped(x, w):
    h = np.zeros(3)
    for t in range(len(x)):
        h = np.tanh(w @ h + x[t])
        with tg.grad_of(h) as dh:
            dh = np.clip(dh, -0.1, 0.1)
    return np.sum(h)


def rnn_by_hand(x, w, clip):
    hs = [np.zeros(3)]
    for t in range(len(x)):
        hs.append(np.tanh(w @ hs[-1] + x[t]))
    g = np.ones(3)
    dw, dx = np.zeros_like(w), np.zeros_like(x)
    for t in reversed(range(len(x))):
        if clip:
            g = np.clip(g, -0.1, 0.1)
        pre = g * (1 - hs[t + 1] ** 2)
        dw += np.outer(pre, hs[t])
        dx[t] = pre
        g = w.T @ pre
    return dx, dw


def test_grad_of_clips_the_gradient_inside_the_backward_loop():
    x = np.random.default_rng(1).normal(size=(4, 3))
    g = tg.grad(rnn_clipped, argnums=(0, 1), mode="ast")
    dx, dw = g(x, W * 2)
    ex, ew = rnn_by_hand(x, W * 2, clip=True)
    np.testing.assert_allclose(dx, ex, rtol=1e-12)
    np.testing.assert_allclose(dw, ew, rtol=1e-12)
    # without the surgery (the tape ignores it) the gradient is the unclipped one, and differs
    tx, tw = tg.grad(rnn_clipped, argnums=(0, 1), mode="tape")(x, W * 2)
    ux, uw = rnn_by_hand(x, W * 2, clip=False)
    np.testing.assert_allclose(tw, uw, rtol=1e-12)
    assert not np.allclose(uw, ew)
    src = g.source
    # the block sits in the backward loop, before h's own adjoint, on h's gradient
    lines = [line.strip() for line in src.splitlines()]
    clip = next(i for i, line in enumerate(lines) if "np.clip(" in line and not line.startswith("#"))
    assert lines[clip - 1] == "# grad of: dh = np.clip(dh, -0.1, 0.1)"
    assert lines[clip + 1] == "# grad of: h = np.tanh(w @ h + x[t])"
    grad_h = lines[clip].split(" = ")[0]
    assert lines[clip] == f"{grad_h} = np.clip({grad_h}, -0.1, 0.1)"
    # run directly, the block has no effect on the value
    assert rnn_clipped(x, W) == pytest.approx(float(np.sum(_forward(x, W))))


def _forward(x, w):
    h = np.zeros(3)
    for t in range(len(x)):
        h = np.tanh(w @ h + x[t])
    return h


def two_layer(x, w):
    h = np.tanh(x @ w)
    s = 0.0
    for i in range(3):
        s = s + np.sum(h * i)
    return np.sum(h * h) + s


def test_forward_mode_matches_finite_differences_and_reads_as_tangent_code():
    rng = np.random.default_rng(2)
    x, w, tx, tw = (rng.normal(size=s) for s in ((4, 3), (3, 2), (4, 3), (3, 2)))
    out, tangent = tg.jvp(two_layer, (x, w), (tx, tw), mode="ast")
    eps = 1e-6
    fd = (two_layer(x + eps * tx, w + eps * tw) - two_layer(x - eps * tx, w - eps * tw)) / (2 * eps)
    assert out == pytest.approx(two_layer(x, w), rel=1e-12)
    assert float(tangent) == pytest.approx(fd, rel=1e-6)
    from tracegrad.transform.ast.driver import tangents
    src = tangents(two_layer, "two_layer_jvp").source
    assert src.startswith("def two_layer_jvp(x, w, dx, dw):")
    assert "dh = dt * (1.0 - h * h)" in src     # tanh's rule, applied to the tangent
    assert "for i in range(3):" in src         # control flow kept as it is


def rec_power(x, n):
    if n == 0:
        return 1.0
    return x * rec_power(x, n - 1)


def test_forward_mode_through_a_recursive_user_function():
    out, t = tg.jvp(rec_power, (1.3, 4), (1.0, 0.0), mode="ast")
    assert out == pytest.approx(1.3 ** 4)
    assert t == pytest.approx(4 * 1.3 ** 3)
    assert tg.grad(rec_power, mode="ast")(1.3, 4) == pytest.approx(4 * 1.3 ** 3)


def poly(x):
    return np.sum(x ** 3 - 2 * x * x)


def test_second_derivatives_of_an_ast_gradient():
    x = np.array([0.5, -1.0, 2.0])
    g = tg.grad(poly)
    assert g.mode == "ast"
    h = tg.hessian(poly)(x)
    np.testing.assert_allclose(h, np.diag(6 * x - 4), rtol=1e-12)
    # grad of grad: the outer transform differentiates the generated adjoint
    gg = tg.grad(lambda v: np.sum(g(v)))
    np.testing.assert_allclose(gg(x), 6 * x - 4, rtol=1e-12)
    # forward over reverse: a Hessian-vector product
    v = np.array([1.0, 0.0, 2.0])
    _, hv = tg.jvp(g, (x,), (v,))
    np.testing.assert_allclose(hv, (6 * x - 4) * v, rtol=1e-12)


def sin_times(x):
    return np.sin(x) * x


def tanh_loop(x):
    y = x
    for _ in range(3):
        y = np.tanh(y * 1.1)
    return y * y


def test_grad_of_grad_transforms_the_generated_adjoint_again():
    d2 = tg.grad(tg.grad(sin_times, mode="ast"), mode="ast")
    assert d2(0.7) == pytest.approx(-np.sin(0.7) * 0.7 + 2 * np.cos(0.7), rel=1e-12)
    assert d2.mode == "ast" and "def dsin_times_dx(" in d2.source and "stack.pop()" in d2.source
    loop2 = tg.grad(tg.grad(tanh_loop, mode="ast"), mode="ast")
    assert loop2(0.3) == pytest.approx(tg.grad(tg.grad(tanh_loop, mode="tape"), mode="tape")(0.3), rel=1e-10)


def test_forward_over_reverse_in_ast_mode():
    x = np.array([0.5, -1.0, 2.0])
    v = np.array([1.0, 0.0, 2.0])
    _, hv = tg.jvp(tg.grad(poly, mode="ast"), (x,), (v,), mode="ast")
    np.testing.assert_allclose(hv, (6 * x - 4) * v, rtol=1e-12)


def _pair_with_a_number(p):
    return p * 2.0, 0.0


def _method_on_a_constant_result(y):
    a, b = _pair_with_a_number(y)
    k = 0.0
    k = k * 2.0 + 0.0
    c = np.subtract(b, k)     # NumPy's float64 of two Python numbers
    return c.sum() + np.sum(np.tanh(a)) + np.tanh(c)


@pytest.mark.parametrize("y", [np.array(0.4), np.array([0.4, -1.2])])
def test_forward_mode_gives_a_number_tangent_the_results_type(y):
    # the tangent of np.subtract(0.0, 0.0) was the Python float 0.0, and `.sum()` on it
    # failed with an unclear AttributeError (found by the long fuzz, seed 42)
    value, tangent = tg.jvp(_method_on_a_constant_result, (y,), (np.ones_like(y),), mode="ast")
    want_value, want_tangent = tg.jvp(_method_on_a_constant_result, (y,), (np.ones_like(y),), mode="tape")
    np.testing.assert_allclose(value, want_value, rtol=1e-12)
    np.testing.assert_allclose(tangent, want_tangent, rtol=1e-12)
    np.testing.assert_allclose(tangent, np.sum(2.0 * (1 - np.tanh(2.0 * y) ** 2)), rtol=1e-12)
