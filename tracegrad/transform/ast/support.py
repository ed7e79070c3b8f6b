"""What generated adjoint and tangent code calls at run time.

Gradients start out as ``None`` (no gradient yet: a zero that has no shape); the
helpers here accept it wherever an unknown-state gradient can reach them. Container
values (lists and tuples of arrays) have :class:`GradList` gradients, whose ``+`` is
elementwise, so that generated code can accumulate every gradient with ``+``.

Calls the AST path cannot write out as a rule's own expression (NumPy functions with
options, tracegrad functions, Tensor and ndarray methods, attributes such as ``x.T``)
are differentiated by :func:`call_vjp` / :func:`call_jvp`, which trace the one call onto
a tape (the tape path's machinery, cached per function and signature).
"""
import inspect
import operator
from collections import abc

import numpy as _np  # (Python complex numbers made NumPy scalars)
import types
import weakref

from ...backend import is_array, move, namespace_of
from ..api import _push, _with_phase, mark_leaf
from ..checks import check_output, split_aux
from .aliasing import check_unaliased  # noqa: F401  (called by generated code)
from ..tape.numpy_map.construct import standing_in_for
from ..tape.staged import Staged
from ..tape.sweeps import reverse
from ..tape.tape import Var
from ..tape.tracer import split_index
from ..tape.tracing import active_tape
from ..tree import flatten, unflatten
from .resolve import host_function
from .callee_checks import (argument_state, float_leaf, read_only_call,  # noqa: F401  (read_only_call:
                            refuse_objects_holding_values, refuse_written_arguments,  # generated code)
                            refuse_written_tangents, tracers_held,
                            value_leaf, with_tangents)
from .adapters import by_keyword, numbers_bound, without_zero_tangents  # noqa: F401  (by_keyword: generated code)
from .sequences import GradDict, GradList, add, any_sequence, as_grad, binop_grads, binop_tangent
from ...rules import TABLE

__all__ = ["GradList", "GradDict", "add", "part", "add_at", "take_at", "zero_at", "set_at", "copy_at",
           "old_entry", "restore_entry", "pop_grad", "push_grad", "call_vjp", "call_vjp_at", "call_jvp", "method",
           "attribute", "zero_tangent", "scalar_output", "unstar", "per_item", "star_jvp", "keys_of", "vjp_of",
           "jvp_at", "any_sequence", "binop_grads", "binop_tangent", "read_only_call"]

_broadcast_to = TABLE["broadcast_to"]
_kept_writes = TABLE["kept_writes"]
_where = TABLE["where"]
_index_put = TABLE["index_put"]
_sum_to = TABLE["sum_to"]
_zeros_like = TABLE["zeros_like"]


def part(g, k):
    """Element ``k`` of a container's gradient (None where there is none)."""
    if g is None or isinstance(g, (int, float)) and g == 0:
        return None
    if isinstance(g, dict):
        return g.get(k)
    if isinstance(g, (list, tuple)) and isinstance(k, int) and not -len(g) <= k < len(g):
        return None  # (a list's gradient may stop before its last items)
    return g[k]


def keys_of(d):
    """The keys of dict ``d``, as a list (``d.items()`` is read as ``[(k, d[k]) for k in
    keys_of(d)]``: a list of the values themselves, whose gradients reach ``d``)."""
    if not isinstance(d, dict):
        raise TypeError(f"AST mode reads .keys(), .values() and .items() of dicts, not of "
                        f"{type(d).__name__}; use mode='tape'")
    return list(d)


keys_of.constant_result = True  # (no derivative: see resolve.Resolver.callee)


def per_item(g, n):
    """The ``n`` items of a sequence's gradient (None where there is none)."""
    return [part(g, k) for k in range(n)]


def unstar(grads, sizes):
    """Per-argument gradients of a call with starred arguments, from its gradients per
    positional argument passed: ``sizes`` has, for each argument as written, None (one
    argument) or the length of a starred one (which gets a GradList)."""
    grads = tuple(grads) if grads is not None else ()
    out, k = [], 0
    for n in sizes:
        if n is None:
            out.append(grads[k] if k < len(grads) else None)
            k += 1
        else:
            out.append(GradList(grads[k:k + n]))
            k += n
    return tuple(out)


