"""``no_grad()`` inside staged functions (tape, AST, auto), against PyTorch's rules.

PyTorch's rule, which the eager runtime follows and the staged paths must too: inside
``no_grad()`` a *tensor operation* makes a value with no derivative; an in-place change
(``y += 1``, ``y[0] = 5``) changes the value but not the history (the array keeps the
derivative it had); Python moving objects around (``b = y``, a tuple of them) touches no
derivative. A transform called inside the traced function records its own derivatives
even under ``no_grad()`` (as ``torch.func.grad`` ignores an outer no_grad); what it
returns there is a constant to the outer transform.

Every expected value below is a hand formula (the comment says how); mode="auto" must
agree with mode="tape", and mode="ast" either agrees or refuses with a TransformError.
"""
import numpy as np
import pytest

import tracegrad as tg
from tracegrad.transform.ast.source import TransformError

X = np.array([0.5, -1.2, 2.0, 0.3])
MODES = ("tape", "ast", "auto")


def close(a, b):
    np.testing.assert_allclose(np.asarray(a, dtype=float), np.asarray(b, dtype=float), rtol=1e-12, atol=1e-12)


# -- 1. a transform nested inside no_grad() ------------------------------------------------------

def _nested(inner_mode):
    def f(x):
        with tg.no_grad():
            g = tg.grad(lambda y: np.sum(y ** 3), mode=inner_mode)(x)
        return np.sum(g * x)
    return f


@pytest.mark.parametrize("inner", MODES)
@pytest.mark.parametrize("mode", MODES)
def test_nested_grad_under_no_grad_records_its_own_derivative(mode, inner):
    # g = 3x^2 is computed (not zero), and is a constant to the outer gradient:
    # value sum(3x^3), gradient g = 3x^2
    value, grad = tg.value_and_grad(_nested(inner), mode=mode)(X.copy())
    close(value, np.sum(3 * X ** 3))
    close(grad, 3 * X ** 2)


@pytest.mark.parametrize("mode", MODES)
def test_nested_grad_with_grad_on_is_differentiated(mode):
    # the same without no_grad: d/dx sum(3x^2 * x) = 9x^2
    def f(x):
        g = tg.grad(lambda y: np.sum(y ** 3), mode="tape")(x)
        return np.sum(g * x)
    close(tg.grad(f, mode=mode)(X.copy()), 9 * X ** 2)


def test_nested_transform_leaves_grad_mode_as_it_was():
    seen = []

    def f(x):
        with tg.no_grad():
            g = tg.grad(lambda y: np.sum(y ** 3), mode="tape")(x)
            seen.append(tg.is_grad_enabled())
        seen.append(tg.is_grad_enabled())
        return np.sum(g * x)
    tg.grad(f, mode="tape")(X.copy())
    assert seen == [False, True]
    assert tg.is_grad_enabled()


def test_nested_value_and_grad_with_aux_is_stopped():
    # value v = sum(y^3), aux a = 2y, grad g = 3y^2, all constants to the outer gradient:
    # d/dx (v * sum(x) + sum(a * x) + sum(g * x)) = v + a + g
    def h(y):
        return np.sum(y ** 3), y * 2

    def f(x):
        with tg.no_grad():
            (v, a), g = tg.value_and_grad(h, has_aux=True, mode="tape")(x)
        return v * np.sum(x) + np.sum(a * x) + np.sum(g * x)
    v = np.sum(X ** 3)
    close(tg.grad(f, mode="tape")(X.copy()), v + 2 * X + 3 * X ** 2)


def test_nested_jvp_and_vjp_under_no_grad():
    # jvp of sum(y^3) along ones: t = sum(3y^2); vjp of y^2 with cotangent ones: 2y.
    # Both constants: d/dx (t * sum(x) + sum(c * x)) = t + c
    def f(x):
        with tg.no_grad():
            _, t = tg.jvp(lambda y: np.sum(y ** 3), (x,), (np.ones(4),), mode="tape")
            _, pull = tg.vjp(lambda y: y ** 2, x, mode="tape")
            c, = pull(np.ones(4))
        return t * np.sum(x) + np.sum(c * x)
    close(tg.grad(f, mode="tape")(X.copy()), np.sum(3 * X ** 2) + 2 * X)


