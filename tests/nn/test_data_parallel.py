"""nn.DataParallel / nn.parallel.data_parallel with tracegrad's one device: the wrapped
module's results and gradients, PyTorch's state-dict prefix and its CPU behaviour."""
import numpy as np
import pytest

import tracegrad as tg
from tracegrad import nn


def test_data_parallel_on_the_cpu_is_the_module():
    tg.manual_seed(0)
    inner = nn.Linear(3, 2)
    model = nn.DataParallel(inner)
    x = tg.randn(4, 3)
    out = model(x)
    np.testing.assert_allclose(out.detach().numpy(), inner(x).detach().numpy())
    out.sum().backward()
    np.testing.assert_allclose(inner.weight.grad.numpy(), np.tile(x.sum(0).numpy(), (2, 1)), rtol=1e-6)
    assert list(model.state_dict()) == ["module.weight", "module.bias"]
    assert model.device_ids == [] if not tg.cuda.is_available() else [0]
    assert tuple(nn.parallel.data_parallel(inner, x).shape) == (4, 2)


@pytest.mark.skipif(tg.cuda.is_available(), reason="without CUDA, as PyTorch, device ids are ignored")
def test_data_parallel_without_cuda_ignores_device_ids():
    model = nn.DataParallel(nn.Linear(2, 2), device_ids=[0, 1])
    assert model.device_ids == [] and tuple(model(tg.ones(3, 2)).shape) == (3, 2)


@pytest.mark.torch
def test_data_parallel_repr_and_keys_match_torch():
    import torch
    ours, theirs = nn.DataParallel(nn.Linear(3, 2)), torch.nn.DataParallel(torch.nn.Linear(3, 2))
    assert repr(ours) == repr(theirs)
    assert list(ours.state_dict()) == list(theirs.state_dict())
