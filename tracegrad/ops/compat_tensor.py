"""Tensor methods PyTorch programs use that compose from existing ones: in-place twins
of out-of-place methods, random fills, predicates and attributes, a few small ops.

Nothing here is a new primitive: every value comes from methods the rule table already
differentiates, so gradients (and their checks) come for free. An in-place twin computes
the out-of-place result and writes it back with ``copy_``, so the version counter, the
leaf check and the gradient (through ``CopyBackwards``) behave as for any in-place write;
its ``grad_fn`` is named ``CopyBackwards`` where PyTorch names the op.
"""
import math

from .. import backend
from ..backend import dtypes as _dt
from ..runtime import grad_mode
from ..runtime.tensor import Tensor, wrap
from ._args import out_of_range, per_sample, wrap_dim
from .indexing import _same_dtype

__all__ = ["METHODS", "FUNCTIONS", "CONSTANTS", "layout", "strided", "memory_format"]

# -- in-place twins ---------------------------------------------------------------------------
_WRITE_BACK = ("addcdiv", "addcmul", "lerp", "eq", "ne", "lt", "le", "gt", "ge", "greater",
               "greater_equal", "less", "less_equal", "not_equal", "logical_and", "logical_or",
               "logical_xor", "logical_not", "multiply", "divide", "subtract", "true_divide",
               "square", "reciprocal", "round", "sgn", "nan_to_num", "rad2deg", "deg2rad", "fix",
               "arccos", "arcsin", "arctan", "arctan2", "atan2", "cumsum", "cumprod", "mvlgamma",
               "polygamma", "tril", "triu", "heaviside", "index_add", "index_copy", "index_fill",
               "negative", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "addmm",
               "baddbmm", "addbmm", "addmv", "addr", "conj_physical", "masked_scatter", "absolute",
               "renorm")


def write_back(name):
    """``x.<name>_(...)``: ``x.<name>(...)`` written into ``x`` (on a copy of ``x`` when
    recording, so the op's saved inputs are not the tensor being overwritten)."""
    def op_(self, *args, **kwargs):
        src = self.clone() if grad_mode.is_grad_enabled() else self
        result = getattr(src, name)(*args, **kwargs)
        if not _can_cast(result.dtype, self.dtype):
            raise RuntimeError(f"result type {result.dtype.scalar_name} can't be cast to the desired "
                               f"output type {self.dtype.scalar_name}")
        return self.copy_(result)
    op_.__name__ = op_.__qualname__ = name + "_"
    op_.__doc__ = f"In place: ``self.{name}(...)`` written into ``self``."
    return op_


def _can_cast(src, dst):
    """PyTorch's ``can_cast``: never to a lower category (float to int, complex to float...)."""
    return src.category <= dst.category


# -- random fills (as nn.init: drawn in the tensor's dtype, written with copy_) ---------------

def _draw(self, kernel, generator, draw):
    from ..nn.init import _sample
    return self.copy_(wrap(_sample(self, kernel, generator, draw)))


def uniform_(self, a=0.0, b=1.0, *, generator=None):
    from ..nn.init import uniform_array
    return self.copy_(wrap(uniform_array(self, a, b, generator)))


def normal_(self, mean=0.0, std=1.0, *, generator=None):
    from ..nn.init import normal_array
    return self.copy_(wrap(normal_array(self, mean, std, generator)))


def exponential_(self, lambd=1.0, *, generator=None):
    if lambd <= 0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={lambd:g}")
    return _draw(self, "exponential", generator, lambda rng, s, dt: rng.exponential(1.0 / lambd, s))


def log_normal_(self, mean=1.0, std=2.0, *, generator=None):
    if std <= 0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={std:g}")
    return _draw(self, "log_normal", generator, lambda rng, s, dt: rng.lognormal(mean, std, s))


def cauchy_(self, median=0.0, sigma=1.0, *, generator=None):
    return _draw(self, "cauchy", generator, lambda rng, s, dt: median + sigma * rng.standard_cauchy(s))


