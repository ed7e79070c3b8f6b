"""``Module``: the base class of every layer, with PyTorch's registration rules.

Assigning a :class:`Parameter`, a :class:`Buffer` or a Module as an attribute registers it
in ``_parameters`` / ``_buffers`` / ``_modules``; ``__getattr__`` finds it there again.
Iteration (``named_parameters``, ``named_modules``...), ``state_dict`` keys and ``repr``
follow registration order, exactly as in PyTorch, so checkpoints and printouts match.

Registered members are also mirrored into the instance ``__dict__`` (see
:class:`._module_state._Members`), so ``self.weight`` in a ``forward`` is a plain dict hit
rather than a failed lookup plus ``__getattr__`` (about 0.5 us each on CPython 3.11).

Calling a module is ``forward`` directly unless a hook is registered (one flag test);
the hooked path, the state-dict loader and the ``to()`` machinery live in sibling
modules (:mod:`._module_hooks`, :mod:`._module_state`).
"""
from collections import OrderedDict

from ...runtime.tensor import Tensor
from ..parameter import Buffer, Parameter
from . import _module_hooks as _hooks
from ._module_hooks import ANY_GLOBAL as _ANY_GLOBAL
from . import _module_state as _state
from ._module_state import _STORES, _Members
from ._module_state import _IncompatibleKeys  # noqa: F401  (importable from here, as in PyTorch)

__all__ = ["Module", "register_module_forward_pre_hook", "register_module_forward_hook",
           "register_module_backward_hook", "register_module_full_backward_pre_hook",
           "register_module_full_backward_hook", "register_module_buffer_registration_hook",
           "register_module_module_registration_hook", "register_module_parameter_registration_hook"]


def _typename(obj):
    """``torch.typename``: how assignment errors name the offending value."""
    if isinstance(obj, Tensor):
        return obj.type()
    module = getattr(obj, "__module__", "") or ""
    qualname = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None)
    if qualname is None:
        module, qualname = type(obj).__module__ or "", type(obj).__qualname__
    return qualname if module in ("", "builtins") else f"{module}.{qualname}"


def _addindent(text, spaces):
    """Indent every line but the first (nested module reprs)."""
    lines = text.split("\n")
    if len(lines) == 1:
        return text
    pad = " " * spaces
    return lines[0] + "\n" + "\n".join(pad + line if line.strip() else "" for line in lines[1:])


def _forward_unimplemented(self, *input):
    raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required "forward" function')


