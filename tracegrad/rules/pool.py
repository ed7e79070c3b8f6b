"""Pooling rules over the last two dims: max pooling (split as PyTorch's
``max_pool2d_with_indices``: the indices, then the values they pick), average pooling and
adaptive average pooling, each with the rule of its backward so that double backward works.
As in PyTorch, a backward rule also takes the pooled input (its gradient there is zero), so
the gradient it computes requires grad, and records a node, whenever the input does.

The kernels visit the kernel offsets, one strided slice of the padded input per offset
(``taps``), and combine whole slices with ufuncs: NumPy reduces a small trailing window axis
an order of magnitude slower than it adds or compares whole arrays. Every rule here is linear
in its float operand once the max pooling indices are fixed, so each vjp is the other rule
of its pair and each jvp the rule itself.
"""
import functools
import math

from ..backend import threads
from .broadcast import zeros_of
from . import pool_kernels
from .conv import fold, padded, taps
from .core import KEEP, primitive

__all__ = ["pool_output_size", "max_pool2d_indices", "max_pool2d", "max_pool2d_backward",
           "avg_pool2d", "avg_pool2d_backward", "adaptive_avg_pool2d",
           "adaptive_avg_pool2d_backward"]


def pool_output_size(size, kernel, stride, padding, dilation, ceil_mode):
    """PyTorch's ``pooling_output_shape``: windows along one dim; in ceil mode a last,
    partial window counts if it starts inside the input or its left padding."""
    span = size + 2 * padding - dilation * (kernel - 1) - 1 + (stride - 1 if ceil_mode else 0)
    out = span // stride + 1
    if ceil_mode and (out - 1) * stride >= size + padding:
        out -= 1
    return out


def _geometry(shape, kernel_size, stride, padding, dilation, ceil_mode):
    """(stride, output sizes, padding behind) for pooling the last two dims of ``shape``;
    an empty stride means the kernel size, as in PyTorch. The padding behind reaches the
    end of the last window (ceil mode's may hang past the input's padding)."""
    stride = tuple(stride) or tuple(kernel_size)
    sizes = shape[-2:]
    out = tuple(pool_output_size(n, k, s, p, d, ceil_mode)
                for n, k, s, p, d in zip(sizes, kernel_size, stride, padding, dilation))
    hi = tuple(max(0, (o - 1) * s + d * (k - 1) + 1 - n - p)
               for o, s, d, k, n, p in zip(out, stride, dilation, kernel_size, sizes, padding))
    return stride, out, hi


def _lowest(xp, dtype):
    return -xp.inf if dtype.kind == "f" else xp.iinfo(dtype).min


# -- max pooling ---------------------------------------------------------------------------

@primitive(dtypes=KEEP)
def max_pool2d_indices(xp, x, *, kernel_size, stride, padding, dilation, ceil_mode):
    """Where each window's maximum is, as a flat index into its input plane (H * W).
    Ties go to the first tap in scan order and a NaN wins, as in PyTorch; a window with
    nothing above the padding value points at its first element inside the input. On the
    CPU: the compiled loop of :mod:`.pool_kernels` where it serves, else the planes shared
    out among the intra-op threads."""
    params = dict(kernel_size=kernel_size, stride=stride, padding=padding, dilation=dilation,
                  ceil_mode=ceil_mode)
    steps, out, hi = _geometry(x.shape, kernel_size, stride, padding, dilation, ceil_mode)
    _refuse_windows_in_the_padding(tuple(x.shape[-2:]), tuple(kernel_size), steps, tuple(padding),
                                   tuple(dilation), out)
    where = pool_kernels.max_pool2d_indices(xp, x, kernel_size, steps, padding, dilation, out, hi)
    if where is not None:
        return where
    if xp.name != "cpu" or x.ndim < 3 or threads.parts(math.prod(x.shape[:-2]), 4 * x.nbytes) == 1:
        return _window_maxima(xp, x, **params)
    planes = x.reshape((-1,) + x.shape[-2:])
    where = xp.empty((planes.shape[0],) + out, dtype=xp.int64)

    def part(lo, hi):
        where[lo:hi] = _window_maxima(xp, planes[lo:hi], **params)
    threads.parallel(part, planes.shape[0], 4 * x.nbytes)
    return where.reshape(x.shape[:-2] + out)


