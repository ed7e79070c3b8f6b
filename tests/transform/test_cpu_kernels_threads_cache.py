"""The CPU kernels' vectorizable tanh, their threads and their on-disk cache.

- ``kernel_numpy.tanh`` (what ``np.tanh`` is inside a kernel) against NumPy's: a few ulps,
  and the special values exactly;
- a large kernel's twin on several threads runs only when tracegrad's thread count
  (``set_num_threads``) says so, gives the serial kernel's values, and leaves Numba's
  own thread count as it found it;
- the cache: keyed on the kernel's text and on kernel_numpy's, read by a second process
  without compiling."""
import os
import subprocess
import sys

import numpy as np
import pytest

import tracegrad as tg
from tracegrad.transform import jit

numba = pytest.importorskip("numba")
from tracegrad.transform import kernel_numpy  # noqa: E402 (needs Numba)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(tg.__file__)))


@pytest.fixture(autouse=True)
def hot_at_once(monkeypatch, tmp_path_factory):
    monkeypatch.setattr(jit, "HOT_CALLS", 0)
    monkeypatch.setenv("TRACEGRAD_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "kernels"))


@numba.njit(error_model="numpy")
def _kernel_tanh(x, out):
    for i in range(x.size):
        out[i] = kernel_numpy.tanh(x[i])


def kernel_tanh(x):
    out = np.empty_like(x)
    _kernel_tanh(x, out)
    return out


def ulps(got, want):
    """|got - want| in units of the last place of ``want`` (in want's dtype)."""
    spacing = np.spacing(np.abs(want)).astype(np.float64)
    return np.abs(got.astype(np.float64) - want.astype(np.float64)) / spacing


@pytest.mark.parametrize("dtype,most", [(np.float64, 2), (np.float32, 1)])
def test_kernel_tanh_is_within_ulps_of_numpys(dtype, most):
    rng = np.random.default_rng(3)
    x = np.concatenate([rng.uniform(-1, 1, 20000), rng.uniform(-25, 25, 20000),
                        np.geomspace(1e-300, 30, 5000), -np.geomspace(1e-300, 30, 5000),
                        [0.625, -0.625, np.nextafter(0.625, 0), 19.0, 20.0, 5e-324, 1e-320]])
    x = x.astype(dtype)
    got = kernel_tanh(x)
    assert got.dtype == dtype
    assert ulps(got, np.tanh(x)).max() <= most


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_kernel_tanh_special_values(dtype):
    x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e30, -1e30], dtype=dtype)
    got, want = kernel_tanh(x), np.tanh(x)
    np.testing.assert_array_equal(got, want)  # (NaN where NaN)
    assert np.array_equal(np.signbit(got[:4]), np.signbit(want[:4]))  # (+-0 kept)


def chain(y):
    for _ in range(3):
        y = np.tanh(y * 1.01 + 0.1)
    return y.sum()


def hot(fn, x):
    g = tg.grad(fn, mode="tape")
    for _ in range(3):
        out = g(x)
    return out, g


def kernel_of(g):
    env = g._last.fn.__globals__
    return next(v for k, v in env.items() if "_fused" in k)


@pytest.fixture
def threads():
    before = tg.get_num_threads()
    yield
    tg.set_num_threads(before)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_threaded_twin_runs_when_threads_are_set_and_equals_the_serial_kernel(
        monkeypatch, threads, dtype):
    monkeypatch.setattr(jit, "PARALLEL_MIN", 64)  # (a twin for a small array)
    x = np.linspace(-2, 2, 1000).astype(dtype)
    with tg.fusion(False):
        want, _ = hot(chain, x)
    tg.set_num_threads(1)
    serial, g = hot(chain, x)
    kernel = kernel_of(g)
    assert isinstance(kernel, jit.Threaded)
    assert kernel.serial.signatures and not kernel.parallel.signatures  # (one thread)
    numba.set_num_threads(1)
    tg.set_num_threads(2)
    threaded = g(x)
    assert kernel.parallel.signatures
    assert numba.get_num_threads() == 1  # (Numba's own setting put back)
    np.testing.assert_array_equal(threaded, serial)
    assert threaded.dtype == want.dtype == dtype
    np.testing.assert_allclose(threaded, want, rtol=1e-5 if dtype == np.float32 else 1e-12)


