"""Grad modes: no_grad, enable_grad, set_grad_enabled, inference_mode; thread-locality."""
import threading

import numpy as np
import pytest

from ._helpers import LIB, tg

INFERENCE_SAVE = "Inference tensors cannot be saved for backward"
INFERENCE_INPLACE = "Inplace update to inference tensor outside InferenceMode is not allowed"


@pytest.fixture(autouse=True)
def _grad_mode_restored():
    tg.set_grad_enabled(True)
    yield
    leaked = not tg.is_grad_enabled()
    tg.set_grad_enabled(True)
    assert not leaked, "this test left grad mode disabled"


def _leaf():
    return tg.tensor([1.0, 2.0], requires_grad=True)


# ------------------------------------------------------------------------------ context managers


def test_no_grad_context():
    x = _leaf()
    with tg.no_grad():
        assert not tg.is_grad_enabled()
        y = x * 2
        assert not y.requires_grad and y.grad_fn is None and y.is_leaf
        assert x.requires_grad
    assert tg.is_grad_enabled()
    assert (x * 2).requires_grad


def test_no_grad_restores_on_exception():
    with pytest.raises(ValueError):
        with tg.no_grad():
            raise ValueError("boom")
    assert tg.is_grad_enabled()


def test_enable_grad_inside_no_grad():
    x = _leaf()
    with tg.no_grad():
        with tg.enable_grad():
            assert tg.is_grad_enabled()
            y = x * 2
        assert not tg.is_grad_enabled()
        z = x * 2
    assert y.requires_grad and y.grad_fn is not None
    assert not z.requires_grad


def test_nested_no_grad_and_enable_grad():
    with tg.no_grad():
        with tg.no_grad():
            assert not tg.is_grad_enabled()
        assert not tg.is_grad_enabled()
        with tg.enable_grad():
            with tg.no_grad():
                assert not tg.is_grad_enabled()
            assert tg.is_grad_enabled()
        assert not tg.is_grad_enabled()
    assert tg.is_grad_enabled()


def test_set_grad_enabled_as_function_and_context():
    x = _leaf()
    tg.set_grad_enabled(False)
    try:
        assert not tg.is_grad_enabled()
        assert not (x * 2).requires_grad
    finally:
        tg.set_grad_enabled(True)
    assert tg.is_grad_enabled()
    with tg.set_grad_enabled(False):
        assert not tg.is_grad_enabled()
        with tg.set_grad_enabled(True):
            assert tg.is_grad_enabled()
            assert (x * 2).requires_grad
        assert not tg.is_grad_enabled()
    assert tg.is_grad_enabled()


def test_set_grad_enabled_rejects_non_bool():
    with pytest.raises(TypeError):
        tg.set_grad_enabled(1)
    assert tg.is_grad_enabled()


def test_no_grad_context_object_is_reusable():
    ctx = tg.no_grad()
    for _ in range(2):
        with ctx:
            assert not tg.is_grad_enabled()
        assert tg.is_grad_enabled()


# ------------------------------------------------------------------------------ decorators


def test_no_grad_decorator_with_and_without_parentheses():
    x = _leaf()

    @tg.no_grad()
    def f(a):
        assert not tg.is_grad_enabled()
        return a * 2

    @tg.no_grad
    def g(a):
        return a * 3

    assert not f(x).requires_grad
    assert not g(x).requires_grad
    assert f.__name__ == "f" and g.__name__ == "g"
    assert tg.is_grad_enabled()


def test_enable_grad_decorator():
    x = _leaf()

    @tg.enable_grad()
    def f(a):
        return a * 2

    with tg.no_grad():
        y = f(x)
        assert not tg.is_grad_enabled()
    assert y.requires_grad


def test_set_grad_enabled_decorator():
    x = _leaf()

    @tg.set_grad_enabled(False)
    def f(a):
        return a * 2

    assert tg.is_grad_enabled()
    assert not f(x).requires_grad
    assert tg.is_grad_enabled()


def test_decorator_restores_mode_on_exception():
    @tg.no_grad()
    def boom():
        raise KeyError("x")

    with pytest.raises(KeyError):
        boom()
    assert tg.is_grad_enabled()


def test_no_grad_on_generator_applies_to_each_step_only():
    x = _leaf()

    @tg.no_grad()
    def gen():
        yield tg.is_grad_enabled(), x * 2
        yield tg.is_grad_enabled(), x * 3

    it = gen()
    enabled, a = next(it)
    assert not enabled and not a.requires_grad
    assert tg.is_grad_enabled()  # the caller between steps is unaffected
    y = x * 4
    assert y.requires_grad
    with tg.no_grad():
        pass
    enabled, b = next(it)
    assert not enabled and not b.requires_grad
    with pytest.raises(StopIteration):
        next(it)
    assert tg.is_grad_enabled()


