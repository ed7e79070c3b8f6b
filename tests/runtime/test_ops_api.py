"""Spot checks of the torch-style ops API: values, gradients and error messages."""
import math

import numpy as np
import pytest

from ._helpers import assert_same, raises_like, src_id, tg

_RNG = np.random.default_rng(1234)
A34 = _RNG.standard_normal((3, 4))
A234 = _RNG.standard_normal((2, 3, 4))
POS34 = _RNG.uniform(0.5, 2.0, (3, 4))
B34 = _RNG.standard_normal((3, 4))


def _leaf(a, L=None):
    L = L or tg
    return L.tensor(np.array(a, dtype=np.float64), requires_grad=True)


def _weights(shape):
    n = int(np.prod(shape))
    return np.cos(np.arange(n) + 0.5).reshape(shape)


def _fwd_bwd(L, fn, arrays):
    """Run fn(L, *leaves); weight every float output by fixed weights, backprop, and return
    (outputs, leaf grads)."""
    leaves = [_leaf(a, L) for a in arrays]
    out = fn(L, *leaves)
    outs = out if isinstance(out, (tuple, list)) else (out,)
    loss = None
    for o in outs:
        if o.requires_grad:
            term = (o * L.tensor(_weights(tuple(o.shape)), dtype=o.dtype)).sum()
            loss = term if loss is None else loss + term
    if loss is not None:
        loss.backward()
    return [o.detach() for o in outs], [x.grad for x in leaves]


