"""A module's members as a whole: their stores, ``state_dict``, ``load_state_dict``, ``to()``.

Both loading and converting are all-or-nothing: every check (keys, shapes) and every new
tensor is made before anything in the module is changed, so an exception leaves the
module as it was. Loading keeps PyTorch's ``_load_from_state_dict`` protocol (layers may
override it); the copies it decides on are queued and run only once the whole tree passed.
"""
import itertools
import threading
import warnings
import weakref
from collections import OrderedDict, namedtuple
from collections.abc import Mapping

from ...ops.conversion import _parse_to
from ...runtime.grad_mode import no_grad
from ...runtime.tensor import Tensor
from ..parameter import Parameter

__all__ = ["EXTRA_STATE_KEY_SUFFIX", "apply_to_tensors", "load_own_state", "load_state_dict",
           "module_to", "state_dict"]

EXTRA_STATE_KEY_SUFFIX = "_extra_state"
_local = threading.local()  # .pending: copies queued by a running load_state_dict


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    __slots__ = ()

    def __repr__(self):
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


# -- member stores ----------------------------------------------------------------------------

_STORES = ("_parameters", "_buffers", "_modules")


class _Members(dict):
    """``_parameters`` / ``_buffers`` / ``_modules``: a dict whose every write is mirrored
    into its module's ``__dict__`` (reads are plain dict reads). The module is held
    weakly, so no reference cycle keeps it alive."""

    __slots__ = ("_owner",)

    def __init__(self, owner, items=()):
        dict.__init__(self, items)
        self._owner = weakref.ref(owner)
        d = owner.__dict__
        for k, v in dict.items(self):
            d[k] = v

    def _dict(self):
        owner = self._owner()
        return {} if owner is None else owner.__dict__

    def __setitem__(self, key, value):
        dict.__setitem__(self, key, value)
        self._dict()[key] = value

    def __delitem__(self, key):
        dict.__delitem__(self, key)
        self._dict().pop(key, None)

    def pop(self, key, *default):
        if key in self:
            self._dict().pop(key, None)
        return dict.pop(self, key, *default)

    def popitem(self):
        key, value = dict.popitem(self)
        self._dict().pop(key, None)
        return key, value

    def clear(self):
        d = self._dict()
        for key in self:
            d.pop(key, None)
        dict.clear(self)

    def setdefault(self, key, default=None):
        if key not in self:
            self[key] = default
        return self[key]

    def update(self, *args, **kwargs):
        for key, value in dict(*args, **kwargs).items():
            self[key] = value

    def __ior__(self, other):
        self.update(other)
        return self

    def __reduce__(self):  # copies and pickles are plain dicts (the owner re-wraps them)
        return (dict, (dict(self),))


# -- state_dict -------------------------------------------------------------------------------

def state_dict(module, args, destination, prefix, keep_vars):
    if args:
        warnings.warn("Positional args are being deprecated, use kwargs instead. Refer to "
                      "https://pytorch.org/docs/main/generated/torch.nn.Module.html"
                      "#torch.nn.Module.state_dict for details.", FutureWarning, stacklevel=3)
        destination = args[0] if destination is None else destination
        prefix = args[1] if len(args) > 1 and prefix == "" else prefix
        keep_vars = args[2] if len(args) > 2 and keep_vars is False else keep_vars
    if destination is None:
        destination = OrderedDict()
        destination._metadata = OrderedDict()
    local_metadata = {"version": module._version}
    if hasattr(destination, "_metadata"):
        destination._metadata[prefix[:-1]] = local_metadata
    for hook in module._state_dict_pre_hooks.values():
        hook(module, prefix, keep_vars)
    module._save_to_state_dict(destination, prefix, keep_vars)
    for name, child in module._modules.items():
        if child is not None:
            child.state_dict(destination=destination, prefix=prefix + name + ".", keep_vars=keep_vars)
    for hook in module._state_dict_hooks.values():
        result = hook(module, destination, prefix, local_metadata)
        if getattr(hook, "_from_public_api", False):
            if result is not None:
                raise RuntimeError("state_dict post-hook must return None")
        elif result is not None:
            destination = result
    return destination


