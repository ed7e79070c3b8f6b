"""CPU kernels (Numba) for AST-mode adjoints: once hot, each run of elementwise statements
-- in loop bodies too -- is one kernel call per signature of dtypes and shapes, which must
give what the unfused statements give (values within a few ulps of the transcendental
functions, the same dtypes, shapes, NaN and inf), and must never be needed: for other
types, without Numba, or with fusion off, the statements run as written."""
import subprocess
import sys
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, assume, given, seed, settings
from hypothesis import strategies as st

import tracegrad as tg
from tracegrad.transform import jit
from tracegrad.transform.ast.fused_runs import FusedRun, signature
from tracegrad.transform.ast import clear_cache
from tracegrad.transform.ast.fusing import rewrite
from tracegrad.transform.ast.front import _callees

pytest.importorskip("numba")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(tg.__file__)))
RTOL = {np.dtype(np.float16): 1e-3, np.dtype(np.float32): 2e-5, np.dtype(np.float64): 1e-12}


@pytest.fixture(autouse=True)
def hot_at_once(monkeypatch, tmp_path_factory):
    """Kernels from the second call, cached in one directory for this test session."""
    monkeypatch.setattr(jit, "HOT_CALLS", 0)
    monkeypatch.setenv("TRACEGRAD_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "kernels"))


def runs_of(g):
    """The FusedRun objects of a gradient's generated adjoint (bound or behind a guard)."""
    chosen = g._choose() if hasattr(g, "_choose") else g  # (mode="auto")
    if not chosen._fuse:
        return []
    gen = chosen.generated()
    out = []
    for c in [gen] + _callees(gen):  # (the adjoints it calls are fused too)
        for v in c.fused()[0].__globals__.values():
            run = v if isinstance(v, FusedRun) else getattr(v, "_run", None)
            if isinstance(run, FusedRun) and run not in out:
                out.append(run)
    return out


def kernels(g):
    return sum(1 for r in runs_of(g) for e in r.kernels.values() if e)


def hot(fn, *args, mode="ast", **kw):
    """``grad(fn)`` called until it runs fused; its last result and the gradient."""
    g = tg.grad(fn, mode=mode, **kw)
    for _ in range(3):
        out = g(*args)
    return out, g


def cold(fn, *args, mode="ast", **kw):
    clear_cache()  # (a generated adjoint of its own: the fused one's runs stay apart)
    with tg.fusion(False):
        return hot(fn, *args, mode=mode, **kw)


def same(got, want, dtype=None):
    """Equal up to the kernels' rounding: type, dtype, shape, NaN and inf positions too."""
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for a, b in zip(got, want):
            same(a, b)
        return
    assert type(got) is type(want)
    assert got.dtype == want.dtype and np.shape(got) == np.shape(want)
    np.testing.assert_allclose(got, want, rtol=RTOL[np.dtype(want.dtype.type)], atol=0, equal_nan=True)
    assert np.array_equal(np.isnan(got), np.isnan(want)) and np.array_equal(np.isinf(got), np.isinf(want))


def chain(y):
    for _ in range(3):
        y = np.tanh(y * 1.01 + 0.1)
    return y.sum()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(16,), (3, 5), (1,), (0,), (300,)])
def test_a_loop_body_forward_and_backward_each_become_one_kernel(dtype, shape):
    x = np.linspace(-1.5, 1.5, int(np.prod(shape))).reshape(shape).astype(dtype)
    got, g = hot(chain, x)
    want, plain = cold(chain, x)
    same(got, want)
    assert got.dtype == dtype
    assert kernels(g) == 2 and kernels(plain) == 0  # (forward body, backward body)
    assert g.fused_source.count("@cpu_fused") == 2 and "@cpu_fused" not in plain.fused_source


def test_zero_d_arguments_run_unfused_and_keep_numpy_scalars():
    x = np.float64(0.3)
    got, g = hot(chain, x)
    want, _ = cold(chain, x)
    same(got, want)
    assert kernels(g) == 0


def test_the_kernels_match_finite_differences():
    x = np.linspace(-1, 1, 7)
    got, g = hot(chain, x)
    assert kernels(g) == 2
    eps = 1e-6
    fd = [(chain(x + eps * e) - chain(x - eps * e)) / (2 * eps) for e in np.eye(7)]
    np.testing.assert_allclose(got, fd, rtol=1e-6)


