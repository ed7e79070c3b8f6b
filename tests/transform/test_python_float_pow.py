"""``**`` of Python floats keeps Python's meaning on the tape and in AST mode: a negative
base and a finite non-integer exponent give a complex number (``(-8.0) ** (1 / 3)``), as
the function run plainly does, where NumPy's float64 gives nan; a NumPy float64 base (or
a NumPy function's result) keeps NumPy's nan. Gradients of real inputs are the real part
of the complex derivative (JAX's / HIPS autograd's convention), checked against finite
differences of the plain function; the tape guards the sign it saw (a replay with the
other sign traces again)."""
import warnings

import numpy as np
import pytest

import tracegrad as tg
from tracegrad.transform.ast.front import PythonFloat

MODES = ("tape", "ast")


def power(a, b):
    return a ** b


def scaled_power(a, b):
    c = a * 2.0 - 1.0
    return (-c) ** b + abs(c) ** 0.5


def constant_base(b):
    return (-2.0) ** b


def real_cube_root(a):
    return np.real(a ** (1 / 3))


def through_numpy(a):
    return np.sin(a) ** 0.5        # np.sin's result is NumPy's float64: NumPy's nan


def _plain_grad(f, args, eps=1e-6):
    """The gradient of the real part of ``f`` run plainly, by central differences."""
    out = []
    for k in range(len(args)):
        def at(d):
            moved = list(args)
            moved[k] = args[k] + d
            return complex(f(*moved)).real
        out.append((at(eps) - at(-eps)) / (2 * eps))
    return out


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("a, b", [(-1.3, -0.7), (-1.3, 0.4), (1.3, -0.7), (-0.6, 2.5)])
def test_negative_base_gives_pythons_complex_value_and_its_derivative(a, b, mode):
    want = power(a, b)
    out, pull = tg.vjp(power, a, b, mode=mode)
    assert complex(out) == pytest.approx(complex(want), rel=1e-12)
    assert np.iscomplexobj(out) == isinstance(want, complex)
    ga, gb = pull(1.0)
    assert type(ga) is float and type(gb) is float  # (a real argument's gradient is real)
    np.testing.assert_allclose([ga, gb], _plain_grad(power, (a, b)), rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("mode", MODES)
def test_pythons_meaning_follows_python_floats_through_operators(mode):
    for a, b in ((0.2, 0.3), (0.9, -0.45)):
        out, pull = tg.vjp(scaled_power, a, b, mode=mode)
        assert complex(out) == pytest.approx(complex(scaled_power(a, b)), rel=1e-12)
        np.testing.assert_allclose(pull(1.0), _plain_grad(scaled_power, (a, b)), rtol=1e-6)
    out, pull = tg.vjp(constant_base, 0.3, mode=mode)
    assert complex(out) == pytest.approx(constant_base(0.3), rel=1e-12)
    np.testing.assert_allclose(pull(1.0), _plain_grad(constant_base, (0.3,)), rtol=1e-6)


@pytest.mark.parametrize("mode", MODES)
def test_numpy_float64_keeps_numpys_nan(mode):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        out, pull = tg.vjp(power, np.float64(-1.3), 0.4, mode=mode)
        assert np.isnan(out) and not np.iscomplexobj(out) and np.isnan(power(np.float64(-1.3), 0.4))
        out, _ = tg.vjp(through_numpy, -0.5, mode=mode)
        assert np.isnan(out) and not np.iscomplexobj(out) and np.isnan(through_numpy(-0.5))


@pytest.mark.parametrize("inner, outer", [("tape", "tape"), ("ast", "tape"), ("ast", "ast")])
def test_second_order_through_the_complex_root(inner, outer):
    first = tg.grad(real_cube_root, mode=inner)
    second = tg.grad(first, mode=outer)
    if inner == outer == "ast":
        # AST over AST: the inner adjoint's gradient of a real argument is complex until
        # the front door takes its real part, and the outer refuses a complex output
        # (as for any complex intermediate: np.real((a + 0j) ** (1 / 3)) alike)
        with pytest.raises(TypeError, match="requires real-valued outputs"):
            second(-2.0)
        return
    for a in (-2.0, -0.7, 1.5):
        g = _plain_grad(real_cube_root, (a,))[0]
        assert first(a) == pytest.approx(g, rel=1e-6)
        assert second(a) == pytest.approx((first(a + 1e-5) - first(a - 1e-5)) / 2e-5, rel=1e-5)


@pytest.mark.parametrize("mode", MODES)
def test_forward_mode(mode):
    for a, b in ((-1.3, 0.4), (1.3, 0.4)):
        out, tangent = tg.jvp(power, (a, b), (1.0, 0.5), mode=mode)
        assert complex(out) == pytest.approx(complex(power(a, b)), rel=1e-12)
        eps = 1e-6
        want = (complex(power(a + eps, b + 0.5 * eps)) - complex(power(a - eps, b - 0.5 * eps))) / (2 * eps)
        assert complex(tangent) == pytest.approx(want, rel=1e-6)


def test_the_tape_retraces_when_the_sign_changes():
    g = tg.grad(lambda a, b: np.real(power(a, b)), argnums=(0, 1), mode="tape")
    for a in (1.3, -1.3, 1.1, -0.8, -0.9, 0.7):  # (replays of each sign's tape in turn)
        np.testing.assert_allclose(g(a, 0.4), _plain_grad(lambda x, y: np.real(power(x, y)), (a, 0.4)), rtol=1e-6)


def test_integer_exponents_keep_a_real_result():
    out, pull = tg.vjp(power, -1.3, 3.0, mode="tape")
    assert not np.iscomplexobj(out) and float(out) == pytest.approx((-1.3) ** 3.0)
    assert pull(1.0)[0] == pytest.approx(3 * 1.3 ** 2)


def _divide(a, b):
    return a / b


def _floor_divide(a, b):
    return a // b


def _modulo(a, b):
    return a % b


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("f, args", [(_divide, (1.5, 0.0)), (_floor_divide, (1.5, 0.0)), (_modulo, (1.5, -0.0)),
                                     (power, (0.0, -1.0)), (power, (-0.0, -0.5))])
def test_zero_division_raises_pythons_error(f, args, mode):
    with pytest.raises(ZeroDivisionError) as plain:
        f(*args)
    with pytest.raises(ZeroDivisionError, match=str(plain.value)):
        tg.vjp(f, *args, mode=mode)


def test_the_tape_raises_where_a_replay_meets_a_zero_divisor():
    g = tg.grad(_divide, argnums=(0, 1), mode="tape")
    assert g(1.5, 2.0) == pytest.approx((0.5, -1.5 / 4))
    with pytest.raises(ZeroDivisionError, match="float division by zero"):
        g(1.5, 0.0)
    assert g(1.5, 3.0) == pytest.approx((1 / 3, -1.5 / 9))
    np_divide = tg.grad(lambda a, b: np.divide(a, b), argnums=0, mode="tape")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert np.isinf(np_divide(1.5, 0.0))  # (NumPy's function: NumPy's meaning)


def test_constant_exponents_and_divisors_record_no_guard():
    # Python's meaning costs a replay nothing where a constant settles it
    assert len(tg.trace(lambda a: a ** 2 + a / 2.0 + (-a) ** 3 + 2.0 ** a)(1.5).guards) == 0
    assert len(tg.trace(lambda a: np.sqrt(a) ** 0.5)(1.5).guards) == 0   # (NumPy's float64)
    assert len(tg.trace(lambda a: a ** 0.5)(1.5).guards) == 1            # (the base's sign)
    assert len(tg.trace(power)(1.5, 0.5).guards) == 3   # (the exponent's sign and integrality, the base's sign)


def _scalar_attributes(x):
    assert x.shape == () and x.ndim == 0 and x.size == 1 and x.dtype == np.float64
    return x ** 2 + x.sum() * 0.0


@pytest.mark.parametrize("mode", MODES)
def test_a_python_float_argument_answers_numpys_scalar_attributes(mode):
    # as the tape's tracer of it does (and HIPS autograd's box): AST mode hands the
    # function a Python float that also has a shape and a dtype
    assert tg.grad(_scalar_attributes, mode=mode)(3.0) == pytest.approx(6.0)
    assert type(tg.grad(_scalar_attributes, mode=mode)(3.0)) is float


def _identity_and_aux(x):
    return x * 1.0, x


@pytest.mark.parametrize("mode", MODES)
def test_values_handed_back_are_plain_floats(mode):
    (value, aux), grad = tg.value_and_grad(_identity_and_aux, has_aux=True, mode=mode)(3.0)
    assert type(value) is float and type(grad) is float
    assert aux == 3.0 and type(aux) is not PythonFloat   # (the tape gives a 0-d array)
    value, grad = tg.value_and_grad(_identity, mode=mode)(3.0)
    assert type(value) is float and value == 3.0 and grad == 1.0


def _identity(x):
    return x
