"""Seed 001 (Jupyter notes on the PyTorch "Autograd mechanics" page, Chinese): every cell
In [2] .. In [18] and the stated behaviours of the text between them.

Printed outputs are compared with the outputs recorded in the notes. Custom
autograd.Function / save_for_backward and saved-tensor hooks are tested in tests/runtime
(test_function.py, test_saved_hooks.py); nn.Module.eval() and requires_grad_() in
test_seeds_nn.py.
"""
import threading

import numpy as np
import pytest

import tracegrad as torch
from tracegrad.autograd import Variable

from ._helpers import (LEAF_INPLACE, NONLEAF_GRAD_WARNING, SECOND_BACKWARD, arr, version_error)

INFERENCE_SAVE = (r"Inference tensors cannot be saved for backward\. Please do not use Tensors "
                  r"created in inference mode in computation tracked by autograd")
INFERENCE_INPLACE = r"Inplace update to inference tensor outside InferenceMode is not allowed"


# -- In [2]: no_grad + in-place keeps the object ---------------------------------------------

def test_in2_inplace_add_under_no_grad_keeps_identity(capsys):
    """``x = Variable(torch.ones(1, 2),requires_grad=True)``; ``with torch.no_grad(): x += 1``;
    the id of x does not change; ``x,print(id(x))`` shows ``(tensor([[2., 2.]],
    requires_grad=True), None)``."""
    x = Variable(torch.ones(1, 2), requires_grad=True)
    before = id(x)
    print('x初始值：', x)
    with torch.no_grad():
        x += 1
    assert id(x) == before
    assert repr((x, None)) == "(tensor([[2., 2.]], requires_grad=True), None)"
    assert x.is_leaf and x.requires_grad and x.grad_fn is None
    assert capsys.readouterr().out == "x初始值： tensor([[1., 1.]], requires_grad=True)\n"


def test_in2_add_underscore_under_no_grad_keeps_identity():
    """``#或者调用x.add_(1)``: the method form does the same."""
    x = Variable(torch.ones(1, 2), requires_grad=True)
    before = id(x)
    with torch.no_grad():
        r = x.add_(1)
    assert r is x and id(x) == before
    np.testing.assert_allclose(arr(x), [[2., 2.]])
    assert x.requires_grad and x.is_leaf


def test_in2_inplace_on_leaf_without_no_grad_raises():
    """``##如果不使用no_grad，会报错``."""
    x = Variable(torch.ones(1, 2), requires_grad=True)
    with pytest.raises(RuntimeError, match=LEAF_INPLACE):
        x += 1
    with pytest.raises(RuntimeError, match=LEAF_INPLACE):
        x.add_(1)


# -- 保存张量 (In [2], In [3]) -----------------------------------------------------------------

def test_saved_self_is_the_input_itself():
    """``y = x.pow(2)``: ``x.equal(y.grad_fn._saved_self)`` True and ``x is
    y.grad_fn._saved_self`` True."""
    x = torch.randn(5, requires_grad=True)
    y = x.pow(2)
    assert x.equal(y.grad_fn._saved_self) is True
    assert (x is y.grad_fn._saved_self) is True


def test_saved_result_is_equal_but_another_object():
    """``y = x.exp()``: ``y.equal(y.grad_fn._saved_result)`` True but ``y is
    y.grad_fn._saved_result`` False."""
    x = torch.randn(5, requires_grad=True)
    y = x.exp()
    assert y.equal(y.grad_fn._saved_result) is True
    assert (y is y.grad_fn._saved_result) is False


# -- 不可微函数的梯度 ----------------------------------------------------------------------------

def test_relu_identity_gives_zero_gradient_at_zero():
    """``f(x)=x= relu(x) - relu(-x)`` gives 0 gradient at 0 instead of 1."""
    x = torch.tensor([0., 2., -3.], requires_grad=True)
    (torch.relu(x) - torch.relu(-x)).sum().backward()
    np.testing.assert_allclose(arr(x.grad), [0., 1., 1.])


def test_gradient_by_continuity_sqrt_at_zero_is_inf():
    """通过连续性定义当前点的梯度(注意这里可以使用inf, 例如sqrt(0))."""
    x = torch.tensor([0., 4.], requires_grad=True)
    x.sqrt().sum().backward()
    g = arr(x.grad)
    assert np.isposinf(g[0])
    np.testing.assert_allclose(g[1], 0.25)


