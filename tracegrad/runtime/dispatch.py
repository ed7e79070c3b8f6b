"""Eager execution of rule-table primitives on Tensors: the define-by-run interpreter.

:func:`apply` unwraps Tensor operands, promotes dtypes as PyTorch does, runs the kernel,
and -- when grad mode is on and a differentiable operand requires grad -- records a
:class:`~tracegrad.runtime.node.FunctionNode` saving only what the needed vjps read.
:func:`apply_inplace` runs a primitive into its first operand's storage and rebases that
tensor's history onto the new node (through ``CopySlices`` when it is a view).
"""
import weakref

from .. import backend
from ..backend import dtypes as _dt
from ..backend.quiet import FP_ERRORS, quietly, restore, silence
from ..rules.core import FLOAT, KEEP, register_handler
from . import forward as _forward
from . import grad_mode
from .inplace_checks import check_inplace, forward_name
from .int_fit import fit_numbers
from .node import NOTHING_SAVED, PACKED, SAVED, AccumulateGrad, meta, node_class
from .saved_hooks import Packed, pack_hooks
from .saved_hooks import _active as _PACKING
from .shapes import broadcast_shapes, expand_shape
from .tensor import PLAIN_SUBCLASSES as _PLAIN
from .tensor import INFERENCE_VIEW, Tensor, mark_inference, wrap
from .views import rebase_history, refresh_stale_view

__all__ = ["apply", "apply_inplace", "edge_of", "grad_accumulator"]

_state = grad_mode.state
_DUAL = _forward.ACTIVE  # true while a forward AD level is open: ops then go through apply()
_GRAD, _INFERENCE = grad_mode.GRAD, grad_mode.INFERENCE
_NUMBER = (int, float, complex)
_KIND_RANK = _dt.KIND_CATEGORY
_NUMBER_RANK = _dt.NUMBER_CATEGORY
_NO_PARAMS = {}
_NS_BY_TYPE = backend._NS_BY_TYPE
_INFERENCE_SAVE = (
    "Inference tensors cannot be saved for backward. Please do not use Tensors created in "
    "inference mode in computation tracked by autograd. To work around this, you can make a "
    "clone to get a normal tensor and use it in autograd, or use `tracegrad.no_grad()` instead "
    "of `tracegrad.inference_mode()`.")


def unwrap(args):
    """The backend arrays (or numbers) behind ``args``, and a bit mask of the operands
    that require grad."""
    arrays = list(args)
    rmask = 0
    for i, a in enumerate(args):
        if isinstance(a, Tensor):
            arrays[i] = a._data
            if a._view is not None:
                refresh_stale_view(a)
            if a._requires_grad:
                rmask |= 1 << i
        elif a is not None and type(a) not in _NUMBER_RANK:
            number = backend.python_scalar(a)  # NumPy scalars act as Python numbers
            arrays[i] = _constant(a) if number is None else number
    return arrays, rmask


def apply(prim, args, params, *, _observed=False):
    """Run ``prim`` on ``args`` (Tensors, numbers, None) eagerly; return Tensor(s)."""
    if observer is not None and not _observed:
        return observer.call(prim.name, apply, (prim, args, params), args + tuple(params.values()))
    if batching is not None:  # a vmap runs: a batched operand takes its batching rule
        out = batching(prim, args, params)
        if out is not NotImplemented:
            return out
    arrays, rmask = unwrap(args)
    xp = _namespace(arrays)
    if xp is None:
        return apply(prim, _with_scalars_moved(args, arrays), params, _observed=True)
    promoted = prim.dtypes is not KEEP and _promote(prim, arrays)
    try:
        out = prim.impl(xp, *arrays, **params)
    except ValueError as e:
        raise _kernel_error(e, arrays) from None
    except FP_ERRORS:  # (NumPy set to raise or warnings made errors: PyTorch's value anyway)
        out = quietly(prim.impl, xp, *arrays, **params)
    except OverflowError:  # a Python int beyond the operands' integer dtype
        fitted, fitted_params = _numbers_fitted(arrays, params)
        out = prim.impl(xp, *fitted, **fitted_params)
    node = None
    if rmask and _state.mode == _GRAD and prim.differentiable:
        node = _record(prim, args, params, rmask)
        if node is not None and promoted:
            _remember_dtypes(node, args)
    result = _outputs(prim, args, params, out, node)
    if _DUAL[0]:  # forward AD: tangents from the rule's jvp
        _forward.attach(prim, args, params, result)
    return result