# id, fn(L, *leaves), input arrays
CASES = [
    ("sum", lambda L, x: x.sum(), [A234]),
    ("sum_dim", lambda L, x: x.sum(1), [A234]),
    ("sum_neg_keepdim", lambda L, x: x.sum(-1, keepdim=True), [A234]),
    ("sum_dims", lambda L, x: L.sum(x, dim=(0, 2)), [A234]),
    ("sum_neg_dims", lambda L, x: x.sum((-1, -3)), [A234]),
    ("mean", lambda L, x: x.mean(), [A234]),
    ("mean_dims_keepdim", lambda L, x: x.mean((-1, -2), keepdim=True), [A234]),
    ("mean_dim", lambda L, x: L.mean(x, 1), [A234]),
    ("prod", lambda L, x: x.prod(), [POS34]),
    ("prod_dim", lambda L, x: x.prod(1), [A34]),
    ("prod_dim_keepdim", lambda L, x: x.prod(-2, keepdim=True), [A34]),
    ("amax", lambda L, x: x.amax(1), [A234]),
    ("amin_dims", lambda L, x: x.amin((0, 1)), [A234]),
    ("max_dim", lambda L, x: tuple(x.max(1)), [A234]),
    ("min_dim_keepdim", lambda L, x: tuple(x.min(-1, keepdim=True)), [A234]),
    ("max_all", lambda L, x: x.max(), [A234]),
    ("min_all", lambda L, x: L.min(x), [A234]),
    ("max_pairwise", lambda L, x, y: L.max(x, y), [A34, B34]),
    ("var", lambda L, x: x.var(), [A234]),
    ("var_dim", lambda L, x: x.var(1), [A234]),
    ("var_unbiased_false", lambda L, x: x.var(1, unbiased=False), [A234]),
    ("var_correction0", lambda L, x: x.var(dim=1, correction=0), [A234]),
    ("var_correction2_keepdim", lambda L, x: x.var(dim=(0, 1), correction=2, keepdim=True), [A234]),
    ("var_legacy_bool", lambda L, x: x.var(False), [A234]),
    ("std", lambda L, x: x.std(), [A234]),
    ("std_dim_keepdim", lambda L, x: x.std(-1, keepdim=True), [A234]),
    ("std_correction0", lambda L, x: L.std(x, dim=(0, 2), correction=0), [A234]),
    ("std_unbiased_false", lambda L, x: x.std(unbiased=False), [A234]),
    ("argmax", lambda L, x: x.argmax(), [A234]),
    ("argmax_dim", lambda L, x: x.argmax(1), [A234]),
    ("argmin_keepdim", lambda L, x: L.argmin(x, -1, keepdim=True), [A234]),
    ("cumsum", lambda L, x: x.cumsum(0), [A234]),
    ("cumsum_neg", lambda L, x: L.cumsum(x, -1), [A234]),
    ("cumprod", lambda L, x: x.cumprod(1), [A34]),
    ("cumprod_with_zero", lambda L, x: x.cumprod(1), [np.array([[1.0, 0.0, 2.0, 3.0], [0.5, 2.0, 0.0, 0.0]])]),
    ("logsumexp", lambda L, x: x.logsumexp(1), [A234]),
    ("logsumexp_dims_keepdim", lambda L, x: L.logsumexp(x, (0, 2), keepdim=True), [A234]),
    ("logsumexp_large", lambda L, x: x.logsumexp(0), [np.array([1000.0, 1000.0, -1000.0])]),
    ("norm", lambda L, x: x.norm(), [A234]),
    ("norm_p1", lambda L, x: x.norm(p=1), [A234]),
    ("norm_inf", lambda L, x: x.norm(p=float("inf")), [A234]),
    ("norm_fro", lambda L, x: x.norm(p="fro"), [A234]),
    ("norm_p2_dim", lambda L, x: x.norm(p=2, dim=1), [A234]),
    ("norm_p1_dim_keepdim", lambda L, x: L.norm(x, p=1, dim=-1, keepdim=True), [A234]),
    ("norm_p3", lambda L, x: x.norm(p=3, dim=0), [A34]),
    ("cat0", lambda L, x, y: L.cat([x, y]), [A34, B34]),
    ("cat1", lambda L, x, y: L.cat((x, y, x), dim=1), [A34, B34]),
    ("cat_neg", lambda L, x, y: L.cat([x, y[:2]], dim=-2), [A34, B34]),
    ("cat_empty_1d", lambda L, x: L.cat([x, L.tensor([], dtype=L.float64)]), [A34[0]]),
    ("stack0", lambda L, x, y: L.stack([x, y]), [A34, B34]),
    ("stack_neg", lambda L, x, y: L.stack([x, y], dim=-1), [A34, B34]),
    ("stack1", lambda L, x, y: L.stack((x, y), 1), [A34, B34]),
    ("split", lambda L, x: x.split(3, dim=1), [A34]),
    ("split_sizes", lambda L, x: L.split(x, [1, 2], 0), [A34]),
    ("chunk", lambda L, x: x.chunk(3, -1), [A34]),
    ("unbind", lambda L, x: x.unbind(1), [A34]),
    ("index_int", lambda L, x: x[1], [A234]),
    ("index_slices", lambda L, x: x[:, 1:3, ::2], [A234]),
    ("index_ellipsis_none", lambda L, x: x[..., None, 1], [A234]),
    ("index_tensor", lambda L, x: x[L.tensor([2, 0])], [A34]),
    ("index_repeated", lambda L, x: x[L.tensor([0, 0, 1, 0])], [A34]),
    ("index_list_repeated", lambda L, x: x[[1, 1, 2]], [A34]),
    ("index_2d_index", lambda L, x: x[L.tensor([[0, 1], [1, 0]])], [A34]),
    ("index_pair", lambda L, x: x[L.tensor([0, 2, 0]), L.tensor([1, 3, 1])], [A34]),
    ("index_pair_broadcast", lambda L, x: x[L.tensor([[0], [2]]), L.tensor([1, 3])], [A34]),
    ("index_bool", lambda L, x: x[x.detach() > 0], [A34]),
    ("index_bool_row", lambda L, x: x[L.tensor([True, False, True])], [A34]),
    ("index_mixed_slice_tensor", lambda L, x: x[:, L.tensor([3, 0, 3])], [A34]),
    ("index_mixed_int_tensor", lambda L, x: x[1, L.tensor([0, 2, 2])], [A234]),
    ("index_mixed_separated", lambda L, x: x[L.tensor([0, 1]), :, L.tensor([2, 2])], [A234]),
    ("index_mixed_adjacent", lambda L, x: x[:, L.tensor([0, 2]), L.tensor([1, 3])], [A234]),
    ("index_neg_tensor", lambda L, x: x[L.tensor([-1, -3])], [A34]),
    ("index_bool_mask_2d_of_3d", lambda L, x: x[L.tensor([[True, False, True], [False, True, False]])], [A234]),
    ("gather", lambda L, x: x.gather(1, L.tensor([[0, 0], [3, 1], [2, 2]])), [A34]),
    ("gather_dim0", lambda L, x: L.gather(x, 0, L.tensor([[2, 1, 0, 0]])), [A34]),
    ("scatter", lambda L, x, s: x.scatter(1, L.tensor([[0, 3], [1, 2], [2, 1]]), s[:, :2]), [A34, B34]),
    ("scatter_add", lambda L, x, s: x.scatter_add(1, L.tensor([[0, 0], [1, 1], [3, 3]]), s[:, :2]), [A34, B34]),
    ("scatter_value", lambda L, x: x.scatter(0, L.tensor([[1, 0, 2, 1]]), 5.0), [A34]),
    ("index_select", lambda L, x: x.index_select(1, L.tensor([3, 3, 0])), [A34]),
    ("index_select_fn", lambda L, x: L.index_select(x, 0, L.tensor([2])), [A34]),
    ("masked_fill", lambda L, x: x.masked_fill(x.detach() > 0.5, -1.0), [A34]),
    ("masked_fill_broadcast", lambda L, x: x.masked_fill(L.tensor([True, False, False, True]), 0.0), [A34]),
    ("where", lambda L, x, y: L.where(x.detach() > y.detach(), x, y), [A34, B34]),
    ("where_scalar", lambda L, x: L.where(x.detach() > 0, x, 0.0), [A34]),
    ("where_broadcast", lambda L, x, y: L.where(L.tensor([True, False, True, False]), x, y[0]), [A34, B34]),
    ("clamp", lambda L, x: x.clamp(-0.5, 0.5), [A34]),
    ("clamp_min", lambda L, x: x.clamp(min=0.0), [A34]),
    ("clamp_max", lambda L, x: L.clamp(x, max=0.1), [A34]),
    ("clamp_min_fn", lambda L, x: L.clamp_min(x, 0.2), [A34]),
    ("clamp_max_fn", lambda L, x: x.clamp_max(-0.2), [A34]),
    ("clamp_at_boundary", lambda L, x: x.clamp(0.0, 1.0), [np.array([0.0, 0.5, 1.0, 2.0, -1.0])]),
    ("clamp_min_gt_max", lambda L, x: x.clamp(1.0, 0.0), [A34]),
    ("clamp_tensor_bounds", lambda L, x, lo: x.clamp(min=lo), [A34, B34]),
    ("clip", lambda L, x: x.clip(-1, 1), [A34]),
    ("maximum", lambda L, x, y: L.maximum(x, y), [A34, B34]),
    ("minimum", lambda L, x, y: x.minimum(y), [A34, B34]),
    ("abs", lambda L, x: x.abs(), [A34]),
    ("broadcast_mul", lambda L, x, y: x[:, :1] * y[0], [A34, B34]),
    ("broadcast_add_3d", lambda L, x, y: x + y, [A234, B34]),
    ("broadcast_div_0d", lambda L, x, y: x / (y[0, 0] + 3.0), [A34, B34]),
    ("pow_tensor", lambda L, x, y: x.abs().pow(y), [POS34, B34]),
    ("rtruediv", lambda L, x: 2.0 / x, [POS34]),
    ("rsub", lambda L, x: 1.0 - x, [A34]),
    ("floor_div_values", lambda L, x: x.detach() // 0.3, [A34]),
    ("remainder_values", lambda L, x: x.detach() % 0.7, [A34]),
    ("trig", lambda L, x: x.sin() * x.cos() + x.tanh(), [A34]),
    ("exp_log", lambda L, x: x.exp().log1p() + x.abs().sqrt(), [A34]),
    ("flip", lambda L, x: x.flip(0), [A34]),
    ("roll", lambda L, x: x.roll(1, 1), [A34]),
    ("repeat", lambda L, x: x.repeat(2, 1), [A34]),
    ("tril", lambda L, x: x.tril(), [A34]),
    ("triu_offset", lambda L, x: x.triu(1), [A34]),
    ("squeeze_unsqueeze", lambda L, x: x.unsqueeze(1).squeeze(), [A34]),
    ("expand_sum", lambda L, x: x[:1].expand(5, 4), [A34]),
]
CASE_IDS = [c[0] for c in CASES]


@pytest.mark.torch
@pytest.mark.parametrize("fn,arrays", [(c[1], c[2]) for c in CASES], ids=CASE_IDS)
def test_oracle_values_and_gradients(fn, arrays):
    torch = pytest.importorskip("torch")
    mine = _fwd_bwd(tg, fn, arrays)
    theirs = _fwd_bwd(torch, fn, arrays)
    assert_same(mine, theirs, rtol=1e-7, atol=1e-10)


@pytest.mark.torch
@pytest.mark.parametrize("prog", [
    lambda L: L.tensor([1.0, 3.0, 3.0]),
    lambda L: L.tensor([[2.0, 2.0], [1.0, 2.0]]),
], ids=["vector", "matrix"])
def test_oracle_ties_in_max_min(prog):
    torch = pytest.importorskip("torch")

    def run(L):
        out = {}
        for name, f in (("max", lambda x: x.max()), ("min", lambda x: x.min()), ("amax", lambda x: x.amax()),
                        ("amax0", lambda x: x.amax(0)), ("max_dim_values", lambda x: x.max(0)[0]),
                        ("argmax", lambda x: x.argmax()), ("argmin", lambda x: x.argmin())):
            x = prog(L).requires_grad_()
            r = f(x)
            if r.requires_grad:
                r.sum().backward()
            out[name] = (r.detach(), x.grad)
        x = prog(L)
        out["max_dim_indices"] = x.max(0).indices
        return out
    assert_same(run(tg), run(torch))


@pytest.mark.torch
@pytest.mark.parametrize("prog", [
    lambda L: L.tensor([1, 2, 3]) < L.tensor([3, 2, 1]),
    lambda L: L.tensor([1.0, 2.0]) == 2,
    lambda L: L.tensor([1.0, float("nan")]) != L.tensor([1.0, float("nan")]),
    lambda L: L.tensor([[1.0], [2.0]]) >= L.tensor([1.0, 2.0, 3.0]),
    lambda L: L.ge(L.tensor([1, 5]), 3),
    lambda L: L.tensor([1, 2]).gt(1.5),
    lambda L: L.tensor([1.0, 2.0]).le(L.tensor(1.5)),
    lambda L: L.eq(L.tensor([True, False]), L.tensor([True, True])),
    lambda L: L.tensor([1, 2]) == L.tensor([1.0, 2.5]),
    lambda L: L.logical_and(L.tensor([True, False]), L.tensor([1, 1])),
    lambda L: L.logical_not(L.tensor([0.0, 2.0])),
    lambda L: ~L.tensor([True, False]),
    lambda L: L.tensor([True, False]) & L.tensor([True, True]),
    lambda L: L.tensor([0b1100]) | 0b0011,
    lambda L: L.isnan(L.tensor([1.0, float("nan")])),
    lambda L: L.isinf(L.tensor([1.0, -float("inf")])),
    lambda L: L.tensor([1.0, 2.0]).all(),
    lambda L: L.tensor([[True, False], [True, True]]).all(1),
    lambda L: L.tensor([[0, 0], [0, 3]]).any(0),
    lambda L: L.tensor([[1.0, 0.0], [0.0, 3.0]]).count_nonzero(),
    lambda L: L.tensor([[1.0, 0.0], [0.0, 3.0]]).nonzero(),
    lambda L: L.where(L.tensor([[1.0, 0.0], [0.0, 3.0]]) > 0),
    lambda L: L.tensor([1.0, 2.0]).masked_select(L.tensor([False, True])),
    lambda L: L.tensor([3, 1, 2]).sign(),
    lambda L: L.tensor([-7, 7]) // 2,
    lambda L: L.tensor([-7, 7]) % 3,
    lambda L: L.tensor([-7.5, 7.5]) % 2,
    lambda L: L.tensor([2, 3]) ** 2,
    lambda L: L.tensor([1.5, 2.5, -0.5]).round(),
    lambda L: L.tensor([1.27, 2.5]).round(decimals=1),
    lambda L: L.tensor([1, 2, 3]).sum(0, keepdim=True),
    lambda L: L.tensor([[1, 2], [3, 4]]).prod(1),
    lambda L: L.tensor([1.0, 2.0]).equal(L.tensor([1.0, 2.0])),
    lambda L: L.allclose(L.tensor([1.0, 2.0]), L.tensor([1.0, 2.0 + 1e-9])),
    lambda L: L.isclose(L.tensor([1.0, 2.0]), L.tensor([1.1, 2.0])),
    lambda L: L.tensor([[1.0, 2.0], [3.0, 4.0]]).aminmax(),
    lambda L: L.var_mean(L.tensor([[1.0, 2.0], [3.0, 5.0]]), 1),
    lambda L: L.std_mean(L.tensor([[1.0, 2.0], [3.0, 5.0]]), dim=0, correction=0),
    lambda L: L.tensor([[1.0, 2.0], [3.0, 5.0]]).max(dim=1, keepdim=True).indices,
    lambda L: L.tensor([]).sum(),
    lambda L: L.zeros(0, 3).sum(0),
    lambda L: L.zeros(0, 3).mean(0),
    lambda L: L.tensor([1.0, float("nan")]).nansum(),
    lambda L: L.broadcast_tensors(L.ones(2, 1), L.ones(3)),
    lambda L: L.broadcast_shapes((2, 1), (1, 3)),
    lambda L: L.hstack([L.ones(2), L.zeros(1)]),
    lambda L: L.vstack([L.ones(2), L.zeros(2)]),
    lambda L: L.arange(6).reshape(2, 3).movedim(0, 1),
    lambda L: L.take_along_dim(L.tensor([[10, 30, 20]]), L.tensor([[2, 0]]), dim=1),
], ids=src_id)
def test_oracle_non_differentiable_results(prog):
    torch = pytest.importorskip("torch")
    assert_same(prog(tg), prog(torch))


@pytest.mark.torch
@pytest.mark.parametrize("prog", [
    lambda L: L.ones(2, 3) + L.ones(2, 4),
    lambda L: L.ones(3) * L.ones(4),
    lambda L: L.ones(2, 3, 4) - L.ones(5, 1),
    lambda L: L.where(L.ones(3) > 0, L.ones(3), L.ones(2)),
    lambda L: L.cat([L.ones(2, 3), L.ones(3, 4)]),
    lambda L: L.cat([L.ones(2, 3), L.ones(2)]),
    lambda L: L.cat([]),
    lambda L: L.stack([L.ones(2, 3), L.ones(3, 2)]),
    lambda L: L.stack([]),
    lambda L: L.ones(3).split([1, 1]),
    lambda L: L.ones(3).chunk(0),
    lambda L: L.ones(2, 3).sum(2),
    lambda L: L.ones(2, 3).mean(-3),
    lambda L: L.ones(2, 3).max(5),
    lambda L: L.ones(2, 3).argmax(2),
    lambda L: L.ones(2, 3).sum((0, 0)),
    lambda L: L.ones(2, 3).gather(1, L.tensor([0, 1])),
    lambda L: L.ones(2, 3).gather(1, L.tensor([[0.0]])),
    lambda L: L.ones(2, 3).index_select(0, L.tensor([0.0])),
    lambda L: L.ones(2, 3).index_select(0, L.tensor([[0]])),
    lambda L: L.ones(2, 3).masked_fill(L.ones(2, 3), 0.0),
    lambda L: L.ones(2, 3)[L.tensor([1.5])],
    lambda L: L.ones(2, 3)[L.tensor([[True, False]])],
    lambda L: L.ones(2, 3)[L.tensor([0, 2])],
    lambda L: L.ones(2)[0, 0],
    lambda L: L.ones(3).clamp(),
    lambda L: L.ones(0).max(),
    lambda L: L.tensor([True]) - L.tensor([True]),
    lambda L: -L.tensor([True]),
    lambda L: L.ones(2).item(),
    lambda L: bool(L.ones(2)),
    lambda L: L.ones(2, 3).permute(0, 0),
    lambda L: L.ones(2, 3).flatten(1, 0),
    lambda L: L.ones(2, 3).repeat(2),
    lambda L: L.ones(2, 3).expand(3, 3),
    # a source of another dtype is refused, not cast (float32 self, float64 source)
    lambda L: L.zeros(2, 3).scatter_add(1, L.tensor([[0, 1, 1]] * 2), L.ones(2, 3, dtype=L.float64)),
    lambda L: L.zeros(2, 3).scatter_(1, L.tensor([[0, 1, 1]] * 2), L.ones(2, 3, dtype=L.float64)),
    lambda L: L.zeros(2, 3, dtype=L.float64).scatter(1, L.tensor([[0, 1, 1]] * 2), L.ones(2, 3)),
    lambda L: L.zeros(2, 3).index_add(0, L.tensor([0]), L.ones(1, 3, dtype=L.float64)),
    lambda L: L.zeros(2, 3).index_copy(0, L.tensor([0]), L.ones(1, 3, dtype=L.float64)),
    lambda L: L.zeros(2, 3).index_put((L.tensor([0]),), L.ones(3, dtype=L.float64)),
    lambda L: L.zeros(2, 3).index_put_((L.tensor([0]),), L.ones(3, dtype=L.float64)),
    lambda L: L.zeros(2, 3).masked_scatter(L.ones(2, 3, dtype=L.bool), L.ones(2, 3, dtype=L.float64)),
], ids=src_id)
def test_oracle_error_types_and_messages(prog):
    torch = pytest.importorskip("torch")
    mine, theirs = raises_like(lambda: prog(tg), lambda: prog(torch))
    assert theirs is not None, "the oracle did not raise"
    assert mine is not None, f"tracegrad did not raise; PyTorch raised {type(theirs).__name__}: {theirs}"
    assert isinstance(mine, type(theirs)) or type(mine) is type(theirs), (mine, theirs)
    assert str(mine).replace("tracegrad", "torch") == str(theirs), (str(mine), str(theirs))


# ------------------------------------------------------------------------------ hand-derived


def test_broadcasting_error_names_the_sizes():
    with pytest.raises(RuntimeError, match=r"The size of tensor a \(3\) must match the size of tensor b \(4\) "
                                           r"at non-singleton dimension 1"):
        tg.ones(2, 3) + tg.ones(2, 4)
    with pytest.raises(RuntimeError, match=r"The size of tensor a \(3\) must match the size of tensor b \(4\) "
                                           r"at non-singleton dimension 0"):
        tg.ones(3) * tg.ones(4)


def test_broadcasting_values():
    a = tg.tensor([[1.0], [2.0]])
    b = tg.tensor([10.0, 20.0, 30.0])
    np.testing.assert_array_equal((a + b).numpy(), [[11, 21, 31], [12, 22, 32]])
    assert tuple((tg.ones(2, 1, 4) * tg.ones(3, 1)).shape) == (2, 3, 4)


def test_reduction_shapes_and_negative_dims():
    x = tg.ones(2, 3, 4)
    assert tuple(x.sum(-1).shape) == (2, 3)
    assert tuple(x.sum(-1, keepdim=True).shape) == (2, 3, 1)
    assert tuple(x.sum((0, -1)).shape) == (3,)
    assert tuple(x.mean((1,), keepdim=True).shape) == (2, 1, 4)
    assert x.sum().item() == 24.0
    assert tuple(x.sum(dim=()).shape) == ()
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of \[-3, 2\], but got 3\)"):
        x.sum(3)


