"""Flatten/Unflatten, the activation layers, the dropout layers, Embedding and PReLU."""
import math

import numpy as np
import pytest

import tracegrad as tg
import tracegrad.nn.functional as F
from tracegrad import nn

from ._oracle import compare_modules, copy_weights

rng = np.random.default_rng(3)


def _np(t):
    return t.detach().numpy()


# -- reshaping layers ----------------------------------------------------------------------------------

def test_flatten_and_unflatten():
    x = tg.randn(2, 3, 4, 5)
    assert nn.Flatten()(x).shape == (2, 60)
    assert nn.Flatten(0, 2)(x).shape == (24, 5)
    assert repr(nn.Flatten()) == "Flatten(start_dim=1, end_dim=-1)"
    u = nn.Unflatten(1, (3, 4))
    assert u(tg.randn(2, 12, 5)).shape == (2, 3, 4, 5)
    assert repr(u) == "Unflatten(dim=1, unflattened_size=(3, 4))"
    with pytest.raises(TypeError, match="unflattened_size must be tuple of ints, but found element of type float at pos 1"):
        nn.Unflatten(1, (3, 4.0))
    with pytest.raises(TypeError, match="unflattened_size must be a tuple of ints, but found type int"):
        nn.Unflatten(1, 12)


# -- activations ------------------------------------------------------------------------------------------

_ACTIVATIONS = [
    ("ReLU", (), lambda x: np.maximum(x, 0)), ("ReLU6", (), lambda x: np.clip(x, 0, 6)),
    ("LeakyReLU", (0.2,), lambda x: np.where(x > 0, x, 0.2 * x)), ("Sigmoid", (), lambda x: 1 / (1 + np.exp(-x))),
    ("Tanh", (), np.tanh), ("SiLU", (), lambda x: x / (1 + np.exp(-x))),
    ("ELU", (0.5,), lambda x: np.where(x > 0, x, 0.5 * (np.exp(x) - 1))),
    ("Softplus", (2.0,), lambda x: np.log1p(np.exp(2 * x)) / 2),
    ("Hardtanh", (-0.5, 0.7), lambda x: np.clip(x, -0.5, 0.7)),
    ("Mish", (), lambda x: x * np.tanh(np.log1p(np.exp(x)))),
    ("GELU", (), lambda x: 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))),
    ("GELU", ("tanh",), lambda x: 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))),
    ("Softmax", (1,), lambda x: np.exp(x) / np.exp(x).sum(1, keepdims=True)),
    ("LogSoftmax", (0,), lambda x: x - np.log(np.exp(x).sum(0, keepdims=True))),
    ("Softmin", (1,), lambda x: np.exp(-x) / np.exp(-x).sum(1, keepdims=True)),
    ("LogSigmoid", (), lambda x: -np.log1p(np.exp(-x))), ("Softsign", (), lambda x: x / (1 + np.abs(x))),
    ("Tanhshrink", (), lambda x: x - np.tanh(x)),
    ("Hardshrink", (0.3,), lambda x: np.where(np.abs(x) > 0.3, x, 0)),
    ("Softshrink", (0.3,), lambda x: np.sign(x) * np.maximum(np.abs(x) - 0.3, 0)),
    ("Threshold", (0.1, 20.0), lambda x: np.where(x > 0.1, x, 20.0)),
    ("CELU", (2.0,), lambda x: np.where(x > 0, x, 2.0 * (np.exp(x / 2.0) - 1))),
    ("SELU", (), lambda x: 1.0507009873554805 * np.where(x > 0, x, 1.6732632423543772 * (np.exp(x) - 1))),
    ("Hardsigmoid", (), lambda x: np.clip(x / 6 + 0.5, 0, 1)),
    ("Hardswish", (), lambda x: x * np.clip(x + 3, 0, 6) / 6),
]


