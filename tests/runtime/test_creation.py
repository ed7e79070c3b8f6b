"""Creating tensors: tensor() inference, NumPy interop, factories, randomness, the legacy constructor."""
import numpy as np
import pytest

from ._helpers import assert_same, dname, tg

INT_GRAD_ERROR = "Only Tensors of floating point and complex dtype can require gradients"


# ------------------------------------------------------------------------------ tensor()


@pytest.mark.parametrize("data,dtype,shape", [
    ([True, False], "bool", (2,)),
    ([1, 2, 3], "int64", (3,)),
    ([1.0, 2], "float32", (2,)),
    ([True, 2], "int64", (2,)),
    ([True, 2.5], "float32", (2,)),
    ([1, 2j], "complex64", (2,)),
    ([[1, 2], [3, 4.5]], "float32", (2, 2)),
    ([[True], [False]], "bool", (2, 1)),
    ([[[1j]]], "complex64", (1, 1, 1)),
    (3, "int64", ()),
    (2.5, "float32", ()),
    (True, "bool", ()),
    (1 + 1j, "complex64", ()),
    ([], "float32", (0,)),
    ([[], []], "float32", (2, 0)),
    ((1, 2), "int64", (2,)),
])
def test_tensor_infers_dtype_from_python_data(data, dtype, shape):
    t = tg.tensor(data)
    assert dname(t.dtype) == dtype
    assert tuple(t.shape) == shape
    np.testing.assert_array_equal(t.numpy(), np.array(data, dtype=t.numpy().dtype).reshape(shape))


def test_tensor_values_and_explicit_dtype():
    t = tg.tensor([[1, 2], [3, 4]], dtype=tg.float64)
    assert t.dtype == tg.float64
    assert t.tolist() == [[1.0, 2.0], [3.0, 4.0]]
    assert tg.tensor([1.7, -1.7], dtype=tg.int32).tolist() == [1, -1]
    assert tg.tensor(5).item() == 5 and isinstance(tg.tensor(5).item(), int)
    assert isinstance(tg.tensor(2.5).item(), float)
    assert isinstance(tg.tensor(True).item(), bool)


def test_tensor_ragged_raises_value_error():
    with pytest.raises(ValueError):
        tg.tensor([[1, 2], [3]])


def test_tensor_of_strings_raises_type_error():
    with pytest.raises(TypeError):
        tg.tensor([1, "a"])


def test_tensor_reads_other_sequences_as_lists():
    """A deque (REINFORCE's returns), a range, an array.array: sequences PyTorch reads."""
    import array
    import collections
    t = tg.tensor(collections.deque([1.0, 2.5]))
    assert t.dtype == tg.float32 and t.tolist() == [1.0, 2.5]
    assert tg.tensor(range(3)).tolist() == [0, 1, 2] and tg.tensor(range(3)).dtype == tg.int64
    assert tg.tensor([range(2), collections.deque([3, 4])]).tolist() == [[0, 1], [3, 4]]
    assert tg.tensor(array.array("d", [1.5, 2.0])).tolist() == [1.5, 2.0]
    assert tg.as_tensor(collections.deque([1, 2])).tolist() == [1, 2]


@pytest.mark.parametrize("data,error,message", [
    ({1, 2}, RuntimeError, "Could not infer dtype of set"),
    ({1: 2}, RuntimeError, "Could not infer dtype of dict"),
    ([object()], RuntimeError, "Could not infer dtype of object"),
    ("ab", TypeError, "new\\(\\): invalid data type 'str'"),
    ([b"a"], TypeError, "new\\(\\): invalid data type 'bytes'"),
])
def test_tensor_of_unreadable_data_raises_as_torch(data, error, message):
    with pytest.raises(error, match=message):
        tg.tensor(data)


@pytest.mark.parametrize("name", ["zeros", "ones", "empty", "rand", "randn"])
def test_factories_take_the_size_by_keyword(name):
    t = getattr(tg, name)(size=(2, 3), dtype=tg.float64)
    assert t.shape == (2, 3) and t.dtype == tg.float64
    assert getattr(tg, name)(size=[4]).shape == (4,)
    with pytest.raises(TypeError, match=f"{name}\\(\\) got multiple values for argument 'size'"):
        getattr(tg, name)(2, size=(3,))


