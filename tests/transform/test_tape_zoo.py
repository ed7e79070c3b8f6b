"""A zoo of plain-NumPy functions differentiated by ``tracegrad.grad`` (tape mode).

Every entry is ordinary NumPy code -- ``np.*`` calls and ndarray methods, exactly as one
would write it without tracegrad -- so the tests check that tracing real code gives real
gradients. Each entry is checked against central finite differences, against itself
(the cached compiled variant must be replayed and must stay correct for new values),
and, where a ``tg`` twin is given, against tracegrad's eager autograd. A few entries are
also checked in forward mode (``jvp``).

Branch entries come in pairs whose inputs take opposite sides, and their ``alt``
values take the other side, so replaying a cached variant must fail its guard and
re-trace.
"""
import functools
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pytest

import tracegrad
import tracegrad as tg  # noqa: F401
from .tape_mode import tg  # noqa: F811  (grad etc. with mode="tape")

# -- constants the zoo closes over ----------------------------------------------------------

_K = np.random.default_rng(1234)
W = _K.normal(size=(3, 4))
B = _K.normal(size=4)
W2 = _K.normal(size=(4, 2))
A = _K.normal(size=(3, 3))
C34 = _K.normal(size=(3, 4))
C4 = _K.normal(size=4)
MASK = C34 > 0  # a boolean mask that does not depend on the traced input
W32 = W.astype(np.float32)

Wt, Bt, W2t, At, C34t = (tg.tensor(c, dtype=tg.float64) for c in (W, B, W2, A, C34))


# -- the table ------------------------------------------------------------------------------

@dataclass
class Case:
    """One zoo entry: ``fn`` (NumPy code), ``args(rng)`` builds its arguments, ``alt(rng)``
    builds other values of the same shapes (default: ``args`` with another seed), ``tg`` is
    the same math written with tracegrad Tensors. A branch entry's ``side(*args)`` is its
    branch condition in plain NumPy: ``args`` and ``alt`` must disagree on it."""
    name: str
    fn: Callable
    args: Callable
    tg: Callable | None = None
    argnums: object = 0
    alt: Callable | None = None
    jvp: bool = False
    xfail: dict = field(default_factory=dict)  # check name -> why it is expected to fail
    side: Callable | None = None

    @property
    def nums(self):
        return (self.argnums,) if isinstance(self.argnums, int) else tuple(self.argnums)


ZOO = []
CHECKS = ("fd", "cache", "tg", "jvp")


def case(name, args, tg=None, argnums=0, alt=None, jvp=False, xfail=None, side=None):
    """Decorator: register the decorated NumPy function as a zoo entry."""
    def register(fn):
        ZOO.append(Case(name, fn, args, tg, argnums, alt, jvp, xfail or {}, side))
        return fn
    return register


def normal(*shapes, scale=1.0, shift=0.0, dtype=np.float64):
    """An ``args`` factory: one standard-normal array per shape (``()``: a 0-d array)."""
    return lambda rng: tuple((rng.normal(size=s) * scale + shift).astype(dtype) for s in shapes)


def positive(*shapes):
    """Arrays in [0.5, 2): away from zero, for log/prod/division."""
    return lambda rng: tuple(rng.uniform(0.5, 2.0, size=s) for s in shapes)


def floats(*values):
    """Python floats, shifted a little per seed so ``alt`` values differ."""
    return lambda rng: tuple(float(v + 0.1 * rng.uniform()) for v in values)


# Known failures (each listed, with a repro, in the report that added this file).

# -- arithmetic -----------------------------------------------------------------------------

@case("poly", normal(5), tg=lambda x: (x * x + 3.0 * x - 1.0).sum(), jvp=True)
def poly(x):
    return np.sum(x * x + 3.0 * x - 1.0)


@case("rational", normal(5), tg=lambda x: (x / (1.0 + x ** 2)).sum(), jvp=True)
def rational(x):
    return (x / (1.0 + x ** 2)).sum()


