"""The backward engine: backward/autograd.grad options, higher order, hooks, accumulation, errors."""
import sys

import numpy as np
import pytest

from ._helpers import assert_same, grad_name, src_id, tg

FREED = "Trying to backward through the graph a second time"


def _f(values, lib=None, requires_grad=True):
    lib = lib or tg
    return lib.tensor(np.asarray(values, dtype=np.float64), requires_grad=requires_grad)


# ------------------------------------------------------------------------------ backward basics


def test_backward_scalar_and_with_gradient():
    x = _f([1.0, 2.0, 3.0])
    (x * x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 4.0, 6.0])
    x.grad = None
    (x * x).backward(tg.tensor([1.0, 0.5, 0.0], dtype=tg.float64))
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 2.0, 0.0])


def test_backward_gradient_keyword_and_autograd_backward():
    x = _f([1.0, 2.0])
    tg.autograd.backward(x * 3, grad_tensors=tg.tensor([1.0, 2.0], dtype=tg.float64))
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 6.0])
    tg.autograd.backward([x.sum(), (x * x).sum()])
    np.testing.assert_allclose(x.grad.numpy(), [3.0 + 1 + 2, 6.0 + 1 + 4])
    tg.autograd.backward([x.sum(), (x * x).sum()], [tg.tensor(2.0, dtype=tg.float64), tg.tensor(3.0, dtype=tg.float64)])
    np.testing.assert_allclose(x.grad.numpy(), [6.0 + 2 + 6, 11.0 + 2 + 12])


def test_backward_returns_none_and_grad_is_leaf_tensor():
    x = _f([1.0])
    assert (x * 2).sum().backward() is None
    assert x.grad.is_leaf and not x.grad.requires_grad and x.grad.grad_fn is None
    assert x.grad.dtype == tg.float64


def test_gradient_accumulates_into_existing_grad():
    x = _f([1.0, 2.0])
    for k in range(3):
        (x * (k + 1)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [6.0, 6.0])
    x.grad.zero_()
    (x * x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 4.0])


def test_accumulation_is_in_place_without_create_graph():
    x = tg.ones(2, requires_grad=True)
    (x * 2).sum().backward()
    g = x.grad
    (x * 2).sum().backward()
    assert x.grad is g
    np.testing.assert_array_equal(g.numpy(), [4.0, 4.0])


def test_accumulation_is_out_of_place_with_create_graph():
    x = tg.ones(2, requires_grad=True)
    (x * 2).sum().backward(create_graph=True)
    g = x.grad
    (x * x).sum().backward(create_graph=True)
    assert x.grad is not g
    np.testing.assert_array_equal(g.detach().numpy(), [2.0, 2.0])
    np.testing.assert_array_equal(x.grad.detach().numpy(), [4.0, 4.0])
    assert type(x.grad.grad_fn).__name__ == "AddBackward0"


def test_grad_accumulates_into_user_assigned_grad():
    x = _f([1.0, 2.0])
    x.grad = tg.tensor([10.0, 20.0], dtype=tg.float64)
    (x * 2).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [12.0, 22.0])


def test_grad_of_sum_can_be_mutated_in_place():
    x = tg.ones(3, requires_grad=True)
    x.sum().backward()
    x.grad.zero_()
    x.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [1.0, 1.0, 1.0])
    x.grad.mul_(3)
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 3.0, 3.0])


def test_leaf_grads_do_not_alias_each_other():
    a = tg.ones(2, requires_grad=True)
    b = tg.ones(2, requires_grad=True)
    (a + b).sum().backward()
    a.grad.mul_(5)
    np.testing.assert_array_equal(b.grad.numpy(), [1.0, 1.0])
    np.testing.assert_array_equal(a.grad.numpy(), [5.0, 5.0])


def test_leaf_grads_do_not_alias_each_other_with_explicit_gradient():
    a = tg.ones(2, requires_grad=True)
    b = tg.ones(2, requires_grad=True)
    (a + b).backward(tg.tensor([1.0, 2.0]))
    b.grad.add_(100)
    np.testing.assert_array_equal(a.grad.numpy(), [1.0, 2.0])


def test_leaf_grad_does_not_alias_the_users_gradient():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    g = tg.tensor([3.0, 4.0])
    (x + 0).backward(g)
    g.mul_(10)
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 4.0])
    x.grad.add_(1)
    np.testing.assert_array_equal(g.numpy(), [30.0, 40.0])


def test_backward_on_a_leaf_with_gradient_copies_it():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    g = tg.tensor([3.0, 4.0])
    x.backward(g)
    g.mul_(10)
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 4.0])
    x.backward(g)
    np.testing.assert_array_equal(x.grad.numpy(), [33.0, 44.0])
    np.testing.assert_array_equal(g.numpy(), [30.0, 40.0])