# -- loading ----------------------------------------------------------------------------------

def load_own_state(module, state_dict, prefix, local_metadata, strict, missing_keys,
                   unexpected_keys, error_msgs):
    """PyTorch's ``_load_from_state_dict`` with the copies queued, not done."""
    for hook in module._load_state_dict_pre_hooks.values():
        hook(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs)
    persistent = {k: v for k, v in module._buffers.items() if k not in module._non_persistent_buffers_set}
    local_state = {k: v for k, v in itertools.chain(module._parameters.items(), persistent.items())
                   if v is not None}
    assign = local_metadata.get("assign_to_params_buffers", False)
    copies = []
    for name, param in local_state.items():
        key = prefix + name
        if key not in state_dict:
            if strict:
                missing_keys.append(key)
            continue
        value = state_dict[key]
        if not isinstance(value, Tensor):
            error_msgs.append(f'While copying the parameter named "{key}", expected tracegrad.Tensor '
                              f"or Tensor-like object from checkpoint but received {type(value)}")
            continue
        if param.ndim == 0 and value.ndim == 1 and value.shape[0] == 1:
            value = value[0]
        if value.shape != param.shape:
            error_msgs.append(f"size mismatch for {key}: copying a param with shape {value.shape} from "
                              f"checkpoint, the shape in current model is {param.shape}.")
            continue
        copies.append((name, param, value))
    extra_key = prefix + EXTRA_STATE_KEY_SUFFIX
    has_extra = type(module).set_extra_state is not _base_set_extra_state()
    if has_extra and extra_key in state_dict:
        copies.append((None, None, state_dict[extra_key]))
    elif has_extra and strict:
        missing_keys.append(extra_key)
    elif strict and extra_key in state_dict:
        unexpected_keys.append(extra_key)
    if strict:
        for key in state_dict:
            if key.startswith(prefix) and key != extra_key:
                head = key[len(prefix):].split(".", 1)
                if (head[0] not in module._modules) if len(head) > 1 else (head[0] not in local_state):
                    unexpected_keys.append(key)
    _queue(lambda: _commit(module, copies, assign))


def _base_set_extra_state():
    from .module import Module
    return Module.set_extra_state


def _queue(action):
    pending = getattr(_local, "pending", None)
    if pending is None:  # _load_from_state_dict called directly: no transaction to join
        action()
    else:
        pending.append(action)


def _commit(module, copies, assign):
    with no_grad():
        for name, param, value in copies:
            if name is None:
                module.set_extra_state(value)
            elif assign:
                if isinstance(param, Parameter):
                    if isinstance(value, Parameter):
                        value.requires_grad_(param.requires_grad)
                    else:
                        value = Parameter(value, requires_grad=param.requires_grad)
                setattr(module, name, value)
            else:
                if param.device.type == "meta" and getattr(value, "device", param.device).type != "meta":
                    warnings.warn(f"for {name}: copying from a non-meta parameter in the checkpoint to a meta "
                                  "parameter in the current model, which is a no-op. (Did you mean to pass "
                                  "`assign=True` to assign items in the state dictionary to their corresponding "
                                  "key in the module instead of copying them in place?)", stacklevel=2)
                param.copy_(value)


