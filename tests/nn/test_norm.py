"""Normalisation: F.batch_norm / layer_norm / group_norm / rms_norm / normalize and the
BatchNorm1d/2d/3d, LayerNorm, GroupNorm, RMSNorm layers. Values against NumPy formulas,
gradients by gradcheck and gradgradcheck, running statistics by hand, PyTorch as oracle."""
import numpy as np
import pytest

import tracegrad as tg
import tracegrad.nn.functional as F
from tracegrad import nn
from tracegrad.autograd import gradcheck, gradgradcheck

from ._oracle import compare_modules, copy_weights

rng = np.random.default_rng(1)


def t64(*shape, requires_grad=True, scale=1.0, shift=0.0):
    return tg.tensor(rng.standard_normal(shape) * scale + shift, requires_grad=requires_grad)


def _np(t):
    return t.detach().numpy()


def _bn_ref(x, mean, var, w, b, eps):
    shape = (1, -1) + (1,) * (x.ndim - 2)
    return (x - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + eps) * w.reshape(shape) + b.reshape(shape)


# -- batch norm: functional ------------------------------------------------------------------------

@pytest.mark.parametrize("shape", [(5, 3), (3, 3, 2), (2, 3, 2, 2)])
def test_batch_norm_training_values_and_gradients(shape):
    x, w, b = t64(*shape, scale=3.0, shift=1.0), t64(3), t64(3)
    y = F.batch_norm(x, None, None, w, b, training=True, eps=1e-3)
    axes = tuple(i for i in range(len(shape)) if i != 1)
    xv = _np(x)
    np.testing.assert_allclose(_np(y), _bn_ref(xv, xv.mean(axes), xv.var(axes), _np(w), _np(b), 1e-3), rtol=1e-10)
    assert y.grad_fn.name() == "NativeBatchNormBackward0"
    fn = lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True, eps=1e-3)
    assert gradcheck(fn, (x, w, b))
    if len(shape) == 3:
        assert gradgradcheck(fn, (x, w, b))
    assert gradcheck(lambda x: F.batch_norm(x, None, None, training=True), (x,))


def test_batch_norm_eval_uses_running_statistics():
    x, w, b = t64(2, 3, 2), t64(3), t64(3)
    rm, rv = tg.tensor(rng.standard_normal(3)), tg.tensor(rng.uniform(0.5, 2.0, 3))
    y = F.batch_norm(x, rm, rv, w, b, training=False)
    np.testing.assert_allclose(_np(y), _bn_ref(_np(x), _np(rm), _np(rv), _np(w), _np(b), 1e-5), rtol=1e-10)
    assert y.grad_fn.name() == "NativeBatchNormBackward0"
    assert gradcheck(lambda x, w, b: F.batch_norm(x, rm, rv, w, b), (x, w, b))
    assert gradgradcheck(lambda x, w, b: F.batch_norm(x, rm, rv, w, b), (x, w, b))
    np.testing.assert_array_equal(_np(F.batch_norm(x, rm, rv)), _np(F.batch_norm(x, rm, rv, None, None)))


def test_batch_norm_updates_running_statistics_with_the_unbiased_variance():
    x = t64(6, 2, 3, requires_grad=False)
    rm, rv = tg.tensor([0.5, -1.0], dtype=tg.float64), tg.tensor([2.0, 0.5], dtype=tg.float64)
    F.batch_norm(x, rm, rv, training=True, momentum=0.25)
    xv = _np(x)
    n = 6 * 3
    mean, var = xv.mean((0, 2)), xv.var((0, 2)) * n / (n - 1)
    np.testing.assert_allclose(_np(rm), 0.75 * np.array([0.5, -1.0]) + 0.25 * mean, rtol=1e-6)
    np.testing.assert_allclose(_np(rv), 0.75 * np.array([2.0, 0.5]) + 0.25 * var, rtol=1e-6)
    assert rm._version == 0 and rv._version == 0  # (PyTorch's update is not a counted in-place op)


