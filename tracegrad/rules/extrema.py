"""Running extrema (``cummax``, ``cummin``) and the ``mode``: each gives values and the
positions they come from (int64), and the gradient of a value goes to its position, as in
PyTorch (a position picked several times gathers each of their gradients).

Positions are PyTorch's:

* cummax/cummin: the *last* position holding the running extremum (a tie moves it on,
  PyTorch compares with ``>=``/``<=``); once a NaN is met the value stays NaN and the
  position is the last NaN so far;
* mode: the most frequent value, the smallest of equally frequent ones, at the last
  position holding it. PyTorch's CPU kernel sorts the slice and answers the end of the
  longest run: the last position for slices of up to 16 elements (which its sort keeps in
  order), any position holding the mode for longer ones. Each NaN counts as a value of
  its own, sorted last (PyTorch leaves the order of NaNs to its sort).
"""
from .broadcast import zeros_of
from .core import KEEP, primitive
from .index import gather, scatter_add
from .reduce import select_dim_jvp, select_dim_vjp


def _positions(xp, shape, dim):
    """0, 1, 2... along ``dim``, broadcast over ``shape``."""
    view = [1] * len(shape)
    view[dim] = shape[dim]
    return xp.broadcast_to(xp.arange(shape[dim], dtype=xp.int64).reshape(view), shape)


def _running(xp, x, dim, op):
    """(values, indices) of the running extremum along ``dim`` (``op``: maximum/minimum)."""
    if x.ndim == 0:
        return x.copy(), xp.zeros((), dtype=xp.int64)
    if x.shape[dim] == 0:
        return x.copy(), xp.zeros(x.shape, dtype=xp.int64)
    extremum = op.accumulate(x, axis=dim)
    # The last position holding the extremum so far: where x is the running value (a NaN
    # counts as holding it), the latest such position up to here.
    holds = x == extremum
    if x.dtype.kind in "fc":
        holds |= xp.isnan(x)
    indices = xp.maximum.accumulate(xp.where(holds, _positions(xp, x.shape, dim), 0), axis=dim)
    return xp.take_along_axis(x, indices, axis=dim), indices


@primitive("CummaxBackward0", dtypes=KEEP, nout=2, result_names=("values", "indices"))
def cummax(xp, x, *, dim):
    return _running(xp, x, dim, xp.maximum)


@primitive("CumminBackward0", dtypes=KEEP, nout=2, result_names=("values", "indices"))
def cummin(xp, x, *, dim):
    return _running(xp, x, dim, xp.minimum)


def running_vjp(g, out, x, *, dim):
    if x.ndim == 0:
        return g[0]
    return scatter_add(zeros_of(g[0], shape=tuple(x.shape)), out[1], g[0], dim=dim)


def running_jvp(t, out, x, *, dim):
    return (t if x.ndim == 0 else gather(t, out[1], dim=dim)), None


for _p in (cummax, cummin):
    _p.vjp("x", uses="out")(running_vjp)
    _p.jvp("x")(running_jvp)


@primitive("ModeBackward0", dtypes=KEEP, nout=2, result_names=("values", "indices"))
def mode(xp, x, *, dim, keepdim=False):
    """(values, indices): the most frequent value along ``dim`` (see the module docstring)."""
    if x.ndim == 0:
        return x.copy(), xp.zeros((), dtype=xp.int64)
    rows = xp.moveaxis(x, dim, -1)
    lead, n = rows.shape[:-1], rows.shape[-1]
    rows = rows.reshape(-1, n)
    order = xp.argsort(rows, axis=-1, kind="stable")  # (NaNs last; equal values keep their order)
    ranked = xp.take_along_axis(rows, order, axis=-1)
    starts = xp.ones(ranked.shape, dtype=bool)
    starts[:, 1:] = ranked[:, 1:] != ranked[:, :-1]  # (a NaN differs from everything: a run of its own)
    ends = xp.ones(ranked.shape, dtype=bool)
    ends[:, :-1] = starts[:, 1:]
    pos = _positions(xp, ranked.shape, 1)
    first = xp.maximum.accumulate(xp.where(starts, pos, 0), axis=-1)
    last = xp.flip(xp.minimum.accumulate(xp.flip(xp.where(ends, pos, n), axis=-1), axis=-1), axis=-1)
    # the longest run, the first (smallest value) of equally long ones, and its last element
    end = xp.take_along_axis(last, xp.argmax(last - first, axis=-1)[:, None], axis=-1)
    values = xp.take_along_axis(ranked, end, axis=-1).reshape(lead)
    indices = xp.take_along_axis(order, end, axis=-1).reshape(lead).astype(xp.int64)
    if keepdim:
        values, indices = xp.expand_dims(values, dim), xp.expand_dims(indices, dim)
    return values, indices


mode.vjp("x", uses="out")(select_dim_vjp)
mode.jvp("x")(select_dim_jvp)

__all__ = ["cummax", "cummin", "mode"]