def test_threads_are_capped_by_numbas(monkeypatch, threads):
    tg.set_num_threads(64)
    assert jit.kernel_threads(numba) == min(64, numba.config.NUMBA_NUM_THREADS)
    tg.set_num_threads(1)
    assert jit.kernel_threads(numba) == 1


def test_small_arrays_get_no_twin():
    _, g = hot(chain, np.linspace(-1, 1, 16))
    assert not isinstance(kernel_of(g), jit.Threaded)
    sources = g._last.fn.__globals__["cpu_kernel"].sources.values()
    assert not any("prange" in module for module, _ in sources)


def special(x):
    return np.sum(np.tanh(x * 2.0) * np.exp(-x) + np.tanh(x) / x)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_tanh_kernels_give_nan_and_inf_as_unfused(dtype):
    x = np.array([0.0, -0.0, -1.0, np.inf, -np.inf, np.nan, 1e-30, 2.0, 30.0, -30.0, 0.625],
                 dtype=dtype)
    with np.errstate(all="ignore"):
        got, g = hot(special, x)
        with tg.fusion(False):
            want, _ = hot(special, x)
    assert "@cpu_kernel" in g.source
    assert got.dtype == want.dtype == dtype
    np.testing.assert_allclose(got, want, rtol=1e-5 if dtype == np.float32 else 1e-12,
                               equal_nan=True)
    assert np.array_equal(np.isnan(got), np.isnan(want))
    finite = ~np.isnan(want)
    assert np.array_equal(np.signbit(got[finite]), np.signbit(want[finite]))


def test_the_cache_key_covers_kernel_numpy(monkeypatch, tmp_path):
    monkeypatch.setenv("TRACEGRAD_CACHE_DIR", str(tmp_path))
    source = ("import numba\n" + jit.KERNEL_NUMPY + "\n\n@numba.njit(cache=True)\n"
              "def k(x):\n    return np.tanh(x)\n")
    jit.load_kernel(source, "k")
    monkeypatch.setitem(jit._STATE, "kernel_numpy", b"# another kernel_numpy")
    jit.load_kernel(source, "k")
    files = [f for f in os.listdir(tmp_path / "kernels") if f.endswith(".py")]
    assert len(files) == 2  # (the same text, another kernel_numpy: another kernel)


_SECOND = """
import numpy as np, tracegrad as tg
from tracegrad.transform import jit
jit.HOT_CALLS = 0
jit.PARALLEL_MIN = 64
tg.set_num_threads({threads})
def f(y):
    return np.sum(np.tanh(y * 2.0 + 1.0) * y)
g = tg.grad(f, mode='tape')
for _ in range(3):
    out = g(np.linspace(-1, 1, 100))
k = g._last.fn.__globals__['df_dy_fused0']
used = k.parallel if {threads} > 1 else k.serial
print(type(k).__name__, used.stats.cache_hits and sum(used.stats.cache_hits.values()),
      sum(used.stats.cache_misses.values()), repr(out.sum()))
"""


def test_a_second_process_reads_both_twins_from_the_cache(tmp_path):
    env = dict(os.environ, PYTHONPATH=ROOT, TRACEGRAD_CACHE_DIR=str(tmp_path))
    env.pop("NUMBA_CACHE_DIR", None)
    outs = []
    for threads in (1, 2, 1, 2):
        out = subprocess.run([sys.executable, "-c", _SECOND.format(threads=threads)],
                             capture_output=True, text=True, check=True, env=env)
        outs.append(out.stdout.split())
    for first, again in [(outs[0], outs[2]), (outs[1], outs[3])]:
        assert first[0] == again[0] == "Threaded"
        assert first[2] == "1" and again[1] == "1" and again[2] == "0"  # (compiled, then read)
        assert first[3] == again[3]
    assert outs[0][3] == outs[1][3]  # (serial and threaded: the same values)
    files = os.listdir(tmp_path / "kernels")
    assert len([f for f in files if f.endswith(".py")]) == 1
    assert len([f for f in files if f.endswith(".code")]) == 1  # (the module's code object)


# -- the kernels' bodies are not compiled as Python: line numbers still point into .source --

