"""``tracegrad.autograd.functional``: vjp, jvp, jacobian, hessian, vhp, hvp.

Values are checked against hand-derived derivatives; structure (what is a tuple) and
error messages against PyTorch's documented behaviour, and the oracle test compares all
six functions with real PyTorch on the same functions and data.
"""
import numpy as np
import pytest

import tracegrad as tg
from tracegrad.autograd import functional as F

X = np.array([0.3, -1.2, 2.0])
Y = np.array([[0.5, 1.5, -0.7], [2.2, -0.1, 0.9]])


def t(a, **kw):
    return tg.tensor(a, dtype=tg.float64, **kw)


def exp_times_x(x):
    return (x.exp() * x).sum()  # d/dx = (1 + x) e^x, d2/dx2 = (2 + x) e^x on the diagonal


def two_in_two_out(x, y):
    return (x * y).tanh(), (y ** 2).sum(0)


def test_jacobian_of_an_elementwise_function_is_diagonal():
    jac = F.jacobian(lambda x: x.sin() * 2, t(X))
    np.testing.assert_allclose(jac.numpy(), np.diag(2 * np.cos(X)))
    assert not jac.requires_grad


def test_jacobian_blocks_have_output_shape_then_input_shape():
    jac = F.jacobian(two_in_two_out, (t(X), t(Y)))
    assert isinstance(jac, tuple) and all(isinstance(row, tuple) for row in jac)
    shapes = [[tuple(b.shape) for b in row] for row in jac]
    assert shapes == [[(2, 3, 3), (2, 3, 2, 3)], [(3, 3), (3, 2, 3)]]
    # d tanh(x*y)[i,k] / d x[m] = (1 - tanh^2) * y[i,k] when m == k
    sech2 = 1 - np.tanh(X * Y) ** 2
    expected = np.zeros((2, 3, 3))
    for i in range(2):
        for k in range(3):
            expected[i, k, k] = sech2[i, k] * Y[i, k]
    np.testing.assert_allclose(jac[0][0].numpy(), expected)
    # d sum_i y[i,k]^2 / d y[m,n] = 2 y[m,n] when n == k
    expected = np.zeros((3, 2, 3))
    for k in range(3):
        expected[k, :, k] = 2 * Y[:, k]
    np.testing.assert_allclose(jac[1][1].numpy(), expected)
    np.testing.assert_array_equal(jac[1][0].numpy(), np.zeros((3, 3)))  # y's sum ignores x


@pytest.mark.parametrize("strategy", ["reverse-mode", "forward-mode"])
def test_both_strategies_give_the_same_jacobian(strategy):
    jac = F.jacobian(two_in_two_out, (t(X), t(Y)), strategy=strategy)
    ref = F.jacobian(two_in_two_out, (t(X), t(Y)))
    for row, ref_row in zip(jac, ref):
        for a, b in zip(row, ref_row):
            np.testing.assert_allclose(a.numpy(), b.numpy(), atol=1e-12)


def test_hessian_of_a_scalar_function():
    h = F.hessian(exp_times_x, t(X))
    np.testing.assert_allclose(h.numpy(), np.diag((2 + X) * np.exp(X)))
    hh = F.hessian(lambda x, y: (x * y.sum(0)).sum() + (x ** 3).sum(), (t(X), t(Y)))
    np.testing.assert_allclose(hh[0][0].numpy(), np.diag(6 * X))
    cross = np.zeros((3, 2, 3))
    for k in range(3):
        cross[k, :, k] = 1.0
    np.testing.assert_allclose(hh[0][1].numpy(), cross)
    np.testing.assert_allclose(hh[1][0].numpy(), cross.transpose(1, 2, 0))
    np.testing.assert_array_equal(hh[1][1].numpy(), np.zeros((2, 3, 2, 3)))


def test_vjp_and_jvp_are_the_jacobian_products():
    v_out = np.array([0.2, -1.0, 0.4])
    v_in = np.array([1.0, 0.5, -2.0])
    f = lambda x: x.sin() * 2
    jac = np.diag(2 * np.cos(X))
    value, vj = F.vjp(f, t(X), t(v_out))
    np.testing.assert_allclose(value.numpy(), 2 * np.sin(X))
    np.testing.assert_allclose(vj.numpy(), v_out @ jac)
    value, jv = F.jvp(f, t(X), t(v_in))
    np.testing.assert_allclose(jv.numpy(), jac @ v_in)


def test_vjp_of_a_scalar_function_needs_no_vector():
    value, g = F.vjp(exp_times_x, t(X))
    np.testing.assert_allclose(value.item(), np.sum(np.exp(X) * X))
    np.testing.assert_allclose(g.numpy(), (1 + X) * np.exp(X))


def test_vhp_and_hvp_are_hessian_products():
    v = np.array([1.0, -0.5, 0.25])
    h = np.diag((2 + X) * np.exp(X))
    _, vh = F.vhp(exp_times_x, t(X), t(v))
    _, hv = F.hvp(exp_times_x, t(X), t(v))
    np.testing.assert_allclose(vh.numpy(), v @ h)
    np.testing.assert_allclose(hv.numpy(), h @ v)


