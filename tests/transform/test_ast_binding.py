"""What generated AST code binds to: the function's own default objects (never its default
expressions run again), its own closure cells (rebinding through ``nonlocal`` is seen as
Python sees it), and only the code the function runs (a file edited after the import is
refused, not differentiated); and how long it keeps things alive (a deleted function, its
closure and what it captured are freed with its gradients)."""
import functools
import gc
import importlib.util
import textwrap
import weakref

import numpy as np
import pytest

import tracegrad
from tracegrad.transform.ast import TransformError

X = np.array([0.5, -1.0, 2.0])


# -- defaults ----------------------------------------------------------------------------

_SCALE = 2.0


def _scaled(x, k=_SCALE):
    return np.sum(x * k)


def _calls_scaled(x):
    return _scaled(x) * 1.0


@pytest.mark.parametrize("fn", [_scaled, _calls_scaled], ids=["own", "callee"])
def test_a_default_keeps_its_value_from_when_the_def_ran(fn, monkeypatch):
    monkeypatch.setitem(globals(), "_SCALE", 10.0)  # rebound after the def, as Python allows
    want = tracegrad.grad(fn, mode="tape")(X)
    np.testing.assert_allclose(want, 2.0 * np.ones(3))
    np.testing.assert_allclose(tracegrad.grad(fn, mode="ast")(X), want)
    # (forward mode refuses a callee called with a default left out; auto takes the tape)
    _, tangent = tracegrad.jvp(fn, (X,), (np.ones(3),), mode="ast" if fn is _scaled else "auto")
    assert float(tangent) == pytest.approx(6.0)


def test_a_default_with_a_side_effect_runs_once_and_is_not_printed():
    calls = []

    def side_effect():
        calls.append(1)
        return 3.0

    def f(x, k=side_effect()):
        return np.sum(x * k)

    assert len(calls) == 1
    g = tracegrad.grad(f, mode="ast")
    np.testing.assert_allclose(g(X), 3.0 * np.ones(3))
    _, tangent = tracegrad.jvp(f, (X,), (np.ones(3),), mode="ast")
    assert float(tangent) == pytest.approx(9.0)
    assert len(calls) == 1, "the default expression ran again"
    assert "side_effect" not in g.source
    assert "def df_dx(x, k=3.0, dout=1.0):" in g.source


def test_a_default_object_is_the_very_object_and_is_named_in_the_source():
    w = np.array([1.0, 2.0, 3.0])

    def f(x, w=w):
        return np.sum(x * w)

    g = tracegrad.grad(f, mode="ast")
    np.testing.assert_allclose(g(X), w)
    assert "w=w_default" in g.source
    assert g.generated().fn.__defaults__[0] is w
    w[0] = 5.0  # a mutable default is shared with the user's function, as Python shares it
    np.testing.assert_allclose(g(X), [5.0, 2.0, 3.0])
    np.testing.assert_allclose(g(X), tracegrad.grad(f, mode="tape")(X))


# -- closures ----------------------------------------------------------------------------

def _counter_pair(k):
    def f(x):
        return np.sum(x * k)

    def set_k(v):
        nonlocal k
        k = v
    return f, set_k


def test_a_closure_rebound_through_nonlocal_is_seen_by_a_live_gradient():
    f, set_k = _counter_pair(2.0)
    g = tracegrad.grad(f, mode="ast")
    np.testing.assert_allclose(g(X), 2.0 * np.ones(3))
    set_k(7.0)
    assert f(X) == pytest.approx(7.0 * X.sum())
    np.testing.assert_allclose(g(X), 7.0 * np.ones(3))
    _, tangent = tracegrad.jvp(f, (X,), (np.ones(3),), mode="ast")
    assert float(tangent) == pytest.approx(21.0)


def test_higher_order_code_reads_the_same_cells():
    def make(c):
        def h(x, p=3.0):
            return np.sum(np.sin(x) * c * p)

        def set_c(v):
            nonlocal c
            c = v
        return h, set_c

    h, set_c = make(2.0)
    d2 = tracegrad.grad(tracegrad.grad(h, mode="ast"), mode="ast")
    x = np.array(0.3)
    assert float(d2(x)) == pytest.approx(-np.sin(0.3) * 6.0)
    set_c(4.0)
    assert float(d2(x)) == pytest.approx(-np.sin(0.3) * 12.0)


def test_a_global_rebound_is_seen_by_the_next_jvp(monkeypatch):
    def f(x):
        return np.sum(x * _SCALE)
    _, t1 = tracegrad.jvp(f, (X,), (np.ones(3),), mode="ast")
    monkeypatch.setitem(globals(), "_SCALE", 5.0)
    _, t2 = tracegrad.jvp(f, (X,), (np.ones(3),), mode="ast")
    assert (float(t1), float(t2)) == (pytest.approx(6.0), pytest.approx(15.0))


# -- the source must be the code ---------------------------------------------------------

def _load(tmp_path, text, name="edited_module"):
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(text))
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module, path


_ORIGINAL = """
import numpy as np

def f(x):
    return np.sum(x * 2.0)
"""


