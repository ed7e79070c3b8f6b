"""Tape optimisations run before emitting code: aliases and trivial ops forwarded,
constants folded, common subexpressions shared, dead code removed. Each pass rewrites
``tape.eqns`` (and the output Vars) in place and keeps guards, which are effects."""
from ...backend import cpu as np  # host-side type checks only

from ...rules.core import Primitive
from .sweeps import ALIAS, STOP
from .tape import Guard, Var
from .tracer import TensorVar
from ..tree import flatten, unflatten

__all__ = ["optimize"]


def optimize(tape):
    """Run every pass, in an order where each helps the next."""
    forward_trivial(tape)
    fold_constants(tape)
    forward_trivial(tape)  # again: folding makes constants (a broadcast seed of ones)
    share_subexpressions(tape)
    eliminate_dead_code(tape)
    return tape


def _rename(tape, sub):
    """Replace Vars by their substitutes (``sub``: id -> Var or literal) everywhere."""
    if not sub:
        return

    def look(a):
        while isinstance(a, Var) and a.id in sub:
            a = sub[a.id]
        return a
    for e in tape.eqns:
        if any(isinstance(a, Var) and a.id in sub for a in e.ins):
            e.ins = tuple(look(a) for a in e.ins)
    leaves, spec = flatten(tape.outputs)
    tape.outputs = unflatten(spec, [look(v) for v in leaves])


def _same_meta(a, b):
    """Whether ``b`` can stand for ``a`` (same shape and dtype, b an array-like Var or an
    equal-typed literal)."""
    return isinstance(b, Var) and a.shape == b.shape and a.npdtype == b.npdtype


def forward_trivial(tape):
    """Aliases, ``x * 1``, ``x - 0``, ``where(<literal>, a, b)``, a reshape to the same
    shape: the result is replaced by the operand it equals."""
    sub, kept = {}, []
    for e in tape.eqns:
        keep = e
        if e.op is ALIAS or e.op is STOP:
            sub[e.outs[0].id] = e.ins[0]
            keep = None
        elif isinstance(e.op, Primitive) and not e.multi:
            same = _trivial(e)
            if same is not None and _same_meta(e.outs[0], same):
                sub[e.outs[0].id] = same
                keep = None
        if keep is not None:
            kept.append(keep)
    tape.eqns = kept
    _rename(tape, sub)


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


def fold_constants(tape):
    """Evaluate, once, eqns whose operands are all constants."""
    sub, kept = {}, []
    for e in tape.eqns:
        if sub and any(isinstance(a, Var) and a.id in sub for a in e.ins):
            e.ins = tuple(sub.get(a.id, a) if isinstance(a, Var) else a for a in e.ins)
        if isinstance(e.op, Primitive) and all(not isinstance(a, Var) or (a.kind == "const" and a.id not in
                                                                          tape.live) for a in e.ins) \
                and any(isinstance(a, Var) for a in e.ins):
            vals = [a.value if isinstance(a, Var) else a for a in e.ins]
            out = e.op(*vals, **e.params)
            for o, v in zip(e.outs, out if e.multi else (out,)):
                c = Var(tape, v, "const")
                sub[o.id] = c
            continue
        kept.append(e)
    tape.eqns = kept
    _rename(tape, sub)


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


_VARS = (Var, TensorVar)  # the exact tracer types (a type test is the fast check here)


def share_subexpressions(tape):
    """An eqn equal to an earlier one (same op, operands and params) reuses its results."""
    seen, sub, kept = {}, {}, []
    for e in tape.eqns:
        if sub and any(isinstance(a, Var) and a.id in sub for a in e.ins):
            e.ins = tuple(sub.get(a.id, a) if isinstance(a, Var) else a for a in e.ins)
        if not isinstance(e.op, Primitive):
            kept.append(e)
            continue
        ins = e.ins
        ins_key = tuple(a.id if type(a) in _VARS else _key(a) for a in ins)
        key = (e.op.name, ins_key, _key(e.params) if e.params else ())
        prev = seen.get(key)
        if prev is not None:
            for o, p in zip(e.outs, prev.outs):
                sub[o.id] = p
            continue
        seen[key] = e
        kept.append(e)
    tape.eqns = kept
    _rename(tape, sub)


def eliminate_dead_code(tape):
    """Drop eqns none of whose results reaches an output or a guard."""
    live = {v.id for v in flatten(tape.outputs)[0] if isinstance(v, Var)}
    kept = []
    for e in reversed(tape.eqns):
        if isinstance(e.op, Guard) or any(o.id in live for o in e.outs):
            kept.append(e)
            live.update(a.id for a in e.ins if isinstance(a, Var))
            for a in e.ins:
                if isinstance(a, (tuple, list)):
                    live.update(x.id for x in a if isinstance(x, Var))
    kept.reverse()
    tape.eqns = kept
