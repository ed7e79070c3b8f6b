"""``skip_init``: build a module whose parameters the caller will initialize itself."""
import inspect

__all__ = ["skip_init"]


def skip_init(module_cls, *args, **kwargs):
    """``module_cls(*args, **kwargs)`` with parameter and buffer values left unspecified (the
    caller initializes them). The class must take a ``device`` argument, as in PyTorch.

    As in PyTorch, the module is built on the meta device (its initialization writes
    nothing and draws no random numbers) and then given empty storage on ``device``
    (zero-filled here: ``tracegrad.empty`` never holds garbage)."""
    from ..modules.module import Module
    if not issubclass(module_cls, Module):
        raise RuntimeError(f"Expected a Module; got {module_cls}")
    if "device" not in inspect.signature(module_cls).parameters:
        raise RuntimeError("Module must support a 'device' arg to skip initialization")
    final_device = kwargs.pop("device", "cpu")
    kwargs["device"] = "meta"
    return module_cls(*args, **kwargs).to_empty(device=final_device)
