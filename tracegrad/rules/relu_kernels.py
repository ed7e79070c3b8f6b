"""ReLU's first-order backward as one compiled pass (the vjp takes it whenever it is
handed plain CPU arrays and Numba serves them; otherwise, and with ``create_graph=True``,
its ``where`` runs).

Why: a convolutional network runs it after every batch norm, on the largest activations.
``where(out <= 0, 0.0, g)`` is six passes in NumPy -- the comparison, the mask's negation,
the masked product, a finiteness check of it and the addition that turns -0.0 into 0.0
(see :func:`tracegrad.rules.arith.where`) -- where the loop below is one (resnet18 at batch
8 on 64x64 images, its 17 ReLU backwards in a training step: ~1.0 ms in NumPy, ~0.6 ms
compiled, torch's 0.25 ms on two threads). It computes
what the select computes, element by element: ``g + 0.0`` where ``out`` is above zero or
NaN (relu'(NaN) passes the gradient, as in PyTorch), else 0.0, so the results are the same
bit for bit.
"""
from . import compiled

__all__ = ["NUMBA_MIN", "relu_backward"]

# Elements from which the backward may run compiled (None: never; the tests of the NumPy
# form set it), once the kernel is worth loading (:mod:`.compiled`).
NUMBA_MIN = 1 << 14

# Seconds the compiled form saves per element (2^17 float32, resnet18's first stage, in
# cache: ~54 us against ~17 us on the 2-core development VM; less out of cache).
SAVING_S = 0.25e-9


def relu_backward(xp, g, out):
    """The gradient through ``out = relu(x)`` for the cotangent ``g``: an array, or None
    where the compiled loop does not serve these operands (C-contiguous float32/float64
    NumPy arrays of one shape and dtype) or is not worth loading yet."""
    if xp.name != "cpu" or not isinstance(g, xp.ndarray) or not isinstance(out, xp.ndarray):
        return None
    if out.dtype.char not in "fd" or g.dtype != out.dtype or g.shape != out.shape:
        return None
    if not (g.flags.c_contiguous and out.flags.c_contiguous):
        return None
    kind = out.dtype.name
    name = f"relu_backward_{kind}"
    fused = compiled.sized(name, out.size, NUMBA_MIN, SAVING_S, lambda: _SOURCE.format(name=name),
                           f"void({kind}[::1], {kind}[::1], {kind}[::1])")
    if fused is None:
        return None
    dx = xp.empty(out.shape, dtype=out.dtype)
    fused(g.reshape(-1), out.reshape(-1), dx.reshape(-1))
    return dx


_SOURCE = """import numba


@numba.njit(cache=True, nogil=True, error_model="numpy")
def {name}(g, y, dx):
    for k in range(y.size):  # both loads unconditional: a vectorised select, no branch
        gk = g[k] + 0.0
        dx[k] = 0.0 if y[k] <= 0 else gk
"""
