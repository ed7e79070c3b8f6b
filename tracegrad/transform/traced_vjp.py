"""``vjp`` on the tape: the function traced once, its value and every pullback read off
that one trace.

A staged pullback would trace the function again for each cotangent, and the value
``vjp`` returns would come from yet another run: for a function that draws random
numbers (dropout, a sampled noise) the value and the gradients would then belong to
different draws -- a gradient of a function other than the one whose value the user
holds. As ``torch.func.vjp`` and ``jax.vjp`` do, the function runs once here; each call
of the pullback sweeps the recorded operations backwards with its cotangent. (Nothing is
compiled or cached: a vjp's pullback is for the point it was made at.)
"""
from .api import _mark, _regroup, _with_phase, _zeros, check_cotangent
from .checks import split_aux
from .tape.aliasing import current_tree
from .tape.numpy_map.construct import recording_form
from .tape.staged import as_kind, kind_of, refuse_shared
from .tape.sweeps import reverse
from .tape.randomness import Draws
from .tape.tape import Tape, TracerError, Var
from .tape.tracing import (active_tape, as_operand, input_value, is_traceable, nested_transform, recording,
                           trace_arguments)
from .tree import flatten, unflatten

__all__ = ["traced_vjp"]


def traced_vjp(f, args, nums, has_aux):
    """``(out, f_vjp)`` (``(out, f_vjp, aux)`` with ``has_aux``), ``f`` run once."""
    outer = active_tape()
    if outer is not None:  # inside another transform: recorded into its tape
        with _nested(outer) as nested:
            out, pull, aux = _record(outer, f, tuple(args), nums, has_aux)
        out, aux = nested.result(out), nested.result(aux)

        def f_vjp(cotangent):
            with _nested(outer) as inner:
                grads = pull(cotangent)
            return inner.result(grads)
    else:
        tape = Tape(getattr(f, "__name__", "f"))
        leaves, spec = flatten((tuple(args), {}))
        kinds = unflatten(spec, [kind_of(x) for x in leaves])[0]
        draws = Draws(f)
        with recording(tape):
            traced, _ = trace_arguments(tape, f, leaves, spec)
            out, pull, aux = _record(tape, f, traced, nums, has_aux)
        if tape.writes_inputs:  # (f(a, a) writing into one: see staged.refuse_shared)
            refuse_shared([input_value(x) for x in leaves if is_traceable(x)], tape.captured_by_reference())
        drew = draws.happened()
        result = "tensor" if "tensor" in flatten(kinds)[0] else "array"  # (as f's own result)
        out, aux = _values(out, result), _values(aux, result)

        def f_vjp(cotangent):
            current = active_tape()
            if current is not None:  # differentiated by a transform made after this vjp:
                return _again(current, f, args, nums, has_aux, cotangent, drew)  # f runs there
            with recording(tape):
                grads = pull(cotangent)
            return tuple(_values(g, kinds[n]) for g, n in zip(grads, nums))
    return (out, f_vjp, aux) if has_aux else (out, f_vjp)


def _record(tape, f, args, nums, has_aux):
    """Run ``f`` on ``tape`` with ``args[n]`` (``n`` in ``nums``) marked: its output, the
    pullback over what it recorded, and its auxiliary data."""
    marked, wrt = _mark(tape, args, nums, "vjp")
    start = len(tape.eqns)
    ids = [v.id for v in wrt]
    out = current_tree(recording_form(f)(*marked))
    wrt = [tape.current(v, i) for v, i in zip(wrt, ids)]
    out, aux = split_aux(out, "vjp") if has_aux else (out, None)
    eqns = tape.eqns[start:]
    outs = flatten(out)[0]

    def pull(cotangent):
        cts = [as_operand(tape, input_value(c))[0] for c in check_cotangent(out, cotangent)]
        got = _with_phase(tape, "g", reverse, eqns, wrt, outs, cts)
        grads = [g if g is not None else Var(tape, _zeros(v), "const") for g, v in zip(got, wrt)]
        return _regroup(grads, args, nums, False)
    return out, pull, aux


def _again(tape, f, args, nums, has_aux, cotangent, drew):
    """The pullback recorded on ``tape``, the trace of a transform that differentiates it
    (the cotangent is its tracer): ``f`` is run again into it, its arguments constants
    there. A function that drew random numbers would draw others: refused."""
    if drew:
        raise TracerError(f"the pullback of vjp({getattr(f, '__qualname__', 'f')}, ...) is differentiated by a "
                          "transform started after the vjp, which must run the function again, and it draws "
                          "random numbers (the gradient would be of other draws than its value); make the vjp "
                          "inside the differentiated function")
    with _nested(tape) as inner:
        _, pull, _ = _record(tape, f, tuple(args), nums, has_aux)
        grads = pull(cotangent)
    return inner.result(grads)


class _nested(nested_transform):
    """:class:`nested_transform`, counted on the tape (``tape.nested``: what the transform
    records is read by the one outside it, so nothing may be dropped as unseen)."""

    def __init__(self, tape):
        self.tape = tape

    def __enter__(self):
        self.tape.nested += 1
        return super().__enter__()

    def __exit__(self, *exc):
        self.tape.nested -= 1
        return super().__exit__(*exc)


def _values(tree, kind):
    """``tree`` with its tracers' values in ``kind`` (``kind`` a tree of kinds: per leaf)."""
    leaves, spec = flatten(tree)
    kinds = flatten(kind)[0] if not isinstance(kind, str) else [kind] * len(leaves)
    if len(kinds) != len(leaves):
        kinds = ["array"] * len(leaves)
    return unflatten(spec, [as_kind(v.value, k) if isinstance(v, Var) else v for v, k in zip(leaves, kinds)])
