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


def test_cpu_amp_is_pytorchs_deprecated_spelling():
    with pytest.warns(FutureWarning, match=r"`torch.cpu.amp.autocast\(args...\)` is deprecated"):
        with tracegrad.cpu.amp.autocast(enabled=False) as a:
            assert isinstance(a, tracegrad.autocast) and a.device_type == "cpu"
    with pytest.warns(FutureWarning, match=r"`torch.cpu.amp.GradScaler\(args...\)` is deprecated"):
        scaler = tracegrad.cpu.amp.GradScaler()
    assert isinstance(scaler, tracegrad.amp.GradScaler)
    from tracegrad.cpu.amp import autocast  # noqa: F401  (importable as a module, as torch's)
    with pytest.warns(FutureWarning):  # (enabled is the first positional argument, as PyTorch's)
        with tracegrad.cuda.amp.autocast(False) as a:
            assert a._enabled is False and a.device_type == "cuda"


def test_get_autocast_dtype_answers_the_innermost_autocast():
    default = tracegrad.get_autocast_dtype("cpu")
    assert default is tracegrad.bfloat16
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with tracegrad.autocast("cpu", dtype=tracegrad.float16):
            assert tracegrad.get_autocast_dtype("cpu") is tracegrad.float16
            with tracegrad.autocast("cpu"):  # (no dtype: the one in force)
                assert tracegrad.get_autocast_dtype("cpu") is tracegrad.float16
            with tracegrad.autocast("cpu", dtype=tracegrad.bfloat16, enabled=False):
                assert tracegrad.get_autocast_dtype("cpu") is tracegrad.bfloat16
            assert tracegrad.get_autocast_dtype("cpu") is tracegrad.float16
            assert tracegrad.get_autocast_dtype("cuda") is tracegrad.float16
    assert tracegrad.get_autocast_dtype("cpu") is default


def test_grad_scaler_is_exported_at_the_top_level():
    """``torch.GradScaler("cpu")``, PyTorch 2's spelling."""
    assert tracegrad.GradScaler is tracegrad.amp.GradScaler
    scaler = tracegrad.GradScaler("cpu", enabled=False)
    assert not scaler.is_enabled()
