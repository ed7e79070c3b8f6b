"""NumPy's shape functions on tracers: reshaping, transposing and moving axes, joining
and splitting, flipping, rotating, rolling, tiling and repeating, broadcasting.

Each is the table's shape rule (permute, cat, split, flip, roll, repeat, ...) or a
short composition of them with NumPy's argument conventions: negative axes, axis tuples,
``axis=None`` meaning the flattened array, and NumPy's errors for bad axes and shapes."""
import math

import numpy as np

from ....rules import arrays as A
from ..tape import shape_of
from .base import FUNCTIONS, P, as_arrays, cast, dims, is_traced, ndim, ravel, register, reshape


def _axis(axis, n):
    """One NumPy axis (negatives allowed) as a dim, with NumPy's AxisError."""
    axis = int(axis)
    if not -n <= axis < n:
        raise np.exceptions.AxisError(axis, n)
    return axis % n


def _axes(axis, n):
    """An int or a sequence of them as dims, in the order given (duplicates refused)."""
    out = [_axis(a, n) for a in (axis if isinstance(axis, (tuple, list)) else (axis,))]
    if len(set(out)) != len(out):
        raise ValueError("repeated axis")
    return out


def _static(v):
    """A count or shape argument as Python ints (a traced one is read, with a guard)."""
    return v.tolist() if is_traced(v) else v


# -- transposing and moving axes ---------------------------------------------------------------

@register(np.transpose, getattr(np, "permute_dims", None))
def _transpose(a, axes=None):
    n = ndim(a)
    if axes is None:
        axes = tuple(reversed(range(n)))
    axes = _axes(axes, max(n, 1)) if n else ()
    if len(axes) != n:
        raise ValueError("axes don't match array")
    return P.permute(a, dims=tuple(axes))


@register(getattr(np, "matrix_transpose", None))
def _matrix_transpose(x):
    if ndim(x) < 2:
        raise ValueError(f"Input array must be at least 2-dimensional, but it is {ndim(x)}")
    return P.transpose(x, dim0=ndim(x) - 2, dim1=ndim(x) - 1)


@register(np.swapaxes)
def _swapaxes(a, axis1, axis2):
    n = ndim(a)
    return P.transpose(a, dim0=_axis(axis1, n), dim1=_axis(axis2, n))