@pytest.mark.parametrize("mode", MODES)
def test_nested_grad_under_no_grad_in_forward_mode(mode):
    # f(x) = sum(g * x), g = 3x^2 a constant: jvp along ones = sum(g)
    _, t = tg.jvp(_nested("tape"), (X.copy(),), (np.ones(4),), mode=mode)
    close(t, np.sum(3 * X ** 2))


def test_outer_no_grad_around_the_transform_is_ignored():
    with tg.no_grad():
        close(tg.grad(_nested("tape"), mode="tape")(X.copy()), 3 * X ** 2)
        close(tg.grad(lambda y: np.sum(y ** 3), mode="tape")(X.copy()), 3 * X ** 2)


# -- 2. in-place changes under no_grad(): the value changes, the derivative stays ----------------

def inplace_add(x):
    y = x * 2
    with tg.no_grad():
        y += 1
    return (y * y).sum()


def inplace_mul(x):
    y = x * 2
    with tg.no_grad():
        y *= x
    return (y * y).sum()


def setitem_const(x):
    y = x * 2
    with tg.no_grad():
        y[0] = 5.0
    return (y * y).sum()


def setitem_traced(x):
    y = x * 2
    with tg.no_grad():
        y[0] = x[1] * 3
    return (y * y).sum()


def setitem_slice(x):
    y = x * 2
    with tg.no_grad():
        y[1:3] = y[1:3] * 10.0
    return (y * x).sum()


def inplace_in_loop(x):
    y = x * 2
    for i in range(2):
        with tg.no_grad():
            y *= 1.5
        y = y * x
    return (y).sum()


def _set0(v, new):
    v = v.copy()
    v[0] = new
    return v


