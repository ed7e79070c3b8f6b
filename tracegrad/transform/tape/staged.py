"""Staged functions: trace once per signature, optimise, compile, cache, replay.

A :class:`Staged` wraps a *builder* -- code that, run on the recording tape, computes a
transform's outputs (a gradient, a jvp...). Called with concrete values it looks up the
compiled variants for the arguments' signature (shapes, dtypes, kinds and the values of
static arguments) and replays the first whose guards hold; if none does it traces the
builder again and caches the new variant (least recently used signatures and variants
are dropped past a bound). Called while another transform is tracing it simply runs
the builder on that tape, so transforms compose.
"""
import collections
import functools
import gc
import threading

from ...backend import ARRAY_TYPE_SET, namespace_of
from ...backend import cpu as np  # host-side type checks only

from ...runtime.tensor import Tensor, wrap
from ..reads import state_of
from .. import jit
from .codegen import GuardFailed, compile_tape, has_cpu_runs, tape_source
from .interpret import INTERPRET_OVER, Interpreted
from .optimize import optimize
from ..reads import Reads
from .randomness import Draws
from .tape import Tape, TracerError, Var
from .tracing import (active_tape, input_value, is_traceable, nested_transform, recording,
                      trace_arguments)
from ..tree import flatten, unflatten

__all__ = ["Staged", "kind_of", "as_kind"]

MAX_SIGNATURES = 32
MAX_VARIANTS = 8


def kind_of(x):
    """How a result for argument ``x`` is handed back: ``tensor``, ``float``, ``complex``
    (a Python number for a Python number) or ``array``."""
    if isinstance(x, Tensor):
        return "tensor"
    if type(x) is float:
        return "float"
    if type(x) is complex:
        return "complex"
    return "array"


def as_kind(value, kind, like=None):
    if kind == "float":
        return float(value)
    if kind == "complex":
        return complex(value)
    if kind == "tensor":
        return wrap(np.asarray(value) if isinstance(value, np.generic) else value)
    if isinstance(value, np.generic):  # NumPy answers 0-d arithmetic with scalars
        return np.asarray(value)
    return value


def _signature(leaves):
    key = []
    for x in leaves:
        if is_traceable(x):
            v = input_value(x)
            key.append((kind_of(x), v.shape, v.dtype.str, type(v).__module__))
        else:
            state = state_of(x)  # (what a plain object holds; None for numbers and the like)
            try:
                hash(x)
            except TypeError:
                key.append(_Identity(x, state))
                continue
            key.append(("static", type(x), x) if state is None else ("static", type(x), x, state))
    return tuple(key)


class _Identity:
    """A cache-key part for an unhashable static argument: that very object (kept alive
    by the key, so its id cannot be reused by another object while it is cached)."""

    __slots__ = ("obj", "state")

    def __init__(self, obj, state=None):
        self.obj, self.state = obj, state  # (state: what a plain object held, see state_of)

    def __eq__(self, other):
        return type(other) is _Identity and other.obj is self.obj and other.state == self.state

    def __hash__(self):
        return id(self.obj)


class _Variant:
    __slots__ = ("fn", "_source", "tape", "spec", "kinds", "passthrough", "single", "calls",
                 "name", "hints")

    def __init__(self, fn, source, tape, spec, kinds, passthrough, name=None, hints=()):
        self.fn, self._source, self.tape = fn, source, tape
        self.calls, self.name, self.hints = 0, name, hints  # (for compiling it with kernels)
        self.spec, self.kinds, self.passthrough = spec, kinds, passthrough
        # one array out, handed back as it is: the common case, answered without rebuilding
        self.single = spec is None and kinds == ["array"] and passthrough == [_TAPE]

    @property
    def source(self):
        """The generated source (an interpreted tape's is written when first read)."""
        return self.fn.source if self._source is None else self._source

    def heat(self):
        """Count a replay; at the jit.HOT_CALLS-th, compile the tape again with its
        elementwise runs as CPU kernels (where there are any, fusion is on and Numba is
        installed). An interpreted (very long) tape stays as it is."""
        self.calls += 1
        if self.calls == jit.HOT_CALLS + 1 and self._source is not None and has_cpu_runs(self.tape):
            self.fn, self._source = compile_tape(self.tape, self.name, self.hints, cpu_kernels=True)

    def fused_source(self):
        """The source this variant runs once hot: with its CPU kernels, where it gets any."""
        if self._source is not None and has_cpu_runs(self.tape):
            return tape_source(self.tape, self.name, self.hints, cpu_kernels=True)
        return self.source

    def finish(self, flat):
        if self.single:
            out = flat[0]
            return out if type(out) is _ND else as_kind(out, "array")
        it = iter(flat)
        # values that did not come from the tape (aux data, constants) are handed out as
        # copies, so that changing one cannot change what later calls return
        out = [next(it) if p is _TAPE else (p.copy() if hasattr(p, "copy") else p)
               for p in self.passthrough]
        return unflatten(self.spec, [as_kind(v, k) for v, k in zip(out, self.kinds)])