def test_the_backward_body_is_one_run_around_the_stack_pop():
    g = tg.grad(chain, mode="ast")
    fused = g.fused_source
    body = fused[fused.index("for _ in reversed"):fused.index("# fused_0")]
    assert body.count("fused_") == 1 and "stack.pop()" in body
    # the pop comes after the kernel that still reads the saved value
    assert body.index("fused_") < body.index("stack.pop()")


def special(x):
    return np.sum(np.log(x) * 2.0 + np.sqrt(x) / x - np.exp(-x))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_nan_inf_and_zero_come_out_as_unfused(dtype):
    with np.errstate(all="ignore"):
        x = np.array([0.0, -0.0, -1.0, np.inf, -np.inf, np.nan, 1e-310, 2.0, 1e308]).astype(dtype)
        got, g = hot(special, x)
        want, _ = cold(special, x)
    assert kernels(g) >= 1
    same(got, want)


def negative_constant(x):
    y = np.tanh(x) * -0.5 + x / -3
    return np.sum(y * y)


def test_negative_constants_are_constants():
    x = np.linspace(-1, 1, 8).astype(np.float32)
    got, g = hot(negative_constant, x)
    want, _ = cold(negative_constant, x)
    same(got, want)
    assert "-0.5" in g.fused_source and kernels(g) >= 1
    assert all(any(r.kernels.values()) for r in runs_of(g))


def log_plus(x):
    y = np.log(x) * 2.0 + x  # (forward and backward each one kernel: log(0) and 2.0 / 0 inside)
    return np.sum(y)


def test_errors_numpy_raises_are_raised():
    x = np.array([0.0, 1.0, 2.0])
    g = tg.grad(log_plus, mode="ast")
    with np.errstate(all="ignore"):
        for _ in range(3):
            g(x + 1.0)
    assert kernels(g) == 2
    with np.errstate(divide="raise"), pytest.raises(FloatingPointError, match="divide by zero"):
        g(x)


def scaled(x, b):
    return np.sum(np.tanh(x * b + 1.0) * b)


@pytest.mark.parametrize("bshape", [(), (1,), (1, 1), (4,), (3, 1)])
def test_broadcasting_of_one_element_is_fused_other_shapes_run_unfused(bshape):
    x = np.linspace(-1, 1, 12).reshape(3, 4)
    b = np.linspace(0.5, 1.5, int(np.prod(bshape))).reshape(bshape)
    got, g = hot(scaled, x, b, argnums=(0, 1))
    want, _ = cold(scaled, x, b, argnums=(0, 1))
    same(got, want)


def test_one_element_operands_are_read_once_and_repeated():
    x = np.linspace(-1, 1, 12).reshape(3, 4)
    _, g = hot(scaled, x, np.array([0.7]), argnums=(0, 1))
    sigs = [s for r in runs_of(g) for s, e in r.kernels.items() if e]
    assert any(("one", "f64") in s for s in sigs)


def mixed(x, w):
    return np.sum(np.exp(x * w) / 3 + x * 0.5)


@pytest.mark.parametrize("wdtype", [np.float32, np.float64])
def test_float32_stays_float32_and_mixed_dtypes_promote_as_numpy(wdtype):
    x = np.linspace(-1, 1, 10).astype(np.float32)
    w = np.linspace(0.1, 2, 10).astype(wdtype)
    got, g = hot(mixed, x, w, argnums=(0, 1))
    want, _ = cold(mixed, x, w, argnums=(0, 1))
    same(got, want)
    assert got[0].dtype == np.float32 and got[1].dtype == wdtype
    assert kernels(g) >= 1


def weak(x, s):
    return np.sum(np.tanh(x * s + s) * s)


@pytest.mark.parametrize("s", [0.75, 2])
def test_python_numbers_in_variables_are_weak_as_in_numpy_2(s):
    x = np.linspace(-1, 0, 10).astype(np.float32)  # (tanh below saturation: 1 - t*t keeps its digits)
    got, g = hot(weak, x, s)
    want, _ = cold(weak, x, s)
    same(got, want)
    assert got.dtype == np.float32
    assert any(("weak", None) in sig for r in runs_of(g) for sig, e in r.kernels.items() if e)


def weak_only(x, s):
    c = s * 2.0  # (a Python float: the run cannot hand it back as an array)
    return np.sum(np.tanh(x * c + s) * c)


def test_a_run_computing_python_numbers_runs_unfused():
    x = np.linspace(-1, 1, 10).astype(np.float32)
    got, g = hot(weak_only, x, 0.5)
    want, _ = cold(weak_only, x, 0.5)
    same(got, want)
    first = min(runs_of(g), key=lambda r: r.run.name)
    assert first.kernels and not any(first.kernels.values())


