"""The eager fast paths: Tensor operators and methods of one- and two-operand rules.

``x * 1.01``, ``a + b``, ``x.tanh()``: the same work as :func:`dispatch.apply` (which
they hand anything unusual to: promotion, devices, vmap, forward AD, a profiler), done for
the common case in as few Python operations as possible -- for 16 floats the Python
around NumPy is most of the time of an operation. What they skip, they test for first:
each shortcut here keeps ``apply``'s results, nodes and errors.
"""

from .. import backend
from ..backend import dtypes as _dt
from ..backend.quiet import FP_ERRORS, quietly
from ..backend.number_operands import CONSTANTS as _CONSTANTS, REAL as _REAL  # (numbers as 0-d arrays)
from ..backend.number_operands import constant_of as _constant_of
from ..rules.core import FLOAT, Meta, meta
from . import dispatch as _d
from . import forward as _forward
from . import grad_mode
from .node import _POS0, _POS01, node_class, own_copy
from .dispatch import (_NO_EDGE, _NO_PARAMS, _NUMBER_RANK, NOTHING_SAVED, SAVED, _kernel_error,
                       _node_class, _record, _result, _save_operand, _untracked, apply, edge_of, save_result)
from .saved_hooks import _active as _PACKING
from .tensor import PLAIN_SUBCLASSES as _PLAIN
from .tensor import Tensor, wrap
from .views import refresh_stale_view

__all__ = ["eager_binary", "eager_unary", "untracked_arrays", "untracked_indices", "untracked_result"]

_state = grad_mode.state
_DUAL = _forward.ACTIVE  # true while a forward AD level is open: ops then go through apply()
_GRAD = grad_mode.GRAD
_OFF = grad_mode.OFF  # threads out of grad mode: none, and every thread records
_NS_BY_TYPE = backend._NS_BY_TYPE
_ARRAY_TYPES = backend.ARRAY_TYPE_SET  # (filled in place when CUDA loads)
_CPU = backend.cpu  # NumPy (only the CPU namespace's arrays take the shortcuts below)
_NDARRAY = _CPU.ndarray
_alloc = object.__new__


def eager_unary(prim):
    """The eager fast path of a one-operand rule, made once per rule: a closure, so a
    Tensor method is this function itself (no further call layers)."""
    fn = _FAST.get((prim, 1))
    if fn is not None:
        return fn
    impl, float_only = prim.impl, prim.dtypes is FLOAT
    recordable = prim.differentiable and prim.diff_positions(1) == (0,)
    ufunc = _exact_ufunc(prim)
    layout = []  # what a node of this rule keeps (see _layout), found on first use

    def op(x, *, _observed=False):
        try:
            if _d.observer is not None and not _observed:
                return _d.observer.call(prim.name, op, (x,), (x,))
            if _d.batching is not None:
                return apply(prim, (x,), _NO_PARAMS, _observed=True)
            data = x._data
            if x._view is not None:
                refresh_stale_view(x)
            if ufunc is not None:
                dtype = data.dtype
                if dtype in _REAL and type(data) is _NDARRAY and not _DUAL[0]:
                    # the common case: a real float NumPy array, its rule's ufunc
                    out = ufunc(data)
                    if x._requires_grad and recordable:
                        mode = _state.mode if _OFF[0] else _GRAD
                        if mode != _GRAD:
                            return _untracked(out, mode)
                        save_x, save_out, saved, _, make = layout[0] if layout else _layout(prim, (x,), layout)
                        fn = x._grad_fn
                        edge = (fn, x._output_nr) if fn is not None and x._view is None else edge_of(x)
                        if save_x:
                            vers = [None]
                            sx, vers[0] = _save_operand(x)
                        else:
                            shape = data.shape
                            vers, sx = None, _SHAPES[dtype].get(shape) or _shape_of(shape, dtype)
                        return make(prim.node_cls or _node_class(prim, (x,), _NO_PARAMS), out, (edge,), (sx,),
                                    vers, _POS0, saved, save_out)
                    return _untracked(out, _state.mode)
                kind = dtype.kind
                if float_only and kind not in "fc" or _DUAL[0]:
                    return apply(prim, (x,), _NO_PARAMS)
                out = ufunc(data) if kind == "f" and type(data) is _NDARRAY else impl(_NS_BY_TYPE[type(data)], data)
            else:
                if float_only and data.dtype.kind not in "fc" or _DUAL[0]:
                    return apply(prim, (x,), _NO_PARAMS)
                out = impl(_NS_BY_TYPE[type(data)], data)
            mode = _state.mode
            if mode == _GRAD and x._requires_grad:
                if recordable:
                    return _tracked(prim, out, x, _ABSENT, 1)
                return _result(out, _record(prim, (x,), _NO_PARAMS, 1))
            return _untracked(out, mode)
        except FP_ERRORS:  # (NumPy set to raise, or its warnings made errors: see backend.quiet)
            return quietly(op, x, _observed=_observed)
    op.__name__ = prim.name
    _FAST[prim, 1] = op
    return op


