"""Tensor printing that reproduces ``repr(torch.Tensor)`` character for character.

Users compare our output with PyTorch's (and doctests copy it), so this module follows
PyTorch's printing rules: one shared column format per tensor (integer-valued floats as
``2.``, fixed ``precision`` decimals, or scientific notation when magnitudes span more than
1000x), wrapping at ``linewidth``, ``...`` summaries past ``threshold`` elements, and the
``dtype=``/``size=``/``grad_fn=`` suffixes. It works on NumPy arrays only and imports nothing
from tracegrad, so the tensor class can call it without an import cycle.
"""
import dataclasses
import math
from typing import Optional

import numpy as np

__all__ = ["set_printoptions", "get_printoptions", "format_values", "tensor_repr"]


@dataclasses.dataclass
class _PrintOptions:
    precision: int = 4
    threshold: float = 1000
    edgeitems: int = 3
    linewidth: int = 80
    sci_mode: Optional[bool] = None


# Process-wide like PyTorch's: set_printoptions in one thread affects every thread's prints.
_OPTS = _PrintOptions()

# (precision, threshold, edgeitems, linewidth) of PyTorch's named profiles.
_PROFILES = {
    "default": (4, 1000, 3, 80),
    "short": (2, 1000, 2, 80),
    "full": (4, math.inf, 3, 80),
}


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None,
                     profile=None, sci_mode=None):
    """Set the print options, like ``torch.set_printoptions``.

    A ``profile`` is applied first and explicit arguments override it; an unknown profile
    is ignored. As in PyTorch, ``sci_mode`` is always overwritten (``None`` = automatic).
    """
    if profile in _PROFILES:
        (_OPTS.precision, _OPTS.threshold, _OPTS.edgeitems,
         _OPTS.linewidth) = _PROFILES[profile]
    if precision is not None:
        _OPTS.precision = precision
    if threshold is not None:
        _OPTS.threshold = threshold
    if edgeitems is not None:
        _OPTS.edgeitems = edgeitems
    if linewidth is not None:
        _OPTS.linewidth = linewidth
    _OPTS.sci_mode = sci_mode


def get_printoptions():
    """The current options as a dict that ``set_printoptions(**opts)`` accepts back."""
    return dataclasses.asdict(_OPTS)


class _Formatter:
    """The column format shared by all elements (or all real / all imaginary parts).

    Mode and width are chosen from the nonzero finite values only, in float64: that is
    what PyTorch does, so float32 ``0.1`` prints as ``0.1000`` and zeros, nan and inf
    never switch a tensor into scientific notation.
    """

    def __init__(self, sample, floating):
        self.floating = floating
        self.precision = _OPTS.precision
        self.int_mode, self.sci_mode, self.width = True, False, 1
        if not floating:
            self.width = max([1] + [len(str(v)) for v in sample.reshape(-1).tolist()])
            return
        flat = sample.reshape(-1).astype(np.float64)
        vals = np.unique(flat[np.isfinite(flat) & (flat != 0)])
        if vals.size == 0:
            return
        lo, hi = float(np.abs(vals).min()), float(np.abs(vals).max())
        self.int_mode = bool(np.all(vals == np.ceil(vals)))
        if _OPTS.sci_mode is None:
            self.sci_mode = hi / lo > 1000.0 or hi > 1.0e8 or lo < 1.0e-4
        else:
            self.sci_mode = bool(_OPTS.sci_mode)
        if self.sci_mode:
            spec, extra = f".{self.precision}e", 0
        elif self.int_mode:
            spec, extra = ".0f", 1  # room for the trailing "." that marks a float
        else:
            spec, extra = f".{self.precision}f", 0
        self.width = max(len(format(v, spec)) + extra for v in vals.tolist())

    def format(self, value):
        """One element, right-aligned to the column width (longer nan/inf just overflow)."""
        if not self.floating:
            text = str(value)
        elif self.sci_mode:
            text = format(value, f"{self.width}.{self.precision}e")
        elif self.int_mode:
            text = format(value, ".0f") + ("." if math.isfinite(value) else "")
        else:
            text = format(value, f".{self.precision}f")
        return text.rjust(self.width)


def _element(value, real_fmt, imag_fmt):
    if imag_fmt is None:
        return real_fmt.format(value)
    real = real_fmt.format(value.real)
    imag = (imag_fmt.format(value.imag) + "j").lstrip()
    # A negative (or "-0.") imaginary part brings its own sign.
    return real + imag if imag[0] in "+-" else real + "+" + imag


def _edge_indices(n, summarize):
    """Rows to show along one axis: all of them, or edgeitems per side (None marks "...")."""
    edge = _OPTS.edgeitems
    if summarize and n > 2 * edge:
        return list(range(edge)) + [None] + list(range(n - edge, n))
    return list(range(n))