def test_grad_of_one_leaf_used_twice_does_not_alias():
    x = tg.ones(2, requires_grad=True)
    y = tg.ones(2, requires_grad=True)
    z = x * 1
    (z + y).sum().backward()
    x.grad.add_(1)
    np.testing.assert_array_equal(y.grad.numpy(), [1.0, 1.0])


# ------------------------------------------------------------------------------ retain_graph


def test_second_backward_through_freed_graph_raises():
    x = _f([1.0, 2.0])
    y = (x * x).sum()
    y.backward()
    with pytest.raises(RuntimeError, match=FREED):
        y.backward()
    with pytest.raises(RuntimeError, match="Specify retain_graph=True"):
        y.backward()
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 4.0])


def test_retain_graph_allows_second_backward():
    x = _f([1.0, 2.0])
    y = (x * x).sum()
    y.backward(retain_graph=True)
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), [4.0, 8.0])
    with pytest.raises(RuntimeError, match=FREED):
        y.backward()


def test_backward_twice_through_graph_without_saved_tensors_works():
    x = _f([1.0, 2.0])
    y = (x + 1).sum()
    y.backward()
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 2.0])
    z = x.sum()
    z.backward()
    z.backward()
    np.testing.assert_allclose(x.grad.numpy(), [4.0, 4.0])


def test_autograd_grad_frees_the_graph_too():
    x = _f([1.0, 2.0])
    y = (x.exp()).sum()
    tg.autograd.grad(y, x)
    with pytest.raises(RuntimeError, match=FREED):
        tg.autograd.grad(y, x)


def test_shared_subgraph_freed_by_first_backward_raises():
    x = _f([1.0, 2.0])
    h = x * x
    h.sum().backward()
    with pytest.raises(RuntimeError, match=FREED):
        (h * 2).sum().backward()


# ------------------------------------------------------------------------------ higher order


def test_create_graph_second_and_third_derivatives():
    x = tg.tensor(2.0, dtype=tg.float64, requires_grad=True)
    y = x ** 3
    (g1,) = tg.autograd.grad(y, x, create_graph=True)
    assert g1.requires_grad and g1.grad_fn is not None
    assert g1.item() == pytest.approx(12.0)
    (g2,) = tg.autograd.grad(g1, x, create_graph=True)
    assert g2.item() == pytest.approx(12.0)
    (g3,) = tg.autograd.grad(g2, x)
    assert g3.item() == pytest.approx(6.0)
    assert not g3.requires_grad


def test_create_graph_with_backward_then_grad_of_grad():
    x = _f([1.0, 2.0])
    y = (x.sin() * x).sum()
    y.backward(create_graph=True)
    g = x.grad
    assert g.requires_grad
    xv = np.array([1.0, 2.0])
    np.testing.assert_allclose(g.detach().numpy(), np.cos(xv) * xv + np.sin(xv))
    x.grad = None
    g.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), -np.sin(xv) * xv + 2 * np.cos(xv))


def test_grad_without_create_graph_is_constant():
    x = _f([1.0])
    (g,) = tg.autograd.grad((x ** 2).sum(), x)
    assert not g.requires_grad and g.grad_fn is None


def test_hessian_vector_product_by_double_backward():
    x = _f([1.0, 2.0, 3.0])
    y = (x ** 3).sum() + (x[0] * x[1])
    (g,) = tg.autograd.grad(y, x, create_graph=True)
    v = tg.tensor([1.0, 0.0, 1.0], dtype=tg.float64)
    (hv,) = tg.autograd.grad(g, x, grad_outputs=v)
    # H = diag(6x) + [[0,1,0],[1,0,0],[0,0,0]]
    np.testing.assert_allclose(hv.numpy(), [6.0, 1.0, 18.0])


# ------------------------------------------------------------------------------ autograd.grad


def test_autograd_grad_multiple_inputs_and_outputs():
    x = _f([1.0, 2.0])
    w = _f([3.0, 4.0])
    a = (x * w).sum()
    b = (x * x).sum()
    gx, gw = tg.autograd.grad([a, b], [x, w])
    np.testing.assert_allclose(gx.numpy(), [3.0 + 2.0, 4.0 + 4.0])
    np.testing.assert_allclose(gw.numpy(), [1.0, 2.0])
    assert x.grad is None and w.grad is None


