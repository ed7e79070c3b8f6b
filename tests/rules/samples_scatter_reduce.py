"""Samples for the rules of tracegrad/rules/scatter_reduce.py (``scatter_reduce``,
``index_reduce``, ``put``), tracegrad/rules/extrema.py (``cummax``, ``cummin``, ``mode``)
and ``nextafter`` (tracegrad/rules/special.py), with PyTorch's equivalents.

Ties of amax/amin appear only two at a time: there the central finite difference is the
mean of the two one-sided slopes, which is the even split the rule gives. Ties of cummax,
cummin and mode (one position takes all) and nextafter where x == y are checked against
PyTorch in tests/ops/test_reduce_scatter_more.py instead.
"""
import warnings

import numpy as np

from .sampling import S, away, ints, r, zd

_I = np.array


def _sr(x, index, src, *, dim, reduce, include_self=True, tags=(), smooth=True):
    return S(x, index, src, dim=dim, reduce=reduce, include_self=include_self, tags=tags, smooth=smooth)


# ties of two: at position 1 two src elements, at position 0 x and a src element (which
# without include_self is no tie: x there is made to differ from the result, where
# PyTorch's formula and this rule part, see tracegrad/rules/scatter_reduce.py)
_TIES_X = _I([[1.0, 1.0, 2.0, 0.5]])
_TIES_X_APART = _I([[7.0, 7.0, 2.0, 0.5]])
_TIES_INDEX = _I([[1, 1, 0, 3, 0]])
_TIES_SRC = _I([[3.0, 3.0, 1.0, 2.0, -4.0]])
# prod with zeros: position 0 gets one zero (and x is 0 at position 2), position 1 two
_ZEROS_X = _I([[1.5, -2.0, 0.0, 0.7]])
_ZEROS_INDEX = _I([[0, 1, 1, 0, 2, 3]])
_ZEROS_SRC = _I([[0.0, 0.0, 0.0, 1.3, 2.0, -0.6]])

SAMPLES = {
    "scatter_reduce": [
        _sr(r(3, 4), ints(4, 3, 5), r(3, 5), dim=1, reduce="sum"),
        _sr(r(3, 4), ints(3, 2, 4), r(2, 4), dim=0, reduce="sum", include_self=False),
        _sr(r(3, 4), ints(4, 3, 2), r(3, 5), dim=1, reduce="sum"),  # index smaller than src
        _sr(away(3, 4), ints(4, 3, 5), away(3, 5), dim=1, reduce="prod"),
        _sr(away(3, 4), ints(3, 4, 4), away(4, 4), dim=0, reduce="prod", include_self=False),
        _sr(_ZEROS_X, _ZEROS_INDEX, _ZEROS_SRC, dim=1, reduce="prod", smooth=False),
        _sr(_ZEROS_X, _ZEROS_INDEX, _ZEROS_SRC, dim=1, reduce="prod", include_self=False, smooth=False),
        _sr(r(3, 4), ints(4, 3, 5), r(3, 5), dim=1, reduce="mean"),
        _sr(r(3, 4), ints(3, 2, 4), r(2, 4), dim=0, reduce="mean", include_self=False),
        _sr(r(3, 4), ints(4, 3, 5), r(3, 5), dim=1, reduce="amax"),
        _sr(r(3, 4), ints(4, 3, 5), r(3, 5), dim=1, reduce="amax", include_self=False),
        _sr(r(2, 3, 4), ints(3, 2, 4, 4), r(2, 4, 4), dim=1, reduce="amin"),
        _sr(r(3, 4), ints(3, 4, 4), r(4, 4), dim=0, reduce="amin", include_self=False),
        _sr(_TIES_X, _TIES_INDEX, _TIES_SRC, dim=1, reduce="amax", smooth=False),
        _sr(_TIES_X_APART, _TIES_INDEX, _TIES_SRC, dim=1, reduce="amax", include_self=False, smooth=False),
        _sr(-_TIES_X, _TIES_INDEX, -_TIES_SRC, dim=1, reduce="amin", smooth=False),
        _sr(r(3, 4), np.zeros((3, 0), dtype=np.int64), r(3, 0), dim=1, reduce="amax", tags="empty"),
        _sr(r(0, 4), np.zeros((0, 4), dtype=np.int64), r(0, 4), dim=1, reduce="prod", tags="empty"),
    ],
    "index_reduce": [
        _sr(away(4, 3), _I([0, 2, 0, 3, 2]), away(5, 3), dim=0, reduce="prod"),
        _sr(away(4, 3), _I([0, 2, 0, 3, 2]), away(5, 3), dim=0, reduce="prod", include_self=False),
        _sr(r(3, 4), _I([1, 1, 3]), r(3, 3), dim=1, reduce="mean"),
        _sr(r(3, 4), _I([1, 1, 3]), r(3, 3), dim=1, reduce="mean", include_self=False),
        _sr(r(2, 3, 2), _I([2, 0, 2, 2]), r(2, 4, 2), dim=1, reduce="amax"),
        _sr(r(3, 4), _I([0, 0]), r(2, 4), dim=0, reduce="amin", include_self=False),
        _sr(r(3, 4), np.zeros(0, dtype=np.int64), r(3, 0), dim=1, reduce="amax", tags="empty"),
    ],
    "put": [
        S(r(3, 4), _I([0, 5, 11, 5]), r(4)),
        S(r(3, 4), _I([[0, 5], [5, 2]]), r(2, 2), accumulate=True),
        S(r(2, 3), _I([4, 1]), r(1, 2)),
        S(zd(), _I([0, 0]), r(2), accumulate=True, tags="0d"),
        S(r(3, 4), np.zeros(0, dtype=np.int64), r(0), tags="empty"),
    ],
    "cummax": [S(r(3, 4), dim=1), S(r(2, 3, 4), dim=0), S(zd(), dim=0, tags="0d"),
               S(r(0, 3), dim=1, tags="empty"), S(r(3, 0), dim=1, tags="empty")],
    "cummin": [S(r(3, 4), dim=0), S(r(2, 3, 4), dim=2), S(zd(), dim=0, tags="0d"),
               S(r(0, 3), dim=0, tags="empty")],
    "mode": [S(r(3, 4), dim=1), S(r(3, 4), dim=0, keepdim=True), S(r(2, 3, 4), dim=2),
             S(zd(), dim=0, tags="0d"), S(r(0, 3), dim=1, tags="empty")],
    "nextafter": [S(r(3, 4), r(3, 4)), S(r(3, 4), r(4), tags="broadcast"), S(zd(), zd(), tags="0d"),
                  S(r(0, 3), r(3), tags="empty broadcast")],
}

