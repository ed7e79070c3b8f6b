"""Seed 003 (notes on Tensor layout and torch.autograd, Chinese).

Out of scope here: channels-last layout (``memory_format``). model.zero_grad /
optimizer.zero_grad are in test_seeds_nn.py (their plain-tensor forms are tested here). The profiler
snippet is tested with the rest of the profiler, in tests/runtime/test_profiler.py
(``test_seed_snippet_prints_a_table``).
"""
import inspect
import re
import warnings

import numpy as np
import pytest

import tracegrad as torch

from ._helpers import (
    IMPLICIT_SCALAR,
    LEAF_INPLACE,
    NONLEAF_REQUIRES_GRAD,
    SECOND_BACKWARD,
    arr,
    version_error,
)

# -- 存储布局 layout ------------------------------------------------------------------------------

# (shape, stride, is_contiguous, storage_offset) from real PyTorch 2.13 on
# ``base = torch.arange(24.).reshape(2, 3, 4)`` and each view below.
VIEWS = {
    "base": (lambda t: t, (2, 3, 4), (12, 4, 1), True, 0),
    "transpose02": (lambda t: t.transpose(0, 2), (4, 3, 2), (1, 4, 12), False, 0),
    "permute": (lambda t: t.permute(2, 0, 1), (4, 2, 3), (1, 12, 4), False, 0),
    "select": (lambda t: t[1], (3, 4), (4, 1), True, 12),
    "slice_last": (lambda t: t[..., 1:3], (2, 3, 2), (12, 4, 1), False, 1),
    "index_mid": (lambda t: t[:, 1], (2, 4), (12, 1), False, 4),
    "step": (lambda t: t[:, :, ::2], (2, 3, 2), (12, 4, 2), False, 0),
    "narrow": (lambda t: t.narrow(1, 1, 2), (2, 2, 4), (12, 4, 1), False, 4),
    "view": (lambda t: t.view(6, 4), (6, 4), (4, 1), True, 0),
    "view_of_select": (lambda t: t[1].view(12), (12,), (1,), True, 12),
    "contiguous_of_T": (lambda t: t.transpose(0, 2).contiguous(), (4, 3, 2), (6, 2, 1), True, 0),
    "expand": (lambda t: t[:, :1, :].expand(2, 3, 4), (2, 3, 4), (12, 0, 1), False, 0),
    "unsqueeze": (lambda t: t.unsqueeze(1), (2, 1, 3, 4), (12, 12, 4, 1), True, 0),
    "flatten": (lambda t: t.flatten(), (24,), (1,), True, 0),
    "t2d": (lambda t: t[0].t(), (4, 3), (1, 4), False, 0),
    "diagonal": (lambda t: t[0].diagonal(), (3,), (5,), False, 0),
    "element": (lambda t: t[1, 2, 3], (), (), True, 23),
    "float64": (lambda t: t.double(), (2, 3, 4), (12, 4, 1), True, 0),
}


@pytest.mark.parametrize("name", list(VIEWS))
def test_stride_contiguity_offset_of_views(name):
    """Tensor.stride() / Contiguous layout: 步幅、连续性与偏移 as PyTorch reports them."""
    fn, shape, stride, contiguous, offset = VIEWS[name]
    r = fn(torch.arange(24.).reshape(2, 3, 4))
    assert tuple(r.shape) == shape
    assert r.stride() == stride
    assert r.is_contiguous() is contiguous
    assert r.storage_offset() == offset


@pytest.mark.torch
@pytest.mark.parametrize("name", list(VIEWS))
def test_stride_contiguity_offset_match_real_pytorch(name):
    """The same views, compared with real PyTorch (oracle)."""
    pt = pytest.importorskip("torch")
    fn = VIEWS[name][0]
    ours = fn(torch.arange(24.).reshape(2, 3, 4))
    theirs = fn(pt.arange(24.).reshape(2, 3, 4))
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert ours.stride() == theirs.stride()
    assert ours.is_contiguous() == theirs.is_contiguous()
    assert ours.storage_offset() == theirs.storage_offset()
    np.testing.assert_array_equal(arr(ours), theirs.numpy())


def test_stride_counts_elements_not_bytes():
    """Tesnor.stride() 定义了在内存中访问元素所需移动的字节数 -- in PyTorch the stride counts
    elements: float32 and float64 tensors of one shape have the same strides."""
    a = torch.zeros(2, 3, dtype=torch.float32)
    b = torch.zeros(2, 3, dtype=torch.float64)
    assert a.stride() == b.stride() == (3, 1)
    assert a.stride(0) == 3 and a.stride(-1) == 1
    assert a.element_size() == 4 and b.element_size() == 8