def test_convex_function_uses_minimum_norm_subgradient():
    """如果函数是凸的, 使用最小范数的次梯度: |x| at 0 gets 0."""
    x = torch.tensor([0., -2., 3.], requires_grad=True)
    x.abs().sum().backward()
    np.testing.assert_allclose(arr(x.grad), [0., -1., 1.])


# -- 设置requires_grad / 梯度模式 ------------------------------------------------------------------

def test_requires_grad_false_freezes_a_leaf():
    """对不需要更新的参数应用.requires_grad_(False): computations using them are not recorded
    and their .grad is not updated."""
    frozen = torch.tensor([1., 2.], requires_grad=True)
    trained = torch.tensor([3., 4.], requires_grad=True)
    assert frozen.requires_grad_(False) is frozen
    assert frozen.grad_fn is None and not (frozen * 2).requires_grad
    (frozen * trained).sum().backward()
    assert frozen.grad is None
    np.testing.assert_allclose(arr(trained.grad), [1., 2.])


def test_only_leaves_with_requires_grad_accumulate_grad():
    """在向后传递期间，只有requires_grad=True的叶张量才会有梯度积累到它们的.grad字段中;
    所有的非叶张量都将自动具有require_grad=True."""
    a = torch.tensor([1., 2.], requires_grad=True)
    b = torch.tensor([3., 4.])
    h = a * b
    assert h.requires_grad and not h.is_leaf
    h.sum().backward()
    np.testing.assert_allclose(arr(a.grad), [3., 4.])
    assert b.grad is None
    with pytest.warns(UserWarning, match=NONLEAF_GRAD_WARNING):
        assert h.grad is None


def test_requires_grad_is_overridden_in_no_grad_and_inference_mode():
    """默认模式是requires_grad生效的唯一模式。requires_grad在其他两种模式中总是被重写为False."""
    x = torch.ones(2, requires_grad=True)
    assert torch.is_grad_enabled()
    assert (x * 2).requires_grad
    with torch.no_grad():
        assert not torch.is_grad_enabled()
        assert not (x * 2).requires_grad
    with torch.inference_mode():
        assert torch.is_inference_mode_enabled()
        assert not torch.is_grad_enabled()
        assert not (x * 2).requires_grad
    assert torch.is_grad_enabled() and not torch.is_inference_mode_enabled()


def test_no_grad_update_then_reuse_in_grad_mode():
    """编写优化器时: 就地更新参数而不记录, 在下一个向前传递中在梯度模式下使用更新的参数."""
    w = torch.tensor([1., 2.], requires_grad=True)
    (w * w).sum().backward()
    with torch.no_grad():
        w -= 0.1 * w.grad
    assert w.is_leaf and w.grad_fn is None and w.requires_grad
    np.testing.assert_allclose(arr(w), [0.8, 1.6], rtol=1e-6)
    w.grad.zero_()
    out = (w * w).sum()
    assert out.grad_fn is not None
    out.backward()
    np.testing.assert_allclose(arr(w.grad), [1.6, 3.2], rtol=1e-6)


def test_no_grad_enable_grad_set_grad_enabled_as_context_and_decorator():
    """所有这些模式都可以通过上下文管理器和装饰器进行切换."""
    x = torch.ones(2, requires_grad=True)

    @torch.no_grad()
    def nog(t):
        return t * 2

    @torch.enable_grad()
    def eng(t):
        return t * 2

    assert not nog(x).requires_grad
    with torch.no_grad():
        assert eng(x).requires_grad
        with torch.enable_grad():
            assert (x * 2).requires_grad
        assert not (x * 2).requires_grad
    with torch.set_grad_enabled(False):
        assert not (x * 2).requires_grad
    with torch.set_grad_enabled(True):
        assert (x * 2).requires_grad
    torch.set_grad_enabled(False)   # also a plain function
    try:
        assert not torch.is_grad_enabled() and not (x * 2).requires_grad
    finally:
        torch.set_grad_enabled(True)
    assert (x * 2).requires_grad


