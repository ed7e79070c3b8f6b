"""The pooling forms beyond :mod:`.conv`'s 1-d and 2-d ones, composed from the pooling rules of
:mod:`tracegrad.rules.pool` and from tensor ops, with PyTorch's checks and messages.

Adaptive average pooling is separable (a box average is the average, along one dim, of the
averages along the others), so the 3-d form is the 2-d rule over (H, W) and then over D.
"""
from ...ops.linalg import _legacy, _tensor
from ...rules import pool as _pool
from .conv import _ints, _sizes

__all__ = ["adaptive_avg_pool3d"]


def _adaptive_size(input, output_size, fn, n):
    """``output_size`` as n ints (an int repeats; None keeps the input's size)."""
    if isinstance(output_size, (list, tuple)):
        if input.ndim <= len(output_size):
            raise ValueError(f"Input dimension should be at least {len(output_size) + 1}")
        output_size = [input.shape[input.ndim - len(output_size) + i] if v is None else v
                       for i, v in enumerate(output_size)]
    elif not isinstance(output_size, int) or isinstance(output_size, bool):
        raise TypeError(f"object of type '{type(output_size).__name__}' has no len()")
    size = _ints(output_size, fn, "output_size", 2, n)
    if len(size) != n:
        raise RuntimeError(f"{fn}: output_size must be {n}")
    return size


def _check_adaptive_input(input, fn, n):
    if input.ndim not in (n + 1, n + 2):
        raise RuntimeError(f"{fn}(): Expected {n + 1}D or {n + 2}D tensor, but got {_sizes(input.shape)}")
    for i in range(input.ndim - n, input.ndim):
        if input.shape[i] <= 0:
            raise RuntimeError(f"{fn}(): Expected input to have non-zero size for non-batch dimensions, but "
                               f"input has sizes {_sizes(input.shape)} with dimension {i} being empty")


def adaptive_avg_pool3d(input, output_size):
    """Average over windows tiling (D, H, W) into ``output_size`` cells."""
    fn = "adaptive_avg_pool3d"
    _tensor(input, fn, "input", 1)
    od, oh, ow = _adaptive_size(input, output_size, fn, 3)
    if min(od, oh, ow) < 0:
        raise RuntimeError(f"{fn}: elements of output_size must be greater than or equal to 0 but received "
                           f"{{{od}, {oh},{ow}}}")
    _check_adaptive_input(input, fn, 3)
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"adaptive_avg_pool3d_cpu\" not implemented for '{_legacy(input)}'")
    if (od, oh, ow) == (1, 1, 1):
        return input.mean((-3, -2, -1), keepdim=True)
    planes = _pool.adaptive_avg_pool2d(input, output_size=(oh, ow))        # (..., D, oh, ow)
    depth_last = planes.movedim(-3, -1).unsqueeze(-2)                      # (..., oh, ow, 1, D)
    pooled = _pool.adaptive_avg_pool2d(depth_last, output_size=(1, od))    # (..., oh, ow, 1, od)
    return pooled.squeeze(-2).movedim(-1, -3)
