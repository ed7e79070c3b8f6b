"""History of views under in-place writes, as PyTorch keeps it.

A view records the chain of view primitives from its base (``t._view = (chain, version,
tracked)``). Writing into a view in grad mode makes the base's new history a
``CopySlices`` node, and the written view's ``grad_fn`` is re-derived from the base by
replaying the chain. Other views of the same base notice the version change and re-derive
theirs on next use, so gradients always flow through the base's current history.
"""
import weakref

from .. import backend
from ..rules.views import copy_slices, replay_view
from . import grad_mode
from .hooks import release_retain, retain_grad
from .node import FREED, Node

__all__ = ["CopySlices", "rebase_history", "refresh_view_grad_fn", "refresh_stale_view"]


class CopySlices(Node):
    """The base's history after an in-place op wrote into one of its views, as in PyTorch.

    It wraps the in-place op's node ``fn``: its edges are the base's previous history, then
    ``fn``'s edges other than the written view's own. Backward takes the region of the
    base's gradient that the view covers, runs ``fn`` on it, and puts ``fn``'s gradient for
    the view's old value back into that region (the rest of the base passes straight on).
    """

    __slots__ = ("fn", "chain", "_view_edge", "_view_nr", "_state", "_outs")

    def __init__(self, base_edge, fn, view_edge, view_nr, chain):
        self.fn, self.chain = fn, chain
        self._view_edge, self._view_nr = view_edge, view_nr
        self._next_functions = (base_edge,) + tuple(
            e for j, e in enumerate(fn._next_functions) if j != view_edge)
        self._extra = None
        self._state = None  # what the engine set (claimed, freed); until then fn's state
        self._outs = None

    @property
    def _saved(self):
        return self.fn._saved if self._state is None else self._state

    @_saved.setter
    def _saved(self, state):
        self._state = state

    def name(self):
        return "torch::autograd::CopySlices"

    def saved_items(self):
        return self.fn.saved_items()

    def _release(self):
        self.fn._release()
        self._state = FREED

    def _apply(self, grads, graph):
        g = grads[0]
        region = replay_view(self.chain, g)
        fn_grads = [None] * (1 if self.fn._outs is None else len(self.fn._outs))
        fn_grads[self._view_nr] = region.clone() if graph else region.copy()
        res = self.fn._apply(fn_grads, graph)
        own = res[self._view_edge] if self._view_edge is not None else None
        base = copy_slices(g, 0.0 if own is None else own, chain=self.chain)
        return (base,) + tuple(r for j, r in enumerate(res) if j != self._view_edge)


def rebase_history(t, node, view_edge=0, output_nr=0):
    """Make output ``output_nr`` of ``node`` (just recorded for an in-place op on ``t``)
    the history of ``t``; ``view_edge`` is the index of ``t``'s own edge among the node's
    (None if it has none). A ``retain_grad()`` follows the tensor to its new history."""
    retained = t.retains_grad
    if retained:
        release_retain(t)
    if t._base is None or t._view is None:
        t._grad_fn, t._output_nr, t._requires_grad = node, output_nr, True
    else:
        _rebase_view(t, node, view_edge, output_nr)
    if retained:
        retain_grad(t)


def _rebase_view(t, node, view_edge, output_nr):
    from .dispatch import anomaly_enabled, edge_of
    base = t._base
    chain = t._view[0]
    retained = base.retains_grad  # the base's retained grad follows it to its new history
    if retained:
        release_retain(base)
    base._grad_fn = CopySlices(edge_of(base), node, view_edge, output_nr, chain)
    base._output_nr, base._requires_grad = 0, True
    if retained:
        retain_grad(base)
    if anomaly_enabled:
        from .anomaly import record_trace
        record_trace(base._grad_fn)
    _regenerate(t, chain)
    if getattr(node, "_out", None) is True:  # the node will save its result: see WrittenView
        node._extras()["result_link"] = WrittenView(t)


class WrittenView:
    """Where the saved result of an in-place op on a view joins a graph of the backward.

    The result is the view as written, so under ``create_graph`` its history is the view's
    new ``grad_fn`` (replayed over ``CopySlices``), as in PyTorch -- not the in-place node
    itself, which runs only inside ``CopySlices``. Both are held weakly (no reference
    cycle through the node); a view that died meanwhile is replayed again over the base's
    shape, which is all a view node needs.
    """

    __slots__ = ("_grad_fn", "_output_nr", "_copy_slices", "_chain", "_base_shape")

    def __init__(self, t):
        self._grad_fn, self._output_nr = weakref.ref(t._grad_fn), t._output_nr
        self._copy_slices, self._chain = weakref.ref(t._base._grad_fn), t._view[0]
        self._base_shape = t._base.shape

    def wrap(self, data):
        """``data`` (the saved result) as a Tensor of the written view's history, or None
        when that history is gone (then no backward can reach the node either)."""
        from .tensor import wrap
        fn = self._grad_fn()
        if fn is not None:
            return wrap(data, True, fn, self._output_nr)
        copy_slices_node = self._copy_slices()
        if copy_slices_node is None:
            return None
        xp = backend.namespace_of(data)
        base = wrap(xp.broadcast_to(xp.zeros((), data.dtype), self._base_shape), True, copy_slices_node, 0)
        prev = grad_mode.swap(True, False)
        try:
            view = replay_view(self._chain, base)
        finally:
            grad_mode.restore(prev)
        return wrap(data, True, view._grad_fn, view._output_nr)


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