class Staged:
    """A transformed function (see the module docstring). ``.source`` is the generated
    code of the last signature called, ``.tape`` its optimised tape, ``.mode`` "tape"."""

    def __init__(self, f, build, name, mode="tape", out_hints=None):
        self.f = f
        self._build = build
        self._name = name
        self.mode = mode
        self._out_hints = out_hints
        self._cache = collections.OrderedDict()
        self._fast = {}   # signature of plain arrays/floats -> the same variant list
        self._lock = threading.Lock()  # guards the cache's structure, not the replays
        self._last = None
        self._reads = None  # what the cached traces read outside their arguments (see reads.py)
        functools.update_wrapper(self, f, updated=())

    @property
    def source(self):
        if self._last is None:
            raise AttributeError("no source yet: call the function once (the code is "
                                 "generated for the signature of its arguments)")
        return self._last.source

    @property
    def fused_source(self):
        """``source`` as it reads once the function is hot (its elementwise runs compiled
        into CPU kernels, see :mod:`tracegrad.transform.jit`)."""
        if self._last is None:
            raise AttributeError("no source yet: call the function once (the code is "
                                 "generated for the signature of its arguments)")
        return self._last.fused_source()

    @property
    def tape(self):
        if self._last is None:
            raise AttributeError("no tape yet: call the function once")
        return self._last.tape

    def __repr__(self):
        return f"<{self.mode}-staged {self._name} of {getattr(self.f, '__qualname__', self.f)!r}>"

    def __get__(self, obj, cls=None):
        return self if obj is None else functools.partial(self, obj)

    def __call__(self, *args, **kwargs):
        tape = active_tape()
        if tape is not None:  # inside another transform: record into its tape
            tape.nested += 1
            try:  # (with its own derivatives, even under no_grad(); see nested_transform)
                with nested_transform() as nested:
                    out, _ = self._build(args, kwargs, None)
            finally:
                tape.nested -= 1
            return nested.result(out)
        reads = self._reads
        if reads is not None and reads.changed():  # a name the function reads was rebound
            with self._lock:
                self._cache.clear()
                self._fast.clear()
                self._reads = None
        if not kwargs:  # fast path: NumPy arrays and Python floats only
            key = _fast_key(args)
            if key is not None:
                variants = self._fast.get(key)
                if variants is not None:
                    out = self._replay(variants, [_F64(a) if type(a) is float else a for a in args])
                    if out is not _MISS:
                        return out
        leaves, spec = flatten((args, kwargs))
        key = (spec, _signature(leaves))
        variants = self._cache.get(key)
        if variants is not None:
            self._cache.move_to_end(key)
            out = self._replay(variants, [input_value(x) for x in leaves if is_traceable(x)])
            if out is not _MISS:
                return out
        return self._stage(key, leaves, spec)

    def _replay(self, variants, inputs):
        """The result of the first variant whose guards hold (moved to the front), or _MISS."""
        for j, variant in enumerate(list(variants) if len(variants) > 1 else variants):
            if variant.tape.writes_inputs:
                refuse_shared(inputs, variant.tape.captured_by_reference())
            try:
                flat = variant.fn(*inputs)
            except GuardFailed:
                continue
            variant.heat()
            if j:
                with self._lock:
                    if variant in variants:
                        variants.remove(variant)
                        variants.insert(0, variant)
            self._last = variant
            return variant.finish(flat)
        return _MISS

    def _stage(self, key, leaves, spec):
        # A long trace makes hundreds of thousands of objects that stay alive until it is
        # compiled; the cyclic collector's full passes over them cost a quarter of the
        # staging time, and find nothing to free. It is paused meanwhile.
        paused = gc.isenabled()
        if paused:
            gc.disable()
        try:
            return self._stage_paused(key, leaves, spec)
        finally:
            if paused:
                gc.enable()

    def _stage_paused(self, key, leaves, spec):
        tape = Tape(getattr(self.f, "__name__", "f"))
        tape.staged = True
        args, kwargs = unflatten(spec, leaves)
        kinds = unflatten(spec, [kind_of(x) for x in leaves])
        draws = Draws(self.f)
        with recording(tape):
            targs, tkwargs = trace_arguments(tape, self.f, leaves, spec)
            out, out_kinds = self._build(targs, tkwargs, kinds)
        # What the function reads, noted after each trace: __call__ dropped the cache if
        # anything changed before this call, so a change seen now is the function's own
        # (a counter it appends to), made again by the next trace, not a stale value.
        self._reads = Reads(self.f)
        self._reads.watch_contents()
        if tape.writes_inputs:
            refuse_shared([input_value(x) for x in leaves if is_traceable(x)], tape.captured_by_reference())
        tape.outputs = out
        out_leaves, out_spec = flatten(out)
        values = [v.value if isinstance(v, Var) else v for v in out_leaves]
        tape.release()  # from here on only shapes, dtypes and constants are read
        optimize(tape)
        opt_leaves = flatten(tape.outputs)[0]
        traced_out = [v for v in opt_leaves if isinstance(v, Var)]
        tape.outputs = traced_out
        hints = self._out_hints(len(traced_out)) if self._out_hints else ()
        if len(tape.eqns) > INTERPRET_OVER:  # long: interpreted (its source written on demand)
            fn, source = Interpreted(tape, self._name, hints), None
        else:
            fn, source = compile_tape(tape, self._name, hints)
        passthrough = [_TAPE if isinstance(v, Var) else v for v in opt_leaves]
        kinds_flat = flatten(out_kinds)[0] if out_kinds is not None else ["array"] * len(out_leaves)
        variant = _Variant(fn, source, tape, out_spec, kinds_flat, passthrough, self._name, hints)
        if draws.happened() or tape.writes_captures:  # (random numbers drawn, or an array it read
            # by reference written into: this trace is for this call only)
            self._last = variant
        else:
            with self._lock:
                self._remember(key, args, kwargs, variant)
        return unflatten(out_spec, [as_kind(_copy_if_const(v, o), k)
                                    for v, o, k in zip(values, opt_leaves, kinds_flat)])

    def _remember(self, key, args, kwargs, variant):
        """Cache a new variant first in its signature's list (both bounded, LRU)."""
        variants = self._cache.setdefault(key, [])
        if not kwargs:
            fast = _fast_key(args)
            if fast is not None:  # the same list: the two keys name one signature
                self._fast[fast] = variants
        variants.insert(0, variant)
        del variants[MAX_VARIANTS:]
        self._cache.move_to_end(key)
        while len(self._cache) > MAX_SIGNATURES:
            _, dropped = self._cache.popitem(last=False)
            for k in [k for k, v in list(self._fast.items()) if v is dropped]:
                del self._fast[k]
        self._last = variant


