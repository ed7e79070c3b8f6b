"""What tracing records and what the compiler makes of it.

``str(trace(f)(...))`` prints one primitive per line in the documented format; the
``.source`` of a transform is valid, straight-line Python that frees intermediates with
``del``, assigns nothing it does not use and names its results after the arguments
(``dx``, ``dw``); its lines are registered with ``linecache`` so tracebacks show them.
The optimiser's passes are checked by what they leave out of the tape and the source
(dead code, repeated expressions, constant-only arithmetic) while the results stay
right. Code a tape cannot follow raises ``TracerError`` naming the reason.
"""
import ast
import linecache
import re
import traceback

import numpy as np
import pytest

import tracegrad as tg  # noqa: F401
from .numeric import numeric
from .tape_mode import tg  # noqa: F811  (grad etc. with mode="tape")

RNG = np.random.default_rng(7)
X16 = RNG.standard_normal(16)
W = RNG.standard_normal((16, 3))


def f(x, w):
    return np.sum(np.tanh(x * 1.01) @ w)


def f_grads(x, w):
    """Hand-derived (d/dx, d/dw) of f."""
    t = np.tanh(x * 1.01)
    return (1 - t ** 2) * 1.01 * w.sum(axis=1), np.outer(t, np.ones(3))


# -- the printed tape --------------------------------------------------------------------

EQN = re.compile(r"^  (%\d+) = (\w+) (.+)$")


def body(text):
    """The lines between a printed tape's header and its closing brace."""
    lines = text.splitlines()
    assert lines[-1] == "}"
    return lines[1:-1]


def test_trace_prints_header_and_one_primitive_per_line():
    text = str(tg.trace(f)(X16, W))
    lines = text.splitlines()
    assert lines[0] == "tape f(x: f64[16], w: f64[16,3]) {"
    *eqns, ret = body(text)
    parsed = [EQN.match(line) for line in eqns]
    assert all(parsed), eqns
    assert [m.group(2) for m in parsed] == ["mul", "tanh", "matmul", "sum"]
    (mul, tanh, matmul, total) = [m.group(1) for m in parsed]
    # each line consumes the previous line's result: the data flow of f, in order
    assert re.fullmatch(r"x 1\.01", parsed[0].group(3))
    assert parsed[1].group(3) == mul
    assert parsed[2].group(3) == f"{tanh} w"
    assert parsed[3].group(3) == matmul
    assert ret == f"  return {total}"


def test_trace_prints_shapes_and_dtypes_of_every_input_kind():
    """Float64 arrays, float32 arrays, Python floats (f64 scalars); ints are static."""
    def g(a, b, s, n):
        return np.sum(a[:n] * s) + np.sum(b)
    text = str(tg.trace(g)(np.ones((2, 3)), np.ones(4, np.float32), 2.5, 1))
    assert text.splitlines()[0] == "tape g(a: f64[2,3], b: f32[4], s: f64[]) {"
    assert "n" not in text.splitlines()[0].split("(", 1)[1]


def test_trace_records_guards_in_order():
    def g(x):
        if x.sum() > 0:
            return np.sum(x * 2.0)
        return np.sum(x)
    *eqns, _ = body(str(tg.trace(g)(np.ones(3))))
    guard_at = next(i for i, line in enumerate(eqns) if line.strip().startswith("guard"))
    assert re.fullmatch(r"  guard bool\(%\d+\) == True", eqns[guard_at])
    assert any(" = mul " in line for line in eqns[guard_at + 1:])  # the branch taken, after


# -- the generated source ---------------------------------------------------------------

def _compiled_grad(argnums=(0, 1)):
    g = tg.grad(f, argnums=argnums)
    dx, dw = g(X16, W)
    return g, dx, dw


def assigned_and_read(source):
    """For the single function in ``source``: the function node, then per top-level
    statement (in order) the names it stores, deletes and reads, and the returned names."""
    fn = ast.parse(source).body[0]
    assert isinstance(fn, ast.FunctionDef)
    stmts = []
    for stmt in fn.body:
        use = {ast.Store: set(), ast.Del: set(), ast.Load: set()}
        for node in ast.walk(stmt):
            if isinstance(node, ast.Name):
                use[type(node.ctx)].add(node.id)
        stmts.append((use[ast.Store], use[ast.Del], use[ast.Load]))
    ret = fn.body[-1]
    assert isinstance(ret, ast.Return) and isinstance(ret.value, ast.Tuple)
    returned = [e.id for e in ret.value.elts if isinstance(e, ast.Name)]
    return fn, stmts, returned


