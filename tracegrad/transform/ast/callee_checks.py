"""What the adjoint checks of a callee it runs without reading it, so that no gradient
through such a call is silently wrong.

A function passed as a value, an object's method, a callable object: the forward lines
run it as it is, and its derivative is traced from its arguments only when the adjoint
needs it (support.call_vjp_at). Three things would go wrong unseen there:

* the callee writes into an array passed to it: the forward's run changes what the
  adjoint reads later -- :func:`read_only_call` runs it with its arrays read-only (see
  opaque_calls.py, which picks the calls), so NumPy refuses the write;
* it changes an argument in a way read-only arrays do not stop (a list's or dict's item,
  an object's attribute): the trace would start from the changed values --
  :func:`refuse_written_arguments` compares the arguments before and after the trace;
* a value being differentiated flows through an object's attributes (``Box(x).loss(y)``):
  gradients here are arrays, numbers and containers of them, and an object is a leaf in
  which nothing can be marked -- a zero gradient -- :func:`refuse_objects_holding_values`
  (and, in forward mode, :func:`with_tangents`).
"""
import itertools
import types

from ...backend import cpu as _np  # (host arrays: only they have a writeable flag)
from ..tape.tape import Var
from ..tree import flatten
from .argument_writes import KNOWN_EXACT, own_attributes
from .resolve import _library
from .source import ArgumentsChanged, TransformError, WritesIntoArgument

__all__ = ["read_only_call", "float_leaf", "value_leaf", "argument_state", "refuse_written_arguments",
           "tracers_held", "refuse_written_tangents",
           "refuse_objects_holding_values", "with_tangents"]


def float_leaf(x):
    """A leaf this call is differentiated with respect to: floating point, traced or not
    (nested in another transform, the arguments are that transform's constants while the
    cotangent is its tracer: the derivative still depends on the cotangent)."""
    value = x.value if isinstance(x, Var) else x
    if type(value) in (float, complex):
        return True
    return getattr(getattr(value, "dtype", None), "kind", None) in ("f", "c") and hasattr(value, "shape")


def read_only_call(fn, *args, **kwargs):
    """``fn(*args, **kwargs)`` with the NumPy arrays among the arguments (and among the
    attributes of a bound method's object and of the objects passed) read-only while it
    runs. The forward lines run a callee they cannot read (see opaque_calls.py) as it
    is: a write into an argument there would change an array that the adjoint reads later
    as it was before (a saved operand), or that the callee's own derivative is traced
    from -- a wrong gradient, silently. NumPy refuses the write instead, and nothing
    changes. A method of an array, a list or another type of KNOWN_TYPES (the object of a
    method named like one of theirs is only known when it runs) is called as it is.
    (CuPy's arrays have no such flag: there only refuse_written_arguments sees the write,
    when the call's derivative is traced.)"""
    if type(getattr(fn, "__self__", None)) in KNOWN_EXACT:
        return fn(*args, **kwargs)
    leaves = flatten((args, kwargs))[0]
    held = [a for obj in [getattr(fn, "__self__", None)] + leaves for a in _held_by(obj)]
    held += _held_by_globals(fn)
    frozen = [a for a in leaves + held if isinstance(a, _np.ndarray) and a.flags.writeable]  # (memmaps,
    # masked arrays and matrices too: their writes are refused alike)
    frozen = list({id(a): a for a in frozen}.values())
    for a in frozen:
        a.flags.writeable = False
    try:
        return fn(*args, **kwargs)
    except ValueError as e:
        if frozen and "read-only" in str(e):
            raise WritesIntoArgument(_callee_name(fn), str(e)) from None
        raise
    finally:
        _writable_again(frozen)


def _held_by(obj, depth=0, seen=None):
    """The arrays an object holds in its attributes (and their lists, tuples and dicts, and
    the objects there, a few levels deep): ``self.buf *= 2`` or ``self.layers[0].w *= 2``
    writes into what the caller read as ``o.buf``."""
    attributes = None if depth > 3 or isinstance(obj, Var) else own_attributes(obj)
    seen = set() if seen is None else seen
    if attributes is None or id(obj) in seen:
        return []
    seen.add(id(obj))
    leaves = flatten(list(attributes.values()))[0]
    return [a for x in leaves for a in ([x] if not _has_attributes(x) else _held_by(x, depth + 1, seen))]


