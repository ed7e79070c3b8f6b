"""In-place operations: values, version counters, autograd history and PyTorch's refusals."""
import numpy as np
import pytest

from ._helpers import LIB, assert_same, grad_name, src_id, tg

VERSION_ERROR = "one of the variables needed for gradient computation has been modified by an inplace operation"


def _f(values, lib=None, requires_grad=False):
    lib = lib or tg
    return lib.tensor(np.asarray(values, dtype=np.float64), requires_grad=requires_grad)


# ------------------------------------------------------------------------------ values


@pytest.mark.parametrize("op,expected", [
    (lambda x: x.add_(1), [2.0, 3.0, 4.0]),
    (lambda x: x.add_(tg.tensor([1.0, 1.0, 1.0]), alpha=2), [3.0, 4.0, 5.0]),
    (lambda x: x.sub_(1), [0.0, 1.0, 2.0]),
    (lambda x: x.sub_(tg.ones(3), alpha=3), [-2.0, -1.0, 0.0]),
    (lambda x: x.mul_(2), [2.0, 4.0, 6.0]),
    (lambda x: x.mul_(tg.tensor([0.0, 1.0, 2.0])), [0.0, 2.0, 6.0]),
    (lambda x: x.div_(2), [0.5, 1.0, 1.5]),
    (lambda x: x.neg_(), [-1.0, -2.0, -3.0]),
    (lambda x: x.pow_(2), [1.0, 4.0, 9.0]),
    (lambda x: x.clamp_(1.5, 2.5), [1.5, 2.0, 2.5]),
    (lambda x: x.clamp_(min=2), [2.0, 2.0, 3.0]),
    (lambda x: x.clamp_(max=2), [1.0, 2.0, 2.0]),
    (lambda x: x.zero_(), [0.0, 0.0, 0.0]),
    (lambda x: x.fill_(7), [7.0, 7.0, 7.0]),
    (lambda x: x.fill_(tg.tensor(4.0)), [4.0, 4.0, 4.0]),
    (lambda x: x.copy_(tg.tensor([9.0, 8.0, 7.0])), [9.0, 8.0, 7.0]),
    (lambda x: x.copy_(tg.tensor(5.0)), [5.0, 5.0, 5.0]),
    (lambda x: x.copy_(tg.tensor([1, 0, 1])), [1.0, 0.0, 1.0]),
    (lambda x: x.masked_fill_(tg.tensor([True, False, True]), -1.0), [-1.0, 2.0, -1.0]),
    (lambda x: x.scatter_(0, tg.tensor([2, 0]), tg.tensor([10.0, 20.0])), [20.0, 2.0, 10.0]),
    (lambda x: x.scatter_add_(0, tg.tensor([0, 0, 2]), tg.tensor([1.0, 2.0, 3.0])), [4.0, 2.0, 6.0]),
    (lambda x: x.index_put_((tg.tensor([0, 2]),), tg.tensor([5.0, 6.0])), [5.0, 2.0, 6.0]),
    (lambda x: x.index_put_((tg.tensor([0, 0]),), tg.tensor([5.0, 6.0]), accumulate=True), [12.0, 2.0, 3.0]),
    (lambda x: x.exp_(), list(np.exp([1.0, 2.0, 3.0]))),
])
def test_inplace_values_and_return_self(op, expected):
    x = tg.tensor([1.0, 2.0, 3.0])
    r = op(x)
    assert r is x
    np.testing.assert_allclose(x.numpy(), expected, rtol=1e-6)
    assert x._version == 1


def test_augmented_assignment_keeps_identity_and_storage():
    x = tg.tensor([1.0, 2.0, 3.0])
    keep = x
    v = x[1:]
    x += 1
    x -= 0.5
    x *= 2
    x /= 4
    assert x is keep
    np.testing.assert_allclose(x.numpy(), [0.75, 1.25, 1.75])
    np.testing.assert_allclose(v.numpy(), [1.25, 1.75])
    assert x._version == 4


def test_setitem_variants():
    x = tg.zeros(3, 4)
    x[0] = 1.0
    x[1, 2] = 5.0
    x[:, 3] = tg.tensor([7.0, 8.0, 9.0])
    x[2, ::2] = tg.tensor([3.0, 4.0])
    np.testing.assert_array_equal(x.numpy(), [[1, 1, 1, 7], [0, 0, 5, 8], [3, 0, 4, 9]])
    x[x > 4] = -1.0
    np.testing.assert_array_equal(x.numpy(), [[1, 1, 1, -1], [0, 0, -1, -1], [3, 0, 4, -1]])
    x[tg.tensor([0, 2])] = 0.0
    np.testing.assert_array_equal(x.numpy(), [[0, 0, 0, 0], [0, 0, -1, -1], [0, 0, 0, 0]])
    x[tg.tensor([1, 1]), tg.tensor([0, 1])] = tg.tensor([2.0, 3.0])
    np.testing.assert_array_equal(x.numpy()[1], [2, 3, -1, -1])
    assert x._version == 7


