"""The staged front door refuses the same inputs and outputs in every mode, with the
error JAX or PyTorch gives, and takes Python floats and keyword arguments in every mode.

Each case here returned a silently wrong gradient (or failed with an internal error) in
AST and auto mode before the checks were shared (tracegrad/transform/checks.py)."""
import math
import re

import numpy as np
import pytest

import tracegrad as tg

from .numeric import numeric

MODES = ("tape", "ast", "auto")


def weighted(x):
    return x[0] * 0.5 + x[1] * 1.5


def builtin_sum(x):
    return sum(x * x)


def complex_output(x):
    return np.sum(x) * 1j


def string_output(x):
    return "abc"


def int_output(x):
    return np.argmax(x)


def one_element(x):
    return np.sum(x * x, keepdims=True)


def elementwise(x):
    return np.sin(x)


def product(x, y):
    return np.sum(x * y)


def squares(x):
    return np.sum(x * x)


def scaled(x, scale=2.0, shift=0.0):
    return np.sum(x * scale + shift)


def pair(d):
    return np.sum(d["a"] * d["b"])


def sum_of_pair(p):
    return p[0] * p[1] * 0.5 + p[0] * p[0]


def loss_and_aux(x):
    return np.sum(x * x), np.max(x)


X = np.array([1.0, 2.0, 3.0])


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("f, arg", [(weighted, np.array([1, 2])), (builtin_sum, np.arange(3)),
                                    (squares, np.array([True, False])), (squares, 3)])
def test_integer_and_bool_inputs_are_a_type_error(mode, f, arg):
    with pytest.raises(TypeError, match="floating point"):
        tg.grad(f, mode=mode)(arg)


@pytest.mark.parametrize("mode", MODES)
def test_a_complex_output_is_a_type_error(mode):
    with pytest.raises(TypeError, match="real-valued outputs.*complex128"):
        tg.grad(complex_output, mode=mode)(X)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("f, what", [(string_output, "returned str"), (int_output, "dtype int64")])
def test_a_non_float_output_is_a_type_error(mode, f, what):
    with pytest.raises(TypeError, match=what):
        tg.grad(f, mode=mode)(X)


@pytest.mark.parametrize("mode", MODES)
def test_a_one_element_output_is_accepted_as_torch_accepts_numel_1(mode):
    np.testing.assert_allclose(tg.grad(one_element, mode=mode)(X), 2 * X)


@pytest.mark.parametrize("mode", MODES)
def test_a_non_scalar_output_keeps_torchs_error(mode):
    with pytest.raises(RuntimeError, match="only for scalar outputs"):
        tg.grad(elementwise, mode=mode)(X)


@pytest.mark.parametrize("mode", MODES)
def test_python_floats_are_differentiated_and_come_back_as_floats(mode):
    dx, dy = tg.grad(product, argnums=(0, 1), mode=mode)(2.0, 3.0)
    assert (dx, dy) == (3.0, 2.0) and type(dx) is float and type(dy) is float
    dxs = tg.grad(sum_of_pair, mode=mode)([2.0, 4.0])
    assert dxs == [6.0, 1.0] and all(type(v) is float for v in dxs)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("argnums, error, message", [
    ((), ValueError, r"argnums=\(\) differentiates with respect to no argument"),
    ("0", TypeError, "argnums must be an int or a tuple of ints, not '0'"),
    ((0, 1.0), TypeError, "argnums must be an int or a tuple of ints"),
    (True, TypeError, "argnums must be an int"),
])
def test_bad_argnums_are_refused_when_the_transform_is_made(mode, argnums, error, message):
    with pytest.raises(error, match=message):
        tg.grad(squares, argnums=argnums, mode=mode)


@pytest.mark.parametrize("mode", MODES)
def test_argnums_out_of_range_is_a_value_error(mode):
    with pytest.raises(ValueError, match="out of range"):
        tg.grad(squares, argnums=1, mode=mode)(X)


@pytest.mark.parametrize("mode", MODES)
def test_has_aux_with_a_non_pair_output_is_a_type_error(mode):
    with pytest.raises(TypeError, match="has_aux=True expects the function to return a pair"):
        tg.grad(squares, has_aux=True, mode=mode)(X)
    g, aux = tg.grad(loss_and_aux, has_aux=True, mode=mode)(X)
    np.testing.assert_allclose(g, 2 * X)
    assert aux == 3.0


