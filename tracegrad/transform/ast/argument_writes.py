"""Whether a user function writes into its arguments, read from its source.

A function the AST path calls writes into the caller's arrays if it changes a parameter
in place: ``p[i] = v``, ``p += v``, ``p.append(v)``, or the same through a name bound to
a parameter or to a view of one (``u = np.expand_dims(p[:, None], 0); u *= v``) -- or
into a global or closure variable's array (``G[0] = 5``), or an array a global list,
dict or object holds (``L[0] *= 2``, ``M.buf[0] = 5``, ``w = CFG.get("w"); w *= 2``),
which the caller may have read. The caller's generated code would not follow such a
write (see driver.py, which refuses these callees). The reading is flow-insensitive and
conservative (a parameter rebound first still counts), and follows the parameters into
the functions they are passed to:

* ``WRITES``: a write, here or in a user function called with a parameter;
* ``NO_WRITES``: none -- every call given a parameter is NumPy's, tracegrad's, Python's,
  or a user function that writes none either;
* ``UNKNOWN``: a parameter is passed to a call that cannot be read (a function passed as
  a value, an object's method), a parameter's attribute is changed (``p.w *= v``: an
  array it holds, or a number rebound), or a write goes through what a global list, dict
  or object holds while it holds no array (``for a in L: a *= 2`` with ``L = []`` then:
  filled later, what it holds is what the write reaches): the caller runs it with its
  arrays, those its objects hold and those its globals hold, read-only (opaque_calls.py,
  callee_checks.read_only_call).
"""
import ast
import builtins
import itertools
import types

from ...backend import cpu as np  # (host-side type checks only)
from ...backend import is_array
from ...runtime.tensor import Tensor
from .aliasing import _VIEW_ATTRS, _VIEW_FUNCTIONS, _VIEW_METHODS
from .resolve import _library
from .source import ByCode, TransformError, function_tree

__all__ = ["WRITES", "NO_WRITES", "UNKNOWN", "KNOWN_TYPES", "KNOWN_EXACT", "argument_writes",
           "writes_its_arguments", "known_callable", "known_method", "own_attributes"]

WRITES, NO_WRITES, UNKNOWN = "writes", "no writes", "unknown"

# methods that change their object in place (arrays', lists', dicts', sets')
_IN_PLACE_METHODS = {"append", "extend", "insert", "pop", "remove", "clear", "fill", "sort", "put",
                     "itemset", "resize", "partition", "setfield", "update", "setdefault", "popitem",
                     "add", "discard", "reverse"}

# types whose methods are known (a method named like one of theirs is taken for theirs;
# the in-place ones -- x.fill, lst.append, rng.shuffle, t.add_ -- are refused by name or
# as a call whose result is not used)
KNOWN_TYPES = (np.ndarray, np.generic, np.random.Generator, np.random.RandomState, Tensor, list, tuple,
               dict, set, str, bytes, int, float, complex)
KNOWN_EXACT = frozenset(KNOWN_TYPES)  # (a value of exactly one of them: not a user's subclass)

# NumPy's functions that write into their first argument
_NUMPY_WRITES = ("copyto", "put", "place", "putmask", "fill_diagonal", "put_along_axis")

_FOUND = ByCode()   # code object -> argument_writes


def writes_its_arguments(fn):
    """Whether user function ``fn`` surely writes into one of its arguments."""
    return argument_writes(fn) == WRITES


def argument_writes(fn):
    """``WRITES``, ``NO_WRITES`` or ``UNKNOWN`` for user function ``fn`` (see the module
    docstring); cached per code object."""
    code = getattr(fn, "__code__", None)
    found = _FOUND.get(code) if code is not None else None
    if found is None:
        if code is not None:
            _FOUND[code] = NO_WRITES  # (while it is read: a recursive call adds nothing)
        found = _read(fn)
        if code is not None:
            _FOUND[code] = found
    return found


