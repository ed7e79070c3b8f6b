"""NumPy's array constructors on tracers: ``np.array`` / ``np.asarray`` of a tracer or of
lists and tuples that hold tracers, and ``np.r_`` / ``np.c_`` with traced pieces.

NumPy's constructors are C functions outside ``__array_function__``: handed a tracer, they
call its ``__array__`` and need a concrete ndarray back, which would cut the trace. So
while a tape records (on any thread), thin stand-ins take their place in the ``numpy``
module (:func:`acquire` / :func:`release`, called by the recording context); code that
is not tracing gets NumPy's own functions back -- no cost, and nothing that compiles or
compares NumPy's functions (Numba, ``is np.asarray``) meets a stranger. (A name imported
with ``from numpy import array`` before the trace keeps NumPy's function, which refuses
tracers as before; one imported by a module first imported during the trace is given
NumPy's back when the stand-ins go. Code that tells NumPy's functions apart by identity
while a tape may be recording, on any thread, compares :func:`numpy_own` of them.) Three
kinds:

* the constructors (``array``, ``asarray``...): NumPy's own function first; only when it
  meets a tracer (whose ``__array__`` raises :class:`ArrayConversion`) is the array
  recorded instead -- a stack of the traced pieces, with the dtype and shape NumPy gives
  the same structure of concrete values (and NumPy's errors for ragged nesting);
  ``np.asarray(x)`` of a tracer is ``x`` itself, ``np.array(x)`` a copy;
* functions whose first parameter is an array (``sum``, ``mean``...), given a list or
  tuple holding tracers there: NumPy does not look inside lists for tracers;
* ``zeros``/``ones``/``empty``/``full`` called from the traced function's own code: a
  traced constant, so that traced values written into it are recorded (and ``full`` of a
  traced fill value, whoever calls it, the fill broadcast into one).
"""
import contextlib
import functools
import sys
import threading
import types
import weakref

import numpy as np

from ..tape import TracerError
from .base import FUNCTIONS, P, astype, is_traced, ndim, npdtype, unsupported

__all__ = ["ArrayConversion", "acquire", "release", "traced_array", "numpy_own", "standing_in_for",
           "recording_form"]


class ArrayConversion(TracerError):
    """A tracer's ``__array__`` was called: NumPy wanted a concrete array of it."""


def numpy_own(fn):
    """NumPy's own function for one of the stand-ins below (read from ``numpy`` while a
    tape records, on any thread, or kept from then), ``fn`` itself for anything else:
    what code that tells NumPy's functions apart by identity (the AST path's name
    resolution) must compare."""
    if type(fn) is types.FunctionType and fn.__dict__.get("_tracegrad") is True:
        return fn.__wrapped__
    return fn


def _holds_tracer(obj):
    if is_traced(obj):
        return True
    return type(obj) in (list, tuple) and any(_holds_tracer(o) for o in obj)


def _stand_ins(obj):
    """``obj`` with each tracer replaced by zeros of its shape and dtype: what NumPy makes
    of the structure is what the recorded array must be."""
    if is_traced(obj):
        return np.zeros(obj.shape, dtype=npdtype(obj))
    if type(obj) in (list, tuple):
        return [_stand_ins(o) for o in obj]
    return obj


def _build(obj, dtype, original):
    if is_traced(obj):
        return astype(obj, dtype, copy=False)
    if type(obj) in (list, tuple) and _holds_tracer(obj):
        return P.stack(*[_build(o, dtype, original) for o in obj], dim=0)
    return original(obj, dtype=dtype)


def traced_array(obj, dtype=None, copy=True, ndmin=0):
    """The array NumPy would make of ``obj`` (a tracer, or lists and tuples holding
    tracers), recorded: ``copy`` makes a new value even of a lone tracer."""
    original = _ORIGINALS.get((np, "array"), np.array)
    if is_traced(obj):
        out = obj if dtype is None else astype(obj, dtype, copy=False)
        if copy and out is obj:
            out = P.clone(obj)
    elif _holds_tracer(obj):
        like = original(_stand_ins(obj), dtype=dtype)
        if like.dtype == object:
            raise unsupported("numpy.array of objects holding traced values")
        out = _build(obj, like.dtype, original)
    else:
        return original(obj, dtype=dtype, ndmin=ndmin) if ndmin else original(obj, dtype=dtype)
    while ndim(out) < ndmin:
        out = P.unsqueeze(out, dim=0)
    return out