@pytest.mark.parametrize("name,args,ref", _ACTIVATIONS, ids=[f"{a[0]}{a[1]}" for a in _ACTIVATIONS])
def test_activation_layers_match_formulas(name, args, ref):
    x = rng.standard_normal((3, 4)) * 2
    m = getattr(nn, name)(*args)
    np.testing.assert_allclose(_np(m(tg.tensor(x))), ref(x), rtol=1e-10, atol=1e-12)
    assert list(m.parameters()) == []
    assert tg.autograd.gradcheck(m, (tg.tensor(x + 0.05, requires_grad=True),))


def test_activation_inplace_and_reprs():
    x = tg.randn(5)
    before = _np(x).copy()
    y = nn.ReLU(inplace=True)(x)
    assert y is x and x._version == 1
    np.testing.assert_array_equal(_np(x), np.maximum(before, 0))
    assert repr(nn.ReLU()) == "ReLU()" and repr(nn.ReLU(True)) == "ReLU(inplace=True)"
    assert repr(nn.LeakyReLU(0.1, inplace=True)) == "LeakyReLU(negative_slope=0.1, inplace=True)"
    assert repr(nn.GELU()) == "GELU(approximate='none')"
    assert repr(nn.Softmax(dim=-1)) == "Softmax(dim=-1)"
    assert repr(nn.ELU()) == "ELU(alpha=1.0)" and repr(nn.ReLU6(True)) == "ReLU6(inplace=True)"
    assert repr(nn.Hardtanh()) == "Hardtanh(min_val=-1.0, max_val=1.0)"
    assert repr(nn.Softplus()) == "Softplus(beta=1.0, threshold=20.0)"
    with pytest.raises(AssertionError, match=r"max_val \(0\) must be greater than min_val \(1\)"):
        nn.Hardtanh(1, 0)


def test_softmax_without_dim_warns():
    with pytest.warns(UserWarning, match="Implicit dimension choice for softmax has been deprecated"):
        out = nn.Softmax()(tg.randn(2, 3))
    np.testing.assert_allclose(_np(out).sum(1), np.ones(2), rtol=1e-6)


def test_prelu_layer():
    m = nn.PReLU(3, init=0.1)
    np.testing.assert_array_equal(_np(m.weight), np.full(3, 0.1, np.float32))
    assert repr(m) == "PReLU(num_parameters=3)"
    x = tg.randn(2, 3, 4, requires_grad=True)
    y = m(x)
    xv = _np(x)
    np.testing.assert_allclose(_np(y), np.where(xv > 0, xv, 0.1 * xv), rtol=1e-6)
    y.sum().backward()
    np.testing.assert_allclose(_np(m.weight.grad), np.minimum(xv, 0).sum((0, 2)), rtol=1e-5)


# -- dropout layers -------------------------------------------------------------------------------------------

def test_dropout_layers_follow_training_mode():
    d = nn.Dropout(0.4)
    assert repr(d) == "Dropout(p=0.4, inplace=False)"
    x = tg.ones(100, 100)
    tg.manual_seed(0)
    v = _np(d(x))
    assert abs((v == 0).mean() - 0.4) < 0.03 and set(np.unique(v)) <= {0.0, np.float32(1 / 0.6)}
    d.eval()
    assert d(x) is x
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1, but got 1.2"):
        nn.Dropout(1.2)
    for cls, shape in ((nn.Dropout1d, (4, 6, 3)), (nn.Dropout2d, (4, 6, 3, 3)), (nn.Dropout3d, (2, 6, 2, 2, 2))):
        v = _np(cls(0.5)(tg.ones(*shape))).reshape(shape[0], shape[1], -1)
        assert (v.min(-1) == v.max(-1)).all()
        assert cls(0.5).eval()(tg.ones(*shape)).tolist() == tg.ones(*shape).tolist()
    assert nn.AlphaDropout(0.5).eval()(x) is x


# -- embedding --------------------------------------------------------------------------------------------------

