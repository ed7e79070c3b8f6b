"""Counting: bincount, histc and histogram against real PyTorch (values, dtypes, edge
cases, error messages) and against hand counts that run without it."""
import numpy as np
import pytest

import tracegrad as tg

from .test_sorting_ops import NAN, _pair, _same, _same_error

try:
    import torch
except ImportError:  # pragma: no cover
    torch = None

_rng = np.random.default_rng(61)


# -- bincount ------------------------------------------------------------------------------------

@pytest.mark.torch
@pytest.mark.parametrize("values,weights,minlength", [
    ([1, 1, 4], None, 0), ([1, 1, 4], None, 7), ([1, 1, 4], [0.5, 1.0, 2.0], 0), ([], None, 0), ([], None, 3),
    ([0, 0, 0], [1, 2, 3], 0), ([2, 0], [0.25, 0.5], 5)])
@pytest.mark.parametrize("wdtype", ["float32", "float64", "int64"])
def test_bincount_matches_torch(values, weights, minlength, wdtype):
    a, b = _pair(values, "int64")
    if weights is None:
        _same(tg.bincount(a, minlength=minlength), torch.bincount(b, minlength=minlength))
        _same(a.bincount(), b.bincount())
        return
    w, tw = _pair(weights, wdtype)
    _same(tg.bincount(a, w, minlength), torch.bincount(b, tw, minlength))


@pytest.mark.torch
def test_bincount_of_small_ints_matches_torch():
    a, b = _pair([1, 2, 2], "uint8")
    _same(tg.bincount(a), torch.bincount(b))


def test_bincount_without_torch():
    assert tg.bincount(tg.tensor([1, 1, 4])).tolist() == [0, 2, 0, 0, 1]
    r = tg.bincount(tg.tensor([1, 1, 4]), tg.tensor([0.5, 1.0, 2.0]))
    assert r.tolist() == [0.0, 1.5, 0.0, 0.0, 2.0] and r.dtype == tg.float32 and not r.requires_grad


def test_bincount_weights_that_require_grad_get_their_gradient():
    """Summed weights are a scatter_add: each weight's gradient is its bin's (PyTorch marks
    the result as requiring grad but has no derivative; dropping it silently would be wrong)."""
    w = tg.tensor([0.5, 1.0, 2.0, 4.0], requires_grad=True)
    r = tg.bincount(tg.tensor([1, 1, 4, 0]), w, minlength=6)
    assert r.requires_grad and r.tolist() == [4.0, 1.5, 0.0, 0.0, 2.0, 0.0]
    (r * tg.arange(6.0)).sum().backward()
    assert w.grad.tolist() == [1.0, 1.0, 4.0, 0.0]
    tangent = tg.func.jvp(lambda v: tg.bincount(tg.tensor([2, 0, 2]), v), (w.detach()[:3],),
                          (tg.tensor([1.0, 10.0, 100.0]),))[1]
    assert tangent.tolist() == [10.0, 0.0, 101.0]


@pytest.mark.torch
def test_bincount_weights_that_require_grad_match_torch_forward():
    for lib in (tg, torch):
        empty = lib.bincount(lib.zeros(0, dtype=lib.int64), lib.zeros(0, dtype=lib.float64, requires_grad=True), 3)
        assert empty.tolist() == [0, 0, 0] and str(empty.dtype).endswith("int64")
    a, b = _pair([1, 1, 4, 0], "int64")
    w, tw = _pair([0.5, 1.0, 2.0, 4.0], "float64")
    ours, theirs = tg.bincount(a, w.requires_grad_(), 2), torch.bincount(b, tw.requires_grad_(), 2)
    assert ours.requires_grad and theirs.requires_grad
    _same(ours.detach(), theirs.detach())


@pytest.mark.torch
@pytest.mark.parametrize("call", [
    lambda L: L.bincount(L.tensor([-1])), lambda L: L.bincount(L.tensor([1.0])),
    lambda L: L.bincount(L.tensor([[1]])), lambda L: L.bincount(L.tensor([1]), minlength=-1),
    lambda L: L.bincount(L.tensor([1, 2]), weights=L.tensor([1.0])),
    lambda L: L.bincount(L.tensor([True, False]))])
def test_bincount_errors_match_torch(call):
    _same_error(call)


# -- histc -----------------------------------------------------------------------------------------

DATA = [1.0, 2.0, 1.0, 4.0, 0.5]


@pytest.mark.torch
@pytest.mark.parametrize("values,bins,lo,hi", [
    (DATA, 4, 0, 0), (DATA, 4, 0, 3), ([1.0, 1.0], 4, 0, 0), ([], 3, 0, 0), ([1.0, NAN, 5.0], 3, 0, 2),
    ([[1.0, 2.0], [3.0, 4.0]], 3, 0, 0), (DATA, 1, 0, 0), ([0.0, 1.0, 2.0, 3.0], 3, 0, 3), ([3.0, -1.0], 2, -1, 3)])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_histc_matches_torch(values, bins, lo, hi, dtype):
    a, b = _pair(values, dtype)
    _same(tg.histc(a, bins, lo, hi), torch.histc(b, bins, lo, hi))
    _same(a.histc(bins, min=lo, max=hi), b.histc(bins, min=lo, max=hi))


