"""histogramdd: counts against numpy.histogramdd and hand counts (run without PyTorch), and
against real PyTorch (values, bin edges to the bit, dtypes, printed result, what requires
grad, error types and messages, and the order of the checks)."""
import numpy as np
import pytest

import tracegrad as tg

from .test_sorting_ops import NAN, _pair, _same, _same_error

try:
    import torch
except ImportError:  # pragma: no cover
    torch = None

_rng = np.random.default_rng(73)
POINTS = [[0.0, 1.0], [1.0, 0.0], [2.0, 0.0], [2.0, 2.0]]
INF = float("inf")


def _numpy(points, result, weight=None, density=False):
    """numpy.histogramdd of ``points`` over the edges tracegrad chose (both close the last bin)."""
    edges = [e.numpy().astype(np.float64) for e in result.bin_edges]
    return np.histogramdd(np.asarray(points, dtype=np.float64).reshape(-1, len(edges)), bins=edges,
                          weights=weight, density=density)[0]


# -- without PyTorch -------------------------------------------------------------------------------

def test_hand_counts():
    r = tg.histogramdd(tg.tensor(POINTS), bins=[3, 3], weight=tg.tensor([1.0, 2.0, 4.0, 8.0]))
    assert r.hist.tolist() == [[0.0, 1.0, 0.0], [2.0, 0.0, 0.0], [4.0, 0.0, 8.0]]
    assert len(r.bin_edges) == 2 and isinstance(r.bin_edges, tuple)
    np.testing.assert_allclose(r.bin_edges[0].numpy(), [0, 2 / 3, 4 / 3, 2], rtol=1e-6)
    r = tg.histogramdd(tg.tensor([[0.0, 0.0], [1.0, 1.0], [2.0, 2.0]]), bins=[2, 2], range=[0.0, 1.0, 0.0, 2.0],
                       density=True)
    # (2, 2) is outside; (1, 1) is on both last edges: each of 2 points is 1 / (2 points * 0.5 * 1)
    assert r.hist.tolist() == [[1.0, 0.0], [0.0, 1.0]]
    assert r.bin_edges[1].tolist() == [0.0, 1.0, 2.0]
    assert type(r).__name__ == "histogramdd" and r._fields == ("hist", "bin_edges")
    assert tg.return_types.histogramdd is type(r)


@pytest.mark.parametrize("shape,bins", [((200, 2), 5), ((300, 3), [2, 3, 4]), ((10, 4, 2), [7, 1]), ((50, 1), 6)])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_counts_match_numpy(shape, bins, dtype):
    x = _rng.normal(size=shape).astype(dtype)
    w = _rng.uniform(0, 2, size=shape[:-1]).astype(dtype)
    r = tg.histogramdd(tg.tensor(x), bins)
    assert r.hist.dtype == getattr(tg, dtype) and all(e.dtype == r.hist.dtype for e in r.bin_edges)
    np.testing.assert_array_equal(r.hist.numpy(), _numpy(x, r))
    counts = [bins] * shape[-1] if isinstance(bins, int) else bins
    assert tuple(r.hist.shape) == tuple(counts) and r.hist.sum().item() == np.prod(shape[:-1])
    r = tg.histogramdd(tg.tensor(x), bins, weight=tg.tensor(w), density=True)
    np.testing.assert_allclose(r.hist.numpy(), _numpy(x, r, w.reshape(-1), density=True), rtol=1e-5)


