"""cdist and eager einsum against real PyTorch: values, first and second derivatives,
PyTorch's gradient at zero distances and inf-norm ties, and error messages; plus finite
differences that run without PyTorch."""
import math

import numpy as np
import pytest

import tracegrad as tg

from .test_sorting_ops import _same_error

try:
    import torch
except ImportError:  # pragma: no cover
    torch = None

_rng = np.random.default_rng(316)
PS = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, math.inf]


def _grads(lib, fn, arrays, cotangent, create_graph=False):
    ts = [lib.tensor(a, requires_grad=True) for a in arrays]
    out = fn(lib, *ts)
    grads = lib.autograd.grad((out * lib.tensor(cotangent)).sum(), ts, create_graph=create_graph)
    return out, ts, grads


def _check_against_torch(fn, arrays, second_order=True):
    """Value, gradient for a random cotangent and (optionally) the gradient's own
    gradient, in float64, compared with PyTorch's."""
    out_t, _, _ = _grads(torch, fn, arrays, np.ones(()))
    cot = _rng.standard_normal(tuple(out_t.shape))
    o1, x1, g1 = _grads(tg, fn, arrays, cot, create_graph=second_order)
    o2, x2, g2 = _grads(torch, fn, arrays, cot, create_graph=second_order)
    np.testing.assert_allclose(o1.detach().numpy(), o2.detach().numpy(), rtol=1e-10, atol=1e-12)
    assert tuple(o1.shape) == tuple(o2.shape)
    for a, b in zip(g1, g2):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-9, atol=1e-12)
    if not second_order:
        return
    w = [_rng.standard_normal(a.shape) for a in arrays]
    s1 = sum((g * tg.tensor(v)).sum() for g, v in zip(g1, w))
    s2 = sum((g * torch.tensor(v)).sum() for g, v in zip(g2, w))
    if not s2.requires_grad:  # p = 0, 1, inf: piecewise-constant slopes
        return
    h1 = tg.autograd.grad(s1, x1, allow_unused=True)
    h2 = torch.autograd.grad(s2, x2, allow_unused=True)
    for a, b in zip(h1, h2):
        if b is None:
            continue
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-8, atol=1e-10)


def _cdist(p):
    def fn(lib, a, b):
        if lib is torch:
            return torch.cdist(a, b, p, compute_mode="donot_use_mm_for_euclid_dist")
        return tg.cdist(a, b, p)
    return fn


# -- cdist -----------------------------------------------------------------------------------------

@pytest.mark.torch
@pytest.mark.parametrize("p", PS)
@pytest.mark.parametrize("s1,s2", [((3, 4), (5, 4)), ((2, 3, 2), (2, 4, 2)), ((2, 1, 3, 2), (3, 4, 2)),
                                   ((1, 3), (2, 3)), ((0, 3), (2, 3)), ((3, 0), (2, 0))])
def test_cdist_matches_torch(p, s1, s2):
    # PyTorch has no second derivative of cdist ("the derivative for '_cdist_backward' is not
    # implemented"); ours is checked by finite differences in tests/rules/test_table.py
    _check_against_torch(_cdist(p), [_rng.standard_normal(s1), _rng.standard_normal(s2)], second_order=False)


@pytest.mark.torch
@pytest.mark.parametrize("p", PS)
def test_cdist_kinks_match_torch(p):
    """Zero distances (equal rows), zero coordinate differences and inf-norm ties."""
    x = np.array([[0.0, 0.0], [1.0, 1.0], [2.0, -1.0]])
    y = np.array([[0.0, 0.0], [1.0, 2.0], [3.0, 0.0]])
    _check_against_torch(_cdist(p), [x, y], second_order=False)


@pytest.mark.torch
def test_cdist_float32_and_node_name_match_torch():
    a, b = torch.randn(4, 3), torch.randn(2, 3)
    ours = tg.cdist(tg.tensor(a.numpy(), requires_grad=True), tg.tensor(b.numpy()))
    theirs = torch.cdist(a.requires_grad_(), b)
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-5)
    assert ours.dtype == tg.float32 and ours.grad_fn.name() == theirs.grad_fn.name() == "CdistBackward0"


def test_cdist_gradient_by_finite_differences_without_torch():
    x, y = _rng.standard_normal((3, 2)), _rng.standard_normal((4, 2))
    for p in (1.0, 2.0, 3.0):
        a = tg.tensor(x, requires_grad=True)
        tg.cdist(a, tg.tensor(y), p).sum().backward()
        eps, numeric = 1e-6, np.zeros_like(x)
        for idx in np.ndindex(x.shape):
            d = np.zeros_like(x)
            d[idx] = eps
            f = [tg.cdist(tg.tensor(x + s * d), tg.tensor(y), p).sum().item() for s in (1, -1)]
            numeric[idx] = (f[0] - f[1]) / (2 * eps)
        np.testing.assert_allclose(a.grad.numpy(), numeric, rtol=1e-5, atol=1e-8)


