"""Tensor hooks and ``retain_grad``: callbacks the engine runs as gradients arrive.

A leaf keeps its hooks itself (they run before its gradient is accumulated); a non-leaf's
hooks live on its ``grad_fn``, keyed by the tensor's output number, and run before that
node's vjps see the gradient.
"""
import itertools
import weakref

__all__ = ["RemovableHandle", "register_tensor_hook", "retain_grad"]

_ids = itertools.count()


class RemovableHandle:
    """Returned by ``register_hook``: ``handle.remove()`` unregisters the hook."""

    def __init__(self, hooks, key):
        self._hooks = weakref.ref(hooks) if hooks is not None else None
        self.id = key

    def remove(self):
        hooks = self._hooks() if self._hooks is not None else None
        if hooks is not None:
            hooks.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


class _HookDict(dict):
    """A dict that can be weakly referenced by its handles."""

    __slots__ = ("__weakref__",)


def _hook_dict(owner, key, subkey=None):
    extra = owner._extra
    if extra is None:
        extra = owner._extra = {}
    if subkey is None:
        return extra.setdefault(key, _HookDict())
    return extra.setdefault(key, {}).setdefault(subkey, _HookDict())


def add_hook(owner, kind, hook, subkey=None):
    """Register ``hook`` in ``owner._extra[kind]`` (or ``[kind][subkey]``); returns its
    removable handle."""
    if not callable(hook):
        raise TypeError(f"hook must be callable, got {type(hook).__name__}")
    hooks = _hook_dict(owner, kind, subkey)
    key = next(_ids)
    hooks[key] = hook
    return RemovableHandle(hooks, key)


def register_tensor_hook(t, hook):
    if not t._requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    fn = t.grad_fn
    if fn is None:
        return add_hook(t, "hooks", hook)
    return add_hook(fn, "tensor_hooks", hook, t._output_nr)


def retain_grad(t):
    fn = t._grad_fn
    retains = fn._extras().setdefault("retains", {})
    retains[t._output_nr] = weakref.ref(t)
    if t._extra is None:
        t._extra = {}
    t._extra["retains_grad"] = True


def release_retain(t):
    """Undo :func:`retain_grad` on ``t``'s current grad_fn (before its history changes)."""
    fn = t._grad_fn
    retains = fn._extra.get("retains") if fn is not None and fn._extra is not None else None
    if retains:
        retains.pop(t._output_nr, None)
    t._extra["retains_grad"] = False