def _window_maxima(xp, x, *, kernel_size, stride, padding, dilation, ceil_mode):
    """:func:`max_pool2d_indices` in one go."""
    stride, out, hi = _geometry(x.shape, kernel_size, stride, padding, dilation, ceil_mode)
    low = _lowest(xp, x.dtype)
    buf = padded(xp, x, padding, hi, fill=low)
    width = x.shape[-1]
    offsets = [(k[0] * dilation[0] * width + k[1] * dilation[1], buf[index])
               for k, index in taps(kernel_size, stride, dilation, out)]
    best = offsets[0][1].copy()
    for _, tap in offsets[1:]:
        xp.maximum(best, tap, out=best)
    # the first tap reaching the maximum: the largest code (n - tap number) among the taps
    # equal to it, in branch-free small-int arithmetic (masked writes are ~50x slower)
    n = len(offsets)
    first = xp.zeros(best.shape, dtype=xp.uint8 if n < 256 else xp.int32)
    hit, code = xp.empty(best.shape, dtype=bool), xp.empty_like(first)
    for j, (_, tap) in enumerate(offsets):
        xp.multiply(xp.equal(tap, best, out=hit), n - j, out=code, dtype=code.dtype)
        xp.maximum(first, code, out=first)
    table = xp.asarray([offset for offset, _ in offsets] + [0], dtype=xp.int64)  # n: no tap (NaN)
    where = table.take(xp.subtract(n, first, dtype=xp.intp))
    if x.dtype.kind == "f" and xp.isnan(best).any():
        for offset, tap in offsets:
            where[xp.isnan(tap)] = offset
    rows = xp.arange(out[0]) * stride[0] - padding[0]
    cols = xp.arange(out[1]) * stride[1] - padding[1]
    where += rows[:, None] * width + cols
    if any(padding) or any(hi):
        empty = best == low
        if empty.any():
            first = _first_inside(xp, rows, dilation[0])[:, None] * width + _first_inside(xp, cols, dilation[1])
            where = xp.where(empty, first, where)
    return where