def test_tensor_created_with_requires_grad_in_no_grad_is_a_leaf_requiring_grad():
    """无梯度模式下的计算就好像所有输入都不需要梯度 -- a leaf made there keeps its flag."""
    with torch.no_grad():
        w = torch.ones(2, requires_grad=True)
    assert w.requires_grad and w.is_leaf
    (w * 3).sum().backward()
    np.testing.assert_allclose(arr(w.grad), [3., 3.])


# -- 推理模式 ----------------------------------------------------------------------------------

def test_inference_mode_tensors_are_inference_tensors():
    """推理模式下的计算不会记录在向后图中."""
    x = torch.ones(3, requires_grad=True)
    with torch.inference_mode():
        y = x * 2
        assert not y.requires_grad and y.grad_fn is None
        assert y.is_inference()
    assert y.is_inference() and not x.is_inference()


def test_inference_tensor_cannot_be_saved_for_backward():
    """在推断模式中创建的张量将不能用于退出推断模式后由autograd记录的计算."""
    x = torch.ones(3, requires_grad=True)
    with torch.inference_mode():
        y = x * 2
    with pytest.raises(RuntimeError, match=INFERENCE_SAVE):
        (y * x).sum().backward()


def test_inference_tensor_inplace_outside_inference_mode_raises():
    """(inference tensors outside inference mode) in-place updates are refused."""
    with torch.inference_mode():
        t = torch.ones(2)
    with pytest.raises(RuntimeError, match=INFERENCE_INPLACE):
        t.add_(1)
    with pytest.raises(RuntimeError, match=INFERENCE_INPLACE):
        t.mul_(2)
    with torch.inference_mode():
        u = torch.ones(2)
        u.add_(1)                       # inside inference mode it is allowed
    np.testing.assert_allclose(arr(u), [2., 2.])


def test_inference_tensor_cannot_require_grad_outside_inference_mode():
    """(inference tensors outside inference mode) ``requires_grad_()`` is refused."""
    with torch.inference_mode():
        t = torch.ones(2)
    with pytest.raises(RuntimeError, match=r"Setting requires_grad=True on inference tensor outside InferenceMode is not allowed"):
        t.requires_grad_()


def test_inference_mode_fallback_to_no_grad_works():
    """如果你不能避免这种使用, 你可以总是切换回无grad模式."""
    x = torch.ones(3, requires_grad=True)
    with torch.no_grad():
        y = x * 2
    assert not y.is_inference()
    (y * x).sum().backward()
    np.testing.assert_allclose(arr(x.grad), [2., 2., 2.])


def test_inference_mode_decorator_and_disabled_form():
    """inference_mode as decorator, and ``inference_mode(False)`` (mode off)."""
    x = torch.ones(2, requires_grad=True)

    @torch.inference_mode()
    def f(t):
        return t * 2

    r = f(x)
    assert not r.requires_grad and r.is_inference()
    with torch.inference_mode(False):
        assert not torch.is_inference_mode_enabled()
        assert (x * 2).requires_grad


def test_inplace_on_normal_tensor_inside_inference_mode_bumps_version():
    """(inference mode) a normal tensor can be updated in place inside the mode."""
    v = torch.ones(2)
    with torch.inference_mode():
        v.add_(1)
    np.testing.assert_allclose(arr(v), [2., 2.])
    assert v._version == 1 and not v.is_inference()


# -- 就地正确性检查 --------------------------------------------------------------------------------

def test_version_counter_increments_on_each_inplace_op():
    """每个张量都保留一个版本计数器，每次在任何操作中被标记为dirty时，该计数器就会递增."""
    x = torch.ones(3)
    assert x._version == 0
    x.add_(1)
    x.mul_(2)
    x[0] = 5.
    assert x._version == 3
    y = x.view(3)
    y.sub_(1)
    assert x._version == 4 and y._version == 4


# -- 多线程Autograd (In [4]) -------------------------------------------------------------------

def test_in4_multithreaded_training():
    """``def train_fn(): x = torch.ones(5, 5, requires_grad=True); y = (x + 3) * (x + 4) * 0.5;
    y.sum().backward()`` driven by 10 threads."""
    grads, errors = [], []
    lock = threading.Lock()

    def train_fn():
        try:
            x = torch.ones(5, 5, requires_grad=True)
            # forward
            y = (x + 3) * (x + 4) * 0.5
            # backward
            y.sum().backward()
            with lock:
                grads.append(arr(x.grad))
        except BaseException as e:  # noqa: BLE001 (reported below)
            with lock:
                errors.append(e)

    threads = []
    for _ in range(10):
        p = threading.Thread(target=train_fn, args=())
        p.start()
        threads.append(p)
    for p in threads:
        p.join()
    assert errors == []
    assert len(grads) == 10
    for g in grads:   # d/dx 0.5 (x+3)(x+4) = x + 3.5 = 4.5 at x = 1
        np.testing.assert_allclose(g, np.full((5, 5), 4.5))


