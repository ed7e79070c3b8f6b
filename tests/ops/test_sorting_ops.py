"""Sorting, searching and drawing: sort, argsort, msort, topk, kthvalue, searchsorted,
bucketize, unique, unique_consecutive and multinomial, against real PyTorch (values,
indices, dtypes, return types, gradients, error messages) and against hand-made
expectations that run without it."""
import collections

import numpy as np
import pytest

import tracegrad as tg

try:
    import torch
except ImportError:  # pragma: no cover
    torch = None

NAN = float("nan")
_rng = np.random.default_rng(16)


def _pair(values, dtype="float32", requires_grad=False):
    """The same data as a tracegrad and a torch tensor."""
    a = np.asarray(values, dtype=dtype)
    return (tg.tensor(a, requires_grad=requires_grad),
            torch.tensor(a, requires_grad=requires_grad) if torch else None)


def _same(ours, theirs):
    """Equal values (NaN where NaN), shape and dtype."""
    if isinstance(theirs, tuple):
        assert len(ours) == len(theirs)
        for o, t in zip(ours, theirs):
            _same(o, t)
        return
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    np.testing.assert_array_equal(ours.detach().numpy(), theirs.detach().numpy())


def _error(fn, *args, **kwargs):
    try:
        fn(*args, **kwargs)
    except Exception as e:  # noqa: BLE001 -- any type: it is compared with the other side's
        return type(e), str(e)
    return None


def _same_error(call):
    """``call(lib)`` raises the same exception type and message with both libraries."""
    ours, theirs = _error(call, tg), _error(call, torch)
    assert theirs is not None, "PyTorch accepted the call"
    assert ours == theirs


WITH_TIES = [3.0, NAN, 1.0, 3.0, 2.0, NAN, 1.0, -0.0, 0.0]


# -- sort / argsort / msort ------------------------------------------------------------------

def test_sort_puts_nan_last_and_keeps_ties_in_order_without_torch():
    v, i = tg.sort(tg.tensor(WITH_TIES), stable=True)
    assert i.tolist() == [7, 8, 2, 6, 4, 0, 3, 1, 5]
    v, i = tg.sort(tg.tensor(WITH_TIES), descending=True, stable=True)
    assert i.tolist() == [1, 5, 0, 3, 4, 2, 6, 7, 8]
    assert np.isnan(v.numpy()[:2]).all()


@pytest.mark.torch
@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "bool"])
def test_sort_matches_torch(descending, dtype):
    data = WITH_TIES if dtype.startswith("float") else [3, 1, 0, 3, 2, 1, 0, 1]
    a, b = _pair(np.asarray(data).astype(dtype))
    _same(tuple(tg.sort(a, descending=descending, stable=True)),
          tuple(torch.sort(b, descending=descending, stable=True)))
    _same(tg.argsort(a, descending=descending, stable=True), torch.argsort(b, descending=descending, stable=True))
    _same(a.sort(0, descending).values, b.sort(0, descending).values)


@pytest.mark.torch
@pytest.mark.parametrize("shape,dim", [((3, 4), 0), ((2, 3, 4), 1), ((2, 3, 4), -1), ((0, 3), 1), ((), 0), ((4, 0), 1)])
def test_sort_shapes_and_gradients_match_torch(shape, dim):
    x = _rng.standard_normal(shape)
    a, b = _pair(x, "float64", requires_grad=True)
    ours, theirs = tg.sort(a, dim), torch.sort(b, dim)
    _same(tuple(ours), tuple(theirs))
    assert type(ours).__name__ == "sort" and ours._fields == ("values", "indices")
    assert ours.values.grad_fn.name() == theirs.values.grad_fn.name() == "SortBackward0"
    assert not ours.indices.requires_grad
    g = _rng.standard_normal(shape)
    (ours.values * tg.tensor(g)).sum().backward()
    (theirs.values * torch.tensor(g)).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy())
    _same(tg.msort(a), torch.msort(b)) if a.ndim else None


