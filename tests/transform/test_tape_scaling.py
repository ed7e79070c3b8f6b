"""Long tapes: index writes trace in linear time, long bodies compile in parts with the
same results and source, generated code leaves linecache with its variant, and values
are released once nothing can read them. (Behaviour only: the timings are measured by
benchmarks/tracing.py.)"""
import gc
import linecache

import numpy as np
import pytest

import tracegrad as tg
from tracegrad.transform.api import grad
from tracegrad.transform.tape import codegen, staged
from tracegrad.transform.tape.sweeps import alias, reverse
from tracegrad.transform.tape.tape import Released, Tape, Var
from tracegrad.transform.tape.tracing import recording

from .numeric import numeric


# -- x[i] = v: linear ---------------------------------------------------------------------------

class _Watched(list):
    """A tape's eqn list that remembers the lowest index read through ``[k]``."""

    lowest = None

    def __getitem__(self, k):
        if isinstance(k, int):
            k = k % len(self)
            self.lowest = k if self.lowest is None else min(self.lowest, k)
        return super().__getitem__(k)


def test_an_index_write_visits_only_the_eqns_since_the_written_value_was_made():
    tape = Tape("f")
    tape.eqns = _Watched()
    with recording(tape):
        x = tape.new_input(np.linspace(0.1, 0.2, 3), "x")
        y = tape.new_input(np.float64(0.5), "y")
        x = x + 0.0
        for i in range(60):
            z = np.tanh(y) * 2.0   # unrelated eqns recorded in between
            made = x.at
            assert tape.eqns[made].outs[0] is x  # ``at``: the eqn that made x
            tape.eqns.lowest = None
            x[i % 3] = x[i % 3] * 0.999 + z
            assert tape.eqns.lowest >= made, "an index write looked at eqns before its Var"
        tape.outputs = np.sum(x)


def test_index_write_loops_are_differentiated_correctly():
    def f(x, y):
        x = x + 0.0
        for i in range(40):
            x[i % 3] = x[i % 3] * 0.999 + y * x[(i + 1) % 3]
        return np.sum(x * x)

    x, y = np.array([0.1, 0.2, 0.3]), 0.7
    got = tg.grad(f, mode="tape")(x, y)
    np.testing.assert_allclose(got, numeric(lambda v: f(v.copy(), y), x), rtol=1e-6)
    gy = tg.grad(f, argnums=1, mode="tape")(x, y)
    np.testing.assert_allclose(gy, numeric(lambda v: f(x.copy(), v[0]), np.array([y]))[0],
                               rtol=1e-6)


def test_an_index_write_renames_earlier_uses_inputs_and_constants():
    buf = np.array([1.0, 2.0, 3.0])

    def f(x):
        before = x * 2.0          # reads the old x
        x[0] = x[1] * 3.0         # writes into the input
        c = buf + 0.0
        c = c + buf               # the captured constant, read twice
        x[2] = x[2] + np.sum(c)
        return np.sum(before * x) + np.sum(x)

    x = np.array([0.3, -0.4, 0.5])
    np.testing.assert_allclose(tg.grad(f, mode="tape")(x),
                               numeric(lambda v: f(v.copy()), x), rtol=1e-6)


# -- compiling long bodies in parts -------------------------------------------------------------

def _loop(x):
    for i in range(60):
        x = np.tanh(x) * 0.5 + x
        if np.sum(x) > 1e6:  # a guard in every part
            x = x * 0.0
    return np.sum(x)


@pytest.fixture
def small_chunks(monkeypatch):
    monkeypatch.setattr(codegen, "CHUNK_LINES", 7)


def _staged(x, chunked, monkeypatch):
    monkeypatch.setattr(codegen, "CHUNK_LINES", 7 if chunked else 10 ** 9)
    g = grad(_loop, mode="tape")
    first = g(x)
    return g, first, g(x)


def test_a_long_body_compiled_in_parts_gives_the_same_results_and_source(monkeypatch):
    x = np.linspace(0.2, 0.6, 5)
    whole, first_w, again_w = _staged(x, False, monkeypatch)
    parts, first_p, again_p = _staged(x, True, monkeypatch)
    assert whole.source == parts.source
    assert "__parts" not in parts.source and parts.source.count("\ndef ") == 0
    np.testing.assert_array_equal(first_p, first_w)
    np.testing.assert_array_equal(again_p, again_w)   # the replay runs the parts
    assert len(parts._last.fn.__globals__[f"{parts._last.fn.__name__}__parts"]) > 10
    np.testing.assert_allclose(again_p, numeric(_loop, x), rtol=1e-5)


