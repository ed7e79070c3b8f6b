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
import types
import weakref

from ..api import _push, _with_phase, mark_leaf
from ..checks import check_output, split_aux
from .aliasing import check_unaliased  # noqa: F401  (called by generated code)
from ..tape.staged import Staged
from ..tape.sweeps import reverse
from ..tape.tape import Var
from ..tape.tracer import split_index
from ..tape.tracing import active_tape
from ..tree import flatten, unflatten
from .resolve import host_function
from ...rules import TABLE

__all__ = ["GradList", "add", "part", "add_at", "take_at", "zero_at", "set_at", "copy_at", "pop_grad",
           "push_grad", "call_vjp", "call_jvp", "method", "attribute", "zero_tangent",
           "scalar_output"]

_broadcast_to = TABLE["broadcast_to"]
_index_put = TABLE["index_put"]
_sum_to = TABLE["sum_to"]
_zeros_like = TABLE["zeros_like"]


class GradList(list):
    """The gradient of a list or tuple: one gradient (or None) per element; ``+`` adds
    elementwise and treats None as zero."""

    def __add__(self, other):
        if other is None or other == 0:
            return self
        return GradList(add(a, b) for a, b in zip(self, other))

    __radd__ = __add__


def add(a, b):
    """``a + b`` where either may be None (no gradient)."""
    if a is None:
        return b
    if b is None:
        return a
    return a + b


def part(g, k):
    """Element ``k`` of a container's gradient (None where there is none)."""
    if g is None or isinstance(g, (int, float)) and g == 0:
        return None
    return g[k]


def add_at(dx, x, index, g):
    """``dx`` with ``g`` (the gradient of ``x[index]``) added at ``index``; repeated
    indices accumulate."""
    if g is None:
        return dx
    if isinstance(x, (list, tuple)):
        out = GradList(dx) if dx is not None else GradList([None] * len(x))
        if isinstance(index, slice):
            for k, gk in zip(range(*index.indices(len(x))), g):
                out[k] = add(out[k], gk)
        else:
            out[index] = add(out[index], g)
        return out
    base = _zeros_like(x) if dx is None else dx
    structure, arrays = split_index(x, index)
    return _index_put(base, g, *arrays, index=structure, accumulate=True)


def take_at(dx, index, like):
    """The gradient of the value written by ``x[index] = v``: ``dx[index]`` summed down to
    the shape of ``v`` (None when ``dx`` is)."""
    if dx is None:
        return None
    if isinstance(dx, GradList):
        return dx[index]
    g = dx[index]
    shape = getattr(like, "shape", ())
    return g if g.shape == tuple(shape) else _sum_to(g, shape=tuple(shape))


def zero_at(dx, index):
    """``dx`` with zeros at ``index`` (the old value there was overwritten)."""
    if dx is None:
        return None
    out = GradList(dx) if isinstance(dx, GradList) else dx.copy()
    if isinstance(out, GradList):
        out[index] = None
    else:
        out[index] = 0
    return out


def set_at(t, index, v):
    """The tangent of ``x`` after ``x[index] = v``: ``t`` with ``v``'s tangent (zeros for
    None) written at ``index``."""
    out = GradList(t) if isinstance(t, list) else t.copy()
    out[index] = 0 if v is None and not isinstance(out, list) else v
    return out


def copy_at(x, index):
    """The value ``x[index]`` holds before it is overwritten (a copy, for arrays)."""
    old = x[index]
    return old.copy() if hasattr(old, "copy") and not isinstance(x, (list, tuple)) else old


def pop_grad(dlst):
    """``(rest, last)``: the gradient of ``lst.append(v)`` splits into the list's and v's."""
    if dlst is None or not dlst:
        return dlst, None
    rest = GradList(dlst[:-1])
    return rest, dlst[-1]


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


def _float_leaf(x):
    value = x.value if isinstance(x, Var) else None
    dtype = getattr(value, "dtype", None)
    return dtype is not None and getattr(dtype, "kind", "") in "fc"


def _mark_float_leaves(tape, args):
    """``(args, wrt, where)``: each floating-point tracer among the leaves of ``args``
    replaced by a fresh alias (what this call is differentiated with respect to -- a list
    ``[-2, x]`` has one), the aliases, and for each one its (argument, leaf) position."""
    new_args, wrt, where = [], [], []
    for n, a in enumerate(args):
        leaves, spec = flatten(a)
        for k, x in enumerate(leaves):
            if _float_leaf(x):
                leaves[k] = mark_leaf(tape, x)
                wrt.append(leaves[k])
                where.append((n, k))
        new_args.append(unflatten(spec, leaves))
    return new_args, wrt, where


