"""The sparse COO layout: construction, conversion, printing, arithmetic with PyTorch's result
layouts, gradients (dense operands, values, sparse leaves), the refusals, and a small graph
convolutional network trained with Adam, against real PyTorch and against dense formulas
and finite differences that run without it."""
import warnings

import numpy as np
import pytest

import tracegrad as tg

try:
    import torch
except ImportError:  # pragma: no cover
    torch = None

_rng = np.random.default_rng(16)
_I = [[1, 0, 1, 2], [2, 0, 2, 1]]  # (1, 2) appears twice: uncoalesced
_V = [3.0, 4.0, 5.0, -1.5]


def _both(indices=_I, values=_V, size=(3, 3), **kw):
    """The same sparse tensor in tracegrad and (when installed) torch."""
    ours = tg.sparse_coo_tensor(indices, values, size, **kw)
    if torch is None:
        return ours, None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's "invariant checks are implicitly disabled"
        return ours, torch.sparse_coo_tensor(indices, values, size, **kw)


def _np(t):
    t = t.detach()
    return (t.to_dense() if t.is_sparse else t).numpy()


def _same(ours, theirs, rtol=1e-6, structure=True):
    """Same layout, shape, dtype and (dense) values; for sparse results with ``structure``,
    the same stored coordinates, values and coalesced flag too."""
    assert ours.is_sparse == theirs.is_sparse
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert ours.dtype.name == str(theirs.dtype).split(".")[1]
    np.testing.assert_allclose(_np(ours), _np(theirs), rtol=rtol, atol=1e-6)
    if ours.is_sparse and structure:
        assert ours._nnz() == theirs._nnz()
        np.testing.assert_array_equal(ours._indices().numpy(), theirs._indices().numpy())
        np.testing.assert_allclose(ours._values().detach().numpy(), theirs._values().detach().numpy(), rtol=rtol)
        assert ours.is_coalesced() == theirs.is_coalesced()


def _repr(t):
    return repr(t).replace("tracegrad.", "torch.")


# -- construction, attributes, printing ---------------------------------------------------------

@pytest.mark.torch
@pytest.mark.parametrize("make", [
    lambda lib: lib.sparse_coo_tensor(_I, _V, (3, 3)),
    lambda lib: lib.sparse_coo_tensor(_I, _V, (3, 3)).coalesce(),
    lambda lib: lib.sparse_coo_tensor(_I, _V, (3, 3), dtype=lib.float64),
    lambda lib: lib.sparse_coo_tensor(_I, [1, 2, 3, 4], (3, 4)),
    lambda lib: lib.sparse_coo_tensor([[0, 1], [1, 2]], [1.0, 2.0]),
    lambda lib: lib.sparse_coo_tensor(lib.zeros(2, 0, dtype=lib.int64), lib.zeros(0), (2, 3)),
    lambda lib: lib.sparse_coo_tensor(_I, _V, (3, 3), requires_grad=True),
    lambda lib: lib.sparse_coo_tensor(_I, _V, (3, 3), requires_grad=True) * 2,
    lambda lib: lib.tensor([[0.0, 1.5, 0.0], [2.0, 0.0, 0.0]]).to_sparse(),
    lambda lib: lib.tensor([[0.0, 1.5], [0.0, 0.0], [2.0, 3.0]]).to_sparse(1),
    lambda lib: lib.diag(lib.tensor([1.0, 2.0, 0.5])).to_sparse(),
    lambda lib: lib.tensor(3.0).to_sparse(),
], ids=["uncoalesced", "coalesced", "float64", "int64", "inferred-size", "empty", "requires-grad",
        "grad-fn", "to_sparse", "to_sparse-hybrid", "diag", "0d"])
