"""The explicit batching rules (see :mod:`.batching`): primitives whose parameters name
dims, shapes or layouts. Most shift the per-sample dims they are given past the batch dim
(dim 0) and call the primitive once; the rest fold the batch into an existing batch-like
dim (conv, pooling) or rewrite the call (matmul, losses)."""
import math
from .batching import (
    batch_rule,
    elementwise,
    front_dim,
    is_array,
    materialize,
    pad_to,
    per_sample,
    sample_ndim,
)
from .core import TABLE

_P = TABLE  # primitives by name: call them as _P["sum"](x, dim=...)


def _only(args, batched):
    """(the single batched operand's index) when exactly one operand is batched."""
    idx = [i for i, b in enumerate(batched) if b]
    return idx[0] if len(idx) == 1 else None


def _default(prim, name):
    import inspect
    return inspect.signature(prim.impl).parameters[name].default


def _dims(dim, n):
    """A reduction's ``dim`` (None: all, int or tuple) as physical dims."""
    if dim is None:
        return tuple(range(1, n + 1))
    if isinstance(dim, int):
        return front_dim(dim, n)
    return tuple(front_dim(d, n) for d in dim)


# -- reductions and scans over `dim` -------------------------------------------------------------

@batch_rule("sum", "mean", "prod", "amax", "amin", "all", "any", "logsumexp", "var", "std", "vector_norm",
            "cumsum", "cumprod", "logcumsumexp", "softmax", "log_softmax", "argsort", "argpartition", "max_dim", "min_dim",
            "cummax", "cummin", "mode")
def reduce_over_dim(prim, args, batched, params, size):
    x = args[0]
    n = x.ndim - 1
    if "dim" not in params:
        params = dict(params, dim=_default(prim, "dim"))
    if prim.name in ("prod",) and params.get("dim") is None and n > 1:
        return per_sample(prim, args, batched, params, size)
    if n == 0:  # a 0-d sample (dim 0 or -1 names it): as a 1-element dim, dropped again
        dim = params.get("dim")
        params = dict(params, dim=1 if isinstance(dim, int) else (1,))
        out = prim(_P["unsqueeze"](x, dim=1), **params)
        drop = (lambda o: _P["reshape"](o, shape=(o.shape[0],)))
        return tuple(drop(o) for o in out) if isinstance(out, tuple) else drop(out)
    params = dict(params, dim=_dims(params.get("dim"), n))
    return prim(x, **params)


@batch_rule("argmax", "argmin")
def arg_extremum(prim, args, batched, params, size):
    if params.get("dim") is None:
        return per_sample(prim, args, batched, params, size)
    return reduce_over_dim(prim, args, batched, params, size)


@batch_rule("max", "min", "median_all", "nanmedian_all")
def full_extremum(prim, args, batched, params, size):
    return per_sample(prim, args, batched, params, size)


# -- views and shapes ---------------------------------------------------------------------------

@batch_rule("reshape", "unsafe_view")
def reshape_rule(prim, args, batched, params, size):
    return prim(args[0], shape=(size,) + tuple(params["shape"]))


@batch_rule("squeeze")
def squeeze_rule(prim, args, batched, params, size):
    x = args[0]
    n = x.ndim - 1
    dim = params.get("dim")
    if dim is None:
        dim = tuple(d for d in range(n) if x.shape[d + 1] == 1)
    return prim(x, dim=_dims(dim, n) if n else ())


@batch_rule("unsqueeze")
def unsqueeze_rule(prim, args, batched, params, size):
    return prim(args[0], dim=front_dim(params["dim"], args[0].ndim))


@batch_rule("transpose")
def transpose_rule(prim, args, batched, params, size):
    n = args[0].ndim - 1
    return prim(args[0], dim0=front_dim(params["dim0"], n), dim1=front_dim(params["dim1"], n))


@batch_rule("t")
def t_rule(prim, args, batched, params, size):
    x = args[0]
    return _P["transpose"](x, dim0=1, dim1=2) if x.ndim == 3 else _P["reshape"](x, shape=tuple(x.shape))


@batch_rule("permute", "flip")
def dims_rule(prim, args, batched, params, size):
    n = args[0].ndim - 1
    dims = tuple(front_dim(d, n) for d in params["dims"])
    return prim(args[0], dims=((0,) + dims) if prim.name == "permute" else dims)