def test_explicit_edges_range_and_dropped_points():
    x = np.array([[0.5, 5.0], [1.0, 7.0], [3.0, 9.0], [NAN, 6.0], [1.5, 10.5], [-1.0, 6.0]], dtype=np.float32)
    e0, e1 = tg.tensor([0.0, 1.0, 3.0]), tg.tensor([5.0, 6.0, 8.0, 10.0])
    r = tg.histogramdd(tg.tensor(x), [e0, e1], range=[100.0, 200.0, 0.0, 1.0])  # range: unused with edges
    assert r.bin_edges[0] is e0 and r.bin_edges[1] is e1  # PyTorch returns the edge tensors themselves
    # (0.5, 5) -> [0, 0]; (1, 7) -> [1, 1]; (3, 9): 3 is the last edge -> [1, 2]; NaN, 10.5, -1: dropped
    assert r.hist.tolist() == [[1.0, 0.0, 0.0], [0.0, 1.0, 1.0]]
    r = tg.histogramdd(tg.tensor(x), 2, range=[0.0, 4.0, 5.0, 9.0])
    assert r.hist.tolist() == [[1.0, 1.0], [0.0, 1.0]]
    assert r.bin_edges[0].tolist() == [0.0, 2.0, 4.0] and r.bin_edges[1].tolist() == [5.0, 7.0, 9.0]


def test_degenerate_and_empty_inputs():
    r = tg.histogramdd(tg.tensor([[3.0, 1.0]]), 2)  # one point: each range widened by 0.5 each side
    assert r.bin_edges[0].tolist() == [2.5, 3.0, 3.5] and r.hist.tolist() == [[0.0, 0.0], [0.0, 1.0]]
    r = tg.histogramdd(tg.zeros(0, 2), 2)  # nothing: [0, 1] in each dimension
    assert r.bin_edges[1].tolist() == [0.0, 0.5, 1.0] and r.hist.tolist() == [[0.0, 0.0], [0.0, 0.0]]
    assert np.isnan(tg.histogramdd(tg.zeros(0, 2), 2, density=True).hist.numpy()).all()
    r = tg.histogramdd(tg.zeros(3, 0), [])  # no dimensions: a 0-d count of nothing, no edges
    assert r.hist.shape == () and r.hist.item() == 0.0 and r.bin_edges == ()
    r = tg.histogramdd(tg.tensor(POINTS).reshape(2, 2, 2), 2, weight=tg.ones(2, 2))  # leading dims flattened
    assert r.hist.tolist() == [[0.0, 1.0], [2.0, 1.0]]


def test_no_gradient_but_requires_grad_as_in_pytorch():
    x = tg.tensor(POINTS, requires_grad=True)
    r = tg.histogramdd(x, 2)
    assert r.hist.requires_grad and r.hist.grad_fn.name() == "torch::autograd::NotImplemented"
    assert all(e.requires_grad for e in r.bin_edges)  # (computed from x's range)
    assert repr(r.hist).endswith("grad_fn=<NotImplemented>)")
    with pytest.raises(RuntimeError, match=r"derivative for aten::_histogramdd_from_bin_cts is not implemented"):
        (r.hist * 2).sum().backward()
    with pytest.raises(RuntimeError, match=r"derivative for aten::_histogramdd_bin_edges is not implemented"):
        r.bin_edges[0].sum().backward()
    edges = tg.tensor([0.0, 1.0, 2.0], requires_grad=True)
    hist = tg.histogramdd(tg.tensor(POINTS), [edges, edges.detach()]).hist
    with pytest.raises(RuntimeError, match=r"aten::_histogramdd_from_bin_tensors is not implemented"):
        hist.sum().backward()
    with tg.no_grad():
        assert not tg.histogramdd(x, 2, weight=tg.ones(4, requires_grad=True)).hist.requires_grad
    assert not tg.histogramdd(x.detach(), 2).hist.requires_grad


def test_forward_ad_is_refused():
    fwad = tg.autograd.forward_ad
    with fwad.dual_level():
        dual = fwad.make_dual(tg.tensor(POINTS), tg.ones(4, 2))
        with pytest.raises(NotImplementedError, match="forward AD with aten::_histogramdd_bin_edges"):
            tg.histogramdd(dual, 2)
        with pytest.raises(NotImplementedError, match="forward AD with aten::_histogramdd_from_bin_tensors"):
            tg.histogramdd(tg.tensor(POINTS), [tg.tensor([0.0, 1.0])] * 2, weight=fwad.make_dual(tg.ones(4), tg.ones(4)))