def geometric_(self, p, *, generator=None):
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={p:g}")
    return _draw_any(self, generator, lambda rng, s: rng.geometric(p, s))


def random_(self, a=None, b=None, *, generator=None):
    """Integers in ``[a, b)``; ``random_(b)`` is ``[0, b)``; with neither, ``[0, 2^mantissa]``
    for floats (PyTorch's range) or the dtype's range for integers."""
    if b is None:
        a, b = (0, a) if a is not None else (0, None)
    if b is None:
        d = self.dtype
        b = (1 << {2: 11, 4: 24, 8: 53}[d.itemsize]) + 1 if d.is_floating_point else (
            2 if d is _dt.bool_ else int(backend.cpu.iinfo(d.np).max) + 1)
    if a >= b:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={a} >= to={b}")
    return _draw_any(self, generator, lambda rng, s: rng.integers(a, b, s))


def bernoulli_(self, p=0.5, *, generator=None):
    if per_sample(p) or per_sample(self):  # under vmap: compared through primitives (which batch)
        from ..runtime.creation import rand
        return self.copy_(rand(self.shape, dtype=_dt.float64, device=self.device, generator=generator) < p)
    probs = p._data if isinstance(p, Tensor) else p
    return _draw_any(self, generator, lambda rng, s: rng.random(s) < probs)


def bernoulli(input, p=None, *, generator=None):
    """0/1 draws with probabilities ``input`` (or ``p``), in ``input``'s dtype; no gradient."""
    probs = input.detach() if p is None else p
    if per_sample(input) or per_sample(probs):  # under vmap: compared through primitives (which batch)
        from ..runtime.creation import rand
        u = rand(input.shape, dtype=_dt.float64, device=input.device, generator=generator)
        return (u < probs).to(input.dtype)
    out = wrap(backend.namespace_of(input._data).zeros(input._data.shape, dtype=input._data.dtype))
    return bernoulli_(out, probs, generator=generator)


def _draw_any(self, generator, draw):
    """A draw of any dtype (integers, booleans) from ``draw(rng, shape)``, copied in."""
    from ..runtime.creation import _stream
    xp = backend.namespace_of(self._data)
    sample = xp.asarray(draw(_stream(generator, xp), self._data.shape)).astype(self._data.dtype)
    return self.copy_(wrap(sample))


def fill_diagonal_(self, fill_value, wrap=False):
    """Write ``fill_value`` on the main diagonal (of a 2-D or all-equal-sides tensor)."""
    if self.ndim < 2 or self.ndim > 2 and len(set(self.shape)) != 1:
        raise RuntimeError("all dimensions of input must be of equal length" if self.ndim > 2
                           else "dimensions must larger than 1")
    n = min(self.shape)
    rows = self.shape[0]
    step = n + 1 if wrap and self.ndim == 2 and rows > self.shape[1] else None
    idx = list(range(n))
    if step is not None:  # PyTorch's wrap: the diagonal restarts every (cols + 1) rows
        idx = [(r, r % (self.shape[1] + 1)) for r in range(rows) if r % (self.shape[1] + 1) < self.shape[1]]
        rows_i, cols_i = zip(*idx)
        self[list(rows_i), list(cols_i)] = fill_value
        return self
    self[tuple([idx] * self.ndim)] = fill_value
    return self


# -- predicates and attributes ----------------------------------------------------------------

class layout:
    """A tensor memory layout; tracegrad has only ``strided`` (dense)."""

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"tracegrad.{self.name}"


strided = layout("strided")


class memory_format:
    """A requested memory layout. tracegrad's tensors are always row-major (C order): the
    formats are accepted where PyTorch takes them and do not change the layout."""

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"tracegrad.{self.name}"


CONSTANTS = {f.name: f for f in map(memory_format, ("contiguous_format", "channels_last", "channels_last_3d",
                                                    "preserve_format"))}
