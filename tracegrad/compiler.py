"""``tracegrad.compile`` / ``tracegrad.compiler``: PyTorch 2's ``torch.compile`` entry point.

tracegrad has no graph compiler for eager programs (its staged paths are
:func:`tracegrad.trace` and :func:`tracegrad.grad`, which a program asks for by name).
``compile`` therefore does what ``torch.compile(backend="eager")`` does: it checks its
arguments and returns the model or function itself, which then runs eagerly with the
same results (and no speed-up). Programs that compile a model "for speed" run unchanged.
"""
__all__ = ["compile", "is_compiling", "is_dynamo_compiling", "disable", "reset"]

_MODES = (None, "default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")


def compile(model=None, *, fullgraph=False, dynamic=None, backend="inductor", mode=None, options=None,
            disable=False, **kwargs):
    """Return ``model`` unchanged (see the module docstring); as a decorator factory
    (``@compile(mode=...)``) when ``model`` is None."""
    if mode is not None and options is not None:
        raise RuntimeError("Either mode or options can be specified, but both can't be specified at the same time.")
    if mode not in _MODES:
        raise RuntimeError(f"Unrecognized mode={mode}, should be one of: "
                           + ", ".join(m for m in _MODES if m is not None))
    if not (isinstance(backend, str) or callable(backend)):
        raise TypeError(f"backend must be a string or a callable, got {type(backend).__name__}")
    if model is None:
        return lambda m: compile(m, fullgraph=fullgraph, dynamic=dynamic, backend=backend, mode=mode,
                                 options=options, disable=disable, **kwargs)
    if not callable(model):
        raise RuntimeError("Model must be callable")
    return model


def is_compiling():
    """Always False: nothing in tracegrad runs under a compiler's tracing."""
    return False


is_dynamo_compiling = is_compiling


def disable(fn=None, recursive=True, *, reason=None):
    """A no-op decorator (there is no compiler to keep out)."""
    return fn if fn is not None else (lambda f: f)


def reset():
    """Nothing to reset."""