def test_bad_argument_types():
    x = tg.tensor(POINTS)
    for bins in (2.5, True, None, tg.tensor([2, 2]), [2.0, 3.0], [tg.tensor([0.0, 1.0]), 2]):
        with pytest.raises(TypeError):
            tg.histogramdd(x, bins)
    with pytest.raises(TypeError):
        tg.histogramdd(x, 2, range=tg.tensor([0.0, 1.0, 0.0, 1.0]))
    with pytest.raises(TypeError):
        tg.histogramdd(x, 2, weight=[1.0, 2.0, 3.0, 4.0])
    with pytest.raises(TypeError):
        tg.histogramdd(POINTS, 2)
    # ints by other names: NumPy ints and 0-d integer tensors
    assert tg.histogramdd(x, [np.int64(2), tg.tensor(3)]).hist.shape == (2, 3)


# -- against PyTorch ---------------------------------------------------------------------------------

def _both(values, dtype):
    return _pair(np.asarray(values, dtype=dtype), dtype)


def _same_result(ours, theirs, exact=True):
    assert type(ours).__name__ == type(theirs).__name__ == "histogramdd"
    assert isinstance(ours.bin_edges, tuple) and isinstance(theirs.bin_edges, tuple)
    assert len(ours.bin_edges) == len(theirs.bin_edges)
    for o, t in zip(ours.bin_edges, theirs.bin_edges):
        _same(o, t)  # edges to the bit (linspace rounded as PyTorch's)
    if exact:
        _same(ours.hist, theirs.hist)
    else:
        assert str(ours.hist.dtype)[-7:] == str(theirs.hist.dtype)[-7:] and ours.hist.shape == theirs.hist.shape
        np.testing.assert_allclose(ours.hist.numpy(), theirs.hist.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.torch
@pytest.mark.parametrize("bins,kw", [
    (2, {}), ([3, 3], {}), ((2, 3), {}), ([1, 5], {}), (2, {"range": [0.0, 4.0, -1.0, 1.0]}),
    (2, {"range": (0, 4, 1, 1)}), (3, {"density": True}), ([3, 2], {"weight": [1.0, 2.0, 4.0, 8.0]}),
    ([3, 2], {"weight": [1.0, 2.0, 4.0, 8.0], "density": True}), (2, {"range": [10, 11, 10, 11], "density": True}),
    ([[0.0, 1.0, 2.0], [0.0, 0.5, 3.0]], {}), ([[0.0, 2.0, 1.0], [0.0, 1.0]], {}),
    ([[0.0, NAN, 2.0], [0.0, 1.0]], {}), ([[0.0, 1.0, INF], [-INF, 1.0]], {"density": True}),
    ([[0.0, 1.0, 1.0], [0.0, 1.0]], {"weight": [1.0, 2.0, 4.0, 8.0]})])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_matches_torch(bins, kw, dtype):
    a, b = _both(POINTS, dtype)
    ours_kw, theirs_kw = dict(kw), dict(kw)
    if "weight" in kw:
        ours_kw["weight"], theirs_kw["weight"] = _both(kw["weight"], dtype)
    ours_bins = theirs_bins = bins
    if isinstance(bins, list) and isinstance(bins[0], list):
        pairs = [_both(e, dtype) for e in bins]
        ours_bins, theirs_bins = [p[0] for p in pairs], [p[1] for p in pairs]
    _same_result(tg.histogramdd(a, ours_bins, **ours_kw), torch.histogramdd(b, theirs_bins, **theirs_kw))


@pytest.mark.torch
def test_strided_and_batched_points_match_torch():
    x = _rng.normal(size=(3, 40, 2)).astype(np.float32)
    a, b = _pair(x)
    _same_result(tg.histogramdd(a.transpose(0, 1), 4), torch.histogramdd(b.transpose(0, 1), 4))
    _same_result(tg.histogramdd(a.permute(2, 1, 0), [2, 3, 4]), torch.histogramdd(b.permute(2, 1, 0), [2, 3, 4]))
    w, tw = _pair(_rng.uniform(size=(40, 3)).astype(np.float32))
    _same_result(tg.histogramdd(a.transpose(0, 1), 3, weight=w, density=True),
                 torch.histogramdd(b.transpose(0, 1), 3, weight=tw, density=True), exact=False)


@pytest.mark.torch
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_random_data_and_edges_match_torch(dtype):
    """Values on the edges and many bin counts: the edges equal PyTorch's bit for bit, so every
    value lands in PyTorch's bin."""
    for dims, n in ((1, 500), (2, 2000), (3, 1000)):
        x = _rng.normal(size=(n, dims)).astype(dtype)
        for counts in ([7] * dims, [10, 31, 100][:dims], [16, 33, 1000][:dims]):
            rng = [float(v) for lo_hi in zip(x.min(0) * 0.7, x.max(0) * 0.7) for v in lo_hi]
            a, b = _pair(x, dtype)
            _same_result(tg.histogramdd(a, counts), torch.histogramdd(b, counts))
            ours, theirs = tg.histogramdd(a, counts, range=rng), torch.histogramdd(b, counts, range=rng)
            _same_result(ours, theirs)
            on_edges = np.stack([theirs.bin_edges[d].numpy()[_rng.integers(0, counts[d] + 1, n)]
                                 for d in range(dims)], axis=1)  # every point on an edge
            a, b = _pair(on_edges, dtype)
            _same_result(tg.histogramdd(a, counts, range=rng), torch.histogramdd(b, counts, range=rng))
            w, tw = _pair(_rng.uniform(0, 1, n).astype(dtype), dtype)
            _same_result(tg.histogramdd(a, counts, weight=w, density=True),
                         torch.histogramdd(b, counts, weight=tw, density=True), exact=False)


@pytest.mark.torch
def test_unsorted_edges_bin_as_in_torch():
    x = _rng.uniform(-1, 4, size=(500, 2)).astype(np.float32)
    a, b = _pair(x)
    for e0, e1 in (([0.0, 2.0, 1.0, 3.0], [3.0, 0.0, 1.0]), ([0.0, NAN, 1.0, NAN, 3.0], [-1.0, 2.0, 2.0, 4.0])):
        (oe0, te0), (oe1, te1) = _pair(e0), _pair(e1)
        _same_result(tg.histogramdd(a, [oe0, oe1]), torch.histogramdd(b, [te0, te1]))


@pytest.mark.torch
def test_float16_matches_torch():
    """float16 bins by given edges, or equal bins over a given range (not over the data's)."""
    a, b = _both([[0.0, 1.0], [1.0, 0.0], [0.5, 0.5], [0.25, 0.9]], "float16")
    (oe, te) = _both([0.0, 0.5, 1.0], "float16")
    _same_result(tg.histogramdd(a, [oe, oe], density=True), torch.histogramdd(b, [te, te], density=True))
    _same_result(tg.histogramdd(a, 3, range=[0.0, 1.0, 0.0, 1.0]), torch.histogramdd(b, 3, range=[0.0, 1.0, 0.0, 1.0]))
    _same_result(tg.histogramdd(a, [5, 7], range=[-0.3, 1.1, 0.1, 0.7]),
                 torch.histogramdd(b, [5, 7], range=[-0.3, 1.1, 0.1, 0.7]))
    _same_error(lambda L: L.histogramdd(L.tensor([[0.0, 1.0]], dtype=L.float16), 2))


@pytest.mark.torch
def test_histogram_edges_are_torch_s_bit_for_bit():
    """The 1-D ``histogram`` shares the edge computation."""
    x = _rng.normal(size=1000).astype(np.float32)
    for dtype in ("float32", "float64"):
        a, b = _pair(x.astype(dtype), dtype)
        for bins in (3, 10, 33, 100):
            ours, theirs = tg.histogram(a, bins, range=(-0.77, 1.3)), torch.histogram(b, bins, range=(-0.77, 1.3))
            _same(ours.bin_edges, theirs.bin_edges)
            _same(ours.hist, theirs.hist)


@pytest.mark.torch
def test_printed_result_matches_torch():
    for lib_bins in ((2, 2), ([2, 3], [2, 3])):
        a, b = _both(POINTS, "float64")
        ours, theirs = tg.histogramdd(a, lib_bins[0]), torch.histogramdd(b, lib_bins[1])
        assert repr(ours) == repr(theirs).replace("torch.", "tracegrad.")
    a, b = _both([[0.5], [1.5]], "float32")
    assert repr(tg.histogramdd(a, 2)) == repr(torch.histogramdd(b, 2)).replace("torch.", "tracegrad.")
    a, b = _pair(POINTS, requires_grad=True)
    assert repr(tg.histogramdd(a, 2)) == repr(torch.histogramdd(b, 2)).replace("torch.", "tracegrad.")


@pytest.mark.torch
@pytest.mark.parametrize("with_range", [False, True])
@pytest.mark.parametrize("grad_on", ["input", "weight", "edges", None])
def test_requires_grad_and_backward_match_torch(grad_on, with_range):
    results, errors = {}, {}
    for lib in (tg, torch):
        x = lib.tensor(POINTS, requires_grad=grad_on == "input")
        w = lib.ones(4, requires_grad=grad_on == "weight")
        if grad_on == "edges":
            e = lib.tensor([0.0, 1.0, 2.0], requires_grad=True)
            r = lib.histogramdd(x, [e, e.detach()], weight=w)
        else:
            r = lib.histogramdd(x, 2, weight=w, range=[0.0, 2.0, 0.0, 2.0] if with_range else None)
        results[lib] = (r.hist.requires_grad, tuple(e.requires_grad for e in r.bin_edges))
        errors[lib] = []
        for t in (r.hist, *r.bin_edges):
            try:
                (t * 2).sum().backward()
            except Exception as exc:  # noqa: BLE001 -- compared with the other side's
                errors[lib].append((type(exc), str(exc)))
    assert results[tg] == results[torch]
    assert errors[tg] == errors[torch]


@pytest.mark.torch
@pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:DeprecationWarning")  # (torch's forward AD)
@pytest.mark.parametrize("bins", ["counts", "edges"])
@pytest.mark.parametrize("on", ["input", "weight"])
def test_forward_ad_refusal_matches_torch(bins, on):
    def call(L):
        fwad = L.autograd.forward_ad
        with fwad.dual_level():
            x, w = L.tensor(POINTS), L.ones(4)
            if on == "input":
                x = fwad.make_dual(x, L.ones(4, 2))
            else:
                w = fwad.make_dual(w, L.ones(4))
            return L.histogramdd(x, 2 if bins == "counts" else [L.tensor([0.0, 1.0])] * 2, weight=w)
    _same_error(call)


def _edges(L, *rows, dtype=None):
    return [L.tensor(r, dtype=dtype) for r in rows]


ERRORS = [
    # the input
    lambda L: L.histogramdd(L.tensor([1.0, 2.0]), 2),
    lambda L: L.histogramdd(L.tensor(1.0), 2),
    lambda L: L.histogramdd(L.tensor(1.0), [2]),
    lambda L: L.histogramdd(L.tensor([[0, 1], [1, 0]]), 2),
    lambda L: L.histogramdd(L.tensor([[0, 1], [1, 0]]), 2, range=[0.0, 1.0, 0.0, 1.0]),
    lambda L: L.histogramdd(L.zeros(0, 2, dtype=L.int64), 2),
    lambda L: L.histogramdd(L.tensor([[True, False]]), 2),
    lambda L: L.histogramdd(L.tensor([[True, False]]), 2, range=[0.0, 1.0, 0.0, 1.0]),
    lambda L: L.histogramdd(L.tensor([[1 + 1j, 2j]]), 2),
    lambda L: L.histogramdd(L.tensor([[0, 1]]), _edges(L, [0, 1], [0, 1])),
    lambda L: L.histogramdd(L.tensor([[0.0, 1.0]], dtype=L.float16), 2),
    # bin counts
    lambda L: L.histogramdd(L.tensor(POINTS), 0),
    lambda L: L.histogramdd(L.tensor(POINTS), -1),
    lambda L: L.histogramdd(L.tensor(POINTS), -2),
    lambda L: L.histogramdd(L.tensor(POINTS), [2, 0]),
    lambda L: L.histogramdd(L.tensor(POINTS), [2, -1]),
    lambda L: L.histogramdd(L.tensor(POINTS), [2]),
    lambda L: L.histogramdd(L.tensor(POINTS), [2, 2, 2]),
    lambda L: L.histogramdd(L.tensor(POINTS), []),
    lambda L: L.histogramdd(L.tensor(POINTS), [2.0, 3.0]),
    lambda L: L.histogramdd(L.tensor(POINTS), [L.tensor([0.0, 1.0]), 2]),
    # ranges
    lambda L: L.histogramdd(L.tensor(POINTS), 2, range=[0.0, 4.0]),
    lambda L: L.histogramdd(L.tensor(POINTS), 2, range=[0.0, 4.0, 0, 1, 2, 3]),
    lambda L: L.histogramdd(L.tensor(POINTS), 2, range=[0.0, 4.0, 2.0, 1.0]),
    lambda L: L.histogramdd(L.tensor(POINTS), 2, range=[0.0, 4.0, 0.0, INF]),
    lambda L: L.histogramdd(L.tensor(POINTS), 2, range=[INF, 0.0, 0.0, 1.0]),
    lambda L: L.histogramdd(L.tensor(POINTS), 2, range=[0.5, 4.0, NAN, 1.0]),
    lambda L: L.histogramdd(L.tensor([[0.0, 1.0], [INF, 0.0]]), 2),
    lambda L: L.histogramdd(L.tensor([[0.0, 1.0], [1.0, -INF]]), 2),
    lambda L: L.histogramdd(L.tensor([[0.0, 1.0], [NAN, 0.0]]), 2),
    # edges
    lambda L: L.histogramdd(L.tensor(POINTS), _edges(L, [0.0, 1.0])),
    lambda L: L.histogramdd(L.tensor(POINTS), _edges(L, [0.0, 1.0], [0.0, 1.0], [0.0, 1.0])),
    lambda L: L.histogramdd(L.tensor(POINTS), [L.tensor([0.0, 1.0], dtype=L.float64), L.tensor([0.0, 1.0])]),
    lambda L: L.histogramdd(L.tensor(POINTS), [L.tensor([0, 1]), L.tensor([0.0, 1.0])]),
    lambda L: L.histogramdd(L.tensor(POINTS), [L.tensor([[0.0, 1.0]]), L.tensor([0.0, 1.0])]),
    lambda L: L.histogramdd(L.tensor(POINTS), [L.tensor(0.0), L.tensor([0.0, 1.0])]),
    lambda L: L.histogramdd(L.tensor(POINTS), _edges(L, [0.0, 1.0], [])),
    lambda L: L.histogramdd(L.tensor(POINTS), _edges(L, [0.0], [0.0, 1.0])),
    lambda L: L.histogramdd(L.tensor(POINTS), [L.tensor([0.0]), L.tensor([[0.0, 1.0]])]),
    # weights
    lambda L: L.histogramdd(L.tensor(POINTS), 2, weight=L.ones(3)),
    lambda L: L.histogramdd(L.tensor(POINTS), 2, weight=L.ones(4, 1)),
    lambda L: L.histogramdd(L.tensor(POINTS).reshape(2, 2, 2), 2, weight=L.ones(4)),
    lambda L: L.histogramdd(L.tensor(POINTS), 2, weight=L.ones(4, dtype=L.float64)),
    lambda L: L.histogramdd(L.tensor(POINTS), 2, weight=L.ones(4, dtype=L.int64)),
    lambda L: L.histogramdd(L.tensor(POINTS), 2, weight=L.ones(3, dtype=L.float64)),
    lambda L: L.histogramdd(L.tensor(POINTS), _edges(L, [0.0, 1.0], [0.0, 1.0]), weight=L.ones(3)),
    # which check comes first
    lambda L: L.histogramdd(L.tensor([1.0, 2.0]), [2], weight=L.ones(3)),
    lambda L: L.histogramdd(L.tensor(POINTS), [2], weight=L.ones(3)),
    lambda L: L.histogramdd(L.tensor(POINTS), [2], range=[0.0, 1.0]),
    lambda L: L.histogramdd(L.tensor(POINTS), [2], range=[0.0, 1.0, 1.0, 0.0]),
    lambda L: L.histogramdd(L.tensor([[0.0, 1.0], [1.0, INF]]), [2]),
    lambda L: L.histogramdd(L.tensor([[0, 1], [1, 0]]), [2]),
    lambda L: L.histogramdd(L.tensor([[0, 1], [1, 0]]), 2, range=[0.0, 1.0]),
    lambda L: L.histogramdd(L.tensor([[0, 1], [1, 0]]), [2, 0], range=[0.0, 1.0, 0.0, 1.0]),
    lambda L: L.histogramdd(L.tensor([[0, 1], [1, 0]]), 2, range=[0.0, 1.0, 0.0, 1.0], weight=L.ones(3)),
    lambda L: L.histogramdd(L.tensor(POINTS), [2, 0], weight=L.ones(3)),
    lambda L: L.histogramdd(L.tensor(POINTS), [2, -1], weight=L.ones(3)),
    lambda L: L.histogramdd(L.tensor(POINTS), [2, -3], weight=L.ones(3)),
    lambda L: L.histogramdd(L.tensor(POINTS), [0, 2], range=[1.0, 0.0, 0.0, 1.0]),
    lambda L: L.histogramdd(L.tensor(POINTS), _edges(L, [0.0, 1.0]), range=[0.0, 1.0], weight=L.ones(3)),
    lambda L: L.histogramdd(L.tensor(POINTS), [L.tensor([[0.0, 1.0]], dtype=L.float64), L.tensor([0.0])]),
    lambda L: L.histogramdd(L.tensor(POINTS), _edges(L, [0.0], [0.0, 1.0]), weight=L.ones(3)),
    lambda L: L.histogramdd(L.tensor([[0, 1], [1, 0]]), _edges(L, [0, 1], [0]), weight=L.ones(3)),
]


@pytest.mark.torch
@pytest.mark.parametrize("call", ERRORS)
def test_errors_match_torch(call):
    _same_error(call)


@pytest.mark.torch
@pytest.mark.parametrize("call", [
    lambda L: L.histogramdd(L.tensor(POINTS), 2.5), lambda L: L.histogramdd(L.tensor(POINTS), True),
    lambda L: L.histogramdd(L.tensor(POINTS), None), lambda L: L.histogramdd(L.tensor(POINTS), L.tensor([2, 2])),
    lambda L: L.histogramdd(L.tensor(POINTS), 2, range=L.tensor([0.0, 1.0, 0.0, 1.0])),
    lambda L: L.histogramdd(L.tensor(POINTS), 2, range=[None, 1.0, 0.0, 1.0]),
    lambda L: L.histogramdd(L.tensor(POINTS), 2, weight=[1.0, 2.0, 3.0, 4.0]),
    lambda L: L.histogramdd(POINTS, 2)])
def test_argument_type_errors_are_type_errors_as_in_torch(call):
    """PyTorch's argument parser lists its overloads; ours says what it wanted in a line."""
    from .test_sorting_ops import _error
    ours, theirs = _error(call, tg), _error(call, torch)
    assert theirs is not None and ours is not None and ours[0] is theirs[0] is TypeError
