"""AST forward mode of NumPy calls with a literal Python-number operand (``np.subtract(b,
0.0)``): the tangent of a NumPy function's result is a NumPy scalar or array, as the result
is, also where the operand differentiated is a Python float -- and a Python-number tangent
of a NumPy primal takes the primal's kind. Both failed with an unclear AttributeError
(``'float' object has no attribute 'sum'``) where the tape gave the right values."""
import numpy as np
import pytest

import tracegrad as tg

CASES = {
    "subtract": (lambda b: np.subtract(b, 0.0).sum(), lambda b: 1.0),
    "rsubtract": (lambda b: np.subtract(0.0, b).sum(), lambda b: -1.0),
    "add": (lambda b: np.add(b, 2.0).sum(), lambda b: 1.0),
    "radd": (lambda b: np.add(2.0, b).sum(), lambda b: 1.0),
    "multiply": (lambda b: np.multiply(b, 3.0).sum(), lambda b: 3.0),
    "divide": (lambda b: np.divide(b, 2.0).sum(), lambda b: 0.5),
    "maximum": (lambda b: np.maximum(b, 0.5).sum(), lambda b: 1.0 * (b > 0.5)),
    "rmaximum": (lambda b: np.maximum(0.5, b).sum(), lambda b: 1.0 * (b > 0.5)),
    "power": (lambda b: np.power(b, 2.0).sum(), lambda b: 2.0 * b),
    "power_int": (lambda b: np.power(b, 2).sum(), lambda b: 2.0 * b),
    "negative": (lambda b: np.negative(b).sum(), lambda b: -1.0),
}

PRIMALS = {"float": 1.3, "float64": np.float64(1.3), "0d": np.array(1.3), "1d": np.array([1.3, 0.2])}


def _numeric(f, x, t, eps=1e-6):
    x = np.asarray(x, dtype=float)
    return (f(x + eps * t) - f(x - eps * t)) / (2 * eps)


@pytest.mark.parametrize("kind", list(PRIMALS))
@pytest.mark.parametrize("name", list(CASES))
def test_jvp_of_a_numpy_call_with_a_literal_operand(name, kind):
    f, slope = CASES[name]
    x = PRIMALS[kind]
    t = 1.0 if type(x) is float else np.ones_like(x)
    want = np.sum(np.asarray(slope(np.asarray(x))) * np.ones(np.shape(x)))
    for mode in ("ast", "tape"):
        value, tangent = tg.jvp(f, (x,), (t,), mode=mode)
        np.testing.assert_allclose(value, f(x), rtol=1e-12)
        np.testing.assert_allclose(tangent, want, rtol=1e-12, err_msg=mode)
        np.testing.assert_allclose(tangent, _numeric(f, x, np.asarray(t)), rtol=1e-6, err_msg=mode)


@pytest.mark.parametrize("x", [np.float64(1.3), np.array(1.3)], ids=["float64", "0d"])
def test_a_python_float_tangent_takes_its_numpy_primals_kind(x):
    def f(b):
        return (b - 0.0).sum() + (-b).sum()
    value, tangent = tg.jvp(f, (x,), (1.0,), mode="ast")
    want_value, want_tangent = tg.jvp(f, (x,), (1.0,), mode="tape")
    np.testing.assert_allclose(value, want_value, rtol=1e-12)
    np.testing.assert_allclose(tangent, want_tangent, rtol=1e-12)
    np.testing.assert_allclose(tangent, 0.0, atol=1e-12)


def _branch_to_a_constant(b, c):
    x = 1.0 if c > 0 else b           # a Python float: its tangent a zero Python float
    return np.subtract(x, 0.0).sum() + np.multiply(b, 2.0)


@pytest.mark.parametrize("c", [1.0, -1.0])
def test_a_constants_zero_tangent_through_a_numpy_call(c):
    value, tangent = tg.jvp(lambda b: _branch_to_a_constant(b, c), (1.3,), (1.0,), mode="ast")
    np.testing.assert_allclose(value, _branch_to_a_constant(1.3, c), rtol=1e-12)
    np.testing.assert_allclose(tangent, 2.0 if c > 0 else 3.0, rtol=1e-12)


def test_a_python_float_keeps_pythons_own_error():
    # (1.3 - 0.0).sum() fails when run plainly: AST mode runs the user's operators as
    # written, so it fails the same way rather than inventing a method on a float
    with pytest.raises(AttributeError, match="'float' object has no attribute 'sum'"):
        tg.jvp(lambda b: (b - 0.0).sum(), (1.3,), (1.0,), mode="ast")
