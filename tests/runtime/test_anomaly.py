"""Anomaly detection: ``autograd.detect_anomaly(check_nan=True)``, ``set_detect_anomaly``.

Pinned down (PyTorch's behaviour, checked against real torch by the oracle tests):
- an error raised in backward is preceded by a UserWarning "Error detected in <Node>.
  Traceback of forward call that caused the error:" whose traceback ends at the user's
  forward line (tracegrad leaves its own frames out);
- with ``check_nan`` a node whose gradients contain NaN raises
  ``Function '<Node>' returned nan values in its <i>th output.``; without it, or without
  anomaly mode, NaN passes silently;
- the setting is process-wide and is restored when a context exits, even on error;
- the in-place error's hint names the call that switches detection on, and under
  anomaly mode points at the traceback instead.
"""
import inspect
import os
import re
import threading
import warnings

import numpy as np
import pytest

from ._helpers import LIB, npy, tg

TRACE_HEADER = "Traceback of forward call that caused the error"
ENABLED_WARNING = ("Anomaly Detection has been enabled. This mode will increase the runtime and should "
                   "only be enabled for debugging.")
NO_FORWARD_INFO = ("No forward pass information available. Enable detect anomaly during forward pass "
                   "for more information.")
ANOMALY_HINT = ("Hint: the backtrace further above shows the operation that failed to compute its "
                "gradient. The variable in question was changed in there or anywhere later. Good luck!")
PACKAGE_DIR = os.path.dirname(os.path.abspath(tg.__file__))
TRIGGERED = re.compile(r" \(Triggered internally at [^)]*\)$")
FRAME = re.compile(r'File "([^"]+)", line (\d+), in (\S+)')


def _is_enabled(lib=None):
    lib = lib or tg
    fn = getattr(lib, "is_anomaly_enabled", None) or lib.autograd.is_anomaly_enabled
    return fn()


def _check_nan(lib=None):
    lib = lib or tg
    fn = getattr(lib, "is_anomaly_check_nan_enabled", None) or lib.autograd.is_anomaly_check_nan_enabled
    return fn()


@pytest.fixture(autouse=True)
def _anomaly_mode_restored():
    """Every test starts with detection off (check_nan on) and must leave it that way."""
    tg.autograd.set_detect_anomaly(False)
    yield
    leaked = (_is_enabled(), _check_nan())
    tg.autograd.set_detect_anomaly(False)
    assert leaked == (False, True), f"this test left anomaly mode at {leaked}"


def _here():
    """The caller's current line number (written on the same line as the forward call)."""
    return inspect.currentframe().f_back.f_lineno


def _watch(fn):
    """Run ``fn``; (the exception it raised or None, texts of the 'Error detected' warnings,
    without the " (Triggered internally at <C++ file>)" PyTorch appends)."""
    exc = None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            fn()
        except Exception as e:  # noqa: BLE001 - returned to the test
            exc = e
    return exc, [TRIGGERED.sub("", str(w.message)) for w in caught
                 if issubclass(w.category, UserWarning) and "Error detected in" in str(w.message)]


def _frames(text):
    """[(filename, line, function)] of the traceback in a warning's text."""
    return [(f, int(n), fn) for f, n, fn in FRAME.findall(text)]


def _assert_forward_trace(text, node, line, function):
    """``text`` is the warning for ``node``, and its traceback goes through this file at the
    forward ``line`` (the last frame of this file), never through tracegrad's own code."""
    assert text.startswith(f"Error detected in {node}. {TRACE_HEADER}:"), text
    mine = [fr for fr in _frames(text) if fr[0] == __file__]
    assert mine and mine[-1] == (__file__, line, function), text
    source = inspect.getsourcelines(inspect.getmodule(_here))[0][line - 1].strip()
    assert source in text
    if LIB == "tracegrad":  # PyTorch's traceback shows its own Function.apply frame too
        assert all(not f.startswith(PACKAGE_DIR) for f, _, _ in _frames(text)), text


def _leaf(values, lib=None, requires_grad=True):
    lib = lib or tg
    return lib.tensor(np.asarray(values, dtype=np.float64), requires_grad=requires_grad)