def assert_lines_and_guard_traceback(fn, source, failing):
    """``fn``'s file holds ``source`` line for line, and a guard failing on ``failing``
    points at its own ``raise GuardFailed`` line of it."""
    lines = source.splitlines()
    filename = fn.__code__.co_filename
    assert [linecache.getline(filename, i + 1).rstrip("\n") for i in range(len(lines))] == lines
    with pytest.raises(codegen.GuardFailed) as info:
        fn(failing)
    tb = info.tb
    while tb.tb_next is not None:
        tb = tb.tb_next
    assert tb.tb_frame.f_code.co_filename == filename
    assert "raise GuardFailed" in lines[tb.tb_lineno - 1]


def test_parts_show_the_source_lines_in_tracebacks(small_chunks):
    g = grad(_loop, mode="tape")
    g(np.linspace(-1, 1, 5))
    fn = g._last.fn
    assert_lines_and_guard_traceback(fn, g.source, np.full(5, 1e7))
    # and a failing guard makes a new variant, as with one function
    big = np.full(5, 1e7)
    np.testing.assert_allclose(g(big), numeric(_loop, big, eps=1e-3), rtol=1e-5)


# -- linecache entries leave with their variants ------------------------------------------------

def _tape_files(g):
    return {v.fn.__code__.co_filename for vs in g._cache.values() for v in vs}


def test_linecache_entries_of_dropped_variants_are_removed(monkeypatch):
    monkeypatch.setattr(staged, "MAX_SIGNATURES", 4)
    g = tg.grad(lambda x: np.sum(np.tanh(x) * x), mode="tape")
    files = []
    for k in range(1, 11):
        g(np.ones(k))
        files.append(g._last.fn.__code__.co_filename)
    assert len(set(files)) == 10
    gc.collect()
    assert [f in linecache.cache for f in files] == [False] * 6 + [True] * 4
    assert _tape_files(g) == set(files[6:])
    del g
    gc.collect()
    assert not any(f in linecache.cache for f in files)


def test_linecache_entries_of_parts_and_of_ast_functions_are_removed(small_chunks):
    g = grad(_loop, mode="tape")
    g(np.linspace(-1, 1, 5))
    (tape_file,) = _tape_files(g)
    assert tape_file in linecache.cache
    del g
    gc.collect()
    assert tape_file not in linecache.cache


def test_compile_source_entries_leave_with_the_function():
    from tracegrad.transform.emit import compile_source
    fn = compile_source("def made(x):\n    return x + 1\n", "made", {}, tag="test")
    filename = fn.__code__.co_filename
    assert linecache.getline(filename, 2).strip() == "return x + 1"
    del fn
    gc.collect()
    assert filename not in linecache.cache


def test_linecache_entries_of_ast_functions_are_removed():
    from tracegrad.transform.ast import clear_cache

    def h(x):
        return np.sum(np.sin(x) * x)
    before = {k for k in linecache.cache if k.startswith("<ast:")}
    a = tg.grad(h, mode="ast")
    a(np.ones(3))
    made = {k for k in linecache.cache if k.startswith("<ast:")} - before
    assert made
    del a
    clear_cache()
    gc.collect()
    assert not made & set(linecache.cache)


# -- values are released ------------------------------------------------------------------------

def test_a_staged_tape_keeps_no_values_but_constants():
    g = tg.grad(_loop, mode="tape")
    g(np.linspace(-1, 1, 5))
    tape = g.tape
    for v in [*tape.inputs, *(o for e in tape.eqns for o in e.outs)]:
        assert type(v.value) is Released or v.kind == "const", v
    str(tape)  # still printable


def _chain_sweep(staged_tape, n=50):
    """Record ``n`` steps and a reverse sweep on a fresh tape; return it, where the sweep
    started, and the gradient Var."""
    tape = Tape("f")
    tape.staged = staged_tape
    one = np.ones(())  # (made before recording: np.ones called while it records is traced)
    with recording(tape):
        x = alias(tape, np.linspace(0.1, 0.2, 4))
        y = x
        for _ in range(n):
            y = np.tanh(y) * 0.5 + y
        out = np.sum(y)
        start = len(tape.eqns)
        seed = Var(tape, one, "const")
        (gx,) = reverse(tape.eqns[:start], [x], [out], [seed])
    return tape, start, gx


def test_the_outermost_reverse_sweep_frees_cotangents_it_has_consumed():
    tape, start, gx = _chain_sweep(True)
    made = [o for e in tape.eqns[start:] for o in e.outs]
    holding = [o for o in made if type(o.value) is not Released]
    assert gx in holding and isinstance(gx.value, np.ndarray)
    assert len(holding) <= 3, f"{len(holding)} of {len(made)} cotangent values kept"
    # forward values stay (a later sweep, jacobian's next row, reads them)
    assert all(type(o.value) is not Released for e in tape.eqns[:start] for o in e.outs)
    np.testing.assert_allclose(gx.value, numeric(
        lambda v: _chain_value(v, 50), np.linspace(0.1, 0.2, 4)), rtol=1e-6)


