"""Seed 002 (Chinese translation of the PyTorch autograd tutorial, plus a hand-checked MLP).

The resnet18 / nn / optim parts (the training step, ``optim.zero_grad()``, freezing
``model.parameters()``, ``model.fc = nn.Linear``) are in test_seeds_nn.py; their
plain-tensor equivalents (``w.data = w.data - lr * w.grad.data``, ``w.grad.data.zero_()``)
are tested here. The MLP's printed random numbers cannot be reproduced: the relations between
them are checked instead.
"""
import inspect
import re

import numpy as np
import pytest

import tracegrad as torch
import tracegrad.autograd as autograd

from ._helpers import NONLEAF_GRAD_WARNING, SECOND_BACKWARD, arr, assert_node_repr


# -- 自动微分中的求导过程: Q = 3a^3 - b^2 --------------------------------------------------------

def test_q_backward_with_external_grad(capsys):
    """``Q.backward(gradient=external_grad)``; ``print(9*a**2 == a.grad)`` and ``print(-2*b ==
    b.grad)`` -> ``tensor([True, True])``; ``a.grad`` / ``b.grad`` as shown."""
    a = torch.tensor([2., 3.], requires_grad=True)
    b = torch.tensor([6., 4.], requires_grad=True)
    Q = 3 * a ** 3 - b ** 2
    external_grad = torch.tensor([1., 1.])
    Q.backward(gradient=external_grad)
    print(9 * a ** 2 == a.grad)
    print(-2 * b == b.grad)
    print(repr(a.grad))
    print(repr(b.grad))
    assert capsys.readouterr().out == ("tensor([True, True])\n"
                                       "tensor([True, True])\n"
                                       "tensor([36., 81.])\n"
                                       "tensor([-12.,  -8.])\n")


def test_q_sum_backward_is_the_same():
    """同样地，我们也可以将 Q 聚合成一个标量，并隐式地调用 backward，例如 Q.sum().backward()."""
    a = torch.tensor([2., 3.], requires_grad=True)
    b = torch.tensor([6., 4.], requires_grad=True)
    Q = 3 * a ** 3 - b ** 2
    Q.sum().backward()
    np.testing.assert_allclose(arr(a.grad), [36., 81.])
    np.testing.assert_allclose(arr(b.grad), [-12., -8.])


def test_backward_of_vector_is_vector_jacobian_product():
    """torch.autograd 就是用于计算向量雅可比积的引擎: backward(v) gives J^T v."""
    M = np.array([[1., 2., 3.], [4., 5., 6.]], dtype=np.float32)
    x = torch.tensor([1., -1., 2.], requires_grad=True)
    y = (torch.tensor(M) * x).sum(1)        # y = M x, so J = M
    v = torch.tensor([0.5, -2.])
    y.backward(v)
    np.testing.assert_allclose(arr(x.grad), M.T @ np.array([0.5, -2.]), rtol=1e-6)


def test_dag_is_rebuilt_after_each_backward():
    """在每次 .backward() 调用之后，图是从头开始重新创建的: recomputing the forward gives a new
    graph (new grad_fn objects) and backward works again."""
    a = torch.tensor([2., 3.], requires_grad=True)
    Q1 = 3 * a ** 3
    Q1.sum().backward()
    Q2 = 3 * a ** 3
    assert Q2.grad_fn is not Q1.grad_fn
    Q2.sum().backward()
    np.testing.assert_allclose(arr(a.grad), 2 * 9 * np.array([2., 3.]) ** 2)


# -- 从有向无环图（DAG）中排除 -----------------------------------------------------------------

def test_exclusion_first_example(capsys):
    """x, y without grad, z with grad: a = x + y -> False, b = x + z -> True."""
    x = torch.rand(5, 5)
    y = torch.rand(5, 5)
    z = torch.rand((5, 5), requires_grad=True)
    a = x + y
    print(f"Does `a` require gradients? : {a.requires_grad}")
    b = x + z
    print(f"Does `b` require gradients?: {b.requires_grad}")
    assert capsys.readouterr().out == ("Does `a` require gradients? : False\n"
                                       "Does `b` require gradients?: True\n")


