"""Reductions and scans. ``dim`` is always a tuple of non-negative dims or None (all);
the torch-style functions in :mod:`tracegrad.ops.reduction` normalise it. A vjp first
gives the gradient the kept-dims shape (``keep``), then broadcasts it over the input."""
import math

from ..backend import cpu as _cpu
from .arith import isfinite, isnan, logical_and, logical_or, where
from .broadcast import broadcast_to, indicator, zeros_like
from .complex_ import conj_of, real_of
from .core import FLOAT, KEEP, primitive
from .shape import flip, permute, reshape
from .unary import abs, exp, log, sign


def kept_shape(shape, dim):
    """``shape`` with the reduced dims set to 1 (what keepdim=True gives)."""
    if dim is None:
        return (1,) * len(shape)
    return tuple(1 if i in dim else s for i, s in enumerate(shape))


def count(shape, dim):
    """Number of elements reduced into each output element."""
    return math.prod(shape if dim is None else [shape[i] for i in dim])


def keep(g, shape, dim, keepdim):
    """A reduction's gradient (or result) reshaped to the kept-dims shape of ``shape``."""
    return g if keepdim else reshape(g, shape=kept_shape(shape, dim))


def spread(g, x, dim, keepdim):
    """A reduction's gradient broadcast back over the input ``x`` (a Python number, in
    AST mode, counts as shape ``()``)."""
    shape = tuple(getattr(x, "shape", ()))
    return broadcast_to(keep(g, shape, dim, keepdim), shape=shape)


def _axis(dim):
    return None if dim is None else tuple(dim)


def _by_dim(name):
    def node(args, params):
        return f"{name}Backward{0 if params.get('dim') is None else 1}"
    return node


def _total(xp, x, dim, keepdim, dtype=None):
    """Sum over ``dim`` through the ufunc itself (so float warnings are attributed to
    tracegrad, which silences them like PyTorch); float16 accumulates in float32."""
    if x.dtype == xp.float16 and dtype is None:
        return xp.add.reduce(x, axis=_axis(dim), keepdims=keepdim, dtype=xp.float32).astype(x.dtype)
    return add_reduce(xp, x, _axis(dim), keepdim, dtype)


BLOCKED_MIN = 4096  # elements along a dim from which a float32 sum over it goes in blocks
BLOCK = 64          # elements a block adds in float32 (its sum's error: a few ulps)
_BLOCKED = {_cpu.dtype(_cpu.float32): _cpu.float64, _cpu.dtype(_cpu.complex64): _cpu.complex128}


def add_reduce(xp, x, axis, keepdims, dtype=None):
    """``xp.add.reduce``, but for a float32 (complex64) NumPy sum over part of the dims
    that includes a long one (at least :data:`BLOCKED_MIN`) other than the innermost:
    NumPy adds such a dim one row after another, so its error grows with the count
    (1e-5 relative over 2e5 rows: column means of a large float32 table lose three
    digits), where PyTorch's cascade sum stays near float32's rounding. That dim is summed
    in blocks of :data:`BLOCK` in float32, and the blocks' sums in float64 (as accurate as
    PyTorch's, measured: 5e-8 relative over 2e5 rows; the float64 pass reads 1/64 of the
    data)."""
    wide = _BLOCKED.get(getattr(x, "dtype", None))
    if type(x) is not _cpu.ndarray or wide is None or axis is None or (dtype is not None and dtype != x.dtype):
        return xp.add.reduce(x, axis=axis, keepdims=keepdims, dtype=dtype)
    axes = tuple(sorted(a % x.ndim for a in axis))
    long = [a for a in axes if x.shape[a] >= BLOCKED_MIN and not (a == x.ndim - 1 and x.strides[a] == x.itemsize)]
    if not long or len(axes) == x.ndim:
        return xp.add.reduce(x, axis=axis, keepdims=keepdims, dtype=dtype)
    big, n = long[0], x.shape[long[0]]
    blocks = n // BLOCK
    part = [slice(None)] * x.ndim
    part[big] = slice(0, blocks * BLOCK)
    split = x[tuple(part)].reshape(x.shape[:big] + (blocks, BLOCK) + x.shape[big + 1:])
    within = tuple(a + (a > big) for a in axes if a != big) + (big + 1,)
    out = xp.add.reduce(xp.add.reduce(split, axis=within, keepdims=True), axis=big, keepdims=True, dtype=wide)
    out = out.reshape(tuple(1 if a in axes else d for a, d in enumerate(x.shape)))
    if blocks * BLOCK < n:
        part[big] = slice(blocks * BLOCK, n)
        out = out + xp.add.reduce(x[tuple(part)], axis=axes, keepdims=True, dtype=wide)
    out = out.astype(x.dtype)
    return out if keepdims else out.reshape(tuple(d for a, d in enumerate(x.shape) if a not in axes))


