"""``tracegrad.compile`` / ``tracegrad.compiler``: PyTorch 2's ``torch.compile``, on the tape.

``compile(fn_or_module)`` stages an eager program: at a call, guards (argument shapes,
dtypes, devices and ``requires_grad``, other arguments by value, grad mode, the module's
training flags, parameters and attributes -- see :mod:`.guards`) pick a staged version;
otherwise the call is traced through the tape path (:mod:`.capture`: the eager runtime's
operations are recorded, parameters and other tensors become inputs), compiled -- the
forward, and the backward ``loss.backward()`` will run (:mod:`.staging`) -- and replayed.
The staged forward is one node of the eager autograd graph (``CompiledFunctionBackward``),
so ``backward()`` and optimizers work unchanged.

What cannot be staged -- data-dependent control flow, ``.item()``, ``print``, in-place
writes into module state (BatchNorm's running statistics in training mode), random draws
(dropout in training mode), hooks -- makes the call run eagerly (a "graph break", kept for
those guards); ``fullgraph=True`` raises :class:`Unsupported` instead, naming it.

Every backend name runs the same tape compiler (a backend given as a callable, which
expects an FX graph, is refused); ``dynamic`` is accepted, shapes are always specialised.
"""
import functools

from .capture import Unsupported, is_compiling
from .runner import CompiledCallable, reset_all

__all__ = [
    "InvalidBackend",
    "Unsupported",
    "compile",
    "compile_in_place",
    "disable",
    "is_compiling",
    "is_dynamo_compiling",
    "is_exporting",
    "list_backends",
    "reset",
]

_MODES = (None, "default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
_BACKENDS = ("aot_eager", "aot_eager_decomp_partition", "aot_eager_default_partitioner", "aot_ts",
             "cudagraphs", "eager", "inductor", "openxla", "ts", "tvm")


class InvalidBackend(RuntimeError):
    """An unknown backend name (PyTorch: ``torch._dynamo.exc.InvalidBackend``)."""


def list_backends(exclude_tags=("debug", "experimental")):
    """The backend names ``compile`` takes (each runs tracegrad's tape compiler)."""
    return ["cudagraphs", "inductor", "openxla", "tvm"] if exclude_tags else list(_BACKENDS)


def compile(model=None, *, fullgraph=False, dynamic=None, backend="inductor", mode=None, options=None,
            name=None, disable=False, recompile_limit=None, isolate_recompiles=False, shapes_spec=None):
    """Stage ``model`` (a function or an ``nn.Module``; see the module docstring); as a
    decorator factory (``@compile(mode=...)``) when ``model`` is None."""
    _check_options(backend, mode, options)
    if model is None:
        return lambda m: compile(m, fullgraph=fullgraph, dynamic=dynamic, backend=backend, mode=mode,
                                 options=options, name=name, disable=disable,
                                 recompile_limit=recompile_limit, isolate_recompiles=isolate_recompiles,
                                 shapes_spec=shapes_spec)
    if not callable(model):
        raise AssertionError(f"A callable function is expected, but {type(model)} is provided.")  # noqa: TRY004  (torch)
    if disable:
        return model
    from ..nn.modules.module import Module
    if isinstance(model, Module):
        from .module import OptimizedModule
        return OptimizedModule(model, fullgraph=fullgraph)
    compiled = CompiledCallable(model, fullgraph=fullgraph)

    @functools.wraps(model)
    def compiled_function(*args, **kwargs):
        return compiled(*args, **kwargs)
    compiled_function._compiled = compiled
    compiled_function._torchdynamo_orig_callable = model
    return compiled_function


def compile_in_place(module, *, fullgraph=False, dynamic=None, backend="inductor", mode=None, options=None,
                     name=None, disable=False, recompile_limit=None, isolate_recompiles=False, shapes_spec=None):
    """``module.compile(...)`` (``nn.Module.compile``): the module's own calls run its
    forward staged from now on -- hooks still run around it, eagerly -- while the module
    stays itself (no ``_orig_mod.`` prefix in its state dict, unlike ``compile(module)``).
    The staged forward is kept as the instance's ``forward``."""
    _check_options(backend, mode, options)
    if disable:
        return
    own = module.__dict__.get("forward")  # (a forward set on the instance is the one staged)
    forward = own if own is not None and not isinstance(own, CompiledCallable) else type(module).forward.__get__(module)
    module.forward = CompiledCallable(forward, module=module, fullgraph=fullgraph, name=type(module).__name__,
                                      reads_of=forward)


def _check_options(backend, mode, options):
    """PyTorch's checks of ``compile``'s backend, mode and options."""
    if mode is not None and options is not None:
        raise RuntimeError("Either mode or options can be specified, but both can't be specified at the same time.")
    if mode not in _MODES:
        raise RuntimeError(f"Unrecognized mode={mode}, should be one of: "
                           + ", ".join(m for m in _MODES if m is not None))
    if backend is None:
        backend = "inductor"
    if callable(backend):
        raise NotImplementedError(
            "tracegrad.compile: a custom backend (a callable) is handed an FX graph, which tracegrad "
            "does not build; pass a backend name (every name runs tracegrad's tape compiler)")
    if not isinstance(backend, str):
        raise TypeError(f"backend must be a string or a callable, got {type(backend).__name__}")
    if backend not in _BACKENDS:
        raise InvalidBackend(f"Invalid backend: {backend!r}, see `torch._dynamo.list_backends()` for "
                             "available backends.")


is_dynamo_compiling = is_compiling


def is_exporting():
    """Always False: tracegrad has no export."""
    return False


def disable(fn=None, recursive=True, *, reason=None):
    """Keep ``fn`` out of compilation: called while a call is being staged it makes that
    call run eagerly (PyTorch splits the graph there; tracegrad stages whole calls only).
    A compiled function given here is its original again."""
    if fn is None:
        return functools.partial(disable, recursive=recursive, reason=reason)
    fn = getattr(fn, "_torchdynamo_orig_callable", fn)

    @functools.wraps(fn)
    def disabled(*args, **kwargs):
        if is_compiling():
            from .capture import GraphBreak
            raise GraphBreak(f"a call of {getattr(fn, '__qualname__', fn)!r}, marked with "
                             "tracegrad.compiler.disable" + (f" ({reason})" if reason else ""))
        return fn(*args, **kwargs)
    disabled._torchdynamo_disable = True
    return disabled


def reset():
    """Drop every staged version of every compiled function and module (the next calls trace again)."""
    reset_all()
