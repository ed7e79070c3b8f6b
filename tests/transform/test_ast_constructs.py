"""The Python the AST path differentiates beyond straight-line NumPy: lambdas (found in
their line by position), comprehensions and generator expressions (lowered to loops),
local functions and closures (inlined), ``*args``/``**kwargs`` in signatures and calls,
keyword calls, and dicts, lists and tuples as arguments, results and displays.

Each case is checked against central finite differences in reverse mode (``grad``) and
forward mode (``jvp``); ``mode="auto"`` must agree with the tape wherever the tape
answers; refusals name the file, the line and the construct."""
import inspect
import re

import numpy as np
import pytest

import tracegrad as tg
from tracegrad.transform.ast.aliasing import AliasError

RNG = np.random.default_rng(7)
X3 = RNG.normal(size=3)
X43 = RNG.normal(size=(4, 3))
HERE = __file__


# -- finite differences over pytrees ------------------------------------------------------

def _replace(tree, path, value):
    if not path:
        return value
    head, rest = path[0], path[1:]
    if isinstance(tree, dict):
        return {**tree, head: _replace(tree[head], rest, value)}
    items = list(tree)
    items[head] = _replace(items[head], rest, value)
    return type(tree)(items)


def _leaves(tree, path=()):
    if isinstance(tree, dict):
        return [p for k in tree for p in _leaves(tree[k], path + (k,))]
    if isinstance(tree, (list, tuple)):
        return [p for k, v in enumerate(tree) for p in _leaves(v, path + (k,))]
    return [path] if isinstance(tree, (float, np.ndarray)) else []


def _get(tree, path):
    for k in path:
        tree = tree[k]
    return tree


def numeric(f, args, n, eps=1e-6):
    """d f / d args[n] by central differences, in the shape of args[n] (a pytree)."""
    out = args[n]
    for path in _leaves(args[n]):
        x = _get(args[n], path)
        flat = np.array(x, dtype=float).ravel()
        g = np.zeros_like(flat)
        for i in range(flat.size):
            vals = []
            for step in (eps, -eps):
                moved = flat.copy()
                moved[i] += step
                value = float(moved[0]) if isinstance(x, float) else moved.reshape(np.shape(x))
                trial = list(args)
                trial[n] = _replace(args[n], path, value)
                vals.append(float(f(*trial)))
            g[i] = (vals[0] - vals[1]) / (2 * eps)
        out = _replace(out, path, float(g[0]) if isinstance(x, float) else g.reshape(np.shape(x)))
    return out


def assert_tree_close(got, want, rtol=1e-6, atol=1e-8):
    if isinstance(want, dict):
        assert isinstance(got, dict) and set(got) == set(want), (got, want)
        for k in want:
            assert_tree_close(got[k], want[k], rtol, atol)
    elif isinstance(want, (list, tuple)):
        assert type(got) is type(want) and len(got) == len(want), (got, want)
        for a, b in zip(got, want):
            assert_tree_close(a, b, rtol, atol)
    elif isinstance(want, (float, np.ndarray)):
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


def _line_of(fn, needle):
    lines, first = inspect.getsourcelines(fn)
    return first + next(i for i, line in enumerate(lines) if needle in line)


# -- the constructs ---------------------------------------------------------------------------

def _helper(u, v, scale=1.0):
    return np.sum(u * v) * scale


def _dict_saxpy(val):
    return val["a"] * val["b"] + val["c"]


def _pair(x):
    return {"double": x * 2.0, "square": x ** 2}


def nested_def_closure(x):
    s = 2.0

    def inner(z):
        return np.sum(z * x) * s
    y = x * 3.0
    return inner(y) + inner(x)


def nested_def_early_return(x):
    def clip(v):
        if np.sum(v) > 0:
            return v * 2.0
        return v
    return np.sum(clip(x) * clip(-x))


def named_lambda(x):
    sq = lambda v: v * v  # noqa: E731 (the construct under test)
    return np.sum(sq(x) + sq(2.0 * x))


def lambda_called_in_place(x):
    return np.sum((lambda y: y * x)(x * 2.0))


def star_signature(a, *xs):
    return np.sum(a * xs[0]) + np.sum(xs[1] ** 2)


def star_call(x, y):
    pair = [x, y]
    return _helper(*pair, scale=2.0)