# -- the wrappers ----------------------------------------------------------------------------

def _array_args(dtype=None, *, copy=True, order="K", subok=False, ndmin=0, like=None):
    return dtype, copy is not False and copy is not None, ndmin


def _asarray_args(dtype=None, order=None, *, device=None, copy=None, like=None):
    return dtype, bool(copy), 0


def _wrap(original, parse):
    """NumPy's ``original`` constructor, recording the array when it meets a tracer."""
    if getattr(original, "_tracegrad", False):
        return original

    @functools.wraps(original)
    def constructor(a, *args, **kwargs):
        try:
            return original(a, *args, **kwargs)
        except ArrayConversion:
            if not called_by_user(sys._getframe(1), original.__name__, libraries=True):
                raise  # (compiled code wanted a concrete array: it cannot take a tracer)
            dtype, copy, ndmin = parse(*args, **kwargs)
            return traced_array(a, dtype, copy, ndmin)
    constructor._tracegrad = True
    return constructor


_PARSERS = {"array": _array_args, "asarray": _asarray_args, "asanyarray": _asarray_args,
            "ascontiguousarray": _asarray_args, "asfortranarray": _asarray_args}


def _list_first(original):
    """``original`` (a NumPy function whose first parameters are arrays: the first, or
    those :data:`_LISTS_AT` names) taking a list or tuple that holds tracers there as the
    array NumPy would make of it (``np.sum([1, a, 2])``, ``np.mean([x, y])``): NumPy hands
    a function to the tracer only when a tracer is one of its arguments, not inside a list."""
    n = _LISTS_AT.get(original.__name__, 1)

    @functools.wraps(original)
    def call(*args, **kwargs):
        if any(type(a) in (list, tuple) and _holds_tracer(a) for a in args[:n]):
            args = tuple(traced_array(a, copy=False) if k < n and type(a) in (list, tuple) and _holds_tracer(a)
                         else a for k, a in enumerate(args))
        return original(*args, **kwargs)
    call._tracegrad = True
    return call


_LISTS_AT = {"append": 2}  # how many leading parameters are arrays (1 unless named here)


# reductions and the like: a list of traced values as their array
_LIST_FIRST = ("sum", "mean", "prod", "std", "var", "max", "min", "amax", "amin", "average", "median",
               "ptp", "cumsum", "cumprod", "nansum", "nanmean", "nanprod", "nanstd", "nanvar", "nanmax",
               "nanmin", "percentile", "quantile", "ravel", "reshape", "transpose", "squeeze", "diff",
               "trace", "diagonal", "flip", "roll", "tile", "repeat", "clip", "where", "dot", "outer",
               "inner", "linalg.norm", "linalg.det", "linalg.inv", "append")


def _buffer(original):
    """NumPy's ``zeros``/``ones``/``empty``/``full``, called from the traced function's own
    code, answer a traced constant, so that writing traced values into it is recorded
    (``h = np.zeros((n, 3)); h[t] = x[t]``); NumPy's, SciPy's and tracegrad's own calls
    get NumPy's array, made from the arguments as given. A traced fill value of ``full``
    is broadcast into a traced constant whoever calls it (an alias ``make = np.full``,
    code without source): NumPy could only refuse it, and the result is the tracer's."""
    full = original.__name__ == "full"

    @functools.wraps(original)
    def make(*args, **kwargs):
        from ..tracing import active_tape
        tape = active_tape()
        if tape is None:
            return original(*args, **kwargs)
        fill = (args[1] if len(args) > 1 else kwargs.get("fill_value")) if full else None
        traced = is_traced(fill) and fill.tape is tape
        if not traced and not called_by_user(sys._getframe(1), original.__name__):
            return original(*args, **kwargs)  # (a tracer of another tape: NumPy refuses it)
        if traced:  # np.full(shape, traced): zeros of its dtype, the fill added (broadcast)
            args, kwargs = _zero_fill(args, kwargs, fill)
        value = original(*args, **kwargs)
        if traced and not _fits(tuple(fill.shape), value.shape):
            raise ValueError(f"could not broadcast input array from shape {tuple(fill.shape)} "
                             f"into shape {value.shape}")  # (NumPy's words)
        xp = _device_of(tape)
        out = tape.new_var(value if xp is None else xp.from_host(value), "const")
        return P.add(out, astype(fill, value.dtype, copy=False)) if traced else out
    make._tracegrad = True
    return make


