"""The tape transforms as functions: ``grad``, ``value_and_grad``, ``vjp``, ``jvp``,
``jacobian``, ``hessian`` and their compositions.

Every derivative is checked against something independent of the tape: central finite
differences of the plain NumPy function (or of its gradient, for second derivatives) and
derivatives worked out by hand (d/dx sum(x^3) = 3x^2, the Hessian of x@A@x is A + A^T,
the Hessian of logsumexp is diag(p) - p p^T). The front door's contract is pinned too:
what comes back for each kind of input, argnums, has_aux, decorator forms, pytrees, and
the errors for non-scalar outputs, integer inputs, bad argnums and unknown modes.
"""
import numpy as np
import pytest

import tracegrad as tg  # noqa: F401
from .tape_mode import tg  # noqa: F811  (grad etc. with mode="tape")

RNG = np.random.default_rng(1234)
X3 = np.array([0.3, -1.2, 2.0])
A = RNG.standard_normal((3, 3))
M = RNG.standard_normal((4, 3))


def numeric_jacobian(f, x, h=1e-6):
    """Central differences of ``f`` at array ``x``: shape ``f(x).shape + x.shape``."""
    x = np.asarray(x, dtype=np.float64)
    out_shape = np.shape(f(x))
    jac = np.zeros(out_shape + x.shape)
    for idx in np.ndindex(*x.shape):
        step = np.zeros_like(x)
        step[idx] = h
        jac[(Ellipsis,) + idx] = (np.asarray(f(x + step)) - np.asarray(f(x - step))) / (2 * h)
    return jac


def logsumexp(x):
    m = np.max(x)
    return m + np.log(np.sum(np.exp(x - m)))


def softmax(x):
    e = np.exp(x - x.max())
    return e / e.sum()


# -- hessian ----------------------------------------------------------------------------

HESSIANS = {
    "sum_cube": (lambda x: np.sum(x ** 3), lambda x: np.diag(6 * x)),
    "quadratic_form": (lambda x: x @ A @ x, lambda x: A + A.T),
    "logsumexp": (logsumexp, lambda x: np.diag(softmax(x)) - np.outer(softmax(x), softmax(x))),
    "sin_product": (lambda x: np.sin(x[0] * x[1]) + x[2] ** 2,
                    lambda x: np.array([
                        [-x[1] ** 2 * np.sin(x[0] * x[1]),
                         np.cos(x[0] * x[1]) - x[0] * x[1] * np.sin(x[0] * x[1]), 0],
                        [np.cos(x[0] * x[1]) - x[0] * x[1] * np.sin(x[0] * x[1]),
                         -x[0] ** 2 * np.sin(x[0] * x[1]), 0],
                        [0, 0, 2]])),
}


