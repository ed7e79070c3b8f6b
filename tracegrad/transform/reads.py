"""What a differentiated function reads from outside its arguments, by identity.

Both staged paths reuse work across calls: the tape replays a trace, the AST path runs
code compiled with a copy of the function's globals. Both would silently go on with
old values after ``SCALE = 3.0`` or ``W = new_weights`` rebinds a name the function
reads. :class:`Reads` notes, when the work is done, which object each such name is
bound to -- the global names the function's code loads (and the code of the nested
functions and user functions it reaches by global name), and its closure cells -- so
that a later call can ask :meth:`Reads.changed` (a few dictionary look-ups) and trace
or refresh again. An array read by name and changed *in place* keeps its identity: the
AST path and the tape (where traced values meet it: a constant read by reference) read
its contents at each call, but NumPy work on it alone (``w.sum()``) is done once while
tracing; the tape's :meth:`Reads.watch_contents` keeps copies of such arrays, compared at
each call.
"""
import functools
import types

from ..backend import cpu as np  # host-side comparisons only

__all__ = ["Reads", "state_of"]

_MISSING = object()
_DEPTH = 4   # user functions followed through global names
_CONTAINED = 64  # a list, tuple or dict of functions up to this length is followed


class Reads:
    """The global names and closure cells ``f`` reads, with the objects they hold now."""

    __slots__ = ("_globals", "_cells", "_arrays", "_holders")

    def __init__(self, f):
        self._globals, self._cells, self._arrays, self._holders = [], [], [], []
        self._collect(f, set(), 0)

    def watch_contents(self):
        """Also compare, at each call, the contents of the arrays read by name (one
        comparison each: pass a large array as an argument instead, to avoid it). An
        array read by reference where traced values meet it may feed untraced NumPy work
        too, so none is left out."""
        seen = set()
        for value in self.values():
            if id(value) in seen:
                continue
            seen.add(id(value))
            if isinstance(value, np.ndarray):
                self._arrays.append((value, value.shape, value.dtype, _contents(value)))
            else:
                members = _members(value)
                if members is not None:  # one level down: cfg.scale, weights[0]...
                    self._holders.append((value, members, _fingerprint(members(value))))

    def _collect(self, f, seen, depth):
        through = getattr(f, "reads_through", None)  # (a wrapper calling a weakly held function)
        if through is not None:
            f = through()
            if f is None:
                return
        if isinstance(f, types.MethodType):  # a bound method: its object is read too
            self._cells.append((_Fixed(f.__self__), f.__self__))
            cls, code = type(f.__self__), getattr(f.__func__, "__code__", None)
            if isinstance(code, types.CodeType) and not _library(cls) and cls.__module__ != "builtins":
                self._class(cls, code, seen, depth)  # (``self.scale``: a class attribute)
            return self._collect(f.__func__, seen, depth)
        if isinstance(f, functools.partial):  # its function, and the values bound to it
            for v in (*f.args, *f.keywords.values()):
                self._cells.append((_Fixed(v), v))
            return self._collect(f.func, seen, depth + 1)
        code = getattr(f, "__code__", None)
        if not isinstance(code, types.CodeType) or id(code) in seen or depth > _DEPTH:
            return
        seen.add(id(code))
        for v in (*(getattr(f, "__defaults__", None) or ()), *(getattr(f, "__kwdefaults__", None) or {}).values()):
            self._cells.append((_Fixed(v), v))  # (a default dict or list changed in place)
        scope = getattr(f, "__globals__", None)
        for cell in getattr(f, "__closure__", None) or ():
            try:
                value = cell.cell_contents
            except ValueError:
                value = _MISSING
            self._cells.append((cell, value))
            self._follow(value, code, seen, depth)
        if scope is None:
            return
        for name in _names(code):
            value = scope.get(name, _MISSING)
            if value is _MISSING:
                continue
            self._globals.append((scope, name, value))
            self._follow(value, code, seen, depth)

    def _follow(self, value, code, seen, depth):
        """What a name of ``code`` holds, followed: a user function or partial (its own
        reads), a user module or class (the attributes ``code`` loads from it: ``C.h(x)``
        reads what ``h`` reads), the functions in a list, tuple or dict (``OPS["f"](x)``)."""
        if _library(value):
            return
        if isinstance(value, (types.FunctionType, functools.partial)):
            self._collect(value, seen, depth + 1)
        elif isinstance(value, types.ModuleType):
            self._module(value, code, seen, depth)
        elif isinstance(value, type) and value.__module__ != "builtins":
            self._class(value, code, seen, depth)
        elif isinstance(value, (list, tuple, dict)) and len(value) <= _CONTAINED:
            for v in (value.values() if isinstance(value, dict) else value):
                if isinstance(v, (types.FunctionType, functools.partial)) and not _library(v):
                    self._collect(v, seen, depth + 1)

    def _class(self, cls, code, seen, depth):
        """``Cls.name`` reads of a class of the user's: its attributes ``code`` loads, noted
        (rebinding ``Cls.h`` is a change) and the functions among them followed."""
        if depth > _DEPTH:
            return
        for klass in cls.__mro__[:-1]:
            scope = vars(klass)
            for name in _names(code):
                value = scope.get(name, _MISSING)
                if value is _MISSING or name.startswith("__"):
                    continue
                self._globals.append((scope, name, value))
                inner = getattr(value, "__func__", value)  # (staticmethod, classmethod)
                if isinstance(inner, (types.FunctionType, functools.partial)) and not _library(inner):
                    fresh = id(getattr(inner, "__code__", None)) not in seen
                    self._collect(inner, seen, depth + 1)
                    if fresh and isinstance(inner, types.FunctionType):  # (a method: self.h(x)
                        self._class(cls, inner.__code__, seen, depth + 1)  # reads self.S too)

    def _module(self, module, code, seen, depth):
        """``module.name`` reads (``cfg.SCALE``, ``helpers.g(x)``): attribute names the
        code loads that the user's module has, followed like globals."""
        scope = vars(module)
        for name in _names(code):
            value = scope.get(name, _MISSING)
            if value is _MISSING or isinstance(value, types.ModuleType):
                continue
            self._globals.append((scope, name, value))
            self._follow(value, code, seen, depth)  # (a module among them is skipped above)

    def values(self):
        """The objects the noted names and cells held (what the function may read)."""
        return [v for _, _, v in self._globals] + [v for _, v in self._cells]

    def changed(self):
        """Whether a name or cell noted then holds another object now, or a watched
        array has other contents."""
        for array, shape, dtype, seen in self._arrays:
            if array.shape != shape or array.dtype != dtype or not _same(array, seen):
                return True
        for holder, members, print_ in self._holders:
            if _fingerprint(members(holder)) != print_:
                return True
        for scope, name, value in self._globals:
            if scope.get(name, _MISSING) is not value:
                return True
        for cell, value in self._cells:
            try:
                if cell.cell_contents is not value:
                    return True
            except ValueError:
                if value is not _MISSING:
                    return True
        return False