def _held_by_globals(fn, depth=0, seen=None):
    """The arrays a user function's globals and closure variables hold, now (and those of
    the user functions it names, two levels down): ``for a in L: a *= 2`` writes what
    ``L`` holds when it runs, which may be an array the caller read (argument_writes
    could only say UNKNOWN, ``L`` holding none when it read the source)."""
    fn = getattr(fn, "__func__", fn)  # (a bound method: its function)
    code = getattr(fn, "__code__", None)
    seen = set() if seen is None else seen
    if code is None or id(code) in seen or depth > 2 or _library(fn):
        return []  # (NumPy's, SciPy's, tracegrad's functions: their module's state is theirs)
    seen.add(id(code))
    scope = getattr(fn, "__globals__", {})
    values = [scope[n] for n in code.co_names if n in scope]
    for cell in getattr(fn, "__closure__", None) or ():
        try:
            values.append(cell.cell_contents)
        except ValueError:  # (an empty cell)
            pass
    found = []
    for v in values:
        if isinstance(v, types.FunctionType):
            found += _held_by_globals(v, depth + 1, seen)
        else:
            found += _held_in(v)
    return found


def _held_in(v, depth=0):
    """The arrays value ``v`` is or holds: as an item of a list, tuple or dict (the first
    _WALKED of each, a few levels deep: a global list of a million numbers is not walked
    at every call) or in an object's attributes (_held_by)."""
    if isinstance(v, (list, tuple, dict)):
        if depth > 3:
            return []
        items = v.values() if isinstance(v, dict) else v
        return [a for x in itertools.islice(items, _WALKED) for a in _held_in(x, depth + 1)]
    if _has_attributes(v):
        return _held_by(v)
    return [v]  # (an array, or a value that is none: the caller keeps arrays only)


_WALKED = 4096


def _writable_again(arrays):
    """Make ``arrays`` writeable again; a view only once its base is (NumPy's rule): in
    rounds, so the order they were frozen in does not matter."""
    while arrays:
        left = []
        for a in arrays:
            try:
                a.flags.writeable = True
            except ValueError:
                left.append(a)
        if len(left) == len(arrays):
            raise RuntimeError("could not make the arrays passed to a call writeable again")
        arrays = left


def _callee_name(fn):
    return getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn)


def refuse_objects_holding_values(fn, args, positions, outs, gs):
    """Refuse an object of the user's (a class's instance, a dataclass) whose attributes
    hold floating-point values where a gradient passes: an argument whose gradient is
    wanted (``Model(x).loss(y)``, ``t = Box(x); t.w``), or a result that a gradient
    reached (``Box(x) * y`` through NumPy's ``__array__``). Gradients here are arrays,
    numbers and the lists, tuples and dicts of them (the leaves of tree.flatten); an object
    is one leaf in which nothing could be marked, so what flowed into it would get a zero
    gradient, silently (the tape follows the values inside)."""
    for n, a in enumerate(args):
        if positions is None or n in positions:
            for x in flatten(a)[0]:
                if _holds_values(x, 0):
                    raise _object_error(f"argument {n} of {_callee_name(fn)}", x)
    for o, c in zip(outs, gs):
        if c is not None and _holds_values(o, 0):
            raise _object_error(f"the result of {_callee_name(fn)}, which a gradient reached,", o)


def _object_error(what, x):
    return TransformError(f"{what} is an object of class {type(x).__name__} whose attributes hold a value "
                          "being differentiated; the code written from the source carries gradients "
                          "through arrays, numbers, lists, tuples and dicts, not through an object's "
                          "attributes", construct="object holding a value being differentiated")


def value_leaf(x):
    """Whether leaf ``x`` is a value a gradient or tangent can follow: an array (NumPy's,
    CuPy's, a Tensor), a tracer or a number -- not an object of the user's."""
    return isinstance(x, (Var, int, float, complex)) or hasattr(x, "dtype")