def _numbers_fitted(arrays, params):
    """(arrays, params) with their Python ints fitted, as PyTorch does, into the dtype of
    the first integer array operand (``masked_fill(u8, m, -1)``, ``where(c, u8, -1)``)."""
    dtype = next((a.dtype for a in arrays if getattr(a, "dtype", None) is not None
                  and a.dtype.kind in "iu"), None)
    if dtype is None:
        raise RuntimeError("a Python integer operand is out of range for the operation's dtype")
    return fit_numbers(arrays, params, dtype)


def _remember_dtypes(node, args):
    """The operands' own dtypes, for a node whose kernel saw them promoted: its gradients
    are cast back to them, so each tensor receives a gradient of its own dtype."""
    node._extras()["dtypes"] = tuple(a._data.dtype if isinstance(a, Tensor) else None for a in args)


def unary(prim, x):
    """``apply`` for a one-operand, parameterless, single-output, non-view primitive."""
    return eager_unary(prim)(x)


def binary(prim, a, b):
    """``apply`` for two operands (Tensor, and Tensor or number) of one dtype, no params."""
    r = eager_binary(prim)(a, b)
    if r is NotImplemented:
        raise TypeError(f"{prim.name}() received an operand of type {type(b).__name__}")
    return r


# A profiler, while one is active (see autograd/profiler.py): it times each operation by
# calling it back with _observed=True. None costs one test per operation.
observer = None

# While a vmap runs (see tracegrad/func/_batched.py): run an operation that has a batched
# operand (an out-of-place one, and one writing into its first operand) and answer
# NotImplemented for any other. None costs one test per operation.
batching = None
batching_inplace = None


def _untracked(out, mode):
    """A result that autograd does not track (marked if made in inference mode)."""
    t = wrap(out)
    return mark_inference(t) if mode == _INFERENCE else t


def _result(out, node):
    """The single Tensor result of a fast-path op, with ``node`` (if any) as its grad_fn."""
    if node is None:
        return wrap(out)
    t = wrap(out, True, node, 0)
    if node._out is True:
        save_result(node, t)
    return t


def save_result(node, result):
    """Fill a node's placeholder for its saved result (``_out is True``) with the result
    tensor(s), version-stamped: (data, version counter, version), tuples for several --
    or, under saved-tensor hooks, (packed result(s), None, None)."""
    hooks = pack_hooks()
    single = isinstance(result, Tensor)
    if not single and node._prim.saved_outputs is not None:  # None stands for an output not kept
        result = tuple(t if k in node._prim.saved_outputs else None for k, t in enumerate(result))
    if hooks is not None:
        packed = Packed(result, hooks) if single else tuple(None if t is None else Packed(t, hooks) for t in result)
        node._out = (packed, None, None)
        return
    if single:
        vc = result._version_counter()
        node._out = (result._data, vc, vc[0])
    else:
        vcs = tuple(None if t is None else t._version_counter() for t in result)
        node._out = (tuple(None if t is None else t._data for t in result), vcs,
                     tuple(None if vc is None else vc[0] for vc in vcs))


def _kernel_error(exc, arrays):
    """PyTorch's message for operands that do not broadcast (NumPy raises ValueError)."""
    if isinstance(exc, RuntimeError):  # already PyTorch's (linalg.LinAlgError is NumPy's too)
        return exc
    if "broadcast" in str(exc):
        broadcast_shapes(*[a.shape for a in arrays if hasattr(a, "shape")])  # raises PyTorch's
    return RuntimeError(str(exc))


def _constant(a):
    """A non-Tensor array operand (a NumPy array or scalar) taken as a constant."""
    if backend.is_array(a) or hasattr(a, "dtype"):
        return backend.namespace_of(a).asarray(a)
    raise TypeError(f"expected a Tensor or a number as an operand, got {type(a).__name__}")


def _namespace(arrays):
    """The namespace of the array operands (the CPU's for numbers alone); None when they
    live on two devices."""
    xp = None
    for a in arrays:
        if a is not None and not isinstance(a, _NUMBER):
            ns = backend.namespace_of(a)
            if xp is None:
                xp = ns
            elif ns is not xp:
                return None
    return xp if xp is not None else backend.cpu


def _with_scalars_moved(args, arrays, start=0):
    """``args`` with their 0-d CPU tensors moved (differentiably) to the device of the
    other operands: the one mix of devices PyTorch allows, a CPU scalar joining a CUDA
    kernel (from position ``start`` on: an in-place op's own tensor never moves).
    Any other mix raises PyTorch's error, which names the first non-CPU device first."""
    from ..rules.memory import to_device
    devices = [(i, a, backend.device_of(a)) for i, a in enumerate(arrays)
               if a is not None and not isinstance(a, _NUMBER)]
    target = next((d for _, _, d in devices if d.type != "cpu"), devices[0][2])
    moved = list(args)
    for i, a, d in devices:
        if d == target:
            continue
        if d.type != "cpu" or a.ndim != 0 or i < start:
            raise RuntimeError("Expected all tensors to be on the same device, but found at "
                               f"least two devices, {target} and {d}!")
        t = args[i]
        moved[i] = (to_device(t, device=target.type, src="cpu") if isinstance(t, Tensor)
                    else backend.move(a, backend.namespace_for(target)))
    return tuple(moved)


