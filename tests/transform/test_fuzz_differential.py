"""Differential fuzzing of the staged derivatives: random NumPy programs (written as
source by ``fuzz_programs``) are differentiated by ``mode="tape"``, ``"ast"``, ``"auto"``
and the eager Tensor path, and checked against central finite differences.

The contract checked: a staged derivative is right, or it raises a clear error naming
the construct; ``mode="auto"`` never answers differently from ``mode="tape"``. The eager
Tensor path runs the same source with ``fuzz_numpy_shim.np`` bound as ``np`` (NumPy's
semantics over tracegrad's eager functions) on float64 tensors that require grad, then
``.backward()``: its value must be NumPy's and its gradient the finite differences' and
the staged modes'. A program the eager path cannot run (PyTorch's rules: a saved tensor
changed in place, negative slice steps...) skips that check; the outcomes are counted
(``TRACEGRAD_FUZZ_EAGER_STATS=path.json`` writes them) and ``test_eager_check_ran``
fails if the check ran on too few programs.

Budget: ``TRACEGRAD_FUZZ_EXAMPLES`` (default 150 per property, derandomized) and
``TRACEGRAD_FUZZ_SEED`` (a seed: random, reproducible runs instead of the fixed one);
``TRACEGRAD_FUZZ_SHRINK=1`` lets hypothesis shrink a failure (slow; off by default).
``TRACEGRAD_FUZZ_COLLECT=path.jsonl`` records every failing example there instead of
stopping at the first (for long bug-hunting runs): the test then passes, and the file is
the result to read.
"""
import collections
import importlib.util
import itertools
import json
import os
import re
import sys
import tempfile
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, assume, given, note, seed, settings
from hypothesis import strategies as st

import tracegrad
from tracegrad import TracerError, TransformError

from . import fuzz_programs as fp
from .fuzz_numpy_shim import ShimUnsupported, eager_function, eager_source, mark_array

EXAMPLES = int(os.environ.get("TRACEGRAD_FUZZ_EXAMPLES", "150"))
SEED = os.environ.get("TRACEGRAD_FUZZ_SEED")
COLLECT = os.environ.get("TRACEGRAD_FUZZ_COLLECT")

CLEAR_ERRORS = (TracerError, TransformError, TypeError, ValueError, NotImplementedError)
# Messages of errors Python raises by itself: a library bug even in an allowed type.
INTERNAL = re.compile(
    r"object is not subscriptable|has no attribute|unsupported operand type|"
    r"positional argument|not iterable|cannot unpack|object is not callable|"
    r"must be str, not|can only concatenate|is not defined|referenced before assignment|"
    r"list index out of range|tuple index out of range|object cannot be interpreted|"
    r"'NoneType' object|unhashable type|maximum recursion|object does not support item|"
    r"missing \d+ required|got an unexpected keyword|"
    # NumPy's own shape errors leaking out of a rule: the program ran fine in NumPy
    r"cannot reshape array|could not be broadcast|could not broadcast|operands could not")

RTOL, ATOL = 1e-5, 1e-6          # a mode against finite differences
MODE_RTOL, MODE_ATOL = 1e-7, 1e-9  # two modes against each other
H1, H2 = 1e-5, 1e-4              # the finite-difference steps (with H3)
# A third, smaller step: a branch taken by the sign of a rounding error (a sum that is
# identically zero, compared with 0) can make the two steps above agree by chance
H3 = 1e-6

SHRINK = os.environ.get("TRACEGRAD_FUZZ_SHRINK", "0") == "1"
# Shrinking a failure can take minutes; the failing program is printed whole either way
# (and is small). TRACEGRAD_FUZZ_SHRINK=1 asks hypothesis for the smallest one.
_PHASES = [Phase.explicit, Phase.reuse, Phase.generate] + ([Phase.shrink] if SHRINK else [])
_settings = dict(max_examples=EXAMPLES, deadline=None, derandomize=SEED is None, phases=_PHASES,
                 suppress_health_check=list(HealthCheck), print_blob=True, database=None)


