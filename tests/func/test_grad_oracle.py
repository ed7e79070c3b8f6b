"""grad, grad_and_value, vjp, jacrev, hessian against torch.func (values, layouts for
argnums tuples and pytrees, has_aux, errors), and compositions of them."""
import numpy as np
import pytest

import tracegrad as tg
from tracegrad import func as F

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

RNG = np.random.default_rng(0)
X = RNG.standard_normal(4)
Y = RNG.standard_normal(4)
M = RNG.standard_normal((3, 4))


def pair(a):
    return tg.tensor(a), torch.tensor(a)


def same(ours, theirs, tol=1e-10):
    """Same pytree layout, same values."""
    if isinstance(theirs, (tuple, list)):
        assert type(ours) is type(theirs) and len(ours) == len(theirs), (ours, theirs)
        for a, b in zip(ours, theirs):
            same(a, b, tol)
    elif isinstance(theirs, dict):
        assert set(ours) == set(theirs)
        for k in theirs:
            same(ours[k], theirs[k], tol)
    elif isinstance(theirs, torch.Tensor):
        assert isinstance(ours, tg.Tensor)
        assert tuple(ours.shape) == tuple(theirs.shape)
        np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=tol, atol=tol)
    else:
        assert ours == theirs


def both(fn_of_lib, *arrays):
    """Run ``fn_of_lib(lib, func_namespace)(*tensors)`` with tracegrad and with torch."""
    ours = fn_of_lib(tg, F)(*[tg.tensor(a) for a in arrays])
    theirs = fn_of_lib(torch, torch.func)(*[torch.tensor(a) for a in arrays])
    same(ours, theirs)
    return ours, theirs


def error_of(call):
    with pytest.raises(Exception) as info:
        call()
    return type(info.value), str(info.value)


def same_error(fn_of_lib, *arrays):
    ours = error_of(lambda: fn_of_lib(tg, F)(*[tg.tensor(a) for a in arrays]))
    theirs = error_of(lambda: fn_of_lib(torch, torch.func)(*[torch.tensor(a) for a in arrays]))
    assert ours == theirs


def f_scalar(lib):
    return lambda x, y: (lib.sin(x) * y ** 2).sum()


@pytest.mark.parametrize("argnums", [0, 1, (0, 1), (1,), -1])
def test_grad_argnums_layouts(argnums):
    both(lambda lib, fn: fn.grad(f_scalar(lib), argnums=argnums), X, Y)


def test_grad_and_value_with_aux():
    def make(lib, fn):
        def f(x, y):
            v = (x * y).sum()
            return v, {"double": 2 * v, "x": x}
        return fn.grad_and_value(f, argnums=(0, 1), has_aux=True)
    both(make, X, Y)


def test_grad_of_a_pytree_input():
    ours = F.grad(lambda p, x: (p["w"] * x).sum() + (p["b"][0] ** 2).sum())(
        {"w": tg.tensor(X), "b": (tg.tensor(Y),)}, tg.tensor(Y))
    theirs = torch.func.grad(lambda p, x: (p["w"] * x).sum() + (p["b"][0] ** 2).sum())(
        {"w": torch.tensor(X), "b": (torch.tensor(Y),)}, torch.tensor(Y))
    same(ours, theirs)


def test_second_and_third_order_grad():
    for order in (2, 3):
        def make(lib, fn, order=order):
            g = lambda x: (x ** 4).sum()
            def summed_grad(inner):
                return lambda x: fn.grad(inner)(x).sum()
            h = g
            for _ in range(order):
                h = summed_grad(h)
            return h
        # d^order/dx^order of sum(x^4), summed: a chain of grads of sums
        ours = make(tg, F)(tg.tensor(X))
        theirs = make(torch, torch.func)(torch.tensor(X))
        same(ours, theirs)


def test_grad_of_grad_through_a_captured_variable():
    """Perturbation confusion check: d/dx [x * d/dy (x * y)] = 2x."""
    def make(lib, fn):
        return fn.grad(lambda x: (x * fn.grad(lambda y: (x * y).sum())(lib.ones_like(x))).sum())
    both(make, X)


@pytest.mark.parametrize("argnums", [0, 1, (0, 1)])
def test_jacrev(argnums):
    def make(lib, fn):
        return fn.jacrev(lambda m, x: lib.tanh(m @ x), argnums=argnums)
    both(make, M, X)


def test_jacrev_of_pytree_outputs_and_aux():
    def make(lib, fn):
        return fn.jacrev(lambda x: ({"a": x ** 2, "b": (x.sum(),)}, x * 3), has_aux=True)
    both(make, X)