@case("softplus", normal(5), tg=lambda x: tg.log(1.0 + tg.exp(x)).sum(), jvp=True)
def softplus(x):
    return np.log(1.0 + np.exp(x)).sum()


@case("trig", normal(5), tg=lambda x: (tg.sin(x) * tg.cos(2.0 * x)).sum())
def trig(x):
    return np.sum(np.sin(x) * np.cos(2.0 * x))


@case("sqrt_square", normal(5), tg=lambda x: tg.sqrt(tg.square(x) + 1.0).sum())
def sqrt_square(x):
    return np.sqrt(np.square(x) + 1.0).sum()


@case("tanh_chain", normal(6), tg=lambda x: tg.tanh(2.0 * tg.tanh(x)).mean(), jvp=True)
def tanh_chain(x):
    return np.tanh(2.0 * np.tanh(x)).mean()


@case("abs_pow", normal(5), tg=lambda x: (tg.abs(x) ** 1.5).sum())
def abs_pow(x):
    return np.sum(np.abs(x) ** 1.5)


@case("max_min_clamp", normal(6))
def max_min_clamp(x):
    return np.maximum(x, 0.1).sum() + np.minimum(x, -0.2).sum()


@case("logaddexp", normal(5))
def logaddexp(x):
    return np.logaddexp(x, 2.0 * x).sum()


@case("neg_reciprocal_rsub", normal(5))
def neg_reciprocal_rsub(x):
    return np.sum(-1.0 / (x ** 2 + 2.0) + (3.0 - x) ** 2)


@case("pow_tensor_exponent", positive(4, 4), argnums=(0, 1))
def pow_tensor_exponent(x, p):
    return (x ** p).sum()


# -- broadcasting ---------------------------------------------------------------------------

@case("bcast_row", normal((3, 4), 4), tg=lambda x, b: tg.tanh(x + b).sum(), argnums=(0, 1))
def bcast_row(x, b):
    return np.tanh(x + b).sum()


@case("bcast_column", normal((3, 4), (3, 1)), tg=lambda x, c: (tg.sin(x) * c).sum(), argnums=(0, 1))
def bcast_column(x, c):
    return (np.sin(x) * c).sum()


@case("bcast_outer_shapes", normal((3, 1), (1, 4), scale=0.5), argnums=(0, 1))
def bcast_outer_shapes(a, b):
    return np.exp(a - b).sum()


@case("bcast_0d", normal((3, 4), ()), tg=lambda x, s: (s * x ** 2).sum(), argnums=(0, 1))
def bcast_0d(x, s):
    return (s * x ** 2).sum()


@case("bcast_python_scalar", normal((2, 3)))
def bcast_python_scalar(x):
    return ((2.5 * x + 1.0) / 4.0 - 0.5 ** x).sum()


# -- reductions -----------------------------------------------------------------------------

@case("sum_axis0", normal((3, 4)), tg=lambda x: (x.sum(dim=0) ** 2).sum(), jvp=True)
def sum_axis0(x):
    return (x.sum(axis=0) ** 2).sum()


@case("sum_keepdims", normal((3, 4)), tg=lambda x: (x * x.sum(dim=1, keepdim=True)).sum())
def sum_keepdims(x):
    return np.sum(x * np.sum(x, axis=1, keepdims=True))


@case("sum_tuple_axis", normal((2, 3, 4)), tg=lambda x: ((x ** 2).sum(dim=(0, 2)) * tg.tensor([1.0, -2.0, 3.0])).sum())
def sum_tuple_axis(x):
    return (np.sum(x ** 2, axis=(0, 2)) * np.array([1.0, -2.0, 3.0])).sum()


@case("mean_negative_axis", normal((3, 4)), tg=lambda x: (x.mean(dim=-1) ** 2).sum())
def mean_negative_axis(x):
    return (np.mean(x, axis=-1) ** 2).sum()


@case("max_axis", normal((3, 4)), tg=lambda x: tg.amax(x, dim=1).sum())
def max_axis(x):
    return x.max(axis=1).sum()


