"""``Parameter`` and ``Buffer``: the Tensor kinds a :class:`Module` registers on assignment.

A Parameter is a leaf Tensor subclass aliasing its ``data`` (same storage and version
counter); operations on it give plain Tensors because every op builds its result with
``wrap``. A Buffer marks a tensor as module state that is not trained (PyTorch 2.5+).
"""
from ..runtime.creation import empty
from ..runtime.tensor import DATA_SLOTS, PLAIN_SUBCLASSES, Tensor

__all__ = ["Buffer", "Parameter"]


def _alias(cls, data, requires_grad):
    """A new ``cls`` instance sharing ``data``'s storage and version counter, as a leaf."""
    if not isinstance(data, Tensor):
        raise TypeError(f"{cls.__name__}(): argument 'data' must be a Tensor, not {type(data).__name__}")
    if getattr(type(data), "_vmap_batched", False):  # (a vmap sample: its _data is sample 0 only)
        raise RuntimeError(f"vmap: {cls.__name__}() of a Tensor inside vmap is not supported in tracegrad: "
                           "create parameters outside vmap and pass per-sample values with "
                           "tracegrad.func.functional_call")
    src = data.detach()
    obj = Tensor.__new__(cls)
    for slot in DATA_SLOTS:
        setattr(obj, slot, getattr(src, slot))
    obj.requires_grad_(requires_grad)
    return obj


class Parameter(Tensor):
    """A Tensor that a Module lists in ``parameters()`` when assigned as its attribute.

    ``requires_grad`` defaults to True even under ``no_grad``, as in PyTorch.
    """

    def __new__(cls, data=None, requires_grad=True):
        return _alias(cls, empty(0) if data is None else data, requires_grad)

    def __init__(self, data=None, requires_grad=True):
        pass  # everything happened in __new__ (Tensor.__init__ would rebuild from args)

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()

    __str__ = __repr__

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        # PyTorch copies the values only: a copy starts without .grad (so that layers
        # deep-copied into a TransformerEncoder do not inherit accumulated gradients)
        result = type(self)(self.detach().clone(), self._requires_grad)
        memo[id(self)] = result
        return result

    def __reduce_ex__(self, protocol):
        rebuild, args = Tensor.__reduce_ex__(self.detach(), protocol)[:2]
        if self.__dict__:  # (attributes set on it come back, as in PyTorch; deepcopy drops them, as there)
            return (_rebuild_parameter, (rebuild(*args), self._requires_grad), dict(self.__dict__))
        return (_rebuild_parameter, (rebuild(*args), self._requires_grad))


def _rebuild_parameter(data, requires_grad):
    return Parameter(data, requires_grad)


class Buffer(Tensor):
    """A Tensor that a Module lists in ``buffers()`` (and, if ``persistent``, in its
    ``state_dict``) when assigned as its attribute."""

    def __new__(cls, data=None, *, persistent=True):
        data = empty(0) if data is None else data
        obj = _alias(cls, data, data.requires_grad)
        obj.persistent = persistent
        return obj

    def __init__(self, data=None, *, persistent=True):
        pass

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        result = Buffer(Tensor.__deepcopy__(self, {}), persistent=self.persistent)
        memo[id(self)] = result
        return result

    def __reduce_ex__(self, protocol):
        rebuild, args = Tensor.__reduce_ex__(self.detach(), protocol)
        return (_rebuild_buffer, (rebuild(*args), self._requires_grad, self.persistent))


def _rebuild_buffer(data, requires_grad, persistent):
    return Buffer(data.requires_grad_(requires_grad), persistent=persistent)


PLAIN_SUBCLASSES.update((Parameter, Buffer))


def __getattr__(name):
    """``UninitializedParameter``, ``UninitializedBuffer`` and ``is_lazy`` live with the lazy
    layers (which import this module); they are found here too, as in ``torch.nn.parameter``."""
    if name in ("UninitializedParameter", "UninitializedBuffer", "is_lazy"):
        from .modules import lazy
        return getattr(lazy, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
