"""Operations on the device: indexing, views, in-place writes and autograd (backward,
hooks, higher derivatives, custom Functions, autograd.functional, gradcheck, saved-tensor
hooks, anomaly mode, grad modes), each compared with the same computation on the CPU --
values and gradients. On the stub device any NumPy call on device data raises."""
import re

import numpy as np
import pytest

import tracegrad as tg

from ..runtime._functions import shared_functions
from .eager_checks import MIXED_MESSAGE, check, on_device, pair, same

# -- indexing, views, in-place writes ----------------------------------------------------------

_R = np.random.default_rng(5).standard_normal((4, 5))
_I = np.array([2, 0, 3, 2])
_IDX2 = np.array([[0, 4, 1, 1, 2], [3, 3, 0, 1, 4]])

INDEXING = {
    "slice": lambda x: x[1:3, ::2],
    "row_slice": lambda x: x[-1, 1:],
    "ellipsis_none": lambda x: x[..., None, 2],
    "int_list": lambda x: x[[0, 2, 2]],
    "int_tensor": lambda x: x[tg.tensor(_I, device=x.device)],
    "int_tensor_cpu_index": lambda x: x[tg.tensor(_I)],
    "int_tensor_pair": lambda x: x[tg.tensor(_I, device=x.device), tg.tensor([1, 1, 4, 0], device=x.device)],
    "int_tensor_0d": lambda x: x[tg.tensor(3, device=x.device)],
    "bool_mask": lambda x: x[x > 0],
    "bool_mask_rows": lambda x: x[tg.tensor([True, False, True, True], device=x.device)],
    "bool_mask_cpu": lambda x: x[tg.tensor([True, False, True, True])],
    "index_select": lambda x: x.index_select(1, tg.tensor([4, 0, 0], device=x.device)),
    "gather": lambda x: x.gather(1, tg.tensor(_IDX2, device=x.device)),
    "take_along_dim": lambda x: tg.take_along_dim(x, tg.tensor([[1], [0], [4], [2]], device=x.device), 1),
    "scatter": lambda x: tg.zeros(4, 5, dtype=x.dtype, device=x.device).scatter(
        1, tg.tensor([[0], [2], [4], [1]], device=x.device), x[:, :1]),
    "scatter_add": lambda x: x.scatter_add(1, tg.tensor(_IDX2, device=x.device), x[:2] * 2),
    "masked_fill": lambda x: x.masked_fill(x < 0, 0.5),
    "masked_fill_0d_value": lambda x: x.masked_fill(x < 0, tg.tensor(2.0, dtype=x.dtype, device=x.device)),
    "masked_select": lambda x: x.masked_select(x > 0.2),
    "view": lambda x: x.view(5, 4),
    "reshape": lambda x: x.t().reshape(-1),
    "transpose": lambda x: x.transpose(0, 1),
    "expand": lambda x: x[:1].expand(3, 5),
    "unsqueeze": lambda x: x.unsqueeze(1),
    "narrow_flip": lambda x: x.narrow(1, 1, 3).flip(0),
    "unbind": lambda x: tg.stack(x.unbind(1)[::2]),
    "chunk": lambda x: x.chunk(2, 0)[1],
    "where_scalar": lambda x: tg.where(x > 0, x, 0.0),
    "max_dim": lambda x: x.max(1).values,
    "cumsum": lambda x: x.cumsum(1),
}


@pytest.mark.parametrize("name", sorted(INDEXING))
def test_indexing_on_the_device(xp, name):
    check(xp, INDEXING[name], _R)


def test_integer_results_on_the_device(xp):
    cpu, dev = pair((4, 5))
    same(xp, dev.nonzero(), cpu.nonzero())
    same(xp, (dev > 0).nonzero(), (cpu > 0).nonzero())
    for a, b in zip(tg.nonzero(dev > 0, as_tuple=True), tg.nonzero(cpu > 0, as_tuple=True)):
        same(xp, a, b)
    same(xp, dev.argmax(1), cpu.argmax(1))
    same(xp, (dev > 0).sum(), (cpu > 0).sum())


def test_a_device_index_for_a_cpu_tensor_raises(xp):
    with pytest.raises(RuntimeError, match=re.escape(
            "indices should be either on cpu or on the same device as the indexed tensor (cpu)")):
        tg.ones(3)[tg.tensor([0, 1], device="cuda")]
    with pytest.raises(RuntimeError, match=MIXED_MESSAGE):
        tg.ones(3, device="cuda").index_select(0, tg.tensor([0, 1]))


