"""A tensor's memory as PyTorch programs manage it: ``resize_``/``resize_as_`` and
``share_memory_``/``is_shared``.

``resize_`` keeps PyTorch's storage semantics where tracegrad can. The tensor's storage is
its memory block read in memory order from its first element: shrinking keeps the first
elements (a view of the same memory, so whatever shared it still does), growing within the
block takes the elements that follow (a tensor shrunk earlier gets its old elements back --
not after shrinking to no elements: NumPy keeps no start address for an empty view),
growing beyond it copies them all and appends zeros (PyTorch leaves the new elements
uninitialised). A tensor that requires grad is refused
(PyTorch's message). What tracegrad refuses, where PyTorch would reach outside the
tensor's own elements: a view of another tensor (``x[1:]``, ``x.t()``...), a tensor whose
elements are not one block of memory, and growing memory that something else holds -- a
view, a tensor from ``detach()``/``.data``, a NumPy array from ``numpy()``/``from_numpy()``,
a graph that saved it -- since NumPy cannot grow memory in place: PyTorch grows the shared
storage (or, for ``from_numpy``, refuses too). ``resize_`` to the same shape changes
nothing; any other bumps the version counter, as in PyTorch.

``share_memory_``: a CPU tensor that owns its memory, C- or F-contiguous, that nothing
else refers to (no view, no ``numpy()`` array: the case of a module's parameters and an
optimizer's state, which Hogwild and A3C programs share) moves into an anonymous shared
mapping (``mmap``), so that processes forked afterwards -- ``multiprocessing.Process``
with the ``fork`` start method, Linux's default before Python 3.14 -- write into this
process's elements, as with PyTorch's shared storage. Any other tensor is only marked.
tracegrad has no tensor-sharing reductions (:mod:`tracegrad.multiprocessing` runs on
MPI), so a tensor sent to another process (a queue, a DataLoader worker, a ``spawn``ed
process's args) arrives as a pickled copy whose writes are not seen here. Either way
``is_shared()`` answers True (views of the memory included). A CUDA tensor counts as
shared, a meta tensor cannot be, as in PyTorch.
"""
import math
import sys
import weakref

from .. import backend
from ..runtime.shapes import shape_args
from ..runtime.tensor import Tensor, wrap
from ._args import per_sample

_REFUSE_HINT = "Resize a copy instead: t = t.clone(); t.resize_(...)"


def _owner_refs(t):
    """(whether ``t``'s data owns its memory, references to that memory's array); called
    before the caller binds the data anywhere, so that the count compares with a fresh
    tensor's."""
    return t._data.base is None, sys.getrefcount(backend.memory_root(t._data))


_FRESH = {True: _owner_refs(wrap(backend.cpu.zeros(1)))[1],
          False: _owner_refs(wrap(backend.cpu.zeros(2)[:1]))[1]}


def _memory_order(a):
    """``a``'s elements in memory order as a flat view, when they fill one block of memory
    (C order, F order or any other order of the dims); None otherwise."""
    if a.flags.c_contiguous:
        return a.reshape(-1)
    outer_first = sorted(range(a.ndim), key=lambda d: -abs(a.strides[d]))
    b = a.transpose(outer_first)
    return b.reshape(-1) if b.flags.c_contiguous else None


def _storage(xp, data, flat):
    """The memory ``data`` may use, as PyTorch's storage from the tensor's first element
    on: the rest of the block it starts in (so a shrunk tensor grows back into its old
    elements), or just its own elements (``flat``) when that block is not known."""
    root = backend.memory_root(data)
    if isinstance(root, xp.ndarray) and root.dtype == data.dtype and data.size:
        whole = _memory_order(root)
        if whole is not None:
            return whole[xp.storage_offset(data):]
    return flat


