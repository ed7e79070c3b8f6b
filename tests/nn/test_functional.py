"""tracegrad.nn.functional: linear, bilinear, prelu, the dropouts, embedding, one_hot, pad.

Values are checked against NumPy formulas, gradients by ``gradcheck`` (float64 finite
differences) or hand formulas; errors by type and message; the ``torch`` tests compare
values, gradients and node names with PyTorch itself."""
import numpy as np
import pytest

import tracegrad as tg
import tracegrad.nn.functional as F
from tracegrad.autograd import gradcheck

rng = np.random.default_rng(0)


def t64(*shape, requires_grad=True):
    return tg.tensor(rng.standard_normal(shape), requires_grad=requires_grad)


def _np(t):
    return t.detach().numpy()


# -- linear, bilinear, prelu -------------------------------------------------------------------------

@pytest.mark.parametrize("shape,bias,node", [((4, 3), True, "AddmmBackward0"), ((4, 3), False, "MmBackward0"),
                                             ((2, 4, 3), True, "ViewBackward0"),
                                             ((2, 4, 3), False, "UnsafeViewBackward0"),
                                             ((3,), True, "ViewBackward0"), ((3,), False, "SqueezeBackward4"),
                                             ((0, 3), True, "AddmmBackward0")])
def test_linear_values_grads_and_nodes(shape, bias, node):
    x, w = t64(*shape), t64(5, 3)
    b = t64(5) if bias else None
    y = F.linear(x, w, b)
    expected = _np(x) @ _np(w).T + (_np(b) if bias else 0)
    np.testing.assert_allclose(_np(y), expected, rtol=1e-12)
    assert y.grad_fn.name() == node
    inputs = (x, w, b) if bias else (x, w)
    assert gradcheck(lambda *a: F.linear(*a), inputs)


def test_linear_errors():
    x = tg.randn(4, 3)
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied \(4x3 and 4x5\)"):
        F.linear(x, tg.randn(5, 4), tg.randn(5))
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied \(8x3 and 4x5\)"):
        F.linear(tg.randn(2, 4, 3), tg.randn(5, 4), tg.randn(5))
    with pytest.raises(RuntimeError, match="both arguments to linear need to be at least 1D, but they are 0D and 2D"):
        F.linear(tg.tensor(1.0), tg.randn(5, 3))
    with pytest.raises(TypeError, match=r"linear\(\): argument 'weight' \(position 2\) must be Tensor, not list"):
        F.linear(x, [1.0])
    with pytest.raises(RuntimeError, match="expected m1 and m2 to have the same dtype"):
        F.linear(x, tg.randn(5, 3, dtype=tg.float64))


def test_bilinear():
    x1, x2, w, b = t64(2, 3, 4), t64(2, 3, 5), t64(6, 4, 5), t64(6)
    y = F.bilinear(x1, x2, w, b)
    expected = np.einsum("bni,oij,bnj->bno", _np(x1), _np(w), _np(x2)) + _np(b)
    np.testing.assert_allclose(_np(y), expected, rtol=1e-12)
    assert gradcheck(F.bilinear, (x1, x2, w, b))
    assert gradcheck(F.bilinear, (t64(3, 2), t64(3, 4), t64(2, 2, 4)))
    with pytest.raises(RuntimeError, match="bilinear\\(\\): input2 size does not match weight size: got 5 but expected 4"):
        F.bilinear(x1, x2, t64(6, 4, 4))
    with pytest.raises(RuntimeError, match="input batch dimensions do not match at dim 0: got 2 and 3"):
        F.bilinear(t64(2, 4), t64(3, 5), w)
    with pytest.raises(RuntimeError, match="bilinear\\(\\): input dimensions do not match: got 3 and 2"):
        F.bilinear(x1, t64(2, 5), w)
    with pytest.raises(RuntimeError, match="bias size does not match weight size: got 3 but expected 6"):
        F.bilinear(x1, x2, w, t64(3))


def test_prelu():
    x, w = t64(3, 4, 2), t64(4)
    y = F.prelu(x, w)
    xv = _np(x)
    np.testing.assert_allclose(_np(y), np.where(xv > 0, xv, _np(w)[:, None] * xv))
    assert gradcheck(F.prelu, (x, w)) and gradcheck(F.prelu, (x, t64(1)))
    with pytest.raises(RuntimeError, match="Mismatch of parameter numbers and input channel size. Found parameter "
                                           "numbers = 3 and channel size = 4."):
        F.prelu(x, t64(3))