@case("min_all", normal((3, 4)))
def min_all(x):
    return np.min(x) * 3.0


@case("prod_axis", positive((3, 4)), tg=lambda x: x.prod(dim=0).sum())
def prod_axis(x):
    return np.prod(x, axis=0).sum()


@case("std_var", normal((4, 3)), tg=lambda x: x.std(dim=0, correction=0).sum() + x.var(correction=0))
def std_var(x):
    return x.std(axis=0).sum() + np.var(x)


@case("logsumexp_keepdims", normal((3, 4)), tg=lambda x: tg.logsumexp(x, dim=1).sum())
def logsumexp_keepdims(x):
    m = x.max(axis=1, keepdims=True)
    return (np.log(np.exp(x - m).sum(axis=1)) + m[:, 0]).sum()


@case("cumsum", normal(5), tg=lambda x: (tg.cumsum(x, dim=0) ** 2).sum())
def cumsum(x):
    return (np.cumsum(x) ** 2).sum()


@case("cumprod_axis", positive((2, 4)))
def cumprod_axis(x):
    return np.cumprod(x, axis=1).sum()


@case("norm", normal(5), tg=lambda x: tg.norm(x), jvp=True)
def norm(x):
    return np.linalg.norm(x)


# -- matrix products ------------------------------------------------------------------------

@case("dot_vectors", normal(4, 4), tg=lambda x, y: tg.dot(x, y), argnums=(0, 1))
def dot_vectors(x, y):
    return np.dot(x, y)


@case("matmul_closure", normal(3), tg=lambda x: tg.tanh(x @ Wt).sum(), jvp=True)
def matmul_closure(x):
    return np.tanh(x @ W).sum()


@case("matmul_matrices", normal((3, 4), (4, 3)), tg=lambda a, b: ((a @ b) ** 2).sum(), argnums=(0, 1))
def matmul_matrices(a, b):
    return ((a @ b) ** 2).sum()


@case("dot_matvec_method", normal((3, 4)))
def dot_matvec_method(m):
    return np.sin(m.dot(C4)).sum()


@case("quadratic_form", normal(3), tg=lambda x: x @ At @ x, jvp=True)
def quadratic_form(x):
    return x @ A @ x


@case("einsum_matmul", normal((2, 3), (3, 4)), tg=lambda a, b: (tg.einsum("ij,jk->ik", a, b) ** 2).sum(), argnums=(0, 1))
def einsum_matmul(a, b):
    return (np.einsum("ij,jk->ik", a, b) ** 2).sum()


@case("einsum_trace_of_outer", normal(4))
def einsum_trace_of_outer(x):
    return np.einsum("ii->", np.outer(x, np.sin(x)))


@case("einsum_batched", normal((2, 3, 4)))
def einsum_batched(x):
    return np.einsum("bij,bkj->", x, np.tanh(x))


@case("outer", normal(3, 4), tg=lambda x, y: (tg.outer(x, y) * C34t).sum(), argnums=(0, 1))
def outer(x, y):
    return (np.outer(x, y) * C34).sum()


@case("tensordot_pairs", normal((2, 3, 4), (3, 4, 2)), argnums=(0, 1))
def tensordot_pairs(a, b):
    return (np.tensordot(a, b, axes=([1, 2], [0, 1])) ** 2).sum()


@case("tensordot_int_axes", normal((2, 3)), tg=lambda x: tg.tensordot(x, At, dims=1).sum())
def tensordot_int_axes(x):
    return np.tensordot(x, A, axes=1).sum()


@case("inner_vdot", normal(4, 4), argnums=(0, 1))
def inner_vdot(x, y):
    return np.inner(x, y) + np.vdot(x, x * y)


# -- indexing -------------------------------------------------------------------------------

@case("slices", normal((4, 5)), tg=lambda x: (x[1:, ::2] ** 2).sum(), jvp=True)
def slices(x):
    return (x[1:, ::2] ** 2).sum()