def eager_binary(prim):
    """The eager fast path of a two-operand rule: ``a`` a Tensor, ``b`` a Tensor of the same
    dtype or a Python number; anything else goes through :func:`apply` (and an operand a
    Tensor cannot take gives NotImplemented, so Python operators raise their TypeError)."""
    fn = _FAST.get((prim, 2))
    if fn is not None:
        return fn
    impl, float_only = prim.impl, prim.dtypes is FLOAT
    recordable = prim.differentiable and prim.diff_positions(2) == (0, 1)
    scalar = prim.scalar  # its kernel is its operator: a number may come as a 0-d array
    ufunc = _exact_ufunc(prim)
    layout = []  # what a node of a Tensor and a number keeps (see _layout), found on first use

    def op(a, b, *, _observed=False):
        try:
            if _d.observer is not None and not _observed:
                return _d.observer.call(prim.name, op, (a, b), (a, b))
            if _d.batching is not None:
                r = _d.batching(prim, (a, b), _NO_PARAMS)
                if r is not NotImplemented:
                    return r
            ad = a._data
            tb = type(b)
            if a._view is not None:
                refresh_stale_view(a)
            dtype = ad.dtype
            if (tb is float or tb is int) and ufunc is not None and type(ad) is _NDARRAY:
                consts = _REAL.get(dtype)
                if consts is not None and not _DUAL[0]:
                    # the common case: a real float NumPy array and a number, its rule's ufunc
                    bd = consts.get(b)
                    if bd is None:
                        bd = _constant_of(b, dtype)
                    out = ufunc(ad, bd)  # (a 0-d operand broadcasts with anything)
                    if a._requires_grad and recordable:
                        mode = _state.mode if _OFF[0] else _GRAD
                        if mode != _GRAD:
                            return _untracked(out, mode)
                        save_a, save_out, saved, pos, make = layout[0] if layout else _layout(prim, (a, b), layout)
                        fn = a._grad_fn
                        ea = (fn, a._output_nr) if fn is not None and a._view is None else edge_of(a)
                        if save_a:
                            vers = [None, None]
                            sa, vers[0] = _save_operand(a)
                        else:
                            shape = ad.shape
                            vers, sa = None, _SHAPES[dtype].get(shape) or _shape_of(shape, dtype)
                        return make(prim.node_cls or _node_class(prim, (a, b), _NO_PARAMS), out,
                                    (ea, _NO_EDGE) if pos is _POS01 else (ea,), (sa, b), vers, pos, saved, save_out)
                    return _untracked(out, _state.mode)
            if tb is Tensor or tb in _PLAIN:
                bd = b._data
                if bd.dtype != dtype or type(bd) is not type(ad):  # (or on another device)
                    return apply(prim, (a, b), _NO_PARAMS)
                if b._view is not None:
                    refresh_stale_view(b)
                rmask = a._requires_grad | (b._requires_grad << 1)
                kind = dtype.kind
            elif tb is float or tb is int:
                kind = dtype.kind
                if kind == "b" or (tb is float and kind not in "fc") or (
                        kind in "iu" and not _dt.fits(b, dtype)):
                    return apply(prim, (a, b), _NO_PARAMS)
                bd = b
                if scalar and kind in "fc" and type(ad) is _NDARRAY:
                    consts = _CONSTANTS.get(dtype)
                    if consts is not None:
                        bd = consts.get(b)
                        if bd is None:
                            bd = _constant_of(b, dtype)
                rmask = a._requires_grad
            elif isinstance(b, Tensor) or type(b) in _NUMBER_RANK or hasattr(b, "__array_interface__"):
                return apply(prim, (a, b), _NO_PARAMS)
            else:
                return NotImplemented
            if float_only and kind not in "fc" or _DUAL[0]:
                return apply(prim, (a, b), _NO_PARAMS)
            try:
                if ufunc is not None and kind == "f" and type(ad) is _NDARRAY:
                    out = ufunc(ad, bd)
                else:
                    out = impl(_NS_BY_TYPE[type(ad)], ad, bd)
            except ValueError as e:
                raise _kernel_error(e, (ad, bd)) from None
            mode = _state.mode
            if rmask and mode == _GRAD:
                if recordable:
                    return _tracked(prim, out, a, b, rmask)
                return _result(out, _record(prim, (a, b), _NO_PARAMS, rmask))
            return _untracked(out, mode)
        except FP_ERRORS:  # (NumPy set to raise, or its warnings made errors: see backend.quiet)
            return quietly(op, a, b, _observed=_observed)
    op.__name__ = prim.name
    _FAST[prim, 2] = op
    return op