def test_grad_mode_is_thread_local():
    """(多线程) each thread has its own grad mode: no_grad in one thread does not disable
    recording in another."""
    entered, release = threading.Event(), threading.Event()
    seen = {}
    x = torch.ones(2, requires_grad=True)

    def worker():
        with torch.no_grad():
            entered.set()
            release.wait(10)
            seen["worker_enabled"] = torch.is_grad_enabled()
            seen["worker_rg"] = (x * 2).requires_grad

    t = threading.Thread(target=worker)
    t.start()
    assert entered.wait(10)
    seen["main_enabled"] = torch.is_grad_enabled()
    seen["main_rg"] = (x * 2).requires_grad
    release.set()
    t.join()
    assert seen == {"worker_enabled": False, "worker_rg": False, "main_enabled": True, "main_rg": True}

    def fresh_thread():
        seen["fresh"] = torch.is_grad_enabled()

    with torch.no_grad():    # a new thread starts in the default (grad) mode
        t = threading.Thread(target=fresh_thread)
        t.start()
        t.join()
    assert seen["fresh"] is True


def test_graph_shared_between_threads_needs_retain_graph():
    """图保留: 在同一个图上执行backward()的不同线程 ... 类似于调用backward()两次而没有
    retain_graph=True."""
    x = torch.tensor([1., 2.], requires_grad=True)
    shared = x.exp()          # first part of the graph, built once
    results = []

    def run():
        try:
            (shared * 2).sum().backward()
            results.append("ok")
        except RuntimeError as e:
            results.append(str(e))

    for _ in range(2):        # one after the other: deterministic
        t = threading.Thread(target=run)
        t.start()
        t.join()
    assert results[0] == "ok"
    assert SECOND_BACKWARD in results[1] and "retain_graph=True" in results[1]

    y = torch.tensor([1., 2.], requires_grad=True)
    shared = y.exp()
    errors = []

    def run_retained():
        try:
            (shared * 2).sum().backward(retain_graph=True)
        except RuntimeError as e:  # pragma: no cover (reported by the assert)
            errors.append(e)

    for _ in range(2):
        t = threading.Thread(target=run_retained)
        t.start()
        t.join()
    assert errors == []
    np.testing.assert_allclose(arr(y.grad), 4 * np.exp([1., 2.]), rtol=1e-6)


# -- In [5] .. In [18] ----------------------------------------------------------------------------

def test_in5_out_of_place_add_rebinds_name():
    """``x=x+1``; ``x,id(x)`` -> a new tensor with ``grad_fn=<AddBackward0>``."""
    x = torch.randn(5, requires_grad=True)
    old = x
    x = x + 1
    assert x is not old and id(x) != id(old)
    assert repr(x).endswith(", grad_fn=<AddBackward0>)")
    assert not x.is_leaf
    np.testing.assert_allclose(arr(x), arr(old) + 1)


def test_in6_gradients_of_non_leaves_are_none(capsys):
    """In [6]: ``z.sum().backward()``; z, y, c have no grad (with a warning each); x.grad is
    ``tensor([[4., 4.]])``; then ``c.sum().backward()`` accumulates to ``tensor([[5., 5.]])``."""
    x = Variable(torch.ones(1, 2), requires_grad=True)
    y = x ** 2
    c = x + 1
    z = y ** 2
    z.sum().backward()
    for t in (z, y, c):
        with pytest.warns(UserWarning, match=NONLEAF_GRAD_WARNING):
            print(t.grad)
    print(x.grad)
    print(x)
    print(y)
    print(z)
    print(c)
    c.sum().backward()
    print(x.grad)
    assert capsys.readouterr().out == (
        "None\nNone\nNone\n"
        "tensor([[4., 4.]])\n"
        "tensor([[1., 1.]], requires_grad=True)\n"
        "tensor([[1., 1.]], grad_fn=<PowBackward0>)\n"
        "tensor([[1., 1.]], grad_fn=<PowBackward0>)\n"
        "tensor([[2., 2.]], grad_fn=<AddBackward0>)\n"
        "tensor([[5., 5.]])\n")


