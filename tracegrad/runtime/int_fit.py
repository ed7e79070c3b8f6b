"""Python integers written into integer tensors, as PyTorch converts them.

NumPy 2 refuses a Python int outside the array's dtype (``OverflowError``), but PyTorch's
checked conversion (c10's ``checked_convert``) lets a negative int down to ``-max`` into an
unsigned dtype and wraps it (``labels[i] = -1`` in a uint8 table is 255, the segmentation
"ignore" label), and names the C type when it refuses. Callers try NumPy first and come
here only when it raised ``OverflowError``, so the common case costs nothing.
"""
from .. import backend

__all__ = ["fit_int", "fit_float", "fit_numbers", "fit_array"]

_WRITE_NAMES = {"uint8": "uint8_t", "int8": "int8_t", "int16": "int16_t", "int32": "int",
                "int64": "int64_t"}
_TENSOR_NAMES = {"int32": "int", "int64": "long"}


def _limits(dtype):
    info = backend.cpu.iinfo(dtype)
    return int(info.min), int(info.max)


def _overflow(dtype, names=_WRITE_NAMES):
    return RuntimeError(f"value cannot be converted to type {names.get(dtype.name, dtype.name)} without overflow")


def fit_int(value, dtype, *, creation=False):
    """``value`` (a Python int) as written into an integer ``dtype`` (a NumPy dtype): a
    negative one within ``-max`` wrapped into an unsigned dtype; PyTorch's error where it
    does not fit (``creation``: the message of ``tensor()``, else of a write)."""
    if not -2 ** 63 <= value < 2 ** 63:
        raise ValueError("Overflow when unpacking long long")
    lo, hi = _limits(dtype)
    unsigned = lo == 0
    if not (-hi if unsigned else lo) <= value <= hi:
        raise _overflow(dtype, _TENSOR_NAMES if creation else _WRITE_NAMES)
    return value + hi + 1 if value < 0 and unsigned else value


def fit_float(value, dtype):
    """``value`` (a Python float) as written into an integer ``dtype``: truncated toward
    zero; PyTorch's error where it is not finite or lies outside the dtype's range."""
    lo, hi = _limits(dtype)
    if not lo <= value <= hi:  # (NaN fails too)
        raise _overflow(dtype)
    return int(value)


def fit_numbers(arrays, params, dtype):
    """``arrays`` and ``params`` with every Python int and float fitted into ``dtype``
    (:func:`fit_int`, :func:`fit_float`; any other dtype takes them as they are); raises
    PyTorch's error where one does not fit."""
    if dtype.kind not in "iu":
        return arrays, params

    def fit(v):
        if type(v) is int:
            return fit_int(v, dtype)
        return fit_float(v, dtype) if type(v) is float else v
    return tuple(fit(a) for a in arrays), {k: fit(v) for k, v in params.items()}


def fit_array(data, dtype):
    """Nested lists of Python ints as an array of integer ``dtype`` (``tensor()``'s
    conversion after NumPy refused one of them): every value checked, negatives wrapped."""
    try:
        wide = backend.cpu.asarray(data, dtype=backend.cpu.int64)
    except OverflowError:
        raise ValueError("Overflow when unpacking long long") from None
    if wide.size:
        for extreme in (int(wide.min()), int(wide.max())):
            fit_int(extreme, dtype, creation=True)
    return wide.astype(dtype)  # (two's complement: a negative wraps modulo 2 ** bits)