_BYTES = 1 << 16  # arrays up to this size are kept and compared as raw bytes (cheapest)


def _contents(a):
    return a.tobytes() if a.nbytes <= _BYTES else a.copy()


def _same(a, seen):
    """Bit for bit (a NaN equals itself), as the contents were noted."""
    if type(seen) is bytes:
        return a.tobytes() == seen
    return bool((a.view(np.uint8) == seen.view(np.uint8)).all()) if a.flags.c_contiguous and seen.flags.c_contiguous \
        else np.array_equal(a, seen, equal_nan=a.dtype.kind in "fc")


_PLAIN_VALUES = (int, float, complex, bool, str, bytes, type(None))


def _members(value):
    """What a global or closure value holds one level down that a function may read:
    the items of a list/tuple/dict, the attributes of a plain object (a config, a model
    holding arrays) or of a class of the user's (``Cfg.scale``) -- as a function giving
    them now; None for anything else."""
    if isinstance(value, (list, tuple)):
        return lambda v: list(enumerate(v))
    if isinstance(value, dict):
        return lambda v: list(v.items())
    if isinstance(value, type):
        if _library(value) or value.__module__ == "builtins":
            return None
        return lambda v: [(k, a) for k, a in vars(v).items()
                          if not k.startswith("__") and not callable(a) and not isinstance(a, (classmethod, staticmethod, property))]
    if isinstance(value, types.FunctionType) and not _library(value):  # its attributes (``f.scale``)
        return lambda v: [(k, a) for k, a in vars(v).items() if not k.startswith("_")]
    if isinstance(value, (types.FunctionType, types.ModuleType, functools.partial, np.ndarray)) \
            or isinstance(value, _PLAIN_VALUES) or _library(type(value)):
        return None
    slots = [n for k in type(value).__mro__ for n in getattr(k, "__slots__", ()) if isinstance(n, str)]
    if not hasattr(value, "__dict__") and not slots:
        return None
    cls = type(value)  # (what the instance reads from its class too: self.scale)
    return lambda v: (list(getattr(v, "__dict__", {}).items())
                      + [(n, getattr(v, n)) for n in slots if n != "__dict__" and hasattr(v, n)]
                      + [("class", cls)])


