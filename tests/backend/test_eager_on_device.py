"""The eager runtime on the device: factories, moves between devices, mixed devices,
conversions, printing and serialization of ``device='cuda'`` tensors, each compared with
the same computation on the CPU (indexing and autograd: test_eager_ops_on_device.py).
On the stub device (see stub_device.py) any NumPy call on device data raises, so these
also prove the runtime reaches device arrays only through the backend namespace."""
import io
import pickle
import re

import numpy as np
import pytest

import tracegrad as tg
from tracegrad import backend

from .eager_checks import MIXED_MESSAGE, on_device, pair, same
from .stub_device import StubArray, stub

# -- factories ------------------------------------------------------------------------------

FACTORIES = {
    "tensor": lambda d: tg.tensor([[1.5, 2.0], [3.0, -4.0]], device=d),
    "tensor_int": lambda d: tg.tensor([1, 2, 3], device=d),
    "tensor_bool": lambda d: tg.tensor([True, False], device=d),
    "tensor_dtype": lambda d: tg.tensor([1, 2], dtype=tg.float64, device=d),
    "tensor_numpy": lambda d: tg.tensor(np.arange(6.0).reshape(2, 3), device=d),
    "as_tensor": lambda d: tg.as_tensor([1.0, 2.0], device=d),
    "as_tensor_numpy": lambda d: tg.as_tensor(np.arange(4, dtype=np.int32), device=d),
    "as_tensor_tensor": lambda d: tg.as_tensor(tg.arange(3.0), dtype=tg.float64, device=d),
    "zeros": lambda d: tg.zeros(2, 3, device=d),
    "ones": lambda d: tg.ones((2, 3), dtype=tg.int64, device=d),
    "full": lambda d: tg.full((2, 2), 7.5, device=d),
    "full_int": lambda d: tg.full((3,), 4, device=d),
    "empty": lambda d: tg.empty(2, 5, device=d),
    "eye": lambda d: tg.eye(3, 4, device=d),
    "arange": lambda d: tg.arange(5, device=d),
    "arange_float": lambda d: tg.arange(0.0, 2.0, 0.25, device=d),
    "linspace": lambda d: tg.linspace(-1, 1, 7, device=d),
    "logspace": lambda d: tg.logspace(0, 2, 5, device=d),
    "zeros_like": lambda d: tg.zeros_like(tg.ones(2, 3, dtype=tg.float64, device=d)),
    "ones_like": lambda d: tg.ones_like(tg.ones(4, dtype=tg.int32, device=d)),
    "full_like": lambda d: tg.full_like(tg.ones(2, device=d), 3.0),
    "empty_like": lambda d: tg.empty_like(tg.ones(2, 2, device=d)),
    "new_tensor": lambda d: tg.ones(2, dtype=tg.float64, device=d).new_tensor([1, 2, 3]),
    "new_zeros": lambda d: tg.ones(2, device=d).new_zeros(2, 3),
    "new_ones": lambda d: tg.ones(2, device=d).new_ones((3,)),
    "new_empty": lambda d: tg.ones(2, device=d).new_empty(4),
    "new_full": lambda d: tg.ones(2, dtype=tg.int64, device=d).new_full((2, 2), 5),
    "Tensor_to": lambda d: tg.Tensor([1.0, 2.0]).to(d),
}


@pytest.mark.parametrize("name", sorted(FACTORIES))
def test_factory_on_device_gives_the_cpu_tensor(xp, name):
    same(xp, FACTORIES[name]("cuda"), FACTORIES[name]("cpu"))


RANDOM = {
    "rand": lambda d: tg.rand(3, 4, device=d),
    "randn": lambda d: tg.randn(2, 3, dtype=tg.float64, device=d),
    "randint": lambda d: tg.randint(2, 9, (5,), device=d),
    "randperm": lambda d: tg.randperm(8, device=d),
    "normal": lambda d: tg.normal(2.0, 3.0, (4,), device=d),
    "rand_like": lambda d: tg.rand_like(tg.ones(2, 2, device=d)),
    "randn_like": lambda d: tg.randn_like(tg.ones(3, dtype=tg.float64, device=d)),
    "randint_like": lambda d: tg.randint_like(tg.ones(3, dtype=tg.int32, device=d), 5),
}