def test_sum_and_mean_gradients_hand_derived():
    x = tg.ones(2, 3, dtype=tg.float64, requires_grad=True)
    (x.sum(0) * tg.tensor([1.0, 2.0, 3.0], dtype=tg.float64)).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[1, 2, 3], [1, 2, 3]])
    x.grad = None
    x.mean().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.full((2, 3), 1 / 6))


def test_var_std_hand_derived():
    x = tg.tensor([1.0, 2.0, 3.0, 4.0], dtype=tg.float64)
    assert x.var().item() == pytest.approx(5 / 3)
    assert x.var(unbiased=False).item() == pytest.approx(1.25)
    assert x.var(correction=0).item() == pytest.approx(1.25)
    assert x.var(correction=2).item() == pytest.approx(2.5)
    assert x.std().item() == pytest.approx(math.sqrt(5 / 3))
    assert x.std(0, unbiased=False).item() == pytest.approx(math.sqrt(1.25))


def test_max_min_return_named_tuples():
    x = tg.tensor([[1.0, 5.0, 2.0], [7.0, 3.0, 0.0]])
    r = x.max(1)
    assert isinstance(r, tuple) and len(r) == 2
    assert type(r).__name__ == "max"
    assert r.values.tolist() == [5.0, 7.0] and r.indices.tolist() == [1, 0]
    values, indices = r
    assert values.dtype == tg.float32 and indices.dtype == tg.int64
    m = tg.min(x, dim=0, keepdim=True)
    assert type(m).__name__ == "min"
    assert m.values.tolist() == [[1.0, 3.0, 0.0]] and m.indices.tolist() == [[0, 1, 1]]
    assert r[0] is r.values
    assert x.max().item() == 7.0 and x.min().item() == 0.0


