"""NumPy's stand-ins (tape/numpy_map/construct.py): while a tape records, on any thread,
``numpy`` holds stand-ins for its constructors and some reductions. None of that may turn
into a wrong derivative:

* ``np.full(shape, traced)`` keeps the traced fill whoever calls it (an alias, getattr,
  code without source), or refuses; the buffers of code the call check does not
  recognise are NumPy's, whose writes of traced values are refused;
* a module first imported while a tape records keeps NumPy's own functions afterwards;
* the AST path resolves a stand-in as NumPy's function (another thread recording, or an
  AST gradient transformed inside a tape trace), and caches nothing else.

Every value is checked against a formula worked out by hand.
"""
import importlib
import sys
import textwrap
import threading

import numpy as np
import pytest

import tracegrad as tg
from tracegrad import TransformError
from tracegrad.transform.tape.numpy_map.construct import ArrayConversion, numpy_own

X = np.array([1.0, 2.0, 4.0])
NUMPY_FULL, NUMPY_ZEROS, NUMPY_SUM = np.full, np.zeros, np.sum


def full_times(x):
    """x0 * sum(x): gradient [x0 + sum(x), x0, x0]."""
    z = np.full((3,), x[0])
    return np.sum(z * x)


def full_times_grad(x):
    return np.array([x[0] + x.sum(), x[0], x[0]])


def full_squares(x):
    """x0 * sum(x^2): gradient [sum(x^2) + 2 x0^2, 2 x0 x1, 2 x0 x2]."""
    z = np.full((3,), x[0])
    return np.sum(z * x * x)


def mean_of_list(x):
    """(x0 + x1) / 2 * x2: gradient [x2/2, x2/2, (x0 + x1)/2]."""
    return np.mean([x[0], x[1]]) * x[2]


def mean_of_list_grad(x):
    return np.array([x[2] / 2, x[2] / 2, (x[0] + x[1]) / 2])


def buffered(x):
    """sum(x^2) * mean(x) through a zeros buffer: gradient 2 x mean(x) + sum(x^2)/n."""
    h = np.zeros(3)
    return np.sum(h + x * x) * np.mean(x)


def buffered_grad(x):
    return 2 * x * x.mean() + np.sum(x * x) / x.size


# -- S1: a traced fill value of np.full never vanishes ------------------------------------

def aliased_full(x):
    make = np.full
    z = make((3,), x[0])
    return np.sum(z * x)


def getattr_full(x):
    z = getattr(np, "full")((3,), x[0])
    return np.sum(z * x)


def keyword_full(x):
    return np.sum(np.full(shape=(3,), fill_value=x[0], dtype=np.float64) * x)


def positional_dtype_full(x):
    return np.sum(np.full((3,), x[0], None) * x)


@pytest.mark.parametrize("f", [full_times, aliased_full, getattr_full, keyword_full, positional_dtype_full])
def test_full_of_a_traced_value_keeps_it_in_tape_mode(f):
    value, grad = tg.value_and_grad(f, mode="tape")(X)
    assert np.allclose(value, X[0] * X.sum())
    assert np.allclose(grad, full_times_grad(X))


def test_full_of_a_traced_value_in_code_without_source():
    ns = {"np": np}
    exec("def f(x):\n    z = np.full((3,), x[0])\n    return np.sum(z * x)\n", ns)
    value, grad = tg.value_and_grad(ns["f"], mode="tape")(X)
    assert np.allclose(value, X[0] * X.sum())
    assert np.allclose(grad, full_times_grad(X))


def test_full_with_an_integer_dtype_casts_the_fill_as_numpy_does():
    def f(x):
        return np.sum(np.full((3,), x[0] * 1.5, int) * x)   # int(1.5) = 1: a constant
    value, grad = tg.value_and_grad(f, mode="tape")(X)
    assert np.allclose(value, X.sum()) and np.allclose(grad, [1.0, 1.0, 1.0])


def test_full_with_a_fill_larger_than_the_shape_is_refused():
    def f(x):
        return np.sum(np.full((3,), np.stack([x, x])))
    with pytest.raises(ValueError, match=r"could not broadcast input array from shape \(2, 3\) into shape \(3,\)"):
        tg.grad(f, mode="tape")(X)


def test_buffer_of_code_without_source_is_numpys_and_refuses_traced_writes():
    ns = {"np": np}
    exec("def f(x):\n    h = np.zeros(3)\n    h[0] = x[0]\n    return np.sum(h * x)\n", ns)
    with pytest.raises(ArrayConversion, match="converted to a NumPy array"):
        tg.grad(ns["f"], mode="tape")(X)


