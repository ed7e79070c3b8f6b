"""Review findings on the AST path, each checked against the tape and finite
differences: loop conditions that read the last assignment of the body, writes into an
array between a value's definition and its use, long chains of loop-carried copies,
lists popped, ``%``, random draws, and unknown ``with`` statements."""
import numpy as np
import pytest

import tracegrad as tg

from .numeric import numeric


def newton_sqrt(x):
    y = x[0]
    delta = 1.0
    while delta > 1e-10:
        ynew = y - (y * y - x[1]) / (2 * y)
        delta = abs(ynew - y)
        y = ynew
    return y


def swap_constant(x):
    w = np.array([1.0, 2.0, 3.0, 4.0])
    w[0], w[1] = w[1], w[0]
    return np.sum(w * x)


def delay_line(x):
    a = b = c = d = e = 0.0
    s = 0.0
    for i in range(8):
        s = s + a
        a = b
        b = c
        c = d
        d = e
        e = x[0] * 1.0
    return s


def pop_one(x):
    lst = [x[0], x[1], x[2]]
    v = lst.pop()
    return v * 2.0 + lst[0]


def modulo(x):
    return np.sum(x % 2.0 + x * x)


def slice_written_then_rebound(x):
    # the adjoint restores w[1:]; the loop's w (another shape) must be restored first
    w = x + 0.0
    w[1:] = np.sum(x[1:] ** 2)
    v = w * 2.0
    for i in range(3):
        w = np.tanh(np.outer(w, x[:2])).ravel()
    return np.sum(v * v)


def slice_written_then_rebound_and_used(x):
    w = x * 1.0
    w[:2] = x[1:] * x[0]
    total = np.sum(w ** 2)
    k = 0
    while k < 2:
        w = np.tanh(np.outer(w, x[:2])).ravel()
        k += 1
    return total + np.sum(w)


@pytest.mark.parametrize("f, x", [
    (newton_sqrt, np.array([1.0, 2.0])),
    (swap_constant, np.array([0.5, -1.0, 2.0, 0.3])),
    (delay_line, np.array([0.7, 0.2])),
    (pop_one, np.array([0.3, 1.7, 2.2, 3.1])),
    (modulo, np.array([0.3, 1.7, 2.2, 3.1])),
    (slice_written_then_rebound, np.array([0.3, -0.7, 0.4])),
    (slice_written_then_rebound_and_used, np.array([0.3, -0.7, 0.4])),
])
def test_gradients_agree_with_the_tape_and_finite_differences(f, x):
    got = tg.grad(f, mode="ast")(x)
    np.testing.assert_allclose(got, numeric(f, x), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(got, tg.grad(f, mode="tape")(x), rtol=1e-9, atol=1e-12)
    value, tangent = tg.jvp(f, (x,), (np.ones_like(x),), mode="ast")
    assert value == pytest.approx(f(x))
    assert tangent == pytest.approx(float(np.sum(numeric(f, x))), rel=1e-6, abs=1e-8)


def draws(x):
    unused = np.random.randn(4)
    eps = np.random.randn(4)
    return np.sum(x * eps)


def test_random_draws_are_never_dropped():
    np.random.seed(0)
    np.random.randn(4)
    second = np.random.randn(4)
    np.random.seed(0)
    np.testing.assert_allclose(tg.grad(draws, mode="ast")(np.ones(4)), second)
    assert "np.random.randn(4)" in tg.grad(draws, mode="ast").source.split("eps")[0]


def in_a_file(x):
    with open(__file__):
        y = x * 2
    return np.sum(y)


def test_other_with_statements_are_refused():
    with pytest.raises(tg.TransformError, match="with statement"):
        tg.grad(in_a_file, mode="ast").source
    assert tg.grad(in_a_file).mode == "tape"
