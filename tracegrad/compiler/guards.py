"""The guards of a compiled call: what must be as it was when the call was traced.

A staged version of a call is reused only while everything the trace took as fixed is
the same, so the cache key of a call is made of:

* each argument Tensor's shape, strides (code may branch on its layout), dtype, array
  type (device) and ``requires_grad``;
  every other argument by value (numbers, strings, tuples of them) or, when it is not
  hashable, by identity;
* grad mode and the default dtype (factories inside the code read it);
* an ``nn.Module`` argument as a module (below); a plain object by identity and what it
  holds (see :func:`~tracegrad.transform.reads.state_of`);
* for a module, per submodule: its identity, ``training`` flag, the identity, shape,
  dtype and ``requires_grad`` of each parameter and buffer, and its other attributes
  (by value when they are plain numbers, strings, tuples...; by identity otherwise).

A key of None means "run eagerly": an argument the staged code cannot take (a NumPy
array, a tensor batched by vmap), a module with hooks, inference mode, forward-mode AD,
saved-tensor hooks.
"""
from ..backend import cpu as np
from ..backend import dtypes as _dt
from ..runtime import forward as _forward
from ..runtime import grad_mode
from ..nn.modules._module_hooks import ANY_GLOBAL as _ANY_GLOBAL
from ..runtime.saved_hooks import pack_hooks
from ..runtime.tensor import Tensor
from ..runtime.vmapped import is_vmapped
from ..transform.reads import state_of

__all__ = ["Identity", "call_key", "module_key"]

_SIMPLE = (int, float, complex, bool, str, bytes, type(None), type(Ellipsis), slice, range)
_SIMPLE_SET = frozenset(_SIMPLE)


class Identity:
    """A key part standing for one object (kept alive by the key, so that its id is not
    reused while it is cached)."""

    __slots__ = ("obj",)

    def __init__(self, obj):
        self.obj = obj

    def __eq__(self, other):
        return type(other) is Identity and other.obj is self.obj

    def __hash__(self):
        return id(self.obj)


def _value_key(x):
    tp = type(x)
    if tp in _SIMPLE or tp is _dt.dtype:
        return (tp, x)
    if tp in (tuple, list):
        parts = tuple(_value_key(v) for v in x)
        return None if None in parts else (tp, parts)
    if tp is dict:
        parts = tuple((k, _value_key(v)) for k, v in x.items())
        return None if any(p is None for _, p in parts) else (tp, parts)
    if isinstance(x, (np.ndarray, np.generic)):
        return None  # NumPy values: not staged (their contents would be baked in)
    if hasattr(x, "_modules") and hasattr(x, "_parameters"):  # an nn.Module argument
        return module_key(x)
    state = state_of(x)  # what a plain object holds (tensors by identity, numbers by value)
    try:
        hash(x)
    except TypeError:
        return Identity(x) if state is None else (Identity(x), state)
    return (tp, x) if state is None else (tp, Identity(x), state)


def tensor_key(t):
    d = t._data
    return (d.shape, d.strides, d.dtype, type(d), t._requires_grad)


def call_key(leaves):
    """The key part of a call's argument leaves, or None to run it eagerly."""
    key = [grad_mode.state.mode, _dt.get_default_dtype()]
    if grad_mode.state.mode == grad_mode.INFERENCE or _forward.ACTIVE[0] or pack_hooks() is not None:
        return None  # (inference tensors, forward-mode AD's tangents, saved-tensor hooks: eager's)
    for x in leaves:
        if isinstance(x, Tensor):
            if is_vmapped(x):
                return None
            key.append(tensor_key(x))
        else:
            k = _value_key(x)
            if k is None:
                return None
            key.append(k)
    return tuple(key)


def module_key(root):
    """The key part of module ``root``'s state (see the module docstring), or None when a
    module has hooks (they run Python code the staged version would skip).

    Modules and tensors are keyed by ``id``: a staged version holds the tensors it reads
    (so their ids cannot be reused while it is cached), and a submodule is known by its
    tensors and attributes. Called at every call, so written for speed."""
    if _ANY_GLOBAL[0]:  # (global module hooks: every module's call runs Python code)
        return None
    key = []
    add = key.append
    stack = [root]
    while stack:
        m = stack.pop()
        d = m.__dict__
        if d["_hooked"]:
            return None
        add(id(m))
        for name, v in d.items():
            if name in _INTERNAL:
                continue
            tp = type(v)
            if tp in _SIMPLE_SET:
                add(name)
                add(v)
            elif isinstance(v, Tensor):
                add(id(v))
                a = v._data
                add((a.shape, a.strides, a.dtype, type(a), v._requires_grad))
            elif hasattr(v, "_modules") and hasattr(v, "_parameters"):
                add(name)
                stack.append(v)
            else:
                k = _value_key(v)
                add(name)
                add(Identity(v) if k is None else k)
    return tuple(key)


_INTERNAL = frozenset({
    "_parameters", "_buffers", "_modules", "_non_persistent_buffers_set", "_hooked",
    "_is_full_backward_hook", "_forward_pre_hooks", "_forward_pre_hooks_with_kwargs",
    "_forward_hooks", "_forward_hooks_with_kwargs", "_forward_hooks_always_called",
    "_backward_pre_hooks", "_backward_hooks", "_state_dict_hooks", "_state_dict_pre_hooks",
    "_load_state_dict_pre_hooks", "_load_state_dict_post_hooks"})