def test_batch_norm_float32_keeps_dtype_and_gradients_dtype():
    x = tg.randn(8, 4, requires_grad=True)
    w = tg.ones(4, requires_grad=True)
    y = F.batch_norm(x, tg.zeros(4), tg.ones(4), w, None, training=True)
    assert y.dtype == tg.float32
    y.sum().backward()
    assert x.grad.dtype == tg.float32 and w.grad.dtype == tg.float32


@pytest.mark.parametrize("call,error,msg", [
    (lambda x, c, o: F.batch_norm(x, None, None), RuntimeError, "running_mean must be defined in evaluation mode"),
    (lambda x, c, o: F.batch_norm(x, tg.zeros(4), o), RuntimeError, "running_mean should contain 3 elements not 4"),
    (lambda x, c, o: F.batch_norm(x, c, o, tg.ones(4)), RuntimeError, "weight should contain 3 elements not 4"),
    (lambda x, c, o: F.batch_norm(x, c, o, None, tg.ones(2)), RuntimeError, "bias should contain 3 elements not 2"),
    (lambda x, c, o: F.batch_norm(x[:1], c, o, training=True), ValueError,
     r"Expected more than 1 value per channel when training, got input size tracegrad.Size\(\[1, 3\]\)"),
    (lambda x, c, o: F.batch_norm(x, c, o, training=True, eps=0), ValueError,
     "batch_norm eps must be positive during training, but got 0"),
    (lambda x, c, o: F.batch_norm(x, c.double(), o), RuntimeError,
     r"mixed dtype \(CPU\): expect parameter to have scalar type of Float"),
    (lambda x, c, o: F.batch_norm(x, tg.zeros(3, requires_grad=True), o), RuntimeError,
     "The function 'native_batch_norm' is not differentiable with respect to argument 'running_mean'"),
])
def test_batch_norm_errors(call, error, msg):
    with pytest.raises(error, match=msg):
        call(tg.randn(4, 3), tg.zeros(3), tg.ones(3))


# -- batch norm: layers ------------------------------------------------------------------------------

