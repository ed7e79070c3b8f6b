"""Batching rules: how a primitive runs on a whole batch of samples at once (``vmap``).

A rule ``rule(prim, args, batched, params, size)`` receives the *physical* operands --
a batched operand carries its batch of ``size`` samples in dimension 0, an unbatched one
is the same value for every sample -- and returns the primitive's result(s) for every
sample, batch dimension first. Rules call primitives, so they run on Tensors (recording
for any autograd outside the vmap) and on the batched values of an outer vmap alike.

Three kinds cover the table (see :func:`rule_for`):

* **elementwise** primitives, whose kernels broadcast: align each batched operand's
  sample dims with the others' (insert 1s after the batch dim) and call the primitive once;
* **explicit** rules (this module and :mod:`.batching_rules`) for primitives with dims,
  shapes or layouts in their parameters (reductions, views, matmul, conv, losses...);
* a **fallback** for everything else: the primitive runs sample by sample and the results
  are stacked -- correct, but a loop (a one-time warning says which primitive).
"""
import warnings

from . import arith, bessel, complex_, gamma, special, unary
from .core import TABLE

__all__ = [
    "ELEMENTWISE",
    "RULES",
    "batch_rule",
    "materialize",
    "pad_to",
    "per_sample",
    "rule_for",
    "sample_ndim",
]

RULES = {}          # primitive name -> explicit rule


def batch_rule(*names):
    """Decorator: the batching rule of the primitives ``names``."""
    def register(fn):
        for n in names:
            RULES[n] = fn
        return fn
    return register


def _module_prims(*modules):
    return {p.name for p in TABLE.values() if p.impl.__module__ in {m.__name__ for m in modules}}


# Primitives whose kernels broadcast their operands elementwise and take no dims.
ELEMENTWISE = (_module_prims(arith, unary, special, gamma, bessel, complex_)
               | {"sigmoid", "logsigmoid", "silu", "mish", "relu", "hardsigmoid", "hardswish", "celu",
                  "celu_", "elu", "elu_", "gelu", "gelu_cdf", "softplus", "hardshrink", "softshrink", "hardtanh",
                  "leaky_relu", "leaky_relu_", "threshold", "threshold_", "zeros_like", "indicator",
                  "clone", "copy", "cast", "to_device", "fill", "masked_fill", "logit"})


def rule_for(prim):
    rule = RULES.get(prim.name)
    if rule is not None:
        return rule
    if prim.name in ELEMENTWISE:
        return elementwise
    return per_sample


# -- helpers ---------------------------------------------------------------------------------

def is_array(a):
    return hasattr(a, "shape") and hasattr(a, "ndim")


def sample_ndim(a, batched):
    """The rank one sample of operand ``a`` has."""
    if not is_array(a):
        return 0
    return a.ndim - 1 if batched else a.ndim


def pad_to(a, n):
    """Batched ``a`` with 1s inserted after its batch dim up to ``n`` sample dims, so that
    its sample dims line up (from the right) with those of rank ``n``."""
    k = a.ndim - 1
    if k >= n:
        return a
    from .shape import reshape
    return reshape(a, shape=(a.shape[0],) + (1,) * (n - k) + tuple(a.shape[1:]))


def materialize(a, batched, size):
    """Operand ``a`` as a batched value: an unbatched one is expanded (no copy)."""
    if batched:
        return a
    from .broadcast import broadcast_to
    return broadcast_to(a, shape=(size,) + tuple(a.shape))


def front_dim(d, ndim):
    """Sample dim ``d`` (possibly negative) of a rank-``ndim`` sample, as a physical dim."""
    n = max(ndim, 1)
    if not -n <= d < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {d})")
    return d % n + 1


# -- the three kinds -------------------------------------------------------------------------

def elementwise(prim, args, batched, params, size):
    """One call: batched operands padded to the highest sample rank, so that NumPy's
    broadcasting pairs their sample dims and keeps the batch dim in front."""
    n = max(sample_ndim(a, b) for a, b in zip(args, batched))
    args = [pad_to(a, n) if b else a for a, b in zip(args, batched)]
    return prim(*args, **params)


_WARNED = set()


def per_sample(prim, args, batched, params, size):
    """The fallback: the primitive once per sample, results stacked along a new dim 0."""
    if prim.name not in _WARNED:
        _WARNED.add(prim.name)
        warnings.warn(f"There is a performance drop because we have not yet implemented the batching "
                      f"rule for {prim.name}. Please file us an issue on GitHub so that we can "
                      "prioritize its implementation.", UserWarning, stacklevel=4)
    from .index import basic_index
    from .shape import stack
    if size == 0:
        raise RuntimeError(f"vmap: {prim.name} has no batching rule and cannot run over a batch of size 0")
    outs = []
    for i in range(size):
        sample = [basic_index(a, index=(i,)) if b else a for a, b in zip(args, batched)]
        outs.append(prim(*sample, **params))
    if isinstance(outs[0], (tuple, list)):
        return tuple(stack(*[o[k] for o in outs], dim=0) for k in range(len(outs[0])))
    return stack(*outs, dim=0)


from . import batching_rules  # noqa: F401  (registers the explicit rules)