@primitive(_by_dim("Sum"), dtypes=KEEP, linear=True, complex=True)
def sum(xp, x, *, dim=None, keepdim=False, dtype=None):
    return _total(xp, x, dim, keepdim, dtype)


@sum.vjp("x")
def sum_vjp(g, out, x, *, dim=None, keepdim=False, dtype=None):
    return spread(g, x, dim, keepdim)


@primitive(_by_dim("Mean"), dtypes=KEEP, linear=True, complex=True)
def mean(xp, x, *, dim=None, keepdim=False):
    # sum / count rather than xp.mean: an empty mean is nan without NumPy's own warning;
    # the count as a Python number cannot overflow a float16
    acc = xp.float32 if x.dtype == xp.float16 else x.dtype
    total = add_reduce(xp, x, _axis(dim), keepdim, acc)
    return (total / count(x.shape, dim)).astype(x.dtype, copy=False)


@mean.vjp("x")
def mean_vjp(g, out, x, *, dim=None, keepdim=False):
    return spread(g, x, dim, keepdim) / count(x.shape, dim)


@primitive(_by_dim("Prod"), dtypes=KEEP,  # PyTorch's prod takes one dim: an int
           saved_view=lambda params: {"dim": params["dim"][0]} if params.get("dim") else {}, complex=True)
def prod(xp, x, *, dim=None, keepdim=False, dtype=None):
    wide = _wide_product(xp, x, dtype)
    if wide is None:
        return xp.multiply.reduce(x, axis=_axis(dim), keepdims=keepdim, dtype=dtype)
    return xp.multiply.reduce(x, axis=_axis(dim), keepdims=keepdim, dtype=xp.float64).astype(wide)


def _wide_product(xp, x, dtype):
    """The float16/float32 result dtype of a product that then accumulates in float64 (as
    PyTorch's CPU cumprod does: 1e-30 * 1e-30 * 1e30 would underflow on the way to a
    representable result); None for other dtypes (which keep NumPy's own rules)."""
    out = dtype or x.dtype
    return out if out in (xp.float16, xp.float32) else None


def prod_partials(x, dim):
    """d prod / d x_i = the product of the other elements, as (the product of those before
    x_i) * (the product of those after it), the reduced elements laid out in a row. No
    division by x_i: that needs the cases of zeros, and loses the partials wherever the
    whole product under- or overflows ([1e-30, 1e-20] in float32: prod is 0, the partials
    1e-20 and 1e-30). Shape of ``x``."""
    if x.ndim == 0 or 0 in x.shape:  # (x.size: a Tensor's is a method)
        return zeros_like(x) + 1.0
    dims = tuple(range(x.ndim)) if dim is None else tuple(dim)
    order = tuple(d for d in range(x.ndim) if d not in dims) + dims
    laid = permute(x, dims=order)
    lead = laid.shape[:x.ndim - len(dims)]
    row = reshape(laid, shape=lead + (count(x.shape, dims),))
    last = row.ndim - 1
    before = _exclusive_cumprod(row, last)
    after = flip(_exclusive_cumprod(flip(row, dims=(last,)), last), dims=(last,))
    return permute(reshape(before * after, shape=laid.shape), dims=_inverse(order))


def _exclusive_cumprod(v, dim):
    """Products of the elements strictly before each position along the last dim ``dim``."""
    return constant_pad_nd(cumprod(v, dim=dim), pad=(1, -1), value=1.0)


def _inverse(order):
    inverse = [0] * len(order)
    for i, d in enumerate(order):
        inverse[d] = i
    return tuple(inverse)


