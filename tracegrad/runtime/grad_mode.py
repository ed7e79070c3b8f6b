"""Grad modes: whether operations are recorded for backward, per thread.

Two flags, as in PyTorch: grad mode (``no_grad``/``enable_grad``/``set_grad_enabled``) and
inference mode. Operations read one derived value, ``state.mode``: GRAD records when an
input requires grad, NO_GRAD records nothing, INFERENCE records nothing (even with grad
mode on) and marks new tensors as inference tensors, which autograd later refuses to
save. Each class works as a context manager and as a decorator.
"""
import functools
import inspect
import threading

__all__ = ["no_grad", "enable_grad", "set_grad_enabled", "inference_mode", "is_grad_enabled",
           "is_inference_mode_enabled", "state", "GRAD", "NO_GRAD", "INFERENCE", "swap", "restore"]

GRAD, NO_GRAD, INFERENCE = 0, 1, 2


class _State(threading.local):
    # Class attributes: every new thread starts with grad mode on, inference mode off.
    grad_enabled = True
    inference = False
    mode = GRAD
    off = None  # this thread's _Counted, once it has left GRAD mode


state = _State()


def swap(grad_enabled, inference=None):
    """Set the flags (``inference=None`` keeps it); return the previous flags."""
    prev = (state.grad_enabled, state.inference)
    if inference is None:
        inference = prev[1]
    mode = INFERENCE if inference else (GRAD if grad_enabled else NO_GRAD)
    was_off = state.mode != GRAD
    if mode != GRAD and not was_off:  # (counted before the mode changes: see OFF)
        with _OFF_LOCK:
            OFF[0] += 1
        token = state.off
        if token is None:
            token = state.off = _Counted()
        token.counted = True
    state.grad_enabled = grad_enabled
    state.inference = inference
    state.mode = mode
    if mode == GRAD and was_off:
        state.off.counted = False
        with _OFF_LOCK:
            OFF[0] -= 1
    return prev


# How many threads are in a mode other than GRAD (no_grad, inference mode, a backward pass
# without create_graph): while none is, every thread records, and the eager hot path
# skips reading the thread-local ``state`` (a slow attribute read) -- ``state.mode if
# OFF[0] else GRAD``. A thread counts itself before leaving GRAD and uncounts itself after
# returning to it, so the count is never 0 while some thread is out of GRAD mode. A thread
# that ends out of GRAD mode (a worker that called ``set_grad_enabled(False)``) is
# uncounted when its thread-local state goes: else every op of every other thread would
# read ``state`` from then on.
OFF = [0]
# (A plain lock: a _Counted is only freed with its thread's state, when that thread ends
# -- never while it is inside swap holding the lock; an RLock costs each no_grad 0.6 us.)
_OFF_LOCK = threading.Lock()


class _Counted:
    """``state.off``, made the first time a thread leaves GRAD mode: whether the thread is
    counted in OFF now. Freed with the thread's state when the thread ends, it uncounts
    the thread if the thread was still out of GRAD mode."""
    __slots__ = ("counted",)

    def __init__(self):
        self.counted = False

    def __del__(self):
        if self.counted:
            self.counted = False
            with _OFF_LOCK:
                OFF[0] -= 1


def restore(prev):
    swap(*prev)


def is_grad_enabled():
    return state.grad_enabled


def is_inference_mode_enabled():
    return state.inference


class _Mode:
    """Base: a context manager (and decorator) that sets the flags and restores them."""

    def _flags(self):
        """(grad_enabled, inference or None to keep) this mode sets."""
        raise NotImplementedError

    def __enter__(self):
        self._prev = swap(*self._flags())
        return None

    def __exit__(self, *exc):
        restore(self._prev)
        return False

    def __call__(self, fn):
        """Use as a decorator: run ``fn`` (or each step of a generator, including what is
        thrown into it and its closing) in this mode. The flags are read at each call."""
        if inspect.isgeneratorfunction(fn):
            @functools.wraps(fn)
            def gen_wrapper(*args, **kwargs):
                gen = fn(*args, **kwargs)
                step, value = gen.send, None
                while True:
                    prev = swap(*self._flags())
                    try:
                        out = step(value)
                    except StopIteration as stop:
                        return stop.value
                    finally:
                        restore(prev)
                    try:
                        value = yield out
                        step = gen.send
                    except GeneratorExit:
                        prev = swap(*self._flags())
                        try:
                            gen.close()
                        finally:
                            restore(prev)
                        raise
                    except BaseException as exc:  # thrown in: let the generator handle it
                        step, value = gen.throw, exc
            return gen_wrapper

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            prev = swap(*self._flags())
            try:
                return fn(*args, **kwargs)
            finally:
                restore(prev)
        return wrapper

    def clone(self):
        return type(self)()


class no_grad(_Mode):
    """Run without recording operations; results do not require grad."""

    def __new__(cls, orig_func=None):
        if orig_func is None:
            return super().__new__(cls)
        if not callable(orig_func):
            raise TypeError("no_grad takes no arguments; use it as `with tracegrad.no_grad():`")
        return cls()(orig_func)  # used bare as a decorator: @no_grad

    def _flags(self):
        return False, None


class enable_grad(_Mode):
    """Re-enable recording inside a ``no_grad`` block (not inside inference mode)."""

    def __new__(cls, orig_func=None):
        if orig_func is None:
            return super().__new__(cls)
        return cls()(orig_func)

    def _flags(self):
        return True, None


class set_grad_enabled(_Mode):
    """``set_grad_enabled(False)`` acts immediately (like a function call); used with
    ``with`` it restores the previous mode on exit, used as a decorator it restores it at
    once and applies the mode to each call."""

    def __init__(self, mode):
        if not isinstance(mode, bool):
            raise TypeError(f"set_grad_enabled() expects a bool, got {type(mode).__name__}")
        self._enabled = mode
        self._prev = swap(mode)

    def _flags(self):
        return self._enabled, None

    def __repr__(self):
        return f"tracegrad.autograd.grad_mode.set_grad_enabled(mode={self._enabled})"

    def __enter__(self):
        return None

    def __call__(self, fn):
        restore(self._prev)
        return super().__call__(fn)

    def clone(self):
        return set_grad_enabled(self._enabled)


class inference_mode(_Mode):
    """Like ``no_grad``, and tensors created inside are inference tensors: autograd refuses
    to save them for backward later, and they cannot be modified in place outside."""

    def __new__(cls, mode=True):
        if callable(mode):
            return cls()(mode)  # used bare as a decorator: @inference_mode
        return super().__new__(cls)

    def __init__(self, mode=True):
        if not isinstance(mode, bool):
            raise TypeError(f"inference_mode() expects a bool, got {type(mode).__name__}")
        self._enabled = mode

    def _flags(self):
        if self._enabled:
            return False, True
        return state.grad_enabled, False

    def clone(self):
        return inference_mode(self._enabled)