# -- dropout -----------------------------------------------------------------------------------------

def test_dropout_statistics_and_gradient():
    tg.manual_seed(0)
    x = tg.ones(200, 500, requires_grad=True)
    y = F.dropout(x, p=0.3)
    v = _np(y)
    assert set(np.unique(v)) <= {0.0, np.float32(1 / 0.7)}
    assert abs((v == 0).mean() - 0.3) < 0.01
    assert y.grad_fn.name() == "MulBackward0"
    y.sum().backward()
    np.testing.assert_array_equal(_np(x.grad), v)  # d(x * mask / (1-p)) / dx = mask / (1-p)


def test_dropout_identity_cases_and_p_one():
    x = tg.randn(3, 4, requires_grad=True)
    assert F.dropout(x, 0.5, training=False) is x
    assert F.dropout(x, 0.0) is x
    z = F.dropout(x, 1.0)
    np.testing.assert_array_equal(_np(z), np.zeros((3, 4), np.float32))
    assert z.grad_fn.name() == "MulBackward0"


def test_dropout_is_seeded_and_inplace():
    tg.manual_seed(5)
    a = _np(F.dropout(tg.ones(50)))
    tg.manual_seed(5)
    x = tg.ones(50)
    out = F.dropout(x, inplace=True)
    assert out is x and x._version == 1
    np.testing.assert_array_equal(_np(x), a)


@pytest.mark.parametrize("p", [-0.1, 1.5])
def test_dropout_p_validation(p):
    for fn in (F.dropout, F.dropout1d, F.dropout2d, F.dropout3d, F.alpha_dropout):
        with pytest.raises(ValueError, match=f"dropout probability has to be between 0 and 1, but got {p}"):
            fn(tg.ones(2, 3, 4), p)


def test_feature_dropouts_drop_whole_channels():
    tg.manual_seed(1)
    v = _np(F.dropout2d(tg.ones(8, 16, 3, 3), 0.5))
    per_channel = v.reshape(8, 16, 9)
    assert (per_channel.min(axis=2) == per_channel.max(axis=2)).all()
    assert 0 < (per_channel[:, :, 0] == 0).mean() < 1
    v1 = _np(F.dropout1d(tg.ones(16, 5), 0.5))  # (C, L): no batch dim
    assert v1.shape == (16, 5) and (v1.min(axis=1) == v1.max(axis=1)).all()
    v3 = _np(F.dropout3d(tg.ones(4, 2, 2, 2), 0.5))  # (C, D, H, W)
    assert (v3.reshape(4, 8).min(axis=1) == v3.reshape(4, 8).max(axis=1)).all()
    with pytest.raises(RuntimeError, match="dropout1d: Expected 2D or 3D input, but received a 1D input."):
        F.dropout1d(tg.ones(3))
    with pytest.warns(UserWarning, match="dropout2d: Received a 2-D input to dropout2d"):
        F.dropout2d(tg.ones(3, 4))
    with pytest.raises(RuntimeError, match="Feature dropout requires at least 2 dimensions in the input"), \
            pytest.warns(UserWarning):
        F.dropout2d(tg.ones(3))


def test_alpha_dropout_keeps_selu_moments():
    tg.manual_seed(2)
    x = tg.randn(400, 500)
    y = _np(F.alpha_dropout(x, 0.2, training=True))
    assert abs(y.mean()) < 0.02 and abs(y.std() - 1) < 0.02
    assert F.alpha_dropout(x, 0.2) is x  # training defaults to False


# -- embedding, one_hot --------------------------------------------------------------------------------

def test_embedding_values_and_accumulated_gradient():
    w = t64(6, 3)
    idx = tg.tensor([[1, 2, 1], [5, 0, 1]])
    y = F.embedding(idx, w)
    np.testing.assert_array_equal(_np(y), _np(w)[_np(idx)])
    assert y.grad_fn.name() == "EmbeddingBackward0"
    g = rng.standard_normal((2, 3, 3))
    y.backward(tg.tensor(g))
    expected = np.zeros((6, 3))
    np.add.at(expected, _np(idx), g)
    np.testing.assert_allclose(_np(w.grad), expected)
    assert gradcheck(lambda w: F.embedding(idx, w), (t64(6, 3),))


