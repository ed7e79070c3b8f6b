"""When the rule table's optional Numba kernels load (tracegrad.rules.compiled): only once
the NumPy form's calls have cost, by the kernel's own estimate, what loading it costs --
cheaper once Numba already runs in the process -- and never in a short run."""
import math
import os
import subprocess
import sys

import numpy as np
import pytest

from tracegrad.backend import cpu
from tracegrad.rules import compiled, gelu_kernels, layer_norm_kernels
from tracegrad.transform import jit

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture
def loads(monkeypatch):
    """The kernels loaded, in order, by a stand-in loader (no Numba): each "kernel" fills
    its output with NaN, so that a call it served shows."""
    compiled.forget()
    done = []

    def load(name, source, signature):
        done.append(name)
        return lambda *arrays: arrays[-1].fill(np.nan)
    monkeypatch.setattr(compiled, "_load", load)
    monkeypatch.setattr(jit, "loaded_any", lambda: False)
    yield done
    compiled.forget()


def test_a_kernel_loads_once_its_savings_pay_for_the_load(loads, monkeypatch):
    monkeypatch.setattr(gelu_kernels, "NUMBA_MIN", 64)
    x = np.linspace(-3, 3, 1000, dtype=np.float32)
    per_call = x.size * gelu_kernels.SAVING_S["forward"]
    cold = math.ceil(compiled.FIRST_LOAD_S / per_call)  # calls until the first load
    monkeypatch.setattr(compiled, "FIRST_LOAD_S", 5.5 * per_call)  # (a short test: 6 calls)
    monkeypatch.setattr(compiled, "LOAD_S", 0.5 * per_call)
    for _ in range(5):
        assert np.isfinite(gelu_kernels.gelu_forward(cpu, x, "none")).all()  # the NumPy form
    assert loads == []
    assert np.isnan(gelu_kernels.gelu_forward(cpu, x, "none")).all()  # the 6th: compiled
    assert loads == ["gelu_forward"]
    assert cold > 1000  # (what the real cost means at this size: a thousand calls and more)


def test_calls_too_small_for_the_compiled_form_count_nothing(loads, monkeypatch):
    monkeypatch.setattr(gelu_kernels, "NUMBA_MIN", 64)
    monkeypatch.setattr(compiled, "FIRST_LOAD_S", 0.0)
    small = np.ones(63, np.float32)
    for _ in range(10):
        gelu_kernels.gelu_forward(cpu, small, "none")
    assert loads == [] and compiled._SAVED == {}
    gelu_kernels.gelu_forward(cpu, np.ones(64, np.float64), "none")  # float64 has no compiled form
    assert loads == [] and compiled._SAVED == {}


def test_once_numba_runs_a_further_kernel_loads_sooner(loads, monkeypatch):
    """The first kernel pays Numba's import and start; a further one only its own load, so
    each kernel (forward, backward, layer norm's) counts its own savings against that."""
    monkeypatch.setattr(gelu_kernels, "NUMBA_MIN", 1)
    monkeypatch.setattr(layer_norm_kernels, "NUMBA_MIN", 1)
    # (the story below: per element, GELU's forward saves most, then its backward, then layer norm)
    saved = layer_norm_kernels.SAVING_S["forward"]
    monkeypatch.setattr(gelu_kernels, "SAVING_S", {"forward": 4 * saved, "backward": 1.8 * saved})
    x = np.linspace(-3, 3, 1000, dtype=np.float32)
    fwd = x.size * gelu_kernels.SAVING_S["forward"]
    bwd = x.size * gelu_kernels.SAVING_S["backward"]
    monkeypatch.setattr(compiled, "FIRST_LOAD_S", 2.5 * fwd)
    monkeypatch.setattr(compiled, "LOAD_S", 1.5 * bwd)
    for _ in range(3):
        gelu_kernels.gelu_forward(cpu, x, "none")
    assert loads == ["gelu_forward"]
    gelu_kernels.gelu_backward(cpu, x, x.copy(), "none")  # (an input no forward saw: no kept erf)
    assert loads == ["gelu_forward"]
    gelu_kernels.gelu_backward(cpu, x, x.copy(), "none")
    assert loads == ["gelu_forward", "gelu_backward"]
    x2 = x.reshape(10, 100)
    args = (np.ones(100, np.float32), None, 1e-5, 100, (10, 1))
    layer_norm_kernels.layer_norm_forward(cpu, x2, *args)
    assert loads[-1] == "gelu_backward"  # (1000 elements save less than LOAD_S here)
    for _ in range(math.ceil(compiled.LOAD_S / (x.size * layer_norm_kernels.SAVING_S["forward"]))):
        layer_norm_kernels.layer_norm_forward(cpu, x2, *args)
    assert loads[-1] == "layer_norm_forward"


