"""Gradients of lists, tuples and dicts in generated adjoints, and the adjoints of ``+``
and ``*`` on lists and tuples.

The gradient of a list or tuple is a :class:`GradList` (one gradient or None per
element), of a dict a :class:`GradDict`; both add elementwise, so that generated code
accumulates every gradient with ``+`` or :func:`add`. (A rule of the table applied to a
list -- ``np.sum(xs)`` -- gives it an array gradient instead: one row per element.)

``a + b`` and ``a * b`` concatenate and repeat lists and tuples: their adjoints split the
result's gradient (``[:len(a)]`` and ``[len(a):]``) or sum its repeats. Where the
transformation cannot tell whether an operand is a list (a parameter, a loop variable),
the adjoint asks :func:`any_sequence` at run time and calls :func:`binop_grads`.
"""
import operator

from ...backend import cpu as _np  # (host-side: NumPy integers, arrays of lists)
from ...backend import is_array, namespace_of
from ...rules import TABLE

__all__ = ["GradList", "GradDict", "add", "as_grad", "any_sequence", "binop_grads", "binop_tangent"]


def _error(message, construct):
    from .source import TransformError
    return TransformError(message, construct=construct)


class GradList(list):
    """The gradient of a list or tuple: one gradient (or None) per element; ``+`` adds
    elementwise (see :func:`add`) and treats None as zero."""

    def __add__(self, other):
        return add(self, other)

    def __radd__(self, other):
        return add(other, self)

    def __getitem__(self, k):
        v = list.__getitem__(self, k)
        return GradList(v) if isinstance(k, slice) else v

    def __mul__(self, other):  # (repetition is never a gradient's arithmetic)
        raise _error("the gradient of a list or tuple reached array arithmetic (an adjoint "
                     "written for arrays met a list); use mode='tape'", "list arithmetic")

    __rmul__ = __mul__


class GradDict(dict):
    """The gradient of a dict: a gradient per key that has one (a missing key: zero);
    ``+`` adds key by key."""

    def __add__(self, other):
        return add(self, other)

    def __radd__(self, other):
        return add(other, self)


def _none(g):
    """No gradient: None, or the 0 that ``sum()`` starts from."""
    return g is None or type(g) is int and g == 0


def _is_seq(g):
    return isinstance(g, (list, tuple))


def add(a, b):
    """``a + b`` for gradients, either of which may be None (no gradient); those of lists
    and tuples add elementwise (and must have one entry per element), those of dicts key
    by key."""
    if _none(a):
        return b
    if _none(b):
        return a
    if isinstance(a, dict) or isinstance(b, dict):
        if not (isinstance(a, dict) and isinstance(b, dict)):
            raise _error(f"the gradient of a dict added to a {type(b if isinstance(a, dict) else a).__name__}",
                         "gradient of a dict")
        out = GradDict(a)
        for k, v in b.items():
            out[k] = add(out.get(k), v)
        return out
    if _is_seq(a) or _is_seq(b):
        n, m = _length(a), _length(b)
        if n != m:
            raise _error(f"two gradients of one list or tuple have {n} and {m} entries; "
                         "use mode='tape'", "gradient of a list")
        return GradList(add(a[k], b[k]) for k in range(n))
    return a + b


def _length(g):
    if _is_seq(g):
        return len(g)
    shape = getattr(g, "shape", ())
    if not shape:
        raise _error(f"a gradient without entries ({type(g).__name__} of shape {tuple(shape)}) "
                     "added to the gradient of a list or tuple", "gradient of a list")
    return shape[0]


def as_grad(g):
    """``g`` with its lists and tuples made :class:`GradList` and its dicts
    :class:`GradDict` (a gradient as a pytree: from the tape, or a cotangent)."""
    if isinstance(g, (list, tuple)) and not isinstance(g, GradList):
        return GradList(as_grad(v) for v in g)
    if isinstance(g, dict) and not isinstance(g, GradDict):
        return GradDict({k: as_grad(v) for k, v in g.items()})
    return g


def any_sequence(*values):
    """Whether any of ``values`` is a list or a tuple (decides, at run time, between an
    adjoint for arrays and :func:`binop_grads`)."""
    return any(isinstance(v, (list, tuple)) for v in values)


any_sequence.constant_result = True  # (no derivative: see resolve.Resolver.callee)


def _entries(g, n, what):
    """The ``n`` entries of the gradient ``g`` of a list or tuple of ``n`` elements (None
    where it has none: a list's gradient may stop before its last items)."""
    if g is None:
        return [None] * n
    if not _is_seq(g):
        if tuple(getattr(g, "shape", ()))[:1] != (n,):
            raise _error(f"the gradient of the {what} of {n} elements has shape "
                         f"{tuple(getattr(g, 'shape', ()))}; use mode='tape'", what)
        return [g[k] for k in range(n)]
    if len(g) > n:
        raise _error(f"the gradient of the {what} of {n} elements has {len(g)} entries; "
                     "use mode='tape'", what)
    return list(g) + [None] * (n - len(g))


def _repeats(k):
    """Whether ``seq * k`` repeats ``seq`` (a Python or NumPy integer; an array ``k``
    broadcasts instead)."""
    return isinstance(k, (int, _np.integer)) and not is_array(k)