def _pullback_builder(fn):
    def build(targs, tkwargs, kinds):
        tape = active_tape()
        g, args = targs[0], targs[1:]
        marked, wrt, where = _mark_float_leaves(tape, args)
        start = len(tape.eqns)
        ids = [v.id for v in wrt]
        out = fn(*marked, **tkwargs)
        wrt = [tape.current(v, i) for v, i in zip(wrt, ids)]
        outs, _ = flatten(out)
        gs = flatten(g)[0]
        keep = [(o, c) for o, c in zip(outs, gs) if isinstance(o, Var) and c is not None]
        cts = _with_phase(tape, "g", reverse, tape.eqns[start:], wrt,
                          [o for o, _ in keep], [c for _, c in keep])
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


def _kinds(result, kinds):
    if kinds is None:
        return None
    first = next((k for k in flatten(kinds)[0] if k == "tensor"), "array")
    leaves, spec = flatten(result)
    return unflatten(spec, [first if isinstance(v, Var) else None for v in leaves])


_PULLBACKS, _PUSHES = {}, {}   # id(fn) -> (fn or a weak reference to it, its Staged)


def _staged(cache, fn, builder, suffix):
    """The staged derivative of ``fn`` (traced once per signature), cached per function.
    A function of the user's (a callable object, a ``functools.partial``, a closure) is
    held weakly: its Staged calls it through a weak reference, so that the cache keeps
    neither it nor what it captures alive. Bound methods (made anew at each attribute
    read, so cached per object and function) and objects that take no weak reference
    (NumPy's functions) are held."""
    bound = _bound(fn)
    key = ("method", id(fn.__self__), getattr(fn, "__func__", fn.__name__)) if bound else id(fn)
    entry = cache.get(key)
    if entry is not None:
        held, staged = entry
        if held is fn or (bound and held == fn) or (type(held) is weakref.ref and held() is fn):
            return staged
    host = host_function(fn)  # (a CuPy function the AST path rebound NumPy's to)
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
    staged = Staged(target, builder(target), name)
    cache[key] = (held, staged)
    return staged


def _bound(fn):
    self = getattr(fn, "__self__", None)
    return isinstance(fn, (types.MethodType, types.BuiltinMethodType)) and self is not None \
        and not isinstance(self, types.ModuleType)


def _through(ref, fn):
    """A function calling what weak reference ``ref`` refers to, with ``fn``'s name and
    parameter names (for the tape's input names) but none of its default values."""
    def call(*args, **kwargs):
        return ref()(*args, **kwargs)
    call.__name__ = call.__qualname__ = getattr(fn, "__name__", type(fn).__name__)
    try:
        params = inspect.signature(fn).parameters.values()
        call.__signature__ = inspect.Signature([p.replace(default=p.empty, annotation=p.empty)
                                                for p in params])
    except (TypeError, ValueError):
        pass
    return call


def call_vjp(g, fn, *args, **kwargs):
    """One gradient per positional argument of ``fn(*args, **kwargs)`` for output
    gradient ``g`` (None for arguments that take none)."""
    if g is None:
        return (None,) * len(args)
    if isinstance(g, GradList):
        g = list(g)
    return _staged(_PULLBACKS, fn, _pullback_builder, "vjp")(g, *args, **kwargs)


def _push_builder(fn):
    def build(targs, tkwargs, kinds):
        tangents, args = targs[0], targs[1:]
        nums = [n for n, t in enumerate(tangents) if t is not None]
        sub = [args[n] for n in nums]

        def partial(*diff):
            full = list(args)
            for n, d in zip(nums, diff):
                full[n] = d
            return fn(*full, **tkwargs)
        out, tout = _push(partial, tuple(sub) + tuple(tangents[n] for n in nums)) if nums else \
            (fn(*args, **tkwargs), None)
        result = (out, tout)
        return result, _kinds(result, kinds)
    return build


def call_jvp(tangents, fn, *args, **kwargs):
    """``(fn(*args, **kwargs), its tangent)`` for one tangent (or None) per positional
    argument."""
    return _staged(_PUSHES, fn, _push_builder, "jvp")(tuple(tangents), *args, **kwargs)


def scalar_output(value, dout, has_aux=False):
    """The seed of the output gradient, once the output is known to be one real number
    (with ``has_aux``: a pair whose first element is): ``dout`` in the output's shape."""
    out = split_aux(value, "grad")[0] if has_aux else value
    check_output(out, "grad")
    shape = tuple(getattr(out, "shape", ()))
    return dout if not shape else _broadcast_to(dout, shape=shape)


def zero_tangent(x):
    """The tangent of a value that does not depend on the inputs: zeros like it (None
    for values that are not floating point, which take no tangent)."""
    if isinstance(x, (list, tuple)):
        return [zero_tangent(v) for v in x]
    dtype = getattr(x, "dtype", None)
    if dtype is None:
        return 0.0 if isinstance(x, float) else None
    return _zeros_like(x) if getattr(dtype, "kind", "f") in "fc" else None
