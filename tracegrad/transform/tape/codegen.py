"""A tape as one straight-line Python function, through the shared emitter: one line per
eqn, guards as ``if ...: raise GuardFailed``, and ``del`` after each intermediate's last
use so that memory is given back as early as in hand-written code."""
from ...backend import cpu as np  # host-side type checks only

from ...rules.core import Primitive
from ..emit import Module, compile_parts, compile_source, elementwise, prim_expr
from .. import jit
from .cpu_fusion import cpu_fusable, exact_line, single_line_kernel, write_run
from .fusion import MAX_ARGS, MIN_RUN, fusable_runs, fusion_enabled
from .tape import Guard, Var, namespace_of_var

__all__ = ["GuardFailed", "compile_tape"]

# A body longer than this many lines is compiled in parts of about this size (the
# generated source stays one function; see compile_in_parts).
CHUNK_LINES = 4000


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


def compile_tape(tape, name, out_hints=(), cpu_kernels=False):
    """``(function, source)`` computing the tape's output leaves (as a tuple) from its
    inputs; runs of elementwise lines become one fused kernel where the inputs' array
    namespace can fuse and fusion is on (see :mod:`.fusion`) -- on the CPU only when
    ``cpu_kernels`` (a staged function asks once a variant is hot, see :mod:`.cpu_fusion`)."""
    return _Writer(tape, name, out_hints, cpu_kernels).write()


def tape_source(tape, name, out_hints=(), cpu_kernels=False):
    """The source :func:`compile_tape` would compile, written without compiling it."""
    return _Writer(tape, name, out_hints, cpu_kernels).text()


def has_cpu_runs(tape, cpu_kernels=True):
    """Whether compiling ``tape`` with ``cpu_kernels`` would fuse anything."""
    on_cpu = all(namespace_of_var(v) in (None, np) for v in tape.inputs)
    return on_cpu and bool(_cpu_runs(tape, cpu_kernels == EXACT))