def test_leaf_grad_access_does_not_warn(recwarn):
    """(In [6]) reading ``x.grad`` of a leaf gives no warning."""
    x = torch.ones(2, requires_grad=True)
    (x * 2).sum().backward()
    _ = x.grad
    assert not [w for w in recwarn if issubclass(w.category, UserWarning)]


def test_in7_types_are_tensor():
    """``type(x),type(y)`` -> ``(torch.Tensor, torch.Tensor)``; Variable is only a wrapper."""
    x = Variable(torch.ones(1, 2), requires_grad=True)
    y = x ** 2
    assert type(x) is torch.Tensor and type(y) is torch.Tensor
    assert isinstance(x, Variable)


def test_in8_two_paths_accumulate(capsys):
    """In [8], part 1: ``z = y1**2 + y2**2`` with both from x -> x.grad 8."""
    x = Variable(torch.ones(1, 10), requires_grad=True)
    y1 = (x) ** 2
    y2 = (x) ** 2
    z = y1 ** 2 + y2 ** 2
    z.sum().backward()
    print(x.grad)
    print(z)
    assert capsys.readouterr().out == (
        "tensor([[8., 8., 8., 8., 8., 8., 8., 8., 8., 8.]])\n"
        "tensor([[2., 2., 2., 2., 2., 2., 2., 2., 2., 2.]], grad_fn=<AddBackward0>)\n")


def test_in8_no_grad_branch_is_not_differentiated(capsys):
    """In [8], part 2: y2 computed under no_grad -> x.grad 4."""
    x = Variable(torch.ones(1, 10), requires_grad=True)
    y1 = (x) ** 2
    with torch.no_grad():
        y2 = (x) ** 2
    z = y1 ** 2 + y2 ** 2
    z.sum().backward()
    print(x.grad)
    print(z)
    assert capsys.readouterr().out == (
        "tensor([[4., 4., 4., 4., 4., 4., 4., 4., 4., 4.]])\n"
        "tensor([[2., 2., 2., 2., 2., 2., 2., 2., 2., 2.]], grad_fn=<AddBackward0>)\n")


def test_in8_inplace_under_no_grad_before_use(capsys):
    """In [8], part 3: ``x += 1`` under no_grad, then y1 = x**2 -> x.grad 32, z printed on two
    lines."""
    x = Variable(torch.ones(1, 10), requires_grad=True)
    with torch.no_grad():
        x += 1
        y2 = (x) ** 2
    y1 = (x) ** 2
    z = y1 ** 2 + y2 ** 2
    z.sum().backward()
    print(x.grad)
    print(z)
    assert capsys.readouterr().out == (
        "tensor([[32., 32., 32., 32., 32., 32., 32., 32., 32., 32.]])\n"
        "tensor([[32., 32., 32., 32., 32., 32., 32., 32., 32., 32.]],\n"
        "       grad_fn=<AddBackward0>)\n")


def test_in9_inplace_after_use_raises_version_error():
    """In [9]: x used by y1, then ``x += 1`` under no_grad -> backward raises "... [torch.FloatTensor
    [1, 10]] is at version 1; expected version 0 instead"."""
    x = Variable(torch.ones(1, 10), requires_grad=True)
    y1 = (x) ** 2
    with torch.no_grad():
        x += 1
        y2 = (x) ** 2
    z = y1 ** 2 + y2 ** 2
    x.requires_grad_(True)
    with pytest.raises(RuntimeError, match=version_error([1, 10], which="") + r"\. Hint: enable anomaly detection"):
        z.sum().backward()


def test_in10_repeated_backward_accumulates(capsys):
    """In [10]: three ``x.sum().backward()`` -> 1, 2, 3."""
    x = Variable(torch.ones(1, 2), requires_grad=True)
    x.sum().backward()
    print(x.grad)
    x.sum().backward()
    print(x.grad)
    x.sum().backward()
    print(x.grad)
    assert capsys.readouterr().out == "tensor([[1., 1.]])\ntensor([[2., 2.]])\ntensor([[3., 3.]])\n"