@pytest.mark.parametrize("name", sorted(RANDOM))
def test_random_factory_is_on_the_device_and_reproducible(xp, name):
    tg.manual_seed(123)
    first = RANDOM[name]("cuda")
    tg.manual_seed(123)
    again = RANDOM[name]("cuda")
    on_cpu = RANDOM[name]("cpu")
    on_device(xp, first)
    assert first.dtype == on_cpu.dtype and first.shape == on_cpu.shape
    assert first.tolist() == again.tolist()
    tg.manual_seed(124)
    assert RANDOM[name]("cuda").tolist() != first.tolist() or name == "randint_like"


def test_random_values_lie_in_range(xp):
    tg.manual_seed(0)
    u = tg.rand(1000, device="cuda").cpu().numpy()
    assert u.min() >= 0 and u.max() < 1 and 0.4 < u.mean() < 0.6
    ints = tg.randint(3, 7, (500,), device="cuda").cpu().numpy()
    assert set(ints.tolist()) == {3, 4, 5, 6}
    assert sorted(tg.randperm(10, device="cuda").tolist()) == list(range(10))
    n = tg.normal(tg.full((2000,), 5.0, device="cuda"), 0.5)
    on_device(xp, n)
    assert abs(n.mean().item() - 5.0) < 0.1 and abs(n.std().item() - 0.5) < 0.1


def test_generator_of_the_device(xp):
    g = tg.Generator("cuda").manual_seed(7)
    a = tg.rand(4, generator=g, device="cuda")
    b = tg.rand(4, generator=tg.Generator("cuda").manual_seed(7), device="cuda")
    assert a.tolist() == b.tolist()
    with pytest.raises(RuntimeError, match="Expected a 'cpu' device type for generator but found 'cuda'"):
        tg.rand(2, generator=g)


def test_device_attributes(xp):
    t = tg.ones(2, device="cuda")
    assert t.device == tg.device("cuda", 0) and t.device.type == "cuda" and t.device.index == 0
    assert str(t.device) == "cuda:0" and repr(t.device) == "device(type='cuda', index=0)"
    assert t.is_cuda and not tg.ones(2).is_cuda
    assert tg.ones(2, device="cuda:0").is_cuda
    assert tg.ones(2, device=tg.device("cuda")).is_cuda


def test_tensor_from_a_tensor_changes_device_with_a_copy(xp):
    cpu, dev = pair()
    same(xp, tg.tensor(cpu, device="cuda"), cpu)
    back = tg.tensor(dev, device="cpu")
    assert back.device == tg.device("cpu")
    np.testing.assert_array_equal(back.numpy(), cpu.numpy())
    same(xp, tg.tensor(dev), cpu)  # no device given: stays where it is
    assert tg.as_tensor(dev) is dev and tg.as_tensor(dev, device="cuda") is dev
    copy = tg.tensor(dev)
    copy.add_(1)
    same(xp, dev, cpu)  # (a copy)
    nested = tg.tensor([dev[0, 0], dev[1, 1]])  # (a list: on the CPU, as in PyTorch)
    assert nested.tolist() == [cpu[0, 0].item(), cpu[1, 1].item()] and not nested.is_cuda


def test_tensor_from_a_device_array(xp):
    values = np.arange(6.0).reshape(2, 3)
    array = xp.from_host(values)
    same(xp, tg.tensor(array), tg.tensor(values))
    same(xp, tg.tensor(array, dtype=tg.int32), tg.tensor(values, dtype=tg.int32))
    back = tg.tensor(array, device="cpu")
    assert back.device == tg.device("cpu") and back.tolist() == values.tolist()
    shared = tg.as_tensor(array)
    assert shared._data is array  # (no copy, as PyTorch's as_tensor of a CuPy array)
    copied = tg.tensor(array)
    copied.add_(1)
    assert xp.to_host(array).tolist() == values.tolist()


def test_a_cupy_array_made_before_cuda_was_used_is_an_array(monkeypatch):
    if "cuda" in {ns.name for ns in backend.loaded()}:
        pytest.skip("CUDA is loaded already")
    # stub arrays made to look like CuPy's ndarray, and loading CUDA registering the stub
    monkeypatch.setattr(StubArray, "__module__", "cupy")
    monkeypatch.setattr(StubArray, "__cuda_array_interface__", property(dict), raising=False)
    monkeypatch.setattr(backend, "_load_cuda", lambda: backend.register(stub, (StubArray,)) or stub)
    values = np.arange(6.0).reshape(2, 3)
    try:
        assert backend.is_array(stub.asarray(values))
        backend.unregister(stub)
        same(stub, tg.tensor(stub.asarray(values)), tg.tensor(values))
    finally:
        backend.unregister(stub)
    assert not backend.is_array([1.0]) and not backend.is_array(2.0)