def test_setitem_casts_to_the_destination_dtype():
    x = tg.tensor([1, 2])
    x[0] = 3.7
    assert x.dtype == tg.int64 and x.tolist() == [3, 2]
    x.copy_(tg.tensor([1.7, 2.2]))
    assert x.tolist() == [1, 2]
    x.fill_(2.7)
    assert x.tolist() == [2, 2]


def test_inplace_broadcasting_into_self():
    x = tg.ones(2, 2)
    x.add_(tg.tensor([1.0, 2.0]))
    np.testing.assert_array_equal(x.numpy(), [[2, 3], [2, 3]])
    with pytest.raises(RuntimeError, match=r"output with shape \[2\] doesn't match the broadcast shape \[2, 2\]"):
        tg.ones(2).add_(tg.ones(2, 2))


def test_inplace_higher_precision_operand_keeps_self_dtype():
    x = tg.ones(2, dtype=tg.float32)
    x.add_(tg.ones(2, dtype=tg.float64))
    assert x.dtype == tg.float32
    y = tg.ones(2, dtype=tg.float64)
    y.add_(tg.ones(2, dtype=tg.float32))
    assert y.dtype == tg.float64


@pytest.mark.parametrize("op,src,dst", [
    (lambda x: x.add_(1.5), "Float", "Long"),
    (lambda x: x.mul_(tg.tensor(1.5)), "Float", "Long"),
    (lambda x: x.__iadd__(1.5), "Float", "Long"),
    (lambda x: x.__itruediv__(2), "Float", "Long"),
    (lambda x: x.div_(2), "Float", "Long"),
], ids=["add_", "mul_tensor", "iadd", "itruediv", "div_"])
def test_int_inplace_with_float_result_raises(op, src, dst):
    x = tg.tensor([1, 2])
    with pytest.raises(RuntimeError, match=f"result type {src} can't be cast to the desired output type {dst}"):
        op(x)
    assert x.tolist() == [1, 2] and x._version == 0


def test_int32_and_bool_and_float_inplace_cast_errors():
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Int"):
        tg.tensor([1, 2], dtype=tg.int32).add_(1.5)
    with pytest.raises(RuntimeError, match="result type Long can't be cast to the desired output type Bool"):
        tg.tensor([True, False]).add_(1)
    with pytest.raises(RuntimeError, match="result type ComplexFloat can't be cast to the desired output type Float"):
        tg.tensor([1.0, 2.0]).add_(1j)


def test_writing_into_an_expanded_tensor_raises():
    e = tg.ones(1, 3).expand(2, 3)
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor refers to a single memory location"):
        e.add_(1)
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor refers to a single memory location"):
        tg.ones(3).expand(2, 3).mul_(tg.ones(2, 3))
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor refers to a single memory location"):
        tg.ones(2, 1).expand(2, 3).copy_(tg.zeros(2, 3))


def test_inplace_inside_no_grad_on_leaf_is_allowed():
    a = tg.ones(3, requires_grad=True)
    with tg.no_grad():
        a.add_(1)
        a[0] = 5.0
    assert a.is_leaf and a.grad_fn is None and a.requires_grad
    assert a.tolist() == [5.0, 2.0, 2.0]
    assert a._version == 2
    (a * a).sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), [10.0, 4.0, 4.0])


# ------------------------------------------------------------------------------ versions


def test_version_counter_shared_by_views_and_detach_not_data():
    a = tg.ones(3)
    assert a._version == 0
    a.add_(1)
    v = a[1:]
    v.mul_(2)
    assert a._version == 2 and v._version == 2
    assert a.detach()._version == 2
    assert a.data._version == 0
    d = a.data
    d.add_(1)
    assert d._version == 1 and a._version == 2
    dd = a.detach()
    dd.add_(1)
    assert a._version == 3 and v._version == 3
    w = a.view(3)
    assert w._version == 3
    w.zero_()
    assert a._version == 4
    np.testing.assert_array_equal(a.numpy(), [0.0, 0.0, 0.0])


def test_detached_view_shares_the_version_counter():
    x = tg.ones(3)
    v = x[1:]
    d = v.detach()
    d.add_(1)
    assert x._version == 1 and v._version == 1 and d._version == 1
    assert x.tolist() == [1.0, 2.0, 2.0]


def test_version_of_setitem_and_out_of_place_ops():
    a = tg.zeros(3)
    b = a + 1
    assert a._version == 0 and b._version == 0
    a[0] = 1.0
    assert a._version == 1
    a[tg.tensor([1])] = 2.0
    assert a._version == 2
    a[a > 1.5] = 3.0
    assert a._version == 3


def test_clone_has_its_own_version():
    a = tg.ones(2)
    c = a.clone()
    c.add_(1)
    assert a._version == 0 and c._version == 1 and a.tolist() == [1.0, 1.0]


# ------------------------------------------------------------------------------ refusals