@pytest.mark.parametrize("name", HESSIANS)
def test_hessian_matches_hand_formula(name):
    """The Hessian equals the second derivatives worked out by hand."""
    f, expected = HESSIANS[name]
    np.testing.assert_allclose(tg.hessian(f)(X3), expected(X3), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", HESSIANS)
def test_hessian_matches_finite_differences_of_grad(name):
    """The Hessian is the Jacobian of the gradient: central differences of grad agree."""
    f, _ = HESSIANS[name]
    hess = tg.hessian(f)(X3)
    assert hess.shape == (3, 3)
    np.testing.assert_allclose(hess, numeric_jacobian(tg.grad(f), X3), rtol=1e-5, atol=1e-6)


def test_hessian_argnums_differentiates_the_named_argument():
    """hessian(argnums=1) of sum(a^2 * b^3) is diag(6 a^2 b) (second derivative in b)."""
    a, b = X3, X3[::-1].copy()
    hess = tg.hessian(lambda a, b: np.sum(a ** 2 * b ** 3), argnums=1)(a, b)
    np.testing.assert_allclose(hess, np.diag(6 * a ** 2 * b), rtol=1e-12)


# -- jacobian ---------------------------------------------------------------------------

JACOBIANS = {
    "elementwise": (lambda x: np.tanh(x) * x[::-1], (3, 3)),
    "matvec": (lambda x: np.sin(M @ x), (4, 3)),
    "outer": (lambda x: np.outer(x, x ** 2), (3, 3, 3)),
    "reduction": (lambda x: np.cumsum(np.exp(x)), (3, 3)),
    "scalar": (logsumexp, (3,)),
}


@pytest.mark.parametrize("name", JACOBIANS)
def test_jacobian_shape_and_values_match_finite_differences(name):
    """Shape out.shape + arg.shape, entries equal to central differences."""
    f, shape = JACOBIANS[name]
    jac = tg.jacobian(f)(X3)
    assert jac.shape == shape
    np.testing.assert_allclose(jac, numeric_jacobian(f, X3), rtol=1e-6, atol=1e-8)


def test_jacobian_of_a_linear_map_is_the_matrix():
    np.testing.assert_allclose(tg.jacobian(lambda x: M @ x)(X3), M, rtol=1e-14)


def test_jacobian_argnums_tuple_gives_one_jacobian_per_argument():
    """d(a*b)/da = diag(b), d(a*b)/db = diag(a)."""
    a, b = X3, X3 + 1.5
    ja, jb = tg.jacobian(lambda a, b: a * b, argnums=(0, 1))(a, b)
    np.testing.assert_allclose(ja, np.diag(b))
    np.testing.assert_allclose(jb, np.diag(a))


# -- jvp -------------------------------------------------------------------------------

def test_jvp_is_the_directional_derivative():
    """jvp(f, (x,), (v,)) = J v, compared with a central difference along v."""
    f = JACOBIANS["matvec"][0]
    v = np.array([0.5, -1.0, 2.0])
    out, tangent = tg.jvp(f, (X3,), (v,))
    np.testing.assert_allclose(out, f(X3), rtol=1e-14)
    h = 1e-6
    np.testing.assert_allclose(tangent, (f(X3 + h * v) - f(X3 - h * v)) / (2 * h), rtol=1e-6)


def test_jvp_with_several_primals_sums_their_contributions():
    """For f(x, y) = sin(x) * y: df = cos(x) y dx + sin(x) dy."""
    x, y = X3, X3 ** 2 + 1
    dx, dy = np.array([1.0, 0.0, -2.0]), np.array([0.25, 3.0, 1.0])
    out, tangent = tg.jvp(lambda x, y: np.sin(x) * y, (x, y), (dx, dy))
    np.testing.assert_allclose(out, np.sin(x) * y)
    np.testing.assert_allclose(tangent, np.cos(x) * y * dx + np.sin(x) * dy, rtol=1e-13)


def test_jvp_of_a_tuple_output_gives_a_tuple_of_tangents():
    v = np.array([1.0, 2.0, -1.0])
    (o1, o2), (t1, t2) = tg.jvp(lambda x: (np.sin(x), np.sum(x ** 2)), (X3,), (v,))
    np.testing.assert_allclose(o1, np.sin(X3))
    np.testing.assert_allclose(o2, np.sum(X3 ** 2))
    np.testing.assert_allclose(t1, np.cos(X3) * v, rtol=1e-13)
    np.testing.assert_allclose(t2, 2 * X3 @ v, rtol=1e-13)


def test_jvp_tangent_shape_mismatch_raises():
    with pytest.raises(ValueError, match="tangent"):
        tg.jvp(np.sin, (X3,), (np.ones(2),))


# -- vjp -------------------------------------------------------------------------------

def test_vjp_is_the_transposed_jacobian_product():
    """f_vjp(u) = u^T J for every cotangent u, and ``out`` is f(x)."""
    f = JACOBIANS["matvec"][0]
    out, f_vjp = tg.vjp(f, X3)
    np.testing.assert_allclose(out, f(X3))
    jac = tg.jacobian(f)(X3)
    for u in (np.ones(4), np.array([1.0, -2.0, 0.5, 3.0])):
        (ct,) = f_vjp(u)
        np.testing.assert_allclose(ct, u @ jac, rtol=1e-12)


def test_vjp_gives_one_cotangent_per_primal():
    """JAX semantics: a tuple with one cotangent for each primal, each of its shape."""
    x, y = X3, X3 + 2.0
    out, f_vjp = tg.vjp(lambda x, y: np.sin(x) * y, x, y)
    u = np.array([1.0, 0.5, -1.0])
    cts = f_vjp(u)
    assert isinstance(cts, tuple) and len(cts) == 2
    np.testing.assert_allclose(cts[0], u * np.cos(x) * y, rtol=1e-13)
    np.testing.assert_allclose(cts[1], u * np.sin(x), rtol=1e-13)


def test_vjp_of_a_tuple_output_takes_a_tuple_cotangent():
    """Cotangents of (x^2, sum x): 2x u1 + u2."""
    _, f_vjp = tg.vjp(lambda x: (x ** 2, np.sum(x)), X3)
    u1 = np.array([1.0, -1.0, 2.0])
    (ct,) = f_vjp((u1, np.float64(3.0)))
    np.testing.assert_allclose(ct, 2 * X3 * u1 + 3.0)


@pytest.mark.parametrize("cotangent, match", [
    (np.ones(4), "cotangent of shape"),
    (np.ones((3, 1)), "cotangent of shape"),
])
def test_vjp_cotangent_shape_mismatch_raises(cotangent, match):
    _, f_vjp = tg.vjp(np.sin, X3)
    with pytest.raises(ValueError, match=match):
        f_vjp(cotangent)


def test_vjp_cotangent_structure_mismatch_raises():
    _, f_vjp = tg.vjp(lambda x: (x ** 2, np.sum(x)), X3)
    with pytest.raises(ValueError, match="leaves"):
        f_vjp(np.ones(3))


# -- nested transforms ----------------------------------------------------------------

SECOND_DERIVATIVES = [
    # (f, f'' by hand, point)
    (lambda x: x ** 3, lambda x: 6 * x, 2.0),
    (lambda x: np.sin(x) * x, lambda x: 2 * np.cos(x) - x * np.sin(x), 0.7),
    (lambda x: np.exp(-x * x), lambda x: (4 * x * x - 2) * np.exp(-x * x), 0.4),
    (lambda x: np.log(x) / x, lambda x: (2 * np.log(x) - 3) / x ** 3, 1.7),
    (lambda x: np.tanh(x), lambda x: -2 * np.tanh(x) / np.cosh(x) ** 2, -0.3),
]


@pytest.mark.parametrize("f, d2f, x", SECOND_DERIVATIVES)
def test_grad_of_grad_is_the_second_derivative(f, d2f, x):
    assert tg.grad(tg.grad(f))(x) == pytest.approx(d2f(x), rel=1e-12)


def test_third_derivative_through_three_nested_grads():
    """d^3/dx^3 sin x = -cos x."""
    assert tg.grad(tg.grad(tg.grad(np.sin)))(0.5) == pytest.approx(-np.cos(0.5), rel=1e-12)


def test_grad_of_grad_of_an_array_function_is_the_hessian_row_sum():
    """grad(x -> grad(f)(x) . v) = H v, here for f = sum(x^3): 6 x v."""
    v = np.array([1.0, -2.0, 0.5])
    hv = tg.grad(lambda x: np.sum(tg.grad(lambda y: np.sum(y ** 3))(x) * v))(X3)
    np.testing.assert_allclose(hv, 6 * X3 * v, rtol=1e-12)


@pytest.mark.parametrize("f, expected", [
    # d/dx [ x * d/dy (x y)|y=x ] = d/dx x^2 = 2x, not x (the inner y must not be x)
    (lambda x: x * tg.grad(lambda y: x * y)(x), lambda x: 2 * x),
    # d/dx [ d/dy (x y)|y=x ] = d/dx x = 1 (a confused tape gives 2)
    (lambda x: tg.grad(lambda y: x * y)(x), lambda x: 1.0),
    # Siskind & Pearlmutter: d/dx [ x * d/dy (x + y) ] = 1 (a confused tape gives 2)
    (lambda x: x * tg.grad(lambda y: x + y)(x), lambda x: 1.0),
    # the inner derivative point is a fresh constant array
    (lambda x: x * tg.grad(lambda y: x * y)(np.float64(2.0)), lambda x: 2 * x),
])
def test_nested_grad_does_not_confuse_perturbations(f, expected):
    """An inner grad treats the outer variable as a constant; the outer grad still sees
    how the inner result depends on it."""
    assert tg.grad(f)(3.0) == pytest.approx(expected(3.0), rel=1e-12)


def test_nested_grad_accepts_a_python_float_argument():
    """f(x) = x * grad(lambda y: x * y)(2.0) = x^2, so df/dx = 2x."""
    assert tg.grad(lambda x: x * tg.grad(lambda y: x * y)(2.0))(3.0) == pytest.approx(6.0)


# -- value_and_grad, has_aux, argnums, decorators --------------------------------------

def test_value_and_grad_gives_both():
    value, g = tg.value_and_grad(lambda x: np.sum(x ** 3))(X3)
    assert value == pytest.approx(np.sum(X3 ** 3))
    np.testing.assert_allclose(g, 3 * X3 ** 2)


def test_value_and_grad_with_aux():
    (value, aux), g = tg.value_and_grad(lambda x: (np.sum(x ** 2), x * 2), has_aux=True)(X3)
    assert value == pytest.approx(np.sum(X3 ** 2))
    np.testing.assert_allclose(aux, 2 * X3)
    np.testing.assert_allclose(g, 2 * X3)


def test_grad_with_aux_returns_gradient_and_aux():
    g, aux = tg.grad(lambda x: (np.sum(np.sin(x)), np.cos(x) + 1), has_aux=True)(X3)
    np.testing.assert_allclose(g, np.cos(X3))
    np.testing.assert_allclose(aux, np.cos(X3) + 1)


def test_has_aux_requires_a_pair():
    with pytest.raises(TypeError, match="pair"):
        tg.grad(lambda x: np.sum(x), has_aux=True)(X3)


def loss(a, b, c):
    """sum(a * b^2 * c^3): each partial derivative is known by hand."""
    return np.sum(a * b ** 2 * c ** 3)


A1, B1, C1 = X3, X3 + 1.0, X3 - 0.5
PARTIALS = (B1 ** 2 * C1 ** 3, 2 * A1 * B1 * C1 ** 3, 3 * A1 * B1 ** 2 * C1 ** 2)


@pytest.mark.parametrize("argnums, expected", [
    (0, PARTIALS[0]), (2, PARTIALS[2]), (-1, PARTIALS[2]), (-3, PARTIALS[0]),
    ((1,), (PARTIALS[1],)), ((2, 0), (PARTIALS[2], PARTIALS[0])),
    ((0, -2), (PARTIALS[0], PARTIALS[1])),
])
def test_argnums_selects_the_differentiated_arguments(argnums, expected):
    """An int gives one gradient, a tuple a tuple in the tuple's order (negatives count
    from the end)."""
    got = tg.grad(loss, argnums=argnums)(A1, B1, C1)
    if isinstance(argnums, int):
        np.testing.assert_allclose(got, expected, rtol=1e-12)
    else:
        assert isinstance(got, tuple) and len(got) == len(expected)
        for g, e in zip(got, expected):
            np.testing.assert_allclose(g, e, rtol=1e-12)


@pytest.mark.parametrize("argnums", [3, -4, (0, 3)])
def test_argnums_out_of_range_raises(argnums):
    with pytest.raises(ValueError, match="out of range"):
        tg.grad(loss, argnums=argnums)(A1, B1, C1)


def test_decorator_forms():
    """``@grad`` and ``@grad(argnums=1)`` work like ``grad(f)`` / ``grad(f, argnums=1)``."""
    @tg.grad
    def d0(a, b):
        return np.sum(a ** 2 * b)

    @tg.grad(argnums=1)
    def d1(a, b):
        return np.sum(a ** 2 * b)

    np.testing.assert_allclose(d0(A1, B1), 2 * A1 * B1)
    np.testing.assert_allclose(d1(A1, B1), A1 ** 2)
    assert d0.mode == d1.mode == "tape"


def test_static_and_keyword_arguments():
    """Python ints are static; keyword arguments reach the function."""
    np.testing.assert_allclose(tg.grad(lambda a, n: np.sum(a ** n))(X3, 3), 3 * X3 ** 2)
    np.testing.assert_allclose(tg.grad(lambda a, n: np.sum(a ** n))(X3, 4), 4 * X3 ** 3)
    np.testing.assert_allclose(tg.grad(lambda a, k=2.0: np.sum(a * k))(X3, k=3.0), np.full(3, 3.0))


# -- kinds of inputs and results ------------------------------------------------------

def test_python_float_gives_python_float():
    g = tg.grad(lambda x: x ** 3)(2.0)
    assert type(g) is float and g == pytest.approx(12.0)
    value, g = tg.value_and_grad(lambda x: x ** 3)(2.0)
    assert type(g) is float and g == pytest.approx(12.0) and value == pytest.approx(8.0)


def test_ndarray_gives_ndarray():
    g = tg.grad(lambda x: np.sum(x ** 3))(X3)
    assert type(g) is np.ndarray and g.shape == X3.shape
    np.testing.assert_allclose(g, 3 * X3 ** 2)


def test_tensor_gives_tensor_equal_to_eager_backward():
    def f(x):
        return (tg.tanh(x) * x).sum()
    g = tg.grad(f)(tg.tensor(X3, dtype=tg.float64))
    assert isinstance(g, tg.Tensor)
    x = tg.tensor(X3, dtype=tg.float64, requires_grad=True)
    f(x).backward()
    np.testing.assert_allclose(g.numpy(), x.grad.numpy(), rtol=1e-14)


@pytest.mark.parametrize("transform", [
    lambda f, x: tg.grad(f)(x),
    lambda f, x: tg.value_and_grad(f)(x)[1],
    lambda f, x: tg.hessian(f)(x),
    lambda f, x: tg.jvp(f, (x,), (x,))[1],
    lambda f, x: tg.vjp(f, x)[1](np.float32(1.0))[0],
], ids=["grad", "value_and_grad", "hessian", "jvp", "vjp"])
def test_float32_stays_float32(transform):
    x = X3.astype(np.float32)
    out = transform(lambda x: np.sum(x ** 3), x)
    assert out.dtype == np.float32


def test_float32_tensor_gradient_stays_float32():
    g = tg.grad(lambda x: (x * x).sum())(tg.tensor(X3, dtype=tg.float32))
    assert g.dtype == tg.float32


@pytest.mark.parametrize("params, f, expected", [
    ((X3, X3 + 1), lambda p: np.sum(p[0] * p[1] ** 2), lambda p: (p[1] ** 2, 2 * p[0] * p[1])),
    ([X3, X3 + 1], lambda p: np.sum(p[0] * p[1]), lambda p: [p[1], p[0]]),
    ({"w": X3, "b": X3 - 1}, lambda p: np.sum(np.sin(p["w"]) + p["b"] ** 2),
     lambda p: {"w": np.cos(p["w"]), "b": 2 * p["b"]}),
    ({"a": (X3,), "b": X3 + 1}, lambda p: np.sum(p["a"][0] * p["b"]),
     lambda p: {"a": (p["b"],), "b": p["a"][0]}),
], ids=["tuple", "list", "dict", "nested"])
def test_pytree_argument_gives_gradient_of_the_same_structure(params, f, expected):
    assert_same_tree(tg.grad(f)(params), expected(params))


def assert_same_tree(got, want):
    """Same containers (type, keys, lengths) all the way down, leaves numerically equal."""
    assert type(got) is type(want)
    if isinstance(want, dict):
        assert set(got) == set(want)
        for k in want:
            assert_same_tree(got[k], want[k])
    elif isinstance(want, (tuple, list)):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert_same_tree(g, w)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-13)


# -- errors ----------------------------------------------------------------------------

def test_non_scalar_output_raises():
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar outputs"):
        tg.grad(lambda x: x * 2)(X3)


@pytest.mark.parametrize("arg", [3, np.arange(3), np.int32(2)], ids=["int", "int_array", "np_int"])
def test_integer_input_raises_type_error(arg):
    with pytest.raises(TypeError, match="floating point"):
        tg.grad(lambda x: np.sum(x * x))(arg)


@pytest.mark.parametrize("make", [
    lambda: tg.grad(np.sin, mode="bogus"),
    lambda: tg.grad(mode="bogus"),
    lambda: tg.value_and_grad(np.sin, mode="bogus"),
    lambda: tg.jacobian(np.sin, mode="bogus"),
    lambda: tg.hessian(np.sin, mode="bogus"),
], ids=["grad", "grad_decorator", "value_and_grad", "jacobian", "hessian"])
def test_unknown_mode_raises(make):
    with pytest.raises(ValueError, match="bogus"):
        make()


def test_mode_is_tape():
    assert tg.grad(np.sin).mode == "tape"
    assert tg.grad(np.sin, mode="tape").mode == "tape"
