"""``tracegrad.func.jvp`` / ``jacfwd``: against hand formulas and finite differences, and
against ``torch.func`` (results, layouts and errors)."""
import time

import numpy as np
import pytest

import tracegrad as tg
from tracegrad.func import jacfwd, jvp


def _f(x, y):
    return (x.sin() * y).sum(-1), x * y.exp()


def test_jvp_against_hand_formula():
    rng = np.random.default_rng(0)
    x, y, tx, ty = (rng.standard_normal((2, 3)) for _ in range(4))
    (s, p), (ts, tp) = jvp(_f, (tg.tensor(x), tg.tensor(y)), (tg.tensor(tx), tg.tensor(ty)))
    np.testing.assert_allclose(s.numpy(), (np.sin(x) * y).sum(-1))
    np.testing.assert_allclose(ts.numpy(), (np.cos(x) * tx * y + np.sin(x) * ty).sum(-1), rtol=1e-12)
    np.testing.assert_allclose(tp.numpy(), tx * np.exp(y) + x * np.exp(y) * ty, rtol=1e-12)
    assert s.grad_fn is None and not s.requires_grad


def test_jvp_has_aux_and_pytrees():
    x = tg.tensor([1.0, 2.0])
    out, tangent, aux = jvp(lambda d: (d["a"] * d["b"], {"k": d["a"]}), ({"a": x, "b": x},),
                            ({"a": tg.ones(2), "b": tg.zeros(2)},), has_aux=True)
    np.testing.assert_allclose(tangent.numpy(), [1.0, 2.0])
    assert list(aux) == ["k"] and tg.autograd.forward_ad.unpack_dual(aux["k"]).tangent is None


def test_jacfwd_against_finite_differences():
    rng = np.random.default_rng(1)
    x, y = rng.standard_normal((2, 3)), rng.standard_normal(3)
    jx, jy = jacfwd(lambda a, b: (a.tanh() @ b.exp()).exp(), argnums=(0, 1))(tg.tensor(x), tg.tensor(y))
    assert jx.shape == (2, 2, 3) and jy.shape == (2, 3)

    def f(a, b):
        return np.exp(np.tanh(a) @ np.exp(b))
    eps = 1e-6
    for (arg, jac, k) in ((x, jx, 0), (y, jy, 1)):
        for idx in np.ndindex(arg.shape):
            d = np.zeros_like(arg)
            d[idx] = eps
            args_p, args_m = [x, y], [x, y]
            args_p[k], args_m[k] = arg + d, arg - d
            column = (f(*args_p) - f(*args_m)) / (2 * eps)
            np.testing.assert_allclose(jac.numpy()[(slice(None),) + idx], column, rtol=1e-6, atol=1e-9)


def test_jacfwd_of_jacrev_like_hessian_via_forward_over_reverse():
    """jacfwd over a gradient computed with create_graph is the Hessian."""
    x = np.array([0.3, -0.7, 1.1])

    def grad_f(a):
        (g,) = tg.autograd.grad((a ** 3).sum() + (a[0] * a[1] * a[2]), a, create_graph=True)
        return g
    h = jacfwd(grad_f)(tg.tensor(x, requires_grad=True))
    expected = np.diag(6 * x) + np.array([[0, x[2], x[1]], [x[2], 0, x[0]], [x[1], x[0], 0]])
    np.testing.assert_allclose(h.detach().numpy(), expected, rtol=1e-12)


def test_jacfwd_of_a_small_function_is_quick():
    """Performance sanity: one forward pass per input element; 64 of them on a small MLP."""
    rng = np.random.default_rng(2)
    w1, w2 = tg.tensor(rng.standard_normal((32, 64))), tg.tensor(rng.standard_normal((8, 32)))
    x = tg.tensor(rng.standard_normal(64))

    def f(v):
        return w2 @ (w1 @ v).tanh()
    jacfwd(f)(x)  # warm up
    start = time.perf_counter()
    jac = jacfwd(f)(x)
    elapsed = time.perf_counter() - start
    assert jac.shape == (8, 64)
    h = np.tanh(w1.numpy() @ x.numpy())
    np.testing.assert_allclose(jac.numpy(), w2.numpy() @ ((1 - h ** 2)[:, None] * w1.numpy()), rtol=1e-10)
    assert elapsed < 2.0, f"jacfwd of a 64-input function took {elapsed:.2f}s"