def star_call_of_a_lambda(x, y):
    fun = lambda u, v: np.sum(u * np.sin(v))  # noqa: E731
    full = [x, y]
    return fun(*full)


def keyword_call(x):
    return np.sum(np.sum(x ** 2, axis=0) * np.arange(3.0))


def keyword_unpacking(x):
    options = {"scale": 3.0}
    return _helper(x, x, **options)


def keyword_only(x, *, power=2.0):
    return np.sum(x ** power)


def dict_argument(val):
    return np.sum(val["a"] * val["b"] + val["c"])


def dict_wrapper(abc):
    a, b, c = abc
    return np.sum(_dict_saxpy(dict(a=a, b=b, c=c)))


def dict_display(x):
    d = {"p": x * 2.0, "q": np.sin(x)}
    return np.sum(d["p"] * d["q"])


def nested_dict(p):
    return np.sum(p["i"]["j"] * p["i"]["k"])


def dict_result(x):
    r = _pair(x)
    return np.sum(r["double"] + r["square"])


def dict_iteration(d):
    s = 0.0
    for k, v in d.items():
        s = s + np.sum(np.sin(v)) * len(k)
    for v in d.values():
        s = s + np.sum(v ** 2)
    for k in sorted(d):
        s = s + np.sum(np.cos(d[k]))
    return s


def dict_comprehension(x):
    d = {k: x[k] * (k + 1.0) for k in range(3)}
    return np.sum(d[0] * d[2]) + np.sum(d[1])


def set_comprehension(x):
    rows = {int(i) % 2 for i in range(4)}
    return np.sum(x[sorted(rows)] ** 2)


def generator_expression(xs):
    return sum(np.sum(x ** 2) for x in xs)


def nested_comprehension(x):
    rows = [[x[i] * x[j] for j in range(2)] for i in range(2)]
    return np.sum(rows[0][1] + rows[1][0] + rows[1][1])


def comprehension_variable_shadows(x):
    i = x * 2.0
    ys = [x[i] ** 2 for i in range(3)]
    return np.sum(ys[0] + ys[2]) + np.sum(i)


def list_of_boxes_mean(x):
    return np.mean([x, x + 2.0])


def tuple_argument(pair):
    a, b = pair
    return np.sum(a * b)


def closure_writes_a_buffer(x):
    buf = np.zeros(3)

    def put(v):
        buf[0] = v
    put(x[0] * 2.0)
    put(buf[0] + x[1])
    return np.sum(buf * x)


CASES = [
    (nested_def_closure, (X3,), 0),
    (nested_def_early_return, (X3,), 0),
    (named_lambda, (X3,), 0),
    (lambda_called_in_place, (X3,), 0),
    (star_signature, (X3, X3 + 1.0, X3 * 2.0), (0, 1, 2)),
    (star_call, (X3, X3 * 2.0), (0, 1)),
    (star_call_of_a_lambda, (X3, X3 * 2.0), (0, 1)),
    (keyword_call, (X43,), 0),
    (keyword_unpacking, (X3,), 0),
    (keyword_only, (np.abs(X3) + 0.5,), 0),
    (dict_argument, ({"a": X3, "b": X3 * 2.0, "c": X3 + 1.0, "unused": X3},), 0),
    (dict_wrapper, ((X3, X3 * 2.0, X3 + 1.0),), 0),
    (dict_display, (X3,), 0),
    (nested_dict, ({"i": {"j": X3, "k": X3 * 3.0}},), 0),
    (dict_result, (X3,), 0),
    (dict_iteration, ({"ab": X3, "c": X3 * 2.0},), 0),
    (dict_comprehension, (X3,), 0),
    (set_comprehension, (X43,), 0),
    (generator_expression, ([X3, X3 * 2.0],), 0),
    (nested_comprehension, (X3,), 0),
    (comprehension_variable_shadows, (X3,), 0),
    (list_of_boxes_mean, (1.25,), 0),
    (tuple_argument, ((X3, X3 * 2.0),), 0),
    (closure_writes_a_buffer, (X3,), 0),
]
IDS = [c[0].__name__ for c in CASES]