def test_inplace_on_leaf_requiring_grad_raises():
    x = tg.ones(3, requires_grad=True)
    for op in (lambda: x.add_(1), lambda: x.zero_(), lambda: x.__iadd__(1), lambda: x.copy_(tg.zeros(3)),
               lambda: x.masked_fill_(tg.tensor([True, False, False]), 0.0)):
        with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place operation."):
            op()
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad is being used in an in-place operation"):
        x[tg.tensor([0])] = 1.0
    assert x.tolist() == [1.0, 1.0, 1.0] and x._version == 0


def test_inplace_on_view_of_leaf_raises():
    x = tg.ones(2, 3, requires_grad=True)
    for op in (lambda: x[0].add_(1), lambda: x.view(6).mul_(2), lambda: x.t().zero_(),
               lambda: x[:, 1].fill_(3.0)):
        with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad is being used in an in-place operation."):
            op()
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad is being used in an in-place operation"):
        x[0] = 2.0
    np.testing.assert_array_equal(x.detach().numpy(), np.ones((2, 3)))


@pytest.mark.parametrize("split", [lambda y: y.split(2)[0], lambda y: y.unbind(0)[1], lambda y: y.chunk(2)[1],
                                   lambda y: y.split([1, 3])[1]], ids=["split", "unbind", "chunk", "split_sizes"])
def test_inplace_on_output_of_multi_view_function_raises(split):
    x = tg.ones(4, requires_grad=True)
    y = x * 1
    piece = split(y)
    with pytest.raises(RuntimeError, match="is a view and is being modified inplace. This view is the output of a "
                                           "function that returns multiple views. Such functions do not allow the "
                                           "output views to be modified inplace"):
        piece.mul_(2)
    np.testing.assert_array_equal(y.detach().numpy(), np.ones(4))


def test_inplace_on_multi_view_outputs_without_grad_is_allowed():
    a, b = tg.ones(4).split(2)
    a.mul_(2)
    x = tg.ones(4, requires_grad=True)
    with tg.no_grad():
        c, d = (x * 1).split(2)
    d.add_(1)
    assert d.tolist() == [2.0, 2.0]


def test_inplace_in_grad_mode_on_view_made_in_no_grad_raises():
    x = tg.ones(4, requires_grad=True)
    y = x * 1
    with tg.no_grad():
        v = y[1:]
        v.mul_(2)  # fine inside no_grad
    with pytest.raises(RuntimeError, match="A view was created in no_grad mode and is being modified inplace with "
                                           "grad mode enabled"):
        v.mul_(2)
    np.testing.assert_array_equal(y.detach().numpy(), [1.0, 2.0, 2.0, 2.0])


def test_inplace_on_a_view_of_a_no_grad_view_raises():
    """A view taken in grad mode of a view made in no_grad inherits the refusal; PyTorch
    names the last view op and its output."""
    y = _f([1.0, 2.0, 3.0], requires_grad=True) * 1
    with tg.no_grad():
        v = y[:2]
    w = v[:1]
    with pytest.raises(RuntimeError, match=r"^Output 0 of Slice is a view of a view which was created in no_grad "
                                           r"mode and is being modified inplace with grad mode enabled"):
        w.mul_(2)
    np.testing.assert_array_equal(y.detach().numpy(), [1.0, 2.0, 3.0])


def test_setitem_shape_mismatch_messages():
    x = tg.arange(6.0)
    with pytest.raises(RuntimeError, match=r"The expanded size of the tensor \(3\) must match the existing size "
                                           r"\(2\) at non-singleton dimension 0"):
        x[::2] = tg.tensor([1.0, 2.0])
    y = tg.ones(2, 3)
    with pytest.raises(RuntimeError, match=r"the number of sizes provided \(1\) must be greater or equal to the "
                                           r"number of dimensions in the tensor \(2\)"):
        y[0] = tg.ones(2, 3)
    assert x.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0] and x._version == 0


def test_inplace_on_detached_leaf_data_is_allowed():
    x = tg.ones(3, requires_grad=True)
    x.data.mul_(2)
    x.detach().add_(1)
    assert x.tolist() == [3.0, 3.0, 3.0]
    assert x.is_leaf and x.requires_grad


def test_saved_tensor_modified_raises_with_type_and_versions():
    b = tg.ones(3, requires_grad=True)
    y = b * 2
    w = y * y
    y.mul_(2)
    with pytest.raises(RuntimeError, match=VERSION_ERROR) as info:
        w.sum().backward()
    msg = str(info.value)
    assert f"[{LIB}.FloatTensor [3]]" in msg
    assert "is at version 1; expected version 0 instead" in msg