def _holds_values(x, depth):
    """Whether ``x`` is an object (not an array, a number or a container) whose attributes,
    a few levels deep, hold a floating-point array, number or tracer."""
    if value_leaf(x) or not _has_attributes(x) or depth > 3:
        return False
    return any(isinstance(v, Var) or float_leaf(v) or _holds_values(v, depth + 1)
               for v in flatten(list(own_attributes(x).values()))[0])


def argument_state(fn, args):
    """What a write into ``fn``'s arguments (or its object's, for a bound method) changes,
    comparable with ``==``: their structure, which objects are their leaves, the values the
    tracers among them name (a write into a tracer gives it a new id: see
    tracer.take_over), Tensors' version counters, and the same of the attributes of the
    objects among them (``self.w = self.w * p``) -- a few levels deep. The second item
    keeps what the first names by ``id`` alive until the two are compared."""
    seen, keep = set(), []

    def state(value, depth):
        leaves, spec = flatten(value)
        keep.append(leaves)
        return spec, tuple(_leaf_state(x, depth, state, seen) for x in leaves)
    self = getattr(fn, "__self__", None)
    return (state(args, 0), state(self, 0) if _has_attributes(self) else None), keep


def _leaf_state(x, depth, state, seen):
    if isinstance(x, Var):
        return id(x), x.id
    version = getattr(x, "_version", None)
    if type(version) is int:  # (a Tensor: an in-place op bumps its counter)
        return id(x), version
    if depth < 3 and id(x) not in seen and _has_attributes(x):
        seen.add(id(x))
        return id(x), tuple((k, state(v, depth + 1)) for k, v in list(own_attributes(x).items()))
    return id(x), None


def _has_attributes(x):
    return own_attributes(x) is not None


def refuse_written_arguments(fn, before, after):
    """Refuse a callee whose trace changed one of its arguments in place (a write into an
    array, into a view of it, ``+=``, a list's or dict's item, an attribute of an object
    passed to it or of a method's object). The adjoint traces a call it cannot see into (a
    function passed as a value, a method) only now, from its arguments as the forward left
    them: the forward's run of the callee has already changed them, so the trace would
    start from the changed values -- a wrong gradient, where the tape's one trace of the
    whole function is right."""
    if before[0] != after[0]:
        raise ArgumentsChanged(_callee_name(fn))


def tracers_held(fn, args):
    """The tracers among ``fn``'s arguments, and among the attributes of the objects there
    and of a bound method's object (a few levels deep), each with the value it names: a
    write into a tracer gives it a new one (tracer.take_over)."""
    found, seen = set(), set()

    def walk(value, depth):
        for x in flatten(value)[0]:
            if isinstance(x, Var):
                found.add((id(x), x.id))
            elif depth < 3 and id(x) not in seen and _has_attributes(x):
                seen.add(id(x))
                walk(list(own_attributes(x).values()), depth + 1)
    walk(args, 0)
    walk(getattr(fn, "__self__", None), 0)
    return found


def refuse_written_tangents(fn, before, after):
    """Refuse a callee that, run in forward mode on tracers standing in for its arguments
    that carry a tangent, wrote into one (the tracer took the write, not the caller's
    array, which the lines after it read unwritten) or kept one in an argument or an
    object (``lst.append(p)``: a tracer left behind after the trace). ``before`` and
    ``after``: :func:`tracers_held` around the call. Nothing of the caller's was changed,
    so mode="auto" may run the tape instead; the callee's other effects (a counter in its
    object) are its own."""
    if before != after:
        raise TransformError(f"{_callee_name(fn)}, called from the function being differentiated, changes an "
                             "argument carrying a tangent in place or keeps it; the forward-mode code written "
                             "from the source runs that call on stand-ins for its arguments, which would take "
                             "the write (or be left behind) instead of the arrays that the lines after it read",
                             construct="in-place change of an argument")


def with_tangents(fn, out):
    """``out``, a callee's result in forward mode, if each of its leaves can carry a tangent
    (an array, a number, None); an object (a class's instance: ``o = Model(w)``) cannot."""
    for o in flatten(out)[0]:
        if not (o is None or value_leaf(o)):
            raise TransformError(f"{_callee_name(fn)} returns an object of class {type(o).__name__}, which "
                                 "carries no tangent in the forward-mode code written from the source",
                                 construct="object result")
    return out
