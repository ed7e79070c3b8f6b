"""tracegrad's dtypes and PyTorch's type-promotion rules.

A :class:`dtype` wraps the NumPy dtype that both array backends (NumPy and CuPy) use
for storage, and adds what PyTorch users expect: ``tracegrad.float32`` names, the
``is_floating_point``/``is_complex`` flags, and the promotion rules of ``torch.result_type``.
Those rules differ from NumPy's: ``int32 tensor * 2.5`` is float32 (not float64), a
zero-dim tensor does not upgrade a dimensioned one of the same category, and a Python
float adopts the default dtype.
"""
import numpy as np

__all__ = ["dtype", "bool_", "uint8", "int8", "int16", "int32", "int64", "float16",
           "float32", "float64", "complex64", "complex128", "bfloat16", "as_dtype", "from_numpy_dtype",
           "get_default_dtype", "set_default_dtype", "promote_types", "result_type"]

# Categories order the promotion lattice: a higher category always wins.
BOOL, INT, FLOAT, COMPLEX = 0, 1, 2, 3
KIND_CATEGORY = {"b": BOOL, "u": INT, "i": INT, "f": FLOAT, "c": COMPLEX}  # by NumPy dtype.kind
NUMBER_CATEGORY = {bool: BOOL, int: INT, float: FLOAT, complex: COMPLEX}  # Python numbers


class dtype:
    """A tensor element type; compares and hashes by identity like ``torch.dtype``."""

    __slots__ = ("name", "np", "itemsize", "category", "is_floating_point", "is_complex",
                 "is_signed", "_legacy")

    def __init__(self, name, np_dtype, legacy):
        self.name = name
        self.np = np.dtype(np_dtype)
        self.itemsize = self.np.itemsize
        self.category = KIND_CATEGORY[self.np.kind]
        self.is_floating_point = self.category == FLOAT
        self.is_complex = self.category == COMPLEX
        self.is_signed = self.np.kind in "ifc"
        self._legacy = legacy  # the name of PyTorch's legacy tensor type, e.g. FloatTensor

    def __repr__(self):
        return f"tracegrad.{self.name}"

    def __reduce__(self):
        return (as_dtype, (self.name,))

    @property
    def scalar_name(self):
        """PyTorch's name for the type in messages: Float, Double, Long, ComplexFloat..."""
        return self._legacy[:-len("Tensor")]

    def to_real(self):
        """The real dtype of a complex dtype (complex64 -> float32); identity otherwise."""
        return {complex64: float32, complex128: float64}.get(self, self)

    def to_complex(self):
        """The complex dtype holding this float precision (float64 -> complex128)."""
        return complex128 if self in (float64, complex128) else complex64


bool_ = dtype("bool", np.bool_, "BoolTensor")
uint8 = dtype("uint8", np.uint8, "ByteTensor")
int8 = dtype("int8", np.int8, "CharTensor")
int16 = dtype("int16", np.int16, "ShortTensor")
int32 = dtype("int32", np.int32, "IntTensor")
int64 = dtype("int64", np.int64, "LongTensor")
float16 = dtype("float16", np.float16, "HalfTensor")
float32 = dtype("float32", np.float32, "FloatTensor")
float64 = dtype("float64", np.float64, "DoubleTensor")
complex64 = dtype("complex64", np.complex64, "ComplexFloatTensor")
complex128 = dtype("complex128", np.complex128, "ComplexDoubleTensor")



class unavailable_dtype:
    """A PyTorch dtype that NumPy and CuPy cannot store (bfloat16): the name exists, so
    programs that only mention it (a table of dtypes, an autocast argument) run, but a
    tensor of it cannot be made -- :func:`as_dtype` refuses it by name."""

    __slots__ = ("name", "itemsize", "is_floating_point", "is_complex", "is_signed")

    def __init__(self, name, itemsize):
        self.name, self.itemsize = name, itemsize
        self.is_floating_point, self.is_complex, self.is_signed = True, False, True

    def __repr__(self):
        return f"tracegrad.{self.name}"

    def __reduce__(self):
        return self.name  # pickled by reference to this module's global of that name


bfloat16 = unavailable_dtype("bfloat16", 2)

ALL = (bool_, uint8, int8, int16, int32, int64, float16, float32, float64, complex64, complex128)
_BY_NP = {d.np: d for d in ALL}
_BY_NAME = {d.name: d for d in ALL}
_BY_NAME.update({"float": float32, "double": float64, "half": float16, "long": int64,
                 "int": int32, "short": int16, "cfloat": complex64, "cdouble": complex128})


