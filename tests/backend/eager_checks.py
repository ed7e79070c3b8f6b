"""Checks shared by the eager device tests: a device tensor must hold the values, dtype
and shape the same computation gives on the CPU, in an array of the device namespace."""
import re

import numpy as np

import tracegrad as tg

MIXED_MESSAGE = re.escape("Expected all tensors to be on the same device, but found at least two "
                          "devices, cuda:0 and cpu!")


def on_device(xp, t):
    """Assert ``t`` is a tensor held by the device namespace (not a NumPy array)."""
    assert isinstance(t, tg.Tensor)
    assert str(t.device) == "cuda:0" and t.is_cuda
    assert isinstance(t._data, xp.ndarray) and not isinstance(t._data, np.ndarray)


def same(xp, dev, cpu, rtol=1e-6, atol=1e-7):
    """``dev`` (a device tensor) holds ``cpu``'s values, dtype and shape."""
    on_device(xp, dev)
    assert dev.dtype == cpu.dtype and dev.shape == cpu.shape
    np.testing.assert_allclose(xp.to_host(dev.detach()._data), cpu.detach().numpy(), rtol=rtol, atol=atol)


def pair(shape=(3, 4), seed=0, dtype=tg.float64, requires_grad=False):
    """The same random values as a CPU tensor and a device tensor (both leaves)."""
    values = np.random.default_rng(seed).standard_normal(shape)
    cpu = tg.tensor(values, dtype=dtype, requires_grad=requires_grad)
    dev = tg.tensor(values, dtype=dtype, device="cuda", requires_grad=requires_grad)
    return cpu, dev


def check(xp, fn, *values, grad=True):
    """Run ``fn`` on CPU tensors and on device tensors made from ``values`` (NumPy arrays;
    the floating ones require grad when ``grad``); the device's results and gradients
    must be the CPU's, on the device."""
    def leaves(device):
        return [tg.tensor(v, device=device, requires_grad=grad and v.dtype.kind == "f") for v in values]
    cpu_in, dev_in = leaves("cpu"), leaves("cuda")
    cpu_out, dev_out = fn(*cpu_in), fn(*dev_in)
    same(xp, dev_out, cpu_out)
    if grad and cpu_out.requires_grad:
        weights = np.random.default_rng(1).standard_normal(cpu_out.shape)
        (cpu_out * tg.tensor(weights)).sum().backward()
        (dev_out * tg.tensor(weights, device="cuda")).sum().backward()
        for c, d in zip(cpu_in, dev_in):
            if c.requires_grad:
                same(xp, d.grad, c.grad)
    return dev_out