def test_exclusion_second_example(capsys):
    """x with grad: ``a = x + y``, ``b = a + z``, ``c = y + z``. The note's comment says ``a``
    is False, but a tensor computed from x (requires_grad=True) requires grad -- real PyTorch
    prints True."""
    x = torch.rand((5, 5), requires_grad=True)
    y = torch.rand(5, 5)
    z = torch.rand(5, 5)
    a = x + y
    print(f"Does `a` require gradients? : {a.requires_grad}")
    b = a + z
    print(f"Does `b` require gradients?: {b.requires_grad}")
    c = y + z
    print(f"Does `c` require gradients?: {c.requires_grad}")
    assert capsys.readouterr().out == ("Does `a` require gradients? : True\n"
                                       "Does `b` require gradients?: True\n"
                                       "Does `c` require gradients?: False\n")


def test_frozen_tensor_gets_no_grad_trainable_one_does():
    """冻结参数 (frozen parameters): with plain tensors, only the one left requiring grad is
    updated by backward."""
    frozen = torch.tensor([1., 2.], requires_grad=True)
    frozen.requires_grad = False
    head = torch.tensor([3., 4.], requires_grad=True)
    (frozen * head).sum().backward()
    assert frozen.grad is None
    np.testing.assert_allclose(arr(head.grad), [1., 2.])


def test_no_grad_context_excludes_from_dag():
    """相同的排除功能也可以通过 torch.no_grad() 作为上下文管理器来使用."""
    x = torch.rand((5, 5), requires_grad=True)
    with torch.no_grad():
        a = x + 1
    assert not a.requires_grad and a.grad_fn is None


# -- optimizer comments, as plain tensors ------------------------------------------------------

def test_plain_sgd_step_through_data_and_grad_zeroing():
    """单纯的 SGD 计算 ``w.data = w.data - lr * w.grad.data``; ``执行 w.grad.data.zero_()``; 梯度
    是累加起来而不是被替换."""
    w = torch.tensor([1., 2.], requires_grad=True)
    (w * w).sum().backward()
    (w * w).sum().backward()
    np.testing.assert_allclose(arr(w.grad), [4., 8.])     # accumulated, not replaced
    w.data = w.data - 0.1 * w.grad.data
    np.testing.assert_allclose(arr(w), [0.6, 1.2], rtol=1e-6)
    assert w.is_leaf and w.requires_grad
    w.grad.data.zero_()
    np.testing.assert_allclose(arr(w.grad), [0., 0.])


# -- torch.Tensor.backward ------------------------------------------------------------------------

def test_tensor_backward_signature_and_keywords():
    """``Tensor.backward(gradient=None, retain_graph=None, create_graph=False, inputs=None)``."""
    params = inspect.signature(torch.Tensor.backward).parameters
    assert list(params)[1:] == ["gradient", "retain_graph", "create_graph", "inputs"]
    assert [params[n].default for n in list(params)[1:]] == [None, None, False, None]
    x = torch.tensor([1., 2.], requires_grad=True)
    w = torch.tensor([3., 4.], requires_grad=True)
    y = x * w
    y.backward(gradient=torch.ones(2), retain_graph=True, create_graph=False, inputs=[x])
    np.testing.assert_allclose(arr(x.grad), [3., 4.])
    assert w.grad is None       # inputs=[x]: only x accumulates


def test_backward_accumulates_set_grad_to_none_to_reset():
    """This function accumulates gradients in the leaves - you might need to zero .grad
    attributes or set them to None before calling it."""
    x = torch.tensor([1., 2.], requires_grad=True)
    (x * 3).sum().backward()
    (x * 3).sum().backward()
    np.testing.assert_allclose(arr(x.grad), [6., 6.])
    x.grad = None
    assert x.grad is None
    (x * 3).sum().backward()
    np.testing.assert_allclose(arr(x.grad), [3., 3.])


def _xs():
    x1 = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    x2 = torch.tensor([4.0, 5.0, 6.0], requires_grad=True)
    x3 = torch.tensor([7.0, 8.0, 9.0], requires_grad=True)
    return x1, x2, x3


def test_scalar_loss_backward_x1_x2_x3(capsys):
    """``y1 = x1 * x2; y2 = y1 + x3; z = torch.sum(y2); z.backward()``, the three grads."""
    x1, x2, x3 = _xs()
    y1 = x1 * x2
    y2 = y1 + x3
    z = torch.sum(y2)
    z.backward()
    print(x1.grad)  # tensor([4., 5., 6.])
    print(x2.grad)  # tensor([1., 2., 3.])
    print(x3.grad)  # tensor([1., 1., 1.])
    assert capsys.readouterr().out == "tensor([4., 5., 6.])\ntensor([1., 2., 3.])\ntensor([1., 1., 1.])\n"