def add_at(dx, x, index, g):
    """``dx`` with ``g`` (the gradient of ``x[index]``) added at ``index``; repeated
    indices accumulate."""
    if g is None:
        return dx
    if isinstance(x, dict):
        out = GradDict(dx) if dx is not None else GradDict()
        out[index] = add(out.get(index), g)
        return out
    if isinstance(x, (list, tuple)):
        out = GradList(dx) if dx is not None else GradList()
        if len(out) > len(x):
            from .source import TransformError
            raise TransformError(f"the gradient of a list of {len(x)} elements has {len(out)} entries; "
                                 "use mode='tape'", construct="gradient of a list")
        out.extend([None] * (len(x) - len(out)))  # (a list's gradient may stop before its last items)
        if isinstance(index, slice):
            for k, gk in zip(range(*index.indices(len(x))), g):
                out[k] = add(out[k], gk)
        else:
            out[index] = add(out[index], g)
        return out
    if not value_leaf(x):
        from .source import TransformError  # (an object's __getitem__: Bag([x, y])[0])
        raise TransformError(f"a value being differentiated is indexed out of an object of class "
                             f"{type(x).__name__}; the code written from the source carries gradients "
                             "through arrays, lists, tuples and dicts", construct="index of an object")
    base = _zeros_like(x) if dx is None else dx
    structure, arrays = split_index(x, index)
    return _index_put(base, g, *arrays, index=structure, accumulate=True)


def take_at(dx, index, like):
    """The gradient of the value written by ``x[index] = v``: ``dx[index]`` summed down to
    the shape of ``v`` (None when ``dx`` is)."""
    if dx is None:
        return None
    if isinstance(dx, dict):
        return dx.get(index)
    if isinstance(dx, (list, tuple)):
        if isinstance(index, slice) and len(range(*index.indices(len(dx)))) != len(like):
            from .source import TransformError
            raise TransformError("a slice assignment that changes a list's length (its gradient "
                                 "would be shifted); use mode='tape'", construct="slice assignment to a list")
        return dx[index]
    g = dx[index]
    kept = _kept_at(dx, index)
    if kept is not None:  # a value overwritten at a repeated index gets nothing (NumPy: the last one stays)
        _refuse_repeats_on_a_device(dx, kept)
        g = _where(kept, g, 0.0)
    shape = getattr(like, "shape", ())
    return g if g.shape == tuple(shape) else _sum_to(g, shape=tuple(shape))


def _kept_at(x, index):
    """Which values ``x[index] = v`` keeps (the last at a repeated position), on ``x``'s
    device; None where the index holds no index array (nothing can repeat)."""
    structure, arrays = split_index(x, index)
    if not arrays:
        return None
    if is_array(x):  # (index arrays on x's device: split_index makes host ones)
        xp = namespace_of(x)
        arrays = [move(a, xp) if is_array(a) else a for a in arrays]
    return _kept_writes(*arrays, index=structure, shape=tuple(x.shape))


def _refuse_repeats_on_a_device(x, kept):
    """Raise where ``x[index] = v`` wrote one position twice on a device: the generated code
    runs the write itself, and CuPy leaves open which of the values stays (NumPy keeps the
    last), so no gradient could be sure to follow it. The tape writes the last value on
    every device (``mode="auto"`` takes it)."""
    if is_array(x) and getattr(namespace_of(x), "name", "cpu") != "cpu" and not bool(kept.all()):
        from .source import TransformError
        raise TransformError("`x[index] = v` writes one position more than once on a "
                             f"{namespace_of(x).name} device, where which value stays is left open "
                             "(the tape keeps the last one, as NumPy does)",
                             construct="write at a repeated index on a device")


def zero_at(dx, index):
    """``dx`` with zeros at ``index`` (the old value there was overwritten)."""
    if dx is None:
        return None
    if isinstance(dx, dict):
        out = GradDict(dx)
        out.pop(index, None)
        return out
    out = GradList(dx) if isinstance(dx, (list, tuple)) else dx.copy()
    if isinstance(out, GradList):
        for k in (range(*index.indices(len(out))) if isinstance(index, slice) else (index,)):
            out[k] = None
    else:
        out[index] = 0
    return out


def set_at(t, index, v):
    """The tangent of ``x`` after ``x[index] = v``: ``t`` with ``v``'s tangent (zeros for
    None) written at ``index``."""
    if isinstance(t, dict) or t is None:
        out = dict(t or {})
        out[index] = v
        return out
    if is_array(t) and getattr(namespace_of(t), "name", "cpu") != "cpu":
        kept = _kept_at(t, index)
        if kept is not None:
            _refuse_repeats_on_a_device(t, kept)
    out = list(t) if isinstance(t, list) else t.copy()  # (a list's tangents: concatenated as it is)
    out[index] = 0 if v is None and not isinstance(out, list) else v
    return out


