"""PyTorch's array-building and rearranging functions, tracegrad against real PyTorch
(the oracle): values, integer outputs (sort indices), gradients for a random cotangent,
and second derivatives (the gradient's own gradient, through ``create_graph=True``)."""
import numpy as np
import pytest

import tracegrad as tg
from tracegrad.ops.arrays import linalg_cross

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

_rng = np.random.default_rng(2026)


def _values(*shape):
    return _rng.standard_normal(shape)


CASES = {
    "kron": (lambda L, a, b: L.kron(a, b), [(2, 3), (2, 2)]),
    "kron_ranks": (lambda L, a, b: L.kron(a, b), [(3,), (2, 2)]),
    "cross": (lambda L, a, b: L.cross(a, b, dim=1), [(4, 3), (4, 3)]),
    "cross_broadcast": (lambda L, a, b: (L.linalg.cross if L is torch else linalg_cross)(a, b),
                        [(1, 3), (2, 3)]),
    "diff": (lambda L, a: L.diff(a, n=2, dim=0), [(5, 3)]),
    "diff_edges": (lambda L, a, p, q: L.diff(a, dim=1, prepend=p, append=q), [(2, 3), (2, 1), (2, 2)]),
    "diff_method": (lambda L, a: a.diff(), [(4,)]),
    "rot90": (lambda L, a: L.cat([L.rot90(a, k, d).reshape(-1) for k, d in
                                  ((1, (0, 1)), (2, (0, 1)), (3, (1, 0)), (-1, (0, 2)))]), [(2, 3, 4)]),
    "diag_vector": (lambda L, a: L.diag(a, 1) + L.diag(a[1:], -2), [(3,)]),
    "diag_matrix": (lambda L, a: L.cat([L.diag(a), L.diag(a, 2), L.diag(a, -1)]), [(3, 4)]),
    "diag_embed": (lambda L, a: L.diag_embed(a, 1, 0, 2), [(2, 3)]),
    "diag_embed_default": (lambda L, a: L.diag_embed(a), [(2, 3, 2)]),
    "diagflat": (lambda L, a: L.diagflat(a, -1), [(2, 2)]),
    "trace": (lambda L, a: a.trace(), [(3, 4)]),
    "tile": (lambda L, a: L.tile(a, (2, 1, 2)), [(2, 3)]),
    "tile_short": (lambda L, a: a.tile(2), [(2, 3)]),
    "repeat_interleave": (lambda L, a: L.cat([L.repeat_interleave(a, 2).reshape(-1),
                                              a.repeat_interleave(L.tensor([1, 0, 3]), dim=1).reshape(-1)]),
                          [(2, 3)]),
    "block_diag": (lambda L, a, b, c: L.block_diag(a, b, c), [(2, 2), (3,), ()]),
    "atleast": (lambda L, a, b: L.cat([t.reshape(-1) for t in (*L.atleast_3d(a, b), L.atleast_2d(a),
                                                                  L.atleast_1d(b))]), [(), (3,)]),
    "stacks": (lambda L, a, b: L.cat([L.hstack([a, b]).reshape(-1), L.vstack([a, b]).reshape(-1),
                                      L.dstack([a, b]).reshape(-1), L.row_stack([a, b]).reshape(-1)]),
               [(2, 3), (2, 3)]),
    "stacks_1d": (lambda L, a, b: L.cat([L.hstack([a, b]), L.vstack([a, b]).reshape(-1),
                                         L.column_stack([a, b, a]).reshape(-1)]), [(3,), (3,)]),
    "tensor_split": (lambda L, a: L.cat([p.reshape(-1) * (k + 1) for k, p in
                                         enumerate(L.tensor_split(a, 3, dim=1) + L.tensor_split(a, [1, 4, 9], 1))]),
                     [(2, 5)]),
    "hvd_split": (lambda L, a: L.cat([p.reshape(-1) * (k + 1) for k, p in
                                      enumerate(L.hsplit(a, 2) + L.vsplit(a, [1]) + L.dsplit(a, 2))]),
                  [(2, 4, 2)]),
    "flips_axes": (lambda L, a: L.cat([L.fliplr(a).reshape(-1), L.flipud(a).reshape(-1),
                                       L.moveaxis(a, 0, 2).reshape(-1), L.swapaxes(a, 0, 1).reshape(-1)]),
                   [(2, 3, 2)]),
    "sort": (lambda L, a: L.sort(a, dim=0), [(4, 3)]),
    "sort_descending": (lambda L, a: L.sort(a, descending=True, stable=True), [(3, 5)]),
    "argsort_msort": (lambda L, a: (L.argsort(a, dim=1), L.msort(a), a.argsort(descending=True)), [(3, 4)]),
    "topk": (lambda L, a: L.topk(a, 2, dim=1), [(3, 4)]),
    "topk_smallest": (lambda L, a: a.topk(3, largest=False), [(5,)]),
    "take": (lambda L, a: L.take(a, L.tensor([[0, 5], [11, 5]])), [(3, 4)]),
    "take_along_dim": (lambda L, a: L.take_along_dim(a, L.argsort(a, dim=1), dim=1), [(3, 4)]),
}


