"""torch._functorch.python_key: ``make_fx`` traces a function into a torch.fx graph.
tracegrad has no FX graphs (its staged paths are the tape and AST transforms of
:mod:`tracegrad.transform`), so ``make_fx`` is importable -- ``import functorch`` needs
the name -- and refuses when called rather than returning something that is not a graph."""

__all__ = ["make_fx"]


def make_fx(f, *args, **kwargs):
    """Refuses: tracegrad has no torch.fx graphs to trace into."""
    raise NotImplementedError(
        "make_fx: tracegrad has no torch.fx graphs, so functorch.make_fx / "
        "torch.fx.experimental.proxy_tensor.make_fx is not supported; run the function eagerly, "
        "or stage NumPy code with tracegrad.grad(f, mode='tape' or 'ast')")
