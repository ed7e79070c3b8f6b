"""Convolution rules: N-d convolution and transposed convolution in one primitive, as
PyTorch's ``aten::convolution`` (node ``ConvolutionBackward0``), and the rules its backward
is made of, so that gradients of any order come out::

    y = conv(x, w)     dx = convT(g, w)   dw = corr(x, g)
    y = convT(x, w)    dx = conv(g, w)    dw = corr(g, x)

``corr(a, b)`` (:func:`convolution_backward_weight`) is bilinear; its vjps are again a
convolution and a transposed one, with the incoming cotangent as the kernel.

Every kernel makes ONE matrix product over an unfolded (im2col) copy of the padded input,
taken through one strided view. The padded copy puts the batch dim last, so the columns are
ordered (position, image) and a stride-1 window row is one contiguous run of memory however
small the images (ResNet's last stages are 4x4 and 2x2). A transposed convolution (a
convolution's input gradient) is one product with the weights as a transposed view, then
a fold: one strided add per kernel offset, batch dim innermost again (for 2-d convolutions
with Numba, one compiled loop that also crops and puts the batch first: :mod:`.conv_kernels`).
With stride 1 and weights smaller than the unfolded input it is instead the convolution
with the flipped, transposed kernel (:func:`folds_cheaper`).

Those copies grow with the batch (a ``vmap(jacrev(net))`` over 20000 samples, or a batched
weight folded into the groups, asks for gigabytes), so each kernel runs over blocks of
images and of groups whenever its matrices would exceed :data:`WORKSPACE_BYTES`
(:func:`_blocks`); small calls take the one-product path unchanged.
"""
import itertools
import math

from . import conv_kernels
from .broadcast import broadcast_to
from .core import KEEP, Primitive, primitive
from .index import basic_index
from ..backend import threads
from .reduce import sum as _sum
from .scratch import scratch
from .shape import reshape

__all__ = ["convolution", "convolution_backward_input", "convolution_backward_weight",
           "conv_output_size", "transposed_output_size", "padded", "taps", "fold"]


WORKSPACE_BYTES = 256 * 2 ** 20
"""The most one kernel's unfolded (im2col) matrix -- or the weight gradient's / a strided
transposed convolution's equivalent -- may take: beyond it the batch (and, for one huge
image, the groups) is processed in blocks. It bounds the working memory to a constant
instead of growing with the batch, and 256 MiB keeps every block's product large enough
that BLAS runs at full speed (the blocks cost no measurable time)."""


