"""Behaviours an independent review of the eager runtime found wrong, each pinned by the
reproduction that showed it. Expected values are PyTorch 2.13's."""
import copy
import pickle
import subprocess
import sys
import threading
import warnings

import numpy as np
import pytest

import tracegrad as tg


def arr(t):
    return t.detach().numpy()


# -- gradients that must not alias what the user holds --------------------------------------

def test_gradient_returned_by_a_node_hook_is_not_adopted_as_leaf_grad():
    h = tg.full((3,), 5.0)
    x = tg.ones(3, requires_grad=True)
    y = x * 2
    y.grad_fn.register_hook(lambda grad_inputs, grad_outputs: (h, None))
    y.sum().backward()
    (x * 2).sum().backward()
    np.testing.assert_array_equal(arr(h), [5, 5, 5])
    np.testing.assert_array_equal(arr(x.grad), [7, 7, 7])


def test_gradient_kept_by_a_prehook_on_accumulate_grad_is_not_changed_later():
    x = tg.ones(2, requires_grad=True)
    y = x * 2
    kept = []
    y.grad_fn.next_functions[0][0].register_prehook(lambda grad_outputs: kept.append(grad_outputs[0]))
    y.sum().backward()
    (x * 2).sum().backward()
    np.testing.assert_array_equal(arr(kept[0]), [2, 2])


# -- which tensors take part in autograd -----------------------------------------------------

def test_integer_results_never_require_grad():
    x = tg.tensor([1.5, 2.5], requires_grad=True)
    assert not x.long().requires_grad and x.long().grad_fn is None
    values, indices = x.max(0)
    assert values.requires_grad and not indices.requires_grad


def test_a_view_whose_base_gains_history_requires_grad():
    base = tg.zeros(3)
    v = base[:2]
    w = tg.ones(3, requires_grad=True)
    base.mul_(w)
    assert v.requires_grad and v.exp().requires_grad


# -- the engine -----------------------------------------------------------------------------

def test_autograd_grad_captures_a_non_leaf_without_running_its_node():
    x = tg.ones(3, requires_grad=True)
    b = x.clone()
    y = b * b
    b.add_(1)  # MulBackward0 of y saved b: running it would raise the version error
    (gy,) = tg.autograd.grad((y * 3).sum(), y)
    np.testing.assert_array_equal(arr(gy), [3, 3, 3])


def test_autograd_grad_of_an_intermediate_does_not_free_its_history():
    x = tg.ones(2, requires_grad=True)
    y = x * x
    tg.autograd.grad(y.exp().sum(), y)
    y.sum().backward()  # y's own node was not run (nor freed) by the grad() call
    np.testing.assert_array_equal(arr(x.grad), [2, 2])


def test_retain_grad_follows_an_in_place_op():
    x = tg.ones(2, requires_grad=True)
    a = x * 2
    a.retain_grad()
    a.mul_(3)
    a.sum().backward()
    np.testing.assert_array_equal(arr(a.grad), [1, 1])


def test_leaf_hooks_run_under_autograd_grad():
    x = tg.ones(2, requires_grad=True)
    x.register_hook(lambda g: g * 10)
    (gx,) = tg.autograd.grad((x * 2).sum(), x)
    np.testing.assert_array_equal(arr(gx), [20, 20])


def test_gradients_keep_each_operands_dtype_after_promotion():
    x = tg.ones(2, requires_grad=True)
    a = x * 2
    a.retain_grad()
    seen = []
    a.register_hook(lambda g: seen.append(g.dtype))
    (a + tg.ones(2, dtype=tg.float64)).sum().backward()
    assert a.grad.dtype is tg.float32 and seen == [tg.float32] and x.grad.dtype is tg.float32


def test_accumulate_grad_node_hooks_and_post_accumulate_hooks_fire():
    w = tg.ones(2, requires_grad=True)
    calls = []
    y = w * 3
    y.grad_fn.next_functions[0][0].register_hook(lambda gi, go: calls.append(("node", gi, arr(go[0]).tolist())))
    w.register_post_accumulate_grad_hook(lambda t: calls.append(("post", arr(t.grad).tolist())))
    y.sum().backward()
    assert calls == [("post", [3.0, 3.0]), ("node", (), [3.0, 3.0])]
    with pytest.raises(RuntimeError, match="post accumulate grad hooks cannot be registered on non-leaf"):
        y.register_post_accumulate_grad_hook(lambda t: None)