SETITEM = {
    "scalar": lambda x: x.__setitem__((slice(1, 3), 0), 9.0),
    "tensor": lambda x: x.__setitem__(1, tg.arange(5.0, dtype=x.dtype, device=x.device)),
    "broadcast": lambda x: x.__setitem__((slice(None), slice(1, 3)), tg.tensor([[1.0], [2.0], [3.0], [4.0]],
                                                                        dtype=x.dtype, device=x.device)),
    "mask": lambda x: x.__setitem__(x > 0, 0.0),
    "mask_tensor_0d": lambda x: x.__setitem__(x > 0, tg.tensor(-1.0, dtype=x.dtype, device=x.device)),
    "index_tensor": lambda x: x.__setitem__(tg.tensor([0, 3], device=x.device), 5.0),
    "index_tensor_cpu": lambda x: x.__setitem__(tg.tensor([0, 3]), 5.0),
    "index_put_accumulate": lambda x: x.index_put_((tg.tensor([1, 1, 2], device=x.device),),
                                                   tg.ones(3, 5, dtype=x.dtype, device=x.device), accumulate=True),
    "masked_fill_": lambda x: x.masked_fill_(x > 0.5, 1.0),
    "scatter_": lambda x: x.scatter_(1, tg.tensor([[0], [1], [2], [3]], device=x.device), 8.0),
    "fill_": lambda x: x[2].fill_(4.0),
    "zero_": lambda x: x[:, 1].zero_(),
    "clamp_": lambda x: x.clamp_(-0.5, 0.5),
    "mul_": lambda x: x[1:].mul_(2),
    "add_tensor_": lambda x: x.add_(tg.ones(5, dtype=x.dtype, device=x.device), alpha=2),
}


@pytest.mark.parametrize("name", sorted(SETITEM))
def test_writes_in_place_on_the_device(xp, name):
    def write(x):
        y = x * 1  # (a non-leaf, so in-place writes are recorded)
        SETITEM[name](y)
        return y
    check(xp, write, _R)


def test_views_share_storage_and_version_on_the_device(xp):
    _, dev = pair((3, 4))
    base = dev.clone()
    views = [base.view(12), base.reshape(4, 3), base.t(), base[1:2].expand(2, 4), base.unsqueeze(0),
             base[1], base.detach()]
    base[1, 1] = 100.0
    for v in views:
        on_device(xp, v)
        assert 100.0 in v.cpu().flatten().tolist()
        assert v._version == base._version == 1
    views[0][0] = -7.0
    assert base[0, 0].item() == -7.0 and base._version == 2
    assert views[2]._base is base and views[2].is_contiguous() is False
    c = base.t().contiguous()
    c[0, 0] = 55.0
    assert base[0, 0].item() == -7.0


def test_in_place_on_a_device_view_updates_the_graph(xp):
    def fn(x):
        y = x.clone()
        y[1:3].mul_(x[:2])
        y.t()[0].exp_()
        return y
    check(xp, fn, _R)


def _version_error(device):
    x = tg.randn(3, device=device, requires_grad=True)
    y = x.exp()
    y.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation") as e:
        y.sum().backward()
    return str(e.value)


def test_saved_tensor_modified_in_place_on_the_device_raises(xp):
    cpu_message = _version_error("cpu")
    assert "[tracegrad.FloatTensor [3]]" in cpu_message
    assert _version_error("cuda") == cpu_message.replace("tracegrad.Float", "tracegrad.cuda.Float")


def test_copy_across_devices_is_differentiable(xp):
    src_cpu = tg.tensor([1.0, 2.0, 3.0], dtype=tg.float64, requires_grad=True)
    dst = tg.zeros(2, 3, dtype=tg.float32, device="cuda")
    y = dst.clone().copy_(src_cpu)  # (broadcast, cast and moved)
    same(xp, y, tg.tensor([[1.0, 2.0, 3.0]] * 2))
    (y * tg.tensor([1.0, 10.0, 100.0], device="cuda")).sum().backward()
    assert src_cpu.grad.device == tg.device("cpu") and src_cpu.grad.dtype == tg.float64
    np.testing.assert_allclose(src_cpu.grad.numpy(), [2.0, 20.0, 200.0])

    cpu, dev = pair((3,), requires_grad=True)
    back = tg.zeros(3, dtype=tg.float64).copy_(dev * 2)
    assert back.device == tg.device("cpu") and type(back.grad_fn).__name__ == "CopyBackwards"
    back.pow(2).sum().backward()
    same(xp, dev.grad, 8 * cpu.detach())