class _Writer:
    """One tape's translation: the module being written, each Var's name, where each Var
    is last read (to ``del`` it right after), and which Vars are the outputs."""

    def __init__(self, tape, name, out_hints, cpu_kernels=False):
        from ..tree import flatten
        self.tape, self.name, self.cpu_kernels = tape, name, cpu_kernels
        m = self.m = Module(reserved={"xp", "GuardFailed"})
        m.env.update(GuardFailed=GuardFailed)
        self.names = {v.id: m.local(v.name or "x") for v in tape.inputs}
        self.params = [self.names[v.id] for v in tape.inputs]
        self.out_leaves = flatten(tape.outputs)[0]
        self.out_ids = {v.id for v in self.out_leaves if isinstance(v, Var)}
        for v, hint in zip(self.out_leaves, out_hints):
            if isinstance(v, Var) and v.kind == "op" and v.id not in self.names and hint:
                self.names[v.id] = m.local(hint)
        self.last = {a.id: i for i, e in enumerate(tape.eqns) for a in e.ins if isinstance(a, Var)}
        self.counters = {}
        self.guards = 0
        # for compiling a long body in parts: the locals alive now (in order), and where
        # the body may be cut (line index, the locals alive there)
        self.live = dict.fromkeys(self.params)
        self.cuts = []

    def write(self):
        source = self.text()
        kernels = self.m.env.get("cpu_kernel")
        if not self.cuts:
            compiled = None if kernels is None else kernels.stubbed(source)
            return compile_source(source, self.name, self.m.env, tag="tape", compiled=compiled), source
        return self.compile_in_parts(source), source

    def text(self):
        m, eqns = self.m, self.tape.eqns
        # The array namespace is part of the cache key (the inputs' array type), so it is
        # bound once, as a global: a device's where any input lives on one (a Python float
        # argument is a host value).
        spaces = [namespace_of_var(v) for v in self.tape.inputs]
        xp = m.env["xp"] = next((ns for ns in spaces if ns is not None and ns is not np), np)
        on_cpu = xp is np
        starts = dict((_cpu_runs(self.tape, self.cpu_kernels == EXACT) if self.cpu_kernels else [])
                      if on_cpu else
                      _fused_runs(self.tape, xp, self.last, self.out_ids))
        i = 0
        while i < len(eqns):
            stop = starts.get(i, i + 1)
            read = ((write_run(self, i, stop) if on_cpu else self.fused(i, stop)) if i in starts
                    else self.line(i, eqns[i]))
            dead = [self.names[a.id] for a in read if self.last.get(a.id, -1) < stop
                    and a.kind == "op" and a.id not in self.out_ids]
            if dead:
                m.emit("del " + ", ".join(dead))
                for n in dead:
                    del self.live[n]
            if len(m.lines) - (self.cuts[-1][0] if self.cuts else 0) >= CHUNK_LINES:
                self.cuts.append((len(m.lines), list(self.live)))
            i = stop
        rets = [f"{self.ref(v)}.copy()" if isinstance(v, Var) and v.kind == "const"  # (never
                else self.ref(v) for v in self.out_leaves]       # hand out the cached constant)
        m.emit("return (" + ", ".join(rets) + ("," if len(rets) == 1 else "") + ")")
        return m.source(self.name, self.params)

    def compile_in_parts(self, source):
        """The function compiled as a chain of parts of about CHUNK_LINES lines each
        (compiling one ~100k-line function takes the compiler hundreds of megabytes)."""
        m = self.m
        prelude = "".join(block + "\n\n" for block in m.prelude)
        line = prelude.count("\n") + 2  # of the body's first line in ``source``
        kernels = m.env.get("cpu_kernel")
        if kernels is not None:
            prelude = kernels.stubbed(prelude)
        parts, start, ins = [], 0, self.params
        for stop, outs in [*self.cuts, (len(m.lines), None)]:
            if stop > start:
                parts.append((line + start, ins, "\n".join(m.lines[start:stop]), outs))
                start, ins = stop, outs
        if parts[-1][3] is not None:  # (a cut right before the return line)
            parts[-1] = parts[-1][:3] + (None,)
        return compile_parts(source, self.name, m.env, self.params, prelude, parts, tag="tape")

    def ref(self, a):
        """Source text for an operand: a Var's name (constants bound as globals), else a
        literal."""
        if isinstance(a, Var):
            n = self.names.get(a.id)
            if n is None:
                if a.kind != "const":
                    raise AssertionError(f"{a.label()} used before it is computed")
                n = self.names[a.id] = self.m.bind(a.value, "c")
            return n
        if isinstance(a, (tuple, list)):
            inner = ", ".join(self.ref(x) for x in a)
            return f"({inner},)" if isinstance(a, tuple) and len(a) == 1 else (
                f"({inner})" if isinstance(a, tuple) else f"[{inner}]")
        return self.m.literal(a)

    def fresh(self, v):
        """A new name for Var ``v``: its phase's letter and a counter (t0, g3...)."""
        if v.id in self.names:
            return self.names[v.id]
        k = self.counters.get(v.hint, 0)
        while f"{v.hint}{k}" in self.m.used:
            k += 1
        self.counters[v.hint] = k + 1
        n = self.names[v.id] = f"{v.hint}{k}"
        self.m.used.add(n)
        return n

    def line(self, i, e):
        """Emit eqn ``e``; return the Vars it reads."""
        if isinstance(e.op, Guard):
            self.m.emit(_guard_line(self.m, self.ref(e.ins[0]), e.op.kind, e.params["value"],
                                    self.guards, e.params.get("args", ())))
            self.guards += 1
        else:
            lhs = ", ".join(self.fresh(o) if (o.id in self.last or o.id in self.out_ids) else "_"
                            for o in e.outs)
            self.live.update(dict.fromkeys(n for n in lhs.split(", ") if n != "_"))
            if e.multi and len(e.outs) == 1:
                lhs += ","
            self.m.emit(f"{lhs} = {_rhs(self.m, e, [self.ref(a) for a in e.ins])}")
        return list(dict.fromkeys(e.in_vars()))

    def fused(self, start, stop):
        """Emit one helper function (compiled by ``xp.fuse``) for the elementwise eqns
        ``[start, stop)`` and the line calling it; return the Vars from outside the run
        that it reads (its parameters). It returns the values used after the run."""
        m, eqns = self.m, self.tape.eqns[start:stop]
        made = {o.id for e in eqns for o in e.outs}
        outer = list(dict.fromkeys(a for e in eqns for a in e.in_vars() if a.id not in made))
        params = [self.ref(a) for a in outer]
        body = [f"    {self.fresh(e.outs[0])} = {_rhs(m, e, [self.ref(a) for a in e.ins])}"
                for e in eqns]
        results = [self.names[o.id] for e in eqns for o in e.outs
                   if o.id in self.out_ids or self.last.get(o.id, -1) >= stop]
        helper = m.local(f"{self.name}_fused{len(m.prelude)}")
        m.prelude.append("\n".join([f"@xp.fuse(kernel_name={helper!r})",
                                     f"def {helper}({', '.join(params)}):", *body,
                                     f"    return {', '.join(results)}"]))
        m.emit(f"{', '.join(results)} = {helper}({', '.join(params)})")
        self.live.update(dict.fromkeys(results))
        return outer


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
        ns = namespace_of_var(a)
        if ns is not None:
            return "xp" if ns is m.env["xp"] else m.bind(ns, f"xp_{ns.name}")
    return "xp"


