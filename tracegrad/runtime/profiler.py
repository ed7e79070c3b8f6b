"""The profiler: time every eager operation and every backward node.

``profile`` installs an observer in ``dispatch`` (the eager entry points then call back
through it) and in the engine (which wraps each node's backward). Each call becomes an
event with its wall time, the input shapes (``record_shapes``), the bytes its results
newly allocated (``profile_memory``) and the user's source line (``with_stack``). Events
nest: one opened while another runs on the same thread is its child, which is how the
report separates an event's "self" time from its total. With no profiler active the
cost is one ``is None`` test per operation.
"""
import itertools
import threading
import time
import warnings

from .. import backend
from . import dispatch
from .anomaly import user_frames
from .profiler_events import EventList, FunctionEvent
from .tensor import Tensor

__all__ = ["profile", "record_function"]

_START = threading.Lock()
_NO_KWARGS = {}
_OBSERVED = {"_observed": True}


class _Observer:
    """Records events for one active ``profile`` (from every thread)."""

    def __init__(self, record_shapes, profile_memory, with_stack):
        self.record_shapes = record_shapes
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.events = []
        self._ids = itertools.count()
        self._local = threading.local()

    def open(self, name, operands=()):
        stack = getattr(self._local, "stack", None)
        if stack is None:
            stack = self._local.stack = []
        shapes = [_shape_of(a) for a in operands] if self.record_shapes else []
        where = _source_lines() if self.with_stack else None
        event = FunctionEvent(next(self._ids), name, threading.get_native_id(), shapes, where,
                              stack[-1] if stack else None)
        if stack:
            stack[-1].children.append(event)
        stack.append(event)
        self.events.append(event)
        event.start_ns = time.perf_counter_ns()
        return event

    def close(self, event, results=None, operands=()):
        event.end_ns = time.perf_counter_ns()
        self._local.stack.pop()
        if self.profile_memory:
            event.cpu_memory_usage = (sum(c.cpu_memory_usage for c in event.children)
                                      if results is None else _new_bytes(results, operands))

    def span(self, name, fn, args, operands, kwargs=_NO_KWARGS):
        """``fn(*args, **kwargs)`` recorded as event ``name``."""
        event = self.open(name, operands)
        out = None
        try:
            out = fn(*args, **kwargs)
            return out
        finally:
            self.close(event, out, operands)

    def call(self, name, fn, args, operands):
        """An eager entry point calling itself back through the observer: operation
        ``name`` is reported as ``tracegrad::name`` (PyTorch names its ops ``aten::name``)."""
        return self.span("tracegrad::" + name, fn, args, operands, _OBSERVED)

    def timed_backward(self, apply):
        """The engine's ``apply(node, grads, graph)``, each call an event named after the node."""
        return lambda node, grads, graph: self.span(node.name(), apply, (node, grads, graph), grads)

    def timed_accumulate(self, accumulate):
        """The engine's accumulation into a leaf's ``.grad``, named as PyTorch names it."""
        def timed(var, g, graph, fresh, hooks=True):
            return self.span("torch::autograd::AccumulateGrad", accumulate,
                             (var, g, graph, fresh, hooks), (g,))
        return timed


def _shape_of(value):
    shape = getattr(value, "shape", None)
    return list(shape) if shape is not None and not isinstance(value, (int, float)) else []


def _new_bytes(results, operands):
    """Bytes of the arrays in ``results`` that were allocated by the call: not views, and
    not one of the operands (an in-place operation hands its operand back)."""
    if not isinstance(results, (tuple, list)):
        results = (results,)
    seen = {id(_array(a)) for a in operands}
    total = 0
    for r in results:
        a = _array(r)
        if a is None or id(a) in seen or not hasattr(a, "nbytes"):
            continue
        seen.add(id(a))
        if backend.namespace_of(a).owns_data(a):
            total += a.nbytes
    return total


def _array(value):
    return value._data if isinstance(value, Tensor) else value


def _source_lines():
    """The user's frames, innermost first, as PyTorch prints them: ``file(line): function``."""
    return [f"{f.filename}({f.lineno}): {f.name}" for f in reversed(user_frames())]