def test_sort_gradient_is_a_permutation_without_torch():
    a = tg.tensor([3.0, 1.0, 2.0], requires_grad=True)
    (tg.sort(a).values * tg.tensor([1.0, 10.0, 100.0])).sum().backward()
    assert a.grad.tolist() == [100.0, 1.0, 10.0]


# -- topk / kthvalue -------------------------------------------------------------------------

@pytest.mark.torch
@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("k", [0, 1, 3, 9])
def test_topk_values_match_torch_with_ties_and_nan(largest, k):
    a, b = _pair(WITH_TIES)
    ours, theirs = tg.topk(a, k, largest=largest), torch.topk(b, k, largest=largest)
    _same(ours.values, theirs.values)
    # among equal values PyTorch's selection picks any index: ours must point at the values
    np.testing.assert_array_equal(a.numpy()[ours.indices.numpy()], ours.values.numpy())
    assert type(ours).__name__ == "topk"


@pytest.mark.torch
@pytest.mark.parametrize("shape,k,dim", [((3, 5), 2, 1), ((4, 3), 3, 0), ((2, 3, 4), 1, -2), ((), 1, 0), ((0, 4), 2, 1)])
def test_topk_shapes_and_gradients_match_torch(shape, k, dim):
    x = _rng.standard_normal(shape)
    a, b = _pair(x, "float64", requires_grad=True)
    ours, theirs = tg.topk(a, k, dim), torch.topk(b, k, dim)
    _same(tuple(ours), tuple(theirs))
    assert ours.values.grad_fn.name() == theirs.values.grad_fn.name() == "TopkBackward0"
    g = _rng.standard_normal(tuple(theirs.values.shape))
    (ours.values * tg.tensor(g)).sum().backward()
    (theirs.values * torch.tensor(g)).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy())


@pytest.mark.torch
@pytest.mark.parametrize("shape,k,dim,keepdim", [
    ((5,), 2, -1, False), ((3, 4), 4, 1, True), ((3, 4), 1, 0, False), ((2, 3, 4), 2, 1, True), ((), 1, 0, False),
    ((), 1, 0, True), ((0, 3), 1, 1, False)])
def test_kthvalue_matches_torch(shape, k, dim, keepdim):
    x = _rng.standard_normal(shape)
    a, b = _pair(x, "float64", requires_grad=True)
    ours, theirs = tg.kthvalue(a, k, dim, keepdim), torch.kthvalue(b, k, dim, keepdim)
    _same(tuple(ours), tuple(theirs))
    assert type(ours).__name__ == "kthvalue" and ours._fields == ("values", "indices")
    if not ours.values.numel():
        return
    assert ours.values.grad_fn.name() == "KthvalueBackward0"
    g = _rng.standard_normal(tuple(theirs.values.shape))
    (ours.values * tg.tensor(g)).sum().backward()
    (theirs.values * torch.tensor(g)).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy())
    _same(a.kthvalue(k, dim, keepdim).values, b.kthvalue(k, dim, keepdim).values)


@pytest.mark.torch
def test_kthvalue_ties_and_nan_values_match_torch():
    a, b = _pair(WITH_TIES)
    for k in range(1, 10):
        ours, theirs = tg.kthvalue(a, k), torch.kthvalue(b, k)
        _same(ours.values, theirs.values)
        assert a.numpy()[ours.indices.item()] == ours.values.item() or np.isnan(ours.values.item())


def test_kthvalue_gradient_goes_to_one_element_without_torch():
    a = tg.tensor([[1.0, 5.0, 2.0], [3.0, 0.0, 4.0]], requires_grad=True)
    r = tg.kthvalue(a, 2, dim=1)
    assert r.values.tolist() == [2.0, 3.0] and r.indices.tolist() == [2, 0]
    r.values.sum().backward()
    assert a.grad.tolist() == [[0.0, 0.0, 1.0], [1.0, 0.0, 0.0]]


