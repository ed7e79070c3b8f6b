"""When the rule table's optional Numba kernels load (tracegrad.rules.compiled): only once
the NumPy form's calls have cost, by the kernel's own estimate, what loading it costs --
cheaper once Numba already runs in the process -- and never in a short run. The policy is
checked on kernels of its own (``_kernel``: a caller asking for kernel ``name`` with the
savings of ``size`` elements), so that it does not depend on which kernels the rule table
has; layer norm's caller shows the size threshold."""
import math
import os
import subprocess
import sys

import numpy as np
import pytest

from tracegrad.backend import cpu
from tracegrad.rules import compiled, layer_norm_kernels
from tracegrad.transform import jit

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SAVING_S = 10e-9  # per element, as a caller estimates it

# a real module for the tests that load through Numba (or find it missing)
SOURCE = """import numba


@numba.njit(cache=True)
def doubled(x, out):
    for k in range(x.size):
        out[k] = 2 * x[k]
"""
SIGNATURE = "void(float32[::1], float32[::1])"


def _kernel(name, size, source=SOURCE):
    return compiled.kernel(name, lambda: source, SIGNATURE, saving=size * SAVING_S)


@pytest.fixture
def loads(monkeypatch):
    """The kernels loaded, in order, by a stand-in loader (no Numba)."""
    compiled.forget()
    done = []

    def load(name, source, signature):
        done.append(name)
        return lambda *arrays: None
    monkeypatch.setattr(compiled, "_load", load)
    monkeypatch.setattr(jit, "loaded_any", lambda: False)
    yield done
    compiled.forget()


def test_a_kernel_loads_once_its_savings_pay_for_the_load(loads, monkeypatch):
    per_call = 1000 * SAVING_S
    cold = math.ceil(compiled.FIRST_LOAD_S / per_call)  # calls until the first load
    monkeypatch.setattr(compiled, "FIRST_LOAD_S", 5.5 * per_call)  # (a short test: 6 calls)
    monkeypatch.setattr(compiled, "LOAD_S", 0.5 * per_call)
    for _ in range(5):
        assert _kernel("k", 1000) is None  # the caller's NumPy form
    assert loads == []
    assert _kernel("k", 1000) is not None  # the 6th: compiled
    assert loads == ["k"]
    assert cold > 1000  # (what the real cost means at this size: a thousand calls and more)


def test_calls_too_small_for_the_compiled_form_count_nothing(loads, monkeypatch):
    monkeypatch.setattr(layer_norm_kernels, "NUMBA_MIN", 64)
    monkeypatch.setattr(compiled, "FIRST_LOAD_S", 0.0)
    args = (np.ones(9, np.float32), None, 1e-5, 9, (7, 1))
    for _ in range(10):
        layer_norm_kernels.layer_norm_forward(cpu, np.ones((7, 9), np.float32), *args)  # 63 elements
    assert loads == [] and compiled._SAVED == {}
    args = (np.ones(8, np.float64), None, 1e-5, 8, (8, 1))
    layer_norm_kernels.layer_norm_forward(cpu, np.ones((8, 8)), *args)  # float64 has no compiled form
    assert loads == [] and compiled._SAVED == {}


def test_once_numba_runs_a_further_kernel_loads_sooner(loads, monkeypatch):
    """The first kernel pays Numba's import and start; a further one only its own load, so
    each kernel counts its own savings against that."""
    monkeypatch.setattr(compiled, "FIRST_LOAD_S", 2.5 * 1000 * SAVING_S)
    monkeypatch.setattr(compiled, "LOAD_S", 1.5 * 500 * SAVING_S)
    for _ in range(3):
        _kernel("first", 1000)
    assert loads == ["first"]
    _kernel("second", 500)
    assert loads == ["first"]
    _kernel("second", 500)
    assert loads == ["first", "second"]
    _kernel("third", 100)
    assert loads[-1] == "second"  # (100 elements save less than LOAD_S)
    for _ in range(math.ceil(compiled.LOAD_S / (100 * SAVING_S)) - 1):
        _kernel("third", 100)
    assert loads[-1] == "third"


