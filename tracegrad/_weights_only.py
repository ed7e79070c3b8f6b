"""Objects of other classes in saved files, and the allowlist that guards loading them.

``save`` stores an object it has no tag for the way pickle's protocol 2 reduces it: the
importable name (``module.qualname``) of the class or function that rebuilds it, the
arguments and the state (``__dict__``, ``__setstate__``'s argument, slots), each of them
encoded like any other saved value (tensors included). The file still holds no code, only
names. ``load(weights_only=True)`` (the default) looks a name up only among the globals the
user allowlisted (:func:`add_safe_globals`, :func:`safe_globals`) and otherwise raises
PyTorch's ``UnpicklingError`` naming the global; the object is then rebuilt as PyTorch's
weights-only unpickler does (``cls.__new__(cls, *args)`` or ``func(*args)``, then
``__setstate__`` or a ``__dict__`` update). ``weights_only=False`` imports whatever a file
names and calls it: as with PyTorch, only for files from a trusted source.
"""
import copyreg
import importlib
import pickle
import types

__all__ = ["add_safe_globals", "safe_globals", "get_safe_globals", "clear_safe_globals",
           "encode_object", "decode_object"]

_marked = []  # what the user allowlisted, in order: globals or (global, "module.qualname")


def add_safe_globals(safe_globals):
    """Allow ``load(weights_only=True)`` to rebuild with these classes and functions; an
    item is a global or a ``(global, "module.qualname")`` pair naming it as saved."""
    for g in safe_globals:
        if g not in _marked:
            _marked.append(g)


def get_safe_globals():
    """The globals the user allowlisted."""
    return list(_marked)


def clear_safe_globals():
    _marked.clear()


class safe_globals:
    """Context manager: ``add_safe_globals(globals)`` for the duration of the block."""

    def __init__(self, safe_globals):
        self.safe_globals = safe_globals

    def __enter__(self):
        add_safe_globals(self.safe_globals)

    def __exit__(self, *exc):
        for g in self.safe_globals:
            if g in _marked:
                _marked.remove(g)
        return False


def _allowed():
    """Full path -> global, for what the user allowlisted (PyTorch's rules for pairs)."""
    out = {}
    for g in _marked:
        if isinstance(g, tuple):
            if len(g) != 2:
                raise ValueError("Expected tuple of length 2 (global, str of callable full path), "
                                 f"but got tuple of length: {len(g)}")
            if type(g[1]) is not str:
                raise TypeError("Expected second item in tuple to be str of callable full path, "
                                f"but got: {type(g[1])}")
            out[g[1]] = g[0]
        else:
            out[f"{g.__module__}.{g.__qualname__}"] = g
    return out


# -- save -----------------------------------------------------------------------------------

class Unsaveable(TypeError):
    """An object with no importable name or no reduction; ``save`` says where it is."""


def global_name(obj):
    """``module.qualname`` of a class or function, checked to import back to ``obj``."""
    qualname = getattr(obj, "__qualname__", None)
    module = getattr(obj, "__module__", None)
    if qualname is None or not isinstance(qualname, str):
        raise Unsaveable("it has no importable name")
    if module is None:
        module = pickle.whichmodule(obj, qualname)
    try:
        found = _resolve(module, qualname)
    except (ImportError, AttributeError):
        found = None
    if found is not obj:
        raise Unsaveable(f"{module}.{qualname} does not import back to it (a lambda or a local "
                         "class or function?)")
    return f"{module}.{qualname}"


def encode_object(obj, encode):
    """The JSON node for ``obj``, a class, a function or an object that pickle's protocol 2
    can reduce; ``encode(value, where)`` encodes its parts."""
    if isinstance(obj, (type, types.FunctionType, types.BuiltinFunctionType)):
        return {"global": global_name(obj)}
    try:
        rv = obj.__reduce_ex__(2)
    except TypeError as e:  # (pickle's own refusal; an object's own error, such as a
        raise Unsaveable(f"it cannot be reduced ({e})") from None  # parametrized module's, stays its)
    if isinstance(rv, str):  # a module-level singleton, saved by name
        return {"global": global_name(obj)}
    func, args, state, listitems, dictitems = (tuple(rv) + (None,) * 5)[:5]
    node = {}
    if func is copyreg.__newobj__:
        node["new"], node["args"] = global_name(args[0]), encode(list(args[1:]), ".__reduce__()[1]")
    elif func is copyreg.__newobj_ex__:
        cls, args, kwargs = args
        node["new"], node["args"] = global_name(cls), encode(list(args), ".__reduce__()[1]")
        node["kwargs"] = encode(dict(kwargs), ".__reduce__()[1]")
    else:
        node["call"], node["args"] = global_name(func), encode(list(args), ".__reduce__()[1]")
    if state is not None:
        node["state"] = encode(state, ".__getstate__()")
    if listitems is not None:
        node["append"] = encode(list(listitems), "[:]")
    if dictitems is not None:
        node["setitems"] = encode(dict(dictitems), ".items()")
    return {"object": node}


