"""CPU kernels for the elementwise rules that are not one NumPy ufunc -- relu, ``where`` and
the comparisons feeding it, written by the rule table's ``scalar_code`` -- give exactly
what the unfused lines give (no transcendental function is involved: the same bits, NaN
where NaN, the same sign on each zero, the same dtypes), on the small path, the blocked
path and the threaded one."""
import numpy as np
import pytest

import tracegrad as tg
from tracegrad.transform import jit

pytest.importorskip("numba")

SPECIAL = [np.nan, np.inf, -np.inf, -0.0, 0.0, 0.1, -0.1, 1e-30, 0.25, 3.0]
SIZES = [16, 3 * 256 + 5, jit.PARALLEL_MIN + 7]  # one loop, blocks, the threaded twin


@pytest.fixture(autouse=True)
def hot_at_once(monkeypatch, tmp_path_factory):
    monkeypatch.setattr(jit, "HOT_CALLS", 0)
    monkeypatch.setenv("TRACEGRAD_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "kernels"))


def values(n, dtype, seed=0):
    x = np.random.default_rng(seed).standard_normal(n)
    x[:len(SPECIAL)] = SPECIAL
    return x.astype(dtype)


def run(fn, *args, fused=True, **kw):
    """``grad(fn)`` on the tape, replayed until hot; its result and source."""
    with tg.fusion(fused):
        g = tg.grad(fn, mode="tape", **kw)
        for _ in range(3):
            out = g(*args)
    return out, g.source


def assert_same(got, want):
    """Bit for bit: equal values, NaN where NaN, the same sign on every zero."""
    for g, w in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_array_equal(g, w)
        np.testing.assert_array_equal(np.signbit(g), np.signbit(w))


def masked(x, w):
    m = x * w <= 0.1                      # a comparison with a weak Python float
    y = np.where(m, x * 3.0, np.sqrt(np.abs(x)))  # its mask read after function calls
    return np.sum(np.where(x > 0, y, 0.0) * w)


def counted(x):
    m = x > 0.25
    return np.sum(np.where(m, x * x, -x)) + np.sum(m)  # the bool escapes the kernel


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", SIZES)
def test_where_and_comparisons_fuse_and_equal_the_unfused_lines(dtype, n):
    x, w = values(n, dtype), values(n, dtype, seed=1)
    with np.errstate(all="ignore"):
        got, source = run(masked, x, w, argnums=(0, 1))
        want, plain = run(masked, x, w, argnums=(0, 1), fused=False)
    assert "@cpu_kernel" in source and "@cpu_kernel" not in plain
    assert " if " in source  # (the select, as the rule table writes it)
    assert_same(got, want)
    got, _ = run(counted, x)
    want, _ = run(counted, x, fused=False)
    assert_same(got, want)


def test_the_threaded_twin_gives_the_same_values():
    x, w = values(SIZES[-1], np.float64), values(SIZES[-1], np.float64, seed=1)
    want, _ = run(masked, x, w, argnums=(0, 1), fused=False)
    previous = tg.get_num_threads()
    tg.set_num_threads(2)
    try:
        got, _ = run(masked, x, w, argnums=(0, 1))
    finally:
        tg.set_num_threads(previous)
    assert_same(got, want)


def test_a_float_condition_or_mixed_branches_stay_unfused():
    x32, x64 = values(40, np.float32), values(40, np.float64)

    def float_condition(x):
        return np.sum(np.where(x * 2.0, x * 3.0, x) * 1.5)

    def mixed(x, y):
        return np.sum(np.where(x > 0, x * 2.0, y * 2.0) * 1.5)
    for fn, args, argnums in ((float_condition, (x64,), 0), (mixed, (x32, x64), (0, 1))):
        got, source = run(fn, *args, argnums=argnums)
        assert_same(got, run(fn, *args, argnums=argnums, fused=False)[0])
        if fn is float_condition:  # (its selects run unfused: xp.where's truth of a float)
            assert " if " not in source


class ReluNet(tg.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = tg.nn.Linear(8, 8)

    def forward(self, x):
        return tg.nn.functional.relu(self.fc(x)).relu().sum() + tg.relu(x * 2.0).sum()


@pytest.mark.parametrize("dtype", [tg.float32, tg.float64])
def test_a_compiled_module_runs_its_relus_as_kernels_once_hot_and_equals_eager(dtype):
    tg.manual_seed(0)
    model = ReluNet().to(dtype)
    x = tg.tensor(values(40 * 8, np.float64).reshape(40, 8), dtype=dtype, requires_grad=True)
    compiled = tg.compile(model)
    for step in range(3):
        grads = []
        for run_ in (model, compiled):
            model.zero_grad()
            x.grad = None
            with np.errstate(all="ignore"):
                out = run_(x)
                out.backward()
            grads.append([out.detach().numpy()] + [p.grad.numpy().copy() for p in model.parameters()]
                         + [x.grad.numpy().copy()])
        for e, c in zip(*grads):
            np.testing.assert_array_equal(c, e)
            np.testing.assert_array_equal(np.signbit(c), np.signbit(e))
    source = compiled._compiled.source if hasattr(compiled, "_compiled") else compiled.source
    assert "@cpu_kernel" in source and "> 0 or" in source  # relu's scalar code


def test_a_numba_failure_runs_the_rules_kernels_on_whole_arrays(monkeypatch):
    from numba.core.errors import TypingError

    def refuse(source, name):
        def kernel(*args):
            raise TypingError("simulated")
        return kernel

    def selects(x):
        return np.sum(np.where(x > 0.5, x * 2.0, x * x))
    x = values(40 * 8, np.float64)
    want, _ = run(selects, x, fused=False)
    tg.manual_seed(0)
    model = ReluNet()
    xt = tg.tensor(np.nan_to_num(x, nan=1.0, posinf=2.0, neginf=-2.0).reshape(40, 8), dtype=tg.float32, requires_grad=True)
    eager = model(xt)
    eager.backward()
    eager_grad, xt.grad = xt.grad, None
    monkeypatch.setattr(jit, "load_kernel", refuse)
    with pytest.warns(RuntimeWarning, match="could not compile the fused kernel"):
        got, source = run(selects, x)
        compiled = tg.compile(model)
        for _ in range(2):
            xt.grad = None
            out = compiled(xt)
            out.backward()
    assert "@cpu_kernel" in source and "@cpu_kernel" in compiled._compiled.source
    assert_same(got, want)
    assert tg.equal(out, eager) and tg.equal(xt.grad, eager_grad)


def test_a_masked_minus_zero_gets_the_unfused_lines_zero():
    # where(mask, g, 0.0) on a -0.0 that the mask keeps: the rule's kernel adds 0.0 (its
    # masking product), so the kernel must too -- also where the array holds inf/nan
    def kept(x, w):
        return np.sum(np.where(x > 0, x * 1.0, 0.0) * w)

    def dropped(x, w):
        return np.sum(np.where(x <= 0, 0.0, x * 1.0) * w)
    for fn in (kept, dropped):
        for extra in (1.0, np.inf):
            x = np.array([1.0, 2.0, -1.0, 3.0, 0.5, extra] * 3)
            w = np.array([-0.0, 1.0, -0.0, -2.0, -0.0, 1.0] * 3)
            with np.errstate(all="ignore"):
                got, source = run(fn, x, w, argnums=(0, 1))
                want, _ = run(fn, x, w, argnums=(0, 1), fused=False)
            assert "@cpu_kernel" in source
            assert_same(got, want)
            assert not np.signbit(got[0][0])  # (-0.0 kept by the mask, then + 0.0)