CONSTANTS.update(strided=strided, layout=layout, memory_format=memory_format, e=math.e, pi=math.pi,
                 inf=math.inf, nan=math.nan, newaxis=None,
                 has_lapack=True,  # tracegrad.linalg runs NumPy's LAPACK
                 has_spectral=True,  # tracegrad.fft
                 has_mkl=False, has_openmp=False)  # neither is called by tracegrad itself


def type_as(self, other):
    return self.to(device=other.device, dtype=other.dtype)


def ndimension(self):
    return self.ndim


def data_ptr(self):
    """The address of the first element (CPU or GPU memory)."""
    a = self._data
    iface = getattr(a, "__array_interface__", None) or a.__cuda_array_interface__
    return iface["data"][0]


def get_device(self):
    return -1 if self.device.type == "cpu" else (self.device.index or 0)


def is_signed(self):
    return self.dtype.is_signed


def is_nonzero(self):
    if self.numel() == 0:
        raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
    if self.numel() > 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    return bool(self.item() != 0)


def is_same_size(self, other):
    return self.shape == other.shape


def new(self, *args, device=None):
    """The legacy ``x.new(...)``: data or a size, in ``x``'s dtype and on its device."""
    from ..runtime.legacy_types import CUDA_LEGACY_TYPES, LEGACY_TYPES
    table = CUDA_LEGACY_TYPES if self.device.type == "cuda" else LEGACY_TYPES
    return table[self.dtype._legacy](*args, device=device)


def ravel(self):
    return self.reshape(-1)


def signbit(self):
    if self.is_floating_point():  # -0.0 has its sign bit set: 1 / -0.0 is -inf
        return (self < 0) | ((self == 0) & (self.detach().reciprocal() < 0))
    return self < 0


def isposinf(self):
    return self.isinf() & (self > 0)


def isneginf(self):
    return self.isinf() & (self < 0)


def isreal(self):
    if self.is_complex():
        return self.imag == 0
    return self.new_ones(self.shape, dtype=_dt.bool_)


def heaviside(self, values):
    if isinstance(values, Tensor) and values.dtype is not self.dtype:
        raise RuntimeError("heaviside is not yet implemented for tensors with different dtypes")
    step = (self > 0).to(self.dtype)
    return step.where(self != 0, values)


def dist(self, other, p=2):
    return (self - other).norm(p)


def logcumsumexp(self, dim):
    """log(cumsum(exp(x))) along ``dim``, as a running log-add (rule ``logcumsumexp``); a
    complex ``x`` shifted by its real parts' maximum."""
    from ..rules.reduce import logcumsumexp as rule
    d = wrap_dim(dim, self.ndim) if self.ndim else wrap_dim(dim, 1)
    if self.dtype.is_complex:
        if self.numel() == 0:
            return self.clone()
        shift = self.detach().real.amax(d, keepdim=True)
        shift = shift.masked_fill(shift.isinf(), 0)
        return (self - shift).exp().cumsum(d).log() + shift
    return rule(self, dim=d)


def _along(index, dim, like):
    """``index`` (1-D) shaped to pick whole slices of ``like`` along ``dim``."""
    shape = [1] * like.ndim
    shape[dim] = -1
    return index.reshape(shape).expand(like.shape)


def index_add(self, dim, index, source, *, alpha=1):
    _same_dtype(self, source, "index_add_(): self ({d}) and source ({s}) must have the same scalar type")
    dim = dim % max(self.ndim, 1)
    if self.ndim <= 1 and out_of_range(index, self.numel()) is not None:
        raise IndexError("index out of range in self")
    src = source * alpha if alpha != 1 else source
    return self.scatter_add(dim, _along(index, dim, src), src)


def index_copy(self, dim, index, source):
    _same_dtype(self, source, "index_copy_(): self and source expected to have the same dtype, but got "
                              "(self) {d} and (source) {s}")
    dim = dim % max(self.ndim, 1)
    bad = out_of_range(index, self.shape[dim] if self.ndim else 1)
    if bad is not None:
        raise IndexError(f"index_copy_(): index {bad} is out of bounds for dimension {dim} with size "
                         f"{self.shape[dim] if self.ndim else 1}")
    return self.scatter(dim, _along(index, dim, source), source)