def test_namedtuple_outputs_keep_their_type():
    """max's and sort's (values, indices) are pytree nodes: jvp and jacfwd give tangents and
    Jacobians in the same namedtuple (integer indices get zero tangents)."""
    x = tg.tensor([[1.0, 5.0], [4.0, 2.0]])
    out, tangent = jvp(lambda a: a.max(1), (x,), (tg.tensor([[10.0, 20.0], [30.0, 40.0]]),))
    assert type(out).__name__ == type(tangent).__name__ == "max"
    np.testing.assert_allclose(tangent.values.numpy(), [20.0, 30.0])
    assert tangent.indices.tolist() == [0, 0] and tangent.indices.dtype == tg.int64
    jac = jacfwd(lambda a: a.sort(0))(x)
    assert type(jac).__name__ == "sort" and jac.values.shape == (2, 2, 2, 2)
    np.testing.assert_allclose(jac.values.numpy().reshape(4, 4),  # values [[1, 2], [4, 5]]
                               [[1, 0, 0, 0], [0, 0, 0, 1], [0, 0, 1, 0], [0, 1, 0, 0]])


@pytest.mark.torch
def test_namedtuple_outputs_match_torch_func():
    import torch
    import torch.func  # noqa: F401
    def plain(tree):  # namedtuples of the two libraries as plain tuples, for _same
        return tuple(plain(t) for t in tree) if isinstance(tree, tuple) else tree
    for script in (lambda lib: lib.func.jvp(lambda a: a.max(1), (lib.tensor(X),), (lib.tensor(X) * 3,)),
                   lambda lib: lib.func.jacfwd(lambda a: a.topk(2, 1))(lib.tensor(X))):
        theirs, ours = script(torch), script(tg)
        _same(plain(theirs), plain(ours))
        assert type(ours).__name__ == type(theirs).__name__


# -- against torch.func ---------------------------------------------------------------------------

def _run(lib, script):
    try:
        return script(lib)
    except Exception as e:  # noqa: BLE001 -- the error is what is compared
        return (type(e).__name__, str(e).replace("torch.", "tracegrad.") if lib is not tg else str(e))


def _same(a, b):
    if isinstance(a, dict):
        assert isinstance(b, dict) and list(a) == list(b)
        for k in a:
            _same(a[k], b[k])
    elif isinstance(a, (tuple, list)):
        assert type(a) is type(b) and len(a) == len(b), (a, b)
        for x, y in zip(a, b):
            _same(x, y)
    elif a is None or isinstance(a, (str, bool, int, float)):
        assert a == b
    else:
        assert tuple(a.shape) == tuple(b.shape)
        np.testing.assert_allclose(np.asarray(a.detach()), b.detach().numpy(), rtol=1e-6, atol=1e-7)


X = [[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]]