def test_embedding_layer():
    tg.manual_seed(0)
    e = nn.Embedding(1000, 50, padding_idx=-1)
    w = _np(e.weight)
    assert e.padding_idx == 999 and (w[999] == 0).all()
    assert abs(w[:999].mean()) < 0.01 and abs(w[:999].std() - 1) < 0.01  # N(0, 1)
    assert repr(e) == "Embedding(1000, 50, padding_idx=999)"
    idx = tg.tensor([[3, 999], [3, 4]])
    out = e(idx)
    assert out.shape == (2, 2, 50)
    out.sum().backward()
    g = _np(e.weight.grad)
    assert (g[3] == 2).all() and (g[4] == 1).all() and (g[999] == 0).all() and g.sum() == 150
    assert repr(nn.Embedding(3, 2, max_norm=1.0, norm_type=1.0)) == "Embedding(3, 2, max_norm=1.0, norm_type=1.0)"
    with pytest.raises(AssertionError, match="Padding_idx must be within num_embeddings"):
        nn.Embedding(3, 2, padding_idx=3)


def test_embedding_from_pretrained():
    table = tg.tensor([[1.0, 2.0], [3.0, 4.0]])
    e = nn.Embedding.from_pretrained(table)
    assert not e.weight.requires_grad and e.weight.tolist() == table.tolist()
    assert e(tg.tensor([1])).tolist() == [[3.0, 4.0]]
    assert nn.Embedding.from_pretrained(table, freeze=False).weight.requires_grad
    with pytest.raises(AssertionError, match="Embeddings parameter is expected to be 2-dimensional"):
        nn.Embedding.from_pretrained(tg.ones(3))
    with pytest.raises(AssertionError, match="Shape of weight does not match num_embeddings and embedding_dim"):
        nn.Embedding(3, 2, _weight=tg.ones(2, 2))


# -- against PyTorch ------------------------------------------------------------------------------------------------

_TORCH_LAYERS = [(name, args) for name, args, _ in _ACTIVATIONS] + [
    ("ReLU", (True,)), ("LeakyReLU", (0.1, True)), ("ELU", (1.0, True)), ("Hardtanh", (-2.0, 2.0, True)),
    ("Flatten", ()), ("Flatten", (0, 1)), ("Unflatten", (1, (2, 2))), ("Identity", ()), ("PReLU", (4,)),
    ("Softmax", (-1,)), ("Dropout", (0.3,)), ("Dropout1d", (0.5, True))]


@pytest.mark.torch
@pytest.mark.parametrize("name,args", _TORCH_LAYERS, ids=[f"{a[0]}{a[1]}" for a in _TORCH_LAYERS])
def test_layers_match_torch(name, args):
    torch = pytest.importorskip("torch")
    theirs, ours = getattr(torch.nn, name)(*args), getattr(nn, name)(*args)
    assert repr(ours) == repr(theirs)
    copy_weights(theirs, ours)
    if name.startswith("Dropout"):
        theirs.eval()
        ours.eval()
    x = (rng.standard_normal((3, 4, 5)) * 2).astype("float32")
    if getattr(ours, "inplace", False):  # an in-place layer needs a non-leaf input
        t_in, o_in = torch.tensor(x, requires_grad=True), tg.tensor(x, requires_grad=True)
        t_out, o_out = theirs(t_in * 1), ours(o_in * 1)
        np.testing.assert_allclose(_np(o_out), t_out.detach().numpy(), rtol=1e-5, atol=1e-6)
        assert o_out.grad_fn.name() == t_out.grad_fn.name()
        return
    compare_modules(theirs, ours, x, rtol=1e-5, atol=1e-6)


@pytest.mark.torch
def test_embedding_matches_torch():
    torch = pytest.importorskip("torch")
    theirs, ours = torch.nn.Embedding(7, 3, padding_idx=2), nn.Embedding(7, 3, padding_idx=2)
    copy_weights(theirs, ours)
    assert repr(ours) == repr(theirs)
    compare_modules(theirs, ours, np.array([[1, 2, 6], [2, 2, 0]]))
    assert F.embedding(tg.tensor([1]), ours.weight).grad_fn.name() == "EmbeddingBackward0"