def test_autograd_grad_with_grad_outputs():
    x = _f([1.0, 2.0])
    y = x * x
    (g,) = tg.autograd.grad(y, x, grad_outputs=tg.tensor([1.0, 10.0], dtype=tg.float64))
    np.testing.assert_allclose(g.numpy(), [2.0, 40.0])
    z = x * 3
    (g2,) = tg.autograd.grad([z], [x], grad_outputs=[tg.ones(2, dtype=tg.float64)])
    np.testing.assert_allclose(g2.numpy(), [3.0, 3.0])


def test_autograd_grad_returns_a_tuple():
    x = _f([1.0])
    r = tg.autograd.grad((x * 2).sum(), x)
    assert isinstance(r, tuple) and len(r) == 1


def test_autograd_grad_unused_input():
    x = _f([1.0, 2.0])
    z = _f([0.0, 0.0])
    y = (x * 2).sum()
    with pytest.raises(RuntimeError, match="The differentiated Tensor at index 1 appears to not have been used "
                                           "in the graph. Set allow_unused=True if this is the desired behavior."):
        tg.autograd.grad(y, [x, z], retain_graph=True)
    gx, gz = tg.autograd.grad(y, [x, z], allow_unused=True, retain_graph=True)
    np.testing.assert_allclose(gx.numpy(), [2.0, 2.0])
    assert gz is None
    gx, gz = tg.autograd.grad(y, [x, z], materialize_grads=True)
    np.testing.assert_array_equal(gz.numpy(), [0.0, 0.0])


def test_autograd_grad_input_not_requiring_grad():
    x = _f([1.0, 2.0])
    with pytest.raises(RuntimeError, match="One of the differentiated Tensors does not require grad"):
        tg.autograd.grad((x * 2).sum(), tg.ones(2))


def test_autograd_grad_with_respect_to_a_non_leaf():
    x = _f([1.0, 2.0])
    h = x * 3
    y = (h * h).sum()
    gh, gx = tg.autograd.grad(y, [h, x])
    np.testing.assert_allclose(gh.numpy(), [6.0, 12.0])
    np.testing.assert_allclose(gx.numpy(), [18.0, 36.0])
    assert x.grad is None


def test_autograd_grad_does_not_touch_other_leaves_grad():
    x = _f([1.0])
    w = _f([2.0])
    tg.autograd.grad((x * w).sum(), x)
    assert w.grad is None and x.grad is None


# ------------------------------------------------------------------------------ inputs=


def test_backward_inputs_restricts_accumulation_to_leaves_given():
    x = _f([1.0, 2.0])
    w = _f([3.0, 4.0])
    y = (x * w).sum()
    y.backward(inputs=[x], retain_graph=True)
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 4.0])
    assert w.grad is None
    y.backward(inputs=w)
    np.testing.assert_allclose(w.grad.numpy(), [1.0, 2.0])
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 4.0])


def test_backward_inputs_non_leaf():
    x = _f([1.0, 2.0])
    h = x * 2
    y = (h * h).sum()
    y.backward(inputs=[h], retain_graph=True)
    np.testing.assert_allclose(h.grad.numpy(), [4.0, 8.0])
    assert x.grad is None
    # PyTorch makes a non-leaf given as an input retain its grad from then on
    assert h.retains_grad
    y.backward(inputs=[x])
    np.testing.assert_allclose(x.grad.numpy(), [8.0, 16.0])
    np.testing.assert_allclose(h.grad.numpy(), [8.0, 16.0])


def test_backward_inputs_empty_raises():
    x = _f([1.0])
    with pytest.raises(RuntimeError, match=r"`inputs` argument to `backward\(\)` cannot be empty\."):
        (x * 2).sum().backward(inputs=[])


# ------------------------------------------------------------------------------ errors


def test_backward_on_tensor_not_requiring_grad():
    with pytest.raises(RuntimeError, match="element 0 of tensors does not require grad and does not have a grad_fn"):
        tg.ones(2).sum().backward()
    x = tg.ones(2, requires_grad=True)
    with tg.no_grad():
        y = (x * 2).sum()
    with pytest.raises(RuntimeError, match="element 0 of tensors does not require grad and does not have a grad_fn"):
        y.backward()
    with pytest.raises(RuntimeError, match="element 1 of tensors does not require grad"):
        tg.autograd.backward([x.sum(), tg.ones(1).sum()])


def test_implicit_grad_only_for_scalar_outputs():
    x = tg.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar outputs"):
        (x * 2).backward()
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar outputs"):
        tg.autograd.grad(x * 2, x)
    # a one-element non-scalar output is fine
    y = tg.ones(1, requires_grad=True)
    (y * 2).backward()
    np.testing.assert_array_equal(y.grad.numpy(), [2.0])


