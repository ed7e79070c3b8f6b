"""Edge cases of the tape found in review: constants by value, cache keys, user rules
refusing what they cannot do, results that must not alias the cache, threads, and NumPy
calls that must either mean what NumPy means or raise."""
import threading

import numpy as np
import pytest

import tracegrad as tg  # noqa: F401
from .tape_mode import tg  # noqa: F811  (grad etc. with mode="tape")

X = np.array([0.3, -1.2, 2.0])


def test_a_buffer_rewritten_inside_the_trace_is_captured_at_each_use():
    def f(x):
        m, total = np.empty(3), 0.0
        for k in range(3):
            m[:] = k + 1.0
            total = total + (x * m).sum()
        return total
    np.testing.assert_allclose(tg.grad(f)(X), [6.0, 6.0, 6.0])


def test_captured_arrays_are_read_at_each_call():
    """A replay computes with a captured array's contents at that call, as the function
    would (a snapshot would give the first call's values: a silently stale answer)."""
    w = np.array([1.0, 2.0, 3.0])
    f = lambda a: (a * w).sum() + w.sum() * a[0]  # noqa: E731
    vg = tg.value_and_grad(f)
    vg(X)
    w[:] = [10.0, 20.0, 30.0]
    again, grad_again = vg(X)
    assert again == f(X)
    np.testing.assert_allclose(grad_again, w + np.array([w.sum(), 0.0, 0.0]))


SCALE = 2.0


def scaled_by_global(a):
    return (a * SCALE).sum()


def test_a_rebound_global_is_seen_by_the_next_call():
    global SCALE
    g = tg.grad(scaled_by_global)
    np.testing.assert_allclose(g(X), [2.0] * 3)
    SCALE = 5.0
    try:
        np.testing.assert_allclose(g(X), [5.0] * 3)
    finally:
        SCALE = 2.0


def test_a_rebound_closure_variable_is_seen_by_the_next_call():
    k = 2.0

    def f(a):
        return (a * k).sum()
    g = tg.grad(f)
    np.testing.assert_allclose(g(X), [2.0] * 3)
    k = 3.0
    np.testing.assert_allclose(g(X), [3.0] * 3)


class Unhashable:
    def __init__(self, w):
        self.w = w

    __hash__ = None


def test_unhashable_static_arguments_are_never_confused():
    g = tg.grad(lambda x, p: (x * p.w).sum())
    for k in range(60):
        np.testing.assert_array_equal(g(np.ones(3), Unhashable(np.full(3, float(k)))), np.full(3, float(k)))


def _cube():
    @tg.custom_vjp
    def cube(x):
        return x ** 3
    cube.defvjp(lambda x: (x ** 3, x), lambda r, g: (3 * r ** 2 * g,))
    return cube


def test_a_custom_rule_gives_first_derivatives_and_refuses_second_ones():
    cube = _cube()
    np.testing.assert_allclose(tg.grad(lambda a: cube(a).sum())(X), 3 * X ** 2)
    with pytest.raises(NotImplementedError, match="second derivative through the custom rule 'cube'"):
        tg.hessian(lambda a: cube(a).sum())(X)
    with pytest.raises(NotImplementedError, match="forward mode"):
        tg.jvp(cube, (X,), (np.ones(3),))


@pytest.mark.parametrize("mode", ["tape", "ast", "auto", "eager"])
def test_a_custom_rule_may_answer_none_for_a_zero_cotangent(mode):
    """JAX's convention: ``bwd`` returns None for an argument with no gradient."""
    @tg.custom_vjp
    def scaled(x, s):
        return x * s
    scaled.defvjp(lambda x, s: (x * s, s), lambda s, g: (g * s, None))
    s = 1.5 if mode != "eager" else np.float64(1.5)
    if mode == "eager":
        x, t = tg.tensor(X, requires_grad=True), tg.tensor(2.0, requires_grad=True)
        (scaled(x, t) ** 2).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), 2 * X * 2.0 ** 2)
        assert t.grad is None or float(t.grad) == 0.0
        return
    gx, gs = tg.grad(lambda a, b: _square_sum(scaled(a, b)), argnums=(0, 1), mode=mode)(X, s)
    np.testing.assert_allclose(gx, 2 * X * s ** 2)
    assert gs == 0.0 and isinstance(gs, float)


def _square_sum(y):
    return (y ** 2).sum()


def test_auxiliary_arrays_are_handed_out_as_copies():
    g = tg.grad(lambda x: ((x ** 2).sum(), np.zeros(2)), has_aux=True)
    for _ in range(2):
        _, aux = g(X)
        np.testing.assert_array_equal(aux, [0.0, 0.0])
        aux[0] = 99.0