def test_construction_and_repr_match_torch(make):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = make(torch)
    ours = make(tg)
    _same(ours, theirs)
    assert ours.layout is tg.sparse_coo and theirs.layout is torch.sparse_coo
    assert (ours._nnz(), ours.sparse_dim(), ours.dense_dim()) == (theirs._nnz(), theirs.sparse_dim(), theirs.dense_dim())
    assert _repr(ours) == repr(theirs).replace("SparseCooTensorWithDimsAndTensorsBackward0", "MulBackward0")
    assert str(ours) == repr(ours)


@pytest.mark.torch
@pytest.mark.parametrize("indices,flag", [([[0]], False), ([[0]], None), ([[0, 1]], True), ([[0, 1]], None),
                                          ([[0, 0]], None), ([[0, 1]], False)])
def test_coalesced_flag_matches_torch(indices, flag):
    values = [1.0] * len(indices[0])
    ours = tg.sparse_coo_tensor(indices, values, (2,), is_coalesced=flag)
    theirs = torch.sparse_coo_tensor(indices, values, (2,), is_coalesced=flag, check_invariants=True)
    assert ours.is_coalesced() == theirs.is_coalesced()


def test_attributes():
    s = tg.sparse_coo_tensor(_I, _V, (3, 3))
    assert s.is_sparse and not tg.ones(2).is_sparse
    assert s.layout is tg.sparse_coo and tg.ones(2).layout is tg.strided
    assert repr(tg.sparse_coo) == "tracegrad.sparse_coo"
    assert s.shape == tg.Size([3, 3]) and s.size() == (3, 3) and s.size(-1) == 3
    assert s.dtype is tg.float32 and s.device == tg.device("cpu") and s.ndim == 2 and s.dim() == 2
    assert s.numel() == 9 and len(s) == 3 and isinstance(s, tg.Tensor) and tg.is_tensor(s)
    assert s.to(tg.float64).dtype is tg.float64 and s.double().dtype is tg.float64
    assert s.long().dtype is tg.int64 and s.to("cpu") is s
    assert s.to_sparse() is s
    assert s._indices().tolist() == _I and s._values().tolist() == _V


def test_indices_and_values_need_a_coalesced_tensor():
    s = tg.sparse_coo_tensor(_I, _V, (3, 3))
    with pytest.raises(RuntimeError, match=r"Cannot get indices on an uncoalesced tensor, please call "
                                           r"\.coalesce\(\) first"):
        s.indices()
    with pytest.raises(RuntimeError, match="Cannot get values on an uncoalesced tensor"):
        s.values()
    c = s.coalesce()
    assert c.is_coalesced() and c.coalesce() is c
    assert c.indices().tolist() == [[0, 1, 2], [0, 2, 1]] and c.values().tolist() == [4.0, 8.0, -1.5]


def test_to_dense_sums_repeated_coordinates():
    dense = tg.sparse_coo_tensor(_I, _V, (3, 3)).to_dense().numpy()
    expected = np.zeros((3, 3), np.float32)
    np.add.at(expected, tuple(np.array(_I)), _V)
    np.testing.assert_array_equal(dense, expected)
    x = _rng.standard_normal((3, 4, 2)).astype(np.float32)
    x[1] = 0
    np.testing.assert_array_equal(tg.tensor(x).to_sparse(1).to_dense().numpy(), x)
    np.testing.assert_array_equal(tg.tensor(x).to_sparse().to_dense().numpy(), x)


@pytest.mark.torch
@pytest.mark.parametrize("args,kwargs", [
    (([[0, 5], [0, 0]], [1.0, 1.0], (2, 3)), {}),
    (([[0, -1]], [1.0, 1.0], (2,)), {}),
    (([[0, 1], [0, 0]], [1.0, 1.0, 1.0], (2, 3)), {}),
    (([0, 1], [1.0, 1.0], (2,)), {}),
    (([[0, 1]], [1.0, 1.0], ()), {}),
    (([[0, 1]], np.ones((2, 3)), (2, 4)), {}),
    (([[1, 0]], [1.0, 2.0], (2,)), {"is_coalesced": True}),
], ids=["out-of-range", "negative", "nnz", "1-d-indices", "short-size", "dense-size", "not-coalesced"])
def test_construction_errors_match_torch(args, kwargs):
    with pytest.raises(RuntimeError) as theirs:
        torch.sparse_coo_tensor(*[torch.tensor(a) if isinstance(a, (list, np.ndarray)) else a for a in args],
                                check_invariants=True, **kwargs)
    with pytest.raises(RuntimeError) as ours:
        tg.sparse_coo_tensor(*args, **kwargs)
    assert str(ours.value) == str(theirs.value).split("\n")[0]