@pytest.mark.parametrize("edited", [
    _ORIGINAL.replace("x * 2.0", "x * 30.0"),                        # the body changed
    _ORIGINAL.replace("def f", "def g(x):\n    return np.sum(x)\n\ndef f"),  # lines moved
], ids=["body", "moved"])
def test_a_file_edited_after_import_is_refused(tmp_path, edited):
    module, path = _load(tmp_path, _ORIGINAL)
    path.write_text(textwrap.dedent(edited))
    with pytest.raises(TransformError) as err:
        tracegrad.grad(module.f, mode="ast")(X)
    assert err.value.construct == "source"
    assert str(path) in str(err.value) and "line" in str(err.value)
    with pytest.raises(TransformError):
        tracegrad.jvp(module.f, (X,), (np.ones(3),), mode="ast")
    auto = tracegrad.grad(module.f)
    np.testing.assert_allclose(auto(X), 2.0 * np.ones(3))
    assert auto.mode == "tape" and isinstance(auto.fallback_reason, TransformError)
    _, tangent = tracegrad.jvp(module.f, (X,), (np.ones(3),))
    assert float(tangent) == pytest.approx(6.0)


def test_a_wrapper_is_not_mistaken_for_the_function_it_wraps():
    def doubled(fn):
        @functools.wraps(fn)
        def wrapper(x):
            return 2.0 * fn(x)
        return wrapper

    @doubled
    def f(x):
        return np.sum(x * x)

    with pytest.raises(TransformError):
        tracegrad.grad(f, mode="ast")(X)
    np.testing.assert_allclose(tracegrad.grad(f)(X), 4.0 * X)


def test_unedited_files_are_accepted(tmp_path):
    """What the check must not refuse: decorators, annotations under ``from __future__``,
    private names in methods, closures, names imported by the module."""
    module, _ = _load(tmp_path, """
        from __future__ import annotations
        import numpy as np
        from numpy import tanh

        def same(fn):
            return fn

        @same
        def decorated(x: np.ndarray) -> float:
            return np.sum(tanh(x) * 2.0)

        class Model:
            def __init__(self):
                self.__w = np.array([1.0, 2.0, 3.0])

            def loss(self, x):
                return np.sum(x * self.__w)

        def make(c):
            def inner(x):
                return np.sum(np.concatenate([x, x]).T * c)
            return inner
    """, name="clean_module")
    np.testing.assert_allclose(tracegrad.grad(module.decorated, mode="ast")(X), 2.0 * (1 - np.tanh(X) ** 2))
    m = module.Model()
    loss_grad = tracegrad.grad(module.Model.loss, argnums=1, mode="ast")
    np.testing.assert_allclose(loss_grad(m, X), [1.0, 2.0, 3.0])
    np.testing.assert_allclose(tracegrad.grad(module.make(3.0), mode="ast")(X), 6.0 * np.ones(3))


# -- lifetimes ---------------------------------------------------------------------------

class _Scale:
    def __init__(self, w):
        self.w = w

    def __call__(self, x):
        return x * self.w


def _closure(kind, a):
    if kind == "plain":
        def f(x):
            return np.sum(x * a)
    elif kind == "concatenate":
        def f(x):
            return np.sum(np.concatenate([x, a]) ** 2)
    elif kind == "transpose":
        def f(x):
            return np.sum(x.T * a)
    elif kind == "callable":
        model = _Scale(a)

        def f(x):
            return np.sum(model(x))
    elif kind == "partial":
        model = functools.partial(np.multiply, a)

        def f(x):
            return np.sum(model(x))
    return f


_KINDS = ["plain", "concatenate", "transpose", "callable", "partial"]


def _collect():
    """Collect until nothing more is freed (as CPython's test.support.gc_collect does: a
    cache entry dropped by a weak reference's callback during one collection can leave a
    cycle for the next)."""
    for _ in range(3):
        gc.collect()


def _use(f, how):
    if how == "grad":
        g = tracegrad.grad(f, mode="ast")
        g(X)
        return g
    tracegrad.jvp(f, (X,), (np.ones(3),), mode="ast")
    return None


@pytest.mark.parametrize("how", ["grad", "jvp"])
@pytest.mark.parametrize("kind", _KINDS)
def test_a_deleted_function_and_what_it_captured_are_freed(kind, how):
    a = np.array([1.0, 2.0, 3.0])
    f = _closure(kind, a)
    g = _use(f, how)
    refs = weakref.ref(f), weakref.ref(a)
    del f, g, a
    _collect()
    assert [r() is None for r in refs] == [True, True]


def test_a_live_gradient_keeps_working_and_then_is_freed():
    a = np.array([1.0, 2.0, 3.0])
    f = _closure("concatenate", a)
    g = tracegrad.grad(f, mode="ast")
    refs = weakref.ref(f), weakref.ref(a)
    del f, a
    _collect()
    assert refs[0]() is not None
    np.testing.assert_allclose(g(X), 2.0 * X)
    del g
    _collect()
    assert [r() is None for r in refs] == [True, True]


def test_a_deleted_second_order_gradient_is_freed():
    c = np.array(2.0)

    def make(c):
        def h(x):
            return np.sum(np.sin(x) * c)
        return h
    h = make(c)
    g = tracegrad.grad(tracegrad.grad(h, mode="ast"), mode="ast")
    assert float(g(np.array(0.5))) == pytest.approx(-2.0 * np.sin(0.5))
    refs = weakref.ref(h), weakref.ref(c)
    del h, g, c
    _collect()
    assert [r() is None for r in refs] == [True, True]