def test_in11_zero_between_backward(capsys):
    """In [11]: ``x.grad.zero_()`` between the calls -> 1, 1, 1."""
    x = Variable(torch.ones(1, 2), requires_grad=True)
    x.sum().backward()
    print(x.grad)
    x.grad.zero_()
    x.sum().backward()
    print(x.grad)
    x.grad.zero_()
    x.sum().backward()
    print(x.grad)
    assert capsys.readouterr().out == "tensor([[1., 1.]])\ntensor([[1., 1.]])\ntensor([[1., 1.]])\n"


def test_in12_to_in15_data_assignment_and_leaf_flags():
    """In [12] ``x.data=x.data+1``; In [13] ``x.sum()`` -> ``tensor(4., grad_fn=<SumBackward0>)``;
    In [14] ``x.requires_grad,x.is_leaf`` -> (True, True); In [15] for z -> (True, False)."""
    x = Variable(torch.ones(1, 2), requires_grad=True)
    x.sum().backward()
    x.grad.zero_()
    ident = id(x)
    x.data = x.data + 1
    assert id(x) == ident
    assert x._version == 0          # .data changes are not tracked
    assert repr(x.sum()) == "tensor(4., grad_fn=<SumBackward0>)"
    assert (x.requires_grad, x.is_leaf) == (True, True)
    z = x ** 2 + x ** 2
    assert (z.requires_grad, z.is_leaf) == (True, False)


def test_in16_backward_with_gradient_tensor(capsys):
    """In [16]: ``y = torch.add(torch.pow(x,2),x)``, printed, ``y.backward(gradient)`` -> 2x+1."""
    x = torch.tensor([[1., 2., 3.], [4., 5., 6.]], requires_grad=True)
    y = torch.add(torch.pow(x, 2), x)
    print(y)
    gradient = torch.tensor([[1.0, 1.0, 1.0], [1.0, 1.0, 1.0]])
    y.backward(gradient)  # 2x+1
    print('------------------\n', x.grad)
    assert capsys.readouterr().out == (
        "tensor([[ 2.,  6., 12.],\n"
        "        [20., 30., 42.]], grad_fn=<AddBackward0>)\n"
        "------------------\n"
        " tensor([[ 3.,  5.,  7.],\n"
        "        [ 9., 11., 13.]])\n")


def test_in17_weighted_gradient(capsys):
    """In [17]: ``y.backward(torch.tensor([1.0,0.1,0.001]))`` -> ``tensor([2.0000, 0.4000, 0.0060])``."""
    x = torch.tensor([1., 2., 3.], requires_grad=True)
    y = torch.pow(x, 2)
    gradient = torch.tensor([1.0, 0.1, 0.001])
    y.backward(gradient)
    print(x.grad)
    assert capsys.readouterr().out == "tensor([2.0000, 0.4000, 0.0060])\n"


def test_in18_second_derivative_with_create_graph(capsys):
    """In [18]: ``torch.autograd.grad(y, x, create_graph=True)`` -> ``(tensor(75.,
    grad_fn=<MulBackward0>),)``, then the second derivative ``(tensor(30.),)``."""
    x = torch.tensor(5.0, requires_grad=True)
    y = torch.pow(x, 3)
    grad_x = torch.autograd.grad(y, x, create_graph=True)
    print(grad_x)  # dy/dx = 3 * x2，即75
    grad_grad_x = torch.autograd.grad(grad_x[0], x)
    print(grad_grad_x)  # 二阶导数 d(2x)/dx = 30
    assert capsys.readouterr().out == "(tensor(75., grad_fn=<MulBackward0>),)\n(tensor(30.),)\n"
    assert isinstance(grad_x, tuple) and grad_x[0].requires_grad and not grad_x[0].is_leaf
    assert x.grad is None   # autograd.grad does not accumulate into .grad


def test_in18_without_create_graph_the_gradient_is_constant():
    """(In [18]) without create_graph the first derivative has no graph, so a second
    autograd.grad through it is impossible."""
    x = torch.tensor(5.0, requires_grad=True)
    (g,) = torch.autograd.grad(torch.pow(x, 3), x)
    assert not g.requires_grad and g.grad_fn is None
    assert repr(g) == "tensor(75.)"
    with pytest.raises(RuntimeError, match=r"does not require grad and does not have a grad_fn"):
        torch.autograd.grad(g, x)