def load_state_dict(module, state_dict, strict, assign):
    if not isinstance(state_dict, Mapping):
        raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
    missing, unexpected, errors = [], [], []
    metadata = getattr(state_dict, "_metadata", None)
    state_dict = OrderedDict(state_dict)
    if metadata is not None:
        state_dict._metadata = metadata

    def load(mod, local_state, prefix=""):
        local_metadata = {} if metadata is None else metadata.get(prefix[:-1], {})
        if assign:
            local_metadata["assign_to_params_buffers"] = assign
        mod._load_from_state_dict(local_state, prefix, local_metadata, True, missing, unexpected, errors)
        for name, child in mod._modules.items():
            if child is not None:
                child_prefix = prefix + name + "."
                child_state = {k: v for k, v in local_state.items() if k.startswith(child_prefix)}
                load(child, child_state, child_prefix)
        keys = _IncompatibleKeys(missing, unexpected)
        for hook in mod._load_state_dict_post_hooks.values():
            if hook(mod, keys) is not None:
                raise AssertionError("Hooks registered with ``register_load_state_dict_post_hook`` are not "
                                     "expected to return new values, if incompatible_keys need to be "
                                     "modified, it should be done inplace.")

    outer = getattr(_local, "pending", None)
    _local.pending = pending = []
    try:
        load(module, state_dict)
    finally:
        _local.pending = outer
    if strict:
        if unexpected:
            errors.insert(0, f"Unexpected key(s) in state_dict: {_quoted(unexpected)}. ")
        if missing:
            errors.insert(0, f"Missing key(s) in state_dict: {_quoted(missing)}. ")
    if errors:
        raise RuntimeError("Error(s) in loading state_dict for {}:\n\t{}".format(
            type(module).__name__, "\n\t".join(errors)))
    for action in pending:
        action()
    return _IncompatibleKeys(missing, unexpected)


def _quoted(keys):
    return ", ".join(f'"{k}"' for k in keys)


# -- conversion -------------------------------------------------------------------------------

def apply_to_tensors(module, fn, recurse):
    """``Module._apply``: the new tensors are all made first (a cache keyed by the old
    tensors, shared by the nested ``_apply`` calls of one conversion), then swapped in."""
    cache = getattr(_local, "converted", None)
    if cache is not None:
        return _swap(module, fn, cache, recurse)
    cache = {}
    with no_grad():
        for mod in (module.modules() if recurse else (module,)):
            for t in itertools.chain(mod._parameters.values(), mod._buffers.values()):
                if t is not None and id(t) not in cache:
                    cache[id(t)] = (t, fn(t))
                    if t._grad is not None:
                        cache[id(t._grad)] = (t._grad, fn(t._grad))
    _local.converted = cache
    try:
        return _swap(module, fn, cache, recurse)
    finally:
        _local.converted = None


def _swap(module, fn, cache, recurse):
    if recurse:
        for child in module.children():
            child._apply(fn)

    def applied(t):
        hit = cache.get(id(t))
        if hit is not None and hit[0] is t:
            return hit[1]
        with no_grad():
            return fn(t)
    for key, param in list(module._parameters.items()):
        if param is None:
            continue
        grad = param._grad
        new = applied(param)
        if new is not param and (new.device.type == "meta") != (param.device.type == "meta"):
            # onto or off the meta device: a new Parameter here, from a tensor of its own, as
            # PyTorch makes (its storage cannot be swapped in place): tied weights come
            # apart, and a model re-ties them after to_empty() (tie_weights). The converted
            # tensors leave the cache, so that a tied parameter met later converts afresh.
            cache.pop(id(param), None)
            with no_grad():
                moved = Parameter(new, requires_grad=param.requires_grad)
                if grad is not None:
                    moved.grad = applied(grad)
                    cache.pop(id(grad), None)
            module._parameters[key] = moved
            continue
        if new is not param:
            param.data = new
        if grad is not None:
            new_grad = applied(grad)
            if new_grad is not grad:
                grad.data = new_grad
    for key, buf in module._buffers.items():
        if buf is not None:
            module._buffers[key] = applied(buf)
    return module


def module_to(module, args, kwargs):
    device, dtype, _ = _parse_to(args, dict(kwargs))
    if dtype is not None and not (dtype.is_floating_point or dtype.is_complex):
        raise TypeError("nn.Module.to only accepts floating point or complex dtypes, but got desired "
                        f"dtype={dtype}")

    def convert(t):
        floating = t.is_floating_point() or t.is_complex()
        return t.to(device=device, dtype=dtype if floating else None)
    return module._apply(convert)