def test_jacrev_of_jacrev_and_hessian():
    both(lambda lib, fn: fn.jacrev(fn.jacrev(lambda x: (x ** 3).sum() * lib.sin(x).sum())), X)
    both(lambda lib, fn: fn.hessian(lambda x, y: (x ** 2 * y).sum() + (x * y ** 3).sum(), argnums=(0, 1)), X, Y)


def test_vjp_values_and_pullback():
    for lib, fn, xs in ((tg, F, pair(X)[0]), (torch, torch.func, pair(X)[1])):
        out, pull = fn.vjp(lambda x, lib=lib: (lib.exp(x), x.sum()), xs)
        ct = (lib.ones_like(out[0]) * 2, lib.tensor(3.0, dtype=out[1].dtype))
        if lib is tg:
            ours = (out, pull(ct))
        else:
            theirs = (out, pull(ct))
    same(ours, theirs)


def test_vjp_with_aux():
    results = []
    for lib, fn in ((tg, F), (torch, torch.func)):
        out, pull, aux = fn.vjp(lambda x, y: (x * y, {"s": x.sum()}), lib.tensor(X), lib.tensor(Y), has_aux=True)
        results.append((out, pull(lib.ones_like(out)), aux))
    same(*results)


def test_results_are_plain_unless_inputs_require_grad():
    g = F.grad(lambda x: (x ** 2).sum())(tg.tensor(X))
    assert not g.requires_grad and g.grad_fn is None
    x = tg.tensor(X, requires_grad=True)
    g = F.grad(lambda x: (x ** 2).sum())(x)
    assert g.requires_grad
    (g.sum()).backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.ones(4))


def test_transforms_do_not_touch_dot_grad():
    x = tg.tensor(X, requires_grad=True)
    w = tg.tensor(Y, requires_grad=True)
    F.grad(lambda x: (x * w).sum())(x)
    F.jacrev(lambda x: x * w)(x)
    F.vjp(lambda x: x * w, x)[1](tg.ones(4))
    assert x.grad is None and w.grad is None


@pytest.mark.parametrize("case", [
    lambda lib, fn: fn.grad(lambda x: x ** 2),                      # not a scalar
    lambda lib, fn: fn.grad(lambda x: x.sum(), argnums=1),          # argnum out of range
    lambda lib, fn: fn.grad(lambda x: (x.sum(), 1), has_aux=False),  # a tuple
    lambda lib, fn: fn.grad(lambda x: x.sum(), has_aux=True),       # aux missing
    lambda lib, fn: fn.grad(lambda x: x.sum(), argnums=()),
    lambda lib, fn: fn.grad(lambda x: x.sum(), argnums=(0, 0)),
    lambda lib, fn: fn.jacrev(lambda x: x.sum(), argnums=()),
])
def test_errors_match_torch(case):
    same_error(case, X)


def test_error_for_a_non_tensor_input():
    ours = error_of(lambda: F.grad(lambda x: x * 2)(3.0))
    theirs = error_of(lambda: torch.func.grad(lambda x: x * 2)(3.0))
    assert ours == theirs


def test_error_for_an_integer_input():
    ours = error_of(lambda: F.grad(lambda x: x.sum())(tg.arange(3)))
    theirs = error_of(lambda: torch.func.grad(lambda x: x.sum())(torch.arange(3)))
    assert ours == theirs


def test_vjp_cotangent_shape_error():
    ours = error_of(lambda: F.vjp(lambda a: a * 2, tg.tensor(X))[1](tg.ones(5, dtype=tg.float64)))
    theirs = error_of(lambda: torch.func.vjp(lambda a: a * 2, torch.tensor(X))[1](torch.ones(5, dtype=torch.float64)))
    assert ours[0] is theirs[0] and ours[1].replace("tracegrad", "torch") == theirs[1]


def test_unused_input_gets_zeros():
    both(lambda lib, fn: fn.grad(lambda x, y: (x ** 2).sum(), argnums=(0, 1)), X, Y)


@pytest.mark.parametrize("case", [
    lambda lib, fn: fn.jacrev(lambda x: x.argmax(0)),            # an integer output
    lambda lib, fn: fn.jacrev(lambda x: x.max(0)),               # max's indices
    lambda lib, fn: lambda x: fn.vjp(lambda a: (a.sum(), a > 0), x),  # a bool output
])
def test_integer_outputs_are_refused_by_vjp_and_jacrev(case):
    """A zero Jacobian for argmax's indices would hide the slip: torch.func refuses it."""
    ours = error_of(lambda: case(tg, F)(tg.tensor(X)))
    theirs = error_of(lambda: case(torch, torch.func)(torch.tensor(X)))
    assert ours[0] is theirs[0] and ours[1].replace("tracegrad.", "torch.") == theirs[1]