def test_scalar_loss_interactive_attributes():
    """``>>> y1.grad # None``, ``>>> y2.grad``, ``>>> y1.grad_fn`` -> ``<MulBackward0 object at
    ...>``, ``y2.grad_fn`` -> ``<AddBackward0 ...>``, ``y1.requires_grad`` -> True, ``x1.grad``
    -> ``tensor([4., 5., 6.])``, ``x1.grad_fn`` -> None."""
    x1, x2, x3 = _xs()
    y1 = x1 * x2
    y2 = y1 + x3
    torch.sum(y2).backward()
    with pytest.warns(UserWarning, match=NONLEAF_GRAD_WARNING):
        assert y1.grad is None
    with pytest.warns(UserWarning, match=NONLEAF_GRAD_WARNING):
        assert y2.grad is None
    assert_node_repr(y1.grad_fn, "MulBackward0")
    assert_node_repr(y2.grad_fn, "AddBackward0")
    assert y1.requires_grad is True
    assert repr(x1.grad) == "tensor([4., 5., 6.])"
    assert x1.grad_fn is None


def test_non_scalar_backward_with_external_grad(capsys):
    """``y2.backward(external_grad)`` with ``external_grad = torch.tensor([1., 1., 1.0])`` gives
    the same grads as summing."""
    x1, x2, x3 = _xs()
    y1 = x1 * x2
    y2 = y1 + x3
    external_grad = torch.tensor([1., 1., 1.0])
    y2.backward(external_grad)
    print(x1.grad)
    print(x2.grad)
    print(x3.grad)
    assert capsys.readouterr().out == "tensor([4., 5., 6.])\ntensor([1., 2., 3.])\ntensor([1., 1., 1.])\n"


def test_requires_grad_underscore_example():
    """``a = torch.randn(2, 2); a = ((a * 3) / (a - 1))``; ``a.requires_grad`` False;
    ``a.requires_grad_(True)`` prints ``tensor([[..]], requires_grad=True)``; ``b = (a *
    a).sum()``; ``b.grad_fn`` -> ``<SumBackward0 object at ...>``."""
    torch.manual_seed(0)
    a = torch.randn(2, 2)
    a = ((a * 3) / (a - 1))
    assert a.requires_grad is False
    r = a.requires_grad_(True)
    assert r is a
    assert re.fullmatch(r"tensor\(\[\[[^\]]+\],\n        \[[^\]]+\]\], requires_grad=True\)", repr(r)), repr(r)
    assert a.requires_grad is True
    b = (a * a).sum()
    assert_node_repr(b.grad_fn, "SumBackward0")


def test_requires_grad_underscore_defaults_to_true():
    """如果未提供输入标志，默认为 True."""
    a = torch.ones(2)
    a.requires_grad_()
    assert a.requires_grad is True


def test_ones_requires_grad_data_grad_grad_fn_prints(capsys):
    """``x = torch.ones(2, 2, requires_grad=True)``: x.data, x.grad, x.grad_fn, y = x + 2,
    y.grad_fn, ``z = y * y * 3; out = z.mean(); print(z, out)``."""
    x = torch.ones(2, 2, requires_grad=True)
    print(x.data)
    print(x.grad)
    print(x.grad_fn)
    y = x + 2
    print(y)
    z = y * y * 3
    out = z.mean()
    print(z, out)
    assert capsys.readouterr().out == (
        "tensor([[1., 1.],\n"
        "        [1., 1.]])\n"
        "None\n"
        "None\n"
        "tensor([[3., 3.],\n"
        "        [3., 3.]], grad_fn=<AddBackward0>)\n"
        "tensor([[27., 27.],\n"
        "        [27., 27.]], grad_fn=<MulBackward0>) tensor(27., grad_fn=<MeanBackward0>)\n")
    assert_node_repr(y.grad_fn, "AddBackward0")
    assert not x.data.requires_grad


# -- 一个简单的 MLP 示例 ------------------------------------------------------------------------------

