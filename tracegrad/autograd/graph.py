"""``tracegrad.autograd.graph``: the backward graph's nodes and saved-tensor hooks."""
from ..runtime.node import AccumulateGrad, FunctionNode, Node
from ..runtime.saved_hooks import save_on_cpu, saved_tensors_hooks

__all__ = ["Node", "FunctionNode", "AccumulateGrad", "saved_tensors_hooks", "save_on_cpu"]