def test_tensor_of_zero_dim_tensors():
    t = tg.tensor([tg.tensor(1.0), tg.tensor(2.0)])
    assert t.dtype == tg.float32
    assert t.tolist() == [1.0, 2.0]


@pytest.mark.parametrize("np_dtype,name", [(np.bool_, "bool"), (np.int32, "int32"), (np.int64, "int64"),
                                           (np.float16, "float16"), (np.float32, "float32"),
                                           (np.float64, "float64"), (np.complex64, "complex64"),
                                           (np.complex128, "complex128")])
def test_tensor_from_numpy_array_keeps_dtype_and_copies(np_dtype, name):
    a = np.arange(6).reshape(2, 3).astype(np_dtype)
    t = tg.tensor(a)
    assert dname(t.dtype) == name
    assert tuple(t.shape) == (2, 3)
    np.testing.assert_array_equal(t.numpy(), a)
    a[0, 0] = 1
    a[0, 1] = 0
    assert t.numpy()[0, 0] == 0 and t.numpy()[0, 1] == np.array(1).astype(np_dtype)


def test_tensor_from_numpy_scalar_keeps_dtype():
    assert tg.tensor(np.float64(2.0)).dtype == tg.float64
    assert tg.tensor(np.int32(2)).dtype == tg.int32
    assert tg.tensor([np.float64(1.0), 2]).dtype == tg.float64


def test_tensor_from_tensor_copies():
    src = tg.tensor([1.0, 2.0])
    with pytest.warns(UserWarning, match="To copy construct from a tensor, it is recommended to use "
                                         r"sourceTensor.detach\(\).clone\(\)"):
        t = tg.tensor(src)
    t[0] = 5.0
    assert src.tolist() == [1.0, 2.0]


def test_tensor_from_a_list_of_arrays_warns_once(monkeypatch):
    """PyTorch warns once per process that a tensor built from a list of arrays (a rollout's
    observations) is slow; lists of numbers or of NumPy scalars do not warn."""
    if tg.__name__ == "tracegrad":  # (a fresh process's state)
        from tracegrad.runtime import creation
        monkeypatch.setattr(creation, "_ndarrays_in_list", [False, False])
    import warnings
    rows = [np.arange(3.0), np.arange(3.0) + 1]
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        assert tg.tensor([np.float64(1.0), 2.0]).tolist() == [1.0, 2.0]
        assert tg.tensor([[1.0, 2.0], [3.0, 4.0]]).shape == (2, 2)
        assert seen == []
        t = tg.tensor(rows)
        assert t.tolist() == [[0.0, 1.0, 2.0], [1.0, 2.0, 3.0]] and t.dtype == tg.float64
        tg.tensor([[1.0, 2.0, 3.0], rows[0]])  # (an array anywhere in the lists)
    assert len(seen) == 1 and seen[0].category is UserWarning
    assert str(seen[0].message).startswith(
        "Creating a tensor from a list of numpy.ndarrays is extremely slow. Please consider converting the list "
        "to a single numpy.ndarray with numpy.array() before converting to a tensor.")
    assert seen[0].filename == __file__


def test_tensor_requires_grad():
    t = tg.tensor([1.0, 2.0], requires_grad=True)
    assert t.requires_grad and t.is_leaf and t.grad_fn is None


@pytest.mark.parametrize("factory", [
    lambda: tg.tensor([1, 2], requires_grad=True),
    lambda: tg.tensor([True], requires_grad=True),
    lambda: tg.zeros(2, dtype=tg.int64, requires_grad=True),
    lambda: tg.ones(2, dtype=tg.int32, requires_grad=True),
    lambda: tg.full((2,), 3, requires_grad=True),
    lambda: tg.arange(3, requires_grad=True),
    lambda: tg.tensor(np.array([1, 2], dtype=np.int32), requires_grad=True),
])
def test_requires_grad_on_integer_dtypes_raises(factory):
    with pytest.raises(RuntimeError, match=INT_GRAD_ERROR):
        factory()


