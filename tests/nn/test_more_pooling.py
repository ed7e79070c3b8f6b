"""adaptive_max_pool1d/2d, lp_pool1d/2d, max_unpool1d/2d, unfold/fold and embedding_bag, with
their layers (and the 3-d pooling layers): values, indices and gradients (inputs and
parameters, float64) against PyTorch, hand formulas and gradcheck without PyTorch, errors
by type and message, reprs."""
import numpy as np
import pytest

import tracegrad as tg
from tracegrad import nn
from tracegrad.autograd import gradcheck
from tracegrad.nn import functional as F

from ._oracle import assert_close, compare_modules

RNG = np.random.default_rng(31)


def randn(*shape):
    return RNG.standard_normal(shape)


def _both(fn_name, arrays, *args, index_args=(), **kw):
    """``F.<fn_name>`` in PyTorch and tracegrad on the same float64 ``arrays`` (then the int
    ``index_args``): values (every output of a tuple) and the gradients of every array."""
    import torch
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    os_ = [tg.tensor(a, requires_grad=True) for a in arrays]
    expected = getattr(torch.nn.functional, fn_name)(*ts, *[torch.tensor(i) for i in index_args], *args, **kw)
    got = getattr(F, fn_name)(*os_, *[tg.tensor(i) for i in index_args], *args, **kw)
    if isinstance(expected, tuple):
        for a, b in zip(got[1:], expected[1:]):
            assert (a.numpy() == b.numpy()).all(), f"{fn_name} indices"
        expected, got = expected[0], got[0]
    assert_close(got, expected, 1e-10, 1e-10, f"{fn_name} values")
    g = randn(*expected.shape)
    expected.backward(torch.tensor(g))
    got.backward(tg.tensor(g))
    for k, (o, t) in enumerate(zip(os_, ts)):
        assert_close(o.grad, t.grad, 1e-9, 1e-9, f"{fn_name} grad {k}")


# -- adaptive max pooling -------------------------------------------------------------------------------

@pytest.mark.torch
@pytest.mark.parametrize("shape,size", [((2, 3, 7, 5), (3, 2)), ((3, 7, 5), 4), ((2, 2, 6, 6), (4, None)),
                                        ((1, 2, 4, 5), (4, 5)), ((2, 2, 5, 3), 1)])
def test_adaptive_max_pool2d_against_torch(shape, size):
    x = np.round(randn(*shape), 1)  # ties: the first maximum in (h, w) order wins
    _both("adaptive_max_pool2d_with_indices", [x], size)
    import torch
    compare_modules(torch.nn.AdaptiveMaxPool2d(size), nn.AdaptiveMaxPool2d(size), x)


@pytest.mark.torch
@pytest.mark.parametrize("shape,size", [((2, 3, 9), 4), ((3, 5), 5), ((2, 1, 4), 7)])
def test_adaptive_max_pool1d_against_torch(shape, size):
    _both("adaptive_max_pool1d_with_indices", [np.round(randn(*shape), 1)], size)


def test_adaptive_max_pool_by_hand_and_gradcheck():
    x = randn(1, 1, 4, 6)
    values, indices = F.adaptive_max_pool2d(tg.tensor(x), (2, 3), return_indices=True)
    np.testing.assert_array_equal(values.numpy(), x.reshape(1, 1, 2, 2, 3, 2).max(axis=(3, 5)))
    assert (np.take(x.reshape(-1), indices.numpy()) == values.numpy()).all()
    t = tg.tensor(RNG.permutation(40).reshape(2, 4, 5) / 3.0, requires_grad=True)
    assert gradcheck(lambda a: F.adaptive_max_pool2d(a, (3, 2)), (t,))
    assert gradcheck(lambda a: F.adaptive_max_pool1d(a, 3), (t,))
    with pytest.raises(RuntimeError, match=r"adaptive_max_pool2d\(\): Expected 3D or 4D tensor, but got: \[4, 4\]"):
        F.adaptive_max_pool2d(tg.zeros(4, 4), 2)
    with pytest.raises(RuntimeError, match="Expected 2 to 3 dimensions, but got 1-dimensional tensor"):
        F.adaptive_max_pool1d(tg.zeros(4), 2)


# -- lp pooling -----------------------------------------------------------------------------------------

@pytest.mark.torch
@pytest.mark.parametrize("p", [2, 1.5, 3.0, float("inf")])
@pytest.mark.parametrize("kw", [dict(kernel_size=2), dict(kernel_size=(2, 3), stride=(1, 2)),
                                dict(kernel_size=3, stride=2, ceil_mode=True)], ids=str)
