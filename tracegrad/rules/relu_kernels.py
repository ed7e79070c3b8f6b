"""A compiled loop behind ReLU's first-order backward (:func:`tracegrad.rules.activation.relu_vjp`,
whenever it is handed plain arrays; with ``create_graph=True`` the composite ``where``
runs, which records a graph), on C-contiguous float32/float64 CPU arrays of one dtype,
where Numba can be imported (the ``jit`` extra) and once it is worth loading
(:mod:`.compiled`).

Why: the composite masks the gradient by a multiplication with a boolean array (see
:func:`tracegrad.rules.arith.where`): a comparison, a negation, the product, a check that
it is finite and the addition that clears negative zeros, five passes where the loop makes
one. On resnet18's activations at batch 8 (2-core development VM) that is ~50 us against
~190 us for the largest. Each element is the composite's, bit for bit: ``g + 0.0`` where
the result is above zero or NaN, else ``0.0``.
"""
from ..backend import threads
from . import compiled

__all__ = ["NUMBA_MIN", "relu_backward"]

# Elements from which the loop may run (None: never; the tests of the composite set it),
# once it is worth loading.
NUMBA_MIN = 1 << 12

# Seconds the loop saves per element (resnet18's activations above: ~0.25 ns).
SAVING_S = 2.5e-10


def relu_backward(xp, g, out):
    """The gradient of ReLU's input from ``g`` and the result ``out`` (same shape): a new
    array; None where the loop does not serve these operands or is not worth loading yet
    (the composite then)."""
    if (xp.name != "cpu" or not isinstance(g, xp.ndarray) or not isinstance(out, xp.ndarray)
            or g.dtype != out.dtype or g.dtype.char not in "fd" or not g.dtype.isnative or g.shape != out.shape
            or not g.flags.c_contiguous or not out.flags.c_contiguous or g.ndim == 0):
        return None
    kind = g.dtype.name
    name = f"relu_backward_{kind}"
    fused = compiled.sized(name, g.size, NUMBA_MIN, SAVING_S, lambda: _SOURCE.format(name=name),
                           f"void({kind}[::1], {kind}[::1], {kind}[::1])")
    if fused is None:
        return None
    dx = xp.empty(g.shape, dtype=g.dtype)
    flat_g, flat_out, flat_dx = g.reshape(-1), out.reshape(-1), dx.reshape(-1)
    threads.parallel(lambda lo, hi: fused(flat_g[lo:hi], flat_out[lo:hi], flat_dx[lo:hi]), g.size, 3 * g.nbytes)
    return dx


# One slab (views: a loop from 0 needs no check for negative indices, and vectorises).
_SOURCE = """import numba


@numba.njit(cache=True, nogil=True, error_model="numpy")
def {name}(g, out, dx):
    for i in range(g.size):
        dx[i] = 0.0 if out[i] <= 0 else g[i] + 0.0
"""