def test_enable_grad_on_generator_called_under_no_grad():
    x = _leaf()

    @tg.enable_grad()
    def gen():
        yield x * 2

    with tg.no_grad():
        it = gen()
        y = next(it)
        assert not tg.is_grad_enabled()
    assert y.requires_grad


def test_generator_send_and_return_value():
    @tg.no_grad()
    def gen():
        got = yield 1
        yield got * 10
        return "done"

    it = gen()
    assert next(it) == 1
    assert it.send(4) == 40
    with pytest.raises(StopIteration) as info:
        next(it)
    assert info.value.value == "done"


def test_inference_mode_decorator_forms():
    x = _leaf()

    @tg.inference_mode()
    def f(a):
        return a * 2

    @tg.inference_mode
    def g(a):
        return a * 2

    @tg.inference_mode(False)
    def h(a):
        return a * 2

    for fn in (f, g):
        r = fn(x)
        assert not r.requires_grad and r.is_inference()
    r = h(x)
    assert r.requires_grad and not r.is_inference()


# ------------------------------------------------------------------------------ threads


def test_grad_mode_is_thread_local():
    x = _leaf()
    entered = threading.Event()
    release = threading.Event()
    seen = {}

    def worker():
        with tg.no_grad():
            seen["worker_enabled"] = tg.is_grad_enabled()
            entered.set()
            release.wait(5)
            seen["worker_requires_grad"] = (x * 2).requires_grad

    t = threading.Thread(target=worker)
    t.start()
    assert entered.wait(5)
    try:
        assert tg.is_grad_enabled()
        assert (x * 2).requires_grad
    finally:
        release.set()
        t.join(5)
    assert seen == {"worker_enabled": False, "worker_requires_grad": False}


def test_new_thread_starts_with_grad_enabled():
    x = _leaf()
    seen = {}

    def worker():
        seen["enabled"] = tg.is_grad_enabled()
        seen["requires_grad"] = (x * 2).requires_grad

    with tg.no_grad():
        t = threading.Thread(target=worker)
        t.start()
        t.join(5)
        assert not tg.is_grad_enabled()
    assert seen == {"enabled": True, "requires_grad": True}


def test_inference_mode_is_thread_local():
    seen = {}
    entered = threading.Event()
    release = threading.Event()

    def worker():
        with tg.inference_mode():
            entered.set()
            release.wait(5)
            seen["worker"] = tg.is_inference_mode_enabled()

    t = threading.Thread(target=worker)
    t.start()
    assert entered.wait(5)
    try:
        assert not tg.is_inference_mode_enabled()
        assert not tg.ones(1).is_inference()
    finally:
        release.set()
        t.join(5)
    assert seen == {"worker": True}


def test_backward_in_threads_concurrently():
    results = [None] * 4

    def worker(k):
        x = tg.tensor([float(k)], requires_grad=True)
        for _ in range(50):
            x.grad = None
            (x * x * k).sum().backward()
        results[k] = x.grad.item()

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert results == [2.0 * k * k for k in range(4)]


# ------------------------------------------------------------------------------ inference mode


def test_inference_mode_basics():
    x = _leaf()
    assert not tg.is_inference_mode_enabled()
    with tg.inference_mode():
        assert tg.is_inference_mode_enabled()
        assert not tg.is_grad_enabled()
        y = x * 2
        z = tg.ones(2)
        assert not y.requires_grad and y.is_inference() and z.is_inference()
    assert not tg.is_inference_mode_enabled()
    assert not x.is_inference()
    assert not (x * 2).is_inference()


def test_inference_mode_false_is_normal_mode():
    with tg.inference_mode(False):
        assert not tg.is_inference_mode_enabled()
        assert tg.is_grad_enabled()
        assert not tg.ones(1).is_inference()


def test_inference_tensor_cannot_be_saved_for_backward():
    x = _leaf()
    with tg.inference_mode():
        it = tg.ones(2)
    with pytest.raises(RuntimeError, match=INFERENCE_SAVE):
        (it * x).sum().backward()
    with pytest.raises(RuntimeError, match="make a clone to get a normal tensor and use it in autograd"):
        x * it
    # an operation that does not save the inference tensor is allowed
    (it + x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [1.0, 1.0])
    # a clone is a normal tensor
    c = it.clone()
    assert not c.is_inference()
    (c * x).sum().backward()