# -- arithmetic and result layouts --------------------------------------------------------------

_D = _rng.standard_normal((3, 2)).astype(np.float32)
_L = _rng.standard_normal((2, 3)).astype(np.float32)
_DENSE_SQ = _rng.standard_normal((3, 3)).astype(np.float32)


def _apply(op, lib, s):
    d, left, sq = (lib.tensor(a) for a in (_D, _L, _DENSE_SQ))
    return {
        "mm": lambda: lib.mm(s, d), "spmm": lambda: lib.spmm(s, d), "sparse.mm": lambda: lib.sparse.mm(s, d),
        "matmul": lambda: s @ d, "matmul-fn": lambda: lib.matmul(s, d), "method-mm": lambda: s.mm(d),
        "matvec": lambda: s @ d[:, 0], "dense@sparse": lambda: left @ s, "mm-dense-sparse": lambda: lib.mm(left, s),
        "sparse@sparse": lambda: s @ s.t(), "sparse.mm-sparse": lambda: lib.sparse.mm(s, s),
        "dense+sparse": lambda: sq + s, "add-alpha": lambda: lib.add(sq, s, alpha=2),
        "dense-sparse": lambda: sq - s, "sparse+sparse": lambda: s + s,
        "sparse+coalesced": lambda: s.coalesce() + (s * 2).coalesce(), "sparse-sparse": lambda: s - s.t(),
        "sparse*scalar": lambda: s * 2.5, "scalar*sparse": lambda: 3 * s, "sparse/scalar": lambda: s / 4,
        "neg": lambda: -s, "sum": lambda: lib.sum(s), "sum-method": lambda: s.sum(),
        "sum-dim1": lambda: lib.sum(s, dim=1), "sum-dim0": lambda: s.sum(0), "sum-keepdim": lambda: lib.sum(s, 1, keepdim=True),
        "sum-all-dims": lambda: s.sum(dim=(0, 1)), "sparse.sum": lambda: lib.sparse.sum(s, dim=0),
        "sum-dtype": lambda: lib.sum(s, dtype=lib.float64), "t": lambda: s.t(), "transpose": lambda: s.transpose(0, 1),
        "eye+sparse": lambda: lib.eye(3) + s, "to_dense": lambda: s.to_dense(), "coalesce": lambda: s.coalesce(),
        "clone": lambda: s.clone(), "detach": lambda: s.detach(),
    }[op]()


_OPS = ["mm", "spmm", "sparse.mm", "matmul", "matmul-fn", "method-mm", "matvec", "dense@sparse", "mm-dense-sparse",
        "sparse@sparse", "sparse.mm-sparse", "dense+sparse", "add-alpha", "dense-sparse", "sparse+sparse",
        "sparse+coalesced", "sparse-sparse", "sparse*scalar", "scalar*sparse", "sparse/scalar", "neg", "sum",
        "sum-method", "sum-dim1", "sum-dim0", "sum-keepdim", "sum-all-dims", "sparse.sum", "sum-dtype", "t",
        "transpose", "eye+sparse", "to_dense", "coalesce", "clone", "detach"]


@pytest.mark.torch
@pytest.mark.parametrize("op", _OPS)
def test_arithmetic_matches_torch(op):
    ours, theirs = _both()
    got, expected = _apply(op, tg, ours), _apply(op, torch, theirs)
    if op == "sparse-sparse":  # two uncoalesced operands: torch's order of the entries is its own
        got, expected = got.coalesce(), expected.coalesce()
    _same(got, expected, rtol=1e-5)


