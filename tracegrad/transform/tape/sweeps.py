"""Differentiation over a tape: the reverse sweep (vjp rules) and the forward sweep (jvp
rules), each a small interpreter over a stretch of eqns that appends what it computes to
the tape being recorded.

Both sweeps call the rule table's vjp/jvp functions on tracers, so the derivative eqns
are recorded like any other primitive -- which is what makes them compilable, printable,
and differentiable again. Only *active* eqns (those depending on the variables being
differentiated) are visited: an inner ``grad`` sees the outer one's variables as
constants, so nested derivatives do not get confused.
"""
from .numpy_map import P
from .tape import Guard, Var

__all__ = ["Alias", "alias", "STOP", "stop_gradient", "active_eqns", "reverse", "forward"]


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
    out = []
    for e in eqns:
        op = e.op
        if isinstance(op, Guard) or not any(isinstance(a, Var) and a.id in active for a in e.ins):
            continue
        if op is not ALIAS and not getattr(op, "differentiable", False):
            continue
        out.append(e)
        for o in e.outs:
            if _differentiable(o):
                active.add(o.id)
    return out, active


def _accumulate(cts, v, g):
    if g is None:
        return
    if isinstance(g, Var) and g.npdtype != v.npdtype and v.npdtype.kind in "fc" and g.npdtype.kind in "fc":
        g = P.cast(g, dtype=v.npdtype, src_dtype=g.npdtype)
    prev = cts.get(v.id)
    cts[v.id] = g if prev is None else P.add(prev, g)


def reverse(eqns, wrt, outputs, cotangents):
    """Cotangents of the Vars ``wrt`` (None where nothing flows), given ``cotangents`` of
    ``outputs``, by sweeping the active part of ``eqns`` backwards."""
    eqns, active = active_eqns(eqns, wrt)
    cts = {}
    for o, g in zip(outputs, cotangents):
        if isinstance(o, Var) and o.id in active and g is not None:
            _accumulate(cts, o, g)
    for e in reversed(eqns):
        gs = [cts.pop(o.id, None) for o in e.outs]
        if all(g is None for g in gs):
            continue
        op = e.op
        if op is ALIAS:
            _accumulate(cts, e.ins[0], gs[0])
            continue
        custom = getattr(op, "tape_vjp", None)
        if custom is not None:  # a user rule: it takes the missing gradients as they are
            for i, g in enumerate(custom(gs, e.outs, e.ins, e.params)):
                if g is not None and isinstance(e.ins[i], Var) and e.ins[i].id in active:
                    _accumulate(cts, e.ins[i], g)
            continue
        if e.multi:
            g = tuple(gk if gk is not None else P.zeros_like(o) for gk, o in zip(gs, e.outs))
            out = e.outs
        else:
            g, out = gs[0], e.outs[0]
        targets = [(i, a) for i, a in enumerate(e.ins)
                   if isinstance(a, Var) and a.id in active and op.is_diff_arg(i)]
        if not targets:
            continue
        if op.vjp_all_fn is not None:
            every = op.vjp_all_fn(g, out, *e.ins, **e.params)
            for i, a in targets:
                _accumulate(cts, a, every[i])
            continue
        for i, a in targets:
            _accumulate(cts, a, op.vjps[i](g, out, *e.ins, **e.params))
    return [cts.get(v.id) for v in wrt]


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
