"""instance_norm / InstanceNorm*, local_response_norm, glu, rrelu, gumbel_softmax,
cosine_similarity, pairwise_distance, Softmax2d, ChannelShuffle, and the 3-d pools: values
and gradients (inputs and parameters, float64) against PyTorch, running statistics,
hand formulas and gradcheck without PyTorch, errors by type and message, reprs."""
import warnings

import numpy as np
import pytest

import tracegrad as tg
from tracegrad import nn
from tracegrad.autograd import gradcheck
from tracegrad.nn import functional as F

from ._oracle import assert_close, compare_modules

RNG = np.random.default_rng(23)


def randn(*shape):
    return RNG.standard_normal(shape)


def _both(fn_name, arrays, *args, **kw):
    """Run ``F.<fn_name>`` in PyTorch and tracegrad on the same float64 arrays; compare values
    and the gradients of every array for one random output gradient."""
    import torch
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    os_ = [tg.tensor(a, requires_grad=True) for a in arrays]
    expected = getattr(torch.nn.functional, fn_name)(*ts, *args, **kw)
    got = getattr(F, fn_name)(*os_, *args, **kw)
    assert_close(got, expected, 1e-10, 1e-10, f"{fn_name} values")
    g = randn(*expected.shape)
    expected.backward(torch.tensor(g))
    got.backward(tg.tensor(g))
    for k, (o, t) in enumerate(zip(os_, ts)):
        assert_close(o.grad, t.grad, 1e-9, 1e-9, f"{fn_name} grad {k}")


# -- instance norm ---------------------------------------------------------------------------------

@pytest.mark.torch
@pytest.mark.parametrize("cls,shape", [("InstanceNorm1d", (3, 4, 5)), ("InstanceNorm1d", (4, 6)),
                                       ("InstanceNorm2d", (2, 4, 3, 5)), ("InstanceNorm3d", (2, 4, 2, 3, 2))])
@pytest.mark.parametrize("affine,track", [(False, False), (True, False), (True, True), (False, True)])
def test_instance_norm_layers_against_torch(cls, shape, affine, track):
    import torch
    theirs = getattr(torch.nn, cls)(4, affine=affine, track_running_stats=track, momentum=0.3).double()
    ours = getattr(nn, cls)(4, affine=affine, track_running_stats=track, momentum=0.3).double()
    if affine:
        with torch.no_grad():
            theirs.weight.uniform_(0.5, 1.5)
            theirs.bias.uniform_(-1, 1)
        from ._oracle import copy_weights
        copy_weights(theirs, ours)
    assert repr(ours) == repr(theirs)
    x = randn(*shape)
    for _ in range(2):  # twice: the running statistics move
        compare_modules(theirs, ours, x, rtol=1e-9, atol=1e-9)
    theirs.eval()
    ours.eval()
    compare_modules(theirs, ours, randn(*shape), rtol=1e-9, atol=1e-9)


def test_instance_norm_by_hand_and_gradcheck():
    x = randn(2, 3, 5)
    out = F.instance_norm(tg.tensor(x)).numpy()
    mean, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    np.testing.assert_allclose(out, (x - mean) / np.sqrt(var + 1e-5), atol=1e-12)
    w, b = tg.tensor(randn(3), requires_grad=True), tg.tensor(randn(3), requires_grad=True)
    xt = tg.tensor(x, requires_grad=True)
    assert gradcheck(lambda a, w, b: F.instance_norm(a, weight=w, bias=b), (xt, w, b))
    rm, rv = tg.zeros(3, dtype=tg.float64), tg.ones(3, dtype=tg.float64)
    F.instance_norm(tg.tensor(x), rm, rv, momentum=1.0)
    np.testing.assert_allclose(rm.numpy(), mean[..., 0].mean(0), atol=1e-12)
    np.testing.assert_allclose(rv.numpy(), x.var(-1, ddof=1).mean(0), atol=1e-12)


def test_instance_norm_errors():
    with pytest.raises(ValueError, match=r"Expected more than 1 spatial element when training, got input size"):
        F.instance_norm(tg.randn(2, 3, 1))
    with pytest.raises(RuntimeError, match="weight should contain 6 elements not 8"):
        F.instance_norm(tg.randn(2, 3, 4), weight=tg.ones(4))
    with pytest.raises(ValueError, match=r"expected 3D or 4D input \(got 2D input\)"):
        nn.InstanceNorm2d(3)(tg.randn(3, 4))
    with pytest.raises(ValueError, match=r"expected input's size at dim=1 to match num_features \(3\), but got: 4"):
        nn.InstanceNorm1d(3, affine=True)(tg.randn(2, 4, 5))
    with pytest.warns(UserWarning, match="input's size at dim=0 does not match num_features"):
        nn.InstanceNorm1d(3)(tg.randn(4, 5))