@batch_rule("roll")
def roll_rule(prim, args, batched, params, size):
    if params["dims"] is None or params["dims"] == ():
        return per_sample(prim, args, batched, params, size)
    n = args[0].ndim - 1
    dims = params["dims"]
    dims = front_dim(dims, n) if isinstance(dims, int) else tuple(front_dim(d, n) for d in dims)
    return prim(args[0], shifts=params["shifts"], dims=dims)


@batch_rule("diagonal")
def diagonal_rule(prim, args, batched, params, size):
    n = args[0].ndim - 1
    return prim(args[0], offset=params.get("offset", 0), dim1=front_dim(params.get("dim1", 0), n),
                dim2=front_dim(params.get("dim2", 1), n))


@batch_rule("diagonal_scatter")
def diagonal_scatter_rule(prim, args, batched, params, size):
    x, src = (materialize(a, b, size) for a, b in zip(args, batched))
    n = x.ndim - 1
    return prim(x, src, offset=params.get("offset", 0), dim1=front_dim(params.get("dim1", 0), n),
                dim2=front_dim(params.get("dim2", 1), n))


@batch_rule("tril", "triu")
def last_two_dims(prim, args, batched, params, size):
    return prim(*args, **params)


@batch_rule("split", "unbind")
def split_rule(prim, args, batched, params, size):
    return prim(args[0], **dict(params, dim=front_dim(params["dim"], args[0].ndim - 1)))


@batch_rule("cat", "stack")
def join_rule(prim, args, batched, params, size):
    args = [materialize(a, b, size) for a, b in zip(args, batched)]
    ranks = [a.ndim - 1 for a in args]
    n = max(ranks) + (prim.name == "stack")
    if prim.name == "cat":  # (cat skips 1-D empty tensors, whose sample rank may differ)
        n = max(ranks)
        args = [a for a, r in zip(args, ranks) if r == n or a.shape[1:] != (0,)] or args
    return prim(*args, dim=front_dim(params["dim"], n))


@batch_rule("repeat")
def repeat_rule(prim, args, batched, params, size):
    repeats = tuple(params["repeats"])
    x = pad_to(args[0], len(repeats))
    return prim(x, repeats=(1,) + repeats)


@batch_rule("broadcast_to")
def broadcast_to_rule(prim, args, batched, params, size):
    shape = tuple(params["shape"])
    return prim(pad_to(args[0], len(shape)), shape=(size,) + shape)


@batch_rule("sum_to")
def sum_to_rule(prim, args, batched, params, size):
    x, shape = args[0], tuple(params["shape"])
    lead = x.ndim - 1 - len(shape)
    if lead > 0:
        x = _P["sum"](x, dim=tuple(range(1, lead + 1)), keepdim=False, dtype=None)
    return prim(x, shape=(size,) + shape)


@batch_rule("copy")
def copy_rule(prim, args, batched, params, size):
    """``src`` broadcast to ``x``'s shape: per-sample values into an unbatched ``x`` (a
    tangent written into a plain tensor by vmap(jvp)) make a batched result."""
    x, src = args
    return elementwise(prim, (materialize(x, batched[0], size), src), (True, batched[1]), params, size)


@batch_rule("zeros_of")
def zeros_of_rule(prim, args, batched, params, size):
    return prim(args[0], shape=(size,) + tuple(params["shape"]))


@batch_rule("basic_index")
def basic_index_rule(prim, args, batched, params, size):
    return prim(args[0], index=(slice(None),) + tuple(params["index"]))


@batch_rule("advanced_index")
def advanced_index_rule(prim, args, batched, params, size):
    index = tuple(params["index"])
    kinds = [not isinstance(p, (slice, type(None), type(Ellipsis))) and not isinstance(p, int) for p in index]
    first = kinds.index(True) if True in kinds else 0
    last = len(kinds) - 1 - kinds[::-1].index(True) if True in kinds else 0
    adjacent = all(kinds[first:last + 1])
    if any(batched[1:]) or not adjacent or any(isinstance(p, int) for p in index):
        return per_sample(prim, args, batched, params, size)
    return prim(*args, index=(slice(None),) + index)


@batch_rule("copy_slices")
def copy_slices_rule(prim, args, batched, params, size):
    """Writing through a chain of views: the chain's own parameters shifted as the views'
    rules shift them (each view rule run on a batched stand-in would do the same)."""
    base = materialize(args[0], batched[0], size)
    value = args[1]
    chain = []
    for view, vparams, k in params["chain"]:
        if view.name not in _VIEW_PARAMS:
            return per_sample(prim, args, batched, params, size)
        chain.append((view, _VIEW_PARAMS[view.name](vparams, size), k))
    if batched[1]:
        region = _replay_shape(base, chain)
        value = pad_to(value, len(region) - 1)
    return prim(base, value, chain=tuple(chain))


