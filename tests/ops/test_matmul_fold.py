"""matmul of an N-D by a 2-D operand folds the batch dims into rows (one GEMM) and takes
the 2-D side's gradient as one product of the folded rows: values and gradients against
the per-batch formulas, PyTorch, and second order (the vjp records primitives)."""
import numpy as np
import pytest

import tracegrad as tg

rng = np.random.default_rng(3)


@pytest.mark.parametrize("xshape", [(2, 3, 4), (2, 1, 3, 4), (0, 3, 4), (2, 3, 0)])
def test_nd_by_2d_values_and_gradients_by_hand(xshape):
    x = rng.standard_normal(xshape)
    y = rng.standard_normal((xshape[-1], 5))
    g = rng.standard_normal(xshape[:-1] + (5,))
    tx, ty = tg.tensor(x, requires_grad=True), tg.tensor(y, requires_grad=True)
    out = tx @ ty
    np.testing.assert_allclose(out.detach().numpy(), np.einsum("...k,kn->...n", x, y), atol=1e-12)
    out.backward(tg.tensor(g))
    batch = "abcd"[:len(xshape) - 1]  # the sum over every batch dim of x_b^T g_b
    np.testing.assert_allclose(ty.grad.numpy(), np.einsum(f"{batch}k,{batch}n->kn", x, g), atol=1e-12)
    np.testing.assert_allclose(tx.grad.numpy(), np.einsum("...n,kn->...k", g, y), atol=1e-12)
    assert out.grad_fn.name() == "UnsafeViewBackward0"


def test_second_order_through_the_folded_vjp():
    x = tg.tensor(rng.standard_normal((2, 3, 4)), requires_grad=True)
    y = tg.tensor(rng.standard_normal((4, 5)), requires_grad=True)
    assert tg.autograd.gradcheck(lambda a, b: a @ b, (x, y))
    assert tg.autograd.gradgradcheck(lambda a, b: (a @ b).sin(), (x, y))


@pytest.mark.torch
def test_nd_by_2d_matches_torch_float32():
    import torch
    x = rng.standard_normal((8, 32, 32)).astype(np.float32)
    y = rng.standard_normal((32, 96)).astype(np.float32)
    g = rng.standard_normal((8, 32, 96)).astype(np.float32)
    tx, ty = tg.tensor(x, requires_grad=True), tg.tensor(y, requires_grad=True)
    px, py = torch.tensor(x, requires_grad=True), torch.tensor(y, requires_grad=True)
    (tx @ ty).backward(tg.tensor(g))
    (px @ py).backward(torch.tensor(g))
    np.testing.assert_allclose((tx @ ty).detach().numpy(), (px @ py).detach().numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(ty.grad.numpy(), py.grad.numpy(), rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(tx.grad.numpy(), px.grad.numpy(), rtol=1e-5, atol=1e-5)