def _blocks(n, groups, nbytes):
    """None when the whole call fits :data:`WORKSPACE_BYTES` (``nbytes``: one image's and
    one group's share of the kernel's matrices), else ``(images, first group, end group)``
    blocks covering all, each within the budget where one image of one group is."""
    if n * groups * nbytes <= WORKSPACE_BYTES:
        return None
    per_group = max(1, min(groups, WORKSPACE_BYTES // nbytes))
    per_image = max(1, WORKSPACE_BYTES // (nbytes * per_group))
    return [(slice(i, min(n, i + per_image)), g, min(groups, g + per_group))
            for g in range(0, groups, per_group) for i in range(0, n, per_image)]


def _group(a, dim, g0, g1, groups):
    """The channels of groups ``g0`` to ``g1`` along ``dim`` of ``a``."""
    per = a.shape[dim] // groups
    return a[(slice(None),) * dim + (slice(g0 * per, g1 * per),)]


def _blockwise(xp, kernel, blocks, shape, x, w, groups, *args):
    """``kernel(xp, x, w, *args, groups)`` computed block by block (:func:`_blocks`) into
    one result of ``shape``: each block's images and groups of channels at a time."""
    y = xp.empty(shape, dtype=xp.result_type(x, w))
    for images, g0, g1 in blocks:
        _group(y, 1, g0, g1, groups)[images] = kernel(
            xp, _group(x, 1, g0, g1, groups)[images], _group(w, 0, g0, g1, groups), *args, g1 - g0)
    return y


# -- geometry ------------------------------------------------------------------------------

def conv_output_size(size, kernel, stride, padding, dilation):
    """Positions a kernel takes along one dim of a convolution."""
    return (size + 2 * padding - dilation * (kernel - 1) - 1) // stride + 1


def transposed_output_size(size, kernel, stride, padding, dilation, output_padding):
    """Length of one dim of a transposed convolution's result."""
    return (size - 1) * stride - 2 * padding + dilation * (kernel - 1) + 1 + output_padding


def padded(xp, x, lo, hi, fill=0):
    """``x`` with each of its last ``len(lo)`` dims grown by ``lo[i]`` entries in front and
    ``hi[i]`` behind (negative amounts crop), the new entries set to ``fill``."""
    nd = len(lo)
    if any(n < 0 for n in lo) or any(n < 0 for n in hi):
        sizes = x.shape[x.ndim - nd:]
        x = x[(Ellipsis,) + tuple(slice(max(-a, 0), s - max(-b, 0)) for a, b, s in zip(lo, hi, sizes))]
        lo, hi = tuple(max(a, 0) for a in lo), tuple(max(b, 0) for b in hi)
    if not any(lo) and not any(hi):
        return x
    sizes = x.shape[x.ndim - nd:]
    grown = tuple(s + a + b for s, a, b in zip(sizes, lo, hi))
    buf = (xp.zeros if fill == 0 else xp.empty)(x.shape[:x.ndim - nd] + grown, dtype=x.dtype)
    if fill != 0:
        buf[...] = fill
    buf[(Ellipsis,) + tuple(slice(a, a + s) for a, s in zip(lo, sizes))] = x
    return buf


def taps(kernel, stride, dilation, out):
    """``(offset, index)`` per kernel offset: the index of that tap of every window, on the
    last ``len(kernel)`` dims of a (padded) array."""
    for k in itertools.product(*(range(n) for n in kernel)):
        yield k, (Ellipsis,) + tuple(
            slice(i * d, i * d + (o - 1) * s + 1 if o > 0 else i * d, s)
            for i, s, d, o in zip(k, stride, dilation, out))


def fold(xp, cols, kernel, stride, dilation, extent):
    """The adjoint of taking windows: ``cols`` (``*kernel, *lead, *positions``) holds, per
    kernel offset, one value per window position; each is added where that tap of that
    window lies, on a zero grid ``(*lead, *extent)`` (one strided add per kernel offset)."""
    nd = len(kernel)
    out = cols.shape[cols.ndim - nd:]
    buf = xp.zeros(cols.shape[nd:cols.ndim - nd] + tuple(extent), dtype=cols.dtype)
    for k, index in taps(kernel, stride, dilation, out):
        buf[index] += cols[k]
    return buf


def positions(sizes, kernel, stride, dilation, lo, hi):
    """Window positions per spatial dim of ``sizes`` padded by ``lo``/``hi``."""
    return tuple(max(0, (m + a + b - d * (k - 1) - 1) // st + 1)
                 for m, k, st, d, a, b in zip(sizes, kernel, stride, dilation, lo, hi))


def unfold(xp, x, kernel, stride, dilation, lo, hi, count=None):
    """The windows of ``x`` (N, C, *spatial), padded by ``lo``/``hi``, copied out as
    ``(C, *kernel, *count, N)`` (im2col; scratch memory), ``count`` positions per dim (by
    default all of them); returns (columns, all positions). With the batch innermost, each
    tap of a stride-1 window row is one contiguous run of ``count[-1] * N`` values (a few
    times faster to copy than a row of one image). With a stride along the last dim the
    padded copy is split into that many phases (every s-th column), so that a row of taps
    is again one run rather than N values at a time."""
    n, c, nd = x.shape[0], x.shape[1], len(kernel)
    out = positions(x.shape[2:], kernel, stride, dilation, lo, hi)
    count = out if count is None else tuple(count)
    shape = (c,) + tuple(kernel) + count + (n,)
    if all(k == 1 for k in kernel) and not any(lo) and not any(hi) and any(st > 1 for st in stride):
        # 1x1, strided, unpadded: the batch-last copy of the positions taken is the columns
        taken = x[(slice(None), slice(None)) + tuple(slice(0, m * st, st) for m, st in zip(count, stride))]
        return _batch_last(xp, taken, "padded").reshape(shape), out
    step = stride[-1] if kernel[-1] > 1 else 1  # (one tap reads one phase: no gain)
    buf = _batch_last(xp, x, "padded", lo, hi, step)
    if all(k == 1 for k in kernel) and all(st == 1 for st in stride) and count == out:
        return buf.reshape(shape), out  # 1x1, stride 1: the padded copy is the columns
    cols = scratch(xp, "columns", shape, x.dtype)
    if step == 1:  # buf: (C, *padded spatial, N)
        sc, sp, sn = buf.strides[0], buf.strides[1:-1], buf.strides[-1]
        view = xp.as_strided(buf, cols.shape, (sc,) + tuple(d * t for d, t in zip(dilation, sp))
                             + tuple(st * t for st, t in zip(stride, sp)) + (sn,))
        _assign(xp, cols, view)
        return cols, out
    # buf: (C, *padded spatial but the last, phase, column // step, N)
    sc, sp, (_, sq, sn) = buf.strides[0], buf.strides[1:nd], buf.strides[nd:]
    strides = (sc,) + tuple(d * t for d, t in zip(dilation, sp)) + tuple(
        st * t for st, t in zip(stride, sp)) + (sq, sn)
    taps_ = [(j, divmod(j * dilation[-1], step)) for j in range(kernel[-1])]
    slabs = threads.parts(c, 2 * cols.nbytes // len(taps_)) if xp.name == "cpu" else 1
    tasks = [(j, q, r, c * i // slabs, c * (i + 1) // slabs) for j, (q, r) in taps_ for i in range(slabs)]

    def part(t0, t1):
        for j, q, r, c0, c1 in tasks[t0:t1]:
            start = buf[(slice(c0, c1),) + (slice(None),) * (nd - 1) + (r, slice(q, None))]
            cols[(slice(c0, c1),) + (slice(None),) * (nd - 1) + (j,)] = xp.as_strided(
                start, (c1 - c0,) + tuple(kernel[:-1]) + count + (n,), strides)
    _split(xp, part, len(tasks), 2 * cols.nbytes)
    return cols, out


def _batch_last(xp, x, slot, lo=None, hi=None, phases=1):
    """``x`` (N, C, *S) copied to scratch memory as (C, *S, N), each spatial dim zero-padded
    by ``lo[i]`` in front and ``hi[i]`` behind (negative amounts crop); the channels are
    split over the intra-op threads. With ``phases`` s > 1 the padded last spatial dim
    (length P) is stored as (s, ceil(P / s)): column p at [p % s, p // s]."""
    nd = x.ndim - 2
    lo, hi = lo or (0,) * nd, hi or (0,) * nd
    if any(a < 0 for a in lo) or any(b < 0 for b in hi):
        x = x[(slice(None), slice(None)) + tuple(
            slice(max(-a, 0), m - max(-b, 0)) for a, b, m in zip(lo, hi, x.shape[2:]))]
        lo, hi = tuple(max(a, 0) for a in lo), tuple(max(b, 0) for b in hi)
    sizes = x.shape[2:]
    grown = tuple(m + a + b for m, a, b in zip(sizes, lo, hi))
    last = xp.moveaxis(x, 0, -1)
    if phases > 1:
        buf = scratch(xp, slot, (x.shape[1],) + grown[:-1] + (phases, -(-grown[-1] // phases), x.shape[0]),
                      x.dtype)
        inner = (slice(None),) + tuple(slice(a, a + m) for a, m in zip(lo[:-1], sizes[:-1]))
        a, m = lo[-1], sizes[-1]
        # phase r holds padded columns q * s + r: those inside x (q from q0 = ceil((a - r) / s)
        # up to ceil((a + m - r) / s)) are x's columns q0 * s + r - a, every s-th
        copies = []
        for r in range(phases):
            q0, q1 = -(-(a - r) // phases), -(-(a + m - r) // phases)
            copies.append((r, slice(q0, q1), q0 * phases + r - a))

        def part(c0, c1):
            buf[c0:c1] = 0
            for r, at, w0 in copies:
                if at.stop > at.start:
                    buf[c0:c1][inner + (r, at)] = last[c0:c1][(Ellipsis, slice(w0, None, phases), slice(None))]
        _split(xp, part, buf.shape[0], 2 * buf.nbytes)
        return buf
    buf = scratch(xp, slot, (x.shape[1],) + grown + (x.shape[0],), x.dtype)
    inner = tuple(slice(a, a + m) for a, m in zip(lo, sizes))
    borders = [(slice(None),) * (1 + i) + (edge,) for i, (a, b, m) in enumerate(zip(lo, hi, sizes))
               for edge in (slice(0, a), slice(a + m, None)) if edge.start != edge.stop]

    def part(c0, c1):
        for edge in borders:
            buf[c0:c1][edge] = 0
        buf[c0:c1][(slice(None),) + inner] = last[c0:c1]
    _split(xp, part, buf.shape[0], 2 * buf.nbytes)
    return buf


def _split(xp, fn, n, nbytes):
    """``fn(lo, hi)`` over slabs of ``range(n)``: on the CPU, run by the intra-op threads
    (:mod:`tracegrad.backend.threads`); elsewhere in one call."""
    if xp.name == "cpu":
        threads.parallel(fn, n, nbytes)
    else:
        fn(0, n)


def _assign(xp, dst, src):
    """``dst[...] = src`` (same shapes), its first dim split over the intra-op threads."""
    def part(lo, hi):
        dst[lo:hi] = src[lo:hi]
    _split(xp, part, dst.shape[0], 2 * dst.nbytes)


def _columns(xp, x, kernel, stride, dilation, lo, hi, groups):
    """(cols, out): the unfolded input as ``(groups, C/groups * prod(kernel), L * N)``,
    columns ordered (position, image) (the one copy of the unfolding)."""
    cols, out = unfold(xp, x, kernel, stride, dilation, lo, hi)
    n, c = x.shape[:2]
    return cols.reshape(groups, c // groups * math.prod(kernel), math.prod(out) * n), out


def correlate(xp, x, w, stride, dilation, lo, hi, groups):
    """Convolution (a correlation, as in deep learning) of ``x`` (N, C, *S) with ``w``
    (O, C/groups, *K), zero padding ``lo`` before and ``hi`` after: (N, O, *out)."""
    kernel, (n, c), o = tuple(w.shape[2:]), x.shape[:2], w.shape[0]
    out = positions(x.shape[2:], kernel, stride, dilation, lo, hi)
    blocks = _blocks(n, groups, c // groups * math.prod(kernel) * math.prod(out) * x.itemsize)
    if blocks is None:
        return _correlate(xp, x, w, stride, dilation, lo, hi, groups)
    return _blockwise(xp, _correlate, blocks, (n, o) + out, x, w, groups, stride, dilation, lo, hi)


def _correlate(xp, x, w, stride, dilation, lo, hi, groups):
    """:func:`correlate` as one product over all the columns."""
    kernel, o, n = tuple(w.shape[2:]), w.shape[0], x.shape[0]
    cols, out = _columns(xp, x, kernel, stride, dilation, lo, hi, groups)
    wm = w.reshape(groups, o // groups, cols.shape[1])
    y = xp.matmul(wm, cols, out=scratch(xp, "product", (groups, o // groups, cols.shape[2]),
                                          xp.result_type(wm, cols)))
    return _batch_first(xp, y.reshape((o,) + out + (n,)))


def _batch_first(xp, a):
    """A new C-contiguous array of ``a`` (C, *S, N) with its last dim moved to the front
    (``a`` may be scratch memory: never a view of it)."""
    y = xp.empty(a.shape[-1:] + a.shape[:-1], dtype=a.dtype)
    _assign(xp, y.swapaxes(0, 1), xp.moveaxis(a, -1, 1))  # split over the channels
    return y


def correlate_weight(xp, x, g, kernel, stride, dilation, lo, hi, groups):
    """The weight gradient of :func:`correlate`: for every kernel entry, the sum over
    batch and positions of ``g`` times the input under it: (O, C/groups, *kernel)."""
    (n, c), o = x.shape[:2], g.shape[1]
    # one image's and group's columns and its share of g (the copy that puts N last)
    nbytes = (c * math.prod(kernel) + o) // groups * math.prod(g.shape[2:]) * x.itemsize
    blocks = _blocks(n, groups, nbytes)
    if blocks is None:
        return _correlate_weight(xp, x, g, kernel, stride, dilation, lo, hi, groups)
    dw = xp.zeros((o, c // groups) + tuple(kernel), dtype=x.dtype)
    for images, g0, g1 in blocks:  # the blocks of images add up, those of groups tile dw
        _group(dw, 0, g0, g1, groups)[...] += _correlate_weight(
            xp, _group(x, 1, g0, g1, groups)[images], _group(g, 1, g0, g1, groups)[images],
            kernel, stride, dilation, lo, hi, g1 - g0)
    return dw


def _correlate_weight(xp, x, g, kernel, stride, dilation, lo, hi, groups):
    """:func:`correlate_weight` as one product over all the columns."""
    c, o = x.shape[1], g.shape[1]
    out = positions(x.shape[2:], kernel, stride, dilation, lo, hi)
    count = tuple(min(a, b) for a, b in zip(out, g.shape[2:]))  # the positions both have count
    if tuple(g.shape[2:]) != count:  # (the rest are zeros)
        g = g[(slice(None),) * 2 + tuple(slice(0, m) for m in count)]
    cols, _ = unfold(xp, x, kernel, stride, dilation, lo, hi, count)
    cols = cols.reshape(groups, c // groups * math.prod(kernel), math.prod(count) * x.shape[0])
    gm = _batch_last(xp, g, "grad").reshape(groups, o // groups, cols.shape[2])  # (O, *out, N)
    # written into an array of the weight's shape that owns its memory: a leaf adopts
    # such a gradient as its .grad without copying it
    dw = xp.empty((o, c // groups) + tuple(kernel), dtype=cols.dtype)
    if cols.shape[2] >= 2 * cols.shape[1]:
        # a long shared dim: (cols @ gm^T)^T is ~10% faster; its transposing copy is cheap
        # only while the result is small (a large one costs far more than the product)
        dw.reshape(gm.shape[:2] + cols.shape[1:2])[...] = xp.matmul(cols, gm.swapaxes(1, 2)).swapaxes(1, 2)
    else:
        xp.matmul(gm, cols.swapaxes(1, 2), out=dw.reshape(gm.shape[:2] + cols.shape[1:2]))
    return dw


def correlate_transposed(xp, x, w, stride, padding, dilation, output_padding, groups):
    """The adjoint of :func:`correlate` in its input: ``x`` (N, Cin, *S) with ``w``
    (Cin, Cout/groups, *K) gives (N, Cout, *out)."""
    kernel = tuple(w.shape[2:])
    if all(s == 1 for s in stride) and not folds_cheaper(x, w, groups):
        return _flipped(xp, x, w, padding, dilation, output_padding, groups)
    cout = w.shape[1] * groups
    n, sizes = x.shape[0], tuple(x.shape[2:])
    blocks = _blocks(n, groups, cout // groups * math.prod(kernel) * math.prod(sizes) * x.itemsize)
    if blocks is None:
        return _scatter(xp, x, w, stride, padding, dilation, output_padding, groups)
    out = tuple(transposed_output_size(m, k, s, p, d, op) for m, k, s, p, d, op in
                zip(sizes, kernel, stride, padding, dilation, output_padding))
    return _blockwise(xp, _scatter, blocks, (n, cout) + out, x, w, groups, stride, padding, dilation,
                      output_padding)


def folds_cheaper(x, w, groups):
    """Whether a stride-1 transposed convolution should take :func:`_scatter` rather than
    :func:`_flipped`: the latter copies the weights (a transposing copy, slow per byte)
    and unfolds ``x``; the fold copies neither but adds up ``prod(kernel)`` products per
    output. Late layers (512 channels of 2x2 images: 2.4M weights, 147k unfolded values)
    fold, early ones (64 channels of 16x16 images) unfold."""
    return w.size >= x.size * math.prod(w.shape[2:]) // groups


def _flipped(xp, x, w, padding, dilation, output_padding, groups):
    """A stride-1 :func:`correlate_transposed` as the correlation of ``x`` with the
    flipped kernel, its channel dims swapped."""
    kernel = tuple(w.shape[2:])
    nd, cin, cout = len(kernel), w.shape[0], w.shape[1] * groups
    wt = w.reshape((groups, cin // groups, cout // groups) + kernel).swapaxes(1, 2)
    wt = wt[(Ellipsis,) + (slice(None, None, -1),) * nd].reshape((cout, cin // groups) + kernel)
    lo = tuple(d * (k - 1) - p for d, k, p in zip(dilation, kernel, padding))
    hi = tuple(a + op for a, op in zip(lo, output_padding))
    return correlate(xp, x, wt, (1,) * nd, dilation, lo, hi, groups)


def _scatter(xp, x, w, stride, padding, dilation, output_padding, groups):
    """:func:`correlate_transposed` as one product, then a fold: the product of the
    weights (a transposed view, no copy) with ``x`` gives every kernel offset's share of
    every output position, added into place one strided slice per offset. The batch dim
    is innermost, as in :func:`unfold`, so each added run is a whole row of all images."""
    kernel = tuple(w.shape[2:])
    cin, cout = w.shape[0], w.shape[1] * groups
    n, sizes = x.shape[0], tuple(x.shape[2:])
    xm = _batch_last(xp, x, "grad").reshape(groups, cin // groups, math.prod(sizes) * n)  # (Cin, *S, N)
    # w as a transposed view: rows ordered (output channel, kernel offset) within each group
    wm = w.reshape(groups, cin // groups, cout // groups * math.prod(kernel)).swapaxes(1, 2)
    cols = xp.matmul(wm, xm, out=scratch(xp, "product", (groups, wm.shape[1], xm.shape[2]),
                                         xp.result_type(wm, xm)))
    cols = cols.reshape((cout,) + kernel + sizes + (n,))
    out = [transposed_output_size(m, k, s, p, d, op) for m, k, s, p, d, op in
           zip(sizes, kernel, stride, padding, dilation, output_padding)]
    extent = [max(transposed_output_size(m, k, s, 0, d, 0), p + o)
              for m, k, s, d, p, o in zip(sizes, kernel, stride, dilation, padding, out)]
    folded = conv_kernels.fold_2d(xp, cols, stride, dilation, padding, out) if len(kernel) == 2 else None
    if folded is not None:
        return folded
    y = scratch(xp, "padded", (cout,) + tuple(extent) + (n,), cols.dtype)
    adds = [(index + (slice(None),), (slice(None),) + k) for k, index in taps(kernel, stride, dilation, sizes)]

    def part(c0, c1):
        slab, share = y[c0:c1], cols[c0:c1]
        slab[...] = 0
        for at, k in adds:
            slab[at] += share[k]
    _split(xp, part, cout, (2 * len(adds) + 1) * y.nbytes)
    return _batch_first(xp, y[(slice(None),) + tuple(slice(p, p + o) for p, o in zip(padding, out))])


# -- the rules -----------------------------------------------------------------------------

_SAVED = ("input", "weight", "bias")


@primitive("ConvolutionBackward0", dtypes=KEEP, saved_names=_SAVED)
def convolution(xp, input, weight, bias, *, stride, padding, dilation, transposed,
                output_padding, groups):
    """``aten::convolution``: every parameter a tuple with one entry per spatial dim (the
    torch-style functions in :mod:`tracegrad.nn.functional` check and expand them)."""
    if transposed:
        y = correlate_transposed(xp, input, weight, stride, padding, dilation, output_padding, groups)
    else:
        y = correlate(xp, input, weight, stride, dilation, padding, padding, groups)
    if bias is not None:
        y += bias.reshape((bias.shape[0],) + (1,) * (y.ndim - 2))
    return y


# The same operation computing a gradient: PyTorch names the nodes of a convolution's
# backward (seen with create_graph=True) ConvolutionBackwardBackward0.
convolution_backward_input = Primitive(convolution.impl, "ConvolutionBackwardBackward0",
                                       name="convolution_backward_input", dtypes=KEEP,
                                       saved_names=_SAVED)


def transposed_like(g, weight, shape, stride, padding, dilation, groups):
    """The transposed convolution of ``g`` sized ``shape``: the adjoint of convolving an
    input of that shape (``output_padding`` supplies what the forward's rounding lost)."""
    extra = tuple(n - transposed_output_size(m, k, s, p, d, 0) for n, m, k, s, p, d in
                  zip(shape[2:], g.shape[2:], weight.shape[2:], stride, padding, dilation))
    return convolution_backward_input(g, weight, None, stride=stride, padding=padding,
                                      dilation=dilation, transposed=True, output_padding=extra,
                                      groups=groups)


def correlation_like(a, weight, shape, stride, padding, dilation, groups):
    """The convolution of ``a``, cut to the spatial size ``shape`` (a transposed
    convolution's ``output_padding`` can leave it a row longer)."""
    y = convolution_backward_input(a, weight, None, stride=stride, padding=padding,
                                   dilation=dilation, transposed=False,
                                   output_padding=(0,) * len(stride), groups=groups)
    if tuple(y.shape[2:]) != tuple(shape[2:]):
        y = basic_index(y, index=(slice(None), slice(None)) + tuple(slice(0, n) for n in shape[2:]))
    return y


def convolution_vjp_input(g, out, input, weight, bias, *, stride, padding, dilation, transposed,
                          output_padding, groups):
    if transposed:
        return correlation_like(g, weight, input.shape, stride, padding, dilation, groups)
    return transposed_like(g, weight, input.shape, stride, padding, dilation, groups)


def convolution_vjp_weight(g, out, input, weight, bias, *, stride, padding, dilation, transposed,
                           output_padding, groups):
    a, b = (g, input) if transposed else (input, g)
    return convolution_backward_weight(a, b, kernel_size=tuple(weight.shape[2:]), stride=stride,
                                       padding=padding, dilation=dilation, groups=groups)


def convolution_vjp_bias(g, out, input, weight, bias, **params):
    return _sum(g, dim=(0,) + tuple(range(2, g.ndim)))


def convolution_jvp_input(t, out, input, weight, bias, **params):
    return convolution(t, weight, None, **params)


def convolution_jvp_weight(t, out, input, weight, bias, **params):
    return convolution(input, t, None, **params)


def convolution_jvp_bias(t, out, input, weight, bias, **params):
    return broadcast_to(reshape(t, shape=(1, t.shape[0]) + (1,) * (out.ndim - 2)), shape=out.shape)


for _p in (convolution, convolution_backward_input):
    _p.vjp("input", uses="weight")(convolution_vjp_input)
    _p.vjp("weight", uses="input")(convolution_vjp_weight)
    _p.vjp("bias")(convolution_vjp_bias)
    _p.jvp("input")(convolution_jvp_input)
    _p.jvp("weight")(convolution_jvp_weight)
    _p.jvp("bias")(convolution_jvp_bias)


@primitive("ConvolutionBackwardBackward0", dtypes=KEEP, saved_names=("input", "grad_output"))
def convolution_backward_weight(xp, input, grad, *, kernel_size, stride, padding, dilation, groups):
    """``corr(input, grad)``: the gradient of a convolution's weight (shape
    ``(grad channels, input channels / groups, *kernel_size)``)."""
    return correlate_weight(xp, input, grad, tuple(kernel_size), stride, dilation, padding, padding,
                            groups)


# <corr(a, b), W> = <conv(a, W), b>: a's gradient is convT(b, W), b's is conv(a, W).
@convolution_backward_weight.vjp("input", uses="grad")
def convolution_backward_weight_vjp_input(g, out, input, grad, *, kernel_size, stride, padding,
                                          dilation, groups):
    return transposed_like(grad, g, input.shape, stride, padding, dilation, groups)


@convolution_backward_weight.vjp("grad", uses="input")
def convolution_backward_weight_vjp_grad(g, out, input, grad, *, kernel_size, stride, padding,
                                         dilation, groups):
    return correlation_like(input, g, grad.shape, stride, padding, dilation, groups)


@convolution_backward_weight.jvp("input")
def convolution_backward_weight_jvp_input(t, out, input, grad, **params):
    return convolution_backward_weight(t, grad, **params)


@convolution_backward_weight.jvp("grad")
def convolution_backward_weight_jvp_grad(t, out, input, grad, **params):
    return convolution_backward_weight(input, t, **params)
