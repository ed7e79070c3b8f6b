"""vmap of samples times a shared matrix is one matrix product over the stacked batch, so it
equals the unbatched program on the stacked input exactly (PyTorch's jacobians tutorial
asserts this with allclose in float32, where a loop of vector products differs by rounding)."""
import numpy as np

import tracegrad as tg
from tracegrad.func import jacrev, vmap
from tracegrad.nn import functional as F


def predict(weight, bias, x):
    return F.linear(x, weight, bias).tanh()


def test_batched_jacobian_equals_the_summed_output_jacobian():
    rng = np.random.default_rng(0)
    weight, bias = tg.tensor(rng.standard_normal((33, 31)), dtype=tg.float32), tg.tensor(rng.standard_normal(33), dtype=tg.float32)
    x = tg.tensor(rng.standard_normal((64, 31)), dtype=tg.float32)
    batched = vmap(jacrev(predict, argnums=2), in_dims=(None, None, 0))(weight, bias, x)
    summed = jacrev(lambda w, b, v: predict(w, b, v).sum(0), argnums=2)(weight, bias, x).movedim(1, 0)
    assert tuple(batched.shape) == (64, 33, 31)
    assert tg.allclose(batched, summed)
    np.testing.assert_array_equal(batched.numpy(), summed.numpy())


def test_shared_matrix_products_of_vectors_and_stacks():
    rng = np.random.default_rng(1)
    w = tg.tensor(rng.standard_normal((6, 5)))
    for shape in [(7, 6), (7, 3, 6), (0, 6), (7, 0, 6)]:
        x = tg.tensor(rng.standard_normal(shape))
        out = vmap(lambda v: v @ w)(x)
        loop = [x[i] @ w for i in range(shape[0])]
        assert tuple(out.shape) == shape[:-1] + (5,)
        if loop:
            np.testing.assert_allclose(out.numpy(), tg.stack(loop).numpy(), rtol=1e-12, atol=1e-12)
