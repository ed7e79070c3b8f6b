"""``finfo`` and ``iinfo``: the numerical limits of a dtype, with PyTorch's names.

Read from NumPy's ``finfo``/``iinfo`` of the storage type; bfloat16, which NumPy cannot
store, has its limits written out (8 exponent bits as float32, 8 significand bits).
A complex dtype gives the limits of its real part, as in PyTorch.
"""
from ..backend import cpu as np  # (limits of host dtypes: NumPy's)
from ..backend import dtypes as _dt

__all__ = ["finfo", "iinfo"]

# bfloat16: float32's exponent range, 7 stored significand bits.
_BFLOAT16 = {"bits": 16, "eps": 2.0 ** -7, "max": float.fromhex("0x1.fep127"),
             "tiny": 2.0 ** -126, "resolution": 0.01}


class finfo:
    """Limits of a floating-point dtype (the default dtype when none is given): ``bits``,
    ``eps`` (the gap above 1), ``max``, ``min`` (= -max), ``tiny`` and ``smallest_normal``
    (the smallest positive normal number), ``resolution`` (10 ** -decimal digits) and
    ``dtype`` (its name)."""

    __hash__ = None  # (as PyTorch's: compared by value, never hashed)

    def __init__(self, type=None):  # noqa: A002  (PyTorch's parameter name)
        d = _dt.get_default_dtype() if type is None else _known(type, "finfo")
        if not d.is_floating_point and not d.is_complex:
            raise TypeError("torch.finfo() requires a floating point input type. Use torch.iinfo to "
                            "handle 'torch.finfo'")
        if d is _dt.bfloat16:
            limits = _BFLOAT16
        else:
            info = np.finfo(d.to_real().np)
            limits = {"bits": info.bits, "eps": float(info.eps), "max": float(info.max),
                      "tiny": float(info.smallest_normal), "resolution": 10.0 ** -info.precision}
        self.bits, self.eps, self.max = limits["bits"], limits["eps"], limits["max"]
        self.min = -self.max
        self.tiny = self.smallest_normal = limits["tiny"]
        self.resolution = limits["resolution"]
        self.dtype = d.to_real().name if d is not _dt.bfloat16 else d.name

    def __eq__(self, other):
        return type(other) is finfo and vars(self) == vars(other)

    def __repr__(self):
        return (f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, "
                f"eps={self.eps:g}, smallest_normal={self.smallest_normal:g}, tiny={self.tiny:g}, "
                f"dtype={self.dtype})")


class iinfo:
    """Limits of an integer dtype: ``bits``, ``min``, ``max`` (Python ints) and ``dtype``
    (its name)."""

    __hash__ = None

    def __init__(self, type):  # noqa: A002
        d = _known(type, "iinfo")
        if d is _dt.bool_:
            raise TypeError("torch.bool is not supported by torch.iinfo")
        if d.is_floating_point or d.is_complex:
            raise TypeError("torch.iinfo() requires an integer input type. Use torch.finfo to handle "
                            "'torch.iinfo'")
        info = np.iinfo(d.np)
        self.bits, self.min, self.max, self.dtype = info.bits, int(info.min), int(info.max), d.name

    def __eq__(self, other):
        return type(other) is iinfo and vars(self) == vars(other)

    def __repr__(self):
        return f"iinfo(min={self.min:g}, max={self.max:g}, dtype={self.dtype})"


def _known(spec, who):
    """``spec`` when it is a dtype (bfloat16 included), else PyTorch's TypeError."""
    if spec is _dt.bfloat16 or isinstance(spec, _dt.dtype):
        return spec
    raise TypeError(f"{who}(): argument 'type' (position 1) must be torch.dtype, not {type(spec).__name__}")
