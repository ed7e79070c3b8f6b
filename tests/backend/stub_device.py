"""A stand-in for CuPy on machines without a GPU, to prove that tracegrad reaches device
arrays only through the backend namespace ``xp``.

A :class:`StubArray` holds a NumPy array but behaves towards NumPy the way a CuPy array
does: NumPy refuses it (``np.tanh(a)``, ``np.asarray(a)`` raise TypeError), it refuses
NumPy arrays as operands, reductions and integer indexing give 0-d arrays rather than
scalars, and it has no ``__index__``. The namespace :data:`stub` offers NumPy's functions
under the names CuPy has (names CuPy lacks are missing), plus the functions every
tracegrad namespace adds (``scatter_add``, ``to_host``...). So a kernel, vjp, runtime
helper or generated line that calls NumPy directly on device data fails here as it
would on a GPU, while the values (computed by NumPy underneath) can be compared exactly
with the CPU's.

``stub.fuse`` runs the function it decorates as-is, but counts the calls and refuses
anything but ufuncs and operators inside, which is what ``cupy.fuse`` can compile.
"""
import contextlib
import importlib.util
import sys
import types

import numpy as np

from tracegrad import backend
from tracegrad.backend import cpu
from tracegrad.backend.atomic import scatter_add_any

# numpy 2.x top-level, linalg and random names that CuPy 14 does not have
_NOT_IN_CUPY = frozenset("""
False_ ScalarType True_ asmatrix block bmat busday_count busday_offset busdaycalendar bytes_
char character clongdouble complex256 core ctypeslib datetime64 datetime_as_string
datetime_data dtypes einsum_path emath errstate f2py flexible float128 frompyfunc fromregex
geomspace get_include getbufsize geterr geterrcall histogram_bin_edges info insert is_busday
isnat little_endian longdouble ma matrix matvec memmap nanpercentile nanquantile ndenumerate
nditer nested_iters object_ polyder polydiv polyint rec recarray record sctypeDict setbufsize
seterr seterrcall show_runtime spacing str_ strings test timedelta64 typecodes unstack vecdot
vecmat void
""".split())
_NOT_IN_CUPY_LINALG = frozenset("diagonal matrix_norm multi_dot outer svdvals tensordot trace "
                                "vecdot vector_norm".split())
_NOT_ON_CUPY_ARRAYS = frozenset("__array_interface__ __array_struct__ __contains__ __index__ "
                                "ctypes getfield resize setfield setflags to_device".split())
_GENERATOR_METHODS = frozenset("beta binomial chisquare dirichlet exponential f gamma geometric "
                               "hypergeometric integers logseries poisson power random "
                               "standard_exponential standard_gamma standard_normal "
                               "uniform".split())
_UPLOADS = frozenset({"asarray", "array", "asanyarray", "ascontiguousarray"})
# what cupy.fuse compiles besides ufuncs (and operators)
_FUSABLE = frozenset({"where"})

fused_calls = [0]   # calls of functions decorated by stub.fuse
_in_fuse = [False]


