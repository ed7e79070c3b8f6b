"""Fused runs of AST adjoints that write a result over an argument's memory (see
tracegrad.transform.ast.buffer_reuse): only where no other name can see the old array,
proved from the code, and only over arrays the runs made. The values must be those of the
unfused adjoint, and an array a user holds must never change."""
import ast
import types

import numpy as np
import pytest

import tracegrad as tg
from tracegrad.transform import jit
from tracegrad.transform.ast import buffer_reuse, clear_cache, fused_runs
from tracegrad.transform.ast.fusing import rewrite
from tracegrad.transform.ast.fused_runs import fuse

from .test_ast_cpu_fusion import cold, hot, runs_of, same

pytest.importorskip("numba")

LARGE = jit.PARALLEL_MIN * 2   # (runs write in place only on large arrays)


@pytest.fixture(autouse=True)
def hot_at_once(monkeypatch, tmp_path_factory):
    monkeypatch.setattr(jit, "HOT_CALLS", 0)
    monkeypatch.setenv("TRACEGRAD_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "kernels"))


@pytest.fixture
def made(monkeypatch):
    """The arrays fused runs make (fused_runs._new), in order: guards are made anew (each
    binds the function it calls when it is made)."""
    clear_cache()
    made = []
    real = fused_runs._new

    def counting(shape, dtype):
        out = real(shape, dtype)
        made.append(out)
        return out
    monkeypatch.setattr(fused_runs, "_new", counting)
    yield made
    clear_cache()


STEPS = 5


def chain(y):
    for _ in range(STEPS):
        y = np.tanh(y * 1.01 + 0.1)
    return y.sum()


def chain_by_hand(x):
    ys = [x]
    for _ in range(STEPS):
        ys.append(np.tanh(ys[-1] * 1.01 + 0.1))
    g = np.ones_like(x)
    for y in reversed(ys[1:]):
        g = g * (1 - y * y) * 1.01
    return g


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_backward_loop_writes_its_gradient_in_place_from_the_second_pass(dtype, made):
    x = np.linspace(-1, 1, LARGE).astype(dtype)
    got, g = hot(chain, x)
    want, _ = cold(chain, x)
    same(got, want)
    np.testing.assert_allclose(got, chain_by_hand(x), rtol=1e-5 if dtype == np.float32 else 1e-12)
    backward = next(r.run for r in runs_of(g) if r.run.ins == ["dy", "y"])
    assert backward.reuse == [(0, 0)]
    assert "dy = own(spread(" in g.fused_source
    assert "it may write dy over the array passed in" in g.fused_source
    del made[:]
    g(x)
    # forward: one new array per step (the stack keeps them); backward: only the first
    # pass (its argument is a broadcast of the seed), then each pass writes over the last
    assert len(made) == STEPS + 1


def test_small_and_middle_sized_arrays_are_not_written_over(made):
    x = np.linspace(-1, 1, jit.PARALLEL_MIN // 2)
    got, g = hot(chain, x)
    np.testing.assert_allclose(got, chain_by_hand(x), rtol=1e-12)
    del made[:]
    g(x)
    assert not made  # (np.empty directly: nothing registered, nothing written over)


def test_gradients_returned_earlier_stay_as_they_were():
    x = np.linspace(-1, 1, LARGE)
    g = tg.grad(chain, mode="ast")
    first = [g(x) for _ in range(4)]
    kept = [a.copy() for a in first]
    for _ in range(3):
        g(x * 0.5)
    for a, b in zip(first, kept):
        np.testing.assert_array_equal(a, b)


HANDS_BACK = """def f(seed, y):
    d = spread(seed)
    for _ in range(3):
        d = d * (1 - y * y)
        d = d * 1.01
    return d
"""


def test_an_array_the_runs_made_that_comes_back_in_is_copied_not_written_over():
    """The worst case: a helper hands back the caller's array -- here one a fused run made
    earlier (a gradient the user kept), so it is in the registry -- as the value a loop
    writes over: ``own`` must copy it."""
    env = {"np": np, "spread": lambda v: v}
    exec(compile(HANDS_BACK, "<hands back>", "exec"), env)
    gen = types.SimpleNamespace(fn=env["f"], own_source=HANDS_BACK, callees=[], name="f")
    fused, text = fuse(gen)
    assert "d = own(spread(seed))" in text
    y = np.linspace(-1, 1, LARGE)
    for _ in range(2):
        kept = fused(np.ones(LARGE), y)   # (the kernels compiled; a result they made)
    assert fused_runs._ours(kept)
    before = kept.copy()
    got = fused(kept, y)
    np.testing.assert_array_equal(kept, before)
    np.testing.assert_array_equal(got, env["f"](before, y))


def test_own_copies_only_arrays_the_runs_made():
    mine = fused_runs._new((LARGE,), np.float64)
    mine[:] = 2.0
    copy = fused_runs.own(mine)
    assert copy is not mine and np.array_equal(copy, mine) and fused_runs._ours(copy)
    theirs = np.ones(LARGE)
    assert fused_runs.own(theirs) is theirs and not fused_runs._ours(theirs)
    view = fused_runs._new((LARGE,), np.float64)[::2]
    assert not fused_runs._ours(view) and fused_runs.own(view) is view
    frozen = fused_runs._new((LARGE,), np.float64)
    frozen.flags.writeable = False
    assert not fused_runs._ours(frozen)


def test_the_registry_forgets_arrays_that_died():
    a = fused_runs._new((LARGE,), np.float64)
    key = id(a)
    assert key in fused_runs._MADE
    del a
    assert key not in fused_runs._MADE


# -- the proof, on generated-like source -------------------------------------------------------

def plan_of(body, params="x, y"):
    """``(source, {run name: reuse})`` after rewriting ``def f(params): body``."""
    source = f"def f({params}):\n" + "".join(f"    {line}\n" for line in body.strip("\n").split("\n"))
    text, runs = rewrite(source, {"np": np, "spread": None, "g": None})
    return text, {r.name: (r.ins, r.outs, r.reuse) for r in runs}


LOOP = """
d = spread(x)
for _ in range(3):
    d = d * (1 - y * y)
    d = d * 1.01
    y = g(y)
return d
"""


def test_a_loop_carried_private_name_is_reused_and_its_entry_owned():
    text, runs = plan_of(LOOP)
    assert runs == {"fused_0": (["d", "y"], ["d"], [(0, 0)])}
    assert "d = own(spread(x))" in text


@pytest.mark.parametrize("extra", [
    "keep = [d]",             # another name (a list) holds it
    "s = np.sum(d)",          # a call sees it (it may keep it)
    "e = d",                  # a second name
    "h = lambda: d",          # a closure
])
def test_a_name_read_anywhere_else_is_never_written_over(extra):
    body = LOOP.replace("    y = g(y)", f"    y = g(y)\n    {extra}")
    text, runs = plan_of(body)
    assert runs["fused_0"][2] == []
    assert "own(" not in text


def test_a_foreign_value_on_one_branch_inside_the_loop_blocks_reuse():
    body = LOOP.replace("    y = g(y)", "    y = g(y)\n    if y:\n        d = g(x)")
    text, runs = plan_of(body)
    assert runs["fused_0"][2] == [] and "own(" not in text


def test_a_foreign_value_after_a_break_or_in_a_try_blocks_reuse():
    body = LOOP.replace("    y = g(y)", "    y = g(y)\n    if y:\n        d = g(x)\n        continue")
    assert plan_of(body)[1]["fused_0"][2] == []
    body = "d = spread(x)\ntry:\n    for _ in range(3):\n        d = d * (1 - y * y)\n" \
           "        d = d * 1.01\n        y = g(y)\nexcept ValueError:\n    pass\nreturn d"
    assert plan_of(body)[1]["fused_0"][2] == []


def test_a_parameter_is_not_owned_and_a_run_result_is():
    text, runs = plan_of("x = x * y + 1.0\nz = g(x)\nx = x * 2.0 + z\nreturn x")
    assert runs["fused_0"][2] == []                       # x: the caller's array
    assert runs["fused_1"][:2] == (["x", "z"], ["x"])
    assert runs["fused_1"][2] == [] and "own(" not in text  # x is read by g(x)
    text, runs = plan_of("a = x * y + 1.0\nz = g(y)\na = a * 2.0 + z\nreturn a")
    assert runs["fused_1"][2] == [(0, 0)]               # a: made by fused_0, read by nothing else


def test_the_helper_takes_a_name_the_function_does_not_use():
    body = LOOP.replace("return d", "return d + own")
    text, _ = plan_of(body, params="x, y, own")
    assert "d = own1(spread(x))" in text


def test_plan_marks_nothing_without_a_name_both_read_and_written():
    tree = ast.parse("def f(x):\n    return x\n")
    assert buffer_reuse.plan(tree.body[0], [], "own") is False


# -- values -----------------------------------------------------------------------------------

def nested_chain(y):
    for i in range(2):
        for j in range(3):
            y = np.tanh(y * 0.7 - 0.3)
    return y.sum()


def without_reuse(monkeypatch, fn, *args, **kw):
    """``hot(fn, ...)`` on a generated adjoint of its own whose runs never write over an
    argument (every array is new, as before buffer_reuse)."""
    clear_cache()
    with monkeypatch.context() as m:
        m.setattr(fused_runs, "_ours", lambda a: False)
        got, _ = hot(fn, *args, **kw)
    clear_cache()
    return got


@pytest.mark.parametrize("fn,dtype", [(chain, np.float32), (chain, np.float64), (nested_chain, np.float64)])
def test_runs_writing_in_place_give_bit_for_bit_the_values_of_new_arrays(monkeypatch, made, fn, dtype):
    x = np.linspace(-2, 2, LARGE).astype(dtype)
    want = without_reuse(monkeypatch, fn, x)
    got, g = hot(fn, x)
    assert any(r.run.reuse for r in runs_of(g))
    np.testing.assert_array_equal(got, want)
    for _ in range(2):  # (again: the arrays of the first calls are in the registry)
        del made[:]
        again = g(x)
        np.testing.assert_array_equal(again, want)
        assert again.dtype == dtype
    assert len(made) < 2 * 6   # (some passes wrote in place)
    plain, _ = cold(fn, x)     # the unfused adjoint, up to the kernels' tanh (a few ulps)
    np.testing.assert_allclose(got, plain, rtol=1e-4 if dtype == np.float32 else 1e-9)


# Adjoint-like code (operators only: the kernels compute them bit for bit as NumPy does),
# fused as generated adjoints are, against the same code run plainly
PROGRAMS = {
    "while and break": """def f(seed, y, n):
    d = seed + 0.0
    e = seed * 2.0
    k = 0
    while True:
        k += 1
        d = d * (1.0 - y * y)
        d = d * 1.01 + e
        if k >= n:
            break
    return d
""",
    "both branches run": """def f(seed, y, n):
    d = spread(seed)
    for k in range(n):
        if k % 2:
            d = d * y + 0.5
            d = d * 0.25
        else:
            d = d - y * 0.5
            d = d / 1.5
    return d
""",
    "two names in one run": """def f(seed, y, n):
    a = spread(seed)
    b = spread(y)
    for k in range(n):
        t = a * b
        a = t + a * 0.5
        b = b - t * 0.25
        b = b * 0.5
    return a, b
""",
    "a value read after its name is written": """def f(seed, y, n):
    d = spread(seed)
    for k in range(n):
        old = d * 1.0
        d = d * y
        d = d + old * 0.5
        e = old - d
        d = d + e * 0.125
    return d
""",
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
@pytest.mark.parametrize("n", [0, 1, 5])
def test_fused_programs_writing_in_place_equal_the_plain_code(name, n, made):
    source = PROGRAMS[name]
    env = {"np": np, "spread": lambda v: v}
    exec(compile(source, f"<{name}>", "exec"), env)
    plain = env["f"]
    fused, text = fuse(types.SimpleNamespace(fn=plain, own_source=source, callees=[], name="f"))
    assert "it may write" in text
    rng = np.random.default_rng(0)
    seed, y = rng.uniform(-1, 1, LARGE), rng.uniform(-1, 1, LARGE)
    for _ in range(3):  # (the first compiles each run's kernel; then its guard runs)
        del made[:]
        given = seed.copy(), y.copy()
        got = fused(*given, n)
        want = plain(seed.copy(), y.copy(), n)
        np.testing.assert_array_equal(given[0], seed)  # (arguments never written over)
        np.testing.assert_array_equal(given[1], y)
        for a, b in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
            np.testing.assert_array_equal(a, b)
    assert len(made) <= 2   # (n passes: the first made new arrays, the others wrote in place)