def test_lp_pool_against_torch(p, kw):
    x = np.abs(randn(2, 3, 6, 7)) + 0.1  # positive: fractional powers of a sum stay real
    _both("lp_pool2d", [x], p, **kw)
    k = kw["kernel_size"] if isinstance(kw["kernel_size"], int) else kw["kernel_size"][0]
    s = kw.get("stride", k) if isinstance(kw.get("stride", k), int) else kw["stride"][0]
    _both("lp_pool1d", [x[0]], p, k, s, kw.get("ceil_mode", False))
    import torch
    compare_modules(torch.nn.LPPool2d(p, 2), nn.LPPool2d(p, 2), x)
    compare_modules(torch.nn.LPPool1d(p, 3, 1), nn.LPPool1d(p, 3, 1), x[0])


def test_lp_pool_by_hand():
    x = np.abs(randn(1, 6)) + 0.1
    out = F.lp_pool1d(tg.tensor(x), 3, 2).numpy()
    np.testing.assert_allclose(out, ((x.reshape(1, 3, 2) ** 3).sum(-1)) ** (1 / 3), rtol=1e-12)


# -- max unpooling -----------------------------------------------------------------------------------------

@pytest.mark.torch
@pytest.mark.parametrize("kw,output_size", [({}, None), ({"stride": 1}, None), ({"padding": 1, "stride": 2}, None),
                                            ({}, (9, 7)), ({}, (1, 2, 9, 7))])
def test_max_unpool2d_against_torch(kw, output_size):
    import torch
    x = torch.tensor(randn(1, 2, 8, 6))
    values, indices = torch.nn.functional.max_pool2d(x, 2, return_indices=True, **kw)
    _both("max_unpool2d", [values.numpy()], 2, index_args=[indices.numpy()], output_size=output_size, **kw)
    layer_kw = dict(kw)
    compare_modules(_Unpool(torch.nn.MaxUnpool2d(2, **layer_kw), indices),
                    _Unpool(nn.MaxUnpool2d(2, **layer_kw), tg.tensor(indices.numpy())), values.numpy())


class _Unpool:
    """An unpooling layer with its indices fixed, callable on one input (for compare_modules)."""

    def __init__(self, layer, indices):
        self.layer, self.indices = layer, indices

    def __call__(self, x):
        return self.layer(x, self.indices)

    def named_parameters(self):
        return iter(())

    def named_buffers(self):
        return iter(())


@pytest.mark.torch
def test_max_unpool1d_against_torch():
    import torch
    values, indices = torch.nn.functional.max_pool1d(torch.tensor(randn(2, 3, 9)), 3, 2, 1, return_indices=True)
    _both("max_unpool1d", [values.numpy()], 3, 2, 1, index_args=[indices.numpy()])


def test_max_unpool_inverts_max_pool_at_the_maxima():
    x = tg.tensor(randn(2, 3, 6, 4))
    values, indices = F.max_pool2d(x, 2, return_indices=True)
    back = F.max_unpool2d(values, indices, 2).numpy()
    a = x.numpy()
    assert ((back == a) | (back == 0)).all() and (back != 0).sum() == values.numel()
    assert repr(nn.MaxUnpool2d(2)) == "MaxUnpool2d(kernel_size=(2, 2), stride=(2, 2), padding=(0, 0))"
    v = tg.tensor(values.numpy(), requires_grad=True)
    assert gradcheck(lambda t: F.max_unpool2d(t, indices, 2), (v,))


@pytest.mark.parametrize("call,error,message", [
    (lambda v, i: F.max_unpool2d(v, i, 2, output_size=(9, 9)), ValueError,
     'invalid output_size "(9, 9)" (dim 0 must be between 2 and 6)'),
    (lambda v, i: F.max_unpool2d(v, i * 10, 2), RuntimeError, "Found an invalid max index: "),
    (lambda v, i: F.max_unpool2d(v, i.float(), 2), RuntimeError, "elements in indices should be type int64 but "
                                                                 "got: Float"),
    (lambda v, i: F.max_unpool2d(v, i, 2, output_size=(1, 2, 3)), ValueError,
     "output_size should be a sequence containing 2 or 4 elements, but it has a length of '3'"),
])
def test_max_unpool_errors(call, error, message):
    values, indices = F.max_pool2d(tg.tensor(RNG.permutation(16).reshape(1, 1, 4, 4) * 1.0), 2, return_indices=True)
    with pytest.raises(error) as info:
        call(values, indices)
    assert message in str(info.value)


# -- unfold / fold --------------------------------------------------------------------------------------------