def test_the_device_get_device_name_names(xp):
    for device in (None, 0, "cuda", "cuda:0", tg.device("cuda"), tg.device("cuda", 0)):
        assert tg.cuda._index_of(device) == 0
    with pytest.raises(ValueError, match="Expected a cuda device, but got: cpu"):
        tg.cuda._index_of("cpu")
    if xp is not stub:  # (the stub has no device properties to name)
        name = tg.cuda.get_device_name()
        assert name and tg.cuda.get_device_name("cuda") == name
        assert tg.cuda.get_device_name(tg.device("cuda:0")) == name


# -- moving between devices -----------------------------------------------------------------

MOVES = {
    "to_str": lambda t: t.to("cuda"),
    "to_index": lambda t: t.to("cuda:0"),
    "to_device": lambda t: t.to(tg.device("cuda")),
    "to_kw": lambda t: t.to(device="cuda"),
    "cuda": lambda t: t.cuda(),
    "cuda_index": lambda t: t.cuda(0),
    "to_other": lambda t: t.to(tg.zeros(1, dtype=t.dtype, device="cuda")),
}


@pytest.mark.parametrize("name", sorted(MOVES))
def test_move_to_the_device_keeps_values_and_dtype(xp, name):
    for cpu in (tg.randn(3, 2, dtype=tg.float64), tg.arange(6).reshape(2, 3), tg.tensor([True, False])):
        same(xp, MOVES[name](cpu), cpu)


def test_move_with_a_dtype(xp):
    cpu = tg.randn(4, dtype=tg.float64)
    same(xp, cpu.to("cuda", tg.float32), cpu.float())
    same(xp, cpu.to("cuda", dtype=tg.int32), cpu.int())
    same(xp, cpu.to(tg.zeros(1, dtype=tg.float16, device="cuda")), cpu.half())
    dev = cpu.cuda()
    back = dev.to("cpu", tg.float32)
    assert back.device.type == "cpu" and back.dtype == tg.float32
    np.testing.assert_allclose(back.numpy(), cpu.float().numpy())


def test_move_back_to_the_cpu(xp):
    cpu, dev = pair()
    for back in (dev.cpu(), dev.to("cpu"), dev.to(cpu), dev.to(device=tg.device("cpu"))):
        assert back.device == tg.device("cpu") and isinstance(back._data, np.ndarray)
        np.testing.assert_array_equal(back.numpy(), cpu.numpy())


def test_move_to_the_same_device_returns_self(xp):
    cpu, dev = pair()
    assert dev.to("cuda") is dev and dev.cuda() is dev and dev.to(dev) is dev
    assert dev.to("cuda", tg.float64) is dev
    assert cpu.cpu() is cpu and cpu.to("cpu") is cpu
    copied = dev.to("cuda", copy=True)
    assert copied is not dev
    same(xp, copied, cpu)


def test_move_is_a_copy(xp):
    cpu = tg.zeros(3)
    dev = cpu.cuda()
    dev.add_(1)
    assert cpu.tolist() == [0, 0, 0]
    back = dev.cpu()
    back.add_(1)
    assert dev.tolist() == [1, 1, 1]


def test_gradient_flows_back_across_a_move(xp):
    x = tg.tensor([1.0, -2.0, 3.0], requires_grad=True)
    d = x.cuda()
    assert type(d.grad_fn).__name__ == "ToCopyBackward0"
    assert d.grad_fn.next_functions[0][0].variable is x
    y = (d * d).sum()
    y.backward()
    assert x.grad.device == tg.device("cpu") and isinstance(x.grad._data, np.ndarray)
    np.testing.assert_allclose(x.grad.numpy(), [2.0, -4.0, 6.0])


def test_gradient_flows_to_the_device_through_cpu(xp):
    _, w = pair((3,), requires_grad=True)
    c = w.to("cpu", tg.float32)
    assert type(c.grad_fn).__name__ == "ToCopyBackward0"
    (c * tg.tensor([1.0, 2.0, 3.0])).sum().backward()
    on_device(xp, w.grad)
    assert w.grad.dtype == tg.float64
    np.testing.assert_allclose(w.grad.cpu().numpy(), [1.0, 2.0, 3.0])


def test_moves_and_ops_in_a_chain(xp):
    cpu, dev = pair((4,), requires_grad=True)
    (cpu.exp().sin() * 3).sum().backward()
    (dev.cpu().cuda().exp().cpu().sin().cuda() * 3).sum().backward()
    same(xp, dev.grad, cpu.grad)


