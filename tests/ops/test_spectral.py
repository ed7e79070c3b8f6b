"""``stft``/``istft``: values against frames cut, windowed and transformed by hand with NumPy,
the inverse recovering the signal, gradients by finite differences, PyTorch's errors -- and
PyTorch's own values when it is installed."""
import numpy as np
import pytest

import tracegrad as tg

RNG = np.random.default_rng(0)
X = RNG.standard_normal((2, 100))


def _by_hand(x, n_fft, hop, window, center=True, pad_mode="reflect", normalized=False, onesided=True):
    if center:
        x = np.pad(x, [(0, 0), (n_fft // 2, n_fft // 2)], mode=pad_mode)
    n = 1 + (x.shape[-1] - n_fft) // hop
    frames = np.stack([x[:, i * hop:i * hop + n_fft] for i in range(n)], axis=1) * window
    spec = np.fft.rfft(frames, axis=-1) if onesided else np.fft.fft(frames, axis=-1)
    if normalized:
        spec = spec / np.sqrt(n_fft)
    return np.swapaxes(spec, -1, -2)


def _hann(n):
    return tg.hann_window(n, dtype=tg.float64)


@pytest.mark.parametrize("case", [
    dict(n_fft=16), dict(n_fft=16, hop_length=5, win_length=12, window="hann"),
    dict(n_fft=16, center=False, window="hann"), dict(n_fft=15, pad_mode="constant", normalized=True),
    dict(n_fft=16, onesided=False, window="hann")])
def test_stft_is_windowed_frames_transformed(case):
    kw = dict(case)
    n_fft, hop = kw["n_fft"], kw.get("hop_length", kw["n_fft"] // 4)
    win_length = kw.get("win_length", n_fft)
    window = np.ones(win_length)
    if kw.get("window") == "hann":
        kw["window"] = _hann(win_length)
        window = kw["window"].numpy()
    left = (n_fft - win_length) // 2
    full = np.zeros(n_fft)
    full[left:left + win_length] = window
    got = tg.stft(tg.tensor(X), return_complex=True, **kw)
    want = _by_hand(X, n_fft, hop, full, kw.get("center", True), kw.get("pad_mode", "reflect"),
                    kw.get("normalized", False), kw.get("onesided", True))
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(tg.stft(tg.tensor(X[0]), return_complex=True, **kw).numpy(), want[0], atol=1e-12)


def test_istft_recovers_the_signal():
    w = _hann(16)
    spec = tg.stft(tg.tensor(X), 16, window=w, return_complex=True)
    np.testing.assert_allclose(tg.istft(spec, 16, window=w).numpy(), X, atol=1e-12)
    np.testing.assert_allclose(tg.istft(spec, 16, window=w, length=90).numpy(), X[:, :90], atol=1e-12)
    full = tg.stft(tg.tensor(X), 16, window=w, onesided=False, return_complex=True)
    np.testing.assert_allclose(tg.istft(full, 16, window=w, onesided=False).numpy(), X, atol=1e-12)
    with pytest.warns(UserWarning, match="A window was not provided"):
        rect = tg.istft(tg.stft(tg.tensor(X[0]), 16, return_complex=True), 16)
    np.testing.assert_allclose(rect.numpy(), X[0], atol=1e-12)


def test_gradients():
    x = tg.tensor(RNG.standard_normal(40), requires_grad=True)
    w = _hann(8)
    assert tg.autograd.gradcheck(lambda v: tg.stft(v, 8, hop_length=3, window=w, return_complex=True).abs(), (x,))
    spec = tg.tensor(np.fft.rfft(RNG.standard_normal((5, 8)), axis=-1).T.copy(), requires_grad=True)
    assert tg.autograd.gradcheck(lambda s: tg.istft(s, 8, hop_length=2, window=w), (spec,))


def test_errors_are_pytorchs():
    with pytest.raises(RuntimeError, match="stft requires the return_complex parameter be given for real inputs"):
        tg.stft(tg.tensor(X), 16)
    with pytest.raises(RuntimeError, match="window overlap add min"):
        tg.istft(tg.stft(tg.tensor(X), 16, center=False, window=_hann(16), return_complex=True), 16,
                 center=False, window=_hann(16))
    with pytest.raises(RuntimeError, match="istft requires a complex-valued input tensor"):
        tg.istft(tg.tensor(X), 16)
    with pytest.warns(UserWarning, match="stft with return_complex=False is deprecated"):
        pairs = tg.stft(tg.tensor(X[0]), 16, return_complex=False)
    assert tuple(pairs.shape) == (9, 26, 2)


@pytest.mark.torch
def test_as_in_pytorch():
    import torch
    for kw in (dict(n_fft=16), dict(n_fft=16, hop_length=5, win_length=12), dict(n_fft=15, normalized=True)):
        win = kw.get("win_length", kw["n_fft"])
        ours = tg.stft(tg.tensor(X), window=_hann(win), return_complex=True, **kw)
        theirs = torch.stft(torch.tensor(X), window=torch.hann_window(win, dtype=torch.float64), return_complex=True, **kw)
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), atol=1e-12)
        back = tg.istft(ours, window=_hann(win), length=97, **kw)
        their_back = torch.istft(theirs, window=torch.hann_window(win, dtype=torch.float64), length=97, **kw)
        np.testing.assert_allclose(back.numpy(), their_back.numpy(), atol=1e-12)
