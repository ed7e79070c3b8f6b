"""``tracegrad.autograd.graph``: the node types of the backward graph."""
from ..runtime.node import AccumulateGrad, FunctionNode, Node

__all__ = ["Node", "FunctionNode", "AccumulateGrad"]