@pytest.mark.torch
@pytest.mark.parametrize("call", [
    lambda L: L.kthvalue(L.ones(4), 0), lambda L: L.kthvalue(L.ones(4), 5), lambda L: L.kthvalue(L.ones(2, 3), 4, 1),
    lambda L: L.kthvalue(L.ones(0), 1), lambda L: L.kthvalue(L.ones(0, 2), 1, 0),
    lambda L: L.topk(L.ones(4), 5), lambda L: L.topk(L.ones(4), -1)])
def test_sorting_errors_match_torch(call):
    _same_error(call)


# -- searchsorted / bucketize ----------------------------------------------------------------

BOUNDS = [1.0, 2.0, 2.0, 3.0]
PROBES = [0.0, 1.0, 2.0, 2.5, 3.0, 5.0, NAN]


@pytest.mark.torch
@pytest.mark.parametrize("right,side", [(False, None), (True, None), (False, "right"), (False, "left"), (True, "right")])
@pytest.mark.parametrize("out_int32", [False, True])
def test_searchsorted_matches_torch(right, side, out_int32):
    (s, ts), (v, tv) = _pair(BOUNDS), _pair(PROBES)
    kw = {"right": right, "side": side, "out_int32": out_int32}
    _same(tg.searchsorted(s, v, **kw), torch.searchsorted(ts, tv, **kw))
    _same(tg.bucketize(v, s, right=right or side == "right", out_int32=out_int32),
          torch.bucketize(tv, ts, right=right or side == "right", out_int32=out_int32))


@pytest.mark.torch
@pytest.mark.parametrize("bounds,values", [
    ([[1.0, 3.0, 5.0], [2.0, 4.0, 6.0]], [[2.0, 6.0], [2.0, 7.0]]),  # one row of boundaries per row of values
    ([1.0, NAN], [NAN, 5.0, 0.0]),  # NaN boundaries: PyTorch's comparisons, not NumPy's order
    ([], [1.0, 2.0]), ([1, 2, 3], [2.5, 0.0]), ([1.0, 2.0], [[[1.5]]]), ([1.0, 2.0], 1.5)])
def test_searchsorted_shapes_match_torch(bounds, values):
    (s, ts), (v, tv) = _pair(bounds, np.asarray(bounds).dtype if len(bounds) else "float32"), _pair(values)
    _same(tg.searchsorted(s, v), torch.searchsorted(ts, tv))
    _same(tg.searchsorted(s, v, right=True), torch.searchsorted(ts, tv, right=True))


@pytest.mark.torch
def test_searchsorted_sorter_and_scalars_match_torch():
    (s, ts), (v, tv) = _pair([3.0, 1.0, 2.0]), _pair([2.5, 0.5, 3.0])
    _same(tg.searchsorted(s, v, sorter=tg.tensor([1, 2, 0])), torch.searchsorted(ts, tv, sorter=torch.tensor([1, 2, 0])))
    (s, ts) = _pair(BOUNDS)
    _same(tg.searchsorted(s, 2.0), torch.searchsorted(ts, 2.0))
    _same(tg.bucketize(3, s), torch.bucketize(3, ts))


def test_searchsorted_without_torch():
    s = tg.tensor(BOUNDS)
    assert tg.searchsorted(s, tg.tensor([0.0, 2.0, 2.5, 5.0])).tolist() == [0, 1, 3, 4]
    assert tg.searchsorted(s, tg.tensor([0.0, 2.0, 2.5, 5.0]), right=True).tolist() == [0, 3, 3, 4]
    assert tg.bucketize(tg.tensor([[0.0, 2.0]]), s, out_int32=True).dtype == tg.int32
    assert not tg.searchsorted(s, tg.tensor([1.0], requires_grad=True)).requires_grad