def branchy(x, n):
    y = x
    for i in range(n):
        if i % 2:
            y = np.sin(y) * 0.5 + y
        else:
            y = np.exp(-y * y) - 0.25 * y
    return np.sum(y * y)


@pytest.mark.parametrize("n", [0, 1, 4])
def test_loops_with_branches(n):
    x = np.linspace(-1, 1, 9)
    got, g = hot(branchy, x, n)
    want, _ = cold(branchy, x, n)
    same(got, want)
    if n:
        assert kernels(g) >= 2
    assert g.fused_source.count("@cpu_fused") >= 4  # (each branch, forward and backward)


def test_mode_auto_fuses_the_ast_adjoint():
    x = np.linspace(-1, 1, 9)
    got, g = hot(branchy, x, 3, mode="auto")
    want, _ = cold(branchy, x, 3, mode="auto")
    assert g.mode == "ast"
    same(got, want)
    assert "@cpu_fused" in g.fused_source


@pytest.mark.parametrize("view", ["transposed", "strided"])
def test_non_contiguous_arguments(view):
    base = np.linspace(-1, 1, 24).reshape(4, 6)
    x = base.T if view == "transposed" else base[:, ::2]
    got, g = hot(chain, x)
    want, _ = cold(chain, x)
    same(got, want)
    assert kernels(g) == 2


def test_broadcast_views_read_only_and_fortran_arrays_are_read_as_numpy_reads_them():
    x = np.linspace(-1, 1, 24).reshape(4, 6)
    frozen = x.copy()
    frozen.flags.writeable = False
    for a in (np.broadcast_to(x[0], (4, 6)), frozen, np.asfortranarray(x)):
        got, g = hot(chain, a)
        want, _ = cold(chain, a)
        same(got, want)
        assert kernels(g) == 2


def test_other_dtypes_and_tensors_run_unfused():
    x16 = np.linspace(-1, 1, 5).astype(np.float16)
    got, g = hot(chain, x16)
    want, _ = cold(chain, x16)
    same(got, want)
    assert kernels(g) == 0
    t = tg.tensor(np.linspace(-1, 1, 5))
    got, g = hot(chain, t)
    want, _ = cold(chain, t)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12)


def test_one_gradient_after_another_reuses_the_kernels_per_signature():
    x32, x64 = np.linspace(-1, 1, 6).astype(np.float32), np.linspace(-1, 1, 6)
    g = tg.grad(chain, mode="ast")
    for x in (x32, x64, x32, x64, x64[:5], x32[None]):
        for _ in range(2):
            got = g(x)
        want, _ = cold(chain, x)
        same(got, want)
    assert kernels(g) == 4  # (float32 and float64, forward and backward)


def test_signature_refuses_what_the_kernels_do_not_compute():
    a = np.ones((3, 4))
    assert signature((a, np.ones(4))) is None            # broadcasting that is not repetition
    assert signature((np.float64(1.0),)) is None         # NumPy scalars
    assert signature((np.ones(()),)) is None             # 0-d results are scalars in NumPy
    assert signature((a, True)) is None                  # bool is not a weak float
    assert signature((a, 2 ** 60)) is None               # an int float64 would round
    assert signature((np.ones(3, np.int64),)) is None
    assert signature((a, np.ones((1, 1)), 1.5)) == (("full", "f64"), ("one", "f64"), ("weak", None), "small")


def test_without_numba_everything_runs_unfused(monkeypatch):
    x = np.linspace(-1, 1, 8)
    want, _ = cold(chain, x)
    monkeypatch.setitem(sys.modules, "numba", None)
    jit.forget()
    try:
        got, g = hot(chain, x)
        assert "@cpu_fused" not in g.fused_source and kernels(g) == 0
    finally:
        monkeypatch.undo()
        jit.forget()
    same(got, want)


def test_a_kernel_numba_cannot_compile_runs_unfused_with_a_warning(monkeypatch):
    from numba.core.errors import TypingError

    def refuse(source, name):
        raise TypingError("simulated")
    monkeypatch.setattr(jit, "load_kernel", refuse)
    x = np.linspace(-1, 1, 6)
    with pytest.warns(RuntimeWarning, match="could not compile the fused kernel"):
        got, g = hot(chain, x)
    want, _ = cold(chain, x)
    same(got, want)
    assert kernels(g) == 0 and all(r.kernels for r in runs_of(g))