def copy_at(x, index):
    """The value ``x[index]`` holds before it is overwritten (a copy, for arrays)."""
    if isinstance(x, dict) and index not in x:
        from .source import TransformError
        raise TransformError(f"a new key ({index!r}) is written into a dict the AST path did not "
                             "see made (an argument?), which its adjoint cannot undo", construct="dict write")
    old = x[index]
    return old.copy() if hasattr(old, "copy") and not isinstance(x, (list, tuple, dict)) else old


_MISSING = type("Missing", (), {"__repr__": lambda self: "<missing key>"})()


def old_entry(d, key):
    """What ``d[key]`` holds before it is written (a marker where the key is new)."""
    if isinstance(d, dict) and key not in d:
        return _MISSING
    return copy_at(d, key)


def restore_entry(d, key, old):
    """``d[key] = old`` -- or, where the key was new (see :func:`old_entry`), the key gone."""
    if old is _MISSING:
        del d[key]
    else:
        d[key] = old


def pop_grad(dlst, lst):
    """``(rest, last)``: the gradient of ``lst.append(v)`` splits into the list's and v's
    (``lst`` is the list after the append; a gradient that stops before its last element
    -- no gradient reached it -- gives v none)."""
    if dlst is None or not dlst:
        return dlst, None
    if len(dlst) < len(lst):
        return GradList(dlst), None
    rest = GradList(dlst[:len(lst) - 1])
    return rest, dlst[len(lst) - 1]


def push_grad(dlst, g, lst):
    """The gradient of ``v = lst.pop()``: the list's gradient (one entry per element of
    ``lst`` after the pop) with ``v``'s gradient ``g`` appended."""
    out = GradList(dlst) if dlst is not None else GradList()
    out.extend([None] * (len(lst) - len(out)))
    out.append(g)
    return out


def method(name):
    """The function ``lambda self, *a, **k: self.<name>(*a, **k)`` (one per name, so that
    its staged derivatives are cached)."""
    fn = _METHODS.get(name)
    if fn is None:
        def fn(self, *args, **kwargs):
            return getattr(self, name)(*args, **kwargs)
        fn.__name__ = fn.__qualname__ = name
        _METHODS[name] = fn
    return fn


def attribute(name):
    """The function reading attribute ``name`` (``x.T``), one per name."""
    fn = _ATTRS.get(name)
    if fn is None:
        fn = _ATTRS[name] = operator.attrgetter(name)
    return fn


_METHODS, _ATTRS = {}, {}


def _mark_float_leaves(tape, args, positions=None):
    """``(args, wrt, where)``: each floating-point leaf of ``args`` (of the arguments at
    ``positions``; all by default) replaced by a fresh alias (what this call is
    differentiated with respect to -- a list ``[-2, x]`` has one), the aliases, and for
    each one its (argument, leaf) position."""
    new_args, wrt, where = [], [], []
    for n, a in enumerate(args):
        if positions is not None and n not in positions:
            new_args.append(a)
            continue
        leaves, spec = flatten(a)
        for k, x in enumerate(leaves):
            if float_leaf(x):
                leaves[k] = mark_leaf(tape, x)
                wrt.append(leaves[k])
                where.append((n, k))
        new_args.append(unflatten(spec, leaves))
    return new_args, wrt, where


def _pullback_builder(fn, positions=None):
    def build(targs, tkwargs, kinds):
        tape = active_tape()
        g, args = targs[0], targs[1:]
        marked, wrt, where = _mark_float_leaves(tape, args, positions)
        start = len(tape.eqns)
        ids = [v.id for v in wrt]
        before = argument_state(fn, marked)
        out = _not_lazy(fn, fn(*marked, **tkwargs))
        refuse_written_arguments(fn, before, argument_state(fn, marked))  # (first: see ArgumentsChanged)
        wrt = [tape.current(v, i) for v, i in zip(wrt, ids)]
        outs, _ = flatten(out)
        gs = aligned_cotangent(out, g)
        refuse_objects_holding_values(fn, args, positions, outs, gs)
        keep = [(o, c) for o, c in zip(outs, gs) if isinstance(o, Var) and c is not None]
        cts = _with_phase(tape, "g", reverse, tape.eqns[start:], wrt,  # (defer: see undefined.py)
                          [o for o, _ in keep], [c for _, c in keep], positions is None)
        per_leaf = {}
        for (n, k), ct, v in zip(where, cts, wrt):
            per_leaf[n, k] = ct if ct is not None else _zeros_like(v)
        result = []
        for n, a in enumerate(args):
            leaves, spec = flatten(a)
            if not any((n, k) in per_leaf for k in range(len(leaves))):
                result.append(None)
            else:
                result.append(unflatten(spec, [per_leaf.get((n, k)) for k in range(len(leaves))]))
        result = tuple(result)
        return result, _kinds(result, kinds)
    return build