@pytest.mark.torch
@pytest.mark.parametrize("call", [
    lambda L: L.searchsorted(L.tensor([1.0, 2.0]), L.tensor([1.0]), side="left", right=True),
    lambda L: L.searchsorted(L.tensor([1.0, 2.0]), L.tensor([1.0]), side="middle"),
    lambda L: L.searchsorted(L.tensor([[1.0, 3.0], [2.0, 4.0]]), L.tensor([2.0, 3.0])),
    lambda L: L.searchsorted(L.tensor([[1.0, 3.0], [2.0, 4.0]]), L.tensor([[2.0], [3.0], [4.0]])),
    lambda L: L.searchsorted(L.tensor([3.0, 1.0, 2.0]), L.tensor([1.0]), sorter=L.tensor([1, 2])),
    lambda L: L.searchsorted(L.tensor([3.0, 1.0]), L.tensor([1.0]), sorter=L.tensor([1.0, 0.0])),
    lambda L: L.bucketize(L.tensor([1.0]), L.tensor([[1.0]]))])
def test_searchsorted_errors_match_torch(call):
    _same_error(call)


# -- unique / unique_consecutive -------------------------------------------------------------

@pytest.mark.torch
@pytest.mark.parametrize("values,dtype", [
    ([3, 1, 2, 3, 1, 1], "int64"), ([[2.0, 1.0], [1.0, 2.0]], "float32"), ([1.0, NAN, NAN, 1.0, -0.0, 0.0], "float64"),
    ([], "float32"), (5.0, "float32"), ([True, False, True], "bool")])
@pytest.mark.parametrize("inverse,counts", [(False, False), (True, False), (False, True), (True, True)])
def test_unique_matches_torch(values, dtype, inverse, counts):
    a, b = _pair(values, dtype)
    ours = tg.unique(a, return_inverse=inverse, return_counts=counts)
    theirs = torch.unique(b, return_inverse=inverse, return_counts=counts)
    _same(ours, theirs)
    _same(a.unique(sorted=False, return_inverse=inverse, return_counts=counts),
          b.unique(sorted=False, return_inverse=inverse, return_counts=counts))
    _same(tg.unique_consecutive(a, return_inverse=inverse, return_counts=counts),
          torch.unique_consecutive(b, return_inverse=inverse, return_counts=counts))


@pytest.mark.torch
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_unique_along_a_dim_matches_torch(dim):
    a, b = _pair([[1, 2, 1], [1, 2, 1], [0, 5, 0], [1, 2, 1]], "int64")
    _same(tg.unique(a, dim=dim, return_inverse=True, return_counts=True),
          torch.unique(b, dim=dim, return_inverse=True, return_counts=True))
    _same(tg.unique_consecutive(a, dim=dim, return_inverse=True, return_counts=True),
          torch.unique_consecutive(b, dim=dim, return_inverse=True, return_counts=True))


def test_unique_without_torch():
    v, inv, cnt = tg.unique(tg.tensor([3, 1, 2, 3, 1, 1]), return_inverse=True, return_counts=True)
    assert (v.tolist(), inv.tolist(), cnt.tolist()) == ([1, 2, 3], [2, 0, 1, 2, 0, 0], [3, 1, 2])
    v, inv, cnt = tg.unique_consecutive(tg.tensor([1, 1, 2, 2, 3, 1, 1, 2]), return_inverse=True, return_counts=True)
    assert (v.tolist(), inv.tolist(), cnt.tolist()) == ([1, 2, 3, 1, 2], [0, 0, 1, 1, 2, 3, 3, 4], [2, 2, 1, 2, 1])
    # as in PyTorch: tied to its input, with a backward that refuses (not silently constant)
    u = tg.unique(tg.ones(2, 3, requires_grad=True))
    assert u.requires_grad
    with pytest.raises(NotImplementedError, match="the derivative for '_unique2' is not implemented"):
        u.sum().backward()
    assert not tg.unique(tg.ones(2, 3, requires_grad=True), return_counts=True)[1].requires_grad


# -- multinomial ---------------------------------------------------------------------------------

def _frequencies(samples, n):
    return np.bincount(samples.reshape(-1), minlength=n) / samples.size


def test_multinomial_with_replacement_follows_the_weights():
    tg.manual_seed(0)
    w = np.array([0.1, 0.0, 0.5, 0.4])
    s = tg.multinomial(tg.tensor(w), 20000, replacement=True).numpy()
    assert s.dtype == np.int64 and s.shape == (20000,)
    np.testing.assert_allclose(_frequencies(s, 4), w, atol=0.015)  # ~5 standard errors