def test_constant_full_in_code_without_source():
    ns = {"np": np}
    exec("def f(x):\n    return np.sum(np.full((3,), 2.0) * x)\n", ns)
    value, grad = tg.value_and_grad(ns["f"], mode="tape")(X)
    assert np.allclose(value, 2 * X.sum()) and np.allclose(grad, [2.0, 2.0, 2.0])


# -- S2: modules first imported during a trace keep NumPy's functions ---------------------

def test_module_first_imported_during_a_trace_gets_numpys_functions_back(tmp_path, monkeypatch):
    name = f"tg_stand_in_helper_{id(tmp_path)}"
    (tmp_path / f"{name}.py").write_text(textwrap.dedent("""
        import numpy as np
        from numpy import zeros, full, sum as npsum, array
        from numpy.linalg import norm
        ones = np.ones
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    seen = {}

    def f(x):
        mod = importlib.import_module(name)
        seen["during"] = mod.zeros is not NUMPY_ZEROS  # (the premise: it took a stand-in)
        return np.sum(x * x)
    try:
        assert np.allclose(tg.grad(f, mode="tape")(X), 2 * X)
        mod = sys.modules[name]
        assert seen["during"]
        assert mod.zeros is np.zeros is NUMPY_ZEROS
        assert mod.full is np.full and mod.npsum is np.sum and mod.array is np.array
        assert mod.ones is np.ones and mod.norm is np.linalg.norm
        assert not any(getattr(v, "_tracegrad", False) for v in vars(mod).values())

        def g(x):  # the AST path: helper.zeros is a constant buffer again
            h = mod.zeros(3)
            h[0] = x[0] * 3
            return mod.npsum(h * x)
        value, grad = tg.value_and_grad(g, mode="ast")(X)
        assert np.allclose(value, 3 * X[0] ** 2) and np.allclose(grad, [6 * X[0], 0, 0])

        def g2(x):  # full() of a differentiated value, through a name bound before the trace:
            return mod.npsum(mod.full((3,), x[1]) * x)  # AST mode refuses; the tape (whose
        with pytest.raises(TransformError, match=r"full\(\) of a value being differentiated"):
            tg.grad(g2, mode="ast")(X)  # stand-ins reach names re-exported from NumPy) records it
        want = np.array([X[1], X[0] + 2 * X[1] + X[2], X[1]])
        np.testing.assert_allclose(tg.grad(g2, mode="tape")(X), want, rtol=1e-12)
        np.testing.assert_allclose(tg.grad(g2, mode="auto")(X), want, rtol=1e-12)
        assert mod.full is np.full  # (put back after each trace)
    finally:
        sys.modules.pop(name, None)


# -- C1: the AST path resolves stand-ins as NumPy's functions -----------------------------

def test_ast_gradient_inside_a_tape_trace_refuses_full_of_a_differentiated_value():
    gi = tg.grad(full_squares, mode="ast")
    with pytest.raises(TransformError, match=r"np\.full\(\) of a value being differentiated"):
        tg.grad(lambda y: np.sum(gi(y)), mode="tape")(X)
    with pytest.raises(TransformError, match=r"np\.full\(\) of a value being differentiated"):
        gi(X)  # (nothing wrong cached by the transformation inside the trace)


def test_auto_gradient_inside_a_tape_trace():
    # d/dx of sum(grad(x0 * sum(x^2))) = d/dx (sum(x^2) + 2 x0 sum(x)) = 2x + 2 x0 + 2 sum(x) e0
    expected = 2 * X + 2 * X[0] + np.array([2 * X.sum(), 0, 0])
    for outer in ("tape", "auto"):
        g = tg.grad(lambda y: np.sum(tg.grad(full_squares, mode="auto")(y)), mode=outer)(X)
        assert np.allclose(g, expected), outer


def test_ast_gradient_of_a_list_mean_inside_a_tape_trace_then_alone():
    gi = tg.grad(mean_of_list, mode="ast")
    # sum(grad) = x2 + (x0 + x1) / 2
    assert np.allclose(tg.grad(lambda y: np.sum(gi(y)), mode="tape")(X), [0.5, 0.5, 1.0])
    assert np.allclose(gi(X), mean_of_list_grad(X))
    assert np.allclose(tg.hessian(mean_of_list, mode="auto")(X),
                       [[0, 0, 0.5], [0, 0, 0.5], [0.5, 0.5, 0]])


def test_generated_code_run_inside_a_tape_trace_records_full_and_buffers():
    def outer(y):
        def inner(x):   # y is a constant to inner, a traced value to the outer tape
            return np.sum(np.full((3,), y[0]) * x * x)
        return np.sum(tg.grad(inner, mode="ast")(y * 2))      # = 4 y0 sum(y)

    def outer_buffer(y):
        def inner(x):
            h = np.zeros(3)
            h[0] = y[0] * y[1]
            return np.sum(h * x)
        return np.sum(tg.grad(inner, mode="ast")(y) * y)      # = y0^2 y1

    value, grad = tg.value_and_grad(outer, mode="tape")(X)
    assert np.allclose(value, 4 * X[0] * X.sum())
    assert np.allclose(grad, 4 * X[0] + np.array([4 * X.sum(), 0, 0]))
    value, grad = tg.value_and_grad(outer_buffer, mode="tape")(X)
    assert np.allclose(value, X[0] ** 2 * X[1])
    assert np.allclose(grad, [2 * X[0] * X[1], X[0] ** 2, 0])


def test_numpy_own():
    assert numpy_own(np.sum) is np.sum and numpy_own(len) is len and numpy_own(3) == 3
    from tracegrad.transform.tape.numpy_map import construct
    construct.acquire()
    try:
        assert np.full is not NUMPY_FULL and numpy_own(np.full) is NUMPY_FULL
        assert numpy_own(np.sum) is NUMPY_SUM and numpy_own(np.linalg.norm).__name__ == "norm"
    finally:
        construct.release()
    assert np.full is NUMPY_FULL and np.sum is NUMPY_SUM


# -- another thread recording ------------------------------------------------------------

def test_gradients_on_another_thread_while_a_tape_records():
    started, finish = threading.Event(), threading.Event()
    out = {}

    def slow(x):
        started.set()
        assert finish.wait(30)
        return np.sum(x * x)

    def record():
        try:
            out["a"] = tg.grad(slow, mode="tape")(X)
        except BaseException as e:  # (reported below)
            out["a"] = e
    thread = threading.Thread(target=record)
    thread.start()
    try:
        assert started.wait(30)
        assert np.full is not NUMPY_FULL  # (the premise: the stand-ins are in place)
        plain = np.full((3,), 2.0), np.zeros(2)  # no tape on this thread: NumPy's arrays
        assert all(type(a) is np.ndarray for a in plain) and np.allclose(plain[0], 2.0)
        full_vg = tg.value_and_grad(full_times, mode="auto")(X)
        mean_g = tg.grad(mean_of_list, mode="auto")(X)
        buffered_g = tg.grad(buffered, mode="ast")(X)
        with pytest.raises(TransformError, match=r"np\.full\(\) of a value being differentiated"):
            tg.grad(full_squares, mode="ast")(X)
    finally:
        finish.set()
        thread.join(30)
    assert not isinstance(out["a"], BaseException), out["a"]
    assert np.allclose(out["a"], 2 * X)
    assert np.full is NUMPY_FULL
    for _ in range(2):  # during the other thread's trace, and what was cached then, after it
        assert np.allclose(full_vg[0], X[0] * X.sum()) and np.allclose(full_vg[1], full_times_grad(X))
        assert np.allclose(mean_g, mean_of_list_grad(X))
        assert np.allclose(buffered_g, buffered_grad(X))
        full_vg = tg.value_and_grad(full_times, mode="auto")(X)
        mean_g = tg.grad(mean_of_list, mode="auto")(X)
        buffered_g = tg.grad(buffered, mode="ast")(X)


def append_lists(a, b):
    return np.sum(np.append(a, b, axis=0) ** 2)


@pytest.mark.parametrize("mode", ["tape", "ast", "auto"])
def test_append_of_lists_holding_traced_values(mode):
    # both of np.append's arrays may be lists of traced values (list arguments are
    # pytrees of floats): d sum(v^2) = 2v, shaped as each list
    a, b = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], [[7.0, 8.0, 9.0]]
    ga, gb = tg.grad(append_lists, argnums=(0, 1), mode=mode)(a, b)
    np.testing.assert_allclose(np.array(ga), 2 * np.array(a))
    np.testing.assert_allclose(np.array(gb), 2 * np.array(b))


@pytest.mark.parametrize("mode", ["tape", "auto"])
def test_numpy_function_given_to_a_transform_takes_lists_of_traced_values(mode):
    # grad(np.append) holds NumPy's own function, bound before the trace: the transform
    # calls the stand-in in its place, so nested lists of differentiated floats are taken
    a, b = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], [[7.0, 8.0, 9.0]]
    out, tangent = tg.jvp(np.append, (a, b), (a, b), mode=mode)
    np.testing.assert_allclose(tangent, np.arange(1.0, 10.0))
    _, pull = tg.vjp(np.append, a, b, mode=mode)
    ga, gb = pull(np.arange(9.0))
    assert ga == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]] and gb == [[6.0, 7.0, 8.0]]
    _, pull_axis = tg.vjp(lambda p, q: np.append(p, q, axis=0), a, b, mode=mode)
    ga, gb = pull_axis(np.arange(9.0).reshape(3, 3))
    assert ga == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]] and gb == [[6.0, 7.0, 8.0]]


@pytest.mark.parametrize("fn, dfn", [(np.sin, np.cos), (np.cumsum, None), (np.sum, None)])
@pytest.mark.parametrize("mode", ["tape", "auto"])
def test_forward_mode_of_numpy_functions_themselves(fn, dfn, mode):
    # jvp(np.sin, ...) once failed making a weak reference to the ufunc
    x, v = np.array([0.3, -1.2, 2.0]), np.array([1.0, 0.5, -2.0])
    out, tangent = tg.jvp(fn, (x,), (v,), mode=mode)
    np.testing.assert_allclose(out, fn(x))
    expected = dfn(x) * v if dfn is not None else fn(v)  # (cumsum and sum are linear)
    np.testing.assert_allclose(tangent, expected)
    np.testing.assert_allclose(tg.jacfwd(fn, mode=mode)(x), tg.jacrev(fn, mode="tape")(x))


def _calling_held(fn, **kwargs):
    """A closure over NumPy's own function, bound before any trace (as a test helper or a
    library holds it): the transform sees only the closure, never ``fn``."""
    def call(*args):
        return fn(*args, **kwargs)
    return call


@pytest.mark.parametrize("mode", ["tape", "ast"])
@pytest.mark.parametrize("fn, kwargs, args", [
    (np.append, {"axis": 0}, ([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], [[7.0, 8.0, 9.0]])),
    (np.append, {}, ([[1.0, 2.0], [4.0, 5.0]], [[7.0, 8.0]])),
    (np.diff, {}, ([[1.0, 4.0, 9.0], [2.0, 3.0, 7.0]],)),
    (np.flip, {"axis": 1}, ([[1.0, 4.0, 9.0], [2.0, 3.0, 7.0]],)),
], ids=["append_axis0", "append_flat", "diff", "flip"])
def test_numpy_function_held_in_a_closure_takes_lists_of_traced_values(fn, kwargs, args, mode):
    # NumPy hands a call to the tracers only when one is an argument itself, not inside a
    # list; its own function held from before the trace converted the list with
    # asanyarray and failed (ArrayConversion) on the tape. First and second order
    # (forward over forward), against the function run plainly on arrays.
    f = _calling_held(fn, **kwargs)
    arrays = [np.array(a) for a in args]
    out, pull = tg.vjp(f, *args, mode=mode)
    np.testing.assert_allclose(out, fn(*arrays, **kwargs))
    ct = np.cos(np.arange(np.size(out))).reshape(np.shape(out))
    grads = pull(ct)
    for k, (g, a) in enumerate(zip(grads, arrays)):
        assert np.shape(g) == a.shape
        want = np.zeros(a.size)
        for e in range(a.size):
            d = np.zeros(a.size)
            d[e] = 1e-6
            plus, minus = list(arrays), list(arrays)
            plus[k], minus[k] = a + d.reshape(a.shape), a - d.reshape(a.shape)
            want[e] = np.sum(ct * (fn(*plus, **kwargs) - fn(*minus, **kwargs))) / 2e-6
        np.testing.assert_allclose(np.reshape(g, -1), want, rtol=1e-6, atol=1e-8)
    _, tangent = tg.jvp(f, args, args, mode=mode)
    np.testing.assert_allclose(tangent, fn(*arrays, **kwargs))  # (linear in its arguments)
    second = _calling_held(lambda *xs: tg.jvp(f, xs, xs, mode=mode)[1])
    _, tangent2 = tg.jvp(second, args, args, mode=mode)
    np.testing.assert_allclose(tangent2, fn(*arrays, **kwargs))