def aligned_cotangent(out, g):
    """The cotangent ``g`` of ``out`` as one entry per leaf of ``out`` (None: zero). A
    generated adjoint's gradient of a list or tuple may hold None for a whole element (a
    list of arrays among them), or stop before its last elements, or be one array for a
    list of numbers: flattened on its own, its leaves would pair with the wrong ones."""
    n = len(flatten(out)[0])
    if g is None:
        return [None] * n
    if isinstance(out, (list, tuple)):
        if not isinstance(g, (list, tuple)):
            if tuple(getattr(g, "shape", ()))[:1] != (len(out),):
                raise _cotangent_error(out, g)
            g = [g[k] for k in range(len(out))]
        if len(g) > len(out):
            raise _cotangent_error(out, g)
        entries = list(g) + [None] * (len(out) - len(g))
        return [c for o, e in zip(out, entries) for c in aligned_cotangent(o, e)]
    if isinstance(out, dict):
        if not isinstance(g, dict):
            raise _cotangent_error(out, g)
        return [c for k in out for c in aligned_cotangent(out[k], g.get(k))]
    if isinstance(g, (list, tuple, dict)):
        raise _cotangent_error(out, g)
    return [g]


def _cotangent_error(out, g):
    from .source import TransformError
    return TransformError(f"the gradient of a {type(out).__name__} result is a {type(g).__name__} of "
                          "another structure; use mode='tape'", construct="gradient of a list")


def _kinds(result, kinds):
    if kinds is None:
        return None
    first = next((k for k in flatten(kinds)[0] if k == "tensor"), "array")
    leaves, spec = flatten(result)
    return unflatten(spec, [first if isinstance(v, Var) else None for v in leaves])


_PULLBACKS, _PUSHES = {}, {}   # id(fn) -> (fn or a weak reference to it, its Staged)


def _staged(cache, fn, builder, suffix, variant=None):
    """The staged derivative of ``fn`` (traced once per signature), cached per function.
    A function of the user's (a callable object, a ``functools.partial``, a closure) is
    held weakly: its Staged calls it through a weak reference, so that the cache keeps
    neither it nor what it captures alive. Bound methods (made anew at each attribute
    read, so cached per object and function) and objects that take no weak reference
    (NumPy's functions) are held."""
    bound = _bound(fn)
    key = ("method", id(fn.__self__), getattr(fn, "__func__", fn.__name__)) if bound else id(fn)
    key = (key, variant)  # (a variant of the builder: the positions a pullback differentiates)
    entry = cache.get(key)
    if entry is not None:
        held, staged = entry
        if held is fn or (bound and held == fn) or (type(held) is weakref.ref and held() is fn):
            return staged
    host = _constructor(host_function(fn))  # (a CuPy function the AST path rebound NumPy's to)
    name = f"{getattr(host, '__name__', 'f')}_{suffix}".replace("<", "").replace(">", "")
    held = target = None
    if host is fn and not bound:
        try:
            held = weakref.ref(fn, lambda r: cache.get(key, (None,))[0] is r and cache.pop(key, None))
            target = _through(held, fn)
        except TypeError:  # (no weak references to it)
            pass
    if held is None:
        held, target = fn, host
    staged = Staged(target, builder(target) if variant is None else builder(target, variant), name)
    cache[key] = (held, staged)
    return staged


def _constructor(fn):
    """NumPy's functions that the tape replaces while it records (the array constructors,
    ``zeros``/``full``..., reductions given lists: see the tape's numpy_map.construct),
    looked up when called: the function objects read before are NumPy's own, which would
    make a constant of a traced value."""
    place = standing_in_for(fn)
    if place is None:
        return fn
    module, name = place

    def construct(*args, **kwargs):
        return getattr(module, name)(*args, **kwargs)
    construct.__name__ = construct.__qualname__ = name
    return construct