FOLDS = [((2, 3, 5, 6), dict(kernel_size=2)),
         ((2, 3, 7, 6), dict(kernel_size=(3, 2), dilation=(1, 2), padding=1, stride=(2, 1))),
         ((3, 4, 5), dict(kernel_size=3, padding=(0, 1))), ((1, 1, 4, 4), dict(kernel_size=1, stride=2))]


@pytest.mark.torch
@pytest.mark.parametrize("shape,kw", FOLDS, ids=str)
def test_unfold_and_fold_against_torch(shape, kw):
    import torch
    _both("unfold", [randn(*shape)], **kw)
    cols = torch.nn.functional.unfold(torch.tensor(randn(*shape)), **kw)
    _both("fold", [randn(*cols.shape)], shape[-2:], **kw)
    compare_modules(torch.nn.Unfold(**kw), nn.Unfold(**kw), randn(*shape))
    compare_modules(torch.nn.Fold(shape[-2:], **kw), nn.Fold(shape[-2:], **kw), randn(*cols.shape))
    assert repr(nn.Fold(shape[-2:], **kw)) == repr(torch.nn.Fold(shape[-2:], **kw))


def test_unfold_by_hand_and_fold_is_its_adjoint():
    x = np.arange(12.0).reshape(1, 1, 3, 4)
    cols = F.unfold(tg.tensor(x), 2).numpy()[0]
    # column j is the 2x2 block at (j // 3, j % 3), read row by row
    assert cols[:, 4].tolist() == [5.0, 6.0, 9.0, 10.0]
    # <unfold(x), c> == <x, fold(c)>
    a, c = randn(2, 3, 5, 4), randn(2, 3 * 4, 12)
    kw = dict(kernel_size=2, padding=1, stride=(1, 2), dilation=(2, 1))
    c = randn(*F.unfold(tg.tensor(a), **kw).shape)
    lhs = (F.unfold(tg.tensor(a), **kw).numpy() * c).sum()
    rhs = (a * F.fold(tg.tensor(c), (5, 4), **kw).numpy()).sum()
    np.testing.assert_allclose(lhs, rhs, rtol=1e-12)
    t = tg.tensor(randn(1, 2, 3, 3), requires_grad=True)
    assert gradcheck(lambda v: F.unfold(v, 2, padding=1), (t,))


@pytest.mark.parametrize("call,message", [
    (lambda: F.unfold(tg.zeros(1, 2, 4, 4), 5), "calculated shape of the array of sliding blocks as (0, 0), but its "
                                                "components must be at least one."),
    (lambda: F.unfold(tg.zeros(1, 2, 4, 4), 0), "kernel size should be greater than zero, but got kernel_height: 0 "
                                                "kernel_width: 0"),
    (lambda: F.fold(tg.zeros(1, 12, 5), (4, 4), 2), "expected size of input's dimension 2 to match the calculated "
                                                    "number of sliding blocks 3 * 3 = 9, but got input.size(2)=5."),
    (lambda: F.fold(tg.zeros(1, 10, 9), (4, 4), 2), "Expected size of input's dimension 1 to be divisible by the "
                                                    "product of kernel_size, but got input.size(1)=10"),
])
def test_unfold_fold_errors(call, message):
    with pytest.raises(RuntimeError) as info:
        call()
    assert message in str(info.value)


# -- embedding_bag --------------------------------------------------------------------------------------------

BAGS = [(np.array([1, 2, 3, 4, 5, 1]), np.array([0, 2, 2, 5]), {}),
        (np.array([[1, 2, 3], [4, 2, 2]]), None, {}),
        (np.array([1, 2, 3, 4, 5, 1]), np.array([0, 2, 6]), {"include_last_offset": True})]


@pytest.mark.torch
@pytest.mark.parametrize("inp,offsets,kw", BAGS)
@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("padding_idx", [None, 2])
def test_embedding_bag_against_torch(inp, offsets, kw, mode, padding_idx):
    import torch
    weight = randn(10, 3)
    tw, ow = torch.tensor(weight, requires_grad=True), tg.tensor(weight, requires_grad=True)
    psw = randn(*inp.shape) if mode == "sum" else None
    tp = None if psw is None else torch.tensor(psw, requires_grad=True)
    op = None if psw is None else tg.tensor(psw, requires_grad=True)
    to = None if offsets is None else torch.tensor(offsets)
    oo = None if offsets is None else tg.tensor(offsets)
    expected = torch.nn.functional.embedding_bag(torch.tensor(inp), tw, to, mode=mode, padding_idx=padding_idx,
                                                 per_sample_weights=tp, **kw)
    got = F.embedding_bag(tg.tensor(inp), ow, oo, mode=mode, padding_idx=padding_idx, per_sample_weights=op, **kw)
    assert_close(got, expected, 1e-12, 1e-12, "values")
    g = randn(*expected.shape)
    expected.backward(torch.tensor(g))
    got.backward(tg.tensor(g))
    assert_close(ow.grad, tw.grad, 1e-12, 1e-12, "weight grad")
    if psw is not None:
        assert_close(op.grad, tp.grad, 1e-12, 1e-12, "per_sample_weights grad")


