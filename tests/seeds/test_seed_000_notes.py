"""Seed 000 (study notes, Chinese): the eager-autograd behaviours and code examples.

Each test quotes (or paraphrases) the line of the notes it checks. Where a note is not
valid PyTorch as written (``regiter_hook``, undefined ``x``/``b``/``c``, ``.backward(1)``),
the test runs what real PyTorch 2.x accepts and asserts what real PyTorch does.
The ``Exp(Function)`` example and the ``examples_autograd/polynomial_custom_function.py``
tutorial it points to (``LegendrePolynomial3``, written out as in PyTorch's tutorials) are at
the end. ``binary_cross_entropy_with_logits`` and ``model.zero_grad()`` are in
test_seeds_nn.py.
"""
import itertools
import re

import numpy as np
import pytest

import tracegrad as torch

from ._helpers import (
    IMPLICIT_SCALAR,
    NONLEAF_GRAD_WARNING,
    NONLEAF_REQUIRES_GRAD,
    SECOND_BACKWARD,
    arr,
    assert_node_repr,
    version_error,
)

# -- 自动微分机制(auto grad) 重点 ----------------------------------------------------------

def test_leaf_grad_kept_intermediate_grad_computed_but_not_kept():
    """叶子节点的梯度会自动保存下来的（weight）; 中间的 activation 的梯度会计算，但是不保留."""
    w = torch.tensor([1., 2., 3.], requires_grad=True)   # a "weight": user-created leaf
    act = w * w                                          # an intermediate activation
    loss = (act * 3.).sum()
    loss.backward()
    np.testing.assert_allclose(arr(w.grad), [6., 12., 18.])  # d(3 w^2)/dw = 6 w
    assert w.is_leaf and w.grad_fn is None
    assert not act.is_leaf and act.grad_fn is not None
    with pytest.warns(UserWarning, match=NONLEAF_GRAD_WARNING):
        assert act.grad is None


def test_all_user_created_weights_are_leaves():
    """net::all weight --> 都是leaf; 网络的input(是)，网络中的weight(是)，网络中的bias(是)."""
    inp = torch.ones(2, 3)
    weight = torch.ones(3, 4, requires_grad=True)
    bias = torch.zeros(4, requires_grad=True)
    out = (inp.unsqueeze(2) * weight).sum(1) + bias     # a linear layer without matmul
    assert inp.is_leaf and weight.is_leaf and bias.is_leaf
    assert not out.is_leaf
    out.sum().backward()
    np.testing.assert_allclose(arr(weight.grad), np.full((3, 4), 2.))
    np.testing.assert_allclose(arr(bias.grad), np.full(4, 2.))
    assert inp.grad is None  # does not require grad: nothing accumulated


def test_requires_grad_of_non_leaf_cannot_be_set_to_false():
    """我们不能改变一个非叶子节点的 requires_grad (real PyTorch: RuntimeError)."""
    x = torch.ones(2, requires_grad=True)
    y = x * 2
    with pytest.raises(RuntimeError, match=NONLEAF_REQUIRES_GRAD + r".*var_no_grad = var\.detach\(\)"):
        y.requires_grad = False
    with pytest.raises(RuntimeError, match=NONLEAF_REQUIRES_GRAD):
        y.requires_grad_(False)
    assert y.requires_grad


def test_requires_grad_setter_on_non_leaf_raises_even_for_true():
    """我们不能改变一个非叶子节点的 requires_grad: PyTorch's ``requires_grad`` setter refuses
    any assignment on a non-leaf (``requires_grad_(True)`` is the accepted no-op)."""
    x = torch.ones(2, requires_grad=True)
    y = x * 2
    with pytest.raises(RuntimeError, match=NONLEAF_REQUIRES_GRAD):
        y.requires_grad = True
    assert y.requires_grad_(True) is y   # the method form is allowed and returns self