@pytest.mark.parametrize("out_shape,g_shape", [((2,), (3,)), ((2,), (1,)), ((), (1,)), ((), (2,)), ((2, 2), (4,))])
def test_gradient_shape_mismatch(out_shape, g_shape):
    x = tg.ones(out_shape, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"Mismatch in shape: grad_output\[0\] has a shape of .*"
                                           + r"\[" + ", ".join(map(str, g_shape)) + r"\]"
                                           + r".* and output\[0\] has a shape of .*"
                                           + r"\[" + ", ".join(map(str, out_shape)) + r"\]"):
        (x * 2).backward(tg.ones(g_shape))


def test_gradient_dtype_is_cast_to_output_dtype():
    x = tg.ones(2, requires_grad=True)
    (x * 2).backward(tg.ones(2, dtype=tg.float64))
    assert x.grad.dtype == tg.float32
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0])


def test_grad_assignment_errors():
    x = tg.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"attempting to assign a gradient of size '\[3\]' to a tensor of size '\[2\]'"):
        x.grad = tg.ones(3)
    with pytest.raises(RuntimeError, match="attempting to assign a gradient with dtype"):
        x.grad = tg.ones(2, dtype=tg.float64)
    with pytest.raises(TypeError):
        x.grad = [1.0, 2.0]
    assert x.grad is None
    x.grad = tg.ones(2)
    np.testing.assert_array_equal(x.grad.numpy(), [1.0, 1.0])
    x.grad = None
    assert x.grad is None
    x.grad = tg.zeros(2)
    del x.grad
    assert x.grad is None


def test_requires_grad_on_non_leaf():
    x = tg.ones(2, requires_grad=True)
    y = x * 2
    with pytest.raises(RuntimeError, match="you can only change requires_grad flags of leaf variables"):
        y.requires_grad_(False)
    with pytest.raises(RuntimeError, match="you can only change requires_grad flags of leaf variables"):
        y.requires_grad = False
    y.requires_grad_(True)  # setting True on a non-leaf that requires grad is allowed
    assert y.requires_grad


def test_non_leaf_grad_access_warns_and_is_none():
    x = tg.ones(2, requires_grad=True)
    y = x * 2
    y.sum().backward()
    with pytest.warns(UserWarning, match="is not a leaf Tensor is being accessed"):
        assert y.grad is None


# ------------------------------------------------------------------------------ graph shapes


def test_long_chain_backward_has_no_recursion_limit():
    x = tg.tensor(1.0, dtype=tg.float64, requires_grad=True)
    y = x
    n = 100_000
    assert n > sys.getrecursionlimit()
    for _ in range(n):
        y = y + 1e-6
    y.backward()
    assert x.grad.item() == 1.0


def test_long_chain_of_multiplications_values():
    x = tg.tensor(1.0, dtype=tg.float64, requires_grad=True)
    y = x
    for _ in range(5000):
        y = y * 1.0001
    y.backward()
    assert x.grad.item() == pytest.approx(1.0001 ** 5000, rel=1e-9)


def test_same_leaf_used_many_times():
    x = _f([2.0])
    total = x * 0
    for k in range(100):
        total = total + x * k
    total.sum().backward()
    assert x.grad.item() == pytest.approx(sum(range(100)))
    w = _f([3.0])
    (w * w * w * w).sum().backward()
    assert w.grad.item() == pytest.approx(4 * 27.0)


def test_diamond_graph():
    x = _f([1.0, 2.0])
    a = x * 2
    b = a.exp()
    c = a.sin()
    d = (b + c).sum()
    d.backward()
    xv = np.array([1.0, 2.0])
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.exp(2 * xv) + 2 * np.cos(2 * xv))


def test_wide_fan_in_and_fan_out():
    x = _f(np.linspace(0.1, 1.0, 10))
    parts = [x[i] * x[j] for i in range(10) for j in range(10)]
    tg.stack(parts).sum().backward()
    # d/dx_k sum_ij x_i x_j = 2 sum_j x_j for every k
    np.testing.assert_allclose(x.grad.numpy(), np.full(10, 2 * np.linspace(0.1, 1.0, 10).sum()))


def test_multi_output_ops_with_some_outputs_used():
    x = _f([1.0, 2.0, 3.0, 4.0, 5.0])
    a, b, c = x.split([1, 2, 2])
    (b * 2).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [0.0, 2.0, 2.0, 0.0, 0.0])
    m = _f([[1.0, 5.0], [3.0, 2.0]])
    values, indices = m.max(1)
    values.sum().backward()
    np.testing.assert_allclose(m.grad.numpy(), [[0.0, 1.0], [1.0, 0.0]])
    assert indices.tolist() == [1, 0] and not indices.requires_grad
    u = _f([[1.0, 2.0], [3.0, 4.0]])
    r0, r1 = u.unbind(0)
    (r1 * r1).sum().backward()
    np.testing.assert_allclose(u.grad.numpy(), [[0.0, 0.0], [6.0, 8.0]])


