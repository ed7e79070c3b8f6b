"""ResNet-18 against PyTorch: torchvision is not installed, so the torch side is written out
with ``torch.nn`` under torchvision's names (torch_resnet.py). Every parameter and buffer is copied from the
torch model by ``state_dict``; forward and backward are compared in train and eval mode, as
are the running statistics after a train step and the parameters after SGD steps.

The comparisons run in float64 (rtol 1e-6) on a batch of 2x3x32x32. float32 cannot be
held to rtol 1e-4 there: with two images, layer4's train-mode BatchNorms normalise two
values per channel, and torch's own float32 gradients then differ from its float64 ones by
~2% (ours by the same amount, in different places). The float32 test therefore uses a
batch of 8, where both stay within ~1e-5 of float64, and compares each gradient by the
relative norm of its difference (< 1e-4).
"""
import numpy as np
import pytest

import tracegrad
from tracegrad.models import resnet18

from .torch_resnet import torch_resnet18

pytestmark = pytest.mark.torch


@pytest.fixture(autouse=True)
def _torch_single_thread():
    """torch on one thread: its OpenMP workers spin while NumPy runs, which slows both
    several-fold on a small or busy machine (the test compares values, not speed)."""
    torch = pytest.importorskip("torch")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def npy(t):
    return np.array(t.detach().cpu().numpy(), copy=True)


def paired_models(torch, dtype):
    """A torch ResNet-18 with non-trivial BN statistics and ours, loaded from its state dict."""
    torch.manual_seed(0)
    theirs = torch_resnet18(torch).to(dtype)
    with torch.no_grad():   # BN affine parameters and running stats away from 1/0
        for name, t in theirs.state_dict().items():
            if "bn" in name or "downsample.1" in name:
                if name.endswith(("weight", "running_var")):
                    t.uniform_(0.5, 1.5)
                elif name.endswith(("bias", "running_mean")):
                    t.uniform_(-0.2, 0.2)
    ours = resnet18()
    if dtype == torch.float64:
        ours = ours.double()
    ours.load_state_dict({k: tracegrad.tensor(npy(v)) for k, v in theirs.state_dict().items()})
    return theirs, ours


def run_both(torch, theirs, ours, x, head):
    """Forward and backward of ``(model(x) * head).sum()`` on both; returns the outputs."""
    xt = torch.tensor(x, requires_grad=True)
    xo = tracegrad.tensor(x, requires_grad=True)
    out_t, out_o = theirs(xt), ours(xo)
    (out_t * torch.tensor(head)).sum().backward()
    (out_o * tracegrad.tensor(head)).sum().backward()
    return (out_t, xt), (out_o, xo)


def assert_close(a, b, what, rtol):
    a, b = npy(a), npy(b)
    assert a.shape == b.shape, f"{what}: shape {a.shape} vs {b.shape}"
    np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol * max(1e-12, float(np.abs(b).max())),
                               err_msg=what)


def compare_grads(theirs, ours, rtol):
    grads_t = {n: p.grad for n, p in theirs.named_parameters()}
    grads_o = {n: p.grad for n, p in ours.named_parameters()}
    assert list(grads_o) == list(grads_t)
    for name, grad in grads_t.items():
        assert grads_o[name] is not None, f"{name}: no gradient"
        assert_close(grads_o[name], grad, f"{name}.grad", rtol)


def compare_buffers(theirs, ours, batches):
    bufs_t, bufs_o = dict(theirs.named_buffers()), dict(ours.named_buffers())
    assert list(bufs_o) == list(bufs_t)
    for name, b in bufs_t.items():
        if name.endswith("num_batches_tracked"):
            assert int(bufs_o[name].item()) == int(b.item()) == batches, name
        else:
            assert_close(bufs_o[name], b, name, 1e-6)


