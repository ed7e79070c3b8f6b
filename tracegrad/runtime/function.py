"""Custom differentiable operations: ``tracegrad.autograd.Function``.

A subclass gives ``forward(ctx, *args)`` and ``backward(ctx, *grad_outputs)`` as static
methods and is used through ``apply``. The ``ctx`` is the backward node itself (named
``<ClassName>Backward`` as in PyTorch): it keeps what ``save_for_backward`` saved
(version-checked when read), ``needs_input_grad``, and any attribute ``forward`` sets.
``backward`` always sees Tensors; under ``create_graph=True`` its operations are recorded,
so a ``backward`` written with differentiable operations can be differentiated again.
"""
import functools
import inspect
import warnings

from .. import backend
from . import dispatch, forward, grad_mode
from .node import FREED, NOTHING_SAVED, SAVED, Node, _FREED_MESSAGE, output_of, version_message
from .tensor import Tensor, wrap
from .vmapped import is_vmapped

__all__ = ["Function", "FunctionCtx", "BackwardCFunction", "once_differentiable"]


class FunctionCtx:
    """What ``forward`` may call on ``ctx`` (PyTorch's names)."""

    def save_for_backward(self, *tensors):
        for i, t in enumerate(tensors):
            if t is not None and not isinstance(t, Tensor):
                raise TypeError(f"save_for_backward can only save variables, but argument "
                                f"{i} is of type {type(t).__name__}")
        self._to_save = tensors

    def mark_dirty(self, *tensors):
        """Declare inputs that ``forward`` modified in place (and returns)."""
        self._dirty = tensors

    def mark_non_differentiable(self, *tensors):
        """Declare outputs that take no gradient (indices, masks...)."""
        self._non_differentiable = tensors

    def save_for_forward(self, *tensors):
        """Keep tensors for ``jvp`` (read there as ``ctx.saved_tensors``)."""
        for t in tensors:
            if t is not None and not isinstance(t, Tensor):
                raise TypeError("save_for_forward expects all arguments to be tensors; you should "
                                "save non-tensors as attributes on ctx.")
        self._saved_for_forward = tensors

    def set_materialize_grads(self, value):
        """With False, ``backward`` receives None (not zeros) for outputs without gradient."""
        self._materialize_grads = bool(value)


class BackwardCFunction(Node, FunctionCtx):
    """The node of one ``Function.apply`` call, which is also its ``ctx``."""

    _function = None  # the Function subclass, set per subclass
    _opaque = True
    _outs = None
    _saved = NOTHING_SAVED

    def __init__(self):
        self._next_functions = ()
        self._extra = None
        self._to_save = ()
        self._dirty = ()
        self._non_differentiable = ()
        self._materialize_grads = True
        self._saved_records = ()
        self.needs_input_grad = ()

    def __repr__(self):
        return f"<{type(self).__module__}.{type(self).__name__} object at {id(self):#x}>"

    # -- saved tensors ---------------------------------------------------------------------
    @property
    def saved_tensors(self):
        """The tensors given to ``save_for_backward``, checked against in-place changes."""
        if self._saved == FREED:
            raise RuntimeError(_FREED_MESSAGE)
        if self._in_jvp:  # the user's jvp reads what save_for_forward kept
            return self._saved_for_forward
        return tuple(_unpack(record, self) for record in self._saved_records)

    saved_variables = saved_tensors

    def saved_items(self):
        if self._saved == FREED:
            return []
        return [(f"saved_tensors[{i}]", t) for i, t in enumerate(self.saved_tensors) if t is not None]

    def _release(self):
        self._saved_records = ()
        self._saved = FREED

    # -- backward --------------------------------------------------------------------------
    def _apply(self, grads, graph):
        """Call the user's ``backward`` with Tensors; check and return the input gradients."""
        if self._saved == FREED:
            raise RuntimeError(_FREED_MESSAGE)
        given = []
        for g, meta in zip(grads, self._out_meta):
            if meta is None:  # a non-tensor output: never a gradient
                given.append(None)
            elif g is None:
                shape, dtype, xp = meta
                given.append(wrap(xp.zeros(shape, dtype=dtype)) if self._materialize_grads else None)
            else:
                given.append(g if graph else wrap(g))
        result = _user_backward(self._function)(self, *given)
        if not isinstance(result, tuple):
            result = (result,)
        name = type(self).__name__
        n = len(self._arg_kinds)
        if len(result) < n or any(r is not None for r in result[n:]):
            raise RuntimeError(f"function {name} returned an incorrect number of gradients "
                               f"(expected {n}, got {len(result)})")
        grads_in = []
        for i, (is_tensor, shape, dtype) in enumerate(self._arg_kinds):
            r = result[i]
            if not is_tensor:
                if r is not None:
                    raise RuntimeError(f"function {name} returned a gradient different than None at "
                                       f"position {i + 1}, but the corresponding forward input was not a Variable")
                continue
            grads_in.append(None if r is None else _checked_grad(r, shape, dtype, i, name, graph))
        return tuple(grads_in)


