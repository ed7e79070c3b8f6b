"""Recording an eager Tensor program onto a tape: the bridge ``tracegrad.compile`` traces through.

The tape path (:mod:`tracegrad.transform.tape`) records what a function does to its
*tracers*. An eager program also computes with Tensors the tracer never touches: a
module's parameters (``self.weight.t()``), buffers, tensors read from a closure. Were
those computed eagerly while tracing, the tape would bake the results in as constants
and a replay would silently use the values of the first call. So, while a
:class:`CaptureTape` records:

* every Tensor that meets the tape -- an argument, or one met as an operand -- becomes an
  *input* of the tape (it is "lifted"): a replay reads its current data, and a
  derivative flows to it when it requires grad;
* the eager runtime's entry points (``dispatch.apply``, its unary and binary fast paths,
  in-place writes, factories, custom ``Function``\\ s) report to :class:`_Bridge`, the
  dispatch observer -- the hook the profiler uses -- which records the operation on the
  tape instead of running it eagerly.

What the tape cannot replay faithfully raises :class:`GraphBreak` naming the construct:
a conversion to a Python value (``if t.sum() > 0:``, ``.item()``), ``print``, an in-place
write into a tensor the tape does not own, a random draw, a backward pass, an active
profiler or vmap. The caller then runs the call eagerly (or, with ``fullgraph=True``,
raises :class:`Unsupported`).
"""
import builtins
import sys
import threading

from ..backend import cpu, python_scalar
from ..rules.core import KEEP, TABLE
from ..rules.memory import cast as CAST
from ..runtime import dispatch, grad_mode
from ..runtime.dispatch import _promote
from ..runtime.tensor import PLAIN_SUBCLASSES, Tensor
from ..runtime.vmapped import is_vmapped
from ..transform.tape import aliasing
from ..transform.tape.tape import Tape, Var
from ..transform.tape.tracing import bind, recording

__all__ = ["CaptureTape", "GraphBreak", "Unsupported", "capturing", "is_compiling"]


class Unsupported(RuntimeError):
    """``tracegrad.compile(..., fullgraph=True)`` met code it cannot stage (PyTorch raises
    ``torch._dynamo.exc.Unsupported``, also a RuntimeError)."""


class GraphBreak(Exception):
    """Raised while capturing: ``construct`` cannot be staged; the call runs eagerly."""

    def __init__(self, construct, explanation="", transient=False):
        self.construct, self.where, self.transient = construct, _user_line(), transient
        super().__init__(f"{construct}{': ' + explanation if explanation else ''}"
                         f"{' (at ' + self.where + ')' if self.where else ''}")


def _user_line():
    """``file:line`` of the innermost frame outside tracegrad (the user's construct)."""
    import os
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    f = sys._getframe(2)
    while f is not None:
        if not os.path.abspath(f.f_code.co_filename).startswith(root):
            return f"{f.f_code.co_filename}:{f.f_lineno}"
        f = f.f_back
    return ""


_local = threading.local()
_ONE = threading.Lock()  # one capture at a time in the process


def is_compiling():
    """True while ``tracegrad.compile`` traces a call on this thread."""
    return getattr(_local, "depth", 0) > 0


class CaptureTape(Tape):
    """A tape whose Tensors are lifted to inputs (see the module docstring). ``lifted`` maps
    ``id(tensor)`` to ``(tensor, var)`` in the order they were met; ``names`` gives the
    lifted tensors their parameter names (``fc1.weight``) where known; ``made`` holds the
    tensors the traced code made itself (factories): constants, captured by value."""

    def __init__(self, name, names=None):
        super().__init__(name)
        self.var_cls = _capture_var()
        self.staged = True
        self.lifted = {}
        self.names = names or {}
        self.made = {}

    no_grad_call = False  # while capturing a call made with grad mode off

    def prepare(self, prim, args, params):
        if self.no_grad_call and grad_mode.state.grad_enabled:
            raise GraphBreak("grad mode enabled inside a call made under no_grad()",
                             "its results would need a backward the staged call does not have")
        return _prepare(self, prim, args, params)

    def lift(self, t, name=None):
        """The tape's Var for Tensor ``t`` (an input, made at its first use)."""
        hit = self.lifted.get(id(t))
        if hit is not None:
            return hit[1]
        if id(t) in self.made:  # a tensor the traced code made (zeros, arange): a constant
            v = self.capture(t._data)
            self.lifted[id(t)] = (t, v)
            return v
        if type(t) is not Tensor and type(t) not in PLAIN_SUBCLASSES:  # (Parameter, Buffer)
            raise GraphBreak(f"a Tensor subclass ({type(t).__name__})")
        if is_vmapped(t):
            raise GraphBreak("a tensor batched by vmap")
        label = name or self.names.get(id(t)) or f"t{len(self.lifted)}"
        v = self.new_input(t._data, identifier(label))
        self.lifted[id(t)] = (t, v)
        if t.requires_grad and t._data.dtype.kind in "fc":
            self.marked.add(v.id)
        return v


