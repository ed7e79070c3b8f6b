"""Array code outside the rule table, run on every sample of a vmap batch.

Some functions compute on backend arrays directly (LAPACK factorisations, index searches,
error checks): given a BatchedTensor they would read its ``_data`` -- sample 0 only -- and
return sample 0's answer for every sample. :func:`on_samples` runs such a function on
every sample instead: the batched operands are laid out as plain Tensors with one
leading dim per vmap level (unbatched ones expanded), the function runs on them, and its
results are batched again at the same levels. Results carry no autograd history: this is
for values that are not differentiated (indices, factorisations PyTorch does not
differentiate, status codes).
"""
import itertools
import math

from ..runtime import grad_mode
from ..runtime.tensor import Tensor
from ..runtime.vmapped import is_vmapped

__all__ = ["batched_like", "on_samples"]


def on_samples(fn, *args, leading=False):
    """``fn(*args)`` for every sample of the vmap batches among ``args`` (Tensors or other
    values), results (a Tensor or a tuple of Tensors) batched again.

    ``leading=True``: ``fn`` treats leading dims as a batch already (as NumPy's linalg
    does), so it runs once on the whole batch; otherwise once per sample, on plain Tensors.
    Without batched operands it is ``fn(*args)``."""
    levels = sorted({lvl for a in args for lvl in _levels_of(a)})
    if not levels:
        return fn(*args)
    from ._batched import _size_of
    sizes = tuple(_size_of(lvl) for lvl in levels)
    with grad_mode.no_grad():
        phys = [_physical(a.detach(), levels, sizes) if isinstance(a, Tensor) else a for a in args]
        if leading:
            out = fn(*phys)
        else:
            out = _loop(fn, args, phys, sizes)
    return _rebatch(out, levels)


def _levels_of(a):
    found = []
    while is_vmapped(a):
        found.append(a._level)
        a = a._phys
    return found


def _physical(t, levels, sizes):
    """Plain Tensor ``t`` as (B_1, ..., B_k, *sample) for ``levels`` (outermost first)."""
    if not levels:
        return t
    top, size = levels[-1], sizes[-1]
    if is_vmapped(t) and t._level == top:
        return _physical(t._phys, levels[:-1], sizes[:-1])   # (B_1..B_{k-1}, B_k, *sample)
    inner = _physical(t, levels[:-1], sizes[:-1])
    k = len(levels) - 1
    shape = tuple(inner.shape)
    return inner.unsqueeze(k).expand(shape[:k] + (size,) + shape[k:])


def _loop(fn, args, phys, sizes):
    """``fn`` sample by sample, results stacked into (B_1, ..., B_k, *result)."""
    from ..ops.shape import stack
    if math.prod(sizes) == 0:  # (an empty batch: fn on one sample's stand-in gives the shapes)
        out = fn(*[_stand_in(a) for a in args])
        return _map(out, lambda r: r.new_empty(sizes + tuple(r.shape)))
    k = len(sizes)
    outs = [fn(*[p[idx] if isinstance(p, Tensor) else p for p in phys])
            for idx in itertools.product(*(range(s) for s in sizes))]
    first = outs[0]
    if isinstance(first, tuple):
        return type(first)(*[_stacked(stack, [o[j] for o in outs], sizes, k) for j in range(len(first))]) \
            if hasattr(first, "_fields") else tuple(_stacked(stack, [o[j] for o in outs], sizes, k)
                                                    for j in range(len(first)))
    return _stacked(stack, outs, sizes, k)


def _stacked(stack, parts, sizes, k):
    if not isinstance(parts[0], Tensor):
        raise TypeError("on_samples: the function must return Tensors (or a tuple of them)")
    out = stack(parts)
    return out.reshape(sizes + tuple(out.shape[1:]))


def _stand_in(a):
    from ..runtime.tensor import wrap
    return wrap(a._data) if is_vmapped(a) else a


def _map(out, f):
    if isinstance(out, tuple):
        vals = [f(o) for o in out]
        return type(out)(*vals) if hasattr(out, "_fields") else tuple(vals)
    return f(out)


def _rebatch(out, levels):
    from ._batched import batched

    def wrap_levels(t):
        for lvl in levels:
            t = batched(t, lvl)
        return t
    return _map(out, wrap_levels)


def batched_like(t, like):
    """Plain Tensor ``t`` batched at ``like``'s vmap levels, every sample a copy of it (its
    own memory): what torch's ``*_like`` and ``new_*`` factories give a batched tensor, so
    that in-place writes of per-sample values into it work."""
    levels = sorted(set(_levels_of(like)))
    if not levels:
        return t
    from ._batched import _size_of
    sizes = tuple(_size_of(lvl) for lvl in levels)
    return _rebatch(_physical(t, levels, sizes).clone(), levels)