def guarded(x):
    for _ in range(4):
        x = np.tanh(x) * 0.5 + x
        if np.sum(x) > 1e6:  # (a guard between kernels)
            x = x * 0.0
    return np.sum(x)


@pytest.mark.parametrize("chunk", [7, 10 ** 9])
def test_a_hot_tape_with_kernels_keeps_its_line_numbers(monkeypatch, chunk):
    from tracegrad.transform.tape import codegen

    from .test_tape_scaling import assert_lines_and_guard_traceback
    monkeypatch.setattr(codegen, "CHUNK_LINES", chunk)  # (7: compiled in parts)
    x = np.linspace(-1, 1, 5)
    got, g = hot(guarded, x)
    with tg.fusion(False):
        want, _ = hot(guarded, x)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    assert g.source.count("@cpu_kernel") >= 2
    assert_lines_and_guard_traceback(g._last.fn, g.source, np.full(5, 1e7))


def test_two_kernels_of_one_module_are_told_apart(tmp_path, monkeypatch):
    # load_kernel once keyed what it loaded by the module's text alone: asking for a
    # second function of the same module gave the first one
    pytest.importorskip("numba")
    monkeypatch.setenv("TRACEGRAD_CACHE_DIR", str(tmp_path))
    source = ("import numba\n\n\n@numba.njit(cache=True)\ndef twice(x):\n    return 2 * x\n\n\n"
              "@numba.njit(cache=True)\ndef thrice(x):\n    return 3 * x\n")
    assert jit.load_kernel(source, "twice")(5.0) == 10.0
    assert jit.load_kernel(source, "thrice")(5.0) == 15.0
    assert jit.load_kernel(source, "twice")(1.0) == 2.0


# -- Numba started and kernels compiled while a tape records -----------------------------------

_WHILE_RECORDING = """
import warnings
import numpy as np
import tracegrad as tg
from tracegrad.transform import jit
from tracegrad.transform.tape.numpy_map import construct
jit.HOT_CALLS = 0
warnings.simplefilter("error", RuntimeWarning)  # ("Numba could not compile ...": a failure here)

def f(x):
    for _ in range(4):
        x = np.tanh(x * 1.01 + 0.1)
    return np.sum(np.ravel(x))

g = tg.grad(f, mode="tape")
x = np.linspace(-1.0, 1.0, 64)
construct.acquire()  # another tape records meanwhile: the stand-ins are in NumPy's namespace
try:
    assert np.ravel is not construct.numpy_own(np.ravel)
    values = [g(x) for _ in range(3)]  # traced, then compiled with its kernel: Numba starts here
finally:
    construct.release()
h = tg.grad(lambda x: np.sum(np.sin(x * 0.5) * x), mode="tape")  # (compiled after: another kernel)
later = [h(x) for _ in range(3)]
print("@cpu_kernel" in g.source and "@cpu_kernel" in h.source, "numba" in __import__("sys").modules,
      repr(float(values[-1].sum())), repr(float(later[-1].sum())))
"""


def test_numba_starting_while_a_tape_records_compiles_the_kernels(tmp_path):
    # Numba keys its NumPy registry on the functions in NumPy's namespace when it starts, and
    # a kernel's np.ravel is typed by the function read: with the tape's stand-ins there
    # when it started, every kernel compiled later failed to (and ran unfused)
    env = dict(os.environ, PYTHONPATH=ROOT, TRACEGRAD_CACHE_DIR=str(tmp_path))
    out = subprocess.run([sys.executable, "-c", _WHILE_RECORDING], capture_output=True, text=True,
                         env=env)
    assert out.returncode == 0, out.stderr[-3000:]
    fused, started, total, total_later = out.stdout.split()
    assert fused == "True" and started == "True"
    x = np.linspace(-1.0, 1.0, 64)
    assert float(total_later) == pytest.approx(np.sum(0.5 * x * np.cos(0.5 * x) + np.sin(0.5 * x)), rel=1e-12)
    x = np.linspace(-1.0, 1.0, 64)
    want = np.ones_like(x)
    y = x
    for _ in range(4):  # d/dx of the chain, by hand
        t = np.tanh(y * 1.01 + 0.1)
        want = want * (1 - t * t) * 1.01
        y = t
    assert float(total) == pytest.approx(want.sum(), rel=1e-12)
