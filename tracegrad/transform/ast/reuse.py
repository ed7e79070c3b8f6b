"""One transformation for every function made by the same ``def`` or ``lambda``.

``grad(lambda x: loss(x, data))`` in a loop, or a closure made anew at each call, is a
new function object each time, with the same code. What the transformation decided
depends on that code and on what its free names referred to when it ran (which
function a call calls, which module ``np`` is: see :attr:`.resolve.Resolver.reads`);
the generated code itself reads the function's closure cells and globals when it runs.
So a new function object whose code is the same object, whose free names refer to the
same functions and modules (other values: to values of the same type), and whose
literal defaults are equal, gets the generated code again, bound to its own cells,
defaults and globals -- no second transformation.

What an entry keeps strongly: the generated code, its source, and the library objects
its globals hold (helpers, rules). What the user's function referred to is held
weakly, or, where it takes no weak reference (a builtin, a ufunc), only when it belongs
to a library -- otherwise the transformation is not shared.
"""
import builtins
import threading
import types
import weakref

from .resolve import _NOTHING as _MISSING, _library, cell_structure, still_written_for
from ..tape.numpy_map.construct import numpy_own

__all__ = ["remember", "recall", "forget"]

_LIMIT = 256   # code objects remembered (the oldest forgotten first)
_ENTRIES = {}  # id(code) -> (weakref to code, {key: [Entry]})
_lock = threading.RLock()


def _token(obj):
    """What must hold of the object a free name refers to for a decision to hold again:
    the same object (functions, modules, classes), or the same type (other values);
    None: not shareable."""
    if obj is _MISSING:
        return ("missing",)
    if not (callable(obj) or isinstance(obj, types.ModuleType)):
        return ("type", type(obj))
    try:
        return ("same", weakref.ref(obj))
    except TypeError:
        if isinstance(obj, (types.BuiltinFunctionType, types.ModuleType, type)) or \
                _library(obj) or type(obj).__module__.split(".")[0] in ("numpy", "builtins"):
            return ("strong", obj)
        return None


def _holds(token, obj):
    kind = token[0]
    if kind == "missing":
        return obj is _MISSING
    if kind == "type":
        return obj is not _MISSING and type(obj) is token[1] and not (callable(obj) or
                                                                      isinstance(obj, types.ModuleType))
    if kind == "same":
        return token[1]() is obj
    return token[1] is obj


def _literal(v):
    from .signature import _literal as literal
    return literal(v)


class Entry:
    """A generated function's code and what its globals must hold, for ``fn``'s code."""

    def __init__(self, gen, fn, unit, reads, callees, user_defaults):
        self.code, self.source, self.name = gen.fn.__code__, gen.own_source, gen.name
        self.qualname = gen.fn.__qualname__
        self.reads = reads
        self.facts = {k: v for k, v in vars(gen).items() if k in _FACTS}
        self.written_for = [(now, then) for now, then in getattr(gen, "written_for", ())
                            if not getattr(now, "cell", False)]  # (cells: the new function's own)
        dynamic = set(unit.captured) | {"__builtins__", "__name__"}
        self.captured = unit.captured
        self.callees = callees  # [(global name, weakref to the callee, rebuild(callee) -> Generated)]
        dynamic |= {g for g, _, _ in callees}
        self.defaults = _defaults_of(fn)
        self.default_names = {}   # position or keyword -> its name in the generated globals
        for where, v in self.defaults:
            name = unit._ids.get(id(v))
            if name is not None and not _literal(v):
                self.default_names[where] = name
                dynamic.add(name)
        self.static = {k: v for k, v in unit.env.items() if k not in dynamic}
        given = gen.fn.__defaults__ or ()
        self.user_in_defaults = user_defaults  # (the user's positional defaults come first)
        self.extra_defaults = given[len(fn.__defaults__ or ()):] if user_defaults else given
        kw = dict(gen.fn.__kwdefaults__ or {})
        self.extra_kwdefaults = {k: v for k, v in kw.items() if k not in (fn.__kwdefaults__ or {})}

    def matches(self, fn, lookup):
        if any(not _holds(tok, lookup(name)) for name, tok in self.reads):
            return False
        if not still_written_for(self.written_for):  # (a module's function rebound)
            return False
        new = _defaults_of(fn)
        if [w for w, _ in new] != [w for w, _ in self.defaults]:
            return False
        for (where, old), (_, v) in zip(self.defaults, new):
            if _literal(old) != _literal(v) or (_literal(old) and (type(old) is not type(v) or old != v)):
                return False
        return all(cb() is not None for _, cb, _ in self.callees)

    def bind(self, fn, self_name_for_recursion=None):
        """A Generated for ``fn``: this code with ``fn``'s cells, defaults and globals."""
        from .driver import Generated
        env = dict(self.static)
        env.update({k: fn.__globals__[k] for k in ("__builtins__", "__name__") if k in fn.__globals__})
        env.update({k: fn.__globals__[k] for k in self.captured if k in fn.__globals__})
        for where, v in _defaults_of(fn):
            if where in self.default_names:
                env[self.default_names[where]] = v
        callees = []
        for gname, ref, rebuild in self.callees:
            child = rebuild(ref())
            env[gname] = child.fn
            callees.append(child)
        cells = dict(zip(fn.__code__.co_freevars, fn.__closure__ or ()))
        user = tuple(fn.__defaults__ or ()) if self.user_in_defaults else ()
        defaults = (user + tuple(self.extra_defaults)) or None
        new = types.FunctionType(self.code, env, self.name, defaults,
                                 tuple(cells[n] for n in self.code.co_freevars) or None)
        kw = {k: v for k, v in (fn.__kwdefaults__ or {}).items()}
        kw.update(self.extra_kwdefaults)
        if kw:
            new.__kwdefaults__ = kw
        new.__qualname__ = self.qualname
        new.__source__ = self.source
        gen = Generated(new, self.source, self.name)
        gen.written_for = self.written_for + cell_structure(fn)
        gen.callees = callees
        gen.user_globals, gen.captured = fn.__globals__, self.captured
        for k, v in self.facts.items():
            setattr(gen, k, v)
        return gen