def test_train_mode_step_float64():
    """Train mode: output, input and parameter gradients, running statistics; then seed 002's
    training step, SGD(lr=1e-2, momentum=0.9) with zero_grad/backward/step, taken twice so
    that the momentum buffers count, leaves the same parameters and statistics."""
    torch = pytest.importorskip("torch")
    theirs, ours = paired_models(torch, torch.float64)
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 3, 32, 32))
    head = rng.standard_normal((2, 1000))
    (out_t, xt), (out_o, xo) = run_both(torch, theirs, ours, x, head)
    assert out_o.dtype == tracegrad.float64
    assert_close(out_o, out_t, "output", 1e-6)
    assert_close(xo.grad, xt.grad, "input grad", 1e-6)
    compare_grads(theirs, ours, 1e-6)
    compare_buffers(theirs, ours, 1)

    opt_t = torch.optim.SGD(theirs.parameters(), lr=1e-2, momentum=0.9)
    opt_o = tracegrad.optim.SGD(ours.parameters(), lr=1e-2, momentum=0.9)
    opt_t.step()
    opt_o.step()
    data, labels = rng.random((2, 3, 32, 32)), rng.random((2, 1000))
    opt_t.zero_grad()
    opt_o.zero_grad()
    (theirs(torch.tensor(data)) - torch.tensor(labels)).sum().backward()
    (ours(tracegrad.tensor(data)) - tracegrad.tensor(labels)).sum().backward()
    opt_t.step()
    opt_o.step()
    for (name, pt), (_, po) in zip(theirs.named_parameters(), ours.named_parameters()):
        assert_close(po, pt, name, 1e-6)
    compare_buffers(theirs, ours, 2)


def test_eval_mode_float64():
    """Eval mode: the running statistics normalise, and are neither updated nor counted."""
    torch = pytest.importorskip("torch")
    theirs, ours = paired_models(torch, torch.float64)
    theirs.eval()
    ours.eval()
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 3, 32, 32))
    head = rng.standard_normal((2, 1000))
    (out_t, xt), (out_o, xo) = run_both(torch, theirs, ours, x, head)
    assert_close(out_o, out_t, "output", 1e-6)
    assert_close(xo.grad, xt.grad, "input grad", 1e-6)
    compare_grads(theirs, ours, 1e-6)
    compare_buffers(theirs, ours, 0)


def test_forward_backward_float32():
    """float32 (the default dtype), batch 8: outputs agree elementwise (rtol 1e-4), each
    parameter's gradient to a relative norm of 1e-4."""
    torch = pytest.importorskip("torch")
    theirs, ours = paired_models(torch, torch.float32)
    rng = np.random.default_rng(3)
    x = rng.standard_normal((8, 3, 32, 32)).astype(np.float32)
    head = rng.standard_normal((8, 1000)).astype(np.float32)
    (out_t, _), (out_o, _) = run_both(torch, theirs, ours, x, head)
    assert out_o.dtype == tracegrad.float32
    assert_close(out_o, out_t, "output", 1e-4)
    for (name, pt), (_, po) in zip(theirs.named_parameters(), ours.named_parameters()):
        assert po.grad.dtype == tracegrad.float32
        err = np.linalg.norm(npy(po.grad) - npy(pt.grad)) / np.linalg.norm(npy(pt.grad))
        assert err < 1e-4, f"{name}.grad: relative error {err:.2e}"


def test_state_dict_names_and_shapes_match_torchvision():
    torch = pytest.importorskip("torch")
    theirs = torch_resnet18(torch)
    ours = resnet18()
    sd_t, sd_o = theirs.state_dict(), ours.state_dict()
    assert list(sd_o) == list(sd_t)
    for name, t in sd_t.items():
        assert tuple(sd_o[name].shape) == tuple(t.shape), name
        assert str(sd_o[name].dtype).split(".")[-1] == str(t.dtype).split(".")[-1], name
    assert str(ours) == str(theirs).replace("Net(", "ResNet(").replace("Block(", "BasicBlock(")