def test_changing_strides_gives_a_view_without_copying():
    """通过改变 stride 属性，可以改变 Tensor 的视图而不移动或复制底层数据."""
    t = torch.arange(6.).reshape(2, 3)
    tt = t.t()
    assert tt.stride() == (1, 3) and not tt.is_contiguous()
    tt[2, 0] = 100.                 # write through the transposed view
    assert t[0, 2].item() == 100.
    np.testing.assert_array_equal(arr(tt), arr(t).T)


def test_contiguous_layout_copy():
    """Contiguous layout: 张量的数据在内存中按照连续的方式进行存储; ``.contiguous()`` makes a
    contiguous copy of a non-contiguous view (and returns a contiguous tensor itself)."""
    t = torch.arange(6.).reshape(2, 3)
    assert t.is_contiguous() and t.contiguous() is t
    c = t.t().contiguous()
    assert c.is_contiguous() and c.stride() == (2, 1) and c.storage_offset() == 0
    c[0, 0] = -1.
    assert t[0, 0].item() == 0.     # a copy, not a view
    np.testing.assert_array_equal(arr(c)[1:], arr(t).T[1:])


# -- 局部禁用梯度计算 -----------------------------------------------------------------------------

def test_only_ops_with_an_input_requiring_grad_are_recorded():
    """只有当一个计算的至少一个输入 Tensor require grad，该计算才被记录后向传播的 graph 中;
    在 leaf tensor 中, 只有 requires_grad = True 的 tensor 才会将梯度累加到 grad 属性中."""
    a = torch.tensor([1., 2.])
    b = torch.tensor([3., 4.], requires_grad=True)
    assert (a * 2).grad_fn is None
    c = a * b
    assert type(c.grad_fn).__name__ == "MulBackward0"
    c.sum().backward()
    assert a.grad is None
    np.testing.assert_allclose(arr(b.grad), [1., 2.])


def test_setting_requires_grad_false_on_non_leaf_raises():
    """如果将非叶子节点 Tensor.requires_grad = False, 叶子节点 Tensor 的 grad 依然能够被正确的计算
    -- real PyTorch refuses the assignment on a non-leaf (RuntimeError), and the leaf's grad is
    still computed correctly afterwards."""
    x = torch.tensor([1., 2.], requires_grad=True)
    y = x * x
    with pytest.raises(RuntimeError, match=NONLEAF_REQUIRES_GRAD):
        y.requires_grad = False
    y.sum().backward()
    np.testing.assert_allclose(arr(x.grad), [2., 4.])


def test_freeze_with_requires_grad_underscore_false():
    """如果想 freeze part of model, 将对应的参数应用 .requires_grad_(False)."""
    p = torch.tensor([1., 2.], requires_grad=True)
    q = torch.tensor([1., 2.], requires_grad=True)
    p.requires_grad_(False)
    (p * q * 5).sum().backward()
    assert p.grad is None
    np.testing.assert_allclose(arr(q.grad), [5., 10.])


def test_grad_mode_default_requires_grad_decides():
    """Grad Mode (Default): 参数是否更新梯度完全由 requires_grad 决定."""
    assert torch.is_grad_enabled()
    a = torch.tensor([1.], requires_grad=True)
    b = torch.tensor([1.], requires_grad=False)
    assert (a + b).requires_grad and not (b + b).requires_grad


def test_no_grad_mode_not_recorded_even_if_inputs_require_grad():
    """``with torch.no-grad():`` (i.e. ``torch.no_grad()``): 不会被 backward graph 记录，即使
    inputs.requires_grad=True; 不用短暂地设置 requires_grad=False and then back to True."""
    x = torch.tensor([1., 2.], requires_grad=True)
    with torch.no_grad():
        y = x * 2
    assert not y.requires_grad and y.grad_fn is None
    assert x.requires_grad     # the input's flag is untouched


def test_inference_mode_tensor_recorded_later_raises():
    """inference mode: 在 inference mode 下创建地 Tensor，在 inference mode 结束后如果被记录到
    backward graph 中会触发错误; 退回到 no-grad mode 则可以."""
    w = torch.tensor([1., 2.], requires_grad=True)
    with torch.inference_mode():
        t = torch.tensor([3., 4.]) * 2
    with pytest.raises(RuntimeError, match=r"Inference tensors cannot be saved for backward"):
        (t * w).sum().backward()
    with torch.no_grad():
        t = torch.tensor([3., 4.]) * 2
    (t * w).sum().backward()
    np.testing.assert_allclose(arr(w.grad), [6., 8.])


# -- 叶子和非叶子节点 ------------------------------------------------------------------------------

def test_leaf_and_non_leaf_by_grad_fn():
    """叶子节点: 用户创建的 Tensor, grad_fn 为 None; 非叶子节点: grad_fn 指向创建它们的张量操作."""
    x = torch.tensor([1., 2.], requires_grad=True)
    y = x.exp()
    assert x.is_leaf and x.grad_fn is None
    assert not y.is_leaf and type(y.grad_fn).__name__ == "ExpBackward0"
    assert isinstance(y.grad_fn, torch.autograd.graph.Node)