def test_grad_source_is_straight_line_python_naming_results_after_arguments():
    g, dx, dw = _compiled_grad()
    ex, ew = f_grads(X16, W)
    np.testing.assert_allclose(dx, ex, rtol=1e-12)
    np.testing.assert_allclose(dw, ew, rtol=1e-12)
    fn, stmts, returned = assigned_and_read(g.source)
    assert [a.arg for a in fn.args.args] == ["x", "w"]
    assert returned == ["dx", "dw"]
    assert all(isinstance(s, (ast.Assign, ast.Delete, ast.If, ast.Return)) for s in fn.body)
    stored = [n for st, _, _ in stmts for n in st]
    assert len(stored) == len(set(stored)), "each name assigned once"


@pytest.mark.parametrize("make, args", [
    (lambda: tg.grad(f, argnums=(0, 1)), (X16, W)),
    (lambda: tg.grad(f), (X16, W)),
    (lambda: tg.value_and_grad(f, argnums=1), (X16, W)),
    (lambda: tg.hessian(lambda x: np.sum(np.tanh(x) ** 3)), (X16[:4],)),
    (lambda: tg.grad(lambda x: np.sum(x ** 2) if x.sum() > 0 else np.sum(x)), (X16,)),
], ids=["grad_both", "grad_x", "value_and_grad", "hessian", "guarded"])
def test_every_assignment_is_used_and_every_intermediate_deleted(make, args):
    """No dead stores; each intermediate (not returned) is deleted once, after its last
    use, and never read after that."""
    g = make()
    g(*args)
    _, stmts, returned = assigned_and_read(g.source)
    for i, (stored, _, _) in enumerate(stmts):
        for name in stored - {"_"}:
            reads = [j for j, (_, _, loaded) in enumerate(stmts) if name in loaded and j > i]
            assert reads, f"{name} is assigned and never used:\n{g.source}"
            dels = [j for j, (_, deleted, _) in enumerate(stmts) if name in deleted]
            if name in returned:
                assert not dels
                continue
            assert len(dels) == 1 and dels[0] > max(reads), \
                f"{name} is not deleted once after its last use:\n{g.source}"
    assert any(deleted for _, deleted, _ in stmts)


def test_source_is_what_linecache_and_the_code_object_show():
    """The compiled function's file name is registered in linecache with ``.source``'s
    lines, so tracebacks and inspect can show the generated code."""
    g, _, _ = _compiled_grad()
    code = g._last.fn.__code__
    lines = g.source.splitlines()
    assert [linecache.getline(code.co_filename, i + 1).rstrip("\n")
            for i in range(len(lines))] == lines


def test_error_inside_replayed_code_points_at_the_generated_line():
    """A division by zero while replaying (with NumPy set to raise) has its innermost frame
    in the generated function, on the generated line that divides."""
    g = tg.grad(lambda x, y: np.sum(x / y))
    x = np.ones(3)
    np.testing.assert_allclose(g(x, np.array([1.0, 2.0, 4.0])), [1.0, 0.5, 0.25])
    with np.errstate(divide="raise"), pytest.raises(FloatingPointError) as info:
        g(x, np.array([1.0, 0.0, 4.0]))
    frame = traceback.extract_tb(info.value.__traceback__)[-1]
    assert frame.filename == g._last.fn.__code__.co_filename
    assert frame.line == g.source.splitlines()[frame.lineno - 1].strip()
    assert "/" in frame.line


def test_guard_in_compiled_code_raises_guard_failed():
    """The compiled variant of one branch, called directly on an input for the other,
    raises GuardFailed (the signal to retrace) rather than computing anything."""
    def g(x):
        return np.sum(x ** 2) if x.sum() > 0 else np.sum(np.sin(x))
    dg = tg.grad(g)
    dg(np.ones(3))
    assert re.search(r"raise GuardFailed\(\d*\)", dg.source)
    with pytest.raises(tg.GuardFailed):
        dg._last.fn(-np.ones(3))
    np.testing.assert_allclose(dg(-np.ones(3)), np.cos(-np.ones(3)))


