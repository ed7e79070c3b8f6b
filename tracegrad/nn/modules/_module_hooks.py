"""Module hooks: registration handles and the hooked call path.

``Module.__call__`` tests two flags, the module's ``_hooked``, which :func:`add` and handle
removal keep equal to "some forward/backward hook is registered", and :data:`ANY_GLOBAL`,
the same for the global hooks of every module (``torch.nn.modules.module``'s
``register_module_*_hook``, which run before each module's own); only then does a call come
here.
Full backward hooks work as in PyTorch's ``BackwardHook``: the tensor arguments and the
tensor outputs each pass through an identity autograd Function, whose backward nodes see
the gradients of the module's outputs (``grad_output``) and of its inputs (``grad_input``).
"""
import itertools
import warnings
import weakref
from collections import OrderedDict

from ...runtime import grad_mode
from ...runtime.function import Function
from ...runtime.hooks import RemovableHandle as _TensorHandle
from ...runtime.tensor import Tensor

__all__ = ["RemovableHandle", "WithModule", "add", "add_global", "call_with_hooks", "refresh", "GLOBAL", "ANY_GLOBAL",
           "registered"]

_ids = itertools.count()
_CALL_HOOKS = ("_forward_pre_hooks", "_forward_hooks", "_backward_pre_hooks", "_backward_hooks")


class RemovableHandle(_TensorHandle):
    """Returned by the ``register_*_hook`` methods: ``remove()`` unregisters the hook (and
    its flags); usable as a context manager."""

    def __init__(self, module, names):
        self.id = next(_ids)
        self._module = weakref.ref(module)
        self._names = names

    def remove(self):
        module = self._module()
        if module is None:
            return
        for name in self._names:
            module.__dict__[name].pop(self.id, None)
        refresh(module)


# -- global hooks (every module's) --------------------------------------------------------------

GLOBAL = {name: OrderedDict() for name in (
    "forward_pre", "forward", "forward_with_kwargs", "forward_always_called", "backward_pre", "backward",
    "buffer_registration", "module_registration", "parameter_registration")}
ANY_GLOBAL = [False]  # some global forward/backward hook is registered (Module.__call__ tests it)
GLOBAL_FULL_BACKWARD = [None]  # whether the global backward hooks are full ones (one kind at a time)


class GlobalHandle(_TensorHandle):
    """The handle of a global hook: ``remove()`` unregisters it (and its flags)."""

    def __init__(self, names):
        self.id = next(_ids)
        self._names = names

    def remove(self):
        for name in self._names:
            GLOBAL[name].pop(self.id, None)
        _refresh_global()


def _refresh_global():
    ANY_GLOBAL[0] = any(GLOBAL[name] for name in ("forward_pre", "forward", "backward_pre", "backward"))


def add_global(hook, name, flags=()):
    """Register ``hook`` in ``GLOBAL[name]``, marked in each of the ``flags`` dicts."""
    if not callable(hook):
        raise TypeError(f"hook must be callable, got {type(hook).__name__}")
    handle = GlobalHandle((name, *flags))
    GLOBAL[name][handle.id] = hook
    for flag in flags:
        GLOBAL[flag][handle.id] = True
    _refresh_global()
    return handle


def registered(kind, module, name, value):
    """``value`` after the global ``<kind>_registration`` hooks (each may return a
    replacement), as ``register_buffer``/``register_parameter``/``add_module`` store it."""
    for hook in list(GLOBAL[f"{kind}_registration"].values()):
        out = hook(module, name, value)
        if out is not None:
            value = out
    return value


def refresh(module):
    """Recompute the flag ``Module.__call__`` tests before taking the hooked path."""
    d = module.__dict__
    d["_hooked"] = any(d[name] for name in _CALL_HOOKS)


def add(module, hook, dict_name, prepend=False, flags=None):
    """Register ``hook`` in ``module.<dict_name>`` (first if ``prepend``), marking it in each
    of the flag dicts whose value in ``flags`` is true; returns its handle."""
    if not callable(hook):
        raise TypeError(f"hook must be callable, got {type(hook).__name__}")
    flags = flags or {}
    handle = RemovableHandle(module, (dict_name, *flags))
    d = module.__dict__
    hooks = d[dict_name]
    hooks[handle.id] = hook
    for name, on in flags.items():
        if on:
            d[name][handle.id] = True
    if prepend:
        hooks.move_to_end(handle.id, last=False)
    refresh(module)
    return handle