def from_numpy_dtype(np_dtype):
    """The tracegrad dtype of a NumPy/CuPy array dtype."""
    try:
        return _BY_NP[np_dtype]
    except KeyError:
        raise TypeError(f"tracegrad has no dtype for NumPy dtype {np_dtype!r}; supported: "
                        + ", ".join(d.name for d in ALL)) from None


def as_dtype(spec):
    """Accept a tracegrad dtype, a NumPy dtype/type, Python ``float``/``int``/``bool`` or a name."""
    if isinstance(spec, dtype):
        return spec
    if isinstance(spec, unavailable_dtype):
        raise TypeError(f"tracegrad has no {spec.name} tensors: NumPy and CuPy cannot store "
                        f"{spec.name}; use tracegrad.float32 (or float16)")
    if spec is float:
        return get_default_dtype()
    if spec is int:
        return int64
    if spec is bool:
        return bool_
    if spec is complex:
        return get_default_dtype().to_complex()
    if isinstance(spec, str) and spec in _BY_NAME:
        return _BY_NAME[spec]
    try:
        return from_numpy_dtype(np.dtype(spec))
    except TypeError:
        raise TypeError(f"dtype must be a tracegrad dtype such as tracegrad.float32, got {spec!r}") from None


_default = [float32]  # process-wide, as in PyTorch (not per thread)


def get_default_dtype():
    """The dtype Python floats and float factories use (float32 unless changed)."""
    return _default[0]


def set_default_dtype(d):
    d = as_dtype(d)
    if d not in (float16, float32, float64):
        raise TypeError(f"only floating-point types are supported as the default type, got {d!r}")
    _default[0] = d


def promote_types(a, b):
    """``torch.promote_types`` on tracegrad dtypes: the higher category wins; within a
    category the wider type; complex absorbs the precision of a wider float."""
    if a is b:
        return a
    if a.category != b.category:
        hi, lo = (a, b) if a.category > b.category else (b, a)
        if hi.is_complex and lo is float64:
            return complex128
        return hi
    return _BY_NP[np.promote_types(a.np, b.np)]


def category_default(category):
    """The dtype PyTorch gives a Python number (or nested data) of ``category``."""
    return (bool_, int64, get_default_dtype(), get_default_dtype().to_complex())[category]


def _scalar_dtype(value):
    """The dtype PyTorch gives a bare Python number (or a NumPy scalar, read as the number
    it stands for) when it takes part in promotion."""
    category = NUMBER_CATEGORY.get(type(value))
    if category is None:
        kind = getattr(getattr(value, "dtype", None), "kind", None)
        category = _KIND_CATEGORY[kind] if kind else next(
            c for t, c in NUMBER_CATEGORY.items() if isinstance(value, t))  # (a subclass of one)
    return category_default(category)


_KIND_CATEGORY = {"b": BOOL, "i": INT, "u": INT, "f": FLOAT, "c": COMPLEX}


def _combine(higher, lower):
    # torch's combine_categories: the operand tier `higher` keeps its dtype unless `lower`
    # belongs to a higher category.
    if higher is None:
        return lower
    if lower is None:
        return higher
    if higher.is_complex:
        return higher
    if lower.is_complex:
        return higher.to_complex() if higher.is_floating_point else lower
    if higher.is_floating_point:
        return higher
    if higher is bool_ or lower.is_floating_point:
        return promote_types(higher, lower)
    return higher


def result_type(dim_dtypes, zero_dim_dtypes=(), scalars=()):
    """``torch.result_type`` from three tiers of operands: dimensioned tensors, zero-dim
    tensors and Python scalars. A lower tier only matters when its category is higher."""
    dim = zero = wrapped = None
    for d in dim_dtypes:
        dim = d if dim is None else promote_types(dim, d)
    for d in zero_dim_dtypes:
        zero = d if zero is None else promote_types(zero, d)
    for s in scalars:
        d = _scalar_dtype(s)
        wrapped = d if wrapped is None else promote_types(wrapped, d)
    return _combine(dim, _combine(zero, wrapped))


_INT_RANGES = {}


def fits(value, np_dtype):
    """Whether Python int ``value`` is representable in integer dtype ``np_dtype``."""
    lo_hi = _INT_RANGES.get(np_dtype)
    if lo_hi is None:
        info = np.iinfo(np_dtype)
        lo_hi = _INT_RANGES[np_dtype] = (int(info.min), int(info.max))
    return lo_hi[0] <= value <= lo_hi[1]


def wrap_int(value, np_dtype):
    """``value`` wrapped into integer dtype ``np_dtype`` as PyTorch converts scalars
    (uint8: -1 -> 255), as a Python int."""
    info = np.iinfo(np_dtype)
    span = int(info.max) - int(info.min) + 1
    return (value - int(info.min)) % span + int(info.min)
