"""Reductions and scans with PyTorch's signatures (``dim``, ``keepdim``, ``correction``)."""
from ..backend import dtypes as _dt
from ..rules import arith as A
from ..rules import reduce as R
from . import return_types
from ._args import wrap_dim, wrap_dims


def numpy_names(fn):
    """Accept NumPy's ``axis=`` and ``keepdims=`` for ``dim=`` and ``keepdim=``, as PyTorch does."""
    def wrapper(*args, axis=None, keepdims=None, **kwargs):
        if axis is not None:
            kwargs["dim"] = axis
        if keepdims is not None:
            kwargs["keepdim"] = keepdims
        return fn(*args, **kwargs)
    wrapper.__name__ = wrapper.__qualname__ = fn.__name__
    wrapper.__doc__ = fn.__doc__
    wrapper.__wrapped__ = fn
    return wrapper


def _dims(input, dim):
    """PyTorch's ``dim``: None or () reduce everything; an int or a sequence otherwise."""
    if dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0):
        return None
    return wrap_dims(dim, input.ndim)


def _int_sum_dtype(input, dtype):
    if dtype is not None:
        return _dt.as_dtype(dtype).np
    return _dt.int64.np if input.dtype.category <= _dt.INT else None


def sum(input, dim=None, keepdim=False, *, dtype=None):
    return R.sum(input, dim=_dims(input, dim), keepdim=keepdim, dtype=_int_sum_dtype(input, dtype))


def nansum(input, dim=None, keepdim=False, *, dtype=None):
    if not (input.dtype.is_floating_point or input.dtype.is_complex):  # (no NaN: an integer sum, as sum)
        return sum(input, dim, keepdim, dtype=dtype)
    return sum(A.where(A.isnan(input), 0.0, input), dim, keepdim, dtype=dtype)


def mean(input, dim=None, keepdim=False, *, dtype=None):
    if dtype is not None:
        input = input.to(dtype)
    d = input.dtype
    if not (d.is_floating_point or d.is_complex):
        raise RuntimeError("mean(): could not infer output dtype. Input dtype must be either a "
                           f"floating point or complex dtype. Got: {d.scalar_name}")
    return R.mean(input, dim=_dims(input, dim), keepdim=keepdim)


def prod(input, dim=None, keepdim=False, *, dtype=None):
    dims = None if dim is None else (wrap_dim(dim, input.ndim),)
    return R.prod(input, dim=dims, keepdim=keepdim, dtype=_int_sum_dtype(input, dtype))


def _correction(unbiased, correction):
    if correction is not None:
        return correction
    return 1 if unbiased is None or unbiased else 0


def _floating_only(input):
    d = getattr(input, "dtype", None)
    if isinstance(d, _dt.dtype) and not (d.is_floating_point or d.is_complex):
        raise RuntimeError("std and var only support floating point and complex dtypes")


def var(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    if isinstance(dim, bool):  # legacy var(unbiased)
        dim, unbiased = None, dim
    _floating_only(input)
    return R.var(input, dim=_dims(input, dim), correction=_correction(unbiased, correction), keepdim=keepdim)


def std(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    if isinstance(dim, bool):
        dim, unbiased = None, dim
    _floating_only(input)
    return R.std(input, dim=_dims(input, dim), correction=_correction(unbiased, correction), keepdim=keepdim)


def var_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    return var(input, dim, unbiased, keepdim, correction=correction), mean(input, dim, keepdim)


def std_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    return std(input, dim, unbiased, keepdim, correction=correction), mean(input, dim, keepdim)


def _extremum(full, by_dim, pairwise, result):
    def f(input, dim=None, keepdim=False):
        if dim is None:
            if input.numel() == 0:
                raise RuntimeError(f"{full.name}(): Expected reduction dim to be specified for "
                                   "input.numel() == 0. Specify the reduction dim with the 'dim' argument.")
            return full(input)
        if not isinstance(dim, int):  # max(input, other)
            return pairwise(input, dim)
        values, indices = by_dim(input, dim=wrap_dim(dim, input.ndim), keepdim=keepdim)
        return result(values, indices)
    f.__name__ = full.name
    return f


max = _extremum(R.max, R.max_dim, A.maximum, return_types.max)
min = _extremum(R.min, R.min_dim, A.minimum, return_types.min)


def amax(input, dim=(), keepdim=False):
    return R.amax(input, dim=_dims(input, dim), keepdim=keepdim)


def amin(input, dim=(), keepdim=False):
    return R.amin(input, dim=_dims(input, dim), keepdim=keepdim)


def aminmax(input, *, dim=None, keepdim=False):
    return return_types.aminmax(amin(input, dim, keepdim), amax(input, dim, keepdim))


def argmax(input, dim=None, keepdim=False):
    return R.argmax(input, dim=None if dim is None else wrap_dim(dim, input.ndim), keepdim=keepdim)


def argmin(input, dim=None, keepdim=False):
    return R.argmin(input, dim=None if dim is None else wrap_dim(dim, input.ndim), keepdim=keepdim)


def all(input, dim=None, keepdim=False):
    return R.all_(input, dim=_dims(input, dim), keepdim=keepdim)


def any(input, dim=None, keepdim=False):
    return R.any_(input, dim=_dims(input, dim), keepdim=keepdim)


def count_nonzero(input, dim=None):
    return sum(A.ne(input, 0), dim)


def logsumexp(input, dim, keepdim=False):
    return R.logsumexp(input, dim=wrap_dims(dim, input.ndim), keepdim=keepdim)


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None):
    if dtype is not None:
        x = x.to(dtype)
    return R.vector_norm(x, ord=ord, dim=_dims(x, dim), keepdim=keepdim)


def norm(input, p="fro", dim=None, keepdim=False, dtype=None):
    """PyTorch's ``torch.norm``: a vector norm over ``dim`` (all elements by default), ``'fro'``
    the 2-norm over at most two dims; another string order (``'nuc'``), or ``'fro'`` over
    more dims, is ``linalg.matrix_norm``'s (which refuses what is not a matrix norm)."""
    from .. import linalg
    if isinstance(p, str):
        if p == "fro" and (dim is None or isinstance(dim, int) or len(dim) <= 2):
            return linalg.vector_norm(input, 2, dim, keepdim, dtype=dtype)
        dims = list(range(input.ndim)) if dim is None else dim
        return linalg.matrix_norm(input, p, dims, keepdim, dtype=dtype)
    return linalg.vector_norm(input, 2.0 if p is None else p, dim, keepdim, dtype=dtype)


def cumsum(input, dim, *, dtype=None):
    return R.cumsum(input, dim=wrap_dim(dim, input.ndim), dtype=_int_sum_dtype(input, dtype))


def cumprod(input, dim, *, dtype=None):
    return R.cumprod(input, dim=wrap_dim(dim, input.ndim), dtype=_int_sum_dtype(input, dtype))


FUNCTIONS = {n: numpy_names(globals()[n]) for n in (
    "sum", "nansum", "mean", "prod", "var", "std", "var_mean", "std_mean", "max", "min", "amax",
    "amin", "aminmax", "argmax", "argmin", "all", "any", "count_nonzero", "logsumexp", "norm",
    "cumsum", "cumprod")}
METHODS = {n: f for n, f in FUNCTIONS.items() if n not in ("var_mean", "std_mean")}
