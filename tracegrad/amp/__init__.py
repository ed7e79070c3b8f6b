"""``tracegrad.amp``: PyTorch's mixed-precision API, honestly.

tracegrad has no autocasting: operations always run in their inputs' dtypes. ``autocast``
therefore never lowers precision. Asked for a device that is not available it disables
itself with PyTorch's warning; asked to autocast where it could, it warns once that it
computes in full precision, and ``is_autocast_enabled()`` answers False either way (the
truth). ``GradScaler`` is complete (loss scaling, unscaling, skipped steps on inf/NaN,
scale growth and backoff): with full-precision arithmetic it is harmless and keeps
training loops that use it unchanged. ``get_autocast_dtype`` answers the dtype of the
innermost ``autocast`` of the device (its default outside one), as PyTorch's does.
"""
import threading
import warnings

from .grad_scaler import GradScaler

__all__ = ["autocast", "GradScaler", "is_autocast_available", "custom_fwd", "custom_bwd", "device_amp_module"]

_DEFAULT_DTYPES = {"cpu": "bfloat16", "cuda": "float16"}
_warned = [False]
_active = threading.local()  # .dtypes: device type -> the dtype of its innermost autocast


def is_autocast_available(device_type):
    """Whether autocast can run on ``device_type`` (it never lowers precision in tracegrad)."""
    return device_type in ("cpu", "cuda")


class autocast:
    """Context manager and decorator; see the module docstring."""

    def __init__(self, device_type, dtype=None, enabled=True, cache_enabled=None):
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        self.device_type, self._enabled = device_type, enabled
        self.fast_dtype = get_autocast_dtype(device_type) if dtype is None and device_type in _DEFAULT_DTYPES else dtype
        if device_type == "cuda" and enabled:
            from .. import cuda
            if not cuda.is_available():
                warnings.warn("CUDA is not available or torch_xla is imported. Disabling autocast.",
                              UserWarning, stacklevel=2)
                self._enabled = False
        elif device_type not in ("cpu", "cuda"):
            raise RuntimeError(f"User specified an unsupported autocast device_type '{device_type}'")

    def __enter__(self):
        if self._enabled and not _warned[0]:
            _warned[0] = True
            warnings.warn("tracegrad's autocast does not lower precision: operations run in their "
                          "inputs' dtypes (full precision)", UserWarning, stacklevel=2)
        current = _active.__dict__.setdefault("dtypes", {})
        self._outer = current.get(self.device_type)
        current[self.device_type] = self.fast_dtype
        return self

    def __exit__(self, *exc):
        current = _active.__dict__.setdefault("dtypes", {})
        if self._outer is None:
            current.pop(self.device_type, None)
        else:
            current[self.device_type] = self._outer
        return False

    def __call__(self, fn):
        import functools

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with autocast(self.device_type, self.fast_dtype, self._enabled):
                return fn(*args, **kwargs)
        return wrapper


def is_autocast_enabled(device_type=None):
    """False: tracegrad never autocasts (see the module docstring)."""
    return False


def get_autocast_dtype(device_type):
    """The dtype PyTorch would autocast to on ``device_type``: the innermost ``autocast``'s
    there, else the device's default."""
    active = _active.__dict__.get("dtypes", {}).get(device_type)
    if active is not None:
        return active
    from ..backend import dtypes
    name = _DEFAULT_DTYPES.get(device_type, "float16")
    if not hasattr(dtypes, name):
        raise TypeError(f"PyTorch autocasts {device_type} to {name}, which tracegrad has no dtype for")
    return getattr(dtypes, name)


def custom_fwd(fwd=None, *, device_type="cuda", cast_inputs=None):
    """Decorator for a custom Function's forward: nothing to do without autocasting."""
    return fwd if fwd is not None else (lambda f: f)


def custom_bwd(bwd=None, *, device_type="cuda"):
    return bwd if bwd is not None else (lambda f: f)


def device_amp_module(device_type, parent):
    """``<parent>.amp`` (``tracegrad.cuda.amp``, ``tracegrad.cpu.amp``): PyTorch's deprecated
    spellings of this module's names for one device, each warning as PyTorch does."""
    import sys
    import types

    from ..backend import dtypes

    def autocast_(enabled=True, dtype=getattr(dtypes, _DEFAULT_DTYPES[device_type]), cache_enabled=True):
        warnings.warn(f"`torch.{device_type}.amp.autocast(args...)` is deprecated. Please use "
                      f"`torch.amp.autocast('{device_type}', args...)` instead.", FutureWarning, stacklevel=2)
        return autocast(device_type, dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)

    def grad_scaler(*args, **kwargs):
        warnings.warn(f"`torch.{device_type}.amp.GradScaler(args...)` is deprecated. Please use "
                      f"`torch.amp.GradScaler('{device_type}', args...)` instead.", FutureWarning, stacklevel=2)
        return GradScaler(device_type, *args, **kwargs)
    module = types.ModuleType(parent + ".amp", device_amp_module.__doc__)
    module.autocast, module.GradScaler = autocast_, grad_scaler
    if device_type == "cuda":
        module.custom_fwd, module.custom_bwd = custom_fwd, custom_bwd
    sys.modules[module.__name__] = module
    return module