class WithModule:
    """A hook that receives the module (held weakly) as its first argument."""

    def __init__(self, hook, module):
        self.hook = hook
        self.module = weakref.ref(module)

    def __call__(self, *args, **kwargs):
        module = self.module()
        if module is None:
            raise RuntimeError("You are trying to call the hook of a dead Module!")
        return self.hook(module, *args, **kwargs)


# -- the hooked call --------------------------------------------------------------------------

def call_with_hooks(module, args, kwargs):
    """``module(*args, **kwargs)`` with its forward pre-hooks, forward hooks (those with
    ``always_call`` also when forward raises) and backward hooks."""
    called = set()
    state = {"args": args, "kwargs": kwargs, "result": None}
    try:
        return _run(module, state, called)
    except Exception:
        _always_called(module, state, called)
        raise


def _run(module, state, called):
    args, kwargs = state["args"], state["kwargs"]
    d = module.__dict__
    with_kwargs = d["_forward_pre_hooks_with_kwargs"]
    for hook_id, hook in [*GLOBAL["forward_pre"].items(), *d["_forward_pre_hooks"].items()]:
        if hook_id in with_kwargs:
            r = hook(module, args, kwargs)
            if r is not None:
                if not (isinstance(r, tuple) and len(r) == 2):
                    raise RuntimeError("forward pre-hook must return None or a tuple of "
                                       f"(new_args, new_kwargs), but got {r}.")
                args, kwargs = r
        else:
            r = hook(module, args)
            if r is not None:
                args = r if isinstance(r, tuple) else (r,)
        state["args"], state["kwargs"] = args, kwargs
    full, legacy = _backward_hooks(module)
    pre = [*GLOBAL["backward_pre"].values(), *d["_backward_pre_hooks"].values()]
    bw = None
    if full or pre:
        bw = BackwardHook(module, full, pre)
        args = bw.setup_input_hook(args)
    result = module.forward(*args, **kwargs)
    state["result"] = result
    hooks, with_kwargs, always = _forward_hooks(d)
    for hook_id, hook in hooks:
        if hook_id in always:
            called.add(hook_id)
        r = hook(module, args, kwargs, result) if hook_id in with_kwargs else hook(module, args, result)
        if r is not None:
            result = state["result"] = r
    if bw is not None:
        if not isinstance(result, (Tensor, tuple)):
            warnings.warn("For backward hooks to be called, module output should be a Tensor or a "
                          f"tuple of Tensors but received {type(result)}", stacklevel=3)
        result = bw.setup_output_hook(result)
    if legacy:
        _attach_legacy_backward_hooks(module, result, legacy)
    return result


def _forward_hooks(d):
    """The forward hooks of a call of the module whose ``__dict__`` is ``d``, the global ones
    first, and the ids of those that take kwargs and of those always called."""
    return ([*GLOBAL["forward"].items(), *d["_forward_hooks"].items()],
            d["_forward_hooks_with_kwargs"].keys() | GLOBAL["forward_with_kwargs"].keys(),
            d["_forward_hooks_always_called"].keys() | GLOBAL["forward_always_called"].keys())


def _backward_hooks(module):
    """(full, legacy) backward hooks of a call of ``module``: the global ones first."""
    full, legacy = [], []
    for is_full, hooks in ((GLOBAL_FULL_BACKWARD[0], GLOBAL["backward"]),
                           (module._is_full_backward_hook, module.__dict__["_backward_hooks"])):
        if is_full is True:
            full += hooks.values()
        elif is_full is False:
            legacy += hooks.values()
    return full, legacy


def _always_called(module, state, called):
    """After forward raised: the ``always_call`` forward hooks not yet run (their own
    errors become warnings, the original exception propagates)."""
    hooks, with_kwargs, always = _forward_hooks(module.__dict__)
    for hook_id, hook in hooks:
        if hook_id not in always or hook_id in called:
            continue
        try:
            if hook_id in with_kwargs:
                r = hook(module, state["args"], state["kwargs"], state["result"])
            else:
                r = hook(module, state["args"], state["result"])
            if r is not None:
                state["result"] = r
        except Exception as e:
            warnings.warn("module forward hook with ``always_call=True`` raised an exception that was "
                          f"silenced as another error was raised in forward: {e}", stacklevel=3)