def test_rewriting_keeps_only_live_values_and_leaves_other_lines():
    env = {"np": np}
    source = ("def f(x, y):\n"
              "    a = x * 2.0\n"
              "    b = np.tanh(a) + y\n"
              "    c = b.sum()\n"
              "    d = c * b\n"
              "    e = -d\n"
              "    p = print(e)\n"
              "    q = e * e\n"
              "    r = q + 1.0\n"
              "    return r\n")
    text, runs = rewrite(source, env)
    # d reads c: not moved above it; nor q above a call that may change e in place
    assert [(r.ins, r.outs) for r in runs] == [(["x", "y"], ["b"]), (["c", "b"], ["e"]), (["e"], ["r"])]
    assert text.index("fused_1") < text.index("p = print(e)") < text.index("fused_2")
    assert "c = b.sum()" in text


def test_statements_move_only_past_the_stack_of_saved_values():
    source = ("def f(x, y):\n"
              "    stack = []\n"
              "    a = x * 2.0\n"
              "    stack.append(a)\n"
              "    y = stack.pop()\n"
              "    b = np.exp(x) * x\n"
              "    other = [1]\n"
              "    other.append(x)\n"
              "    c = b * 2.0 + 1.0\n"
              "    return c + y + len(other)\n")
    text, runs = rewrite(source, {"np": np})
    assert [(r.ins, r.outs) for r in runs] == [(["x"], ["a", "b"]), (["b"], ["c"])]
    assert "    stack.append(a)\n    y = stack.pop()\n    other = [1]\n    other.append(x)\n    c = fused_1(b)" in text


NP = np


def uses_global(y):
    for _ in range(2):
        y = NP.tanh(y * 1.5 + 0.1)
    return y.sum()


def test_a_rebound_global_is_read_again(monkeypatch):
    x = np.linspace(-1, 1, 5)
    got, g = hot(uses_global, x)
    with tg.fusion(False):
        plain = tg.grad(uses_global, mode="ast")
    assert kernels(g) == 2
    before = got
    monkeypatch.setitem(globals(), "NP", type("NumPyLike", (), {"tanh": staticmethod(np.sin)}))
    for _ in range(3):
        got, want = g(x), plain(x)
    np.testing.assert_allclose(got, want, rtol=1e-12)  # (as the unfused code reads NP again)
    assert not np.allclose(got, before)


def test_show_prints_the_fused_runs(tmp_path):
    path = tmp_path / "model.py"
    path.write_text("import numpy as np\n\n\ndef chain(y):\n    for _ in range(3):\n"
                    "        y = np.tanh(y * 1.01 + 0.1)\n    return y.sum()\n")
    out = subprocess.run([sys.executable, "-m", "tracegrad", "show", f"{path}:chain", "--color", "never"],
                         capture_output=True, text=True, check=True,
                         env=dict(os.environ, PYTHONPATH=ROOT)).stdout
    assert out.count("@cpu_fused") == 2
    assert "def fused_0(y):\n    y = np.tanh(y * 1.01 + 0.1)\n    return y" in out
    assert "y = fused_0(y)" in out and "dy = fused_1(dy, y)" in out


@pytest.mark.torch
def test_fused_gradient_equals_torch():
    import torch
    x = np.linspace(-1, 1, 10)
    got, g = hot(special_safe, x + 2.0)
    t = torch.tensor(x + 2.0, requires_grad=True)
    (torch.log(t) * 2.0 + torch.sqrt(t) / t - torch.exp(-t)).sum().backward()
    assert kernels(g) >= 1
    np.testing.assert_allclose(got, t.grad.numpy(), rtol=1e-12)


def special_safe(x):
    return special(x)


# -- the AST zoo, fused against unfused ------------------------------------------------------

def _zoo():
    from .test_ast_zoo import ZOO
    return [pytest.param(c, id=c.name) for c in ZOO if "fd" not in c.xfail]


_FUSED = {}


@pytest.mark.parametrize("case", _zoo())
def test_zoo_entry_fused_equals_unfused(case):
    args = case.args(np.random.default_rng(0))
    with np.errstate(all="ignore"):
        got, g = hot(case.fn, *args, argnums=case.argnums)
        want, _ = cold(case.fn, *args, argnums=case.argnums)
    got, want = (got, want) if isinstance(case.argnums, tuple) else ((got,), (want,))
    for a, b in zip(got, want):
        assert type(a) is type(b)
        a, b = np.asarray(a), np.asarray(b)
        assert a.shape == b.shape and a.dtype == b.dtype
        np.testing.assert_allclose(a, b, rtol=RTOL.get(b.dtype, 1e-12), atol=1e-300, equal_nan=True)
    _FUSED[case.name] = kernels(g)


