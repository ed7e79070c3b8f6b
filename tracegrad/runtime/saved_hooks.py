"""Saved-tensor hooks: control how tensors saved for backward are stored.

Inside ``saved_tensors_hooks(pack, unpack)`` every tensor an operation saves for backward
is stored as ``pack(tensor)`` and turned back into a tensor by ``unpack(packed)`` when
backward needs it (e.g. offload to disk or CPU and back). The unpacked tensor takes over
the saved tensor's autograd history, so higher derivatives still work. Hooks are
per thread and nest; the innermost pair applies.
"""
import threading
import weakref

from .tensor import Tensor
from .vmapped import is_vmapped

__all__ = ["saved_tensors_hooks", "save_on_cpu", "pack_hooks", "Packed"]

_local = threading.local()
_active = [0]  # contexts open in any thread: when 0, saving skips the thread-local lookup


def pack_hooks():
    """The innermost (pack, unpack) pair in effect in this thread, or None."""
    if not _active[0]:
        return None
    stack = getattr(_local, "stack", None)
    return stack[-1] if stack else None


class Packed:
    """A saved tensor as its pack hook returned it, with what autograd needs to know."""

    __slots__ = ("value", "unpack", "shape", "grad_fn", "output_nr", "requires_grad", "accumulator")

    def __init__(self, tensor, hooks):
        version = tensor._version
        self.value = hooks[0](tensor)
        if tensor._version != version:
            raise RuntimeError(
                "A saved tensor pack hook is modifying its input in place. Tensors provided as "
                "input to pack hook cannot be modified by in-place operations as this can lead "
                "to unexpected side-effects. Please open an issue if you need to perform "
                "in-place operations on the input to a pack hook.")
        self.unpack = hooks[1]
        self.shape = tensor.shape
        # weakly: a saved output's grad_fn is the node that holds this record (no cycle);
        # a saved input's is held by that node's edges anyway
        fn = tensor._grad_fn
        self.grad_fn = weakref.ref(fn) if fn is not None else None
        self.output_nr, self.requires_grad = tensor._output_nr, tensor._requires_grad
        self.accumulator = None
        if fn is None and self.requires_grad:  # a leaf: keep its gradient accumulator
            from .dispatch import grad_accumulator
            self.accumulator = grad_accumulator(tensor)

    def tensor(self, graph):
        """The unpacked tensor; with ``graph``, carrying the saved tensor's history (an
        unpacked leaf is a leaf whose gradients go to the original's accumulator)."""
        t = self.unpack(self.value)
        if not isinstance(t, Tensor):
            raise TypeError(f"unpack hook must return a Tensor, got {type(t).__name__}")
        if t.shape != self.shape:
            raise RuntimeError(f"the unpack hook returned a tensor of size {list(t.shape)} for a "
                               f"tensor saved with size {list(self.shape)}: the sizes must match")
        if is_vmapped(t):  # one sample of a vmap batch (its _data is sample 0 only): kept whole
            if not graph:
                raise RuntimeError("saved_tensors_hooks: the unpack hook returned a Tensor batched by vmap "
                                   "for a backward that reads arrays; this is not supported")
            u = t.detach()
            u._requires_grad, u._grad_fn = self.requires_grad, self.grad_fn() if self.grad_fn is not None else None
            u._output_nr = self.output_nr
        elif not graph:
            return t._data
        else:
            from .tensor import wrap
            u = wrap(t._data, self.requires_grad, self.grad_fn() if self.grad_fn is not None else None,
                     self.output_nr)
        if self.accumulator is not None:
            u._acc = weakref.ref(self.accumulator)
        return u


class saved_tensors_hooks:
    """Context manager: ``pack_hook(tensor) -> anything``, ``unpack_hook(anything) -> Tensor``."""

    def __init__(self, pack_hook, unpack_hook):
        if not callable(pack_hook) or not callable(unpack_hook):
            raise TypeError("saved_tensors_hooks needs two callables: pack_hook and unpack_hook")
        self.pack_hook, self.unpack_hook = pack_hook, unpack_hook

    def __enter__(self):
        refusal = getattr(_local, "disabled", None)
        if refusal is not None:
            raise RuntimeError(refusal)
        stack = getattr(_local, "stack", None)
        if stack is None:
            stack = _local.stack = []
        stack.append((self.pack_hook, self.unpack_hook))
        _active[0] += 1
        return self

    def __exit__(self, *exc):
        _local.stack.pop()
        _active[0] -= 1
        return False


class save_on_cpu(saved_tensors_hooks):
    """Saved tensors are copied to the CPU and moved back to their device for backward
    (saving device memory; on the CPU itself it keeps a private copy)."""

    def __init__(self, pin_memory=False, device_type="cuda"):
        def pack(t):
            return t.device, t.detach().cpu().clone()

        def unpack(packed):
            device, saved = packed
            return saved.to(device)
        super().__init__(pack, unpack)



class allow_mutation_on_saved_tensors(saved_tensors_hooks):
    """Tensors saved for backward while it is active may then be changed in place: backward
    uses the values they had when saved. PyTorch clones a saved tensor when it is first
    changed; here each is copied when it is saved (the same values, more memory)."""

    def __init__(self):
        super().__init__(lambda t: t.detach().clone(), lambda copy: copy)

class disable_saved_tensors_hooks:
    """``torch.autograd.graph.disable_saved_tensors_hooks(error_message)``: while it is
    active (in this thread), entering :class:`saved_tensors_hooks` raises RuntimeError with
    ``error_message`` -- for code whose saved tensors must stay as they are. Also a decorator."""

    def __init__(self, error_message):
        self.error_message = error_message

    def __enter__(self):
        self._outer = getattr(_local, "disabled", None)
        _local.disabled = self.error_message
        return self

    def __exit__(self, *exc):
        _local.disabled = self._outer
        return False

    def __call__(self, fn):
        import functools

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with disable_saved_tensors_hooks(self.error_message):
                return fn(*args, **kwargs)
        return wrapper