_FACTS = ("seed", "visible_aliasing", "writes_params", "rebinds_in_place", "tangent_names",
          "keyword_tangents", "nparams")


def _defaults_of(fn):
    out = [(k, v) for k, v in enumerate(fn.__defaults__ or ())]
    return out + [(k, v) for k, v in sorted((fn.__kwdefaults__ or {}).items())]


def remember(fn, key, gen, unit, reads, callees, user_defaults):
    """Note the transformation ``gen`` of ``fn`` (made with ``unit``; its resolver read
    ``reads``; ``callees``: see Entry; ``user_defaults``: whether the generated function
    takes the user's positional defaults) for other functions of the same code."""
    tokens = []
    for name, obj in reads.items():
        tok = _token(obj)
        if tok is None:
            return
        tokens.append((name, tok))
    code = fn.__code__
    try:
        entry = Entry(gen, fn, unit, tokens, callees, user_defaults)
    except (TypeError, ValueError):
        return
    with _lock:
        found = _ENTRIES.get(id(code))
        if found is None or found[0]() is not code:
            if len(_ENTRIES) >= _LIMIT:
                _ENTRIES.pop(next(iter(_ENTRIES)))
            ref = weakref.ref(code, _dropper(_ENTRIES, id(code)))
            found = _ENTRIES[id(code)] = (ref, {})
        entries = found[1].setdefault(key, [])
        entries.insert(0, entry)
        del entries[4:]


def _lookup(fn):
    """What a free name of ``fn`` refers to, as the resolver finds it (or _MISSING)."""
    closure = {}
    for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ()):
        try:
            closure[name] = cell.cell_contents
        except ValueError:
            pass

    def lookup(name):
        for scope in (closure, fn.__globals__, vars(builtins)):
            if name in scope:
                return numpy_own(scope[name])  # (as the resolver reads it)
        return _MISSING
    return lookup


def forget():
    with _lock:
        _ENTRIES.clear()


def _dropper(entries, key):
    """The callback that forgets a freed code object's entries (it reads no module
    global: it may run while the interpreter shuts down)."""
    def drop(ref):
        if entries.get(key, (None,))[0] is ref:
            entries.pop(key, None)
    return drop


def recall(fn, key):
    """A Generated for ``fn`` from a transformation of another function of its code, or
    None."""
    code = getattr(fn, "__code__", None)
    with _lock:
        found = _ENTRIES.get(id(code)) if code is not None else None
        if found is None or found[0]() is not code:
            return None
        entries = list(found[1].get(key, ()))
    lookup = _lookup(fn) if entries else None
    for entry in entries:
        if entry.matches(fn, lookup):
            return entry.bind(fn)
    return None