class profile:
    """Record what runs inside a ``with`` block; the report comes after the block.

    ``with tracegrad.autograd.profiler.profile(record_shapes=True) as prof: ...`` then
    ``print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=10))`` or
    ``prof.export_chrome_trace("trace.json")``. Times are host wall-clock times.
    ``profile_name`` (not a PyTorch argument; study notes use it) writes the Chrome trace
    to that path when the block ends.
    """

    def __init__(self, enabled=True, *, use_cuda=False, use_device=None, record_shapes=False,
                 with_flops=False, profile_memory=False, with_stack=False, with_modules=False,
                 use_kineto=False, use_cpu=True, profile_name=None):
        for flag, value in (("with_flops", with_flops), ("with_modules", with_modules)):
            if value:
                raise NotImplementedError(f"profile({flag}=True) is not supported by tracegrad's "
                                          "profiler; times, shapes, memory and stacks are")
        if not use_cpu:
            raise ValueError("profile(use_cpu=False): tracegrad's profiler records host-side "
                             "events only, so use_cpu must stay True")
        if use_cuda or use_device not in (None, "cpu"):
            warnings.warn("tracegrad's profiler records host wall-clock times only; device "
                          "kernel times are not measured", UserWarning, stacklevel=2)
        self.enabled = enabled
        self.record_shapes = record_shapes
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.profile_name = profile_name
        self.function_events = None
        self.entered = False
        self._observer = None
        self._start_ns = 0

    def __enter__(self):
        if not self.enabled:
            return self
        if self.entered:
            raise RuntimeError("Profiler context manager is not reentrant")
        observer = _Observer(self.record_shapes, self.profile_memory, self.with_stack)
        with _START:
            if dispatch.observer is not None:
                raise RuntimeError("a profiler is already running; tracegrad records one "
                                   "profile at a time, so end the other one first")
            dispatch.observer = observer
        self.entered = True
        self._observer = observer
        self._start_ns = time.perf_counter_ns()
        return self

    def __exit__(self, *exc):
        if not self.enabled:
            return False
        with _START:
            if dispatch.observer is self._observer:
                dispatch.observer = None
        events = sorted(self._observer.events, key=lambda e: e.id)
        self.function_events = EventList(events, self.profile_memory, self._start_ns)
        if self.profile_name is not None:
            self.export_chrome_trace(self.profile_name)
        return False

    def _events(self):
        if not self.enabled:
            raise RuntimeError("the profiler was created with enabled=False and recorded nothing")
        if self.function_events is None:
            raise RuntimeError("Profiler didn't finish running: read the results after the "
                               "`with profile()` block has ended")
        return self.function_events

    def events(self):
        return self._events()

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0):
        """Events merged by name (and input shapes, and source lines, when asked)."""
        if group_by_input_shape and not self.record_shapes:
            raise RuntimeError("key_averages(group_by_input_shape=True) needs the profile "
                               "to be recorded with record_shapes=True")
        if group_by_stack_n and not self.with_stack:
            raise RuntimeError("key_averages(group_by_stack_n=...) needs the profile to be "
                               "recorded with with_stack=True")
        return self._events().key_averages(group_by_input_shapes=group_by_input_shape,
                                           group_by_stack_n=group_by_stack_n)

    def table(self, sort_by=None, row_limit=100, **kwargs):
        return self._events().table(sort_by=sort_by, row_limit=row_limit, **kwargs)

    def export_chrome_trace(self, path):
        return self._events().export_chrome_trace(path)

    def total_average(self):
        return self._events().total_average()

    @property
    def self_cpu_time_total(self):
        return self._events().self_cpu_time_total

    def __str__(self):
        return str(self._events())


class record_function:
    """Mark a block (or, as a decorator, a function) as one event named ``name`` in the
    active profile; with no profile running it does nothing."""

    def __init__(self, name):
        if not isinstance(name, str):
            raise TypeError(f"record_function() name must be a str, not {type(name).__name__}")
        self.name = name
        self._open = None

    def __enter__(self):
        observer = dispatch.observer
        if observer is not None:
            self._open = (observer, observer.open(self.name))
        return self

    def __exit__(self, *exc):
        if self._open is not None:
            observer, event = self._open
            self._open = None
            observer.close(event)
        return False

    def __call__(self, fn):
        name = self.name

        def wrapper(*args, **kwargs):
            with record_function(name):
                return fn(*args, **kwargs)
        wrapper.__name__, wrapper.__doc__, wrapper.__wrapped__ = fn.__name__, fn.__doc__, fn
        return wrapper