class StubArray:
    """A device array of the stub device (see the module docstring)."""

    __slots__ = ("_a", "_strided", "__weakref__")
    __array_ufunc__ = None  # NumPy ufuncs (np.tanh(a), ndarray + a) refuse it
    __array_priority__ = 100
    __hash__ = None

    def __init__(self, a, strided=False):
        self._a = a
        self._strided = strided  # made by as_strided: CuPy keeps no .base for those

    def __array__(self, dtype=None, copy=None):
        raise TypeError("Implicit conversion to a NumPy array is not allowed (a stub device "
                        "array, as a CuPy array: copy it to the host with to_host)")

    def __array_function__(self, func, types, args, kwargs):
        raise TypeError(f"numpy.{func.__name__} was called on a stub device array: device "
                        "code must call the backend namespace (xp), not NumPy")

    def get(self):
        return self._a.copy()

    shape = property(lambda self: self._a.shape)
    dtype = property(lambda self: self._a.dtype)
    ndim = property(lambda self: self._a.ndim)
    size = property(lambda self: self._a.size)
    strides = property(lambda self: self._a.strides)
    itemsize = property(lambda self: self._a.itemsize)
    nbytes = property(lambda self: self._a.nbytes)

    @property
    def base(self):
        return None if self._a.base is None or self._strided else _Opaque()

    @property
    def flags(self):
        """CuPy's flags: no ``writeable``, ``aligned``..."""
        f = self._a.flags
        return _Flags(f.c_contiguous, f.f_contiguous, self.base is None)

    def __getattr__(self, name):
        if name in _NOT_ON_CUPY_ARRAYS or name.startswith("__"):
            raise AttributeError(f"'StubArray' object has no attribute '{name}'")
        value = getattr(self._a, name)
        return _Function(value, f"ndarray.{name}") if callable(value) else _wrap(value)

    def __len__(self):
        return len(self._a)

    def __iter__(self):
        return (_wrap(self._a[i]) for i in range(len(self._a)))

    def __bool__(self):
        return bool(self._a)

    def __float__(self):
        return float(self._a)

    def __int__(self):
        return int(self._a)

    def __complex__(self):
        return complex(self._a)

    def __repr__(self):
        return repr(self._a).replace("array(", "stub_array(", 1)

    def __getitem__(self, key):
        return _wrap(self._a[_index(key)])

    def __setitem__(self, key, value):
        self._a[_index(key)] = _operand(value)


class _Opaque:
    """What ``.base`` of a view is: some other array (its identity is not used)."""


class _Flags:
    __slots__ = ("c_contiguous", "f_contiguous", "owndata")

    def __init__(self, c_contiguous, f_contiguous, owndata):
        self.c_contiguous, self.f_contiguous, self.owndata = c_contiguous, f_contiguous, owndata


def _operand(value):
    """The NumPy value behind an operand of a stub-array operation; NumPy arrays and
    containers are refused, as CuPy refuses them."""
    if type(value) is StubArray:
        return value._a
    if isinstance(value, (bool, int, float, complex, np.generic)) or value is None:
        return value
    raise TypeError(f"Unsupported type {type(value)} in an operation on a stub device array "
                    "(move it to the device with xp.asarray first)")


def _index(key):
    if isinstance(key, tuple):
        return tuple(_index(k) for k in key)
    if isinstance(key, (slice, type(Ellipsis))) or key is None:
        return key
    if isinstance(key, list):
        return [_index(k) for k in key]
    return _operand(key)


def _defers(other):
    """True when CuPy would hand the operation to ``other`` (a Tensor, a tracer: anything
    else with NumPy's ``__array_ufunc__`` protocol), as Python's reflected operator."""
    return (type(other) is not StubArray and hasattr(other, "__array_ufunc__")
            and not isinstance(other, (np.ndarray, np.generic)))


def _binary(name):
    def method(self, other):
        if _defers(other):
            return NotImplemented
        return _wrap(getattr(self._a, name)(_operand(other)))
    method.__name__ = name
    return method


def _inplace(name):
    def method(self, other):
        getattr(self._a, name)(_operand(other))
        return self
    method.__name__ = name
    return method


def _unary(name):
    def method(self):
        return _wrap(getattr(self._a, name)())
    method.__name__ = name
    return method


for _op in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and", "or",
            "xor", "lshift", "rshift"):
    setattr(StubArray, f"__{_op}__", _binary(f"__{_op}__"))
    setattr(StubArray, f"__r{_op}__", _binary(f"__r{_op}__"))
    if _op != "matmul":  # (CuPy arrays have no in-place @=)
        setattr(StubArray, f"__i{_op}__", _inplace(f"__i{_op}__"))
for _op in ("lt", "le", "gt", "ge", "eq", "ne"):
    setattr(StubArray, f"__{_op}__", _binary(f"__{_op}__"))
for _op in ("neg", "pos", "abs", "invert"):
    setattr(StubArray, f"__{_op}__", _unary(f"__{_op}__"))


def _wrap(value):
    """NumPy results as stub values: arrays and NumPy scalars become stub arrays (CuPy
    returns 0-d arrays where NumPy returns scalars); containers are wrapped inside."""
    if isinstance(value, np.ndarray):
        return StubArray(value)
    if isinstance(value, np.generic):
        return StubArray(np.asarray(value))
    if isinstance(value, tuple):
        return tuple(_wrap(v) for v in value)
    if isinstance(value, list):
        return [_wrap(v) for v in value]
    return value