def test_max_dim_gradient_goes_to_the_argmax():
    x = tg.tensor([[1.0, 5.0, 2.0], [7.0, 3.0, 0.0]], requires_grad=True)
    x.max(1).values.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[0, 1, 0], [1, 0, 0]])


def test_max_full_reduction_ties_share_the_gradient():
    x = tg.tensor([1.0, 3.0, 3.0], requires_grad=True)
    x.max().backward()
    np.testing.assert_allclose(x.grad.numpy(), [0.0, 0.5, 0.5])


def test_argmax_argmin():
    x = tg.tensor([[1.0, 5.0, 5.0], [7.0, 3.0, 7.0]])
    assert x.argmax().item() == 3
    assert x.argmax(1).tolist() == [1, 0]  # first occurrence of ties
    assert x.argmin(1, keepdim=True).tolist() == [[0], [1]]
    assert x.argmax().dtype == tg.int64


def test_cumsum_cumprod_values_and_gradients():
    x = tg.tensor([1.0, 2.0, 3.0], dtype=tg.float64, requires_grad=True)
    c = x.cumsum(0)
    assert c.tolist() == [1.0, 3.0, 6.0]
    c.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 2.0, 1.0])
    y = tg.tensor([2.0, 0.0, 3.0], dtype=tg.float64, requires_grad=True)
    p = y.cumprod(0)
    assert p.tolist() == [2.0, 0.0, 0.0]
    p.sum().backward()
    # d/dy0 (y0 + y0 y1 + y0 y1 y2) = 1 + y1 + y1 y2 = 1; d/dy1 = y0 + y0 y2 = 8; d/dy2 = y0 y1 = 0
    np.testing.assert_array_equal(y.grad.numpy(), [1.0, 8.0, 0.0])