# -- optimisations ----------------------------------------------------------------------

def ops(tape):
    """The primitive names of a tape's lines."""
    return [m.group(2) for m in map(EQN.match, body(str(tape))) if m]


def test_dead_code_is_eliminated():
    """exp(x) is computed but unused; the value of sum(x^2) is not needed for its
    gradient either."""
    def g(x):
        np.exp(x)  # computed, never used
        return np.sum(x ** 2)
    assert "exp" in ops(tg.trace(g)(X16))
    dg = tg.grad(g)
    np.testing.assert_allclose(dg(X16), 2 * X16)
    assert "exp" not in ops(dg.tape) and "sum" not in ops(dg.tape)
    assert not re.search(r"\bexp\b", dg.source)


def test_common_subexpressions_are_shared():
    """sin(x) written twice is computed once, and so is the cos(x) of its two vjps."""
    def g(x):
        return np.sum(np.sin(x) * np.sin(x))
    assert ops(tg.trace(g)(X16)).count("sin") == 2
    dg = tg.grad(g)
    np.testing.assert_allclose(dg(X16), 2 * np.sin(X16) * np.cos(X16), rtol=1e-13)
    assert ops(dg.tape).count("sin") == 1 and ops(dg.tape).count("cos") == 1
    assert len(re.findall(r"\bsin\(", dg.source)) == 1
    assert len(re.findall(r"\bcos\(", dg.source)) == 1


def test_constant_only_arithmetic_is_folded():
    """The gradient of a linear function is built from constants only (the seed, 2.0,
    3.0): it is folded into one constant, the code computes nothing, and each call still
    gets its own copy. (A captured array is read at each call, so it is not folded.)"""
    w = np.full(16, 6.0)

    def g(x):
        return np.sum(x * 2.0 * 3.0)
    dg = tg.grad(g)
    first = dg(X16)
    np.testing.assert_allclose(first, w)
    assert ops(dg.tape) == []
    assert re.fullmatch(r"  return c0", body(str(dg.tape))[-1])
    fn, _, _ = assigned_and_read(dg.source)
    assert len(fn.body) == 1  # only the return
    first[:] = 0.0  # the caller owns its result
    np.testing.assert_allclose(dg(X16 + 1), w)


def test_multiplying_by_one_and_subtracting_zero_are_forwarded():
    """x * 1 - 0 is x: the optimised tape applies tanh to the input itself. (x + 0 is not
    x: it turns -0.0 into 0.0, so it stays.)"""
    def g(x):
        return np.sum(np.tanh(x * 1 - 0))
    traced = body(str(tg.trace(g)(X16)))
    assert any(re.fullmatch(r"  %\d+ = mul x 1", line) for line in traced)
    dg = tg.grad(g)
    np.testing.assert_allclose(dg(X16), 1 / np.cosh(X16) ** 2, rtol=1e-13)
    assert any(re.fullmatch(r"  %\d+ = tanh x", line) for line in body(str(dg.tape)))
    assert not any(re.fullmatch(r"  %\d+ = sub \S+ 0", line) for line in body(str(dg.tape)))


def test_two_dims_swapped_back_are_the_operand():
    """Two dims swapped and swapped back (``dim0``/``dim1`` in either order or counted
    from the end) are the operand itself: no swap is left of them. A linear layer's weight
    gradient, the transpose of a product transposed back, reaches its leaf so without a
    view. Swaps of other dims are composed, not cancelled."""
    m = RNG.standard_normal((3, 4, 5))

    def back(a):
        return np.sum(np.swapaxes(np.swapaxes(a, 0, 2), -1, 0) * np.sin(a))
    a = RNG.standard_normal((3, 4, 5))
    assert ops(tg.trace(back)(a)).count("transpose") == 2
    dg = tg.grad(back)
    np.testing.assert_allclose(dg(a), np.sin(a) + a * np.cos(a), rtol=1e-13)
    assert "transpose" not in ops(dg.tape)

    n = RNG.standard_normal((4, 5, 3))

    def other(a):
        return np.sum(np.swapaxes(np.swapaxes(a, 0, 1), 1, 2) * n)
    dh = tg.grad(other)
    np.testing.assert_array_equal(dh(m), np.transpose(n, (2, 0, 1)))
    assert ops(dh.tape).count("transpose") == 2


