"""Seed 004 (blog post "Autograd": Tensor attributes, backward / autograd.grad, grad_fn and
next_functions, register_hook).

Real PyTorch 2.x names win over the post's: ``ExpBackward0`` (not ``ExpBackward``).
"""
import re
import warnings

import numpy as np
import pytest

import tracegrad as torch

from ._helpers import (IMPLICIT_SCALAR, NONLEAF_GRAD_WARNING, SECOND_BACKWARD, arr,
                       node_pattern)


# -- Tensor attributes ------------------------------------------------------------------------

def test_tensor_attributes():
    """data, require_grad (user leaves default False, computed tensors follow their inputs),
    grad (accumulates until reset), grad_fn (None for leaves), is_leaf."""
    x = torch.tensor([1., 2.])
    assert x.requires_grad is False
    w = torch.tensor([3., 4.], requires_grad=True)
    r = x * w
    assert r.requires_grad is True and not r.is_leaf
    assert w.grad_fn is None and w.is_leaf and r.grad_fn is not None
    np.testing.assert_array_equal(arr(w.data), [3., 4.])
    assert not w.data.requires_grad
    r.sum().backward()
    r2 = x * w
    r2.sum().backward()
    np.testing.assert_allclose(arr(w.grad), [2., 4.])    # accumulated
    w.grad.zero_()
    np.testing.assert_allclose(arr(w.grad), [0., 0.])


# -- Backward ---------------------------------------------------------------------------------

def test_autograd_backward_equals_tensor_backward():
    """``torch.autograd.backward(z) == z.backward()``."""
    x = torch.tensor([1., 2.], requires_grad=True)
    z = (x ** 2).sum()
    torch.autograd.backward(z)
    via_function = arr(x.grad)
    x.grad = None
    z = (x ** 2).sum()
    z.backward()
    np.testing.assert_allclose(arr(x.grad), via_function)
    np.testing.assert_allclose(via_function, [2., 4.])


def test_autograd_backward_parameter_names():
    """``torch.autograd.backward(tensors, grad_tensors=None, retain_graph=None,
    create_graph=False, grad_variables=None)``."""
    x = torch.tensor([1., 2.], requires_grad=True)
    torch.autograd.backward(tensors=x * x, grad_tensors=torch.tensor([1., 1.]),
                            retain_graph=None, create_graph=False)
    np.testing.assert_allclose(arr(x.grad), [2., 4.])


def test_grad_variables_is_deprecated():
    """grad_variables: "grad_variables is deprecated. Use grad_tensors instead." -- PyTorch
    still honours it, with a FutureWarning."""
    x = torch.tensor([1., 2.], requires_grad=True)
    with pytest.warns(FutureWarning, match=r"`grad_variables` is deprecated\. Use `grad_tensors` instead\."):
        torch.autograd.backward(x * x, grad_variables=torch.tensor([1., 10.]))
    np.testing.assert_allclose(arr(x.grad), [2., 40.])