def test_logsumexp_is_stable():
    x = tg.tensor([1000.0, 1000.0], dtype=tg.float64, requires_grad=True)
    r = x.logsumexp(0)
    assert r.item() == pytest.approx(1000.0 + math.log(2.0))
    r.backward()
    np.testing.assert_allclose(x.grad.numpy(), [0.5, 0.5])


def test_norms_hand_derived():
    x = tg.tensor([[3.0, -4.0], [0.0, 12.0]], dtype=tg.float64)
    assert x.norm().item() == pytest.approx(13.0)
    assert x.norm(p="fro").item() == pytest.approx(13.0)
    assert x.norm(p=1).item() == pytest.approx(19.0)
    assert x.norm(p=float("inf")).item() == pytest.approx(12.0)
    np.testing.assert_allclose(x.norm(dim=1).numpy(), [5.0, 12.0])
    np.testing.assert_allclose(x.norm(p=1, dim=0, keepdim=True).numpy(), [[3.0, 16.0]])


def test_cat_stack_split_errors():
    with pytest.raises(RuntimeError, match=r"Sizes of tensors must match except in dimension 0. Expected size 3 but "
                                           r"got size 4 for tensor number 1 in the list."):
        tg.cat([tg.ones(2, 3), tg.ones(3, 4)])
    with pytest.raises(RuntimeError, match=r"stack expects each tensor to be equal size, but got \[2, 3\] at entry 0 "
                                           r"and \[3, 2\] at entry 1"):
        tg.stack([tg.ones(2, 3), tg.ones(3, 2)])
    with pytest.raises(RuntimeError, match=r"split_with_sizes expects split_sizes to sum exactly to 3"):
        tg.ones(3).split([1, 1])
    with pytest.raises(RuntimeError, match="chunk expects `chunks` to be greater than 0, got: 0"):
        tg.ones(3).chunk(0)