@pytest.mark.torch
def test_integer_adjacency_plus_eye_promotes_as_torch():
    """ex_gcn's ``torch.eye(V) + sparse_coo_tensor(..., dtype=torch.int64)``."""
    ours = tg.sparse_coo_tensor([[0, 1, 2], [1, 2, 0]], tg.ones(3), (3, 3), dtype=tg.int64)
    theirs = torch.sparse_coo_tensor([[0, 1, 2], [1, 2, 0]], torch.ones(3), (3, 3), dtype=torch.int64,
                                     check_invariants=True)
    _same(tg.eye(3) + ours, torch.eye(3) + theirs)
    _same(tg.sum(ours), torch.sum(theirs))
    _same(ours * 2.5, theirs * 2.5)


def test_products_equal_dense_products():
    s = tg.sparse_coo_tensor(_I, _V, (3, 3))
    a = s.to_dense().numpy()
    np.testing.assert_allclose(tg.mm(s, tg.tensor(_D)).numpy(), a @ _D, rtol=1e-6)
    np.testing.assert_allclose((tg.tensor(_L) @ s).numpy(), _L @ a, rtol=1e-6)
    np.testing.assert_allclose((s @ s).to_dense().numpy(), a @ a, rtol=1e-6)
    np.testing.assert_allclose((tg.tensor(_DENSE_SQ) + s).numpy(), _DENSE_SQ + a, rtol=1e-6)
    np.testing.assert_allclose(tg.sum(s, 0).to_dense().numpy(), a.sum(0), rtol=1e-6)


def test_dense_paths_are_unchanged():
    a, b = tg.tensor(_L), tg.tensor(_D)
    np.testing.assert_allclose(tg.mm(a, b).numpy(), _L @ _D, rtol=1e-6)
    np.testing.assert_allclose(tg.spmm(a, b).numpy(), _L @ _D, rtol=1e-6)
    assert tg.sum(a).item() == pytest.approx(float(_L.sum()), rel=1e-6)
    np.testing.assert_allclose(tg.add(a, a, alpha=2).numpy(), 3 * _L, rtol=1e-6)
    assert tg.mm.__wrapped__ is not None and tg.mm.__name__ == "mm"


# -- refusals: never computed on the wrong data -------------------------------------------------

@pytest.mark.parametrize("op,name", [
    (lambda s: s.exp(), "exp"), (lambda s: tg.exp(s), "exp"), (lambda s: s.mean(), "mean"),
    (lambda s: tg.relu(s), "relu"), (lambda s: tg.nn.functional.relu(s), "relu"), (lambda s: s.log(), "log"),
    (lambda s: s.view(9), "view"), (lambda s: s[0], "getitem"), (lambda s: s / tg.ones(3, 3), "div"),
    (lambda s: s.max(), "max"), (lambda s: tg.cat([s, s]), "cat"),
    (lambda s: s.reshape(9), "reshape"), (lambda s: bool(s), "is_nonzero"), (lambda s: tg.ones(3, 3).mm(s), "mm"),
    (lambda s: s.pow(0), "pow"), (lambda s: tg.nn.functional.linear(s, tg.ones(2, 3)), "mm"),
])
def test_other_ops_refuse_by_name(op, name):
    s = tg.sparse_coo_tensor(_I, _V, (3, 3))
    with pytest.raises(NotImplementedError, match=rf"Could not run 'aten::{name}' with arguments from the "
                                                  r"'SparseCPU' backend"):
        op(s)