def test_setitem_of_a_cpu_tensor_into_a_device_tensor(xp):
    cpu, dev = pair((3, 4), requires_grad=True)
    row = tg.tensor([1.0, 2.0, 3.0, 4.0], dtype=tg.float64, requires_grad=True)
    y = dev * 1
    y[1] = row
    y[0, :2] = tg.tensor(7.0)  # (a CPU scalar)
    want = cpu.detach().clone()
    want[1] = row.detach()
    want[0, :2] = 7.0
    same(xp, y, want)
    y.sum().backward()
    np.testing.assert_array_equal(row.grad.numpy(), np.ones(4))
    same(xp, dev.grad, tg.tensor([[0, 0, 1, 1], [0, 0, 0, 0], [1, 1, 1, 1]], dtype=tg.float64))


# -- autograd on the device ----------------------------------------------------------------------

def _function(x, w):
    return (tg.tanh(x @ w) * x[:, :1]).exp().sum(1).log()


def test_backward_on_the_device(xp):
    w = np.random.default_rng(2).standard_normal((5, 3))
    out = check(xp, _function, _R, w)
    assert type(out.grad_fn).__name__ == "LogBackward0"


def test_gradient_argument_on_the_device(xp):
    cpu, dev = pair((3,), requires_grad=True)
    g = tg.tensor([1.0, -2.0, 0.5], dtype=tg.float64)
    (cpu * cpu).backward(g)
    (dev * dev).backward(g.cuda())
    same(xp, dev.grad, cpu.grad)
    dev.grad = None
    with pytest.raises(RuntimeError, match="invalid gradient at index 0 - expected device cuda:0 but got cpu"):
        (dev * dev).backward(g)
    (dev * 3).sum().backward(tg.tensor(2.0, dtype=tg.float64))  # (a 0-d CPU seed moves)
    same(xp, dev.grad, tg.full((3,), 6.0, dtype=tg.float64))
    (y,) = tg.autograd.grad(dev.exp(), dev, tg.ones(3, dtype=tg.float64, device="cuda"))
    same(xp, y, cpu.exp())


def test_retain_grad_and_hooks_on_the_device(xp):
    cpu, dev = pair((4,), requires_grad=True)
    seen = []
    results = {}
    for name, x in (("cpu", cpu), ("cuda", dev)):
        y = x.sin()
        y.retain_grad()
        y.register_hook(lambda g, name=name: seen.append((name, g.device.type)) or g * 3)
        x.register_hook(lambda g: g + 1)
        (y * y).sum().backward()
        results[name] = y
    assert seen == [("cpu", "cpu"), ("cuda", "cuda")]
    same(xp, results["cuda"].grad, results["cpu"].grad)
    same(xp, dev.grad, cpu.grad)


def test_double_backward_and_autograd_grad_on_the_device(xp):
    grads = {}
    for device in ("cpu", "cuda"):
        x = tg.tensor(_R[0], device=device, requires_grad=True)
        y = (x ** 3).sin().sum()
        (g,) = tg.autograd.grad(y, x, create_graph=True)
        (gg,) = tg.autograd.grad(g.sum(), x)
        grads[device] = (g, gg)
    same(xp, grads["cuda"][0], grads["cpu"][0])
    same(xp, grads["cuda"][1], grads["cpu"][1])


def test_custom_function_on_the_device(xp):
    cube = shared_functions(tg).Cube
    out = check(xp, lambda x: cube.apply(x * 2).sum(0), _R)
    assert type(out.grad_fn).__name__ == "SumBackward1"


FUNCTIONAL = {
    "jacobian": lambda x: tg.autograd.functional.jacobian(lambda a: a.exp() * a.sum(), x),
    "hessian": lambda x: tg.autograd.functional.hessian(lambda a: (a ** 3).sum(), x),
    "vjp": lambda x: tg.autograd.functional.vjp(lambda a: a.sin(), x, tg.ones_like(x))[1],
    "jvp": lambda x: tg.autograd.functional.jvp(lambda a: a.sin() * 2, x, tg.ones_like(x))[1],
    "hvp": lambda x: tg.autograd.functional.hvp(lambda a: (a ** 4).sum(), x, x)[1],
}


