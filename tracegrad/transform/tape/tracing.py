"""Recording primitives onto the active tape, guards, and ``trace``.

Tracing runs the user's function once with :class:`~.tape.Var` tracers in place of the
array arguments. Every rule-table primitive called on a tracer (through an operator, a
NumPy function, a tracegrad function or a method) is computed on the concrete values and
appended to the tape. One tape records at a time (per thread): a transform called while
another is tracing -- ``grad(grad(f))`` -- records into the same tape, so the inner
gradient computation is itself on the tape and can be differentiated again.
"""
import functools
import inspect
import threading

from ...backend import cpu as _np  # type checks, and Python floats as float64 arrays
from ...backend import ARRAY_TYPE_SET, is_array, namespace_of

from ...rules import core as _core
from ...runtime import grad_mode as _grad_mode
from ...rules.core import register_handler
from ...runtime.tensor import Tensor
from . import aliasing
from .tape import VAR_TYPES as _VAR_TYPES, Eqn, Guard, Tape, TracerError, Var
from ..tree import flatten, unflatten
from .numpy_map import construct as _constructors
from ...runtime.vmapped import is_vmapped

__all__ = ["trace", "trace_arguments", "active_tape", "recording", "bind", "guard", "as_operand",
           "is_traceable", "input_value", "nested_transform", "written_under_no_grad", "off_tape"]

_state = threading.local()


def active_tape():
    """The tape recording on this thread, or None."""
    return getattr(_state, "tape", None)


class recording:
    """Context manager: make ``tape`` the one recording on this thread. An error raised
    while it records is replaced by the TracerError behind it, when NumPy hid one."""

    def __init__(self, tape):
        self.tape = tape

    def __enter__(self):
        self.prev = active_tape()
        _state.tape = self.tape
        _core.OVERRIDING[0] += 1
        _constructors.acquire()  # (NumPy's np.array and friends record while any tape does)
        # The traced function starts with gradients on: a no_grad() around the transform
        # is not the function's own (as in functorch); one inside it stops them (_record).
        self.flags = _grad_mode.swap(True, False)
        return self.tape

    def __exit__(self, tp, value, tb):
        _grad_mode.restore(self.flags)
        _constructors.release()
        _core.OVERRIDING[0] -= 1
        _state.tape = self.prev
        aliasing.settle_tape(self.tape)
        poison = self.tape.poison
        if value is not None and poison is not None and value is not poison:
            raise poison from value


class off_tape:
    """Context manager: no tape records on this thread meanwhile. For a kernel that calls
    back into Python (SciPy's odeint calling the right-hand side): the callback computes
    on the concrete values it is given, even while the kernel runs for a tape."""

    def __enter__(self):
        self.prev = active_tape()
        _state.tape = None

    def __exit__(self, *exc):
        _state.tape = self.prev


def _tape_of(var):
    tape = active_tape()
    if tape is None or var.tape is not tape:
        raise TracerError(
            f"a traced value ({var!r}) was used outside the trace that made it; a traced "
            "function must return its results, not keep them (in a global, a closure or an "
            "attribute) for later use")
    return tape


def as_operand(tape, a):
    """``(operand, value)`` for one argument of a recorded op: a Var for tracers and
    captured arrays (constants, by value), the object itself for Python literals."""
    if isinstance(a, Var):
        _tape_of(a)
        a = aliasing.current(a)  # (a view written through its array: made again)
        return a, a.value
    if isinstance(a, (_np.ndarray, _np.generic)) or is_array(a):
        return tape.capture(a), a
    if isinstance(a, Tensor):
        lift = getattr(tape, "lift", None)  # (tracegrad.compile's tape: Tensors are inputs)
        if lift is not None:
            v = lift(a)
            return v, v.value
        return tape.capture(_unbatched(a)._data), a._data
    return a, a


def _on_one_device(args):
    """``args`` with host values moved to the device of the traced values they meet: the
    constants plain NumPy code makes (``np.zeros(x.shape) + x``) are recorded, once, as
    device arrays; a traced host scalar (a Python float argument, a 0-d CPU tensor) is
    moved by a recorded ``to_device``, as the eager runtime moves CPU scalars."""
    for a in args:
        v = a.value if isinstance(a, Var) else a
        if type(v) is not _np.ndarray and type(v) in ARRAY_TYPE_SET:
            xp = namespace_of(v)
            return [_moved(b, xp) for b in args]
    return args


def _moved(a, xp):
    if type(a) is _np.ndarray:
        return xp.from_host(a)
    if isinstance(a, Var) and type(a.value) is _np.ndarray and a.value.ndim == 0:
        from ...rules.memory import to_device
        return to_device(a, device=xp.name, src="cpu")
    return a


