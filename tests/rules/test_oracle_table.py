"""Walks the WHOLE rule table against real PyTorch (the oracle).

test_table.py checks each rule against finite differences, which proves that a vjp is
the derivative of *our* forward kernel; it cannot tell whether that kernel (or a
convention at a kink, a tie or a zero) is the one PyTorch has. Here every differentiable
primitive in ``tracegrad.rules.TABLE`` has an entry in ``TORCH``: how PyTorch computes the
same thing from the same operands and static params. For every sample in
tests/rules/samples_*.py (the same samples test_table.py walks) we compare, in float64:

* the forward kernel ``prim.impl(cpu, ...)`` with PyTorch's result (every output,
  shape and dtype included);
* each differentiable float operand's vjp (called through ``checks.vjp``, so undeclared
  operands arrive as ``Meta`` exactly as in the runtime) with ``torch.autograd.grad`` of
  the same outputs with the same random cotangent.

Rules whose operands broadcast (the samples modules' ``BROADCASTING`` sets) are also run
on random broadcastable shapes drawn from a seeded RNG, inside each rule's domain; and
``EDGES`` holds the points the samples avoid (kinks, ties, exact zeros, infinities,
degenerate counts), where PyTorch's convention is the expected answer.

A float Python number in a differentiable position becomes a 0-d float64 tensor for
PyTorch, so that it has a gradient to compare. Tolerance: rtol 1e-9, atol 1e-12.
"""
import importlib
import pathlib
import types

import numpy as np
import pytest

from tracegrad.backend import cpu
from tracegrad.rules import TABLE
from tracegrad.rules.index import fill_index

from . import checks

try:  # the file must import without torch; the conftest skips the torch-marked tests
    import torch
    import torch.nn.functional as F
except ImportError:  # pragma: no cover
    torch = F = None

RTOL, ATOL = 1e-9, 1e-12
# var/std of an empty slice or with correction >= count is nan/inf in both; PyTorch also warns
pytestmark = pytest.mark.filterwarnings("ignore:.*degrees of freedom is <= 0:UserWarning")

# -- the samples, gathered as test_table.py gathers them ---------------------------------------
_HERE = pathlib.Path(__file__).parent
_MODULES = [importlib.import_module(f"{__package__}.{p.stem}") for p in sorted(_HERE.glob("samples_*.py"))]
SAMPLES = {}
BROADCASTING = set()
for _m in _MODULES:
    SAMPLES.update(_m.SAMPLES)
    BROADCASTING |= set(getattr(_m, "BROADCASTING", ()))

DIFFERENTIABLE = sorted(name for name, p in TABLE.items()
                        if p.differentiable and (any(p.vjps) or p.vjp_all_fn is not None))


# -- PyTorch's equivalent of each rule ----------------------------------------------------------

def _tdtype(dtype):
    """The torch dtype for a NumPy dtype (None stays None)."""
    return None if dtype is None else torch.from_numpy(np.zeros(0, dtype)).dtype


def _copy_slices(base, value, *, chain):
    """A clone of ``base`` with ``value`` assigned into the region the view chain selects
    (the chain replayed with the torch equivalents of its view rules)."""
    out = base.clone()
    view = out
    for prim, params, k in chain:
        view = TORCH[prim.name](view, **params)
        if prim.nout != 1:
            view = view[k]
    view[...] = value
    return out


def _index_put(x, values, *indices, index, accumulate=False):
    # aten's own op: its index list takes None for a full slice (the Python binding does not)
    filled = fill_index(index, indices)
    if not all(isinstance(p, torch.Tensor) or p == slice(None) for p in filled):
        raise NotImplementedError(f"index_put oracle: index {index} has a partial slice")
    return torch.ops.aten.index_put(x, [p if isinstance(p, torch.Tensor) else None for p in filled],
                                    values, accumulate)


def _scatter_src(index, src):
    """PyTorch's scatter/scatter_add read only src[:index.shape] but implement the backward
    only for src.shape == index.shape (documented); slicing first is the same function.
    A number written everywhere (a 0-d tensor, to have a gradient) is expanded."""
    if isinstance(src, torch.Tensor):
        if src.ndim == 0:
            return src.expand(index.shape)
        return src[tuple(slice(0, n) for n in index.shape)]
    return src


def _prod(x, dim=None, keepdim=False, dtype=None):
    """torch.prod reduces one dim at a time: reduce each of ``dim`` in turn."""
    if dim is None:
        r = torch.prod(x, dtype=_tdtype(dtype))
        return r.reshape((1,) * x.ndim) if keepdim else r
    for d in sorted(dim, reverse=True):
        x = torch.prod(x, d, keepdim=True, dtype=_tdtype(dtype))
    return x if keepdim else x.squeeze(tuple(dim))


