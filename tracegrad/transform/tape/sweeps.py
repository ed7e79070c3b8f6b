"""Differentiation over a tape: the reverse sweep (vjp rules) and the forward sweep (jvp
rules), each a small interpreter over a stretch of eqns that appends what it computes to
the tape being recorded.

Both sweeps call the rule table's vjp/jvp functions on tracers, so the derivative eqns
are recorded like any other primitive -- which is what makes them compilable, printable,
and differentiable again. Only *active* eqns (those depending on the variables being
differentiated) are visited: an inner ``grad`` sees the outer one's variables as
constants, so nested derivatives do not get confused.
"""
from ...rules.complex_ import complex_refusal
from .numpy_map import P
from .tape import Guard, TracerError, Var, shape_only
from .tracing import active_tape
from ..undefined import Undefined, is_undefined

__all__ = ["Alias", "alias", "STOP", "stop_gradient", "active_eqns", "spread_activity", "reverse",
           "forward"]


class StopGradient:
    """``y = x`` through which no derivative flows (``stop_gradient``, ``detach``); removed
    by the optimizer after the sweeps have seen it."""

    name = "stop_gradient"
    differentiable = False

    def __repr__(self):
        return "stop_gradient"


STOP = StopGradient()


def stop_gradient(x):
    """``x`` as a constant to every derivative (``Tensor.detach``, ``jax.lax.stop_gradient``)."""
    from ...runtime.tensor import Tensor
    if isinstance(x, Var):
        from .tracing import _tape_of
        return _tape_of(x).add(STOP, (x,), {}, x.value)
    if isinstance(x, Tensor):
        return x.detach()
    return x


class Alias:
    """``y = x`` under a new name: marks the variables a transform differentiates with
    respect to (so an outer variable used by the same value stays a constant to it).
    The optimizer removes aliases before emitting code."""

    name = "alias"

    def __repr__(self):
        return "alias"


ALIAS = Alias()


def alias(tape, x):
    """A fresh Var on ``tape`` standing for ``x`` (a tracer or a concrete array)."""
    if isinstance(x, Var):
        return tape.add(ALIAS, (x,), {}, x.value)
    return tape.new_var(x, "const")


def _differentiable(v):
    return isinstance(v, Var) and v.npdtype.kind in "fc"


def active_eqns(eqns, wrt):
    """The eqns of ``eqns`` whose results depend on the Vars in ``wrt`` through
    differentiable ops, and the ids of all active Vars."""
    active = {v.id for v in wrt}
    return spread_activity(eqns, active), active


def spread_activity(eqns, active):
    """The eqns of ``eqns`` that read a Var in ``active`` (a set of ids) through a
    differentiable op; their floating-point results join ``active`` (in place)."""
    out = []
    for e in eqns:
        for a in e.ins:
            if isinstance(a, Var) and a.id in active:
                break
        else:
            continue
        op = e.op
        if op is not ALIAS and (isinstance(op, Guard) or not getattr(op, "differentiable", False)):
            continue
        out.append(e)
        for o in e.outs:
            if _differentiable(o):
                active.add(o.id)
    return out


def _accumulate(cts, v, g, held=None):
    if g is None:
        return
    if is_undefined(g) or is_undefined(cts.get(v.id)):  # (no derivative: see undefined.py)
        prev = cts.get(v.id)
        if held is not None and isinstance(prev, Var):
            held.drop(prev)
        cts[v.id] = g if is_undefined(g) else prev
        return
    if isinstance(g, Var):
        gd, vd = g.npdtype, v.npdtype
        if gd is not vd and gd != vd and vd.kind in "fc" and gd.kind in "fc":
            g = P.cast(g, dtype=vd, src_dtype=gd)
    prev = cts.get(v.id)
    cts[v.id] = new = g if prev is None else P.add(prev, g)
    if held is not None:  # count the cotangent table's references (see _Releaser)
        if prev is not None:
            held.drop(prev)
        held.hold(new)


class _Releaser:
    """Frees, during a top-level reverse sweep, the values of the cotangents (and of the
    temporaries of each vjp) that no later step can read: made by this sweep, no longer
    held in the cotangent table, and never handed to user code (a custom rule's backward).
    Nothing else can see them -- the user's function has returned, and no outer transform
    will differentiate these eqns -- so a long sweep keeps O(1) cotangent values alive
    instead of one per step. Freed Vars keep shape, dtype and namespace (see
    :func:`~.tape.shape_only`)."""

    def __init__(self, tape):
        self.tape = tape
        self.first = tape._count       # Vars from here on are this sweep's
        self.counts = {}
        self.pinned = set()
        self.loose = []                # let go by the table since the last step

    def hold(self, g):
        if isinstance(g, Var):
            self.counts[g.id] = self.counts.get(g.id, 0) + 1

    def drop(self, g):
        if isinstance(g, Var):
            self.counts[g.id] -= 1
            self.loose.append(g)

    def step(self, since, custom):
        """After one eqn's vjp: free what the table let go of (the eqn's cotangents, sums
        replaced by larger ones) and what the vjp made (the results of
        ``tape.eqns[since:]``), unless still held."""
        eqns, counts = self.tape.eqns, self.counts
        loose, self.loose = self.loose, []
        if custom:
            self.pinned.update(g.id for g in loose)
            self.pinned.update(o.id for k in range(since, len(eqns)) for o in eqns[k].outs)
            return
        first, pinned = self.first, self.pinned
        for v in loose:
            if v.id >= first and v.kind == "op" and not counts.get(v.id) and v.id not in pinned:
                v.value = shape_only(v.value)
        for k in range(since, len(eqns)):
            for v in eqns[k].outs:
                if v.id >= first and v.kind == "op" and not counts.get(v.id) and v.id not in pinned:
                    v.value = shape_only(v.value)