@register(np.moveaxis)
def _moveaxis(a, source, destination):
    n = ndim(a)
    src, dst = _axes(source, n), _axes(destination, n)
    if len(src) != len(dst):
        raise ValueError("`source` and `destination` arguments must have the same number of elements")
    order = [i for i in range(n) if i not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return P.permute(a, dims=tuple(order))


@register(np.rollaxis)
def _rollaxis(a, axis, start=0):
    n = ndim(a)
    axis = _axis(axis, n)
    if not -n <= start <= n:
        raise np.exceptions.AxisError(f"start={start} out of range for a {n}-d array")
    start %= n + 1
    if axis < start:
        start -= 1
    if axis == start:
        return a
    order = [i for i in range(n) if i != axis]
    order.insert(start, axis)
    return P.permute(a, dims=tuple(order))


@register(np.expand_dims)
def _expand_dims(a, axis):
    n = ndim(a) + (len(axis) if isinstance(axis, (tuple, list)) else 1)
    for ax in sorted(_axes(axis, n)):
        a = P.unsqueeze(a, dim=ax)
    return a


@register(np.squeeze)
def _squeeze(a, axis=None):
    if axis is None:
        return P.squeeze(a)
    axes = _axes(axis, max(ndim(a), 1)) if ndim(a) else []
    if any(shape_of(a)[d] != 1 for d in axes):
        raise ValueError("cannot select an axis to squeeze out which has size not equal to one")
    return P.squeeze(a, dim=tuple(sorted(axes))) if axes else a


# -- joining -----------------------------------------------------------------------------------

@register(np.concatenate, getattr(np, "concat", None))
def _concatenate(arrays, axis=0, out=None, dtype=None, casting="same_kind"):
    arrays = as_arrays(arrays)
    if axis is None:
        arrays, axis = [ravel(x) for x in arrays], 0
    if ndim(arrays[0]) == 0:
        raise ValueError("zero-dimensional arrays cannot be concatenated")
    return cast(P.cat(*arrays, dim=_axis(axis, ndim(arrays[0]))), dtype)


@register(np.stack)
def _stack(arrays, axis=0, out=None, dtype=None, casting="same_kind"):
    arrays = as_arrays(arrays)
    if len({shape_of(a) for a in arrays}) > 1:
        raise ValueError("all input arrays must have the same shape")
    return cast(P.stack(*arrays, dim=_axis(axis, ndim(arrays[0]) + 1)), dtype)


def _atleast(n):
    def grow(a):
        a = as_arrays([a])[0]
        if n == 3 and ndim(a) == 1:
            return P.unsqueeze(P.unsqueeze(a, dim=0), dim=2)  # (1, N, 1)
        if n == 3 and ndim(a) == 2:
            return P.unsqueeze(a, dim=2)                      # (M, N, 1)
        return A.unsqueeze_to(a, n)
    return grow


def _atleast_all(n):
    def atleast(*arys):
        out = [_atleast(n)(a) for a in arys]
        return out[0] if len(out) == 1 else tuple(out)
    return atleast


FUNCTIONS.update({np.atleast_1d: _atleast_all(1), np.atleast_2d: _atleast_all(2),
                  np.atleast_3d: _atleast_all(3)})


@register(np.hstack)
def _hstack(tup, dtype=None, casting="same_kind"):
    arrays = [_atleast(1)(a) for a in as_arrays(tup)]
    return _concatenate(arrays, axis=0 if ndim(arrays[0]) == 1 else 1, dtype=dtype)


@register(np.vstack, getattr(np, "row_stack", None))
def _vstack(tup, dtype=None, casting="same_kind"):
    return _concatenate([_atleast(2)(a) for a in as_arrays(tup)], axis=0, dtype=dtype)


@register(np.dstack)
def _dstack(tup):
    return _concatenate([_atleast(3)(a) for a in as_arrays(tup)], axis=2)


@register(np.column_stack)
def _column_stack(tup):
    cols = [P.unsqueeze(a, dim=1) if ndim(a) < 2 else a for a in (_atleast(1)(b) for b in as_arrays(tup))]
    return _concatenate(cols, axis=1)


@register(np.append)
def _append(arr, values, axis=None):
    if axis is None:
        return _concatenate([ravel(a) for a in as_arrays([arr, values])], axis=0)
    return _concatenate([arr, values], axis=axis)


# -- splitting ---------------------------------------------------------------------------------

@register(np.split)
def _split(ary, indices_or_sections, axis=0, unequal=False):
    """NumPy's pieces: one ``split`` where they tile the axis, else one slice each
    (indices may be negative, out of order or past the end, as slices allow)."""
    d = _axis(axis, ndim(ary))
    n = shape_of(ary)[d]
    sections = _static(indices_or_sections)
    if isinstance(sections, (int, np.integer)):
        k = int(sections)
        if k <= 0:
            raise ValueError("number sections must be larger than 0.")
        if n % k and not unequal:
            raise ValueError("array split does not result in an equal division")
        bounds = np.cumsum([0] + [n // k + (1 if i < n % k else 0) for i in range(k)]).tolist()
    else:
        bounds = [0] + [int(i) for i in sections] + [n]
    spans = [slice(a, b).indices(n)[:2] for a, b in zip(bounds, bounds[1:])]
    spans = [(a, max(a, b)) for a, b in spans]
    if all(a == prev[1] for a, prev in zip([s[0] for s in spans[1:]], spans)) and spans[0][0] == 0 \
            and spans[-1][1] == n:
        return list(P.split(ary, sizes=tuple(b - a for a, b in spans), dim=d))
    return [A.slice_along(ary, d, a, b) for a, b in spans]


@register(np.array_split)
def _array_split(ary, indices_or_sections, axis=0):
    return _split(ary, indices_or_sections, axis, unequal=True)


def _split_at(axis, least):
    def split(ary, indices_or_sections):
        if ndim(ary) < least:
            raise ValueError(f"{['', 'hsplit', 'vsplit', 'dsplit'][least]} only works on arrays of "
                             f"{least} or more dimensions")
        return _split(ary, indices_or_sections, axis=1 if axis == "h" and ndim(ary) > 1 else
                      (0 if axis == "h" else axis))
    return split


FUNCTIONS.update({np.hsplit: _split_at("h", 1), np.vsplit: _split_at(0, 2), np.dsplit: _split_at(2, 3)})


if hasattr(np, "unstack"):
    @register(np.unstack)
    def _unstack(x, *, axis=0):
        return tuple(P.unbind(x, dim=_axis(axis, ndim(x))))


# -- flipping, rotating, rolling ---------------------------------------------------------------

# NumPy's flips and rotations are views of their argument (negative strides), so they are
# recorded as views too -- a reversing basic index, a transpose -- which writes through them
# follow (see tape/aliasing.py); a kernel that copied would lose them.

def _reversed(m, axes):
    """``m`` reversed along ``axes``: the view ``m[..., ::-1, ...]``."""
    if not axes:
        return m
    rev = slice(None, None, -1)
    return P.basic_index(m, index=tuple(rev if d in axes else slice(None) for d in range(ndim(m))))


@register(np.flip)
def _flip(m, axis=None):
    if ndim(m) == 0:  # (NumPy's m[()]: a number, a copy)
        return P.clone(m) if is_traced(m) else np.flip(m)
    axes = tuple(range(ndim(m))) if axis is None else dims(axis, ndim(m))
    return _reversed(m, axes) if axes else P.basic_index(m, index=(slice(None),) * ndim(m))


@register(np.flipud)
def _flipud(m):
    if ndim(m) < 1:
        raise ValueError("Input must be >= 1-d.")
    return _reversed(m, (0,))


@register(np.fliplr)
def _fliplr(m):
    if ndim(m) < 2:
        raise ValueError("Input must be >= 2-d.")
    return _reversed(m, (1,))


@register(np.rot90)
def _rot90(m, k=1, axes=(0, 1)):
    n = ndim(m)
    if len(axes) != 2:
        raise ValueError("len(axes) must be 2.")
    d0, d1 = _axis(axes[0], n), _axis(axes[1], n)
    if d0 == d1:
        raise ValueError("Axes must be different.")
    k = int(k) % 4
    if k == 0:
        return P.basic_index(m, index=(slice(None),) * n)
    if k == 2:
        return _reversed(m, (d0, d1))
    perm = list(range(n))
    perm[d0], perm[d1] = perm[d1], perm[d0]
    if k == 1:
        return P.permute(_reversed(m, (d1,)), dims=tuple(perm))
    return _reversed(P.permute(m, dims=tuple(perm)), (d1,))


@register(np.roll)
def _roll(a, shift, axis=None):
    shift = _static(shift)
    if axis is None:
        return reshape(P.roll(ravel(a), shifts=(int(np.sum(shift)),), dims=(0,)), shape_of(a))
    shifts, axes = np.broadcast_arrays(np.asarray(shift), np.asarray(axis))
    total = {}
    for s, ax in zip(shifts.ravel().tolist(), axes.ravel().tolist()):
        d = _axis(ax, ndim(a))
        total[d] = total.get(d, 0) + int(s)
    return P.roll(a, shifts=tuple(total.values()), dims=tuple(total))


# -- repeating ---------------------------------------------------------------------------------

@register(np.tile)
def _tile(A_, reps):
    reps = _static(reps)
    reps = (int(reps),) if isinstance(reps, (int, np.integer)) else tuple(int(r) for r in reps)
    a = A.unsqueeze_to(as_arrays([A_])[0], len(reps))
    reps = (1,) * (ndim(a) - len(reps)) + reps
    return P.repeat(a, repeats=reps)


@register(np.repeat)
def _repeat(a, repeats, axis=None):
    a = as_arrays([a])[0]
    repeats = np.asarray(_static(repeats))
    if repeats.dtype.kind not in "iub":
        raise TypeError("Cannot cast array data from dtype('float64') to dtype('int64') according "
                        "to the rule 'safe'")
    if axis is None:
        a, d = ravel(a), 0
    else:
        d = _axis(axis, ndim(a))
    if repeats.ndim and repeats.size not in (1, shape_of(a)[d]):
        raise ValueError(f"operands could not be broadcast together with shape ({shape_of(a)[d]},) "
                         f"({repeats.size},)")
    if (repeats < 0).any():
        raise ValueError("repeats may not contain negative values.")
    return A.repeat_interleave(a, repeats.ravel() if repeats.size > 1 else int(repeats.ravel()[0]), d)


@register(np.resize)
def _resize(a, new_shape):
    new_shape = _static(new_shape)
    shape = (int(new_shape),) if isinstance(new_shape, (int, np.integer)) else tuple(int(s) for s in new_shape)
    size, want = math.prod(shape_of(a)), math.prod(shape)
    if not size or not want:
        return P.zeros_of(a, shape=shape)
    return reshape(A.unflat_take(a, np.arange(want) % size), shape)


# -- broadcasting and copies -------------------------------------------------------------------

@register(np.broadcast_to)
def _broadcast_to(array, shape, subok=False):
    shape = _static(shape)
    return P.broadcast_to(array, shape=(int(shape),) if isinstance(shape, (int, np.integer))
                          else tuple(int(s) for s in shape))


@register(np.broadcast_arrays)
def _broadcast_arrays(*args, subok=False):
    args = as_arrays(args)
    shape = np.broadcast_shapes(*(shape_of(a) for a in args))
    return tuple(a if shape_of(a) == shape else P.broadcast_to(a, shape=shape) for a in args)


@register(np.copy)
def _copy(a, order="K", subok=False):
    return P.clone(a)


FUNCTIONS.update({np.reshape: reshape, np.ravel: ravel})