# -- load -----------------------------------------------------------------------------------

class Unsafe(pickle.UnpicklingError):
    """A global or an operation ``weights_only=True`` does not allow (PyTorch's type)."""

    def __init__(self, detail):
        super().__init__(
            "Weights only load failed. This file can still be loaded, to do so you have two "
            "options, do those steps only if you trust the source of the checkpoint. \n\t(1) "
            "Re-running `tracegrad.load` with `weights_only` set to `False` will likely succeed, "
            "but it can result in arbitrary code execution. Do it only if you got the file from "
            "a trusted source.\n\t(2) Alternatively, to load with `weights_only=True` please "
            "check the recommended steps in the following error message.\n\tWeightsUnpickler "
            f"error: {detail}\n\n")


def lookup(path, weights_only):
    """The global a file names: from the allowlist, or (``weights_only=False``) imported."""
    if weights_only:
        allowed = _allowed()
        if path in allowed:
            return allowed[path]
        shown = path[len("builtins."):] if path.startswith("builtins.") else path
        raise Unsafe(f"Unsupported global: GLOBAL {shown} was not an allowed global by default. "
                     f"Please use `tracegrad.serialization.add_safe_globals([{shown}])` or the "
                     f"`tracegrad.serialization.safe_globals([{shown}])` context manager to "
                     "allowlist this global if you trust this class/function.")
    module, _, qualname = path.rpartition(".")
    while module:  # the module is the longest importable prefix (qualnames have dots too)
        try:
            return _resolve(module, qualname)
        except ImportError:
            module, _, head = module.rpartition(".")
            qualname = f"{head}.{qualname}"
    raise ValueError(f"cannot import {path}")


def _resolve(module, qualname):
    obj = importlib.import_module(module)
    for part in qualname.split("."):
        if part == "<locals>":
            raise AttributeError(qualname)
        obj = getattr(obj, part)
    return obj


def decode_object(node, decode, weights_only):
    """Rebuild what :func:`encode_object` wrote; ``decode(child, where)`` decodes parts."""
    if type(node) is not dict:
        raise TypeError(node)
    args = decode(node.get("args", []), ".__reduce__()[1]")
    if "new" in node:
        cls = lookup(node["new"], weights_only)
        if not isinstance(cls, type):
            raise TypeError(cls)
        kwargs = decode(node["kwargs"], ".__reduce__()[1]") if "kwargs" in node else {}
        obj = cls.__new__(cls, *args, **kwargs)
    else:
        obj = lookup(node["call"], weights_only)(*args)
    if "state" in node:
        if weights_only and type(obj) not in _allowed().values():
            raise Unsafe("Can only build Tensor, Parameter, OrderedDict or types allowlisted "
                         f"via `add_safe_globals`, but got {type(obj)}")
        _set_state(obj, decode(node["state"], ".__getstate__()"))
    if "append" in node:
        if weights_only and type(obj) is not list:
            raise Unsafe(f"Can only append to lists, but got {type(obj)}")
        obj.extend(decode(node["append"], "[:]"))
    if "setitems" in node:
        if weights_only and type(obj) is not dict:
            raise Unsafe(f"Can only SETITEM for dict, collections.OrderedDict, but got {type(obj)}")
        obj.update(decode(node["setitems"], ".items()"))
    return obj


def _set_state(obj, state):
    """pickle's BUILD: ``__setstate__``, else a ``__dict__`` update and slot values."""
    setstate = getattr(obj, "__setstate__", None)
    if setstate is not None and type(obj).__setstate__ is not getattr(object, "__setstate__", None):
        setstate(state)
        return
    slotstate = None
    if isinstance(state, tuple) and len(state) == 2:
        state, slotstate = state
    if state:
        obj.__dict__.update(state)
    if slotstate:
        for k, v in slotstate.items():
            setattr(obj, k, v)