_NESTED = 3      # levels of plain objects, lists and dicts followed below a global
_BUDGET = 512    # members followed below the first level, per global
_BYTES_IN_ALL = 1 << 20  # bytes of arrays compared per global (beyond: their identity only)


def _fingerprint(members, depth=1, budget=None):
    """Identity of each member, and the bytes of small arrays and the values of numbers
    among them, and so on a few levels down (``cfg.model.k``, ``table[0][1]``): compared at
    each call (within budgets: the call must stay cheap)."""
    budget = [_BUDGET, _BYTES_IN_ALL, {}] if budget is None else budget  # (members, bytes,
    # the classes fingerprinted so far: id -> fingerprint)
    out = []
    for key, v in members:
        budget[0] -= 1
        if isinstance(v, np.ndarray) and v.nbytes <= _BYTES and v.nbytes <= budget[1]:
            budget[1] -= v.nbytes
            out.append((key, id(v), v.shape, v.dtype.str, v.tobytes()))
        elif isinstance(v, np.ndarray):
            out.append((key, id(v), v.shape, v.dtype.str))
        elif isinstance(v, (int, float, complex, bool, str)):
            out.append((key, v))
        elif isinstance(v, type) and key == "class":  # an instance's class: once per call
            classes = budget[2]
            if id(v) not in classes:
                inner = _members(v)
                classes[id(v)] = None if inner is None else tuple(_fingerprint(inner(v), _NESTED, budget))
            out.append((key, id(v), classes[id(v)]))
        else:
            inner = _members(v) if depth < _NESTED and budget[0] > 0 and not isinstance(v, type) else None
            out.append((key, id(v)) if inner is None else
                       (key, id(v), tuple(_fingerprint(inner(v), depth + 1, budget))))
    return out


def state_of(obj):
    """A hashable fingerprint of what a plain object passed as a static argument holds
    (``model`` in ``grad(Model.loss, argnums=1)(model, x)``), or None: a trace made for it
    is replayed only while it holds the same."""
    if isinstance(obj, (list, tuple, dict, type)):
        return None
    members = _members(obj)
    return None if members is None else tuple(_fingerprint(members(obj)))


class _Fixed:
    """A stand-in cell for a value bound once and for all (a partial's argument): its
    contents never change, but an array among them is watched like the others."""

    __slots__ = ("cell_contents",)

    def __init__(self, value):
        self.cell_contents = value


def _names(code):
    """The global names ``code`` and the code objects nested in it may load."""
    out = list(code.co_names)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            out += _names(c)
    return out


def _library(fn):
    mod = (fn.__name__ if isinstance(fn, types.ModuleType) else getattr(fn, "__module__", "")) or ""
    if isinstance(fn, functools.partial):
        return _library(fn.func)
    return mod.split(".")[0] in ("numpy", "tracegrad", "cupy", "scipy", "torch")