def _seeded(test):
    return seed(int(SEED))(test) if SEED is not None else test


_DIR = tempfile.mkdtemp(prefix="tracegrad_fuzz_")
_COUNT = itertools.count()


def load(program):
    """Write the program to a fresh .py file, import it, return its ``f``."""
    name = f"tracegrad_fuzz_{os.getpid()}_{next(_COUNT)}"
    path = os.path.join(_DIR, name + ".py")
    with open(path, "w") as fh:
        fh.write(program.source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return getattr(module, program.fname)


def copies(args):
    return tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)


def plain(f, args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return f(*copies(args))


def _as_tuple(g, argnums):
    return (g,) if isinstance(argnums, int) else tuple(g)


def _arr(v):
    if isinstance(v, tracegrad.Tensor):
        v = v.detach().numpy()
    return np.asarray(v)


# ---------------------------------------------------------------------------------
# finite differences


def fd_grad(f, args, argnums, h):
    out = []
    for n in (argnums,) if isinstance(argnums, int) else argnums:
        x = np.asarray(args[n], dtype=np.float64)
        g = np.zeros(x.shape)
        for i in range(x.size):
            plus, minus = list(copies(args)), list(copies(args))
            xp, xm = x.copy(), x.copy()
            xp.flat[i] += h
            xm.flat[i] -= h
            plus[n], minus[n] = xp, xm
            g.flat[i] = (float(plain(f, plus)) - float(plain(f, minus))) / (2 * h)
        out.append(g)
    return tuple(out)


def fd_reliable(f, args, argnums):
    """Central differences at three steps; None where they disagree (a kink, a branch)."""
    g1, g2 = fd_grad(f, args, argnums, H1), fd_grad(f, args, argnums, H2)
    for a, b in zip(g1, g2):
        if not np.all(np.isfinite(a)) or not np.allclose(a, b, rtol=1e-6, atol=1e-7):
            return None
    for a, b in zip(g1, fd_grad(f, args, argnums, H3)):
        if not np.allclose(a, b, rtol=1e-5, atol=1e-6):
            return None
    return g1


def fd_directional(f, args, tangents, h):
    plus = tuple(np.array(a + h * t, dtype=np.float64) for a, t in zip(args, tangents))
    minus = tuple(np.array(a - h * t, dtype=np.float64) for a, t in zip(args, tangents))
    return (float(plain(f, plus)) - float(plain(f, minus))) / (2 * h)


# ---------------------------------------------------------------------------------
# running the modes


def run_mode(f, program, mode):
    """("ok", tuple of gradients) or ("err", exception) for one mode."""
    args = copies(program.args)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if mode == "eager":
                return "ok", _eager(f, program)
            g = tracegrad.grad(f, argnums=program.argnums, mode=mode)(*args)
        return "ok", tuple(_arr(v) for v in _as_tuple(g, program.argnums))
    except Exception as e:  # noqa: BLE001 - every exception is classified below
        return "err", e


def _eager(f, program):
    """The eager Tensor path: the program's source run with the NumPy shim as ``np``, on
    float64 tensors (copies of leaves that require grad, so in-place writes into an
    argument act as they do on NumPy's arrays), then ``.backward()``."""
    nums = program.float_argnums
    g = eager_function(program.source, program.fname)
    leaves, targs = {}, []
    for i, a in enumerate(copies(program.args)):
        if isinstance(a, np.ndarray):
            leaf = tracegrad.tensor(a, dtype=tracegrad.float64, requires_grad=i in nums)
            leaves[i] = leaf
            a = mark_array(leaf.clone() if i in nums else leaf)
        targs.append(a)
    out = g(*targs)
    if not isinstance(out, tracegrad.Tensor):
        raise _EagerLost(f"output is a {type(out).__name__}, not a Tensor (constant)")
    if out.requires_grad:  # (else no differentiated input reaches it: zero gradients)
        out.backward()
    res = []
    for n in nums:
        grad = leaves[n].grad
        res.append(np.zeros(np.shape(program.args[n])) if grad is None else _arr(grad))
    return tuple(res), _arr(out)


class _EagerLost(Exception):
    """The eager output is not a Tensor (it depends on no input: the shim ran NumPy)."""


def classify_error(e):
    """None if ``e`` is a clear, deliberate error; else a description of what is wrong."""
    if isinstance(e, CLEAR_ERRORS) and not INTERNAL.search(str(e)):
        return None
    return f"{type(e).__name__}: {str(e)[:300]}"


def _desc(result):
    kind, v = result
    if kind == "err":
        return f"raised {type(v).__name__}: {str(v)[:200]}"
    return "returned " + ", ".join(np.array2string(np.asarray(g), precision=6) for g in v)


def _close(a, b, rtol, atol):
    return all(np.shape(x) == np.shape(y) and np.allclose(x, y, rtol=rtol, atol=atol)
               for x, y in zip(a, b)) and len(a) == len(b)


# ---------------------------------------------------------------------------------
# the checks: each returns a list of problems (strings); empty is a pass


def check_grad_program(program, jvp_too=False, label="grad"):
    f = load(program)
    value = plain(f, program.args)
    assume(np.ndim(value) == 0 and np.isfinite(float(value)) and abs(float(value)) < 1e6)
    fd = fd_reliable(f, program.args, program.argnums)
    assume(fd is not None)
    problems = []
    results = {m: run_mode(f, program, m) for m in ("tape", "ast", "auto")}
    for mode, res in results.items():
        note(f"{mode}: {_desc(res)}")
        kind, v = res
        if kind == "err":
            bad = classify_error(v)
            if bad:
                problems.append(f"[{mode}] unclear error {bad}")
            continue
        shapes = [np.shape(program.args[n]) for n in program.float_argnums]
        if [np.shape(g) for g in v] != shapes:
            problems.append(f"[{mode}] gradient shapes {[np.shape(g) for g in v]} != input shapes {shapes}")
        elif not _close(v, fd, RTOL, ATOL):
            problems.append(f"[{mode}] wrong gradient: {_desc(res)}; finite differences {fd}")
    tape, auto = results["tape"], results["auto"]
    if tape[0] == "ok" and auto[0] == "ok" and not _close(auto[1], tape[1], MODE_RTOL, MODE_ATOL):
        problems.append(f"[auto!=tape] auto {_desc(auto)} vs tape {_desc(tape)}")
    if tape[0] == "ok" and auto[0] == "err":
        problems.append(f"[auto!=tape] auto {_desc(auto)} where tape answers")
    okays = [(m, r[1]) for m, r in results.items() if r[0] == "ok"]
    for (m1, v1), (m2, v2) in itertools.combinations(okays, 2):
        if _close(v1, fd, RTOL, ATOL) and _close(v2, fd, RTOL, ATOL) and not _close(v1, v2, 1e-6, 1e-8):
            problems.append(f"[{m1}!={m2}] {m1} and {m2} disagree")
    # the eager Tensor path, through the NumPy shim: the same program on eager Tensors
    # (a program that turns a traced value into a Python float loses the gradient there,
    # as in PyTorch; sort has no NumPy-semantics eager counterpart: not checked)
    if program.features & (fp.EAGER_DETACHING | {"sort"}):
        _eager_count(label, "not applicable (float/item/math/sort)")
    else:
        problems += check_eager(f, program, value, fd, results, label)
    # value_and_grad's value is the function's value
    for mode in ("tape", "ast"):
        if results[mode][0] != "ok":
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                v, _ = tracegrad.value_and_grad(f, argnums=program.argnums, mode=mode)(*copies(program.args))
            if not np.allclose(_arr(v), value, rtol=1e-9, atol=1e-12):
                problems.append(f"[value_and_grad {mode}] value {_arr(v)} != f's {value}")
        except Exception as e:  # noqa: BLE001
            problems.append(f"[value_and_grad {mode}] raised {type(e).__name__}: {e} where grad answers")
    if jvp_too:
        problems += check_jvp(f, program, value)
    return problems


# How often the eager check ran, per property: {label: Counter(outcome)}. Printed by
# test_eager_check_ran (pytest -s) and written to TRACEGRAD_FUZZ_EAGER_STATS=path.json.
EAGER_STATS = collections.defaultdict(collections.Counter)
EAGER_STATS_PATH = os.environ.get("TRACEGRAD_FUZZ_EAGER_STATS")


def _eager_count(label, outcome):
    EAGER_STATS[label][outcome] += 1


def check_eager(f, program, value, fd, results, label):
    """The eager Tensor path against NumPy's value, finite differences and the staged
    modes that agree with finite differences. A program the shim cannot run on Tensors
    (or whose eager output loses the gradient) is counted and skipped, not failed."""
    from tracegrad.transform.tape.numpy_map.construct import ArrayConversion
    if any(kind == "err" and isinstance(v, ArrayConversion) for kind, v in results.values()):
        # a differentiated value written into a NumPy array (buf[i] = x): the tape refuses
        # it; on Tensors NumPy takes the number, as with torch (the shim cannot intercept it)
        _eager_count(label, "skipped: a differentiated value written into a NumPy array")
        return []
    res = run_mode(f, program, "eager")
    if res[0] == "err":
        e = res[1]
        note(f"eager: raised {type(e).__name__}: {str(e)[:200]}")
        if isinstance(e, ShimUnsupported):
            _eager_count(label, "skipped: shim cannot express")
        elif isinstance(e, _EagerLost):
            _eager_count(label, "skipped: output not a Tensor (a constant)")
        else:
            _eager_count(label, f"skipped: {type(e).__name__}: {_first_line(e)}")
        return []
    _eager_count(label, "ran")
    grads, out = res[1]
    note(f"eager: {_desc(('ok', grads))}")
    problems = []
    if not np.allclose(out, value, rtol=1e-9, atol=1e-12):
        problems.append(f"[eager] forward value {out} != NumPy's {value}")
    elif not _close(grads, fd, RTOL, ATOL):
        problems.append(f"[eager] wrong gradient {_desc(('ok', grads))}; finite differences {fd}")
    else:
        for mode, (kind, v) in results.items():
            if kind == "ok" and _close(v, fd, RTOL, ATOL) and not _close(grads, v, MODE_RTOL, MODE_ATOL):
                problems.append(f"[eager!={mode}] eager {_desc(('ok', grads))} vs {mode} {_desc((kind, v))}")
    if problems:
        note("---- as the eager run executes it (np = tests/transform/fuzz_numpy_shim.py) ----\n"
             + eager_source(program.source))
    return problems


def _first_line(e):
    msg = re.sub(r"\d+", "N", str(e).split("\n")[0])  # (numbers out: fewer distinct counts)
    return msg[:90]


def check_jvp(f, program, value):
    if not all(isinstance(a, np.ndarray) for a in program.args):
        return []
    rng = np.random.default_rng(len(program.source))
    tangents = tuple(rng.standard_normal(np.shape(a)) for a in program.args)
    d1 = fd_directional(f, program.args, tangents, H1)
    d2 = fd_directional(f, program.args, tangents, H2)
    if not (np.isfinite(d1) and np.isclose(d1, d2, rtol=1e-6, atol=1e-7)):
        return []
    if not np.isclose(d1, fd_directional(f, program.args, tangents, H3), rtol=1e-5, atol=1e-6):
        return []
    problems = []
    for mode in ("tape", "ast", "auto"):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                out, tan = tracegrad.jvp(f, copies(program.args), tangents, mode=mode)
        except Exception as e:  # noqa: BLE001
            note(f"jvp {mode}: raised {type(e).__name__}: {e}")
            bad = classify_error(e)
            if bad:
                problems.append(f"[jvp {mode}] unclear error {bad}")
            continue
        note(f"jvp {mode}: {_arr(out)}, {_arr(tan)}")
        if not np.allclose(_arr(out), value, rtol=1e-9, atol=1e-12):
            problems.append(f"[jvp {mode}] primal output {_arr(out)} != f's {value}")
        if np.shape(_arr(tan)) != () or not np.isclose(_arr(tan), d1, rtol=RTOL, atol=ATOL):
            problems.append(f"[jvp {mode}] wrong tangent {_arr(tan)}; finite differences {d1}")
    return problems


def fd_complex(f, args, argnum, h=1e-6):
    """df/dx - i df/dy of real ``f`` for complex argument ``argnum``, by central differences."""
    z = np.asarray(args[argnum], dtype=np.complex128)
    out = np.zeros_like(z)
    for k in range(z.size):
        vals = []
        for step in (h, -h, 1j * h, -1j * h):
            moved = z.copy()
            moved.flat[k] += step
            a = list(copies(args))
            a[argnum] = moved
            vals.append(float(plain(f, tuple(a))))
        out.flat[k] = (vals[0] - vals[1]) / (2 * h) - 1j * (vals[2] - vals[3]) / (2 * h)
    return out


def check_complex_program(program):
    f = load(program)
    value = plain(f, program.args)
    assume(np.ndim(value) == 0 and np.isrealobj(value) and np.isfinite(float(value)) and abs(float(value)) < 1e6)
    want = fd_complex(f, program.args, program.argnums)
    assume(np.all(np.isfinite(want)))
    problems, got = [], {}
    for mode in ("tape", "ast", "auto"):
        res = run_mode(f, program, mode)
        note(f"{mode}: {_desc(res)}")
        if res[0] == "err":
            problem = classify_error(res[1])
            if problem:
                problems.append(f"[{mode}] {problem}")
            continue
        got[mode] = res[1][0]
        if not np.allclose(got[mode], want, rtol=1e-4, atol=1e-5):
            problems.append(f"[{mode}] gradient {got[mode]} != finite differences {want}")
    if "auto" in got and "tape" in got and not np.allclose(got["auto"], got["tape"], rtol=1e-12, atol=1e-12):
        problems.append(f"[auto] {got['auto']} differs from the tape's {got['tape']}")
    return problems


def check_refused(program, allowed):
    f = load(program)
    problems = []
    for mode in ("tape", "ast", "auto"):
        res = run_mode(f, program, mode)
        note(f"{mode}: {_desc(res)}")
        if res[0] == "ok":
            problems.append(f"[{mode}] answered {_desc(res)} instead of raising {allowed}")
        elif not isinstance(res[1], allowed) or INTERNAL.search(str(res[1])):
            problems.append(f"[{mode}] raised {type(res[1]).__name__}: {str(res[1])[:200]} "
                            f"instead of {[t.__name__ for t in allowed]}")
    return problems


# ---------------------------------------------------------------------------------
# reporting


def report(program, problems):
    if not problems:
        return
    if COLLECT:
        with open(COLLECT, "a") as fh:
            fh.write(json.dumps({"source": program.source, "args": [fp._literal(a) for a in program.args],
                                 "argnums": program.argnums, "expect": program.expect,
                                 "features": sorted(program.features), "problems": problems}) + "\n")
        return
    raise AssertionError("\n".join(problems) + "\n" + program.describe())


def _noted(program):
    note(program.describe())
    return program


# ---------------------------------------------------------------------------------
# the properties


@_seeded
@settings(**_settings)
@given(st.data())
def test_programs_without_hazards(data):
    program = _noted(data.draw(fp.grad_programs(hazards=False)))
    report(program, check_grad_program(program, jvp_too=data.draw(st.integers(0, 2)) == 0,
                                       label="without_hazards"))


@_seeded
@settings(**_settings)
@given(st.data())
def test_programs_with_hazards(data):
    program = _noted(data.draw(fp.grad_programs(hazards=True)))
    report(program, check_grad_program(program, jvp_too=data.draw(st.integers(0, 3)) == 0,
                                       label="with_hazards"))


@_seeded
@settings(**{**_settings, "max_examples": max(10, EXAMPLES // 5)})
@given(fp.empty_input_programs())
def test_empty_inputs(program):
    _noted(program)
    report(program, check_grad_program(program, label="empty_inputs"))


@_seeded
@settings(**{**_settings, "max_examples": max(10, EXAMPLES // 5)})
@given(fp.bad_input_programs())
def test_non_float_inputs_are_refused(program):
    _noted(program)
    report(program, check_refused(program, (TypeError,)))


@_seeded
@settings(**{**_settings, "max_examples": max(10, EXAMPLES // 5)})
@given(fp.complex_input_programs())
def test_complex_inputs(program):
    """Complex inputs: every mode agrees with finite differences in JAX's convention
    (df/dx - i df/dy), and auto with the tape -- or refuses clearly, never a wrong value."""
    _noted(program)
    report(program, check_complex_program(program))


@_seeded
@settings(**{**_settings, "max_examples": max(10, EXAMPLES // 5)})
@given(fp.bad_output_programs())
def test_non_scalar_outputs_are_refused(program):
    _noted(program)
    report(program, check_refused(program, (TypeError, RuntimeError)))


def test_eager_check_ran():
    """The eager comparison is real: it ran on most programs without hazards (a shim or
    library change that makes it skip everything fails here). Runs after the properties."""
    stats = EAGER_STATS.get("without_hazards")
    summary = {label: dict(c.most_common()) for label, c in EAGER_STATS.items()}
    if EAGER_STATS_PATH:
        with open(EAGER_STATS_PATH, "w") as fh:
            json.dump(summary, fh, indent=1)
    print("\neager check outcomes:", json.dumps(summary, indent=1))
    if not stats or sum(stats.values()) < 20:
        pytest.skip("too few programs without hazards checked in this run")
    applicable = sum(n for k, n in stats.items() if not k.startswith("not applicable"))
    assert stats["ran"] >= 0.6 * applicable, summary["without_hazards"]


def _tape_hot(f, program, fused):
    """``run_mode``'s tape result once the variant is hot (compiled with CPU kernels where
    ``fused``), or the error it raised."""
    from tracegrad.transform import jit
    args = copies(program.args)
    previous = jit.HOT_CALLS, tracegrad.set_fusion(fused)
    jit.HOT_CALLS = 0
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            g = tracegrad.grad(f, argnums=program.argnums, mode="tape")
            for _ in range(3):
                out = g(*copies(args))
        return "ok", tuple(_arr(v) for v in _as_tuple(out, program.argnums))
    except Exception as e:  # noqa: BLE001 - compared between the two runs
        return "err", e
    finally:
        jit.HOT_CALLS = previous[0]
        tracegrad.set_fusion(previous[1])


@pytest.mark.skipif(importlib.util.find_spec("numba") is None, reason="needs Numba (the jit extra)")
@_seeded
@settings(**{**_settings, "max_examples": max(8, EXAMPLES // 10)})
@given(st.data())
def test_fused_tape_equals_unfused(data):
    """A hot tape with CPU kernels answers what the unfused tape answers (to a few ulps)."""
    program = _noted(data.draw(fp.grad_programs(hazards=False)))
    f = load(program)
    old = os.environ.get("TRACEGRAD_CACHE_DIR")
    os.environ["TRACEGRAD_CACHE_DIR"] = os.path.join(_DIR, "kernels")
    try:
        plain, fused = _tape_hot(f, program, False), _tape_hot(f, program, True)
    finally:
        if old is None:
            del os.environ["TRACEGRAD_CACHE_DIR"]
        else:
            os.environ["TRACEGRAD_CACHE_DIR"] = old
    problems = []
    if plain[0] != fused[0] or (plain[0] == "err" and type(plain[1]) is not type(fused[1])):
        problems.append(f"unfused: {_desc(plain)}; fused: {_desc(fused)}")
    elif plain[0] == "ok":
        for a, b in zip(plain[1], fused[1]):
            if a.shape != b.shape or a.dtype != b.dtype or not np.allclose(
                    b, a, rtol=1e-10, atol=1e-12, equal_nan=True):
                problems.append(f"fused {b!r} != unfused {a!r}")
    report(program, problems)