@pytest.mark.torch
@pytest.mark.parametrize("op", [
    lambda lib, s: s + 1, lambda lib, s: s + lib.ones(3, 3), lambda lib, s: lib.mm(s, lib.ones(4, 2)),
    lambda lib, s: lib.mm(s, lib.ones(3, 2, dtype=lib.float64)), lambda lib, s: lib.ones(2, 2) @ s,
    lambda lib, s: s + lib.sparse_coo_tensor([[0]], [1.0], (4,)),
], ids=["plus-number", "plus-dense", "shape", "dtype", "dense-shape", "sparse-size"])
def test_errors_match_torch(op):
    ours, theirs = _both()
    with pytest.raises(RuntimeError) as expected:
        op(torch, theirs)
    with pytest.raises(RuntimeError) as got:
        op(tg, ours)
    assert str(got.value) == str(expected.value)


@pytest.mark.torch
@pytest.mark.parametrize("op", [
    lambda lib, s: lib.zeros_like(s), lambda lib, s: lib.empty_like(s).to_dense() * 0, lambda lib, s: s.new_zeros(4),
    lambda lib, s: lib.zeros_like(s, layout=lib.strided), lambda lib, s: s.data, lambda lib, s: s.new_zeros((2, 5)),
], ids=["zeros_like", "empty_like", "new_zeros", "zeros_like-strided", "data", "new_zeros-tuple"])
def test_creation_like_a_sparse_tensor_matches_torch(op):
    ours, theirs = _both()
    _same(op(tg, ours), op(torch, theirs))


@pytest.mark.torch
@pytest.mark.parametrize("op", [lambda lib, s: lib.ones_like(s), lambda lib, s: lib.full_like(s, 2.0),
                                lambda lib, s: lib.rand_like(s), lambda lib, s: lib.randn_like(s),
                                lambda lib, s: s.new_ones(2), lambda lib, s: s.new_full((2,), 1.0)])
def test_filled_creation_refuses_as_torch(op):
    ours, theirs = _both()
    with pytest.raises(NotImplementedError) as expected:
        op(torch, theirs)
    with pytest.raises(NotImplementedError) as got:
        op(tg, ours)
    assert str(got.value).split(" with arguments")[0] == str(expected.value).split(" with arguments")[0]


def test_numpy_refuses_as_torch():
    with pytest.raises(TypeError, match=r"can't convert Sparse layout tensor to numpy\. Use "
                                        r"Tensor\.to_dense\(\) first\."):
        tg.sparse_coo_tensor(_I, _V, (3, 3)).numpy()


@pytest.mark.parametrize("op", [lambda s, d: tg.mm(s, d), lambda s, d: s @ d, lambda s, d: tg.spmm(s, d),
                                lambda s, d: d.t() @ s, lambda s, d: tg.sum(s), lambda s, d: tg.ones(3, 3) + s],
                         ids=["mm", "matmul", "spmm", "dense@sparse", "sum", "dense+sparse"])
def test_dense_gradient_of_a_sparse_leaf_is_refused(op):
    """PyTorch gives a sparse leaf a dense gradient through these: refused, not re-laid out."""
    s = tg.sparse_coo_tensor(_I, _V, (3, 3), requires_grad=True)
    with pytest.raises(NotImplementedError, match="sparse leaf tensor that requires grad: PyTorch gives that "
                                                  "leaf a dense \\(strided\\) gradient"):
        op(s, tg.tensor(_D))
    with tg.no_grad():
        op(s, tg.tensor(_D))  # nothing to differentiate: fine


# -- gradients ----------------------------------------------------------------------------------

@pytest.mark.torch
@pytest.mark.parametrize("op", ["mm", "spmm", "matmul", "dense@sparse", "sparse.mm", "sparse@sparse",
                                "dense+sparse", "sum", "to_dense", "coalesce", "sparse*scalar",
                                "sparse+sparse", "t"])
