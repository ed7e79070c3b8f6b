"""The AST path's generated source is meant to be read: it keeps the user's names, names
gradients ``dx``, comments each block with the line it differentiates, and carries no
dead or trivial assignments. These tests pin the issue's example down."""
import ast
import linecache
import traceback

import numpy as np
import pytest

import tracegrad as tg


def f(x, w):
    h = np.tanh(x @ w)
    return np.sum(h * h)


def chain(y):
    for _ in range(3):
        y = np.tanh(y * 1.01 + 0.1)
    return np.sum(y)


def _assignments(tree):
    return [n for n in ast.walk(tree) if isinstance(n, ast.Assign)]


def _stored(tree):
    return [t.id for a in _assignments(tree) for t in ast.walk(a) if isinstance(t, ast.Name)
            and isinstance(t.ctx, ast.Store)]


def _loaded(tree):
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def test_the_issue_example_reads_like_hand_written_backprop():
    g = tg.grad(f, argnums=1)
    x, w = np.random.default_rng(0).normal(size=(4, 3)), np.random.default_rng(1).normal(size=(3, 2))
    np.testing.assert_allclose(g(x, w), tg.grad(f, argnums=1, mode="tape")(x, w), rtol=1e-12)
    assert g.mode == "ast"
    src = g.source
    lines = [line.strip() for line in src.splitlines()]
    assert lines[0] == "def df_dw(x, w, dout=1.0):"
    # the forward pass, in the user's names, then one commented block per user line, last first
    assert lines[1] == "# forward"
    assert "t = x @ w" in lines and "h = np.tanh(t)" in lines
    i_ret = lines.index("# grad of: return np.sum(h * h)")
    i_h = lines.index("# grad of: h = np.tanh(x @ w)")
    assert lines.index("h = np.tanh(t)") < i_ret < i_h
    # gradients are named after the variables they belong to
    assert "dt = dh * (1.0 - h * h)" in lines
    assert lines[-1] == "return dw"
    assert {"dh", "dt", "dw"} <= set(_stored(ast.parse(src)))


def test_no_dead_or_trivial_assignments():
    for fn, argnums in ((f, 1), (f, (0, 1)), (chain, 0)):
        tree = ast.parse(tg.grad(fn, argnums=argnums, mode="ast").source)
        loaded = _loaded(tree)
        for a in _assignments(tree):
            for name in (t.id for t in ast.walk(a.targets[0]) if isinstance(t, ast.Name)):
                assert name in loaded or name == "_", f"{name} is assigned and never read"
            # no copies such as ``dt = dh`` and no resets nobody reads
            assert not isinstance(a.value, ast.Name), ast.unparse(a)


def test_loops_restore_overwritten_values_from_a_stack():
    src = tg.grad(chain, mode="ast").source
    assert "stack.append(y)" in src and "y = stack.pop()" in src
    assert "for _ in reversed(range(3)):" in src
    assert "# grad of: y = np.tanh(y * 1.01 + 0.1)" in src
    x = np.linspace(-1, 1, 5)
    expected = np.ones_like(x)
    ys = [x]
    for _ in range(3):
        ys.append(np.tanh(ys[-1] * 1.01 + 0.1))
    for y in reversed(ys[1:]):
        expected = expected * (1 - y * y) * 1.01
    np.testing.assert_allclose(tg.grad(chain, mode="ast")(x), expected, rtol=1e-12)


def uses_dx(x, dx):
    h = x * dx
    return np.sum(h)


def test_gradient_names_avoid_the_users_names():
    g = tg.grad(uses_dx, argnums=(0, 1), mode="ast")
    tree = ast.parse(g.source)
    ret = [n for n in ast.walk(tree) if isinstance(n, ast.Return)][-1]
    names = [e.id for e in ret.value.elts]
    assert names[0] != "dx" and names[0].startswith("dx"), names  # x's gradient is not the user's dx
    x, dx = np.arange(3.0), np.arange(3.0) + 1
    gx, gdx = g(x, dx)
    np.testing.assert_allclose(gx, dx)
    np.testing.assert_allclose(gdx, x)


def test_user_functions_get_adjoints_of_their_own():
    src = tg.grad(calls_helper, mode="ast").source
    assert "def dcalls_helper_dx(" in src and "def dlayer(" in src
    x = np.linspace(-1, 1, 3)
    np.testing.assert_allclose(tg.grad(calls_helper, mode="ast")(x),
                               tg.grad(calls_helper, mode="tape")(x), rtol=1e-12)


def layer(x, w):
    return np.tanh(x * w)


def calls_helper(x):
    h = layer(x, 2.0)
    return np.sum(layer(h, 0.5))


def test_tracebacks_show_generated_lines():
    g = tg.grad(shape_error, mode="ast")
    with pytest.raises(ValueError) as info:
        g(np.ones(3))
    frames = traceback.extract_tb(info.value.__traceback__)
    generated = [fr for fr in frames if fr.filename.startswith("<ast:")]
    assert generated and generated[-1].line  # linecache knows the generated source
    assert linecache.getline(generated[-1].filename, generated[-1].lineno).strip() == generated[-1].line


def shape_error(x):
    return np.sum(x @ np.ones((4, 2)))
