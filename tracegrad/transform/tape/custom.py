"""User rules on the tape: ``autograd.Function`` subclasses and ``custom_vjp`` functions.

Either appears on the tape as *one* op whose forward is the user's forward and whose
vjp is one op calling the user's backward (with what the forward kept). Both are
opaque to the optimizer and to a second differentiation (their backward is not traced).
"""
import functools

from ...runtime import grad_mode
from ...runtime.tensor import Tensor, wrap
from .tape import Var
from .tracing import active_tape, as_operand

__all__ = ["custom_vjp", "CustomCall", "apply_function"]


class CustomCall:
    """The op of one user rule: ``forward_call(*operands) -> (*outputs, residual)`` and
    ``backward_call(residual, *output_grads) -> grads for the operands in diff_positions``."""

    differentiable = True
    vjp_all_fn = None

    def __init__(self, name, forward_call, backward_call, diff_positions):
        self.name = name
        self.forward_call = forward_call
        self.backward_call = backward_call
        self.diff_positions = tuple(diff_positions)

    def __repr__(self):
        return f"<custom rule {self.name}>"

    def is_diff_arg(self, i):
        return i in self.diff_positions

    def expr(self, module, args, params):
        return f"{module.bind(self.forward_call, self.name)}({', '.join(args)})"

    def tape_jvp(self, *args):
        raise _not_twice(self.name, "forward mode (jvp)")

    def record(self, args):
        tape = active_tape()
        ins, vals = zip(*(as_operand(tape, a) for a in args)) if args else ((), ())
        values = self.forward_call(*vals)
        outs = tape.add(self, ins, {}, values, multi=True)
        return outs[:-1]  # the last output is the residual

    def tape_vjp(self, gs, outs, ins, params):
        residual = outs[-1]
        grads = list(gs[:-1])
        targets = [i for i in self.diff_positions if isinstance(ins[i], Var)]
        back = _CustomBackward(self, targets)
        tape = active_tape()
        vals = [residual.value] + [g.value if isinstance(g, Var) else None for g in grads]
        result = back.backward_call(*vals)
        got = tape.add(back, (residual, *grads), {}, tuple(result), multi=True)
        every = [None] * len(ins)
        for i, g in zip(targets, got):
            every[i] = g
        return every


class _CustomBackward:
    """The op calling a user rule's backward on the tape. It is not differentiable again:
    a sweep reaching it raises rather than taking its derivative as zero."""

    differentiable = True
    vjp_all_fn = None

    def __init__(self, rule, targets):
        self.name = rule.name + "_backward"
        self.rule = rule
        self.targets = tuple(targets)

        def call(residual, *grads):
            every = rule.backward_call(residual, *grads)
            return tuple(every[rule.diff_positions.index(i)] for i in self.targets)
        self.backward_call = call

    def is_diff_arg(self, i):
        return True

    def expr(self, module, args, params):
        return f"{module.bind(self.backward_call, self.name)}({', '.join(args)})"

    def tape_vjp(self, *args):
        raise _not_twice(self.rule.name, "a second derivative")

    tape_jvp = tape_vjp


def _not_twice(name, what):
    return NotImplementedError(
        f"{what} through the custom rule {name!r} is not available on the tape: its backward "
        "is the user's code, which the tape does not trace. Differentiate it eagerly (Tensors "
        "with create_graph=True) or write the function with differentiable operations")


# -- autograd.Function -------------------------------------------------------------------

def _is_float_array(v):
    return hasattr(v, "dtype") and getattr(v.dtype, "kind", "") in "fc"


def apply_function(cls, args, kwargs):
    """``cls.apply(*args)`` with tracers among ``args``: one op on the tape."""
    positions = [i for i, a in enumerate(args) if isinstance(a, Var) and _is_float_array(a.value)]

    def forward_call(*values):
        tensors = [_as_input(v, i in positions) for i, v in enumerate(values)]
        with grad_mode.enable_grad():
            out = cls.apply(*tensors, **kwargs)
        outs = out if isinstance(out, tuple) else (out,)
        node = next((o.grad_fn for o in outs if isinstance(o, Tensor) and o.grad_fn is not None), None)
        return tuple(o.detach()._data if isinstance(o, Tensor) else o for o in outs) + (node,)

    # node._apply answers for the Tensor operands, in order; keep the differentiable ones
    tensor_positions = [i for i, a in enumerate(args) if _tensor_operand(a)]

    def backward_call(node, *grads):
        if node is None:
            return (None,) * len(positions)
        result = node._apply(list(grads), False)
        by_pos = dict(zip(tensor_positions, result))
        return tuple(_materialize(by_pos.get(i), args[i]) for i in positions)

    rule = CustomCall(cls.__name__, forward_call, backward_call, positions)
    outs = rule.record(args)
    return outs if len(outs) > 1 else outs[0]