@pytest.mark.torch
def test_embedding_bag_layer_against_torch():
    import torch
    theirs = torch.nn.EmbeddingBag(10, 4, mode="max", padding_idx=0).double()
    ours = nn.EmbeddingBag(10, 4, mode="max", padding_idx=0).double()
    from ._oracle import copy_weights
    copy_weights(theirs, ours)
    assert repr(ours) == repr(theirs)
    x = np.array([[1, 0, 3], [0, 0, 0], [4, 9, 9]])
    compare_modules(theirs, ours, x)
    assert (ours.weight.detach().numpy()[0] == 0).all()
    frozen = nn.EmbeddingBag.from_pretrained(tg.ones(3, 2))
    assert not frozen.weight.requires_grad and frozen(tg.tensor([[0, 1]])).tolist() == [[1.0, 1.0]]


def test_embedding_bag_by_hand_and_errors():
    w = tg.tensor(randn(6, 2))
    out = F.embedding_bag(tg.tensor([0, 1, 2, 5]), w, tg.tensor([0, 1, 1]), mode="sum").numpy()
    a = w.numpy()
    np.testing.assert_allclose(out, [a[0], np.zeros(2), a[1] + a[2] + a[5]], atol=1e-12)
    with pytest.raises(RuntimeError, match="offsets\\[0\\] has to be 0"):
        F.embedding_bag(tg.tensor([1, 2]), w, tg.tensor([1]))
    with pytest.raises(RuntimeError, match=r"Index 1 of input takes value 30 which is not in the valid range \[0, 6\)"):
        F.embedding_bag(tg.tensor([1, 30]), w, tg.tensor([0]))
    with pytest.raises(ValueError, match="mode has to be one of sum, mean or max"):
        F.embedding_bag(tg.tensor([1, 2]), w, tg.tensor([0]), mode="foo")
    with pytest.raises(ValueError, match="offsets has to be a 1D Tensor but got None"):
        F.embedding_bag(tg.tensor([1, 2]), w)
    with pytest.raises(ValueError, match="if input is 2D, then offsets has to be None"):
        F.embedding_bag(tg.tensor([[1, 2]]), w, tg.tensor([0]))
    with pytest.raises(NotImplementedError, match="per_sample_weights is only supported for mode='sum'"):
        F.embedding_bag(tg.tensor([1, 2]), w, tg.tensor([0]), per_sample_weights=tg.ones(2))


# -- layers ------------------------------------------------------------------------------------------------------

@pytest.mark.torch
@pytest.mark.parametrize("spec,shape", [("MaxPool3d(2)", (1, 2, 4, 4, 4)), ("MaxPool3d(3, 2, 1)", (2, 5, 4, 6)),
                                        ("AvgPool3d(2, 1)", (1, 2, 3, 4, 4)),
                                        ("AvgPool3d((1, 2, 2), padding=(0, 1, 0), count_include_pad=False)",
                                         (2, 3, 4, 4)),
                                        ("AdaptiveAvgPool3d((2, 3, 1))", (1, 2, 3, 4, 5)),
                                        ("AdaptiveMaxPool1d(3)", (2, 2, 7)),
                                        ("AdaptiveMaxPool3d((2, None, 3))", (1, 2, 3, 4, 5)),
                                        ("LPPool3d(2, (1, 2, 2))", (2, 2, 3, 4))])
def test_pool_layers_against_torch(spec, shape):
    import torch  # noqa: F401 -- used by eval
    ours, theirs = eval("nn." + spec), eval("torch.nn." + spec)
    assert repr(ours) == repr(theirs)
    compare_modules(theirs, ours, randn(*shape))


@pytest.mark.torch
@pytest.mark.parametrize("shape,size", [((2, 2, 5, 7, 6), (2, 3, 4)), ((2, 4, 5, 3), (4, None, 2)), ((1, 1, 3, 3, 3), 1)])
def test_adaptive_max_pool3d_against_torch(shape, size):
    _both("adaptive_max_pool3d_with_indices", [np.round(randn(*shape), 1)], size)