def test_results_are_detached_unless_create_graph():
    x = t(X, requires_grad=True)
    _, g = F.vjp(exp_times_x, x)
    assert not g.requires_grad and g.grad_fn is None
    _, g = F.vjp(exp_times_x, x, create_graph=True)
    assert g.requires_grad
    g.sum().backward()  # d/dx sum((1 + x) e^x) = (2 + x) e^x flows back to the caller's x
    np.testing.assert_allclose(x.grad.numpy(), (2 + X) * np.exp(X))


def test_create_graph_hessian_can_be_differentiated_again():
    x = t(X, requires_grad=True)
    h = F.hessian(lambda x: (x ** 4).sum(), x, create_graph=True)  # diag(12 x^2)
    np.testing.assert_allclose(h.detach().numpy(), np.diag(12 * X ** 2))
    (d3,) = tg.autograd.grad(h.diagonal().sum(), x)
    np.testing.assert_allclose(d3.numpy(), 24 * X)


def test_inputs_are_not_modified_and_their_grad_is_untouched():
    x = t(X, requires_grad=True)
    F.jacobian(lambda x: x * x, x)
    F.hvp(exp_times_x, x, t(np.ones(3)))
    assert x.grad is None and x.is_leaf


def test_a_function_ignoring_an_input_gets_zeros_or_a_strict_error():
    jac = F.jacobian(lambda x, y: x * 2, (t(X), t(Y)))
    np.testing.assert_array_equal(jac[1].numpy(), np.zeros((3, 2, 3)))
    with pytest.raises(RuntimeError, match="Output 0 of the user-provided function is independent "
                                           "of input 1. This is not allowed in strict mode."):
        F.jacobian(lambda x, y: x * 2, (t(X), t(Y)), strict=True)
    with pytest.raises(RuntimeError, match="Output 0 of the user-provided function does not require gradients"):
        F.jvp(lambda x: tg.ones(3, dtype=tg.float64), t(X), t(np.ones(3)), strict=True)
    with pytest.raises(RuntimeError, match="with respect to input 0 is independent of the input"):
        F.hvp(lambda x: x.sum(), t(X), t(np.ones(3)), strict=True)  # linear: Hessian is 0


@pytest.mark.parametrize("call, error, message", [
    (lambda: F.vjp(lambda x: x * 2, t(X)), RuntimeError,
     "The vector v can only be None if the user-provided function returns a single Tensor with a single element."),
    (lambda: F.jvp(lambda x: x * 2, t(X)), RuntimeError,
     "The vector v can only be None if the input to the user-provided function is a single Tensor"),
    (lambda: F.vjp(lambda x: x * 2, t(X), t(np.ones(2))), RuntimeError,
     r"v has invalid size: should be tracegrad.Size\(\[3\]\) but got tracegrad.Size\(\[2\]\)."),
    (lambda: F.jvp(lambda x, y: x, (t(X), t(Y)), (t(X),)), RuntimeError,
     "v is a tuple of invalid length: should be 2 but got 1."),
    (lambda: F.vjp(lambda x: x * 2, [t(X)]), TypeError,
     "The inputs given to vjp must be either a Tensor or a tuple of Tensors but the given inputs has type <class 'list'>."),
    (lambda: F.jacobian(lambda x: x, (t(X), 3.0)), TypeError, "the value at index 1 has type <class 'float'>"),
    (lambda: F.jacobian(lambda x: [x], t(X)), TypeError,
     "The outputs of the user-provided function given to jacobian must be either a Tensor or a tuple"),
    (lambda: F.hessian(lambda x: x * 2, t(X)), RuntimeError,
     "The Tensor returned by the function given to hessian should contain a single element"),
    (lambda: F.hessian(lambda x: (x.sum(), x.sum()), t(X)), RuntimeError,
     "The function given to hessian should return a single Tensor"),
    (lambda: F.vhp(lambda x: x * 2, t(X), t(X)), RuntimeError,
     "The Tensor returned by the function given to vhp should contain a single element"),
    (lambda: F.jacobian(lambda x: x, t(X), strategy="sideways"), ValueError,
     'strategy must be "forward-mode" or "reverse-mode"'),
])
def test_bad_arguments_are_named(call, error, message):
    with pytest.raises(error, match=message):
        call()


