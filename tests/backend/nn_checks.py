"""What the nn/optim device tests share: the comparison of a device result with the CPU's,
moving inputs, and running forward and backward of a module on both devices."""
import copy

import numpy as np

import tracegrad as tg
from tracegrad import nn

TOL = dict(rtol=1e-4, atol=1e-5)


def assert_same(dev, cpu, what="", tol=TOL):
    """``dev`` lives on the device and holds ``cpu``'s values (dtype and shape included)."""
    assert dev.device.type == "cuda", f"{what}: on {dev.device}, not on the device"
    got, want = dev.detach().cpu(), cpu.detach()
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype}, CPU {want.dtype}"
    np.testing.assert_allclose(got.numpy(), want.numpy(), err_msg=what, **tol)


def to_device(value):
    """A tensor's device copy (float tensors become leaves that require grad); others as-is."""
    if not isinstance(value, tg.Tensor):
        return value
    moved = value.detach().to("cuda")
    return moved.requires_grad_() if value.requires_grad else moved


def leaves(obj):
    """The floating-point tensors of a nested output (RNNs give ``(out, (h, c))``)."""
    if isinstance(obj, tg.Tensor):
        return [obj] if obj.is_floating_point() else []
    if isinstance(obj, (tuple, list)):
        return [t for item in obj for t in leaves(item)]
    return []


def backward_with_cotangents(outputs, seed=1):
    """Backward through ``sum(out * v)`` for fixed random ``v`` (drawn on the CPU, so both
    devices get the same): a plain ``sum`` would hide transposed or permuted gradients."""
    gen = tg.Generator().manual_seed(seed)
    total = 0
    for out in outputs:
        v = tg.randn(out.shape, generator=gen, dtype=out.dtype).to(out.device)
        total = total + (out * v).sum()
    total.backward()


def make_inputs(specs):
    """Shapes become float inputs that require grad; tensors (indices, targets) stay."""
    tg.manual_seed(0)
    return [tg.randn(*s).requires_grad_() if isinstance(s, tuple) else s for s in specs]


def compare_module(module, specs, tol=TOL):
    """Forward and backward of ``module`` and of its device copy: outputs, input gradients,
    every parameter gradient and every buffer (running statistics) agree."""
    dev_module = copy.deepcopy(module).to("cuda")
    inputs = make_inputs(specs)
    dev_inputs = [to_device(x) for x in inputs]
    outs, dev_outs = leaves(module(*inputs)), leaves(dev_module(*dev_inputs))
    assert len(outs) == len(dev_outs)
    for i, (d, c) in enumerate(zip(dev_outs, outs)):
        assert_same(d, c, f"output {i}", tol)
    backward_with_cotangents(outs)
    backward_with_cotangents(dev_outs)
    for i, (d, c) in enumerate(zip(dev_inputs, inputs)):
        if c.requires_grad:
            assert_same(d.grad, c.grad, f"input {i} grad", tol)
    assert_same_params(dev_module, module, "parameter", grads=True, tol=tol)
    for (name, b), (_, c) in zip(module.named_buffers(), dev_module.named_buffers()):
        assert_same(c, b, f"buffer {name}", tol)
    return dev_module


def assert_same_params(dev, model, what, grads=False, tol=TOL):
    """Every parameter of ``dev`` (or its gradient) holds ``model``'s on the device."""
    for (name, p), (_, q) in zip(model.named_parameters(), dev.named_parameters()):
        if grads:
            p, q, name = p.grad, q.grad, name + ".grad"
        assert_same(q, p, f"{what}: {name}", tol)


def small_problem():
    """A two-layer network, an input and a target (the same at every call)."""
    tg.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2))
    return model, tg.randn(5, 3), tg.randn(5, 2)