# -- 求导函数 --------------------------------------------------------------------------------------

def test_autograd_backward_signature():
    """``torch.autograd.backward(tensors, grad_tensors=None, retain_graph=..., create_graph=False,
    ..., inputs=None)``."""
    params = inspect.signature(torch.autograd.backward).parameters
    names = list(params)
    assert names[:4] == ["tensors", "grad_tensors", "retain_graph", "create_graph"]
    assert "inputs" in names
    assert params["grad_tensors"].default is None
    assert params["create_graph"].default is False
    assert params["inputs"].default is None


def test_autograd_backward_accumulates_tensor_or_list():
    """tensors: list[Tensor] or Tensor; 它会将 Tensor 的梯度累加到 Tensor.grad 属性中."""
    x = torch.tensor([1., 2.], requires_grad=True)
    torch.autograd.backward((x * x).sum())
    np.testing.assert_allclose(arr(x.grad), [2., 4.])
    torch.autograd.backward([(x * 3).sum(), (x * x * x).sum()])
    np.testing.assert_allclose(arr(x.grad), [2. + 3. + 3., 4. + 3. + 12.])


def test_autograd_backward_grad_tensors_weight_the_outputs():
    """grad_tensors: 与 tensors 形状相同的张量，用于给定梯度的权重."""
    x = torch.tensor([1., 2.], requires_grad=True)
    torch.autograd.backward(x * x, grad_tensors=torch.tensor([1., 10.]))
    np.testing.assert_allclose(arr(x.grad), [2., 40.])
    with pytest.raises(RuntimeError, match=IMPLICIT_SCALAR):
        torch.autograd.backward(x * x)   # None only works for scalar outputs


def test_autograd_backward_retain_graph():
    """retain_graph: 默认为False，表示在反向传播完成后会释放计算图."""
    x = torch.tensor([1., 2.], requires_grad=True)
    y = (x * x).sum()
    torch.autograd.backward(y, retain_graph=True)
    torch.autograd.backward(y)
    np.testing.assert_allclose(arr(x.grad), [4., 8.])
    with pytest.raises(RuntimeError, match=SECOND_BACKWARD):
        torch.autograd.backward(y)


def test_autograd_backward_create_graph_allows_higher_order():
    """create_graph: 表示是否创建计算高阶导数所需的图 (via autograd.grad, the memory-safe form)."""
    x = torch.tensor([1., 2.], requires_grad=True)
    (g,) = torch.autograd.grad((x ** 3).sum(), x, create_graph=True)
    np.testing.assert_allclose(arr(g), [3., 12.])
    assert g.requires_grad
    torch.autograd.backward(g.sum())
    np.testing.assert_allclose(arr(x.grad), [6., 12.])   # d/dx 3x^2 = 6x


def test_autograd_backward_inputs_restricts_accumulation():
    """inputs: 指定后其他的 Tensor grad 将会忽略."""
    x = torch.ones(3, requires_grad=True)
    w = torch.ones(3, requires_grad=True)
    torch.autograd.backward((x * w * 2).sum(), inputs=[x])
    np.testing.assert_allclose(arr(x.grad), [2., 2., 2.])
    assert w.grad is None


def test_autograd_grad_signature_and_tuple_result():
    """``torch.autograd.grad(outputs, inputs, grad_outputs=None, retain_graph=None,
    create_graph=False, only_inputs=True, allow_unused=False)``; 输出结果是一个元组."""
    names = list(inspect.signature(torch.autograd.grad).parameters)
    assert names[:7] == ["outputs", "inputs", "grad_outputs", "retain_graph", "create_graph",
                         "only_inputs", "allow_unused"]
    x = torch.tensor([1., 2.], requires_grad=True)
    w = torch.tensor([3., 4.], requires_grad=True)
    out = torch.autograd.grad(outputs=(x * w).sum(), inputs=[x, w], grad_outputs=None,
                              retain_graph=None, create_graph=False, only_inputs=True,
                              allow_unused=False)
    assert isinstance(out, tuple) and len(out) == 2
    np.testing.assert_allclose(arr(out[0]), [3., 4.])
    np.testing.assert_allclose(arr(out[1]), [1., 2.])
    assert x.grad is None and w.grad is None


def test_autograd_grad_grad_outputs_for_non_scalar():
    """grad_outputs: the vector of the vector-Jacobian product for a non-scalar output."""
    x = torch.tensor([1., 2.], requires_grad=True)
    (g,) = torch.autograd.grad(x * x, x, grad_outputs=torch.tensor([1., 0.5]))
    np.testing.assert_allclose(arr(g), [2., 2.])
    with pytest.raises(RuntimeError, match=IMPLICIT_SCALAR):
        torch.autograd.grad(x * x, x)