@pytest.mark.parametrize("name", sorted(FUNCTIONAL))
def test_autograd_functional_on_the_device(xp, name):
    check(xp, FUNCTIONAL[name], _R[0], grad=False)


def test_gradcheck_on_the_device(xp):
    x = tg.tensor(_R[:2, :3], device="cuda", requires_grad=True)
    w = tg.tensor(_R[2:, :3].T, device="cuda", requires_grad=True)
    assert tg.autograd.gradcheck(lambda a, b: (a @ b).tanh(), (x, w))
    assert tg.autograd.gradgradcheck(lambda a: (a ** 3).sum(1), (x,))
    with pytest.raises(tg.autograd.GradcheckError, match="Jacobian mismatch"):
        tg.autograd.gradcheck(_Wrong.apply, (x,))


class _Wrong(tg.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        return g * 3


def test_saved_tensors_hooks_on_the_device(xp):
    packed = []

    def pack(t):
        packed.append(t.device.type)
        return t

    def check_hooked(x):
        with tg.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            return (x.exp() * x).sin()
    check(xp, check_hooked, _R)
    assert set(packed) == {"cpu", "cuda"}


def test_save_on_cpu_keeps_device_values_on_the_host(xp):
    def through(x):
        with tg.autograd.graph.save_on_cpu():
            return (x * x.cos()).exp()
    check(xp, through, _R)
    x = tg.tensor(_R, device="cuda", requires_grad=True)
    node = through(x).grad_fn
    device, saved = node._out[0].value  # (exp's result, packed: its device and a CPU copy)
    assert device == tg.device("cuda", 0) and saved.device == tg.device("cpu")
    on_device(xp, node._saved_result)


@pytest.mark.filterwarnings("ignore:Anomaly Detection has been enabled", "ignore:Error detected in",
                            "ignore:invalid value encountered")
def test_anomaly_mode_on_the_device(xp):
    x = tg.tensor([1.0, 0.0], device="cuda", requires_grad=True)
    with tg.autograd.detect_anomaly():
        y = (x.sqrt() * 0).sum()
        with pytest.raises(RuntimeError, match="Function 'SqrtBackward0' returned nan values in its 0th output"):
            y.backward()


def test_no_grad_and_inference_mode_on_the_device(xp):
    x = tg.ones(3, device="cuda", requires_grad=True)
    with tg.no_grad():
        y = x * 2
    assert not y.requires_grad and y.grad_fn is None
    on_device(xp, y)
    with tg.inference_mode():
        z = x.cuda() * 2
        moved = x.cpu()
    assert z.is_inference() and moved.is_inference() and not moved.requires_grad
    on_device(xp, z)
    with pytest.raises(RuntimeError, match="Inference tensors cannot be saved for backward"):
        (x * z).sum().backward()


def test_assigning_a_gradient_from_another_device_raises(xp):
    x = tg.zeros(3, device="cuda", requires_grad=True)
    with pytest.raises(RuntimeError, match=re.escape(
            "attempting to assign a gradient with device type 'cpu' to a tensor with device type "
            "'cuda'. Please ensure that the gradient and the tensor are on the same device")):
        x.grad = tg.ones(3)
    x.grad = tg.ones(3, device="cuda")
    (x * 2).sum().backward()
    same(xp, x.grad, tg.full((3,), 3.0))


def test_post_accumulate_and_node_hooks_on_the_device(xp):
    x = tg.ones(3, device="cuda", requires_grad=True)
    seen = []
    x.register_post_accumulate_grad_hook(lambda t: seen.append(("post", t.grad.device.type)))
    y = x.exp()
    y.grad_fn.register_hook(lambda gi, go: seen.append(("node", gi[0].device.type, go[0].device.type)))
    y.grad_fn.register_prehook(lambda go: (go[0] * 2,))
    y.sum().backward()
    assert seen == [("node", "cuda", "cuda"), ("post", "cuda")]
    same(xp, x.grad, 2 * tg.ones(3).exp())


class _TwoOutputs(tg.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2, x.sum(0)

    @staticmethod
    def backward(ctx, ga, gb):
        return ga * 2 + gb  # (gb: zeros made on the device when the output is unused)


def test_custom_function_with_an_unused_output_on_the_device(xp):
    check(xp, lambda x: _TwoOutputs.apply(x)[0], _R)
    check(xp, lambda x: _TwoOutputs.apply(x)[1], _R)


def test_jacobian_with_an_empty_output_on_the_device(xp):
    jac = tg.autograd.functional.jacobian(lambda a: (a[:0] * 2, a.sum()), tg.ones(2, device="cuda"))
    same(xp, jac[0], tg.zeros(0, 2))
    same(xp, jac[1], tg.ones(2))


# -- gradients accumulated into .grad, views, atomic adds of every dtype --------------------------

ACCUMULATED = {  # (each gradient reaches the leaf in another shape of memory)
    "fresh": lambda x: (x * x).sum(),
    "broadcast": lambda x: x.sum(),  # (sum's gradient: one value broadcast)
    "strided_view": lambda x: (x[1:].unsqueeze(0) * 3).sum(),
    "expanded": lambda x: x.unsqueeze(0).expand(2, 3, 4).sum(),
    "transposed": lambda x: (x.t() @ tg.ones(3, 2, dtype=x.dtype, device=x.device)).sum(),
}


@pytest.mark.parametrize("name", sorted(ACCUMULATED))
def test_two_backward_passes_accumulate_into_the_device_grad(xp, name):
    cpu, dev = pair((3, 4), requires_grad=True)
    for _ in range(2):
        ACCUMULATED[name](cpu).backward()
        ACCUMULATED[name](dev).backward()
        same(xp, dev.grad, cpu.grad)
    assert 0 not in dev.grad.stride()  # (a broadcast view adopted as .grad would be wrong)


def test_storage_offset_of_strided_device_views_is_the_cpus(xp):
    cpu, dev = pair((4, 3))
    for view in (lambda x: x[2:].unsqueeze(0), lambda x: x[1:, 1:].diagonal(), lambda x: x[1:][None, 1]):
        assert view(dev).storage_offset() == view(cpu).storage_offset() > 0


def test_a_leaf_grad_never_adopts_a_view_of_the_callers_gradient(xp):
    def grads(device):
        x = tg.ones(1, 3, dtype=tg.float64, device=device, requires_grad=True)
        g = tg.tensor([1.0, 2.0, 3.0], dtype=tg.float64, device=device)
        x.squeeze(0).backward(g)  # (reaches x through unsqueeze: a strided view of g)
        g.add_(100.0)  # (must not show in x.grad)
        return x.grad
    same(xp, grads("cuda"), grads("cpu"))


def test_accumulating_into_an_expanded_device_grad_writes_no_broadcast_view(xp):
    def grad(device):
        x = tg.ones(3, 4, dtype=tg.float64, device=device, requires_grad=True)
        x.grad = tg.zeros(1, 4, dtype=tg.float64, device=device).expand(3, 4)
        (x * tg.arange(12.0, dtype=tg.float64, device=device).view(3, 4)).sum().backward()
        return x.grad
    same(xp, grad("cuda"), grad("cpu"))


_WIDE_VALUES = np.array([[5, -7, 2 ** 40], [-(2 ** 40), 37, 99]])  # (wrap in small dtypes)
SCATTERS = {
    "index_put_accumulate": lambda t, v: t.index_put_((tg.tensor([1, 1], device=t.device),), v,
                                                      accumulate=True),
    "scatter_add_": lambda t, v: t.scatter_add_(0, tg.tensor([[1, 1, 2], [1, 0, 2]], device=t.device), v),
}


@pytest.mark.parametrize("dtype", ["int64", "int8", "uint8", "bool", "float16", "complex64"])
@pytest.mark.parametrize("name", sorted(SCATTERS))
def test_accumulating_writes_of_every_dtype_on_the_device(xp, name, dtype):
    dtype = getattr(tg, dtype)
    values = _WIDE_VALUES * (1 + 2j) if dtype.is_complex else _WIDE_VALUES
    if dtype.is_floating_point:
        values = values % 1000  # (within float16)

    def run(device):
        start = tg.tensor(np.arange(12).reshape(4, 3) % 3, device=device).to(dtype)
        return SCATTERS[name](start, tg.tensor(values, device=device).to(dtype))
    same(xp, run("cuda"), run("cpu"), rtol=0, atol=0)


@pytest.mark.parametrize("dtype", ["float16", "float64"])
def test_embedding_backward_accumulates_repeated_rows_on_the_device(xp, dtype):
    weights = np.random.default_rng(2).standard_normal((5, 3))
    check(xp, lambda w: tg.nn.functional.embedding(tg.tensor([[1, 4, 1], [1, 0, 4]], device=w.device),
                                                   w.to(getattr(tg, dtype))), weights)