def test_cdist_zero_distance_has_zero_gradient_without_torch():
    a = tg.tensor([[1.0, 2.0]], requires_grad=True)
    tg.cdist(a, tg.tensor([[1.0, 2.0]])).sum().backward()
    assert a.grad.tolist() == [[0.0, 0.0]]


@pytest.mark.torch
@pytest.mark.parametrize("call", [
    lambda L: L.cdist(L.ones(3, 4), L.ones(5, 4), p=-1),
    lambda L: L.cdist(L.ones(3, 4), L.ones(5, 4), compute_mode="fast"),
    lambda L: L.cdist(L.ones(3, 4), L.ones(5, 3)),
    lambda L: L.cdist(L.ones(3), L.ones(5, 3)),
    lambda L: L.cdist(L.ones(3, 3), L.ones(5)),
    lambda L: L.cdist(L.ones(3, 4, dtype=L.float64), L.ones(5, 4)),
    lambda L: L.cdist(L.ones(3, 4, dtype=L.int64), L.ones(5, 4, dtype=L.int64))])
def test_cdist_errors_match_torch(call):
    _same_error(call)


# -- einsum (eager) --------------------------------------------------------------------------------

EINSUM = [
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]), ("ii->", [(3, 3)]), ("ii->i", [(3, 3)]), ("i,j->ij", [(3,), (4,)]),
    ("...ij,...jk->...ik", [(2, 1, 3, 4), (5, 4, 2)]), ("i,i->", [(4,), (4,)]), ("ij->ji", [(2, 3)]),
    ("ij->", [(2, 3)]), ("bhqd,bhkd->bhqk", [(2, 2, 3, 4), (2, 2, 5, 4)]), ("i,i,i->", [(3,), (3,), (3,)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)]), ("...i,...i", [(2, 3), (3,)]), ("ba", [(2, 3)]),
    ("iij->j", [(3, 3, 2)]), ("ij,kj->ik", [(2, 3), (4, 3)]), ("i,i->i", [(3,), (1,)]),
    ("bi,bi->b", [(0, 3), (0, 3)]), ("ij,j->i", [(2, 3), (3,)]), ("a...b->...", [(2, 3, 4)]),
    ("b i d, b j d -> b i j", [(2, 3, 4), (2, 5, 4)]),
]


@pytest.mark.torch
@pytest.mark.parametrize("equation,shapes", EINSUM, ids=[e for e, _ in EINSUM])
def test_einsum_matches_torch(equation, shapes):
    arrays = [_rng.standard_normal(s) for s in shapes]
    _check_against_torch(lambda L, *ts: L.einsum(equation, *ts), arrays,
                         second_order=not any(0 in s for s in shapes))


@pytest.mark.torch
def test_einsum_repeated_operands_and_sublists_match_torch():
    x = _rng.standard_normal((3, 4))
    _check_against_torch(lambda L, a: L.einsum("ij,ij->", a, a), [x])
    _check_against_torch(lambda L, a: L.einsum(a, [0, 1], a, [0, 2], [1, 2]), [x])
    _check_against_torch(lambda L, a: L.einsum("ij,kj->ik", [a, a]), [x])


@pytest.mark.torch
@pytest.mark.parametrize("call", [
    lambda L: L.einsum("ij,jk", L.ones(2, 3)), lambda L: L.einsum("ij->k", L.ones(2, 3)),
    lambda L: L.einsum("i->ii", L.ones(2, 3)), lambda L: L.einsum("i,i", L.ones(2), L.ones(2, dtype=L.float64))])
def test_einsum_errors_match_torch(call):
    _same_error(call)


def test_einsum_trace_and_outer_without_torch():
    m = tg.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    t = tg.einsum("ii->", m)
    t.backward()
    assert t.item() == 5.0 and m.grad.tolist() == [[1.0, 0.0], [0.0, 1.0]]
    assert tg.einsum("i,j->ij", tg.tensor([1.0, 2.0]), tg.tensor([3.0])).tolist() == [[3.0], [6.0]]


# -- the staged paths (tape and AST) run the same rules ----------------------------------------------

_Y = _rng.standard_normal((4, 3))


def _topk_sum(x):
    return tg.topk(x, 2).values.sum()


def _kth_scaled(x):
    return (tg.kthvalue(x, 2).values * 3).sum()


def _sort_weighted(x):
    return (tg.sort(x, 1, descending=True).values * np.arange(3)).sum()


def _cdist_sum(x):
    return tg.cdist(x, _Y, 3.0).sum()


@pytest.mark.parametrize("mode", ["tape", "ast"])
@pytest.mark.parametrize("fn", [_topk_sum, _kth_scaled, _sort_weighted, _cdist_sum])
def test_staged_gradients_match_eager(fn, mode):
    x = np.array([[3.0, 1.0, 2.0], [0.5, 4.0, 1.5]])
    t = tg.tensor(x, requires_grad=True)
    fn(t).backward()
    np.testing.assert_allclose(np.asarray(tg.grad(fn, mode=mode)(x)), t.grad.numpy(), rtol=1e-12)
