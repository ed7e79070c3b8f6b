"""NumPy's aliasing in the staged paths: names that share memory, and in-place changes.

In NumPy ``v = y[1:]`` shares ``y``'s memory, ``b = a; b += 1`` changes ``a``, and
``y.fill(1)`` changes ``y``. Each function below gave a silently wrong gradient in tape,
AST and auto mode. Now the tape follows NumPy's memory (views are remade after a write
into their array, a write into a view reaches its array, ``+=`` writes in place), AST
mode refuses at run time when a name changed in place shares memory with a name used
afterwards, and ``mode="auto"`` takes the tape for these functions. In-place calls that
nothing records (``np.copyto``, ``np.add.at``, ``out=``, ``.sort()``) are refused in
every mode."""
import numpy as np
import pytest

import tracegrad as tg

from .numeric import numeric
from tracegrad.transform.ast.aliasing import AliasError

X = np.array([1.0, 2.0, 3.0])


def view_write(x):
    y = x * 1.0
    v = y[1:]
    v[0] = 5.0
    return np.sum(y * x)


def base_write(x):
    y = x * 1.0
    v = y[1:]
    y[1] = 0.0
    return np.sum(v * x[1:])


def augmented_alias(x):
    y = x * 2.0
    z = y
    z += x
    return np.sum(y * y)


def augmented_input(x):
    x += 1.0
    return np.sum(x * x)


def reshape_write(x):
    y = x * 1.0
    r = y.reshape(3, 1)
    r[0, 0] = 7.0
    return np.sum(y * x)


def transpose_write(x):
    y = np.outer(x, x)
    t = y.T
    t[0, 1] = 0.0
    return np.sum(y)


def chained_write(x):
    y = np.outer(x, x)
    y[1][2] = 0.0          # a write into a view of a row
    return np.sum(y * 2.0)


def list_alias(x):
    a = [x, x * 2]
    b = a
    b.append(x * 3)
    return np.sum(a[2])


def fill_view(x):
    y = x * 2.0
    y[1:].fill(1.0)
    return np.sum(y * x)


def row_updates(x):
    """Rows read as views and written back: no name is read after its row is written,
    so every mode follows it (the AST check passes)."""
    y = np.outer(x, x)
    for i in range(3):
        row = y[i]
        y[i] = row * 2.0 + x
    return np.sum(y * y)


def sum_of_augmented_scalars(x):
    s = np.sum(x)
    t = s
    t += 1.0  # a NumPy scalar is immutable: s keeps its value
    return s * t


ALIASED = [view_write, base_write, augmented_alias, reshape_write, transpose_write,
           chained_write, list_alias, fill_view]
EXACT = [augmented_input, row_updates, sum_of_augmented_scalars]


