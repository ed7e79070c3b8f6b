"""Process-wide switches PyTorch programs set: deterministic algorithms, float32 matmul
precision, flushing denormals. tracegrad records them and answers truthfully what they
change here: on the CPU every kernel is NumPy's and deterministic, float32 matmuls are
always computed in float32 (no TF32 or bfloat16 passes), and denormals are kept, so no
switch changes a result. Also ``get_device_module``, the module of a device type.
"""
import warnings

__all__ = ["use_deterministic_algorithms", "are_deterministic_algorithms_enabled",
           "is_deterministic_algorithms_warn_only_enabled", "set_deterministic_debug_mode",
           "get_deterministic_debug_mode", "set_float32_matmul_precision", "get_float32_matmul_precision",
           "set_flush_denormal", "get_device_module"]

_state = {"deterministic": False, "warn_only": False, "precision": "highest"}
_PRECISIONS = ("highest", "high", "medium")
_DEBUG_MODES = {"default": 0, "warn": 1, "error": 2}


def use_deterministic_algorithms(mode, *, warn_only=False):
    if not isinstance(mode, bool):
        raise TypeError(f"_set_deterministic_algorithms(): argument 'mode' (position 1) must be bool, "
                        f"not {type(mode).__name__}")
    if not isinstance(warn_only, bool):
        raise TypeError(f"_set_deterministic_algorithms(): argument 'warn_only' must be bool, "
                        f"not {type(warn_only).__name__}")
    _state["deterministic"], _state["warn_only"] = mode, warn_only and mode


def are_deterministic_algorithms_enabled():
    return _state["deterministic"]


def is_deterministic_algorithms_warn_only_enabled():
    return _state["warn_only"]


def set_deterministic_debug_mode(debug_mode):
    """``'default'``/0, ``'warn'``/1 or ``'error'``/2, as PyTorch spells them."""
    if isinstance(debug_mode, str):
        if debug_mode not in _DEBUG_MODES:
            raise RuntimeError("invalid value of debug_mode, expected one of `default`, `warn`, "
                               f"`error`, but got {debug_mode}")
        debug_mode = _DEBUG_MODES[debug_mode]
    elif not isinstance(debug_mode, int) or isinstance(debug_mode, bool):
        raise TypeError(f"debug_mode must be str or int, but got {type(debug_mode)}")
    if debug_mode not in (0, 1, 2):
        raise RuntimeError(f"invalid value of debug_mode, expected 0, 1, or 2, but got {debug_mode}")
    use_deterministic_algorithms(debug_mode != 0, warn_only=debug_mode == 1)


def get_deterministic_debug_mode():
    if not _state["deterministic"]:
        return 0
    return 1 if _state["warn_only"] else 2


def set_float32_matmul_precision(precision):
    """Recorded (``get_float32_matmul_precision`` and ``backends.cuda.matmul.allow_tf32``
    report it); tracegrad's float32 matmuls stay full float32 whatever it says."""
    if precision not in _PRECISIONS:
        warnings.warn(f"{precision} is not one of 'highest', 'high', or 'medium'; the current"
                      "setFloat32MatmulPrecision call has no effect.", UserWarning, stacklevel=2)
        return
    _state["precision"] = precision


def get_float32_matmul_precision():
    return _state["precision"]


def set_flush_denormal(mode):
    """Whether flushing denormal floats to zero could be set: never here (NumPy's kernels
    keep denormals), so enabling it answers False -- PyTorch's answer where the CPU cannot
    -- and disabling it, which is how tracegrad always computes, answers True."""
    return not mode


def get_device_module(device=None):
    """The module of a device type: ``tracegrad.cuda`` for ``'cuda'``, ``tracegrad.cpu``
    for ``'cpu'``; with no device, the accelerator's (CUDA's when available), else the CPU's."""
    import tracegrad
    from ..backend import device as _device
    if device is None:
        return tracegrad.cuda if tracegrad.cuda.is_available() else tracegrad.cpu
    return tracegrad.cuda if _device(device).type == "cuda" else tracegrad.cpu