def test_legacy_constructor_of_a_tensor_shares_its_version_counter():
    x = tg.ones(1, requires_grad=True)
    y = x.exp()
    z = tg.Tensor(y.detach())
    z.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()
    assert tg.Tensor(tg.tensor([1, 2])).dtype is tg.int64


# -- rules ----------------------------------------------------------------------------------

def test_diagonal_scatter_gradient_is_zero_on_the_diagonal_even_for_infinite_values():
    x = tg.ones(2, 2, requires_grad=True)
    tg.sqrt(tg.diagonal_scatter(x, tg.zeros(2))).sum().backward()
    np.testing.assert_array_equal(arr(x.grad), [[0, 0.5], [0.5, 0]])


def test_relu_gradient_has_no_negative_zeros():
    x = tg.tensor([-1.0, 2.0], requires_grad=True)
    tg.relu(x).backward(tg.tensor([-1.0, -1.0]))
    assert str(x.grad) == "tensor([ 0., -1.])"


def test_where_requires_a_boolean_condition():
    with pytest.raises(RuntimeError, match="where expected condition to be a boolean tensor, but got a tensor with dtype Long"):
        tg.where(tg.tensor([2, 0]), tg.ones(2), 0.0)


def test_clamp_bounds_take_part_in_promotion():
    assert tg.tensor([0, 1, 2]).clamp(min=0.5).dtype is tg.float32
    with pytest.raises(RuntimeError, match="result type Float can't be cast"):
        tg.tensor([0, 1, 2]).clamp_(min=0.5)


def test_float16_mean_and_var_accumulate_wide():
    assert tg.ones(100000, dtype=tg.float16).mean().item() == 1.0
    assert (tg.ones(1000, dtype=tg.float16) * 2).var().item() == 0.0


def test_float_overflow_in_reductions_is_silent():
    """As in PyTorch, inf/nan from tracegrad's kernels come without NumPy's warnings (run in
    a fresh interpreter with default warning filters: pytest installs its own)."""
    code = ("import tracegrad as tg; big = tg.tensor([3e38, 3e38]); "
            "print(big.sum().item(), big.prod().item(), big.cumsum(0)[1].item(), tg.log(tg.zeros(1)).item())")
    run = subprocess.run([sys.executable, "-W", "default", "-c", code], capture_output=True, text=True, check=True)
    assert run.stdout.split() == ["inf", "inf", "inf", "-inf"] and run.stderr == ""


def test_node_hook_must_return_one_value_per_input():
    x = tg.ones(3, requires_grad=True)
    y = x * 2
    y.grad_fn.register_hook(lambda grad_inputs, grad_outputs: (grad_inputs[0],))
    with pytest.raises(RuntimeError, match=r"has returned an incorrect number of values \(got 1, but expected 2\)"):
        y.sum().backward()


def test_python_ints_wrap_into_integer_dtypes():
    np.testing.assert_array_equal(arr(tg.tensor([0, 5], dtype=tg.uint8) + (-1)), [255, 4])
    assert bool(tg.tensor([255], dtype=tg.uint8) == -1)
    assert not bool(tg.tensor([1], dtype=tg.int8) < 1000)  # 1000 wraps to -24 in int8


@pytest.mark.parametrize("call, message", [
    (lambda x: x.gather(1, tg.tensor([[-1], [0]])), "index -1 is out of bounds for dimension 1 with size 3"),
    (lambda x: x.gather(1, tg.tensor([[3], [0]])), "index 3 is out of bounds for dimension 1 with size 3"),
    (lambda x: x.index_select(1, tg.tensor([-1])), "INDICES element is out of DATA bounds, id=-1 axis_dim=3"),
    (lambda x: tg.zeros(3).scatter_add(0, tg.tensor([-1]), tg.ones(1)), "index -1 is out of bounds for dimension 0 with size 3"),
    (lambda x: tg.zeros(3).scatter(0, tg.tensor([3]), tg.ones(1)), "index 3 is out of bounds for dimension 0 with size 3"),
])
def test_index_ranges_are_checked(call, message):
    with pytest.raises(RuntimeError, match=message):
        call(tg.arange(6.0).reshape(2, 3))