def index_fill(self, dim, index, value):
    dim = dim % max(self.ndim, 1)
    size = self.shape[dim] if self.ndim else 1
    bad = out_of_range(index, size, negatives=True)
    if bad is not None:
        raise IndexError(f"index {bad} is out of bounds for dimension {dim} with size {size}")
    hit = self.new_zeros(self.shape[dim], dtype=_dt.bool_)
    hit[index] = True
    shape = [1] * self.ndim
    shape[dim] = -1
    return self.masked_fill(hit.reshape(shape), value)


def masked_scatter(self, mask, source):
    """``source``'s leading elements written, in order, where ``mask`` is True."""
    _same_dtype(self, source, "masked_scatter: expected self and source to have same dtypes but got{d} and {s}")
    mask = mask.expand(self.shape) if mask.shape != self.shape else mask
    count = int(mask.sum().item())
    picked = source.reshape(-1)[:count]
    out = self.clone()
    out[mask] = picked
    return out


def cov(self, *, correction=1, fweights=None, aweights=None):
    """The covariance of the rows of ``self`` (variables) over its columns (observations),
    with PyTorch's (and NumPy's) frequency and analytic weights."""
    if self.ndim > 2:
        raise ValueError("cov(): expected input to have two or fewer dimensions but got an input "
                         f"with {self.ndim} dimensions")
    x = self.reshape(1, -1) if self.ndim < 2 else self
    if not (x.is_floating_point() or x.is_complex()):
        x = x.to(_dt.get_default_dtype())
    w = fweights
    if aweights is not None:
        w = aweights if w is None else w * aweights
    if w is None:
        w_sum = x.new_tensor(float(x.shape[1]))
        mean = x.mean(1, keepdim=True)
    else:
        w = w.to(x.real.dtype if x.is_complex() else x.dtype)
        w_sum = w.sum()
        mean = (x * w).sum(1, keepdim=True) / w_sum
    if correction == 0:
        norm = w_sum
    elif aweights is None:
        norm = w_sum - correction
    else:
        norm = w_sum - correction * (w * aweights).sum() / w_sum
    centered = x - mean
    weighted = centered * w if w is not None else centered
    out = weighted @ centered.conj().mT / norm.clamp_min(0)
    return out.squeeze()


def corrcoef(self):
    c = cov(self)
    if c.ndim == 0:
        return c / c
    d = c.diagonal().real.sqrt() if c.is_complex() else c.diagonal().sqrt()
    c = c / d[:, None] / d[None, :]
    return c if c.is_complex() else c.clamp(-1, 1)


def _scaled_sum(input, product, beta, alpha):
    """``beta * input + alpha * product``; ``input`` ignored (NaNs too) when ``beta`` is 0."""
    product = product * alpha if alpha != 1 else product
    if beta == 0:
        return product + input.new_zeros(()).expand(input.shape) * 0
    return product + (input * beta if beta != 1 else input)


def addmv(self, mat, vec, *, beta=1, alpha=1):
    return _scaled_sum(self, mat @ vec, beta, alpha)


def addr(self, vec1, vec2, *, beta=1, alpha=1):
    return _scaled_sum(self, vec1.outer(vec2), beta, alpha)


def addbmm(self, batch1, batch2, *, beta=1, alpha=1):
    return _scaled_sum(self, (batch1 @ batch2).sum(0), beta, alpha)


def renorm(self, p, dim, maxnorm):
    """Each slice along ``dim`` whose ``p``-norm exceeds ``maxnorm`` scaled down to it."""
    dim = dim % self.ndim
    others = tuple(d for d in range(self.ndim) if d != dim)
    norms = self.abs().pow(p).sum(others, keepdim=True).pow(1.0 / p) if others else self.abs()
    scale = (maxnorm / (norms + 1e-7)).where(norms > maxnorm, norms.new_ones(()))
    return self * scale