def test_the_kernels_savings_together_pay_for_starting_numba(loads, monkeypatch):
    """Starting Numba is one cost for all kernels: their savings count toward it together;
    each still pays its own load."""
    fwd, bwd = 1000 * SAVING_S, 500 * SAVING_S
    monkeypatch.setattr(compiled, "FIRST_LOAD_S", 2 * fwd + 1.5 * bwd)
    monkeypatch.setattr(compiled, "LOAD_S", 0.5 * bwd)
    for _ in range(2):
        _kernel("a", 1000)
    _kernel("b", 500)
    assert loads == []  # (2 a + 1 b: less than the start)
    _kernel("b", 500)  # the start paid: b, called now, loads
    assert loads == ["b"]
    _kernel("a", 1000)  # its own savings long past LOAD_S: loads at once
    assert loads == ["b", "a"]


def test_a_staged_kernel_makes_the_next_load_cheap(loads, monkeypatch):
    monkeypatch.setattr(compiled, "LOAD_S", 0.5 * 1000 * SAVING_S)
    _kernel("k", 1000)
    assert loads == []  # (FIRST_LOAD_S: a second's worth)
    monkeypatch.setattr(jit, "loaded_any", lambda: True)  # a staged path's kernel runs
    _kernel("k", 1000)
    assert loads == ["k"]


def test_a_failed_load_is_not_retried(monkeypatch):
    compiled.forget()
    tries = []
    monkeypatch.setattr(compiled, "_load", lambda *a: tries.append(a[0]) or False)
    monkeypatch.setattr(compiled, "FIRST_LOAD_S", 0.0)
    monkeypatch.setattr(compiled, "LOAD_S", 0.0)
    for _ in range(3):
        assert _kernel("k", 100) is None
    assert tries == ["k"]
    compiled.forget()


@pytest.fixture
def at_once(monkeypatch):
    """Kernels load at their first call; Numba's and the kernels' state forgotten after."""
    monkeypatch.setattr(compiled, "FIRST_LOAD_S", 0.0)
    monkeypatch.setattr(compiled, "LOAD_S", 0.0)
    jit.forget()
    compiled.forget()
    yield
    monkeypatch.undo()
    jit.forget()
    compiled.forget()


def test_a_kernel_loads_and_runs(at_once, monkeypatch, tmp_path):
    pytest.importorskip("numba")
    monkeypatch.setenv("TRACEGRAD_CACHE_DIR", str(tmp_path))
    x = np.arange(5, dtype=np.float32)
    out = np.empty_like(x)
    _kernel("doubled", 5)(x, out)
    np.testing.assert_array_equal(out, 2 * x)


def test_without_numba_no_kernel(at_once, monkeypatch):
    monkeypatch.setitem(sys.modules, "numba", None)  # import numba raises ImportError
    assert _kernel("doubled", 100) is None
    assert compiled._KERNELS == {"doubled": False}


def test_a_numba_failure_warns_and_gives_no_kernel(at_once, monkeypatch):
    pytest.importorskip("numba")

    def refuse(source, name):
        raise OSError("read-only cache directory")
    monkeypatch.setattr(jit, "load_kernel", refuse)
    with pytest.warns(RuntimeWarning, match="compiled kernel doubled is unavailable .OSError"):
        assert _kernel("doubled", 100) is None
    assert _kernel("doubled", 100) is None  # (not retried: no second warning)


def test_a_short_run_never_imports_numba(tmp_path):
    """Thirty GELU and layer-norm steps at a small GPT's sizes: the NumPy kernels all
    along, Numba never imported (its import and start cost more than they would save)."""
    pytest.importorskip("numba")
    code = """if 1:
        import sys, numpy as np
        import tracegrad as tg
        F = tg.nn.functional
        x = tg.tensor(np.random.default_rng(0).standard_normal((8, 32, 128)).astype("float32"),
                      requires_grad=True)
        for _ in range(30):
            y = F.gelu(x)
            F.layer_norm(y[..., :32], (32,)).sum().backward()
        print("numba" in sys.modules)
    """
    env = dict(os.environ, PYTHONPATH=ROOT, TRACEGRAD_CACHE_DIR=str(tmp_path))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False"]
