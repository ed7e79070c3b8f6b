"""A compiled loop behind the convolution's fold (:func:`tracegrad.rules.conv._scatter`,
the last steps of a transposed convolution: the fold, its crop and the copy that puts the
batch first, in one pass into the result), on C-contiguous float32/float64 CPU arrays of a
2-d convolution, where Numba can be imported (the ``jit`` extra) and once it is worth
loading (:mod:`.compiled`).

Why: the NumPy form adds each kernel offset's share of the product into place, one strided
slice per offset, whose innermost run is one row of all images (``W * N`` values: 16 for
resnet18's last stage at batch 8), so NumPy's per-run overhead is most of its time on late
and strided layers; then it crops and transposes in another pass. On resnet18 at batch 8
(2-core development VM) the loop takes 80-350 us less a call on those layers. It adds the
taps in the NumPy form's order, so the results are the same bit for bit.

(The unfolding was tried as such a loop too, with and without a per-channel buffer: 1.2-4x
slower than NumPy's copies of whole runs on every resnet18 layer but the 1x1 strided ones.)
"""
from ..backend import threads
from . import compiled

__all__ = ["NUMBA_MIN", "fold_2d"]

# Values of the product (the fold's input) from which the loop may run (None: never; the
# tests of the NumPy form set it), once it is worth loading.
NUMBA_MIN = 1 << 12

# Seconds the loop saves per value of the product (resnet18's late and strided layers at
# batch 8 on the development VM: ~1.4 ns).
SAVING_S = 1e-9


def fold_2d(xp, cols, stride, dilation, padding, out):
    """The fold of ``cols`` (C, KH, KW, H, W, N) cropped by ``padding`` to the sizes
    ``out`` and batch first: a new (N, C, *out) array, where the tap (i, j) of position
    (h, w) lands at ``(i * dilation + h * stride - padding, j * ...)``; None where the loop
    does not serve these operands or is not worth loading yet (the NumPy form then). The
    channels are split over the intra-op threads."""
    if xp.name != "cpu" or cols.ndim != 6 or cols.dtype.char not in "fd" or not cols.flags.c_contiguous:
        return None
    kind = cols.dtype.name
    name = f"conv_fold_2d_{kind}"
    fused = compiled.sized(name, cols.size, NUMBA_MIN, SAVING_S, lambda: _SOURCE.format(name=name),
                           f"void({kind}[:, :, :, :, :, ::1], {kind}[:, :, :, ::1], "
                           + ", ".join(["int64"] * 8) + ")")
    if fused is None:
        return None
    c, n = cols.shape[0], cols.shape[-1]
    y = xp.empty((n, c) + tuple(out), dtype=cols.dtype)
    (sh, sw), (dh, dw), (ph, pw) = stride, dilation, padding
    threads.parallel(lambda c0, c1: fused(cols, y, sh, sw, dh, dw, ph, pw, c0, c1), c, 3 * cols.nbytes)
    return y


# Channels c0 to c1: zeroed, then each tap added in the NumPy form's order (the same sums).
_SOURCE = """import numba


@numba.njit(cache=True, nogil=True, error_model="numpy")
def {name}(cols, y, sh, sw, dh, dw, ph, pw, c0, c1):
    _, kh, kw, h, w, n = cols.shape
    height, width = y.shape[2], y.shape[3]
    for c in range(c0, c1):
        for b in range(n):
            y[b, c] = 0
        for i in range(kh):
            for j in range(kw):
                for p in range(h):
                    row = i * dh + p * sh - ph
                    if row < 0 or row >= height:
                        continue
                    for q in range(w):
                        col = j * dw + q * sw - pw
                        if col < 0 or col >= width:
                            continue
                        for b in range(n):
                            y[b, c, row, col] += cols[c, i, j, p, q, b]
"""