def _checked_grad(r, shape, dtype, i, name, graph):
    """A gradient from a custom backward, in the input's dtype and shape (summed down if it
    was broadcast), or PyTorch's error for a shape that cannot be the input's."""
    if not isinstance(r, Tensor):
        raise RuntimeError(f"function {name} returned a gradient of type {type(r).__name__} at "
                           f"position {i + 1}: expected Variable or None (got {type(r).__name__})")
    if tuple(r.shape) != tuple(shape):
        try:
            r = r.sum_to_size(*shape)
        except RuntimeError:
            raise RuntimeError(f"Function {name} returned an invalid gradient at index {i} - got "
                               f"{list(r.shape)} but expected shape compatible with {list(shape)}") from None
    if r._data.dtype != dtype:
        r = r.to(dtype=_dtype_of(dtype))
    if graph:
        return r
    from .engine import array_of
    return array_of(r)


def _dtype_of(np_dtype):
    from ..backend.dtypes import from_numpy_dtype
    return from_numpy_dtype(np_dtype)


def _unpack(record, node):
    """A saved tensor back from its record: the tensor (version-checked), or an output
    rebuilt around its data with ``node`` as grad_fn (saving it outright would make a
    reference cycle through the node)."""
    if record is None:
        return None
    kind, value, vc, version, index = record
    if kind == "packed":
        return value.tensor(True)
    current = vc[0]
    if current != version:
        t = value if kind == "tensor" or is_vmapped(value) else wrap(value)
        raise RuntimeError(version_message(t, current, version, output_of(t) if kind == "tensor" else
                                           f", which is output {index} of {node._function.__name__},"))
    if kind == "tensor":
        return value
    if is_vmapped(value):
        t = value.detach()
        t._requires_grad, t._grad_fn, t._output_nr = True, node, index
        return t
    return wrap(value, True, node, index)


class _FunctionMeta(type):
    """Gives each Function subclass its own node class, ``<Name>Backward``."""

    def __init__(cls, name, bases, namespace):
        super().__init__(name, bases, namespace)
        cls._backward_cls = type(name + "Backward", (BackwardCFunction,),
                                 {"_function": cls, "__module__": "tracegrad.autograd.function"})


class Function(FunctionCtx, metaclass=_FunctionMeta):
    """Base class of custom differentiable operations (see the module docstring)."""

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("You must implement the forward function for custom autograd.Function.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("You must implement either the backward or vjp method for your "
                                  "custom autograd.Function to use it with backward mode AD.")

    @staticmethod
    def vjp(ctx, *grad_outputs):
        """Another name for ``backward``: a subclass defines one of the two."""
        raise NotImplementedError("You must implement either the backward or vjp method for your "
                                  "custom autograd.Function to use it with backward mode AD.")

    @staticmethod
    def jvp(ctx, *grad_inputs):
        """The forward-mode derivative: tangents of the inputs in, of the outputs out."""
        raise NotImplementedError("You must implement the jvp function for custom autograd.Function "
                                  "to use it with forward mode AD.")

    @staticmethod
    def setup_context(ctx, inputs, output):
        """Override to write ``forward(*args)`` without ``ctx`` (PyTorch 2 style)."""
        raise NotImplementedError

    def __call__(self, *args, **kwargs):
        raise RuntimeError("Legacy autograd function with non-static forward method is deprecated. "
                           "Please use new-style autograd function with static forward method. "
                           "(Example: https://pytorch.org/docs/stable/autograd.html#torch.autograd.Function)")

    @classmethod
    def apply(cls, *args, **kwargs):
        separate = _separate_setup(cls)
        if kwargs or separate:
            # PyTorch binds the arguments (defaults included, for setup_context's `inputs`);
            # keyword-only parameters stay keywords.
            bound = _signature(cls).bind(*args if separate else (None,) + args, **kwargs)
            if separate:
                bound.apply_defaults()
            args, kwargs = bound.args[0 if separate else 1:], bound.kwargs
        if any(getattr(a, "is_tracer", False) for a in args):  # inside a traced function
            from ..transform.tape.custom import apply_function
            return apply_function(cls, args, kwargs)
        if dispatch.observer is not None:  # profiling: the whole forward is one event
            return dispatch.observer.span(cls.__name__, _apply, (cls, args, kwargs), args)
        return _apply(cls, args, kwargs)


