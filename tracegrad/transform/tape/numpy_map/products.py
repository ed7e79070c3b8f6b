"""NumPy's products on tracers: dot, matmul, vdot, outer, inner, tensordot, einsum (all
recorded as the table's matmul, dot, vdot, mul or einsum)."""
import numpy as np

from .base import FUNCTIONS, P, ndim, ravel, unsupported


def _dot(a, b, out=None):
    na, nb = ndim(a), ndim(b)
    if na == 0 or nb == 0:
        return P.mul(a, b)
    if na == 1 and nb == 1:
        return P.dot(a, b)
    if nb <= 2:
        return P.matmul(a, b)
    return P.einsum(a, b, equation=_dot_equation(na, nb))


def _dot_equation(na, nb):
    letters = "abcdefghijklmnopqrstuvwxyz"
    la, lb = letters[:na], letters[na:na + nb]
    lb = lb[:-2] + la[-1] + lb[-1]
    return f"{la},{lb}->{la[:-1]}{lb[:-2]}{lb[-1]}"


def _outer(a, b, out=None):
    return P.mul(P.unsqueeze(ravel(a), dim=1), P.unsqueeze(ravel(b), dim=0))


def _inner(a, b):
    if ndim(a) == 0 or ndim(b) == 0:
        return P.mul(a, b)
    return _tensordot(a, b, axes=([-1], [-1]))


def _tensordot(a, b, axes=2):
    na, nb = ndim(a), ndim(b)
    if isinstance(axes, int):
        ax_a, ax_b = list(range(na - axes, na)), list(range(axes))
    else:
        ax_a, ax_b = axes
        ax_a = [x % na for x in (ax_a if isinstance(ax_a, (list, tuple)) else [ax_a])]
        ax_b = [x % nb for x in (ax_b if isinstance(ax_b, (list, tuple)) else [ax_b])]
    letters = iter("abcdefghijklmnopqrstuvwxyz")
    sa = [next(letters) for _ in range(na)]
    sb = [next(letters) for _ in range(nb)]
    for i, j in zip(ax_a, ax_b):
        sb[j] = sa[i]
    out = [c for i, c in enumerate(sa) if i not in ax_a] + [c for j, c in enumerate(sb) if j not in ax_b]
    return P.einsum(a, b, equation=f"{''.join(sa)},{''.join(sb)}->{''.join(out)}")


def _einsum(subscripts, *operands, optimize=False, **kw):
    if not isinstance(subscripts, str):
        raise unsupported("numpy.einsum in its interleaved form")
    return P.einsum(*operands, equation=subscripts.replace(" ", ""))


FUNCTIONS.update({
    np.dot: _dot, np.matmul: lambda a, b, **kw: P.matmul(a, b), np.vdot: lambda a, b: P.vdot(ravel(a), ravel(b)),
    np.outer: _outer, np.inner: _inner, np.tensordot: _tensordot, np.einsum: _einsum,
})
if hasattr(np.linalg, "matmul"):
    FUNCTIONS[np.linalg.matmul] = lambda a, b, **kw: P.matmul(a, b)
