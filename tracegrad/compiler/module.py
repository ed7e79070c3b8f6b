"""``OptimizedModule``: what ``tracegrad.compile(module)`` returns, as PyTorch's
``torch._dynamo.eval_frame.OptimizedModule``: a Module wrapping the original one as
``_orig_mod`` (so state_dict keys get the ``_orig_mod.`` prefix), forwarding attribute
reads and writes and ``training`` to it, and whose ``forward`` is the compiled call."""
from ..nn.modules.module import Module
from .runner import CompiledCallable

__all__ = ["OptimizedModule"]


class OptimizedModule(Module):
    """Wraps ``mod``; calling it runs ``mod`` (hooks included: a module with hooks runs
    eagerly) through a :class:`~.runner.CompiledCallable`."""

    _opt_mod_attributes = frozenset({"_orig_mod", "dynamo_ctx", "_torchdynamo_orig_callable", "forward",
                           "_forward", "__dict__", "_super_module_initialized", "_compiled"})

    def __init__(self, mod, fullgraph=False):
        object.__setattr__(self, "_orig_mod", mod)
        self._super_module_initialized = False
        super().__init__()
        self._super_module_initialized = True
        self._orig_mod = mod
        self._torchdynamo_orig_callable = mod.__call__
        self.forward = self._compiled = CompiledCallable(mod.__call__, module=mod, fullgraph=fullgraph,
                                                         name=type(mod).__name__, reads_of=mod.forward)

    def __len__(self):
        from collections.abc import Sized
        if isinstance(self._orig_mod, Sized):
            return len(self._orig_mod)
        raise TypeError(f"{type(self._orig_mod).__name__} does not support len()")

    @property
    def training(self):
        return self._orig_mod.training

    @training.setter
    def training(self, value):
        if self.__dict__.get("_super_module_initialized"):
            self._orig_mod.training = value

    def __getattr__(self, name):
        if name == "_orig_mod":
            return self._modules["_orig_mod"]
        return getattr(self._orig_mod, name)

    def __setattr__(self, name, value):
        if hasattr(type(self), name) or name in OptimizedModule._opt_mod_attributes:
            return super().__setattr__(name, value)
        return setattr(self._orig_mod, name, value)

    def __delattr__(self, name):
        if hasattr(type(self), name) or name in OptimizedModule._opt_mod_attributes:
            return super().__delattr__(name)
        return delattr(self._orig_mod, name)

    def __dir__(self):
        mine = self._orig_mod.__dir__()
        return mine + [a for a in super().__dir__() if a not in mine]

    def __reduce__(self):
        return (type(self), (self._orig_mod, self._compiled.fullgraph))