def _both(shapes):
    arrays = [_values(*s) for s in shapes]
    mine = [tg.tensor(a, requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    return mine, theirs


def _outputs(out):
    return list(out) if isinstance(out, tuple) else [out]


def _as_numpy(t):
    return t.detach().numpy() if hasattr(t, "detach") else np.asarray(t)


@pytest.mark.parametrize("name", sorted(CASES))
def test_values_and_gradients_match_torch(name):
    fn, shapes = CASES[name]
    mine, theirs = _both(shapes)
    got, want = _outputs(fn(tg, *mine)), _outputs(fn(torch, *theirs))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert tuple(g.shape) == tuple(w.shape)
        np.testing.assert_allclose(_as_numpy(g), _as_numpy(w), rtol=1e-12, atol=1e-12)
        assert _as_numpy(g).dtype == _as_numpy(w).dtype
    floats = [(g, w) for g, w in zip(got, want) if w.dtype.is_floating_point]
    cots = [_values(*w.shape) for _, w in floats]
    g_mine = tg.autograd.grad([g for g, _ in floats], mine, [tg.tensor(c) for c in cots], allow_unused=True)
    g_theirs = torch.autograd.grad([w for _, w in floats], theirs, [torch.tensor(c) for c in cots],
                                   allow_unused=True)
    for a, b in zip(g_mine, g_theirs):
        if b is None:
            assert a is None or not np.any(_as_numpy(a))
        else:
            np.testing.assert_allclose(_as_numpy(a), _as_numpy(b), rtol=1e-12, atol=1e-12)


SECOND = ["kron", "cross", "diff_edges", "rot90", "diag_embed", "tile", "repeat_interleave", "block_diag",
          "sort", "topk", "tensor_split"]


@pytest.mark.parametrize("name", SECOND)
def test_second_derivatives_match_torch(name):
    """sum(sin(f(x)) * w) differentiated twice: the gradient's gradient along a direction."""
    fn, shapes = CASES[name]
    mine, theirs = _both(shapes)
    results = []
    for lib, xs in ((tg, mine), (torch, theirs)):
        out = [o for o in _outputs(fn(lib, *xs)) if o.dtype.is_floating_point][0]
        w = lib.tensor(np.cos(np.arange(out.numel())).reshape(tuple(out.shape)))
        loss = (lib.sin(out) * w).sum()
        grads = lib.autograd.grad(loss, xs, create_graph=True, allow_unused=True)
        v = [lib.tensor(np.sin(np.arange(x.numel()) + 1.0).reshape(tuple(x.shape))) for x in xs]
        total = sum((g * d).sum() for g, d in zip(grads, v) if g is not None)
        results.append([_as_numpy(h) if h is not None else None
                        for h in lib.autograd.grad(total, xs, allow_unused=True)])
    for a, b in zip(*results):
        if b is None or a is None:
            assert (a is None or not np.any(a)) and (b is None or not np.any(b))
        else:
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("call", [
    lambda L, a: L.diag(a.reshape(1, 2, 3)),
    lambda L, a: L.rot90(a, 1, (0, 0)),
    lambda L, a: L.hsplit(a[0], 4),
    lambda L, a: L.block_diag(a.reshape(1, 2, 3)),
    lambda L, a: L.repeat_interleave(a, L.tensor([1, 2])),
    lambda L, a: L.linalg.cross(a.T, a.T) if L is torch else linalg_cross(a.T, a.T),
    lambda L, a: L.linalg.cross(a[0], a) if L is torch else linalg_cross(a[0], a),
    lambda L, a: a.reshape(6).trace(),
])
def test_errors_where_torch_errs(call):
    a_mine, a_theirs = tg.tensor(_values(2, 3)), torch.tensor(_values(2, 3))
    with pytest.raises(Exception):
        call(torch, a_theirs)
    with pytest.raises((RuntimeError, IndexError, ValueError)):
        call(tg, a_mine)