def test_cat_stack_values_and_gradients():
    a = tg.tensor([[1.0, 2.0]], requires_grad=True)
    b = tg.tensor([[3.0, 4.0], [5.0, 6.0]], requires_grad=True)
    c = tg.cat([a, b])
    assert c.tolist() == [[1, 2], [3, 4], [5, 6]]
    (c * tg.tensor([[1.0], [2.0], [3.0]])).sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), [[1, 1]])
    np.testing.assert_array_equal(b.grad.numpy(), [[2, 2], [3, 3]])
    s = tg.stack([tg.ones(2), tg.zeros(2)], dim=1)
    assert s.tolist() == [[1, 0], [1, 0]]


def test_advanced_indexing_repeated_indices_accumulate():
    x = tg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x[tg.tensor([0, 0, 2, 0])]
    assert y.tolist() == [1.0, 1.0, 3.0, 1.0]
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 0.0, 1.0])


def test_boolean_indexing_forward_backward():
    x = tg.tensor([[1.0, -2.0], [-3.0, 4.0]], requires_grad=True)
    y = x[x > 0]
    assert y.tolist() == [1.0, 4.0]
    (y * tg.tensor([10.0, 20.0])).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[10.0, 0.0], [0.0, 20.0]])


def test_mixed_indexing_shapes():
    x = tg.zeros(2, 3, 4)
    assert tuple(x[:, tg.tensor([0, 2])].shape) == (2, 2, 4)
    assert tuple(x[tg.tensor([0, 1]), :, tg.tensor([1, 2])].shape) == (2, 3)
    assert tuple(x[:, tg.tensor([0, 1]), tg.tensor([1, 2])].shape) == (2, 2)
    assert tuple(x[1, tg.tensor([0, 2, 2])].shape) == (3, 4)
    assert tuple(x[..., tg.tensor([[0, 1]])].shape) == (2, 3, 1, 2)