def bind(prim, args, params):
    """Compute ``prim(*args, **params)`` on the concrete values and record it."""
    tape = active_tape()
    if tape is None:
        for a in args:
            if isinstance(a, Var):
                _tape_of(a)
    elif tape.prepare is not None:  # (tracegrad.compile's capture: the eager dtype rules)
        args = tape.prepare(prim, args, params)
    ins, vals = [], []
    for a in args:  # the common operands (tracers of this tape, host arrays, numbers) first
        tp = type(a)
        if tp in _VAR_TYPES and a.tape is tape:
            v = a.value
            if type(v) is not _ND and type(v) in ARRAY_TYPE_SET:
                break  # a device value: see _on_one_device
            ins.append(a)
            vals.append(v)
        elif tp in _LITERALS:
            ins.append(a)
            vals.append(a)
        else:
            break
    else:
        return _record(tape, prim, ins, vals, params)
    ins, vals = [], []
    for a in _on_one_device(args):
        operand, value = as_operand(tape, a)
        ins.append(operand)
        vals.append(value)
    return _record(tape, prim, ins, vals, params)


def _compute(prim, vals, params):
    """``prim(*vals, **params)`` on concrete values: straight to the kernel where every
    value is a plain host array or number (no handler can claim them), as
    ``Primitive.__call__`` would dispatch them."""
    ns = None
    for v in vals:
        tp = type(v)
        if tp not in _PLAIN:
            return prim(*vals, **params)
        if ns is None and tp not in _PY_NUMBERS:
            ns = namespace_of(v)
    if ns is None:  # Python numbers only: answered as Primitive.__call__ answers them
        return prim(*vals, **params)
    return prim.impl(ns, *vals, **params)


def _record(tape, prim, ins, vals, params):
    out = _compute(prim, vals, params)
    multi = isinstance(out, (tuple, list))
    result = tape.add(prim, ins, params, tuple(out) if multi else out, multi)
    if not _grad_mode.state.grad_enabled:  # inside no_grad(): results carry no derivative
        result = _stopped(tape, result, multi)
    if prim.view or prim.name in aliasing.PART_VIEWS:
        # NumPy's memory is shared: writes must reach the other names of it
        aliasing.note_view(prim, ins, params, result, tape)
    if prim.name in _DATA_SHAPED:  # result's shape depends on the values: guard it
        for r in (result if multi else (result,)):
            guard(r, "shape", r.shape)
    if tape.pruner is not None:
        tape.pruner.step()
    return result


def _stopped(tape, result, multi):
    """``result``'s Vars through a stop_gradient (what no_grad() means to a derivative)."""
    from .sweeps import STOP
    outs = [tape.add(STOP, (r,), {}, r.value) if isinstance(r, Var) else r
            for r in (result if multi else (result,))]
    return tuple(outs) if multi else outs[0]


class KeepDerivative:
    """``y = new`` whose derivative is that of ``old``: an in-place write made under
    ``no_grad()`` (``y += 1``, ``y[0] = 5``) changes the array's value but not its history,
    as in PyTorch, so the written array keeps the derivative it had before the write.
    (``old + stop_gradient(new - old)`` would not give ``new`` exactly: rounding, and a
    NaN or an infinity in ``old``.) The generated code is ``y = new``."""

    name = "keep_derivative"
    differentiable = True
    complex = True        # the identity's derivative is right for complex values too
    vjp_all_fn = None

    def __repr__(self):
        return "keep_derivative"

    def is_diff_arg(self, i):
        return i == 0

    def save_plan(self, mask, n):  # (for pruning) its vjp reads no value
        return (), False

    def expr(self, module, args, params):
        return args[1]

    def tape_vjp(self, gs, outs, ins, params):
        return [gs[0], None]

    def tape_jvp(self, tangents, out, ins, params):
        return tangents[0]


KEEP_DERIVATIVE = KeepDerivative()


def written_under_no_grad(old, new):
    """The value to take over tracer ``old`` for the in-place write whose result is ``new``
    (see :func:`.tracer.take_over`): ``new`` itself, except under ``no_grad()``, where ``new``
    (recorded there) carries no derivative and the write must keep ``old``'s."""
    if _grad_mode.state.grad_enabled or not isinstance(old, Var) or not isinstance(new, Var):
        return new
    if old.kind == "const" or old.npdtype.kind not in "fc" or old.shape != new.shape \
            or old.npdtype != new.npdtype:
        return new  # (nothing to keep: no derivative, or a value another write replaces)
    return old.tape.add(KEEP_DERIVATIVE, (old, new), {}, new.value)


class nested_transform:
    """Context manager for a transform that runs inside another one's trace (``grad(grad(f))``,
    a ``grad`` called under ``no_grad()`` inside the traced function): it records into the
    same tape, and records its own derivatives -- grad mode is on while it runs, as when a
    new recording starts. :meth:`result` then stops what it returns where grad mode was off
    around the call (the inner result is a constant to the outer transform there)."""

    def __enter__(self):
        self.flags = _grad_mode.swap(True, False)
        return self

    def __exit__(self, *exc):
        _grad_mode.restore(self.flags)
        return False

    def result(self, out):
        """``out`` (a tree), its tracers stopped where the caller had gradients off."""
        if _grad_mode.state.grad_enabled:
            return out
        leaves, spec = flatten(out)
        if not any(isinstance(v, Var) for v in leaves):
            return out
        return unflatten(spec, [_stopped(v.tape, v, False) if isinstance(v, Var) else v
                                for v in leaves])


