"""History of views under in-place writes, as PyTorch keeps it.

A view records the chain of view primitives from its base (``t._view = (chain, version,
tracked)``). Writing into a view in grad mode makes the base's new history a
``CopySlices`` node, and the written view's ``grad_fn`` is re-derived from the base by
replaying the chain. Other views of the same base notice the version change and re-derive
theirs on next use, so gradients always flow through the base's current history.
"""
from ..rules.views import copy_slices, replay_view
from . import grad_mode
from .hooks import release_retain, retain_grad

__all__ = ["rebase_history", "refresh_view_grad_fn", "refresh_stale_view"]


def rebase_history(t, node):
    """Make ``node`` (just recorded for an in-place op on ``t``) the history of ``t``; a
    ``retain_grad()`` follows the tensor to its new history, as in PyTorch."""
    retained = t.retains_grad
    if retained:
        release_retain(t)
    if t._base is None or t._view is None:
        t._grad_fn, t._output_nr, t._requires_grad = node, 0, True
    else:
        _rebase_view(t, node)
    if retained:
        retain_grad(t)


def _rebase_view(t, node):
    from .dispatch import _record
    from .tensor import wrap
    base = t._base
    chain = t._view[0]
    value = wrap(t._data, True, node, 0)
    base._grad_fn = _record(copy_slices, (base, value), {"chain": chain}, 0b11)
    base._output_nr, base._requires_grad = 0, True
    _regenerate(t, chain)


def refresh_stale_view(t):
    """For a view: re-derive its grad_fn if its base changed since (cheap check first)."""
    if t._vc[0] != t._view[1]:
        refresh_view_grad_fn(t)


def refresh_view_grad_fn(t):
    """Re-derive a tracked view's ``grad_fn`` if its base changed since it was set."""
    chain, version, tracked = t._view
    if not tracked or t._vc[0] == version:
        return
    base = t._base
    if base._grad_fn is None and not base._requires_grad:
        t._view = (chain, t._vc[0], tracked)
        return
    _regenerate(t, chain)


def _regenerate(t, chain):
    prev = grad_mode.swap(True, False)  # record the replay, whatever the current mode
    try:
        fresh = replay_view(chain, t._base)
    finally:
        grad_mode.restore(prev)
    t._grad_fn, t._output_nr, t._requires_grad = fresh._grad_fn, fresh._output_nr, fresh._requires_grad
    t._view = (chain, t._vc[0], True)