def test_multi_output_both_outputs_used():
    x = _f([1.0, 2.0, 3.0, 4.0])
    p, q = x.chunk(2)
    (p * 2 + q * 3).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 2.0, 3.0, 3.0])


def test_retain_grad_on_intermediates():
    x = _f([1.0, 2.0])
    h = x * 3
    h.retain_grad()
    assert h.retains_grad and not x.retains_grad
    z = h * h
    z.retain_grad()
    z.sum().backward()
    np.testing.assert_allclose(z.grad.numpy(), [1.0, 1.0])
    np.testing.assert_allclose(h.grad.numpy(), [6.0, 12.0])
    np.testing.assert_allclose(x.grad.numpy(), [18.0, 36.0])
    x.retain_grad()  # a no-op on leaves
    assert not x.retains_grad


def test_retain_grad_accumulates_over_backwards():
    x = _f([1.0])
    h = x * 2
    h.retain_grad()
    y = h * 5
    y.sum().backward(retain_graph=True)
    y.sum().backward()
    np.testing.assert_allclose(h.grad.numpy(), [10.0])


def test_retain_grad_on_tensor_without_grad_raises():
    with pytest.raises(RuntimeError, match="can't retain_grad on Tensor that has requires_grad=False"):
        tg.ones(2).retain_grad()


def test_retained_grad_does_not_alias_the_gradient_flowing_on():
    x = _f([1.0, 2.0])
    h = x + 0
    h.retain_grad()
    h.sum().backward()
    h.grad.mul_(100)
    np.testing.assert_allclose(x.grad.numpy(), [1.0, 1.0])


def test_is_leaf_grad_fn_next_functions_and_accumulate_grad():
    x = _f([1.0])
    w = tg.ones(1, dtype=tg.float64)
    y = x * w
    assert x.is_leaf and w.is_leaf and not y.is_leaf
    assert grad_name(y) == "MulBackward0"
    assert y.grad_fn.name() == "MulBackward0"
    nf = y.grad_fn.next_functions
    assert len(nf) == 2
    assert type(nf[0][0]).__name__ == "AccumulateGrad" and nf[0][1] == 0
    assert nf[0][0].variable is x
    assert nf[1] == (None, 0)
    # one AccumulateGrad per leaf while the graph lives
    assert (x * 2).grad_fn.next_functions[0][0] is nf[0][0]


def test_detach_cuts_the_graph():
    x = _f([1.0, 2.0])
    y = x * 2
    d = y.detach()
    assert not d.requires_grad and d.grad_fn is None
    z = (y * d).sum()
    z.backward()
    np.testing.assert_allclose(x.grad.numpy(), [4.0, 8.0])


def test_detach_inplace():
    x = _f([1.0])
    y = x * 2
    y.detach_()
    assert y.is_leaf and not y.requires_grad and y.grad_fn is None


# ------------------------------------------------------------------------------ hooks


def test_leaf_hooks_run_in_order_and_replace_gradient():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    seen = []
    x.register_hook(lambda g: seen.append(("h1", g.tolist())))
    h2 = x.register_hook(lambda g: g * 10)
    x.register_hook(lambda g: seen.append(("h3", g.tolist())))
    (x * 3).sum().backward()
    assert seen == [("h1", [3.0, 3.0]), ("h3", [30.0, 30.0])]
    np.testing.assert_array_equal(x.grad.numpy(), [30.0, 30.0])
    h2.remove()
    x.grad = None
    seen.clear()
    (x * 3).sum().backward()
    assert seen == [("h1", [3.0, 3.0]), ("h3", [3.0, 3.0])]
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 3.0])


def test_handle_remove_is_idempotent_and_context_manager():
    x = tg.tensor([1.0], requires_grad=True)
    calls = []
    h = x.register_hook(lambda g: calls.append(1))
    h.remove()
    h.remove()
    (x * 2).sum().backward()
    assert calls == []


def test_non_leaf_hooks_change_upstream_gradients():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    seen = []
    y.register_hook(lambda g: seen.append(g.tolist()))
    y.register_hook(lambda g: g + 1)
    (y * y).sum().backward()
    assert seen == [[4.0, 8.0]]
    np.testing.assert_array_equal(x.grad.numpy(), [10.0, 18.0])