EXEMPT = {
    "scatter_reduce": {"0d": "index needs the input's number of dims (the function reads 0-d as 1-d)"},
    "index_reduce": {"0d": "reduces slices along a dim (the function reads 0-d as 1-d)"},
}
BROADCASTING = {"nextafter"}


def _torch():
    import torch
    return torch


def _cut(index, src):
    """PyTorch differentiates src only where its shape is the index's: the block read."""
    return src[tuple(slice(0, n) for n in index.shape)]


def _index_reduce(x, index, src, dim, reduce, include_self=True):
    with warnings.catch_warnings():  # (PyTorch warns that index_reduce is in beta)
        warnings.simplefilter("ignore", UserWarning)
        return _torch().index_reduce(x, dim, index, src, reduce, include_self=include_self)


def _put(x, index, source, accumulate=False):
    """PyTorch's put. Without ``accumulate``, a source element overwritten by a later one
    at the same position gets no gradient here (PyTorch gives it the position's gradient;
    it calls repeats undefined): detached in PyTorch's call, which is the same function."""
    torch = _torch()
    if not accumulate:
        flat = (index.reshape(-1) % max(x.numel(), 1)).tolist()
        last = {t: i for i, t in enumerate(flat)}
        kept = torch.tensor([last[t] == i for i, t in enumerate(flat)], dtype=torch.bool).reshape(source.shape)
        source = torch.where(kept, source, source.detach())
    return torch.put(x, index, source, accumulate)


def _nextafter_inputs(rng):
    shapes = [((3, 4), (4,)), ((2, 1, 3), (4, 1)), ((), (2, 2)), ((1, 3), (2, 1))]
    a, b = shapes[int(rng.integers(len(shapes)))]
    return (rng.standard_normal(a), rng.standard_normal(b)), {}


TORCH = {
    "scatter_reduce": lambda x, index, src, dim, reduce, include_self=True: _torch().scatter_reduce(
        x, dim, index, _cut(index, src), reduce, include_self=include_self),
    "index_reduce": _index_reduce,
    "put": _put,
    "cummax": lambda x, dim: tuple(_torch().cummax(x, dim)),
    "cummin": lambda x, dim: tuple(_torch().cummin(x, dim)),
    "mode": lambda x, dim, keepdim=False: tuple(_torch().mode(x, dim, keepdim)),
    "nextafter": lambda x, y: _torch().nextafter(x, y),
}
BROADCAST_INPUTS = {"nextafter": _nextafter_inputs}
