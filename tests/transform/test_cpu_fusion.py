"""CPU kernels (Numba) for compiled tapes: a hot variant's runs of scalar lines become one
kernel, which must give what the unfused lines give -- values within a few ulps of the
transcendental functions, the same dtypes, shapes, NaN and inf -- and must never be
needed: without Numba, or with fusion off, everything runs unfused."""
import os
import subprocess
import sys

import numpy as np
import pytest

import tracegrad as tg
from tracegrad.transform import jit

pytest.importorskip("numba")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(tg.__file__)))  # (for subprocesses)

# fused against unfused: the kernels call the C library's exp/tanh/..., NumPy its own
RTOL = {np.float32: 1e-5, np.float64: 1e-12}


@pytest.fixture(autouse=True)
def hot_at_once(monkeypatch, tmp_path_factory):
    """Kernels at the first replay, cached in one directory for this test session."""
    monkeypatch.setattr(jit, "HOT_CALLS", 0)
    monkeypatch.setenv("TRACEGRAD_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "kernels"))


def hot(fn, *args, **kw):
    """``grad(fn)`` called until its variant runs with kernels; its last result and source."""
    g = tg.grad(fn, mode="tape", **kw)
    for _ in range(3):
        out = g(*args)
    return out, g.source


def cold(fn, *args, **kw):
    with tg.fusion(False):
        return hot(fn, *args, **kw)


def chain(y):
    for _ in range(3):
        y = np.tanh(y * 1.01 + 0.1)
    return y.sum()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(16,), (3, 5), ()])
def test_a_straight_line_tape_becomes_one_kernel_equal_to_the_unfused_one(dtype, shape):
    x = np.linspace(-1.5, 1.5, int(np.prod(shape))).reshape(shape).astype(dtype)
    got, source = hot(chain, x)
    want, plain = cold(chain, x)
    assert source.count("@cpu_kernel") == (1 if shape else 0)  # (0-d: NumPy scalars, unfused)
    assert "@cpu_kernel" not in plain
    assert got.dtype == want.dtype == dtype and got.shape == want.shape == shape
    np.testing.assert_allclose(got, want, rtol=RTOL[dtype])


def test_the_kernel_matches_finite_differences():
    x = np.linspace(-1, 1, 7)
    got, _ = hot(chain, x)
    eps = 1e-6
    fd = [(chain(x + eps * e) - chain(x - eps * e)) / (2 * eps) for e in np.eye(7)]
    np.testing.assert_allclose(got, fd, rtol=1e-6)


def special(x):
    return np.sum(np.log(x) * 2.0 + np.sqrt(x) / x - np.exp(-x))


def test_nan_inf_and_zero_come_out_as_unfused():
    x = np.array([0.0, -0.0, -1.0, np.inf, -np.inf, np.nan, 1e-310, 2.0, 1e308])
    with np.errstate(all="ignore"):
        got, source = hot(special, x)
        want, _ = cold(special, x)
    assert "@cpu_kernel" in source
    np.testing.assert_allclose(got, want, rtol=1e-12, equal_nan=True)
    assert np.array_equal(np.isnan(got), np.isnan(want))
    assert np.array_equal(np.signbit(got), np.signbit(want))


def broadcasting(x, b, s):
    return np.sum(np.tanh(x * b + s) * s)


def test_one_element_operands_are_fused_and_true_broadcasts_are_not():
    x = np.linspace(-1, 1, 12).reshape(3, 4)
    for b, s in [(np.array(0.5), np.array([[2.0]])), (np.linspace(1, 2, 4), np.array(0.3))]:
        got, source = hot(broadcasting, x, b, s, argnums=(0, 1, 2))
        want, _ = cold(broadcasting, x, b, s, argnums=(0, 1, 2))
        for g, w in zip(got, want):
            assert g.shape == w.shape and g.dtype == w.dtype
            np.testing.assert_allclose(g, w, rtol=1e-12)


def mixed(x, w):
    return np.sum(np.tanh(x * w) * 3)


@pytest.mark.parametrize("xdtype,wdtype", [(np.float32, np.float64), (np.int64, np.float32),
                                           (np.float32, np.float32)])
def test_dtype_promotion_is_numpys(xdtype, wdtype):
    x = np.arange(-3, 3).astype(xdtype)
    w = np.linspace(0.1, 0.6, 6).astype(wdtype)
    got, _ = hot(mixed, x, w, argnums=1)
    want, _ = cold(mixed, x, w, argnums=1)
    assert got.dtype == want.dtype == w.dtype
    np.testing.assert_allclose(got, want, rtol=RTOL[np.dtype(wdtype).type])


def test_set_fusion_false_keeps_numpy_lines():
    x = np.linspace(-1, 1, 5)
    previous = tg.set_fusion(False)
    try:
        _, source = hot(chain, x)
    finally:
        tg.set_fusion(previous)
    assert "cpu_kernel" not in source and "xp.tanh" in source


def test_without_numba_everything_runs_unfused(monkeypatch):
    monkeypatch.setitem(sys.modules, "numba", None)  # import numba raises ImportError
    jit.forget()
    try:
        x = np.linspace(-1, 1, 5)
        got, source = hot(chain, x)
        assert "cpu_kernel" not in source
        want, _ = cold(chain, x)
        np.testing.assert_array_equal(got, want)
    finally:
        monkeypatch.undo()
        jit.forget()


