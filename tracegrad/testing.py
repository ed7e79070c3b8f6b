"""``tracegrad.testing.assert_close``: PyTorch's closeness check and its messages.

Tensors must agree in shape, and by default in dtype and device; their values within
``atol + rtol * |expected|`` (per-dtype defaults as PyTorch's); integers and booleans
exactly. Python numbers compare as numbers, sequences and mappings item by item.
"""
import math
from collections.abc import Mapping, Sequence

from .backend import cpu as host  # host-side (NumPy) arithmetic, never on device arrays
from .backend import dtypes as _dt
from .runtime.tensor import Tensor

__all__ = ["assert_allclose", "assert_close"]

_TOLERANCES = {_dt.float16: (1e-3, 1e-5), _dt.float32: (1.3e-6, 1e-5), _dt.float64: (1e-7, 1e-7),
               _dt.complex64: (1.3e-6, 1e-5), _dt.complex128: (1e-7, 1e-7)}


def assert_close(actual, expected, *, allow_subclasses=True, rtol=None, atol=None, equal_nan=False,
                 check_device=True, check_dtype=True, check_layout=True, check_stride=False, msg=None):
    """Raise ``AssertionError`` (naming what differs) unless ``actual`` is close to ``expected``."""
    if (rtol is None) != (atol is None):
        raise ValueError(f"Both 'rtol' and 'atol' must be either specified or omitted, but got no "
                         f"{'rtol' if rtol is None else 'atol'}.")
    _compare(actual, expected, rtol, atol, equal_nan, check_device, check_dtype, msg, [])


def assert_allclose(actual, expected, rtol=None, atol=None, equal_nan=True, msg=""):
    """The deprecated spelling: dtypes may differ, NaNs compare equal."""
    assert_close(actual, expected, rtol=rtol, atol=atol, equal_nan=equal_nan, check_dtype=False, msg=msg or None)


def _compare(actual, expected, rtol, atol, equal_nan, check_device, check_dtype, msg, path):
    if isinstance(actual, Tensor) and isinstance(expected, Tensor):
        return _tensors(actual, expected, rtol, atol, equal_nan, check_device, check_dtype, msg, path)
    numbers = (bool, int, float, complex)
    if isinstance(actual, numbers) and isinstance(expected, numbers) and type(actual) is type(expected):
        return _scalars(actual, expected, rtol, atol, equal_nan, msg, path)
    if isinstance(actual, Mapping) and isinstance(expected, Mapping):
        if set(actual) != set(expected):
            _fail(f"The keys of the mappings do not match:\nMissing keys in the actual mapping: "
                  f"{sorted(set(expected) - set(actual), key=repr)}\nAdditional keys in the actual mapping: "
                  f"{sorted(set(actual) - set(expected), key=repr)}", msg, path)
        for k in expected:
            _compare(actual[k], expected[k], rtol, atol, equal_nan, check_device, check_dtype, msg, path + [k])
        return None
    if _is_sequence(actual) and _is_sequence(expected):
        if len(actual) != len(expected):
            _fail(f"The length of the sequences mismatch: {len(actual)} != {len(expected)}", msg, path)
        for i, (a, e) in enumerate(zip(actual, expected)):
            _compare(a, e, rtol, atol, equal_nan, check_device, check_dtype, msg, path + [i])
        return None
    raise TypeError(f"No comparison pair was able to handle inputs of type {type(actual)} and {type(expected)}.")


def _is_sequence(x):
    return isinstance(x, Sequence) and not isinstance(x, str)


def _fail(text, msg, path):
    if callable(msg):
        text = msg(text)
    elif msg is not None:
        text = msg
    elif path:
        text += "\n\nThe failure occurred for item " + "".join(f"[{p!r}]" for p in path)
    raise AssertionError(text)