def resize_(self, *sizes, memory_format=None):
    """Give the tensor the shape ``sizes``, keeping its elements in memory order (see the
    module docstring); returns ``self``."""
    shape = shape_args(sizes)
    for s in shape:
        if s < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: {list(shape)}")
    if self._requires_grad:
        raise RuntimeError("cannot resize variables that require grad")
    if per_sample(self):
        raise RuntimeError("vmap: resize_ of a Tensor inside vmap is not supported (it would change every "
                           "sample's shape)")
    if tuple(shape) == tuple(self._data.shape):
        return self
    if self._base is not None:
        raise RuntimeError("resize_: tracegrad cannot resize a view of another tensor (its memory belongs to "
                           f"the base; PyTorch would reinterpret the base's storage). {_REFUSE_HINT}")
    owns, refs = _owner_refs(self)  # (first: before anything here holds the memory)
    xp = backend.namespace_of(self._data)
    held_elsewhere = refs > _FRESH[owns] or not isinstance(backend.memory_root(self._data), xp.ndarray)
    flat = _memory_order(self._data)
    if flat is None:
        raise RuntimeError("resize_: tracegrad cannot resize a tensor whose elements are not one block of "
                           f"memory (a detached view such as x[:, 1:].detach()). {_REFUSE_HINT}")
    storage = _storage(xp, self._data, flat)
    n = math.prod(shape)
    if n <= storage.size:
        data = storage[:n].reshape(shape)
    elif held_elsewhere:
        raise RuntimeError("resize_: tracegrad cannot grow this tensor beyond its memory: that memory is also "
                           "held elsewhere (by a view of it, a tensor from detach() or .data, a NumPy array "
                           "from numpy() or from_numpy(), or a graph that saved it), and NumPy cannot grow "
                           f"memory in place. {_REFUSE_HINT}")
    else:
        data = xp.zeros(n, dtype=flat.dtype)
        data[:storage.size] = storage
        data = data.reshape(shape)
    self._data = data
    self._bump_version()
    return self


def resize_as_(self, the_template, memory_format=None):
    """``self.resize_(the_template.shape)``."""
    if not isinstance(the_template, Tensor):
        raise TypeError(f"resize_as_(): argument 'the_template' (position 1) must be Tensor, not "
                        f"{type(the_template).__name__}")
    return resize_(self, tuple(the_template.shape))


# -- shared memory (a mark: see the module docstring) --------------------------------------------

_SHARED = {}  # id(root array of marked memory) -> what forgets the mark when that array goes


def share_memory_(self):
    """Move the tensor into memory shared with processes forked afterwards, where it can
    (else mark its memory shared: see the module docstring); returns ``self``."""
    kind = self.device.type
    if kind == "meta":
        raise RuntimeError("_share_fd_: only available on CPU")
    if kind == "cpu" and not is_shared(self):
        _move_to_shared_memory(self)
    root = backend.memory_root(self._data)
    key = id(root)
    if kind == "cpu" and key not in _SHARED:
        try:
            _SHARED[key] = weakref.finalize(root, _SHARED.pop, key, None)
        except TypeError:  # (memory from an object without weak references: kept alive with its mark)
            _SHARED[key] = root
    return self


def _move_to_shared_memory(t):
    """Put ``t``'s elements into an anonymous shared mapping, where ``t`` alone holds its
    memory and it is one C- or F-ordered block; else leave it where it is."""
    owns, refs = _owner_refs(t)
    a = t._data
    if not owns or refs != _FRESH[True] or type(a) is not backend.cpu.ndarray or a.size == 0:
        return
    if a.flags.c_contiguous:
        order = a.shape
    elif a.flags.f_contiguous:
        order = a.shape[::-1]
    else:
        return
    import mmap
    flat = backend.cpu.frombuffer(mmap.mmap(-1, a.nbytes), dtype=a.dtype, count=a.size)
    moved = flat.reshape(order) if a.flags.c_contiguous else flat.reshape(order).T
    moved[...] = a
    t._data = moved


def is_shared(self):
    """Whether ``share_memory_()`` marked this tensor's memory (always True on CUDA)."""
    kind = self.device.type
    return kind == "cuda" or (kind == "cpu" and id(backend.memory_root(self._data)) in _SHARED)


FUNCTIONS = {"resize_as_": resize_as_}
METHODS = {"resize_": resize_, "resize_as_": resize_as_, "share_memory_": share_memory_, "is_shared": is_shared}
