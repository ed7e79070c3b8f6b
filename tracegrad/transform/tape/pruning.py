"""Forward values no reverse sweep reads, dropped while the function is still traced.

A tape keeps every value it records, because a sweep may read it. A reverse sweep reads
far fewer: each rule's vjps declare the values they read (``uses``: ``tanh`` reads its
result, ``x * 0.5`` and ``a + b`` read nothing of their operands). So while an outermost
reverse-mode transform traces its function, a :class:`Pruner` releases (keeps only shape,
dtype and namespace) the value of each recorded result that

* no vjp of its own op or of an op that consumes it reads, and
* the traced function can no longer reach -- the tracer is referenced only by the tape's
  own eqns (a Python reference count), so no op recorded later can use it.

Then the first call holds about what the compiled gradient holds when it runs, instead
of every intermediate of the function. A forward sweep (``jvp``) reads every operand, and
a transform nested inside the function differentiates whatever it records, so pruning
stops for good when either starts.
"""
import sys

from .tape import Guard, Var, shape_only

__all__ = ["Pruner"]

EVERY = 256  # eqns recorded between two scans
_NOTHING = ((), False)


class Pruner:
    """Releases prunable values of ``tape`` (see the module docstring) every ``EVERY``
    eqns, in the value phase of an outermost reverse-mode trace."""

    def __init__(self, tape):
        self.tape = tape
        self.start = self.scanned = len(tape.eqns)  # eqns before are not the function's
        self.read = set()               # ids of values some vjp reads
        self.refs = {}                  # id -> times the eqns' inputs hold it
        self.waiting = []               # (eqn index, output index) of prunable results

    def step(self):
        tape = self.tape
        if len(tape.eqns) - self.scanned < EVERY:
            return
        if tape.nested or tape.phase != "t":
            tape.pruner = None  # (a nested transform reads everything it records)
            return
        if self.scanned == self.start and _small(tape.eqns, self.start, len(tape.eqns)):
            tape.pruner = None  # (values of a few bytes: releasing them would not pay)
            return
        self._take(tape.eqns, self.scanned, len(tape.eqns))
        self.scanned = len(tape.eqns)
        self._release(tape.eqns)

    def _take(self, eqns, start, stop):
        """Note what eqns ``start..stop`` read, and which of their results may go."""
        read, refs, waiting = self.read, self.refs, self.waiting
        for i in range(start, stop):
            e = eqns[i]
            for a in e.ins:
                if isinstance(a, Var):
                    refs[a.id] = refs.get(a.id, 0) + 1
            args, out_read = _vjp_reads(e) if type(e.op) is not Guard else _NOTHING
            for k in args:
                a = e.ins[k]
                if isinstance(a, Var):
                    read.add(a.id)
            if not out_read:
                waiting.extend((i, k) for k in range(len(e.outs)))

    def _release(self, eqns):
        read, refs, keep = self.read, self.refs, []
        for i, k in self.waiting:
            outs = eqns[i].outs
            o = outs[k]
            if o.kind != "op" or o.id in read:
                continue
            # references: the eqn's outputs tuple, each input tuple holding it, and this
            # frame's two (``o`` and getrefcount's argument); any more is the function's
            if sys.getrefcount(o) > refs.get(o.id, 0) + 3:
                keep.append((i, k))
                continue
            o.value = shape_only(o.value)
        self.waiting = keep


SMALL = 512  # bytes: a first window of results this small on average is not pruned


def _small(eqns, start, stop):
    total = count = 0
    for k in range(start, stop):
        for o in eqns[k].outs:
            total += getattr(o.value, "nbytes", 0)
            count += 1
    return total < SMALL * max(count, 1)


def _vjp_reads(e):
    """``(operand positions, reads its result)``: what the vjps of eqn ``e`` can read --
    those of its traced operands only (a literal gets no gradient) -- all of it for ops
    without declared ``uses`` (user rules); cached per op and traced positions."""
    traced = 0
    for i, a in enumerate(e.ins):
        if isinstance(a, Var):
            traced |= 1 << i
    key = (e.op, len(e.ins), traced)
    hit = _PLANS.get(key)
    if hit is None:
        hit = _PLANS[key] = _plan(e, traced)
    return hit


_PLANS = {}


def _plan(e, traced):
    op = e.op
    if isinstance(op, Guard) or getattr(op, "name", None) in ("alias", "stop_gradient"):
        return (), False
    plan = getattr(op, "save_plan", None)
    if plan is None or not getattr(op, "differentiable", False):
        if plan is not None:  # a primitive without derivatives: no sweep reads it
            return (), False
        return tuple(range(len(e.ins))), True
    n = len(e.ins)
    mask = 0
    for i in range(n):
        if traced >> i & 1 and op.is_diff_arg(i):
            mask |= 1 << i
    if not mask:
        return (), False
    return op.save_plan(mask, n)