_ND = _np.ndarray
_LITERALS = {int, float, complex, bool, type(None)}
_PY_NUMBERS = {int, float, complex, bool, type(None)}
_PLAIN = {_ND, int, float, complex, bool, type(None), _np.float64, _np.float32, _np.float16,
          _np.complex128, _np.complex64, _np.int64, _np.int32, _np.bool_}


_DATA_SHAPED = {"nonzero", "unique", "unique_consecutive", "bincount"}  # (results sized by values)


def guard(var, kind, value, args=()):
    """Record that the traced function read ``var`` as a Python value (``kind``, with
    ``args`` for ``.item(i)``) and saw ``value``: replaying the tape is valid only while
    that stays true."""
    tape = _tape_of(var)
    check = getattr(tape, "on_guard", None)  # (tracegrad.compile's tape refuses guards)
    if check is not None:
        check(var, kind)
    params = {"value": value, "args": tuple(args)} if args else {"value": value}
    tape.eqns.append(Eqn(Guard(kind), (var,), params, ()))
    return value


register_handler(Var, bind, overriding=True)


# -- trace -------------------------------------------------------------------------------

def is_traceable(x):
    """Whether argument leaf ``x`` gets a tracer (arrays, NumPy scalars, Python floats,
    Tensors); other arguments are static."""
    return isinstance(x, (_np.ndarray, _np.generic, float, Tensor)) or is_array(x)


def input_value(x):
    """The array a tracer for argument ``x`` stands for (Tensors by their data, Python
    floats as float64 0-d arrays)."""
    if isinstance(x, Tensor):
        return _unbatched(x)._data
    if isinstance(x, float):
        return _np.asarray(x, dtype=_np.float64)
    return x


_BATCHED = ("vmap: tracegrad's staged transforms (tracegrad.trace; tracegrad.grad, value_and_grad, vjp, "
            "jvp on a tape; tracegrad.jacobian, hessian) cannot take a Tensor batched by vmap (an "
            "argument or a value the function reads): they hold one value per variable, not one per "
            "sample. Inside vmap use tracegrad.func (grad, vjp, jvp, jacrev, jacfwd, hessian) instead.")


def _unbatched(t):
    """``t``, refused if it is a sample of a vmap batch (its ``_data`` is sample 0 only)."""
    if is_vmapped(t):
        raise NotImplementedError(_BATCHED)
    return t


def positional_params(f):
    """The names of ``f``'s positional parameters ([] where its signature is unknown)."""
    try:
        return [p.name for p in inspect.signature(f).parameters.values()
                if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        return []


def param_names(f, n):
    """Names for ``n`` positional arguments of ``f`` (its parameters', where known)."""
    names = positional_params(f)[:n]
    return names + [f"arg{i}" for i in range(len(names), n)]


def trace_arguments(tape, f, leaves, spec):
    """``(args, kwargs)`` -- given flattened as ``leaves`` and ``spec`` -- with a named input
    tracer of ``tape`` for each traceable leaf: a parameter's name, or ``name_k`` for the
    leaves of a tuple/list/dict argument. Tensors make the tape's tracers Tensor-like."""
    args, kwargs = unflatten(spec, leaves)
    names = []
    for name, a in [*zip(param_names(f, len(args)), args), *kwargs.items()]:
        sub, sub_spec = flatten(a)
        names += [name] if sub_spec is None else [f"{name}_{k}" for k in range(len(sub))]
    if any(isinstance(x, Tensor) for x in leaves):
        from .tracer import TensorVar
        tape.var_cls = TensorVar
    return unflatten(spec, [_input(tape, x, n) if is_traceable(x) else x
                            for x, n in zip(leaves, names)])


def _input(tape, x, name):
    """The input tracer for argument leaf ``x``; a Python float's stands for an immutable
    number (``s += 1`` rebinds it, as Python does, instead of writing into it)."""
    v = tape.new_input(input_value(x), name)
    if type(x) is float:
        tape.immutable.add(v.id)
        tape.python_floats.add(v.id)
    return v


def trace(f):
    """``trace(f)(*args, **kwargs)`` runs ``f`` once with tracers standing in for its array
    arguments (NumPy arrays, NumPy scalars, Python floats, Tensors) and returns the
    :class:`Tape` of primitives it applied. Other arguments (ints, strings, shapes) are
    static: their values are baked into the tape."""
    @functools.wraps(f)
    def traced(*args, **kwargs):
        tape = Tape(getattr(f, "__name__", "f"))
        leaves, spec = flatten((args, kwargs))
        with recording(tape):
            targs, tkwargs = trace_arguments(tape, f, leaves, spec)
            tape.outputs = aliasing.current_tree(f(*targs, **tkwargs))
        return tape
    return traced