def test_the_kernels_savings_together_pay_for_starting_numba(loads, monkeypatch):
    """Starting Numba is one cost for all kernels: GELU's forward and backward and layer
    norm's count their savings toward it together; each still pays its own load."""
    monkeypatch.setattr(gelu_kernels, "NUMBA_MIN", 1)
    x = np.linspace(-3, 3, 1000, dtype=np.float32)
    fwd = x.size * gelu_kernels.SAVING_S["forward"]
    bwd = x.size * gelu_kernels.SAVING_S["backward"]
    monkeypatch.setattr(compiled, "FIRST_LOAD_S", 2 * fwd + 1.5 * bwd)
    monkeypatch.setattr(compiled, "LOAD_S", 0.5 * bwd)
    for _ in range(2):
        gelu_kernels.gelu_forward(cpu, x, "none")
    gelu_kernels.gelu_backward(cpu, x, x.copy(), "none")  # (an input no forward saw: no kept erf)
    assert loads == []  # (2 fwd + 1 bwd: less than the start)
    gelu_kernels.gelu_backward(cpu, x, x.copy(), "none")  # the start paid: the backward, called now, loads
    assert loads == ["gelu_backward"]
    gelu_kernels.gelu_forward(cpu, x, "none")  # its own savings long past LOAD_S: loads at once
    assert loads == ["gelu_backward", "gelu_forward"]


def test_a_staged_kernel_makes_the_next_load_cheap(loads, monkeypatch):
    monkeypatch.setattr(gelu_kernels, "NUMBA_MIN", 1)
    x = np.linspace(-3, 3, 1000, dtype=np.float32)
    monkeypatch.setattr(compiled, "LOAD_S", 0.5 * x.size * gelu_kernels.SAVING_S["forward"])
    gelu_kernels.gelu_forward(cpu, x, "none")
    assert loads == []  # (FIRST_LOAD_S: a second's worth)
    monkeypatch.setattr(jit, "loaded_any", lambda: True)  # a staged path's kernel runs
    gelu_kernels.gelu_forward(cpu, x, "none")
    assert loads == ["gelu_forward"]


def test_pending_and_loaded_name_the_kernels(loads, monkeypatch):
    """What a benchmark of a long run's steady state waits for (benchmarks/resnet18.py):
    a kernel is pending from its first counted call until it loads, or fails to."""
    monkeypatch.setattr(gelu_kernels, "NUMBA_MIN", 64)
    x = np.linspace(-3, 3, 1000, dtype=np.float32)
    per_call = x.size * gelu_kernels.SAVING_S["forward"]
    monkeypatch.setattr(compiled, "FIRST_LOAD_S", 2.5 * per_call)
    monkeypatch.setattr(compiled, "LOAD_S", 0.5 * per_call)
    assert compiled.pending() == compiled.loaded() == []
    gelu_kernels.gelu_forward(cpu, np.ones(63, np.float32), "none")  # (too small: counts nothing)
    assert compiled.pending() == []
    gelu_kernels.gelu_forward(cpu, x, "none")
    assert compiled.pending() == ["gelu_forward"] and compiled.loaded() == []
    for _ in range(2):
        gelu_kernels.gelu_forward(cpu, x, "none")
    assert compiled.pending() == [] and compiled.loaded() == ["gelu_forward"] == loads
    monkeypatch.setattr(compiled, "_load", lambda *a: False)  # a failed load is not pending
    for _ in range(2):
        gelu_kernels.gelu_backward(cpu, x, x.copy(), "none")
    assert compiled.pending() == [] and compiled.loaded() == ["gelu_forward"]


def test_a_failed_load_is_not_retried(monkeypatch):
    compiled.forget()
    tries = []
    monkeypatch.setattr(compiled, "_load", lambda *a: tries.append(a[0]) or False)
    monkeypatch.setattr(compiled, "FIRST_LOAD_S", 0.0)
    monkeypatch.setattr(compiled, "LOAD_S", 0.0)
    monkeypatch.setattr(gelu_kernels, "NUMBA_MIN", 1)
    x = np.linspace(-3, 3, 100, dtype=np.float32)
    want = gelu_kernels.gelu_forward(cpu, x, "none")
    for _ in range(3):
        np.testing.assert_array_equal(gelu_kernels.gelu_forward(cpu, x, "none"), want)
    assert tries == ["gelu_forward"]
    compiled.forget()


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