def test_saved_bool_and_complex_tensors_are_named_by_dispatch_key():
    """PyTorch names a saved bool, bfloat16 or complex tensor in the version error by its
    dispatch key and scalar type, the others by their legacy type."""
    p = tg.ones(4, requires_grad=True)
    keep = tg.tensor([True, True, False, False])
    y = p[keep] * tg.tensor([1.0, 10.0])
    keep.logical_not_()  # (a mask reused as a buffer)
    with pytest.raises(RuntimeError, match=VERSION_ERROR) as info:
        y.sum().backward()
    assert "[CPUBoolType [4]] is at version 1; expected version 0 instead" in str(info.value)
    z = tg.ones(2, dtype=tg.complex64, requires_grad=True)
    m = tg.ones(2, dtype=tg.complex64)
    w = z * m
    m.add_(1)
    with pytest.raises(RuntimeError, match=VERSION_ERROR) as info:
        w.abs().sum().backward()
    assert "[CPUComplexFloatType [2]] is at version 1" in str(info.value)


def test_saved_leaf_input_modified_raises():
    a = tg.ones(2, 3, requires_grad=True)
    c = tg.ones(2, 3)
    w = a * c
    c.add_(1)
    c.add_(1)
    with pytest.raises(RuntimeError, match=VERSION_ERROR) as info:
        w.sum().backward()
    assert f"[{LIB}.FloatTensor [2, 3]]" in str(info.value)
    assert "is at version 2; expected version 0 instead" in str(info.value)


def test_saved_output_modified_raises():
    b = tg.ones(2, 3, dtype=tg.float64, requires_grad=True)
    y = b.exp()
    y.add_(1)
    with pytest.raises(RuntimeError, match=VERSION_ERROR) as info:
        y.sum().backward()
    assert f"[{LIB}.DoubleTensor [2, 3]]" in str(info.value)
    assert "output 0 of Exp" in str(info.value)
    assert "is at version 1; expected version 0 instead" in str(info.value)


def test_modifying_an_unsaved_input_is_fine():
    b = tg.tensor([1.0, 2.0], requires_grad=True)
    y = b * 2
    z = y.exp()      # exp saves its result, not its input
    y.add_(1)
    z.sum().backward()
    np.testing.assert_allclose(b.grad.numpy(), 2 * np.exp([2.0, 4.0]), rtol=1e-6)


def test_modifying_through_a_view_bumps_the_saved_version():
    b = tg.ones(4, requires_grad=True)
    y = b * 1
    w = y * y
    y[1:3].mul_(5)
    with pytest.raises(RuntimeError, match=VERSION_ERROR):
        w.sum().backward()


def test_failed_inplace_does_not_bump_version():
    x = tg.ones(2)
    with pytest.raises(RuntimeError):
        x.add_(tg.ones(3))
    assert x._version == 0


# ------------------------------------------------------------------------------ history


@pytest.mark.parametrize("op,name", [
    (lambda x: x.add_(1), "AddBackward0"), (lambda x: x.add_(tg.ones(3)), "AddBackward0"),
    (lambda x: x.sub_(1), "SubBackward0"), (lambda x: x.mul_(2), "MulBackward0"),
    (lambda x: x.div_(2), "DivBackward0"), (lambda x: x.neg_(), "NegBackward0"),
    (lambda x: x.pow_(2), "PowBackward0"), (lambda x: x.clamp_(0, 2), "ClampBackward1"),
    (lambda x: x.exp_(), "ExpBackward0"),
    (lambda x: x.masked_fill_(tg.tensor([True, False, True]), 0.0), "MaskedFillBackward0"),
    (lambda x: x.scatter_(0, tg.tensor([0]), tg.tensor([9.0])), "ScatterBackward0"),
    (lambda x: x.scatter_add_(0, tg.tensor([0, 0]), tg.tensor([1.0, 2.0])), "ScatterAddBackward0"),
    (lambda x: x.index_put_((tg.tensor([0]),), tg.tensor(5.0)), "IndexPutBackward0"),
    (lambda x: x.__iadd__(1), "AddBackward0"), (lambda x: x.__isub__(1), "SubBackward0"),
    (lambda x: x.__imul__(2), "MulBackward0"), (lambda x: x.__itruediv__(2), "DivBackward0"),
    (lambda x: x.__setitem__(tg.tensor([0]), 5.0), "IndexPutBackward0"),
    (lambda x: x.__setitem__(tg.tensor([True, False, True]), 5.0), "IndexPutBackward0"),
    (lambda x: x.__setitem__(0, 5.0), "CopySlices"),
    (lambda x: x.__setitem__(slice(0, 2), tg.zeros(2)), "CopySlices"),
    (lambda x: x[1:].mul_(2), "CopySlices"),
])
def test_grad_fn_after_inplace(op, name):
    leaf = tg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    x = leaf.clone()
    assert grad_name(x) == "CloneBackward0"
    op(x)
    assert grad_name(x) == name
    assert x.requires_grad and not x.is_leaf
    # the new node leads back to the clone
    first = x.grad_fn.next_functions[0][0]
    assert type(first).__name__ == "CloneBackward0"


def test_inplace_on_no_grad_tensor_with_grad_operand_starts_recording():
    x = tg.zeros(3)
    w = tg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    x.add_(w)
    assert x.requires_grad and grad_name(x) == "AddBackward0"
    x.mul_(w)
    x.sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), [2.0, 4.0, 6.0])