def _promote(prim, arrays):
    """Cast array operands (in place in ``arrays``) to PyTorch's result dtype; True if an
    array operand changed dtype."""
    positions = prim.cast if prim.cast is not None else range(len(arrays))
    common = None
    mixed = False
    top_number = -1
    for i in positions:
        a = arrays[i]
        if a is None:
            continue
        if isinstance(a, _NUMBER):
            top_number = max(top_number, _NUMBER_RANK[type(a)])
        elif common is None:
            common = a.dtype
        elif a.dtype != common:
            mixed = True
    if common is not None and not mixed and top_number <= _KIND_RANK[common.kind]:
        target = common                      # fast path: nothing to promote
    else:
        target = result_dtype(arrays, positions).np
    if prim.dtypes is FLOAT and target.kind in "biu":
        target = _dt.get_default_dtype().np
    if common is None:                       # only numbers: make them arrays of the target
        for i in positions:
            if isinstance(arrays[i], _NUMBER):
                arrays[i] = backend.cpu.asarray(arrays[i], dtype=target)
        return False
    if target.kind in "iu":  # Python ints wrap into the integer dtype, as in PyTorch
        for i in positions:
            a = arrays[i]
            if type(a) is int and not _dt.fits(a, target):
                arrays[i] = _dt.wrap_int(a, target)
    cast = False
    for i in positions:
        a = arrays[i]
        if a is not None and not isinstance(a, _NUMBER) and a.dtype != target:
            arrays[i] = a.astype(target)
            cast = True
    return cast


def result_dtype(arrays, positions=None):
    """``torch.result_type`` of backend arrays and Python numbers (all, or ``positions``)."""
    dims, zeros, numbers = [], [], []
    for i in range(len(arrays)) if positions is None else positions:
        a = arrays[i]
        if a is None:
            continue
        if isinstance(a, _NUMBER):
            numbers.append(a)
        else:
            (dims if a.ndim else zeros).append(_dt.from_numpy_dtype(a.dtype))
    return _dt.result_type(dims, zeros, numbers)


# -- recording ---------------------------------------------------------------------------------

def grad_accumulator(t):
    """The AccumulateGrad node of leaf ``t`` (one per leaf while any graph holds it)."""
    acc = t._acc() if t._acc is not None else None
    if acc is None:
        acc = AccumulateGrad(t)
        t._acc = weakref.ref(acc)
    return acc


def edge_of(t):
    """``(node, output_nr)``: where the gradient of tensor ``t`` flows."""
    if t._view is not None:
        refresh_stale_view(t)
    fn = t._grad_fn
    if fn is not None:
        return (fn, t._output_nr)
    if t._requires_grad:
        return (grad_accumulator(t), 0)
    return (None, 0)


def _record(prim, args, params, rmask, node_args=None):
    """A node for ``prim`` applied to ``args``, or None if no differentiable operand
    requires grad. ``node_args`` replaces the saved operands (in-place ops save a copy).

    One pass over the operands builds both the edges (``next_functions``: one per
    differentiable operand) and what the node stores: the operands its needed vjps read,
    version-stamped, and only the shapes of the others."""
    nargs = len(args)
    flags = prim._diff_flags.get(nargs) or prim.diff_flags(nargs)
    save_idx, save_out = prim._plans.get(nargs | rmask << 16) or prim.save_plan(rmask, nargs)
    stored = list(args)
    edges = []
    pos = []
    needed = False
    vers = None
    for i in range(nargs):
        a = stored[i]
        if isinstance(a, Tensor):
            if flags[i]:
                edge = edge_of(a)
                if edge[0] is not None:
                    needed = True
                edges.append(edge)
                pos.append(i)
            if node_args is not None:
                a = stored[i] = node_args[i]
            if i not in save_idx:
                stored[i] = meta(a._data.shape, a._data.strides, a._data.dtype)
                continue
            if vers is None:
                vers = [None] * nargs
            stored[i], vers[i] = _save_operand(a)
        elif flags[i] and prim.number_edges and i > 0:
            edges.append(_NO_EDGE)
            pos.append(i)
    if not needed:
        return None
    return _new_node(prim, args, params, tuple(edges), stored, vers, save_idx or save_out, save_out, pos)