def test_values_and_dense_gradients_match_torch(op):
    """Through a sparse tensor made from values that require grad (a non-leaf, as in torch),
    with a repeated coordinate: the values' and the dense operands' gradients."""
    got = {}
    for lib in (tg, torch):
        values = lib.tensor(_V, requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            s = lib.sparse_coo_tensor(_I, values, (3, 3))
        assert s.requires_grad and not s.is_leaf
        out = _apply(op, lib, s)
        out = out.to_dense() if out.is_sparse else out
        weights = lib.tensor(np.linspace(-1, 2, out.numel(), dtype=np.float32).reshape(tuple(out.shape)))
        (out * weights).sum().backward()
        got[lib] = values.grad.numpy()
    np.testing.assert_allclose(got[tg], got[torch], rtol=1e-5, atol=1e-6)


@pytest.mark.torch
@pytest.mark.parametrize("op", ["mm", "spmm", "matmul", "sparse.mm"])
def test_dense_operand_gradient_matches_torch(op):
    got = {}
    for lib in (tg, torch):
        _, s = _both() if lib is torch else (None, tg.sparse_coo_tensor(_I, _V, (3, 3)))
        s = tg.sparse_coo_tensor(_I, _V, (3, 3)) if lib is tg else s
        d = lib.tensor(_D, requires_grad=True)
        fn = {"mm": lib.mm, "spmm": lib.spmm, "matmul": lambda a, b: a @ b, "sparse.mm": lib.sparse.mm}[op]
        (fn(s, d) ** 2).sum().backward()
        got[lib] = d.grad.numpy()
    np.testing.assert_allclose(got[tg], got[torch], rtol=1e-5)


@pytest.mark.torch
@pytest.mark.parametrize("op", ["sparse.mm", "to_dense", "sparse*scalar", "coalesce", "sparse+sparse",
                                "sparse@sparse", "t", "sparse.mm-sparse"])
def test_sparse_leaf_gradient_matches_torch(op):
    """A sparse leaf gets a sparse gradient at its coalesced coordinates (a repeated
    coordinate counted once), as in torch."""
    ours, theirs = _both(requires_grad=True)
    for lib, s in ((tg, ours), (torch, theirs)):
        out = _apply(op, lib, s)
        out = out.to_dense() if out.is_sparse else out
        weights = lib.tensor(np.linspace(-1, 2, out.numel(), dtype=np.float32).reshape(tuple(out.shape)))
        (out * weights).sum().backward()
    assert ours.is_leaf and ours.grad.is_sparse
    _same(ours.grad, theirs.grad, rtol=1e-5, structure=False)  # (torch's order/flag vary by op)
    np.testing.assert_array_equal(ours.grad._indices().numpy(), ours.coalesce()._indices().numpy())
    ours.grad = None
    assert ours.grad is None


def test_gradients_match_finite_differences():
    """float64 gradcheck of the values and the dense operand, through products, sums and
    conversions (runs without torch)."""
    idx = tg.tensor(_I)
    values = tg.tensor(np.array(_V), dtype=tg.float64, requires_grad=True)
    dense = tg.tensor(_rng.standard_normal((3, 2)), requires_grad=True)
    left = tg.tensor(_rng.standard_normal((2, 3)))

    def f(v, d):
        s = tg.sparse_coo_tensor(idx, v, (3, 3))
        return ((s @ d) ** 2).sum() + (left @ s).sin().sum() + (s @ s).to_dense()[0, 1] \
            + tg.sum(s, 1).to_dense().prod() + (s.coalesce() * 3).to_dense().sum()

    assert tg.autograd.gradcheck(f, (values, dense))
    assert tg.autograd.gradgradcheck(lambda v, d: (tg.sparse.mm(tg.sparse_coo_tensor(idx, v, (3, 3)), d) ** 2).sum(),
                                     (values, dense))


def test_sparse_leaf_gradient_by_hand():
    """d/dA sum(W * (A @ D)) = W @ D^T, read at A's stored coordinates (once per coordinate)."""
    s = tg.sparse_coo_tensor(_I, _V, (3, 3), requires_grad=True)
    w = _rng.standard_normal((3, 2)).astype(np.float32)
    (tg.sparse.mm(s, tg.tensor(_D)) * tg.tensor(w)).sum().backward()
    g = s.grad
    assert g.is_sparse and g._nnz() == 3
    full = w @ _D.T
    coords = g._indices().numpy()
    np.testing.assert_array_equal(coords, [[0, 1, 2], [0, 2, 1]])
    np.testing.assert_allclose(g._values().numpy(), full[coords[0], coords[1]], rtol=1e-5)


# -- a graph convolutional network (PyTorch's examples/gcn), trained with Adam --------------------

def _gcn_classes(lib):
    nn = lib.nn

    class GraphConv(nn.Module):
        def __init__(self, input_dim, output_dim, use_bias=False):
            super().__init__()
            self.kernel = nn.Parameter(lib.Tensor(input_dim, output_dim))
            nn.init.xavier_normal_(self.kernel)
            self.bias = nn.Parameter(lib.zeros(output_dim)) if use_bias else None

        def forward(self, x, adj):
            out = lib.spmm(adj, lib.mm(x, self.kernel))
            return out + self.bias if self.bias is not None else out

    class GCN(nn.Module):
        def __init__(self, input_dim, hidden_dim, output_dim):
            super().__init__()
            self.gc1 = GraphConv(input_dim, hidden_dim, use_bias=True)
            self.gc2 = GraphConv(hidden_dim, output_dim, use_bias=True)

        def forward(self, x, adj):
            return lib.nn.functional.log_softmax(self.gc2(lib.relu(self.gc1(x, adj)), adj), dim=1)

    return GCN


def _graph(lib, sparse_adjacency=True):
    """ex_gcn's preprocessing on a random graph: scaled sparse features, A + I normalised
    by D^-1/2 on both sides, all through sparse tensors."""
    rng = np.random.RandomState(3)
    v, f, e = 30, 12, 60
    feats = lib.tensor((rng.rand(v, f) < 0.2).astype(np.float32) + np.eye(v, f, dtype=np.float32))
    scale = 1 / lib.sum(feats, dim=1)
    scale[scale == float("inf")] = 0
    features = lib.diag(scale).to_sparse() @ feats
    edges = rng.randint(0, v, size=(2, e))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        adj = lib.sparse_coo_tensor(edges, lib.ones(e), (v, v), dtype=lib.int64)
    adj = lib.eye(v) + adj
    degree = lib.diag(lib.sqrt(1 / lib.sum(adj, dim=1))).to_sparse()
    adj = degree @ adj @ degree
    labels = lib.tensor(rng.randint(0, 4, size=v))
    if not sparse_adjacency:
        return features, adj, labels
    return features.to_sparse(), adj.to_sparse(), labels


def _train(lib, state, steps=4, sparse_adjacency=True):
    features, adj, labels = _graph(lib, sparse_adjacency)
    lib.manual_seed(0)
    model = _gcn_classes(lib)(12, 8, 4)
    with lib.no_grad():
        for name, p in model.named_parameters():
            p.copy_(lib.tensor(state[name]))
    opt = lib.optim.Adam(model.parameters(), lr=0.05, weight_decay=5e-4)
    losses, mask = [], lib.arange(20)
    for _ in range(steps):
        opt.zero_grad()
        loss = lib.nn.functional.nll_loss(model(features, adj)[mask], labels[mask])
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return np.array(losses), {n: p.detach().numpy().copy() for n, p in model.named_parameters()}


def _initial_state():
    rng = np.random.RandomState(5)
    return {"gc1.kernel": rng.randn(12, 8).astype(np.float32) * 0.3, "gc1.bias": np.zeros(8, np.float32),
            "gc2.kernel": rng.randn(8, 4).astype(np.float32) * 0.3, "gc2.bias": np.zeros(4, np.float32)}


@pytest.mark.torch
def test_gcn_trains_like_torch():
    ours, our_params = _train(tg, _initial_state())
    theirs, their_params = _train(torch, _initial_state())
    np.testing.assert_allclose(ours, theirs, rtol=1e-5)
    assert ours[-1] < ours[0]
    for name in their_params:
        np.testing.assert_allclose(our_params[name], their_params[name], rtol=1e-4, atol=1e-6)


def test_gcn_sparse_equals_dense_adjacency():
    """The same training with the adjacency and features kept dense (runs without torch)."""
    sparse_losses, sparse_params = _train(tg, _initial_state())
    dense_losses, dense_params = _train(tg, _initial_state(), sparse_adjacency=False)
    np.testing.assert_allclose(sparse_losses, dense_losses, rtol=1e-5)
    for name in dense_params:
        np.testing.assert_allclose(sparse_params[name], dense_params[name], rtol=1e-4, atol=1e-6)


def test_product_without_scipy_matches(monkeypatch):
    """The NumPy kernel (SciPy missing) gives the SciPy kernel's products and gradients."""
    from tracegrad.rules import sparse as rule
    s = tg.sparse_coo_tensor(_I, _V, (3, 3))

    def run():
        d = tg.tensor(_D, requires_grad=True)
        out = tg.mm(s, d)
        (out ** 2).sum().backward()
        return out.detach().numpy(), d.grad.numpy()

    with_scipy = run()
    monkeypatch.setattr(rule, "_SCIPY", [None])
    assert rule.scipy_sparse() is None
    without = run()
    for a, b in zip(with_scipy, without):
        np.testing.assert_allclose(a, b, rtol=1e-6)


def test_a_custom_function_saves_a_sparse_tensor():
    """pyGAT's SpecialSpmmFunction: a sparse matrix saved for the backward."""
    class SparseProduct(tg.autograd.Function):
        @staticmethod
        def forward(ctx, indices, values, b):
            a = tg.sparse_coo_tensor(indices, values, (2, 2))
            ctx.save_for_backward(a, b)
            return tg.matmul(a, b)

        @staticmethod
        def backward(ctx, g):
            a, b = ctx.saved_tensors
            return None, None, a.t().matmul(g)
    b = tg.ones(2, 1, requires_grad=True)
    SparseProduct.apply(tg.tensor([[0, 1], [1, 0]]), tg.tensor([2.0, 3.0]), b).sum().backward()
    assert b.grad.tolist() == [[3.0], [2.0]]
    assert tg.sparse_coo_tensor(tg.tensor([[0]]), tg.tensor([1.0]), (2,))._version == 0


def test_legacy_sparse_constructors():
    """``torch.sparse.FloatTensor(indices, values, size)`` (Kipf's pygcn), with PyTorch's
    deprecation warning; the values keep their dtype, as in PyTorch."""
    i, v = tg.tensor([[0, 1], [1, 0]]), tg.tensor([2.0, 3.0])
    with pytest.warns(UserWarning, match=r"torch.sparse.SparseTensor\(indices, values, shape, \*, device=\) is "
                                         "deprecated"):
        a = tg.sparse.FloatTensor(i, v, tg.Size([2, 2]))
    assert a.is_sparse and a.to_dense().tolist() == [[0.0, 2.0], [3.0, 0.0]]
    with pytest.warns(UserWarning):
        assert tg.sparse.DoubleTensor(i, v).dtype is tg.float32 and tg.sparse.FloatTensor(i, v).shape == (2, 2)
    with pytest.warns(UserWarning, match=r"SparseTensor\(shape, \*, device=\)"):
        empty = tg.sparse.LongTensor(2, 3)
    assert empty.shape == (2, 3) and empty._nnz() == 0 and empty.dtype is tg.int64
    assert isinstance(a, tg.sparse.FloatTensor) and not isinstance(tg.ones(2), tg.sparse.FloatTensor)
    assert repr(tg.sparse.FloatTensor) == "<class 'tracegrad.sparse.FloatTensor'>"