@prod.vjp("x", uses="x")
def prod_vjp(g, out, x, *, dim=None, keepdim=False, dtype=None):
    return spread(g, x, dim, keepdim) * prod_partials(x, dim)


@prod.jvp("x")
def prod_jvp(t, out, x, *, dim=None, keepdim=False, dtype=None):
    return sum(t * prod_partials(x, dim), dim=dim, keepdim=keepdim)


# var and std of complex values are real: the mean of |x - mean|^2, as in NumPy and
# PyTorch; their slope is 2 conj(x - mean) / dof in JAX's convention.
@primitive("VarBackward0", dtypes=FLOAT, complex="real")
def var(xp, x, *, dim=None, correction=1, keepdim=False):
    return _variance(xp, x, dim, correction, keepdim)


def _variance(xp, x, dim, correction, keepdim, root=False):
    """Sum of squared deviations / (n - correction) (its square root for ``root``),
    computed here (not xp.var) so that degenerate counts give inf/nan silently, as in
    PyTorch."""
    n = count(x.shape, dim)
    work = x.astype(xp.float32) if x.dtype == xp.float16 else x  # float16: accumulate in float32
    out_dtype = xp.finfo(x.dtype).dtype if x.dtype.kind == "c" else x.dtype  # (complex: real)
    # (max/min/sum are rules in this module: plain conditionals instead of the builtins)
    centered = work - _total(xp, work, dim, True) / (n if n > 0 else 1)
    squares = _total(xp, _squared(centered), dim, keepdim)
    dof = n - correction if n > correction else 0
    r = (squares / squares.dtype.type(dof)).astype(out_dtype, copy=False)
    if root:
        r = xp.sqrt(r)
    # The squares overflow, or underflow and lose digits, from deviations ~ 1e19 or 1e-19
    # on (float32) although the variance (or the deviation) is representable: slices
    # whose sum of squares left the normal range are computed again, scaled by their
    # largest deviation m: var = (q m) m and std = sqrt(q) m, q the scaled variance.
    finfo = xp.finfo(squares.dtype)
    fine = (squares >= finfo.tiny) & (squares <= finfo.max)
    if dof == 0 or fine.all():
        return r
    m = xp.amax(xp.abs(centered), axis=_axis(dim), keepdims=True)
    m = xp.where((m > 0) & (m < xp.inf), m, 1).astype(squares.dtype, copy=False)
    scaled = centered / m
    q = _total(xp, _squared(scaled), dim, keepdim) / squares.dtype.type(dof)
    if not keepdim:
        m = xp.reshape(m, q.shape)
    exact = xp.sqrt(q) * m if root else q * m * m
    return xp.where(fine, r, exact.astype(out_dtype, copy=False))


def _squared(c):
    """``|c|^2``, elementwise (a real array for complex ``c``)."""
    return c * c if c.dtype.kind != "c" else c.real * c.real + c.imag * c.imag


def variance_slope(x, dim, correction):
    """d var / d x = 2 (x - mean) / (n - correction), with PyTorch's conventions when the
    correction leaves no degrees of freedom: over all elements, +inf (nan where x equals
    the mean); over ``dim``, the plain ratio (inf at 0, negative below)."""
    dof = count(x.shape, dim) - correction
    c = x - mean(x, dim=dim, keepdim=True)
    # (values equal but for the mean's rounding -- 0.1 three times -- deviate by 0 exactly:
    # else std's slope there, c / std, is the ratio of two rounding errors)
    c = where(abs(c) <= abs(x) * (4 * _eps(x)), c * 0.0, c)
    centered = conj_of(c)
    if dof > 0:
        return centered * (2.0 / dof)
    if dim is None or x.ndim == 0:
        # nan where x is the mean, +inf elsewhere -- built from `centered` to keep its dtype
        return where(centered == 0, centered * float("nan"), abs(centered) * float("inf"))
    return centered * (2.0 / dof if dof else float("inf"))


@var.vjp("x", uses="x")
def var_vjp(g, out, x, *, dim=None, correction=1, keepdim=False):
    return spread(real_of(g), x, dim, keepdim) * variance_slope(x, dim, correction)


@var.jvp("x")
def var_jvp(t, out, x, *, dim=None, correction=1, keepdim=False):
    return real_of(sum(t * variance_slope(x, dim, correction), dim=dim, keepdim=keepdim))


