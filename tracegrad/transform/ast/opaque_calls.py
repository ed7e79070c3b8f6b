"""Calls the forward lines run without reading the callee, made to run it read-only.

The adjoint reads the forward's arrays after the forward has run: a saved operand of a
product, the arguments a callee's derivative is traced from (support.call_vjp_at). A
callee that writes into an array passed to it would change them under the adjoint, which
would then differentiate values other than the ones the forward computed with -- a wrong
gradient, without an error. For the callees the AST path reads (a user function it
transforms, or whose source it reads: argument_writes.py) such a write is
refused before anything runs. The others are only known when they run: a function passed
as a value (``def f(x, h=helper)``), an object's method (``model.loss(x)``), a callable
object or ``functools.partial``, a class's constructor. Their forward line becomes
``read_only_call(h, x)``: the arrays passed are read-only while the callee runs, so a
write raises (support.WritesIntoArgument) instead of changing them, and ``mode="auto"``
takes the tape, which follows the write.

NumPy's, SciPy's, tracegrad's and Python's own functions, and the methods of arrays,
lists, dicts and the other built-in types, are known not to write into their arguments
(the in-place ones -- ``np.copyto``, ``x.fill``, ``lst.append`` -- are seen by name
elsewhere) and run as written. A method named like one of theirs is taken for theirs only
where its object surely is one (_kinds): a differentiated parameter, a name bound
only to NumPy's results, to arithmetic on such values or to literals, or a global
holding one. Any other object -- a parameter not differentiated, ``m = Model()``, a
global model, a dict's item -- may be a user's whose ``m.sum(y)`` writes into ``y``: that
call runs read-only too (at no cost beyond a type check when the object is an array after
all). In forward mode only the function's own lines are looked at (``only``).
"""
import ast

from ...backend import cpu as _cpu  # (host-side type checks only)
from .argument_writes import KNOWN_EXACT, UNKNOWN, argument_writes, known_callable, known_method
from .nograd import _made_by_library, _walk
from .resolve import CONSTANT, Direct, User, _library

__all__ = ["guard_opaque_calls"]


def guard_opaque_calls(stmts, resolver, arrays=(), params=(), only=None):
    """Rewrite, in place, each ANF line of ``stmts`` (``t = h(x)``, ``h(x)``) whose callee
    cannot be read (see the module docstring) to ``t = read_only_call(h, x)``. ``arrays``:
    names that hold arrays (or lists, tuples and dicts of them) where they are not rebound:
    the parameters being differentiated; ``params``: all the parameters; ``only``: the ids
    of the statements to look at (forward mode's lines of the function itself, not those
    the transformation wrote between them)."""
    made = _made_by_library(stmts, resolver)
    kinds = _kinds(stmts, resolver, set(arrays) | made, params)
    for s in _walk(stmts):
        if only is not None and id(s) not in only:
            continue
        call = s.value if isinstance(s, (ast.Assign, ast.Expr)) else None
        if isinstance(call, ast.Call) and _opaque(call, resolver, made, kinds):
            helper = ast.Name(id="read_only_call", ctx=ast.Load())
            helper._helper = True  # (a support function: see driver.render)
            s.value = ast.copy_location(ast.Call(func=helper, args=[call.func] + call.args,
                                                 keywords=call.keywords), call)


def _opaque(call, resolver, made, kinds):
    f = call.func
    if isinstance(f, ast.Name) and f.id in made:
        return False  # (a function NumPy's or tracegrad's made: tracegrad.grad(h))
    ok, obj = resolver.value(f)
    if not ok:
        if isinstance(f, ast.Attribute):  # a method of a value (its object's arrays too)
            return not (known_method(f.attr) and _kind(f.value, resolver, kinds) is not None)
        return bool(call.args or call.keywords)  # a local name or a parameter holding a function
    if not (call.args or call.keywords):
        return False  # (no argument to write into; a global it writes: argument_writes)
    callee = resolver.callee(call)
    if callee is CONSTANT or isinstance(callee, Direct):
        return False
    if isinstance(callee, User):  # (a write it surely makes is refused: driver.py)
        return argument_writes(callee.fn) == UNKNOWN
    return not known_callable(obj)


ARRAY, PLAIN = "array", "plain"  # an array (its items and views too); a built-in value (its items unknown)

_ARRAY_ATTRIBUTES = {"T", "mT", "real", "imag", "flat", "shape", "strides", "dtype"}