def _nll_loss_backward(g, target, weight, shape, reduction, ignore_index):
    """PyTorch's gradient of nll_loss for an input of ``shape``, as a function of ``g``
    (nll_loss is linear, so the input's value does not matter)."""
    x = torch.zeros(shape, dtype=g.dtype, requires_grad=True)
    loss = F.nll_loss(x, target, weight, reduction=reduction, ignore_index=ignore_index)
    return torch.autograd.grad(loss, x, g, create_graph=True)[0]


def _fn(name):
    return lambda *args: getattr(torch, name)(*args)


def _strided_add(x, src, size, stride, offset):
    """``strided_add`` in PyTorch: ``src`` summed into the positions ``as_strided`` reads."""
    positions = torch.as_strided(torch.arange(x.numel()), size, stride, offset).reshape(-1)
    return x.reshape(-1).index_add(0, positions, src.expand(size).reshape(-1)).reshape(x.shape)


TORCH = {n: _fn(n) for n in (
    "abs acos asin atan ceil cos cosh erf exp exp2 expm1 floor frac log log10 log1p log2 neg "
    "reciprocal rsqrt sign sin sinh sqrt tan tanh trunc clone sigmoid "
    "add sub mul div pow remainder atan2 maximum minimum mm bmm dot vdot mv matmul").split()}