# -- mixed devices ----------------------------------------------------------------------------

MIXED = {
    "add": lambda c, d: c + d,
    "radd": lambda c, d: d + c,
    "mul": lambda c, d: tg.mul(d, c),
    "sub_alpha": lambda c, d: d.sub(c, alpha=2),
    "matmul": lambda c, d: d @ c.T,
    "rmatmul": lambda c, d: c @ d.T,
    "cat": lambda c, d: tg.cat([d, c]),
    "cat_cpu_first": lambda c, d: tg.cat([c, d]),
    "stack": lambda c, d: tg.stack([c, d]),
    "where": lambda c, d: tg.where(d > 0, d, c),
    "where_mask": lambda c, d: tg.where(c > 0, d, d),
    "maximum": lambda c, d: tg.maximum(c, d),
    "add_": lambda c, d: d.add_(c),
    "cpu_add_": lambda c, d: c.add_(d),
    "after_index_select": lambda c, d: d.index_select(0, tg.tensor([0], device="cuda")) + c,
}


@pytest.mark.parametrize("name", sorted(MIXED))
def test_mixing_devices_in_one_op_raises(xp, name):
    cpu, dev = pair((3, 4))
    with pytest.raises(RuntimeError, match=MIXED_MESSAGE):
        MIXED[name](cpu, dev)


def test_a_0d_cpu_tensor_combines_with_a_device_tensor(xp):
    cpu, dev = pair((3,))
    s = tg.tensor(2.5, dtype=tg.float64)
    same(xp, dev * s, cpu * s)
    same(xp, s - dev, s - cpu)
    same(xp, tg.where(dev > 0, dev, s), tg.where(cpu > 0, cpu, s))
    same(xp, tg.tensor(2.0, device="cuda") + s, tg.tensor(2.0) + s)  # (both 0-d: the device's)
    half = tg.tensor(0.5, dtype=tg.float64)
    same(xp, dev.clone().mul_(half), cpu.clone().mul_(half))
    i = tg.tensor(3)  # the 0-d tensor's dtype promotes as a 0-d tensor's, not a number's
    same(xp, tg.arange(3, device="cuda", dtype=tg.int32) + i, tg.arange(3, dtype=tg.int32) + i)
    f64 = tg.tensor(1.5, dtype=tg.float64)
    same(xp, tg.arange(3, device="cuda") * f64, tg.arange(3) * f64)


def test_gradient_of_a_0d_cpu_tensor_used_on_the_device_is_on_the_cpu(xp):
    s = tg.tensor(2.0, dtype=tg.float64, requires_grad=True)
    cpu, dev = pair((3,), requires_grad=True)
    (dev * s).sum().backward()
    assert s.grad.device == tg.device("cpu") and s.grad.dim() == 0
    np.testing.assert_allclose(s.grad.item(), cpu.sum().item())
    same(xp, dev.grad, tg.full((3,), 2.0, dtype=tg.float64))


def test_a_0d_device_tensor_does_not_combine_with_a_cpu_tensor(xp):
    with pytest.raises(RuntimeError, match=MIXED_MESSAGE):
        tg.ones(3) + tg.tensor(1.0, device="cuda")


# -- conversions and printing -------------------------------------------------------------------

def test_numpy_of_a_device_tensor_raises(xp):
    dev = tg.ones(2, device="cuda")
    with pytest.raises(TypeError, match=re.escape(
            "can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu() to copy the "
            "tensor to host memory first.")):
        dev.numpy()
    with pytest.raises(TypeError, match="can't convert cuda:0 device type tensor to numpy"):
        np.asarray(dev)
    np.testing.assert_array_equal(dev.cpu().numpy(), [1.0, 1.0])


def test_python_values_of_a_device_tensor(xp):
    t = tg.tensor([[1.5, -2.0], [3.0, 4.25]], device="cuda")
    assert t.tolist() == [[1.5, -2.0], [3.0, 4.25]]
    assert t[1, 1].item() == 4.25 and type(t[1, 1].item()) is float
    assert float(t[0, 1]) == -2.0 and int(t[1, 0]) == 3 and bool(t[0, 0]) is True
    assert complex(t[0, 0]) == 1.5 + 0j
    i = tg.tensor([7], device="cuda")
    assert i.item() == 7 and type(i.item()) is int and [10, 20, 30, 40, 50, 60, 70, 80][i] == 80
    assert tg.tensor(True, device="cuda").item() is True
    assert f"{t.sum():.2f}" == "6.75"
    assert len(t) == 2 and [r.tolist() for r in t] == t.tolist()
    with pytest.raises(RuntimeError, match="Boolean value of Tensor with more than one value is ambiguous"):
        bool(t)


