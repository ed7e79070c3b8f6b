"""tracegrad.amp: autocast never lowers precision (and says so); GradScaler scales, unscales,
skips steps on inf/NaN and grows/backs off its scale exactly as PyTorch's."""
import warnings

import numpy as np
import pytest

import tracegrad


def _train(lib, losses_scale, growth_interval=2):
    """A few SGD steps with a GradScaler on 'cpu'; step 2's gradient is made infinite."""
    w = lib.tensor([1.0, -2.0], requires_grad=True)
    opt = lib.optim.SGD([w], lr=0.1)
    scaler = lib.amp.GradScaler("cpu", init_scale=losses_scale, growth_interval=growth_interval)
    scales, weights = [], []
    for step in range(5):
        opt.zero_grad()
        loss = (w * w).sum() * (float("inf") if step == 2 else 1.0)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        scales.append(scaler.get_scale())
        weights.append(w.detach().numpy().copy())
    return scales, weights, scaler.state_dict()


def test_grad_scaler_by_hand():
    scales, weights, state = _train(tracegrad, 8.0)
    assert scales == [8.0, 16.0, 8.0, 8.0, 16.0]
    np.testing.assert_allclose(weights[0], [0.8, -1.6])
    np.testing.assert_array_equal(weights[2], weights[1])  # the infinite step was skipped
    assert state["scale"] == 16.0 and state["_growth_tracker"] == 0


@pytest.mark.torch
def test_grad_scaler_matches_torch():
    import torch
    ours = _train(tracegrad, 4.0)
    theirs = _train(torch, 4.0)
    assert ours[0] == theirs[0]
    for a, b in zip(ours[1], theirs[1]):
        np.testing.assert_allclose(a, b, rtol=1e-6)
    assert ours[2] == theirs[2]


def test_grad_scaler_errors_and_disabled():
    w = tracegrad.ones(1, requires_grad=True)
    opt = tracegrad.optim.SGD([w], lr=0.1)
    scaler = tracegrad.amp.GradScaler("cpu")
    scaler.scale(w.sum()).backward()
    scaler.unscale_(opt)
    with pytest.raises(RuntimeError, match=r"unscale_\(\) has already been called on this optimizer"):
        scaler.unscale_(opt)
    if not tracegrad.cuda.is_available():
        with pytest.warns(UserWarning, match="GradScaler is enabled, but CUDA is not available.  Disabling."):
            off = tracegrad.amp.GradScaler("cuda")
        loss = w.sum()
        assert off.scale(loss) is loss and off.get_scale() == 1.0 and off.state_dict() == {}
    with pytest.warns(FutureWarning, match=r"torch.cuda.amp.GradScaler\(args...\)` is deprecated"):
        tracegrad.cuda.amp.GradScaler(enabled=False)


def test_autocast_is_honest():
    if not tracegrad.cuda.is_available():
        with pytest.warns(UserWarning, match="CUDA is not available or torch_xla is imported. Disabling autocast."):
            tracegrad.autocast(device_type="cuda")
    tracegrad.amp._warned[0] = False
    with pytest.warns(UserWarning, match="does not lower precision"):
        with tracegrad.autocast("cpu"):
            y = tracegrad.ones(2, 2) @ tracegrad.ones(2, 2)
            assert not tracegrad.is_autocast_enabled()
    assert y.dtype is tracegrad.float32
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with tracegrad.autocast("cpu", enabled=False):
            pass
    assert tracegrad.get_autocast_dtype("cuda") is tracegrad.float16
