"""Long tapes run on a compact interpreter instead of being compiled.

Python's compiler spends ~10 us per line of a generated function; a tape of 100k eqns
took seconds to write out and compile, far more than tracing it. Past
:data:`INTERPRET_OVER` eqns a tape becomes an :class:`Interpreted` function: a list of
steps -- the callable the generated line would call (``operator.mul`` for ``a * b``,
``xp.tanh`` for ``xp.tanh(a)``, the kernel with its parameters bound otherwise), the
slots of its operands, the slot(s) of its result -- run over a list of values. It calls
the same kernels in the same order as the compiled function, frees each value where the
compiled function ``del``s it, checks the guards as it does (raising ``GuardFailed``) and
returns the same tuple, so results are bit-identical. No code is compiled, so nothing
fuses. The source text the compiled path would have shown is written only when
``.source`` is read (the optimised tape is kept, its values released).
"""
import functools
import operator

from ...backend import cpu as np  # host-side type checks only

from ...rules.core import Primitive
from ..emit import _BINARY, Module, elementwise
from .codegen import _CONVERT, GuardFailed, tape_source
from .tape import Guard, Var, _is_default, namespace_of_var

__all__ = ["INTERPRET_OVER", "Interpreted"]

INTERPRET_OVER = 3000  # eqns; shorter tapes are compiled (their replays are faster)

_OPERATORS = {name: getattr(operator, fn) for name, fn in {
    "add": "add", "sub": "sub", "mul": "mul", "div": "truediv", "gt": "gt", "ge": "ge",
    "lt": "lt", "le": "le", "eq": "eq", "ne": "ne"}.items()}
assert set(_OPERATORS) == set(_BINARY)


class Interpreted:
    """A tape as a callable ``f(*inputs) -> tuple of output values``, run step by step.
    The steps are made at the first call (a first call's results come from tracing);
    ``source`` is the compiled path's text, written when first read."""

    __slots__ = ("tape", "name", "hints", "_program", "_source", "__weakref__")

    def __init__(self, tape, name, out_hints=()):
        self.tape, self.name, self.hints = tape, name, tuple(out_hints)
        self._program = None
        self._source = None

    @property
    def source(self):
        if self._source is None:
            self._source = tape_source(self.tape, self.name, self.hints)
        return self._source

    def __call__(self, *inputs):
        program = self._program
        if program is None:
            program = self._program = _program(self.tape)
        template, n_in, steps, rets = program
        if len(inputs) != n_in:
            raise TypeError(f"{self.name}() takes {n_in} arguments ({len(inputs)} given)")
        vals = list(template)
        vals[:n_in] = inputs
        for fn, ins, out, kill in steps:
            r = fn(*[vals[k] for k in ins])
            if out is not None:
                if type(out) is int:
                    vals[out] = r
                else:
                    r = tuple(r)
                    if len(r) != len(out):
                        raise ValueError(f"{fn!r} gave {len(r)} values for {len(out)} results")
                    for k, v in zip(out, r):
                        vals[k] = v
            for k in kill:
                vals[k] = None
        return tuple(vals[k].copy() if copy else vals[k] for k, copy in rets)


