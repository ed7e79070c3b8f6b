"""Forward mode (``jvp``, ``jacfwd``): a placeholder in this branch -- another branch
builds them on ``tracegrad.autograd.forward_ad`` and replaces this file."""

__all__ = ["jacfwd", "jvp"]


def jvp(func, primals, tangents, *, strict=False, has_aux=False):
    raise NotImplementedError("tracegrad.func.jvp (forward mode) is not available yet")


def jacfwd(func, argnums=0, has_aux=False, *, randomness="error"):
    raise NotImplementedError("tracegrad.func.jacfwd (forward mode) is not available yet")