def _separate_setup(cls):
    return cls.setup_context is not Function.setup_context


def _signature(cls):
    """``inspect.signature(cls.forward)``, worked out once per class."""
    sig = cls.__dict__.get("_forward_signature")
    if sig is None:
        sig = inspect.signature(cls.forward)
        cls._forward_signature = sig
    return sig


def _user_backward(fn):
    """The subclass's ``backward``, or its ``vjp`` (PyTorch's other name); not both."""
    has_backward, has_vjp = fn.backward is not Function.backward, fn.vjp is not Function.vjp
    if has_backward and has_vjp:
        raise RuntimeError("Implementing both 'backward' and 'vjp' for a custom Function is not "
                           "allowed. You should only implement one of them.")
    return fn.vjp if has_vjp else fn.backward


def _apply(cls, args, kwargs):
    """Run ``cls.forward`` without recording, then make its node the outputs' history."""
    node = cls._backward_cls()
    node.needs_input_grad = tuple(isinstance(a, Tensor) and a.requires_grad for a in args)
    record = grad_mode.state.mode == grad_mode.GRAD and any(node.needs_input_grad)
    prev = grad_mode.swap(False)
    dual = forward.ACTIVE[0] and forward.has_tangent(args)
    try:
        with forward.suspended():  # forward runs on primals; jvp gives the outputs' tangents
            if _separate_setup(cls):
                outputs = cls.forward(*args, **kwargs)
                cls.setup_context(node, args, outputs)
            else:
                outputs = cls.forward(node, *args, **kwargs)
    finally:
        grad_mode.restore(prev)
    single = not isinstance(outputs, tuple)
    outs = (outputs,) if single else outputs
    dirty = set()
    for t in node._dirty:
        if any(t is a for a in args):
            dirty.add(id(t))
        else:
            warnings.warn("ctx.mark_dirty() received a tensor that was not an input. Only input "
                          "Tensors that have been modified inplace should be passed to "
                          "ctx.mark_dirty().", UserWarning, stacklevel=3)
    if dirty:
        _check_dirty(node._dirty, dirty, outs, record)
    if record:
        _connect(node, args)
        if dispatch.anomaly_enabled:
            from .anomaly import record_trace
            record_trace(node)
    results = []
    for k, o in enumerate(outs):
        if not isinstance(o, Tensor):
            results.append(o)
            continue
        differentiable = record and o._data.dtype.kind in "fc" and not any(o is t for t in node._non_differentiable)
        if id(o) in dirty:
            _mark_dirty(o, node if differentiable else None, k, args)
            results.append(o)
            continue
        if any(o is a for a in args):  # an input returned as it is: a fresh view of it
            o = o.view_as(o) if differentiable else o.detach()
        if differentiable:
            o._grad_fn, o._output_nr, o._requires_grad = node, k, True
            if o._view is not None:  # writing into it would bypass the custom backward
                if o._extra is None:
                    o._extra = {}
                o._extra["function_view"] = (cls.__name__, k)
        results.append(o)
    if record:
        node._out_meta = tuple(_meta_of(o) for o in outs)
        node._outs = node._out_meta if len(outs) > 1 else None
        _save(node, results)
    if dual:
        node._in_jvp = True
        try:
            forward.function_tangents(cls, node, args, results[0] if single else tuple(results))
        finally:
            node._in_jvp = False
    return results[0] if single else tuple(results)


def _connect(node, args):
    from .dispatch import edge_of
    node._next_functions = tuple(edge_of(a) for a in args if isinstance(a, Tensor))
    node._arg_kinds = tuple((isinstance(a, Tensor),) + ((tuple(a.shape), a._data.dtype) if isinstance(a, Tensor)
                                                        else (None, None)) for a in args)


def _meta_of(o):
    if not isinstance(o, Tensor):
        return None
    return (o._data.shape, o._data.dtype, backend.namespace_of(o._data))


_DIRTY_NOT_RETURNED = (
    "Some elements marked as dirty during the forward method were not returned as output. The "
    "inputs that are modified inplace must all be outputs of the Function.")