def test_adding_zero_is_kept_for_the_sign_of_zero():
    g = tg.value_and_grad(lambda a: np.sum(1 / ((-a) + 0)))
    a = np.array([0.0, 1.0])
    with np.errstate(divide="ignore"):
        first, again = g(a)[0], g(a)[0]
        assert first == again == np.sum(1 / ((-a) + 0))


# -- what cannot be traced ---------------------------------------------------------------

LEAKED = []


def _leak(x):
    LEAKED.append(x)
    return np.sum(x)


@pytest.mark.parametrize("transform", [tg.trace, tg.grad], ids=["trace", "grad"])
@pytest.mark.parametrize("fn, match", [
    (lambda x: np.sum(np.searchsorted(x, 0.5)), r"numpy\.searchsorted cannot be traced"),
    (lambda x: np.sum(np.stack([[x[0]], [x[1]]])), r"converted to a NumPy array"),
    (lambda x: np.sum(np.add(x, 1, out=np.zeros(16))), r"numpy\.add\(\.\.\., out=\.\.\.\)"),
], ids=["searchsorted", "nested_lists_to_stack", "out"])
def test_untraceable_numpy_raises_tracer_error(transform, fn, match):
    with pytest.raises(tg.TracerError, match=match):
        transform(fn)(X16)


def test_tracer_error_is_a_runtime_error():
    assert issubclass(tg.TracerError, RuntimeError)


@pytest.mark.parametrize("use", [
    lambda t: t * 2,
    lambda t: np.sin(t),
    lambda t: tg.grad(lambda x: np.sum(x * t))(X16),
    lambda t: tg.trace(lambda x: x + t)(X16),
], ids=["operator", "ufunc", "in_another_grad", "in_another_trace"])
def test_leaked_tracer_used_after_the_trace_raises(use):
    LEAKED.clear()
    tg.grad(_leak)(X16)
    (leaked,) = LEAKED
    with pytest.raises(tg.TracerError, match="outside the trace"):
        use(leaked)


def test_out_error_message_has_no_unfilled_placeholder():
    with pytest.raises(tg.TracerError) as info:
        tg.trace(lambda x: np.add(x, 1, out=np.zeros(16)))(X16)
    assert "{" not in str(info.value)


OUT = np.zeros(2)


def test_assigning_a_traced_value_into_a_numpy_array_raises():
    """``buf[i] = traced`` for a plain ndarray ``buf`` made outside the traced function
    would silently make the value a constant (NumPy converts it with float()); the tape
    refuses it, before anything is written, and says what to do."""
    def f(x):
        OUT[0] = x.sum()
        return (OUT * OUT).sum()
    with pytest.raises(tg.TracerError, match="assigning it into a NumPy array"):
        tg.grad(f, mode="tape")(X16)
    assert np.all(OUT == 0)


def test_buffers_made_in_the_traced_function_are_traced():
    """np.zeros/ones/empty/full called by the traced function itself make traced arrays:
    writes of traced values into them are recorded (a preallocated buffer filled in a
    loop, as an RNN's states), and a list of traced values is an array to NumPy's
    reductions."""
    def f(x):
        h = np.zeros((3, 2))
        for t in range(2):
            h[t + 1] = np.tanh(x[t] + h[t])
        return np.sum(h) + np.mean([x[0], x[1] * 3])
    x = np.array([[0.2, -0.1], [0.4, 0.3]])
    np.testing.assert_allclose(tg.grad(f, mode="tape")(x), numeric(f, x), rtol=1e-6, atol=1e-9)


def test_assigning_into_a_traced_zeros_like_is_recorded():
    def f(x):
        out = np.zeros_like(x[:2])
        out[0] = x.sum()
        out[1] = (x ** 2).sum()
        return (out * out).sum()
    x = np.linspace(-1, 1, 16)
    expected = 2 * x.sum() + 4 * (x ** 2).sum() * x
    np.testing.assert_allclose(tg.grad(f)(x), expected)
