"""``stft`` and ``istft``: the short-time Fourier transform and its inverse, as PyTorch's.

Both are written with differentiable operations (padding, ``unfold``, the FFT rules,
``fold``), so gradients flow through them in every mode. ``stft`` pads the signal by
``n_fft // 2`` each side when ``center`` (``pad_mode``), cuts it into frames ``hop_length``
apart, multiplies each by the window (zero-padded to ``n_fft`` in the middle when shorter)
and transforms it: ``(..., n_freq, n_frames)`` complex values, ``n_freq = n_fft // 2 + 1``
when ``onesided``. ``istft`` inverts it by overlap-add, divided by the summed squared window
(which must not vanish anywhere: the NOLA condition), and trims the centring padding.
"""
import math
import warnings


__all__ = ["stft", "istft"]


def _window(window, win_length, n_fft, like, name):
    """The window as ``n_fft`` values: ones by default, a shorter one centred in zeros."""
    from ..runtime.creation import ones, zeros
    if window is None:
        window = ones(win_length, dtype=like)
    if window.ndim != 1 or window.shape[0] != win_length:
        raise RuntimeError(f"{name}: expected a 1D window tensor of size equal to win_length={win_length}, but "
                           f"got window with size {list(window.shape)}")
    if win_length == n_fft:
        return window
    left = (n_fft - win_length) // 2
    from .shape import cat
    return cat([zeros(left, dtype=window.dtype), window, zeros(n_fft - win_length - left, dtype=window.dtype)])


def _lengths(name, n_fft, hop_length, win_length):
    hop_length = n_fft // 4 if hop_length is None else hop_length
    win_length = n_fft if win_length is None else win_length
    if n_fft <= 0 or hop_length <= 0 or not 0 < win_length <= n_fft:
        raise RuntimeError(f"{name}: expected 0 < n_fft, 0 < hop_length and 0 < win_length <= n_fft, but got "
                           f"n_fft={n_fft}, hop_length={hop_length}, win_length={win_length}")
    return hop_length, win_length


def stft(input, n_fft, hop_length=None, win_length=None, window=None, center=True, pad_mode="reflect",
         normalized=False, onesided=None, return_complex=None):
    """The short-time Fourier transform of ``input`` (a signal ``(L,)`` or a batch ``(B, L)``):
    ``(..., n_freq, n_frames)`` (see the module docstring)."""
    from .. import fft
    from ..nn import functional as F
    if return_complex is None and not input.is_complex() and not (window is not None and window.is_complex()):
        raise RuntimeError("stft requires the return_complex parameter be given for real inputs, and will further "
                           "require that return_complex=True in a future PyTorch release.")
    if input.ndim not in (1, 2):
        raise RuntimeError(f"stft: expected a 1D or 2D tensor, but got {input.ndim}D tensor")
    hop_length, win_length = _lengths("stft", n_fft, hop_length, win_length)
    x = input if input.ndim == 2 else input.unsqueeze(0)
    if center:
        pad = n_fft // 2
        x = F.pad(x.unsqueeze(1), (pad, pad), mode=pad_mode).squeeze(1)
    if x.shape[-1] < n_fft:
        raise RuntimeError(f"stft: expected 0 < n_fft <= {x.shape[-1]}, but got n_fft={n_fft}")
    real_dtype = input.dtype.to_real() if input.is_complex() else input.dtype
    frames = x.unfold(-1, n_fft, hop_length) * _window(window, win_length, n_fft, real_dtype, "stft")
    onesided = not (input.is_complex() or (window is not None and window.is_complex())) if onesided is None else onesided
    spec = fft.rfft(frames, dim=-1) if onesided else fft.fft(frames, dim=-1)
    if normalized:
        spec = spec * (1 / math.sqrt(n_fft))
    spec = spec.transpose(-1, -2)
    if input.ndim == 1:
        spec = spec.squeeze(0)
    if not return_complex:
        warnings.warn("stft with return_complex=False is deprecated. In a future pytorch release, stft will return "
                      "complex tensors for all inputs, and return_complex=False will raise an error.\nNote: you can "
                      "still call torch.view_as_real on the complex output to recover the old return format.",
                      UserWarning, stacklevel=2)
        from .complex_ import view_as_real
        return view_as_real(spec)
    return spec


def istft(input, n_fft, hop_length=None, win_length=None, window=None, center=True, normalized=False,
          onesided=None, length=None, return_complex=False):
    """The signal whose :func:`stft` is ``input`` (``(..., n_freq, n_frames)`` complex), by
    overlap-add (see the module docstring)."""
    from .. import fft
    from ..nn import functional as F
    if not input.is_complex():
        raise RuntimeError("istft requires a complex-valued input tensor.")
    if input.ndim not in (2, 3):
        raise RuntimeError(f"istft: expected a tensor with 2 or 3 dimensions of complex values, but got "
                           f"{input.ndim}D tensor")
    hop_length, win_length = _lengths("istft", n_fft, hop_length, win_length)
    if window is None:
        warnings.warn("A window was not provided. A rectangular window will be applied.Please provide the same "
                      "window used by stft to make the inversion lossless.To suppress this warning and use a "
                      "rectangular window, explicitly set `window=torch.ones(n_fft, device=<device>)`.",
                      UserWarning, stacklevel=2)
    spec = input if input.ndim == 3 else input.unsqueeze(0)
    onesided = spec.shape[-2] != n_fft if onesided is None else onesided
    real = input.dtype.to_real()
    win = _window(window, win_length, n_fft, real, "istft")
    frames = spec.transpose(-1, -2)
    if normalized:
        frames = frames * math.sqrt(n_fft)
    if onesided:
        if return_complex:
            raise RuntimeError("cannot have onesided output if window or input is complex")
        frames = fft.irfft(frames, n=n_fft, dim=-1)
    else:
        frames = fft.ifft(frames, n=n_fft, dim=-1)
        if not return_complex:
            frames = frames.real
    frames = frames * win
    n_frames = frames.shape[-2]
    expected = n_fft + hop_length * (n_frames - 1)
    fold = dict(output_size=(1, expected), kernel_size=(1, n_fft), stride=(1, hop_length))
    y = F.fold(frames.transpose(-1, -2), **fold).reshape(frames.shape[0], expected)
    envelope = F.fold((win * win).reshape(1, n_fft, 1).expand(1, n_fft, n_frames), **fold).reshape(expected)
    start = n_fft // 2 if center else 0
    end = start + length if length is not None else (expected - n_fft // 2 if center else expected)
    y, envelope = y[:, start:end], envelope[start:end]
    if bool((envelope.abs() < 1e-11).any()):
        raise RuntimeError(f"istft(...): window overlap add min: {float(envelope.abs().min()):g}")
    y = y / envelope
    if end > expected:
        y = F.pad(y, (0, end - expected))
    return y if input.ndim == 3 else y.squeeze(0)


FUNCTIONS = {"stft": stft, "istft": istft}
METHODS = dict(FUNCTIONS)