def _replay_shape(base, chain):
    from ..backend import cpu as host  # (a host array of the base's shape)
    from .views import replay_view
    return replay_view(chain, host.empty(tuple(base.shape), dtype=bool)).shape


def _shift_index(p, size):
    return dict(p, index=(slice(None),) + tuple(p["index"]))


_VIEW_PARAMS = {"basic_index": _shift_index}


# -- linear algebra -----------------------------------------------------------------------------

@batch_rule("matmul", "mm", "bmm", "mv")
def matmul_rule(prim, args, batched, params, size):
    """Vectors made matrices (a row on the left, a column on the right), batched operands
    padded to the same sample rank, one matmul, the added dims dropped again."""
    x, y = args
    xs, ys = sample_ndim(x, batched[0]), sample_ndim(y, batched[1])
    if batched[0] and not batched[1] and ys == 2:
        # samples (vectors or stacks of rows) times one shared matrix: the batch folded into
        # the rows makes one matrix product (NumPy would loop over the batch), the same
        # product the unbatched program computes on a stacked input
        rows = _P["reshape"](x, shape=(math.prod(x.shape[:-1]), x.shape[-1]))
        return _P["reshape"](_P["matmul"](rows, y), shape=tuple(x.shape[:-1]) + (y.shape[-1],))
    if xs == 1:
        x = _P["unsqueeze"](x, dim=x.ndim - 1)
    if ys == 1:
        y = _P["unsqueeze"](y, dim=y.ndim)
    n = max(max(xs, 2), max(ys, 2))
    x = pad_to(x, n) if batched[0] else x
    y = pad_to(y, n) if batched[1] else y
    out = _P["matmul"](x, y)
    if ys == 1:
        out = _P["squeeze"](out, dim=out.ndim - 1)
    if xs == 1:
        out = _P["squeeze"](out, dim=out.ndim - 1 if ys == 1 else out.ndim - 2)
    if not (batched[0] or batched[1]) or out.ndim == 0:
        return out
    return materialize(out, True, size)


@batch_rule("addmm", "baddbmm")
def fused_matmul_rule(prim, args, batched, params, size):
    """``beta * input + alpha * (x @ y)`` from the matmul rule and elementwise primitives."""
    input, x, y = args
    beta, alpha = params.get("beta", 1), params.get("alpha", 1)
    out = matmul_rule(_P["matmul"], (x, y), batched[1:], {}, size)
    out_batched = batched[1] or batched[2]
    if alpha != 1:
        out = _P["mul"](out, alpha)
    if beta == 0:
        if out_batched or not is_array(input):
            return out
        return _P["clone"](materialize(out, False, size))  # (its own memory: one per sample, writable)
    if beta != 1:
        input = _P["mul"](input, beta)
    out = elementwise(_P["add"], (input, out), (batched[0], out_batched), {}, size)
    return materialize(out, batched[0] or out_batched, size)


@batch_rule("dot", "vdot")
def dot_rule(prim, args, batched, params, size):
    x, y = args
    if prim.name == "vdot":
        x = _P["conj"](x)
    return _P["sum"](elementwise(_P["mul"], (x, y), batched, {}, size), dim=(1,), keepdim=False, dtype=None)


@batch_rule("einsum")
def einsum_rule(prim, args, batched, params, size):
    eq = params["equation"].replace(" ", "")
    lhs, _, rhs = eq.partition("->")
    if not _ or "." in eq:
        return per_sample(prim, args, batched, params, size)
    free = next(c for c in "ZYXWVUTSRQPONMLKJIHGFEDCBAzyxwvutsrqponmlkjihgfedcba" if c not in eq)
    subs = [(free + s) if b else s for s, b in zip(lhs.split(","), batched)]
    return prim(*args, equation=",".join(subs) + "->" + free + rhs)


@batch_rule("inv", "det", "cofactor", "slogdet", "qr", "cholesky", "eig", "eigh", "svd", "lapack_phases", "lu_factor",
            "matrix_exp")
def trailing_matrix_rule(prim, args, batched, params, size):
    """Kernels that already map over leading dims (NumPy's linalg stacks)."""
    if len(args) != 1:
        return per_sample(prim, args, batched, params, size)
    return prim(*args, **params)