def test_requires_grad_setter_on_integer_raises():
    x = tg.tensor([1, 2])
    with pytest.raises(RuntimeError, match="Tensors of floating point.*can require gradients"):
        x.requires_grad_()
    with pytest.raises(RuntimeError, match="Tensors of floating point.*can require gradients"):
        x.requires_grad = True
    assert not x.requires_grad
    x.requires_grad_(False)  # turning it off is always fine
    z = tg.tensor([1j])
    z.requires_grad_()
    assert z.requires_grad


# ------------------------------------------------------------------------------ NumPy interop


def test_as_tensor_shares_memory_with_numpy():
    a = np.array([1.0, 2.0, 3.0])
    t = tg.as_tensor(a)
    assert t.dtype == tg.float64
    a[0] = 10.0
    assert t[0].item() == 10.0
    t[1] = 20.0
    assert a[1] == 20.0


def test_as_tensor_with_other_dtype_copies():
    a = np.array([1.0, 2.0])
    t = tg.as_tensor(a, dtype=tg.float32)
    assert t.dtype == tg.float32
    a[0] = 9.0
    assert t[0].item() == 1.0


def test_as_tensor_of_tensor_is_identity_and_of_list_infers():
    x = tg.ones(2)
    assert tg.as_tensor(x) is x
    assert tg.as_tensor([1, 2]).dtype == tg.int64
    assert tg.as_tensor(x, dtype=tg.float64).dtype == tg.float64


def test_from_numpy_shares_memory_both_ways():
    a = np.zeros((2, 3), dtype=np.int32)
    t = tg.from_numpy(a)
    assert t.dtype == tg.int32 and tuple(t.shape) == (2, 3)
    a[1, 2] = 7
    assert t[1, 2].item() == 7
    t.add_(1)
    assert a[0, 0] == 1 and a[1, 2] == 8
    assert np.shares_memory(t.numpy(), a)


def test_from_numpy_keeps_strides_of_a_numpy_view():
    a = np.arange(12.0).reshape(3, 4)
    t = tg.from_numpy(a[:, ::2])
    assert tuple(t.shape) == (3, 2)
    assert t.stride() == (4, 2)
    assert not t.is_contiguous()
    np.testing.assert_array_equal(t.numpy(), a[:, ::2])


def test_from_numpy_rejects_non_arrays():
    with pytest.raises(TypeError, match="expected np.ndarray"):
        tg.from_numpy([1, 2])


def test_numpy_shares_memory_and_refuses_requires_grad():
    t = tg.ones(3)
    a = t.numpy()
    a[0] = 5.0
    assert t[0].item() == 5.0
    r = tg.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"Can't call numpy\(\) on Tensor that requires grad"):
        r.numpy()
    np.testing.assert_array_equal(r.detach().numpy(), [1.0, 1.0])


def test_tolist_and_item():
    t = tg.tensor([[1, 2], [3, 4]])
    assert t.tolist() == [[1, 2], [3, 4]]
    assert tg.tensor(2.5).tolist() == 2.5
    with pytest.raises(RuntimeError, match="a Tensor with 4 elements cannot be converted to Scalar"):
        t.item()
    assert tg.tensor([[7]]).item() == 7


# ------------------------------------------------------------------------------ factories


@pytest.mark.parametrize("factory", ["zeros", "ones", "empty", "rand", "randn"])
@pytest.mark.parametrize("args,shape", [((2, 3), (2, 3)), (((2, 3),), (2, 3)), (([2, 3],), (2, 3)),
                                        ((4,), (4,)), (((),), ()), ((0,), (0,)), ((2, 0, 1), (2, 0, 1))])
def test_factory_size_arguments(factory, args, shape):
    t = getattr(tg, factory)(*args)
    assert tuple(t.shape) == shape
    assert t.dtype == tg.float32
    assert t.requires_grad is False


def test_factory_accepts_size_object():
    assert tuple(tg.zeros(tg.Size([2, 3])).shape) == (2, 3)
    assert tuple(tg.ones(tg.ones(4, 5).shape).shape) == (4, 5)