def _exact_ufunc(prim):
    """NumPy's ufunc for a rule whose kernel is, on real float operands, exactly that ufunc
    (the table's ``scalar`` rules): the fast paths call it without the kernel's frame."""
    return getattr(_CPU, prim.ufunc, None) if prim.scalar and prim.ufunc else None


_FAST = {}
_ABSENT = object()  # marks "no second operand" for _tracked


def _layout(prim, args, cache):
    """What a node keeps when the first operand requires grad and a second one (if any) is
    a number: (save the first operand, save the result, the node's ``_saved`` state, its
    operand positions, the function making node and result); appended to ``cache``."""
    nargs = len(args)
    save_idx, save_out = prim.save_plan(1, nargs)
    pos = _POS01 if nargs == 2 and prim.number_edges else _POS0
    if prim.node is None or isinstance(prim.node, str):  # one node class for the rule:
        _node_class(prim, args, _NO_PARAMS)  # cached as prim.node_cls
        if prim.node_cls is None:
            prim.node_cls = node_class(prim, prim.node_name(args, _NO_PARAMS))
        make = _MAKERS.get(prim.node_cls) or _MAKERS.setdefault(prim.node_cls, own_copy(_new_result))
    else:
        make = _new_result
    cache.append((0 in save_idx, save_out, SAVED if save_idx or save_out else NOTHING_SAVED, pos, make))
    return cache[0]


_MAKERS = {}  # node class -> its own copy of _new_result (see node.own_copy)


# -- shapes of operands not saved -------------------------------------------------------------
# A node keeps a Meta (shape, dtype) of each operand its vjps do not read; the elementwise
# rules of the inline paths above read its shape alone (and a complex check its dtype),
# never its strides. One Meta per (dtype, shape) serves all their nodes (Metas are never
# changed), saving the making of one per operation. Bounded like the number tables.

_SHAPES = {dtype: {} for dtype in _REAL}
_SHAPES_KEPT = 256


def _shape_of(shape, dtype):
    """The shared Meta of a real float operand of ``shape`` (strides not recorded)."""
    table = _SHAPES[dtype]
    if len(table) >= _SHAPES_KEPT:
        table.clear()
    m = table[shape] = meta(shape, None, dtype)
    return m


def _new_result(cls, out, edges, stored, vers, pos, saved, save_out):
    """The result Tensor of a fast-path op, with its new node of class ``cls``:
    ``_new_node`` and ``wrap(out, True, node, 0)`` in one call. A rule with one node class
    has its own copy of this function, whose writes to the node CPython specializes."""
    node = cls()
    node._next_functions = edges
    node._extra = None
    node._args = stored
    node._vers = vers
    node._params = None
    node._pos = pos
    node._saved = saved
    node._outs = None
    if _d.anomaly_enabled:
        from .anomaly import record_trace
        record_trace(node)
    if type(out) is not _NDARRAY and type(out) not in _ARRAY_TYPES:  # (a NumPy scalar,
        out = backend.namespace_of(out).asarray(out)  # from 0-d operands)
    t = _alloc(Tensor)
    t._data = out
    t._requires_grad = True
    t._grad_fn = node
    t._output_nr = 0
    t._grad = None
    t._base = None
    t._view = None
    t._acc = None
    t._extra = None
    if save_out:
        if _PACKING[0]:
            t._vc = None
            node._out = True
            save_result(node, t)
        else:  # save_result's common case, inline
            vc = t._vc = [0]
            node._out = (out, vc, 0)
    else:
        t._vc = None
        node._out = None
    return t


