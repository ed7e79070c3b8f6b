"""A tape as one straight-line Python function, through the shared emitter: one line per
eqn, guards as ``if ...: raise GuardFailed``, and ``del`` after each intermediate's last
use so that memory is given back as early as in hand-written code."""
from ..backend import cpu as np  # host-side type checks only

from ..backend import namespace_of
from ..rules.core import Primitive
from .emit import Module, compile_source, prim_expr
from .tape import Guard, Var

__all__ = ["GuardFailed", "compile_tape"]


class GuardFailed(Exception):
    """A replayed tape met a guard that does not hold for these inputs."""


# the conversion a guard repeats (an ``index`` guard was an integer array: int() agrees)
_CONVERT = {"int": "int", "index": "int", "float": "float", "complex": "complex"}


def _guard_line(m, name, kind, value, k, args=()):
    lit = m.literal(value, "seen")
    if kind == "bool":
        test = f"not {name}" if value else name
    elif kind in ("item", "tolist"):
        test = f"{name}.{kind}({', '.join(m.literal(a) for a in args)}) != {lit}"
    elif kind == "shape":
        test = f"{name}.shape != {lit}"
    else:
        test = f"{_CONVERT[kind]}({name}) != {lit}"
    return f"if {test}: raise GuardFailed({k})"


def compile_tape(tape, name, out_hints=()):
    """``(function, source)`` computing the tape's output leaves (as a tuple) from its
    inputs."""
    from .tree import flatten
    m = Module(reserved={"xp", "GuardFailed"})
    m.env.update(GuardFailed=GuardFailed)
    names = {}
    params = []
    for v in tape.inputs:
        names[v.id] = m.local(v.name or "x")
        params.append(names[v.id])
    out_leaves = flatten(tape.outputs)[0]
    out_ids = {v.id for v in out_leaves if isinstance(v, Var)}
    for v, hint in zip(out_leaves, out_hints):
        if isinstance(v, Var) and v.kind == "op" and v.id not in names and hint:
            names[v.id] = m.local(hint)
    last = {}
    for i, e in enumerate(tape.eqns):
        for a in e.ins:
            if isinstance(a, Var):
                last[a.id] = i
    counters = {}

    def ref(a):
        if isinstance(a, Var):
            n = names.get(a.id)
            if n is None:
                if a.kind == "const":
                    n = names[a.id] = m.bind(a.value, "c")
                else:
                    raise AssertionError(f"{a.label()} used before it is computed")
            return n
        if isinstance(a, (tuple, list)):
            inner = ", ".join(ref(x) for x in a)
            return f"({inner},)" if isinstance(a, tuple) and len(a) == 1 else (
                f"({inner})" if isinstance(a, tuple) else f"[{inner}]")
        return m.literal(a)

    def fresh(v):
        k = counters.get(v.hint, 0)
        n = f"{v.hint}{k}"
        while n in m.used:
            k += 1
            n = f"{v.hint}{k}"
        counters[v.hint] = k + 1
        m.used.add(n)
        return n

    # The array namespace is part of the cache key (the inputs' array type), so it is
    # bound once, as a global of the generated code.
    arrays = [v.value for v in tape.inputs if hasattr(v.value, "dtype")]
    m.env["xp"] = namespace_of(arrays[0]) if arrays else np
    guard_no = 0
    for i, e in enumerate(tape.eqns):
        op = e.op
        if isinstance(op, Guard):
            m.emit(_guard_line(m, ref(e.ins[0]), op.kind, e.params["value"], guard_no,
                               e.params.get("args", ())))
            guard_no += 1
        else:
            for o in e.outs:
                if o.id not in names:
                    names[o.id] = fresh(o)
            lhs = ", ".join(names[o.id] if (o.id in last or o.id in out_ids) else "_" for o in e.outs)
            if e.multi and len(e.outs) == 1:
                lhs += ","
            args = [ref(a) for a in e.ins]
            if isinstance(op, Primitive):
                metas = [(a.shape, a.npdtype) if isinstance(a, Var) else None for a in e.ins]
                rhs = prim_expr(m, op, args, e.params, metas)
            else:
                rhs = op.expr(m, args, e.params)
            m.emit(f"{lhs} = {rhs}")
        dead = [names[a.id] for a in dict.fromkeys(a for a in e.ins if isinstance(a, Var))
                if last.get(a.id) == i and a.kind == "op" and a.id not in out_ids]
        if dead:
            m.emit("del " + ", ".join(dead))
    rets = []
    for v in out_leaves:
        if isinstance(v, Var) and v.kind == "const":
            rets.append(f"{ref(v)}.copy()")  # never hand out the cached constant itself
        else:
            rets.append(ref(v))
    m.emit("return (" + ", ".join(rets) + ("," if len(rets) == 1 else "") + ")")
    source = m.source(name, params)
    return compile_source(source, name, m.env, tag="tape"), source