@case("int_indices", normal((3, 4)), tg=lambda x: (x[0] * x[-1]).sum() + x[1, 2])
def int_indices(x):
    return np.sum(x[0] * x[-1]) + x[1, 2]


@case("negative_step", normal(6), tg=lambda x: (tg.flip(x[1::2], (0,)) * x[:3]).sum())
def negative_step(x):
    return (x[::-2] * x[:3]).sum()


@case("none_newaxis", normal(4), tg=lambda x: ((x[:, None] - x[None, :]) ** 2).sum())
def none_newaxis(x):
    return ((x[:, None] - x[None, :]) ** 2).sum()


@case("ellipsis", normal((2, 3, 4)))
def ellipsis(x):
    return np.sin(x[..., 0]).sum() * x[0, ..., -1].sum()


@case("int_array_repeats", normal(4), tg=lambda x: (x[tg.tensor([0, 2, 2, 1, 0])] ** 2).sum(), jvp=True)
def int_array_repeats(x):
    return (x[np.array([0, 2, 2, 1, 0])] ** 2).sum()


@case("int_array_pairs", normal((3, 4)))
def int_array_pairs(x):
    return np.exp(x[[0, 2, 2], [1, 1, 3]]).sum()


@case("bool_mask_constant", normal((3, 4)), tg=lambda x: (x[tg.tensor(MASK)] ** 3).sum())
def bool_mask_constant(x):
    return np.sum(x[MASK] ** 3)


@case("bool_mask_traced", normal(6))
def bool_mask_traced(x):
    return np.sum(x[x > 0] ** 2) - x.sum()


@case("where_mask", normal((3, 4)), tg=lambda x: tg.where(C34t > 0, x, x ** 2).sum())
def where_mask(x):
    return np.where(C34 > 0, x, x ** 2).sum()


@case("take_repeats", normal(5))
def take_repeats(x):
    return (np.take(x, [3, 0, 0]) * np.array([1.0, 2.0, 3.0])).sum()


@case("argmax_as_index", normal(5))
def argmax_as_index(x):
    k = int(x.argmax())
    return x[k] * x.sum()


# -- x[i] = v -------------------------------------------------------------------------------

@case("setitem_on_copy", normal(5), jvp=True)
def setitem_on_copy(x):
    y = x.copy()
    y[0] = x[1] * 2.0
    y[3:] = 0.0
    return (y ** 2).sum() + x[0]


@case("setitem_shift", normal(5))
def setitem_shift(x):
    y = np.zeros_like(x)
    y[1:] = x[:-1]
    return (y * x).sum()


@case("setitem_recurrence", normal(5))
def setitem_recurrence(x):
    out = np.zeros_like(x)
    out[0] = x[0]
    for i in range(1, len(x)):
        out[i] = 0.5 * out[i - 1] + np.tanh(x[i])
    return (out ** 2).sum()


@case("setitem_row", normal((3, 4)), jvp=True)
def setitem_row(x):
    y = x * 1.0
    y[1] = y[0] * y[2]
    return np.sin(y).sum()


# -- loops unrolled by tracing --------------------------------------------------------------

@case("for_range", normal(4), tg=lambda x: sum(tg.sin(x * (i + 1)).sum() for i in range(3)))
def for_range(x):
    s = 0.0
    for i in range(3):
        s = s + np.sin(x * (i + 1)).sum()
    return s


@case("for_rows", normal((4, 3)), tg=lambda x: sum(tg.tanh(row @ Wt).sum() for row in x))
def for_rows(x):
    total = 0.0
    for row in x:
        total = total + np.tanh(row @ W).sum()
    return total


@case("iterated_map", normal(3), tg=lambda x: functools.reduce(lambda v, _: tg.tanh(At @ v), range(4), x).sum())
def iterated_map(x):
    v = x
    for _ in range(4):
        v = np.tanh(A @ v)
    return v.sum()


