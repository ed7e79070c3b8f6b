"""The eager ``Tensor``: a backend array plus the autograd metadata PyTorch users know.

Storage, shape, strides and offset are the backend array's own (a NumPy/CuPy view is a
strided window on shared memory), so views made by view primitives share storage with
their ``_base`` for free. A version counter (``_vc``, a one-element list shared by a base
and all its views, made on first need) lets saved tensors detect in-place changes.

Math methods are attached by :mod:`tracegrad.ops`; this module holds the data model.
"""
import copy
import warnings

from .. import backend
from ..backend import dtypes as _dt
from ..backend.device import CPU
from . import grad_mode

__all__ = ["DATA_SLOTS", "Tensor", "Size", "wrap", "is_tensor"]

_ARRAY_TYPES = backend.ARRAY_TYPE_SET  # (filled in place when CUDA loads)
_NDARRAY = backend.cpu.ndarray
_new = object.__new__

# Tensor subclasses (nn.Parameter, nn.Buffer) that operations treat exactly like Tensor, so
# the eager fast paths (which test ``type(x) is Tensor``) take them too.
PLAIN_SUBCLASSES = set()


class Size(tuple):
    """The shape of a tensor: a tuple that prints like ``torch.Size``."""

    def __repr__(self):
        return f"tracegrad.Size({list(self)})"

    __str__ = __repr__

    def numel(self):
        n = 1
        for s in self:
            n *= s
        return n

    def __getitem__(self, i):
        r = tuple.__getitem__(self, i)
        return Size(r) if isinstance(i, slice) else r

    def __mul__(self, n):
        return Size(tuple.__mul__(self, n))

    __rmul__ = __mul__

    def __add__(self, other):
        if not isinstance(other, tuple):
            return NotImplemented
        return Size(tuple(self) + other)

    def __radd__(self, other):
        """``(1,) + size`` is a Size too (a tuple on the left asks Size first)."""
        if not isinstance(other, tuple):
            return NotImplemented
        return Size(other + tuple(self))


def wrap(data, requires_grad=False, grad_fn=None, output_nr=0):
    """A new Tensor around backend array ``data`` (NumPy scalars become 0-d arrays)."""
    if type(data) not in _ARRAY_TYPES:
        data = backend.namespace_of(data).asarray(data)
    t = _new(Tensor)
    t._data = data
    t._requires_grad = requires_grad
    t._grad_fn = grad_fn
    t._output_nr = output_nr
    t._grad = None
    t._vc = None
    t._base = None
    t._view = None
    t._acc = None
    t._extra = None
    return t


# The ``_extra`` key of a view of a normal tensor made in inference mode (or of a view of
# one made without recording): a normal, untracked view, whose in-place refusal says so.
INFERENCE_VIEW = "inference_view"


def mark_inference(t):
    """Flag a tensor made in inference mode (autograd will refuse to save it later)."""
    if t._extra is None:
        t._extra = {}
    t._extra["inference"] = True
    return t


def dtype_of(np_dtype):
    """The tracegrad dtype of a backend array dtype."""
    return _dt.from_numpy_dtype(np_dtype)


def wrap_dim(dim, ndim):
    """A dimension index checked and made non-negative, with PyTorch's IndexError."""
    n = max(ndim, 1)
    if isinstance(dim, Tensor):
        dim = int(dim)
    if not isinstance(dim, int) or isinstance(dim, bool) or not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})")
    return dim % n


def is_tensor(obj):
    return isinstance(obj, Tensor)


_NONLEAF_REQUIRES_GRAD = "you can only change requires_grad flags of leaf variables."
_DETACH_HINT = (" If you want to use a computed variable in a subgraph that doesn't require "
                "differentiation use var_no_grad = var.detach().")
_NONLEAF_GRAD_WARNING = (
    "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad "
    "attribute won't be populated during autograd.backward(). If you indeed want the .grad "
    "field to be populated for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor. "
    "If you access the non-leaf Tensor by mistake, make sure you access the leaf Tensor "
    "instead. See github.com/pytorch/pytorch/pull/30531 for more information.")


# A Tensor's own state (what an alias copies); besides it a Tensor has a ``__dict__``, made on
# first use, for the attributes code sets on tensors (``p.update = -lr * g``, as learn2learn
# does), as PyTorch allows.
DATA_SLOTS = ("_data", "_requires_grad", "_grad_fn", "_output_nr", "_grad", "_vc", "_base",
              "_view", "_acc", "_extra")