def _nested(arr, indent, summarize, real_fmt, imag_fmt):
    if arr.ndim == 0:
        return _element(arr.item(), real_fmt, imag_fmt)
    if arr.ndim == 1:
        elem_len = real_fmt.width + 2 + (imag_fmt.width + 1 if imag_fmt else 0)
        per_line = max(1, math.floor((_OPTS.linewidth - indent) / elem_len))
        if summarize and not _OPTS.edgeitems:
            items = ["..."]
        else:
            items = [" ..." if i is None else _element(arr[i].item(), real_fmt, imag_fmt)
                     for i in _edge_indices(arr.shape[0], summarize)]
        lines = [", ".join(items[i:i + per_line]) for i in range(0, len(items), per_line)]
        return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"
    rows = ["..." if i is None else _nested(arr[i], indent + 1, summarize, real_fmt, imag_fmt)
            for i in _edge_indices(arr.shape[0], summarize)]
    # Sub-blocks of a 3-D+ tensor are separated by (ndim - 2) blank lines.
    return "[" + ("," + "\n" * (arr.ndim - 1) + " " * (indent + 1)).join(rows) + "]"


def _summarized(arr):
    """Only the elements a summary shows, so hidden values cannot widen the columns."""
    edge = _OPTS.edgeitems
    for axis, n in enumerate(arr.shape):
        if n > 2 * edge:
            keep = np.concatenate([np.arange(edge), np.arange(n - edge, n)]).astype(np.intp)
            arr = np.take(arr, keep, axis=axis)
    return arr


def _as_numpy(values):
    # CuPy arrays refuse implicit conversion; .get() copies them to the host.
    if not isinstance(values, np.ndarray) and hasattr(values, "get"):
        values = values.get()
    return np.asarray(values)


def format_values(values, *, is_float, is_complex, is_bool, indent=len("tensor(")):
    """The text PyTorch prints between ``tensor(`` and the suffixes for these values.

    ``indent`` is the column where the opening bracket sits (the prefix length); wrapped
    lines and nested rows are aligned one column to its right.
    """
    arr = _as_numpy(values)
    if arr.size == 0:
        return "[]"
    if is_complex:
        arr = arr.astype(np.complex128)  # exact for complex64; parts print as float64
    elif is_float:
        arr = arr.astype(np.float64)
    elif is_bool:
        arr = arr.astype(bool)
    summarize = arr.size > _OPTS.threshold
    sample = _summarized(arr) if summarize else arr
    if is_complex:
        real_fmt = _Formatter(sample.real, floating=True)
        imag_fmt = _Formatter(sample.imag, floating=True)
    else:
        real_fmt, imag_fmt = _Formatter(sample, floating=bool(is_float)), None
    return _nested(arr, indent, summarize, real_fmt, imag_fmt)


def _add_suffixes(text, suffixes, indent):
    """Append ``, suffix`` items, moving one to a new line when it would pass linewidth."""
    parts = [text]
    # PyTorch's estimate of the last line's length (2 more than the real one); kept as is
    # so suffixes wrap at exactly the same places.
    last_len = len(text) - text.rfind("\n") + 1
    for suffix in suffixes:
        # Measure "tracegrad.float64" as PyTorch's shorter "torch.float64" so that lines
        # break where PyTorch breaks them (a line may then run up to 4 columns longer).
        size = len(suffix.replace("=tracegrad.", "=torch."))
        if last_len + size + 2 > _OPTS.linewidth:
            parts.append(",\n" + " " * indent + suffix)
            last_len = indent + size
        else:
            parts.append(", " + suffix)
            last_len += size + 2
    parts.append(")")
    return "".join(parts)


def tensor_repr(values, *, dtype_name, is_float, is_complex, is_bool,
                default_dtype_name="float32", device="cpu", grad_fn_name=None,
                requires_grad=False, prefix="tensor(", tangent=None):
    """The full ``repr`` of a tensor holding ``values``, e.g. ``tensor([1., 2.], requires_grad=True)``.

    The dtype is shown only when it cannot be inferred from the text: not the default float
    dtype, its complex counterpart, int64 or bool (an empty tensor shows any non-default dtype).
    """
    indent = len(prefix)
    suffixes = []
    device = str(device)
    if device != "cpu":
        suffixes.append(f"device='{device}'")
    dtype_suffix = f"dtype=tracegrad.{dtype_name}"
    if device == "meta":  # (no values: the shape instead, and any dtype not the default)
        suffixes.append(f"size={tuple(values.shape)}")
        if dtype_name != default_dtype_name:
            suffixes.append(dtype_suffix)
        body = "..."
    elif (arr := _as_numpy(values)).size == 0:
        if arr.ndim != 1:
            suffixes.append(f"size={tuple(arr.shape)}")
        if dtype_name != default_dtype_name:
            suffixes.append(dtype_suffix)
        body = "[]"
    else:
        if not _OPTS.edgeitems:  # nothing of the data is shown, so tell the shape
            suffixes.append(f"size={tuple(arr.shape)}")
        default_complex = "complex128" if default_dtype_name == "float64" else "complex64"
        if dtype_name not in (default_dtype_name, default_complex, "int64", "bool"):
            suffixes.append(dtype_suffix)
        body = format_values(arr, is_float=is_float, is_complex=is_complex,
                             is_bool=is_bool, indent=indent)
    if grad_fn_name is not None:
        suffixes.append(f"grad_fn=<{grad_fn_name}>")
    elif requires_grad:
        suffixes.append("requires_grad=True")
    if tangent is not None:  # a dual tensor's forward gradient (its own repr)
        suffixes.append(f"tangent={tangent}")
    return _add_suffixes(prefix + body, suffixes, indent)