def _save_operand(t):
    """(what a node stores, its version stamp) for an operand saved for backward: the
    tensor and its version, or -- under saved-tensor hooks -- its packed form and -1."""
    if t._extra is not None and t._extra.get("inference"):
        raise RuntimeError(_INFERENCE_SAVE)
    if _PACKING[0]:
        hooks = pack_hooks()
        if hooks is not None:
            return Packed(t, hooks), PACKED
    return t, (t._vc[0] if t._vc is not None else 0)


anomaly_enabled = False  # set by tracegrad.autograd.detect_anomaly (see runtime/anomaly.py)


def _new_node(prim, args, params, edges, stored, vers, saves, save_out, pos):
    node = (prim.node_cls or _node_class(prim, args, params))()
    node._next_functions = edges
    node._extra = None
    node._args = stored
    node._vers = vers
    node._out = True if save_out else None  # True: save the result once it exists
    node._params = params or None
    node._pos = pos
    node._saved = SAVED if saves else NOTHING_SAVED
    node._outs = None
    if anomaly_enabled:
        from .anomaly import record_trace
        record_trace(node)
    return node


_POS0, _POS01 = (0,), (0, 1)


def _node_class(prim, args, params):
    cls = node_class(prim, prim.node_name(args, params))
    if isinstance(prim.node, str):
        prim.node_cls = cls
    return cls


_alloc = object.__new__
_NO_EDGE = (None, 0)


def _outputs(prim, args, params, out, node):
    """Wrap kernel results as Tensors, link views to their base, attach ``node``."""
    single = prim.nout == 1
    outs = (out,) if single else tuple(out)
    tensors = []
    # (a view is an inference tensor only if its operand is one: see _link_views)
    inference = _state.mode == _INFERENCE and not prim.view
    for k, o in enumerate(outs):
        diff = node is not None and o.dtype.kind in "fc"  # integer results never require grad
        t = wrap(o, diff, node if diff else None, k if diff else 0)
        tensors.append(mark_inference(t) if inference else t)
    if prim.view:
        _link_views(prim, args[0], params, tensors)
    if node is not None:
        if not single:
            xp = backend.namespace_of(outs[0]) if outs else backend.cpu
            node._outs = tuple((o.shape, o.dtype, xp) for o in outs)
        if node._out is True:
            save_result(node, tensors[0] if single else tensors)
    return tensors[0] if single else tuple(tensors)


def _link_views(prim, src, params, tensors):
    """Make ``tensors`` views of ``src``'s base: shared version counter, the chain of view
    rules from the base (to re-derive history after in-place writes), and -- for views
    made without recording, as in PyTorch -- the base's ``requires_grad``. What forbids
    in-place writes into ``src`` is inherited: made without recording (``tracked`` None:
    a view of such a view), or made by a custom Function."""
    base = src._base if src._base is not None else src
    vc = src._version_counter()
    view = src._view
    chain = view[0] if view is not None else ()
    mode = _state.mode
    tracked = mode == _GRAD
    if tracked and view is not None and not view[2]:
        tracked = None
    inference = src.is_inference()
    # A view of a normal tensor made in inference mode is a normal tensor, as in PyTorch:
    # untracked like a no_grad view, remembered for the in-place refusal's message.
    untracked_in = (mode == _INFERENCE and not inference) or (
        src._extra is not None and src._extra.get(INFERENCE_VIEW, False))
    custom = src._extra is not None and "function_view" in src._extra
    for k, t in enumerate(tensors):
        t._base = base
        t._vc = vc
        t._view = (chain + ((prim, params, k),), vc[0], tracked)
        if not tracked and src._requires_grad and mode != _GRAD:
            t._requires_grad = True
        if inference and not t.is_inference():
            mark_inference(t)  # a view of an inference tensor is one too
        if custom:
            t._extra = dict(t._extra or (), function_view=(forward_name(prim, params), k))
        if untracked_in and not tracked:
            t._extra = dict(t._extra or (), **{INFERENCE_VIEW: True})


# -- in place ----------------------------------------------------------------------------------

