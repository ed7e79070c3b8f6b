"""Rules of the layers that are one primitive rather than a composition: the normalisations
(one node, few passes over the data, PyTorch's ``Native*NormBackward0`` names), the
embedding lookup (its padding row gets no gradient) and padding.

The normalisations return ``(output, mean, invstd)`` as PyTorch's ``native_batch_norm``
does: the layer keeps the statistics for its running averages, the vjp reuses them, and
their own cotangents are honoured, so second derivatives come out right.
"""
import math

from .. import backend
from . import layer_norm_kernels
from .arith import where
from .batch_norm_kernels import batch_norm_backward, batch_norm_forward
from .broadcast import sum_to, zeros_like, zeros_of
from .core import KEEP, primitive
from .counting import bincount
from .index import ARRAY, index_put, index_select
from .reduce import sum
from .shape import reshape
from .unary import rsqrt

__all__ = ["batch_norm", "batch_norm_eval", "layer_norm", "group_norm", "embedding", "constant_pad_nd", "pad_nd",
           "pad_nd_backward"]


# -- normalisation: statistics over some axes of a "work" layout, then a per-feature affine ----------

def _moments(xp, x, axes, eps):
    """(x - mean, mean, invstd) over ``axes`` (kept dims); biased variance, as PyTorch."""
    n = math.prod(x.shape[a] for a in axes)
    mean = xp.add.reduce(x, axis=axes, keepdims=True) / (n if n else 1)
    centered = x - mean
    var = xp.add.reduce(centered * centered, axis=axes, keepdims=True) / (n if n else 1)
    invstd = 1 / xp.sqrt(var + eps)
    fine = var <= xp.finfo(var.dtype).max
    if fine.all():
        return centered, mean, invstd
    # The squares overflowed (deviations from ~1e19 on in float32) although invstd is
    # representable: there, invstd = 1 / (m sqrt(q + eps / m^2)), m the largest deviation
    # and q the variance of the deviations scaled by it (a slice holding nan stays nan).
    m = xp.amax(xp.abs(centered), axis=axes, keepdims=True)
    m = xp.where((m > 0) & (m < xp.inf), m, 1).astype(x.dtype, copy=False)
    scaled = centered / m
    q = xp.add.reduce(scaled * scaled, axis=axes, keepdims=True) / (n if n else 1)
    return centered, mean, xp.where(fine | xp.isnan(var), invstd, 1 / (m * xp.sqrt(q + eps / m / m)))


def _affine(xp, centered, invstd, w, b):
    """``centered * invstd * w + b`` in two passes over the data (the scale is per feature)."""
    scale = invstd if w is None else invstd * w
    out = centered * scale
    if b is not None:
        out += b
    return out


def _normalized_grads(g, gm, gi, x, w, mean, invstd, axes, per_feature):
    """Gradient of ``(x - mean) * invstd * w + b`` for x (its statistics taken over
    ``axes`` of x itself), w and b, given cotangents g (output), gm (mean), gi (invstd).
    ``per_feature``: w is constant along ``axes`` (batch norm), so its sums factor out."""
    n = 1
    for a in axes:
        n *= x.shape[a]
    inv_n = 1.0 / n if n else 0.0
    if per_feature:
        return _per_feature_grads(g, gm, gi, x, w, mean, invstd, axes, inv_n)
    xhat = (x - mean) * invstd
    gx = g * xhat
    gw = g if w is None else g * w
    dw = None if w is None else layer_norm_kernels.column_sums(gx, axes, w.shape)
    s1 = layer_norm_kernels.row_sums(gw, axes)
    s2 = layer_norm_kernels.row_sums(gw * xhat, axes)
    # d mean / dx = 1/n; d invstd / dx = -invstd^2 xhat / n
    a = (gm - invstd * s1) * inv_n
    c = (invstd * s2 + gi * invstd * invstd) * -inv_n
    dx = gw * invstd + a + xhat * c
    return dx, dw, None