def _kinds(body, resolver, arrays, params=()):
    """``{name: ARRAY or PLAIN}`` for the local names of ``body`` (and ``arrays``, given as
    arrays) whose every binding surely gives an array -- arithmetic on known values, a
    call of NumPy's or tracegrad's, an array's method, an index into an array -- or at
    least a built-in value (a literal, a comprehension, a call of a built-in type):
    flow-insensitive, the largest assignment consistent with all the bindings. ``params``
    not in ``arrays`` come in holding anything."""
    bound = {p: [None] for p in params if p not in arrays}
    for s in _walk(body):
        if isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name):
            bound.setdefault(s.targets[0].id, []).append(s.value)
            continue
        if isinstance(s, ast.AugAssign) and isinstance(s.target, ast.Name):  # m += v: m.__iadd__(v)
            bound.setdefault(s.target.id, []).append(ast.BinOp(left=s.target, op=s.op, right=s.value))
            continue
        if isinstance(s, ast.Assign):
            heads = s.targets  # (unpacking: what each target gets is not followed)
        elif isinstance(s, (ast.For, ast.AnnAssign, ast.AugAssign)):
            heads = [s.target]
        elif isinstance(s, ast.With):
            heads = [i.optional_vars for i in s.items if i.optional_vars is not None]
        else:
            heads = []
        for h in heads:
            for n in ast.walk(h):
                if isinstance(n, ast.Name):
                    bound.setdefault(n.id, []).append(None)
    for n in ast.walk(ast.Module(body=list(body), type_ignores=[])):  # (x := v inside an expression)
        if isinstance(n, ast.NamedExpr):
            bound.setdefault(n.target.id, []).append(None)
    kinds = dict.fromkeys(arrays, ARRAY)
    kinds.update(dict.fromkeys(bound, ARRAY))
    while True:
        changed = False
        for name, values in bound.items():
            if name not in kinds:
                continue
            found = [None if v is None else _kind(v, resolver, kinds) for v in values]
            if name in arrays:
                found.append(ARRAY)
            kind = _weakest(found)
            if kind != kinds[name]:
                changed = True
                if kind is None:
                    del kinds[name]
                else:
                    kinds[name] = kind
        if not changed:
            return kinds


def _weakest(found):
    return None if None in found else PLAIN if PLAIN in found else ARRAY


# Python's calls whose results are surely of a built-in type (not max, getattr, next...,
# which hand back what they are given)
_BUILT_IN_RESULTS = {int, float, complex, bool, str, bytes, list, tuple, dict, set, frozenset, len, range,
                     sorted, repr, isinstance, round, divmod, hash, id}


def _kind(v, resolver, kinds):
    """ARRAY, PLAIN or None (not known) for what expression ``v`` gives (see _kinds)."""
    if isinstance(v, (ast.BinOp, ast.UnaryOp, ast.Compare)):  # (of known operands: a user's
        operands = [v.left, v.right] if isinstance(v, ast.BinOp) else [v.operand] if isinstance(
            v, ast.UnaryOp) else [v.left] + v.comparators  # operator could give anything)
        return ARRAY if all(_kind(o, resolver, kinds) is not None for o in operands) else None
    if isinstance(v, ast.BoolOp):  # (one of its operands)
        return _weakest([_kind(o, resolver, kinds) for o in v.values])
    if isinstance(v, (ast.Constant, ast.List, ast.Tuple, ast.Dict, ast.Set, ast.ListComp, ast.DictComp,
                      ast.SetComp, ast.JoinedStr)):
        return PLAIN
    if isinstance(v, ast.Name) and v.id in kinds:
        return kinds[v.id]
    if isinstance(v, ast.Attribute) and v.attr in _ARRAY_ATTRIBUTES:
        return ARRAY if _kind(v.value, resolver, kinds) == ARRAY else None
    if isinstance(v, ast.Subscript):  # (an array's items; a list's or dict's could be anything)
        return ARRAY if _kind(v.value, resolver, kinds) == ARRAY else None
    if isinstance(v, ast.IfExp):
        return _weakest([_kind(v.body, resolver, kinds), _kind(v.orelse, resolver, kinds)])
    if isinstance(v, ast.Call):
        f = v.func
        if isinstance(f, ast.Attribute) and known_method(f.attr) and _kind(f.value, resolver, kinds) == ARRAY:
            return ARRAY  # x.reshape(-1), x.sum() (a list's or dict's get, pop... hand back an item)
        ok, obj = resolver.value(f)
        if ok and _library(obj):
            return ARRAY
        try:
            return PLAIN if ok and obj in _BUILT_IN_RESULTS else None
        except TypeError:  # (unhashable)
            return None
    if isinstance(v, (ast.Name, ast.Attribute)):  # a free name, a module's attribute
        ok, obj = resolver.value(v)
        if ok and (type(obj) is _ndarray or isinstance(obj, _np_generic)):
            return ARRAY
        if ok and (type(obj) in KNOWN_EXACT or _library(obj)):
            return PLAIN  # (a ufunc, a Generator: their methods are known too)
    return None


_ndarray, _np_generic = _cpu.ndarray, _cpu.generic