def test_many_zoo_entries_fuse():
    if len(_FUSED) < 40:
        pytest.skip("run with the zoo tests of this file")
    assert sum(n > 0 for n in _FUSED.values()) >= 15, _FUSED


# -- the fuzzer's programs, fused against unfused --------------------------------------------

_FUZZ_KERNELS = []


def _outcome(g, args):
    try:
        with np.errstate(all="ignore"):
            return "ok", g(*[a.copy() if isinstance(a, np.ndarray) else a for a in args])
    except Exception as e:  # (both ways must raise the same)
        return type(e).__name__, None


@pytest.mark.filterwarnings("ignore")
@seed(18)  # (derandomize's seed hashes the checkout's path:
@settings(max_examples=int(os.environ.get("TRACEGRAD_FUZZ_FUSED_EXAMPLES", "20")), deadline=None,  # a fixed one
          database=None, phases=[Phase.explicit, Phase.generate],  # makes the programs below the same
          suppress_health_check=list(HealthCheck))  # everywhere, so that test_fuzzed_programs_ran_kernels holds)
@given(st.data())
def test_fuzzed_programs_fused_equal_unfused(data):
    from . import fuzz_programs as fp
    from .test_fuzz_differential import load
    program = data.draw(fp.grad_programs(hazards=False))
    f = load(program)
    try:
        tg.grad(f, argnums=program.argnums, mode="ast").generated()
    except tg.TransformError:
        assume(False)
    g = tg.grad(f, argnums=program.argnums, mode="ast")
    for _ in range(2):
        got = _outcome(g, program.args)
    clear_cache()
    with tg.fusion(False):
        want = _outcome(tg.grad(f, argnums=program.argnums, mode="ast"), program.args)
    assert got[0] == want[0], program.source
    _FUZZ_KERNELS.append(kernels(g))
    if got[0] == "ok":
        a, b = (got[1], want[1]) if isinstance(got[1], tuple) else ((got[1],), (want[1],))
        for x, y in zip(a, b):
            assert type(x) is type(y), program.source
            np.testing.assert_allclose(x, y, rtol=1e-10, atol=1e-300, equal_nan=True,
                                       err_msg=program.source)


def test_fuzzed_programs_ran_kernels():
    if len(_FUZZ_KERNELS) < 10:
        pytest.skip("run with the fuzz test of this file")
    assert sum(n > 0 for n in _FUZZ_KERNELS) >= 3, _FUZZ_KERNELS


def scaled_chain(y, s, b):
    for _ in range(2):
        y = np.tanh(y * s + b)
    return y.sum()


def _unaligned(values):
    """``values`` (float32) in an array whose data sits one byte off alignment."""
    raw = np.zeros(values.nbytes + 1, np.uint8)
    out = np.frombuffer(raw.data[1:], np.float32)
    out[:] = values
    assert not out.flags.aligned
    return out


def test_small_1d_signatures_call_numbas_entry_point_for_any_1d_array():
    """After the guard sends 1-d small arrays to the kernel's compiled entry point (no
    Numba dispatch), it must still read every 1-d array as NumPy does: strided, broadcast
    (stride 0), read-only, unaligned; others (2-d, byte-swapped) go elsewhere."""
    base = np.linspace(-1.2, 1.3, 32).astype(np.float32)
    b = np.array([0.1], np.float32)
    frozen = base[:16].copy()
    frozen.flags.writeable = False
    xs = [base[::2], base[16:], np.broadcast_to(np.float32(0.4), (16,)), frozen,
          _unaligned(base[:16]), base[:15].reshape(3, 5), base[:16].astype(">f4"),
          np.array([np.nan, np.inf, -np.inf, 0.0], np.float32)]
    bs = [b, np.broadcast_to(np.float32(-0.3), (1,)), _unaligned(b)]
    cases = [(x, bb) for x in xs for bb in bs]
    wants = [cold(scaled_chain, x, 0.7, bb)[0] for x, bb in cases]
    g = tg.grad(scaled_chain, mode="ast")
    for _ in range(3):
        g(base[:16].copy(), 0.7, b)
    runs = runs_of(g)
    assert runs and all(e[5] is not None for r in runs for e in r.fast)  # (the entry points)
    for (x, bb), want in zip(cases, wants):
        same(g(x, 0.7, bb), want)