def _scatter_into(view_of):
    """``x.<view>_scatter(src, ...)``: a copy of ``x`` with ``src`` written into the view."""
    def scatter(self, src, *args, **kwargs):
        out = self.clone()
        target = view_of(out, *args, **kwargs)
        if target.shape != src.shape:
            raise RuntimeError(f"expected src to have a size equal to the slice of self. src size = "
                               f"{list(src.shape)}, slice size = {list(target.shape)}")
        target.copy_(src)
        return out
    return scatter


select_scatter = _scatter_into(lambda x, dim, index: x.select(dim, index))
slice_scatter = _scatter_into(lambda x, dim=0, start=None, end=None, step=1:
                              x[(slice(None),) * (dim % x.ndim) + (slice(start, end, step),)])


def matrix_exp(self):
    """exp of square matrices (the table's ``matrix_exp`` rule)."""
    if not (self.dtype.is_floating_point or self.dtype.is_complex):
        raise RuntimeError("linalg.matrix_exp: Expected a floating point or complex tensor as input. "
                           f"Got {self.dtype.scalar_name}")
    if self.ndim < 2 or self.shape[-1] != self.shape[-2]:
        raise RuntimeError("linalg.matrix_exp: A must be batches of square matrices, but they are "
                           f"{self.shape[-2] if self.ndim > 1 else 1} by {self.shape[-1]} matrices")
    from ..rules.matrix_exp import matrix_exp as rule
    return rule(self)


def float_power_(self, exponent):
    if self.dtype not in (_dt.float64, _dt.complex128):
        wanted = "ComplexDouble" if self.is_complex() or getattr(exponent, "is_complex", lambda: False)() \
            else "Double"
        raise RuntimeError(f"the base given to float_power_ has dtype {self.dtype.scalar_name} but the "
                           f"operation's result requires dtype {wanted}")
    return write_back("float_power")(self, exponent)


def _refuse_per_sample(name, *tensors):
    """A Python callable over the elements cannot be batched: refused under vmap."""
    if any(per_sample(t) for t in tensors):
        raise RuntimeError(f"vmap: {name}() with a Python callable is not supported on a Tensor "
                           "inside vmap (it has one value per sample): use tensor operations instead")


def apply_(self, callable):
    """Replace every element by ``callable(element)`` (CPU only; not differentiable)."""
    if self.device.type != "cpu":
        raise TypeError("apply_ is only implemented on CPU tensors")
    _refuse_per_sample("apply_", self)
    values = backend.cpu.vectorize(callable, otypes=[self._data.dtype])(self._data) if self.numel() else self._data
    return self.copy_(wrap(backend.cpu.asarray(values, dtype=self._data.dtype)))


def map_(self, tensor, callable):
    """``self[i] = callable(self[i], tensor[i])`` (``tensor`` broadcast; CPU only)."""
    if self.device.type != "cpu":
        raise TypeError("map_ is only implemented on CPU tensors")
    _refuse_per_sample("map_", self, tensor)
    other = backend.cpu.broadcast_to(tensor._data, self._data.shape)
    values = backend.cpu.vectorize(callable, otypes=[self._data.dtype])(self._data, other) if self.numel() else self._data
    return self.copy_(wrap(backend.cpu.asarray(values, dtype=self._data.dtype)))


