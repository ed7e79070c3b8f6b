"""Copies and conversions: ``clone``, dtype ``cast``, ``to_device``, and the rules behind
``copy_``, ``fill_`` and ``zero_`` (which PyTorch records as differentiable in-place writes)."""
from ..backend import move, namespace_for
from .broadcast import unbroadcast, zeros_like
from .core import KEEP, primitive


@primitive("CloneBackward0", dtypes=KEEP, diagonal=True, complex=True)
def clone(xp, x):
    return x.copy()


@clone.vjp("x")
def clone_vjp(g, out, x):
    return g


@primitive("ToCopyBackward0", dtypes=KEEP, linear=True, complex=True)
def cast(xp, x, *, dtype, src_dtype):
    """``x`` converted to ``dtype``; ``src_dtype`` is kept so the gradient converts back.
    Complex to real keeps the real part (whose transpose, real to complex, is the cast
    back), without NumPy's warning about the discarded imaginary part; complex to bool is
    ``x != 0``, as PyTorch (NumPy's would read the real part alone)."""
    if x.dtype.kind == "c" and xp.dtype(dtype).kind != "c":
        x = x != 0 if xp.dtype(dtype).kind == "b" else xp.real(x)
    return x.astype(dtype)


@cast.vjp("x")
def cast_vjp(g, out, x, *, dtype, src_dtype):
    return cast(g, dtype=src_dtype, src_dtype=dtype)


@primitive("ToCopyBackward0", dtypes=KEEP, linear=True, complex=True)
def to_device(xp, x, *, device, src):
    """``x``'s values on ``device`` (a device type: ``'cpu'``, ``'cuda'``), copied through
    host memory; ``src`` is ``x``'s device type, so the gradient goes back there."""
    moved = move(x, namespace_for(device))
    return x.copy() if moved is x else moved


@to_device.vjp("x")
def to_device_vjp(g, out, x, *, device, src):
    return to_device(g, device=src, src=device)


@primitive("CopyBackwards", dtypes=KEEP, complex=True)
def copy(xp, x, src):
    """The value ``x.copy_(src)`` writes: ``src`` broadcast to ``x``'s shape and dtype."""
    return xp.broadcast_to(xp.asarray(src).astype(x.dtype, copy=False), x.shape).copy()


@copy.inplace
def copy_into(xp, dst, src):
    dst[...] = src


@copy.vjp("x")
def copy_vjp_x(g, out, x, src):
    return zeros_like(g)


@copy.vjp("src")
def copy_vjp_src(g, out, x, src):
    return unbroadcast(g, src)


@copy.jvp("x")
def copy_jvp_x(t, out, x, src):
    return zeros_like(t)


@copy.jvp("src")
def copy_jvp_src(t, out, x, src):
    return copy(out, t)


def _fill_name(args, params):
    return "ZeroBackward0" if params.get("zero") else "FillBackward2"


@primitive(_fill_name, dtypes=KEEP, diagonal=True, complex=True)
def fill(xp, x, *, value, zero=False):
    """``x.fill_(value)`` (``zero`` marks ``x.zero_()``, which PyTorch names differently)."""
    return xp.full_like(x, value)


@fill.inplace
def fill_into(xp, dst, *, value, zero=False):
    dst.fill(value)


@fill.vjp("x")
def fill_vjp(g, out, x, *, value, zero=False):
    return zeros_like(g)