def _per_feature_grads(g, gm, gi, x, w, mean, invstd, axes, inv_n):
    """:func:`_normalized_grads` when w is constant along ``axes`` (batch norm): sum(g w) =
    w sum(g), and dx = g k1 + (x - mean) k2 + k3 with per-feature k's -- seven passes over
    the data where the general form takes ten."""
    centered = x - mean
    db = s1 = sum(g, dim=axes, keepdim=True)  # the sums are also the bias and weight gradients
    dw = s2 = sum(g * centered, dim=axes, keepdim=True) * invstd  # sum(g xhat)
    scale = invstd
    if w is not None:
        s1, s2, scale = s1 * w, s2 * w, invstd * w
    a = (gm - invstd * s1) * inv_n
    c = (invstd * s2 + gi * invstd * invstd) * -inv_n
    dx = g * scale + centered * (c * invstd) + a
    return dx, dw, db


def _normalized_jvp(tx, x, w, mean, invstd, axes):
    """Tangents of (output, mean, invstd) for a tangent ``tx`` of x (training statistics)."""
    n = 1
    for a in axes:
        n *= x.shape[a]
    inv_n = 1.0 / n if n else 0.0
    xhat = (x - mean) * invstd
    t_mean = sum(tx, dim=axes, keepdim=True) * inv_n
    t_xhat_dot = sum(tx * xhat, dim=axes, keepdim=True) * inv_n
    t_xhat = (tx - t_mean - xhat * t_xhat_dot) * invstd
    return (t_xhat if w is None else t_xhat * w), t_mean, -(invstd * t_xhat_dot) * invstd


# batch norm: channels on dim 1, statistics over every other dim ------------------------------------

def _channel_shape(x):
    return (1, x.shape[1]) + (1,) * (x.ndim - 2)


def _bn_axes(x):
    return (0,) + tuple(range(2, x.ndim))


def _bn_saved(params):
    return {"eps": params["eps"], "training": params["training"]}


@primitive("NativeBatchNormBackward0", dtypes=KEEP, nout=3, result_names=("result0", "result1", "result2"), saved_outputs=(1, 2),
           saved_names=("input", "weight", "bias"), saved_view=lambda params: {"eps": params["eps"], "training": True})
def batch_norm(xp, x, weight, bias, *, eps):
    """Training mode: (output, mean, invstd) with the batch's statistics, of shape (C,)."""
    if x.size:
        return batch_norm_forward(xp, x, weight, bias, eps, _moments)
    kshape = _channel_shape(x)
    centered, mean, invstd = _moments(xp, x, _bn_axes(x), eps)
    out = _affine(xp, centered, invstd, None if weight is None else weight.reshape(kshape),
                  None if bias is None else bias.reshape(kshape))
    c = x.shape[1]
    return out, mean.reshape(c), invstd.reshape(c)


def _raw(*values):
    """Whether all of ``values`` are backend arrays (or None): a first-order backward,
    which records nothing, so a vjp may run array kernels."""
    return all(v is None or isinstance(v, backend.ARRAY_TYPES) for v in values)


@batch_norm.vjp_all(uses="x weight out")
def batch_norm_vjp(g, out, x, weight, bias, *, eps):
    if x.size and _raw(g[0], g[1], g[2], x, weight, out[1], out[2]):
        dx, dw, db = batch_norm_backward(backend.namespace_of(x), g[0], g[1], g[2], x, weight, out[1], out[2])
        return dx, None if weight is None else dw.reshape(weight.shape), None if bias is None else db.reshape(bias.shape)
    kshape = _channel_shape(x)
    dx, dw, db = _normalized_grads(
        g[0], reshape(g[1], shape=kshape), reshape(g[2], shape=kshape), x,
        None if weight is None else reshape(weight, shape=kshape),
        reshape(out[1], shape=kshape), reshape(out[2], shape=kshape), _bn_axes(x), per_feature=True)
    return (dx, None if weight is None else reshape(dw, shape=weight.shape),
            None if bias is None else reshape(db, shape=bias.shape))