@pytest.mark.parametrize("factory", ["zeros", "ones", "empty", "rand", "randn"])
def test_factory_dtype_and_requires_grad(factory):
    f = getattr(tg, factory)
    t = f(2, dtype=tg.float64, requires_grad=True)
    assert t.dtype == tg.float64 and t.requires_grad and t.is_leaf


def test_zeros_ones_values():
    np.testing.assert_array_equal(tg.zeros(2, 2).numpy(), np.zeros((2, 2)))
    np.testing.assert_array_equal(tg.ones(3, dtype=tg.int32).numpy(), np.ones(3))
    assert tg.ones(2, dtype=tg.bool).tolist() == [True, True]


def test_negative_size_raises():
    with pytest.raises(RuntimeError):
        tg.zeros(-1)


def test_float_size_raises_type_error():
    with pytest.raises(TypeError):
        tg.zeros(2, 3.0)


@pytest.mark.parametrize("value,dtype", [(1, "int64"), (True, "bool"), (2.5, "float32"), (1j, "complex64")])
def test_full_infers_dtype(value, dtype):
    t = tg.full((2, 3), value)
    assert dname(t.dtype) == dtype
    assert tuple(t.shape) == (2, 3)
    assert t.tolist() == [[value] * 3] * 2


def test_full_with_dtype_and_list_size():
    t = tg.full([2], 7, dtype=tg.float64)
    assert t.dtype == tg.float64 and t.tolist() == [7.0, 7.0]


def test_eye():
    np.testing.assert_array_equal(tg.eye(3).numpy(), np.eye(3))
    np.testing.assert_array_equal(tg.eye(2, 3).numpy(), np.eye(2, 3))
    assert tg.eye(2).dtype == tg.float32
    assert tg.eye(2, dtype=tg.int64).dtype == tg.int64


@pytest.mark.parametrize("args,kw,values,dtype", [
    ((5,), {}, [0, 1, 2, 3, 4], "int64"),
    ((2, 5), {}, [2, 3, 4], "int64"),
    ((0, 1, 0.25), {}, [0.0, 0.25, 0.5, 0.75], "float32"),
    ((1, 2.5), {}, [1.0, 2.0], "float32"),
    ((5, 0, -2), {}, [5, 3, 1], "int64"),
    ((3,), {"dtype": "float64"}, [0.0, 1.0, 2.0], "float64"),
    ((0,), {}, [], "int64"),
])
def test_arange(args, kw, values, dtype):
    kw = {k: getattr(tg, v) for k, v in kw.items()}
    t = tg.arange(*args, **kw)
    assert dname(t.dtype) == dtype
    np.testing.assert_allclose(t.numpy(), values)


def test_arange_zero_step_raises():
    with pytest.raises(RuntimeError, match="step must be nonzero"):
        tg.arange(0, 5, 0)


def test_linspace():
    t = tg.linspace(0, 1, 5)
    assert t.dtype == tg.float32
    np.testing.assert_allclose(t.numpy(), [0.0, 0.25, 0.5, 0.75, 1.0])
    assert tg.linspace(0, 10, 1).tolist() == [0.0]
    assert tg.linspace(-1, 1, 3, dtype=tg.float64).dtype == tg.float64
    assert tuple(tg.linspace(0, 1, 0).shape) == (0,)


def test_rand_ranges_and_randn_moments():
    tg.manual_seed(0)
    r = tg.rand(10000)
    assert 0.0 <= r.min().item() and r.max().item() < 1.0
    assert abs(r.mean().item() - 0.5) < 0.02
    n = tg.randn(10000, dtype=tg.float64)
    assert abs(n.mean().item()) < 0.05 and abs(n.std().item() - 1.0) < 0.05


def test_randint_shapes_dtypes_and_bounds():
    tg.manual_seed(1)
    a = tg.randint(3, 10, (50,))
    assert a.dtype == tg.int64 and tuple(a.shape) == (50,)
    assert 3 <= a.min().item() and a.max().item() < 10
    b = tg.randint(4, (2, 3))
    assert tuple(b.shape) == (2, 3) and 0 <= b.min().item() and b.max().item() < 4
    c = tg.randint(0, 5, (3,), dtype=tg.int32)
    assert c.dtype == tg.int32
    d = tg.randint(6, size=(40,), dtype=tg.long)  # minGPT's spelling: high by position, size by name
    assert tuple(d.shape) == (40,) and 0 <= d.min().item() and d.max().item() < 6
    with pytest.raises(TypeError, match=r"randint\(\) expects \(high, size\) or \(low, high, size\)"):
        tg.randint(5)