def test_autograd_grad_unused_input_is_none_with_allow_unused():
    """如果某个输入张量不可微或未被使用，则对应的梯度张量为 None (with allow_unused=True;
    PyTorch raises otherwise)."""
    x = torch.tensor([1., 2.], requires_grad=True)
    unused = torch.tensor([5., 6.], requires_grad=True)
    gx, gu = torch.autograd.grad((x * 2).sum(), [x, unused], allow_unused=True)
    np.testing.assert_allclose(arr(gx), [2., 2.])
    assert gu is None
    with pytest.raises(RuntimeError, match=r"appears to not have been used in the graph.*allow_unused=True"):
        torch.autograd.grad((x * 2).sum(), [x, unused])


# -- gradient 布局 ------------------------------------------------------------------------------

def test_new_grad_takes_the_layout_of_its_dense_parameter():
    """如果 para.grad is None, 那么会创建和张量存储布局相同的 gradient layout: a non-contiguous
    (but dense) leaf gets a gradient with the leaf's own strides."""
    p = torch.zeros(4, 3).t().requires_grad_()
    assert p.stride() == (1, 3)
    (p * torch.arange(12.).reshape(3, 4)).sum().backward()
    assert p.grad.stride() == (1, 3)
    np.testing.assert_array_equal(arr(p.grad), np.arange(12.).reshape(3, 4))


def test_new_grad_of_non_dense_parameter_is_contiguous():
    """(gradient layout) a leaf that is not dense (a slice with gaps) gets a contiguous grad."""
    p = torch.zeros(4, 3)[:, :2].requires_grad_()
    assert p.stride() == (3, 1)
    (p * 2).sum().backward()
    assert p.grad.stride() == (2, 1)
    np.testing.assert_array_equal(arr(p.grad), np.full((4, 2), 2.))


def test_existing_grad_is_accumulated_in_place():
    """如果 para.grad 已经被创建了，那么进行累加 (into the same tensor)."""
    p = torch.tensor([1., 2.], requires_grad=True)
    (p * 2).sum().backward()
    g = p.grad
    (p * 3).sum().backward()
    np.testing.assert_allclose(arr(p.grad), [5., 5.])
    assert p.grad is g


def test_set_param_grad_to_none_each_iteration():
    """``for param in model.parameters(): param.grad = None; loss.backward()`` (plain tensors)."""
    params = [torch.tensor([1., 2.], requires_grad=True), torch.tensor([3.], requires_grad=True)]
    for it in range(3):
        for param in params:
            param.grad = None
        loss = (params[0] * params[0]).sum() * params[1].sum()
        loss.backward()
        np.testing.assert_allclose(arr(params[0].grad), [6., 12.])   # not accumulated
        np.testing.assert_allclose(arr(params[1].grad), [5.])


# -- Tensor 的原地操作 ---------------------------------------------------------------------------

@pytest.mark.parametrize("op", ["iadd", "add_", "imul", "mul_", "neg_", "setitem"])
def test_inplace_ops_on_leaf_requiring_grad_raise(op):
    """``x += y, or x.add_(y)``; ``x *= y, or x.mul_(y)``; ``x.neg_()``; ``x[index] = y`` on a
    leaf that requires grad."""
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = torch.tensor([2.0, 2.0, 2.0])
    with pytest.raises(RuntimeError, match=LEAF_INPLACE):
        if op == "iadd":
            x += y
        elif op == "add_":
            x.add_(y)
        elif op == "imul":
            x *= y
        elif op == "mul_":
            x.mul_(y)
        elif op == "neg_":
            x.neg_()
        else:
            x[0] = 5.
    np.testing.assert_array_equal(arr(x), [1., 2., 3.])


def test_inplace_ops_on_non_leaf_rewrite_the_graph():
    """(the same in-place ops on a non-leaf) the graph is rewritten and the gradient stays
    correct: ``y = x * 2; y *= 3; y.neg_(); y[0] = 10.`` -> dy/dx = [0, -6, -6]."""
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 2
    y *= 3
    y.neg_()
    y[0] = 10.
    assert repr(y) == "tensor([ 10., -12., -18.], grad_fn=<CopySlices>)"
    y.sum().backward()
    np.testing.assert_allclose(arr(x.grad), [0., -6., -6.])


def test_incorrect_example_as_written_fails_on_non_scalar_backward():
    """The "引发错误" example as written: ``z.backward(retain_graph=True)`` on the 3-element z
    already fails -- grad can be implicitly created only for scalar outputs."""
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 2
    z = y + 1
    with pytest.raises(RuntimeError, match=IMPLICIT_SCALAR):
        z.backward(retain_graph=True)


def test_incorrect_example_inplace_on_leaf_raises():
    """The "引发错误" example with a gradient passed: ``x.mul_(2)`` on the leaf raises."""
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 2
    z = y + 1
    z.backward(torch.ones_like(z), retain_graph=True)
    with pytest.raises(RuntimeError, match=LEAF_INPLACE):
        x.mul_(2)