def _program(tape):
    """``(template, n_inputs, steps, returns)``: the initial value list (inputs' places,
    constants and literals, then one slot per result), the steps, and the output slots
    (with whether to hand out a copy: constants are never handed out)."""
    from ..tree import flatten
    out_leaves = flatten(tape.outputs)[0]
    out_ids = {v.id for v in out_leaves if isinstance(v, Var)}
    eqns = tape.eqns
    last = {}
    for i, e in enumerate(eqns):
        for a in e.ins:
            if isinstance(a, Var):
                last[a.id] = i
    template = [None] * len(tape.inputs)
    slot = {v.id: k for k, v in enumerate(tape.inputs)}
    spaces = [namespace_of_var(v) for v in tape.inputs]
    xp = next((ns for ns in spaces if ns is not None and ns is not np), np)

    def place(value):
        template.append(value)
        return len(template) - 1

    def operand(a):
        if isinstance(a, Var):
            k = slot.get(a.id)
            if k is None:
                if a.kind != "const":
                    raise AssertionError(f"{a.label()} used before it is computed")
                k = slot[a.id] = place(a.value)
            return k
        return place(a)

    steps, guards = [], 0
    for i, e in enumerate(eqns):
        ins = e.ins
        if any(type(a) in (tuple, list) and any(isinstance(x, Var) for x in a) for a in ins):
            fn, ins = _nested(e, ins, xp)
        elif isinstance(e.op, Guard):
            fn, guards = _guard(e.op.kind, e.params["value"], guards, e.params.get("args", ())), guards + 1
        else:
            fn = _callable(e, xp)
        in_slots = tuple(operand(a) for a in ins)
        if isinstance(e.op, Guard):
            out = None
        else:
            outs = []
            for o in e.outs:
                if o.id in last or o.id in out_ids:
                    k = slot[o.id] = len(template)
                    template.append(None)
                else:  # (a result nobody reads: ``_``)
                    k = _junk(template)
                outs.append(k)
            out = outs[0] if not e.multi else tuple(outs)
        seen = set()
        kill = []
        for a in e.ins:
            if isinstance(a, Var) and a.id not in seen:
                seen.add(a.id)
                if last.get(a.id, -1) <= i and a.kind == "op" and a.id not in out_ids:
                    kill.append(slot[a.id])
        steps.append((fn, in_slots, out, tuple(kill)))
    rets = []
    for v in out_leaves:
        if isinstance(v, Var):
            rets.append((operand(v), v.kind == "const"))
        else:
            rets.append((place(v), False))
    return tuple(template), len(tape.inputs), steps, tuple(rets)


def _junk(template):
    """The slot results nobody reads go to (one per program, the last slot written)."""
    if not template or template[-1] is not _JUNK:
        template.append(_JUNK)
    return len(template) - 1


_JUNK = object()


def _callable(e, xp):
    """What the compiled line for eqn ``e`` calls, taking its operands positionally."""
    op, params = e.op, e.params
    if not isinstance(op, Primitive):  # a custom rule's call: its own expression
        return _expression(e, xp)
    name = op.name
    if not params:
        fn = _OPERATORS.get(name)
        if fn is not None:
            return fn
        if name == "neg":
            return operator.neg
    ns = _namespace(e, xp)
    metas = [(a.shape, a.npdtype) if isinstance(a, Var) else None for a in e.ins]
    if name == "matmul" and None not in metas and not (len(metas[0][0]) == 1 and len(metas[1][0]) == 1):
        return operator.matmul
    if elementwise(op, params, metas):
        return getattr(ns, op.ufunc)
    kw = {k: v for k, v in params.items() if not _is_default(op, k, v)}
    return functools.partial(op.impl, ns, **kw)


def _namespace(e, xp):
    """The array namespace the compiled line computes with (see codegen._namespace_name)."""
    for a in e.in_vars() or e.outs:
        ns = namespace_of_var(a)
        if ns is not None:
            return ns
    return xp


def _expression(e, xp):
    """A non-primitive op (a custom rule): its own source expression, compiled once into
    a function of the operands."""
    m = Module(reserved={"xp"})
    m.env["xp"] = xp
    args = [f"a{k}" for k in range(len(e.ins))]
    text = e.op.expr(m, args, e.params)
    exec(compile(f"def step({', '.join(args)}):\n    return {text}\n", "<tape-step>", "exec"), m.env)
    return m.env["step"]


def _nested(e, ins, xp):
    """Eqn ``e`` has tuple operands holding Vars: a step taking every Var flat, that
    rebuilds the tuples before calling."""
    inner = _callable(e, xp)
    flat, shape = [], []
    for a in ins:
        if type(a) in (tuple, list) and any(isinstance(x, Var) for x in a):
            shape.append((type(a), len(a)))
            flat.extend(a)
        else:
            shape.append(None)
            flat.append(a)

    def step(*values):
        it, args = iter(values), []
        for s in shape:
            if s is None:
                args.append(next(it))
            else:
                tp, n = s
                args.append(tp(next(it) for _ in range(n)))
        return inner(*args)
    return step, flat


def _guard(kind, value, k, args):
    """A step raising GuardFailed(k) where the compiled guard line would."""
    if kind == "bool":
        def check(v):
            if (not v) if value else v:
                raise GuardFailed(k)
    elif kind in ("item", "tolist"):
        def check(v):
            if getattr(v, kind)(*args) != value:
                raise GuardFailed(k)
    elif kind == "shape":
        def check(v):
            if v.shape != value:
                raise GuardFailed(k)
    else:
        convert = {"int": int, "float": float, "complex": complex}[_CONVERT[kind]]

        def check(v):
            if convert(v) != value:
                raise GuardFailed(k)
    return check