def test_randperm_is_a_permutation():
    tg.manual_seed(2)
    p = tg.randperm(20)
    assert p.dtype == tg.int64
    assert sorted(p.tolist()) == list(range(20))
    assert tg.randperm(0).tolist() == []


def test_random_floats_reject_integer_dtype():
    with pytest.raises((RuntimeError, NotImplementedError)):
        tg.randn(2, dtype=tg.int64)


@pytest.mark.parametrize("factory", [
    lambda: tg.rand(3, 4), lambda: tg.randn(5), lambda: tg.randint(0, 100, (6,)), lambda: tg.randperm(8),
    lambda: tg.rand_like(tg.ones(3)), lambda: tg.randn_like(tg.ones(2, 2)),
])
def test_manual_seed_reproducibility(factory):
    tg.manual_seed(1234)
    a = factory()
    b = factory()
    tg.manual_seed(1234)
    c = factory()
    d = factory()
    np.testing.assert_array_equal(a.numpy(), c.numpy())
    np.testing.assert_array_equal(b.numpy(), d.numpy())
    if a.numel() > 2:
        assert not np.array_equal(a.numpy(), b.numpy())


def test_manual_seed_differs_between_seeds():
    tg.manual_seed(1)
    a = tg.rand(8)
    tg.manual_seed(2)
    b = tg.rand(8)
    assert not np.array_equal(a.numpy(), b.numpy())


def test_initial_seed_reports_manual_seed():
    tg.manual_seed(42)
    assert tg.initial_seed() == 42


# ------------------------------------------------------------------------------ *_like


@pytest.mark.parametrize("name", ["zeros_like", "ones_like", "empty_like", "rand_like", "randn_like"])
def test_like_keeps_shape_and_dtype(name):
    base = tg.ones(2, 3, dtype=tg.float64)
    t = getattr(tg, name)(base)
    assert tuple(t.shape) == (2, 3) and t.dtype == tg.float64
    assert not t.requires_grad
    t2 = getattr(tg, name)(base, dtype=tg.float32, requires_grad=True)
    assert t2.dtype == tg.float32 and t2.requires_grad


def test_like_values_and_integer_dtypes():
    base = tg.ones(2, dtype=tg.int32)
    assert tg.zeros_like(base).dtype == tg.int32
    assert tg.zeros_like(base).tolist() == [0, 0]
    assert tg.ones_like(tg.zeros(2, 2)).tolist() == [[1.0, 1.0], [1.0, 1.0]]
    f = tg.full_like(base, 2.7)
    assert f.dtype == tg.int32 and f.tolist() == [2, 2]
    assert tg.full_like(tg.zeros(2), 3).tolist() == [3.0, 3.0]


def test_like_does_not_inherit_requires_grad_or_share_memory():
    base = tg.ones(3, requires_grad=True)
    z = tg.zeros_like(base)
    assert not z.requires_grad
    z.add_(1)
    assert base.tolist() == [1.0, 1.0, 1.0]


def test_randint_like():
    tg.manual_seed(0)
    t = tg.randint_like(tg.zeros(4, 5), 3)
    assert tuple(t.shape) == (4, 5) and t.dtype == tg.float32
    assert t.min().item() >= 0 and t.max().item() < 3


def test_new_factories():
    base = tg.ones(2, dtype=tg.float64)
    assert base.new_zeros(3).dtype == tg.float64 and tuple(base.new_zeros(3).shape) == (3,)
    assert base.new_ones((2, 2)).tolist() == [[1.0, 1.0], [1.0, 1.0]]
    assert base.new_full((2,), 4).tolist() == [4.0, 4.0]
    assert base.new_tensor([1, 2]).dtype == tg.float64


# ------------------------------------------------------------------------------ legacy constructors