@pytest.mark.parametrize("mode", MODES)
def test_keyword_arguments_are_taken_in_every_mode(mode):
    np.testing.assert_allclose(tg.grad(product, mode=mode)(X, y=X + 1), X + 1)
    np.testing.assert_allclose(tg.grad(scaled, mode=mode)(X, shift=1.0), [2.0, 2.0, 2.0])
    np.testing.assert_allclose(tg.grad(scaled, mode=mode)(x=X, scale=3.0), [3.0, 3.0, 3.0])


def test_dict_arguments_work_in_every_mode():
    d = {"a": X, "b": X + 1}
    for mode in MODES:
        g = tg.grad(pair, mode=mode)(d)
        np.testing.assert_allclose(g["a"], X + 1)
        np.testing.assert_allclose(g["b"], X)


def math_exp(x):
    return math.exp(x) * 2.0


def float_of(x):
    return float(x) * 2.0 + x


def filled(x):
    return np.sum(np.full((3,), x) * 2.0)


def spaced(x):
    return np.sum(np.linspace(0.0, x, 4))


def r_concat(x):
    return np.r_[x, x]


def c_concat(x):
    return np.c_[x, x]


@pytest.mark.parametrize("f, construct", [(float_of, "float()"), (filled, "np.full()")])
def test_a_value_being_differentiated_made_a_constant_is_refused_by_ast(f, construct):
    """The AST path took these calls as constants: a silent zero derivative. It refuses
    them; the tape refuses float() too, and records np.full's traced fill (as auto does,
    falling back to it)."""
    with pytest.raises(tg.TransformError, match=re.escape(construct)) as info:
        tg.grad(f, mode="ast")(1.5)
    assert info.value.construct == construct and info.value.lineno is not None
    for mode in ("tape", "auto"):
        if f is float_of:
            with pytest.raises(tg.TracerError):
                tg.grad(f, mode=mode)(1.5)
        else:
            assert tg.grad(f, mode=mode)(1.5) == 6.0


@pytest.mark.parametrize("mode", MODES)
def test_math_functions_are_differentiated_or_refused_never_zero(mode):
    if mode == "tape":
        with pytest.raises(tg.TracerError, match="np.exp"):
            tg.grad(math_exp, mode=mode)(1.5)
    else:  # the AST path writes math.exp's derivative out
        assert tg.grad(math_exp, mode=mode)(1.5) == pytest.approx(2 * math.exp(1.5))


def mean_of_math_exp(x):
    s = math.exp(np.sum(x) * 0.1)
    return np.mean(s) + np.var(s) + np.sum(x * s)


def test_ast_reductions_of_a_python_float_from_math(mode="ast"):
    # math.exp gives a Python float; the rules of mean and var read its .shape (the long
    # fuzz, seed 41: "'float' object has no attribute 'shape'"), now shape_of(s)
    x = np.array([0.3, -0.8, 1.1])
    g = tg.grad(mean_of_math_exp, mode="ast")
    h = 1e-6
    want = [(mean_of_math_exp(x + h * e) - mean_of_math_exp(x - h * e)) / (2 * h) for e in np.eye(3)]
    np.testing.assert_allclose(g(x), want, rtol=1e-7)
    assert "shape_of(s)" in g.source
    _, tangent = tg.jvp(mean_of_math_exp, (x,), (np.ones(3),), mode="ast")
    assert tangent == pytest.approx(sum(want), rel=1e-7)


@pytest.mark.parametrize("f", [r_concat, c_concat])
def test_np_r_and_c_of_a_value_being_differentiated_are_refused_by_ast_and_traced_by_the_tape(f):
    """AST jvp gave a zero tangent for np.r_[x, x] (the index was taken as constant), so
    the AST path refuses it; the tape records the concatenation (and auto falls back to it)."""
    x, t = np.array([1.0, 2.0, 3.0]), np.ones(3)
    with pytest.raises(tg.TransformError, match=r"np\.[rc]_\[\.\.\.\]"):
        tg.jvp(f, (x,), (t,), mode="ast")
    for mode in ("tape", "auto"):
        out, tangent = tg.jvp(f, (x,), (t,), mode=mode)
        np.testing.assert_allclose(out, f(x))
        np.testing.assert_allclose(tangent, f(t))


