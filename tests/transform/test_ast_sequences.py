"""Lists and tuples as values in staged functions: ``+`` concatenates them, ``*`` repeats
them, and their gradients are lists that *add* elementwise. The AST path must tell the
two ``+`` apart, also when it differentiates its own generated adjoint (a second
derivative, where the first adjoint's ``dt = dt + dt_part`` adds two list gradients).
Every expected value is a central finite difference; mode="auto" must agree with
mode="tape", and mode="ast" agrees or refuses with a TransformError."""
import numpy as np
import pytest

import tracegrad as tg
from tracegrad.transform.ast.source import TransformError

X = np.array([0.4, -0.7, 1.3])
MODES = ("tape", "ast", "auto")


def fd_grad(f, x, h=1e-6):
    out = np.zeros_like(x)
    for i in range(x.size):
        e = np.zeros_like(x)
        e[i] = h
        out[i] = (f(x + e) - f(x - e)) / (2 * h)
    return out


def fd_hessian(f, x, h=1e-4):
    return np.array([fd_grad(lambda y: fd_grad(f, y, 1e-5)[i], x, h) for i in range(x.size)])


# -- functions (module level: the AST path reads their source) -------------------------------

def tuple_concat_last(x):
    t = (x[0], x[1])
    u = t + (x[2],)
    return u[2] * 1.0 + u[0] * u[1]


def tuple_concat_first(x):
    u = (x[0],) + (x[1], x[2])
    return u[2] * 5.0 + u[0] ** 2


def list_concat(x):
    t = [x[0], x[1]]
    u = t + [x[2]]
    return u[2] * 5.0 + u[0] * np.sin(u[1])


def list_repeat(x):
    u = [x[0], x[1] * x[2]] * 3
    return np.sum(np.array(u) * np.arange(1.0, 7.0))


def list_used_twice(x):
    # the list's gradient is the sum of two list gradients: elementwise, not concatenated
    l = [x[0] * 2, x[1] * 3, x[2] * 4]
    a = l[0] * l[2]
    b = np.sum(np.array(l))
    return a + b * l[1]


def tuple_mixed_into_an_array(x):
    t = (x[0], x[1] * x[2])
    u = t + (x[2],)
    return np.prod(np.array(u)) + t[0] * u[2]


def list_slice(x):
    l = [x[0], x[1], x[2]]
    m = l[:1]
    return np.sum(np.array(m)) * 2 + np.sum(np.array(l)) * l[2]