@primitive("StdBackward0", dtypes=FLOAT, complex="real")
def std(xp, x, *, dim=None, correction=1, keepdim=False):
    return _variance(xp, x, dim, correction, keepdim, root=True)


def _half_over(out):
    """d std / d var = 1 / (2 std), taken as 0 where std is 0 (PyTorch's choice)."""
    return where(out == 0, 0.0, 0.5 / where(out == 0, 1.0, out))


@std.vjp("x", uses="x out")
def std_vjp(g, out, x, *, dim=None, correction=1, keepdim=False):
    return spread(real_of(g) * _half_over(out), x, dim, keepdim) * variance_slope(x, dim, correction)


@std.jvp("x")
def std_jvp(t, out, x, *, dim=None, correction=1, keepdim=False):
    return real_of(sum(t * variance_slope(x, dim, correction), dim=dim, keepdim=keepdim)) * _half_over(out)


# -- extrema: ties share the gradient evenly, as PyTorch's max()/amax() do ---------------------

def tie_weights(out, x, dim, keepdim, nan_ties=False):
    """1/(number of ties) where ``x`` attains the extremum ``out``, 0 elsewhere; with
    ``nan_ties`` a NaN result is attained by the NaNs (which equal nothing)."""
    kept = keep(out, x.shape, dim, keepdim)
    same = x == kept
    if nan_ties:
        same = logical_or(same, logical_and(isnan(x), isnan(kept)))
    hit = indicator(same, x)
    return hit / sum(hit, dim=dim, keepdim=True)


def shared_by_ties_vjp(g, out, x):
    """The cotangent of a value read from all of ``x`` (``max()``, ``median()``: not along a
    dim) shared evenly by the elements equal to it -- by the NaNs where it is NaN (PyTorch's
    ``evenly_distribute_backward``; ``amax`` gives NaN there)."""
    return spread(g, x, None, False) * tie_weights(out, x, None, False, nan_ties=True)


# amax/amin select: their derivative (the cotangent shared among the selected entries)
# holds for complex values too, ordered as NumPy orders them (real part, then imaginary).
@primitive("AmaxBackward0", dtypes=KEEP, complex=True)
def amax(xp, x, *, dim=None, keepdim=False):
    return xp.amax(x, axis=_axis(dim), keepdims=keepdim)


@primitive("AminBackward0", dtypes=KEEP, complex=True)
def amin(xp, x, *, dim=None, keepdim=False):
    return xp.amin(x, axis=_axis(dim), keepdims=keepdim)


@primitive("MaxBackward1", dtypes=KEEP)
def max(xp, x):
    return xp.max(x)


@primitive("MinBackward1", dtypes=KEEP)
def min(xp, x):
    return xp.min(x)


def extremum_vjp(g, out, x, *, dim=None, keepdim=False):
    return spread(g, x, dim, keepdim) * tie_weights(out, x, dim, keepdim)


def extremum_jvp(t, out, x, *, dim=None, keepdim=False):
    return sum(t * tie_weights(out, x, dim, keepdim), dim=dim, keepdim=keepdim)


for _p in (amax, amin):
    _p.vjp("x", uses="x out")(extremum_vjp)
for _p in (max, min):
    _p.vjp("x", uses="x out")(shared_by_ties_vjp)
for _p in (amax, amin, max, min):
    _p.jvp("x")(extremum_jvp)  # (a NaN result: a NaN tangent, as PyTorch's)