@case("list_then_stack", normal((3, 2)))
def list_then_stack(x):
    rows = [row * (i + 1) for i, row in enumerate(x)]
    return np.cos(np.stack(rows, axis=1)).sum()


# -- data-dependent branches (each side by its own entry; alt takes the other side) ---------

def _branch_sum(x):
    if x.sum() > 0:
        return (x ** 2).sum()
    return np.sin(x).sum()


def _branch_sum_tg(x):
    if x.sum() > 0:
        return (x ** 2).sum()
    return tg.sin(x).sum()


def _halve(x):
    y = x
    while np.abs(y).max() > 1:
        y = y / 2
    return (y ** 2).sum()


def _halve_tg(x):
    y = x
    while y.abs().max() > 1:
        y = y / 2
    return (y ** 2).sum()


_POS, _NEG = normal(5, shift=1.0), normal(5, shift=-1.0)
_BIG, _SMALL = normal(4, scale=5.0, shift=3.0), normal(4, scale=0.1)
_SUM_SIDE, _HALVE_SIDE = (lambda x: x.sum() > 0), (lambda x: np.abs(x).max() > 1)
case("branch_sum_true", _POS, tg=_branch_sum_tg, alt=_NEG, jvp=True, side=_SUM_SIDE)(_branch_sum)
case("branch_sum_false", _NEG, tg=_branch_sum_tg, alt=_POS, jvp=True, side=_SUM_SIDE)(_branch_sum)
case("while_halve_taken", _BIG, tg=_halve_tg, alt=_SMALL, side=_HALVE_SIDE)(_halve)
case("while_halve_skipped", _SMALL, tg=_halve_tg, alt=_BIG, side=_HALVE_SIDE)(_halve)


def _branch_item(x):
    if tg.stop_gradient(x.max()).item() > 0.5:
        return np.exp(x).sum()
    return (x * 3.0).sum()


_HIGH, _LOW = normal(4, scale=0.1, shift=1.5), normal(4, scale=0.1, shift=-1.0)
def _item_side(x):
    return x.max() > 0.5


case("branch_item_true", _HIGH, alt=_LOW, side=_item_side)(_branch_item)
case("branch_item_false", _LOW, alt=_HIGH, side=_item_side)(_branch_item)


def _branch_in_loop(x):
    s = 0.0
    for row in x:
        if row.sum() > 0:
            s = s + np.sin(row).sum()
        else:
            s = s - row @ row
    return s


def _mixed(rng):
    """Rows with sums of sign (+, -, +): the loop takes both sides in one call."""
    return (rng.uniform(0.2, 1.0, (3, 3)) * np.array([[1.0], [-1.0], [1.0]]),)


def _flipped(rng):
    return (-_mixed(rng)[0],)


case("branch_in_loop", _mixed, alt=_flipped, side=lambda x: tuple(x.sum(axis=1) > 0))(_branch_in_loop)


# -- helpers calling helpers, closures ------------------------------------------------------

def _affine(x, w, b):
    return x @ w + b


def _layer(x):
    return np.tanh(_affine(x, W, B))


def _mlp(x):
    return _affine(_layer(x), W2, 0.5).sum()


def _mlp_tg(x):
    return (tg.tanh(x @ Wt + Bt) @ W2t + 0.5).sum()


case("helpers_mlp", normal((2, 3)), tg=_mlp_tg, jvp=True)(_mlp)


def _softmax(z):
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _cross_entropy(x):
    return -np.log(_softmax(x @ W)[:, 0]).sum()


case("helpers_softmax_xent", normal((2, 3)), tg=lambda x: -tg.log_softmax(x @ Wt, dim=-1)[:, 0].sum())(_cross_entropy)


def _make_quadratic(m, shift):
    def quadratic(x):
        d = x - shift
        return 0.5 * d @ (m @ d)
    return quadratic


case("closure_quadratic", normal(3), tg=_make_quadratic(At, tg.tensor([1.0, 0.0, -1.0])), jvp=True)(
    _make_quadratic(A, np.array([1.0, 0.0, -1.0])))