@batch_norm.jvp("x")
def batch_norm_jvp_x(t, out, x, weight, bias, *, eps):
    kshape = _channel_shape(x)
    t_out, t_mean, t_invstd = _normalized_jvp(
        t, x, None if weight is None else reshape(weight, shape=kshape),
        reshape(out[1], shape=kshape), reshape(out[2], shape=kshape), _bn_axes(x))
    return t_out, reshape(t_mean, shape=out[1].shape), reshape(t_invstd, shape=out[2].shape)


@batch_norm.jvp("weight")
def batch_norm_jvp_weight(t, out, x, weight, bias, *, eps):
    kshape = _channel_shape(x)
    xhat = (x - reshape(out[1], shape=kshape)) * reshape(out[2], shape=kshape)
    return xhat * reshape(t, shape=kshape), zeros_like(out[1]), zeros_like(out[2])


@batch_norm.jvp("bias")
def batch_norm_jvp_bias(t, out, x, weight, bias, *, eps):
    return zeros_like(out[0]) + reshape(t, shape=_channel_shape(x)), zeros_like(out[1]), zeros_like(out[2])


def _eval_stats(x, running_mean, running_var, eps):
    """The running statistics in the channel layout: (mean, invstd)."""
    kshape = _channel_shape(x)
    return reshape(running_mean, shape=kshape), rsqrt(reshape(running_var, shape=kshape) + eps)


@primitive("NativeBatchNormBackward0", name="batch_norm_eval", dtypes=KEEP,
           saved_names=("input", "weight", "bias", "running_mean", "running_var"),
           saved_view=lambda params: {"eps": params["eps"], "training": False})
def batch_norm_eval(xp, x, weight, bias, running_mean, running_var, *, eps):
    """Evaluation mode: an affine map of x by the running statistics (constants here:
    PyTorch does not differentiate them either)."""
    kshape = _channel_shape(x)
    invstd = 1 / xp.sqrt(running_var.reshape(kshape) + eps)
    return _affine(xp, x - running_mean.reshape(kshape), invstd,
                   None if weight is None else weight.reshape(kshape),
                   None if bias is None else bias.reshape(kshape))


@batch_norm_eval.vjp("x", uses="weight running_var")
def batch_norm_eval_vjp_x(g, out, x, weight, bias, running_mean, running_var, *, eps):
    invstd = rsqrt(reshape(running_var, shape=_channel_shape(x)) + eps)
    return g * (invstd if weight is None else invstd * reshape(weight, shape=_channel_shape(x)))


@batch_norm_eval.vjp("weight", uses="x running_mean running_var")
def batch_norm_eval_vjp_weight(g, out, x, weight, bias, running_mean, running_var, *, eps):
    mean, invstd = _eval_stats(x, running_mean, running_var, eps)
    return reshape(sum(g * ((x - mean) * invstd), dim=_bn_axes(x)), shape=weight.shape)


@batch_norm_eval.vjp("bias")
def batch_norm_eval_vjp_bias(g, out, x, weight, bias, running_mean, running_var, *, eps):
    return reshape(sum(g, dim=_bn_axes(x)), shape=bias.shape)


@batch_norm_eval.jvp("x")
def batch_norm_eval_jvp_x(t, out, x, weight, bias, running_mean, running_var, *, eps):
    return batch_norm_eval_vjp_x(t, out, x, weight, bias, running_mean, running_var, eps=eps)


@batch_norm_eval.jvp("weight")
def batch_norm_eval_jvp_weight(t, out, x, weight, bias, running_mean, running_var, *, eps):
    mean, invstd = _eval_stats(x, running_mean, running_var, eps)
    return (x - mean) * invstd * reshape(t, shape=_channel_shape(x))


@batch_norm_eval.jvp("bias")
def batch_norm_eval_jvp_bias(t, out, x, weight, bias, running_mean, running_var, *, eps):
    return zeros_like(x) + reshape(t, shape=_channel_shape(x))


# layer norm: statistics over the trailing ``normalized_ndim`` dims, per element of the rest ---------