def test_inplace_change_of_saved_leaf_data_raises_on_backward():
    """如果某个 param 已被保存, 但后续 param 又被原地修改了，那么在进行反向传播时会引发错误."""
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * x                    # saves x
    z = y + 1
    z.sum().backward(retain_graph=True)
    with torch.no_grad():
        x.mul_(2)
    with pytest.raises(RuntimeError, match=version_error([3], which="")):
        z.sum().backward()


def test_correct_example_detach_then_mul_(capsys):
    """The "下面是正确的" example (with a gradient for the 3-element z): ``x_detached =
    x.detach(); x_detached.mul_(2); z.backward()`` works."""
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 2
    z = y + 1
    z.backward(torch.ones_like(z), retain_graph=True)
    x_detached = x.detach()
    x_detached.mul_(2)
    z.backward(torch.ones_like(z))
    np.testing.assert_allclose(arr(x.grad), [4., 4., 4.])   # 2 + 2, accumulated
    print(x)
    assert capsys.readouterr().out == "tensor([2., 4., 6.], requires_grad=True)\n"


def test_correct_example_second_backward_without_retain_graph_raises():
    """(the examples' ``z.backward(retain_graph=True)`` before the second ``z.backward()``)
    without retain_graph the graph of ``y = x * 2; z = y + 1`` is freed by the first backward and
    real PyTorch refuses a second pass through it."""
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 2
    z = y + 1
    z.backward(torch.ones_like(z))
    with pytest.raises(RuntimeError, match=SECOND_BACKWARD):
        z.backward(torch.ones_like(z))
    np.testing.assert_allclose(arr(x.grad), [2., 2., 2.])   # only the first pass accumulated


def test_correct_example_as_written_fails_on_non_scalar_backward():
    """The "下面是正确的" example as written also calls ``z.backward(retain_graph=True)`` on a
    3-element z, which PyTorch refuses."""
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    z = x * 2 + 1
    with pytest.raises(RuntimeError, match=IMPLICIT_SCALAR):
        z.backward(retain_graph=True)


def test_detach_shares_storage_and_drops_grad():
    """detach() 创建一个新的张量，该新张量与原始张量共享相同的底层数据，但不再具有梯度属性."""
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    d = x.detach()
    assert d is not x
    assert not d.requires_grad and d.is_leaf and d.grad_fn is None
    d[0] = 10.
    np.testing.assert_allclose(arr(x), [10., 2., 3.])
    x.data[1] = 20.
    np.testing.assert_allclose(arr(d), [10., 20., 3.])


def test_detach_shares_the_version_counter():
    """(detach) the detached tensor shares the version counter: an in-place change through it
    of a tensor saved for backward is still detected."""
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * x
    x_detached = x.detach()
    x_detached.mul_(2)
    assert x._version == 1 and x_detached._version == 1
    with pytest.raises(RuntimeError, match=version_error([3], which="")):
        y.sum().backward()


# -- Tensor 梯度函数 -------------------------------------------------------------------------------

def test_only_leaves_get_grad_unless_retain_grad():
    """在调用 backward() 后, 只有 leaf Tensors 的 grad 属性会被填充，如果想要填充非叶子节点的
    grad 属性，可以使用 Tensor.retain_grad()."""
    x = torch.tensor([1., 2.], requires_grad=True)
    h = x * 3
    k = x * 4
    h.retain_grad()
    (h * k).sum().backward()
    np.testing.assert_allclose(arr(h.grad), arr(k))
    np.testing.assert_allclose(arr(x.grad), 24 * np.array([1., 2.]))
    with pytest.warns(UserWarning):
        assert k.grad is None


def test_register_hook_called_every_time_gradient_computed():
    """The hook will be called every time a gradient with respect to the Tensor is computed."""
    x = torch.tensor([1., 2.], requires_grad=True)
    calls = []
    x.register_hook(lambda g: calls.append(arr(g)))
    (x * 2).sum().backward()
    (x * 5).sum().backward()
    assert len(calls) == 2
    np.testing.assert_allclose(calls[0], [2., 2.])
    np.testing.assert_allclose(calls[1], [5., 5.])
    np.testing.assert_allclose(arr(x.grad), [7., 7.])


def test_register_hook_returning_tensor_replaces_and_none_keeps():
    """hook(grad) -> Tensor or None; hook 不应该改变 grad 而是返回一个新的 grad 进行替换."""
    x = torch.tensor([1., 2.], requires_grad=True)
    h = x * 1.0
    h.register_hook(lambda g: None)          # keeps the gradient
    h.register_hook(lambda g: g + 1)         # replaces it
    (h * 3).sum().backward()
    np.testing.assert_allclose(arr(x.grad), [4., 4.])