def reverse(eqns, wrt, outputs, cotangents, defer=False):
    """Cotangents of the Vars ``wrt`` (None where nothing flows), given ``cotangents`` of
    ``outputs``, by sweeping the active part of ``eqns`` backwards. ``defer``: an operand
    whose rule has no derivative (its vjp raises NotImplementedError) gets an
    :class:`~tracegrad.transform.undefined.Undefined` cotangent, which flows on backwards
    and raises where it is used, instead of the error now."""
    eqns, active = active_eqns(eqns, wrt)
    tape = active_tape()
    held = _Releaser(tape) if tape is not None and tape.outermost() else None
    cts = {}
    for o, g in zip(outputs, cotangents):
        if isinstance(o, Var) and o.id in active and g is not None:
            _accumulate(cts, o, g, held)
    for e in reversed(eqns):
        gs = [cts.pop(o.id, None) for o in e.outs]
        if all(g is None for g in gs):
            continue
        since = len(tape.eqns) if held is not None else 0
        if held is not None:
            for g in gs:
                held.drop(g)
        missing = next((g for g in gs if is_undefined(g)), None)
        if missing is not None:  # (what an undefined cotangent flows back to is undefined)
            for i, a in enumerate(e.ins):
                if isinstance(a, Var) and a.id in active and (e.op is ALIAS or e.op.is_diff_arg(i)):
                    _accumulate(cts, a, missing, held)
            continue
        custom = _vjp(e, gs, cts, active, held, defer)
        if held is not None:
            held.step(since, custom)
    return [cts.get(v.id) for v in wrt]


def _vjp(e, gs, cts, active, held, defer=False):
    """Accumulate the cotangents of eqn ``e``'s active operands given those of its results
    (``gs``); return whether user code (a custom rule) computed them."""
    op = e.op
    if op is ALIAS:
        _accumulate(cts, e.ins[0], gs[0], held)
        return False
    _check_complex(e, gs)
    custom = getattr(op, "tape_vjp", None)
    if custom is not None:  # a user rule: it takes the missing gradients as they are
        for i, g in enumerate(custom(gs, e.outs, e.ins, e.params)):
            if g is not None and isinstance(e.ins[i], Var) and e.ins[i].id in active:
                _accumulate(cts, e.ins[i], g, held)
        return True
    if e.multi:
        g = tuple(gk if gk is not None else P.zeros_like(o) for gk, o in zip(gs, e.outs))
        out = e.outs
    else:
        g, out = gs[0], e.outs[0]
    targets = [(i, a) for i, a in enumerate(e.ins)
               if isinstance(a, Var) and a.id in active and op.is_diff_arg(i)]
    if not targets:
        return False
    if op.vjp_all_fn is not None:
        try:
            every = op.vjp_all_fn(g, out, *e.ins, **e.params)
        except NotImplementedError as err:
            if not defer:
                raise
            every = {i: Undefined(err) for i, _ in targets}
        for i, a in targets:
            _accumulate(cts, a, every[i], held)
        return False
    for i, a in targets:
        try:
            ct = op.vjps[i](g, out, *e.ins, **e.params)
        except NotImplementedError as err:
            if not defer:
                raise
            ct = Undefined(err)
        _accumulate(cts, a, ct, held)
    return False


def _check_complex(e, derivatives):
    """Refuse eqn ``e`` when complex values meet a rule not declared right for them (see
    :mod:`tracegrad.rules.complex_`): its operands, results or the derivatives flowing
    through it (``derivatives``: cotangents or tangents) are complex."""
    if getattr(e.op, "complex", False):
        return
    for v in (*e.ins, *e.outs, *derivatives):
        if isinstance(v, Var) and v.npdtype.kind == "c":
            raise TracerError(complex_refusal(f"differentiating {e.op.name}", e.op.name))


def forward(eqns, wrt, tangents):
    """Tangents of every active Var (a dict by id) given ``tangents`` of ``wrt``."""
    eqns, active = active_eqns(eqns, wrt)
    ts = {v.id: t for v, t in zip(wrt, tangents)}
    for e in eqns:
        op = e.op
        tin = [ts.get(a.id) if isinstance(a, Var) else None for a in e.ins]
        if op is ALIAS:
            ts[e.outs[0].id] = tin[0]
            continue
        tin = [t if t is not None and op.is_diff_arg(i) else None for i, t in enumerate(tin)]
        if all(t is None for t in tin):
            continue
        _check_complex(e, tin)
        custom = getattr(op, "tape_jvp", None)
        out = e.outs if e.multi else e.outs[0]
        t_out = custom(tin, out, e.ins, e.params) if custom is not None else \
            op.apply_jvp(tin, out, e.ins, e.params)
        for o, t in zip(e.outs, t_out if e.multi else (t_out,)):
            if t is not None and _differentiable(o):
                if isinstance(t, Var) and t.npdtype != o.npdtype:
                    t = P.cast(t, dtype=o.npdtype, src_dtype=t.npdtype)
                ts[o.id] = t
    return ts