@pytest.mark.torch
def test_max_unpool3d_and_lp_pool3d_against_torch():
    import torch
    values, indices = torch.nn.functional.max_pool3d(torch.tensor(randn(2, 2, 4, 6, 4)), 2, return_indices=True)
    _both("max_unpool3d", [values.numpy()], 2, index_args=[indices.numpy()])
    compare_modules(_Unpool(torch.nn.MaxUnpool3d(2), indices), _Unpool(nn.MaxUnpool3d(2), tg.tensor(indices.numpy())),
                    values.numpy())
    for p in (2, 1.5, float("inf")):
        _both("lp_pool3d", [np.abs(randn(2, 2, 4, 6, 4)) + 0.1], p, (2, 3, 2))


# -- fractional max pooling -------------------------------------------------------------------------------------

@pytest.mark.torch
@pytest.mark.parametrize("k,shape,kw", [
    (2, (2, 3, 9, 8), dict(kernel_size=2, output_size=(4, 5))),
    (2, (3, 10, 7), dict(kernel_size=(3, 2), output_ratio=(0.5, 0.5))),
    (2, (1, 2, 9, 9), dict(kernel_size=3, output_size=7)),
    (3, (2, 2, 6, 7, 8), dict(kernel_size=2, output_size=(3, 4, 5))),
    (3, (2, 5, 6, 7), dict(kernel_size=(2, 1, 3), output_ratio=(0.5, 0.6, 0.7)))], ids=str)
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_fractional_max_pool_against_torch(k, shape, kw, dtype):
    """With the same random samples, PyTorch's windows: values, indices and gradients agree."""
    import torch
    x = np.round(randn(*shape), 1).astype(dtype)  # ties: the first maximum in scan order
    samples = RNG.random((1 if len(shape) == k + 1 else shape[0], shape[-k - 1], k)).astype(dtype)
    fn = f"fractional_max_pool{k}d"
    t, o = torch.tensor(x, requires_grad=True), tg.tensor(x, requires_grad=True)
    expected, t_idx = getattr(torch.nn.functional, fn)(t, return_indices=True,
                                                        _random_samples=torch.tensor(samples), **kw)
    got, o_idx = getattr(F, fn)(o, return_indices=True, _random_samples=tg.tensor(samples), **kw)
    assert_close(got, expected, 0, 0, "values")
    assert (o_idx.numpy() == t_idx.numpy()).all()
    g = randn(*expected.shape).astype(dtype)
    expected.backward(torch.tensor(g))
    got.backward(tg.tensor(g))
    assert_close(o.grad, t.grad, 0, 0, "grad")
    layer_kw = {key: value for key, value in kw.items()}
    ours = getattr(nn, f"FractionalMaxPool{k}d")(_random_samples=tg.tensor(samples), **layer_kw)
    theirs = getattr(torch.nn, f"FractionalMaxPool{k}d")(_random_samples=torch.tensor(samples), **layer_kw)
    assert repr(ours) == repr(theirs)
    assert_close(ours(tg.tensor(x)), theirs(torch.tensor(x)), 0, 0, "layer")


def test_fractional_max_pool_by_hand_and_errors():
    x = tg.tensor(RNG.standard_normal((2, 3, 8, 8)))
    values, indices = F.fractional_max_pool2d(x, 2, output_size=4, return_indices=True)
    assert values.shape == (2, 3, 4, 4)
    flat = x.numpy().reshape(2, 3, -1)
    assert (np.take_along_axis(flat, indices.numpy().reshape(2, 3, -1), -1).reshape(values.shape)
            == values.numpy()).all()
    # an output as large as the input with a 1-wide window is the identity
    same = F.fractional_max_pool2d(x, 1, output_size=8)
    assert (same.numpy() == x.numpy()).all()
    with pytest.raises(RuntimeError, match="fractional_max_pool2d\\(\\): pool height 3 too large relative to input "
                                           "height 5"):
        F.fractional_max_pool2d(tg.randn(1, 1, 5, 5), 3, output_size=6)
    with pytest.raises(ValueError, match="requires specifying either an output_size or an output_ratio"):
        F.fractional_max_pool2d(tg.randn(1, 1, 5, 5), 2)
    with pytest.raises(ValueError, match=r"output_ratio must be between 0 and 1 \(got 1.5\)"):
        nn.FractionalMaxPool2d(2, output_ratio=1.5)
    with pytest.raises(ValueError, match="only one of output_size and output_ratio may be specified"):
        nn.FractionalMaxPool3d(2, output_size=2, output_ratio=0.5)