def test_writing_a_grad_tensor_into_a_plain_tensor_slice():
    x = tg.zeros(2, 3)
    w = tg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    x[1] = w * 2
    assert grad_name(x) == "CopySlices" and x.requires_grad
    (x * x).sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), [8.0, 16.0, 24.0])


def test_gradient_through_inplace_chain_hand_derived():
    x = tg.tensor([1.0, 2.0, 3.0], dtype=tg.float64, requires_grad=True)
    y = x * 2          # 2x
    y.add_(1)          # 2x + 1
    y.mul_(x)          # (2x + 1) x = 2x^2 + x
    y.pow_(2)          # (2x^2 + x)^2
    y.sum().backward()
    xv = np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(x.grad.numpy(), 2 * (2 * xv ** 2 + xv) * (4 * xv + 1))


def test_gradient_through_view_write_hand_derived():
    x = tg.tensor([1.0, 2.0, 3.0, 4.0], dtype=tg.float64, requires_grad=True)
    y = x.clone()
    y[1:3].mul_(3)     # y = [x0, 3x1, 3x2, x3]
    (y * y).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 36.0, 54.0, 8.0])


@pytest.mark.parametrize("view", [lambda p: p.reshape(-1), lambda p: p[None], lambda p: p.view(1),
                                  lambda p: p.unsqueeze(0).unsqueeze(0)], ids=["reshape", "none_index", "view", "unsqueeze2"])
def test_gradient_through_a_write_into_a_view_of_a_0d_tensor_hand_derived(view):
    """Found by the fuzzer's eager check: the base's gradient there is a 0-d result of NumPy
    arithmetic, a NumPy scalar; CopySlices copied it with ``.copy()`` (a scalar again),
    so the view it wrote the in-place op's gradient into was a new array, and the
    gradient was lost: 4.2 instead of 12.6, without an error."""
    x = tg.tensor(0.7, dtype=tg.float64, requires_grad=True)
    p = x.clone()
    view(p).mul_(3.0)          # p = 3x
    (p * p).sum().backward()   # 9x^2
    assert float(x.grad) == pytest.approx(18 * 0.7)
    x.grad = None
    p = x.clone()
    view(p).mul_(p + 1.97)     # p = x (x + 1.97): the operand reads the old p
    (p * p).backward()
    assert float(x.grad) == pytest.approx(2 * 0.7 * (0.7 + 1.97) * (2 * 0.7 + 1.97))


@pytest.mark.parametrize("op,deriv", [
    (lambda y: y.exp_(), lambda x: np.exp(x)),
    (lambda y: y.tanh_(), lambda x: 1 - np.tanh(x) ** 2),
    (lambda y: y.sqrt_(), lambda x: 0.5 / np.sqrt(x)),
    (lambda y: y.sin_(), lambda x: np.cos(x)),
], ids=["exp_", "tanh_", "sqrt_", "sin_"])
def test_gradient_through_inplace_unary_ops(op, deriv):
    xv = np.array([0.25, 0.5, 2.0])
    x = tg.tensor(xv, requires_grad=True)
    y = x * 1
    op(y)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), deriv(xv), rtol=1e-12)


def test_clamp_inplace_with_tensor_bounds_hand_derived():
    """One ClampBackward0 in place: x's gradient where it stayed inside, each bound's where
    it was applied."""
    x = _f([1.0, 5.0, -3.0], requires_grad=True)
    lo = _f([0.0, 0.0, 0.0], requires_grad=True)
    hi = _f([2.0, 2.0, 2.0], requires_grad=True)
    y = x * 1
    assert y.clamp_(lo, hi) is y
    assert y.grad_fn.name() == "ClampBackward0"
    np.testing.assert_array_equal(y.detach().numpy(), [1.0, 2.0, 0.0])
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [1.0, 0.0, 0.0])
    np.testing.assert_array_equal(lo.grad.numpy(), [0.0, 0.0, 1.0])
    np.testing.assert_array_equal(hi.grad.numpy(), [0.0, 1.0, 0.0])


def test_clamp_min_and_max_inplace_with_tensor_bounds():
    x = tg.tensor([1, 5, -3])
    x.clamp_min_(tg.tensor([2, 2, 2])).clamp_max_(tg.tensor([4, 4, 4]))
    assert x.tolist() == [2, 4, 2] and x.dtype == tg.int64
    y = _f([1.0, 5.0, -3.0])
    y.clamp_(max=tg.tensor(0.5, dtype=tg.float64))
    assert y.tolist() == [0.5, 0.5, -3.0]


def test_retained_grad_of_a_base_follows_a_write_through_its_view():
    """b.retain_grad() before writing into b[0:1]: b.grad is the gradient for b as it is
    now (after the write), as in PyTorch."""
    x = _f([1.0, 5.0, -3.0], requires_grad=True)
    b = x * 1
    b.retain_grad()
    b[0:1].mul_(3)
    (b * b).sum().backward()
    np.testing.assert_array_equal(b.grad.numpy(), [6.0, 10.0, -6.0])
    np.testing.assert_array_equal(x.grad.numpy(), [18.0, 10.0, -6.0])


