"""``tracegrad.autograd.graph``: the backward graph's nodes and edges, saved-tensor hooks,
and hooks over several tensors' gradients."""
import threading

from ..runtime.engine import GradientEdge, queue_callback
from ..runtime.dispatch import edge_of
from ..runtime.node import AccumulateGrad, FunctionNode, Node
from ..runtime.saved_hooks import (allow_mutation_on_saved_tensors, disable_saved_tensors_hooks, save_on_cpu,
                                   saved_tensors_hooks)
from ..runtime.tensor import Tensor

__all__ = ["Node", "FunctionNode", "AccumulateGrad", "GradientEdge", "get_gradient_edge", "increment_version",
           "register_multi_grad_hook", "saved_tensors_hooks", "save_on_cpu", "disable_saved_tensors_hooks",
           "allow_mutation_on_saved_tensors"]


def get_gradient_edge(tensor):
    """The edge of the backward graph ``tensor``'s gradient flows into: pass it to
    ``autograd.grad`` as an input to get that gradient (the tensor itself need not live)."""
    if not tensor.requires_grad:
        raise RuntimeError("It is not possible to get the gradient edge for a Tensor that does not require "
                           "gradients")
    node, nr = edge_of(tensor)
    return GradientEdge(node, nr)


def increment_version(tensor):
    """Count an in-place change autograd did not see (a write through another library):
    saved copies of ``tensor`` (or of each tensor of an iterable) are then stale, and a
    backward that reads them raises PyTorch's version error."""
    for t in (tensor,) if isinstance(tensor, Tensor) else tensor:
        t._bump_version()


class _Handles:
    """The handle of a multi-grad hook: ``remove()`` removes its hook from every tensor."""

    def __init__(self, handles):
        self.handles = handles

    def remove(self):
        for h in self.handles:
            h.remove()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


def register_multi_grad_hook(tensors, fn, *, mode="all"):
    """One hook over the gradients of several tensors. ``mode="all"``: ``fn(grads)`` once per
    backward pass that reaches any of them, with every tensor's gradient (None for those the
    pass does not reach), when the pass ends; ``mode="any"``: ``fn(grad)`` with the first of
    their gradients the pass computes."""
    if mode not in ("all", "any"):
        raise ValueError(f"Expects mode to be one of ('all', 'any') but got {mode}")
    tensors = tuple(tensors)
    local = threading.local()  # (each thread's backward passes are its own)

    def pass_ends():
        grads, local.grads = local.grads, None
        if mode == "all":
            fn(grads)

    def hook_for(i):
        def hook(grad):
            if getattr(local, "grads", None) is None:
                local.grads = [None] * len(tensors)
                queue_callback(pass_ends)
                if mode == "any":
                    fn(grad)
            local.grads[i] = grad
        return hook
    return _Handles([t.register_hook(hook_for(i)) for i, t in enumerate(tensors)])
