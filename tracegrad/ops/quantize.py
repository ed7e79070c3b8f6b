"""Fake quantization (``fake_quantize_per_tensor_affine``/``_per_channel_affine``): the values
rounded to a quantization grid and back, as quantization-aware training uses them, with
PyTorch's straight-through gradient -- 1 where the rounded value lies within
``[quant_min, quant_max]``, 0 where it was clamped. Computed as PyTorch computes it:
``(clamp(round(x * (1 / scale) + zero_point), quant_min, quant_max) - zero_point) * scale``,
rounding half to even, the scale and its reciprocal float32 numbers, per tensor in float32
(also for float64 input), per channel in the input's dtype.
"""
from ..backend import cpu as _host
from ..backend import dtypes as _dt
from ..runtime.tensor import Tensor

__all__ = ["fake_quantize_per_tensor_affine", "fake_quantize_per_channel_affine"]


_f32 = _host.float32


def _check_range(quant_min, quant_max):
    if quant_min > quant_max:
        raise RuntimeError("`quant_min` should be less than or         equal to `quant_max`.")


def _fake_quantize(input, inv_scale, scale, zero_point, quant_min, quant_max):
    x = input.detach()
    q = (x * inv_scale + zero_point).round()
    inside = (q >= quant_min) & (q <= quant_max)
    out = (q.clamp(quant_min, quant_max) - zero_point) * scale
    if not input.requires_grad:
        return out
    return out + (input - x) * inside  # (the value is out's; the gradient is the mask)


def fake_quantize_per_tensor_affine(input, scale, zero_point, quant_min, quant_max):
    """``input`` on the grid of one ``scale`` and ``zero_point`` (numbers or 0-d tensors)."""
    _check_range(quant_min, quant_max)
    # PyTorch takes the scale, and its reciprocal, as float32 numbers (also for float64 input)
    scale = _f32(scale.item() if isinstance(scale, Tensor) else scale)
    zero_point = int(zero_point.item() if isinstance(zero_point, Tensor) else zero_point)
    x = input.to(_dt.float32) if input.dtype is _dt.float64 else input  # (PyTorch's kernel computes
    out = _fake_quantize(x, float(_f32(1.0) / scale), float(scale), zero_point, quant_min, quant_max)  # in float32)
    return out.to(input.dtype)


def fake_quantize_per_channel_affine(input, scale, zero_point, axis, quant_min, quant_max):
    """``input`` on one grid per index of dim ``axis`` (``scale``, ``zero_point``: 1-D)."""
    _check_range(quant_min, quant_max)
    if zero_point.dtype not in (_dt.int32, _dt.float32, _dt.float16):
        name = {_dt.int64: "Long", _dt.int16: "Short", _dt.int8: "Char", _dt.uint8: "Byte",
                _dt.float64: "Double"}.get(zero_point.dtype, str(zero_point.dtype))
        raise RuntimeError(f"Zero-point must be Int32, Float or Half, found {name}")
    axis %= input.ndim
    if scale.ndim != 1 or scale.shape[0] != input.shape[axis] or zero_point.shape != scale.shape:
        raise RuntimeError(f"dimensions of scale and zero-point are not consistent with input tensor: scale "
                           f"{list(scale.shape)}, zero_point {list(zero_point.shape)}, input dim {axis} of size "
                           f"{input.shape[axis]}")
    shape = [1] * input.ndim
    shape[axis] = -1
    scale = scale.detach().to(input.dtype).reshape(shape)
    zero_point = zero_point.detach().round().to(input.dtype).reshape(shape)
    return _fake_quantize(input, 1.0 / scale, scale, zero_point, quant_min, quant_max)


FUNCTIONS = {n: globals()[n] for n in __all__}
METHODS = {}