@pytest.mark.parametrize("fn, args, argnums", CASES, ids=IDS)
def test_grad_matches_finite_differences(fn, args, argnums):
    g = tg.grad(fn, argnums=argnums, mode="ast")
    got = g(*args)
    nums = (argnums,) if isinstance(argnums, int) else argnums
    got = (got,) if isinstance(argnums, int) else got
    for n, gn in zip(nums, got):
        assert_tree_close(gn, numeric(fn, list(args), n))
    assert g.mode == "ast"
    compile(g.source, "<generated>", "exec")


@pytest.mark.parametrize("fn, args, argnums", CASES, ids=IDS)
def test_auto_never_differs_from_the_tape(fn, args, argnums):
    try:
        tape = tg.grad(fn, argnums=argnums, mode="tape")(*args)
    except tg.TracerError:
        tape = None  # (a buffer write, np.sum of a list: the tape refuses them)
    auto = tg.grad(fn, argnums=argnums, mode="auto")(*args)
    if tape is not None:
        assert_tree_close(auto, tape, rtol=1e-10, atol=1e-12)


def _tangent_like(x):
    if isinstance(x, dict):
        return {k: _tangent_like(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return type(x)(_tangent_like(v) for v in x)
    return float(RNG.normal()) if isinstance(x, float) else RNG.normal(size=np.shape(x))


def _dot(a, b):
    if isinstance(a, dict):
        return sum(_dot(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return sum(_dot(u, v) for u, v in zip(a, b))
    return float(np.sum(np.asarray(a) * np.asarray(b)))


@pytest.mark.parametrize("fn, args, argnums", CASES, ids=IDS)
def test_forward_mode_matches_finite_differences(fn, args, argnums):
    nums = (argnums,) if isinstance(argnums, int) else argnums
    tangents = tuple(_tangent_like(a) for a in args)
    value, tangent = tg.jvp(fn, args, tangents, mode="ast")
    want = sum(_dot(numeric(fn, list(args), n), tangents[n]) for n in nums)
    np.testing.assert_allclose(value, fn(*args), rtol=1e-12)
    np.testing.assert_allclose(tangent, want, rtol=1e-6, atol=1e-8)


# -- lambdas -------------------------------------------------------------------------------

def test_a_lambda_passed_to_grad_directly():
    g = tg.grad(lambda x: np.sum(x ** 2), mode="ast")
    np.testing.assert_allclose(g(X3), 2 * X3)
    assert "# grad of: lambda x: np.sum(x ** 2)" in g.source


def test_lambdas_on_one_line_are_told_apart_by_position():
    double, triple = (lambda x: np.sum(x * 2.0)), (lambda x: np.sum(x * 3.0))
    outer = lambda x: (lambda y: np.sum(y * x))(x * 2.0)  # noqa: E731
    np.testing.assert_allclose(tg.grad(triple, mode="ast")(X3), 3.0 * np.ones(3))
    np.testing.assert_allclose(tg.grad(double, mode="ast")(X3), 2.0 * np.ones(3))
    np.testing.assert_allclose(tg.grad(outer, mode="ast")(X3), 4.0 * X3)
    assert "x * 3.0" in tg.grad(triple, mode="ast").source


def test_a_lambda_in_forward_mode():
    value, tangent = tg.jvp(lambda x: np.sin(x) * x, (X3,), (np.ones(3),), mode="ast")
    np.testing.assert_allclose(tangent, np.cos(X3) * X3 + np.sin(X3))


# -- readable lowering -----------------------------------------------------------------------

def test_comprehensions_become_loops_named_after_the_user_variables():
    src = tg.grad(lambda a: np.sum([i * 3.0 for i in a]), mode="ast").source
    assert "items = []" in src and "items.append(" in src
    assert re.search(r"i = a\[k\d*\]", src)
    src = tg.grad(comprehension_variable_shadows, mode="ast").source
    assert "i1 = " not in src.split("# grad of")[0] or "x[i1]" in src  # the loop's own i


def test_local_functions_are_inlined_with_their_names_kept_or_prefixed():
    def iterpower_with_nested_def(a, n):
        def _fn(a, n):
            return a * n
        for i in range(n):
            a = _fn(a, a)
        return a
    g = tg.grad(iterpower_with_nested_def, mode="ast")
    assert g(1.1, 3) == pytest.approx(8 * 1.1 ** 7)
    src = g.source
    assert "fn_a = a" in src and "fn_n = a" in src and "def _fn" not in src
    assert "# grad of: return a * n" in src


def star_call_of_appended(x):
    parts = []
    for k in range(2):
        parts.append(x * (k + 1.0))
    return _helper(*parts)


def test_a_star_call_differentiates_the_arguments_that_may_carry_a_derivative():
    # a list display (or items written by index): those items, known when the call runs
    src = tg.grad(star_call, argnums=(0, 1), mode="ast").source
    assert "unstar(vjp_of(_helper, (0, 1))(dout, *pair, scale=2.0), (len(pair),))" in src
    # otherwise every argument, through the adjoint of all of them
    g = tg.grad(star_call_of_appended, mode="ast")
    np.testing.assert_allclose(g(X3), numeric(star_call_of_appended, [X3], 0))
    assert "d_helper(dout, *parts)" in g.source and "per_item(" not in g.source


def test_only_the_items_written_with_a_differentiated_value_are_differentiated():
    def unary(x, args=(0.5, 1.5, 2.5), argnum=1):
        full = list(args)
        full[argnum] = x
        return _order_and_value(*full)
    g = tg.grad(unary, mode="ast")
    np.testing.assert_allclose(g(X3), 2.0 * X3)
    assert "vjp_of(_order_and_value, (argnum % len(full),))" in g.source
    _, tangent = tg.jvp(unary, (X3,), (np.ones(3),), mode="ast")
    assert tangent == pytest.approx(np.sum(2.0 * X3))


def _order_and_value(order, x, c):
    return np.sum(x ** 2) + order * c


# -- refusals, and aliasing through the new constructs -----------------------------------------

def _apply(fn, v):
    return fn(v)


def lambda_capturing(x):
    ys = _apply(lambda v: v * x, x)
    return np.sum(ys)


def closure_returned(x):
    fn = _scaler(x)
    return np.sum(fn(x))


def _scaler(s):
    return lambda v: v * s


def recursive_local(x):
    def power(z, n):
        return 1.0 if n == 0 else z * power(z, n - 1)
    return np.sum(power(x, 3))


def local_called_in_a_condition(x):
    def positive(v):
        return np.sum(v) > 0
    while positive(x) and np.sum(x) < 10.0:
        x = x * 2.0
    return np.sum(x)


@pytest.mark.parametrize("fn, needle, construct", [
    (closure_returned, "return np.sum(fn(x))", "call of a function made from a differentiated value"),
    (recursive_local, "z * power(z, n - 1)", "recursive local function"),
    (local_called_in_a_condition, "while positive(x)", "local function call in a condition"),
])
def test_what_cannot_be_followed_is_refused_with_file_line_and_construct(fn, needle, construct):
    with pytest.raises(tg.TransformError) as info:
        tg.grad(fn, mode="ast")(X3)
    e = info.value
    assert (e.filename, e.lineno) == (HERE, _line_of(fn, needle))
    assert e.construct.startswith(construct.split(" (")[0])
    auto = tg.grad(fn)  # ... and auto takes the tape, which answers or refuses
    try:
        got = auto(X3)
    except tg.TracerError:
        return
    assert_tree_close(got, tg.grad(fn, mode="tape")(X3))


def closure_writes_a_viewed_buffer(x):
    buf = np.zeros(3)
    view = buf[:2]

    def put(v):
        buf[0] = v
    put(x[0] * 2.0)
    return np.sum(view * x[:2])


def comprehension_aliases(x):
    y = x * 1.0
    ys = [y for _ in range(2)]
    y[0] = 5.0
    return np.sum(ys[0] * x)


@pytest.mark.parametrize("fn, needle", [(closure_writes_a_viewed_buffer, "buf[0] = v"),
                                        (comprehension_aliases, "y[0] = 5.0")])
def test_in_place_writes_through_new_constructs_are_checked_for_aliasing(fn, needle):
    with pytest.raises(AliasError) as info:
        tg.grad(fn, mode="ast")(X3.copy())
    assert info.value.lineno == _line_of(fn, needle)
    try:
        tape = tg.grad(fn, mode="tape")(X3.copy())
    except tg.TracerError:
        return
    assert_tree_close(tg.grad(fn)(X3.copy()), tape, rtol=1e-12)


# -- closures made anew share one transformation --------------------------------------------

def _scaled_loss(scale, fn):
    def loss(x):
        return np.sum(fn(x) * scale)
    return loss


def test_closures_of_one_def_share_the_generated_code(monkeypatch):
    from tracegrad.transform.ast import driver
    compiled = []
    real = driver.compile_source
    monkeypatch.setattr(driver, "compile_source", lambda *a, **k: compiled.append(a[1]) or real(*a, **k))
    driver.clear_cache()
    for scale in (1.0, 2.0, 3.0):  # new closures, new captured values: the same code
        g = tg.grad(_scaled_loss(scale, np.sin), mode="ast")
        np.testing.assert_allclose(g(X3), scale * np.cos(X3))
    assert len(compiled) == 1
    g = tg.grad(_scaled_loss(2.0, np.tanh), mode="ast")  # another callee: transformed again
    np.testing.assert_allclose(g(X3), 2.0 * (1 - np.tanh(X3) ** 2))
    assert len(compiled) == 2
    grads = [tg.grad(lambda x: np.sum(x * k), mode="ast")(X3) for k in (1.0, 5.0)]
    np.testing.assert_allclose(grads[1], 5.0 * np.ones(3))


def test_a_function_with_asserts_in_a_test_module():
    # pytest rewrites the asserts of the modules it collects (this one): the function runs
    # other code than its source compiles to, which must not read as "the file was edited"
    def f(x):
        assert x.shape == (3,), "a vector"
        assert isinstance(x, np.ndarray) or True
        return np.sum(x ** 2)
    assert "@pytest_ar" in f.__globals__  # (the situation tested: else this test is moot)
    x = np.array([0.5, -1.0, 2.0])
    np.testing.assert_allclose(tg.grad(f, mode="ast")(x), 2 * x)
    with pytest.raises(AssertionError, match="a vector"):
        tg.grad(f, mode="ast")(np.ones(4))


# -- the value of value_and_grad is the function's value, whatever the adjoint restores --------

def rebinds_its_result(x):
    s = np.sum(x)
    s = s * s
    return s


def rebinds_its_parameter(x):
    x = np.sum(x * x)
    x = x * 2.0
    return x


def accumulates_in_a_loop(x):
    s = 0.0
    for i in range(3):
        s = s + x[i] * x[i]
    return s


def accumulates_from_zero(x):
    s = 0.0
    s = s + x[0] * x[1]
    return s


def rebinds_its_aux(x):
    s = np.sum(x)
    aux = s
    aux = aux * 10.0
    return s * s, aux


@pytest.mark.parametrize("mode", ["tape", "ast", "auto"])
@pytest.mark.parametrize("f", [rebinds_its_result, rebinds_its_parameter, accumulates_in_a_loop,
                               accumulates_from_zero], ids=lambda f: f.__name__)
def test_value_and_grad_returns_the_functions_value(f, mode):
    # the adjoint's lines put back the names the forward lines rebound (s = stack.pop()):
    # the value returned must be the one the forward lines computed (it was None, or x)
    x = np.array([0.3, -0.7, 1.1])
    value, grad = tg.value_and_grad(f, mode=mode)(x.copy())
    np.testing.assert_allclose(value, f(x.copy()), rtol=1e-12)
    np.testing.assert_allclose(grad, tg.grad(f, mode="tape")(x.copy()), rtol=1e-12)
    (value, aux), grad = tg.value_and_grad(rebinds_its_aux, has_aux=True, mode=mode)(x.copy())
    np.testing.assert_allclose([value, aux], rebinds_its_aux(x), rtol=1e-12)
    np.testing.assert_allclose(grad, 2 * np.sum(x) * np.ones(3), rtol=1e-12)


def weights_from_the_shape(x):
    return np.sum(x * x * np.arange(1.0, x.shape[-1] + 1)) + np.sum(np.full(x.shape, 2.0) * x)


@pytest.mark.parametrize("mode", ["tape", "ast", "auto"])
def test_constants_built_from_a_shape(mode):
    # x.shape makes no constant of x's value: np.arange/np.full of it are not refused
    x = np.array([0.3, 0.5, 2.0])
    np.testing.assert_allclose(tg.grad(weights_from_the_shape, mode=mode)(x), 2 * x * np.arange(1.0, 4.0) + 2.0)
    np.testing.assert_allclose(tg.hessian(weights_from_the_shape, mode=mode)(x), np.diag(2 * np.arange(1.0, 4.0)))
