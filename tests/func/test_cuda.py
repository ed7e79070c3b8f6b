"""The transforms on CUDA tensors (CuPy): per-sample gradients of a small conv net equal
those computed on the CPU. Skipped where no GPU is."""
import warnings

import numpy as np
import pytest

import tracegrad as tg
from tracegrad.func import functional_call, grad, vmap

pytestmark = pytest.mark.skipif(not tg.cuda.is_available(), reason="no CUDA device")


def test_per_sample_grads_on_cuda_equal_the_cpu():
    tg.manual_seed(0)
    m = tg.nn.Sequential(tg.nn.Conv2d(1, 3, 3), tg.nn.ReLU(), tg.nn.MaxPool2d(2), tg.nn.Flatten(),
                         tg.nn.Linear(27, 3))
    params = {k: v.detach() for k, v in m.named_parameters()}
    x, y = tg.randn(4, 1, 8, 8), tg.tensor([0, 1, 2, 1])

    def loss(p, xb, yb):
        return tg.nn.functional.cross_entropy(functional_call(m, p, (xb.unsqueeze(0),)), yb.unsqueeze(0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cpu = vmap(grad(loss), in_dims=(None, 0, 0))(params, x, y)
        m.cuda()
        gpu = vmap(grad(loss), in_dims=(None, 0, 0))({k: v.cuda() for k, v in params.items()}, x.cuda(), y.cuda())
    for k in cpu:
        assert gpu[k].is_cuda
        np.testing.assert_allclose(gpu[k].cpu().numpy(), cpu[k].numpy(), rtol=1e-4, atol=1e-5)