def test_np_linspace_of_a_value_being_differentiated_is_differentiated_in_every_mode():
    for mode in ("tape", "ast", "auto"):
        assert np.isclose(tg.grad(spaced, mode=mode)(1.5), 2.0)  # 0 + 1/3 + 2/3 + 1


# -- found by the differential fuzzer (tests/transform/test_fuzz_differential.py) ---------------

def item_in_arithmetic(x):
    s = np.mean(x).item()
    return np.sum(x * s)


def augmented_zero_d(x):
    x += 0.5
    return np.sum(np.tanh(x))


def outer_of_a_float(x):
    c = -0.97
    return np.sum(np.outer(c, x))


def write_with_leading_ones(x, y):
    w = y * 1.0
    w[0] = x            # x has shape (1, 3), w[0] shape (3,): NumPy drops the leading 1
    return np.sum(w * w)


def numpy_on_a_math_float(x):
    s = math.tanh(np.sum(x))
    return np.sum(s / (s * s + 1.0))


def test_item_of_a_value_being_differentiated_is_refused_in_every_mode():
    x = np.array([0.3, -0.7, 1.1])
    with pytest.raises(tg.TransformError, match=r"\.item\(\) of a value being differentiated"):
        tg.grad(item_in_arithmetic, mode="ast")(x)
    for mode in ("tape", "auto"):
        with pytest.raises(tg.TracerError, match=r"\.item\(\) of a value being differentiated"):
            tg.grad(item_in_arithmetic, mode=mode)(x)
    # a traced Tensor's .item() keeps torch's meaning: a number without history
    assert tg.grad(lambda t: t * t.item(), mode="tape")(tg.tensor(3.0, dtype=tg.float64)).item() == 3.0


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("f, args", [
    (augmented_zero_d, (np.array(0.3),)),
    (outer_of_a_float, (np.array([0.3, -0.7, 1.1]),)),
    (write_with_leading_ones, (np.array([[0.3, -0.7, 1.1]]), np.ones((2, 3)))),
], ids=["augmented_zero_d", "outer_of_a_float", "write_with_leading_ones"])
def test_what_numpy_accepts_is_differentiated_in_every_mode(mode, f, args):
    x, *rest = args
    if mode == "ast" and f is augmented_zero_d:  # NumPy writes into a 0-d array in place
        with pytest.raises(tg.TransformError, match="changes a 0-d array in place"):
            tg.grad(f, mode=mode)(x.copy(), *rest)
        return
    np.testing.assert_allclose(tg.grad(f, mode=mode)(x.copy(), *rest), numeric(f, x, *rest), rtol=1e-6, atol=1e-8)


def test_numpy_on_a_python_float_from_math_in_ast_mode():
    x = np.array([0.3, -0.7, 1.1])
    for mode in ("ast", "auto"):  # (the tape refuses math.tanh of a traced value)
        np.testing.assert_allclose(tg.grad(numpy_on_a_math_float, mode=mode)(x), numeric(numpy_on_a_math_float, x),
                                   rtol=1e-6, atol=1e-8)


def power_of_a_negative_constant(x):
    v = np.sum((-0.5) ** 2)
    return np.sum(x * v) + (-2.0) ** 2 * np.sum(x)


def stacks_with_numbers(x):
    return np.sum(np.vstack([-1.58, np.min(x)])) + np.sum(np.hstack([-2, x]) ** 2)


def zero_d_axis(x):
    s = math.tanh(1.0) * np.sum(x)
    return np.sum(np.prod(s, axis=0)) + np.sum(np.prod(x * 2.0, axis=-1))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("f", [power_of_a_negative_constant, stacks_with_numbers, zero_d_axis],
                         ids=lambda f: f.__name__)
def test_more_of_what_numpy_accepts(mode, f):
    """(-0.5) ** 2 was printed as -0.5 ** 2 in AST mode (a wrong value); a Python number
    in np.hstack hid the array beside it from AST mode (a zero gradient); numbers in
    np.vstack and an int axis on a 0-d array failed on the tape."""
    x = np.array([0.3, -0.7, 1.1])
    value, grad = tg.value_and_grad(f, mode=mode)(x)
    assert value == pytest.approx(f(x))
    np.testing.assert_allclose(grad, numeric(f, x), rtol=1e-6, atol=1e-8)
