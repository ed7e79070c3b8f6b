"""``unfold`` (im2col) and ``fold`` (col2im): sliding (kh, kw) blocks of a padded plane as
columns, and columns summed back into a plane.

Both are one index map: every (channel-free) column entry reads one flat position of the
padded plane. ``unfold`` is ``index_select`` at those positions and ``fold`` is
``index_add`` to them (each the other's gradient), so both differentiate, twice and more.
"""
from ...backend import cpu as host  # host-side index arithmetic on the shapes
from ...ops.linalg import _tensor
from ...runtime import creation
from .misc import pad as _pad

__all__ = ["unfold", "fold"]


def _pair(value, fn, name):
    values = tuple(value) if isinstance(value, (list, tuple)) else (value, value)
    if len(values) != 2:
        raise RuntimeError(f"{fn}(): argument '{name}' must be a single int or a tuple of two ints")
    return values


def _check(kernel, dilation, padding, stride):
    if min(kernel) <= 0:
        raise RuntimeError(f"kernel size should be greater than zero, but got kernel_height: {kernel[0]} "
                           f"kernel_width: {kernel[1]}")
    if min(dilation) <= 0:
        raise RuntimeError(f"dilation should be greater than zero, but got dilation_height: {dilation[0]} "
                           f"dilation_width: {dilation[1]}")
    if min(padding) < 0:
        raise RuntimeError(f"padding should be non-negative, but got pad_height: {padding[0]} "
                           f"pad_width: {padding[1]}")
    if min(stride) <= 0:
        raise RuntimeError(f"stride should be greater than zero, but got stride_height: {stride[0]} "
                           f"stride_width: {stride[1]}")


def _blocks(size, kernel, dilation, padding, stride):
    return tuple((n + 2 * p - (d * (k - 1) + 1)) // s + 1
                 for n, k, d, p, s in zip(size, kernel, dilation, padding, stride))


def _positions(padded_width, kernel, dilation, stride, blocks, device):
    """Flat positions in the padded plane, ordered (kernel row, kernel col, block row, block col)."""
    ki = host.arange(kernel[0])[:, None, None, None] * dilation[0]
    kj = host.arange(kernel[1])[None, :, None, None] * dilation[1]
    bi = host.arange(blocks[0])[None, None, :, None] * stride[0]
    bj = host.arange(blocks[1])[None, None, None, :] * stride[1]
    flat = ((ki + bi) * padded_width + kj + bj).reshape(-1)
    return creation.tensor(flat, device=device)


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """(N, C, H, W) -> (N, C kh kw, L): each sliding block as a column (L blocks)."""
    fn = "im2col"
    _tensor(input, "unfold", "input", 1)
    kernel, dilation = _pair(kernel_size, fn, "kernel_size"), _pair(dilation, fn, "dilation")
    padding, stride = _pair(padding, fn, "padding"), _pair(stride, fn, "stride")
    _check(kernel, dilation, padding, stride)
    if input.ndim not in (3, 4) or any(n == 0 for n in input.shape[-3:]):
        raise RuntimeError(f"Expected 3D or 4D (batch mode) tensor with possibly 0 batch size and other non-zero "
                           f"dimensions for input, but got: {list(input.shape)}")
    size = tuple(input.shape[-2:])
    blocks = _blocks(size, kernel, dilation, padding, stride)
    if min(blocks) < 1:
        raise RuntimeError(f"Given input with spatial size {size}, kernel_size={kernel}, dilation={dilation}, "
                           f"padding={padding}, calculated shape of the array of sliding blocks as {blocks}, but "
                           "its components must be at least one.")
    x = _pad(input, (padding[1], padding[1], padding[0], padding[0])) if any(padding) else input
    where = _positions(x.shape[-1], kernel, dilation, stride, blocks, input.device)
    cols = x.flatten(-2).index_select(-1, where)             # (..., C, kh kw L)
    lead = tuple(input.shape[:-3])
    return cols.reshape(*lead, input.shape[-3] * kernel[0] * kernel[1], blocks[0] * blocks[1])


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """(N, C kh kw, L) -> (N, C, H, W): the columns summed into the blocks they came from."""
    fn = "col2im"
    _tensor(input, "fold", "input", 1)
    out_size = _pair(output_size, fn, "output_size")
    kernel, dilation = _pair(kernel_size, fn, "kernel_size"), _pair(dilation, fn, "dilation")
    padding, stride = _pair(padding, fn, "padding"), _pair(stride, fn, "stride")
    if min(out_size) <= 0:
        raise RuntimeError(f"Expected output spatial size to be positive, but got: output_size={out_size}.")
    _check(kernel, dilation, padding, stride)
    if input.ndim not in (2, 3) or any(n == 0 for n in input.shape[-2:]):
        raise RuntimeError(f"Expected 2D or 3D (batch mode) tensor for input with possibly 0 batch size and "
                           f"non-zero dimensions for input, but got: {list(input.shape)}")
    rows, length = input.shape[-2:]
    per_block = kernel[0] * kernel[1]
    if rows % per_block:
        raise RuntimeError(f"Expected size of input's dimension 1 to be divisible by the product of kernel_size, "
                           f"but got input.size(1)={rows} and kernel_size={kernel}.")
    blocks = _blocks(out_size, kernel, dilation, padding, stride)
    if blocks[0] * blocks[1] != length:
        raise RuntimeError(f"Given output_size={out_size}, kernel_size={kernel}, dilation={dilation}, "
                           f"padding={padding}, stride={stride}, expected size of input's dimension "
                           f"{input.ndim - 1} to match the calculated number of sliding blocks {blocks[0]} * "
                           f"{blocks[1]} = {blocks[0] * blocks[1]}, but got input.size({input.ndim - 1})={length}.")
    lead, channels = tuple(input.shape[:-2]), rows // per_block
    height, width = out_size[0] + 2 * padding[0], out_size[1] + 2 * padding[1]
    where = _positions(width, kernel, dilation, stride, blocks, input.device)
    plane = creation.zeros(*lead, channels, height * width, dtype=input.dtype, device=input.device)
    out = plane.index_add(-1, where, input.reshape(*lead, channels, per_block * length))
    out = out.view(*lead, channels, height, width)
    if any(padding):
        out = out[..., padding[0]:padding[0] + out_size[0], padding[1]:padding[1] + out_size[1]]
    return out