class Module:
    """Base class for all neural network modules; subclasses define ``forward``."""

    dump_patches = False
    _version = 1
    training: bool
    call_super_init = False

    def __init__(self, *args, **kwargs):
        if not self.call_super_init and kwargs:
            raise TypeError(f"{type(self).__name__}.__init__() got an unexpected keyword argument "
                            f"'{next(iter(kwargs))}'")
        if not self.call_super_init and args:
            raise TypeError(f"{type(self).__name__}.__init__() takes 1 positional argument but "
                            f"{len(args) + 1} were given")
        self.__dict__.update(
            training=True, _parameters=_Members(self), _buffers=_Members(self),
            _non_persistent_buffers_set=set(), _modules=_Members(self), _hooked=False,
            _is_full_backward_hook=None,
            _forward_pre_hooks=OrderedDict(), _forward_pre_hooks_with_kwargs=OrderedDict(),
            _forward_hooks=OrderedDict(), _forward_hooks_with_kwargs=OrderedDict(),
            _forward_hooks_always_called=OrderedDict(), _backward_pre_hooks=OrderedDict(),
            _backward_hooks=OrderedDict(), _state_dict_hooks=OrderedDict(),
            _state_dict_pre_hooks=OrderedDict(), _load_state_dict_pre_hooks=OrderedDict(),
            _load_state_dict_post_hooks=OrderedDict())
        if self.call_super_init:
            super().__init__(*args, **kwargs)

    forward = _forward_unimplemented

    def __call__(self, *args, **kwargs):
        if self._hooked or _ANY_GLOBAL[0]:
            return _hooks.call_with_hooks(self, args, kwargs)
        return self.forward(*args, **kwargs)

    _call_impl = __call__

    def compile(self, *args, **kwargs):
        """Stage this module's forward in place, with ``tracegrad.compile``'s options (see
        :func:`tracegrad.compiler.compile_in_place`); returns None, as in PyTorch."""
        from ...compiler import compile_in_place
        compile_in_place(self, *args, **kwargs)

    # -- registration ----------------------------------------------------------------------
    def _name_error(self, kind, name, exists):
        """The exception PyTorch raises for registering ``name`` (``exists``: an attribute
        of that name that is not of this kind is already there), or None."""
        if not isinstance(name, str):
            return TypeError(f"{kind} name should be a string. Got {_typename(name)}")
        if kind == "module" and exists:
            return KeyError(f"attribute '{name}' already exists")
        if "." in name:
            got = f", got: {name}" if kind == "module" else ""
            return KeyError(f"{kind} name can't contain \".\"{got}")
        if name == "":
            return KeyError(f"{kind} name can't be empty string \"\"")
        if exists:
            return KeyError(f"attribute '{name}' already exists")
        return None

    def _parameter_error(self, name, param, exists):
        error = self._name_error("parameter", name, exists)
        if error is not None:
            return error
        if param is not None and not isinstance(param, Parameter):
            return TypeError(f"cannot assign '{_typename(param)}' object to parameter '{name}' "
                             "(tracegrad.nn.Parameter or None required)")
        if param is not None and param.grad_fn is not None:
            return ValueError(f"Cannot assign non-leaf Tensor to parameter '{name}'. Model parameters "
                              f"must be created explicitly. To express '{name}' as a function of "
                              "another Tensor, compute the value in the forward() method.")
        return None

    def register_buffer(self, name, tensor, persistent=True):
        """Add a buffer (module state that is not a parameter, e.g. running statistics);
        a non-``persistent`` buffer is left out of ``state_dict``."""
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        error = self._name_error("buffer", name, isinstance(name, str) and hasattr(self, name)
                                 and name not in self._buffers)
        if error is not None:
            raise error
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{_typename(tensor)}' object to buffer '{name}' "
                            "(tracegrad Tensor or None required)")
        self._buffers[name] = _hooks.registered("buffer", self, name, tensor)
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def register_parameter(self, name, param):
        """Add a parameter (``None`` keeps the slot but is skipped by iteration)."""
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        error = self._parameter_error(name, param, isinstance(name, str) and hasattr(self, name)
                                      and name not in self._parameters)
        if error is not None:
            raise error
        self._parameters[name] = _hooks.registered("parameter", self, name, param)

    def add_module(self, name, module):
        """Add a child module, reachable as attribute ``name``."""
        if not isinstance(module, Module) and module is not None:
            raise TypeError(f"{_typename(module)} is not a Module subclass")
        error = self._name_error("module", name, isinstance(name, str) and hasattr(self, name)
                                 and name not in self._modules)
        if error is not None:
            raise error
        self._modules[name] = _hooks.registered("module", self, name, module)

    def register_module(self, name, module):
        """Alias of :meth:`add_module`."""
        self.add_module(name, module)

    def get_submodule(self, target):
        """The submodule at dotted path ``target`` (``""`` is this module)."""
        if target == "":
            return self
        mod = self
        for item in target.split("."):
            if not hasattr(mod, item):
                raise AttributeError(mod._get_name() + " has no attribute `" + item + "`")
            mod = getattr(mod, item)
            if not isinstance(mod, Module):
                raise AttributeError("`" + item + "` is not an nn.Module")
        return mod

    def set_submodule(self, target, module, strict=False):
        """Replace (or, unless ``strict``, add) the submodule at dotted path ``target``."""
        if target == "":
            raise ValueError("Cannot set the submodule without a target name!")
        if not isinstance(module, Module):
            raise ValueError(f"`module` is not an nn.Module, found {type(module)}")
        parent_path, _, name = target.rpartition(".")
        parent = self.get_submodule(parent_path)
        if strict and not hasattr(parent, name):
            raise AttributeError(parent._get_name() + " has no attribute `" + name + "`")
        if hasattr(parent, name) and not isinstance(getattr(parent, name), Module):
            raise AttributeError("`" + name + "` is not an nn.Module")
        setattr(parent, name, module)

    def get_parameter(self, target):
        """The parameter at dotted path ``target`` (e.g. ``"net.0.weight"``)."""
        path, _, name = target.rpartition(".")
        mod = self.get_submodule(path)
        if not hasattr(mod, name):
            raise AttributeError(mod._get_name() + " has no attribute `" + name + "`")
        param = getattr(mod, name)
        if not isinstance(param, Parameter):
            raise AttributeError("`" + name + "` is not an nn.Parameter")
        return param

    def get_buffer(self, target):
        """The buffer at dotted path ``target``."""
        path, _, name = target.rpartition(".")
        mod = self.get_submodule(path)
        if not hasattr(mod, name):
            raise AttributeError(mod._get_name() + " has no attribute `" + name + "`")
        if name not in mod._buffers:
            raise AttributeError("`" + name + "` is not a buffer")
        return getattr(mod, name)

    def get_extra_state(self):
        """Override (with :meth:`set_extra_state`) to put extra state in ``state_dict``."""
        raise RuntimeError("Reached a code path in Module.get_extra_state() that should never be called.")

    def set_extra_state(self, state):
        raise RuntimeError("Reached a code path in Module.set_extra_state() that should never be called.")

    # -- attribute protocol ------------------------------------------------------------------
    def __getattr__(self, name):
        d = self.__dict__
        for store in ("_parameters", "_buffers", "_modules"):
            members = d.get(store)
            if members is not None and name in members:
                return members[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __setattr__(self, name, value):
        d = self.__dict__
        params = d.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            # checked as it will stand once the name is removed from the other stores
            error = self._parameter_error(name, value, hasattr(type(self), name) and name not in params)
            if error is not None:
                raise error
            _discard(name, d, self._buffers, self._modules, self._non_persistent_buffers_set)
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{_typename(value)}' as parameter '{name}' "
                                "(tracegrad.nn.Parameter or None expected)")
            self.register_parameter(name, value)
        elif isinstance(value, Module):
            if d.get("_modules") is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            _discard(name, d, self._parameters, self._buffers, self._non_persistent_buffers_set)
            self._modules[name] = _hooks.registered("module", self, name, value)
        elif name in d.get("_modules", ()):
            if value is not None:
                raise TypeError(f"cannot assign '{_typename(value)}' as child module '{name}' "
                                "(tracegrad.nn.Module or None expected)")
            self._modules[name] = value
        elif isinstance(value, Buffer) or name in d.get("_buffers", ()):
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign '{_typename(value)}' as buffer '{name}' "
                                "(tracegrad.nn.Buffer, tracegrad.Tensor or None expected)")
            if isinstance(value, Buffer):
                persistent = value.persistent
            else:
                persistent = name not in self._non_persistent_buffers_set
            self.register_buffer(name, value, persistent)
        elif name in _STORES:
            self._set_store(name, value)
        else:
            object.__setattr__(self, name, value)

    def _set_store(self, name, members):
        """``self._modules = {...}`` (containers renumbering, user code): re-mirror."""
        d = self.__dict__
        old = d.get(name)
        if old is not None:
            for key in old:
                if key not in members:
                    d.pop(key, None)
        d[name] = _Members(self, members)

    def __getstate__(self):
        """The ``__dict__`` as PyTorch has it: mirrored members left out, stores as dicts, and
        the forward ``compile()`` staged dropped (PyTorch drops ``_compiled_call_impl``)."""
        state = self.__dict__.copy()
        if "forward" in state:
            from ...compiler.runner import CompiledCallable
            if isinstance(state["forward"], CompiledCallable):
                del state["forward"]
        for name in _STORES:
            members = state.get(name)
            if members is not None:
                for key in members:
                    state.pop(key, None)
                state[name] = dict(members)
        return state

    def __delattr__(self, name):
        if name in self._parameters:
            del self._parameters[name]
        elif name in self._buffers:
            del self._buffers[name]
            self._non_persistent_buffers_set.discard(name)
        elif name in self._modules:
            del self._modules[name]
        else:
            object.__delattr__(self, name)

    def __dir__(self):
        members = set(self._parameters) | set(self._modules) | set(self._buffers)
        keys = (dir(type(self)) + [k for k in self.__dict__ if k not in members]
                + list(self._parameters) + list(self._modules) + list(self._buffers))
        return sorted(k for k in keys if not k[0].isdigit())

    def __setstate__(self, state):
        d = self.__dict__
        d.update(state)
        for name in _STORES:
            if name in d:
                d[name] = _Members(self, d[name])
        d.setdefault("_hooked", False)
        for name in ("_forward_pre_hooks", "_forward_pre_hooks_with_kwargs", "_forward_hooks",
                     "_forward_hooks_with_kwargs", "_forward_hooks_always_called",
                     "_backward_pre_hooks", "_backward_hooks", "_state_dict_hooks",
                     "_state_dict_pre_hooks", "_load_state_dict_pre_hooks",
                     "_load_state_dict_post_hooks"):
            d.setdefault(name, OrderedDict())
        d.setdefault("_non_persistent_buffers_set", set())
        d.setdefault("_is_full_backward_hook", None)

    # -- iteration ---------------------------------------------------------------------------
    def _named_members(self, get_members, prefix="", recurse=True, remove_duplicate=True):
        memo = set()
        modules = (self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate)
                   if recurse else [(prefix, self)])
        for module_prefix, module in modules:
            for k, v in get_members(module):
                if v is None or v in memo:
                    continue
                if remove_duplicate:
                    memo.add(v)
                yield (module_prefix + ("." if module_prefix else "") + k, v)

    def parameters(self, recurse=True):
        for _, param in self.named_parameters(recurse=recurse):
            yield param

    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        """``(dotted name, parameter)`` pairs in registration order, each parameter once
        (unless ``remove_duplicate=False``)."""
        yield from self._named_members(lambda m: m._parameters.items(), prefix, recurse, remove_duplicate)

    def buffers(self, recurse=True):
        for _, buf in self.named_buffers(recurse=recurse):
            yield buf

    def named_buffers(self, prefix="", recurse=True, remove_duplicate=True):
        yield from self._named_members(lambda m: m._buffers.items(), prefix, recurse, remove_duplicate)

    def children(self):
        for _, module in self.named_children():
            yield module

    def named_children(self):
        memo = set()
        for name, module in self._modules.items():
            if module is not None and module not in memo:
                memo.add(module)
                yield name, module

    def modules(self, remove_duplicate=True):
        for _, module in self.named_modules(remove_duplicate=remove_duplicate):
            yield module

    def named_modules(self, memo=None, prefix="", remove_duplicate=True):
        """This module and all below it, depth first, as ``(dotted name, module)``."""
        if memo is None:
            memo = set()
        if self in memo:
            return
        if remove_duplicate:
            memo.add(self)
        yield prefix, self
        for name, module in self._modules.items():
            if module is not None:
                child_prefix = prefix + ("." if prefix else "") + name
                yield from module.named_modules(memo, child_prefix, remove_duplicate)

    # -- modes and gradients -----------------------------------------------------------------
    def train(self, mode=True):
        """Set training mode here and in every submodule (Dropout, BatchNorm read it)."""
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for module in self.children():
            module.train(mode)
        return self

    def eval(self):
        return self.train(False)

    def requires_grad_(self, requires_grad=True):
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none=True):
        """Drop (or zero in place) every parameter's ``.grad``."""
        for p in self.parameters():
            g = p._grad
            if g is None:
                continue
            if set_to_none:
                p._grad = None
            else:
                if g.grad_fn is not None:
                    g.detach_()
                else:
                    g.requires_grad_(False)
                g.zero_()

    # -- conversion --------------------------------------------------------------------------
    def _apply(self, fn, recurse=True):
        """Replace every parameter's and buffer's data by ``fn`` of it (parameters keep their
        identity: their ``.data`` is swapped). All results are computed before any is
        stored, so a failing ``fn`` leaves the module unchanged."""
        return _state.apply_to_tensors(self, fn, recurse)

    def apply(self, fn):
        """Call ``fn`` on every submodule (children first) and then on this module."""
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    def to(self, *args, **kwargs):
        """Move and/or cast parameters and buffers: ``to(device)``, ``to(dtype)``,
        ``to(device, dtype)``, ``to(tensor)``; dtypes apply to floating tensors only."""
        return _state.module_to(self, args, kwargs)

    def cuda(self, device=None):
        return self._apply(lambda t: t.cuda(device))

    def to_empty(self, *, device, recurse=True):
        """Give every parameter and buffer new, uninitialized storage of its shape and
        dtype on ``device`` (values are not copied: how a module built on the meta
        device gets memory before its weights are loaded)."""
        from ...runtime.creation import empty_like
        return self._apply(lambda t: empty_like(t, device=device), recurse=recurse)

    def cpu(self):
        return self._apply(lambda t: t.cpu())

    def type(self, dst_type):
        return self._apply(lambda t: t.type(dst_type))

    def float(self):
        return self._apply(lambda t: t.float() if t.is_floating_point() else t)

    def double(self):
        return self._apply(lambda t: t.double() if t.is_floating_point() else t)

    def half(self):
        return self._apply(lambda t: t.half() if t.is_floating_point() else t)

    def share_memory(self):
        """Mark every parameter's and buffer's memory shared (``Tensor.share_memory_``), as
        ``torch.multiprocessing`` programs (A3C's shared model) do before forking."""
        for t in [*self.parameters(), *self.buffers()]:
            t.share_memory_()
        return self

    # -- state dict --------------------------------------------------------------------------
    def _save_to_state_dict(self, destination, prefix, keep_vars):
        for name, param in self._parameters.items():
            if param is not None:
                destination[prefix + name] = param if keep_vars else param.detach()
        for name, buf in self._buffers.items():
            if buf is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = buf if keep_vars else buf.detach()
        if type(self).get_extra_state is not Module.get_extra_state:
            destination[prefix + _state.EXTRA_STATE_KEY_SUFFIX] = self.get_extra_state()

    def state_dict(self, *args, destination=None, prefix="", keep_vars=False):
        """An OrderedDict of every parameter and persistent buffer by dotted name, as
        detached tensors sharing storage (``keep_vars=True`` keeps the originals)."""
        return _state.state_dict(self, args, destination, prefix, keep_vars)

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs):
        """Check this module's entries of ``state_dict`` and queue their copies (the caller
        runs the queue only when nothing anywhere was wrong)."""
        _state.load_own_state(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs)

    def load_state_dict(self, state_dict, strict=True, assign=False):
        """Copy ``state_dict`` into the parameters and buffers. Every key and shape is checked
        first: on any error nothing is changed and a RuntimeError lists the problems.
        Returns ``(missing_keys, unexpected_keys)``."""
        return _state.load_state_dict(self, state_dict, strict, assign)

    def register_state_dict_pre_hook(self, hook):
        return _hooks.add(self, hook, "_state_dict_pre_hooks")

    def register_state_dict_post_hook(self, hook):
        hook._from_public_api = True
        return _hooks.add(self, hook, "_state_dict_hooks")

    def _register_state_dict_hook(self, hook):
        return _hooks.add(self, hook, "_state_dict_hooks")

    def register_load_state_dict_pre_hook(self, hook):
        """``hook(module, state_dict, prefix, local_metadata, strict, missing_keys,
        unexpected_keys, error_msgs)`` before this module's entries are loaded."""
        return _hooks.add(self, _hooks.WithModule(hook, self), "_load_state_dict_pre_hooks")

    def _register_load_state_dict_pre_hook(self, hook, with_module=False):
        return _hooks.add(self, _hooks.WithModule(hook, self) if with_module else hook,
                          "_load_state_dict_pre_hooks")

    def register_load_state_dict_post_hook(self, hook):
        """``hook(module, incompatible_keys)`` after loading (may edit the key lists)."""
        return _hooks.add(self, hook, "_load_state_dict_post_hooks")

    # -- hooks -------------------------------------------------------------------------------
    def register_forward_pre_hook(self, hook, *, prepend=False, with_kwargs=False):
        """``hook(module, args)`` (or ``hook(module, args, kwargs)``) before ``forward``; a
        non-None result replaces the arguments."""
        return _hooks.add(self, hook, "_forward_pre_hooks", prepend=prepend,
                          flags={"_forward_pre_hooks_with_kwargs": with_kwargs})

    def register_forward_hook(self, hook, *, prepend=False, with_kwargs=False, always_call=False):
        """``hook(module, args, output)`` (or ``hook(module, args, kwargs, output)``) after
        ``forward``; a non-None result replaces the output."""
        return _hooks.add(self, hook, "_forward_hooks", prepend=prepend,
                          flags={"_forward_hooks_with_kwargs": with_kwargs,
                                 "_forward_hooks_always_called": always_call})

    def register_full_backward_pre_hook(self, hook, prepend=False):
        """``hook(module, grad_output)`` when the gradients of the outputs are known; a
        non-None result replaces them."""
        return _hooks.add(self, hook, "_backward_pre_hooks", prepend=prepend)

    def register_full_backward_hook(self, hook, prepend=False):
        """``hook(module, grad_input, grad_output)`` when the gradients of the inputs are
        known; a non-None result replaces ``grad_input``."""
        if self._is_full_backward_hook is False:
            raise RuntimeError("Cannot use both regular backward hooks and full backward hooks on a "
                               "single Module. Please use only one of them.")
        self._is_full_backward_hook = True
        return _hooks.add(self, hook, "_backward_hooks", prepend=prepend)

    def register_backward_hook(self, hook):
        """The deprecated non-full hook: runs as a full backward hook here."""
        if self._is_full_backward_hook is True:
            raise RuntimeError("Cannot use both regular backward hooks and full backward hooks on a "
                               "single Module. Please use only one of them.")
        self._is_full_backward_hook = False
        return _hooks.add(self, hook, "_backward_hooks")

    # -- printing ----------------------------------------------------------------------------
    def _get_name(self):
        return type(self).__name__

    def extra_repr(self):
        """The text inside this module's parentheses in ``repr`` (override in layers)."""
        return ""

    def __repr__(self):
        extra = self.extra_repr()
        extra_lines = extra.split("\n") if extra else []
        child_lines = ["(" + key + "): " + _addindent(repr(module), 2)
                       for key, module in self._modules.items()]
        lines = extra_lines + child_lines
        body = ""
        if lines:
            if len(extra_lines) == 1 and not child_lines:
                body = extra_lines[0]
            else:
                body = "\n  " + "\n  ".join(lines) + "\n"
        return self._get_name() + "(" + body + ")"