def test_non_leaf_requires_grad_is_inferred_from_inputs():
    """非叶子节点对应函数的inputs 中只要有一个 requires_grad = True, 那么这个非叶子节点的
    requires_grad = True."""
    a = torch.ones(3)
    b = torch.ones(3, requires_grad=True)
    c = torch.ones(3)
    assert not (a * c).requires_grad
    assert (a * b).requires_grad
    assert (a + c + b).requires_grad
    assert torch.add(a, b).grad_fn is not None
    assert (a + c).grad_fn is None


def test_no_grad_makes_new_tensors_not_require_grad():
    """torch.no_grad() 会使得里面的新的tensor requires_grad = False."""
    x = torch.ones(3, requires_grad=True)
    with torch.no_grad():
        y = x * 2
        z = y.exp() + x
    assert not y.requires_grad and y.grad_fn is None and y.is_leaf
    assert not z.requires_grad and z.grad_fn is None
    assert (x * 2).requires_grad  # back to grad mode after the block


def test_inplace_overwriting_a_saved_value_is_detected():
    """inplace的操作，非常大的风险：覆盖了原来的值，导致反向传播时计算不准确 -- PyTorch does not
    compute a wrong gradient: the version counter makes backward raise."""
    x = torch.tensor([1., 2., 3.], requires_grad=True)
    h = x * 1.0
    y = h * h            # MulBackward0 saves h
    h.add_(1)            # overwrite h in place
    with pytest.raises(RuntimeError, match=version_error([3])):
        y.sum().backward()


def test_only_scalar_outputs_create_grad_implicitly():
    """标量的梯度才能被隐式创建; 一般情况下，.backward(gradient)是有输入的."""
    x = torch.tensor([1., 2.], requires_grad=True)
    y = x * x
    with pytest.raises(RuntimeError, match=IMPLICIT_SCALAR):
        y.backward()
    y.backward(torch.tensor([1., 10.]))
    np.testing.assert_allclose(arr(x.grad), [2., 40.])


def test_scalar_implicit_gradient_is_one():
    """隐式创建（.backward(1)）: the implicit gradient of a scalar is 1. Real PyTorch takes it
    as a tensor (``backward(torch.tensor(1.))``); a plain ``1`` is a TypeError there."""
    x = torch.tensor(3., requires_grad=True)
    (x * x).backward()
    implicit = arr(x.grad)
    x.grad = None
    (x * x).backward(torch.tensor(1.))
    np.testing.assert_allclose(arr(x.grad), implicit)
    np.testing.assert_allclose(implicit, 6.)
    with pytest.raises(TypeError):
        (x * x).backward(1)


# -- 如何保存中间Tensor的梯度 ------------------------------------------------------------

def _grid():
    return [[(5 * i + j) / 10 for j in range(5)] for i in range(5)]