def test_gather_scatter_index_select_hand_derived():
    x = tg.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    g = x.gather(1, tg.tensor([[0, 0], [1, 0]]))
    assert g.tolist() == [[1.0, 1.0], [4.0, 3.0]]
    g.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[2.0, 0.0], [1.0, 1.0]])
    s = tg.zeros(2, 3).scatter(1, tg.tensor([[2], [0]]), tg.tensor([[5.0], [6.0]]))
    assert s.tolist() == [[0, 0, 5], [6, 0, 0]]
    sa = tg.zeros(3).scatter_add(0, tg.tensor([0, 0, 2]), tg.tensor([1.0, 2.0, 3.0]))
    assert sa.tolist() == [3.0, 0.0, 3.0]
    assert tg.tensor([[1, 2], [3, 4]]).index_select(0, tg.tensor([1, 1])).tolist() == [[3, 4], [3, 4]]


def test_writing_ops_refuse_a_source_of_another_dtype():
    """scatter/index_put & co. write ``src`` into ``self`` as it is: torch refuses a float64
    source for a float32 tensor rather than casting it; a scalar value and setitem do cast."""
    with pytest.raises(RuntimeError, match=r"scatter\(\): Expected self.dtype to be equal to src.dtype"):
        tg.zeros(3).scatter_add(0, tg.tensor([0, 0, 2]), tg.tensor([1.0, 2.0, 3.0], dtype=tg.float64))
    with pytest.raises(RuntimeError, match="got Float for the destination and Double for the source"):
        tg.zeros(3).index_put_((tg.tensor([1]),), tg.tensor([2.0], dtype=tg.float64))
    assert tg.zeros(3).scatter(0, tg.tensor([1]), 2).tolist() == [0.0, 2.0, 0.0]
    x = tg.zeros(3)
    x[tg.tensor([1])] = tg.tensor([2.0], dtype=tg.float64)
    assert x.dtype == tg.float32 and x.tolist() == [0.0, 2.0, 0.0]