def _first_inside(xp, starts, dilation):
    """The first tap at or after 0 of windows starting at ``starts`` (in the padding when
    negative), taps ``dilation`` apart: where a window with nothing above the padding value
    points, as in PyTorch."""
    return starts + xp.maximum(-(starts // dilation), 0) * dilation


@functools.lru_cache(maxsize=256)
def _refuse_windows_in_the_padding(sizes, kernel_size, stride, padding, dilation, out):
    """A ValueError where some window's taps all fall in the padding (a dilated kernel
    stepping over a small input): the maximum of such a window is the padding's -inf and
    it has no element to point at -- PyTorch gives -inf there with an index beyond the
    input, which its backward then writes through. (Cached per geometry: every call of
    a network's pooling asks the same.)"""
    for n, k, s, p, d, o in zip(sizes, kernel_size, stride, padding, dilation, out):
        for i in range(o):
            if not any(0 <= i * s - p + j * d < n for j in range(k)):
                raise ValueError(f"max_pool2d: a window of kernel size {tuple(kernel_size)}, dilation "
                                 f"{tuple(dilation)} and padding {tuple(padding)} over an input of size "
                                 f"{tuple(sizes)} takes no element of the input, only padding (PyTorch "
                                 "returns -inf there with an index beyond the input); use a smaller "
                                 "dilation or padding")


def _flat_indices(xp, indices, lead, plane):
    """``indices`` (into planes of ``plane`` values, one set per plane of ``lead``) as
    indices into all the planes laid end to end, flat."""
    planes = math.prod(lead)
    if not planes:
        return indices.reshape(-1)
    return (indices.reshape(planes, -1) + xp.arange(planes)[:, None] * plane).reshape(-1)


@primitive("MaxPool2DWithIndicesBackward0", dtypes=KEEP, linear=True,
           saved_names=("self", "result1"))
def max_pool2d(xp, x, indices, *, kernel_size, stride, padding, dilation, ceil_mode):
    """The values at ``indices`` (from :func:`max_pool2d_indices`); the pooling parameters
    are kept for the backward and for ``grad_fn._saved_*``."""
    # one flat take: ~3x faster than take_along_axis over the planes (its index arrays)
    at = _flat_indices(xp, indices, x.shape[:-2], x.shape[-2] * x.shape[-1])
    return x.reshape(-1).take(at).reshape(indices.shape)


@max_pool2d.vjp("x", uses="x indices")  # x for PyTorch's _saved_self (and its version check)
def max_pool2d_vjp(g, out, x, indices, **params):
    return max_pool2d_backward(g, x, indices, **params)


def pooled_input_vjp(gg, out, g, x, *args, **params):
    """A pooling backward does not depend on the input's values."""
    return zeros_of(gg, shape=x.shape)


@primitive("MaxPool2DWithIndicesBackwardBackward0", dtypes=KEEP, linear=True,
           saved_names=("grad_output", "self", "indices"))
def max_pool2d_backward(xp, g, x, indices, *, kernel_size, stride, padding, dilation, ceil_mode):
    """Each window's gradient added at its maximum, on zeros shaped like the input ``x``."""
    shape = x.shape
    out = xp.zeros(math.prod(shape), dtype=g.dtype)
    at = _flat_indices(xp, indices, tuple(shape[:-2]), shape[-2] * shape[-1])
    values = g.reshape(-1)
    stride = tuple(stride) or tuple(kernel_size)
    if all(s >= d * (k - 1) + 1 for s, d, k in zip(stride, dilation, kernel_size)):
        out[at] = values  # windows do not overlap: every index is distinct
    else:
        xp.scatter_add(out, at, values)
    return out.reshape(shape)


@max_pool2d_backward.vjp("g", uses="indices")
def max_pool2d_backward_vjp(gg, out, g, x, indices, **params):
    return max_pool2d(gg, indices, **params)


max_pool2d_backward.vjp("x")(pooled_input_vjp)


# -- average pooling -----------------------------------------------------------------------

def _counts(n, k, s, p, out, include_pad):
    """Per window along one dim: how many entries PyTorch divides by."""
    counts = []
    for o in range(out):
        start = o * s - p
        end = min(start + k, n + p)
        counts.append(end - start if include_pad else min(end, n) - max(start, 0))
    return counts


def _divisor(xp, shape, kernel_size, stride, padding, out, count_include_pad, divisor_override, dtype):
    """What each window's sum is divided by: a number, or an (oH, oW) array."""
    if divisor_override:
        return divisor_override
    rows, cols = (_counts(n, k, s, p, o, count_include_pad) for n, k, s, p, o in
                  zip(shape[-2:], kernel_size, stride, padding, out))
    if len(set(rows)) <= 1 and len(set(cols)) <= 1:
        return (rows[0] if rows else 1) * (cols[0] if cols else 1)
    return xp.asarray(rows, dtype=dtype)[:, None] * xp.asarray(cols, dtype=dtype)


def _divide(xp, total, divisor):
    if total.dtype.kind == "f":
        return total / divisor
    quotient = xp.abs(total) // divisor  # integer division toward zero, as in C++
    return xp.where(total < 0, -quotient, quotient).astype(total.dtype)


@primitive("AvgPool2DBackward0", dtypes=KEEP, linear=True, saved_names=("self",))
def avg_pool2d(xp, x, *, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override):
    stride, out, hi = _geometry(x.shape, kernel_size, stride, padding, (1, 1), ceil_mode)
    buf = padded(xp, x, padding, hi)
    total = None
    for _, index in taps(kernel_size, stride, (1, 1), out):
        total = buf[index].copy() if total is None else xp.add(total, buf[index], out=total)
    divisor = _divisor(xp, x.shape, kernel_size, stride, padding, out, count_include_pad,
                       divisor_override, total.dtype)
    return _divide(xp, total, divisor)


@avg_pool2d.vjp("x", uses="x")  # x for PyTorch's _saved_self (and its version check)
def avg_pool2d_vjp(g, out, x, **params):
    return avg_pool2d_backward(g, x, **params)


@primitive("AvgPool2DBackwardBackward0", dtypes=KEEP, linear=True, saved_names=("grad_output", "self"))
def avg_pool2d_backward(xp, g, x, *, kernel_size, stride, padding, ceil_mode, count_include_pad,
                        divisor_override):
    """Each window's gradient, divided as the forward divided, spread over the window."""
    shape = x.shape
    stride, out, hi = _geometry(shape, kernel_size, stride, padding, (1, 1), ceil_mode)
    share = g / _divisor(xp, shape, kernel_size, stride, padding, out, count_include_pad,
                         divisor_override, g.dtype)
    extent = [n + p + h for n, p, h in zip(shape[-2:], padding, hi)]
    buf = fold(xp, xp.broadcast_to(share, tuple(kernel_size) + share.shape), kernel_size, stride,
               (1, 1), extent)
    return xp.ascontiguousarray(buf[(Ellipsis,) + tuple(slice(p, p + n) for p, n in
                                                        zip(padding, shape[-2:]))])


@avg_pool2d_backward.vjp("g")
def avg_pool2d_backward_vjp(gg, out, g, x, **params):
    return avg_pool2d(gg, **params)


avg_pool2d_backward.vjp("x")(pooled_input_vjp)


# -- adaptive average pooling --------------------------------------------------------------

def _averaging(xp, n, m, dtype):
    """The (m, n) matrix whose row i averages entries floor(i n / m) to ceil((i + 1) n / m)
    of a length-n dim: adaptive pooling is ``A_h @ x @ A_w.T``."""
    i = xp.arange(m)
    start, end = (i * n) // m, ((i + 1) * n + m - 1) // m
    j = xp.arange(n)
    inside = (j >= start[:, None]) & (j < end[:, None])
    return (inside / (end - start)[:, None]).astype(dtype)


@primitive("AdaptiveAvgPool2DBackward0", dtypes=KEEP, linear=True, saved_names=("self",))
def adaptive_avg_pool2d(xp, x, *, output_size):
    (m_h, m_w), (n_h, n_w) = output_size, x.shape[-2:]
    if (m_h, m_w) == (1, 1):  # global average pooling
        return x.mean(axis=(-2, -1), keepdims=True)
    rows, cols = _averaging(xp, n_h, m_h, x.dtype), _averaging(xp, n_w, m_w, x.dtype)
    return xp.matmul(rows, xp.matmul(x, cols.T))


@adaptive_avg_pool2d.vjp("x", uses="x")  # x for PyTorch's _saved_self
def adaptive_avg_pool2d_vjp(g, out, x, *, output_size):
    return adaptive_avg_pool2d_backward(g, x)


@primitive("AdaptiveAvgPool2DBackwardBackward0", dtypes=KEEP, linear=True,
           saved_names=("grad_output", "self"))
def adaptive_avg_pool2d_backward(xp, g, x):
    (m_h, m_w), (n_h, n_w) = g.shape[-2:], x.shape[-2:]
    if (m_h, m_w) == (1, 1):
        out = xp.empty(x.shape, dtype=g.dtype)
        out[...] = g / (n_h * n_w)
        return out
    rows, cols = _averaging(xp, n_h, m_h, g.dtype), _averaging(xp, n_w, m_w, g.dtype)
    return xp.matmul(rows.T, xp.matmul(g, cols))


@adaptive_avg_pool2d_backward.vjp("g")
def adaptive_avg_pool2d_backward_vjp(gg, out, g, x):
    return adaptive_avg_pool2d(gg, output_size=tuple(g.shape[-2:]))


adaptive_avg_pool2d_backward.vjp("x")(pooled_input_vjp)