def _attach_legacy_backward_hooks(module, result, hooks):
    """``register_backward_hook``: ``hooks`` on the ``grad_fn`` of the (first) output."""
    var = result
    while not isinstance(var, Tensor):
        var = next(v for v in var.values() if isinstance(v, Tensor)) if isinstance(var, dict) else var[0]
    fn = var.grad_fn
    if fn is not None:
        for hook in hooks:
            fn.register_hook(WithModule(hook, module))


# -- full backward hooks ----------------------------------------------------------------------

class BackwardHookFunction(Function):
    """Identity on a group of tensors: its backward node is where module backward hooks
    see (and may replace) the gradients flowing through the group."""

    @staticmethod
    def forward(ctx, *args):
        ctx.mark_non_differentiable(*[a for a in args if not a.requires_grad])
        return args

    @staticmethod
    def backward(ctx, *grads):
        return grads


def _pack(indices, values, size):
    out = [None] * size
    for i, v in zip(indices, values):
        out[i] = v
    return tuple(out)


class BackwardHook:
    """Links one call's output gradients to its input gradients and runs the module's
    full backward (pre-)hooks on them."""

    def __init__(self, module, hooks, pre_hooks):
        self.module = module
        self.hooks = hooks
        self.pre_hooks = pre_hooks
        self.grad_outputs = None
        self.n_inputs = self.n_outputs = -1
        self.input_index = self.output_index = None

    def _wrap_tensors(self, args, on_node):
        """``args`` with its tensors passed through :class:`BackwardHookFunction` (whose node
        goes to ``on_node``), and the tensors' positions; unchanged if none needs grad."""
        index = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        tensors = [args[i] for i in index]
        if not (any(t.requires_grad for t in tensors) and grad_mode.is_grad_enabled()):
            return args, None
        wrapped = BackwardHookFunction.apply(*tensors)
        node = next(t.grad_fn for t in wrapped if t.grad_fn is not None)
        on_node(node)
        out = list(args)
        for i, t in zip(index, wrapped):
            out[i] = t
        return tuple(out), index

    def setup_input_hook(self, args):
        def on_node(node):
            node.register_hook(self._input_hook)
        res, self.input_index = self._wrap_tensors(args, on_node)
        self.n_inputs = len(args)
        return res

    def setup_output_hook(self, result):
        is_tuple = isinstance(result, tuple)
        outs = result if is_tuple else (result,)

        def on_node(node):
            node.register_hook(self._output_hook)
        res, self.output_index = self._wrap_tensors(outs, on_node)
        self.n_outputs = len(outs)
        return res if is_tuple else res[0]

    def _output_hook(self, _grad_inputs, grad_outputs):
        self.grad_outputs = _pack(self.output_index, grad_outputs, self.n_outputs)
        for hook in self.pre_hooks:
            r = hook(self.module, self.grad_outputs)
            if r is None:
                continue
            if len(r) != len(self.grad_outputs):
                raise RuntimeError("Backward pre hook returned an invalid number of grad_output, "
                                   f"got {len(r)}, but expected {len(self.grad_outputs)}")
            self.grad_outputs = tuple(r)
        local = self.grad_outputs
        if self.input_index is None:  # no input needs grad: the hooks fire from here
            warnings.warn("Full backward hook is firing when gradients are computed with respect to "
                          "module outputs since no inputs require gradients. See "
                          "https://docs.pytorch.org/docs/main/generated/torch.nn.Module.html"
                          "#torch.nn.Module.register_full_backward_hook for more details.",
                          stacklevel=5)
            grad_inputs = (None,) * self.n_inputs
            for hook in self.hooks:
                r = hook(self.module, grad_inputs, self.grad_outputs)
                if r is not None and not (isinstance(r, tuple) and all(x is None for x in r)):
                    raise RuntimeError("Backward hook for Modules where no input requires gradient "
                                       "should always return None or None for all gradients.")
            self.grad_outputs = None
        return tuple(local[i] for i in self.output_index)

    def _input_hook(self, grad_inputs, _grad_outputs):
        if self.grad_outputs is None:  # reached without passing through the outputs
            return None
        res = _pack(self.input_index, grad_inputs, self.n_inputs)
        for hook in self.hooks:
            r = hook(self.module, res, self.grad_outputs)
            if r is None:
                continue
            if len(r) != len(res):
                raise RuntimeError("Backward hook returned an invalid number of grad_input, "
                                   f"got {len(r)}, but expected {len(res)}")
            res = tuple(r)
        self.grad_outputs = None
        return tuple(res[i] for i in self.input_index)