@pytest.mark.parametrize("padding_idx,row", [(1, 1), (-5, 1), (0, 0)])
def test_embedding_padding_row_gets_no_gradient(padding_idx, row):
    w = t64(6, 3)
    idx = tg.tensor([1, 0, 1, 4], dtype=tg.int32)
    y = F.embedding(idx, w, padding_idx=padding_idx)
    np.testing.assert_array_equal(_np(y), _np(w)[[1, 0, 1, 4]])  # the forward is a plain lookup
    y.sum().backward()
    counts = np.bincount([1, 0, 1, 4], minlength=6).astype(float)
    counts[row] = 0
    np.testing.assert_array_equal(_np(w.grad), np.repeat(counts[:, None], 3, axis=1))


def test_embedding_max_norm_renormalises_used_rows_in_place():
    w = tg.tensor([[3.0, 4.0], [0.3, 0.4], [6.0, 8.0]])
    out = F.embedding(tg.tensor([0, 1]), w, max_norm=1.0)
    np.testing.assert_allclose(_np(w), [[0.6, 0.8], [0.3, 0.4], [6.0, 8.0]], rtol=1e-6)
    np.testing.assert_allclose(_np(out), [[0.6, 0.8], [0.3, 0.4]], rtol=1e-6)
    assert w._version == 1


def test_embedding_errors():
    w = tg.randn(5, 3)
    with pytest.raises(RuntimeError, match="Expected tensor for argument #1 'indices' to have one of the following "
                                           "scalar types: Long, Int; but got tracegrad.FloatTensor instead"):
        F.embedding(tg.tensor([1.0]), w)
    for bad in ([5], [-1]):
        with pytest.raises(IndexError, match="index out of range in self"):
            F.embedding(tg.tensor(bad), w)
    for pad in (5, -6):
        with pytest.raises(AssertionError, match="Padding_idx must be within num_embeddings"):
            F.embedding(tg.tensor([1]), w, padding_idx=pad)
    with pytest.raises(RuntimeError, match="'weight' must be 2-D"):
        F.embedding(tg.tensor([1]), tg.randn(5))


def test_one_hot():
    out = F.one_hot(tg.tensor([[0, 2], [1, 2]]))
    assert out.dtype == tg.int64 and out.shape == (2, 2, 3)
    np.testing.assert_array_equal(_np(out), np.eye(3, dtype=np.int64)[[[0, 2], [1, 2]]])
    assert F.one_hot(tg.tensor(2), 4).tolist() == [0, 0, 1, 0]
    assert F.one_hot(tg.tensor([], dtype=tg.int64), 4).shape == (0, 4)
    for args, msg in [((tg.tensor([1.0]),), "one_hot is only applicable to index tensor of type LongTensor."),
                      ((tg.tensor([-1]),), "Class values must be non-negative."),
                      ((tg.tensor([3]), 3), "Class values must be smaller than num_classes."),
                      ((tg.tensor([], dtype=tg.int64),), "Can not infer total number of classes from empty tensor.")]:
        with pytest.raises(RuntimeError, match=msg):
            F.one_hot(*args)


# -- pad -------------------------------------------------------------------------------------------------

_NP_MODES = {"reflect": "reflect", "replicate": "edge", "circular": "wrap"}


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
@pytest.mark.parametrize("shape,pad", [((2, 5), (2, 3)), ((2, 3, 4), (1, 2)), ((2, 3, 4), (3, 1, 2, 0)),
                                       ((1, 1, 2, 3, 3), (1, 2, 2, 1, 0, 1))])
