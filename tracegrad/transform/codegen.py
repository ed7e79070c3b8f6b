"""A tape as one straight-line Python function, through the shared emitter: one line per
eqn, guards as ``if ...: raise GuardFailed``, and ``del`` after each intermediate's last
use so that memory is given back as early as in hand-written code."""
from ..backend import cpu as np  # host-side type checks only

from ..backend import ARRAY_TYPE_SET, namespace_of
from ..rules.core import Primitive
from .emit import Module, compile_source, elementwise, prim_expr
from .fusion import MAX_ARGS, MIN_RUN, fusable_runs, fusion_enabled
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


def compile_tape(tape, name, out_hints=(), fuse=True):
    """``(function, source)`` computing the tape's output leaves (as a tuple) from its
    inputs; with ``fuse``, runs of elementwise lines become one fused kernel where the
    inputs' array namespace can fuse (see :mod:`.fusion`)."""
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
    xp = m.env["xp"] = namespace_of(arrays[0]) if arrays else np
    runs = _fused_runs(tape, xp, last, out_ids) if fuse else []
    starts = {start: stop for start, stop in runs}
    guard_no = 0
    i = 0
    while i < len(tape.eqns):
        if i in starts:
            stop = starts[i]
            outer = _emit_fused(m, tape.eqns[i:stop], ref, fresh, names, last, out_ids, stop,
                                name, len(m.prelude))
            dead = [a for a in outer if last.get(a.id, -1) < stop]
            i = stop
        else:
            e = tape.eqns[i]
            if isinstance(e.op, Guard):
                m.emit(_guard_line(m, ref(e.ins[0]), e.op.kind, e.params["value"], guard_no,
                                   e.params.get("args", ())))
                guard_no += 1
            else:
                for o in e.outs:
                    if o.id not in names:
                        names[o.id] = fresh(o)
                lhs = ", ".join(names[o.id] if (o.id in last or o.id in out_ids) else "_" for o in e.outs)
                if e.multi and len(e.outs) == 1:
                    lhs += ","
                m.emit(f"{lhs} = {_rhs(m, e, [ref(a) for a in e.ins])}")
            dead = [a for a in dict.fromkeys(e.in_vars()) if last.get(a.id) == i]
            i += 1
        dead = [names[a.id] for a in dead if a.kind == "op" and a.id not in out_ids]
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


def _metas(e):
    return [(a.shape, a.npdtype) if isinstance(a, Var) else None for a in e.ins]


def _rhs(m, e, args):
    if isinstance(e.op, Primitive):
        return prim_expr(m, e.op, args, e.params, _metas(e), _namespace_name(m, e))
    return e.op.expr(m, args, e.params)


def _namespace_name(m, e):
    """``xp``, or -- for an op on another device than the tape's inputs (after a
    ``.cuda()`` inside the function) -- the name that device's namespace is bound to."""
    for a in e.in_vars() or e.outs:
        if type(a.value) in ARRAY_TYPE_SET:
            ns = namespace_of(a.value)
            return "xp" if ns is m.env["xp"] else m.bind(ns, f"xp_{ns.name}")
    return "xp"


def _fusable(e):
    return (isinstance(e.op, Primitive) and not e.multi and len(e.outs) == 1
            and all(isinstance(a, Var) or isinstance(a, (int, float, bool)) for a in e.ins)
            and elementwise(e.op, e.params, _metas(e)))


def _fused_runs(tape, xp, last, out_ids):
    if not fusion_enabled() or getattr(xp, "fuse", None) is None:
        return []
    return [chunk for start, stop in fusable_runs(_fusable(e) for e in tape.eqns)
            for chunk in _chunks(tape.eqns, start, stop, last, out_ids)]


def _chunks(eqns, start, stop, last, out_ids):
    """A run ``[start, stop)`` cut where its helper would pass more than MAX_ARGS arrays
    in and out (a kernel's parameters are limited; a 200-step chain saves 200 values)."""
    chunks, begin, made, outer = [], start, set(), set()
    for i in range(start, stop):
        e = eqns[i]
        ins = {a.id for a in e.in_vars() if a.id not in made}
        kept = {v for v in made | {e.outs[0].id} if v in out_ids or last.get(v, -1) > i}
        if i > begin and len(outer | ins) + len(kept) > MAX_ARGS:
            chunks.append((begin, i))
            begin, made, outer = i, set(), set()
            ins = {a.id for a in e.in_vars()}
        made.add(e.outs[0].id)
        outer |= ins
    chunks.append((begin, stop))
    return [(a, b) for a, b in chunks if b - a >= MIN_RUN]


def _emit_fused(m, eqns, ref, fresh, names, last, out_ids, stop, name, k):
    """Emit one helper function (compiled by ``xp.fuse``) for a run of elementwise eqns,
    and the line calling it; return the Vars from outside the run that it reads (its
    parameters). It returns the values used after the run."""
    made = {o.id for e in eqns for o in e.outs}
    outer = list(dict.fromkeys(a for e in eqns for a in e.in_vars() if a.id not in made))
    params = [ref(a) for a in outer]
    body = []
    for e in eqns:
        o = e.outs[0]
        if o.id not in names:
            names[o.id] = fresh(o)
        body.append(f"    {names[o.id]} = {_rhs(m, e, [ref(a) for a in e.ins])}")
    results = [names[o.id] for e in eqns for o in e.outs
               if o.id in out_ids or last.get(o.id, -1) >= stop] or [names[eqns[-1].outs[0].id]]
    helper = m.local(f"{name}_fused{k}")
    m.prelude.append("\n".join([f"@xp.fuse(kernel_name={helper!r})",
                                 f"def {helper}({', '.join(params)}):", *body,
                                 f"    return {', '.join(results)}"]))
    m.emit(f"{', '.join(results)} = {helper}({', '.join(params)})")
    return outer