def test_legacy_tensor_from_data_is_default_float():
    t = tg.Tensor([1, 2, 3])
    assert t.dtype == tg.float32 and t.tolist() == [1.0, 2.0, 3.0]
    assert tg.Tensor([True, False]).tolist() == [1.0, 0.0]
    assert tg.Tensor([[1, 2], [3, 4]]).shape == (2, 2)
    assert tg.Tensor(np.array([1, 2], dtype=np.int64)).dtype == tg.float32


def test_legacy_tensor_from_sizes():
    t = tg.Tensor(2, 3)
    assert tuple(t.shape) == (2, 3) and t.dtype == tg.float32
    assert tuple(tg.Tensor(tg.Size([4])).shape) == (4,)
    e = tg.Tensor()
    assert tuple(e.shape) == (0,) and e.dtype == tg.float32
    assert isinstance(t, tg.Tensor) and not t.requires_grad and t.is_leaf


def test_legacy_tensor_follows_default_dtype():
    prev = tg.get_default_dtype()
    tg.set_default_dtype(tg.float64)
    try:
        assert tg.Tensor([1]).dtype == tg.float64
        assert tg.Tensor(2).dtype == tg.float64
    finally:
        tg.set_default_dtype(prev)


def test_legacy_tensor_rejects_float_size():
    with pytest.raises(TypeError):
        tg.Tensor(2, 3.0)


def test_variable_wraps_a_tensor():
    base = tg.ones(2)
    v = tg.autograd.Variable(base, requires_grad=True)
    assert isinstance(v, tg.Tensor)
    assert isinstance(v, tg.autograd.Variable)
    assert isinstance(tg.zeros(1), tg.autograd.Variable)
    assert v.requires_grad and v.is_leaf
    assert not tg.autograd.Variable(tg.ones(2)).requires_grad
    (v * 3).sum().backward()
    np.testing.assert_array_equal(v.grad.numpy(), [3.0, 3.0])


def test_variable_rejects_non_tensors():
    with pytest.raises(TypeError, match="Variable data has to be a tensor, but got list"):
        tg.autograd.Variable([1, 2])


def test_is_tensor_and_numel():
    assert tg.is_tensor(tg.ones(1)) and not tg.is_tensor(np.ones(1))
    assert tg.numel(tg.ones(2, 3)) == 6 and tg.ones(2, 3).numel() == 6
    assert tg.ones(2, 3).dim() == 2 and tg.ones(2, 3).ndim == 2
    assert tg.ones(2, 3).size() == (2, 3) and tg.ones(2, 3).size(1) == 3 and tg.ones(2, 3).size(-2) == 2
    assert tg.ones(2, 3, dtype=tg.float64).element_size() == 8


def test_device_of_created_tensors():
    t = tg.ones(2, device="cpu")
    assert t.device == tg.device("cpu")
    assert str(t.device) == "cpu"
    assert t.device.type == "cpu"
    assert t.cpu() is t or t.cpu().device.type == "cpu"


# ------------------------------------------------------------------------------ oracle


@pytest.mark.torch
def test_oracle_tensor_dtype_inference():
    torch = pytest.importorskip("torch")
    cases = [[True], [1], [1.5], [1j], [True, 1], [1, 1.5], [1.5, 1j], [[1, 2], [3.0, 4]],
             [[True, False], [1, 0]], 0, 0.5, True, 2j, [], [[]], [[[1]]],
             np.array([1, 2], dtype=np.int32), np.array([1.0], dtype=np.float16),
             np.array([True]), np.float64(3.0), np.array(2.0, dtype=np.float32)]
    for data in cases:
        assert_same(tg.tensor(data), torch.tensor(data), path=repr(data))
        assert_same(tg.as_tensor(data), torch.as_tensor(data), path=repr(data))