@pytest.mark.parametrize("norm", [
    lambda F, x: F.batch_norm(x, None, None, training=True),
    lambda F, x: F.layer_norm(x, (4,)),
    lambda F, x: F.group_norm(x, 1),
], ids=["batch_norm", "layer_norm", "group_norm"])
def test_inplace_on_a_normalization_output_is_allowed(norm):
    """The norms save their statistics, not their output (``out += identity`` in a resnet
    block): the in-place add changes nothing in the gradient, which sums to ~0 per group."""
    x = tg.tensor(np.arange(24.0).reshape(2, 3, 4) ** 1.5 / 10, requires_grad=True)
    y = norm(tg.nn.functional, x)
    y += 1
    (y * y).sum().backward()
    plain = x.detach().clone().requires_grad_()
    z = norm(tg.nn.functional, plain) + 1
    (z * z).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), plain.grad.numpy(), rtol=1e-6, atol=1e-9)


def test_overwritten_values_get_zero_gradient():
    x = tg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 1
    y[0] = 10.0
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 1.0, 1.0])


@pytest.mark.parametrize("keep_view", [True, False])
def test_double_backward_through_a_result_saving_inplace_op_on_a_view(keep_view):
    # exp_ on a view saves its result; under create_graph that result's history is the
    # written view's (through CopySlices), whether or not the view is still alive.
    x = _f([1.0, 2.0, 3.0], requires_grad=True)
    b = x * 1
    v = b[0:2]
    v.exp_()
    if not keep_view:
        del v
    g, = tg.autograd.grad((b * b).sum(), x, create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), [2 * np.exp(2.0), 2 * np.exp(4.0), 6.0])
    g.sum().backward()  # d/dx of 2 exp(2x) is 4 exp(2x); of 2x, 2
    np.testing.assert_allclose(x.grad.numpy(), [4 * np.exp(2.0), 4 * np.exp(4.0), 2.0])


def test_view_made_before_inplace_on_base_sees_new_history():
    x = tg.tensor([1.0, 2.0, 3.0], dtype=tg.float64, requires_grad=True)
    y = x * 2
    z = y[1:]
    y.mul_(x)           # y = 2x^2, z is its tail
    z.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [0.0, 8.0, 12.0])
    np.testing.assert_allclose(z.detach().numpy(), [8.0, 18.0])


# ------------------------------------------------------------------------------ oracle programs


def _p_chain(L):
    x = _f([0.5, -1.0, 2.0], L, True)
    y = x * 2
    y.add_(1)
    y.mul_(3)
    (y * y).sum().backward()
    return {"x.grad": x.grad, "y": y, "fn": grad_name(y)}


def _p_setitem_row(L):
    x = _f([[1, 2, 3], [4, 5, 6]], L, True)
    y = x.clone()
    y[0] = 0.0
    (y * y).sum().backward()
    return {"x.grad": x.grad, "y": y, "fn": grad_name(y)}


def _p_view_mul_by_grad_tensor(L):
    x = _f([[1, 2, 3], [4, 5, 6]], L, True)
    y = x.clone()
    y[:, 1].mul_(x[:, 0])
    (y * y).sum().backward()
    return {"x.grad": x.grad, "y": y, "fn": grad_name(y)}


def _p_view_of_exp(L):
    x = _f([0.1, 0.2, 0.3, 0.4], L, True)
    y = x.sin()  # saves its input, which stays unmodified
    v = y[1:3]
    v.mul_(2)
    (y.sum() + v.sum()).backward()
    return {"x.grad": x.grad, "y": y, "fn": grad_name(y)}


def _p_two_leaves(L):
    x = _f([1.0, 2.0, 3.0], L, True)
    w = _f([0.5, 0.0, -1.0], L, True)
    y = x * 1
    y.add_(w * w)
    y.div_(2)
    y.sub_(w, alpha=3)
    y.pow(2).sum().backward()
    return {"x.grad": x.grad, "w.grad": w.grad, "y": y, "fn": grad_name(y)}


def _p_transposed_view_add(L):
    x = _f([[1, 2, 3], [4, 5, 6]], L, True)
    y = x.clone()
    y.t()[1].add_(x[0, 1] * 10)
    (y ** 2).sum().backward()
    return {"x.grad": x.grad, "y": y, "fn": grad_name(y)}


def _p_clamp(L):
    x = _f([-1.0, 0.2, 0.7, 0.5], L, True)
    y = x.clone()
    y.clamp_(-0.5, 0.5)
    (y * x).sum().backward()
    return {"x.grad": x.grad, "y": y, "fn": grad_name(y)}


def _p_masked_fill(L):
    x = _f([[1, -2], [-3, 4]], L, True)
    y = x * 1
    y.masked_fill_(x.detach() < 0, 0.0)
    (y * x).sum().backward()
    return {"x.grad": x.grad, "y": y, "fn": grad_name(y)}