def _tracked(prim, out, a, b, rmask):
    """The result Tensor of a fast-path op whose operand requires grad, with its node:
    ``_record`` and ``_result`` in one call, for operand ``a`` a Tensor, ``b`` a Tensor, a
    number or ``_ABSENT``, no params, every operand position differentiable."""
    nargs = 1 if b is _ABSENT else 2
    save_idx, save_out = prim._plans.get(nargs | rmask << 16) or prim.save_plan(rmask, nargs)
    fn = a._grad_fn
    ea = (fn, a._output_nr) if fn is not None and a._view is None else edge_of(a)
    vers = None
    if 0 in save_idx:
        vers = [None, None]
        sa, vers[0] = _save_operand(a)
    else:
        sa = _meta_of(a._data)
    if nargs == 1:
        if ea[0] is None:
            return wrap(out)
        edges, stored, pos = (ea,), (sa,), _POS0
    else:
        if type(b) is Tensor or type(b) in _PLAIN:
            eb = edge_of(b)
            edges, pos = (ea, eb), _POS01
            if 1 in save_idx:
                if vers is None:
                    vers = [None, None]
                sb, vers[1] = _save_operand(b)
            else:
                sb = _meta_of(b._data)
        else:
            eb = _NO_EDGE
            edges, pos = ((ea, eb), _POS01) if prim.number_edges else ((ea,), _POS0)
            sb = b
        if ea[0] is None and eb[0] is None:
            return wrap(out)
        stored = (sa, sb)  # (a tuple: the vjps receive it as *args)
    return _new_result(prim.node_cls or _node_class(prim, (a,) if b is _ABSENT else (a, b), _NO_PARAMS),
                       out, edges, stored, vers, pos, SAVED if save_idx or save_out else NOTHING_SAVED,
                       save_out)


def _meta_of(data):
    """What a node keeps of an operand it does not save: its shape, strides and dtype."""
    m = _alloc(Meta)
    m.shape = data.shape
    m.strides = data.strides
    m.dtype = data.dtype
    return m


# -- functions that record nothing --------------------------------------------------------------
# An evaluation pass (``with no_grad():``) runs each layer's rule for its value alone: the
# functional layers (linear, layer_norm, scaled_dot_product_attention) then call the rule's
# kernel on the arrays themselves, skipping apply's unwrapping, promotion, and the wrapping
# of outputs nobody reads (layer norm's statistics, attention's weights).

def untracked_arrays(*tensors):
    """The NumPy arrays behind ``tensors`` (Tensors or None) when an op on them records
    nothing and needs none of :func:`apply`'s cases -- no observer (profiler, compile's
    capture), no vmap, no forward AD, grad mode off or no operand requiring grad, plain CPU
    Tensors of one float dtype; None otherwise (the caller then takes its general path)."""
    if _d.observer is not None or _d.batching is not None or _DUAL[0]:
        return None
    grad = _state.mode == _GRAD
    arrays = []
    dtype = None
    for t in tensors:
        if t is None:
            arrays.append(None)
            continue
        if not (type(t) is Tensor or type(t) in _PLAIN) or (grad and t._requires_grad):
            return None
        if t._view is not None:
            refresh_stale_view(t)
        data = t._data
        if type(data) is not _NDARRAY:
            return None
        if dtype is None:
            if data.dtype.char not in "fd":
                return None
            dtype = data.dtype
        elif data.dtype != dtype:
            return None
        arrays.append(data)
    return arrays


def untracked_indices(t):
    """The array of ``t``, read as indices beside an untracked call (a target, an
    embedding's rows), when it is a plain Tensor -- a view's history brought up to date
    first, as dispatch does; None for anything else (the general path then serves it)."""
    if type(t) is not Tensor:
        return None
    if t._view is not None:
        refresh_stale_view(t)
    return t._data


def untracked_result(out):
    """The Tensor of a kernel result computed from :func:`untracked_arrays`."""
    return _untracked(out, _state.mode)
