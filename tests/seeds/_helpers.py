"""Shared helpers for the seed tests (``import tracegrad as torch`` behaves like PyTorch).

Expected values come from the seed notes themselves or from real PyTorch 2.13 (CPU), run on
the same code; tracegrad's own names print as ``tracegrad.float64`` / ``tracegrad.Size``
where PyTorch prints ``torch.float64`` / ``torch.Size``.
"""
import re

import numpy as np

# The UserWarning PyTorch gives when reading .grad of a non-leaf that does not retain it.
NONLEAF_GRAD_WARNING = r"\.grad attribute of a Tensor that is not a leaf Tensor is being accessed"
SECOND_BACKWARD = r"Trying to backward through the graph a second time"
IMPLICIT_SCALAR = r"grad can be implicitly created only for scalar outputs"
LEAF_INPLACE = r"a leaf Variable that requires grad is being used in an in-place operation\."
NONLEAF_REQUIRES_GRAD = r"you can only change requires_grad flags of leaf variables"


def arr(t):
    """The values of a tracegrad tensor as a NumPy array (detached)."""
    return np.array(t.detach().numpy(), copy=True)


def node_pattern(name):
    """Regex for the repr of a backward node, e.g. ``<MulBackward0 object at 0x7fb5d5f73610>``."""
    return rf"<{re.escape(name)} object at 0x[0-9a-fA-F]+>"


def assert_node_repr(node, name):
    assert re.fullmatch(node_pattern(name), repr(node)), repr(node)


def version_error(shape, current=1, expected=0, which=r"(, which is output \d+ of \w+,)?"):
    """Regex for the version-counter error of PyTorch's in-place correctness check. PyTorch
    names the tensor's current producer (``, which is output 0 of Add,``) when it has one;
    pass ``which=""`` where it must be absent (a leaf) or the exact text where it must be."""
    dims = ", ".join(str(s) for s in shape)
    return (r"one of the variables needed for gradient computation has been modified by an "
            rf"inplace operation: \[\w+\.FloatTensor \[{dims}\]\]{which} is at version {current}; "
            rf"expected version {expected} instead")
