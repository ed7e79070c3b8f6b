"""Checks a rule's vjp against finite differences and its jvp against its vjp, on raw
NumPy arrays: the rule table in isolation, before any runtime is involved."""
import numpy as np

from tracegrad.backend import cpu
from tracegrad.rules import OUT, Meta

EPS = 1e-6


def forward(prim, args, params):
    return prim.impl(cpu, *args, **params)


def outputs(prim, out):
    """The results of a call as a tuple."""
    return (out,) if prim.nout == 1 else tuple(out)


def diff_positions(prim, sample):
    """Operand positions with a vjp whose operand is a float array (or float number)."""
    return [i for i, a in enumerate(sample.args)
            if prim.is_diff_arg(i) and _is_float(a)]


def _is_float(a):
    return (isinstance(a, np.ndarray) and a.dtype.kind == "f") or isinstance(a, float)


def _name(prim, i):
    return prim.argnames[i] if i < len(prim.argnames) else prim.variadic


def vjp_operands(prim, i, args, out):
    """The operands as the eager runtime would pass them to vjp ``i``: values only for
    what the rule declares in ``uses``, ``Meta`` shapes otherwise. A vjp that reads an
    undeclared value fails here, which is what proves each declaration."""
    uses = prim.all_uses if prim.vjp_all_fn is not None else prim.uses[i]
    masked = []
    for j, a in enumerate(args):
        if isinstance(a, np.ndarray) and _name(prim, j) not in uses:
            masked.append(Meta(a.shape, a.strides, a.dtype))
        else:
            masked.append(a)
    return masked, (out if OUT in uses else None)


def cotangent(prim, out, rng):
    """A random gradient for each output (zeros for non-differentiable outputs)."""
    gs = []
    for k, o in enumerate(outputs(prim, out)):
        o = np.asarray(o)
        if o.dtype.kind != "f":  # integer results (indices) take no gradient
            gs.append(np.zeros(o.shape, o.dtype))
        else:
            gs.append(rng.standard_normal(o.shape))
    return gs[0] if prim.nout == 1 else tuple(gs)


def vjp(prim, i, g, out, args, params):
    masked, out_arg = vjp_operands(prim, i, args, out)
    if prim.vjp_all_fn is not None:
        return prim.vjp_all_fn(g, out_arg, *masked, **params)[i]
    return prim.vjps[i](g, out_arg, *masked, **params)


def inner(a, b):
    """Sum of elementwise products over (tuples of) arrays, skipping None."""
    if isinstance(a, tuple):
        return sum(inner(x, y) for x, y in zip(a, b) if x is not None and y is not None)
    return float(np.sum(np.asarray(a, dtype=np.float64) * np.asarray(b, dtype=np.float64)))


def perturbed(args, i, delta):
    moved = list(args)
    moved[i] = args[i] + delta
    return moved


def directional_derivative(prim, args, params, i, v):
    """(f(x + eps v) - f(x - eps v)) / 2 eps, per output."""
    plus = outputs(prim, forward(prim, perturbed(args, i, EPS * v), params))
    minus = outputs(prim, forward(prim, perturbed(args, i, -EPS * v), params))
    d = tuple((np.asarray(p, np.float64) - np.asarray(m, np.float64)) / (2 * EPS) for p, m in zip(plus, minus))
    return d[0] if prim.nout == 1 else d


def direction(a, rng):
    return rng.standard_normal(np.shape(a)) if isinstance(a, np.ndarray) else float(rng.standard_normal())


def close(lhs, rhs, rtol):
    return abs(lhs - rhs) <= rtol * (1.0 + abs(lhs) + abs(rhs))