_DIRTY_VIEW_WITH_MORE_OUTPUTS = (
    "If your Function modifies inplace an input that is a view of another Tensor, your Function "
    "cannot return more than one Tensor. This is not supported by the current autograd engine. You "
    "should either make sure the input is not a view (using .clone() for example) or make your "
    "Function only return one Tensor (potentially splitting it into two Functions: one doing the "
    "inplace that returns a single Tensor and a second one that does the other operations). You can "
    "ask on the forum https://discuss.pytorch.org/ if you need help to do this change.")


def _check_dirty(marked, dirty, outs, record):
    """PyTorch's refusals for inputs ``forward`` modified in place, all made before any
    history is rewritten. The values did change, so the versions move on regardless."""
    tensors = list({id(t): t for t in marked if id(t) in dirty}.values())
    for t in tensors:
        t._bump_version()
    if not dirty <= {id(o) for o in outs}:
        raise RuntimeError(_DIRTY_NOT_RETURNED)
    mode = grad_mode.state.mode
    for t in tensors:
        if t._grad_fn is None and t._requires_grad and mode == grad_mode.GRAD:
            raise RuntimeError("a leaf Variable that requires grad has been used in an in-place operation.")
        dispatch.check_inplace(t, mode)
        if record and len(outs) > 1 and t._base is not None and t._requires_grad:
            raise RuntimeError(_DIRTY_VIEW_WITH_MORE_OUTPUTS)


def _mark_dirty(t, node, k, args):
    """An input ``forward`` modified in place (checked and its version moved on by
    ``_check_dirty``): when recording, its history becomes this node."""
    from .views import rebase_history
    if node is not None:
        tensor_args = [a for a in args if isinstance(a, Tensor)]
        view_edge = next(j for j, a in enumerate(tensor_args) if a is t)
        rebase_history(t, node, view_edge, k)


def _save(node, results):
    """Turn what ``save_for_backward`` got into version-stamped records (after the outputs
    exist, so saved outputs are recognised and stored without a reference cycle)."""
    from .saved_hooks import Packed, pack_hooks
    hooks = pack_hooks()
    records = []
    for t in node._to_save:
        if t is None:
            records.append(None)
        elif hooks is not None:
            records.append(("packed", Packed(t, hooks), None, None, None))
        else:
            k = next((i for i, r in enumerate(results) if r is t and t._grad_fn is node), None)
            vc = t._version_counter()
            if k is None:
                records.append(("tensor", t, vc, vc[0], None))
            else:
                # (a vmap sample's _data is sample 0 only: it is kept whole, detached)
                records.append(("output", t.detach() if is_vmapped(t) else t._data, vc, vc[0], k))
    node._saved_records = tuple(records)
    node._saved = SAVED if records else NOTHING_SAVED
    node._to_save = ()


BackwardCFunction._arg_kinds = ()
BackwardCFunction._in_jvp = False
BackwardCFunction._saved_for_forward = ()
BackwardCFunction._out_meta = ()


def once_differentiable(backward):
    """Decorator for a ``backward`` that is not itself differentiable: it runs without
    recording. When a graph of the backward is wanted (``create_graph=True``), its results
    get a node that raises if anything differentiates through it -- an error, not a
    silently wrong second derivative (as in PyTorch)."""
    @functools.wraps(backward)
    def wrapper(ctx, *grads):
        prev = grad_mode.swap(False)
        try:
            outputs = backward(ctx, *grads)
        finally:
            grad_mode.restore(prev)
        if not grad_mode.is_grad_enabled() or not any(isinstance(g, Tensor) and g.requires_grad
                                                      for g in grads):
            return outputs
        single = not isinstance(outputs, tuple)
        outs = (outputs,) if single else outputs
        made = DelayedError.apply(*(o.detach().requires_grad_() if isinstance(o, Tensor) else o
                                    for o in outs))
        return made if single or isinstance(made, tuple) else (made,)
    return wrapper


class DelayedError(Function):
    """Passes tensors through; differentiating through it raises (see once_differentiable)."""

    @staticmethod
    def forward(ctx, *tensors):
        out = tuple(t.view_as(t) if isinstance(t, Tensor) else t for t in tensors)
        return out[0] if len(out) == 1 else out

    @staticmethod
    def backward(ctx, *grads):
        raise RuntimeError("trying to differentiate twice a function that was marked with "
                           "@once_differentiable")