def _make_loss(weights):
    scale = float(np.abs(weights).sum())

    def loss(x):
        return np.sum(weights * np.log1p(x ** 2)) / scale
    return loss


case("closure_weights", normal(4))(_make_loss(C4))


# -- several arguments -----------------------------------------------------------------------

@case("argnums_0_2", normal(3, 3, 3), tg=lambda x, y, z: (x * y).sum() + (tg.exp(z) * y).sum(), argnums=(0, 2))
def argnums_0_2(x, y, z):
    return np.sum(x * y) + np.sum(np.exp(z) * y)


@case("argnums_1_only", normal((2, 3), (3, 4)), tg=lambda x, w: tg.tanh(x @ w).sum(), argnums=1)
def argnums_1_only(x, w):
    return np.tanh(x @ w).sum()


@case("argnums_negative", normal(3, 3), argnums=(-1,))
def argnums_negative(x, y):
    return np.sum(np.sin(x) * y ** 2)


# -- dtypes and scalar inputs ----------------------------------------------------------------

@case("float32_mlp", normal(3, dtype=np.float32))
def float32_mlp(x):
    return np.tanh(x @ W32).sum()


@case("float32_scalar_ops", normal((2, 3), dtype=np.float32))
def float32_scalar_ops(x):
    return (x * 0.5 + x ** 2).mean() + np.exp(x).max()


@case("float32_pair", normal(4, 4, dtype=np.float32), argnums=(0, 1))
def float32_pair(x, y):
    return np.dot(np.sin(x), y) + np.sum(x * y)


@case("pyfloat_single", floats(0.7), tg=lambda a: tg.sin(a) * a + a ** 2, jvp=True)
def pyfloat_single(a):
    return np.sin(a) * a + a ** 2


@case("pyfloat_pair", floats(0.3, 1.4), tg=lambda a, b: tg.exp(a * b) + tg.log(b), argnums=(0, 1))
def pyfloat_pair(a, b):
    return np.exp(a * b) + np.log(b)


@case("pyfloat_and_array", lambda rng: (float(rng.uniform(0.5, 1.0)), rng.normal(size=3)), argnums=(0, 1))
def pyfloat_and_array(a, x):
    return np.sum(np.tanh(a * x)) * a


@case("zero_d_array", normal(()), tg=lambda x: tg.tanh(x) * x, jvp=True)
def zero_d_array(x):
    return np.tanh(x) * x


@case("numpy_scalar", lambda rng: (np.float64(rng.uniform(0.5, 1.5)),))
def numpy_scalar(x):
    return x ** 3 - np.cos(x)


# -- shape manipulation ----------------------------------------------------------------------

@case("reshape_transpose", normal(12), tg=lambda x: (x.view(3, 4).T @ At).sum() ** 2)
def reshape_transpose(x):
    return (x.reshape(3, 4).T @ A).sum() ** 2


@case("concat_stack", normal(3), tg=lambda x: (tg.cat([x, x ** 2]) * tg.stack([x, -x], dim=1).flatten()).sum())
def concat_stack(x):
    return (np.concatenate([x, x ** 2]) * np.stack([x, -x], axis=1).ravel()).sum()


@case("hstack_vstack", normal(3))
def hstack_vstack(x):
    return np.sin(np.vstack([x, 2 * x])).sum() + (np.hstack([x, x[::-1]]) ** 2).sum()


@case("flip_roll", normal(5))
def flip_roll(x):
    return (np.roll(x, 1) * x).sum() + (np.flip(x) * np.arange(5.0)).sum()


@case("clip", lambda rng: (rng.choice([-1.0, 1.0], 6) * rng.uniform(0.1, 1.5, 6),))
def clip(x):
    return (np.clip(x, -0.5, 0.5) * x).sum()


@case("tril_triu_diagonal", normal((3, 3)), tg=lambda x: (tg.tril(x) ** 2).sum() + tg.triu(x, 1).sum() * tg.diagonal(x).sum())
def tril_triu_diagonal(x):
    return (np.tril(x) ** 2).sum() + np.triu(x, 1).sum() * np.diagonal(x).sum()


