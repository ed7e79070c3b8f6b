"""Broadcasting in both directions: ``broadcast_to`` (``expand``) and its adjoint ``sum_to``.

Every rule whose forward broadcasts reduces its gradient back with :func:`unbroadcast`.
"""
from .core import KEEP, primitive


@primitive("SumToSizeBackward0", dtypes=KEEP, linear=True, complex=True)
def sum_to(xp, x, *, shape):
    """Sum ``x`` down to ``shape`` (the shape it was broadcast from)."""
    shape = tuple(shape)
    if x.ndim < len(shape):  # leading 1s that a write dropped (w[0] = v with v.shape (1, n))
        x = x.reshape((1,) * (len(shape) - x.ndim) + tuple(x.shape))
    lead = x.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(lead + i for i, s in enumerate(shape)
                                      if s == 1 and x.shape[lead + i] != 1)
    if axes and len(axes) == lead and shape:  # leading dims only (a bias's gradient): the sum
        return x.sum(axis=axes)  # has the shape, a new array rather than a reshaped view
    if axes:
        x = x.sum(axis=axes, keepdims=True)
    return x.reshape(shape) if x.shape != shape else x


@sum_to.vjp("x")
def sum_to_vjp(g, out, x, *, shape):
    return broadcast_to(g, shape=x.shape)


@primitive("ExpandBackward0", dtypes=KEEP, view=True, linear=True, complex=True)
def broadcast_to(xp, x, *, shape):
    return xp.broadcast_to(x, tuple(shape))


@broadcast_to.vjp("x")
def broadcast_to_vjp(g, out, x, *, shape):
    return sum_to(g, shape=x.shape)


@primitive(dtypes=KEEP, complex=True)
def zeros_like(xp, x):
    return xp.zeros_like(x)


@primitive(dtypes=KEEP)
def zeros_of(xp, like, *, shape):
    """Zeros of ``shape`` with ``like``'s dtype and device (for scattering gradients into)."""
    return xp.zeros(tuple(shape), dtype=like.dtype)


def unbroadcast(g, like):
    """``g`` summed down to the shape of ``like`` (an operand that was broadcast; a
    Python number counts as shape ``()``)."""
    try:
        shape = like.shape
    except AttributeError:
        shape = ()
    try:
        return g if g.shape == shape else sum_to(g, shape=shape)
    except AttributeError:  # a Python-number gradient (AST mode on floats)
        return g


def expand_to(t, out):
    """A tangent broadcast up to the shape of the result ``out`` (for jvps of broadcasting
    ops; a Python-number tangent is broadcast too)."""
    try:
        if t.shape == out.shape:
            return t
    except AttributeError:
        if not hasattr(out, "shape"):  # a Python-number result (AST mode on floats)
            return t
        if not hasattr(t, "shape"):  # a Python-number tangent of an array or NumPy scalar
            return zeros_like(out) + t  # result: the result's type and dtype (``.sum()`` works)
    return broadcast_to(t, shape=out.shape)


@primitive(dtypes=KEEP)
def indicator(xp, condition, like):
    """1 where ``condition`` holds and 0 elsewhere, in ``like``'s dtype (so that counting
    ties or zeros in a float32 gradient stays float32); integer counts given as
    ``condition`` come back as those counts in that dtype."""
    return xp.asarray(condition).astype(like.dtype)
