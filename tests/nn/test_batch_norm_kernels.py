"""Batch norm's array kernels (tracegrad.rules.batch_norm_kernels): the forward equals the
composite formula (_moments, _affine), and the first-order backward (which takes the
kernel) equals the one recorded with ``create_graph=True`` (which takes the composite
vjp), also with cotangents on the mean and invstd outputs, for 2-d to 5-d inputs, with and
without weight and bias; and (marked ``torch``) values and gradients against PyTorch on
resnet-like shapes."""
import numpy as np
import pytest

import tracegrad as tg
from tracegrad.backend import cpu
from tracegrad.rules import batch_norm_kernels as kernels
from tracegrad.rules import nn as nn_rules

from ._oracle import assert_close

RNG = np.random.default_rng(31)
SHAPES = [(6, 3), (4, 5, 7), (3, 4, 5, 6), (2, 3, 2, 3, 4)]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("affine", [True, False])
def test_forward_equals_the_composite_formula(shape, affine):
    x = RNG.standard_normal(shape) * 3 + 2
    w, b = (RNG.standard_normal(shape[1]) for _ in range(2)) if affine else (None, None)
    out, mean, invstd = kernels.batch_norm_forward(cpu, x, w, b, 1e-3, nn_rules._moments)
    centered, m, inv = nn_rules._moments(cpu, x, nn_rules._bn_axes(x), 1e-3)
    k = nn_rules._channel_shape(x)
    ref = nn_rules._affine(cpu, centered, inv, None if w is None else w.reshape(k), None if b is None else b.reshape(k))
    np.testing.assert_allclose(out, ref, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(mean, m.reshape(-1), rtol=1e-12)
    np.testing.assert_allclose(invstd, inv.reshape(-1), rtol=1e-12)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("affine", [True, False])
def test_first_order_backward_equals_the_recorded_one(shape, affine):
    """Cotangents on all three outputs: output, mean and invstd."""
    x = tg.tensor(RNG.standard_normal(shape) * 3 + 2, requires_grad=True)
    w = tg.tensor(RNG.standard_normal(shape[1]), requires_grad=True) if affine else None
    b = tg.tensor(RNG.standard_normal(shape[1]), requires_grad=True) if affine else None
    gy, gm, gi = (tg.tensor(RNG.standard_normal(s)) for s in (shape, shape[1], shape[1]))
    inputs = [t for t in (x, w, b) if t is not None]
    grads = []
    for create_graph in (False, True):
        out, mean, invstd = nn_rules.batch_norm(x, w, b, eps=1e-3)
        loss = (out * gy).sum() + (mean * gm).sum() + (invstd * gi).sum()
        grads.append(tg.autograd.grad(loss, inputs, create_graph=create_graph))
    for fast, composite in zip(*grads):
        np.testing.assert_allclose(fast.detach().numpy(), composite.detach().numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.torch
@pytest.mark.parametrize("shape", [(8, 64, 4, 4), (4, 32, 16, 16), (8, 512, 2, 2)])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_values_and_gradients_against_pytorch(shape, dtype):
    import torch
    x = (RNG.standard_normal(shape) * 2 + 1).astype(dtype)
    w, b = RNG.standard_normal(shape[1]).astype(dtype), RNG.standard_normal(shape[1]).astype(dtype)
    g = RNG.standard_normal(shape).astype(dtype)
    results = []
    for lib in (tg, torch):
        args = [lib.tensor(a, requires_grad=True) for a in (x, w, b)]
        y = lib.nn.functional.batch_norm(args[0], None, None, args[1], args[2], training=True)
        y.backward(lib.tensor(g))
        results.append([y] + [a.grad for a in args])
    for ours, theirs in zip(*results):
        assert_close(ours, theirs, rtol=2e-4 if dtype == "float32" else 1e-9)
