"""Grad modes: whether operations are recorded for backward, per thread.

``state.mode`` is read once per operation: GRAD records when an input requires grad,
NO_GRAD records nothing, INFERENCE records nothing and marks new tensors as inference
tensors (which autograd later refuses to save). Each class works as a context manager
and as a decorator, like PyTorch's.
"""
import functools
import inspect
import threading

__all__ = ["no_grad", "enable_grad", "set_grad_enabled", "inference_mode", "is_grad_enabled",
           "is_inference_mode_enabled", "state", "GRAD", "NO_GRAD", "INFERENCE"]

GRAD, NO_GRAD, INFERENCE = 0, 1, 2


class _State(threading.local):
    mode = GRAD  # class attribute: every new thread starts in grad mode


state = _State()


def is_grad_enabled():
    return state.mode == GRAD


def is_inference_mode_enabled():
    return state.mode == INFERENCE


class _Mode:
    """Base: a context manager that sets ``state.mode`` and restores it on exit."""

    _target = GRAD

    def __enter__(self):
        self._prev = state.mode
        state.mode = self._target
        return None

    def __exit__(self, *exc):
        state.mode = self._prev
        return False

    def __call__(self, fn):
        """Use as a decorator: run ``fn`` (or each step of a generator) in this mode."""
        target = self._target
        if inspect.isgeneratorfunction(fn):
            @functools.wraps(fn)
            def gen_wrapper(*args, **kwargs):
                gen = fn(*args, **kwargs)
                value = None
                while True:
                    prev, state.mode = state.mode, target
                    try:
                        value = gen.send(value)
                    except StopIteration as stop:
                        return stop.value
                    finally:
                        state.mode = prev
                    value = yield value
            return gen_wrapper

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            prev, state.mode = state.mode, target
            try:
                return fn(*args, **kwargs)
            finally:
                state.mode = prev
        return wrapper

    def clone(self):
        return type(self)()


class no_grad(_Mode):
    """Run without recording operations; results do not require grad."""

    _target = NO_GRAD

    def __new__(cls, orig_func=None):
        if orig_func is None:
            return super().__new__(cls)
        if not callable(orig_func):
            raise TypeError("no_grad takes no arguments; use it as `with tracegrad.no_grad():`")
        return cls()(orig_func)  # used bare as a decorator: @no_grad


class enable_grad(_Mode):
    """Re-enable recording inside a ``no_grad`` block."""

    _target = GRAD


class set_grad_enabled(_Mode):
    """``set_grad_enabled(False)`` acts immediately (like a function call) and, used with
    ``with``, restores the previous mode on exit."""

    def __init__(self, mode):
        if not isinstance(mode, bool):
            raise TypeError(f"set_grad_enabled() expects a bool, got {type(mode).__name__}")
        self._target = GRAD if mode else NO_GRAD
        self._prev = state.mode
        state.mode = self._target

    def __enter__(self):
        return None

    def clone(self):
        return set_grad_enabled(self._target == GRAD)


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
        self._target = INFERENCE if mode else None

    def __enter__(self):
        self._prev = state.mode
        if self._target is not None:
            state.mode = self._target
        return None

    def __call__(self, fn):
        if self._target is None:
            return fn
        return super().__call__(fn)

    def clone(self):
        return inference_mode(self._target == INFERENCE)