def test_register_hook_handle_remove():
    """(register_hook) the returned handle removes the hook."""
    x = torch.tensor([1., 2.], requires_grad=True)
    handle = x.register_hook(lambda g: g * 100)
    handle.remove()
    (x * 2).sum().backward()
    np.testing.assert_allclose(arr(x.grad), [2., 2.])


# -- 梯度 graph ---------------------------------------------------------------------------------------

def test_graph_node_name():
    """``graph.node.name()  # 返回名字，操作的名字``."""
    x = torch.tensor([1., 2.], requires_grad=True)
    assert (x * 2).grad_fn.name() == "MulBackward0"
    assert (x * 2).sum().grad_fn.name() == "SumBackward0"
    assert x.exp().grad_fn.name() == "ExpBackward0"


# -- torch.autograd.Function ---------------------------------------------------------------------

class Exp(torch.autograd.Function):
    """The notes' example: forward() and backward() static methods, used through apply()."""

    @staticmethod
    def forward(ctx, i):
        result = i.exp()
        ctx.save_for_backward(result)
        return result

    @staticmethod
    def backward(ctx, grad_output):
        result, = ctx.saved_tensors
        return grad_output * result


class WrongExp(Exp):
    """Exp with a backward that is 10% off: what gradcheck is there to catch."""

    @staticmethod
    def backward(ctx, grad_output):
        result, = ctx.saved_tensors
        return grad_output * result * 1.1


def test_function_exp_apply_output_node_and_grad():
    """``output = Exp.apply(input)``: e^input, a graph node named ``ExpBackward`` that links to the
    input's AccumulateGrad, and dL/dinput = grad_output * e^input from the saved result."""
    inp = torch.tensor([0.5, -1., 2.], requires_grad=True)
    output = Exp.apply(inp)
    np.testing.assert_allclose(arr(output), np.exp([0.5, -1., 2.]), rtol=1e-6)
    assert output.grad_fn.name() == "ExpBackward"
    assert type(output.grad_fn).__name__ == "ExpBackward"
    assert output.grad_fn.next_functions[0][0].variable is inp
    output.backward(torch.tensor([1., 0.5, 2.]))
    np.testing.assert_allclose(arr(inp.grad), np.exp([0.5, -1., 2.]) * [1., 0.5, 2.], rtol=1e-6)


def test_function_apply_records_the_op_and_forward_is_not_recorded():
    """在前向传播中调用 apply() 而不要直接调用 forward(): apply() 处理操作的注册和跟踪 -- inside
    forward grad mode is off (its own ops are not recorded), and apply() records one node for the
    whole Function, whatever forward did inside."""
    inside = []

    class Recording(torch.autograd.Function):
        @staticmethod
        def forward(ctx, i):
            result = i.exp() * 1.0
            inside.append((torch.is_grad_enabled(), result.requires_grad, result.grad_fn))
            ctx.save_for_backward(result)
            return result

        @staticmethod
        def backward(ctx, grad_output):
            result, = ctx.saved_tensors
            return grad_output * result

    x = torch.tensor([1., 2.], requires_grad=True)
    out = Recording.apply(x)
    assert inside == [(False, False, None)]
    assert out.requires_grad and out.grad_fn.name() == "RecordingBackward"
    assert out.grad_fn.next_functions[0][0].variable is x