def _p_index_put_tensor_index(L):
    x = _f([1.0, 2.0, 3.0], L, True)
    s = _f([7.0, 9.0], L, True)
    y = x * 1
    y[L.tensor([0, 2])] = s
    (y * y).sum().backward()
    return {"x.grad": x.grad, "s.grad": s.grad, "y": y, "fn": grad_name(y)}


def _p_boolean_mask_set(L):
    x = _f([1.0, -2.0, 3.0, -4.0], L, True)
    y = x * 2
    y[y.detach() < 0] = 0.5
    (y * x).sum().backward()
    return {"x.grad": x.grad, "y": y, "fn": grad_name(y)}


def _p_overlapping_views(L):
    x = _f(np.arange(12.0).reshape(3, 4) / 10, L, True)
    y = x.clone()
    a = y[0]
    b = y[:, 1]
    a.mul_(2)
    b.add_(1)
    ((y * y).sum() + a.sum() + (b * b).sum()).backward()
    return {"x.grad": x.grad, "y": y, "a": a, "b": b, "fn": grad_name(y)}


def _p_view_of_view_setitem(L):
    x = _f([[1, 2, 3], [4, 5, 6]], L, True)
    y = x * 1
    z = y.view(3, 2)
    z[1, 1] = 5.0
    z.retain_grad()
    (y * x).sum().backward()
    return {"x.grad": x.grad, "y": y, "z": z, "fn": grad_name(y)}


def _p_neg_pow_sub(L):
    x = _f([1.5, -0.5, 2.0], L, True)
    y = x.clone()
    y.neg_()
    y.pow_(2)
    y.sub_(x)
    y.sum().backward()
    return {"x.grad": x.grad, "y": y, "fn": grad_name(y)}


def _p_scatter(L):
    x = _f([1.0, 2.0, 3.0, 4.0], L, True)
    src = _f([10.0, 20.0], L, True)
    y = x * 1
    y.scatter_(0, L.tensor([3, 1]), src)
    (y * y).sum().backward()
    return {"x.grad": x.grad, "src.grad": src.grad, "y": y, "fn": grad_name(y)}


def _p_zero_add_copy(L):
    x = _f([1.0, 2.0, 3.0, 4.0], L, True)
    y = x * 1
    y.zero_()
    y.add_(x)
    y.mul_(x)
    z = x * 1
    z.copy_(y * 3)
    (z * x).sum().backward()
    return {"x.grad": x.grad, "y": y, "z": z, "fn": grad_name(z)}


def _p_deep_view_fill(L):
    x = _f([[1, 2, 3], [4, 5, 6]], L, True)
    y = x.clone()
    y.unsqueeze(0).transpose(1, 2)[0, 1].fill_(2.0)
    (y * y * x).sum().backward()
    return {"x.grad": x.grad, "y": y, "fn": grad_name(y)}


def _p_view_before_base_inplace(L):
    x = _f([1.0, 2.0, 3.0], L, True)
    y = x * 2
    z = y[1:]
    y.mul_(x)
    (z * z).sum().backward()
    return {"x.grad": x.grad, "z": z, "fn": grad_name(y)}


def _p_augmented(L):
    x = _f([1.0, 2.0, 3.0], L, True)
    y = x.clone()
    y += x
    y *= x
    y -= 1
    y /= 2
    y.sum().backward()
    return {"x.grad": x.grad, "y": y, "fn": grad_name(y)}


def _p_slice_iadd(L):
    x = _f([[1, 2, 3], [4, 5, 6]], L, True)
    y = x.clone()
    y[0, :] += x[1, :] ** 2
    (y * y).sum().backward()
    return {"x.grad": x.grad, "y": y, "fn": grad_name(y)}


def _p_index_put_accumulate(L):
    x = _f([1.0, 2.0, 3.0], L, True)
    v = _f([1.0, 2.0, 3.0], L, True)
    y = x * 1
    y.index_put_((L.tensor([0, 0, 2]),), v, accumulate=True)
    (y * y).sum().backward()
    return {"x.grad": x.grad, "v.grad": v.grad, "y": y, "fn": grad_name(y)}


def _p_diagonal_write(L):
    x = _f(np.arange(9.0).reshape(3, 3), L, True)
    y = x.clone()
    y.diagonal().mul_(3)
    (y * y).sum().backward()
    return {"x.grad": x.grad, "y": y, "fn": grad_name(y)}


def _p_write_grad_tensor_into_plain(L):
    x = L.zeros(2, 3, dtype=L.float64)
    w = _f([1.0, 2.0, 3.0], L, True)
    x[1] = w * 2
    x[0, 1:] = w[:2]
    (x * x).sum().backward()
    return {"w.grad": w.grad, "x": x, "fn": grad_name(x)}