def test_instance_norm_rejects_old_running_stats_in_state_dict():
    layer = nn.InstanceNorm1d(3)
    state = {"running_mean": tg.zeros(3), "running_var": tg.ones(3)}
    with pytest.raises(RuntimeError, match="Unexpected running stats buffer"):
        layer.load_state_dict(state)


# -- local response norm ----------------------------------------------------------------------------

@pytest.mark.torch
@pytest.mark.parametrize("shape,size", [((2, 5, 4), 3), ((2, 6, 3, 4), 2), ((1, 4, 2, 3, 2), 5), ((2, 3, 4), 1)])
def test_local_response_norm_against_torch(shape, size):
    _both("local_response_norm", [randn(*shape)], size, alpha=0.3, beta=0.6, k=1.5)
    import torch
    compare_modules(torch.nn.LocalResponseNorm(size), nn.LocalResponseNorm(size), randn(*shape))


def test_local_response_norm_by_hand():
    x = randn(1, 4, 3)
    out = F.local_response_norm(tg.tensor(x), 3, alpha=0.5, beta=0.75, k=2.0).numpy()
    sq = np.pad(x * x, ((0, 0), (1, 1), (0, 0)))
    avg = (sq[:, :-2] + sq[:, 1:-1] + sq[:, 2:]) / 3
    np.testing.assert_allclose(out, x / (2.0 + 0.5 * avg) ** 0.75, atol=1e-12)
    with pytest.raises(ValueError, match=r"Expected 3D or higher dimensionality\s+input \(got 2 dimensions\)"):
        F.local_response_norm(tg.randn(3, 4), 2)


# -- glu, rrelu, gumbel_softmax, softmax2d, channel_shuffle ---------------------------------------------

@pytest.mark.torch
@pytest.mark.parametrize("shape,dim", [((3, 4), -1), ((4, 3, 2), 0), ((2, 6, 3), 1)])
def test_glu_against_torch(shape, dim):
    _both("glu", [randn(*shape)], dim)
    import torch
    compare_modules(torch.nn.GLU(dim), nn.GLU(dim), randn(*shape))


def test_glu_by_hand_and_errors():
    x = randn(2, 4)
    np.testing.assert_allclose(F.glu(tg.tensor(x)).numpy(), x[:, :2] / (1 + np.exp(-x[:, 2:])), atol=1e-12)
    with pytest.raises(RuntimeError, match="Halving dimension must be even, but dimension 1 is size 5"):
        F.glu(tg.randn(3, 5))
    with pytest.raises(RuntimeError, match="glu does not support scalars"):
        F.glu(tg.tensor(1.0))
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of \[-2, 1\], but got 5\)"):
        F.glu(tg.randn(3, 4), 5)


def test_rrelu_eval_is_leaky_relu_and_training_slopes_are_in_range():
    x = tg.tensor(randn(200), requires_grad=True)
    np.testing.assert_allclose(F.rrelu(x, 0.1, 0.3).detach().numpy(),
                               F.leaky_relu(x, 0.2).detach().numpy())
    tg.manual_seed(0)
    y = F.rrelu(x, 0.1, 0.3, training=True)
    y.sum().backward()
    a, g = x.detach().numpy(), x.grad.numpy()
    assert np.all(g[a > 0] == 1)
    neg = g[a <= 0]
    assert neg.min() >= 0.1 and neg.max() <= 0.3 and neg.std() > 0.02
    np.testing.assert_allclose(y.detach().numpy(), a * g)
    layer = nn.RReLU(0.1, 0.3)
    assert repr(layer) == "RReLU(lower=0.1, upper=0.3)"
    z = tg.tensor([-1.0, 2.0])
    assert F.rrelu_(z) is z and z.tolist() == pytest.approx([-(1 / 8 + 1 / 3) / 2, 2.0])


def test_gumbel_softmax_soft_and_hard():
    tg.manual_seed(1)
    logits = tg.tensor(np.log([[0.7, 0.2, 0.1]] * 4000), requires_grad=True)
    soft = F.gumbel_softmax(logits, tau=0.5)
    np.testing.assert_allclose(soft.detach().numpy().sum(-1), 1.0, atol=1e-12)
    hard = F.gumbel_softmax(logits, hard=True)
    h = hard.detach().numpy()
    assert set(np.unique(h)) == {0.0, 1.0} and (h.sum(-1) == 1).all()
    np.testing.assert_allclose(h.mean(0), [0.7, 0.2, 0.1], atol=0.03)  # Gumbel-max samples the softmax
    hard.sum().backward()  # straight through: the soft sample's gradient, which sums to 0 per row
    np.testing.assert_allclose(logits.grad.numpy(), 0.0, atol=1e-12)
    with pytest.warns(UserWarning, match="`eps` parameter is deprecated"):
        F.gumbel_softmax(logits, eps=1e-5)