def test_multinomial_without_replacement_draws_each_category_once_by_weight():
    tg.manual_seed(1)
    w = tg.tensor([[1.0, 2.0, 3.0, 0.0]] * 4000, dtype=tg.float64)
    s = w.multinomial(3).numpy()
    assert s.shape == (4000, 3)
    assert all(sorted(row) == [0, 1, 2] for row in s)  # the zero-weight category is never drawn first
    # the first draw is proportional to the weights
    np.testing.assert_allclose(_frequencies(s[:, 0], 4), [1 / 6, 2 / 6, 3 / 6, 0], atol=0.03)
    # the second, given the first: P(second = 1 | first = 2) = 2 / 3
    firsts = s[:, 0] == 2
    assert abs((s[firsts, 1] == 1).mean() - 2 / 3) < 0.04


def test_multinomial_zero_weights_come_last_and_seed_repeats():
    tg.manual_seed(3)
    a = tg.multinomial(tg.tensor([0.0, 1.0, 1.0]), 3)
    assert a.tolist()[2] == 0
    tg.manual_seed(3)
    assert tg.multinomial(tg.tensor([0.0, 1.0, 1.0]), 3).tolist() == a.tolist()
    g = tg.Generator().manual_seed(7)
    x = tg.multinomial(tg.ones(10), 5, generator=g)
    assert x.tolist() == tg.multinomial(tg.ones(10), 5, generator=tg.Generator().manual_seed(7)).tolist()
    assert not tg.multinomial(tg.ones(3, requires_grad=True), 2, True).requires_grad
    assert tg.multinomial(tg.ones(0, 3), 2).shape == (0, 2)


@pytest.mark.torch
@pytest.mark.parametrize("call", [
    lambda L: L.multinomial(L.tensor([0.1, 0.0, 0.5, 0.4]), 5),
    lambda L: L.multinomial(L.ones(4), 0),
    lambda L: L.multinomial(L.tensor([-1.0, 2.0]), 1),
    lambda L: L.multinomial(L.tensor([float("inf"), 2.0]), 1),
    lambda L: L.multinomial(L.tensor([NAN, 2.0]), 2),
    lambda L: L.multinomial(L.tensor([0.0, 0.0]), 1),
    lambda L: L.multinomial(L.tensor([[0.0, 0.0], [1.0, 1.0]]), 1),
    lambda L: L.multinomial(L.tensor([-1.0, 2.0]), 2, True),
    lambda L: L.multinomial(L.tensor([NAN, 2.0]), 2, True),
    lambda L: L.multinomial(L.tensor([float("inf"), 2.0]), 2, True),
    lambda L: L.multinomial(L.tensor([[1.0, 1.0], [0.0, 0.0]]), 2, True),
    lambda L: L.multinomial(L.ones(2, 2, 2), 1),
    lambda L: L.multinomial(L.tensor(1.0), 1),
    lambda L: L.multinomial(L.ones(2, dtype=L.int64), 1),
    lambda L: L.multinomial(L.ones(0), 1)])
def test_multinomial_errors_match_torch(call):
    _same_error(call)


@pytest.mark.torch
def test_multinomial_shapes_and_dtypes_match_torch():
    for w, n, rep in [([1.0, 2.0], 1, False), ([[1.0, 2.0, 3.0]] * 2, 3, False), ([1.0, 2.0], 5, True)]:
        a, b = _pair(w, "float64")
        ours, theirs = tg.multinomial(a, n, rep), torch.multinomial(b, n, rep)
        assert tuple(ours.shape) == tuple(theirs.shape) and str(ours.dtype)[-5:] == str(theirs.dtype)[-5:]


def test_counts_of_one_draw_are_a_distribution():
    tg.manual_seed(5)
    s = tg.multinomial(tg.tensor([[5.0, 1.0], [1.0, 5.0]]), 1).numpy()[:, 0]
    assert collections.Counter(s.tolist()).keys() <= {0, 1}