TORCH.update({
    # -- elementwise
    "round": lambda x, decimals=0: torch.round(x, decimals=decimals),
    "clamp": lambda x, min=None, max=None: torch.clamp(x, min=min, max=max),
    "clamp_tensor": lambda x, lo, hi: torch.clamp(x, min=lo, max=hi),
    "where": lambda c, x, y: torch.where(c, x, y),
    # -- broadcasting, copies, writes
    "sum_to": lambda x, shape: x.sum_to_size(shape),
    "broadcast_to": lambda x, shape: x.expand(shape),
    "cast": lambda x, dtype, src_dtype: x.to(_tdtype(dtype), copy=True),
    "to_device": lambda x, device, src: x.to(device, copy=True),
    "copy": lambda x, src: x.clone().copy_(src),
    "fill": lambda x, value: x.clone().fill_(value),
    "copy_slices": _copy_slices,
    # -- shapes
    "reshape": lambda x, shape: x.reshape(shape),
    "unsafe_view": lambda x, shape: x.reshape(shape),
    "squeeze": lambda x, dim=None: x.squeeze() if dim is None else x.squeeze(dim),
    "unsqueeze": lambda x, dim: x.unsqueeze(dim),
    "transpose": lambda x, dim0, dim1: x.transpose(dim0, dim1),
    "t": lambda x: x.t(),
    "permute": lambda x, dims: x.permute(dims),
    "flip": lambda x, dims: x.flip(dims),
    "roll": lambda x, shifts, dims: x.roll(shifts, dims),
    "repeat": lambda x, repeats: x.repeat(repeats),
    "tril": lambda x, diagonal=0: x.tril(diagonal),
    "triu": lambda x, diagonal=0: x.triu(diagonal),
    "cat": lambda *xs, dim: torch.cat(xs, dim),
    "stack": lambda *xs, dim: torch.stack(xs, dim),
    "split": lambda x, sizes, dim, chunked=False: torch.split(x, sizes[0] if chunked else list(sizes), dim),
    "unbind": lambda x, dim: torch.unbind(x, dim),
    "diagonal": lambda x, offset=0, dim1=0, dim2=1: torch.diagonal(x, offset, dim1, dim2),
    "as_strided": lambda x, size, stride, offset=0: torch.as_strided(x.contiguous(), size, stride, offset),
    # (as_strided's transpose: x plus src summed into the positions as_strided reads)
    "strided_add": lambda x, src, size, stride, offset=0: _strided_add(x, src, size, stride, offset),
    "diagonal_scatter": lambda x, src, offset=0, dim1=0, dim2=1: torch.diagonal_scatter(x, src, offset, dim1, dim2),
    # -- indexing
    "basic_index": lambda x, index: x[index],
    "advanced_index": lambda x, *indices, index: x[fill_index(index, indices)],
    "index_put": _index_put,
    "index_select": lambda x, i, dim: torch.index_select(x, dim, i),
    "gather": lambda x, i, dim: torch.gather(x, dim, i),
    "scatter_add": lambda x, i, src, dim: torch.scatter_add(x, dim, i, _scatter_src(i, src)),
    "scatter": lambda x, i, src, dim: torch.scatter(x, dim, i, _scatter_src(i, src)),
    "masked_fill": lambda x, mask, value: torch.masked_fill(x, mask, value),
    # -- reductions and scans
    "sum": lambda x, dim=None, keepdim=False, dtype=None: torch.sum(x, dim=dim, keepdim=keepdim, dtype=_tdtype(dtype)),
    "mean": lambda x, dim=None, keepdim=False: torch.mean(x, dim=dim, keepdim=keepdim),
    "prod": _prod,
    "var": lambda x, dim=None, correction=1, keepdim=False: torch.var(x, dim=dim, correction=correction, keepdim=keepdim),
    "std": lambda x, dim=None, correction=1, keepdim=False: torch.std(x, dim=dim, correction=correction, keepdim=keepdim),
    "amax": lambda x, dim=None, keepdim=False: torch.amax(x, dim=() if dim is None else dim, keepdim=keepdim),
    "amin": lambda x, dim=None, keepdim=False: torch.amin(x, dim=() if dim is None else dim, keepdim=keepdim),
    "max": lambda x: torch.max(x),
    "min": lambda x: torch.min(x),
    "median_all": lambda x: torch.median(x),
    "nanmedian_all": lambda x: torch.nanmedian(x),
    "max_dim": lambda x, dim, keepdim=False: tuple(torch.max(x, dim, keepdim)),
    "min_dim": lambda x, dim, keepdim=False: tuple(torch.min(x, dim, keepdim)),
    "logsumexp": lambda x, dim, keepdim=False: torch.logsumexp(x, dim, keepdim),
    "vector_norm": lambda x, ord=2, dim=None, keepdim=False: torch.linalg.vector_norm(x, ord, dim, keepdim),
    "cumsum": lambda x, dim, dtype=None: torch.cumsum(x, dim, dtype=_tdtype(dtype)),
    "logcumsumexp": lambda x, dim: torch.logcumsumexp(x, dim),
    "cumprod": lambda x, dim, dtype=None: torch.cumprod(x, dim, dtype=_tdtype(dtype)),
    # -- linear algebra
    "addmm": lambda i, x, y, beta=1, alpha=1: torch.addmm(i, x, y, beta=beta, alpha=alpha),
    "baddbmm": lambda i, x, y, beta=1, alpha=1: torch.baddbmm(i, x, y, beta=beta, alpha=alpha),
    "einsum": lambda *ops, equation: torch.einsum(equation, *ops),
    # -- activations (the ``*_`` twins run PyTorch's in-place op on a clone of the leaf)
    "logsigmoid": lambda x: F.logsigmoid(x),
    "silu": lambda x: F.silu(x),
    "mish": lambda x: F.mish(x),
    "softplus": lambda x, beta=1.0, threshold=20.0: F.softplus(x, beta, threshold),
    "relu": lambda x: F.relu(x),
    "leaky_relu": lambda x, negative_slope=0.01: F.leaky_relu(x, negative_slope),
    "leaky_relu_": lambda x, negative_slope=0.01: F.leaky_relu_(x.clone(), negative_slope),
    "hardtanh": lambda x, min_val=-1.0, max_val=1.0: F.hardtanh(x, min_val, max_val),
    "hardsigmoid": lambda x: F.hardsigmoid(x),
    "hardswish": lambda x: F.hardswish(x),
    "threshold": lambda x, threshold, value: F.threshold(x, threshold, value),
    "threshold_": lambda x, threshold, value: F.threshold_(x.clone(), threshold, value),
    "hardshrink": lambda x, lambd=0.5: F.hardshrink(x, lambd),
    "softshrink": lambda x, lambd=0.5: F.softshrink(x, lambd),
    # elu/selu are one aten op with all three coefficients
    "elu": lambda x, alpha=1.0, scale=1.0, input_scale=1.0: torch.ops.aten.elu(x, alpha, scale, input_scale),
    "elu_": lambda x, alpha=1.0, scale=1.0, input_scale=1.0: torch.ops.aten.elu_(x.clone(), alpha, scale, input_scale),
    "celu": lambda x, alpha=1.0: F.celu(x, alpha),
    "celu_": lambda x, alpha=1.0: torch.celu_(x.clone(), alpha),
    "gelu": lambda x, approximate="none": F.gelu(x, approximate=approximate),
    "softmax": lambda x, dim: torch.softmax(x, dim),
    "log_softmax": lambda x, dim: torch.log_softmax(x, dim),
    # -- losses
    "mse_loss": lambda x, y, reduction="mean": F.mse_loss(x, y, reduction=reduction),
    "smooth_l1_loss": lambda x, y, reduction="mean", beta=1.0: F.smooth_l1_loss(x, y, reduction=reduction, beta=beta),
    "huber_loss": lambda x, y, reduction="mean", delta=1.0: F.huber_loss(x, y, reduction=reduction, delta=delta),
    "nll_loss": lambda x, t, w, reduction="mean", ignore_index=-100: F.nll_loss(
        x, t, w, reduction=reduction, ignore_index=ignore_index),
    "nll_loss_backward": lambda g, t, w, shape, reduction="mean", ignore_index=-100: _nll_loss_backward(
        g, t, w, shape, reduction, ignore_index),
    "binary_cross_entropy": lambda x, y, w, reduction="mean": F.binary_cross_entropy(x, y, w, reduction=reduction),
    "binary_cross_entropy_with_logits": lambda x, y, w, pw, reduction="mean": F.binary_cross_entropy_with_logits(
        x, y, w, reduction=reduction, pos_weight=pw),
    # -- layers (tracegrad/rules/nn.py)
    # (output, mean, invstd): our rules differentiate the statistics too, so composed here
    "batch_norm": lambda x, w, b, eps: (F.batch_norm(x, None, None, w, b, True, 0.0, eps),
                                        *_moments(x, [0, *range(2, x.ndim)], eps, keepdim=False)),
    "batch_norm_eval": lambda x, w, b, rm, rv, eps: F.batch_norm(x, rm, rv, w, b, False, 0.0, eps),
    "layer_norm": lambda x, w, b, normalized_shape, eps: (
        F.layer_norm(x, normalized_shape, w, b, eps),
        *_moments(x, list(range(x.ndim - len(normalized_shape), x.ndim)), eps, keepdim=True)),
    "group_norm": lambda x, w, b, num_groups, eps: (
        # (a weight of ones when there is none: PyTorch's backward fails for a bias alone)
        F.group_norm(x, num_groups, torch.ones(x.shape[1], dtype=x.dtype) if w is None and b is not None else w,
                     b, eps),
        *_moments(x.reshape(x.shape[0], num_groups, int(np.prod(x.shape[1:])) // num_groups), [2], eps,
                  keepdim=False)),
    "embedding": lambda w, i, padding_idx=-1: torch.embedding(w, i, padding_idx),
    "constant_pad_nd": lambda x, pad, value=0.0: torch.constant_pad_nd(x, pad, value),
    "pad_nd": lambda x, pad, mode: F.pad(x, pad, mode=mode),
    "pad_nd_backward": lambda g, pad, mode, shape: _pad_backward(g, pad, mode, shape),
})


def _moments(x, dims, eps, keepdim):
    """The mean and 1 / sqrt(biased variance + eps) over ``dims``, as differentiable ops."""
    return x.mean(dims, keepdim=keepdim), (x.var(dims, correction=0, keepdim=keepdim) + eps).rsqrt()


def _pad_backward(g, pad, mode, shape):
    """PyTorch's gradient of F.pad for an input of ``shape``, as a function of ``g``."""
    x = torch.zeros(shape, dtype=g.dtype, requires_grad=True)
    return torch.autograd.grad(F.pad(x, pad, mode=mode), x, g, create_graph=True)[0]


# -- random broadcasting inputs ------------------------------------------------------------------

def _normal(rng, shape):
    return rng.standard_normal(shape)


def _pos(rng, shape):
    return rng.uniform(0.5, 2.0, shape)


def _away(rng, shape):
    return rng.uniform(0.3, 2.0, shape) * rng.choice([-1.0, 1.0], shape)


def _wide(rng, shape):
    return rng.uniform(-5.0, 5.0, shape)


def _ties(rng, shape):
    """Values in {-1, 0, 1}: many exact ties, where maximum/minimum split the gradient."""
    return rng.integers(-1, 2, shape).astype(np.float64)


def _shapes(rng, n, ndim=None):
    """``n`` shapes that broadcast together, do not all agree and give at least 4 elements:
    each is a trailing part of a common shape, with some dims set to 1."""
    while True:
        full = tuple(int(d) for d in rng.integers(2, 5, rng.integers(1, 4) if ndim is None else ndim))
        shapes = [tuple(1 if rng.random() < 0.3 else d
                        for d in full[(rng.integers(0, len(full) + 1) if rng.random() < 0.5 else 0):])
                  for _ in range(n)]
        if len(set(shapes)) > 1 and np.prod(np.broadcast_shapes(*shapes)) >= 4:
            return shapes


def _to(rng, shape):
    """A shape that broadcasts *to* ``shape`` (one-directional, as for copy_ and addmm)."""
    lead = int(rng.integers(0, len(shape) + 1))
    return tuple(1 if rng.random() < 0.4 else d for d in shape[lead:])


def _elementwise(x_domain, y_domain):
    def make(rng):
        sx, sy = _shapes(rng, 2)
        return (x_domain(rng, sx), y_domain(rng, sy)), {}
    return make


def _where(rng):
    sc, sx, sy = _shapes(rng, 3)
    return (rng.random(sc) < 0.5, _normal(rng, sx), _normal(rng, sy)), {}


def _clamp_tensor(rng):
    """Ties with the bounds included (x, lo and hi in {-1, 0, 1}), and lo > hi sometimes.
    The bounds broadcast to x's shape (PyTorch's own clamp backward fails when x is the
    smaller operand: its in-place logical_and_ cannot broadcast)."""
    sx = np.broadcast_shapes(*_shapes(rng, 2))
    return (_ties(rng, sx), _ties(rng, _to(rng, sx)), _ties(rng, _to(rng, sx))), {}


def _copy(rng):
    sx = tuple(int(d) for d in rng.integers(2, 5, rng.integers(1, 4)))
    return (_normal(rng, sx), _normal(rng, _to(rng, sx))), {}


def _masked_fill(rng):
    sx, sm = _shapes(rng, 2)
    return (_normal(rng, sx), rng.random(sm) < 0.5, np.array(rng.standard_normal())), {}


def _matmul(rng):
    n, k, p = (int(v) for v in rng.integers(1, 5, 3))
    bx, by = _shapes(rng, 2, ndim=int(rng.integers(1, 3)))
    x = (k,) if rng.random() < 0.2 else bx + (n, k)
    y = (k,) if rng.random() < 0.2 and len(x) > 1 else by + (k, p)
    return (_normal(rng, x), _normal(rng, y)), {}


def _coefficients(rng):
    return {"beta": float(rng.choice([1.0, 0.5, -1.5, 0.0])), "alpha": float(rng.choice([1.0, 2.0, -0.5]))}


def _addmm(rng):
    n, k, p = (int(v) for v in rng.integers(1, 5, 3))
    return (_normal(rng, _to(rng, (n, p))), _normal(rng, (n, k)), _normal(rng, (k, p))), _coefficients(rng)


def _baddbmm(rng):
    b, n, k, p = (int(v) for v in rng.integers(1, 5, 4))
    return (_normal(rng, _to(rng, (b, n, p))), _normal(rng, (b, n, k)), _normal(rng, (b, k, p))), _coefficients(rng)


def _einsum(rng):
    bx, by = _shapes(rng, 2)
    n, k, p = (int(v) for v in rng.integers(1, 5, 3))
    kind = int(rng.integers(0, 3))
    if kind == 0:  # batched matrix product, ellipsis dims broadcasting
        return (_normal(rng, bx + (n, k)), _normal(rng, by + (k, p))), {"equation": "...ij,...jk->...ik"}
    if kind == 1:  # batched inner product
        return (_normal(rng, bx + (k,)), _normal(rng, by + (k,))), {"equation": "...i,...i->..."}
    # labelled dims of size 1 broadcasting against the same label elsewhere
    sx, sy = (n + 1, k + 1), (n + 1, k + 1)
    while sx == sy:
        sx, sy = ((1 if rng.random() < 0.5 else d for d in (n + 1, k + 1)) for _ in range(2))
        sx, sy = tuple(sx), tuple(sy)
    return (_normal(rng, sx), _normal(rng, sy)), {"equation": "ij,ij->i"}


BROADCAST_INPUTS = {
    "add": _elementwise(_normal, _normal), "sub": _elementwise(_normal, _normal),
    "mul": _elementwise(_normal, _normal), "div": _elementwise(_normal, _away),
    "pow": _elementwise(_pos, _normal), "remainder": _elementwise(_wide, _away),
    "atan2": _elementwise(_away, _away), "maximum": _elementwise(_ties, _ties),
    "minimum": _elementwise(_ties, _ties), "where": _where, "copy": _copy,
    "clamp_tensor": _clamp_tensor,
    "masked_fill": _masked_fill, "matmul": _matmul, "addmm": _addmm, "baddbmm": _baddbmm,
    "einsum": _einsum,
}
N_BROADCAST = 6


# -- points where the derivative jumps, ties, zeros, infinities and degenerate counts ---------------
# The samples keep (mostly) away from these so that finite differences can check them; here
# PyTorch's convention at each point is the expected answer.

def _a(*values):
    return np.array(values, dtype=np.float64)


_INF = float("inf")
_ZEROS = np.array([[0.0, 2.0, 0.0], [1.0, 0.0, 3.0]])
EDGES = [
    # ties: the gradient is split evenly (max_dim: the first index gets all of it)
    ("maximum", (_a(1, 2, _INF), _a(1, 3, _INF)), {}), ("minimum", (_a(1, 2, -1), _a(1, 3, -1)), {}),
    ("amax", (np.array([[1.0, 1.0], [0.0, 2.0]]),), {"dim": (1,)}), ("min", (_a(1, 1, 3),), {}),
    ("max_dim", (_a(3, 3, 1),), {"dim": 0}), ("min_dim", (_a(1, 1, 3),), {"dim": 0}),
    ("vector_norm", (_a(1, -2, 2),), {"ord": _INF}), ("amax", (_a(-_INF, -_INF),), {}),
    ("median_all", (_a(2, 1, 2, 3),), {}), ("median_all", (_a(_INF, _INF, 1),), {}),
    ("nanmedian_all", (_a(3, 1, 3, float("nan")),), {}), ("max", (_a(_INF, 1, _INF),), {}),
    # kinks
    ("relu", (_a(-1, 0, 1),), {}), ("leaky_relu", (_a(-1, 0, 1),), {}), ("abs", (_a(-1, 0, 1),), {}),
    ("sign", (_a(0),), {}), ("round", (_a(0.5, 1.5, 2.5),), {}),
    ("clamp", (_a(-0.5, 0, 0.5, 1),), {"min": -0.5, "max": 0.5}), ("clamp", (_a(0.5),), {"max": 0.5}),
    ("clamp", (_a(0, 0.5, 2),), {"min": 1.0, "max": 0.0}),
    ("hardtanh", (_a(-1, 0, 1),), {}), ("hardtanh", (_a(0, 3, 6),), {"min_val": 0.0, "max_val": 6.0}),
    ("hardsigmoid", (_a(-3, 0, 3),), {}), ("hardswish", (_a(-3, 0, 3),), {}),
    ("threshold", (_a(0.5, 1),), {"threshold": 0.5, "value": 2.0}),
    ("threshold_", (_a(0.5, 1),), {"threshold": 0.5, "value": 2.0}),
    ("hardshrink", (_a(-0.5, 0, 0.5, 0.7),), {}), ("softshrink", (_a(-0.5, 0, 0.5, 0.7),), {}),
    ("elu", (_a(0, -1),), {"alpha": -0.7}), ("elu_", (_a(0, -1),), {}), ("celu", (_a(0, 1),), {"alpha": -0.5}),
    ("celu_", (_a(0, -1),), {}), ("leaky_relu_", (_a(0, -1),), {"negative_slope": 0.2}),
    ("softplus", (_a(10, 20, 21),), {}), ("softplus", (_a(-1.5, 1.5),), {"beta": -2.0, "threshold": 3.0}),
    # zeros
    ("pow", (_a(0, 0, 2), _a(0, 2, 0.5)), {}), ("pow", (_a(0, 0), _a(-1, 0.5)), {}),
    ("pow", (_a(0), 0.0), {}), ("pow", (0.0, _a(2)), {}), ("sqrt", (_a(0, 1),), {}),
    ("prod", (_ZEROS,), {"dim": (0,), "keepdim": True}), ("prod", (_ZEROS,), {}),
    ("cumprod", (_ZEROS,), {"dim": 0}), ("cumprod", (_ZEROS,), {"dim": 1}),
    ("vector_norm", (np.zeros((2, 3)),), {"dim": (1,)}), ("vector_norm", (np.zeros(3),), {"ord": 3}),
    ("vector_norm", (_a(0, -2, 2),), {"ord": 1}), ("vector_norm", (_a(0, 1),), {"ord": -_INF}),
    ("vector_norm", (_a(0, 0),), {"ord": -1}),
    ("vector_norm", (_a(0, 1),), {"ord": 0.5}),  # p < 1 at an exact zero entry
    ("std", (_a(1, 1, 1),), {}),  # std == 0
    ("std", (np.ones((2, 3)),), {"dim": (0,), "correction": 0}),
    ("atan2", (_a(0, 0), _a(0, -0.0)), {}),  # x == y == 0
    # degenerate counts: correction >= number of elements
    ("var", (np.array(2.0),), {}), ("var", (_a(1, 2),), {"correction": 2}),
    ("var", (_a(1, 2),), {"correction": 3}), ("std", (_a(1, 2),), {"correction": 3}),
    ("std", (np.array(2.0),), {}),
    # infinities and saturation
    ("logsumexp", (_a(-_INF, -_INF),), {"dim": (0,)}), ("logsumexp", (_a(_INF, 1),), {"dim": (0,)}),
    ("softmax", (_a(-_INF, -_INF),), {"dim": 0}), ("log_softmax", (_a(-_INF, 1),), {"dim": 0}),
    ("sigmoid", (_a(-800, 800),), {}), ("logsigmoid", (_a(-800, 800),), {}), ("silu", (_a(-800, 800),), {}),
    ("mish", (_a(-800, 800),), {}), ("softplus", (_a(-800, 800),), {}), ("gelu", (_a(-30, 30),), {}),
    ("gelu", (_a(-30, 30),), {"approximate": "tanh"}),
    # losses: kinks, floored logs, saturated logits, nothing to average over
    ("smooth_l1_loss", (_a(-1, 0, 1, 2), _a(0, 0, 0, 1)), {"reduction": "none"}),
    ("huber_loss", (_a(-2, 0, 2, 3), _a(0, 0, 0, 1)), {"reduction": "sum", "delta": 2.0}),
    ("binary_cross_entropy", (_a(0, 1, 0, 1, 1e-50), _a(0, 1, 1, 0, 0.5), None), {"reduction": "none"}),
    ("binary_cross_entropy_with_logits", (_a(-800, 800, 0), _a(1, 0, 0.5), None, _a(2, 2, 2)), {"reduction": "sum"}),
    ("nll_loss", (np.ones((2, 3)), np.array([-100, -100]), None), {}),
    ("nll_loss", (np.ones((2, 3)), np.array([1, 1]), _a(1, 0, 1)), {}),
    ("nll_loss_backward", (np.array(1.0), np.array([-100, -100]), None), {"shape": (2, 3)}),
    ("nll_loss_backward", (np.array(1.0), np.array([1, 2]), _a(1, 0, 1)), {"shape": (2, 3)}),
]


# -- convolution and pooling (tracegrad/rules/conv.py, pool.py) ----------------------------------

def _conv_weight_grad(input, grad, kernel_size, stride, padding, dilation, groups):
    """PyTorch's weight gradient of a convolution of ``input``, cut to ``grad``'s size."""
    w = torch.zeros((grad.shape[1], input.shape[1] // groups, *kernel_size), dtype=input.dtype, requires_grad=True)
    y = torch.convolution(input, w, None, stride, padding, dilation, False, [0] * len(stride), groups)
    y = y[(slice(None), slice(None)) + tuple(slice(0, n) for n in grad.shape[2:])]
    return torch.autograd.grad(y, w, grad, create_graph=True)[0]


TORCH.update({
    "convolution": torch.convolution if torch else None,
    "convolution_backward_input": torch.convolution if torch else None,
    "convolution_backward_weight": _conv_weight_grad,
    "max_pool2d": lambda x, indices, **p: F.max_pool2d(x, **p),
    "max_pool2d_backward": lambda g, x, indices, **p: torch.ops.aten.max_pool2d_with_indices_backward(
        g, x, p["kernel_size"], p["stride"], p["padding"], p["dilation"], p["ceil_mode"], indices),
    "avg_pool2d": lambda x, **p: F.avg_pool2d(x, **p),
    "avg_pool2d_backward": lambda g, x, **p: torch.ops.aten.avg_pool2d_backward(
        g, x, p["kernel_size"], p["stride"], p["padding"], p["ceil_mode"], p["count_include_pad"],
        p["divisor_override"]),
    "adaptive_avg_pool2d": lambda x, output_size: torch.ops.aten._adaptive_avg_pool2d(x, output_size),
    "adaptive_avg_pool2d_backward": lambda g, x: torch.ops.aten._adaptive_avg_pool2d_backward(g, x),
})


# -- sorting and distances (tracegrad/rules/arrays.py take_ranked, distance.py) ------------------

def _take_ranked(x, order, dim, keepdim=True, op="sort"):
    out = torch.gather(x, dim, order) if x.ndim else x.clone()
    return out if keepdim or not x.ndim else out.squeeze(dim)


def _cdist(rng):
    bx, by = _shapes(rng, 2)
    p, r, m = (int(v) for v in rng.integers(1, 5, 3))
    ord = [0.0, 0.5, 1.0, 2.0, 3.0, _INF][int(rng.integers(0, 6))]
    return (_normal(rng, bx + (p, m)), _normal(rng, by + (r, m))), {"p": ord}


TORCH.update({
    "take_ranked": _take_ranked,
    "cdist": lambda x1, x2, p=2.0: torch.cdist(x1, x2, p, compute_mode="donot_use_mm_for_euclid_dist"),
})
BROADCAST_INPUTS["cdist"] = _cdist
_SAME = np.array([[0.0, 1.0], [2.0, 2.0]])
EDGES += [  # zero distances, a zero coordinate difference (p < 1), ties of the inf-norm
    ("cdist", (_SAME, _SAME), {"p": 2.0}), ("cdist", (_SAME, _SAME), {"p": 1.0}),
    ("cdist", (_SAME, _SAME), {"p": 3.0}), ("cdist", (_SAME, _SAME + _a(0, 1)), {"p": 0.5}),
    ("cdist", (_SAME, _SAME + 1), {"p": _INF}), ("cdist", (_SAME, _SAME), {"p": _INF}),
]

# -- running one call on both sides ---------------------------------------------------------------

def _torch_operands(prim, args):
    """Tensors for PyTorch (float64 stays float64, ints int64, masks bool); differentiable
    float operands, Python floats included (as 0-d tensors), require grad."""
    positions = set(checks.diff_positions(prim, types.SimpleNamespace(args=args)))
    targs, leaves = [], {}
    for i, a in enumerate(args):
        if isinstance(a, np.ndarray) or i in positions:
            t = torch.tensor(np.asarray(a))
            if i in positions:
                t.requires_grad_()
                leaves[i] = t
            targs.append(t)
        else:
            targs.append(a)
    return targs, leaves


def _assert_close(ours, theirs, what):
    ours = np.asarray(ours)
    theirs = theirs.detach().numpy() if isinstance(theirs, torch.Tensor) else np.asarray(theirs)
    np.testing.assert_allclose(ours, theirs, rtol=RTOL, atol=ATOL, strict=True, err_msg=what)


def _run(name, args, params):
    prim = TABLE[name]
    out = prim.impl(cpu, *args, **params)
    targs, leaves = _torch_operands(prim, args)
    result = TORCH[name](*targs, **params)
    theirs = (result,) if prim.nout == 1 else tuple(result)
    return prim, out, theirs, leaves


def check_forward(name, args, params):
    prim, out, theirs, _ = _run(name, args, params)
    ours = checks.outputs(prim, out)
    assert len(ours) == len(theirs), f"{name}: {len(ours)} outputs, PyTorch has {len(theirs)}"
    for k, (o, t) in enumerate(zip(ours, theirs)):
        _assert_close(o, t, f"{name} output {k}")


def check_vjps(name, args, params, seed):
    prim, out, theirs, leaves = _run(name, args, params)
    assert leaves, f"{name}: no differentiable float operand"
    g = checks.cotangent(prim, out, np.random.default_rng(seed))
    gs = g if prim.nout != 1 else (g,)
    pairs = [(t, torch.tensor(np.asarray(gk))) for k, (t, gk) in enumerate(zip(theirs, gs))
             if t.requires_grad]
    if pairs:
        grads = torch.autograd.grad([t for t, _ in pairs], list(leaves.values()), [c for _, c in pairs],
                                    allow_unused=True, materialize_grads=True)
    else:  # no output PyTorch can differentiate: every gradient is zero
        grads = [torch.zeros_like(leaf) for leaf in leaves.values()]
    for (i, leaf), expected in zip(leaves.items(), grads):
        mine = checks.vjp(prim, i, g, out, args, params)
        _assert_close(mine, expected, f"{name}: gradient of operand {i}")


# Samples modules may define their rules' equivalents beside their samples (``TORCH``), and
# name the rules PyTorch has no equivalent of, with the reason (``NO_TORCH``: SciPy-only
# functions, internal halves of a decomposed op); test_table.py still checks those.
NO_TORCH = {}
for _m in _MODULES:
    TORCH.update(getattr(_m, "TORCH", {}))
    NO_TORCH.update(getattr(_m, "NO_TORCH", {}))
    BROADCAST_INPUTS.update(getattr(_m, "BROADCAST_INPUTS", {}))



# -- the tests ---------------------------------------------------------------------------------------

CASES = [(name, k) for name in sorted(SAMPLES) if name in TORCH and name in DIFFERENTIABLE
         for k in range(len(SAMPLES[name]))]
IDS = [f"{name}-{k}" for name, k in CASES]
BCAST_CASES = [(name, k) for name in sorted(BROADCASTING) if name in BROADCAST_INPUTS
               for k in range(N_BROADCAST)]
BCAST_IDS = [f"{name}-bcast{k}" for name, k in BCAST_CASES]
EDGE_IDS = [f"{name}-edge{k}" for k, (name, _, _) in enumerate(EDGES)]


@pytest.mark.torch
def test_every_differentiable_rule_has_a_torch_equivalent():
    missing = [n for n in DIFFERENTIABLE if n not in TORCH and n not in NO_TORCH]
    assert not missing, f"differentiable rules without a PyTorch equivalent in TORCH: {missing}"
    stale = sorted(set(TORCH) - set(DIFFERENTIABLE))
    assert not stale, f"TORCH maps rules that are not differentiable rules of the table: {stale}"


@pytest.mark.torch
def test_every_broadcasting_rule_has_random_inputs():
    missing = sorted(BROADCASTING - set(BROADCAST_INPUTS) - set(NO_TORCH))
    assert not missing, f"broadcasting rules without a generator in BROADCAST_INPUTS: {missing}"


@pytest.mark.torch
@pytest.mark.parametrize("name,k", CASES, ids=IDS)
def test_forward_matches_torch(name, k):
    pytest.importorskip("torch")
    sample = SAMPLES[name][k]
    check_forward(name, sample.args, sample.params)


@pytest.mark.torch
@pytest.mark.parametrize("name,k", CASES, ids=IDS)
def test_vjp_matches_torch(name, k):
    pytest.importorskip("torch")
    sample = SAMPLES[name][k]
    check_vjps(name, sample.args, sample.params, seed=k)


@pytest.mark.torch
@pytest.mark.parametrize("name,k", BCAST_CASES, ids=BCAST_IDS)
def test_broadcasting_matches_torch(name, k):
    pytest.importorskip("torch")
    rng = np.random.default_rng([k, *name.encode()])
    args, params = BROADCAST_INPUTS[name](rng)
    check_forward(name, args, params)
    check_vjps(name, args, params, seed=1000 + k)


@pytest.mark.torch
@pytest.mark.parametrize("k", range(len(EDGES)), ids=EDGE_IDS)
def test_edge_points_match_torch(k):
    """Kinks, ties, zeros, infinities: the rule must take PyTorch's value there."""
    pytest.importorskip("torch")
    name, args, params = EDGES[k]
    with np.errstate(all="ignore"):
        check_forward(name, args, params)
        check_vjps(name, args, params, seed=2000 + k)