def _fits(shape, into):
    """Whether an array of ``shape`` broadcasts into one of shape ``into``, unchanged."""
    try:
        return np.broadcast_shapes(shape, into) == into
    except ValueError:
        return False


def _zero_fill(args, kwargs, fill):
    """``full``'s arguments with the fill value 0, in the dtype NumPy would give ``fill``
    unless a dtype is given."""
    args, kwargs = list(args), dict(kwargs)
    if len(args) > 1:
        args[1] = 0
    else:
        kwargs["fill_value"] = 0
    if len(args) > 2:
        if args[2] is None:
            args[2] = npdtype(fill)
    elif kwargs.get("dtype") is None:
        kwargs["dtype"] = npdtype(fill)
    return tuple(args), kwargs


def _device_of(tape):
    """The array namespace of the device the traced inputs are on (None: the host), where
    a buffer the function makes is made too, as NumPy's constants are moved (tracing.py)."""
    from ....backend import ARRAY_TYPE_SET, namespace_of
    for v in tape.inputs:
        value = getattr(v, "value", None)
        if type(value) is not np.ndarray and type(value) in ARRAY_TYPE_SET:
            return namespace_of(value)
    return None


def called_by_user(frame, name, libraries=False):
    """Whether ``frame`` -- the Python frame below a stand-in -- is Python code calling
    NumPy's ``name`` itself, not compiled code it called (Cython's ``np.random.randn``
    looks ``np.empty`` up at run time, under the caller's frame, and must get NumPy's
    array): the source of the call the frame is making must read ``...name(``; unknown (no
    source, Python 3.10) is no. Unless ``libraries``, NumPy's, SciPy's, CuPy's and
    tracegrad's own code does not count either; with it, tracegrad's own code (which calls
    functions indirectly, and never hands a tracer to compiled code) always counts."""
    top = (frame.f_globals.get("__name__", "") or "").split(".")[0]
    if top == "tracegrad":
        return libraries
    if not libraries and top in ("numpy", "scipy", "cupy", "cupyx"):
        return False
    key = (frame.f_code, frame.f_lasti, name)  # (the libraries test above is by module only)
    found = _CALLS.get(key)
    if found is None:
        if len(_CALLS) > 4096:
            _CALLS.clear()
        found = _CALLS[key] = _call_reads(frame.f_code, frame.f_lasti, name)
    return found


_CALLS = {}


def _call_reads(code, offset, name):
    """Whether the call instruction at ``offset`` of ``code`` is, in the source, a call of
    something named ``name`` (``np.zeros(``, ``numpy.zeros (``, ``zeros(``)."""
    import dis
    import linecache
    import re
    pos = None  # (the last instruction at or before the offset: 3.11's f_lasti may point
    for ins in dis.get_instructions(code):  # into the inline caches that follow a CALL)
        if ins.offset > offset:
            break
        pos = getattr(ins, "positions", None)
    if pos is None or None in (pos.lineno, pos.end_lineno, pos.col_offset, pos.end_col_offset):
        return False
    lines = linecache.getlines(code.co_filename)
    if pos.end_lineno > len(lines):
        return False
    text = "".join(lines[pos.lineno - 1:pos.end_lineno])
    start = pos.col_offset
    return re.match(rf"(?:[A-Za-z_]\w*\s*\.\s*)*{name}\s*\(", text[start:]) is not None


_STAND_INS = ([(name, functools.partial(_wrap, parse=parse)) for name, parse in _PARSERS.items()]
              + [(name, _list_first) for name in _LIST_FIRST]
              + [(name, _buffer) for name in ("zeros", "ones", "empty", "full")])