def _discard(name, *stores):
    for store in stores:
        if name in store:
            if isinstance(store, dict):
                del store[name]
            else:
                store.discard(name)


# -- global hooks: every module's, run before its own (torch.nn.modules.module) -------------------

def register_module_forward_pre_hook(hook):
    """``hook(module, args)`` before every module's forward (its result replaces ``args``)."""
    return _hooks.add_global(hook, "forward_pre")


def register_module_forward_hook(hook, *, with_kwargs=False, always_call=False):
    """``hook(module, args, output)`` (``hook(module, args, kwargs, output)`` with
    ``with_kwargs``) after every module's forward; ``always_call``: also when it raises."""
    flags = (("forward_with_kwargs",) if with_kwargs else ()) + (("forward_always_called",) if always_call else ())
    return _hooks.add_global(hook, "forward", flags)


def _global_backward(hook, full):
    if _hooks.GLOBAL_FULL_BACKWARD[0] is (not full):
        raise RuntimeError("Cannot use both regular backward hooks and full backward hooks as a global Module "
                           "hook. Please use only one of them.")
    _hooks.GLOBAL_FULL_BACKWARD[0] = full
    return _hooks.add_global(hook, "backward")


def register_module_full_backward_hook(hook):
    """``hook(module, grad_input, grad_output)`` in every module's backward (see
    :meth:`Module.register_full_backward_hook`)."""
    return _global_backward(hook, True)


def register_module_backward_hook(hook):
    """The deprecated non-full form of :func:`register_module_full_backward_hook`."""
    return _global_backward(hook, False)


def register_module_full_backward_pre_hook(hook):
    """``hook(module, grad_output)`` before the gradients of every module's inputs."""
    return _hooks.add_global(hook, "backward_pre")


def register_module_buffer_registration_hook(hook):
    """``hook(module, name, buffer)`` when any module registers a buffer (its result replaces it)."""
    return _hooks.add_global(hook, "buffer_registration")


def register_module_module_registration_hook(hook):
    """``hook(module, name, submodule)`` when any module registers a submodule."""
    return _hooks.add_global(hook, "module_registration")


def register_module_parameter_registration_hook(hook):
    """``hook(module, name, param)`` when any module registers a parameter."""
    return _hooks.add_global(hook, "parameter_registration")