def apply_inplace(prim, args, params, *, _observed=False):
    """Run ``prim`` and write its result into ``args[0]``'s storage; returns ``args[0]``."""
    if observer is not None and not _observed:
        return observer.call(prim.name + "_", apply_inplace, (prim, args, params),
                             args + tuple(params.values()))
    self = args[0]
    mode = _state.mode
    check_inplace(self, mode)
    if batching_inplace is not None:
        out = batching_inplace(prim, args, params)
        if out is not NotImplemented:
            return out
    arrays, rmask = unwrap(args)
    xp = _namespace(arrays)
    if xp is None:
        return apply_inplace(prim, _with_scalars_moved(args, arrays, start=1), params, _observed=True)
    target = self._data.dtype
    promoted = prim.dtypes is not KEEP and _promote(prim, arrays)
    if prim.dtypes is not KEEP:
        computed = arrays[0].dtype if not isinstance(arrays[0], _NUMBER) else target
        if _KIND_RANK[computed.kind] > _KIND_RANK[target.kind]:
            raise RuntimeError(f"result type {_scalar_type_name(computed)} can't be cast to the "
                               f"desired output type {_scalar_type_name(target)}")
    node = None
    record = rmask and mode == _GRAD and prim.differentiable
    if record:
        # Operands the vjps read must be their values *before* the write: save a copy of self.
        save_idx, _ = prim.save_plan(rmask, len(args))
        node_args = args
        if 0 in save_idx:
            old = wrap(self._data.copy(), self._requires_grad, self._grad_fn, self._output_nr)
            node_args = (old,) + tuple(args[1:])
        node = _record(prim, args, params, rmask, node_args)
        if node is not None and promoted:
            _remember_dtypes(node, args)
    dual = _DUAL[0] and _forward.inplace_rule(prim, args, params)
    _write(prim, xp, self, arrays, params)
    self._bump_version()
    if node is not None:
        rebase_history(self, node, 0 if node._pos[0] == 0 else None)
        if node._out is True:  # the result the vjps read is self, as it is now
            save_result(node, self)
    if dual:
        dual(self)
    return self


def _scalar_type_name(np_dtype):
    """PyTorch's name for a dtype in messages: Float, Double, Long, ComplexFloat..."""
    return _dt.from_numpy_dtype(np_dtype).scalar_name


def _write(prim, xp, self, arrays, params):
    try:
        _write_once(prim, xp, self, arrays, params)
    except OverflowError:  # a Python int beyond the dtype: PyTorch wraps or refuses it
        arrays, params = fit_numbers(arrays, params, self._data.dtype)  # (nothing written yet)
        _write_once(prim, xp, self, arrays, params)


def _write_once(prim, xp, self, arrays, params):
    dst = self._data
    quiet = silence()  # (a write cannot run twice: NumPy's errors ignored from the start)
    try:
        if prim.inplace_impl is not None:
            prim.inplace_impl(xp, dst, *arrays[1:], **params)
        elif prim.ufunc is not None and not params and len(arrays) <= 2:
            getattr(xp, prim.ufunc)(*arrays, out=dst, casting="unsafe")
        else:
            dst[...] = prim.impl(xp, *arrays, **params)
    except ValueError as e:
        raise _write_error(e, prim, self, arrays) from None
    finally:
        restore(quiet)


def _write_error(exc, prim, self, arrays):
    """PyTorch's message for a write into ``self`` that NumPy refused."""
    if "read-only" in str(exc):
        a = self._data
        if not any(st == 0 and n > 1 for st, n in zip(a.strides, a.shape)):  # (not an expanded view:
            # the memory itself is read-only -- a NumPy array made so, or a buffer)
            return RuntimeError("cannot write into this tensor: its memory is a NumPy array that is not writable "
                                "(flags.writeable is False; tracegrad cannot write there as PyTorch would). "
                                "Copy the array, or make it writable, before making the tensor.")
        return RuntimeError("unsupported operation: more than one element of the written-to "
                            "tensor refers to a single memory location. Please clone() the "
                            "tensor before performing the operation.")
    dst = tuple(self._data.shape)
    if prim.inplace_impl is not None and len(arrays) == 2 and hasattr(arrays[1], "shape"):
        expand_shape(arrays[1].shape, dst, self.type())  # copy_/x[i] = v: src expands to dst
    shape = broadcast_shapes(*[a.shape for a in arrays if hasattr(a, "shape")])
    if tuple(shape) != dst:
        return RuntimeError(f"output with shape {list(dst)} doesn't match the broadcast shape {list(shape)}")
    return RuntimeError(str(exc))


def _eager(prim, args, params):
    """The rule table's handler for Tensor operands (``tracegrad.exp(t)`` lands here)."""
    if not params and prim.nout == 1 and not prim.view and (type(args[0]) is Tensor or type(args[0]) in _PLAIN):
        if len(args) == 1:
            return eager_unary(prim)(args[0])
        if len(args) == 2:
            return binary(prim, args[0], args[1])
    return apply(prim, args, params)


from .fastpath import eager_binary, eager_unary  # (last: it imports from this module)

register_handler(Tensor, _eager)