def test_take_along_dim_broadcasts():
    out = tg.take_along_dim(tg.arange(6.0).reshape(2, 3), tg.tensor([[2]]), 1)
    np.testing.assert_array_equal(arr(out), [[2], [5]])


# -- threads --------------------------------------------------------------------------------

def test_concurrent_backward_into_a_shared_leaf_loses_no_update():
    w = tg.zeros(100000, requires_grad=True)

    def work():
        for _ in range(50):
            (w * 1.0).sum().backward()
    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert arr(w.grad).min() == 200 and arr(w.grad).max() == 200


def test_default_dtype_is_process_wide():
    seen = []
    try:
        tg.set_default_dtype(tg.float64)
        t = threading.Thread(target=lambda: seen.append(tg.tensor([1.5]).dtype))
        t.start()
        t.join()
    finally:
        tg.set_default_dtype(tg.float32)
    assert seen == [tg.float64]


# -- random numbers and out= ----------------------------------------------------------------

def test_generators_have_their_own_streams():
    g1, g2 = tg.Generator().manual_seed(123), tg.Generator().manual_seed(123)
    assert tg.rand(3, generator=g1).equal(tg.rand(3, generator=g2))
    tg.manual_seed(0)
    a = tg.randn(3)
    tg.Generator().manual_seed(5)  # does not touch the default stream
    tg.manual_seed(0)
    assert a.equal(tg.randn(3))


def test_manual_seed_wraps_negative_seeds():
    assert tg.manual_seed(-1).initial_seed() == 2 ** 64 - 1


def test_out_is_written_and_returned():
    o = tg.empty(5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # PyTorch's factories resize out silently
        r = tg.ones(3, out=o)
    assert r is o and o.shape == (3,) and arr(o).tolist() == [1, 1, 1]
    o = tg.ones(3, out=tg.empty(3, dtype=tg.int64))  # out's dtype when none is asked for, as PyTorch
    assert o.dtype == tg.int64 and o.tolist() == [1, 1, 1]
    with pytest.raises(RuntimeError, match=r"dtype Float does not match dtype of out parameter \(Long\)"):
        tg.ones(3, dtype=tg.float32, out=tg.empty(3, dtype=tg.int64))


# -- grad-mode decorators -------------------------------------------------------------------

def test_decorated_generators_receive_thrown_exceptions():
    @tg.no_grad()
    def gen():
        try:
            yield tg.is_grad_enabled()
        except ValueError:
            yield "caught"
    g = gen()
    assert next(g) is False and g.throw(ValueError) == "caught" and tg.is_grad_enabled()


def test_inference_mode_false_reads_the_mode_at_call_time():
    with tg.no_grad():
        @tg.inference_mode(False)
        def f():
            return tg.is_grad_enabled()
    assert f() is True


# -- smaller parity items -------------------------------------------------------------------

def test_reshape_that_copies_is_not_a_view():
    r = tg.ones(2, 3, requires_grad=True).t().reshape(6)
    assert r._base is None and r.grad_fn.name() == "UnsafeViewBackward0"
    assert r.grad_fn.next_functions[0][0].name() == "CloneBackward0"


def test_storage_offset_of_a_detached_view():
    assert tg.arange(4.0)[1:].detach().storage_offset() == 1


def test_fill_and_zero_node_names():
    assert tg.ones(3, requires_grad=True).clone().fill_(0).grad_fn.name() == "FillBackward2"
    assert tg.ones(3, requires_grad=True).clone().zero_().grad_fn.name() == "ZeroBackward0"


def test_pickle_and_deepcopy():
    x = tg.ones(2, requires_grad=True)
    b = pickle.loads(pickle.dumps(x * 2))
    assert b.is_leaf and b.requires_grad and arr(b).tolist() == [2, 2]
    x.grad = tg.ones(2)
    assert copy.deepcopy(x).grad.equal(tg.ones(2))
    with pytest.raises(RuntimeError, match="Only Tensors created explicitly by the user"):
        copy.deepcopy(x * 2)


def test_data_of_a_tensor_requiring_grad_must_stay_floating_point():
    q = tg.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="data set to a tensor that requires gradients must be floating point"):
        q.data = tg.tensor([1, 2])


def test_section_option_after_the_tour_subcommand():
    out = subprocess.run([sys.executable, "-m", "tracegrad", "--section", "2", "tour"],
                         capture_output=True, text=True, check=True).stdout
    assert "== 2." in out and "== 1." not in out
