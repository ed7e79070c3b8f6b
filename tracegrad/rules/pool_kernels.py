"""A compiled loop behind max pooling's indices (:func:`tracegrad.rules.pool.max_pool2d_indices`)
on C-contiguous float32/float64 CPU arrays, where Numba can be imported (the ``jit``
extra) and once it is worth loading (:mod:`.compiled`).

Why: the NumPy form visits the kernel offsets one strided slice at a time and combines
whole slices with ufuncs -- a maximum, then per offset a comparison, a multiplication and
a maximum to find the first tap reaching it, then a lookup and the window origins: some
thirty passes over the pooled positions for a 3x3 window. The loop makes one pass over
each window (after the same padded copy). On resnet18's stem pooling (batch 8: 512
planes of 32x32, 3x3 windows, stride 2, padding 1; 2-core development VM) it takes ~0.7
ms against the NumPy form's ~1.15 ms.

It picks what the NumPy form picks, as PyTorch's CPU kernel does: the first tap in scan
order holding the window's maximum, the last NaN where there is one, and for a window
with nothing above -inf its first tap inside the input (a window whose taps all fall in
the padding is refused before: tracegrad.rules.pool).
"""
from ..backend import threads
from . import compiled
from .conv import padded

__all__ = ["NUMBA_MIN", "max_pool2d_indices"]

# Input elements from which the loop may run (None: never; the tests of the NumPy form set
# it), once it is worth loading.
NUMBA_MIN = 1 << 12

# Seconds the loop saves per input element (resnet18's stem pooling above: ~0.9 ns).
SAVING_S = 0.8e-9


def max_pool2d_indices(xp, x, kernel_size, stride, padding, dilation, out, hi):
    """The flat index into its plane of each window's maximum of ``x`` (..., H, W): an
    int64 array (..., *out), ``out`` the pooled sizes, ``hi`` the padding behind that the
    last windows reach; None where the loop does not serve these operands or is not worth
    loading yet (the NumPy form then). The planes are split over the intra-op threads."""
    if (xp.name != "cpu" or x.ndim < 3 or x.dtype.char not in "fd" or not x.dtype.isnative
            or not x.flags.c_contiguous):
        return None
    kind, (kh, kw) = x.dtype.name, kernel_size
    name = f"max_pool2d_indices_{kind}_{kh}x{kw}"
    fused = compiled.sized(name, x.size, NUMBA_MIN, SAVING_S, lambda: _SOURCE.format(name=name, kh=kh, kw=kw),
                           f"void({kind}[:, :, ::1], {kind}[:, :, ::1], int64[:, :, ::1], "
                           + ", ".join(["int64"] * 6) + ")")
    if fused is None:
        return None
    planes = x.reshape((-1,) + x.shape[-2:])
    buf = padded(xp, planes, padding, hi, fill=-xp.inf)
    where = xp.empty((planes.shape[0],) + tuple(out), dtype=xp.int64)
    (sh, sw), (ph, pw), (dh, dw) = stride, padding, dilation
    threads.parallel(lambda p0, p1: fused(planes[p0:p1], buf[p0:p1], where[p0:p1], sh, sw, ph, pw, dh, dw),
                     planes.shape[0], planes.nbytes + buf.nbytes + where.nbytes)
    return where.reshape(x.shape[:-2] + tuple(out))


# {name} runs over the windows of the planes padded with -inf (``buf``), the kernel size a
# constant of the source: a loop the compiler unrolls, and whose choice of the first tap
# above all before it is branch-free (3-5x faster than a loop over sizes given at run
# time, or one with a branch for the rare windows). A window holding a NaN or nothing
# above -inf is only counted there; where there are any, {name}_exact takes the planes
# again (scanning the taps inside the input, the last NaN taking the place).
_SOURCE = """import numpy as np
import numba

_OPTIONS = dict(cache=True, nogil=True, error_model="numpy")


@numba.njit(**_OPTIONS)
def {name}_exact(x, where, sh, sw, ph, pw, dh, dw):
    height, width = x.shape[1], x.shape[2]
    planes, rows, cols = where.shape
    for p in range(planes):
        for i in range(rows):
            r0 = i * sh - ph
            first_r = r0
            while first_r < 0:
                first_r += dh
            for j in range(cols):
                c0 = j * sw - pw
                first_c = c0
                while first_c < 0:
                    first_c += dw
                best = -np.inf
                at = first_r * width + first_c
                for a in range({kh}):
                    r = r0 + a * dh
                    if r < 0 or r >= height:
                        continue
                    for b in range({kw}):
                        c = c0 + b * dw
                        if c < 0 or c >= width:
                            continue
                        v = x[p, r, c]
                        if v > best or v != v:
                            best = v
                            at = r * width + c
                where[p, i, j] = at


@numba.njit(**_OPTIONS)
def {name}(x, buf, where, sh, sw, ph, pw, dh, dw):
    width = x.shape[2]
    planes, rows, cols = where.shape
    special = 0
    for p in range(planes):
        for i in range(rows):
            r0 = i * sh
            for j in range(cols):
                c0 = j * sw
                best = buf[p, r0, c0]
                tap = 0
                nan = best != best
                for a in range({kh}):
                    for b in range({kw}):
                        v = buf[p, r0 + a * dh, c0 + b * dw]
                        nan |= v != v
                        if v > best:
                            best = v
                            tap = a * dh * width + b * dw
                where[p, i, j] = (r0 - ph) * width + c0 - pw + tap
                special += nan | (best == -np.inf)
    if special:
        {name}_exact(x, where, sh, sw, ph, pw, dh, dw)
"""