class Tensor:
    """A multi-dimensional array that can record the operations applied to it."""

    __slots__ = (*DATA_SLOTS, "__dict__", "__weakref__")

    __array_priority__ = 1000  # NumPy defers to Tensor's reflected operators

    def __init__(self, *args, device=None, dtype=None):
        """The legacy constructor: ``Tensor([1, 2])`` (data, in the default float dtype),
        ``Tensor(2, 3)`` (a shape, zero-filled), ``Tensor()`` (empty), ``Tensor(t)`` (an
        alias of tensor ``t``: same storage and version counter, any dtype)."""
        from .creation import legacy_tensor_data
        if len(args) == 1 and isinstance(args[0], Tensor):
            if getattr(type(args[0]), "_vmap_batched", False):  # (a vmap sample: its _data is sample 0)
                raise RuntimeError("vmap: Tensor(t) of a Tensor inside vmap is not supported in tracegrad: "
                                   "use t.detach() (an alias) or tracegrad.tensor(t) (a copy)")
            t = args[0].detach()
        else:
            t = wrap(legacy_tensor_data(args, device, dtype))
        for slot in DATA_SLOTS:
            setattr(self, slot, getattr(t, slot))

    # -- array metadata ------------------------------------------------------------------
    @property
    def shape(self):
        return Size(self._data.shape)

    def size(self, dim=None):
        if dim is None:
            return Size(self._data.shape)
        return self._data.shape[wrap_dim(dim, self._data.ndim)]

    @property
    def dtype(self):
        return _dt.from_numpy_dtype(self._data.dtype)

    @property
    def device(self):
        return backend.device_of(self._data)

    @property
    def is_cuda(self):
        return self.device.type == "cuda"

    @property
    def ndim(self):
        return self._data.ndim

    def dim(self):
        return self._data.ndim

    def numel(self):
        return self._data.size

    nelement = numel

    def element_size(self):
        return self._data.itemsize

    @property
    def itemsize(self):
        return self._data.itemsize

    @property
    def nbytes(self):
        return self._data.nbytes

    def stride(self, dim=None):
        """Strides in elements, as PyTorch reports them."""
        size = self._data.itemsize
        strides = tuple(s // size for s in self._data.strides)
        if dim is None:
            return strides
        return strides[wrap_dim(dim, self._data.ndim)]

    def storage_offset(self):
        """Elements between the start of the storage and this tensor's first element (also
        for a view reached through detach() or .data, which has no ``_base``)."""
        return backend.namespace_of(self._data).storage_offset(self._data)

    def is_contiguous(self, memory_format=None):
        return bool(self._data.flags.c_contiguous)

    def is_floating_point(self):
        return self._data.dtype.kind == "f"

    def is_complex(self):
        return self._data.dtype.kind == "c"

    def type(self, dtype=None):
        """The legacy type name (``'tracegrad.FloatTensor'``, ``'tracegrad.cuda.FloatTensor'``
        on CUDA), or a copy cast to ``dtype``."""
        if dtype is None:
            return f"tracegrad.{'cuda.' if self.is_cuda else ''}{self.dtype._legacy}"
        if isinstance(dtype, _dt.dtype):
            return self.to(dtype)
        from .legacy_types import legacy_type  # a legacy type, or its name
        cls = legacy_type(dtype)
        return self.to(device=cls._device_type, dtype=cls.dtype)

    def is_inference(self):
        return self._extra is not None and self._extra.get("inference", False)

    # -- autograd metadata ---------------------------------------------------------------
    @property
    def requires_grad(self):
        if self._view is not None and self._vc[0] != self._view[1]:
            from .views import refresh_view_grad_fn
            refresh_view_grad_fn(self)  # its base may have gained history since
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, flag):
        if self._grad_fn is not None:  # the attribute may never change on a non-leaf
            raise RuntimeError(_NONLEAF_REQUIRES_GRAD + ("" if flag else _DETACH_HINT))
        self.requires_grad_(flag)

    def requires_grad_(self, requires_grad=True):
        flag = bool(requires_grad)
        if self._grad_fn is not None:
            if not flag:
                raise RuntimeError(_NONLEAF_REQUIRES_GRAD + _DETACH_HINT)
            return self
        if flag and self._data.dtype.kind not in "fc":
            raise RuntimeError("only Tensors of floating point and complex dtype can require gradients")
        if flag and self.is_inference() and grad_mode.state.mode != grad_mode.INFERENCE:
            raise RuntimeError("Setting requires_grad=True on inference tensor outside InferenceMode is not allowed.")
        self._requires_grad = flag
        return self

    @property
    def grad_fn(self):
        if self._view is not None and self._base is not None:
            from .views import refresh_view_grad_fn
            refresh_view_grad_fn(self)
        return self._grad_fn

    @property
    def is_leaf(self):
        return self.grad_fn is None

    @property
    def output_nr(self):
        return self._output_nr

    @property
    def grad(self):
        if self._grad_fn is not None and not self.retains_grad:
            warnings.warn(_NONLEAF_GRAD_WARNING, UserWarning, stacklevel=2)
        return self._grad

    @grad.setter
    def grad(self, value):
        if value is not None:
            if not isinstance(value, Tensor):
                raise TypeError(f"assigned grad expected to be a Tensor or None but got grad of type {type(value).__name__}")
            if value.shape != self.shape:
                raise RuntimeError(
                    f"attempting to assign a gradient of size '{list(value.shape)}' to a tensor of "
                    f"size '{list(self.shape)}'. Please ensure that the gradient and the tensor are "
                    "the same size")
            if value.dtype != self.dtype:
                raise RuntimeError("attempting to assign a gradient with dtype "
                                   f"'{value.dtype}' to a tensor with dtype '{self.dtype}'. Please ensure "
                                   "that the gradient and the tensor have the same dtype")
            if type(value._data) is not type(self._data):
                raise RuntimeError("attempting to assign a gradient with device type "
                                   f"'{value.device.type}' to a tensor with device type "
                                   f"'{self.device.type}'. Please ensure that the gradient and "
                                   "the tensor are on the same device")
        self._grad = value

    @grad.deleter
    def grad(self):
        self._grad = None

    @property
    def retains_grad(self):
        return self._extra is not None and self._extra.get("retains_grad", False)

    @property
    def _version(self):
        return self._vc[0] if self._vc is not None else 0

    def _version_counter(self):
        """The shared version counter, made on first need (saving, views, in-place)."""
        vc = self._vc
        if vc is None:
            vc = self._vc = [0]
        return vc

    def _bump_version(self):
        self._version_counter()[0] += 1

    @property
    def data(self):
        """This tensor's storage as a new leaf that autograd does not track (own version counter)."""
        return wrap(self._data)

    @data.setter
    def data(self, value):
        if not isinstance(value, Tensor):
            raise TypeError(f"data must be set to a Tensor, got {type(value).__name__}")
        if self._requires_grad and value._data.dtype.kind not in "fc":
            raise RuntimeError("data set to a tensor that requires gradients must be floating "
                               "point or complex dtype")
        if getattr(type(value), "_vmap_batched", False):  # (a vmap sample: its _data is sample 0)
            raise RuntimeError("mutating directly with `.data` under vmap transform is not allowed.")
        self._data = value._data

    def detach(self):
        """A new leaf sharing storage and version counter, outside the graph."""
        t = wrap(self._data)
        t._vc = self._version_counter()
        return t

    def detach_(self):
        if self._base is not None and self._view is not None:
            raise RuntimeError("Can't detach views in-place. Use detach() instead.")
        self._grad_fn = None
        self._requires_grad = False
        self._output_nr = 0
        if self._extra is not None:
            self._extra.pop("tangent", None)  # a dual tensor loses its tangent too, as in PyTorch
        return self

    def retain_grad(self):
        """Keep this non-leaf's gradient in ``.grad`` during backward (no-op on leaves)."""
        if self._grad_fn is None:
            if not self._requires_grad:
                raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
            return
        from .hooks import retain_grad
        retain_grad(self)

    def register_post_accumulate_grad_hook(self, hook):
        """Call ``hook(tensor)`` after a gradient has been accumulated into this leaf's
        ``.grad`` (e.g. to step an optimizer per parameter). Returns a removable handle."""
        if self._grad_fn is not None:
            raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
        if not self._requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        from .hooks import add_hook
        return add_hook(self, "post_accumulate_hooks", hook)

    def register_hook(self, hook):
        """Call ``hook(grad)`` whenever this tensor's gradient is computed; a non-None
        return value replaces the gradient. Returns a handle with ``.remove()``."""
        from .hooks import register_tensor_hook
        return register_tensor_hook(self, hook)

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        """Accumulate the gradient of this tensor into the ``.grad`` of graph leaves."""
        from .engine import backward
        backward((self,), None if gradient is None else (gradient,), retain_graph,
                 create_graph, inputs=inputs)

    # -- conversion ----------------------------------------------------------------------
    def item(self):
        data = self._data
        if data.size != 1:
            raise RuntimeError(f"a Tensor with {data.size} elements cannot be converted to Scalar")
        if type(data) is _NDARRAY:  # (a loop's ``int(i)``, ``data[i:i + n]``: no device lookup)
            return data.item()
        ns = backend.namespace_of(data)
        if ns.name == "meta":
            raise RuntimeError("Tensor.item() cannot be called on meta tensors")
        return ns.to_host(data).reshape(()).item()

    def tolist(self):
        return backend.namespace_of(self._data).to_host(self._data).tolist()

    def numpy(self, *, force=False):
        if self._requires_grad and not force:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.")
        if self.device != CPU and not force:
            raise TypeError(f"can't convert {self.device.type}{':0' if self.device.type == 'cuda' else ''} device "
                            "type tensor to numpy. "
                            "Use Tensor.cpu() to copy the tensor to host memory first.")
        return backend.namespace_of(self._data).to_host(self._data)

    def __array__(self, dtype=None, copy=None):
        a = self.numpy()
        return a if dtype is None else a.astype(dtype)

    def __array_wrap__(self, array, context=None, return_scalar=False):
        """A NumPy ufunc applied to a Tensor (``np.floor(t)``) gives a Tensor, as in
        PyTorch: its values, without history."""
        return wrap(array)

    def __len__(self):
        if self._data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def __iter__(self):
        if self._data.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return iter(self.unbind(0))

    def __bool__(self):
        if self._data.size != 1:
            values = "no values" if self._data.size == 0 else "more than one value"
            raise RuntimeError(f"Boolean value of Tensor with {values} is ambiguous")
        return bool(self.item())

    def __float__(self):
        return float(self._one_element())

    def __int__(self):
        return int(self._one_element())

    def _one_element(self):
        """``item()`` for Python's conversions, which PyTorch refuses with a ValueError."""
        if self._data.size != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        return self.item()

    def __index__(self):
        data = self._data
        if data.dtype.kind not in "biu" or data.size != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(data.item() if type(data) is _NDARRAY else self.item())

    def __complex__(self):
        return complex(self._one_element())

    __hash__ = object.__hash__

    def __repr__(self):
        from .printing import tensor_repr
        return tensor_repr(self)

    __str__ = __repr__

    _formats_as_number = False  # (subclasses that PyTorch formats as a plain Tensor say True)

    def __format__(self, spec):
        """A 0-d Tensor formats as its Python number, spec or not: ``f"{loss}"`` prints
        ``0.6931...``, as in PyTorch; other tensors and subclasses (a Parameter) print
        their repr, and refuse a format spec, as there. (A batched tensor under vmap is a Tensor to PyTorch: it reads its
        value, which vmap refuses.)"""
        if self._data.ndim == 0 and (type(self) is Tensor or type(self)._formats_as_number):
            return format(self.item(), spec)
        if spec:  # (object's rule, as PyTorch: a spec for a repr is an error)
            raise TypeError(f"unsupported format string passed to {type(self).__name__}.__format__")
        return repr(self)

    def __reduce_ex__(self, protocol):
        """Pickles the values (a host copy) and ``requires_grad``; history is not kept, so a
        pickled non-leaf comes back as a leaf, as in PyTorch."""
        data = backend.namespace_of(self._data).to_host(self._data).copy()
        if type(self) is Tensor and self.__dict__:  # (attributes set on it come back, as in PyTorch)
            return (_rebuild, (data, self._requires_grad, str(self.device)), dict(self.__dict__))
        return (_rebuild, (data, self._requires_grad, str(self.device)))

    def __deepcopy__(self, memo):
        if self._grad_fn is not None:
            raise RuntimeError("Only Tensors created explicitly by the user (graph leaves) "
                               "support the deepcopy protocol at the moment.")
        t = wrap(self._data.copy())
        t._requires_grad = self._requires_grad
        if self._grad is not None:
            t._grad = wrap(self._grad._data.copy())
        memo[id(self)] = t
        if type(self) is Tensor and self.__dict__:  # (attributes set on it, copied as PyTorch does)
            t.__dict__.update(copy.deepcopy(self.__dict__, memo))
        return t


def _rebuild(data, requires_grad, device="cpu"):
    """Unpickling: a leaf with the pickled values."""
    t = wrap(backend.namespace_for(device).asarray(data))
    t._requires_grad = requires_grad
    return t
