"""``tracegrad.func``: torch.func's composable transforms on eager Tensors.

Reverse mode (``grad``, ``grad_and_value``, ``vjp``, ``jacrev``, ``hessian``) in
:mod:`._grad`, batching (``vmap``) in :mod:`._vmap` over the batching rules of the rule
table (:mod:`tracegrad.rules.batching`), forward mode (``jvp``, ``jacfwd``) in
:mod:`._forward`, and ``functional_call`` / ``stack_module_state`` for modules.
"""
from ._forward import jacfwd, jvp, linearize
from ._functional_call import functional_call, stack_module_state
from ._functionalize import functionalize
from ._grad import grad, grad_and_value, hessian, jacrev, vjp
from ._vmap import vmap

__all__ = [
           "functional_call",
           "functionalize",
           "grad",
           "grad_and_value",
           "hessian",
           "jacfwd",
           "jacrev",
           "jvp",
           "linearize",
           "stack_module_state",
           "vjp",
           "vmap",
]