def test_item_with_an_index_is_guarded_and_replayed():
    g = tg.grad(lambda x: (x ** 2).sum() if tg.stop_gradient(x).item(0) > 0 else (x ** 3).sum())
    np.testing.assert_allclose(g(X), 2 * X)
    np.testing.assert_allclose(g(2 * X), 4 * X)
    np.testing.assert_allclose(g(-X), 3 * X ** 2)


def test_threads_share_one_cache():
    g = tg.grad(lambda x: (x * x).sum())
    errors = []

    def work(seed):
        try:
            for n in range(1, 60):
                x = np.full(n % 40 + 1, float(seed))
                np.testing.assert_allclose(g(x), 2 * x)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)
    threads = [threading.Thread(target=work, args=(s,)) for s in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


@pytest.mark.parametrize("fn", [
    lambda a: np.average(np.outer(a, a), axis=0, weights=np.array([1.0, 2.0, 3.0])).sum(),
    lambda a: np.flip(a, axis=()) @ np.array([1.0, 2.0, 3.0]),
    lambda a: np.array_split(a, 2)[0].sum() * 2 + np.array_split(a, 2)[1].sum(),
    lambda a: float(np.argmax(a, keepdims=True).shape[0]) * a.sum(),
], ids=["average_weights_axis", "flip_no_axes", "array_split_unequal", "argmax_keepdims"])
def test_numpy_calls_mean_what_numpy_means(fn):
    value, _ = tg.value_and_grad(fn)(X)
    np.testing.assert_allclose(value, fn(X))


@pytest.mark.parametrize("fn", [
    lambda a: np.sum(a ** 2, initial=5.0),
    lambda a: np.std(a, where=a > 0),
], ids=["sum_initial", "std_where"])
def test_numpy_options_the_tape_does_not_follow_raise(fn):
    with pytest.raises(tg.TracerError, match="cannot be traced"):
        tg.grad(fn)(X)


BIG = np.ones(100_000)


def uses_a_big_global(a):
    return a.sum() * BIG.sum() + (a * BIG[:3]).sum()


def test_a_big_global_changed_in_place_is_seen_even_where_no_traced_value_meets_it():
    """``BIG.sum()`` is computed while tracing (no tracer in it): the next call must not
    replay the old sum after ``BIG`` changed in place."""
    g = tg.grad(uses_a_big_global)
    try:
        np.testing.assert_allclose(g(X), [100_001.0] * 3)
        BIG[:] = 2.0
        np.testing.assert_allclose(g(X), [200_002.0] * 3)
    finally:
        BIG[:] = 1.0


def _scaled_square(a, k):
    return (SCALE * k * a * a).sum()


def test_a_partials_function_globals_are_watched():
    import functools
    global SCALE
    g = tg.grad(functools.partial(_scaled_square, k=1.0))
    np.testing.assert_allclose(g(X), 2 * 2.0 * X)
    SCALE = 5.0
    try:
        np.testing.assert_allclose(g(X), 2 * 5.0 * X)
    finally:
        SCALE = 2.0


def test_a_helper_reached_through_a_module_is_watched(tmp_path, monkeypatch):
    (tmp_path / "helpers_mod.py").write_text("import numpy as np\nSCALE = 2.0\n"
                                             "def g(x):\n    return SCALE * np.sum(x * x)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import importlib
    hm = importlib.import_module("helpers_mod")

    def f(a):
        return hm.g(a) + a.sum()
    for mode in ("tape", "ast", "auto"):
        hm.SCALE = 2.0
        g = tg.grad(f, mode=mode)
        np.testing.assert_allclose(g(X), 4.0 * X + 1.0)
        hm.SCALE = 5.0
        np.testing.assert_allclose(g(X), 10.0 * X + 1.0)


class _Config:
    def __init__(self):
        self.scale = 2.0


CFG = _Config()
WEIGHTS = [np.ones(3)]


def reads_an_attribute_and_an_item(a):
    return (a * a).sum() * CFG.scale + (a * WEIGHTS[0]).sum()


def test_state_one_level_down_from_a_global_is_watched():
    """cfg.scale = 5.0 and weights[0] = new: a replay would use the old ones."""
    g = tg.grad(reads_an_attribute_and_an_item)
    np.testing.assert_allclose(g(X), 4.0 * X + 1.0)
    try:
        CFG.scale = 5.0
        np.testing.assert_allclose(g(X), 10.0 * X + 1.0)
        WEIGHTS[0] = np.full(3, 3.0)
        np.testing.assert_allclose(g(X), 10.0 * X + 3.0)
    finally:
        CFG.scale, WEIGHTS[0] = 2.0, np.ones(3)