def _tensor_operand(a):
    return isinstance(a, (Var, Tensor)) or hasattr(a, "dtype") and hasattr(a, "shape")


def _as_input(v, differentiable):
    if isinstance(v, Tensor) or not hasattr(v, "dtype") or not hasattr(v, "shape"):
        return v
    t = wrap(v)
    return t.requires_grad_() if differentiable else t


def _materialize(g, like):
    if g is not None:
        return g
    value = like.value
    from ...backend import namespace_of
    return namespace_of(value).zeros(value.shape, dtype=value.dtype)


# -- custom_vjp ----------------------------------------------------------------------------

class custom_vjp:
    """A function with a user-given vjp, as in JAX::

        @tracegrad.custom_vjp
        def clip_gradient(x):
            return x

        def fwd(x):
            return x, None                  # (output, residuals for bwd)

        def bwd(residuals, g):
            return (np.clip(g, -1, 1),)     # one cotangent per argument (None: zero)

        clip_gradient.defvjp(fwd, bwd)

    ``fwd`` and ``bwd`` work on arrays. The rule serves the tape (one op), the eager path
    (Tensors get a node that calls ``bwd``) and plain calls (``fun`` runs as it is)."""

    def __init__(self, fun):
        self.fun = fun
        self.fwd = self.bwd = None
        self._eager = None  # the autograd.Function serving Tensors, made on first use
        functools.update_wrapper(self, fun)

    def defvjp(self, fwd, bwd):
        self.fwd, self.bwd = fwd, bwd
        self._eager = None
        return self

    def __call__(self, *args):
        if self.fwd is None:
            raise TypeError(f"custom_vjp {self.__name__!r}: call defvjp(fwd, bwd) before using it")
        if any(isinstance(a, Var) for a in args):
            return self._record(args)
        if any(isinstance(a, Tensor) for a in args):
            return _eager_rule(self).apply(*args)
        return self.fun(*args)

    def _record(self, args):
        positions = [i for i, a in enumerate(args) if isinstance(a, Var) and _is_float_array(a.value)]
        fwd, bwd = self.fwd, self.bwd

        def forward_call(*values):
            out, residual = fwd(*values)
            return (out, residual)

        def backward_call(residual, g):
            grads = _as_tuple(bwd(residual, g), len(args), self.__name__)
            return tuple(_materialize(grads[i], args[i]) for i in positions)  # None: zero, as in JAX

        rule = CustomCall(self.__name__, forward_call, backward_call, positions)
        return rule.record(args)[0]


def _as_tuple(grads, n, name):
    grads = grads if isinstance(grads, tuple) else (grads,)
    if len(grads) != n:
        raise ValueError(f"custom_vjp {name!r}: bwd returned {len(grads)} cotangent(s) for "
                         f"{n} argument(s)")
    return grads


def _eager_rule(rule):
    """An ``autograd.Function`` running ``rule``'s fwd/bwd on the Tensors' arrays."""
    if rule._eager is not None:
        return rule._eager
    from ...runtime.function import Function

    class CustomVjp(Function):
        @staticmethod
        def forward(ctx, *args):
            values = [a.detach()._data if isinstance(a, Tensor) else a for a in args]
            out, ctx.residual = rule.fwd(*values)
            return wrap(out)

        @staticmethod
        def backward(ctx, g):
            grads = _as_tuple(rule.bwd(ctx.residual, g.detach()._data), len(ctx.needs_input_grad),
                              rule.__name__)
            return tuple(None if x is None else wrap(x) for x in grads)

    CustomVjp.__name__ = CustomVjp.__qualname__ = rule.__name__
    rule._eager = CustomVjp
    return CustomVjp