@batch_rule("solve_triangular")
def triangular_solve_rule(prim, args, batched, params, size):
    """Two stacks of matrices (the kernel broadcasts their leading dims): the batched ones
    padded to the same sample rank, then one solve."""
    n = max(sample_ndim(a, b) for a, b in zip(args, batched))
    return prim(*(pad_to(a, n) if b else a for a, b in zip(args, batched)), **params)


# -- conv, pooling, normalisation -------------------------------------------------------------

def _fold(a):
    """(B, N, ...) -> (B * N, ...)."""
    return _P["reshape"](a, shape=(a.shape[0] * a.shape[1],) + tuple(a.shape[2:]))


def _unfold(a, size):
    return _P["reshape"](a, shape=(size, a.shape[0] // size if size else 0) + tuple(a.shape[1:]))


@batch_rule("convolution", "convolution_backward_input")
def conv_rule(prim, args, batched, params, size):
    """Only the input batched: the batch joins the conv's own batch dim N. A batched weight
    (per-sample weights, as ``vmap(grad)`` makes): the batch joins the channels and the
    groups -- one grouped convolution, as functorch does it; a transposed one's weight
    (B, Cin, Cout/groups, *k) folds the same way, its input channels leading. The kernels
    block such wide groups within :data:`tracegrad.rules.conv.WORKSPACE_BYTES`."""
    if size == 0:
        return per_sample(prim, args, batched, params, size)
    if not any(batched[1:]):
        return _unfold(prim(_fold(args[0]), *args[1:], **params), size)
    x, w, bias = args
    x = materialize(x, batched[0], size)                       # (B, N, C, *sp)
    w = materialize(w, batched[1], size)                       # (B, O, C/g, *k)
    n, c = x.shape[1], x.shape[2]
    x = _P["reshape"](_P["transpose"](x, dim0=0, dim1=1), shape=(n, size * c) + tuple(x.shape[3:]))
    w = _fold(w)
    if bias is not None:
        bias = _fold(materialize(bias, batched[2], size)) if batched[2] else _P["reshape"](
            materialize(bias, False, size), shape=(size * bias.shape[0],))
    y = prim(x, w, bias, **dict(params, groups=params["groups"] * size))   # (N, B*O, *sp')
    y = _P["reshape"](y, shape=(n, size, y.shape[1] // size) + tuple(y.shape[2:]))
    return _P["transpose"](y, dim0=0, dim1=1)


def _channels_of_n(a):
    """(B, N, C, ...) -> (N, B * C, ...): the batch joins the channels."""
    a = _P["transpose"](a, dim0=0, dim1=1)
    return _P["reshape"](a, shape=(a.shape[0], a.shape[1] * a.shape[2]) + tuple(a.shape[3:]))


@batch_rule("convolution_backward_weight")
def conv_weight_rule(prim, args, batched, params, size):
    """Per-sample weight gradients: the batch joins the channels and the groups of one
    grouped correlation."""
    if size == 0:
        return per_sample(prim, args, batched, params, size)
    x, g = (_channels_of_n(materialize(a, b, size)) for a, b in zip(args, batched))
    w = prim(x, g, **dict(params, groups=params["groups"] * size))     # (B * O, C / groups, *k)
    return _P["reshape"](w, shape=(size, w.shape[0] // size) + tuple(w.shape[1:]))


@batch_rule("max_pool2d", "max_pool2d_indices", "avg_pool2d", "adaptive_avg_pool2d", "max_pool2d_backward",
            "avg_pool2d_backward", "adaptive_avg_pool2d_backward")
def pool_rule(prim, args, batched, params, size):
    if size == 0 or any(is_array(a) and a.ndim - (1 if b else 0) != 4 for a, b in zip(args, batched)):
        return per_sample(prim, args, batched, params, size)
    args = [_fold(materialize(a, b, size)) if is_array(a) else a for a, b in zip(args, batched)]
    out = prim(*args, **params)
    return tuple(_unfold(o, size) for o in out) if isinstance(out, tuple) else _unfold(out, size)


@batch_rule("layer_norm")
def layer_norm_rule(prim, args, batched, params, size):
    if any(batched[1:]):
        return per_sample(prim, args, batched, params, size)
    return prim(*args, **params)


@batch_rule("embedding")
def embedding_rule(prim, args, batched, params, size):
    if batched[0] or (batched[1] and params.get("scale_grad_by_freq")):  # (each sample's counts)
        return per_sample(prim, args, batched, params, size)
    return prim(*args, **params)


@batch_rule("constant_pad_nd")
def pad_rule(prim, args, batched, params, size):
    if len(params["pad"]) // 2 > args[0].ndim - 1:
        return per_sample(prim, args, batched, params, size)
    return prim(*args, **params)


# -- losses -------------------------------------------------------------------------------------

@batch_rule("mse_loss", "binary_cross_entropy", "binary_cross_entropy_with_logits", "smooth_l1_loss",
            "huber_loss")
def pointwise_loss_rule(prim, args, batched, params, size):
    """The elementwise loss ('none'), then each sample's own mean or sum."""
    reduction = params.get("reduction", "mean")
    if any(is_array(a) and sample_ndim(a, b) != sample_ndim(args[0], batched[0])
           for a, b in zip(args, batched)) or (reduction == "mean" and size and args[0].size == 0):
        return per_sample(prim, args, batched, params, size)
    out = elementwise(prim, args, batched, dict(params, reduction="none"), size)
    out = materialize(out, any(batched), size) if out.ndim == sample_ndim(args[0], batched[0]) else out
    if reduction == "none":
        return out
    dims = tuple(range(1, out.ndim)) or None
    if dims is None:
        return out
    return _P["mean" if reduction == "mean" else "sum"](out, dim=dims, keepdim=False,
                                                        **({} if reduction == "mean" else {"dtype": None}))


def _nll_fold(x, target, size):
    """(B, N, C, ...) inputs and (B, N, ...) targets as one batch of B * N (a (B, C) input
    and (B,) targets -- one unbatched sample each -- already are)."""
    if x.ndim == 2:
        return x, target
    return _fold(x), _fold(target)


def _nll_denominator(fx, ft, weight, ignore_index, target_shape):
    """Each sample's total weight (what its mean divides by): the loss of an input of -1s
    (``fx``, ``ft``: the folded input and targets)."""
    ones = _P["neg"](_P["add"](_P["zeros_like"](fx), 1))
    per = _P["nll_loss"](ones, ft, weight, reduction="none", ignore_index=ignore_index)
    per = _P["reshape"](per, shape=target_shape)
    return per if per.ndim == 1 else _P["sum"](per, dim=tuple(range(1, per.ndim)), keepdim=False, dtype=None)


@batch_rule("nll_loss")
def nll_loss_rule(prim, args, batched, params, size):
    """The unreduced loss of all B * N rows at once, then each sample's own sum or mean."""
    x, target, weight = args
    if (weight is not None and batched[2]) or size == 0:
        return per_sample(prim, args, batched, params, size)
    x, target = materialize(x, batched[0], size), materialize(target, batched[1], size)
    fx, ft = _nll_fold(x, target, size)
    none = prim(fx, ft, weight, reduction="none", ignore_index=params.get("ignore_index", -100))
    none = _P["reshape"](none, shape=tuple(target.shape))
    reduction = params.get("reduction", "mean")
    if reduction == "none":
        return none
    total = none if none.ndim == 1 else _P["sum"](none, dim=tuple(range(1, none.ndim)), keepdim=False, dtype=None)
    if reduction == "sum":
        return total
    return _P["div"](total, _nll_denominator(fx, ft, weight, params.get("ignore_index", -100), tuple(target.shape)))


@batch_rule("nll_loss_backward")
def nll_loss_backward_rule(prim, args, batched, params, size):
    """Each sample's (scaled) gradient spread over its rows, then one unreduced backward."""
    g, target, weight = args
    if (weight is not None and batched[2]) or size == 0:
        return per_sample(prim, args, batched, params, size)
    g, target = materialize(g, batched[0], size), materialize(target, batched[1], size)
    shape = tuple(params["shape"])
    reduction = params.get("reduction", "mean")
    if reduction != "none":
        if reduction == "mean":
            fx, ft = _nll_fold(_P["zeros_of"](g, shape=(size,) + shape), target, size)
            g = _P["div"](g, _nll_denominator(fx, ft, weight, params.get("ignore_index", -100), tuple(target.shape)))
        g = _P["broadcast_to"](pad_to(g, target.ndim - 1), shape=tuple(target.shape))
    fg, ft = (g, target) if len(shape) == 1 else (_fold(g), _fold(target))
    full = (size,) + shape if len(shape) == 1 else (size * shape[0],) + shape[1:]
    out = prim(fg, ft, weight, shape=full, reduction="none", ignore_index=params.get("ignore_index", -100))
    return _P["reshape"](out, shape=(size,) + shape)