@case("axes_moves", normal((2, 3, 1)))
def axes_moves(x):
    y = np.swapaxes(np.squeeze(x, axis=2), 0, 1)
    return (np.moveaxis(np.expand_dims(y, 0), 0, -1)[..., 0] * C34[:, :2]).sum()


@case("split", normal(6))
def split(x):
    a, b = np.split(x, 2)
    return (a * b).sum()


@case("tile_broadcast_to", normal(3))
def tile_broadcast_to(x):
    return (np.tile(x, 2) * np.arange(6.0)).sum() + (np.broadcast_to(x, (2, 3)) ** 2).sum()


@case("trace_method", normal((3, 3)))
def trace_method(x):
    return (x @ x).trace()


# -- helpers for the checks ------------------------------------------------------------------

IDS = [c.name for c in ZOO]


def _params(cases, check):
    """Parametrise over ``cases``, marking the entries known to fail ``check``."""
    out = []
    for c in cases:
        marks = [pytest.mark.xfail(reason=c.xfail[check], strict=True)] if check in c.xfail else []
        out.append(pytest.param(c, id=c.name, marks=marks))
    return out


def _rng(seed):
    return np.random.default_rng(seed)


def _as64(x):
    """``x`` at float64, keeping its kind (Python float, NumPy scalar or array)."""
    if isinstance(x, np.ndarray):
        return x.astype(np.float64)
    if isinstance(x, np.floating):
        return np.float64(x)
    return x


def _rebuild(like, flat):
    """``flat`` (float64 values) in the kind of ``like``."""
    if isinstance(like, np.ndarray):
        return flat.reshape(like.shape)
    if isinstance(like, np.floating):
        return np.float64(flat[0])
    return float(flat[0])


def numeric_grad(fn, args, argnum, h=1e-6):
    """Central differences of scalar ``fn`` in argument ``argnum``, all in float64."""
    args = [_as64(a) for a in args]
    base = np.array(args[argnum], dtype=np.float64).ravel()
    out = np.empty_like(base)
    for k in range(base.size):
        vals = []
        for step in (h, -h):
            moved = base.copy()
            moved[k] += step
            trial = list(args)
            trial[argnum] = _rebuild(args[argnum], moved)
            vals.append(float(fn(*trial)))
        out[k] = (vals[0] - vals[1]) / (2 * h)
    return out.reshape(np.shape(args[argnum]))


def as_tuple(g, c):
    return (g,) if isinstance(c.argnums, int) else tuple(g)


def assert_matches_fd(c, args, grads):
    """Each gradient has its argument's kind, shape and dtype, and matches finite differences."""
    low = any(getattr(args[n], "dtype", None) == np.float32 for n in c.nums)
    rtol, atol = (2e-4, 1e-5) if low else (1e-5, 1e-7)
    assert len(grads) == len(c.nums)
    for n, g in zip(c.nums, grads):
        x = args[n]
        if type(x) is float:  # a Python float gets a Python float back
            assert type(g) is float, type(g)
        else:  # NumPy in (arrays, NumPy scalars): an ndarray out
            assert isinstance(g, np.ndarray), type(g)
            assert np.shape(g) == np.shape(x)
            assert g.dtype == x.dtype, (g.dtype, x.dtype)
        np.testing.assert_allclose(g, numeric_grad(c.fn, args, n), rtol=rtol, atol=atol)


def to_tensor(x, requires_grad=False):
    return tg.tensor(np.asarray(x, dtype=np.float64), dtype=tg.float64, requires_grad=requires_grad)


# -- the checks ------------------------------------------------------------------------------

def test_zoo_is_big_enough():
    """The zoo is meant to be broad: enough entries, tracegrad twins and jvp checks."""
    assert len(ZOO) >= 60
    assert len(set(IDS)) == len(IDS)
    assert sum(c.tg is not None for c in ZOO) >= 25
    assert sum(c.jvp for c in ZOO) >= 15