def _boom_function(lib):
    class Boom(lib.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return a * 2

        @staticmethod
        def backward(ctx, g):
            raise ValueError("boom in backward")
    return Boom


# ----------------------------------------------------------------------------- the context manager


def test_detect_anomaly_warns_when_entered_and_sets_the_flags():
    """Entering detect_anomaly warns that it is slow (attributed to the user's line) and
    turns detection on, with check_nan as given; leaving restores the previous state."""
    assert (_is_enabled(), _check_nan()) == (False, True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with tg.autograd.detect_anomaly():
            inside = (_is_enabled(), _check_nan())
        with tg.autograd.detect_anomaly(check_nan=False):
            inside_no_nan = (_is_enabled(), _check_nan())
    assert inside == (True, True) and inside_no_nan == (True, False)
    assert (_is_enabled(), _check_nan()) == (False, True)
    enabled = [w for w in caught if str(w.message) == ENABLED_WARNING]
    assert len(enabled) == 2 and all(w.category is UserWarning for w in enabled)
    assert all(w.filename == __file__ for w in enabled)


def test_flags_are_restored_when_the_block_raises():
    with pytest.raises(KeyError), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with tg.autograd.detect_anomaly(check_nan=False):
            raise KeyError("inside")
    assert (_is_enabled(), _check_nan()) == (False, True)
    with pytest.raises(KeyError), tg.autograd.set_detect_anomaly(True, check_nan=False):
        raise KeyError("inside")
    assert (_is_enabled(), _check_nan()) == (False, True)


def test_nested_contexts_restore_the_outer_setting():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with tg.autograd.detect_anomaly():
            with tg.autograd.detect_anomaly(check_nan=False):
                assert (_is_enabled(), _check_nan()) == (True, False)
            assert (_is_enabled(), _check_nan()) == (True, True)
            with tg.autograd.set_detect_anomaly(False):
                assert not _is_enabled()
            assert _is_enabled()
    assert not _is_enabled()


def test_set_detect_anomaly_as_a_function_switches_at_once_without_warning():
    """``set_detect_anomaly(mode)`` takes effect when called (no ``with`` needed) and,
    unlike detect_anomaly, does not warn."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tg.autograd.set_detect_anomaly(True)
        assert (_is_enabled(), _check_nan()) == (True, True)
        tg.autograd.set_detect_anomaly(True, check_nan=False)
        assert (_is_enabled(), _check_nan()) == (True, False)
        tg.autograd.set_detect_anomaly(False)
        assert (_is_enabled(), _check_nan()) == (False, True)
    assert not [w for w in caught if "Anomaly" in str(w.message)]


def test_set_detect_anomaly_false_inside_detect_anomaly_lets_nan_through():
    x = _leaf([0.0, 1.0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with tg.autograd.detect_anomaly():
            y = (x.sqrt() * 0).sum()
            with tg.autograd.set_detect_anomaly(False):
                y.backward()
            assert _is_enabled()
    g = npy(x.grad)
    assert np.isnan(g[0]) and g[1] == 0.0


def test_setting_is_process_wide():
    """As in PyTorch, anomaly mode is one global switch, seen by every thread."""
    seen = []
    with tg.autograd.set_detect_anomaly(True):
        t = threading.Thread(target=lambda: seen.append(_is_enabled()))
        t.start()
        t.join()
    assert seen == [True]


def test_top_level_query_functions():
    """PyTorch has ``torch.is_anomaly_enabled()`` and ``torch.is_anomaly_check_nan_enabled()``
    at the top level, which is where user code calls them."""
    assert tg.is_anomaly_enabled() is False
    assert tg.is_anomaly_check_nan_enabled() is True
    with tg.autograd.set_detect_anomaly(True, check_nan=False):
        assert tg.is_anomaly_enabled() is True
        assert tg.is_anomaly_check_nan_enabled() is False


@pytest.mark.skipif(LIB == "torch", reason="a tracegrad extension: torch's detect_anomaly is no decorator")
def test_detect_anomaly_as_a_decorator():
    """``@detect_anomaly()`` runs each call of the function in anomaly mode and restores
    the setting after it returns or raises."""
    @tg.autograd.detect_anomaly(check_nan=False)
    def probe(fail=False):
        if fail:
            raise KeyError("fail")
        return _is_enabled(), _check_nan()

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert probe() == (True, False)
        assert not _is_enabled()
        with pytest.raises(KeyError):
            probe(fail=True)
    assert (_is_enabled(), _check_nan()) == (False, True)


@pytest.mark.skipif(LIB == "torch", reason="a tracegrad extension: torch's detect_anomaly is no decorator")
def test_detect_anomaly_decorator_keeps_the_function_name():
    """Like no_grad's decorator, detect_anomaly's keeps ``__name__`` and ``__doc__``."""
    @tg.autograd.detect_anomaly()
    def train_step():
        """One step."""

    assert train_step.__name__ == "train_step"
    assert train_step.__doc__ == "One step."


# ----------------------------------------------------------------------------- errors in backward


def test_error_in_custom_backward_is_preceded_by_the_forward_traceback():
    """The warning names the node and shows the user's forward line; the error itself
    propagates unchanged."""
    boom = _boom_function(tg)
    x = _leaf([1.0, 2.0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with tg.autograd.detect_anomaly():
            y, line = boom.apply(x), _here()

            exc, texts = _watch(lambda: y.sum().backward())
    assert isinstance(exc, ValueError) and str(exc) == "boom in backward"
    assert len(texts) == 1
    _assert_forward_trace(texts[0], "BoomBackward", line,
                          "test_error_in_custom_backward_is_preceded_by_the_forward_traceback")


def test_in_place_modification_of_a_saved_tensor_under_anomaly_mode():
    """The version error is preceded by the traceback of the forward that saved the
    tensor (exp saves its result), and its hint points at that traceback."""
    x = _leaf([1.0, 2.0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with tg.autograd.detect_anomaly():
            a, line = x.exp(), _here()
            b = a * 2
            a.mul_(3)
            exc, texts = _watch(lambda: b.sum().backward())
    assert isinstance(exc, RuntimeError)
    assert str(exc).startswith("one of the variables needed for gradient computation has been modified by an "
                               f"inplace operation: [{LIB}.DoubleTensor [2]], which is output 0 of Exp, is at "
                               "version 1; expected version 0 instead.")
    assert len(texts) == 1
    _assert_forward_trace(texts[0], "ExpBackward0", line,
                          "test_in_place_modification_of_a_saved_tensor_under_anomaly_mode")
    assert str(exc).endswith(ANOMALY_HINT)


def test_in_place_error_hint_without_anomaly_mode():
    """Outside anomaly mode the hint says how to switch it on, naming the function in the
    library the user imported (``tracegrad.autograd.set_detect_anomaly(True...)``), a call
    that really exists there; no forward traceback is shown."""
    x = _leaf([1.0, 2.0])
    a = x * 1
    y = a.sin()
    a.add_(1)
    exc, texts = _watch(lambda: y.sum().backward())
    assert isinstance(exc, RuntimeError)
    hint = (f"Hint: enable anomaly detection to find the operation that failed to compute its gradient, "
            f"with {LIB}.autograd.set_detect_anomaly(True")
    message = str(exc)
    assert hint in message and message.endswith(").")
    assert callable(tg.autograd.set_detect_anomaly)
    assert texts == []


def test_error_when_forward_ran_outside_anomaly_mode():
    """Backward in anomaly mode over a graph recorded without it: PyTorch still warns,
    saying no forward information is available."""
    x = _leaf([0.0, 1.0])
    y = (x.sqrt() * 0).sum()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with tg.autograd.detect_anomaly():
            exc, texts = _watch(y.backward)
    assert isinstance(exc, RuntimeError)
    assert str(exc) == "Function 'SqrtBackward0' returned nan values in its 0th output."
    assert texts == [f"Error detected in SqrtBackward0. {NO_FORWARD_INFO}"]


def test_no_warning_and_no_check_without_anomaly_mode():
    """Without anomaly mode a backward error comes alone, and NaN is not checked."""
    x = _leaf([0.0, 1.0])
    y = (x.sqrt() * 0).sum()
    exc, texts = _watch(y.backward)
    assert exc is None and texts == []
    g = npy(x.grad)
    assert np.isnan(g[0]) and g[1] == 0.0

    z = _boom_function(tg).apply(_leaf([1.0]))
    exc, texts = _watch(lambda: z.sum().backward())
    assert isinstance(exc, ValueError) and texts == []


def test_forward_in_anomaly_mode_backward_outside_does_not_check():
    """What counts is the mode while backward runs."""
    x = _leaf([0.0, 1.0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with tg.autograd.detect_anomaly():
            y = (x.sqrt() * 0).sum()
    exc, texts = _watch(y.backward)
    assert exc is None and texts == []
    assert np.isnan(npy(x.grad)[0])


# ----------------------------------------------------------------------------- NaN checks


def _nan_sqrt(lib):
    x = _leaf([0.0, 1.0], lib)
    y, line = x.sqrt() * 0, _here()   # d/dx = 0 * inf at x = 0
    return lambda: y.sum().backward(), line


def _nan_sqrt_create_graph(lib):
    x = _leaf([0.0, 1.0], lib)
    y, line = x.sqrt() * 0, _here()
    return lambda: lib.autograd.grad(y.sum(), x, create_graph=True), line


def _nan_mul_second_input(lib):
    w = _leaf([float("inf"), 1.0], lib)
    x = _leaf([1.0, 1.0], lib)
    y, line = w * x, _here()   # d/dx = g * w = 0 * inf
    return lambda: y.backward(lib.tensor([0.0, 1.0], dtype=lib.float64)), line


def _nan_div(lib):
    x, w = _leaf([1.0, 1.0], lib), _leaf([0.0, 1.0], lib)
    y, line = x / w, _here()   # d/dx = g / w = 0 / 0
    return lambda: y.backward(lib.tensor([0.0, 1.0], dtype=lib.float64)), line


def _nan_custom_function(lib):
    class Nan(lib.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            return a + b

        @staticmethod
        def backward(ctx, g):
            return g, g * float("nan")

    x = _leaf([1.0, 2.0], lib)
    y, line = Nan.apply(x, x), _here()
    return lambda: y.sum().backward(), line


def _nan_custom_function_first_input_none(lib):
    class Nan(lib.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            return a + b

        @staticmethod
        def backward(ctx, g):
            return None, g * float("nan")

    x, c = _leaf([1.0, 2.0], lib), _leaf([1.0, 2.0], lib, requires_grad=False)
    y, line = Nan.apply(c, x), _here()
    return lambda: y.sum().backward(), line


def _nan_from_grad_output(lib):
    x = _leaf([1.0, 1.0], lib)
    y, line = x * 2, _here()
    return lambda: y.backward(lib.tensor([float("nan"), 1.0], dtype=lib.float64)), line


NAN_CASES = [
    (_nan_sqrt, "SqrtBackward0", 0),
    (_nan_sqrt_create_graph, "SqrtBackward0", 0),
    (_nan_mul_second_input, "MulBackward0", 1),
    (_nan_div, "DivBackward0", 0),
    (_nan_custom_function, "NanBackward", 1),
    (_nan_custom_function_first_input_none, "NanBackward", 1),
    (_nan_from_grad_output, "MulBackward0", 0),
]


@pytest.mark.parametrize("case", NAN_CASES, ids=[c[0].__name__[1:] for c in NAN_CASES])
def test_nan_in_backward_raises_with_the_node_and_input_index(case):
    build, node, index = case
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with tg.autograd.detect_anomaly():
            run, line = build(tg)
            exc, texts = _watch(run)
    assert isinstance(exc, RuntimeError)
    assert str(exc) == f"Function '{node}' returned nan values in its {index}th output."
    assert len(texts) == 1
    _assert_forward_trace(texts[0], node, line, build.__name__)


@pytest.mark.parametrize("case", NAN_CASES, ids=[c[0].__name__[1:] for c in NAN_CASES])
def test_check_nan_false_lets_nan_through(case):
    build, _, _ = case
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with tg.autograd.detect_anomaly(check_nan=False):
            run, _ = build(tg)
            exc, texts = _watch(run)
    assert exc is None and texts == []


def test_inf_is_not_nan():
    """Only NaN is an anomaly: sqrt's infinite slope at 0 passes."""
    x = _leaf([0.0, 1.0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with tg.autograd.detect_anomaly():
            x.sqrt().sum().backward()
    np.testing.assert_array_equal(npy(x.grad), [np.inf, 0.5])


def test_a_leaf_receiving_nan_directly_is_not_checked():
    """A NaN that goes straight into a leaf's .grad passes no node that could check it."""
    x = _leaf([1.0, 1.0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with tg.autograd.detect_anomaly():
            x.backward(tg.tensor([float("nan"), 1.0], dtype=tg.float64))
    g = npy(x.grad)
    assert np.isnan(g[0]) and g[1] == 1.0


def test_anomaly_mode_does_not_change_gradients():
    x = _leaf([0.5, -1.0, 2.0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with tg.autograd.detect_anomaly():
            (x.tanh() * x.exp()).sum().backward()
    xv = np.array([0.5, -1.0, 2.0])
    np.testing.assert_allclose(npy(x.grad), (1 - np.tanh(xv) ** 2) * np.exp(xv) + np.tanh(xv) * np.exp(xv),
                               rtol=1e-12)


# ----------------------------------------------------------------------------- oracle


def _outcome(lib, build):
    """(exception type and message, first line of each 'Error detected' warning, this
    file's frames of its traceback) for one program run in anomaly mode."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with lib.autograd.detect_anomaly():
            run, _ = build(lib)
            exc, texts = _watch(run)
    heads = [t.split(":")[0] for t in texts]
    frames = [[fr for fr in _frames(t) if fr[0] == __file__][-1:] for t in texts]
    return (type(exc).__name__, str(exc)), heads, frames


@pytest.mark.torch
@pytest.mark.parametrize("case", NAN_CASES, ids=[c[0].__name__[1:] for c in NAN_CASES])
def test_oracle_nan_messages(case):
    torch = pytest.importorskip("torch")
    assert _outcome(tg, case[0]) == _outcome(torch, case[0])


def _boom(lib):
    x = _leaf([1.0, 2.0], lib)
    y, line = _boom_function(lib).apply(x), _here()
    return lambda: y.sum().backward(), line


def _version_error(lib):
    x = _leaf([1.0, 2.0], lib)
    a, line = x.exp(), _here()
    b = a * 2
    a.mul_(3)
    return lambda: b.sum().backward(), line


@pytest.mark.torch
@pytest.mark.parametrize("build", [_boom, _version_error], ids=["custom backward raises", "saved tensor modified"])
def test_oracle_backward_error_messages(build):
    """The same error (library prefix aside) and the same warning, pointing at the same line."""
    torch = pytest.importorskip("torch")
    (kind, mine), heads, frames = _outcome(tg, build)
    (kind_t, theirs), heads_t, frames_t = _outcome(torch, build)
    assert (kind, heads, frames) == (kind_t, heads_t, frames_t)
    assert mine.replace(LIB + ".", "torch.") == theirs


@pytest.mark.torch
def test_oracle_warning_without_forward_information():
    torch = pytest.importorskip("torch")

    def run(lib):
        x = _leaf([0.0, 1.0], lib)
        y = (x.sqrt() * 0).sum()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with lib.autograd.detect_anomaly():
                exc, texts = _watch(y.backward)
        return str(exc), texts

    assert run(tg) == run(torch)


@pytest.mark.torch
def test_oracle_flags_and_enter_warning():
    torch = pytest.importorskip("torch")

    def run(lib):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            states = [(_is_enabled(lib), _check_nan(lib))]
            with lib.autograd.detect_anomaly(check_nan=False):
                states.append((_is_enabled(lib), _check_nan(lib)))
                with lib.autograd.set_detect_anomaly(False):
                    states.append((_is_enabled(lib), _check_nan(lib)))
                states.append((_is_enabled(lib), _check_nan(lib)))
            lib.autograd.set_detect_anomaly(True)
            states.append((_is_enabled(lib), _check_nan(lib)))
            lib.autograd.set_detect_anomaly(False)
            states.append((_is_enabled(lib), _check_nan(lib)))
        return states, [(w.category.__name__, str(w.message)) for w in caught]

    assert run(tg) == run(torch)