CASES = [tuple_concat_last, tuple_concat_first, list_concat, list_repeat, list_used_twice,
         tuple_mixed_into_an_array, list_slice]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_gradient_through_lists_and_tuples(f, mode):
    np.testing.assert_allclose(tg.grad(f, mode=mode)(X.copy()), fd_grad(f, X), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_second_derivative_through_lists_and_tuples(f, mode):
    # the outer transform differentiates the inner one's adjoint, whose list gradients add
    want = fd_hessian(f, X)
    inner = tg.grad(f, mode=mode)
    for outer in (tg.jacrev, tg.jacfwd):
        np.testing.assert_allclose(outer(inner, mode=mode)(X.copy()), want, rtol=1e-5, atol=1e-6)


def test_the_first_adjoint_adds_list_gradients():
    # the adjoint's own `+` on list gradients: elementwise (the generated source shows it)
    src = tg.grad(tuple_mixed_into_an_array, mode="ast").source
    assert "dt = dt + dt_part" in src
    assert "binop_grads('add', du, t, t6)" in src


def test_auto_takes_the_same_gradient_as_the_tape():
    # mode="auto" never differs from the tape: here neither refuses
    for f in CASES:
        inner_tape, inner_auto = tg.grad(f, mode="tape"), tg.grad(f, mode="auto")
        np.testing.assert_allclose(tg.hessian(f, mode="auto")(X.copy()), tg.hessian(f, mode="tape")(X.copy()),
                                   rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(inner_auto(X.copy()), inner_tape(X.copy()), rtol=1e-12, atol=1e-12)


# -- NumPy's functions held under another name ------------------------------------------------

def full_by_alias(x):
    make = np.full
    z = make((3,), x[0])
    return np.sum(z * x)


def full_by_getattr(x):
    z = getattr(np, "full")((3,), x[0])
    return np.sum(z * x)


def zeros_by_alias(x):
    new = np.zeros
    h = new(3)
    h[0] = x[0] * 3
    return np.sum(h * x)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("f", [full_by_alias, full_by_getattr], ids=lambda f: f.__name__)
def test_numpy_constructors_under_another_name(f, mode):
    # np.full of a traced fill keeps its derivative whatever name it is called by
    np.testing.assert_allclose(tg.grad(f, mode=mode)(X.copy()), fd_grad(f, X), rtol=1e-6, atol=1e-8)


def test_a_buffer_made_under_another_name():
    # the AST path sees the write into the buffer; the tape, which makes a traced buffer
    # only for calls that read np.zeros(...), refuses the write clearly (never a constant)
    from tracegrad.transform.tape.numpy_map.construct import ArrayConversion
    np.testing.assert_allclose(tg.grad(zeros_by_alias, mode="ast")(X.copy()), fd_grad(zeros_by_alias, X),
                               rtol=1e-6, atol=1e-8)
    with pytest.raises(ArrayConversion, match="assigning it into a NumPy array"):
        tg.grad(zeros_by_alias, mode="tape")(X.copy())


def list_grown_in_a_loop(x):
    l = [x[0], x[1]]
    l.append(x[2] * 2)
    s = 0.0
    for v in l:
        s = s + v * v
    return s + l[0] * l[2]


def test_second_derivative_of_an_appended_list():
    # the first adjoint pops what the forward pass appended: its second derivative is
    # refused in AST mode (naming the construct) and taken on the tape by mode="auto"
    want = fd_hessian(list_grown_in_a_loop, X)
    np.testing.assert_allclose(tg.grad(list_grown_in_a_loop, mode="ast")(X.copy()),
                               fd_grad(list_grown_in_a_loop, X), rtol=1e-6)
    with pytest.raises(TransformError, match="pop"):
        tg.jacrev(tg.grad(list_grown_in_a_loop, mode="ast"), mode="ast")(X.copy())
    for mode in ("tape", "auto"):
        np.testing.assert_allclose(tg.hessian(list_grown_in_a_loop, mode=mode)(X.copy()), want,
                                   rtol=1e-5, atol=1e-6)


# -- tuples as options, lists as operands -----------------------------------------------------

def axis_tuple(a):
    return np.sum(np.sum(a, (2, 0)) ** 2)


def list_operand(a):
    return np.sum(np.maximum(a, [0.1, 0.2, 0.3]) ** 2)


def traced_list_operand(a):
    return np.sum(np.multiply([a[0, 0, 0], a[1, 0, 1]], 2.0))


A = np.cos(np.arange(18.0)).reshape(3, 2, 3)


@pytest.mark.parametrize("mode", MODES)
def test_a_tuple_axis_stays_a_tuple_and_a_list_operand_becomes_an_array(mode):
    # np.sum(a, (2, 0)): the tuple is an option, not an array to convert (AST mode once
    # made asarray((2, 0)) of it); np.maximum(a, [..]): the list is an operand
    want_axis = 2 * np.broadcast_to(np.sum(A, (2, 0))[None, :, None], A.shape)
    np.testing.assert_allclose(tg.grad(axis_tuple, mode=mode)(A), want_axis, rtol=1e-12)
    want = 2 * np.maximum(A, [0.1, 0.2, 0.3]) * (A > np.array([0.1, 0.2, 0.3]))
    np.testing.assert_allclose(tg.grad(list_operand, mode=mode)(A), want, rtol=1e-12)


def test_a_ufunc_of_a_list_holding_traced_values():
    # AST mode converts the list (it sees it); NumPy's ufunc converts it before the tape
    # sees it, which the tape refuses clearly (np.array([...]) first is the way there)
    from tracegrad.transform.tape.numpy_map.construct import ArrayConversion
    want = np.zeros_like(A)
    want[0, 0, 0] = want[1, 0, 1] = 2.0
    for mode in ("ast", "auto"):
        np.testing.assert_allclose(tg.grad(traced_list_operand, mode=mode)(A), want)
    with pytest.raises(ArrayConversion, match="np.array"):
        tg.grad(traced_list_operand, mode="tape")(A)


# -- a list that holds a differentiated value beside a constant ---------------------------------

def _closed(fun, args, argnum):
    def unary(x):
        full = list(args)
        full[argnum] = x      # AST mode: the whole list is differentiated
        return fun(*full)
    return unary


@pytest.mark.scipy
def test_a_list_asking_for_a_derivative_no_rule_has_of_a_constant():
    # iv(v, x) has no derivative in v; the AST path asks for it (v shares a list with x)
    # and gets an undefined derivative (see transform/undefined.py) that the adjoint drops,
    # as v is a constant: every mode gives d/dx iv(v, x) = (iv(v-1, x) + iv(v+1, x)) / 2
    # in every front-door function
    sp = pytest.importorskip("scipy.special")
    from tracegrad.scipy import special
    v, x = np.array([1.5, 2.0, 3.0]), np.array([0.5, 1.2, 2.0])
    u = _closed(special.iv, (v, x), 1)
    want = (sp.iv(v - 1, x) + sp.iv(v + 1, x)) / 2
    for mode in ("ast", "tape", "auto"):
        np.testing.assert_allclose(tg.elementwise_grad(u, mode=mode)(x), want, rtol=1e-12)
        np.testing.assert_allclose(tg.vjp(u, x, mode=mode)[1](np.ones(3))[0], want, rtol=1e-12)
        np.testing.assert_allclose(tg.jvp(u, (x,), (np.ones(3),), mode=mode)[1], want, rtol=1e-12)


# -- gradients of lists that stop short, or hold None for a whole element ----------------------

def _on_a_tape(x):
    try:                       # (a construct the AST path hands to the tape: call_vjp)
        pair = [x[0] * 2.0, x[1] * 3.0]
    finally:
        pass
    return pair, x[2] * 5.0


def second_output_of_a_taped_helper(x):
    pair, s = _on_a_tape(x)
    return s * s                           # 25 x2^2: the list output gets no gradient


def constant_list_concatenated(x):
    c = [1.0, 2.0]
    l = c + [x[0], x[1]]
    return l[2] * l[3] * l[1]              # 2 x0 x1


def empty_list_concatenated(x):
    e = []
    l = e + [x[0], x[1]]
    return l[0] * l[1]


def extended_in_place(x):
    l = []
    l += [x[0], x[1]]
    return l[0] * l[1]


def popped_in_order(x):
    lst = []
    lst.append(x[0])
    lst.append(x[1])
    v = lst.pop()                          # x1, unused
    w = lst.pop()                          # x0
    return w * 3.0 + v * 0.0


def loop_over_a_list(x):
    t = [x[0], x[1]]
    s = 0.0
    for v in t:
        s = s + v * t[0]
    return s


SHORT = [second_output_of_a_taped_helper, constant_list_concatenated, empty_list_concatenated,
         extended_in_place, popped_in_order, loop_over_a_list]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("f", SHORT, ids=lambda f: f.__name__)
def test_list_gradients_that_stop_short_or_skip_an_element(f, mode):
    # a list's gradient may be shorter than the list, or None for an element that is itself
    # a list: each entry must still meet its own element (first order, then second order
    # through the generated adjoint, reverse and forward)
    x = np.array([0.3, -0.7, 1.2])
    np.testing.assert_allclose(tg.grad(f, mode=mode)(x.copy()), fd_grad(f, x), rtol=1e-6, atol=1e-8)
    want = fd_hessian(f, x)
    inner = tg.grad(f, mode=mode)
    for outer in (tg.jacrev, tg.jacfwd):
        if f is popped_in_order and mode == "ast":  # (the first adjoint pops: refused, named)
            with pytest.raises(TransformError, match="pop"):
                outer(inner, mode=mode)(x.copy())
            continue
        np.testing.assert_allclose(outer(inner, mode=mode)(x.copy()), want, rtol=1e-5, atol=1e-6)


def _noisy_closed(fun, args, argnum):
    def unary(x):
        full = list(args)
        full[argnum] = x * np.random.uniform(0.5, 1.5)   # drawn before the AST path stops
        return np.sum(fun(*full))
    return unary


@pytest.mark.scipy
def test_auto_fallback_draws_the_same_random_numbers_as_the_tape():
    # the first call's refusal at run time is retried on the tape from the same random
    # state: value and gradient equal the tape's alone, and the stream goes on as after it
    from tracegrad.scipy import special
    v, x = np.array([1.5, 2.0, 3.0]), np.array([0.5, 1.2, 2.0])
    results = {}
    for mode in ("tape", "auto"):
        u = _noisy_closed(special.iv, (v, x), 1)
        np.random.seed(7)
        value, grad = tg.value_and_grad(u, mode=mode)(x)
        results[mode] = (value, grad, np.random.uniform())
    for a, b in zip(results["auto"], results["tape"]):
        np.testing.assert_allclose(a, b, rtol=1e-12)


def where_of_lists(x):
    a = np.where([True, False, True], x, 0.0)            # a list condition
    b = np.where(x > 0, [1.0, 2.0, 3.0], x * x)           # a list branch
    c = np.where(x < 1, [x[0], x[1], x[2]], 0.5)          # a list of traced values
    return np.sum(a * b + c)


@pytest.mark.parametrize("mode", MODES)
def test_where_of_lists(mode):
    x = np.array([0.3, -0.7, 1.2])
    np.testing.assert_allclose(tg.grad(where_of_lists, mode=mode)(x.copy()), fd_grad(where_of_lists, x),
                               rtol=1e-6, atol=1e-8)


def slice_assigned(x):
    L = [x[0], x[1], x[2], x[0] * x[2]]
    L[1:3] = [x[2] ** 2, x[1] * 5]
    return L[0] * L[1] + L[2] * L[3]


def slice_assigned_constants(x):
    L = [x[0], x[1], x[2]]
    L[:2] = [1.5, 2.5]
    return L[0] * L[2] + L[1] * x[0]


def slice_assignment_shrinks(x):
    L = [x[0], x[1], x[2], x[0] * x[2]]
    L[1:3] = [x[1] * 5]
    return L[0] * L[1] + L[2]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("f", [slice_assigned, slice_assigned_constants], ids=lambda f: f.__name__)
def test_slice_assignment_to_a_list(f, mode):
    np.testing.assert_allclose(tg.grad(f, mode=mode)(X.copy()), fd_grad(f, X), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(tg.jvp(f, (X.copy(),), (np.ones(3),), mode=mode)[1], np.sum(fd_grad(f, X)),
                               rtol=1e-6)


def test_a_slice_assignment_that_changes_the_length():
    with pytest.raises(TransformError, match="changes a list's length"):
        tg.grad(slice_assignment_shrinks, mode="ast")(X.copy())
    for mode in ("tape", "auto"):
        np.testing.assert_allclose(tg.grad(slice_assignment_shrinks, mode=mode)(X.copy()),
                                   fd_grad(slice_assignment_shrinks, X), rtol=1e-6, atol=1e-8)