@pytest.mark.parametrize("c", _params(ZOO, "fd"))
def test_grad_matches_finite_differences(c):
    """The tape gradient of plain NumPy code is the true gradient."""
    args = c.args(_rng(0))
    grads = as_tuple(tg.grad(c.fn, argnums=c.argnums)(*args), c)
    assert_matches_fd(c, args, grads)


@pytest.mark.parametrize("c", _params(ZOO, "cache"))
def test_cached_replay_and_new_values(c):
    """A second call with the same values replays the compiled variant (no re-trace) and
    agrees with the first; new values of the same shapes (for branch entries: values that
    take the other side) still get correct gradients."""
    traces = []

    @functools.wraps(c.fn)
    def counted(*args):
        traces.append(1)
        return c.fn(*args)

    g = tg.grad(counted, argnums=c.argnums)
    assert g.mode == "tape"
    args = c.args(_rng(0))
    first = as_tuple(g(*args), c)
    n_traces = len(traces)
    second = as_tuple(g(*args), c)
    assert len(traces) == n_traces, "the second call re-traced instead of replaying"
    for a, b in zip(first, second):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-15)
    new = (c.alt or c.args)(_rng(1))
    assert_matches_fd(c, new, as_tuple(g(*new), c))
    if c.alt is not None:
        assert len(traces) > n_traces, "the other side of the branch replayed a stale variant"
        n_traces = len(traces)
    assert_matches_fd(c, args, as_tuple(g(*args), c))  # the first variant is still right
    if c.alt is not None:
        assert len(traces) == n_traces, "the first variant was not kept in the cache"


@pytest.mark.parametrize("c", [pytest.param(c, id=c.name) for c in ZOO if c.alt is not None])
def test_branch_entries_take_both_sides(c):
    """Each branch entry's ``args`` and ``alt`` really go down different sides, so the
    cache test above exercises a failing guard and both branches."""
    assert c.side is not None
    assert c.side(*c.args(_rng(0))) != c.side(*c.alt(_rng(1)))


TG_CASES = [c for c in ZOO if c.tg is not None]


@pytest.mark.parametrize("c", _params(TG_CASES, "tg"))
def test_numpy_tape_grad_equals_eager_tracegrad(c):
    """The NumPy code's tape gradient equals eager ``.backward()`` on the tracegrad twin,
    and ``tracegrad.grad`` of the twin, called with Tensors, returns equal Tensors."""
    args = [_as64(a) for a in c.args(_rng(0))]
    tape = as_tuple(tg.grad(c.fn, argnums=c.argnums)(*args), c)

    leaves = [to_tensor(a, requires_grad=i in c.nums) for i, a in enumerate(args)]
    c.tg(*leaves).backward()
    eager = [leaves[n].grad.numpy() for n in c.nums]

    traced = as_tuple(tg.grad(c.tg, argnums=c.argnums)(*[to_tensor(a) for a in args]), c)
    for t, e, r in zip(tape, eager, traced):
        np.testing.assert_allclose(t, e, rtol=1e-10, atol=1e-12)
        assert isinstance(r, tg.Tensor), type(r)
        np.testing.assert_allclose(r.numpy(), e, rtol=1e-10, atol=1e-12)


JVP_CASES = [c for c in ZOO if c.jvp]


@pytest.mark.parametrize("c", _params(JVP_CASES, "jvp"))
def test_jvp_is_directional_derivative(c):
    """Forward mode agrees with reverse mode: jvp's tangent is <grad f(x), v>."""
    (x,) = c.args(_rng(0))
    v = c.args(_rng(2))[0]
    out, tangent = tracegrad.jvp(c.fn, (x,), (v,))
    np.testing.assert_allclose(out, c.fn(x), rtol=1e-12)
    expected = np.vdot(tg.grad(c.fn)(x), v)
    np.testing.assert_allclose(tangent, expected, rtol=1e-10, atol=1e-12)
