"""Fake quantization: values on the grid by PyTorch's formula (round half to even, clamped),
the straight-through gradient (1 inside the range, 0 where clamped), PyTorch's errors, and
PyTorch's own bits when it is installed."""
import numpy as np
import pytest

import tracegrad as tg


def test_per_tensor_values_and_straight_through_gradient():
    x = tg.tensor([-3.2, -0.6, 0.04, 0.5, 0.55, 1.0, 2.7, 0.25, 0.35], requires_grad=True)
    y = tg.fake_quantize_per_tensor_affine(x, 0.1, 3, -8, 7)
    xs = x.detach().numpy()
    scale = np.float32(0.1)
    q = np.round(xs * (np.float32(1) / scale) + 3)  # (NumPy rounds half to even, as PyTorch)
    np.testing.assert_array_equal(y.detach().numpy(), (np.clip(q, -8, 7) - 3) * scale)
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), ((q >= -8) & (q <= 7)).astype(np.float32))
    same = tg.fake_quantize_per_tensor_affine(x, tg.tensor(0.1), tg.tensor(3, dtype=tg.int32), -8, 7)
    np.testing.assert_array_equal(same.detach().numpy(), y.detach().numpy())


def test_per_channel():
    x = tg.tensor([[-3.2, -0.6, 0.04], [0.5, 0.55, 1.0]], requires_grad=True)
    y = tg.fake_quantize_per_channel_affine(x, tg.tensor([0.1, 0.2]), tg.tensor([0, 1], dtype=tg.int32), 0, -8, 7)
    scale, zp = np.float32([[0.1], [0.2]]), np.float32([[0], [1]])
    q = np.round(x.detach().numpy() * (1 / scale) + zp)
    np.testing.assert_allclose(y.detach().numpy(), (np.clip(q, -8, 7) - zp) * scale, rtol=1e-6)
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), ((q >= -8) & (q <= 7)).astype(np.float32))


def test_errors_are_pytorchs():
    x = tg.ones(3)
    with pytest.raises(RuntimeError, match="`quant_min` should be less than or"):
        tg.fake_quantize_per_tensor_affine(x, 0.1, 0, 8, 7)
    with pytest.raises(RuntimeError, match="Zero-point must be Int32, Float or Half, found Long"):
        tg.fake_quantize_per_channel_affine(tg.ones(2, 3), tg.tensor([0.1, 0.2]), tg.tensor([0, 1]), 0, -8, 7)


@pytest.mark.torch
def test_bits_are_pytorchs():
    import torch
    r = np.random.default_rng(0)
    for dt in ("float32", "float64"):
        a = r.uniform(-3, 3, 300).astype(dt)
        ours = tg.fake_quantize_per_tensor_affine(tg.tensor(a), 0.1, 3, -8, 7).numpy()
        theirs = torch.fake_quantize_per_tensor_affine(torch.tensor(a), 0.1, 3, -8, 7).numpy()
        np.testing.assert_array_equal(ours, theirs)
        b = r.uniform(-3, 3, (4, 50)).astype(dt)
        args = ([0.1, 0.2, 0.05, 0.3], [0, 1, -2, 5])
        ours = tg.fake_quantize_per_channel_affine(tg.tensor(b), tg.tensor(args[0]), tg.tensor(args[1], dtype=tg.int32),
                                                   0, -128, 127).numpy()
        theirs = torch.fake_quantize_per_channel_affine(torch.tensor(b), torch.tensor(args[0]),
                                                        torch.tensor(args[1], dtype=torch.int32), 0, -128, 127).numpy()
        np.testing.assert_array_equal(ours, theirs)