def test_retain_grad_sees_hooked_gradient_regardless_of_order():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    y.retain_grad()
    y.register_hook(lambda g: g * 0 + 7)
    (y * y).sum().backward()
    np.testing.assert_array_equal(y.grad.numpy(), [7.0, 7.0])
    np.testing.assert_array_equal(x.grad.numpy(), [14.0, 14.0])


def test_hook_on_tensor_without_grad_raises():
    with pytest.raises(RuntimeError, match="cannot register a hook on a tensor that doesn't require gradient"):
        tg.ones(2).register_hook(lambda g: g)


def test_hook_runs_once_with_the_summed_gradient():
    x = tg.tensor([1.0], requires_grad=True)
    y = x * 1
    calls = []
    y.register_hook(lambda g: calls.append(g.item()))
    (y * 2 + y * 3).sum().backward()
    assert calls == [5.0]


def test_hook_returning_none_keeps_gradient():
    x = tg.tensor([1.0], requires_grad=True)
    x.register_hook(lambda g: None)
    (x * 4).sum().backward()
    assert x.grad.item() == 4.0


def test_hooks_fire_with_autograd_grad():
    x = tg.tensor([1.0], requires_grad=True)
    y = x * 2
    y.register_hook(lambda g: g * 100)
    (g,) = tg.autograd.grad((y * 3).sum(), x)
    assert g.item() == 600.0


def test_hook_removed_from_non_leaf():
    x = tg.tensor([1.0], requires_grad=True)
    y = x * 2
    h = y.register_hook(lambda g: g * 100)
    h.remove()
    y.sum().backward()
    assert x.grad.item() == 2.0


def test_node_prehook_and_hook():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    w = tg.tensor([3.0, 4.0], requires_grad=True)
    y = x * w
    seen = []
    y.grad_fn.register_hook(lambda gi, go: seen.append(([g.tolist() for g in gi], [g.tolist() for g in go])))
    pre = y.grad_fn.register_prehook(lambda go: (go[0] * 10,))
    y.sum().backward()
    assert seen == [([[30.0, 40.0], [10.0, 20.0]], [[10.0, 10.0]])]
    np.testing.assert_array_equal(x.grad.numpy(), [30.0, 40.0])
    np.testing.assert_array_equal(w.grad.numpy(), [10.0, 20.0])
    pre.remove()
    x.grad = w.grad = None
    y = x * w
    y.grad_fn.register_hook(lambda gi, go: (gi[0] * 0, gi[1]))
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 0.0])
    np.testing.assert_array_equal(w.grad.numpy(), [1.0, 2.0])


def test_node_metadata_is_a_dict_kept_with_the_node():
    x = tg.tensor([1.0], requires_grad=True)
    y = x * 2
    y.grad_fn.metadata["k"] = 1
    assert y.grad_fn.metadata == {"k": 1}


def test_grad_fn_is_callable():
    x = _f([1.0, 2.0])
    w = _f([3.0, 4.0])
    y = x * w
    gx, gw = y.grad_fn(tg.ones(2, dtype=tg.float64))
    np.testing.assert_allclose(gx.detach().numpy(), [3.0, 4.0])
    np.testing.assert_allclose(gw.detach().numpy(), [1.0, 2.0])


# ------------------------------------------------------------------------------ oracle


def _o_basic(L):
    x = _f([0.3, -1.2, 2.0], L)
    w = _f([[1.0, 2.0, 3.0], [0.5, -1.0, 0.0]], L)
    y = (w * x).sum(1).tanh()
    z = (y * y.exp()).sum() + x.pow(3).mean()
    z.backward()
    return {"x": x.grad, "w": w.grad}


def _o_create_graph(L):
    x = _f([0.5, 1.5], L)
    y = (x.sin() * x ** 2).sum()
    (g,) = L.autograd.grad(y, x, create_graph=True)
    (h,) = L.autograd.grad(g.sum(), x, create_graph=True)
    (t,) = L.autograd.grad((h * h).sum(), x)
    return {"g": g.detach(), "h": h.detach(), "t": t, "g_fn": g.grad_fn is not None}


def _o_multi(L):
    x = _f([1.0, 2.0], L)
    w = _f([0.5, -0.5], L)
    outs = [(x * w).sum(), (x.exp() * w).sum(), x.sum()]
    return L.autograd.grad(outs, [x, w], grad_outputs=[L.tensor(1.0, dtype=L.float64),
                                                        L.tensor(2.0, dtype=L.float64),
                                                        L.tensor(-1.0, dtype=L.float64)])