def _tensors(actual, expected, rtol, atol, equal_nan, check_device, check_dtype, msg, path):
    for attribute, a, e, check in [("shape", actual.shape, expected.shape, True),
                                   ("device", actual.device, expected.device, check_device),
                                   ("dtype", actual.dtype, expected.dtype, check_dtype)]:
        if check and a != e:
            _fail(f"The values for attribute '{attribute}' do not match: {a!r} != {e!r}.", msg, path)
    dtype = _dt.promote_types(actual.dtype, expected.dtype)
    if rtol is None:
        rtol, atol = max(_TOLERANCES.get(actual.dtype, (0.0, 0.0)), _TOLERANCES.get(expected.dtype, (0.0, 0.0)))
    a = _host(actual).astype(dtype.np)
    e = _host(expected).astype(dtype.np)
    exact = not (dtype.is_floating_point or dtype.is_complex)
    if exact:
        close = a == e
    else:
        close = host.isclose(a, e, rtol=rtol, atol=atol, equal_nan=equal_nan)
    if close.all():
        return
    if a.ndim == 0:  # a 0-d tensor is reported as a scalar
        return _scalar_failure(a.item(), e.item(), exact, rtol, atol, msg, path)
    total = close.size
    wrong = int(total - close.sum())
    work = host.float32 if exact and dtype is not _dt.bool_ else a.dtype
    if dtype is _dt.bool_:
        a, e = a.astype(host.int64), e.astype(host.int64)
    with host.errstate(all="ignore"):
        abs_diff = host.abs(a - e) if exact else host.abs(a - e).astype(host.abs(a).dtype)
        rel_diff = (host.abs(a - e).astype(work) / host.abs(e).astype(work))
    what = "equal" if exact else "close"
    lines = [f"Tensor-likes are not {what}!", "", f"Mismatched elements: {wrong} / {total} ({100 * wrong / total:.1f}%)"]
    for name, diff, allowed in (("absolute", abs_diff, atol), ("relative", rel_diff, rtol)):
        at = _argmax(diff)
        value = diff[at].item()
        where = tuple(int(i) for i in at)
        line = f"Greatest {name} difference: {value} at index {where}"
        lines.append(line if exact else f"{line} (up to {allowed} allowed)")
    _fail("\n".join(lines), msg, path)


def _argmax(diff):
    """The index of the largest difference (the first NaN, if any, as PyTorch reports)."""
    flat = diff.reshape(-1)
    nan = host.isnan(flat)
    i = int(host.argmax(nan)) if nan.any() else int(host.argmax(flat))
    return host.unravel_index(i, diff.shape) if diff.ndim else ()


def _host(t):
    from . import backend
    from .runtime.vmapped import is_vmapped
    if is_vmapped(t):  # (its _data is sample 0 only)
        raise RuntimeError("vmap: assert_close compares values in Python, which a Tensor inside vmap "
                           "(one value per sample) cannot give: compare the results outside vmap")
    return host.asarray(backend.namespace_of(t._data).to_host(t.detach()._data))


def _scalars(actual, expected, rtol, atol, equal_nan, msg, path):
    if rtol is None:
        rtol, atol = (1e-7, 1e-7) if isinstance(expected, (float, complex)) else (0.0, 0.0)
    if isinstance(expected, (float, complex)) and equal_nan and _nan(actual) and _nan(expected):
        return
    if actual == expected or abs(actual - expected) <= atol + rtol * abs(expected):
        return
    _scalar_failure(actual, expected, not isinstance(expected, (float, complex)), rtol, atol, msg, path)


def _scalar_failure(actual, expected, exact, rtol, atol, msg, path):
    diff = abs(actual - expected)
    rel = diff / abs(expected) if expected else (math.nan if diff != diff or not diff else math.inf)
    lines = [f"Scalars are not {'equal' if exact else 'close'}!", "", f"Expected {expected} but got {actual}.",
             f"Absolute difference: {diff}" + ("" if exact else f" (up to {atol} allowed)"),
             f"Relative difference: {rel}" + ("" if exact else f" (up to {rtol} allowed)")]
    _fail("\n".join(lines), msg, path)


def _nan(x):
    return x != x
