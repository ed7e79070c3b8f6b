"""``cdist`` with PyTorch's signature and checks; the rule is :mod:`tracegrad.rules.distance`.

PyTorch computes p = 2 through a matrix product for more than 25 rows (``compute_mode``),
which only changes rounding (and grad_fn's name); here the differences are always taken
directly, so distances between equal rows are exactly 0 and their gradient is 0."""
from ..backend.dtypes import as_dtype
from ..rules import distance as D

_MODES = ("use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist", "donot_use_mm_for_euclid_dist")


def cdist(x1, x2, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary"):
    if compute_mode not in _MODES:
        raise ValueError(f"{compute_mode} is not a valid value for compute_mode")
    for name, x in (("X1", x1), ("X2", x2)):
        if x.ndim < 2:
            raise RuntimeError(f"cdist only supports at least 2D tensors, {name} got: {x.ndim}D")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: {x1.shape[-1]} "
                           f"X2: {x2.shape[-1]}")
    d1, d2 = as_dtype(x1.dtype), as_dtype(x2.dtype)  # (a tape's tracers carry NumPy dtypes)
    for name, d in (("X1", d1), ("X2", d2)):
        if not d.is_floating_point:
            raise RuntimeError(f"cdist only supports floating-point dtypes, {name} got: {d.scalar_name}")
    if d1 != d2:
        raise RuntimeError(f"expected scalar type {d1.scalar_name} but found {d2.scalar_name}")
    if p < 0:
        raise RuntimeError("cdist only supports non-negative p values")
    return D.cdist(x1, x2, p=float(p))


FUNCTIONS = {"cdist": cdist}
METHODS = {}
