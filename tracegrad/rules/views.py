"""Writing through a view: ``copy_slices`` puts a new value into the region of a base
that a chain of view primitives selects. It is the rule behind PyTorch's ``CopySlices``
node (``x[0] = v``, or any in-place op on a view of a tensor that has history)."""
from .broadcast import unbroadcast, zeros_like
from .core import KEEP, primitive


def replay_view(chain, x):
    """Apply a recorded chain of ``(view primitive, params, output index)`` to ``x``."""
    for prim, params, k in chain:
        x = prim(x, **params)
        if prim.nout != 1:
            x = x[k]
    return x


def writable_copy(xp, x):
    """A copy of array ``x`` to write into. ``x.copy()`` of a NumPy scalar (what NumPy's
    arithmetic gives for 0-d arrays, a gradient among them) is a scalar again: a view of it
    is a new array, and a write into that view would be lost, silently."""
    return xp.array(x, copy=True)


@primitive("CopySlices", dtypes=KEEP, complex=True)
def copy_slices(xp, base, value, *, chain):
    out = writable_copy(xp, base)
    replay_view(chain, out)[...] = value
    return out


@copy_slices.vjp("base")
def copy_slices_vjp_base(g, out, base, value, *, chain):
    return copy_slices(g, 0.0, chain=chain)


@copy_slices.vjp("value")
def copy_slices_vjp_value(g, out, base, value, *, chain):
    return unbroadcast(replay_view(chain, g), value)


@copy_slices.jvp("base")
def copy_slices_jvp_base(t, out, base, value, *, chain):
    return copy_slices(t, 0.0, chain=chain)


@copy_slices.jvp("value")
def copy_slices_jvp_value(t, out, base, value, *, chain):
    return copy_slices(zeros_like(out), t, chain=chain)