def _read(fn):
    try:
        node, _ = function_tree(fn)
    except TransformError:
        return UNKNOWN  # (no source to read: run read-only; its transformation will say why)
    a = node.args
    params = {x.arg for x in a.posonlyargs + a.args + a.kwonlyargs}
    for extra in (a.vararg, a.kwarg):
        if extra is not None:
            params.add(extra.arg)
    holding, unfilled = _outside_values(fn, node, params)
    found = _scan(fn, node, _bound_to_views(params | holding, node))
    if found == WRITES or not unfilled:
        return found
    # a write through what a global container or object holds when it holds no array yet
    # (L = [] filled later, M.w = None set later): what it writes is known only when it
    # runs, which then does so with what they hold read-only (read_only_call)
    later = _scan(fn, node, _bound_to_views(params | holding | unfilled, node))
    return UNKNOWN if later != NO_WRITES else found


def _scan(fn, node, names):
    """The verdict for ``fn`` (its tree ``node``), where ``names`` (see _may_share) are
    what its writes must not reach."""
    found = NO_WRITES
    for n in ast.walk(node):
        if isinstance(n, ast.AugAssign):  # p += v, p[i] *= v, p.real -= v, L[0] *= v
            if _may_share(n.target, names):
                return WRITES
            if _through_attribute(n.target, names):
                found = UNKNOWN  # p.w *= v: an array p holds, or a number it rebinds (run read-only)
        elif isinstance(n, ast.Assign):  # p[i] = v, p[1:][0] = v, L[0][i] = v (not L[0] = v)
            for t in n.targets:
                if isinstance(t, ast.Subscript) and _may_share(t.value, names):
                    return WRITES
                if isinstance(t, ast.Subscript) and _through_attribute(t.value, names):
                    found = UNKNOWN  # p.w[0] = v: into an array p holds (run read-only)
        elif isinstance(n, ast.Call):
            passed = _passed(n, names)
            if passed is None:
                continue
            if passed == "receiver" and n.func.attr in _IN_PLACE_METHODS:
                return WRITES
            if _writes_first_or_out(fn, n, names):
                return WRITES
            called = _callee_writes(fn, n, passed)
            if called == WRITES:
                return WRITES
            if called == UNKNOWN:
                found = UNKNOWN
    return found