# (function, value, gradient): y carries the derivative of its value before the change
INPLACE = [
    # y = 2x + 1 (dy = 2): value sum(y^2), gradient 2y * 2
    (inplace_add, np.sum((2 * X + 1) ** 2), 4 * (2 * X + 1)),
    # y = 2x^2 (dy = 2): 2y * 2
    (inplace_mul, np.sum((2 * X * X) ** 2), 8 * X * X),
    # y = (5, 2x1, 2x2, 2x3), dy = 2 everywhere: 4y
    (setitem_const, np.sum(_set0(2 * X, 5.0) ** 2), 4 * _set0(2 * X, 5.0)),
    # y0 = 3 x1 (a value only), dy = 2: 4y
    (setitem_traced, np.sum(_set0(2 * X, 3 * X[1]) ** 2), 4 * _set0(2 * X, 3 * X[1])),
    # y = 2x with y[1:3] times 10, dy = 2: d sum(y * x) = 2x + y
    (setitem_slice, np.sum(np.array([2, 20, 20, 2]) * X * X), 2 * X + np.array([2, 20, 20, 2]) * X),
    # value 4.5x^3; derivative 2 -> (y *= 1.5 keeps it) -> 2x + 3x = 5x -> 5x*x + 4.5x^2 = 9.5x^2
    (inplace_in_loop, np.sum(4.5 * X ** 3), 9.5 * X ** 2),
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("f, value, grad", INPLACE, ids=[c[0].__name__ for c in INPLACE])
def test_in_place_under_no_grad_keeps_the_derivative(f, value, grad, mode):
    v, g = tg.value_and_grad(f, mode=mode)(X.copy())
    close(v, value)
    close(g, grad)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("f, value, grad", INPLACE, ids=[c[0].__name__ for c in INPLACE])
def test_in_place_under_no_grad_forward_mode(f, value, grad, mode):
    v, t = tg.jvp(f, (X.copy(),), (np.ones(4),), mode=mode)
    close(v, value)
    close(t, np.sum(grad))


@pytest.mark.parametrize("f, value, grad", INPLACE, ids=[c[0].__name__ for c in INPLACE])
def test_in_place_under_no_grad_matches_eager(f, value, grad):
    t = tg.tensor(X.copy(), requires_grad=True)
    out = f(t)
    out.backward()
    close(out.item(), value)
    close(t.grad.numpy(), grad)


@pytest.mark.parametrize("mode", MODES)
def test_in_place_under_no_grad_with_tensor_arguments(mode):
    g = tg.grad(setitem_const, mode=mode)(tg.tensor(X.copy()))
    assert isinstance(g, tg.Tensor)
    close(g.numpy(), 4 * _set0(2 * X, 5.0))


@pytest.mark.parametrize("mode", ("tape", "auto"))
def test_in_place_under_no_grad_second_order(mode):
    # gradient 4(2x + 1): Hessian 8 I; and d/dx sum(4(2x + 1) * x) = 16x + 4
    close(tg.hessian(inplace_add, mode=mode)(X.copy()), 8 * np.eye(4))
    inner = tg.grad(inplace_add, mode=mode)
    close(tg.grad(lambda x: np.sum(inner(x) * x), mode=mode)(X.copy()), 16 * X + 4)


def test_no_grad_write_gives_the_written_value_exactly():
    # y0 = 1e20 x0, overwritten by 1.0: the value is 3.0 exactly (old + (new - old) would
    # give 0.0), and its derivative is still that of 1e20 x0
    def f(x):
        y = x * 1e20
        with tg.no_grad():
            y[0] = 1.0
        return y[0] * 3.0
    v, g = tg.value_and_grad(f, mode="tape")(X.copy())
    assert float(v) == 3.0
    close(g, [3e20, 0, 0, 0])


def test_no_grad_write_over_nan_keeps_a_finite_gradient():
    # y = log(x) is NaN where x < 0; cleaned under no_grad: the loss sum(y^2) and its
    # gradient 2 y / x are 0 there, not NaN
    def f(x):
        y = np.log(x)
        with tg.no_grad():
            y[np.isnan(y)] = 0.0
        return np.sum(y * y)
    with np.errstate(invalid="ignore"):
        y = np.where(X > 0, np.log(np.abs(X)), 0.0)
        v, g = tg.value_and_grad(f, mode="tape")(X.copy())
    close(v, np.sum(y * y))
    close(g, 2 * y / X)


def test_no_grad_in_place_on_views():
    # v = y[1:3] made with gradients on; v += 1 under no_grad changes y too, and neither
    # loses its derivative: y = 2x + (0, 1, 1, 0), loss sum(y^2) + sum(v^2)
    def f(x):
        y = x * 2.0
        v = y[1:3]
        with tg.no_grad():
            v += 1
        return np.sum(y * y) + np.sum(v * v)
    y = 2 * X + np.array([0, 1, 1, 0])
    close(tg.grad(f, mode="tape")(X.copy()), 4 * y + 4 * y * np.array([0, 1, 1, 0]))
    close(tg.grad(f, mode="auto")(X.copy()), 4 * y + 4 * y * np.array([0, 1, 1, 0]))

    # a write into the base under no_grad, read through a view made before it
    def h(x):
        y = x * 2.0
        v = y[1:3]
        with tg.no_grad():
            y[1] = 7.0
        return np.sum(v * v) + np.sum(y * x)
    y = np.array([2 * X[0], 7.0, 2 * X[2], 2 * X[3]])
    want = y + 2 * X  # d sum(y x) = y + x dy, dy = 2
    want[1:3] += 4 * y[1:3]  # d sum(v^2) = 2 v dv, dv = 2
    close(tg.grad(h, mode="tape")(X.copy()), want)
    close(tg.grad(h, mode="auto")(X.copy()), want)


def view_made_under_no_grad_written_after(x):
    y = x * 1.0
    with tg.no_grad():
        v = y[1:3]
    v *= x[0]
    return np.sum(y * y)


def view_made_under_no_grad_base_written_after(x):
    y = x * 1.0
    with tg.no_grad():
        v = y[1:3]
    y[1] = 10.0 * x[0]
    return np.sum(v * x[2:])


@pytest.mark.parametrize("mode", ("tape", "auto"))
def test_a_no_grad_view_written_with_grad_on_is_refused(mode):
    # PyTorch forbids both (which derivative the write should reach is ambiguous), with
    # these words; the tape said neither before and gave a gradient through v
    with pytest.raises(RuntimeError, match="created in no_grad mode and is being modified inplace"):
        tg.grad(view_made_under_no_grad_written_after, mode=mode)(X.copy())
    with pytest.raises(RuntimeError, match="its base or another view of its base has been modified"):
        tg.grad(view_made_under_no_grad_base_written_after, mode=mode)(X.copy())
    with pytest.raises(TransformError):  # (the AST path refuses the shared memory itself)
        tg.grad(view_made_under_no_grad_written_after, mode="ast")(X.copy())


def view_read_after_its_base_was_written_under_no_grad(x):
    y = x * 1.0
    with tg.no_grad():
        v = y[1:3]
        y[1] = 7.0
    return np.sum(v * x[2:])


def view_read_under_no_grad_after_its_base_was_written(x):
    y = x * 2.0
    with tg.no_grad():
        v = y[1:3]
    y[1] = x[0] ** 2           # base written with grad on
    with tg.no_grad():
        s = np.sum(v)          # the view read only under no_grad: a constant, no question
    return np.sum(y) + s * x[3]


@pytest.mark.parametrize("mode", ("tape", "auto"))
def test_a_no_grad_view_read_after_a_write_follows_pytorch(mode):
    # PyTorch refuses a no_grad view used with grad on once its memory was written (in
    # either mode), and lets no_grad code read it: y = (2x0, x0^2, 2x2, 2x3), s = x0^2 + 2x2
    with pytest.raises(RuntimeError, match="its base or another view of its base has been modified"):
        tg.grad(view_read_after_its_base_was_written_under_no_grad, mode=mode)(X.copy())
    s = X[0] ** 2 + 2 * X[2]
    want = np.array([2 + 2 * X[0], 0.0, 2.0, 2.0 + s])
    close(tg.grad(view_read_under_no_grad_after_its_base_was_written, mode=mode)(X.copy()), want)


def test_a_no_grad_view_written_under_no_grad():
    # view and write both under no_grad: y keeps its derivative (identity), its value
    # doubled at 1:3 -- d sum(y^2) = 2y; and a view of a no_grad view is one too
    def f(x):
        y = x * 1.0
        with tg.no_grad():
            v = y[1:3]
            v *= 2.0
        return np.sum(y * y)

    def g(x):
        y = x * 1.0
        with tg.no_grad():
            v = y[1:3]
        w = v[:1]
        w += x[0]
        return np.sum(y * y)
    y = X * np.array([1, 2, 2, 1])
    for mode in ("tape", "auto"):
        close(tg.grad(f, mode=mode)(X.copy()), 2 * y)
        with pytest.raises(RuntimeError, match="created in no_grad mode"):
            tg.grad(g, mode=mode)(X.copy())


def test_no_grad_in_place_complex():
    # y = x(1 + 2i) + i (the i under no_grad): |y|^2 = x^2 + (2x + 1)^2 by value, and the
    # derivative through the old y: 2 Re(conj(y) (1 + 2i)) = 10x + 4
    def f(x):
        y = x * (1 + 2j)
        with tg.no_grad():
            y += 1j
        return np.real(np.sum(y * np.conj(y)))
    v, g = tg.value_and_grad(f, mode="tape")(X.copy())
    close(v, np.sum(X ** 2 + (2 * X + 1) ** 2))
    close(g, 10 * X + 4)


def test_no_grad_in_place_on_integers_and_numbers():
    def ints(x):
        k = np.arange(4)
        with tg.no_grad():
            k += 1
        return np.sum(x * k)
    for mode in MODES:
        close(tg.grad(ints, mode=mode)(X.copy()), [1, 2, 3, 4])

    # a Python float is a number: ``a += 1`` makes a new value, a constant (NumPy's rule)
    def num(x, a):
        with tg.no_grad():
            a += 1.0
        return np.sum(x) * a
    for mode in MODES:
        v, g = tg.value_and_grad(num, argnums=1, mode=mode)(X.copy(), 2.0)
        close(v, np.sum(X) * 3.0)
        close(g, 0.0)


def test_no_grad_in_place_on_a_long_tape():
    # long enough to be interpreted rather than compiled: y = 2x + 0.6, dy = 2
    def f(x):
        y = x * 2
        for i in range(600):
            with tg.no_grad():
                y += 0.001
            y = y * 1.0
        return np.sum(y * y)
    g = tg.grad(f, mode="tape")
    close(g(X.copy()), 4 * (2 * X + 0.6))
    close(g(X.copy() + 1), 4 * (2 * (X + 1) + 0.6))  # replayed


# -- 3. Python moving objects under no_grad(): derivatives kept (AST: kept or refused) -----------

def alias(x):
    y = x * 2
    with tg.no_grad():
        b = y
    return np.sum(b * b)


def tuple_display(x):
    y = x * 2
    with tg.no_grad():
        t = (y, x * 3)
    return np.sum(t[0] * t[1])


def list_index(x):
    lst = [x * 2, x * 3]
    with tg.no_grad():
        a = lst[0]
    return np.sum(a * a)


def tuple_concat(x):
    t = (x * 2,)
    with tg.no_grad():
        t = t + (x * 3,)
    return np.sum(t[0] * t[1])


def list_in_place(x):
    lst = [x * 2]
    with tg.no_grad():
        lst += [x * 3]
    return np.sum(lst[0] * lst[1])


def list_pop(x):
    lst = [x * 2, x * 3]
    with tg.no_grad():
        a = lst.pop()
    return np.sum(a * lst[0])


def _identity(v):
    return v


def user_call(x):
    y = x * 2
    with tg.no_grad():
        a = _identity(y)
    return np.sum(a * x)


def builtin_call(x):
    lst = [x * 2, x * 3]
    with tg.no_grad():
        t = tuple(lst)
    return np.sum(t[0] * t[1])


# (function, gradient, what mode="ast" does: None = the same gradient, else the construct
# of its refusal). 2x kept and 3x (made under no_grad) constant: d sum(2x * 3x) = 6x
MOVES = [
    (alias, 8 * X, None),                       # b is y: d sum(4x^2)
    (tuple_display, 6 * X, None),
    (list_index, 8 * X, "list, tuple or dict under no_grad"),
    (tuple_concat, 6 * X, "list, tuple or dict under no_grad"),
    (list_in_place, 6 * X, "in-place change under no_grad"),
    (list_pop, 12 * X, "list, tuple or dict under no_grad"),  # a = 3x kept, lst[0] = 2x kept
    (user_call, 4 * X, "call under no_grad"),    # a is y = 2x: d sum(2x * x)
    (builtin_call, 12 * X, "call under no_grad"),  # both kept: d sum(6x^2)
]


@pytest.mark.parametrize("f, grad, refusal", MOVES, ids=[c[0].__name__ for c in MOVES])
def test_objects_moved_under_no_grad_keep_their_derivatives(f, grad, refusal):
    close(tg.grad(f, mode="tape")(X.copy()), grad)
    close(tg.grad(f, mode="auto")(X.copy()), grad)
    _, t = tg.jvp(f, (X.copy(),), (np.ones(4),), mode="auto")
    close(t, np.sum(grad))
    if refusal is None:
        close(tg.grad(f, mode="ast")(X.copy()), grad)
        return
    with pytest.raises(TransformError) as info:
        tg.grad(f, mode="ast")(X.copy())
    assert info.value.construct == refusal
    assert "no_grad" in str(info.value) and "line" in str(info.value)


def test_ast_no_grad_refusal_names_file_and_line():
    with pytest.raises(TransformError) as info:
        tg.grad(list_in_place, mode="ast")(X.copy())
    assert info.value.filename == __file__
    assert "lst += [x * 3]" in str(info.value)


def test_ast_writes_the_kept_derivative_into_its_source():
    g = tg.grad(inplace_add, mode="ast")
    close(g(X.copy()), 4 * (2 * X + 1))
    assert "no_grad_kept" in g.source


def test_ast_no_grad_constants_unchanged():
    # what no_grad() is for: a statistic used as a constant (x's own derivative only)
    def f(x):
        with tg.no_grad():
            m = np.mean(x)
            c = x[1]
        return np.sum((x - m) * c)
    for mode in MODES:  # d sum((x - m) c) with m, c constants: c everywhere
        close(tg.grad(f, mode=mode)(X.copy()), np.full(4, X[1]))