@pytest.mark.torch
def test_softmax2d_and_channel_shuffle_against_torch():
    import torch
    compare_modules(torch.nn.Softmax2d(), nn.Softmax2d(), randn(2, 3, 4, 2))
    compare_modules(torch.nn.Softmax2d(), nn.Softmax2d(), randn(3, 4, 2))
    compare_modules(torch.nn.ChannelShuffle(3), nn.ChannelShuffle(3), randn(2, 6, 2, 2))
    compare_modules(torch.nn.ChannelShuffle(2), nn.ChannelShuffle(2), randn(2, 4, 3))


@pytest.mark.parametrize("call,error,message", [
    (lambda: nn.Softmax2d()(tg.randn(3, 4)), ValueError, "Softmax2d: expected input to be 3D or 4D, got 2D instead"),
    (lambda: F.channel_shuffle(tg.randn(2, 6, 3), 0), RuntimeError,
     "Number of groups to divide channels in must be positive. Value of groups:0"),
    (lambda: F.channel_shuffle(tg.randn(2, 6, 3), 4), RuntimeError,
     "Number of channels must be divisible by groups. Got 6 channels and 4 groups."),
    (lambda: F.channel_shuffle(tg.randn(6), 2), RuntimeError, "channel_shuffle expects input with > 2 dims"),
])
def test_softmax2d_and_channel_shuffle_errors(call, error, message):
    with pytest.raises(error) as info:
        call()
    assert message in str(info.value)


def test_channel_shuffle_by_hand():
    x = tg.arange(6.0).reshape(1, 6, 1)
    assert F.channel_shuffle(x, 2).reshape(-1).tolist() == [0.0, 3.0, 1.0, 4.0, 2.0, 5.0]


# -- similarity ----------------------------------------------------------------------------------------

@pytest.mark.torch
@pytest.mark.parametrize("shapes,kw", [(((3, 4), (3, 4)), {}), (((4,), (3, 4)), {"dim": -1}),
                                       (((2, 5, 3), (2, 5, 3)), {"dim": 0, "eps": 1e-3})])
def test_cosine_similarity_against_torch(shapes, kw):
    _both("cosine_similarity", [randn(*s) for s in shapes], **kw)
    # a norm below eps: clamped in value, its gradient passing straight through (as in PyTorch)
    _both("cosine_similarity", [randn(*shapes[0]), 1e-9 * randn(*shapes[1])], **kw)


@pytest.mark.torch
@pytest.mark.parametrize("p", [2.0, 1.0, 3.5, float("inf")])
@pytest.mark.parametrize("keepdim", [False, True])
def test_pairwise_distance_against_torch(p, keepdim):
    _both("pairwise_distance", [randn(3, 4), randn(3, 4)], p=p, keepdim=keepdim)
    import torch
    compare_modules(torch.nn.PairwiseDistance(p, 1e-3, keepdim), nn.PairwiseDistance(p, 1e-3, keepdim),
                    randn(2, 5), randn(2, 5))
    compare_modules(torch.nn.CosineSimilarity(0), nn.CosineSimilarity(0), randn(4, 2), randn(4, 2))


def test_similarity_by_hand():
    a, b = randn(3, 4), randn(3, 4)
    cos = (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
    np.testing.assert_allclose(F.cosine_similarity(tg.tensor(a), tg.tensor(b)).numpy(), cos, atol=1e-12)
    dist = np.linalg.norm(a - b + 1e-6, axis=1)
    np.testing.assert_allclose(F.pairwise_distance(tg.tensor(a), tg.tensor(b)).numpy(), dist, atol=1e-12)
    x, y = tg.tensor(a, requires_grad=True), tg.tensor(b, requires_grad=True)
    assert gradcheck(lambda u, v: F.cosine_similarity(u, v), (x, y))


# -- 3-d pooling ---------------------------------------------------------------------------------------

POOL3D = [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1),
          dict(kernel_size=(2, 3, 2), stride=(1, 2, 1), padding=(1, 1, 0), ceil_mode=True),
          dict(kernel_size=(1, 3, 2), stride=1, padding=(0, 1, 1))]