def _o_inputs(L):
    x = _f([1.0, 2.0], L)
    w = _f([3.0, 4.0], L)
    h = x * w
    y = (h * h).sum()
    y.backward(inputs=[h, w], retain_graph=True)
    r = {"h": h.grad, "w": w.grad, "x": x.grad}
    y.backward(inputs=[x])
    r["x2"] = x.grad
    return r


def _o_hooks(L):
    x = _f([1.0, 2.0], L)
    y = x * 2
    seen = []
    y.register_hook(lambda g: seen.append(g.tolist()))
    y.register_hook(lambda g: g * 3)
    y.retain_grad()
    z = y.exp()
    z.register_hook(lambda g: g + 1)
    x.register_hook(lambda g: seen.append(g.tolist()))
    z.sum().backward()
    return {"x": x.grad, "y": y.grad, "seen": seen}


def _o_multi_output(L):
    x = _f([[1.0, 7.0, 3.0], [4.0, 2.0, 6.0]], L)
    v, i = x.max(1)
    a, b = x.unbind(0)
    p, q = x.split([1, 2], 1)
    (v.sum() + (b * 3).sum() + q.exp().sum()).backward()
    return {"x": x.grad, "i": i}


def _o_accumulation(L):
    x = _f([1.0, 2.0], L)
    (x * 2).sum().backward()
    (x * x).sum().backward()
    x.grad.mul_(0.5)
    (x ** 3).sum().backward()
    return x.grad


PROGRAMS = [_o_basic, _o_create_graph, _o_multi, _o_inputs, _o_hooks, _o_multi_output, _o_accumulation]


@pytest.mark.torch
@pytest.mark.parametrize("prog", PROGRAMS, ids=[p.__name__[3:] for p in PROGRAMS])
def test_oracle_engine_programs(prog):
    torch = pytest.importorskip("torch")
    assert_same(prog(tg), prog(torch), path=prog.__name__)


@pytest.mark.torch
@pytest.mark.parametrize("prog", [
    lambda L: L.ones(2).sum().backward(),
    lambda L: (L.ones(2, requires_grad=True) * 2).backward(),
    lambda L: (L.ones(2, requires_grad=True) * 2).backward(L.ones(3)),
    lambda L: (L.ones(2, requires_grad=True) * 2).sum().backward(L.ones(1)),
    lambda L: L.autograd.grad((L.ones(2, requires_grad=True) * 2).sum(), L.ones(2)),
    lambda L: L.autograd.grad((L.ones(2, requires_grad=True) * 2).sum(),
                              [L.ones(2, requires_grad=True)]),
    lambda L: setattr(L.ones(2, requires_grad=True), "grad", L.ones(3)),
    lambda L: (L.ones(2, requires_grad=True) * 2).requires_grad_(False),
    lambda L: L.ones(2).register_hook(lambda g: g),
    lambda L: L.ones(2).retain_grad(),
], ids=src_id)
def test_oracle_engine_errors(prog):
    torch = pytest.importorskip("torch")
    from ._helpers import raises_like
    mine, theirs = raises_like(lambda: prog(tg), lambda: prog(torch))
    assert type(mine) is type(theirs), (mine, theirs)
    if theirs is not None:
        assert str(mine).replace("tracegrad", "torch") == str(theirs)


@pytest.mark.torch
def test_oracle_freed_graph_message():
    torch = pytest.importorskip("torch")
    from ._helpers import raises_like

    def prog(L):
        x = L.ones(2, requires_grad=True)
        y = (x * x).sum()
        y.backward()
        y.backward()
    mine, theirs = raises_like(lambda: prog(tg), lambda: prog(torch))
    assert type(mine) is type(theirs) is RuntimeError
    assert str(mine) == str(theirs)


def test_a_leaf_never_shares_its_gradient_with_a_retained_one():
    """``w.t()``'s gradient arrives at ``w`` as a view of the same array; when that array is
    held elsewhere (here as ``wt.grad``) the leaf gets its own copy, and accumulating into
    ``w.grad`` later leaves ``wt.grad`` as it was."""
    x = tg.tensor(np.arange(6.0).reshape(2, 3))
    w = tg.tensor(np.ones((4, 3)), requires_grad=True)
    wt = w.t()
    wt.retain_grad()
    (x @ wt).sum().backward()
    assert not np.shares_memory(w.grad.numpy(), wt.grad.numpy())
    np.testing.assert_array_equal(wt.grad.numpy(), w.grad.numpy().T)
    kept = wt.grad.numpy().copy()
    (x @ w.t()).sum().backward()
    np.testing.assert_array_equal(wt.grad.numpy(), kept)
    np.testing.assert_array_equal(w.grad.numpy(), 2 * kept.T)