@pytest.mark.parametrize("f", ALIASED + EXACT, ids=lambda f: f.__name__)
@pytest.mark.parametrize("mode", ["tape", "auto"])
def test_tape_and_auto_follow_numpys_memory(f, mode):
    np.testing.assert_allclose(tg.grad(f, mode=mode)(X.copy()), numeric(f, X), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("f", ALIASED, ids=lambda f: f.__name__)
def test_ast_mode_refuses_an_in_place_change_seen_through_another_name(f):
    with pytest.raises((AliasError, tg.TransformError)) as info:
        tg.grad(f, mode="ast")(X.copy())
    assert info.value.lineno is not None and "use mode=\"tape\"" in str(info.value)


@pytest.mark.parametrize("f", EXACT, ids=lambda f: f.__name__)
def test_ast_mode_takes_in_place_changes_no_other_name_sees(f):
    np.testing.assert_allclose(tg.grad(f, mode="ast")(X.copy()), numeric(f, X), rtol=1e-6, atol=1e-8)


def test_the_refusal_names_both_names_the_line_and_the_statement():
    with pytest.raises(AliasError, match=r"`v\[0\] = 5.0` changes v in place while y shares its memory") as info:
        tg.grad(view_write, mode="ast")(X.copy())
    assert info.value.filename == __file__ and info.value.construct == "in-place change of an aliased array"


def test_auto_takes_the_tape_when_aliasing_is_visible_in_the_source():
    g = tg.grad(augmented_alias)
    g(X.copy())
    assert g.mode == "tape" and "in place" in str(g.fallback_reason)


def copy_into(x):
    y = np.zeros(3)
    np.copyto(y, x)
    return np.sum(y * y)


def add_at(x):
    y = np.zeros(3)
    np.add.at(y, [0, 0, 1], x)
    return np.sum(y * y)


def out_argument(x):
    y = np.empty_like(x)
    np.multiply(x, 2.0, out=y)
    return np.sum(y)


def out_exp(x):
    y = np.empty_like(x)
    np.exp(x, out=y)
    return np.sum(y)


def sort_in_place(x):
    y = x * 1.0
    y.sort()
    return y[0] * 3.0 + y[2]


def test_sort_in_place_is_refused_by_ast_and_written_through_on_the_tape():
    """``y.sort()`` is NumPy's sort written into ``y`` (views follow), on the tape."""
    with pytest.raises(tg.TransformError, match="call whose result is not used"):
        tg.grad(sort_in_place, mode="ast")(X.copy())
    order = np.argsort(X)
    want = np.zeros_like(X)
    want[order[0]], want[order[2]] = 3.0, 1.0
    for mode in ("tape", "auto"):
        np.testing.assert_allclose(tg.grad(sort_in_place, mode=mode)(X.copy()), want)


@pytest.mark.parametrize("f", [copy_into, add_at, out_argument, out_exp],
                         ids=lambda f: f.__name__)
def test_in_place_calls_nothing_records_are_refused_in_every_mode(f):
    with pytest.raises(tg.TransformError, match="call whose result is not used|out= argument"):
        tg.grad(f, mode="ast")(X.copy())
    for mode in ("tape", "auto"):
        with pytest.raises(tg.TracerError):
            tg.grad(f, mode=mode)(X.copy())


def test_a_write_into_a_view_without_inverse_is_refused_on_the_tape():
    def f(x):
        y = np.outer(x, x)
        d = np.diagonal(y)
        d[0] = 1.0  # (NumPy refuses this too: a diagonal is read-only)
        return np.sum(y)
    with pytest.raises((tg.TracerError, ValueError)):
        tg.grad(f, mode="tape")(X.copy())


def doubles_in_place(p):
    p += p
    return np.sum(p)


def calls_a_helper_that_writes_its_argument(x):
    w = x * 1.0
    s = doubles_in_place(w)
    return s + np.sum(w * w)


def test_a_called_function_changing_its_argument_is_refused_in_ast_mode():
    with pytest.raises(tg.TransformError, match="doubles_in_place, called from the function being "
                                                "differentiated, changes an argument in place"):
        tg.grad(calls_a_helper_that_writes_its_argument, mode="ast")(X.copy())
    f = calls_a_helper_that_writes_its_argument
    for mode in ("tape", "auto"):
        np.testing.assert_allclose(tg.grad(f, mode=mode)(X.copy()), numeric(f, X), rtol=1e-6, atol=1e-8)


def shifts_first(p0, p1):
    p0 -= p1 * 0.5
    return p1


def passes_one_array_twice(x):
    v = shifts_first(x, x)  # (its result unused: the write into x is what matters)
    return np.sum(x * 1.0)


def test_a_helper_writing_an_argument_is_refused_even_when_its_result_is_unused():
    """Found by the fuzzer's eager check: AST mode ignored the write (value 0.7, not 0.35)."""
    f = passes_one_array_twice
    with pytest.raises(tg.TransformError, match="shifts_first, called from the function being differentiated") as info:
        tg.grad(f, mode="ast")(X.copy())
    assert info.value.lineno is not None
    for mode in ("tape", "auto"):
        value, grad = tg.value_and_grad(f, mode=mode)(X.copy())
        assert value == pytest.approx(f(X.copy()))
        np.testing.assert_allclose(grad, numeric(f, X), rtol=1e-6, atol=1e-8)


def scales_through_a_nested_view(p0, p1):
    u = np.expand_dims(p0[:, None], 0).squeeze(0)  # a view of p0 through nested calls
    u *= p1[-1]
    return np.sum(u * p1[:, None])


def scales_through_np_reshape(p0, p1):
    u = np.reshape(p0, (3,))  # a NumPy function returning a view
    u *= p1[-1]
    return np.sum(u * p1)


def scales_through_np_asarray(p0, p1):
    u = np.asarray(p0)  # the very same array
    u *= p1[-1]
    return np.sum(u * p1)


@pytest.mark.parametrize("helper", [scales_through_a_nested_view, scales_through_np_reshape,
                                    scales_through_np_asarray])
def test_a_helper_writing_an_argument_through_a_view_is_refused(helper):
    """Found by the long fuzz (seed 91): AST mode missed the write into the caller's ``y``
    made through a view (the analysis read the helper's body after the transformation had
    folded its one-operation lines back into nested calls, and knew no NumPy function
    returning a view), so the adjoint recomputed the helper from the changed ``y``: a
    wrong gradient in AST and auto mode, without an error."""
    def f(x, y):
        return helper(y, x)
    y = np.array([-0.9, 0.07, 0.5])
    with pytest.raises(tg.TransformError, match=f"{helper.__name__}, called from the function being "
                                                "differentiated, changes an argument in place"):
        tg.grad(f, mode="ast")(X.copy(), y.copy())
    want = numeric(lambda a: f(a, y.copy()), X)
    for mode in ("tape", "auto"):
        np.testing.assert_allclose(tg.grad(f, mode=mode)(X.copy(), y.copy()), want, rtol=1e-6, atol=1e-8)


def scales_a_column_view(p0, p1):
    u = p0[:, None]
    u *= p1[-1]
    return np.sum(u * p1)


def scales_an_element(p0, p1):
    p0[0] = p0[0] * p1[1]
    return np.sum(p0 * p1)


def scales_in_place(p0, p1):
    p0 += p1
    return np.sum(p0 * p1)


def scales_a_dict_item(d, p):
    d["a"] = d["a"] * p
    return np.sum(d["a"] * p)


class Holder:
    def __init__(self, w):
        self.w = w

    def scale(self, p):
        self.w = self.w * p
        return np.sum(self.w * p)

    def weighted(self, p):
        return np.sum(self.w * p * p)


def scales_an_attribute(o, p):
    o.w = o.w * p
    return np.sum(o.w * p)


def through_a_value(x, y, h=scales_a_column_view):
    return h(y, x)


def element_through_a_value(x, y, h=scales_an_element):
    return h(y, x)


def temporary_through_a_value(x, y, h=scales_in_place):
    return h(y * 1.0, x)


def dict_through_a_value(x, y, h=scales_a_dict_item):
    return h({"a": y}, x)


def attribute_through_a_value(x, y, h=scales_an_attribute):
    return h(Holder(y), x)


def attribute_through_a_method(x, y):
    o = Holder(y)
    return o.scale(x)


@pytest.mark.parametrize("f", [through_a_value, element_through_a_value, temporary_through_a_value],
                         ids=lambda f: f.__name__)
def test_a_callee_the_ast_path_cannot_read_runs_with_its_arrays_read_only(f):
    """A function passed as a value is a call the AST path cannot read: the adjoint ran it
    in the forward, then traced it for its derivative from the arrays that run had
    changed in place -- a wrong gradient in AST and auto mode without an error. Now its
    forward line is ``read_only_call(h, y, x)``: NumPy refuses the write, nothing is
    changed, AST mode says so and auto runs the tape."""
    y = np.array([-0.9, 0.07, 0.5])
    want = numeric(lambda a: f(a, y.copy()), X)
    assert "read_only_call(h, " in tg.grad(f, mode="ast").source
    y_in = y.copy()
    with pytest.raises(tg.TransformError, match="called from the function being differentiated, writes into "
                                                "an array passed to it") as info:
        tg.grad(f, mode="ast")(X.copy(), y_in)
    assert info.value.construct == "in-place change of an argument"
    np.testing.assert_array_equal(y_in, y)  # (the write was stopped)
    assert y_in.flags.writeable
    for mode in ("tape", "auto"):
        np.testing.assert_allclose(tg.grad(f, mode=mode)(X.copy(), y.copy()), want, rtol=1e-6, atol=1e-8)


def untransformable_writer(p0):
    u = p0[1:]  # (a view of the argument)
    u *= 2.0
    try:  # (a construct the AST path does not transform: the call is traced instead)
        pass
    except ValueError:
        pass
    return np.sum(p0)


def passes_on_its_argument(p0):
    doubles_in_place(p0)
    return np.sum(p0)


def reads_then_a_helper_writes(x, y, h=None):
    v = x * 1.0
    a = np.sum(v * y)  # (the adjoint reads v for dy, after the helper ran)
    b = (h or untransformable_writer)(v)
    return a + b


@pytest.mark.parametrize("h", [untransformable_writer, passes_on_its_argument], ids=lambda h: h.__name__)
@pytest.mark.parametrize("argnums", [0, 1])
def test_a_write_into_an_array_the_adjoint_reads_later_is_refused(h, argnums):
    """Found by the fuzzer (helpers passed as values): a call whose result is not even
    differentiated (``argnums=1``) wrote into ``v`` after ``v * y`` had read it; the
    adjoint read ``v`` as the write left it. A user function whose source shows the write
    -- through a view, or by passing the array on to one that writes -- is refused
    before anything runs; passed as a value, it runs read-only."""
    def by_name(x, y):
        v = x * 1.0
        a = np.sum(v * y)
        b = h(v)
        return a + b

    y = np.array([-0.9, 0.07, 0.5])
    for f, rest, says in ((by_name, (), "changes an argument in place"),
                          (reads_then_a_helper_writes, (h,), "writes into an array passed to it")):
        args = (X.copy(), y.copy())
        want = numeric(lambda a: f(*(a if n == argnums else c.copy() for n, c in enumerate(args)), *rest),
                       args[argnums])
        with pytest.raises(tg.TransformError, match=says):
            tg.grad(f, argnums=argnums, mode="ast")(X.copy(), y.copy(), *rest)
        for mode in ("tape", "auto"):
            got = tg.grad(f, argnums=argnums, mode=mode)(X.copy(), y.copy(), *rest)
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("f", [dict_through_a_value, attribute_through_a_value, attribute_through_a_method],
                         ids=lambda f: f.__name__)
def test_a_callee_changing_an_item_or_attribute_is_refused_when_traced(f):
    """What read-only arrays do not stop -- a dict's item, an object's attribute -- the
    trace of the callee's derivative sees (its arguments compared before and after).
    The forward's run already changed them, so auto refuses too rather than run the
    function again on the tape from there."""
    y = np.array([-0.9, 0.07, 0.5])
    want = numeric(lambda a: f(a, y.copy()), X)
    np.testing.assert_allclose(tg.grad(f, mode="tape")(X.copy(), y.copy()), want, rtol=1e-6, atol=1e-8)
    for mode in ("ast", "auto"):
        with pytest.raises(tg.TransformError, match="called from the function being differentiated, "
                                                    "changed an argument in place") as info:
            tg.grad(f, mode=mode)(X.copy(), y.copy())
        assert info.value.construct == "in-place change of an argument"


def test_a_callee_seen_only_when_it_runs_may_read_its_arguments():
    """The refusal above compares the arguments' structure, values and attributes before
    and after the trace: reading them (a view, an object's attribute) is not a write."""
    def reads(p0, p1):
        u = p0[:, None]
        return np.sum(u * p1 + p0 * p0)

    def f(x, y, h=reads):
        return h(y, x) + Holder(y).weighted(x)
    y = np.array([-0.9, 0.07, 0.5])
    want = numeric(lambda a: f(a, y.copy()), X)
    for mode in ("tape", "ast", "auto"):
        np.testing.assert_allclose(tg.grad(f, mode=mode)(X.copy(), y.copy()), want, rtol=1e-6, atol=1e-8)


def identity(a):
    return a


def writes_its_argument_seen_through_a_call(x, y):
    v = identity(x)      # v is x: not visible in the source
    x += y
    return np.sum(np.sin(x)) + np.sum(np.tanh(v))


def test_auto_takes_the_tape_for_a_function_writing_its_own_argument():
    """A run-time refusal could not be retried once the caller's array was written: auto
    takes the tape from the start (found by the fuzzer: auto raised where the tape answers)."""
    f = writes_its_argument_seen_through_a_call
    y = np.array([0.2, -0.1, 0.4])
    g = tg.grad(f)
    np.testing.assert_allclose(g(X.copy(), y), numeric(lambda a: f(a.copy(), y), X), rtol=1e-6, atol=1e-8)
    assert g.mode == "tape"
    out, tangent = tg.jvp(f, (X.copy(), y), (np.ones(3), np.zeros(3)))
    expected = numeric(lambda a: f(a.copy(), y), X).sum()
    assert tangent == pytest.approx(expected, rel=1e-6)
    with pytest.raises(tg.TransformError):
        tg.grad(f, mode="ast")(X.copy(), y)


def alias_by_name_then_augmented(x):
    y = x * 1.0
    w = y
    y += x            # NumPy: w is y
    return np.sum(w * w)


def pop_from_an_aliased_list(x):
    lst = [x[0], x[1]]
    l2 = lst
    a = lst.pop()
    return a * l2[0]


@pytest.mark.parametrize("f", [alias_by_name_then_augmented, pop_from_an_aliased_list],
                         ids=lambda f: f.__name__)
def test_found_in_review(f):
    """AST mode: `w = y` was propagated away, so the check never saw w (a wrong gradient);
    `a = lst.pop()` was no in-place change to it (an internal IndexError)."""
    with pytest.raises(AliasError):
        tg.grad(f, mode="ast")(X.copy())
    for mode in ("tape", "auto"):
        np.testing.assert_allclose(tg.grad(f, mode=mode)(X.copy()), numeric(f, X), rtol=1e-6, atol=1e-8)


# -- NumPy's flips and rotations are views: writes through them reach the array -------------

def _write_through(view_of):
    def f(x):
        y = x.reshape(2, 3) * 1.0
        v = view_of(y)
        v[0, 0] = x[0] ** 3       # NumPy writes this into y
        v[-1] *= x[1]
        return np.sum(y * y) + np.sum(v * np.arange(6.0).reshape(v.shape))
    f.__name__ = f"write_through_{view_of.__name__}"
    return f


def _flip_all(y): return np.flip(y)
def _flip_1(y): return np.flip(y, 1)
def _flipud(y): return np.flipud(y)
def _fliplr(y): return np.fliplr(y)
def _rot90(y): return np.rot90(y)
def _rot180(y): return np.rot90(y, 2)
def _rot270(y): return np.rot90(y, -1, axes=(1, 0))


@pytest.mark.parametrize("view_of", [_flip_all, _flip_1, _flipud, _fliplr, _rot90, _rot180, _rot270],
                         ids=lambda v: v.__name__)
def test_writes_through_flips_and_rotations_reach_the_array(view_of):
    """np.flip/fliplr/flipud/rot90 return views; the tape once recorded copies, and lost
    the writes (value and gradient wrong). AST mode refuses the shared memory."""
    f = _write_through(view_of)
    x = np.array([0.3, -0.7, 1.2, 0.5, -0.2, 0.9])
    a = np.ones((2, 3))
    assert np.shares_memory(view_of(a), a)  # (NumPy's own answer: a view)
    want_value = f(x.copy())
    for mode in ("tape", "auto"):
        value, grad = tg.value_and_grad(f, mode=mode)(x.copy())
        np.testing.assert_allclose(value, want_value, rtol=1e-12)
        np.testing.assert_allclose(grad, numeric(f, x), rtol=1e-6, atol=1e-8)
    with pytest.raises(tg.TransformError):
        tg.grad(f, mode="ast")(x.copy())


def fortran_order(x):
    y = x.reshape(2, 3)
    z = y.ravel(order="F") * np.arange(6.0)
    return np.sum(z.reshape((3, 2), order="F") ** 2) + np.sum(y.flatten("F")[:2])


@pytest.mark.parametrize("mode", ["tape", "ast", "auto"])
def test_fortran_order_ravel_and_reshape(mode):
    x = np.array([0.3, -0.7, 1.2, 0.5, -0.2, 0.9])
    value, grad = tg.value_and_grad(fortran_order, mode=mode)(x.copy())
    np.testing.assert_allclose(value, fortran_order(x), rtol=1e-12)
    np.testing.assert_allclose(grad, numeric(fortran_order, x), rtol=1e-6, atol=1e-8)


def test_memory_orders_are_refused():
    with pytest.raises(tg.TracerError, match="order='K'"):
        tg.grad(lambda x: np.sum(np.ravel(x, order="K")), mode="tape")(np.ones((2, 2)))


# -- arrays held in lists and dicts ---------------------------------------------------------------

W6 = np.arange(1.0, 7.0).reshape(2, 3)


def list_element_augmented(x):
    y = x.reshape(2, 3) * 1.0
    L = list(y)              # rows: views of y
    L[0] += 1.0              # NumPy changes row 0 of y
    return np.sum(y * y * W6)


def dict_element_augmented(x):
    y = x.reshape(2, 3) * 2.0
    d = {"a": y}
    d["a"] *= x.reshape(2, 3)   # y itself, changed in place
    return np.sum(y * W6)


def dict_holds_the_base(x):
    y = x * 1.0
    d = {"a": y}
    y[0] = 5.0               # seen through d["a"]
    return np.sum(d["a"] ** 2)


@pytest.mark.parametrize("f", [list_element_augmented, dict_element_augmented, dict_holds_the_base],
                         ids=lambda f: f.__name__)
def test_arrays_held_in_lists_and_dicts_changed_in_place(f):
    """``L[k] += v`` changes the array held there (NumPy), the AST path once rebound the
    slot instead; a dict holding an array written afterwards was not looked into."""
    x = np.array([0.3, -0.7, 1.1, 0.5, 2.0, -1.2]) if f is not dict_holds_the_base else np.array([0.3, -0.7, 1.1])
    with pytest.raises(AliasError):
        tg.grad(f, mode="ast")(x.copy())
    for mode in ("tape", "auto"):
        value, grad = tg.value_and_grad(f, mode=mode)(x.copy())
        np.testing.assert_allclose(value, f(x.copy()), rtol=1e-12)
        np.testing.assert_allclose(grad, numeric(f, x), rtol=1e-6, atol=1e-8)


def numbers_in_a_list(x):
    L = [x[0] * 1.0, x[1] * 2.0]
    L[0] += x[1] ** 2        # Python numbers (0-d values): a new value, as in Python
    return L[0] * L[1]


@pytest.mark.parametrize("mode", ["tape", "ast", "auto"])
def test_augmented_assignment_of_numbers_in_a_list(mode):
    x = np.array([0.3, -0.7])
    np.testing.assert_allclose(tg.grad(numbers_in_a_list, mode=mode)(x.copy()), numeric(numbers_in_a_list, x),
                               rtol=1e-6, atol=1e-8)


# -- the parts of a complex array are views in NumPy ----------------------------------------------

def write_through_real(x):
    z = x * (1 + 2j)
    r = z.real
    r *= 3.0                  # z's real part tripled
    return np.sum(np.abs(z) ** 2)


def base_written_after_imag(x):
    z = x * (1 + 2j)
    i = z.imag
    z *= 1j                   # i sees the new imaginary part (the old real one)
    return np.sum(i * x)


def real_part_assigned(x):
    z = x * (1 - 1j)
    z.real[...] = x * 3.0
    np.imag(z)[0] = x[1] ** 2
    return np.sum(np.abs(z) ** 2)


@pytest.mark.parametrize("f", [write_through_real, base_written_after_imag, real_part_assigned],
                         ids=lambda f: f.__name__)
def test_writes_through_complex_parts(f):
    """z.real and z.imag share z's memory in NumPy; the tape once recorded copies."""
    x = np.array([0.5, -1.0, 0.75])
    for mode in ("tape", "auto"):
        value, grad = tg.value_and_grad(f, mode=mode)(x.copy())
        np.testing.assert_allclose(value, f(x.copy()), rtol=1e-12)
        np.testing.assert_allclose(grad, numeric(f, x), rtol=1e-6, atol=1e-8)


# -- reshape and ravel copy where NumPy copies, by the layout of NumPy's array -------------------

def ravel_of_a_column(x):
    y = x * 1.0
    c = np.ravel(y[:, 1])      # a copy: the column is strided
    y[...] = y * 3.0
    return np.sum(np.sin(c))


def ravel_of_a_column_written(x):
    y = x * 1.0
    d = y[:, 1].ravel()        # a copy
    d *= 5.0                   # y unchanged
    e = y[:, 2].reshape(2)     # a view (same shape)
    e *= 2.0                   # y changed
    return np.sum(np.sin(y))


def reshape_after_a_write_through_a_transpose(x):
    y = x * 1.0
    v = y.T
    v *= 2.0                   # writes y
    w = v.reshape(-1)          # a copy: y.T is not contiguous, whatever the kernel made
    w *= 1.5
    return np.sum(np.sin(y)) + np.sum(w)


def ravel_after_a_write_through_a_step(x):
    y = x * 1.0
    v = y[:, ::2]
    v *= 2.0
    w = np.ravel(v)            # a copy
    w *= 1.5
    f = y.flatten()            # always a copy
    f[0] = 100.0
    return np.sum(np.sin(y)) + np.sum(w * w)


@pytest.mark.parametrize("f", [ravel_of_a_column, ravel_of_a_column_written,
                               reshape_after_a_write_through_a_transpose, ravel_after_a_write_through_a_step],
                         ids=lambda f: f.__name__)
def test_reshape_copies_where_numpy_copies(f):
    x = np.array([[0.3, -0.7, 1.1], [0.5, 0.9, -1.3]])
    for mode in ("tape", "auto"):
        value, grad = tg.value_and_grad(f, mode=mode)(x.copy())
        np.testing.assert_allclose(value, f(x.copy()), rtol=1e-12)
        np.testing.assert_allclose(grad, numeric(f, x), rtol=1e-6, atol=1e-8)


def parts_assigned(x):
    z = x * (1 + 2j)
    z.imag *= x               # NumPy: z's imaginary part, changed in place
    z.real = x ** 2
    return np.sum(np.abs(z) ** 2)


def test_complex_parts_assigned_as_attributes():
    x = np.array([0.5, -1.0, 0.75])
    for mode in ("tape", "auto"):
        value, grad = tg.value_and_grad(parts_assigned, mode=mode)(x.copy())
        np.testing.assert_allclose(value, parts_assigned(x.copy()), rtol=1e-12)
        np.testing.assert_allclose(grad, numeric(parts_assigned, x), rtol=1e-6, atol=1e-8)


def flip_of_a_0d_then_written(x, y):
    v = np.broadcast_to(np.flip(y), (2,))   # NumPy: flip of a 0-d array is a number (a copy)
    y += 0.5                                # so v does not see this
    return np.sum(np.tanh(v)) + np.sum(x * y)


def test_flip_of_a_0d_array_is_a_copy():
    x, y = np.array([1.4]), np.array(1.47)
    want_value = flip_of_a_0d_then_written(x.copy(), y.copy())
    for mode in ("tape", "auto"):
        value, (gx, gy) = tg.value_and_grad(flip_of_a_0d_then_written, argnums=(0, 1), mode=mode)(x.copy(), y.copy())
        np.testing.assert_allclose(value, want_value, rtol=1e-12)
        np.testing.assert_allclose(gy, 2 * (1 - np.tanh(1.47) ** 2) + 1.4, rtol=1e-12)
        np.testing.assert_allclose(gx, [1.97], rtol=1e-12)


# 0-d results: NumPy answers ``y[1]`` (and the rows of an iterated 1-d array) with a
# number, whose ``+=`` rebinds the name, but ``y[1, ...]``, ``np.squeeze`` and
# ``reshape(())`` with 0-d *views*, whose in-place changes reach ``y``. The tape took
# every 0-d view result for a number, so these writes were lost (a silent wrong gradient,
# found by the fuzzer: ``/=`` through a squeezed 0-d view).

def zero_d_squeeze(x):
    y = x[:1] * 1.0
    v = np.squeeze(y)
    v /= x[1] + 2.0
    return np.sum(np.sin(y)) + np.sum(y * x[2])


def zero_d_ellipsis_index(x):
    y = x * 1.0
    w = y[1, ...]
    w *= x[0]
    return np.sum(y * y)


def zero_d_reshape(x):
    y = x[2:] * 1.0
    w = y.reshape(())
    w += x[0] * x[1]
    return np.sum(np.cos(y))


def zero_d_number_rebinds(x):
    y = x * 1.0
    w = y[1]
    w *= 3.0  # a number: y is unchanged
    total = 0.0
    for row in y:  # numbers too
        row *= 2.0
        total = total + row
    return np.sum(y * y) + w + total


@pytest.mark.parametrize("mode", ["tape", "auto"])
@pytest.mark.parametrize("f", [zero_d_squeeze, zero_d_ellipsis_index, zero_d_reshape, zero_d_number_rebinds])
def test_in_place_changes_through_0d_views_reach_their_array(f, mode):
    np.testing.assert_allclose(tg.grad(f, mode=mode)(X.copy()), numeric(f, X), rtol=1e-6, atol=1e-8)


def alias_then_scale(x):
    v1 = np.log(x * x + 1.0)
    v2 = v1            # v2 is v1's array
    v3 = np.flip(v2) + 0.0
    v1 *= 0.5          # ... so this halves v2 too
    return np.sum(np.tanh(v2)) + np.sum(v3 * v3)


def test_forward_mode_keeps_the_names_its_alias_check_reads():
    # AST forward mode once propagated `v2 = v1` away before the in-place check read v2
    # through locals(): the check passed, and the value and tangent were silently wrong
    with pytest.raises(AliasError, match=r"v1 \*= 0.5.*while v2 shares its memory"):
        tg.jvp(alias_then_scale, (X.copy(),), (np.ones(3),), mode="ast")
    out, tangent = tg.jvp(alias_then_scale, (X.copy(),), (np.ones(3),), mode="auto")
    np.testing.assert_allclose(out, alias_then_scale(X.copy()), rtol=1e-12)
    e = 1e-6
    want = (alias_then_scale(X + e) - alias_then_scale(X - e)) / (2 * e)
    np.testing.assert_allclose(tangent, want, rtol=1e-6)
    np.testing.assert_allclose(tg.grad(alias_then_scale, mode="auto")(X.copy()) @ np.ones(3), want, rtol=1e-6)


G = np.array([1.0, 2.0, 3.0])


def writes_a_global_after_reading_it(x):
    a = np.sum(x * G)
    G[0] = G[0] + 4.0  # (a plain NumPy write: no value being differentiated in it)
    return a


def reads_a_global_around_a_write(x):
    a = np.sum(x * G)
    G[0] = 5.0
    return a + np.sum(x * x * G)


@pytest.mark.parametrize("f", [writes_a_global_after_reading_it, reads_a_global_around_a_write],
                         ids=lambda f: f.__name__)
@pytest.mark.parametrize("mode", ["tape", "ast", "auto"])
def test_a_global_array_written_after_it_was_read(f, mode):
    """The tape captures a global array by reference. Written after its use (a NumPy write
    of a constant, which the tape does not see), the first call's sweep read the written
    contents: gradient [5, 2, 3] instead of [1, 2, 3], without an error; and where a second
    use had been captured by value, later calls replayed the first call's contents. Now
    the sweep reads what the use read, and such a trace is for its call only. Each call
    agrees with NumPy running the function, and with finite differences."""
    G[:] = [1.0, 2.0, 3.0]
    g = tg.value_and_grad(f, mode=mode)
    for _ in range(3):
        before = G.copy()
        value, grad = g(X.copy())
        after = G.copy()
        G[:] = before
        assert value == pytest.approx(f(X.copy()))
        G[:] = before
        want = numeric(lambda a: (G.__setitem__(slice(None), before), f(a))[1], X)
        np.testing.assert_allclose(grad, want, rtol=1e-6, atol=1e-8)
        G[:] = after  # (as the call left it: the next call starts from there)


def writes_its_first_argument(x, y):
    x[0] = 5.0
    return np.sum(x * y)


def writes_its_second_argument(x, y):
    y *= 2.0
    return np.sum(x * y)


def writes_only_a_copy(x, y):
    w = x * 1.0
    w[0] = 5.0
    return np.sum(w * y)


@pytest.mark.parametrize("f", [writes_its_first_argument, writes_its_second_argument], ids=lambda f: f.__name__)
@pytest.mark.parametrize("mode", ["tape", "auto"])
def test_arguments_sharing_memory_with_a_write_into_one_are_refused_on_the_tape(f, mode):
    """``f(a, a)``: NumPy's write into ``x`` changes ``y`` too; the tape took them for two
    values and returned value 18 and gradient [0, 2, 3] where NumPy computes 38 -- in tape
    and auto mode (auto takes the tape for a function writing its arguments), without an
    error. Now the tape refuses, on the first call and on a cached one alike."""
    g = tg.grad(f, argnums=(0, 1), mode=mode)
    g(X.copy(), X.copy())  # (distinct arrays: fine, and the trace is cached)
    for y_of in (lambda b: b, lambda b: b[::-1], lambda b: b.reshape(3)):
        b = X.copy()
        with pytest.raises(tg.TracerError, match="share memory, and the function writes into one of them"):
            tg.grad(f, argnums=(0, 1), mode=mode)(b, y_of(b))
        with pytest.raises(tg.TracerError, match="share memory"):
            g(b, y_of(b))


@pytest.mark.parametrize("mode", ["tape", "auto"])
def test_vjp_of_arguments_sharing_memory_with_a_write_is_refused_on_the_tape(mode):
    """tracegrad.vjp traces the function once, outside the staged cache: it returned the
    gradients of two separate values, without an error."""
    b = X.copy()
    with pytest.raises(tg.TracerError, match="share memory"):
        tg.vjp(writes_its_first_argument, b, b, mode=mode)
    _, pull = tg.vjp(writes_its_first_argument, X.copy(), X.copy(), mode=mode)
    gx, gy = pull(1.0)
    np.testing.assert_allclose(gx, [0.0, X[1], X[2]])
    np.testing.assert_allclose(gy, [5.0, X[1], X[2]])


def test_arguments_sharing_memory_are_fine_without_a_write_into_them():
    b = X.copy()
    for f in (lambda x, y: np.sum(x * y), writes_only_a_copy):
        want = tg.grad(f, argnums=(0, 1), mode="tape")(X.copy(), X.copy())
        got = tg.grad(f, argnums=(0, 1), mode="tape")(b, b)
        for w, v in zip(want, got):
            np.testing.assert_allclose(v, w)


def writes_its_argument_and_reads_g(x):
    x[0] = 5.0
    return np.sum(x * G)


@pytest.mark.parametrize("mode", ["tape", "ast", "auto"])
def test_an_argument_sharing_memory_with_a_global_it_reads_is_refused(mode):
    """``f(G)`` for a function that writes its argument and reads the global ``G``: NumPy's
    write changes ``G`` too. The tape took them for two values (value 18 where NumPy
    computes 38); AST mode got the value but not the gradient ([0, 2, 3]; the derivative
    of sum(x * x) after the write is [0, 4, 6]): both without an error. The AST path
    left globals out of its run-time check ("globals hold none of these arrays")."""
    G[:] = [1.0, 2.0, 3.0]
    error = AliasError if mode == "ast" else tg.TracerError
    with pytest.raises(error, match="shares memory|shares its memory"):
        tg.value_and_grad(writes_its_argument_and_reads_g, mode=mode)(G)
    G[:] = [1.0, 2.0, 3.0]
    for b in (G[::-1], G.reshape(3)):
        with pytest.raises(error, match="shares memory|shares its memory"):
            tg.grad(writes_its_argument_and_reads_g, mode=mode)(b)
    value, grad = tg.value_and_grad(writes_its_argument_and_reads_g, mode=mode)(X.copy())
    assert value == pytest.approx(writes_its_argument_and_reads_g(X.copy()))
    np.testing.assert_allclose(grad, [0.0, G[1], G[2]])  # (x[0] is overwritten)


def bumps_g():
    G[0] = 5.0
    return 0.0


def reads_g_then_a_helper_writes_it(x):
    a = np.sum(x * G)
    t = bumps_g()
    return a + t


class Refreshes:
    def __init__(self):
        self.buf = np.array([1.0, 2.0, 3.0])

    def refresh(self):
        self.buf *= 2.0
        return 0.0


REFRESHES = Refreshes()


def reads_an_attribute_then_its_object_writes_it(x):
    b = REFRESHES.buf
    a = np.sum(x * b)
    t = REFRESHES.refresh()
    return a + t


HELD_G = [G]


def doubles_the_held_g():
    HELD_G[0] *= 2.0
    return 0.0


def reads_g_then_a_helper_writes_it_through_a_list(x):
    a = np.sum(x * G)
    t = doubles_the_held_g()
    return a + t


def doubles_its_arguments_buffer(o):
    o.buf *= 2.0
    return 0.0


def reads_an_attribute_then_a_helper_writes_it(x):
    a = np.sum(x * REFRESHES.buf)
    t = doubles_its_arguments_buffer(REFRESHES)
    return a + t


@pytest.mark.parametrize("f,says", [
    (reads_g_then_a_helper_writes_it, r"bumps_g, called from the function being differentiated, changes an "
                                      r"argument in place \(or a global array"),
    (reads_an_attribute_then_its_object_writes_it, "Refreshes.refresh, called from the function being "
                                                   "differentiated, writes into an array passed to it or held "
                                                   "by its object"),
    (reads_g_then_a_helper_writes_it_through_a_list, r"doubles_the_held_g, called from the function being "
                                                     r"differentiated, changes an argument in place"),
    (reads_an_attribute_then_a_helper_writes_it, "doubles_its_arguments_buffer, called from the function being "
                                                 "differentiated, writes into an array passed to it or held by "
                                                 "its object or an object passed to it"),
], ids=["global_written_by_a_helper", "attribute_written_by_its_method", "global_list_item_written_by_a_helper",
        "argument_attribute_written_by_a_helper"])
def test_an_array_read_then_written_by_a_callee_without_arguments_is_refused(f, says):
    """A helper writing a global array (directly, or as a global list's item), and a
    method or a helper writing an object's array, after the function read them: the
    adjoint read the written array ([2, 4, 6] for [1, 2, 3]), in AST and auto mode,
    without an error. The helpers are refused from their source, or (an object's
    attribute: an array or a number, the source cannot tell) run with the arrays of the
    objects they are given read-only, as the method with its object's."""
    G[:] = [1.0, 2.0, 3.0]
    REFRESHES.buf[:] = [1.0, 2.0, 3.0]
    with pytest.raises(tg.TransformError, match=says):
        tg.grad(f, mode="ast")(X.copy())
    np.testing.assert_array_equal(REFRESHES.buf, [1.0, 2.0, 3.0])
    assert REFRESHES.buf.flags.writeable
    for mode in ("tape", "auto"):
        G[:] = [1.0, 2.0, 3.0]
        REFRESHES.buf[:] = [1.0, 2.0, 3.0]
        np.testing.assert_allclose(tg.grad(f, mode=mode)(X.copy()), [1.0, 2.0, 3.0])