def _chain_value(x, n):
    for _ in range(n):
        x = np.tanh(x) * 0.5 + x
    return np.sum(x)


def test_a_sweep_another_transform_can_see_keeps_its_values():
    tape, start, _ = _chain_sweep(False)  # a ``trace`` tape: the user reads it
    assert all(type(o.value) is not Released for e in tape.eqns for o in e.outs)
    inner = tg.trace(tg.grad(lambda x: _chain_value(x, 5), mode="tape"))(np.ones(3))
    assert all(type(o.value) is not Released for e in inner.eqns for o in e.outs)
    # grad of grad: the inner sweep is differentiated again, so it must keep its values
    f = lambda x: _chain_value(x, 5)
    gg = tg.grad(lambda x: np.sum(tg.grad(f, mode="tape")(x)), mode="tape")
    x = np.linspace(0.1, 0.2, 3)
    np.testing.assert_allclose(gg(x), numeric(
        lambda v: np.sum(tg.grad(f, mode="tape")(v)), x), rtol=1e-5)


# -- long tapes are interpreted -----------------------------------------------------------------

from tracegrad.transform.tape import interpret  # noqa: E402
from tracegrad.transform.tape.interpret import Interpreted  # noqa: E402
from tracegrad.transform.tape.optimize import optimize  # noqa: E402


def _both(f, *args, **kw):
    """The staged gradient of ``f`` compiled and interpreted (every tape interpreted),
    each called once (the traced results) and again (the replay)."""
    out = []
    for over in (10 ** 9, -1):
        old = staged.INTERPRET_OVER
        staged.INTERPRET_OVER = over
        try:
            g = tg.grad(f, mode="tape", **kw)
            first = g(*args)
            out.append((g, first, g(*args)))
        finally:
            staged.INTERPRET_OVER = old
    return out


def _same(a, b):
    if isinstance(a, (tuple, list)):
        assert type(a) is type(b) and len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y)
        return
    if isinstance(a, tg.Tensor):
        assert isinstance(b, tg.Tensor)
        a, b = a.detach().numpy(), b.detach().numpy()
    assert type(a) is type(b)
    np.testing.assert_array_equal(a, b)
    assert np.asarray(a).tobytes() == np.asarray(b).tobytes()  # bit for bit (signed zeros too)


def _multi(x):
    a, b = np.split(x, 2)                      # a multi-output op
    m = np.maximum(a, b) @ np.ones((a.size, 2))
    c = np.ones(3) * 2.0                       # folded constants
    return np.sum(m ** 2) + np.sum(np.exp(a[:3]) * c) - np.mean(np.concatenate([b, a]) / 1.5)


def _guarded(x):
    if np.sum(x) > 0:                          # a bool guard
        x = x * 2.0
    k = int(np.argmax(x))                      # an int guard
    s = float(tg.stop_gradient(np.max(x)))      # a float guard
    return np.sum(np.tanh(x) * x) + x[k] * s + tg.stop_gradient(x.sum()).item()


@pytest.mark.parametrize("f, args", [
    (_loop, (np.linspace(-1, 1, 5),)),
    (_multi, (np.linspace(0.1, 1.2, 8),)),
    (_guarded, (np.linspace(-0.5, 1.0, 4),)),
    (lambda x, y: np.sum(np.tanh(x * y) - y), (np.linspace(0.1, 0.4, 3), 0.5)),
])
def test_the_interpreter_gives_the_compiled_functions_results(f, args):
    (gc_, first_c, again_c), (gi, first_i, again_i) = _both(f, *args)
    assert type(gi._last.fn) is Interpreted and type(gc_._last.fn) is not Interpreted
    _same(first_i, first_c)
    _same(again_i, again_c)
    _same(again_i, first_c)
    assert gi.source == gc_.source  # written on demand, as the compiled path writes it
    # on other inputs of the same signature
    other = tuple(a * 1.25 if isinstance(a, np.ndarray) else a for a in args)
    _same(gi(*other), gc_(*other))


def test_the_interpreter_with_tensors_several_arguments_and_aux():
    def f(x, w):
        h = (x @ w).tanh()
        return (h * h).sum(), h.sum()
    x = tg.tensor(np.linspace(0.1, 0.6, 6).reshape(2, 3))
    w = tg.tensor(np.linspace(-0.3, 0.5, 12).reshape(3, 4))
    (gc_, first_c, again_c), (gi, first_i, again_i) = _both(f, x, w, argnums=(0, 1), has_aux=True)
    _same(first_i, first_c)
    _same(again_i, again_c)


