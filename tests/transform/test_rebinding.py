"""What a staged gradient reads besides its arguments, changed between calls: each call
must differentiate the function as it is then. The tape replays a trace only while the
objects it read (and their contents, a few levels down) are the same; the AST path writes
code again when a function it calls is rebound. Expected values are hand formulas."""
import sys
import textwrap

import numpy as np
import pytest

import tracegrad as tg

X = np.array([0.3, 0.5, 0.7])
MODES = ("tape", "ast", "auto")


class Cfg:
    scale = 2.0


class Inner:
    def __init__(self):
        self.k = 2.0


class Outer:
    def __init__(self):
        self.inner = Inner()


OBJ = Outer()
NEST = [[2.0]]


def by_class_attribute(x):
    return np.sum(x ** 2) * Cfg.scale


def two_levels_down(x):
    return np.sum(x ** 2) * OBJ.inner.k


def nested_list(x):
    return np.sum(x ** 2) * NEST[0][0]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("f", [by_class_attribute, two_levels_down, nested_list], ids=lambda f: f.__name__)
def test_state_below_a_global_changed_between_calls(f, mode):
    g = tg.grad(f, mode=mode)
    np.testing.assert_allclose(g(X), 4 * X)
    Cfg.scale, OBJ.inner.k, NEST[0][0] = 5.0, 5.0, 5.0
    try:
        np.testing.assert_allclose(g(X), 10 * X)  # (the tape once replayed the old trace)
    finally:
        Cfg.scale, OBJ.inner.k, NEST[0][0] = 2.0, 2.0, 2.0


class Model:
    def __init__(self):
        self.k = 2.0

    def loss(self, x):
        return np.sum(x ** self.k)


@pytest.mark.parametrize("mode", MODES)
def test_a_bound_method_whose_object_changes(mode):
    m = Model()
    g = tg.grad(m.loss, mode=mode)
    np.testing.assert_allclose(g(X), 2 * X)
    m.k = 3.0
    np.testing.assert_allclose(g(X), 3 * X ** 2)
    m2 = Model()
    h = tg.grad(Model.loss, argnums=1, mode=mode)
    np.testing.assert_allclose(h(m2, X), 2 * X)
    m2.k = 3.0
    np.testing.assert_allclose(h(m2, X), 3 * X ** 2)


def sq(z):
    return z ** 2


def cube(z):
    return z ** 3


def sums_a_helper(x):
    return np.sum(sq(x))


@pytest.mark.parametrize("mode", MODES)
def test_a_global_helper_rebound_between_calls(mode):
    global sq
    g = tg.grad(sums_a_helper, mode=mode)
    np.testing.assert_allclose(g(X), 2 * X)
    square = sq
    sq = cube
    try:
        np.testing.assert_allclose(g(X), 3 * X ** 2)     # (AST mode kept the old adjoint)
        np.testing.assert_allclose(tg.grad(sums_a_helper, mode=mode)(X), 3 * X ** 2)
        np.testing.assert_allclose(tg.hessian(sums_a_helper, mode=mode)(X), np.diag(6 * X))
    finally:
        sq = square
    np.testing.assert_allclose(g(X), 2 * X)


helpers = None  # (a module of the user's, imported by the test below)


def calls_into_a_module(x):
    return np.sum(helpers.helper(x))


def test_a_module_attribute_rebound_between_calls(tmp_path, monkeypatch):
    global helpers
    (tmp_path / "tg_rebinding_helpers.py").write_text(textwrap.dedent("""
        import numpy as np
        def helper(x):
            return np.sin(x) * x ** 2
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    import tg_rebinding_helpers
    helpers = tg_rebinding_helpers
    try:
        for mode in MODES:
            g = tg.grad(calls_into_a_module, mode=mode)
            np.testing.assert_allclose(g(X), np.cos(X) * X ** 2 + 2 * X * np.sin(X))
            original, helpers.helper = helpers.helper, cube
            try:
                np.testing.assert_allclose(g(X), 3 * X ** 2)   # (AST mode kept the old adjoint)
            finally:
                helpers.helper = original
    finally:
        helpers = None
        sys.modules.pop("tg_rebinding_helpers", None)


def max_of_a_list(x):
    return np.sum(x) * max(x.tolist())


def test_tolist_of_a_differentiated_value_is_refused_on_the_tape():
    # NumPy's tolist() makes Python numbers: no derivative (the tape once let it through,
    # silently dropping max's), as float() and .item() are refused
    with pytest.raises(tg.TracerError, match=r"\.tolist\(\) of a value being differentiated"):
        tg.grad(max_of_a_list, mode="tape")(X)
    with pytest.raises(tg.TransformError):
        tg.grad(max_of_a_list, mode="ast")(X)


class Slotted:
    __slots__ = ("k",)

    def __init__(self):
        self.k = 2.0


class WithClassScale:
    scale = 2.0


SLOTTED, INSTANCE = Slotted(), WithClassScale()
K = 2.0


def times_k(x):
    return np.sum(x ** 2) * K


OPS = {"f": times_k}


class Static:
    h = staticmethod(times_k)


def by_slots(x):
    return np.sum(x ** 2) * SLOTTED.k


def by_instance_reading_its_class(x):
    return np.sum(x ** 2) * INSTANCE.scale


def through_a_dict_of_functions(x):
    return OPS["f"](x)


def through_a_static_method(x):
    return Static.h(x)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("f", [by_slots, by_instance_reading_its_class, through_a_dict_of_functions,
                               through_a_static_method], ids=lambda f: f.__name__)
def test_more_state_changed_between_calls(f, mode):
    global K
    g = tg.grad(f, mode=mode)
    np.testing.assert_allclose(g(X), 4 * X)
    SLOTTED.k, WithClassScale.scale, K = 5.0, 5.0, 5.0
    try:
        np.testing.assert_allclose(g(X), 10 * X)   # (AST mode once mixed old and new K: 7x)
    finally:
        SLOTTED.k, WithClassScale.scale, K = 2.0, 2.0, 2.0


def through_a_rebound_static_method(x):
    return np.sum(Static.h(x))


@pytest.mark.parametrize("mode", MODES)
def test_a_static_method_rebound(mode):
    g = tg.value_and_grad(through_a_rebound_static_method, mode=mode)
    Static.h = staticmethod(sq)
    try:
        np.testing.assert_allclose(g(X)[1], 2 * X)
        Static.h = staticmethod(cube)
        value, grad = g(X)
        np.testing.assert_allclose(value, np.sum(X ** 3))
        np.testing.assert_allclose(grad, 3 * X ** 2)
    finally:
        Static.h = staticmethod(times_k)


@pytest.mark.parametrize("mode", MODES)
def test_a_dataclass_argument_changed_between_calls(mode):
    import dataclasses

    @dataclasses.dataclass
    class Params:
        k: float = 2.0
    p = Params()
    g = tg.grad(_loss_of_params, argnums=1, mode=mode)
    np.testing.assert_allclose(g(p, X), 2 * X)
    p.k = 3.0
    np.testing.assert_allclose(g(p, X), 3 * X ** 2)


def _loss_of_params(p, x):
    return np.sum(x ** p.k)