def _unwrap(value, uploads):
    """Arguments of a namespace function as NumPy values; NumPy arrays only where the
    function copies host data to the device (``asarray``...)."""
    if type(value) is StubArray:
        return value._a
    if isinstance(value, np.ndarray):
        if uploads:
            return value
        raise TypeError(f"Unsupported type {type(value)}: a NumPy array was passed to a device "
                        "function (move it to the device with xp.asarray first)")
    if isinstance(value, (tuple, list)):
        return type(value)(_unwrap(v, uploads) for v in value)
    return value


class _Function:
    """A NumPy function (or ufunc, or array method) called on stub values."""

    __slots__ = ("_f", "_name")

    def __init__(self, f, name):
        self._f = f
        self._name = name

    def __call__(self, *args, **kwargs):
        if _in_fuse[0] and not isinstance(self._f, np.ufunc) and self._name not in _FUSABLE:
            raise TypeError(f"{self._name} cannot be compiled by cupy.fuse (only ufuncs, "
                            "operators and where can)")
        uploads = self._name in _UPLOADS
        args = [_unwrap(a, uploads) for a in args]
        kwargs = {k: _unwrap(v, uploads) for k, v in kwargs.items()}
        return _wrap(self._f(*args, **kwargs))

    @property
    def __name__(self):
        return self._name.rpartition(".")[2]

    def __getattr__(self, name):  # ufunc methods: xp.add.reduce, xp.add.at...
        return _Function(getattr(self._f, name), f"{self._name}.{name}")

    def __repr__(self):
        return f"<stub {self._name}>"


class _Namespace:
    """NumPy's names under CuPy's spelling, on stub values (see the module docstring)."""

    def __init__(self, module, missing, prefix=""):
        self._module = module
        self._missing = missing
        self._prefix = prefix

    def __getattr__(self, name):
        if name in self._missing or name.startswith("_"):
            raise AttributeError(f"the stub device namespace (as CuPy) has no '{self._prefix}{name}'")
        value = getattr(self._module, name)
        if isinstance(value, type) or not callable(value):
            return value  # dtypes, finfo, constants: host objects in CuPy too
        wrapped = _Function(value, self._prefix + name)
        setattr(self, name, wrapped)
        return wrapped


class _Generator:
    """A random generator with the methods CuPy's has, drawing stub arrays."""

    def __init__(self, seed):
        self._g = np.random.default_rng(seed)

    def __getattr__(self, name):
        if name not in _GENERATOR_METHODS:
            raise AttributeError(f"CuPy's random generators have no '{name}'")
        return _Function(getattr(self._g, name), f"Generator.{name}")


