"""NumPy's shape functions on tracers: reshaping, transposing, joining, splitting,
flipping, rolling, tiling, diagonals, triangles, take, broadcast_to."""

import numpy as np

from .base import FUNCTIONS, P, as_arrays, cast, dims, ndim, ravel, reshape, xp_of


def _transpose(a, axes=None):
    n = ndim(a)
    if axes is None:
        axes = tuple(reversed(range(n)))
    return P.permute(a, dims=tuple(int(d) % max(n, 1) for d in axes))


def _swapaxes(a, axis1, axis2):
    n = ndim(a)
    return P.transpose(a, dim0=axis1 % n, dim1=axis2 % n)


def _moveaxis(a, source, destination):
    n = ndim(a)
    src = [s % n for s in (source if isinstance(source, (tuple, list)) else (source,))]
    dst = [d % n for d in (destination if isinstance(destination, (tuple, list)) else (destination,))]
    order = [i for i in range(n) if i not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return P.permute(a, dims=tuple(order))


def _expand_dims(a, axis):
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    n = ndim(a) + len(axes)
    for ax in sorted(ax % n for ax in axes):
        a = P.unsqueeze(a, dim=ax)
    return a


def _squeeze(a, axis=None):
    return P.squeeze(a, dim=None if axis is None else dims(axis, ndim(a)))


def _concatenate(arrays, axis=0, out=None, dtype=None, **kw):
    arrays = as_arrays(arrays)
    if axis is None:
        arrays, axis = [ravel(x) for x in arrays], 0
    return cast(P.cat(*arrays, dim=axis % ndim(arrays[0])), dtype)


def _stack(arrays, axis=0, out=None, dtype=None, **kw):
    arrays = as_arrays(arrays)
    return cast(P.stack(*arrays, dim=axis % (ndim(arrays[0]) + 1)), dtype)


def _atleast(n):
    def grow(a):
        a = as_arrays([a])[0]
        while ndim(a) < n:
            a = P.unsqueeze(a, dim=0 if n < 3 or ndim(a) == 0 else ndim(a))
        return a
    return grow


def _hstack(arrays, **kw):
    arrays = [_atleast(1)(a) for a in as_arrays(arrays)]
    return _concatenate(arrays, axis=0 if ndim(arrays[0]) == 1 else 1)


def _vstack(arrays, **kw):
    return _concatenate([_atleast(2)(a) for a in as_arrays(arrays)], axis=0)


def _flip(m, axis=None):
    axes = tuple(range(ndim(m))) if axis is None else dims(axis, ndim(m))
    return P.flip(m, dims=axes) if axes else m


def _roll(a, shift, axis=None):
    if axis is None:
        return reshape(P.roll(ravel(a), shifts=(shift,), dims=(0,)), a.shape)
    shifts = shift if isinstance(shift, (tuple, list)) else (shift,)
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    return P.roll(a, shifts=tuple(shifts), dims=tuple(x % ndim(a) for x in axes))


def _tile(a, reps):
    reps = (reps,) if isinstance(reps, int) else tuple(reps)
    while ndim(a) < len(reps):
        a = P.unsqueeze(a, dim=0)
    reps = (1,) * (ndim(a) - len(reps)) + reps
    return P.repeat(a, repeats=reps)


def _diagonal(a, offset=0, axis1=0, axis2=1):
    return P.diagonal(a, offset=offset, dim1=axis1 % ndim(a), dim2=axis2 % ndim(a))


def _trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    return P.sum(_diagonal(a, offset, axis1, axis2), dim=(ndim(a) - 2,), keepdim=False)


def _split(ary, indices_or_sections, axis=0, unequal=False):
    n = ary.shape[axis % ndim(ary)]
    if isinstance(indices_or_sections, int):
        k = indices_or_sections
        if n % k and not unequal:
            raise ValueError("array split does not result in an equal division")
        sizes = tuple(n // k + (1 if i < n % k else 0) for i in range(k))
    else:
        bounds = [0] + [int(i) for i in indices_or_sections] + [n]
        sizes = tuple(max(b - a, 0) for a, b in zip(bounds, bounds[1:]))
    return list(P.split(ary, sizes=sizes, dim=axis % ndim(ary)))


def _tril(m, k=0):
    return P.tril(m, diagonal=k)


def _triu(m, k=0):
    return P.triu(m, diagonal=k)


def _take(a, indices, axis=None):
    if axis is None:
        a, axis = ravel(a), 0
    return P.index_select(a, xp_of(a).asarray(indices), dim=axis % ndim(a))


def _broadcast_to(array, shape, subok=False):
    return P.broadcast_to(array, shape=(shape,) if isinstance(shape, int) else tuple(shape))


def _copy(a, order="K", subok=False):
    return P.clone(a)


FUNCTIONS.update({
    np.reshape: reshape, np.transpose: _transpose, np.swapaxes: _swapaxes, np.moveaxis: _moveaxis,
    np.expand_dims: _expand_dims, np.squeeze: _squeeze, np.ravel: ravel,
    np.concatenate: _concatenate, np.stack: _stack, np.hstack: _hstack, np.vstack: _vstack,
    np.atleast_1d: _atleast(1), np.atleast_2d: _atleast(2),
    np.broadcast_to: _broadcast_to, np.copy: _copy, np.flip: _flip, np.roll: _roll, np.tile: _tile,
    np.diagonal: _diagonal, np.trace: _trace, np.split: _split,
    np.array_split: lambda ary, sections, axis=0: _split(ary, sections, axis, unequal=True),
    np.tril: _tril, np.triu: _triu, np.take: _take,
})