_VAR = []


def _capture_var():
    """The tracer class of a capture: a TensorVar that also answers ``strides`` (of the
    value it stands for while tracing), so that a vjp choosing its result's memory layout
    by its operand's (``linear``'s weight gradient, made as ``(g^T x)^T``) chooses as the
    eager runtime does, and the staged gradients equal the eager ones bit for bit."""
    if not _VAR:
        from ..transform.tape.tracer import TensorVar

        class CaptureVar(TensorVar):
            __slots__ = ()

            @property
            def strides(self):
                return getattr(self.value, "strides", None)

            def type(self, dtype=None):
                if dtype is None:
                    return f"tracegrad.{'cuda.' if self.device.type == 'cuda' else ''}{self.dtype._legacy}"
                return Tensor.type(self, dtype)

            def contiguous(self, memory_format=None):
                return self  # (a traced value is laid out as if contiguous)

            # layout reads answer as eagerly (the values are made by the same kernels, and the
            # guards key the arguments' strides): code branching on them takes eager's branch
            def is_contiguous(self, memory_format=None):
                return bool(self.value.flags.c_contiguous)

            def stride(self, dim=None):
                size = self.value.itemsize
                strides = tuple(s // size for s in self.value.strides)
                return strides if dim is None else strides[dim]

            # a traced value as text: its numbers are unknown here (the text would be the
            # tracer's, baked into the staged call), so user code asking for it breaks
            def __repr__(self):
                _refuse_text(sys._getframe(1), "repr")
                return TensorVar.__repr__(self)

            def __str__(self):
                _refuse_text(sys._getframe(1), "str")
                return TensorVar.__repr__(self)

            def __format__(self, spec):
                _refuse_text(sys._getframe(1), "format")
                return format(TensorVar.__repr__(self), spec)

            @property
            def requires_grad(self):
                return _requires_grad(self)

            @property
            def is_leaf(self):
                return self.kind != "op" or not _requires_grad(self)

            @property
            def grad_fn(self):
                if self.kind != "op" or not _requires_grad(self):
                    return None
                raise GraphBreak("Tensor.grad_fn of a value the staged code computes",
                                 "the staged forward makes one node, not the eager graph")

            @property
            def _data(self):
                f = sys._getframe(1).f_code
                raise GraphBreak(f"{f.co_name}() (tracegrad/{f.co_filename.rsplit('tracegrad/', 1)[-1]}) "
                                 "reads a tensor's array directly instead of through the rule table "
                                 "(random noise, running statistics)")
        _VAR.append(CaptureVar)
    return _VAR[0]


def _requires_grad(var):
    """What ``requires_grad`` of ``var`` reads eagerly (code branches on it: the guards key
    the arguments' flags, and the trace must see them): an input's own flag, else whether
    it depends on one that requires grad through differentiable ops recorded with grad mode
    on. The activity is spread over the eqns recorded since the last read (the tape only
    grows while capturing)."""
    tape = var.tape
    if var.kind != "op" or not tape.marked:
        return var.id in tape.marked
    from ..transform.tape.sweeps import spread_activity
    active, done = getattr(tape, "_activity", None) or (set(tape.marked), 0)
    spread_activity(tape.eqns[done:], active)
    tape._activity = (active, len(tape.eqns))
    return var.id in active


def _as_array(value):
    return cpu.asarray(value) if isinstance(value, cpu.generic) else value


def _prepare(tape, prim, args, params):
    """``args`` of an op about to be recorded, cast as the eager runtime casts them
    (``dispatch._promote``: PyTorch's type promotion, integers to the default float for
    float-only ops), each cast a recorded ``cast`` op -- NumPy's own promotion differs
    (``float32 * float64 0-d`` is float64 there, float32 in PyTorch). Tensors met here
    are lifted first."""
    if prim.dtypes is KEEP or prim.name == "cast":
        return args
    args = [tape.lift(a) if isinstance(a, Tensor) else a for a in args]
    vals = []
    # What dispatch.unwrap hands _promote: NumPy scalars as Python numbers, a tensor's value
    # as an array -- a Var's 0-d value may be a NumPy scalar, and np.float64 is a float.
    for a in args:
        number = python_scalar(a)
        vals.append(_as_array(a.value) if isinstance(a, Var) else a if number is None else number)
    before = [getattr(v, "dtype", None) for v in vals]
    _promote(prim, vals)
    out = list(args)
    for i, (a, v, old) in enumerate(zip(args, vals, before)):
        if isinstance(a, Var):
            new = getattr(v, "dtype", None)
            if new is not None and new != old:
                out[i] = bind(CAST, (a,), {"dtype": new, "src_dtype": old})
        elif v is not a:  # a NumPy scalar as a number, a number made an array of the
            out[i] = v    # target dtype or wrapped, a constant array cast
    return out


def identifier(label):
    """``label`` made a Python identifier (``fc1.weight`` -> ``fc1_weight``, ``<lambda>``)."""
    out = "".join(c if c.isalnum() or c == "_" else "_" for c in label)
    return out if out and not out[0].isdigit() else "_" + out


class _Bridge:
    """The dispatch observer while a capture runs (see the module docstring). Other
    threads' eager operations pass through unchanged."""

    def __init__(self, tape, thread):
        self.tape, self.thread = tape, thread

    # -- operations --------------------------------------------------------------------
    def call(self, name, fn, args, operands):
        if threading.get_ident() != self.thread:
            return fn(*args, _observed=True)
        if fn is dispatch.apply:
            prim, ops, params = args
        elif fn is dispatch.apply_inplace:
            prim, ops, params = args
            target = ops[0]
            if isinstance(target, Tensor) and id(target) in self.tape.made:
                target = self.tape.lift(target)  # (a tensor the code made: its own to write)
            if not isinstance(target, Var) or target.kind == "input":
                raise GraphBreak(f"in-place {prim.name}_() on an input, parameter or buffer",
                                 "module state changes and writes into inputs run eagerly")
            # a value the staged code made (relu_ after a conv): written as ``x[...] = op(x)``,
            # which the tape records functionally (views of it follow)
            new = self.record(prim, (aliasing.current(target),) + tuple(ops[1:]), params)
            if target.id in self.tape.immutable:  # (see _element_parent)
                parent, index = _element_parent(self.tape, target)
                parent[index] = new
            target[...] = new
            return target
        else:  # an eager fast path (one or two operands, no parameters)
            prim, ops, params = TABLE[getattr(fn, "__name__", name)], args, {}
        return self.record(prim, ops, params)

    def record(self, prim, ops, params):
        lift = self.tape.lift
        ops = tuple(lift(a) if isinstance(a, Tensor) else a for a in ops)
        return bind(prim, ops, params)

    def span(self, name, fn, args, operands, kwargs=None):
        kwargs = kwargs or {}
        if threading.get_ident() != self.thread:
            return fn(*args, **kwargs)
        from ..runtime import function
        if fn is function._apply:  # a custom autograd.Function: its forward would run
            # eagerly inside the capture (its operations reported here again, without end)
            raise GraphBreak(f"a custom autograd.Function ({args[0].__name__}.apply)",
                             "its forward and backward are the user's code; the call runs eagerly")
        short = name.rsplit("::", 1)[-1]
        from ..runtime.creation import _RANDOM_FACTORIES
        if short in _RANDOM_FACTORIES:
            raise GraphBreak(f"a random factory ({short})",
                             "random draws are not replayed; the call runs eagerly")
        if not short.endswith("_like") and any(_holds_tensor(a) for a in (*args, *kwargs.values())):
            raise GraphBreak(f"{short}() of a tensor", "its values would be baked into the staged code")
        out = fn(*args, **kwargs)
        for t in (out if isinstance(out, (tuple, list)) else (out,)):
            if isinstance(t, Tensor):
                self.tape.made[id(t)] = t
        return out

    # -- what cannot be recorded -------------------------------------------------------
    def open(self, name, operands=()):
        return None  # (record_function and optimizer spans: nothing to time)

    def close(self, event, results=None, operands=()):
        return None

    def timed_backward(self, apply):
        raise GraphBreak("a backward pass (Tensor.backward / autograd.grad)")

    def timed_accumulate(self, accumulate):
        raise GraphBreak("a backward pass (Tensor.backward / autograd.grad)")


def _element_parent(tape, target):
    """``(parent, index)`` for a one-element view ``target`` written in place (``t[0] = v``
    on a tensor the code made runs ``copy_`` into the view ``t[0]``). The tape takes a 0-d
    ``t[0]`` for a number, not a view (NumPy's semantics), so the write would not reach
    ``t``: it is written into the parent too, when the view was made by a basic index of a
    parent still current; otherwise the capture breaks."""
    for e in reversed(tape.eqns[target.at:]):
        if any(o is target for o in e.outs):
            parent = e.ins[0] if e.ins else None
            if getattr(e.op, "name", "") == "basic_index" and isinstance(parent, Var) \
                    and tape.renamed.get(parent.id) is not parent:
                return parent, e.params["index"]
            break
    raise GraphBreak("an in-place write into a one-element view of a value the staged code "
                     "computes", "the tape takes it for a number, not a view")


def _holds_tensor(a):
    if isinstance(a, (Tensor, Var)):
        return True
    return isinstance(a, (list, tuple)) and any(_holds_tensor(b) for b in a)


def _no_print(thread, original):
    def print_(*args, **kwargs):
        if threading.get_ident() != thread:
            return original(*args, **kwargs)
        raise GraphBreak("print()", "Python side effects are not replayed")
    return print_


def _in_library(frame):
    import os
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
    return os.path.abspath(frame.f_code.co_filename).startswith(root)


def _refuse_text(frame, what):
    if not _in_library(frame):
        raise GraphBreak(f"{what}() of a tensor", "its text shows values the staged code does not see")


def _user_isinstance(thread, original):
    """``isinstance`` while capturing: the user's code sees a traced value as the Tensor
    it stands for (``isinstance(y, torch.Tensor)`` was False for it, and code branching on
    it was staged down the other branch); tracegrad's own code, which tells traced values
    from Tensors so, sees the truth."""
    var_cls = _capture_var()

    def isinstance_(obj, classinfo):
        answer = original(obj, classinfo)
        if answer or type(obj) is not var_cls or threading.get_ident() != thread:
            return answer
        try:
            if not issubclass(Tensor, classinfo):
                return False
        except TypeError:
            return False
        return not _in_library(sys._getframe(1))
    return isinstance_


def _user_is_tensor(original):
    var_cls = _capture_var()

    def is_tensor(obj):
        return type(obj) is var_cls or original(obj)
    return is_tensor


# Tensor methods that hand a tensor's values to Python or NumPy: while capturing, a value
# read so (from a parameter, a buffer, a tensor the code holds) would be baked into the
# staged code, so they break the capture instead (on the capturing thread only).
_VALUE_READS = ("item", "tolist", "numpy", "__array__", "__float__", "__int__", "__bool__",
                "__index__", "__complex__")


def _refusing(name, original, thread):
    def read(self, *args, **kwargs):
        if threading.get_ident() != thread:
            return original(self, *args, **kwargs)
        raise GraphBreak(f"Tensor.{name}() of a tensor read while staging",
                         "its value would be baked into the staged code")
    read.__name__ = name
    return read


class capturing:
    """``with capturing(tape):`` -- record the eager program run inside onto ``tape`` (see
    the module docstring); grad mode inside is the caller's."""

    def __init__(self, tape):
        self.tape = tape

    def __enter__(self):
        if dispatch.batching is not None or dispatch.batching_inplace is not None:
            raise GraphBreak("a call under vmap", transient=True)
        if not _ONE.acquire(blocking=False):  # (the observer is process-wide)
            raise GraphBreak("another thread's capture", transient=True)
        if dispatch.observer is not None:
            _ONE.release()
            raise GraphBreak("an active profiler", transient=True)
        enabled = grad_mode.state.grad_enabled
        self.rec = recording(self.tape)
        self.rec.__enter__()
        self.flags = grad_mode.swap(enabled)
        self.tape.no_grad_call = not enabled
        thread = threading.get_ident()
        dispatch.observer = _Bridge(self.tape, thread)
        self.print = builtins.print
        builtins.print = _no_print(thread, self.print)
        import tracegrad
        self.isinstance, self.is_tensor = builtins.isinstance, tracegrad.is_tensor
        builtins.isinstance = _user_isinstance(thread, self.isinstance)
        tracegrad.is_tensor = _user_is_tensor(self.is_tensor)
        self.reads = {n: Tensor.__dict__[n] for n in _VALUE_READS if n in Tensor.__dict__}
        for n, f in self.reads.items():
            setattr(Tensor, n, _refusing(n, f, thread))
        _local.depth = getattr(_local, "depth", 0) + 1
        return self.tape

    def __exit__(self, tp, value, tb):
        _local.depth -= 1
        self.tape.no_grad_call = False
        builtins.print = self.print
        import tracegrad
        builtins.isinstance, tracegrad.is_tensor = self.isinstance, self.is_tensor
        for n, f in self.reads.items():
            setattr(Tensor, n, f)
        dispatch.observer = None
        _ONE.release()
        grad_mode.restore(self.flags)
        return self.rec.__exit__(tp, value, tb)


def on_guard(var, kind):
    """What a capture does where the traced code turns a tensor into a Python value."""
    raise GraphBreak("Data-dependent branching" if kind == "bool" else f"a tensor converted to a Python "
                     f"value ({'.item()' if kind == 'item' else kind + '()'})",
                     "the result depends on tensor values the staged code does not see")


def current(tree):
    """``tree`` with its tracers up to date (after in-place writes on them)."""
    return aliasing.current_tree(tree)


def is_var(x):
    return isinstance(x, Var)


CaptureTape.on_guard = staticmethod(on_guard)