SCRIPTS = {
    "jvp": lambda lib: lib.func.jvp(lambda a: a.sin() * a, (lib.tensor(X),), (lib.ones(2, 3),)),
    "jvp tuple out": lambda lib: lib.func.jvp(lambda a: (a.sin(), a * 2), (lib.tensor(X),), (lib.ones(2, 3),)),
    "jvp float64 tangent": lambda lib: lib.func.jvp(lib.sin, (lib.tensor(X),), (lib.ones(2, 3, dtype=lib.float64),)),
    "jvp int output": lambda lib: lib.func.jvp(lambda a: a.long(), (lib.tensor(X),), (lib.ones(2, 3),)),
    "jvp not a tuple": lambda lib: lib.func.jvp(lib.sin, lib.tensor(X), lib.ones(2, 3)),
    "jvp structure": lambda lib: lib.func.jvp(lib.sin, (lib.tensor(X),), (lib.ones(2, 3), lib.ones(2, 3))),
    "jvp non-tensor primal": lambda lib: lib.func.jvp(lib.sin, (1.0,), (1.0,)),
    "jvp size": lambda lib: lib.func.jvp(lib.sin, (lib.tensor(X),), (lib.ones(3),)),
    "jvp int primal": lambda lib: lib.func.jvp(lib.sin, (lib.tensor([1, 2]),), (lib.tensor([1, 2]),)),
    "jvp float output": lambda lib: lib.func.jvp(lambda a: 1.0, (lib.tensor(X),), (lib.ones(2, 3),)),
    "jvp aux missing": lambda lib: lib.func.jvp(lib.sin, (lib.tensor(X),), (lib.ones(2, 3),), has_aux=True),
    "jvp aux not tensor": lambda lib: lib.func.jvp(lambda a: (a, 3), (lib.tensor(X),), (lib.ones(2, 3),), has_aux=True),
    "jvp empty": lambda lib: lib.func.jvp(lib.sin, (), ()),
    "jvp strict": lambda lib: lib.func.jvp(lib.sin, (lib.tensor(X),), (lib.ones(2, 3),), strict=True),
    "jacfwd": lambda lib: lib.func.jacfwd(lambda a: a.sin().sum(0))(lib.tensor(X)),
    "jacfwd transpose": lambda lib: lib.func.jacfwd(lambda a: a.T)(lib.tensor(X)),
    "jacfwd 0-d": lambda lib: lib.func.jacfwd(lambda a: a * a)(lib.tensor(3.0)),
    "jacfwd argnums tuple": lambda lib: lib.func.jacfwd(lambda a, b: a * b, argnums=(0, 1))(lib.tensor(X), lib.tensor(X)),
    "jacfwd outputs tuple": lambda lib: lib.func.jacfwd(lambda a, b: (a * b, a.sum()), argnums=1)(lib.tensor(X), lib.tensor(X)),
    "jacfwd list output": lambda lib: lib.func.jacfwd(lambda a: [a, a * 2])(lib.tensor([1.0, 2.0])),
    "jacfwd has_aux": lambda lib: lib.func.jacfwd(lambda a: (a.exp(), a), has_aux=True)(lib.tensor([1.0, 2.0])),
    "jacfwd dict input": lambda lib: lib.func.jacfwd(lambda d: d["a"].sum() * d["b"])({"a": lib.tensor([1.0, 2.0]), "b": lib.tensor([3.0])}),
    "jacfwd argnum out of range": lambda lib: lib.func.jacfwd(lib.sin, argnums=2)(lib.tensor(X)),
    "jacfwd argnum float": lambda lib: lib.func.jacfwd(lib.sin, argnums=1.0)(lib.tensor(X)),
    "jacfwd argnums empty": lambda lib: lib.func.jacfwd(lib.sin, argnums=())(lib.tensor(X)),
    "jacfwd randomness": lambda lib: lib.func.jacfwd(lib.sin, randomness="foo")(lib.tensor(X)),
    "jacfwd aux missing": lambda lib: lib.func.jacfwd(lib.sin, has_aux=True)(lib.tensor(X)),
}


@pytest.mark.torch
@pytest.mark.parametrize("case", sorted(SCRIPTS))
def test_matches_torch_func(case):
    import torch
    import torch.func  # noqa: F401 -- torch.func is a lazily loaded submodule
    _same(_run(torch, SCRIPTS[case]), _run(tg, SCRIPTS[case]))


@pytest.mark.torch
def test_signatures_match_torch_func():
    import inspect

    import torch.func
    for name in ("jvp", "jacfwd"):
        ours, theirs = inspect.signature(getattr(tg.func, name)), inspect.signature(getattr(torch.func, name))
        assert [(p.name, p.kind, p.default) for p in ours.parameters.values()] == \
            [(p.name, p.kind, p.default) for p in theirs.parameters.values()]


def test_linearize_gives_the_jvp_at_the_primals():
    from tracegrad.func import jvp, linearize
    f = lambda a, b: (tg.tanh(a) * b, a + b)  # noqa: E731
    a, b = tg.tensor([0.5, -1.0, 2.0], dtype=tg.float64), tg.tensor([1.5, 2.0, -0.5], dtype=tg.float64)
    out, jvp_fn = linearize(f, a, b)
    for o, w in zip(out, f(a, b)):
        np.testing.assert_array_equal(o.numpy(), w.numpy())
    for ta, tb in ((tg.ones(3, dtype=tg.float64), tg.zeros(3, dtype=tg.float64)),
                   (tg.tensor([0.1, 0.2, 0.3], dtype=tg.float64), tg.tensor([1.0, -1.0, 2.0], dtype=tg.float64))):
        got, want = jvp_fn(ta, tb), jvp(f, (a, b), (ta, tb))[1]
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g.numpy(), w.numpy())
    np.testing.assert_allclose(jvp_fn(tg.ones(3, dtype=tg.float64), tg.zeros(3, dtype=tg.float64))[0].numpy(),
                               (1 - np.tanh(a.numpy()) ** 2) * b.numpy())
    with pytest.raises(RuntimeError, match="doesn't match the shape"):
        jvp_fn(tg.ones(2), tg.ones(3))
    with pytest.raises(RuntimeError, match="to have the same argspec as the primals"):
        jvp_fn(tg.ones(3))