@pytest.mark.torch
def test_oracle_factories():
    torch = pytest.importorskip("torch")
    progs = [
        lambda L: L.zeros(2, 3), lambda L: L.ones((3,), dtype=L.int32), lambda L: L.full((2, 2), 1.5),
        lambda L: L.full((2,), 3), lambda L: L.full((1,), False), lambda L: L.eye(3, 2),
        lambda L: L.eye(2, dtype=L.float64), lambda L: L.arange(6), lambda L: L.arange(1, 7, 2),
        lambda L: L.arange(0.5, 3), lambda L: L.arange(0, 1, 0.1), lambda L: L.arange(10, 0, -3),
        lambda L: L.linspace(-1, 1, 7), lambda L: L.linspace(0, 1, 4, dtype=L.float64),
        lambda L: L.zeros_like(L.ones(2, dtype=L.int32)), lambda L: L.full_like(L.ones(2, dtype=L.int64), 2.9),
        lambda L: L.ones_like(L.ones(2, 2, dtype=L.float16)), lambda L: L.Tensor([1, 2]),
        lambda L: L.Tensor([[True]]), lambda L: L.empty(0, 3).shape, lambda L: L.zeros([]),
    ]
    for i, p in enumerate(progs):
        assert_same(p(tg), p(torch), path=f"program {i}", atol=1e-6)


@pytest.mark.torch
def test_oracle_random_shapes_and_dtypes():
    torch = pytest.importorskip("torch")
    progs = [lambda L: L.rand(2, 3), lambda L: L.randn((4,)), lambda L: L.randint(3, 9, (2, 2)),
             lambda L: L.randint(5, (3,)), lambda L: L.randperm(6), lambda L: L.rand(2, dtype=L.float64),
             lambda L: L.randn_like(L.zeros(3, dtype=L.float64)), lambda L: L.rand_like(L.zeros(1, 2))]
    for p in progs:
        a, b = p(tg), p(torch)
        assert tuple(a.shape) == tuple(b.shape)
        assert dname(a.dtype) == dname(b.dtype)


def test_rand_and_randn_draw_complex_values_as_pytorch_defines_them():
    """rand: real and imaginary parts each uniform on [0, 1); randn: the complex normal of
    variance 1 (each part 1/2), for complex64 and complex128, also through the *_like forms."""
    for dtype, real in ((tg.complex64, np.float32), (tg.complex128, np.float64)):
        u = tg.rand(4000, dtype=dtype)
        assert u.dtype is dtype and u.shape == (4000,)
        parts = np.stack([u.real.numpy(), u.imag.numpy()])
        assert parts.dtype == real and parts.min() >= 0 and parts.max() < 1
        assert abs(parts.mean() - 0.5) < 0.02 and abs(np.corrcoef(parts)[0, 1]) < 0.05
        z = tg.randn(2, 3000, dtype=dtype).numpy()
        assert abs(z.real.var() - 0.5) < 0.05 and abs(z.imag.var() - 0.5) < 0.05
        assert abs(np.mean(np.abs(z) ** 2) - 1) < 0.05
        like = tg.rand_like(tg.zeros(2, 3, dtype=dtype))
        assert like.dtype is dtype and like.shape == (2, 3) and like.is_contiguous()
        assert tg.randn((), dtype=dtype).shape == ()
    with pytest.raises(RuntimeError, match="not implemented for"):
        tg.rand(2, dtype=tg.int64)


def test_arrays_shared_with_a_tensor_are_checked_as_pytorch_checks_them():
    with pytest.raises(ValueError, match="At least one stride in the given numpy array is negative"):
        tg.from_numpy(np.arange(5)[::-1])
    with pytest.raises(ValueError, match="negative strides are not currently supported"):
        tg.as_tensor(np.arange(5.0)[::-1])
    from tracegrad.runtime import creation
    creation._warned_read_only[0] = False
    ro = np.arange(3.0)
    ro.setflags(write=False)
    with pytest.warns(UserWarning, match="The given NumPy array is not writable"):
        t = tg.from_numpy(ro)
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (once per program, as PyTorch)
        tg.as_tensor(ro)
    for write in (lambda: t.add_(1), lambda: t.__setitem__(0, 5.0)):
        with pytest.raises(RuntimeError, match="its memory is a NumPy array that is not writable"):
            write()
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor refers to a single"):
        tg.ones(1).expand(3).add_(1)
    assert ro.tolist() == [0.0, 1.0, 2.0]