@pytest.mark.torch
def test_histc_on_random_data_matches_torch_including_edge_rounding():
    x = _rng.uniform(-1, 1, 10000).astype(np.float32)
    x[:100] = np.linspace(-1, 1, 100, dtype=np.float32)  # values on the bin edges
    a, b = _pair(x)
    for bins in (7, 10, 100):
        _same(tg.histc(a, bins, -1, 1), torch.histc(b, bins, -1, 1))
        _same(tg.histc(a, bins), torch.histc(b, bins))


def test_histc_without_torch():
    assert tg.histc(tg.tensor(DATA), bins=4).tolist() == [3.0, 1.0, 0.0, 1.0]
    assert tg.histc(tg.tensor([1.0, 1.0]), bins=4).tolist() == [0.0, 0.0, 2.0, 0.0]  # range widened to [0, 2]
    h = tg.histc(tg.ones(3, requires_grad=True), bins=3)  # as in PyTorch 2.13: no gradient at all
    assert not h.requires_grad and h.grad_fn is None
    weight = tg.ones(3, dtype=tg.float64, requires_grad=True)
    hist = tg.histogram(tg.tensor([0.1, 0.5, 0.9], dtype=tg.float64), bins=2, weight=weight).hist
    assert hist.grad_fn.name() == "torch::autograd::NotImplemented" and repr(hist.grad_fn).startswith("<NotImplemented object")
    with pytest.raises(RuntimeError, match="derivative for aten::histogram is not implemented"):
        (hist * 2).sum().backward()


@pytest.mark.torch
@pytest.mark.parametrize("call", [
    lambda L: L.histc(L.tensor([1, 2]), bins=3), lambda L: L.histc(L.tensor(DATA), bins=0),
    lambda L: L.histc(L.tensor(DATA), bins=3, min=3, max=1),
    lambda L: L.histc(L.tensor([1.0, float("inf")]), bins=3)])
def test_histc_errors_match_torch(call):
    _same_error(call)


# -- histogram -------------------------------------------------------------------------------------

@pytest.mark.torch
@pytest.mark.parametrize("bins,kw", [
    (4, {}), (4, {"range": (0.0, 3.0), "density": True}), (3, {"density": True, "weight": [1.0, 2, 3, 4, 5]}),
    ([0.0, 1.0, 5.0], {"weight": [1.0, 2, 3, 4, 5]}), ([0.0, 1.0, 1.5, 4.0], {"density": True}), (1, {})])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_histogram_matches_torch(bins, kw, dtype):
    a, b = _pair(DATA, dtype)
    ours_kw, theirs_kw = dict(kw), dict(kw)
    if "weight" in kw:
        ours_kw["weight"], theirs_kw["weight"] = _pair(kw["weight"], dtype)
    if isinstance(bins, list):
        ours_bins, theirs_bins = _pair(bins, dtype)
    else:
        ours_bins = theirs_bins = bins
    ours, theirs = tg.histogram(a, ours_bins, **ours_kw), torch.histogram(b, theirs_bins, **theirs_kw)
    assert type(ours).__name__ == "histogram" and ours._fields == ("hist", "bin_edges")
    np.testing.assert_allclose(ours.hist.numpy(), theirs.hist.numpy(), rtol=1e-6)
    np.testing.assert_allclose(ours.bin_edges.numpy(), theirs.bin_edges.numpy(), rtol=1e-6)
    assert str(ours.hist.dtype)[-7:] == str(theirs.hist.dtype)[-7:]


@pytest.mark.torch
@pytest.mark.parametrize("values", [[1.0, 1.0], [], [2.0, NAN]])
def test_histogram_degenerate_ranges_match_torch(values):
    a, b = _pair(values)
    if not values or not np.isnan(values).any():
        ours, theirs = tg.histogram(a, 2), torch.histogram(b, 2)
        _same(ours.hist, theirs.hist)
        _same(ours.bin_edges, theirs.bin_edges)
    else:
        _same_error(lambda L: L.histogram(L.tensor(values), 2))


@pytest.mark.torch
@pytest.mark.parametrize("call", [
    lambda L: L.histogram(L.tensor([1, 2]), 3),
    lambda L: L.histogram(L.tensor([1.0, 2.0]), 2, range=(3.0, 1.0)),
    lambda L: L.histogram(L.tensor([1.0, 2.0]), 2, weight=L.ones(3))])
def test_histogram_errors_match_torch(call):
    _same_error(call)