def test_inference_tensor_inplace_outside_inference_mode():
    with tg.inference_mode():
        it = tg.ones(3)
        view = it[1:]
    with pytest.raises(RuntimeError, match=INFERENCE_INPLACE):
        it.add_(1)
    with pytest.raises(RuntimeError, match=INFERENCE_INPLACE):
        view.mul_(2)
    with pytest.raises(RuntimeError, match=INFERENCE_INPLACE):
        it[0] = 5.0
    # DESIGN.md: no state is half-changed by a refused operation (PyTorch itself writes, then
    # raises, so this one expectation is tracegrad's contract, not PyTorch's behaviour)
    if LIB == "tracegrad":
        assert it.tolist() == [1.0, 1.0, 1.0]
    with tg.inference_mode():
        it.fill_(1.0)
        it.add_(1)
    assert it.tolist() == [2.0, 2.0, 2.0]
    c = it.clone()
    c.add_(1)
    assert c.tolist() == [3.0, 3.0, 3.0]


def test_inference_mode_inside_no_grad_and_inplace_on_normal_tensor():
    n = tg.ones(2)
    with tg.no_grad():
        with tg.inference_mode():
            assert tg.is_inference_mode_enabled()
            n.add_(1)
        assert not tg.is_inference_mode_enabled()
        assert not tg.is_grad_enabled()
    assert not n.is_inference() and n._version == 1


def test_inference_mode_views_are_inference_tensors():
    with tg.inference_mode():
        w = tg.ones(3)
        v = w[1:]
        assert v.is_inference()
    # a view of an inference tensor is one even when made outside inference mode
    outside = w[:2]
    assert outside.is_inference()
    assert w.view(3, 1).is_inference()
    assert not (w * 2).is_inference()


# ------------------------------------------------------------------------------ oracle


@pytest.mark.torch
def test_oracle_nested_modes():
    torch = pytest.importorskip("torch")

    def prog(L):
        x = L.ones(2, requires_grad=True)
        out = []
        with L.no_grad():
            out.append((L.is_grad_enabled(), (x * 2).requires_grad))
            with L.enable_grad():
                out.append((L.is_grad_enabled(), (x * 2).requires_grad))
                with L.set_grad_enabled(False):
                    out.append((L.is_grad_enabled(), (x * 2).requires_grad))
                out.append(L.is_grad_enabled())
            out.append(L.is_grad_enabled())
        with L.inference_mode():
            with L.no_grad():
                out.append((L.is_inference_mode_enabled(), L.is_grad_enabled()))
            with L.inference_mode(False):
                out.append((L.is_inference_mode_enabled(), L.ones(1).is_inference()))
            out.append((L.is_inference_mode_enabled(), (x * 2).is_inference()))
        out.append((L.is_grad_enabled(), L.is_inference_mode_enabled()))
        return out
    assert prog(tg) == prog(torch)


@pytest.mark.torch
def test_oracle_enable_grad_inside_inference_mode():
    torch = pytest.importorskip("torch")

    def prog(L):
        x = L.ones(2, requires_grad=True)
        with L.inference_mode():
            with L.enable_grad():
                y = x * 2
                return (L.is_grad_enabled(), L.is_inference_mode_enabled(), y.requires_grad, y.is_inference())
    assert prog(tg) == prog(torch)


@pytest.mark.torch
def test_oracle_inference_error_messages():
    torch = pytest.importorskip("torch")
    from ._helpers import raises_like

    def progs(L):
        with L.inference_mode():
            it = L.ones(2)
        x = L.ones(2, requires_grad=True)
        return (lambda: (it * x).sum().backward(), lambda: it.add_(1), lambda: it[1:].mul_(3))
    for mine_p, their_p in zip(progs(tg), progs(torch)):
        mine, theirs = raises_like(mine_p, their_p)
        assert type(mine) is type(theirs) is RuntimeError
        assert str(mine).replace("tracegrad", "torch") == str(theirs)


def test_the_grad_mode_and_variable_modules_are_importable_as_in_pytorch():
    from tracegrad.autograd.grad_mode import enable_grad, inference_mode, no_grad, set_grad_enabled
    from tracegrad.autograd.variable import Variable
    assert no_grad is tg.no_grad and enable_grad is tg.enable_grad
    assert set_grad_enabled is tg.set_grad_enabled and inference_mode is tg.inference_mode
    assert Variable is tg.autograd.Variable
    x = tg.ones(2, requires_grad=True)
    with tg.autograd.set_multithreading_enabled(False):  # (accepted: nothing to switch)
        (x * 2).sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]
