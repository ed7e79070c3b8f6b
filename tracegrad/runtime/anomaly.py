"""Anomaly detection: find the forward operation behind an error in backward.

While enabled, every recorded node keeps the traceback of the forward call that made it;
an error raised in that node's backward is preceded by a warning showing that traceback,
and (with ``check_nan``) a node whose gradients contain NaN raises PyTorch's error. The
setting is process-wide, as in PyTorch. Disabled, the cost is one flag test per node.
"""
import functools
import os
import traceback
import warnings

from . import dispatch
from .vmapped import is_vmapped

__all__ = ["detect_anomaly", "set_detect_anomaly", "is_anomaly_enabled",
           "is_anomaly_check_nan_enabled", "record_trace", "checked_apply"]

_check_nan = [True]


def is_anomaly_enabled():
    return dispatch.anomaly_enabled


def is_anomaly_check_nan_enabled():
    return _check_nan[0]


def _set(enabled, check_nan):
    prev = (dispatch.anomaly_enabled, _check_nan[0])
    dispatch.anomaly_enabled = bool(enabled)
    _check_nan[0] = bool(check_nan)
    return prev


class detect_anomaly:
    """Context manager (and decorator) enabling anomaly detection inside it."""

    def __init__(self, check_nan=True):
        self.check_nan = check_nan

    def __enter__(self):
        warnings.warn("Anomaly Detection has been enabled. This mode will increase the runtime "
                      "and should only be enabled for debugging.", UserWarning, stacklevel=2)
        self._prev = _set(True, self.check_nan)
        return self

    def __exit__(self, *exc):
        _set(*self._prev)
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.__class__(self.check_nan):
                return fn(*args, **kwargs)
        return wrapper


class set_detect_anomaly:
    """``set_detect_anomaly(True)`` switches detection on at once; used with ``with`` it
    restores the previous setting on exit."""

    def __init__(self, mode, check_nan=True):
        self._prev = _set(mode, check_nan)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _set(*self._prev)
        return False


_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def user_frames():
    """The current call stack without tracegrad's own frames (the same for every
    operation, so they say nothing about where in the user's code it was called)."""
    return [f for f in traceback.extract_stack() if not f.filename.startswith(_PACKAGE)]


def record_trace(node):
    """Remember where in the user's forward code ``node`` was made, as PyTorch does: in
    ``node.metadata["traceback_"]``, one formatted frame per item."""
    node.metadata["traceback_"] = traceback.format_list(user_frames())


def checked_apply(node, grads, graph):
    """``node._apply`` with anomaly reporting: the forward traceback on error, NaN checks."""
    try:
        in_grads = node._apply(grads, graph)
    except Exception:
        _warn_trace(node)
        raise
    if _check_nan[0]:
        for j, g in enumerate(in_grads):
            while graph and is_vmapped(g):  # every sample's values (its _data is sample 0 only)
                g = g._phys
            data = g._data if graph and g is not None else g
            if data is not None and data.dtype.kind in "fc" and bool((data != data).any()):
                _warn_trace(node)
                raise RuntimeError(f"Function '{node.name()}' returned nan values in its {j}th output.")
    return in_grads


def _warn_trace(node):
    trace = (node._extra or {}).get("metadata", {}).get("traceback_")
    if trace is None:
        warnings.warn(f"Error detected in {node.name()}. No forward pass information available. "
                      "Enable detect anomaly during forward pass for more information.",
                      UserWarning, stacklevel=3)
    else:
        warnings.warn(f"Error detected in {node.name()}. Traceback of forward call that caused "
                      f"the error:\n{''.join(trace)}", UserWarning, stacklevel=3)
