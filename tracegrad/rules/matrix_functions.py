"""Matrix functions built from the table's primitives: pinv, the matrix norms,
matrix_power, multi_dot. These are composites, not table entries: functions of primitives
that run on arrays, Tensors and tracers alike, so the torch (:mod:`tracegrad.linalg`) and
NumPy (:mod:`tracegrad.transform.tape.numpy_map.linalg`) front ends share them, and
their derivatives -- to any order -- are those of the primitives they call.
"""
import math

from .arith import where
from .complex_ import is_complex
from .decomp import inv, mH, mT
from .index import zeros_of
from .linalg import eye_of, matmul
from .reduce import _eps, amax, amin, sum, vector_norm
from .shape import permute, reshape, unsqueeze
from .spectral import eigh, singular_values, svd
from .unary import abs

__all__ = ["matrix_norm", "matrix_power", "multi_dot", "pinv"]


def _row(v):
    return unsqueeze(v, dim=v.ndim - 1)


def pinv(a, rtol=None, atol=0.0, hermitian=False):
    """The Moore-Penrose pseudo-inverse from an SVD (or, ``hermitian``, an eigh of the
    lower triangle) with the singular values at most ``max(atol, rtol * s_max)`` dropped;
    ``rtol`` defaults to ``max(m, n) * eps``, as in PyTorch. Differentiable wherever the
    rank is locally constant (the kept values have a gap to the dropped ones)."""
    m, n = a.shape[-2], a.shape[-1]
    if m == 0 or n == 0:
        return mT(zeros_of(a, shape=tuple(a.shape)))
    if rtol is None:
        rtol = max(m, n) * _eps(a) if not atol else 0.0
    if hermitian:  # A = V diag(w) V^H: A^+ = V diag(1/w) V^H
        s, left = eigh(a)
        mags, right_h = abs(s), mH(left)
    else:          # A = U diag(s) Vh: A^+ = Vh^H diag(1/s) U^H
        u, s, vh = svd(a, full_matrices=False)
        mags, left, right_h = s, mH(vh), mH(u)
    cut = amax(mags, dim=(mags.ndim - 1,), keepdim=True) * rtol
    keep = (mags > cut) & (mags > atol)
    s_inv = where(keep, 1.0 / where(keep, s, 1.0), 0.0)
    return matmul(left * _row(s_inv), right_h)


def _to_end(x, dims):
    """``x`` with the two ``dims`` moved to the end, in order."""
    order = [i for i in range(x.ndim) if i not in dims] + list(dims)
    return x if order == list(range(x.ndim)) else permute(x, dims=tuple(order))


def matrix_norm(x, ord="fro", dims=(-2, -1), keepdim=False):
    """``'fro'``, ``'nuc'``, 1, -1, 2, -2, inf, -inf over the matrix dims ``dims`` (a pair of
    distinct dims); ``keepdim`` keeps them as size 1."""
    r, c = (d % x.ndim for d in dims)
    if r == c:
        raise ValueError(f"matrix norm: dims must be two different dimensions, got {tuple(dims)}")
    kept = tuple(1 if i in (r, c) else s for i, s in enumerate(x.shape))
    if ord == "fro":
        return vector_norm(abs(x) if is_complex(x) else x, ord=2, dim=tuple(sorted((r, c))), keepdim=keepdim)
    if ord in ("nuc", 2, -2):
        s = singular_values(_to_end(x, (r, c)))
        last = (s.ndim - 1,)
        res = sum(s, dim=last) if ord == "nuc" else (amax if ord == 2 else amin)(s, dim=last)
        return reshape(res, shape=kept) if keepdim else res
    if ord in (1, -1, math.inf, -math.inf):
        along, across = (r, c) if ord in (1, -1) else (c, r)   # 1: max column sum, inf: max row sum
        sums = sum(abs(x), dim=(along,), keepdim=True)
        pick = amax if ord in (1, math.inf) else amin
        return pick(sums, dim=(across,), keepdim=True) if keepdim else \
            reshape(pick(sums, dim=(across,), keepdim=True),
                    shape=tuple(s for i, s in enumerate(x.shape) if i not in (r, c)))
    raise ValueError(f"Invalid norm order {ord!r} for matrices")


def matrix_power(a, n):
    """``a`` multiplied by itself ``n`` times (by squaring); ``n < 0`` powers the inverse,
    ``n == 0`` gives identities (with zero gradient)."""
    size = a.shape[-1]
    if n == 0:
        return a * 0 + eye_of(a, n=size)
    if n < 0:
        a, n = inv(a), -n
    result, base = None, a
    while n:
        if n & 1:
            result = base if result is None else matmul(result, base)
        n >>= 1
        if n:
            base = matmul(base, base)
    return result


def multi_dot(arrays):
    """The product of a chain of matrices (the first may be a row vector, the last a
    column vector), in the order that needs the fewest multiplications."""
    arrays = list(arrays)
    if len(arrays) < 2:
        raise ValueError("multi_dot: expected at least 2 arrays")
    first_vec, last_vec = arrays[0].ndim == 1, arrays[-1].ndim == 1
    if first_vec:
        arrays[0] = reshape(arrays[0], shape=(1, arrays[0].shape[0]))
    if last_vec:
        arrays[-1] = reshape(arrays[-1], shape=(arrays[-1].shape[0], 1))
    for k, a in enumerate(arrays):
        if a.ndim != 2:
            raise ValueError(f"multi_dot: array {k} has {a.ndim} dimensions; 2 expected "
                             "(1 for the first and last)")
    out = _chain(arrays, _chain_order(arrays), 0, len(arrays) - 1)
    if first_vec or last_vec:
        out = reshape(out, shape=tuple(s for s, drop in zip(out.shape, (first_vec, last_vec)) if not drop))
    return out


def _chain_order(arrays):
    """``split[i][j]``: where the cheapest product of arrays i..j is split (dynamic
    programming over the chain's dims)."""
    dims = [a.shape[0] for a in arrays] + [arrays[-1].shape[1]]
    n = len(arrays)
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = math.inf
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
                if c < cost[i][j]:
                    cost[i][j], split[i][j] = c, k
    return split


def _chain(arrays, split, i, j):
    if i == j:
        return arrays[i]
    k = split[i][j]
    return matmul(_chain(arrays, split, i, k), _chain(arrays, split, k + 1, j))