def _bound(fn):
    self = getattr(fn, "__self__", None)
    return isinstance(fn, (types.MethodType, types.BuiltinMethodType)) and self is not None \
        and not isinstance(self, types.ModuleType)


def _through(ref, fn):
    """A function calling what weak reference ``ref`` refers to, with ``fn``'s name and
    parameter names (for the tape's input names) but none of its default values."""
    def call(*args, **kwargs):
        return ref()(*args, **kwargs)
    call.reads_through = ref  # (what the tape's replay checks: fn's reads, see reads.py)
    call.__name__ = call.__qualname__ = getattr(fn, "__name__", type(fn).__name__)
    try:
        params = inspect.signature(fn).parameters.values()
        call.__signature__ = inspect.Signature([p.replace(default=p.empty, annotation=p.empty)
                                                for p in params])
    except (TypeError, ValueError):
        pass
    return call


def _not_lazy(fn, value):
    """``value``, unless it (or an argument: see call_vjp) is an iterator or a dict view: its
    values are drawn later, where no derivative follows them (``map(f, xs)``,
    ``zip(a, b)``, ``d.values()``): refused, never differentiated as a constant."""
    if isinstance(value, (abc.Iterator, abc.MappingView)):
        from .source import TransformError
        raise TransformError(f"{getattr(fn, '__name__', fn)} takes or gives a lazy iterator "
                             f"({type(value).__name__}), whose values no derivative can follow; "
                             "make a list of it first (with a list comprehension)",
                             construct="iterator")
    return value


def call_vjp(g, fn, *args, **kwargs):
    """One gradient per positional argument of ``fn(*args, **kwargs)`` for output
    gradient ``g`` (None for arguments that take none)."""
    return call_vjp_at(None, g, fn, *args, **kwargs)


def call_vjp_at(positions, g, fn, *args, **kwargs):
    """``call_vjp`` differentiating the positional arguments at ``positions`` only (None:
    all): the others are constants, which may have no derivative (a Bessel function's
    order); their gradients are None."""
    for a in args:
        _not_lazy(fn, a)
    if g is None:
        return (None,) * len(args)
    if isinstance(g, GradList):
        g = list(g)
    positions = None if positions is None else tuple(positions)
    fn, kwargs = numbers_bound(fn, kwargs)
    grads = _staged(_PULLBACKS, fn, _pullback_builder, "vjp", positions)(g, *_traceable(args), **kwargs)
    return tuple(as_grad(d) for d in grads)  # (a list's gradient adds elementwise)


def _traceable(args):
    """``args`` with Python complex numbers made NumPy ones (which get tracers, as Python
    floats do; a Python complex would be a constant of the trace)."""
    if not any(type(x) is complex for x in flatten(args)[0]):
        return args
    leaves, spec = flatten(args)
    return unflatten(spec, [_np.complex128(x) if type(x) is complex else x for x in leaves])


def _push_builder(fn):
    def build(targs, tkwargs, kinds):
        tangents, args = targs[0], targs[1:]
        flat, slots, diff, tans = [], [], [], []
        for n, a in enumerate(args):
            leaves, spec = flatten(a)
            flat.append((leaves, spec))
            if tangents[n] is None:
                continue
            tl = flatten(tangents[n])[0]
            if len(tl) != len(leaves):
                from .source import TransformError
                raise TransformError(f"the tangent of argument {n} of {getattr(fn, '__name__', fn)} "
                                     "does not have the argument's structure", construct="tangent")
            for k, (x, t) in enumerate(zip(leaves, tl)):  # (only floating-point leaves move)
                if t is not None and (type(x) in (float, complex) or float_leaf(x)):
                    slots.append((n, k))
                    diff.append(x)
                    tans.append(t)

        def partial(*values):
            new = [list(leaves) for leaves, _ in flat]
            for (n, k), v in zip(slots, values):
                new[n][k] = v
            called = [unflatten(spec, leaves) for leaves, (_, spec) in zip(new, flat)]
            before = tracers_held(fn, called)
            out = fn(*called, **tkwargs)
            refuse_written_tangents(fn, before, tracers_held(fn, called))
            return with_tangents(fn, out)
        out, tout = _push(partial, tuple(diff) + tuple(tans), tuple(range(len(diff)))) if diff else \
            (fn(*args, **tkwargs), None)
        _not_lazy(fn, out)
        result = (out, tout)
        return result, _kinds(result, kinds)
    return build