def test_grad_variables_and_grad_tensors_together_raise():
    """(grad_variables) passing both it and grad_tensors is an error in PyTorch."""
    x = torch.tensor([1., 2.], requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        with pytest.raises(RuntimeError, match=r"`grad_tensors` and `grad_variables` \(deprecated\) arguments both passed"):
            torch.autograd.backward(x * x, grad_tensors=torch.ones(2), grad_variables=torch.ones(2))


def test_retain_graph_needed_for_second_backward():
    """retain_graph: after calling backward once, PyTorch destroys the computation graph; to call
    backward on a variable multiple times, set this parameter to True."""
    x = torch.tensor(2.0, requires_grad=True)
    z = x ** 3
    z.backward(retain_graph=True)
    z.backward()
    assert x.grad.item() == 24.0
    with pytest.raises(RuntimeError, match=SECOND_BACKWARD):
        z.backward()


def test_scalar_backward(capsys):
    """``z = x**2+y; z.backward(); print(z, x.grad, y.grad)`` ->
    ``tensor(7., grad_fn=<AddBackward0>) tensor(4.) tensor(1.)``."""
    x = torch.tensor(2.0, requires_grad=True)
    y = torch.tensor(3.0, requires_grad=True)
    z = x ** 2 + y
    z.backward()
    print(z, x.grad, y.grad)
    assert capsys.readouterr().out == "tensor(7., grad_fn=<AddBackward0>) tensor(4.) tensor(1.)\n"


def test_tensor_backward_requires_gradient():
    """``z = x + 2; z.backward()`` -> RuntimeError: grad can be implicitly created only for
    scalar outputs; ``z.backward(torch.ones_like(z))`` works."""
    x = torch.ones(2, requires_grad=True)
    z = x + 2
    with pytest.raises(RuntimeError, match=IMPLICIT_SCALAR):
        z.backward()
    x = torch.ones(2, requires_grad=True)
    z = x + 2
    z.backward(torch.ones_like(z))
    np.testing.assert_allclose(arr(x.grad), [1., 1.])


def test_tensor_backward_sum_or_grad_tensor_multiply():
    """"We can sum z here to compute the grad. Or we can use the grad_tensor to multiply with z"."""
    x = torch.tensor([1., 2.], requires_grad=True)
    (x * x).sum().backward()
    summed = arr(x.grad)
    x.grad = None
    v = torch.tensor([3., 0.5])
    (x * x).backward(v)
    np.testing.assert_allclose(arr(x.grad), summed * np.array([3., 0.5]))
    x.grad = None
    (x * x * v).sum().backward()
    np.testing.assert_allclose(arr(x.grad), summed * np.array([3., 0.5]))


# -- Autograd ----------------------------------------------------------------------------------

def test_autograd_grad_for_leaf(capsys):
    """``print(torch.autograd.grad(outputs=z, inputs=x), x.grad)`` -> ``(tensor(4.),) None``."""
    x = torch.tensor(2.0, requires_grad=True)
    y = torch.tensor(3.0, requires_grad=True)
    z = x ** 2 + y
    z.backward()
    print(z, x.grad, y.grad)
    x = torch.tensor(2.0, requires_grad=True)
    z = x ** 2
    print(torch.autograd.grad(outputs=z, inputs=x), x.grad)
    assert capsys.readouterr().out == ("tensor(7., grad_fn=<AddBackward0>) tensor(4.) tensor(1.)\n"
                                       "(tensor(4.),) None\n")


def test_autograd_grad_for_internal_node():
    """The internal nodes' gradients are computed with autograd.grad."""
    x = torch.tensor([1., 2.], requires_grad=True)
    h = x * 3
    out = (h * h).sum()
    (gh,) = torch.autograd.grad(out, h)
    np.testing.assert_allclose(arr(gh), 2 * arr(h))


# -- Grad_fn and next_functions ------------------------------------------------------------------

def test_backward_matches_hand_called_nodes():
    """``torch.manual_seed(6)`` ... ``dl = torch.tensor(1.); back_sum = l.grad_fn; dz =
    back_sum(dl); back_mul = back_sum.next_functions[0][0]; dx, dy = back_mul(dz); back_x =
    back_mul.next_functions[0][0]; back_x(dx); back_y = back_mul.next_functions[1][0];
    back_y(dy)`` gives the same x.grad / y.grad as ``l.backward()``."""
    torch.manual_seed(6)
    x = torch.randn(4, 4, requires_grad=True)
    y = torch.randn(4, 4, requires_grad=True)
    z = x * y
    l = z.sum()
    l.backward()
    gx, gy = arr(x.grad), arr(y.grad)
    np.testing.assert_array_equal(gx, arr(y))
    np.testing.assert_array_equal(gy, arr(x))

    # equivalent
    torch.manual_seed(6)
    x = torch.randn(4, 4, requires_grad=True)
    y = torch.randn(4, 4, requires_grad=True)
    z = x * y
    l = z.sum()
    dl = torch.tensor(1.)
    back_sum = l.grad_fn
    dz = back_sum(dl)
    back_mul = back_sum.next_functions[0][0]
    dx, dy = back_mul(dz)
    back_x = back_mul.next_functions[0][0]
    back_x(dx)
    back_y = back_mul.next_functions[1][0]
    back_y(dy)
    np.testing.assert_array_equal(arr(x.grad), gx)
    np.testing.assert_array_equal(arr(y.grad), gy)


def test_hand_called_node_results():
    """(same example) what each hand call returns: a Tensor of the input's shape for the
    one-input SumBackward0, a pair for MulBackward0, nothing (an empty tuple) for
    AccumulateGrad, which adds into the leaf's .grad."""
    x = torch.tensor([[1., 2.], [3., 4.]], requires_grad=True)
    y = torch.tensor([[5., 6.], [7., 8.]], requires_grad=True)
    l = (x * y).sum()
    back_sum = l.grad_fn
    assert back_sum.name() == "SumBackward0"
    dz = back_sum(torch.tensor(1.))
    assert isinstance(dz, torch.Tensor) and dz.shape == (2, 2)
    np.testing.assert_array_equal(arr(dz), np.ones((2, 2)))
    back_mul = back_sum.next_functions[0][0]
    assert back_mul.name() == "MulBackward0"
    out = back_mul(dz)
    assert isinstance(out, tuple) and len(out) == 2
    dx, dy = out
    np.testing.assert_array_equal(arr(dx), arr(y))
    np.testing.assert_array_equal(arr(dy), arr(x))
    back_x = back_mul.next_functions[0][0]
    assert type(back_x).__name__ == "AccumulateGrad" and back_x.variable is x
    assert x.grad is None
    assert back_x(dx) == ()
    np.testing.assert_array_equal(arr(x.grad), arr(y))
    back_x(dx)                      # called again: accumulates
    np.testing.assert_array_equal(arr(x.grad), 2 * arr(y))
    assert y.grad is None


def test_another_example_forward_prints(capsys):
    """``F = D + E`` with ``C = A * B, D = C.exp()``: ``print(F)`` ->
    ``tensor(3.7183, grad_fn=<AddBackward0>)``; is_leaf list ``[True, True, False, False, True,
    False]``."""
    A = torch.tensor(2., requires_grad=True)
    B = torch.tensor(.5, requires_grad=True)
    E = torch.tensor(1., requires_grad=True)
    C = A * B
    D = C.exp()
    F = D + E
    print(F)
    print([x.is_leaf for x in [A, B, C, D, E, F]])
    assert capsys.readouterr().out == ("tensor(3.7183, grad_fn=<AddBackward0>)\n"
                                       "[True, True, False, False, True, False]\n")


def _abcdef():
    A = torch.tensor(2., requires_grad=True)
    B = torch.tensor(.5, requires_grad=True)
    E = torch.tensor(1., requires_grad=True)
    C = A * B
    D = C.exp()
    F = D + E
    return A, B, C, D, E, F


def test_another_example_grad_fns():
    """``print([x.grad_fn for x in [F, D, C, A]])`` -> ``[<AddBackward0 ...>, <ExpBackward0 ...>,
    <MulBackward0 ...>, None]`` (PyTorch 2.x: ExpBackward0)."""
    A, B, C, D, E, F = _abcdef()
    pat = r"\[{}, {}, {}, None\]".format(node_pattern("AddBackward0"), node_pattern("ExpBackward0"),
                                         node_pattern("MulBackward0"))
    s = str([x.grad_fn for x in [F, D, C, A]])
    assert re.fullmatch(pat, s), s


def test_another_example_next_functions():
    """``print(F.grad_fn.next_functions)`` -> ``((<ExpBackward0 object at ...>, 0),
    (<AccumulateGrad object at ...>, 0))``: one edge per input of the op, the leaf E reached
    through its AccumulateGrad."""
    A, B, C, D, E, F = _abcdef()
    nf = F.grad_fn.next_functions
    pat = r"\(\({}, 0\), \({}, 0\)\)".format(node_pattern("ExpBackward0"), node_pattern("AccumulateGrad"))
    assert re.fullmatch(pat, str(nf)), str(nf)
    assert isinstance(nf, tuple) and all(isinstance(e, tuple) and len(e) == 2 for e in nf)
    assert nf[0][0] is D.grad_fn
    assert nf[1][0].variable is E
    assert D.grad_fn.next_functions[0][0] is C.grad_fn
    acc_a, acc_b = (e[0] for e in C.grad_fn.next_functions)
    assert acc_a.variable is A and acc_b.variable is B
    assert A.grad_fn is None                # the leaf itself has no grad_fn


def test_next_functions_second_item_is_output_index():
    """next_functions: "The second is the argument index of the previous ops in the previous
    output" -- which output of the producing node each input was."""
    w = torch.arange(6.).requires_grad_()
    a, b, c = w.split(2)
    s = a + c
    (n0, i0), (n1, i1) = s.grad_fn.next_functions
    assert n0 is n1 is a.grad_fn
    assert type(n0).__name__ == "SplitBackward0"
    assert (i0, i1) == (0, 2)


def test_another_example_backward_values(capsys):
    """``F.backward(retain_graph=True)``; ``print(A.grad, B.grad, E.grad)`` -> ``tensor(1.3591)
    tensor(5.4366) tensor(1.)``; ``print(C.grad, D.grad)`` -> ``None None`` (non-leaves, with
    the non-leaf .grad warning)."""
    A, B, C, D, E, F = _abcdef()
    F.backward(retain_graph=True)
    print(A.grad, B.grad, E.grad)
    with pytest.warns(UserWarning, match=NONLEAF_GRAD_WARNING):
        print(C.grad, D.grad)
    assert capsys.readouterr().out == "tensor(1.3591) tensor(5.4366) tensor(1.)\nNone None\n"
    F.backward()                    # the graph was retained: a second pass works
    np.testing.assert_allclose(arr(A.grad), 2 * 0.5 * np.exp(1.), rtol=1e-6)


# -- Register Hook --------------------------------------------------------------------------------

def test_print_grad_hook_halves_gradient(capsys):
    """``def print_grad(grad): print(grad); return grad / 2``; ``w.register_hook(print_grad)``;
    ``loss = (w - 1) ** 2``; ``loss.mean().backward()`` between "before backward" and "after
    backward"."""
    seen = []

    def print_grad(grad):
        seen.append(grad)
        print(grad)
        return grad / 2

    torch.manual_seed(0)
    w = torch.nn.Parameter(torch.randn(2, 2))
    w.register_hook(print_grad)
    loss = (w - 1) ** 2
    print('before backward')
    loss.mean().backward()
    print('after backward')
    print(w.grad)
    out = capsys.readouterr().out
    assert len(seen) == 1
    np.testing.assert_allclose(arr(seen[0]), (arr(w) - 1) / 2, rtol=1e-6)   # d mean((w-1)^2)
    np.testing.assert_allclose(arr(w.grad), (arr(w) - 1) / 4, rtol=1e-6)   # halved by the hook
    assert out == f"before backward\n{seen[0]}\nafter backward\n{w.grad}\n"


def test_parameter_and_operator_hooks(capsys):
    """``w.register_hook(parameter_hook)``; ``y = w + 1; op1 = y.grad_fn; print(op1);
    op1.register_hook(operator_hook); y.sum().backward()``, then the same with ``z`` and no
    operator hook: the operator hook runs once, before the tensor hook, only for ``op1``; the
    tensor hook prints each time and, returning None, leaves the gradient unchanged."""
    def parameter_hook(grad):
        print('parameter hook')

    def operator_hook(*grads):
        print('operator hook')

    w = torch.nn.Parameter(torch.randn(2, 2))
    w.register_hook(parameter_hook)

    print('first')
    y = w + 1
    op1 = y.grad_fn
    print(op1)
    op1.register_hook(operator_hook)
    y.sum().backward()

    print('second')
    z = w + 1
    op2 = z.grad_fn
    print(op2)
    z.sum().backward()

    out = capsys.readouterr().out
    pat = r"first\n{0}\noperator hook\nparameter hook\nsecond\n{0}\nparameter hook\n".format(
        node_pattern("AddBackward0"))
    assert re.fullmatch(pat, out), out
    assert op1 is not op2
    np.testing.assert_allclose(arr(w.grad), np.full((2, 2), 2.))


# -- model.eval() and torch.no_grad() -------------------------------------------------------------

def test_no_grad_declares_no_gradients_are_calculated():
    """torch.no_grad() declares that no gradients should be calculated (no graph is kept)."""
    w = torch.randn(3, requires_grad=True)
    with torch.no_grad():
        out = (w * 2).exp().sum()
    assert out.grad_fn is None and not out.requires_grad
    with pytest.raises(RuntimeError, match=r"does not require grad and does not have a grad_fn"):
        out.backward()
