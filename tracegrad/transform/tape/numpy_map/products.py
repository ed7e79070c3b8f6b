"""NumPy's products on tracers: dot, matmul, vdot, outer, inner, tensordot, einsum (all
recorded as the table's matmul, dot, vdot, mul or einsum)."""
import numpy as np

from ....rules.complex_ import conj_of
from ....rules.linalg import LETTERS
from .base import FUNCTIONS, P, as_arrays, cast, ndim, ravel, unsupported


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


def _einsum(*operands, out=None, optimize=False, dtype=None, casting="safe", order="K"):
    """Both of NumPy's forms -- ``einsum("ij,jk->ik", a, b)`` and the interleaved
    ``einsum(a, [0, 1], b, [1, 2], [0, 2])`` -- recorded as the table's einsum (which
    takes ellipses, repeated labels within an operand, and implicit outputs)."""
    if out is not None:
        raise unsupported("numpy.einsum(..., out=...)")
    if isinstance(operands[0], str):
        equation, arrays = operands[0].replace(" ", ""), operands[1:]
    else:
        equation, arrays = _interleaved(operands)
    return cast(P.einsum(*as_arrays(arrays), equation=equation), dtype)


def _interleaved(args):
    """``(equation, operands)`` of the interleaved form: operand, sublist, operand,
    sublist, ..., [output sublist]; a sublist holds ints (0..51) and ``...``."""
    def term(sublist):
        parts = []
        for s in sublist:
            if s is Ellipsis:
                parts.append("...")
            else:
                s = int(s)
                if not 0 <= s < len(LETTERS):
                    raise ValueError(f"subscript is not within the valid range [0, {len(LETTERS)})")
                parts.append(LETTERS[s])
        return "".join(parts)
    arrays, terms = list(args[0::2][:len(args) // 2]), [term(s) for s in args[1::2][:len(args) // 2]]
    equation = ",".join(terms)
    if len(args) % 2:
        equation += "->" + term(args[-1])
    return equation, arrays


def _vdot(a, b):
    return P.dot(conj_of(ravel(a)), ravel(b))


FUNCTIONS.update({
    np.dot: _dot, np.matmul: lambda a, b, **kw: P.matmul(a, b), np.vdot: _vdot,
    np.outer: _outer, np.inner: _inner, np.tensordot: _tensordot, np.einsum: _einsum,
})
if hasattr(np.linalg, "matmul"):
    FUNCTIONS[np.linalg.matmul] = lambda a, b, **kw: P.matmul(a, b)


# -- NumPy 2's array-API spellings in numpy.linalg (each on the last axes) ---------------------

def _linalg_outer(x1, x2):
    if ndim(x1) != 1 or ndim(x2) != 1:
        raise ValueError("Input arrays must be one-dimensional")
    return _outer(x1, x2)


def _vecdot(x1, x2, axis=-1, **kw):
    """``sum(conj(x1) * x2)`` along ``axis`` (the operands broadcast)."""
    n = max(ndim(x1), ndim(x2))
    return P.sum(P.mul(conj_of(x1), x2), dim=(axis % n,), keepdim=False)


for _name, _fn in (("outer", _linalg_outer), ("tensordot", _tensordot), ("vecdot", _vecdot)):
    if hasattr(np.linalg, _name):
        FUNCTIONS[getattr(np.linalg, _name)] = _fn