def _lower_median(xp, x, skip_nan):
    """The lower median of all of ``x`` (NaN where a NaN takes part, or -- ``skip_nan`` --
    where all are NaN); sorted, NaN sorts last."""
    flat = xp.sort(xp.reshape(x, (-1,)))
    n = flat.size - int(xp.isnan(flat).sum()) if skip_nan else flat.size
    if n == 0 or (not skip_nan and xp.isnan(flat[-1])):
        return xp.asarray(xp.nan, dtype=x.dtype)
    return flat[(n - 1) // 2]


@primitive("MedianBackward0", dtypes=KEEP)
def median_all(xp, x):
    """``median()`` of all elements: the lower median. Its cotangent is shared by every
    element equal to it (by the NaNs where it is NaN), as PyTorch's."""
    return _lower_median(xp, x, False)


@primitive("NanmedianBackward0", dtypes=KEEP)
def nanmedian_all(xp, x):
    """``nanmedian()`` of all elements: the lower median of those that are not NaN."""
    return _lower_median(xp, x, True)


for _p in (median_all, nanmedian_all):
    _p.vjp("x", uses="x out")(shared_by_ties_vjp)
    _p.jvp("x")(extremum_jvp)


def _pick_along(xp, x, dim, keepdim, position):
    """(values, indices) of the element ``position`` (xp.argmax/argmin) picks along ``dim``."""
    idx = xp.expand_dims(position(x, axis=dim), dim)
    values = xp.take_along_axis(x, idx, axis=dim)
    if keepdim:
        return values, idx
    return xp.squeeze(values, dim), xp.squeeze(idx, dim)


@primitive("MaxBackward0", dtypes=KEEP, nout=2, result_names=("values", "indices"))
def max_dim(xp, x, *, dim, keepdim=False):
    """``max(x, dim)``: (values, indices); the gradient goes to the index found."""
    return _pick_along(xp, x, dim, keepdim, xp.argmax)


@primitive("MinBackward0", dtypes=KEEP, nout=2, result_names=("values", "indices"))
def min_dim(xp, x, *, dim, keepdim=False):
    return _pick_along(xp, x, dim, keepdim, xp.argmin)


def select_dim_vjp(g, out, x, *, dim, keepdim=False):
    values_grad, indices = g[0], out[1]
    shape = kept_shape(x.shape, (dim,))
    return scatter_add(zeros_of(values_grad, shape=x.shape), reshape(indices, shape=shape),
                       reshape(values_grad, shape=shape), dim=dim)


def select_dim_jvp(t, out, x, *, dim, keepdim=False):
    picked = gather(t, reshape(out[1], shape=kept_shape(x.shape, (dim,))), dim=dim)
    return (keep_or_squeeze(picked, dim, keepdim), None)


for _p in (max_dim, min_dim):
    _p.vjp("x", uses="out")(select_dim_vjp)
    _p.jvp("x")(select_dim_jvp)


def keep_or_squeeze(v, dim, keepdim):
    return v if keepdim else reshape(v, shape=tuple(s for i, s in enumerate(v.shape) if i != dim))


def _arg_extremum(x, dim, keepdim, position):
    """``position`` (xp.argmax/argmin) over ``dim``, or over the flattened ``x``."""
    if dim is None:
        r = position(x)
        return r.reshape((1,) * x.ndim) if keepdim else r
    return position(x, axis=dim, keepdims=keepdim)


@primitive(dtypes=KEEP)
def argmax(xp, x, *, dim=None, keepdim=False):
    return _arg_extremum(x, dim, keepdim, xp.argmax)


@primitive(dtypes=KEEP)
def argmin(xp, x, *, dim=None, keepdim=False):
    return _arg_extremum(x, dim, keepdim, xp.argmin)


@primitive(dtypes=KEEP)
def all_(xp, x, *, dim=None, keepdim=False):
    return xp.all(x, axis=_axis(dim), keepdims=keepdim)


@primitive(dtypes=KEEP)
def any_(xp, x, *, dim=None, keepdim=False):
    return xp.any(x, axis=_axis(dim), keepdims=keepdim)


# -- smooth reductions -------------------------------------------------------------------------

@primitive("LogsumexpBackward0", dtypes=FLOAT)
def logsumexp(xp, x, *, dim, keepdim=False):
    m = xp.amax(x, axis=_axis(dim), keepdims=True) if x.size else xp.zeros(kept_shape(x.shape, dim), x.dtype)
    m = xp.where(xp.isfinite(m), m, 0)
    s = xp.log(xp.sum(xp.exp(x - m), axis=_axis(dim), keepdims=True)) + m
    return s if keepdim else xp.reshape(s, tuple(n for i, n in enumerate(x.shape) if i not in dim))


@logsumexp.vjp("x", uses="x")
def logsumexp_vjp(g, out, x, *, dim, keepdim=False):
    return spread(g, x, dim, keepdim) * softmax_over(x, dim)


@logsumexp.jvp("x")
def logsumexp_jvp(t, out, x, *, dim, keepdim=False):
    return sum(t * softmax_over(x, dim), dim=dim, keepdim=keepdim)


def softmax_over(x, dim):
    """d logsumexp / d x: the softmax of x over ``dim``, shifted by the max as the kernel
    is. Not exp(x - out): out has absorbed log(sum) wherever |max| dwarfs it (three
    entries of -3e38 in float32 give out = -3e38 and slopes of 1, not 1/3 each).
    Infinite maxima are not subtracted: a slice holding +inf gives nan (+inf) and 0."""
    if 0 in x.shape:  # (amax of nothing fails; nothing to weigh either)
        return zeros_like(x)
    m = amax(x, dim=dim, keepdim=True)
    e = exp(x - where(isfinite(m), m, 0.0))
    return e / sum(e, dim=dim, keepdim=True)


@primitive("LinalgVectorNormBackward0", dtypes=FLOAT)
def vector_norm(xp, x, *, ord=2, dim=None, keepdim=False):
    a = xp.abs(x)
    axis = _axis(dim)
    if ord == math.inf:
        return xp.amax(a, axis=axis, keepdims=keepdim) if a.size else xp.zeros(
            kept_shape(a.shape, dim) if keepdim else (), a.dtype)
    if ord == -math.inf:
        return xp.amin(a, axis=axis, keepdims=keepdim)
    if ord == 0:
        return xp.sum(a != 0, axis=axis, keepdims=keepdim).astype(a.dtype)
    if ord == 1:
        return xp.sum(a, axis=axis, keepdims=keepdim)
    # The powers |x|^p overflow, or underflow and lose digits, from |x| ~ 1e19 or 1e-19 on
    # (p = 2, float32) although the norm is representable: slices whose sum of powers
    # left the normal range are computed again, scaled.
    total = _power_sum(xp, a, ord, axis, keepdim)
    finfo = xp.finfo(total.dtype)
    fine = (total >= finfo.tiny) & (total <= finfo.max)
    r = _root(xp, total, ord)
    if a.size == 0 or fine.all():
        return r
    return xp.where(fine, r, _scaled_p_norm(xp, a, ord, axis, keepdim))


def _power_sum(xp, a, ord, axis, keepdim):
    return xp.sum(a * a if ord == 2 else a ** ord, axis=axis, keepdims=keepdim)


def _root(xp, total, ord):
    return xp.sqrt(total) if ord == 2 else total ** (1.0 / ord)


def _scaled_p_norm(xp, a, ord, axis, keepdim):
    """The p-norm of ``a`` (= |x|) as s ||a / s||_p, s the largest element (for p < 0 the
    smallest, which dominates there): each (a / s)^p lies in [0, 1] and their sum in
    [1, n]. Slices whose s is 0, inf or nan stay unscaled (s = 1): their norm is 0, inf
    or nan anyway."""
    s = (xp.amax if ord > 0 else xp.amin)(a, axis=axis, keepdims=True)
    s = xp.where((s > 0) & (s < xp.inf), s, 1).astype(a.dtype, copy=False)
    r = _root(xp, _power_sum(xp, a / s, ord, axis, True), ord) * s
    return r if keepdim else xp.squeeze(r, axis=tuple(range(a.ndim)) if axis is None else axis)


@vector_norm.vjp("x", uses="x out")
def vector_norm_vjp(g, out, x, *, ord=2, dim=None, keepdim=False):
    return spread(g, x, dim, keepdim) * norm_slope(out, x, ord, dim, keepdim)


@vector_norm.jvp("x")
def vector_norm_jvp(t, out, x, *, ord=2, dim=None, keepdim=False):
    return sum(t * norm_slope(out, x, ord, dim, keepdim), dim=dim, keepdim=keepdim)


def norm_slope(out, x, ord, dim, keepdim):
    """d norm / d x, with 0 where the norm is 0 (PyTorch's choice at the kink)."""
    n = keep(out, x.shape, dim, keepdim)
    if ord == 0:
        return zeros_like(x)
    if ord == 1:
        return sign(x)
    if ord == 2:
        return where(n == 0, 0.0, x / where(n == 0, 1.0, n))
    if ord in (math.inf, -math.inf):
        return sign(x) * tie_weights(out, abs(x), dim, keepdim)
    # sign(x) |x|^(p-1) / norm^(p-1), as (|x| / norm)^(p-1): each power alone may overflow
    # where the ratio does not. 0 where the norm is 0, and where x is 0 (for p < 1 the
    # power would be infinite there), as PyTorch does.
    safe_n = where(n == 0, 1.0, n)
    safe_x = where(x == 0, 1.0, abs(x))
    return where((n == 0) | (x == 0), 0.0, sign(x) * (safe_x / safe_n) ** (ord - 1))


# -- scans -------------------------------------------------------------------------------------

@primitive("CumsumBackward0", dtypes=KEEP, linear=True, complex=True)
def cumsum(xp, x, *, dim, dtype=None):
    if x.ndim == 0:  # NumPy would return shape (1,)
        return x.astype(dtype or x.dtype, copy=True)
    wide = _wide_scan(xp, x, dtype)
    if wide is not None:  # (a running sum in float32 drifts by n eps: PyTorch's CPU scan is double)
        return xp.add.accumulate(x, axis=dim, dtype=wide[0]).astype(wide[1])
    return xp.add.accumulate(x, axis=dim, dtype=dtype)


def _wide_scan(xp, x, dtype):
    """``(accumulator, result)`` dtypes for a float32/float16 scan, kept in float64 (or
    complex128) as PyTorch's CPU scans are; None for the others."""
    out = xp.dtype(dtype or x.dtype)
    if out.kind == "f" and out.itemsize < 8:
        return xp.float64, out
    if out.kind == "c" and out.itemsize < 16:
        return xp.complex128, out
    return None


@cumsum.vjp("x")
def cumsum_vjp(g, out, x, *, dim, dtype=None):
    return _rev_cumsum(g, dim)


@primitive("CumprodBackward0", dtypes=KEEP, complex=True)
def cumprod(xp, x, *, dim, dtype=None):
    if x.ndim == 0:
        return x.astype(dtype or x.dtype, copy=True)
    wide = _wide_product(xp, x, dtype)
    if wide is None:
        return xp.multiply.accumulate(x, axis=dim, dtype=dtype)
    return xp.multiply.accumulate(x, axis=dim, dtype=xp.float64).astype(wide)


@cumprod.vjp("x", uses="x out")
def cumprod_vjp(g, out, x, *, dim, dtype=None):
    # dL/dx_i = sum_{k>=i} g_k * prod_{j<=k, j!=i} x_j. Before the first zero x_z of a slice
    # this is revcumsum(g*out)_i / x_i; at the first zero it is revcumsum(g * cumprod(y)),
    # y = x with that zero replaced by 1; after it every product holds x_z: x_z times y's own
    # gradient -- 0, but with x_z's derivative, which a second derivative needs.
    before, first_zero, from_start, at_zero, y = _cumprod_grad_parts(g, out, x, dim)
    x_z = sum(where(first_zero, x, 0.0), dim=(dim,), keepdim=True) if x.ndim else x
    y_before, y_first_zero, y_from_start, y_at_zero, _ = _cumprod_grad_parts(g, cumprod(y, dim=dim), y, dim)
    after = x_z * where(y_before, y_from_start, where(y_first_zero, y_at_zero, 0.0))
    return where(before, from_start, where(first_zero, at_zero, after))


def _cumprod_grad_parts(g, out, x, dim):
    """The pieces of cumprod's gradient (see cumprod_vjp): where a slice has no zero yet,
    where its first zero is, the gradient there, and x with that zero replaced by 1."""
    zero = where(x == 0, 1.0, 0.0)
    zeros_so_far = cumsum(zero, dim=dim)
    before = zeros_so_far == 0
    first_zero = (zeros_so_far == 1) & (zero == 1)
    from_start = _rev_cumsum(g * out, dim) / where(before, x, 1.0)
    y = where(first_zero, 1.0, x)
    at_zero = _rev_cumsum(g * cumprod(y, dim=dim), dim)
    return before, first_zero, from_start, at_zero, y


@cumprod.jvp("x")
def cumprod_jvp(t, out, x, *, dim, dtype=None):
    # Forward mode needs no division: d out_k = sum_{i<=k} t_i * prod_{j<=k, j!=i} x_j,
    # computed by the recurrence d out_k = d out_{k-1} * x_k + out_{k-1} * t_k.
    if x.ndim == 0:
        return t
    xs, ts, outs = _unstack(x, dim), _unstack(t, dim), _unstack(out, dim)
    d = [ts[0]]
    for k in range(1, len(xs)):
        d.append(d[-1] * xs[k] + outs[k - 1] * ts[k])
    return stack(*d, dim=dim) if d else t


@primitive("LogcumsumexpBackward0", dtypes=FLOAT)
def logcumsumexp(xp, x, *, dim):
    """``log(cumsum(exp(x)))`` along ``dim`` as a running log-add (``logaddexp.accumulate``):
    each prefix is exact however far its values are below a later maximum, and a NaN
    reaches only the positions after it."""
    if x.ndim == 0:
        return x.copy()
    wide = _wide_scan(xp, x, None)
    if wide is not None:  # (accumulated in float64, as PyTorch's CPU scan)
        return xp.logaddexp.accumulate(x.astype(wide[0]), axis=dim).astype(wide[1])
    return xp.logaddexp.accumulate(x, axis=dim)


@logcumsumexp.vjp("x", uses="x out")
def logcumsumexp_vjp(g, out, x, *, dim):
    # dL/dx_j = sum_{i>=j} g_i exp(x_j - out_i): the positive and the negative parts of g
    # summed in log space from the end (PyTorch's and TensorFlow's formula), so that no
    # exp(-out) overflows. The part a sign does not have is log(tiny), not -inf: a slice
    # of -inf would make this vjp's own derivative (a second derivative) NaN-masked and
    # wrong; exp(log(tiny)) adds at most tiny per term
    if x.ndim == 0:
        return g
    positive, negative = _log_parts(g)
    return exp(_rev_logcumsumexp(positive - out, dim) + x) - exp(_rev_logcumsumexp(negative - out, dim) + x)


@logcumsumexp.jvp("x")
def logcumsumexp_jvp(t, out, x, *, dim):
    # d out_i = sum_{j<=i} t_j exp(x_j - out_i), the two signs of t again in log space
    if x.ndim == 0:
        return t
    positive, negative = _log_parts(t)
    return exp(logcumsumexp(positive + x, dim=dim) - out) - exp(logcumsumexp(negative + x, dim=dim) - out)


def _log_parts(v):
    """``(log v+, log v-)``: the logs of the positive and negative parts of ``v``, with
    log(tiny) (the dtype's smallest normal) where a part is 0."""
    low = _LOG_TINY[v.dtype.name]
    log_v = log(where(v == 0, 1.0, abs(v)))
    return where(v > 0, log_v, low), where(v < 0, log_v, low)


_LOG_TINY = {name: math.log(float(_cpu.finfo(name).tiny)) for name in ("float16", "float32", "float64")}


def _rev_logcumsumexp(v, dim):
    """logcumsumexp from each position to the end along ``dim``."""
    return flip(logcumsumexp(flip(v, dims=(dim,)), dim=dim), dims=(dim,))


def _rev_cumsum(v, dim):
    """Sums from each position to the end along ``dim`` (a 0-d value is its own sum)."""
    if v.ndim == 0:
        return v
    return flip(cumsum(flip(v, dims=(dim,)), dim=dim), dims=(dim,))


def _unstack(v, dim):
    return list(unbind(v, dim=dim)) if v.shape[dim] else []


from .index import gather, scatter_add, zeros_of  # noqa: E402  (index imports reduce's helpers lazily)
from .shape import stack, unbind  # noqa: E402
from .nn import constant_pad_nd  # noqa: E402  (nn imports this module's sum first)

__all__ = ["sum", "mean", "prod", "var", "std", "amax", "amin", "max", "min", "median_all",
           "nanmedian_all", "max_dim",
           "min_dim", "argmax", "argmin", "all_", "any_", "logsumexp", "vector_norm", "cumsum", "cumprod",
           "kept_shape", "count", "keep", "spread"]


def _eps(a):
    """The machine epsilon of ``a``'s precision (single or double; matrix_functions uses it too)."""
    dtype = str(getattr(a, "npdtype", None) or getattr(a, "dtype", ""))
    return 1.1920928955078125e-07 if dtype.endswith(("float32", "complex64")) else 2.220446049250313e-16