def test_view_and_sub_under_no_grad_update_the_tensor_in_place():
    """``with torch.no_grad(): v = y.view(5, 5); v.sub_(y.grad * 0.1); y.sub_(0.1 * y.grad)``."""
    y = torch.tensor(_grid(), requires_grad=True)
    y0 = arr(y)
    ident = id(y)
    (y * y).sum().backward()            # y.grad = 2 y
    with torch.no_grad():
        v = y.view(5, 5)
        v.sub_(y.grad * 0.1)           # y <- y - 0.2 y
        np.testing.assert_allclose(arr(y), 0.8 * y0, rtol=1e-6)
        y.sub_(0.1 * y.grad)           # y <- 0.8 y - 0.2 y
    np.testing.assert_allclose(arr(y), 0.6 * y0, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(arr(v), 0.6 * y0, rtol=1e-6, atol=1e-7)  # v shares y's storage
    assert id(y) == ident and y.is_leaf and y.requires_grad and y.grad_fn is None
    assert y._version == 2


def test_view_made_under_no_grad_of_tensor_requiring_grad():
    """(same example) In PyTorch, ``y.view(5, 5)`` made under no_grad is a leaf view of ``y``
    that still reports ``requires_grad=True`` (the flag of its base), with no grad_fn."""
    y = torch.tensor(_grid(), requires_grad=True)
    with torch.no_grad():
        v = y.view(5, 5)
    assert v._base is y
    assert v.grad_fn is None and v.is_leaf
    assert v.requires_grad


def test_view_and_sub_under_no_grad_on_intermediate_with_retained_grad():
    """如何保存中间Tensor的梯度: the same update on an intermediate ``y`` whose gradient was kept
    with retain_grad()."""
    w = torch.tensor(_grid(), requires_grad=True)
    y = w * 2
    y.retain_grad()
    (y * y).sum().backward()            # y.grad = 2 y
    y0 = arr(y)
    with torch.no_grad():
        v = y.view(5, 5)
        v.sub_(y.grad * 0.1)
        y.sub_(0.1 * y.grad)
    np.testing.assert_allclose(arr(y), 0.6 * y0, rtol=1e-6, atol=1e-7)
    assert y._version == 2
    assert_node_repr(y.grad_fn, "MulBackward0")


def test_retain_grad_loop():
    """``for i in range(100): y.retain_grad(); z = torch.matmul(y, x) + b; output =
    torch.sigmoid(z); label = torch.Tensor([0, 0, 1, 0, 0]); loss = (output-label).var();
    loss.backward(); y = y - 0.1 * y.grad`` (x, b, y defined: the notes leave them out)."""
    torch.manual_seed(0)
    x = torch.randn(5, 5)
    b = torch.randn(5)
    y = torch.randn(5, requires_grad=True)
    y0 = y
    xs, bs = arr(x).astype(np.float64), arr(b).astype(np.float64)
    lab = np.array([0., 0., 1., 0., 0.])
    grads, losses = [], []
    for i in range(100):
        y.retain_grad()
        z = torch.matmul(y, x) + b  # linear layer
        output = torch.sigmoid(z)
        label = torch.Tensor([0, 0, 1, 0, 0])
        loss = (output - label).var()  # l2 loss
        loss.backward()
        # the gradient by hand: loss = sum((d - mean d)^2) / 4, d = sigmoid(y x + b) - label
        o = 1 / (1 + np.exp(-(arr(y).astype(np.float64) @ xs + bs)))
        d = o - lab
        expected = xs @ (2 * (d - d.mean()) / 4 * o * (1 - o))
        np.testing.assert_allclose(arr(y.grad), expected, rtol=1e-4, atol=1e-6)
        np.testing.assert_allclose(loss.item(), ((d - d.mean()) ** 2).sum() / 4, rtol=1e-5)
        grads.append(arr(y.grad))
        losses.append(loss.item())
        y = y - 0.1 * y.grad  # y 中间计算过程 --> y 变为非叶子节点
    assert not y.is_leaf
    assert type(y.grad_fn).__name__ == "SubBackward0"
    assert losses[-1] < losses[0]
    # every loss flowed back through the chain y_k = y_{k-1} - 0.1 g into the leaf y0
    np.testing.assert_allclose(arr(y0.grad), np.sum(grads, axis=0), rtol=1e-4, atol=1e-6)


def test_grad_hook_collects_gradient():
    """``grad_list = []; def aa(grad): grad_list.append(grad); a = torch.Tensor([1, 2, 3]);
    a.regiter_hook(aa); b = a.mul(c); b.backward()`` -- as PyTorch accepts it: register_hook,
    ``a`` requiring grad, ``c`` defined, ``b`` summed to a scalar."""
    grad_list = []

    def aa(grad):
        grad_list.append(grad)

    a = torch.Tensor([1, 2, 3]).requires_grad_()
    c = torch.tensor([4., 5., 6.])
    a.register_hook(aa)
    b = a.mul(c)
    b.sum().backward()
    assert len(grad_list) == 1
    np.testing.assert_allclose(arr(grad_list[0]), [4., 5., 6.])
    np.testing.assert_allclose(arr(a.grad), [4., 5., 6.])


def test_grad_hook_return_value_replaces_gradient():
    """``# return 0.001*grad``: a hook's return value replaces the gradient."""
    a = torch.Tensor([1, 2, 3]).requires_grad_()
    c = torch.tensor([4., 5., 6.])
    a.register_hook(lambda grad: 0.001 * grad)
    a.mul(c).sum().backward()
    np.testing.assert_allclose(arr(a.grad), [0.004, 0.005, 0.006], rtol=1e-6)


def test_register_hook_needs_requires_grad():
    """``a = torch.Tensor([1, 2, 3]); a.register_hook(aa)`` as written: ``a`` does not require
    grad, which PyTorch refuses."""
    a = torch.Tensor([1, 2, 3])
    with pytest.raises(RuntimeError, match="cannot register a hook on a tensor that doesn't require gradient"):
        a.register_hook(lambda grad: None)


# -- tensor 的梯度 -----------------------------------------------------------------------

def test_only_floating_and_complex_can_require_grad():
    """只有浮点、复数可以设置 require grdients."""
    with pytest.raises(RuntimeError, match=r"(?i)only Tensors of floating point"):
        torch.tensor([1, 2]).requires_grad_()
    with pytest.raises(RuntimeError, match=r"(?i)only Tensors of floating point"):
        torch.ones(2, dtype=torch.int64, requires_grad=True)
    assert torch.ones(2, dtype=torch.float64, requires_grad=True).requires_grad
    assert torch.ones(2, dtype=torch.complex64).requires_grad_().requires_grad


def test_requires_grad_defaults_to_false():
    """requires_grad: default = False."""
    assert torch.ones(2).requires_grad is False
    assert torch.tensor([1., 2.]).requires_grad is False
    assert torch.rand(2, 2).requires_grad is False
    assert torch.Tensor([1, 2]).requires_grad is False


# -- example：全连接层 / 关闭梯度求导 -------------------------------------------------------

def test_fully_connected_layer_grad_fn():
    """``z = torch.matmul(x, w)+b; print(f"Gradient function for z = {z.grad_fn}")`` (the
    binary_cross_entropy_with_logits loss is out of scope: a squared loss is used instead)."""
    x = torch.ones(5)
    y = torch.zeros(3)
    w = torch.randn(5, 3, requires_grad=True)
    b = torch.randn(3, requires_grad=True)
    z = torch.matmul(x, w) + b
    assert_node_repr(z.grad_fn, "AddBackward0")
    assert f"Gradient function for z = {z.grad_fn}".startswith("Gradient function for z = <AddBackward0 object at 0x")
    ((z - y) ** 2).sum().backward()
    g = 2 * (arr(z) - 0.)
    np.testing.assert_allclose(arr(b.grad), g, rtol=1e-6)
    np.testing.assert_allclose(arr(w.grad), np.outer(np.ones(5), g), rtol=1e-6)


def test_disable_gradient_tracking_matmul():
    """``z = torch.matmul(x, w)+b; print(z.requires_grad)`` -> True; the same under
    ``torch.no_grad()`` -> False."""
    x = torch.ones(5)
    w = torch.randn(5, 3, requires_grad=True)
    b = torch.randn(3, requires_grad=True)
    z = torch.matmul(x, w) + b
    assert z.requires_grad is True
    with torch.no_grad():
        z = torch.matmul(x, w) + b
    assert z.requires_grad is False


def test_requires_grad_automatic_mechanism_prints(capsys):
    """require_grad的自动机制: the two f-string prints."""
    x = torch.rand(5, 5)
    y = torch.rand(5, 5)
    z = torch.rand((5, 5), requires_grad=True)
    a = x + y
    print(f"Does `a` require gradients? : {a.requires_grad}")
    b = x + z
    print(f"Does `b` require gradients?: {b.requires_grad}")
    assert capsys.readouterr().out == ("Does `a` require gradients? : False\n"
                                       "Does `b` require gradients?: True\n")


def test_freeze_weight_with_requires_grad_false():
    """冻结权重：.requires_grad = False."""
    w = torch.tensor([1., 2.], requires_grad=True)
    v = torch.tensor([3., 4.], requires_grad=True)
    w.requires_grad = False
    out = (w * v).sum()
    out.backward()
    assert w.grad is None
    np.testing.assert_allclose(arr(v.grad), [1., 2.])
    assert not (w * 2).requires_grad


def test_dynamic_graph_rebuilt_each_iteration_with_control_flow():
    """动态图机制: 每次 backward 后填充一个新的图; 可以使用控制流语句, 在每次迭代中更改形状、
    大小和操作."""
    x = torch.tensor([1., 2., 3., 4.], requires_grad=True)
    for step in range(4):
        x.grad = None
        part = x[: step + 1]                       # a different size each iteration
        if step % 2 == 0:
            out = (part * part).sum()              # d/dx = 2x on the slice
            expected = np.where(np.arange(4) <= step, 2 * np.arange(1., 5.), 0.)
        else:
            out = part.exp().sum()                 # d/dx = e^x on the slice
            expected = np.where(np.arange(4) <= step, np.exp(np.arange(1., 5.)), 0.)
        out.backward()
        np.testing.assert_allclose(arr(x.grad), expected, rtol=1e-6)


# -- 输出非标量时 ------------------------------------------------------------------------

def test_non_scalar_output_backward_accumulates_and_zeroes(capsys):
    """``inp = torch.eye(4, 5, requires_grad=True); out = (inp+1).pow(2).t()`` and the three
    ``out.backward(torch.ones_like(out), retain_graph=True)`` calls, printed."""
    inp = torch.eye(4, 5, requires_grad=True)
    out = (inp + 1).pow(2).t()
    out.backward(torch.ones_like(out), retain_graph=True)
    print(f"First call\n{inp.grad}")
    out.backward(torch.ones_like(out), retain_graph=True)
    print(f"\nSecond call\n{inp.grad}")
    inp.grad.zero_()
    out.backward(torch.ones_like(out), retain_graph=True)
    print(f"\nCall after zeroing gradients\n{inp.grad}")
    assert capsys.readouterr().out == (
        "First call\n"
        "tensor([[4., 2., 2., 2., 2.],\n"
        "        [2., 4., 2., 2., 2.],\n"
        "        [2., 2., 4., 2., 2.],\n"
        "        [2., 2., 2., 4., 2.]])\n"
        "\n"
        "Second call\n"
        "tensor([[8., 4., 4., 4., 4.],\n"
        "        [4., 8., 4., 4., 4.],\n"
        "        [4., 4., 8., 4., 4.],\n"
        "        [4., 4., 4., 8., 4.]])\n"
        "\n"
        "Call after zeroing gradients\n"
        "tensor([[4., 2., 2., 2., 2.],\n"
        "        [2., 4., 2., 2., 2.],\n"
        "        [2., 2., 4., 2., 2.],\n"
        "        [2., 2., 2., 4., 2.]])\n")


def test_non_scalar_output_second_backward_needs_retain_graph():
    """(same example) retain_graph=True is what lets ``out.backward`` run again."""
    inp = torch.eye(4, 5, requires_grad=True)
    out = (inp + 1).pow(2).t()
    out.backward(torch.ones_like(out))
    with pytest.raises(RuntimeError, match=SECOND_BACKWARD + r".*retain_graph=True"):
        out.backward(torch.ones_like(out))


# -- auto grad 问题解答 / 梯度累加 和 梯度清0 --------------------------------------------------

def test_backward_starts_from_a_tensor_and_equals_autograd_backward():
    """对谁（tensor）进行backward: 从 Tensor 开始启动的; 反向图: torch.autograd.backward."""
    x = torch.tensor([1., 2.], requires_grad=True)
    (x * x * x).sum().backward()
    by_method = arr(x.grad)
    x.grad = None
    torch.autograd.backward((x * x * x).sum())
    np.testing.assert_allclose(arr(x.grad), by_method)
    np.testing.assert_allclose(by_method, [3., 12.])


def test_gradient_accumulates_over_multiple_paths():
    """多条路径：梯度累加 --> 正确的."""
    x = torch.tensor([1., 2.], requires_grad=True)
    y = x * 3 + x * x + x.exp()
    y.sum().backward()
    np.testing.assert_allclose(arr(x.grad), 3 + 2 * np.array([1., 2.]) + np.exp([1., 2.]), rtol=1e-6)


def test_gradient_accumulates_over_backward_runs_until_zeroed():
    """多次run backward的梯度累加 --> 我们应该避免; 怎么样避免： tensor.grad.zero_()."""
    x = torch.tensor([1., 2.], requires_grad=True)
    (x * 2).sum().backward()
    (x * 2).sum().backward()
    np.testing.assert_allclose(arr(x.grad), [4., 4.])
    g = x.grad
    assert x.grad.zero_() is g           # zero_ is in place, the same tensor
    np.testing.assert_allclose(arr(x.grad), [0., 0.])
    (x * 2).sum().backward()
    np.testing.assert_allclose(arr(x.grad), [2., 2.])


def test_middle_tensor_register_hook_lambda_and_function():
    """middle_tensor.register_hook(hook): hook 可以是 lambda 或自定义函数, 参数 grad 是上一层
    传下来的梯度值, 可以保存或改变它; mid_tensor.retain_grad(): 不释放tensor的梯度."""
    x = torch.tensor([1., 2., 3.], requires_grad=True)
    mid = x * 2
    saved = []

    def keep(grad):
        saved.append(grad.clone())

    mid.register_hook(keep)
    mid.register_hook(lambda grad: grad * 10)   # change the gradient flowing on
    mid.retain_grad()
    (mid * mid).sum().backward()
    np.testing.assert_allclose(arr(saved[0]), [4., 8., 12.])    # 2 * mid
    np.testing.assert_allclose(arr(x.grad), [80., 160., 240.])  # 10 * 2 * mid * 2
    assert mid.retains_grad
    np.testing.assert_allclose(arr(mid.grad), [40., 80., 120.])  # after the hooks


# -- grad_fun: _saved_self / _saved_other -----------------------------------------------------

def test_grad_fn_saved_self_and_saved_other():
    """grad_fn 属性还包含 _saved_self 和 _saved_other 两个属性."""
    x = torch.tensor([1., 2.], requires_grad=True)
    y = torch.tensor([3., 4.], requires_grad=True)
    z = x * y
    assert z.grad_fn._saved_self is x
    assert z.grad_fn._saved_other is y


def test_grad_fn_none_means_leaf():
    """PyTorch中就是通过 grad_fn是否为空 来判断一个Variable是否是leaf variable."""
    a = torch.ones(2, requires_grad=True)
    b = torch.ones(2)
    c = a * 2
    d = b * 2
    for t in (a, b, c, d):
        assert t.is_leaf == (t.grad_fn is None)
    assert [t.is_leaf for t in (a, b, c, d)] == [True, True, False, True]


def test_autograd_meta_fields_visible_from_python():
    """tensor 的 AutogradMeta: grad_, grad_fn, requires_grad_, retains_grad_, is_view_/base_,
    version_counter_, output_nr_ (the Python side: .grad, .grad_fn, .requires_grad,
    .retains_grad, ._base, ._version, .output_nr)."""
    w = torch.arange(6.).requires_grad_()
    a, b, c = w.split(2)
    assert (a.output_nr, b.output_nr, c.output_nr) == (0, 1, 2)
    assert a.grad_fn is b.grad_fn and type(b.grad_fn).__name__ == "SplitBackward0"
    v = w.view(2, 3)
    assert v._base is w and w._base is None
    assert w._version == 0
    h = w * 1.0
    h.retain_grad()
    assert h.retains_grad and not w.retains_grad
    with torch.no_grad():
        w.add_(1)
    assert w._version == 1 and v._version == 1   # views share the version counter


# -- customer 自定义自己的反向传播函数: class Exp(Function) -------------------------------------------

class Exp(torch.autograd.Function):
    """The notes' example, as written (``from torch.autograd import Function``)."""

    @staticmethod
    def forward(ctx, i):
        result = i.exp()
        ctx.save_for_backward(result)
        return result

    @staticmethod
    def backward(ctx, grad_output):
        result, = ctx.saved_tensors
        return grad_output * result


def test_custom_exp_function_is_the_autograd_function_class():
    """``class Exp(Function)``: Function is ``torch.autograd.Function`` (also importable from
    ``torch.autograd.function``)."""
    from tracegrad.autograd import Function
    from tracegrad.autograd.function import Function as Function2
    assert Function is torch.autograd.Function is Function2
    assert issubclass(Exp, Function)


def test_custom_exp_function_apply_values_grad_and_node_name():
    """``# Use it by calling the apply method: output = Exp.apply(input)``: the output holds
    e^input, its node is ``ExpBackward`` (a custom Function's node: class name + "Backward",
    without PyTorch's ``0`` suffix of built-in ops), and the gradient is e^input."""
    inp = torch.tensor([0., 1., -2.], requires_grad=True)
    output = Exp.apply(inp)
    np.testing.assert_allclose(arr(output), np.exp([0., 1., -2.]), rtol=1e-6)
    assert output.requires_grad and not output.is_leaf
    assert output.grad_fn.name() == "ExpBackward"
    assert repr(output) == "tensor([1.0000, 2.7183, 0.1353], grad_fn=<ExpBackward>)"
    assert isinstance(output.grad_fn, torch.autograd.graph.Node)
    (acc, nr), = output.grad_fn.next_functions
    assert acc.variable is inp and nr == 0
    output.backward(torch.tensor([1., 2., 3.]))
    np.testing.assert_allclose(arr(inp.grad), np.exp([0., 1., -2.]) * [1., 2., 3.], rtol=1e-6)


def test_custom_exp_function_node_repr_names_its_module():
    """(``Exp.apply(input).grad_fn``) the node class of a custom Function is a Python class made
    in ``torch.autograd.function``, so PyTorch's repr names that module:
    ``<torch.autograd.function.ExpBackward object at 0x...>`` (built-in nodes print without one)."""
    node = Exp.apply(torch.tensor([0., 1.], requires_grad=True)).grad_fn
    assert re.fullmatch(r"<\w+\.autograd\.function\.ExpBackward object at 0x[0-9a-fA-F]+>", repr(node)), repr(node)


def test_custom_exp_function_backward_is_the_user_one():
    """大部分正向算子都对应一个反向算子; a custom Function brings its own: Exp composed with
    itself differentiates by the chain rule through both user backwards,
    d/dx e^(e^x) = e^x * e^(e^x)."""
    x = torch.tensor([0., 0.5, -1.], dtype=torch.float64, requires_grad=True)
    out = Exp.apply(Exp.apply(x))
    assert out.grad_fn.name() == "ExpBackward"
    assert out.grad_fn.next_functions[0][0].name() == "ExpBackward"
    out.sum().backward()
    xs = np.array([0., 0.5, -1.])
    np.testing.assert_allclose(arr(x.grad), np.exp(xs) * np.exp(np.exp(xs)), rtol=1e-12)


# -- examples: examples_autograd/polynomial_custom_function.py ----------------------------------------

class LegendrePolynomial3(torch.autograd.Function):
    """PyTorch's tutorial Function: P3(x) = 1/2 (5x^3 - 3x), P3'(x) = 3/2 (5x^2 - 1)."""

    @staticmethod
    def forward(ctx, input):
        ctx.save_for_backward(input)
        return 0.5 * (5 * input ** 3 - 3 * input)

    @staticmethod
    def backward(ctx, grad_output):
        input, = ctx.saved_tensors
        return grad_output * 1.5 * (5 * input ** 2 - 1)


def _legendre_loss(params, x, y):
    """The tutorial's loss ``((a + b * P3(c + d * x)) - y).pow(2).sum()`` in NumPy."""
    a, b, c, d = params
    z = c + d * x
    return np.sum((a + b * 0.5 * (5 * z ** 3 - 3 * z) - y) ** 2)


def _legendre_grads(params, x, y):
    """d loss / d (a, b, c, d) by hand, for the NumPy re-run of the tutorial."""
    a, b, c, d = params
    z = c + d * x
    p3 = 0.5 * (5 * z ** 3 - 3 * z)
    r2 = 2 * (a + b * p3 - y)
    gz = r2 * b * 1.5 * (5 * z ** 2 - 1)
    return np.array([r2.sum(), (r2 * p3).sum(), gz.sum(), (gz * x).sum()])


def test_legendre_polynomial3_forward_backward_and_node():
    """The tutorial's Function: values of P3, its derivative as the gradient, the node name
    ``LegendrePolynomial3Backward``, and gradcheck in float64."""
    xs = np.array([-1., -0.3, 0., 0.4, 2.])
    t = torch.tensor(xs, requires_grad=True)
    out = LegendrePolynomial3.apply(t)
    np.testing.assert_allclose(arr(out), 0.5 * (5 * xs ** 3 - 3 * xs), rtol=1e-12)
    assert out.grad_fn.name() == "LegendrePolynomial3Backward"
    out.sum().backward()
    np.testing.assert_allclose(arr(t.grad), 1.5 * (5 * xs ** 2 - 1), rtol=1e-12)
    assert torch.autograd.gradcheck(LegendrePolynomial3.apply, (torch.tensor(xs, requires_grad=True),))


def test_legendre_polynomial3_model_grads_match_finite_differences():
    """``y_pred = a + b * P3(c + d * x)``: the autograd gradients of the four weights agree with
    central finite differences of the same loss (float64)."""
    x = np.linspace(-np.pi, np.pi, 200)
    y = np.sin(x)
    params = np.array([0.1, -1.0, 0.05, 0.3])
    a, b, c, d = (torch.tensor(v, requires_grad=True) for v in params)
    tx = torch.tensor(x)
    loss = (a + b * LegendrePolynomial3.apply(c + d * tx) - torch.tensor(y)).pow(2).sum()
    loss.backward()
    np.testing.assert_allclose(loss.item(), _legendre_loss(params, x, y), rtol=1e-12)
    eps = 1e-6
    numeric = [(_legendre_loss(params + eps * e, x, y) - _legendre_loss(params - eps * e, x, y)) / (2 * eps)
               for e in np.eye(4)]
    autograd = [t.grad.item() for t in (a, b, c, d)]
    np.testing.assert_allclose(autograd, numeric, rtol=1e-6, atol=1e-6)


def test_legendre_polynomial3_tutorial_training_loop():
    """The tutorial as written (float32, 2000 steps of SGD at lr 5e-6, grads reset to None):
    the loss printed every 100 steps goes down, and the weights end where a float64 NumPy
    re-run with hand-derived gradients ends (the tutorial prints y = ~0 + -2.2085 *
    P3(~0 + 0.2555 x))."""
    dtype = torch.float
    device = torch.device("cpu")
    x = torch.linspace(-np.pi, np.pi, 2000, device=device, dtype=dtype)
    y = torch.sin(x)
    a = torch.full((), 0.0, device=device, dtype=dtype, requires_grad=True)
    b = torch.full((), -1.0, device=device, dtype=dtype, requires_grad=True)
    c = torch.full((), 0.0, device=device, dtype=dtype, requires_grad=True)
    d = torch.full((), 0.3, device=device, dtype=dtype, requires_grad=True)
    learning_rate = 5e-6
    printed = []
    for t in range(2000):
        P3 = LegendrePolynomial3.apply
        y_pred = a + b * P3(c + d * x)
        loss = (y_pred - y).pow(2).sum()
        if t % 100 == 99:
            printed.append(loss.item())
        loss.backward()
        with torch.no_grad():
            a -= learning_rate * a.grad
            b -= learning_rate * b.grad
            c -= learning_rate * c.grad
            d -= learning_rate * d.grad
            a.grad = None
            b.grad = None
            c.grad = None
            d.grad = None
    assert len(printed) == 20
    assert all(later < earlier for earlier, later in itertools.pairwise(printed))

    xs = np.linspace(-np.pi, np.pi, 2000)
    params = np.array([0.0, -1.0, 0.0, 0.3])
    for _ in range(2000):
        params -= learning_rate * _legendre_grads(params, xs, np.sin(xs))
    np.testing.assert_allclose([b.item(), d.item()], params[[1, 3]], rtol=1e-4)
    np.testing.assert_allclose([a.item(), c.item()], params[[0, 2]], atol=1e-5)
    np.testing.assert_allclose([b.item(), d.item()], [-2.2085, 0.2555], atol=1e-4)
    np.testing.assert_allclose(printed[-1], _legendre_loss(params, xs, np.sin(xs)), rtol=1e-2)