def star_jvp(jvp_fn, fn, args, tangents, **kwargs):
    """``fn(*args, **kwargs)`` through its forward-mode version ``jvp_fn`` (which takes one
    tangent per positional parameter after them), for a call whose arguments are matched
    to the parameters only now (``*args``, ``**kwargs``, defaults): parameters given by
    keyword or left to their defaults get no tangent (the transformation refused a value
    being differentiated passed by keyword)."""
    params = list(inspect.signature(fn).parameters.values())
    bound = inspect.signature(fn).bind(*args, **kwargs)
    bound.apply_defaults()
    positional = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    values = [bound.arguments[p] for p in positional]
    given = list(tangents[:len(args)]) + [None] * (len(values) - len(args))
    tans = [zero_tangent(v) if t is None else t for v, t in zip(values, given)]
    rest = _keyword_values(params, bound)
    return jvp_fn(*values, *tans, **rest)


def _positions(positions, n):
    return tuple(sorted({p % n if n else p for p in positions}))


def vjp_of(fn, positions):
    """The pullback of user function ``fn`` with respect to its positional arguments
    ``positions`` (known when it runs: see activity.star_positions), giving one gradient
    per positional argument passed (None for the others)."""
    from .driver import adjoint

    def pull(dz, *args, **kwargs):
        where = _positions(positions, len(args))
        gen = adjoint(fn, where, f"d{getattr(fn, '__name__', 'f')}", internal=True)
        out = [None] * len(args)
        for p, g in zip(where, gen.fn(dz, *args, **kwargs)):
            out[p] = g
        return tuple(out)
    return pull


def jvp_at(fn, positions, args, tangents, **kwargs):
    """``(fn(*args, **kwargs), its tangent)`` through ``fn``'s forward-mode version with
    respect to positional arguments ``positions`` only (see :func:`vjp_of`)."""
    from .driver import tangents as forward_version
    params = list(inspect.signature(fn).parameters.values())
    bound = inspect.signature(fn).bind(*args, **kwargs)
    bound.apply_defaults()
    names = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    values = [bound.arguments[p] for p in names]
    where = _positions(positions, len(args))
    gen = forward_version(fn, f"{getattr(fn, '__name__', 'f')}_jvp", where)
    tans = [tangents[p] if p < len(tangents) and tangents[p] is not None else zero_tangent(values[p])
            for p in where]
    rest = _keyword_values(params, bound)
    return gen.fn(*values, *tans, **rest)


def call_jvp(tangents, fn, *args, **kwargs):
    """``(fn(*args, **kwargs), its tangent)`` for one tangent (or None) per positional
    argument."""
    for a in args:
        _not_lazy(fn, a)
    fn, kwargs = numbers_bound(fn, kwargs)
    push = _staged(_PUSHES, fn, _push_builder, "jvp")
    try:
        return push(tuple(tangents), *_traceable(args), **kwargs)
    except NotImplementedError:  # (a rule without this derivative: of an argument whose
        fewer = without_zero_tangents(tangents)  # tangent is zero, it is not needed)
        if fewer is None:
            raise
        return push(fewer, *_traceable(args), **kwargs)


def scalar_output(value, dout, has_aux=False, holomorphic=False):
    """The seed of the output gradient, once the output is known to be one real number
    (with ``has_aux``: a pair whose first element is; with ``holomorphic``: one complex
    number): ``dout`` in the output's shape."""
    out = split_aux(value, "grad")[0] if has_aux else value
    check_output(out, "grad", holomorphic)
    shape = tuple(getattr(out, "shape", ()))
    return dout if not shape else _broadcast_to(dout, shape=shape)


def zero_tangent(x):
    """The tangent of a value that does not depend on the inputs: zeros like it (None
    for values that are not floating point, which take no tangent)."""
    if isinstance(x, (list, tuple)):
        return [zero_tangent(v) for v in x]
    if isinstance(x, dict):
        return {k: zero_tangent(v) for k, v in x.items()}
    dtype = getattr(x, "dtype", None)
    if dtype is None:
        return 0.0 if isinstance(x, (int, float)) and not isinstance(x, bool) else None  # (an int: 0.0)
    return _zeros_like(x) if getattr(dtype, "kind", "f") in "fc" else None


def _keyword_values(params, bound):
    """The keyword-only and ``**kwargs`` values of a bound call (by name)."""
    rest = {}
    for p in params:
        if p.kind is p.KEYWORD_ONLY:
            rest[p.name] = bound.arguments[p.name]
        elif p.kind is p.VAR_KEYWORD:
            rest.update(bound.arguments.get(p.name, {}))
    return rest