def test_pad_copying_modes_match_numpy(mode, shape, pad):
    x = t64(*shape)
    widths = [(0, 0)] * len(shape)
    for k in range(len(pad) // 2):
        widths[len(shape) - 1 - k] = (pad[2 * k], pad[2 * k + 1])
    np.testing.assert_array_equal(_np(F.pad(x, pad, mode=mode)), np.pad(_np(x), widths, mode=_NP_MODES[mode]))
    assert gradcheck(lambda x: F.pad(x, pad, mode=mode), (x,))


def test_pad_constant_and_crop():
    x = t64(2, 3, 4)
    y = F.pad(x, (1, 2, 0, 1), value=2.5)
    np.testing.assert_array_equal(_np(y), np.pad(_np(x), [(0, 0), (0, 1), (1, 2)], constant_values=2.5))
    assert y.grad_fn.name() == "ConstantPadNdBackward0"
    np.testing.assert_array_equal(_np(F.pad(x, (-1, 1))), np.pad(_np(x)[..., 1:], [(0, 0), (0, 0), (0, 1)]))
    assert gradcheck(lambda x: F.pad(x, (-1, 2, 1, -2), value=-1.0), (x,))
    assert F.pad(x, (1, 1, 1, 1, 1, 1)).shape == (4, 5, 6)


def test_pad_negative_amounts_in_copying_modes():
    x = tg.arange(5.0).reshape(1, 1, 5)
    assert F.pad(x, (2, -1), mode="reflect").tolist() == [[[2.0, 1.0, 0.0, 1.0, 2.0, 3.0]]]
    assert F.pad(x, (-1, 2), mode="replicate").tolist() == [[[1.0, 2.0, 3.0, 4.0, 4.0, 4.0]]]
    assert F.pad(x, (2, -1), mode="circular").tolist() == [[[2.0, 3.0, 0.0, 1.0, 2.0, 3.0]]]


@pytest.mark.parametrize("args,kwargs,error,msg", [
    (((1,),), {}, RuntimeError, "Padding length must be divisible by 2"),
    (((1, 1) * 4,), {}, RuntimeError, ("Padding length should be less than or equal to two times the input "
                                       "dimension but got padding length 8 and input of dimension 3")),
    (((1, 1),), {"mode": "foo"}, NotImplementedError, "Unrecognised padding mode foo"),
    (((1, 1),), {"mode": "reflect", "value": 1.0}, RuntimeError, 'Padding mode "reflect" doesn\'t take in value'),
    (((4, 4),), {"mode": "reflect"}, RuntimeError, (r"Argument #4: Padding size should be less than the "
                                                    r"corresponding input dimension, but got: padding \(4, 4\) at "
                                                    r"dimension 2 of input \[1, 2, 4\]")),
    (((5, 5),), {"mode": "circular"}, RuntimeError, "Padding value causes wrapping around more than once."),
    (((1, 1, 1, 1, 1, 1),), {"mode": "replicate"}, NotImplementedError,
     "Padding size 6 is not supported for 3D input tensor."),
    (((-3, -2),), {}, RuntimeError, "narrow\\(\\): length must be non-negative."),
    (((1, 1.5),), {}, TypeError, "type must be tuple of ints,but got float"),
])
def test_pad_errors(args, kwargs, error, msg):
    with pytest.raises(error, match=msg):
        F.pad(tg.randn(1, 2, 4), *args, **kwargs)


def test_pad_rejects_empty_non_batch_dims():
    with pytest.raises(RuntimeError, match=r"Expected 3D or 4D \(batch mode\) tensor with possibly 0 batch size and "
                                           r"other non-zero dimensions for input, but got: \[1, 0, 3, 4\]"):
        F.pad(tg.randn(1, 0, 3, 4), (1, 1, 1, 1), mode="replicate")
    assert F.pad(tg.randn(0, 2, 3, 4), (1, 1, 1, 1), mode="reflect").shape == (0, 2, 5, 6)


# -- against PyTorch ---------------------------------------------------------------------------------------

def _pair(arrays, grads):
    torch = pytest.importorskip("torch")
    return ([torch.tensor(a, requires_grad=g) for a, g in zip(arrays, grads)],
            [tg.tensor(a, requires_grad=g) for a, g in zip(arrays, grads)])


_CASES = [
    ("linear", lambda F, x, w, b: F.linear(x, w, b), [(4, 3), (5, 3), (5,)]),
    ("linear3d", lambda F, x, w, b: F.linear(x, w, b), [(2, 4, 3), (5, 3), (5,)]),
    ("linear1d", lambda F, x, w: F.linear(x, w), [(3,), (5, 3)]),
    ("bilinear", lambda F, a, b, w, c: F.bilinear(a, b, w, c), [(4, 3), (4, 2), (5, 3, 2), (5,)]),
    ("prelu", lambda F, x, w: F.prelu(x, w), [(2, 3, 4), (3,)]),
    ("embedding", lambda F, w: F.embedding(F._idx, w, padding_idx=2), [(6, 4)]),
    ("pad_const", lambda F, x: F.pad(x, (1, -1, 2, 0), value=0.5), [(2, 3, 4)]),
    ("pad_reflect2d", lambda F, x: F.pad(x, (1, 2, 2, 1), mode="reflect"), [(2, 3, 4, 5)]),
    ("pad_replicate3d", lambda F, x: F.pad(x, (1, 2, 0, 3, 2, 1), mode="replicate"), [(1, 2, 3, 4, 5)]),
    ("pad_circular1d", lambda F, x: F.pad(x, (3, 2), mode="circular"), [(2, 3, 4)]),
    ("pad_circular_crop", lambda F, x: F.pad(x, (-1, 2, 1, -2), mode="circular"), [(1, 2, 4, 5)]),
]


@pytest.mark.torch
@pytest.mark.parametrize("name,fn,shapes", _CASES, ids=[c[0] for c in _CASES])
def test_matches_torch(name, fn, shapes):
    torch = pytest.importorskip("torch")
    import types
    arrays = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    theirs, ours = _pair(arrays, [True] * len(arrays))
    idx = np.array([[1, 2, 5], [2, 0, 1]])
    tf = types.SimpleNamespace(**{k: getattr(torch.nn.functional, k) for k in ("linear", "bilinear", "prelu",
                                                                                 "embedding", "pad")},
                               _idx=torch.tensor(idx))
    of = types.SimpleNamespace(**{k: getattr(F, k) for k in ("linear", "bilinear", "prelu", "embedding", "pad")},
                               _idx=tg.tensor(idx))
    yt, yo = fn(tf, *theirs), fn(of, *ours)
    np.testing.assert_allclose(_np(yo), yt.detach().numpy(), rtol=1e-5, atol=1e-6)
    g = rng.standard_normal(tuple(yt.shape)).astype(np.float32)
    yt.backward(torch.tensor(g))
    yo.backward(tg.tensor(g))
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(_np(a.grad), b.grad.numpy(), rtol=1e-4, atol=1e-5)
    if not name.startswith(("pad_circular", "prelu", "bilinear")):  # PyTorch composes those differently
        assert yo.grad_fn.name() == yt.grad_fn.name()


@pytest.mark.torch
def test_dropout_and_one_hot_match_torch_semantics():
    torch = pytest.importorskip("torch")
    x = rng.standard_normal((3, 4)).astype(np.float32)
    t = torch.tensor(x, requires_grad=True)
    assert (torch.nn.functional.dropout(t, 1.0).grad_fn.name()
            == F.dropout(tg.tensor(x, requires_grad=True), 1.0).grad_fn.name())
    labels = np.array([[0, 3], [2, 1]])
    np.testing.assert_array_equal(_np(F.one_hot(tg.tensor(labels), 5)),
                                  torch.nn.functional.one_hot(torch.tensor(labels), 5).numpy())


@pytest.mark.parametrize("inplace", [False, True])
def test_relu_passes_the_gradient_at_nan_as_torch_does(inplace):
    # PyTorch's threshold_backward zeroes the gradient where the result is <= 0 only, so a
    # NaN input (NaN result) gets the gradient; at 0 and below it gets none
    x = tg.tensor([float("nan"), 1.5, -1.0, 0.0], requires_grad=True)
    y = F.relu(x.clone(), inplace=inplace)
    y.backward(tg.tensor([2.0, 3.0, 5.0, 7.0]))
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 3.0, 0.0, 0.0])


@pytest.mark.torch
def test_relu_at_nan_matches_torch():
    torch = pytest.importorskip("torch")
    values = [float("nan"), 1.5, -1.0, 0.0, float("inf"), -float("inf")]
    grads = []
    for lib in (torch, tg):
        x = lib.tensor(values, requires_grad=True)
        lib.nn.ReLU()(x).sum().backward()
        grads.append(np.asarray(x.grad.tolist()))
    np.testing.assert_array_equal(grads[0], grads[1])