def _mlp():
    torch.manual_seed(0)
    x = torch.randn((5, 3), requires_grad=False)
    y = torch.randn(5, requires_grad=False)
    w1 = torch.randn((3, 4), requires_grad=True)
    b1 = torch.randn(4, requires_grad=True)
    w2 = torch.randn((4, 1), requires_grad=True)
    b2 = torch.randn(1, requires_grad=True)
    y1 = x @ w1 + b1
    y2 = y1 @ w2 + b2
    l = ((y - y2.squeeze()) ** 2).sum()
    return x, y, w1, b1, w2, b2, y1, y2, l


def test_mlp_autograd_grad_after_backward_needs_retained_graph():
    """The notes run ``l.backward()`` and THEN ``autograd.grad(l, y2, retain_graph=True)``:
    the first backward already freed the graph, so real PyTorch raises here."""
    x, y, w1, b1, w2, b2, y1, y2, l = _mlp()
    l.backward()
    with pytest.raises(RuntimeError, match=SECOND_BACKWARD):
        autograd.grad(l, y2, retain_graph=True)


def test_mlp_gradient_relations():
    """y2 的梯度 d(y2) = 2(y2 - y); y1 的梯度 = y2_grad @ w2.t(); w1.grad == x.t() @ y1_grad;
    b1.grad == y1_grad.t().sum(axis=1); (and w2, b2 likewise)."""
    x, y, w1, b1, w2, b2, y1, y2, l = _mlp()
    y2_grad = autograd.grad(l, y2, retain_graph=True)
    y1_grad = autograd.grad(l, y1, retain_graph=True)
    l.backward()
    assert isinstance(y2_grad, tuple) and len(y2_grad) == 1
    g2, g1 = arr(y2_grad[0]), arr(y1_grad[0])
    np.testing.assert_allclose(g2[:, 0], 2 * (arr(y2)[:, 0] - arr(y)), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(arr(2 * (y2.squeeze() - y)), g2[:, 0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(arr(y2_grad[0] @ w2.t()), g1, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(g1, g2 @ arr(w2).T, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(arr(w1.grad), arr(x.t() @ y1_grad[0]), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(arr(w1.grad), arr(x).T @ g1, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(arr(b1.grad), g1.sum(0), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(arr(w2.grad), arr(y1).T @ g2, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(arr(b2.grad), g2.sum(0), rtol=1e-5, atol=1e-5)
    assert l.item() == pytest.approx(float(((arr(y) - arr(y2)[:, 0]) ** 2).sum()), rel=1e-5)


def test_mlp_printed_forms():
    """``>>> l`` -> ``tensor(25.1672, grad_fn=<SumBackward0>)``; ``>>> y2`` ends with
    ``grad_fn=<AddBackward0>)``; ``2 * (y2.squeeze() - y)`` -> ``grad_fn=<MulBackward0>``;
    ``y2_grad[0] @ w2.t()`` -> ``grad_fn=<MmBackward0>``; ``y1_grad`` is a tuple of one tensor
    without grad_fn; ``y1_grad[0].shape`` -> ``torch.Size([5, 4])``."""
    x, y, w1, b1, w2, b2, y1, y2, l = _mlp()
    y2_grad = autograd.grad(l, y2, retain_graph=True)
    y1_grad = autograd.grad(l, y1, retain_graph=True)
    assert re.fullmatch(r"tensor\(-?\d+\.\d{4}, grad_fn=<SumBackward0>\)", repr(l)), repr(l)
    assert repr(y2).endswith("grad_fn=<AddBackward0>)")
    assert repr(2 * (y2.squeeze() - y)).endswith("grad_fn=<MulBackward0>)")
    assert repr(y2_grad[0] @ w2.t()).endswith("grad_fn=<MmBackward0>)")
    assert re.fullmatch(r"\(tensor\(\[\[[^()]*\]\]\),\)", repr(y1_grad)), repr(y1_grad)
    assert repr(y1_grad[0].shape) == "tracegrad.Size([5, 4])"
    assert y1_grad[0].shape == (5, 4)


def test_sum_accepts_numpy_style_axis_keyword():
    """``y_grad[0].t().sum(axis=1)`` (the MLP's b1 check): PyTorch accepts ``axis`` as an
    alias of ``dim``."""
    t = torch.tensor([[0.1996, 0.7140, 0.3094, -0.2773, 0.6976],
                      [3.5949, 12.8628, 5.5730, -4.9956, 12.5669]])
    s = t.sum(axis=1)
    np.testing.assert_allclose(arr(s), [1.6433, 29.6020], rtol=1e-4)
    np.testing.assert_allclose(arr(s), arr(t.sum(dim=1)))
