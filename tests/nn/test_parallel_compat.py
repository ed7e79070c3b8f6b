"""The single-process parallel wrappers (DataParallel, SyncBatchNorm and its converter), the
deprecated Container, and conv_tbc: against PyTorch and by their definitions."""
import numpy as np
import pytest

import tracegrad as tg
from tracegrad import nn
from tracegrad.nn import functional as F

from ._oracle import assert_close, compare_modules, copy_weights

RNG = np.random.default_rng(83)


def test_data_parallel_without_gpus_is_the_module():
    inner = nn.Linear(2, 3)
    wrapped = nn.DataParallel(inner)
    assert wrapped.module is inner and wrapped.device_ids == [] and list(wrapped.state_dict()) == ["module.weight",
                                                                                                    "module.bias"]
    x = tg.randn(4, 2)
    np.testing.assert_array_equal(wrapped(x).detach().numpy(), inner(x).detach().numpy())


def test_sync_batch_norm_is_batch_norm_in_one_process():
    sync, plain = nn.SyncBatchNorm(3).double(), nn.BatchNorm2d(3).double()
    x = tg.tensor(RNG.standard_normal((4, 3, 2, 2)))
    np.testing.assert_allclose(sync(x).detach().numpy(), plain(x).detach().numpy(), atol=1e-12)
    np.testing.assert_allclose(sync.running_var.numpy(), plain.running_var.numpy(), atol=1e-12)
    with pytest.raises(ValueError, match=r"expected at least 2D input \(got 1D input\)"):
        sync(tg.randn(3))
    net = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.Sequential(nn.BatchNorm1d(2)))
    weight, mean = net[1].weight, net[1].running_mean
    converted = nn.SyncBatchNorm.convert_sync_batchnorm(net)
    assert isinstance(converted[1], nn.SyncBatchNorm) and isinstance(converted[2][0], nn.SyncBatchNorm)
    assert converted[1].weight is weight and converted[1].running_mean is mean


@pytest.mark.torch
def test_sync_batch_norm_against_torch():
    import torch
    theirs, ours = torch.nn.SyncBatchNorm(3).double(), nn.SyncBatchNorm(3).double()
    assert repr(ours) == repr(theirs)
    copy_weights(theirs, ours)
    compare_modules(theirs, ours, RNG.standard_normal((4, 3, 5)))


def test_container_warns_and_adds_modules():
    with pytest.warns(FutureWarning, match="`nn.Container` is deprecated"):
        box = nn.Container(fc=nn.Linear(2, 2))
    assert isinstance(box.fc, nn.Linear) and [n for n, _ in box.named_children()] == ["fc"]


@pytest.mark.torch
@pytest.mark.parametrize("pad", [0, 1, 2])
def test_conv_tbc_against_torch(pad):
    import torch
    arrays = [RNG.standard_normal((7, 2, 3)), RNG.standard_normal((3, 3, 4)), RNG.standard_normal(4)]
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    os_ = [tg.tensor(a, requires_grad=True) for a in arrays]
    expected, got = torch.conv_tbc(*ts, pad), F.conv_tbc(*os_, pad)
    assert_close(got, expected, 1e-12, 1e-12)
    g = RNG.standard_normal(tuple(expected.shape))
    expected.backward(torch.tensor(g))
    got.backward(tg.tensor(g))
    for o, t in zip(os_, ts):
        assert_close(o.grad, t.grad, 1e-12, 1e-12)


def test_conv_tbc_by_hand_and_errors():
    x, w, b = RNG.standard_normal((5, 1, 2)), RNG.standard_normal((2, 2, 3)), RNG.standard_normal(3)
    out = F.conv_tbc(tg.tensor(x), tg.tensor(w), tg.tensor(b)).numpy()
    want = np.stack([x[t] @ w[0] + x[t + 1] @ w[1] + b for t in range(4)])
    np.testing.assert_allclose(out, want, atol=1e-12)
    with pytest.raises(RuntimeError, match="Input dim 2 \\(input channels\\) is not == dim 1 in the weight tensor"):
        F.conv_tbc(tg.randn(5, 1, 3), tg.tensor(w), tg.tensor(b))