class StubNamespace(_Namespace):
    """The stub device's array namespace: named ``'cuda'`` so that it stands in for the
    CUDA device when registered (see :func:`as_cuda`)."""

    name = "cuda"
    ndarray = StubArray

    def __init__(self):
        super().__init__(np, _NOT_IN_CUPY)
        self.linalg = _Namespace(np.linalg, _NOT_IN_CUPY_LINALG, "linalg.")
        self.fft = _Namespace(np.fft, frozenset(), "fft.")
        self._rng = _Generator(None)

    # -- what every tracegrad namespace adds to its array library (see backend/cpu.py) --
    def current_index(self):
        return 0

    def device_index(self, a):
        return 0

    def device_count(self):
        return 1

    def synchronize(self):
        pass

    def scatter_add(self, target, index, values):
        """Through the same dtype routing as the CUDA namespace, onto an add that refuses
        what ``cupyx.scatter_add`` refuses."""
        scatter_add_any(self, _atomic_add, target, index, values)

    def to_host(self, a):
        return a._a.copy()

    def from_host(self, a, dtype=None):
        return StubArray(np.array(a, dtype=dtype, copy=True))

    def storage_offset(self, a):
        return cpu.storage_offset(a._a)

    def owns_data(self, a):
        return a._a.base is None

    def seed(self, value):
        self._rng = _Generator(value)

    def rng(self):
        return self._rng

    def new_rng(self, value):
        return _Generator(value)

    def randperm(self, generator, n):
        return self.argsort(generator.random(n))

    def erf(self, x):
        return _wrap(cpu.erf(_unwrap(x, False)))

    def as_strided(self, x, shape=None, strides=None):
        return StubArray(np.lib.stride_tricks.as_strided(x._a, shape, strides), strided=True)

    def sliding_window_view(self, x, window_shape, axis=None):
        return StubArray(np.lib.stride_tricks.sliding_window_view(x._a, window_shape, axis))

    def where(self, condition, x=None, y=None):
        """CuPy's ``where`` as tracegrad.backend.cuda wraps it: a Python bool (or number)
        condition is taken, as NumPy takes it (CuPy's own refuses it)."""
        if x is None and y is None:
            return _Function(np.where, "where")(condition)
        if not isinstance(condition, StubArray):
            condition = self.from_host(np.asarray(condition))
        return _Function(np.where, "where")(condition, x, y)

    def fuse(self, *args, **kwargs):
        """``cupy.fuse``, usable bare or with arguments: runs the function, counting calls
        and refusing what CuPy could not fuse. As CuPy's fused kernel, it gives every
        output the broadcast shape of all the inputs."""
        def decorate(f):
            def fused(*a):
                fused_calls[0] += 1
                _in_fuse[0] = True
                try:
                    out = f(*a)
                finally:
                    _in_fuse[0] = False
                shape = np.broadcast_shapes(*[x.shape for x in a if type(x) is StubArray])
                if isinstance(out, tuple):
                    return tuple(StubArray(np.broadcast_to(o._a, shape).copy()) for o in out)
                return StubArray(np.broadcast_to(out._a, shape).copy())
            fused.__name__ = f.__name__
            return fused
        return decorate(args[0]) if args and callable(args[0]) else decorate


# the dtypes CUDA's atomicAdd has, so cupyx.scatter_add takes (CuPy's own tests: 'iILQefd')
_ATOMIC_ADD_DTYPES = frozenset(map(np.dtype, "iILQefd"))


def _atomic_add(target, index, values):
    """``cupyx.scatter_add``: ``np.add.at`` on the dtypes it accumulates, else TypeError."""
    if target.dtype not in _ATOMIC_ADD_DTYPES:
        raise TypeError(f"cupyx.scatter_add has no atomicAdd for {target.dtype}")
    np.add.at(target._a, _index(index), _operand(values))


stub = StubNamespace()


@contextlib.contextmanager
def as_cuda():
    """Stand the stub in for CUDA (``device='cuda'`` makes stub arrays) while inside, and
    SciPy's special functions for CuPy's ``cupyx.scipy.special`` (which the special-function
    kernels import on a GPU; CuPy's own, where installed, would refuse stub arrays): the
    modules there before, if any, are put back after."""
    if "cuda" in {ns.name for ns in backend.loaded()}:
        raise RuntimeError("a real CUDA namespace is loaded; the stub cannot stand in for it")
    backend.register(stub, (StubArray,))
    modules = _cupyx_stand_ins()
    before = {name: sys.modules[name] for name in modules if name in sys.modules}
    sys.modules.update(modules)
    try:
        yield stub
    finally:
        for name in modules:
            sys.modules.pop(name, None)
        sys.modules.update(before)
        backend.unregister(stub)


def _cupyx_stand_ins():
    """``{module name: module}`` for a ``cupyx.scipy.special`` whose functions are SciPy's on
    stub arrays (nothing where SciPy is not installed)."""
    if importlib.util.find_spec("scipy") is None:
        return {}
    import scipy.special
    special = types.ModuleType("cupyx.scipy.special")
    special.__getattr__ = lambda name: _Function(getattr(scipy.special, name), f"cupyx.scipy.special.{name}")
    parents = {name: types.ModuleType(name) for name in ("cupyx", "cupyx.scipy")}
    parents["cupyx"].scipy, parents["cupyx.scipy"].special = parents["cupyx.scipy"], special
    return {**parents, "cupyx.scipy.special": special}