_ND = np.ndarray
_MISS = object()
_TAPE = object()  # a result leaf computed by the compiled tape (the others are constants)


def refuse_shared(inputs, captured=()):
    """Refuse arguments that share memory with each other (``f(a, a)``, ``f(a, a[1:])``) or
    with an array the function reads from outside (``f(G)`` for a global ``G`` it reads)
    for a function that writes into an argument in place: NumPy's write changes the other
    too, while the tape takes each for a value of its own -- a wrong result, silently. (AST
    mode checks the same at run time: aliasing.check_unaliased.)"""
    arrays = [(k, a) for k, a in enumerate(inputs) if hasattr(a, "shape") and getattr(a, "size", 0)]
    for n, (i, a) in enumerate(arrays):
        for j, b in arrays[n + 1:]:
            if type(a) is type(b) and namespace_of(a).may_share_memory(a, b):
                raise TracerError(f"arguments {i} and {j} (counting the arrays passed, in order) share "
                                  "memory, and the function writes into one of them in place: NumPy's "
                                  "write changes the other too, which the tape, following values, "
                                  "would not; pass copies")
        for b in captured:
            if type(a) is type(b) and namespace_of(a).may_share_memory(a, b):
                raise TracerError(f"argument {i} (counting the arrays passed, in order) shares memory with "
                                  f"an array of shape {tuple(b.shape)} the function reads from outside (a "
                                  "global, a closure's variable, an attribute), and the function writes "
                                  "into its arguments in place: NumPy's write changes that array too, "
                                  "which the tape, following values, would not; pass a copy")


def _F64(x):
    return np.asarray(x, dtype=np.float64)


def _fast_key(args):
    """A cache key for arguments that are all arrays (of any device) or Python floats,
    else None."""
    key = []
    for a in args:
        t = type(a)
        if t is _ND:
            key.append((a.shape, a.dtype))
        elif t in ARRAY_TYPE_SET:
            key.append((t, a.shape, a.dtype))
        elif t is float:
            key.append(float)
        else:
            return None
    return tuple(key)


def _copy_if_const(value, var):
    """A first call's result: constants and values that bypassed the tape are copied (the
    cached variant keeps the originals)."""
    if isinstance(var, Var) and var.kind != "const":
        return value
    return value.copy() if hasattr(value, "copy") else value