def test_batchnorm_layer_state_and_training_step():
    bn = nn.BatchNorm2d(3, momentum=0.2)
    assert [n for n, _ in bn.named_parameters()] == ["weight", "bias"]
    assert list(bn.state_dict()) == ["weight", "bias", "running_mean", "running_var", "num_batches_tracked"]
    assert bn.num_batches_tracked.dtype == tg.int64 and bn.num_batches_tracked.item() == 0
    np.testing.assert_array_equal(_np(bn.weight), np.ones(3))
    x = tg.randn(4, 3, 2, 2)
    y = bn(x)
    xv = _np(x).astype(np.float64)
    mean, var = xv.mean((0, 2, 3)), xv.var((0, 2, 3))
    np.testing.assert_allclose(_np(y), _bn_ref(xv, mean, var, np.ones(3), np.zeros(3), 1e-5), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(_np(bn.running_mean), 0.2 * mean, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(_np(bn.running_var), 0.8 + 0.2 * var * 16 / 15, rtol=1e-5)
    assert bn.num_batches_tracked.item() == 1
    bn.eval()
    z = bn(x)
    np.testing.assert_allclose(_np(z), _bn_ref(xv, _np(bn.running_mean), _np(bn.running_var), np.ones(3),
                                               np.zeros(3), 1e-5), rtol=1e-4, atol=1e-5)
    assert bn.num_batches_tracked.item() == 1


def test_batchnorm_momentum_none_is_a_cumulative_average():
    bn = nn.BatchNorm1d(2, momentum=None, affine=False)
    batches = [tg.randn(5, 2) for _ in range(3)]
    for b in batches:
        bn(b)
    means = np.stack([_np(b).mean(0) for b in batches])
    np.testing.assert_allclose(_np(bn.running_mean), means.mean(0), rtol=1e-5, atol=1e-6)
    assert bn.num_batches_tracked.item() == 3


def test_batchnorm_without_running_stats_uses_batch_statistics_in_eval():
    bn = nn.BatchNorm1d(3, track_running_stats=False).eval()
    assert bn.running_mean is None and list(bn.state_dict()) == ["weight", "bias"]
    x = tg.randn(6, 3, 4)
    xv = _np(x).astype(np.float64)
    np.testing.assert_allclose(_np(bn(x)), _bn_ref(xv, xv.mean((0, 2)), xv.var((0, 2)), np.ones(3), np.zeros(3),
                                                   1e-5), rtol=1e-4, atol=1e-5)


def test_batchnorm_input_dim_checks_and_repr():
    with pytest.raises(ValueError, match=r"expected 4D input \(got 3D input\)"):
        nn.BatchNorm2d(3)(tg.randn(2, 3, 4))
    with pytest.raises(ValueError, match=r"expected 2D or 3D input \(got 4D input\)"):
        nn.BatchNorm1d(3)(tg.randn(2, 3, 4, 4))
    with pytest.raises(ValueError, match=r"expected 5D input \(got 4D input\)"):
        nn.BatchNorm3d(3)(tg.randn(2, 3, 4, 4))
    assert repr(nn.BatchNorm2d(4)) == ("BatchNorm2d(4, eps=1e-05, momentum=0.1, affine=True, bias=True, "
                                       "track_running_stats=True)")
    assert repr(nn.BatchNorm1d(2, affine=False, momentum=None)) == (
        "BatchNorm1d(2, eps=1e-05, momentum=None, affine=False, bias=False, track_running_stats=True)")


def test_batchnorm_reset_and_old_checkpoints():
    bn = nn.BatchNorm1d(2)
    bn(tg.randn(4, 2))
    state = {k: v.clone() for k, v in bn.state_dict().items() if k != "num_batches_tracked"}
    fresh = nn.BatchNorm1d(2)
    fresh.load_state_dict(state)  # no num_batches_tracked: an old checkpoint loads, the counter kept
    np.testing.assert_array_equal(_np(fresh.running_mean), _np(bn.running_mean))
    bn.reset_running_stats()
    np.testing.assert_array_equal(_np(bn.running_var), np.ones(2))
    assert bn.num_batches_tracked.item() == 0


# -- layer norm, group norm, rms norm, normalize --------------------------------------------------------

@pytest.mark.parametrize("make, bad", [
    (lambda: nn.BatchNorm2d(3), lambda: tg.ones(2, 4, 2, 2)),    # wrong channel count
    (lambda: nn.BatchNorm1d(2), lambda: tg.ones(1, 2)),          # one value per channel
    (lambda: nn.BatchNorm1d(2, momentum=None), lambda: tg.ones(1, 2)),
])
def test_refused_batch_changes_no_state(make, bad):
    """An input the batch norm refuses leaves its counter and running statistics as they were."""
    bn = make()
    bn(tg.randn(4, *bn.running_mean.shape, *(() if isinstance(bn, nn.BatchNorm1d) else (2, 2))))
    before = {k: _np(v).copy() for k, v in bn.state_dict().items()}
    with pytest.raises((RuntimeError, ValueError)):
        bn(bad())
    for k, v in bn.state_dict().items():
        np.testing.assert_array_equal(_np(v), before[k], err_msg=k)


def test_channel_mismatch_names_running_mean_first():
    with pytest.raises(RuntimeError, match="^running_mean should contain 4 elements not 3$"):
        nn.BatchNorm2d(3)(tg.ones(2, 4, 2, 2))


def _ln_ref(x, k, eps):
    axes = tuple(range(x.ndim - k, x.ndim))
    return (x - x.mean(axes, keepdims=True)) / np.sqrt(x.var(axes, keepdims=True) + eps)


def test_layer_norm_values_and_gradients():
    x, w, b = t64(2, 2, 3, scale=2.0), t64(2, 3), t64(2, 3)
    y = F.layer_norm(x, (2, 3), w, b, eps=1e-3)
    np.testing.assert_allclose(_np(y), _ln_ref(_np(x), 2, 1e-3) * _np(w) + _np(b), rtol=1e-10)
    assert y.grad_fn.name() == "NativeLayerNormBackward0"
    fn = lambda x, w, b: F.layer_norm(x, (2, 3), w, b, eps=1e-3)
    assert gradcheck(fn, (x, w, b)) and gradgradcheck(fn, (x, w, b))
    assert gradcheck(lambda x: F.layer_norm(x, [3]), (x,))


def test_layer_norm_errors():
    x = tg.randn(4, 3)
    with pytest.raises(RuntimeError, match=r"Given normalized_shape=\[4\], expected input with shape \[\*, 4\], but "
                                           r"got input of size\[4, 3\]"):
        F.layer_norm(x, (4,))
    with pytest.raises(RuntimeError, match=r"Expected weight to be of same shape as normalized_shape, but got weight "
                                           r"of shape \[4\] and normalized_shape = \[3\]"):
        F.layer_norm(x, (3,), tg.ones(4))
    with pytest.raises(TypeError, match=r"layer_norm\(\): argument 'normalized_shape' \(position 2\) must be tuple "
                                        r"of ints, not int"):
        F.layer_norm(x, 3)


def test_group_norm_values_and_gradients():
    x, w, b = t64(2, 6, 2, 1, scale=2.0), t64(6), t64(6)
    y = F.group_norm(x, 3, w, b, eps=1e-3)
    xv = _np(x).reshape(2, 3, -1)
    ref = ((xv - xv.mean(-1, keepdims=True)) / np.sqrt(xv.var(-1, keepdims=True) + 1e-3)).reshape(2, 6, 2, 1)
    np.testing.assert_allclose(_np(y), ref * _np(w)[:, None, None] + _np(b)[:, None, None], rtol=1e-10)
    assert y.grad_fn.name() == "NativeGroupNormBackward0"
    fn = lambda x, w, b: F.group_norm(x, 3, w, b, eps=1e-3)
    assert gradcheck(fn, (x, w, b)) and gradgradcheck(fn, (x, w, b))
    assert gradcheck(lambda x: F.group_norm(x, 2), (t64(3, 4),))


def test_group_norm_errors():
    with pytest.raises(RuntimeError, match=r"Expected number of channels in input to be divisible by num_groups, "
                                           r"but got input of shape \[4, 3\] and num_groups=2"):
        F.group_norm(tg.randn(4, 3), 2)
    with pytest.raises(RuntimeError, match="Expected at least 2 dimensions for input tensor but received 1"):
        F.group_norm(tg.randn(4), 1)
    with pytest.raises(RuntimeError, match="Expected weight to be a vector of size equal to the number of channels"):
        F.group_norm(tg.randn(4, 3), 3, tg.ones(4))
    with pytest.raises(ValueError, match=r"num_channels \(5\) must be divisible by num_groups \(2\)"):
        nn.GroupNorm(2, 5)


def test_rms_norm_and_normalize():
    x, w = t64(3, 4), t64(4)
    xv = _np(x)
    ref = xv / np.sqrt((xv ** 2).mean(-1, keepdims=True) + 1e-6) * _np(w)
    np.testing.assert_allclose(_np(F.rms_norm(x, (4,), w, eps=1e-6)), ref, rtol=1e-10)
    assert gradcheck(lambda x, w: F.rms_norm(x, [4], w), (x, w))
    n = F.normalize(x, p=1.0, dim=0)
    np.testing.assert_allclose(_np(n), xv / np.abs(xv).sum(0, keepdims=True), rtol=1e-12)
    assert n.grad_fn.name() == "DivBackward0"
    assert gradcheck(lambda x: F.normalize(x), (x,))
    np.testing.assert_array_equal(_np(F.normalize(tg.zeros(2, 3))), np.zeros((2, 3)))  # eps keeps it finite


def test_norm_layers_defaults_and_reprs():
    ln = nn.LayerNorm(4)
    assert ln.normalized_shape == (4,) and repr(ln) == "LayerNorm((4,), eps=1e-05, elementwise_affine=True, bias=True)"
    np.testing.assert_array_equal(_np(ln.weight), np.ones(4))
    np.testing.assert_array_equal(_np(ln.bias), np.zeros(4))
    assert nn.LayerNorm([2, 3], bias=False).bias is None
    assert list(nn.LayerNorm(3, elementwise_affine=False).parameters()) == []
    assert repr(nn.GroupNorm(2, 4)) == "GroupNorm(2, 4, eps=1e-05, affine=True, bias=True)"
    assert repr(nn.RMSNorm([2, 3])) == "RMSNorm((2, 3), eps=None, elementwise_affine=True)"
    x = tg.randn(2, 3, 4)
    np.testing.assert_allclose(_np(ln(x)), _ln_ref(_np(x).astype(np.float64), 1, 1e-5), rtol=1e-4, atol=1e-5)


# -- against PyTorch -----------------------------------------------------------------------------------------

def _twins(name, *args, **kwargs):
    torch = pytest.importorskip("torch")
    theirs = getattr(torch.nn, name)(*args, **kwargs)
    ours = getattr(nn, name)(*args, **kwargs)
    return theirs, ours


def _randomise(module):
    import torch
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.randn_like(p))
        for name, b in module.named_buffers():
            if name == "running_var":
                b.copy_(torch.rand_like(b) + 0.5)
            elif b.is_floating_point():
                b.copy_(torch.randn_like(b))


@pytest.mark.torch
@pytest.mark.parametrize("name,args,kwargs,shape", [
    ("BatchNorm1d", (3,), {}, (5, 3)), ("BatchNorm1d", (3,), {"momentum": None}, (4, 3, 6)),
    ("BatchNorm2d", (4,), {"momentum": 0.3}, (2, 4, 5, 5)), ("BatchNorm2d", (4,), {"affine": False}, (3, 4, 2, 3)),
    ("BatchNorm2d", (4,), {"track_running_stats": False}, (2, 4, 3, 3)),
    ("BatchNorm3d", (2,), {"bias": False}, (2, 2, 3, 2, 2)),
])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_batchnorm_matches_torch_in_train_and_eval(name, args, kwargs, shape, dtype):
    torch = pytest.importorskip("torch")
    theirs, ours = _twins(name, *args, **kwargs)
    if dtype == "float64":
        theirs, ours = theirs.double(), ours.double()
    _randomise(theirs)
    copy_weights(theirs, ours)
    rtol = 1e-4 if dtype == "float32" else 1e-7
    for step in range(3):  # training steps move the running statistics
        x = (rng.standard_normal(shape) * 2 + 1).astype(dtype)
        compare_modules(theirs, ours, x, rtol=rtol, seed=step)
        theirs.zero_grad()
        ours.zero_grad()
    theirs.eval()
    ours.eval()
    compare_modules(theirs, ours, rng.standard_normal(shape).astype(dtype), rtol=rtol)
    del torch


@pytest.mark.torch
@pytest.mark.parametrize("name,args,kwargs,shape", [
    ("LayerNorm", ((3, 4),), {}, (2, 3, 4)), ("LayerNorm", (5,), {"bias": False, "eps": 1e-3}, (3, 5)),
    ("LayerNorm", (4,), {"elementwise_affine": False}, (2, 4)),
    ("GroupNorm", (2, 6), {}, (3, 6, 4)), ("GroupNorm", (3, 6), {"affine": False}, (2, 6, 2, 2)),
    ("RMSNorm", ((3, 4),), {}, (2, 3, 4)), ("RMSNorm", (4,), {"eps": 1e-3}, (5, 4)),
])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_norm_layers_match_torch(name, args, kwargs, shape, dtype):
    pytest.importorskip("torch")
    theirs, ours = _twins(name, *args, **kwargs)
    if dtype == "float64":
        theirs, ours = theirs.double(), ours.double()
    _randomise(theirs)
    copy_weights(theirs, ours)
    assert repr(ours) == repr(theirs)
    compare_modules(theirs, ours, (rng.standard_normal(shape) * 3).astype(dtype),
                    rtol=1e-4 if dtype == "float32" else 1e-7)


@pytest.mark.torch
def test_batchnorm_reprs_match_torch():
    torch = pytest.importorskip("torch")
    for args, kwargs in (((3,), {}), ((3,), {"momentum": None, "affine": False}),
                         ((2,), {"track_running_stats": False, "bias": False})):
        assert repr(nn.BatchNorm2d(*args, **kwargs)) == repr(torch.nn.BatchNorm2d(*args, **kwargs))
