"""torch._functorch.eager_transforms' public transforms: tracegrad.func's (``functionalize``
included; see :mod:`tracegrad.func._functionalize` for what it means eagerly)."""
from ..func import functionalize, grad, grad_and_value, hessian, jacfwd, jacrev, jvp, vjp, vmap

__all__ = ["functionalize", "grad", "grad_and_value", "hessian", "jacfwd", "jacrev", "jvp", "vjp", "vmap"]