def _fusable(e):
    return (isinstance(e.op, Primitive) and not e.multi and len(e.outs) == 1
            and all(isinstance(a, Var) or isinstance(a, (int, float, bool)) for a in e.ins)
            and elementwise(e.op, e.params, _metas(e)))


def _fused_runs(tape, xp, last, out_ids):
    if not fusion_enabled() or getattr(xp, "fuse", None) is None:
        return []
    keys = (e.outs[0].shape if _fusable(e) else None for e in tape.eqns)
    return [chunk for start, stop in fusable_runs(keys)
            for chunk in _chunks(tape.eqns, start, stop, last, out_ids)]


# ``cpu_kernels=EXACT``: fuse only the lines a kernel computes bit for bit as NumPy does
# (operators, relu, where, comparisons: IEEE arithmetic, no contraction into FMAs), not the
# ufunc calls whose kernels are the C library's or tracegrad's (exp, tanh: a few ulps off).
# tracegrad.compile asks for it: its values equal eager ones exactly.
EXACT = "exact"


def _cpu_runs(tape, exact=False):
    """Runs of scalar eqns of one result shape, for Numba kernels (where it is installed),
    each reading at least one array of that shape (its kernel's loop takes its size): of
    :data:`MIN_RUN` lines at least, or one line that NumPy computes slowly (a relu)."""
    if not fusion_enabled():
        return []
    keys = [cpu_fusable(e) if not exact or exact_line(e) else None for e in tape.eqns]
    runs = []
    for start, stop in (r for a, b in fusable_runs(keys, 1)
                        for r in _split(a, b, jit.MAX_KERNEL_LINES, 1)):
        if stop - start < MIN_RUN and not single_line_kernel(tape.eqns[start]):
            continue
        made = {e.outs[0].id for e in tape.eqns[start:stop]}
        if any(a.id not in made and a.shape == keys[start]
               for e in tape.eqns[start:stop] for a in e.in_vars()):
            runs.append((start, stop))
    return runs if runs and jit.available() else []


def _split(start, stop, size, min_run=MIN_RUN):
    return [(a, min(a + size, stop)) for a in range(start, stop, size)
            if min(a + size, stop) - a >= min_run]


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
