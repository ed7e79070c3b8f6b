"""What the AST path refuses, and how: ``TransformError`` naming the file, the line and
the construct, with ``mode="tape"`` as the way out; ``mode="auto"`` takes that way by
itself and says so in ``.mode``."""
import re

import numpy as np
import pytest

import tracegrad as tg

HERE = __file__


def _apply(fn, v):
    return fn(v)


def captured_lambda(x):
    ys = _apply(lambda v: v * x, x)
    return np.sum(ys)


def uses_try(x):
    try:
        y = np.exp(x)
    except FloatingPointError:
        y = x
    return np.sum(y)


def nested_recursion(x):
    def power(z, n):
        return 1.0 if n == 0 else z * power(z, n - 1)
    return np.sum(power(x, 3))


def local_function_value(x):
    def twice(z):
        y = z * 2
        return y
    return np.sum(_apply(twice, x))


def uses_global_statement(x):
    global _COUNTER
    _COUNTER = 1
    return np.sum(x)


def walrus(x):
    if (n := np.sum(x)) > 0:
        return n
    return -n


OPTIONS = {"b": 1.0}


def dict_unpacking(x):
    d = {**OPTIONS, "a": x}
    return np.sum(d["a"])


def set_display(x):
    members = {x[0], x[1]}
    return np.sum(x) * len(members)


def _line_of(fn, needle):
    import inspect
    lines, first = inspect.getsourcelines(fn)
    return first + next(i for i, line in enumerate(lines) if needle in line)


@pytest.mark.parametrize("fn, needle, construct", [
    (uses_try, "try:", "try statement"),
    (nested_recursion, "z * power(z, n - 1)", "recursive local function"),
    (local_function_value, "_apply(twice, x)", "local function used as a value"),
    (uses_global_statement, "global _COUNTER", "global statement"),
    (walrus, ":=", "assignment expression"),
    (dict_unpacking, "d = {", "dict unpacking"),
    (set_display, "members = {", "set of differentiated values"),
])
def test_unsupported_constructs_name_file_line_and_construct(fn, needle, construct):
    with pytest.raises(tg.TransformError) as info:
        tg.grad(fn, mode="ast").source
    e = info.value
    assert e.filename == HERE
    assert e.lineno == _line_of(fn, needle)
    assert construct in str(e)
    assert str(e).startswith(f"{HERE}, line {e.lineno}: ")
    assert 'mode="tape"' in str(e)


@pytest.mark.parametrize("fn", [uses_try, nested_recursion, local_function_value, dict_unpacking])
def test_auto_falls_back_to_the_tape_silently(fn):
    x = np.linspace(-1, 1, 4)
    g = tg.grad(fn)
    assert g.mode == "tape"
    assert isinstance(g.fallback_reason, tg.TransformError)
    np.testing.assert_allclose(g(x), tg.grad(fn, mode="tape")(x), rtol=1e-12)
    assert "def " in g.source  # the tape's generated code


def test_auto_uses_the_ast_path_when_it_can():
    def fine(x):
        return np.sum(np.sin(x))
    g = tg.grad(fine)
    assert g.mode == "ast"
    np.testing.assert_allclose(g(np.zeros(3)), np.ones(3))


def test_builtins_have_no_source_to_transform():
    with pytest.raises(tg.TransformError, match="not a Python function"):
        tg.grad(np.sin, mode="ast").source
    # ... and auto mode differentiates them on the tape; a lambda has its source
    g = tg.grad(np.sin)
    assert g.mode == "tape" and g(0.0) == pytest.approx(1.0)
    g = tg.grad(lambda x: np.sum(x * x))
    np.testing.assert_allclose(g(np.arange(3.0)), 2 * np.arange(3.0))
    assert g.mode == "ast"


def test_source_typed_at_a_prompt_is_refused():
    namespace = {"np": np}
    exec("def typed(x):\n    return np.sum(x * x)\n", namespace)
    with pytest.raises(tg.TransformError, match="source of typed is not available"):
        tg.grad(namespace["typed"], mode="ast").source
    assert tg.grad(namespace["typed"]).mode == "tape"


def test_bad_mode_and_argnums():
    with pytest.raises(ValueError, match=re.escape("mode must be one of ('auto', 'tape', 'ast'), not 'fast'")):
        tg.grad(captured_lambda, mode="fast")
    with pytest.raises(ValueError, match="argnums 3 out of range"):
        tg.grad(nested_recursion, argnums=3, mode="ast")(np.ones(2))


def non_scalar(x):
    return np.tanh(x)


def test_non_scalar_output_is_refused_like_backward():
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar outputs"):
        tg.grad(non_scalar, mode="ast")(np.ones(3))