def test_repr_names_the_device(xp):
    assert repr(tg.tensor([1.0, 2.5], device="cuda")) == "tensor([1.0000, 2.5000], device='cuda:0')"
    assert repr(tg.tensor([1, 2], device="cuda")) == "tensor([1, 2], device='cuda:0')"
    assert repr(tg.tensor(3.0, dtype=tg.float64, device="cuda")) == (
        "tensor(3., device='cuda:0', dtype=tg.float64)".replace("tg.", "tracegrad."))
    x = tg.tensor([1.0, 2.0], device="cuda", requires_grad=True)
    assert repr(x) == "tensor([1., 2.], device='cuda:0', requires_grad=True)"
    assert repr(x * 2) == "tensor([2., 4.], device='cuda:0', grad_fn=<MulBackward0>)"
    assert str(x.sum()) == "tensor(3., device='cuda:0', grad_fn=<SumBackward0>)"
    assert repr(tg.zeros(0, device="cuda")) == "tensor([], device='cuda:0')"
    assert repr(x.cpu()) == "tensor([1., 2.], grad_fn=<ToCopyBackward0>)"
    big = tg.arange(2000, device="cuda")
    assert repr(big) == repr(tg.arange(2000))[:-1] + ", device='cuda:0')"


def test_metadata_of_a_device_tensor(xp):
    cpu, dev = pair((3, 4))
    v = dev.t()
    assert v.stride() == cpu.t().stride() and v.is_contiguous() is False
    assert dev[1:, 2:].storage_offset() == cpu[1:, 2:].storage_offset() == 6
    assert dev.element_size() == 8 and dev.nbytes == 96 and dev.numel() == 12
    assert dev.is_floating_point() and not dev.is_complex()
    assert cpu.type() == "tracegrad.DoubleTensor" and dev.type() == "tracegrad.cuda.DoubleTensor"


# -- saving and pickling -------------------------------------------------------------------------

def _saved(obj, **load_kwargs):
    buffer = io.BytesIO()
    tg.save(obj, buffer)
    buffer.seek(0)
    return tg.load(buffer, **load_kwargs)


def test_save_and_load_device_tensors(xp):
    cpu, dev = pair((2, 3), requires_grad=True)
    state = {"w": dev, "view": dev.detach()[:, 1], "ints": tg.arange(4, device="cuda"), "cpu": cpu}
    back = _saved(state)
    same(xp, back["w"], cpu)
    assert back["w"].requires_grad and back["w"].is_leaf
    same(xp, back["view"], cpu.detach()[:, 1])
    same(xp, back["ints"], tg.arange(4))
    assert back["cpu"].device == tg.device("cpu")
    for location in ("cpu", tg.device("cpu"), {"cuda:0": "cpu"}, lambda t, where: t):
        mapped = _saved(state, map_location=location)
        assert mapped["w"].device == tg.device("cpu") and mapped["ints"].device == tg.device("cpu")
        np.testing.assert_array_equal(mapped["w"].detach().numpy(), cpu.detach().numpy())
    on_device = _saved({"cpu": cpu}, map_location="cuda")
    same(xp, on_device["cpu"], cpu)
    assert on_device["cpu"].requires_grad and on_device["cpu"].is_leaf


def test_pickle_and_deepcopy_device_tensors(xp):
    import copy
    cpu, dev = pair((3,), requires_grad=True)
    for back in (pickle.loads(pickle.dumps(dev)), pickle.loads(pickle.dumps(dev * 2)), copy.deepcopy(dev)):
        on_device(xp, back)
        assert back.is_leaf
    same(xp, pickle.loads(pickle.dumps(dev)), cpu)
    clone = copy.deepcopy(dev)
    clone.data.add_(1)
    same(xp, dev, cpu)  # (a copy)
    dev.grad = tg.ones(3, dtype=tg.float64, device="cuda")
    on_device(xp, copy.deepcopy(dev).grad)


def test_moving_to_another_gpu_index_is_refused_not_ignored(xp):
    t = tg.ones(2, device="cuda")
    assert t.to("cuda:0") is t and t.to("cuda") is t
    with pytest.raises(RuntimeError, match="cuda:1 is not it"):
        t.to("cuda:1")
    with pytest.raises(RuntimeError, match="cuda:1 is not it"):
        tg.nn.Linear(2, 2).to("cuda:1")
