"""Tape optimisations run before emitting code: aliases and trivial ops forwarded,
constants folded, common subexpressions shared, dead code removed. Each pass rewrites
``tape.eqns`` (and the output Vars) in place and keeps guards, which are effects."""
from ...backend import cpu as np  # host-side type checks only

from ...rules.core import Primitive
from .sweeps import ALIAS, STOP
from .tape import Guard, Var
from ..tree import flatten, unflatten

__all__ = ["optimize"]


def optimize(tape):
    """Forward trivial ops, fold constants and share subexpressions in one pass over the
    eqns (each eqn is seen with its operands already rewritten, so one pass reaches what
    running the passes one after the other did), then drop dead code."""
    simplify(tape)
    eliminate_dead_code(tape)
    return tape


def _same_meta(a, b):
    """Whether ``b`` can stand for ``a`` (same shape and dtype, b an array-like Var or an
    equal-typed literal)."""
    return isinstance(b, Var) and a.shape == b.shape and a.npdtype == b.npdtype


_TRIVIAL = {"mul", "sub", "div", "pow", "where", "broadcast_to", "sum_to", "reshape"}


def simplify(tape):
    """One forward pass: aliases, stop_gradient and trivial ops (``x * 1``, ``x - 0``,
    ``where(<literal>, a, b)``, a reshape to the same shape, two dims swapped and swapped
    back) are replaced by the operand they equal; eqns whose operands are all constants
    are evaluated once; an eqn equal to an earlier one (same op, operands and params)
    reuses its results. Guards and custom ops are kept as they are."""
    sub, seen, kept = {}, {}, []
    maker = {}  # the eqns kept that swap two dims, by the id of their result
    live = tape.live
    for e in tape.eqns:
        ins = e.ins
        if sub:
            for a in ins:
                if isinstance(a, Var) and a.id in sub:
                    e.ins = ins = tuple(sub.get(x.id, x) if isinstance(x, Var) else x for x in ins)
                    break
        op = e.op
        if op is ALIAS or op is STOP:
            sub[e.outs[0].id] = ins[0]
            continue
        if not isinstance(op, Primitive):
            kept.append(e)
            continue
        if not e.multi and op.name in _TRIVIAL:
            same = _trivial(e)
            if same is not None and _same_meta(e.outs[0], same):
                sub[e.outs[0].id] = same
                continue
        if not e.multi and op.name in _SWAPS:
            same = _swapped_back(e, maker)
            if same is not None and _same_meta(e.outs[0], same):
                sub[e.outs[0].id] = same
                continue
        key = [op.name]
        foldable, has_var = True, False
        for a in ins:
            if isinstance(a, Var):
                has_var = True
                key.append(a.id)
                if foldable and (a.kind != "const" or a.id in live):
                    foldable = False
            else:
                key.append(_key(a))
        if foldable and has_var:
            vals = [a.value if isinstance(a, Var) else a for a in ins]
            out = op(*vals, **e.params)
            for o, v in zip(e.outs, out if e.multi else (out,)):
                sub[o.id] = Var(tape, v, "const")
            continue
        key.append(_key(e.params) if e.params else ())
        key = tuple(key)
        prev = seen.get(key)
        if prev is not None:
            for o, p in zip(e.outs, prev.outs):
                sub[o.id] = p
            continue
        seen[key] = e
        kept.append(e)
        if op.name in _SWAPS:
            maker[e.outs[0].id] = e
    tape.eqns = kept
    if sub:
        def look(a):
            while isinstance(a, Var) and a.id in sub:
                a = sub[a.id]
            return a
        leaves, spec = flatten(tape.outputs)
        tape.outputs = unflatten(spec, [look(v) for v in leaves])


def _is_lit(a, *values):
    return not isinstance(a, Var) and not isinstance(a, bool) and isinstance(a, (int, float)) and a in values


def _ones(a):
    """A literal 1, or a constant array of ones (the seed of a gradient, broadcast; not
    an array captured by reference, whose contents may change between calls)."""
    if isinstance(a, Var):
        return a.kind == "const" and a.id not in a.tape.live and a.npdtype.kind in "fc" \
            and bool((a.value == 1).all())
    return _is_lit(a, 1)


def _trivial(e):
    name, ins = e.op.name, e.ins
    if name == "mul":
        if _ones(ins[1]):
            return ins[0]
        if _ones(ins[0]):
            return ins[1]
    elif name == "sub" and _is_lit(ins[1], 0):  # (x + 0 is kept: it turns -0.0 into 0.0)
        return ins[0]
    elif name in ("div", "pow") and _is_lit(ins[1], 1):
        return ins[0]
    elif name == "where" and isinstance(ins[0], bool):
        return ins[1] if ins[0] else ins[2]
    elif name in ("broadcast_to", "sum_to", "reshape") and isinstance(ins[0], Var) \
            and tuple(e.params.get("shape")) == ins[0].shape:
        return ins[0]
    return None


_SWAPS = {"t", "transpose"}


def _swap(e):
    """The two dims eqn ``e`` (``t`` or ``transpose``) swaps, as a set; None for a swap of
    a dim with itself or a ``t`` of fewer than two dims."""
    x = e.ins[0]
    if not isinstance(x, Var):
        return None
    n = len(x.shape)
    if e.op.name == "t":
        return {0, 1} if n == 2 else None
    dims = {d % n for d in (e.params["dim0"], e.params["dim1"])} if n else set()
    return dims if len(dims) == 2 else None


def _swapped_back(e, maker):
    """The operand of the swap that made ``e``'s operand, where ``e`` swaps the same two
    dims back (``t(transpose(g, 0, 1))``, a linear layer's weight gradient): the value is
    that operand's."""
    inner = maker.get(e.ins[0].id) if isinstance(e.ins[0], Var) else None
    if inner is None:
        return None
    pair = _swap(e)
    return inner.ins[0] if pair is not None and pair == _swap(inner) else None


def _key(x):
    if isinstance(x, Var):
        return ("v", x.id)
    if isinstance(x, (tuple, list)):
        return (type(x).__name__,) + tuple(_key(y) for y in x)
    if isinstance(x, dict):
        return ("d",) + tuple((k, _key(v)) for k, v in x.items())
    if isinstance(x, np.ndarray):
        return ("a", id(x))
    if isinstance(x, float):  # 0.0 and -0.0 are equal but not interchangeable
        return ("float", repr(x))
    try:
        hash(x)
    except TypeError:
        return ("o", id(x))
    return (type(x).__name__, x)


def eliminate_dead_code(tape):
    """Drop eqns none of whose results reaches an output or a guard."""
    live = {v.id for v in flatten(tape.outputs)[0] if isinstance(v, Var)}
    kept = []
    for e in reversed(tape.eqns):
        for o in e.outs:
            if o.id in live:
                break
        else:
            if type(e.op) is not Guard:
                continue
        kept.append(e)
        for a in e.ins:
            if isinstance(a, Var):
                live.add(a.id)
            elif type(a) is tuple or type(a) is list:
                live.update(x.id for x in a if isinstance(x, Var))
    kept.reverse()
    tape.eqns = kept