@pytest.mark.torch
@pytest.mark.parametrize("create_graph", [False, True])
def test_all_six_match_pytorch(create_graph):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    v_y = rng.standard_normal((2, 3))

    def check(mine, theirs):
        if isinstance(theirs, (tuple, list)):
            assert isinstance(mine, tuple) and len(mine) == len(theirs)
            for a, b in zip(mine, theirs):
                check(a, b)
            return
        assert tuple(mine.shape) == tuple(theirs.shape)
        assert mine.requires_grad == theirs.requires_grad
        np.testing.assert_allclose(mine.detach().numpy(), theirs.detach().numpy(), atol=1e-12)

    for lib_fn in ("jacobian", "vjp", "jvp"):
        args = {"vjp": ((t(v_y), t(X)),), "jvp": ((t(X), t(Y)),)}.get(lib_fn, ())
        targs = {"vjp": ((torch.tensor(v_y), torch.tensor(X)),), "jvp": ((torch.tensor(X), torch.tensor(Y)),)}.get(lib_fn, ())
        mine = getattr(F, lib_fn)(two_in_two_out, (t(X), t(Y)), *args, create_graph=create_graph)
        theirs = getattr(torch.autograd.functional, lib_fn)(
            two_in_two_out, (torch.tensor(X), torch.tensor(Y)), *targs, create_graph=create_graph)
        check(mine, theirs)
    for lib_fn in ("hessian", "vhp", "hvp"):
        args = () if lib_fn == "hessian" else (t(np.ones(3)),)
        targs = () if lib_fn == "hessian" else (torch.ones(3, dtype=torch.float64),)
        check(getattr(F, lib_fn)(exp_times_x, t(X), *args, create_graph=create_graph),
              getattr(torch.autograd.functional, lib_fn)(exp_times_x, torch.tensor(X), *targs,
                                                         create_graph=create_graph))


def _cube_sum(a):
    return (a ** 3).sum()


FORWARD_SCRIPTS = {  # jvp / hvp / vhp calls whose results or errors must match PyTorch's
    "jvp": lambda L, F, x, v: F.jvp(lambda a: a ** 2, x, v),
    "jvp v None": lambda L, F, x, v: F.jvp(lambda a: a ** 2, x),
    "jvp create_graph": lambda L, F, x, v: F.jvp(lambda a: a ** 2, x, v, create_graph=True),
    "jvp strict detached": lambda L, F, x, v: F.jvp(lambda a: a.detach(), x, v, strict=True),
    "jvp detached": lambda L, F, x, v: F.jvp(lambda a: a.detach(), x, v),
    "jvp bad size": lambda L, F, x, v: F.jvp(lambda a: a ** 2, x, L.ones(3)),
    "jvp v tuple": lambda L, F, x, v: F.jvp(lambda a: a ** 2, x, (v, v)),
    "jvp float output": lambda L, F, x, v: F.jvp(lambda a: 3.0, x, v),
    "jvp float input": lambda L, F, x, v: F.jvp(lambda a: a, (x, 3.0), (v, v)),
    "hvp": lambda L, F, x, v: F.hvp(_cube_sum, x, v),
    "vhp": lambda L, F, x, v: F.vhp(_cube_sum, x, v),
    "hvp non-scalar": lambda L, F, x, v: F.hvp(lambda a: a ** 2, x, v),
    "vhp non-scalar": lambda L, F, x, v: F.vhp(lambda a: a ** 2, x, v),
    "hvp strict linear": lambda L, F, x, v: F.hvp(lambda a: a.sum(), x, v, strict=True),
    "hvp linear": lambda L, F, x, v: F.hvp(lambda a: a.sum(), x, v),
    "vhp strict linear": lambda L, F, x, v: F.vhp(lambda a: a.sum(), x, v, strict=True),
    "hvp strict detached": lambda L, F, x, v: F.hvp(lambda a: (a.detach() ** 2).sum(), x, v, strict=True),
    "hvp create_graph": lambda L, F, x, v: F.hvp(_cube_sum, x, v, create_graph=True),
    "hvp two inputs": lambda L, F, x, v: F.hvp(lambda a, b: (a * b * b).sum(), (x, x), (v, v)),
    "vhp two inputs": lambda L, F, x, v: F.vhp(lambda a, b: (a * b * b).sum(), (x, x), (v, v)),
    "hvp strict create_graph": lambda L, F, x, v: F.hvp(_cube_sum, x, v, strict=True, create_graph=True),
}


def _forward_script(lib, name):
    x, v = lib.tensor([1.0, 2.0], dtype=lib.float64), lib.tensor([1.0, -1.0], dtype=lib.float64)
    try:
        return FORWARD_SCRIPTS[name](lib, lib.autograd.functional, x, v)
    except Exception as e:  # noqa: BLE001 -- the error is what is compared
        return type(e).__name__, str(e).replace("torch.", "tracegrad.")


def _same_structure(a, b):
    if isinstance(a, tuple) and isinstance(a[0], str):
        assert a == b
    elif isinstance(a, tuple):
        assert isinstance(b, tuple) and len(a) == len(b), (a, b)
        for x, y in zip(a, b):
            _same_structure(x, y)
    else:
        assert a.requires_grad == b.requires_grad
        np.testing.assert_allclose(b.detach().numpy(), a.detach().numpy(), rtol=1e-12)


@pytest.mark.torch
@pytest.mark.parametrize("name", sorted(FORWARD_SCRIPTS))
def test_jvp_hvp_vhp_results_and_errors_match_torch(name):
    import torch
    _same_structure(_forward_script(torch, name), _forward_script(tg, name))