def test_masked_fill_and_where_values():
    x = tg.tensor([1.0, -2.0, 3.0])
    assert x.masked_fill(x < 0, 0.0).tolist() == [1.0, 0.0, 3.0]
    assert tg.where(x > 0, x, tg.zeros(3)).tolist() == [1.0, 0.0, 3.0]
    assert tg.where(x > 0, 1.0, -1.0).tolist() == [1.0, -1.0, 1.0]
    with pytest.raises(RuntimeError, match="masked_fill_ only supports boolean masks"):
        x.masked_fill(tg.ones(3), 0.0)


def test_clamp_variants():
    x = tg.tensor([-2.0, 0.0, 2.0], requires_grad=True)
    assert x.clamp(-1, 1).tolist() == [-1.0, 0.0, 1.0]
    assert x.clamp(min=0.5).tolist() == [0.5, 0.5, 2.0]
    assert x.clamp(max=0.5).tolist() == [-2.0, 0.0, 0.5]
    assert tg.clamp(x, tg.tensor([-3.0, 1.0, 0.0]), tg.tensor([0.0, 2.0, 1.0])).tolist() == [-2.0, 1.0, 1.0]
    with pytest.raises(RuntimeError, match="At least one of 'min' or 'max' must not be None"):
        x.clamp()
    x.clamp(-1, 1).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 1.0, 0.0])


def test_clamp_gradient_at_the_boundary_is_one():
    x = tg.tensor([0.0, 1.0, 0.5], requires_grad=True)
    x.clamp(0.0, 1.0).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [1.0, 1.0, 1.0])


def test_comparison_ops():
    a = tg.tensor([1, 2, 3])
    b = tg.tensor([3, 2, 1])
    assert (a < b).tolist() == [True, False, False]
    assert (a <= b).tolist() == [True, True, False]
    assert (a == b).tolist() == [False, True, False]
    assert (a != b).tolist() == [True, False, True]
    assert (a > 2).tolist() == [False, False, True]
    assert tg.ge(a, b).tolist() == [False, True, True]
    assert not (a < b).requires_grad
    x = tg.tensor([1.0], requires_grad=True)
    assert not (x > 0).requires_grad and (x > 0).grad_fn is None


def test_integer_index_helpers():
    x = tg.arange(5)
    assert x[tg.tensor(2)].item() == 2
    assert [1, 2, 3][tg.tensor(1)] == 2
    with pytest.raises(TypeError):
        [1, 2][tg.tensor(1.0)]


def test_comparing_with_none_is_false_not_a_tensor():
    assert (tg.ones(2) == None) is False  # noqa: E711
    assert (tg.ones(2) != None) is True  # noqa: E711


def test_integer_division_by_zero_raises():
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        tg.tensor([1, 2]) // 0
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        tg.tensor([1, 2]) % tg.tensor([1, 0])
    # float division by zero follows IEEE
    r = tg.tensor([1.0, -1.0, 0.0]) / 0
    assert r[0].item() == math.inf and r[1].item() == -math.inf and math.isnan(r[2].item())