def test_a_numba_failure_falls_back_to_the_lines_on_whole_arrays(monkeypatch):
    from numba.core.errors import TypingError

    def refuse(source, name):
        def kernel(*args):
            raise TypingError("simulated")
        return kernel
    monkeypatch.setattr(jit, "load_kernel", refuse)
    x = np.linspace(-1, 1, 5)
    g = tg.grad(chain, mode="tape")
    with pytest.warns(RuntimeWarning, match="could not compile the fused kernel"):
        for _ in range(3):
            got = g(x)
    np.testing.assert_allclose(got, cold(chain, x)[0], rtol=1e-15)


def test_import_tracegrad_does_not_import_numba():
    code = "import sys, tracegrad; print('numba' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env=dict(os.environ, PYTHONPATH=ROOT), cwd=os.path.dirname(ROOT))
    assert out.stdout.strip() == "False"


def test_kernels_are_cached_on_disk_for_the_next_process(tmp_path):
    code = ("import numpy as np, tracegrad as tg\n"
            "from tracegrad.transform import jit\n"
            "jit.HOT_CALLS = 0\n"
            "def f(y):\n    return np.sum(np.tanh(y * 2.0 + 1.0))\n"
            "g = tg.grad(f, mode='tape')\n"
            "for _ in range(3): g(np.ones(4))\n"
            "print(type(g._last.fn.__globals__['df_dy_fused0']).__name__)\n")
    env = dict(os.environ, PYTHONPATH=ROOT, TRACEGRAD_CACHE_DIR=str(tmp_path))
    env.pop("NUMBA_CACHE_DIR", None)  # (Numba's machine code beside the kernel's source)
    for _ in range(2):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             check=True, env=env)
        assert out.stdout.strip() == "CPUDispatcher"
    files = os.listdir(tmp_path / "kernels")
    assert len([f for f in files if f.endswith(".py")]) == 1
    cached = os.listdir(tmp_path / "kernels" / "__pycache__")
    assert any(f.endswith(".nbi") for f in cached) and any(f.endswith(".nbc") for f in cached)


def test_the_source_shows_which_lines_the_kernel_runs():
    x = np.linspace(-1, 1, 5)
    _, source = hot(chain, x)
    kernel, function = source.split("\ndef dchain_dy(")
    assert "lines of dchain_dy as one Numba kernel" in kernel and "@cpu_kernel\ndef dchain_dy_fused0(" in kernel
    # (5 elements, at most one block: one loop over them, the arrays indexed as given)
    assert kernel.count("np.tanh(") == 3 and "    for j in range(n):" in kernel and "block" not in kernel
    assert "dchain_dy_fused0(y)" in function


# -- the tape zoo, fused against unfused ------------------------------------------------------

def _zoo():
    from .test_tape_zoo import ZOO
    return [pytest.param(c, id=c.name) for c in ZOO if "fd" not in c.xfail]


@pytest.mark.parametrize("case", _zoo())
def test_zoo_entry_fused_equals_unfused(case):
    args = case.args(np.random.default_rng(7))
    with np.errstate(all="ignore"):
        got, source = hot(case.fn, *args, argnums=case.argnums)
        want, _ = cold(case.fn, *args, argnums=case.argnums)
    got, want = (got, want) if isinstance(got, tuple) else ((got,), (want,))
    for g, w in zip(got, want):
        g, w = np.asarray(g), np.asarray(w)
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=RTOL.get(w.dtype.type, 1e-12), atol=1e-300,
                                   equal_nan=True)
    _FUSED[case.name] = "@cpu_kernel" in source


_FUSED = {}


def test_many_zoo_entries_fuse():
    if len(_FUSED) < 40:
        pytest.skip("run with the zoo tests of this file")
    assert sum(_FUSED.values()) >= 20, _FUSED


def test_show_tape_prints_the_kernels_the_hot_tape_runs(tmp_path):
    path = tmp_path / "model.py"
    path.write_text("import numpy as np\n\ndef loss(x, w):\n    h = np.tanh(x * w + 1.0)\n"
                    "    return np.sum(h * h)\n")
    out = subprocess.run([sys.executable, "-m", "tracegrad", "show", f"{path}:loss", "--mode", "tape",
                          "--args", "np.ones(3), np.ones(3)", "--wrt", "0,1", "--color", "never"],
                         capture_output=True, text=True, check=True,
                         env=dict(os.environ, PYTHONPATH=ROOT, TRACEGRAD_CACHE_DIR=str(tmp_path)))
    kernel, function = out.stdout.split("\ndef dloss_dx_dw(")
    assert "lines of dloss_dx_dw as one Numba kernel" in kernel
    assert "t2 = np.tanh(t1)" in kernel and "dx[j] = g2 * w[j]" in kernel
    assert "dx, dw = dloss_dx_dw_fused0(x, w)" in function


def tanh_product(x, w):
    return np.sum(np.tanh(x * w + 1.0) * x)


def test_any_memory_layout_is_read_as_numpy_reads_it():
    x = np.linspace(-1, 1, 24).reshape(4, 6)
    for a, b in [(x.T, np.asfortranarray(x.T)), (np.broadcast_to(x[0], (4, 6)), x), (x[:, ::2], x[:, 1::2])]:
        got, source = hot(tanh_product, a, b, argnums=(0, 1))
        want, _ = cold(tanh_product, a, b, argnums=(0, 1))
        assert "@cpu_kernel" in source
        for g, w in zip(got, want):
            assert g.shape == w.shape
            np.testing.assert_allclose(g, w, rtol=1e-12)