def _ln_axes(x, normalized_ndim):
    return tuple(range(x.ndim - normalized_ndim, x.ndim))


@primitive("NativeLayerNormBackward0", dtypes=KEEP, nout=3, result_names=("result0", "result1", "result2"), saved_outputs=(1, 2),
           saved_names=("input", "weight", "bias"),
           saved_view=lambda params: {"normalized_shape": params["normalized_shape"]})
def layer_norm(xp, x, weight, bias, *, normalized_shape, eps):
    """(output, mean, invstd); the statistics keep the normalised dims as size 1."""
    if layer_norm_kernels.fits(xp, x, weight, bias):
        nd = len(normalized_shape)
        done = layer_norm_kernels.layer_norm_forward(
            xp, x, weight, bias, eps, math.prod(x.shape[x.ndim - nd:]), x.shape[:x.ndim - nd] + (1,) * nd)
        if done is not None:
            return done
    centered, mean, invstd = _moments(xp, x, _ln_axes(x, len(normalized_shape)), eps)
    return _affine(xp, centered, invstd, weight, bias), mean, invstd


@layer_norm.vjp_all(uses="x weight out")
def layer_norm_vjp(g, out, x, weight, bias, *, normalized_shape, eps):
    if _raw(g[0], g[1], g[2], x, weight, out[1], out[2]) and layer_norm_kernels.fits(
            backend.namespace_of(x), x, g[0], weight, out[1], out[2], g[1], g[2]):
        return layer_norm_kernels.layer_norm_backward(
            backend.namespace_of(x), g[0], g[1], g[2], x, weight, out[1], out[2],
            _ln_axes(x, len(normalized_shape)), None if bias is None else tuple(bias.shape))
    dx, dw, _ = _normalized_grads(g[0], g[1], g[2], x, weight, out[1], out[2],
                                  _ln_axes(x, len(normalized_shape)), per_feature=False)
    return dx, dw, (None if bias is None else sum_to(g[0], shape=bias.shape))


@layer_norm.jvp("x")
def layer_norm_jvp_x(t, out, x, weight, bias, *, normalized_shape, eps):
    return _normalized_jvp(t, x, weight, out[1], out[2], _ln_axes(x, len(normalized_shape)))


@layer_norm.jvp("weight")
def layer_norm_jvp_weight(t, out, x, weight, bias, *, normalized_shape, eps):
    return (x - out[1]) * out[2] * t, zeros_like(out[1]), zeros_like(out[2])


@layer_norm.jvp("bias")
def layer_norm_jvp_bias(t, out, x, weight, bias, *, normalized_shape, eps):
    return zeros_like(out[0]) + t, zeros_like(out[1]), zeros_like(out[2])


# group norm: x seen as (N, G, C/G, spatial), statistics over the last two -----------------------------

