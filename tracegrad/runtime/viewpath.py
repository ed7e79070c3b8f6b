"""The eager fast path of view rules: ``x.view(...)``, ``x.transpose(1, 2)``, ``x.split(16, 2)``.

A view rule's node never saves a value (its vjp reads the operand's shape, or nothing), its
result keeps the operand's dtype, and its outputs share the operand's storage and version
counter: :func:`view_op` does :func:`dispatch.apply`'s work for exactly that -- kernel,
node, Tensors linked to the base -- in one frame, for a plain Tensor with nothing in its
``_extra`` (no hooks, retained grad, tangent, inference flag, custom Function's view) while
no profiler, vmap or forward AD runs; anything else goes through the rule itself
(``prim(x, **params)``), so results, nodes and errors are ``apply``'s (the tests compare
the two field by field). nanoGPT's attention makes six views per layer; for a small tensor
the Python around NumPy's few-hundred-nanosecond view is the whole cost.
"""
from .. import backend
from ..rules.core import KEEP, Meta
from . import dispatch as _d
from . import forward as _forward
from . import grad_mode
from .dispatch import _kernel_error, _node_class, grad_accumulator
from .node import NOTHING_SAVED, own_copy
from .tensor import PLAIN_SUBCLASSES as _PLAIN
from .tensor import INFERENCE_VIEW, Tensor
from .views import refresh_view_grad_fn

__all__ = ["view_op"]

_state = grad_mode.state
_DUAL = _forward.ACTIVE
_GRAD, _INFERENCE = grad_mode.GRAD, grad_mode.INFERENCE
_OFF = grad_mode.OFF
_NS_BY_TYPE = backend._NS_BY_TYPE
_POS0 = (0,)
_alloc = object.__new__


def view_op(prim, x, params):
    """``prim(x, **params)`` for a view rule ``prim`` of one operand, one or several
    (``nout=None``) outputs; ``params`` is kept by the node and the views' chains (as
    ``apply`` keeps it), so the caller passes a dict of its own."""
    if (type(x) is not Tensor and type(x) not in _PLAIN) or x._extra is not None or (
            _d.observer is not None or _d.batching is not None or _DUAL[0]) or not (
            _LEAN.get(prim) or _lean(prim)):
        return prim(x, **params)
    data = x._data
    view = x._view
    if view is not None and x._vc[0] != view[1]:
        refresh_view_grad_fn(x)  # (its base was written since: its grad_fn is re-derived)
        view = x._view
    try:
        out = prim.impl(_NS_BY_TYPE[type(data)], data, **params)
    except ValueError as e:
        raise _kernel_error(e, (data,)) from None
    mode = _state.mode if _OFF[0] else _GRAD
    node = None
    if x._requires_grad and mode == _GRAD:
        fn = x._grad_fn
        edge = (fn, x._output_nr) if fn is not None else (grad_accumulator(x), 0)
        cls = prim.node_cls or _node_class(prim, (x,), params)
        node = (_MAKERS.get(cls) or _maker(cls))(cls, edge, data, params)
    vc = x._vc
    if vc is None:
        vc = x._vc = [0]
    base = x._base
    if base is None:
        base = x
    if view is None:
        chain, tracked = (), mode == _GRAD
    else:
        chain = view[0]
        tracked = (view[2] or None) if mode == _GRAD else False
    # a view made without recording takes its operand's requires_grad (as in PyTorch)
    requires_grad = node is not None or (mode != _GRAD and x._requires_grad)
    if prim.nout == 1:
        return _view_tensor(out, requires_grad, node, 0, base, vc, (chain + ((prim, params, 0),), vc[0], tracked), mode)
    outs = tuple(out)
    if node is not None:
        xp = _NS_BY_TYPE[type(data)]
        node._outs = tuple((o.shape, o.dtype, xp) for o in outs)
    version = vc[0]
    return tuple(_view_tensor(o, requires_grad, node, k, base, vc, (chain + ((prim, params, k),), version, tracked),
                              mode) for k, o in enumerate(outs))


def _view_tensor(out, requires_grad, node, k, base, vc, view, mode):
    """Output ``k`` of a view: ``wrap`` and ``_link_views``' fields in one call."""
    t = _alloc(Tensor)
    t._data = out
    t._requires_grad = requires_grad
    t._grad_fn = node
    t._output_nr = k if node is not None else 0
    t._grad = None
    t._vc = vc
    t._base = base
    t._view = view
    t._acc = None
    # (x is a normal tensor here: a view of it made in inference mode is one too, as in
    # PyTorch, flagged for the in-place refusal's message -- see dispatch._link_views)
    t._extra = {INFERENCE_VIEW: True} if mode == _INFERENCE else None
    return t


def _new_view_node(cls, edge, data, params):
    """A node of view rule class ``cls``: one edge, the operand's shape kept (the vjps of
    shape-only views read it), nothing saved. Each class has its own copy (see
    ``node.own_copy``)."""
    node = cls()
    node._next_functions = (edge,)
    node._extra = None
    m = _alloc(Meta)
    m.shape = data.shape
    m.strides = data.strides
    m.dtype = data.dtype
    node._args = (m,)
    node._vers = None
    node._out = None
    node._params = params or None
    node._pos = _POS0
    node._saved = NOTHING_SAVED
    node._outs = None
    if _d.anomaly_enabled:
        from .anomaly import record_trace
        record_trace(node)
    return node


_MAKERS = {}
_LEAN = {}  # view rule -> whether view_op may run it (see _lean)


def _lean(prim):
    """Whether ``prim`` is what view_op assumes: a differentiable view rule of one operand
    that keeps its dtype and whose node saves nothing (a rule declared otherwise goes
    through ``apply``)."""
    ok = _LEAN[prim] = bool(prim.view and prim.differentiable and prim.dtypes == KEEP
                            and prim.diff_positions(1) == _POS0 and prim.save_plan(1, 1) == ((), False))
    return ok


def _maker(cls):
    make = _MAKERS[cls] = own_copy(_new_view_node)
    return make