_ORIGINALS = {}  # (module, name) -> NumPy's own function, while the stand-ins are in place
_LOCK = threading.RLock()  # (re-entrant: numpy_own_namespace may be entered inside itself)
_USERS = [0]  # tapes recording now (all threads): the stand-ins are in place while there are any
_MODULES = [{}]  # sys.modules as it was when the stand-ins were put in place


def standing_in_for(fn):
    """``(module, name)`` where a stand-in replaces ``fn`` (NumPy's own function) while a
    tape records, or None: code holding NumPy's function from before (a name bound to
    ``np.full`` at import) must look it up there when it calls it."""
    fn = numpy_own(fn)
    places = _OWN_PLACES.get(id(fn))
    return places[1] if places is not None and places[0] is fn else None


_OWN_PLACES = {}  # id(NumPy's function) -> (it, (module, name)), for standing_in_for


def recording_form(fn):
    """The function to call for ``fn`` while a tape records: the stand-in in its place
    when ``fn`` is NumPy's own function that one replaces, else ``fn``. A transform
    given NumPy's function itself (``grad(np.append)``, bound before the trace) calls
    this, so that lists holding traced values are taken as the stand-in takes them."""
    place = standing_in_for(fn)
    return fn if place is None else getattr(*place)


def _tricks():
    try:
        import numpy.lib._index_tricks_impl as tricks  # (NumPy 2's home of r_ and c_)
    except ImportError:
        import numpy.lib.index_tricks as tricks
    return tricks


def _implementation_modules():
    """NumPy's modules whose Python code implements the list-taking functions above
    (``numpy.lib._function_base_impl`` for ``append``, ``diff``, ``flip``...). They read ``asanyarray`` and friends as module globals, which
    get the recording constructors while a tape records, as ``np.r_``'s module gets
    ``array``: NumPy's own function, held from before the trace (``f = np.append``,
    a closure's variable) and given lists holding traced values, which NumPy does not hand
    to the tracers, then records the array made of them instead of failing."""
    found = {}
    for dotted, _ in _STAND_INS:
        impl = getattr(getattr(*_place(dotted), None), "_implementation", None)
        module = sys.modules.get(getattr(impl, "__globals__", {}).get("__name__", ""))
        if module is not None:
            found[id(module)] = module
    return tuple(found.values())


def _place(dotted):
    """``(module, attribute name)`` of ``"sum"`` or ``"linalg.norm"`` in NumPy."""
    module, _, name = ("." + dotted).rpartition(".")
    return (getattr(np, module[1:]) if module else np), name


for _dotted, _ in _STAND_INS:
    _module, _name = _place(_dotted)
    _fn = getattr(_module, _name, None)
    if _fn is not None:
        _OWN_PLACES[id(_fn)] = (_fn, (_module, _name))


_IMPLEMENTATIONS = _implementation_modules()
_SCANNED = {}       # name -> id of the module looked through by _reexports under it
_REEXPORTS = []     # (weak reference to a module, name) found by _reexports
_LIBRARIES = ("numpy", "scipy", "cupy", "cupyx", "tracegrad")


def _reexports():
    """``(module, name, place)`` where a module other than the libraries' holds NumPy's
    own function under NumPy's name for it, ``place`` being where NumPy keeps it
    (``from numpy import *`` in a module that re-exports NumPy's namespace, ``from numpy
    import mean`` or ``from numpy.linalg import norm`` in the user's): the
    stand-ins go there too while a tape records, so ``np.mean([x, y])`` of such a
    module's name takes traced values as NumPy's own name does. Each module is looked
    through once, when first seen in ``sys.modules``."""
    fresh = [(key, module) for key, module in list(sys.modules.items()) if _SCANNED.get(key) != id(module)]
    if fresh:  # (by name and identity: modules come and go, and a name may be imported again)
        names = [(name, fn, place) for fn, place in _OWN_PLACES.values() for name in [place[1]]]
        for key, module in fresh:
            _SCANNED[key] = id(module)
            if key.split(".")[0] in _LIBRARIES or not isinstance(module, types.ModuleType):
                continue
            space = vars(module)
            _REEXPORTS.extend((weakref.ref(module), name, place) for name, fn, place in names
                              if space.get(name) is fn)
    return [(m, name, place) for m, name, place in ((ref(), name, place) for ref, name, place in _REEXPORTS)
            if m is not None]