def test_interpreted_guards_fail_as_compiled_guards_do():
    (gc_, _, _), (gi, _, _) = _both(_guarded, np.linspace(-0.5, 1.0, 4))
    neg = np.linspace(-2.0, -1.0, 4)  # the other branch: the guard fails, a new variant
    for g in (gc_, gi):
        with pytest.raises(codegen.GuardFailed) as info:
            g._last.fn(neg)
        assert info.value.args == (0,)
    _same(gi(neg), gc_(neg))
    assert len(next(iter(gi._cache.values()))) == 2


def test_interpreted_outputs_that_are_constants_are_copies():
    (gc_, _, a), (gi, _, b) = _both(lambda x: np.sum(x * 2.0), np.ones(3))  # a folded constant
    assert [copy for _, copy in gi._last.fn._program[3]] == [True]
    b[0] = 99.0
    _same(gi(np.ones(3)), a)


def test_a_long_tape_is_interpreted_and_writes_its_source_only_when_read(monkeypatch):
    calls = []
    real = interpret.tape_source
    monkeypatch.setattr(interpret, "tape_source", lambda *a: calls.append(1) or real(*a))
    n = interpret.INTERPRET_OVER // 4 + 10

    def f(x):
        for _ in range(n):
            x = np.tanh(x) * 0.5 + x
        return np.sum(x)
    x = np.linspace(0.1, 0.2, 3)
    g = tg.grad(f, mode="tape")
    before = {k for k in linecache.cache if k.startswith("<tape:")}
    first = g(x)
    assert len(g.tape.eqns) > interpret.INTERPRET_OVER
    assert type(g._last.fn) is Interpreted
    assert {k for k in linecache.cache if k.startswith("<tape:")} <= before  # nothing compiled
    _same(g(x), first)
    assert calls == []
    source = g.source
    assert calls == [1] and g.source is source  # written once
    # the text the compiled path shows for the same tape
    compiled_fn, compiled_source = codegen.compile_tape(g.tape, g._name, g._last.fn.hints)
    assert source == compiled_source
    _same(compiled_fn(x)[0], first)
    # the kept tape holds no values but constants
    for v in [*g.tape.inputs, *(o for e in g.tape.eqns for o in e.outs)]:
        assert type(v.value) is Released or v.kind == "const", v
    np.testing.assert_allclose(first, numeric(f, x), rtol=1e-5)


def test_the_interpreter_frees_values_where_the_compiled_code_deletes_them():
    tape = tg.trace(lambda x: np.sum(np.tanh(np.tanh(x) * 2.0) * 3.0))(np.ones(3))
    tape.release()
    optimize(tape)
    tape.outputs = tape.output_vars()
    run = Interpreted(tape, "f")
    run(np.ones(3))
    template, n_in, steps, rets = run._program
    killed = [k for _, _, _, kill in steps for k in kill]
    assert len(killed) == len(set(killed)) == len(tape.eqns) - 1  # every temporary, once
    source = codegen.tape_source(tape, "f")
    assert source.count("del ") == len(tape.eqns) - 1


# -- values no reverse sweep reads are dropped while tracing ------------------------------------

def _released(v):
    return type(v.value) is Released


def test_dropped_values_no_vjp_reads_are_released_while_the_function_runs():
    """``x * 0.5 + 1.0`` reads none of its operands' values in reverse mode; once the loop
    has moved on, those intermediates are released -- while ``tanh``'s result (read by its
    vjp) and an intermediate the function still holds keep their values."""
    from tracegrad.transform.tape import active_tape
    seen = {}

    def f(x):
        kept = np.tanh(x)
        held = []
        for _ in range(600):
            x = x * 0.5 + 1.0
            if len(held) < 3:
                held.append(x)
        tape = active_tape()
        if tape is not None:  # (finite differences call f directly)
            adds = [e.outs[0] for e in tape.eqns if e.op.name == "add"]
            seen["released"] = sum(_released(v) for v in adds)
            seen["adds"] = len(adds)
            seen["kept"] = _released(kept)
            seen["held"] = any(_released(h) for h in held)
        return np.sum(x) + np.sum(kept) + np.sum(held[0] * held[1])
    x = np.linspace(0.3, 0.8, 128)  # (values of 1 KiB: worth releasing)
    np.testing.assert_allclose(tg.grad(f, mode="tape")(x), numeric(f, x), rtol=1e-6, atol=1e-8)
    assert seen["released"] > seen["adds"] // 2
    assert not seen["kept"] and not seen["held"]


def test_nothing_is_released_for_forward_mode():
    from tracegrad.transform.tape import active_tape
    seen = {}

    def f(x):
        for _ in range(600):
            x = x * 0.5 + 1.0
        seen["released"] = sum(_released(e.outs[0]) for e in active_tape().eqns if e.outs)
        return x
    x = np.array([0.3, -0.2])
    out, tangent = tg.jvp(f, (x,), (np.ones(2),), mode="tape")
    assert seen["released"] == 0
    np.testing.assert_allclose(tangent, 0.5 ** 600 * np.ones(2), atol=1e-300)