def _outside_values(fn, node, params):
    """``(holding, unfilled)``: which of ``fn``'s free names (globals, closure variables)
    hold arrays -- a write into one (``G[0] = 5``) changes what its caller may have read,
    as a write into an argument does -- and which hold containers or objects that may hold
    arrays later but hold none now. A name holding an array stands for itself; a list,
    tuple or dict for its items (``L[]``: ``L[0] *= 2`` writes the array the caller read
    as ``L[0]``, ``L.append(v)`` -- a log -- and ``L[0] = v`` write none), an object for
    what its attributes hold (``M.``: ``M.buf *= 2``, ``M.buf[0] = 5``)."""
    stored = {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
    free = {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    holding, unfilled = set(), set()
    for name in free - stored - params:
        value = _resolved(fn, ast.Name(id=name, ctx=ast.Load()))
        attributes = own_attributes(value)
        if is_array(value):
            holding.add(name)
        elif isinstance(value, (list, tuple, dict)):
            items = list(itertools.islice(value.values() if isinstance(value, dict) else value, 64))
            if _holds_arrays(value):
                holding.add(name + _ITEMS)
            elif _may_hold_later(items):
                unfilled.add(name + _ITEMS)
        elif attributes is not None:
            if _holds_arrays(list(attributes.values())):
                holding.add(name + _ATTRIBUTES)
            elif _may_hold_later(list(attributes.values())):
                unfilled.add(name + _ATTRIBUTES)
    return holding, unfilled


_NUMBERS = (bool, int, float, complex, str, bytes)


def _may_hold_later(items):
    """Whether a container or object holding ``items`` (no array among them) may come to
    hold one: it holds nothing, a placeholder (None), or containers and objects. One
    holding numbers and strings only (a counter, a configuration) is taken to stay so."""
    return not items or any(not isinstance(v, _NUMBERS) for v in items[:64])


_ITEMS, _ATTRIBUTES = "[]", "."  # (marks no identifier can carry: see _may_share)

# methods of a list or dict that hand out what it holds (or a shallow copy holding it)
_ITEM_GETTERS = {"get", "setdefault", "pop", "popitem", "values", "items", "copy"}


def _holds_arrays(value, depth=3, width=64):
    """Whether ``value`` (a list, tuple, dict, or an object's attributes) holds an array, a
    few levels deep (the first ``width`` items of each)."""
    if is_array(value):
        return True
    if depth:
        if isinstance(value, dict):
            value = list(value.values())
        elif not isinstance(value, (list, tuple)):
            value = list((own_attributes(value) or {}).values())
        return any(_holds_arrays(v, depth - 1) for v in list(value)[:width])
    return False


def own_attributes(value):
    """The dict of an instance's own attributes, or None: for a module, a class, a function
    or a method, and for a value without one it will show (no ``__dict__``, or a proxy
    whose ``__getattr__`` raises)."""
    if isinstance(value, (types.ModuleType, type, types.FunctionType, types.MethodType,
                          types.BuiltinFunctionType)):
        return None
    try:
        attributes = vars(value)
    except Exception:  # noqa: BLE001 -- no __dict__, or one that raises
        return None
    return attributes if isinstance(attributes, dict) else None


def _root(v):
    """``(name, steps)``: the Name at the bottom of a chain of indexes and attributes
    (``M.sub.w[0]``: ``M``, 3), or (None, 0)."""
    steps = 0
    while isinstance(v, (ast.Subscript, ast.Attribute)):
        v, steps = v.value, steps + 1
    return (v.id, steps) if isinstance(v, ast.Name) else (None, 0)


def _through_attribute(v, names):
    """Whether chain ``v`` reaches, from a name of ``names``, an attribute (``p.w``,
    ``p.sub.w[1:]``): an array an object passed holds, which the source cannot tell."""
    name, _ = _root(v)
    return name in names and any(isinstance(n, ast.Attribute) for n in ast.walk(v))


def _writes_first_or_out(fn, call, names):
    """``np.copyto(p, v)``, ``np.add.at(p, i, v)``, ``np.add(a, b, out=p)``: a NumPy call
    writing into its first argument, or into ``out``, given one of ``names``."""
    if any(k.arg == "out" and _may_share(k.value, names) for k in call.keywords):
        return True
    if not (call.args and _may_share(call.args[0], names)):
        return False
    f = call.func
    if isinstance(f, ast.Attribute) and f.attr in ("at", "shuffle"):  # (a ufunc's unbuffered in-place
        return True  # form; np.random.shuffle, rng.shuffle)
    obj = _resolved(fn, f)
    return any(obj is getattr(np, name, None) for name in _NUMPY_WRITES)


def _passed(call, names):
    """How ``call`` is given a name of ``names``: ``"receiver"`` (``p.fill(0)``),
    ``"argument"`` (``g(p)``, ``g(x=p[1:])``), or None."""
    f = call.func
    if isinstance(f, ast.Attribute) and _may_share(f.value, names):
        return "receiver"
    values = list(call.args) + [k.value for k in call.keywords]
    return "argument" if any(_may_share(v, names) for v in values) else None


def _callee_writes(fn, call, passed):
    """What a call given one of ``fn``'s parameters may do to it."""
    f = call.func
    if passed == "receiver":  # a method of a parameter: an array's, a list's... or an object's
        return NO_WRITES if known_method(f.attr) else UNKNOWN
    obj = _resolved(fn, f)
    if obj is None:
        return UNKNOWN  # (a local value, a parameter holding a function, a method's result)
    if isinstance(obj, types.FunctionType) and not known_callable(obj):
        return argument_writes(obj)
    if known_callable(obj):
        return NO_WRITES  # (NumPy's in-place functions -- np.copyto... -- are refused by name elsewhere)
    return UNKNOWN  # (a callable object, a functools.partial, a class)


def known_method(attr):
    """Whether ``attr`` names a method of an array or a built-in type (``p.reshape``,
    ``p.dot``): those write only into their object, which _IN_PLACE_METHODS names."""
    return any(hasattr(t, attr) for t in KNOWN_TYPES)


def _resolved(fn, f):
    """The object a Name or a module's dotted attribute refers to in ``fn``'s scope, or None."""
    if isinstance(f, ast.Name):
        cells = dict(zip(fn.__code__.co_freevars, fn.__closure__ or ()))
        if f.id in cells:
            try:
                return cells[f.id].cell_contents
            except ValueError:
                return None
        if f.id in fn.__globals__:
            return fn.__globals__[f.id]
        return getattr(builtins, f.id, None)
    if isinstance(f, ast.Attribute):
        base = _resolved(fn, f.value)
        if isinstance(base, (types.ModuleType, type)):
            return getattr(base, f.attr, None)
    return None


def known_callable(obj):
    """Whether ``obj`` is a function known not to write into its arguments (but for
    NumPy's few named in _NUMPY_WRITES and ``out=``, which the reading looks for): NumPy's,
    SciPy's, tracegrad's, CuPy's (resolve._library), Python's builtins and math."""
    if isinstance(obj, types.ModuleType) or _library(obj):
        return True
    name = getattr(obj, "__name__", None)
    if name is not None and getattr(builtins, name, None) is obj:
        return True
    return getattr(obj, "__module__", None) in ("math", "cmath", "builtins")


def _bound_to_views(names, node):
    """``names`` and every name of ``node`` bound (anywhere: flow-insensitive) to one of
    them or to a view of one, through nested expressions (``u = np.expand_dims(p[:, None],
    0)``, ``a, b = p, q``, ``for row in p``)."""
    names = set(names)
    while True:
        grown = set()
        for n in ast.walk(node):
            if isinstance(n, ast.Assign):
                value, targets = n.value, n.targets
            elif isinstance(n, (ast.For, ast.comprehension)):
                value, targets = n.iter, [n.target]
            elif isinstance(n, ast.withitem) and n.optional_vars is not None:
                value, targets = n.context_expr, [n.optional_vars]
            else:
                continue
            if _may_share(value, names) or (isinstance(value, ast.Name) and value.id + _ITEMS in names):
                # (a, b = L and for a in L bind L's items)
                grown |= {t.id for tg in targets for t in ast.walk(tg) if isinstance(t, ast.Name)}
        if grown <= names:
            return names
        names |= grown


def _may_share(v, names):
    """Whether expression ``v``'s value may be, or share memory with, one of ``names``
    (where ``L[]`` in ``names`` stands for ``L``'s items, ``M.`` for ``M``'s attributes:
    _outside_values)."""
    if isinstance(v, ast.Name):
        return v.id in names
    name, steps = _root(v)
    if steps and (name + _ITEMS in names or name + _ATTRIBUTES in names):
        return True  # (L[0], L[0].w, M.sub.w[1:]: what a global container or object holds)
    if isinstance(v, (ast.Subscript, ast.Starred)) or (isinstance(v, ast.Attribute) and v.attr in _VIEW_ATTRS):
        return _may_share(v.value, names)
    if isinstance(v, (ast.Tuple, ast.List)):
        return any(_may_share(e, names) for e in v.elts)
    if isinstance(v, ast.IfExp):
        return _may_share(v.body, names) or _may_share(v.orelse, names)
    if isinstance(v, ast.Call):
        f = v.func
        if isinstance(f, ast.Attribute) and f.attr in _VIEW_METHODS and _may_share(f.value, names):
            return True  # p.reshape(2)
        if isinstance(f, ast.Attribute) and f.attr in _ITEM_GETTERS and isinstance(f.value, ast.Name) \
                and f.value.id + _ITEMS in names:
            return True  # CFG.get("w"), CFG.values(), L.copy(): what a global container holds
        if isinstance(f, ast.Name) and f.id == "getattr" and v.args and isinstance(v.args[0], ast.Name) \
                and v.args[0].id + _ATTRIBUTES in names:
            return True  # getattr(M, "w"): what a global object holds
        name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None
        return name in _VIEW_FUNCTIONS and bool(v.args) and _may_share(v.args[0], names)
    return False