def binop_grads(op, dz, a, b):
    """The gradients of ``a`` and ``b`` in ``z = a + b`` (``op`` "add") or ``z = a * b``
    ("mul") for gradient ``dz`` of ``z``, whatever ``a`` and ``b`` are: concatenation and
    repetition of lists and tuples split ``dz``; array arithmetic with a list or tuple
    operand (which NumPy made an array) gives that operand a gradient per element."""
    if op == "add" and _gradient_sum(a, b):
        return _restricted(dz, a), _restricted(dz, b)
    seq_a, seq_b = _is_seq(a), _is_seq(b)
    if op == "add" and seq_a and seq_b:
        n = len(a)
        g = _entries(dz, n + len(b), "concatenation")
        return GradList(g[:n]), GradList(g[n:])
    if op == "mul" and seq_a != seq_b and _repeats(b if seq_a else a):
        seq, times = (a, b) if seq_a else (b, a)
        n, times = len(seq), max(operator.index(times), 0)
        g = _entries(dz, n * times, "repetition")
        total = GradList([None] * n)
        for r in range(times):
            total = add(total, GradList(g[r * n:(r + 1) * n]))
        return (total, 0.0) if seq_a else (0.0, total)
    if _is_seq(dz):
        raise _error(f"the gradient of {'a + b' if op == 'add' else 'a * b'} is a list, but its "
                     "operands are not lists or tuples to concatenate or repeat; use mode='tape'",
                     "list arithmetic")
    x = _as_array(a, dz) if seq_a else a   # (as NumPy computed a + b)
    y = _as_array(b, dz) if seq_b else b
    prim = TABLE[op]
    gx, gy = prim.vjps[0](dz, None, x, y), prim.vjps[1](dz, None, x, y)
    return (_per_element(gx, a) if seq_a else gx), (_per_element(gy, b) if seq_b else gy)


def _gradient_sum(a, b):
    """Whether ``a + b`` adds gradients (a generated adjoint's own ``+`` on
    :class:`GradList` and :class:`GradDict`, elementwise) rather than concatenating
    lists: what a second derivative differentiates through."""
    return isinstance(a, (GradList, GradDict)) or isinstance(b, (GradList, GradDict))


def _restricted(dz, g):
    """The part of ``dz`` (the gradient of a sum of gradients) that belongs to the term
    ``g``: all of it, but for a dict only ``g``'s keys."""
    if g is None or dz is None:
        return None
    if isinstance(g, dict) and isinstance(dz, dict):
        return GradDict({k: dz[k] for k in g if k in dz})
    return dz


def _as_array(seq, like):
    """``seq`` as the array NumPy (or the device's namespace, where ``like`` lives on one)
    made of it."""
    try:
        xp = namespace_of(like)
    except TypeError:  # (a tracer: the array of a list of numbers; a list holding tracers
        xp = _np      # is refused as on the tape)
    return xp.asarray(seq)


def _per_element(g, seq):
    """An array gradient of a list or tuple (of ``np.asarray(seq)``'s shape) as a
    :class:`GradList`, nested as ``seq`` is."""
    return GradList(_per_element(g[k], s) if _is_seq(s) else g[k] for k, s in enumerate(seq))


def binop_tangent(op, z, a, b, ta, tb):
    """The tangent of ``z = a + b`` (``op`` "add") or ``z = a * b`` ("mul") from the
    operands' tangents ``ta`` and ``tb`` (None: constant), whatever ``a`` and ``b`` are:
    the tangents of a concatenation or repetition are concatenated or repeated as the
    values are; array arithmetic with a list or tuple operand takes its tangent as NumPy
    takes its value (an array)."""
    if op == "add" and _gradient_sum(a, b):
        return add(ta, tb)
    if isinstance(z, (list, tuple)):
        if op == "add":
            out = _seq_tangent(a, ta) + _seq_tangent(b, tb)
        else:
            seq, t, times = (a, ta, b) if _is_seq(a) else (b, tb, a)
            out = _seq_tangent(seq, t) * times
        return tuple(out) if isinstance(z, tuple) else out
    x = _as_array(a, z) if _is_seq(a) else a
    y = _as_array(b, z) if _is_seq(b) else b
    prim, total = TABLE[op], None
    for i, (v, t) in enumerate(((a, ta), (b, tb))):
        if t is None:
            continue
        t = _as_array(_filled(t, v), z) if _is_seq(v) else t
        term = prim.jvps[i](t, z, x, y)
        total = term if total is None else total + term
    return total


def _seq_tangent(seq, t):
    """The tangent of list or tuple ``seq`` as a plain list of one tangent per element."""
    from .support import zero_tangent
    if t is None:
        return list(zero_tangent(seq))
    if not _is_seq(t) or len(t) != len(seq):
        raise _error(f"the tangent of a list or tuple of {len(seq)} elements is a "
                     f"{type(t).__name__} of {len(t) if _is_seq(t) else 'no'} entries; use mode='tape'",
                     "tangent of a list")
    return list(t)


def _filled(t, seq):
    """A list tangent with zeros for its None entries (to make an array of)."""
    return [_filled(ti, si) if _is_seq(si) else (si * 0.0 if ti is None else ti) for ti, si in zip(t, seq)]