def _gn_layout(x, num_groups):
    n, c = x.shape[0], x.shape[1]
    return (n, num_groups, c // num_groups, math.prod(x.shape[2:])), (1, num_groups, c // num_groups, 1)


@primitive("NativeGroupNormBackward0", dtypes=KEEP, nout=3, result_names=("result0", "result1", "result2"), saved_outputs=(1, 2),
           saved_names=("input", "weight", "bias"),
           saved_view=lambda params: {"group": params["num_groups"], "eps": params["eps"]})
def group_norm(xp, x, weight, bias, *, num_groups, eps):
    """(output, mean, invstd), the statistics of shape (N, num_groups)."""
    work, wshape = _gn_layout(x, num_groups)
    centered, mean, invstd = _moments(xp, x.reshape(work), (2, 3), eps)
    out = _affine(xp, centered, invstd, None if weight is None else weight.reshape(wshape),
                  None if bias is None else bias.reshape(wshape))
    return out.reshape(x.shape), mean.reshape(work[:2]), invstd.reshape(work[:2])


@group_norm.vjp_all(uses="x weight out")
def group_norm_vjp(g, out, x, weight, bias, *, num_groups, eps):
    work, wshape = _gn_layout(x, num_groups)
    stat = work[:2] + (1, 1)
    dx, dw, _ = _normalized_grads(
        reshape(g[0], shape=work), reshape(g[1], shape=stat), reshape(g[2], shape=stat),
        reshape(x, shape=work), None if weight is None else reshape(weight, shape=wshape),
        reshape(out[1], shape=stat), reshape(out[2], shape=stat), (2, 3), per_feature=False)
    db = None if bias is None else reshape(sum_to(reshape(g[0], shape=work), shape=wshape), shape=bias.shape)
    return (reshape(dx, shape=x.shape), None if dw is None else reshape(dw, shape=weight.shape), db)


@group_norm.jvp("x")
def group_norm_jvp_x(t, out, x, weight, bias, *, num_groups, eps):
    work, wshape = _gn_layout(x, num_groups)
    stat = work[:2] + (1, 1)
    t_out, t_mean, t_invstd = _normalized_jvp(
        reshape(t, shape=work), reshape(x, shape=work),
        None if weight is None else reshape(weight, shape=wshape),
        reshape(out[1], shape=stat), reshape(out[2], shape=stat), (2, 3))
    return (reshape(t_out, shape=x.shape), reshape(t_mean, shape=work[:2]), reshape(t_invstd, shape=work[:2]))


@group_norm.jvp("weight")
def group_norm_jvp_weight(t, out, x, weight, bias, *, num_groups, eps):
    work, wshape = _gn_layout(x, num_groups)
    stat = work[:2] + (1, 1)
    xhat = (reshape(x, shape=work) - reshape(out[1], shape=stat)) * reshape(out[2], shape=stat)
    return reshape(xhat * reshape(t, shape=wshape), shape=x.shape), zeros_like(out[1]), zeros_like(out[2])


@group_norm.jvp("bias")
def group_norm_jvp_bias(t, out, x, weight, bias, *, num_groups, eps):
    work, wshape = _gn_layout(x, num_groups)
    spread = zeros_of(out[0], shape=work) + reshape(t, shape=wshape)
    return reshape(spread, shape=x.shape), zeros_like(out[1]), zeros_like(out[2])


# -- embedding -------------------------------------------------------------------------------------

@primitive("EmbeddingBackward0", dtypes=KEEP, linear=True, saved_names=("weight", "indices"),
           saved_view=lambda params: {"padding_idx": params["padding_idx"],
                                      "scale_grad_by_freq": params.get("scale_grad_by_freq", False),
                                      "sparse": False})
def embedding(xp, weight, indices, *, padding_idx=-1, scale_grad_by_freq=False):
    """Rows ``weight[indices]``; the row ``padding_idx`` (if >= 0) receives no gradient. With
    ``scale_grad_by_freq`` each row's gradient is divided by how often ``indices`` picks it
    (word2vec-style training: frequent words do not dominate)."""
    return xp.take(weight, indices, axis=0)


@embedding.vjp("weight", uses="indices")
def embedding_vjp(g, out, weight, indices, *, padding_idx=-1, scale_grad_by_freq=False):
    if _raw(g, indices) and g.ndim:  # first order: the rows summed into zeros, no copy of them
        xp = backend.namespace_of(g)
        dw = xp.zeros(tuple(weight.shape), dtype=g.dtype)
        xp.scatter_add(dw, (indices,), g)
        if scale_grad_by_freq:
            counts = xp.bincount(indices.reshape(-1), minlength=weight.shape[0])
            dw /= xp.maximum(counts, 1).astype(dw.dtype)[:, None]
        if padding_idx >= 0:
            dw[padding_idx] = 0
        return dw
    if padding_idx >= 0:
        g = where(reshape(indices != padding_idx, shape=tuple(indices.shape) + (1,)), g, 0.0)
    if scale_grad_by_freq:  # each occurrence's share: divided by its row's count
        flat = reshape(indices, shape=(-1,))
        counts = index_select(bincount(flat, minlength=weight.shape[0]), flat, dim=0)
        g = g / reshape(counts, shape=tuple(indices.shape) + (1,))
    return index_put(zeros_of(g, shape=weight.shape), g, indices, index=(ARRAY,), accumulate=True)


# -- padding -----------------------------------------------------------------------------------------

def _pairs(pad, ndim):
    """PyTorch's flat ``pad`` (last dim first) as ``(dim, before, after)`` triples."""
    return [(ndim - 1 - k, pad[2 * k], pad[2 * k + 1]) for k in range(len(pad) // 2)]


@primitive("ConstantPadNdBackward0", dtypes=KEEP, complex=True)
def constant_pad_nd(xp, x, *, pad, value=0.0):
    """``x`` with ``value`` added around it (negative amounts crop)."""
    crop = [slice(None)] * x.ndim
    widths = [(0, 0)] * x.ndim
    for d, before, after in _pairs(pad, x.ndim):
        crop[d] = slice(max(-before, 0), x.shape[d] - max(-after, 0))
        widths[d] = (max(before, 0), max(after, 0))
    x = x[tuple(crop)]
    if not any(b or a for b, a in widths):
        return x.copy()
    return xp.pad(x, widths, mode="constant", constant_values=value)


@constant_pad_nd.vjp("x")
def constant_pad_nd_vjp(g, out, x, *, pad, value=0.0):
    return constant_pad_nd(g, pad=tuple(-p for p in pad), value=0.0)


@constant_pad_nd.jvp("x")
def constant_pad_nd_jvp(t, out, x, *, pad, value=0.0):
    return constant_pad_nd(t, pad=pad, value=0.0)


def _source_positions(xp, n, before, after, mode):
    """For each output position along a padded dim, the input position it copies."""
    p = xp.arange(-before, n + after)
    if mode == "reflect":
        p = xp.abs(p)
        return xp.where(p > n - 1, 2 * (n - 1) - p, p)
    if mode == "replicate":
        return xp.clip(p, 0, n - 1)
    # circular: PyTorch crops first (negative amounts), then wraps around what is left
    lo, hi = max(-before, 0), n - max(-after, 0)
    return lo + xp.arange(-max(before, 0), hi - lo + max(after, 0)) % max(hi - lo, 1)


_PAD_NAMES = {"reflect": "ReflectionPad{}DBackward0", "replicate": "ReplicationPad{}DBackward0",
              "circular": "CircularPad{}DBackward0"}


def _pad_name(args, params):
    return _PAD_NAMES[params["mode"]].format(len(params["pad"]) // 2)


@primitive(_pad_name, dtypes=KEEP, linear=True,
           saved_view=lambda params: {"padding": params["pad"]}, complex=True)
def pad_nd(xp, x, *, pad, mode):
    """Padding that copies ``x``'s own values: ``reflect`` (mirror, edge excluded),
    ``replicate`` (the edge repeated) or ``circular`` (wrap around)."""
    for d, before, after in _pairs(pad, x.ndim):
        x = xp.take(x, _source_positions(xp, x.shape[d], before, after, mode), axis=d)
    return x


@pad_nd.vjp("x")
def pad_nd_vjp(g, out, x, *, pad, mode):
    return pad_nd_backward(g, pad=pad, mode=mode, shape=tuple(x.shape))


@primitive(dtypes=KEEP, linear=True, complex=True)
def pad_nd_backward(xp, g, *, pad, mode, shape):
    """The adjoint of :func:`pad_nd`: each output's gradient added to the input it copies."""
    for d, before, after in reversed(_pairs(pad, len(shape))):
        n = shape[d]
        acc = xp.zeros(g.shape[:d] + (n,) + g.shape[d + 1:], dtype=g.dtype)
        xp.scatter_add(acc, (slice(None),) * d + (_source_positions(xp, n, before, after, mode),), g)
        g = acc
    return g


@pad_nd_backward.vjp("g")
def pad_nd_backward_vjp(gg, out, g, *, pad, mode, shape):
    return pad_nd(gg, pad=pad, mode=mode)