def test_linear_weight_gradient_is_kept_without_a_copy():
    """The weight gradient of ``x @ w.t()`` is a view nothing else holds: the leaf keeps it
    (no copy, so no fresh pages per step), with the weight's layout and the right values."""
    x = tg.tensor(np.arange(6.0).reshape(2, 3))
    w = tg.tensor(np.ones((4, 3)), requires_grad=True)
    (x @ w.t()).sum().backward()
    g = w.grad.numpy()
    assert w.grad.is_contiguous() and not g.flags.owndata
    np.testing.assert_array_equal(g, np.tile(x.numpy().sum(0), (4, 1)))


def _leaves(n, shape=(4, 3)):
    return [tg.tensor(np.ones(shape), requires_grad=True) for _ in range(n)]


def test_leaves_fed_one_gradient_object_get_their_own_arrays():
    """``a + b`` passes one gradient object to both leaves: each keeps its own copy, so
    accumulating into (or zeroing) one never changes the other."""
    x = tg.tensor(np.arange(6.0).reshape(2, 3))
    a, b = _leaves(2)
    for _ in range(2):
        (x @ (a + b).t()).sum().backward()
    assert not np.shares_memory(a.grad.numpy(), b.grad.numpy())
    np.testing.assert_array_equal(a.grad.numpy()[0], [6.0, 10.0, 14.0])
    a.grad.zero_()
    np.testing.assert_array_equal(b.grad.numpy()[0], [6.0, 10.0, 14.0])


def test_a_gradient_a_hook_kept_is_not_the_leafs_grad():
    """A leaf hook may keep the gradient it sees: the leaf then accumulates into its own
    array and the kept tensor stays as the hook saw it."""
    x = tg.tensor(np.arange(6.0).reshape(2, 3))
    (w,) = _leaves(1)
    seen = []
    w.register_hook(seen.append)
    (x @ w.t()).sum().backward()
    first = seen[0].numpy().copy()
    (x @ w.t()).sum().backward()
    np.testing.assert_array_equal(seen[0].numpy(), first)
    np.testing.assert_array_equal(w.grad.numpy(), 2 * first)


def test_custom_backward_returning_one_view_twice():
    class AddViews(tg.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            return a + b

        @staticmethod
        def backward(ctx, g):
            v = g.view(-1).view(g.shape)
            return v, v

    a, b = _leaves(2)
    weights = tg.tensor(np.arange(12.0).reshape(4, 3))
    for _ in range(2):
        (AddViews.apply(a, b) * weights).sum().backward()
    a.grad.zero_()
    np.testing.assert_array_equal(b.grad.numpy(), 2 * weights.numpy())


def test_a_small_gradient_does_not_keep_a_large_array_alive():
    """The gradient of one element of a ``cat`` is a view into the large gradient: the
    leaf copies it rather than keep the whole array."""
    w = tg.zeros(1, dtype=tg.float64, requires_grad=True)
    (tg.cat([w, tg.zeros(1000, dtype=tg.float64)]) * 2.0).sum().backward()
    g = w.grad.numpy()
    assert g.base is None or g.base.nbytes <= 8
    assert g.tolist() == [2.0]


def test_inputs_outputs_and_seeds_may_be_any_iterable():
    """``grad(loss, model.parameters(), create_graph=True)``, as meta-learning code writes
    it: generators and dict views are taken as ``tuple(...)``, as in PyTorch."""
    m = tg.nn.Linear(2, 1)
    loss = m(tg.ones(1, 2)).sum()
    by_list = tg.autograd.grad(loss, list(m.parameters()), retain_graph=True)
    for inputs in (m.parameters(), dict(m.named_parameters()).values(), iter([m.weight, m.bias])):
        got = tg.autograd.grad(loss, inputs, retain_graph=True)
        assert [g.tolist() for g in got] == [g.tolist() for g in by_list]
    got = tg.autograd.grad(iter([loss]), m.parameters(), grad_outputs=(s for s in [tg.tensor(3.0)]),
                           retain_graph=True)
    assert got[1].tolist() == [3.0]
    loss.backward(inputs=m.parameters(), retain_graph=True)
    tg.autograd.backward(iter([loss]), grad_tensors=iter([tg.tensor(2.0)]), inputs=iter([m.bias]))
    assert m.bias.grad.tolist() == [3.0]
    x = tg.ones(3, requires_grad=True)
    (jac,) = tg.autograd.grad(x * 2, iter([x]), tg.eye(3), is_grads_batched=True)
    assert jac.tolist() == (2 * tg.eye(3)).tolist()
    with pytest.raises(TypeError, match="inputs must be a Tensor or a sequence of Tensors, got int"):
        tg.autograd.grad(loss, 5)
