"""What the AST path hands to a tape: statements holding a lambda that captures a value
being differentiated (the statement becomes a function of the names it reads, traced),
library calls whose constant arguments have no derivative (the undefined derivative is
kept, and raised only where it is used), and functions drawing random numbers (the
pullback replays the draws). Checked against finite differences and the tape, in
reverse and forward mode and to second order."""
import functools

import numpy as np
import pytest

import tracegrad as tg
from tests.transform.numeric import numeric
from tracegrad.transform.undefined import Undefined, check_defined

X = np.array([0.3, 0.7, 1.1])
HERE = __file__


def _apply(fn, v):
    return fn(v)


def captured_by_a_helper(x):
    ys = _apply(lambda v: v * x, x)
    return np.sum(np.sin(ys))


def captured_by_reduce(x):
    s = functools.reduce(lambda a, b: a + b * x[0], [1.0, 2.0, 3.0], 0.0)
    return s * x[1] + x[2] ** 2


def captured_by_an_inner_grad(x):
    t = 0.0
    for k in range(2):
        t = t + tg.grad(lambda y: np.exp(y) * np.tanh(x[0] * (k + 1)), mode="ast")(x[1])  # noqa: B023
    return t * x[2]


def captured_and_sorted(x):
    order = sorted([0, 1, 2], key=lambda i: float(i))
    return np.sum(np.array([x[i] * x[0] for i in order]) ** 2) + _apply(lambda v: np.sum(v * x), x)


CASES = [captured_by_a_helper, captured_by_reduce, captured_by_an_inner_grad, captured_and_sorted]


@pytest.mark.parametrize("fn", CASES)
def test_a_statement_with_a_capturing_lambda_is_traced(fn):
    g = tg.grad(fn, mode="ast")
    np.testing.assert_allclose(g(X), numeric(fn, X), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(g(X), tg.grad(fn, mode="tape")(X), rtol=1e-12)
    assert g.mode == "ast"


@pytest.mark.parametrize("fn", CASES)
def test_forward_mode_and_second_order(fn):
    v = np.array([0.5, -1.0, 2.0])
    _, t = tg.jvp(fn, (X,), (v,), mode="ast")
    np.testing.assert_allclose(t, numeric(fn, X) @ v, rtol=1e-6)
    h = tg.hessian(fn, mode="ast")(X)
    grad = tg.grad(fn, mode="tape")
    np.testing.assert_allclose(h, np.stack([numeric(lambda x, i=i: grad(x)[i], X) for i in range(3)]),
                               rtol=1e-5, atol=1e-7)


def test_the_statement_is_named_in_the_generated_code():
    source = tg.grad(captured_by_a_helper, mode="ast").source
    assert "line_" in source and "call_vjp" in source


def test_other_refusals_are_not_retried():
    def set_of(x):
        members = {x[0], x[1]}
        return np.sum(x) * len(members)
    with pytest.raises(tg.TransformError, match="set of differentiated values"):
        _ = tg.grad(set_of, mode="ast").source


# -- derivatives a rule does not have, of arguments that turn out constant ----------------

sp = pytest.importorskip("scipy.special")


def _unary(fun, argnum, args):
    """``fun`` of ``args`` with those at ``argnum`` replaced by ``x``'s items (which
    arguments vary is known only when it runs)."""
    def unary_f(x):
        subargs = list(args)
        for i, xi in zip(argnum, x):
            subargs[i] = xi
        return np.sum(fun(*subargs))
    return unary_f


ORDERS = np.array([2.0, 3.0])
POINTS = np.array([1.5, 0.7])


def test_a_constant_argument_without_derivative_is_no_error():
    f = _unary(sp.iv, [1], (ORDERS, POINTS))
    g = tg.grad(f, mode="ast")((POINTS,))[0]
    np.testing.assert_allclose(g, sp.ivp(ORDERS, POINTS), rtol=1e-10)
    np.testing.assert_allclose(g, tg.grad(f, mode="tape")((POINTS,))[0], rtol=1e-12)


def test_the_derivative_needed_after_all_raises_the_rules_error():
    f = _unary(sp.iv, [0], (ORDERS, POINTS))
    with pytest.raises(NotImplementedError, match="derivative of iv with respect to its operand 'v'"):
        tg.grad(f, mode="ast")((ORDERS,))


def test_an_undefined_derivative_flows_back_through_what_made_the_argument():
    def f(x):
        order = x[0] * 2.0  # (the order depends on x: its derivative is needed)
        return np.sum(sp.iv(*[order, x[1]]))
    with pytest.raises(NotImplementedError, match="operand 'v'"):
        tg.grad(f, mode="ast")(np.array([1.0, 0.5]))


def test_an_undefined_derivative_raises_wherever_it_is_used():
    u = Undefined(NotImplementedError("no derivative of v"))
    for use in (lambda: u + 1.0, lambda: 2.0 * u, lambda: np.ones(2) + u, lambda: np.asarray(u),
                lambda: -u, lambda: bool(u), lambda: check_defined(u), lambda: np.sum(u)):
        with pytest.raises(NotImplementedError, match="no derivative of v"):
            use()
    assert check_defined(3.0) == 3.0


def test_the_tape_still_raises_at_once():
    f = _unary(sp.iv, [0], (ORDERS, POINTS))
    with pytest.raises(NotImplementedError, match="operand 'v'"):
        tg.grad(f, mode="tape")((ORDERS,))


def test_forward_mode_through_a_constant_argument_without_derivative():
    # (its tangent, zeros, is dropped: a jvp is linear in the tangents)
    f = _unary(sp.iv, [1], (ORDERS, POINTS))
    v = np.array([1.0, -2.0])
    _, t = tg.jvp(f, ((POINTS,),), ((v,),), mode="ast")
    np.testing.assert_allclose(t, sp.ivp(ORDERS, POINTS) @ v, rtol=1e-10)
    with pytest.raises(NotImplementedError, match="iv"):
        tg.jvp(_unary(sp.iv, [0], (ORDERS, POINTS)), ((ORDERS,),), ((v,),), mode="ast")


# -- values being differentiated passed by keyword to a call traced on a tape -------------

def weighted(x, w):
    return np.average(np.sin(x), weights=w * w) + np.sum(np.clip(x, a_min=w[0], a_max=None))


def test_a_keyword_argument_being_differentiated():
    x, w = np.array([0.3, -0.2, 0.9]), np.array([0.5, 1.5, 0.7])
    g = tg.grad(weighted, argnums=(0, 1), mode="ast")(x, w)
    for i, a in enumerate((x, w)):
        f = (lambda v: weighted(v, w)) if i == 0 else (lambda v: weighted(x, v))
        np.testing.assert_allclose(g[i], numeric(f, a), rtol=1e-6, atol=1e-9)
    _, t = tg.jvp(weighted, (x, w), (np.ones(3), np.ones(3)), mode="ast")
    np.testing.assert_allclose(t, numeric(lambda v: weighted(x, v), w).sum() + numeric(lambda v: weighted(v, w), x).sum(),
                               rtol=1e-6)
    assert "by_keyword" in tg.grad(weighted, argnums=(0, 1), mode="ast").source