def _p_inplace_unary_chain(L):
    x = _f([0.1, 0.5, -0.3], L, True)
    y = x * 1
    y.sin_()
    y.mul_(2)
    y.add_(x)
    y.clamp_(min=0.5)
    y.tanh_()  # saves its result: last, so nothing modifies it afterwards
    y.sum().backward()
    return {"x.grad": x.grad, "y": y, "fn": grad_name(y)}


def _p_masked_fill_via_view(L):
    x = _f([[1, -2, 3], [-4, 5, -6]], L, True)
    y = x.clone()
    y[1].masked_fill_(L.tensor([True, False, True]), 0.0)
    (y * x).sum().backward()
    return {"x.grad": x.grad, "y": y, "fn": grad_name(y)}


def _p_double_backward_view_exp(L):
    x = _f([0.5, 1.0, 1.5], L, True)
    b = x * x
    b[1:].exp_()
    g, = L.autograd.grad((b * b).sum(), x, create_graph=True)
    (g * g).sum().backward()
    return {"x.grad": x.grad, "g": g, "fn": grad_name(b)}


PROGRAMS = [_p_double_backward_view_exp, _p_chain, _p_setitem_row, _p_view_mul_by_grad_tensor, _p_view_of_exp, _p_two_leaves,
            _p_transposed_view_add, _p_clamp, _p_masked_fill, _p_index_put_tensor_index,
            _p_boolean_mask_set, _p_overlapping_views, _p_view_of_view_setitem, _p_neg_pow_sub,
            _p_scatter, _p_zero_add_copy, _p_deep_view_fill, _p_view_before_base_inplace,
            _p_augmented, _p_slice_iadd, _p_index_put_accumulate, _p_diagonal_write,
            _p_write_grad_tensor_into_plain, _p_inplace_unary_chain, _p_masked_fill_via_view]


@pytest.mark.torch
@pytest.mark.parametrize("prog", PROGRAMS, ids=[p.__name__[3:] for p in PROGRAMS])
def test_oracle_inplace_programs(prog):
    torch = pytest.importorskip("torch")
    assert_same(prog(tg), prog(torch), path=prog.__name__)


@pytest.mark.torch
@pytest.mark.parametrize("prog", [
    lambda L: L.tensor([1, 2]).add_(1.5),
    lambda L: L.tensor([1, 2], dtype=L.int32).mul_(0.5),
    lambda L: L.tensor([True]).add_(1),
    lambda L: L.tensor([1.0]).add_(1j),
    lambda L: L.ones(2).add_(L.ones(2, 2)),
    lambda L: L.ones(2).add_(L.ones(3)),
    lambda L: L.ones(1, 3).expand(2, 3).add_(1),
    lambda L: L.ones(2, requires_grad=True).add_(1),
    lambda L: L.ones(2, requires_grad=True)[0].add_(1),
    lambda L: L.ones(2, 2, requires_grad=True).t().mul_(2),
], ids=src_id)
def test_oracle_inplace_errors(prog):
    torch = pytest.importorskip("torch")
    from ._helpers import raises_like
    mine, theirs = raises_like(lambda: prog(tg), lambda: prog(torch))
    assert theirs is not None
    assert type(mine) is type(theirs), (mine, theirs)
    assert str(mine).replace("tracegrad", "torch") == str(theirs)


@pytest.mark.torch
def test_oracle_version_counters():
    torch = pytest.importorskip("torch")

    def prog(L):
        out = []
        a = L.ones(4)
        v = a[1:]
        out.append((a._version, v._version))
        a.add_(1)
        v.mul_(2)
        a[0] = 3.0
        a[L.tensor([1])] = 2.0
        out.append((a._version, v._version, a.detach()._version, a.data._version))
        d = a.data
        d.add_(1)
        out.append((a._version, d._version))
        a.detach().sub_(1)
        out.append((a._version, v._version))
        x = L.ones(3, requires_grad=True).clone()
        x += 1
        x *= 2
        x[0] = 1.0
        out.append(x._version)
        return out
    assert prog(tg) == prog(torch)


@pytest.mark.torch
def test_oracle_saved_tensor_version_messages():
    torch = pytest.importorskip("torch")

    def progs(L):
        def p1():
            b = L.ones(3, requires_grad=True)
            y = b * 2
            w = y * y
            y.mul_(2)
            w.sum().backward()

        def p2():
            b = L.ones(2, 3, dtype=L.float64, requires_grad=True)
            y = b.exp()
            y.add_(1)
            y.sum().backward()

        def p3():
            a = L.ones(2, requires_grad=True)
            c = L.ones(2)
            w = a * c
            c.add_(1)
            w.sum().backward()
        return p1, p2, p3

    for mine_p, their_p in zip(progs(tg), progs(torch)):
        from ._helpers import raises_like
        mine, theirs = raises_like(mine_p, their_p)
        assert type(mine) is type(theirs) is RuntimeError
        m = str(mine).replace("tracegrad", "torch")
        t = str(theirs)
        # Everything before the hint must match exactly.
        assert m.split(" Hint:")[0] == t.split(" Hint:")[0]