def test_gradcheck_passes_on_exp():
    """最后使用 gradcheck() 检查梯度计算的正确性: gradcheck compares the analytical gradient with
    the numerical one (float64 inputs) and returns True when they agree."""
    x = torch.tensor([0.5, -1., 2.], dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(Exp.apply, (x,)) is True
    assert torch.autograd.gradcheck(Exp.apply, (x,), eps=1e-6, atol=1e-4) is True


def test_gradcheck_catches_a_wrong_backward():
    """gradcheck(): 通过对比解析梯度和数值梯度来验证后向传播的正确性 -- a wrong backward fails with
    GradcheckError (a RuntimeError) naming the output and input, or returns False with
    ``raise_exception=False``."""
    x = torch.tensor([0.5, -1., 2.], dtype=torch.float64, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"Jacobian mismatch for output 0 with respect to input 0") as info:
        torch.autograd.gradcheck(WrongExp.apply, (x,))
    assert type(info.value).__name__ == "GradcheckError"
    assert torch.autograd.gradcheck(WrongExp.apply, (x,), raise_exception=False) is False


# -- 异常检测 / Anomaly detection ------------------------------------------------------------------

ANOMALY_ON = r"Anomaly Detection has been enabled\. This mode will increase the runtime"
NAN_IN_DIV = r"Function 'DivBackward0' returned nan values in its 1th output\."


def _nan_backward_graph():
    """``z = (x * 0) / x`` at x = [0, 1]: d z / d(denominator) = -g * (x * 0) / x^2 = 0/0 = nan
    at x = 0, so DivBackward0's second output (its 1th) holds a nan."""
    x = torch.tensor([0., 1.], requires_grad=True)
    return x, (x * 0) / x


def _messages(caught, category=UserWarning):
    return [str(w.message) for w in caught if issubclass(w.category, category)]


def test_detect_anomaly_check_nan_raises_and_names_the_forward():
    """``torch.autograd.detect_anomaly(check_nan=True)`` 上下文管理器: 当 backward 计算产生 nan 值
    时会触发错误, and 回溯发生错误的 backward 对应的 forward (a warning with the forward line)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with torch.autograd.detect_anomaly(check_nan=True):
            _, z = _nan_backward_graph()
            with pytest.raises(RuntimeError, match=NAN_IN_DIV):
                z.sum().backward()
    messages = _messages(caught)
    assert any(re.match(ANOMALY_ON, m) for m in messages)
    traced = [m for m in messages if m.startswith("Error detected in DivBackward0. Traceback of forward call")]
    assert len(traced) == 1 and "return x, (x * 0) / x" in traced[0]


def test_detect_anomaly_without_check_nan_lets_nan_through():
    """``check_nan=False``: the nan reaches the gradient without an error (as with anomaly mode off)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with torch.autograd.detect_anomaly(check_nan=False):
            x, z = _nan_backward_graph()
            z.sum().backward()
    assert any(re.match(ANOMALY_ON, m) for m in _messages(caught))
    np.testing.assert_array_equal(np.isnan(arr(x.grad)), [True, False])
    x, z = _nan_backward_graph()
    z.sum().backward()
    np.testing.assert_array_equal(np.isnan(arr(x.grad)), [True, False])


def test_detect_anomaly_traces_the_forward_of_a_failing_backward():
    """该类将会回溯发生错误的 backward 对应的 forward: a backward that fails (a saved tensor changed in
    place) warns "Error detected in ExpBackward0" with the traceback of the forward ``exp``."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with torch.autograd.detect_anomaly():
            x = torch.tensor([1., 2.], requires_grad=True)
            y = x.exp()
            y.add_(1)
            with pytest.raises(RuntimeError, match=version_error([2], which=", which is output 0 of Exp,")):
                y.sum().backward()
    traced = [m for m in _messages(caught) if m.startswith("Error detected in ExpBackward0. Traceback of forward call")]
    assert len(traced) == 1 and "y = x.exp()" in traced[0]


def test_detect_anomaly_changes_the_hint_of_the_inplace_error():
    """(anomaly detection on) PyTorch's in-place error no longer says to enable anomaly detection;
    it points at the backtrace above: "Hint: the backtrace further above shows the operation that
    failed to compute its gradient. The variable in question was changed in there or anywhere
    later. Good luck!"."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with torch.autograd.detect_anomaly():
            x = torch.tensor([1., 2.], requires_grad=True)
            y = x.exp()
            y.add_(1)
            with pytest.raises(RuntimeError) as info:
                y.sum().backward()
    assert str(info.value).endswith(
        "expected version 0 instead. Hint: the backtrace further above shows the operation that failed to "
        "compute its gradient. The variable in question was changed in there or anywhere later. Good luck!")


@pytest.mark.filterwarnings("ignore:Error detected in DivBackward0:UserWarning")
def test_set_detect_anomaly_mode_switches_the_check():
    """``torch.autograd.set_detect_anomaly(mode, check_nan=True)``: mode (bool) - 是否开启检测;
    as a call it switches anomaly mode on or off for the code that follows (without the warning
    detect_anomaly gives), and as a context manager it restores the previous mode on exit."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            torch.autograd.set_detect_anomaly(True)
        _, z = _nan_backward_graph()
        with pytest.raises(RuntimeError, match=NAN_IN_DIV):
            z.sum().backward()
        torch.autograd.set_detect_anomaly(True, check_nan=False)
        x, z = _nan_backward_graph()
        z.sum().backward()
        assert np.isnan(arr(x.grad)[0])
        torch.autograd.set_detect_anomaly(True)
        with torch.autograd.set_detect_anomaly(False):
            x, z = _nan_backward_graph()
            z.sum().backward()                  # off inside the block
        x, z = _nan_backward_graph()
        with pytest.raises(RuntimeError, match=NAN_IN_DIV):
            z.sum().backward()                  # back on after it
    finally:
        torch.autograd.set_detect_anomaly(False)
    x, z = _nan_backward_graph()
    z.sum().backward()
    assert np.isnan(arr(x.grad)[0])


def test_anomaly_mode_flags_read_as_in_pytorch():
    """``torch.is_anomaly_enabled()`` / ``torch.is_anomaly_check_nan_enabled()`` (top-level in
    PyTorch) follow detect_anomaly and set_detect_anomaly."""
    assert torch.is_anomaly_enabled() is False
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with torch.autograd.detect_anomaly(check_nan=False):
            assert torch.is_anomaly_enabled() is True
            assert torch.is_anomaly_check_nan_enabled() is False
        with torch.autograd.set_detect_anomaly(True):
            assert torch.is_anomaly_enabled() is True
            assert torch.is_anomaly_check_nan_enabled() is True
    assert torch.is_anomaly_enabled() is False


# -- 梯度 graph: node.metadata / node.register_hook ---------------------------------------------------

def test_graph_node_metadata_is_a_dict():
    """``graph.node.metadata() # 返回元数据`` -- in real PyTorch ``metadata`` is a property, not a
    method: a dict kept with the node (empty by default) for the user's own annotations, so the
    notes' ``metadata()`` call raises TypeError ('dict' object is not callable)."""
    x = torch.tensor([1., 2.], requires_grad=True)
    y = x * 2
    node = y.grad_fn
    assert node.metadata == {} and isinstance(node.metadata, dict)
    node.metadata["forward_input"] = "x"
    assert y.grad_fn.metadata is node.metadata
    assert y.grad_fn.metadata == {"forward_input": "x"}
    assert (x * 3).grad_fn.metadata == {}             # per node
    with pytest.raises(TypeError, match=r"'dict' object is not callable"):
        node.metadata()


def test_graph_node_metadata_holds_the_forward_traceback_in_anomaly_mode():
    """(metadata, "可以理解为 forward pass 的...") under anomaly mode PyTorch stores the forward's
    stack in ``node.metadata["traceback_"]``: a list of formatted frames, the last one the line
    that created the node."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with torch.autograd.detect_anomaly():
            x = torch.tensor([1., 2.], requires_grad=True)
            y = x.exp()
    trace = y.grad_fn.metadata.get("traceback_")
    assert isinstance(trace, list) and all(isinstance(line, str) for line in trace)
    assert "y = x.exp()" in trace[-1]


def test_graph_node_register_hook_sees_and_replaces_grad_inputs():
    """``graph.node.register_hook(hook)``, ``hook(grad_inputs: Tuple[Tensor], grad_outputs:
    Tuple[Tensor]) -> Tuple[Tensor] or None``: called when the node's gradients are computed;
    grad_inputs are the gradients of the node's inputs, grad_outputs the one it received; a
    returned tuple replaces grad_inputs (the notes say "代替 grad_outputs"; PyTorch replaces the
    gradients with respect to the inputs)."""
    x = torch.tensor([1., 2.], requires_grad=True)
    w = torch.tensor([3., 4.], requires_grad=True)
    y = x * w
    seen = []

    def hook(grad_inputs, grad_outputs):
        seen.append(([arr(g) for g in grad_inputs], [arr(g) for g in grad_outputs]))
        return (grad_inputs[0] * 10, grad_inputs[1])

    handle = y.grad_fn.register_hook(hook)
    (y * torch.tensor([1., 100.])).sum().backward()
    (grad_inputs, grad_outputs), = seen
    np.testing.assert_allclose(grad_outputs[0], [1., 100.])
    np.testing.assert_allclose(grad_inputs[0], [3., 400.])          # g * w
    np.testing.assert_allclose(grad_inputs[1], [1., 200.])          # g * x
    np.testing.assert_allclose(arr(x.grad), [30., 4000.])           # replaced
    np.testing.assert_allclose(arr(w.grad), [1., 200.])             # kept
    handle.remove()
    x.grad = w.grad = None
    y = x * w
    (y * torch.tensor([1., 100.])).sum().backward()
    assert len(seen) == 1
    np.testing.assert_allclose(arr(x.grad), [3., 400.])


def test_graph_node_register_hook_none_keeps_and_called_every_time():
    """The hook will be called every time a gradient with respect to the Node is computed; a
    hook returning None keeps the gradients; an input that needs no grad shows as None."""
    x = torch.tensor([1., 2.], requires_grad=True)
    c = torch.tensor([5., 6.])
    y = x * c
    calls = []
    y.grad_fn.register_hook(lambda gi, go: calls.append([None if g is None else arr(g) for g in gi]))
    y.sum().backward(retain_graph=True)
    y.sum().backward()
    assert len(calls) == 2
    np.testing.assert_allclose(calls[0][0], [5., 6.])
    assert calls[0][1] is None
    np.testing.assert_allclose(arr(x.grad), [10., 12.])


def test_graph_node_register_hook_must_return_one_value_per_input():
    """A hook returning the wrong number of gradients is an error, as in PyTorch."""
    x = torch.tensor([1., 2.], requires_grad=True)
    y = x.exp()
    y.grad_fn.register_hook(lambda gi, go: (gi[0], gi[0]))
    with pytest.raises(RuntimeError, match=r"hook '<lambda>' has returned an incorrect number of values "
                                           r"\(got 2, but expected 1\)"):
        y.sum().backward()