@pytest.mark.torch
@pytest.mark.parametrize("kw", POOL3D, ids=str)
@pytest.mark.parametrize("shape", [(2, 2, 5, 6, 4), (2, 4, 5, 3)])
def test_pool3d_against_torch(kw, shape):
    import torch
    x = np.round(randn(*shape), 1)  # ties: the first maximum in (d, h, w) order wins, as in PyTorch
    _both("max_pool3d", [x], **kw)
    for extra in ({}, {"count_include_pad": False}, {"divisor_override": 5}):
        _both("avg_pool3d", [randn(*shape)], **kw, **extra)
    _, theirs = torch.nn.functional.max_pool3d(torch.tensor(x), return_indices=True, **kw)
    _, ours = F.max_pool3d(tg.tensor(x), return_indices=True, **kw)
    assert (ours.numpy() == theirs.numpy()).all()
    dil = dict(kernel_size=2, dilation=(1, 2, 2), stride=1)
    _both("max_pool3d", [x], **dil)


@pytest.mark.torch
@pytest.mark.parametrize("size", [2, (1, 3, 2), (None, 2, 1), (3, 3, 4)])
def test_adaptive_avg_pool3d_against_torch(size):
    _both("adaptive_avg_pool3d", [randn(2, 3, 4, 5, 4)], size)
    _both("adaptive_avg_pool3d", [randn(3, 4, 5, 4)], size)


def test_pool3d_by_hand_and_gradcheck():
    x = randn(1, 1, 4, 4, 4)
    got = F.max_pool3d(tg.tensor(x), 2).numpy()
    want = x.reshape(1, 1, 2, 2, 2, 2, 2, 2).max(axis=(3, 5, 7))
    np.testing.assert_array_equal(got, want)
    avg = F.avg_pool3d(tg.tensor(x), 2).numpy()
    np.testing.assert_allclose(avg, x.reshape(1, 1, 2, 2, 2, 2, 2, 2).mean(axis=(3, 5, 7)), atol=1e-12)
    t = tg.tensor(RNG.permutation(60).reshape(1, 3, 4, 5) / 7.0, requires_grad=True)
    assert gradcheck(lambda a: F.max_pool3d(a, 2, 1, 1), (t,))
    assert gradcheck(lambda a: F.avg_pool3d(a, 3, 2, 1, count_include_pad=False), (t,))
    assert gradcheck(lambda a: F.adaptive_avg_pool3d(a, (2, 3, 2)), (t,))


@pytest.mark.parametrize("call,message", [
    (lambda x: F.max_pool3d(x, (2, 2)), "max_pool3d: kernel_size must either be a single int, or a tuple of three"),
    (lambda x: F.avg_pool3d(x, (2, 2)), "avg_pool3d: kernel_size must be a single int, or a tuple of three ints"),
    (lambda x: F.max_pool3d(x, 2, padding=2), "pad should be at most half of effective kernel size, but got pad=2"),
    (lambda x: F.max_pool3d(x[0, 0], 2), "non-empty 4D or 5D (batch mode) tensor expected for input"),
    (lambda x: F.max_pool3d(x, 5), "Given input size: (2x4x4x4). Calculated output size: (2x0x0x0). Output size"),
    (lambda x: F.avg_pool3d(x, 5), "input image (T: 4 H: 4 W: 4) smaller than kernel size (kT: 5 kH: 5 kW: 5)"),
    (lambda x: F.max_pool3d(x, 2, stride=0), "stride should not be zero"),
    (lambda x: F.avg_pool3d(x, 2, divisor_override=0), "divisor must be not zero"),
    (lambda x: F.adaptive_avg_pool3d(x, (2, 3)), "adaptive_avg_pool3d: output_size must be 3"),
    (lambda x: F.adaptive_avg_pool3d(x[0, 0, 0], 2), "adaptive_avg_pool3d(): Expected 4D or 5D tensor, but got [4, 4]"),
])
def test_pool3d_errors(call, message):
    with pytest.raises(RuntimeError) as info:
        call(tg.zeros(1, 2, 4, 4, 4))
    assert message in str(info.value)


@pytest.mark.torch
@pytest.mark.parametrize("spec", ["GLU()", "GLU(0)", "RReLU()", "RReLU(0.1, 0.3, True)", "Softmax2d()",
                                  "ChannelShuffle(4)", "LocalResponseNorm(3, 0.1)", "CosineSimilarity(0, 1e-3)",
                                  "PairwiseDistance(1.0, keepdim=True)", "InstanceNorm3d(5, affine=True, bias=False)",
                                  "InstanceNorm1d(2, 1e-3, None, track_running_stats=True)"])
def test_reprs_match_torch(spec):
    import torch  # noqa: F401 -- used by eval
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert repr(eval("nn." + spec)) == repr(eval("torch.nn." + spec))