def acquire():
    """A tape starts recording: the first one puts the stand-ins in NumPy's namespace.
    ``np.r_`` and ``np.c_`` build their pieces with the ``array`` of their own module,
    which gets the stand-in too, so traced pieces are joined by the recorded concatenate."""
    with _LOCK:
        _USERS[0] += 1
        if _USERS[0] > 1:
            return
        _MODULES[0] = sys.modules.copy()
        for dotted, make in _STAND_INS:
            module, name = _place(dotted)
            original = getattr(module, name, None)
            if original is None or getattr(original, "_tracegrad", False):
                continue
            _ORIGINALS[module, name] = original
            stand_in = make(original)
            if original in FUNCTIONS:  # (what records it, looked up by the function read now)
                FUNCTIONS[stand_in] = FUNCTIONS[original]
            setattr(module, name, stand_in)
        tricks = _tricks()
        if getattr(tricks, "array", None) is _ORIGINALS.get((np, "array")):
            tricks.array = np.array
        for module in _IMPLEMENTATIONS:
            for name in _PARSERS:
                own = _ORIGINALS.get((np, name))
                if own is not None and vars(module).get(name) is own:
                    _ORIGINALS[module, name] = own
                    setattr(module, name, getattr(np, name))
        for module, name, place in _reexports():  # (the same stand-ins where NumPy's are re-exported)
            own = _ORIGINALS.get(place)
            if own is not None and vars(module).get(name) is own:
                _ORIGINALS[module, name] = own
                setattr(module, name, getattr(*place))


def release():
    """A tape stops recording: the last one gives NumPy its own functions back (unless
    something else has replaced them meanwhile), and so do the modules first imported
    meanwhile that took a stand-in (``from numpy import zeros`` in a module imported by
    the traced function)."""
    with _LOCK:
        _USERS[0] -= 1
        if _USERS[0] > 0:
            return
        _tricks_own_array()
        for (module, name), original in _ORIGINALS.items():
            stand_in = getattr(module, name, None)
            if getattr(stand_in, "_tracegrad", False):
                FUNCTIONS.pop(stand_in, None)
                setattr(module, name, original)
        _ORIGINALS.clear()
        before, _MODULES[0] = _MODULES[0], {}
        if len(sys.modules) != len(before) or (before and next(reversed(sys.modules)) != next(reversed(before))):
            for key, module in list(sys.modules.items()):  # (imports append: the last key tells)
                if before.get(key) is not module and isinstance(module, types.ModuleType):
                    _restore_in(module)


@contextlib.contextmanager
def numpy_own_namespace():
    """NumPy's own functions in its namespace meanwhile, also while tapes record (their
    stand-ins put back after): for Numba, which keys its registry of NumPy functions on
    what it finds in NumPy's namespace when it starts, and types a kernel's ``np.empty``
    by the function it reads -- a stand-in there is not NumPy's, and the kernel would fail
    to compile (for the rest of the process, had Numba started then). Tapes recording on
    other threads wait for it to end before they start or stop."""
    with _LOCK:
        swapped = [(module, name, getattr(module, name, None), original)
                   for (module, name), original in _ORIGINALS.items()]
        kept_array = _tricks_own_array()
        for module, name, _, original in swapped:
            setattr(module, name, original)
        try:
            yield
        finally:
            for module, name, stand_in, _ in swapped:
                setattr(module, name, stand_in)
            if kept_array is not None:
                _tricks().array = kept_array


def _tricks_own_array():
    """``np.r_``'s module gets NumPy's own ``array`` back in place of the stand-in; the
    one it held before is returned."""
    tricks = _tricks()
    held = getattr(tricks, "array", None)
    if getattr(held, "_tracegrad", False):
        tricks.array = _ORIGINALS.get((np, "array"), held)
    return held


def _restore_in(module):
    """NumPy's own functions back in place of the stand-ins among ``module``'s globals."""
    names = vars(module)
    for name, value in list(names.items()):
        if numpy_own(value) is not value:
            names[name] = numpy_own(value)