def unfold(self, dimension, size, step):
    """The windows of ``size`` elements every ``step`` along ``dimension``, as a new last
    dimension: a view of a contiguous ``self`` (``as_strided``: PyTorch's strides, and
    writes reach ``self``), else a copy gathered with index_select."""
    dim = dimension % max(self.ndim, 1)
    length = self.shape[dim] if self.ndim else 1
    if size > length:
        raise RuntimeError(f"maximum size for tensor at dimension {dim} is {length} but size is {size}")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    count = (length - size) // step + 1
    if self.ndim == 0:  # (one window of the one element, as in PyTorch)
        return self.as_strided((1,), (1,)) if not per_sample(self) else self.reshape(1)
    if self.is_contiguous() and not per_sample(self):
        shape, strides = list(self.shape), list(self.stride())
        shape[dim:dim + 1], strides[dim:dim + 1] = [count], [strides[dim] * step]
        return self.as_strided(shape + [size], strides + [self.stride()[dim]])
    from ..runtime.creation import arange
    starts = arange(count, device=self.device) * step
    index = (starts.unsqueeze(1) + arange(size, device=self.device)).reshape(-1)
    source = self if self.ndim else self.reshape(1)
    windows = source.index_select(dim, index)
    shape = list(source.shape)
    shape[dim:dim + 1] = [count, size]
    return windows.reshape(shape).movedim(dim + 1, -1)


def _bitwise(op):
    def fn(self, other):
        return getattr(self, op)(other)
    return fn


# -- the tables -------------------------------------------------------------------------------

_COMPOSED = {n: globals()[n] for n in (
    "type_as", "ndimension", "data_ptr", "get_device", "is_signed", "is_nonzero", "is_same_size",
    "new", "ravel", "signbit", "isposinf", "isneginf", "isreal", "heaviside", "dist",
    "logcumsumexp", "index_add", "index_copy", "index_fill", "masked_scatter", "cov", "corrcoef",
    "bernoulli", "addmv", "addr", "addbmm", "renorm", "select_scatter", "slice_scatter",
    "matrix_exp", "float_power_", "apply_", "map_", "unfold", "uniform_", "normal_", "exponential_", "log_normal_", "cauchy_", "geometric_",
    "random_", "bernoulli_", "fill_diagonal_")}
_COMPOSED.update(bitwise_and=_bitwise("__and__"), bitwise_or=_bitwise("__or__"),
                 bitwise_xor=_bitwise("__xor__"), is_neg=lambda self: False,
                 resolve_neg=lambda self: self,
                 unsafe_chunk=lambda self, chunks, dim=0: self.chunk(chunks, dim),
                 unsafe_split=lambda self, split_size, dim=0: self.split(split_size, dim),
                 split_with_sizes=lambda self, split_sizes, dim=0: self.split(list(split_sizes), dim),
                 prelu=lambda self, weight: _prelu(self, weight))

METHODS = dict(_COMPOSED)
METHODS.update({n + "_": write_back(n) for n in _WRITE_BACK})
_FLAGS = {"is_cpu": lambda self: self.device.type == "cpu", "is_sparse": lambda self: False,
          "is_quantized": lambda self: False, "is_meta": lambda self: self.device.type == "meta",
          "is_nested": lambda self: False, "is_mkldnn": lambda self: False,
          "is_mps": lambda self: False, "is_xla": lambda self: False, "is_xpu": lambda self: False,
          "is_sparse_csr": lambda self: False, "layout": lambda self: strided,
          "mH": lambda self: self.mT.conj(), "H": lambda self: self.mT.conj() if self.ndim == 2 else _h_error(self)}
METHODS.update({n: property(f) for n, f in _FLAGS.items()})
METHODS["adjoint"] = lambda self: self.mT.conj()


def _prelu(self, weight):
    from ..nn import functional
    return functional.prelu(self, weight)


def _h_error(self):
    raise RuntimeError(f"tensor.H is only supported on matrices (2-D tensors). Got {self.ndim}-D tensor.")


FUNCTIONS = {n: f for n, f in _COMPOSED.items()
             if n not in ("type_as", "ndimension", "data_ptr", "get_device", "new", "uniform_", "normal_",
                          "exponential_", "log_normal_", "cauchy_", "geometric_", "random_", "bernoulli_",
                          "fill_diagonal_", "masked_scatter", "float_power_", "apply_", "map_",
                          "prelu", "unfold", "unsafe_chunk", "unsafe_split", "split_with_sizes")}
FUNCTIONS.update(masked_scatter=masked_scatter, adjoint=METHODS["adjoint"])
