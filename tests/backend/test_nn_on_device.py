"""``nn`` and ``optim`` on the device: every layer, loss, initialiser, clipping helper,
optimizer and scheduler run on ``device='cuda'`` (the stub device always, a real GPU where
there is one) and give the CPU's values. Each comparison builds the CPU module, deep-copies
it and moves the copy with ``.to('cuda')``, so both start from the same weights; results
come back with ``.cpu()``. On the stub, any NumPy call on device data raises, so these
tests also prove that the layers and update rules reach device arrays only through ``xp``.
"""
import copy
import math
import pickle

import pytest

import tracegrad as tg
from tracegrad import nn
from tracegrad.nn import functional as F
from tracegrad.nn import init

from .nn_checks import (
    assert_same,
    assert_same_params,
    backward_with_cotangents,
    compare_module,
    leaves,
    small_problem,
    to_device,
)

# -- moving modules -----------------------------------------------------------------------------

def _model_with_grads():
    tg.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.ReLU(), nn.Linear(4, 2))
    model(tg.randn(5, 3)).sum().backward()
    return model


@pytest.mark.parametrize("move", [lambda m: m.to("cuda"), lambda m: m.cuda(),
                                  lambda m: m.to(tg.device("cuda:0")), lambda m: m.to(device="cuda")],
                         ids=["to-str", "cuda", "to-device", "to-kw"])
def test_moving_a_module_keeps_its_parameters_and_moves_buffers_and_grads(xp, move):
    model = _model_with_grads()
    params = list(model.parameters())
    cpu_grads = [p.grad.clone() for p in params]
    running_mean = model[1].running_mean.clone()
    assert move(model) is model
    assert all(p is q for p, q in zip(params, model.parameters()))  # as PyTorch's _apply
    assert all(isinstance(p, nn.Parameter) and p.requires_grad for p in params)
    assert next(model.parameters()).device == tg.device("cuda:0")
    for p, g in zip(params, cpu_grads):
        assert_same(p.grad, g, "grad")
    assert_same(model[1].running_mean, running_mean, "running_mean")
    assert model[1].num_batches_tracked.device.type == "cuda"
    assert model[1].num_batches_tracked.dtype == tg.int64


def test_module_dtype_and_back_to_the_cpu(xp):
    model = _model_with_grads()
    weight = model[0].weight
    model.to("cuda", tg.float64)
    assert weight.dtype == tg.float64 and weight.device.type == "cuda" and weight.grad.dtype == tg.float64
    assert model[1].num_batches_tracked.dtype == tg.int64  # dtypes apply to floating tensors only
    model.to(tg.float32)
    assert weight.dtype == tg.float32 and weight.device.type == "cuda"
    model.cpu()
    assert model[0].weight is weight and weight.device.type == "cpu" and weight.grad.device.type == "cpu"
    assert model[1].running_var.device.type == "cpu"
    model.to(tg.zeros(1, device="cuda", dtype=tg.float64))  # to(tensor): its device and dtype
    assert weight.device.type == "cuda" and weight.dtype == tg.float64


def test_shared_parameters_and_parameter_containers_stay_parameters(xp):
    shared = nn.Linear(3, 3)
    model = nn.ModuleDict({"seq": nn.Sequential(shared, nn.Tanh(), shared)})
    model.plist = nn.ParameterList([nn.Parameter(tg.randn(2))])
    model.pdict = nn.ParameterDict({"w": nn.Parameter(tg.randn(2))})
    params = list(model.parameters())
    model.cuda()
    assert all(p is q for p, q in zip(params, model.parameters()))
    assert model.seq[0].weight is model.seq[2].weight
    for p in (model.plist[0], model.pdict["w"], shared.bias):
        assert isinstance(p, nn.Parameter) and p.device.type == "cuda"
    for clone in (copy.deepcopy(model), pickle.loads(pickle.dumps(model))):
        assert isinstance(clone.plist[0], nn.Parameter) and clone.plist[0].device.type == "cuda"
        assert_same(clone.seq[0].weight, shared.weight.cpu(), "copied weight")


def test_hooks_fire_on_a_moved_module(xp):
    model = nn.Linear(3, 2)
    events = []
    model.register_forward_pre_hook(lambda m, args: events.append(("pre", args[0].device.type)))
    model.register_forward_hook(lambda m, args, out: events.append(("forward", out.device.type)))
    model.register_full_backward_hook(lambda m, gin, gout: events.append(("backward", gin[0].device.type)))
    model.weight.register_hook(lambda g: events.append(("weight", g.device.type)))
    model.cuda()
    model(tg.randn(4, 3, device="cuda", requires_grad=True)).sum().backward()
    assert sorted(events) == [("backward", "cuda"), ("forward", "cuda"), ("pre", "cuda"),
                              ("weight", "cuda")]


def test_mixed_devices_are_refused(xp):
    model = nn.Linear(5, 2).cuda()
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        model(tg.randn(3, 5))
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        F.cross_entropy(tg.randn(3, 5, device="cuda"), tg.tensor([0, 1, 2]))


# -- layers: forward and backward against the CPU -------------------------------------------------

class _Stack(nn.Module):
    """A ModuleList driven by a Python loop."""

    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(4, 4), nn.GELU(), nn.Linear(4, 3)])

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


_IDX = tg.tensor([[0, 2, 3], [3, 0, 9]])
LAYERS = {
    "linear": (lambda: nn.Linear(4, 3), [(2, 4)]),
    "bilinear": (lambda: nn.Bilinear(4, 3, 2), [(2, 4), (2, 3)]),
    "conv1d": (lambda: nn.Conv1d(2, 3, 3, padding=1), [(2, 2, 7)]),
    "conv2d": (lambda: nn.Conv2d(4, 4, 3, stride=2, padding=1, groups=2), [(2, 4, 7, 7)]),
    "conv2d-reflect": (lambda: nn.Conv2d(2, 3, 3, padding=1, padding_mode="reflect", bias=False),
                       [(2, 2, 5, 5)]),
    "conv3d": (lambda: nn.Conv3d(2, 3, 2, padding=1), [(1, 2, 3, 3, 3)]),
    "conv_transpose1d": (lambda: nn.ConvTranspose1d(2, 3, 3, stride=2), [(2, 2, 5)]),
    "conv_transpose2d": (lambda: nn.ConvTranspose2d(2, 3, 3, stride=2, padding=1, output_padding=1),
                         [(2, 2, 4, 4)]),
    "conv_transpose3d": (lambda: nn.ConvTranspose3d(2, 3, 2), [(1, 2, 3, 3, 3)]),
    "batchnorm1d": (lambda: nn.BatchNorm1d(3), [(4, 3)]),
    "batchnorm1d-seq": (lambda: nn.BatchNorm1d(3, momentum=None), [(4, 3, 5)]),
    "batchnorm2d": (lambda: nn.BatchNorm2d(3), [(4, 3, 2, 2)]),
    "batchnorm2d-untracked": (lambda: nn.BatchNorm2d(3, track_running_stats=False), [(4, 3, 2, 2)]),
    "layernorm": (lambda: nn.LayerNorm([4, 5]), [(3, 4, 5)]),
    "groupnorm": (lambda: nn.GroupNorm(2, 4), [(3, 4, 5)]),
    "rmsnorm": (lambda: nn.RMSNorm(5), [(3, 5)]),
    "embedding": (lambda: nn.Embedding(10, 3, padding_idx=0), [_IDX]),
    "embedding-max_norm": (lambda: nn.Embedding(10, 3, max_norm=1.0), [_IDX]),
    "maxpool2d": (lambda: nn.MaxPool2d(3, stride=2, padding=1), [(2, 3, 6, 6)]),
    "maxpool1d": (lambda: nn.MaxPool1d(2), [(2, 3, 6)]),
    "avgpool2d": (lambda: nn.AvgPool2d(3, stride=2, padding=1, count_include_pad=False), [(2, 3, 6, 6)]),
    "avgpool1d": (lambda: nn.AvgPool1d(2), [(2, 3, 6)]),
    "adaptive_avg_pool2d": (lambda: nn.AdaptiveAvgPool2d((2, 3)), [(2, 3, 7, 7)]),
    "adaptive_avg_pool1d": (lambda: nn.AdaptiveAvgPool1d(3), [(2, 3, 7)]),
    "rnn": (lambda: nn.RNN(3, 4, num_layers=2), [(5, 2, 3)]),
    "lstm": (lambda: nn.LSTM(3, 4, bidirectional=True), [(5, 2, 3)]),
    "lstm-proj": (lambda: nn.LSTM(3, 4, proj_size=2), [(5, 2, 3)]),
    "gru": (lambda: nn.GRU(3, 4, batch_first=True), [(2, 5, 3), (1, 2, 4)]),
    "rnn_cell": (lambda: nn.RNNCell(3, 4), [(2, 3)]),
    "lstm_cell": (lambda: nn.LSTMCell(3, 4), [(2, 3)]),
    "gru_cell": (lambda: nn.GRUCell(3, 4), [(2, 3)]),
    "sequential-flatten": (lambda: nn.Sequential(nn.Flatten(), nn.Linear(12, 4), nn.ReLU(),
                                                 nn.Unflatten(1, (2, 2))), [(2, 3, 4)]),
    "modulelist": (_Stack, [(2, 4)]),
    "prelu": (lambda: nn.PReLU(3), [(2, 3, 4)]),
    "cross_entropy_loss": (lambda: nn.CrossEntropyLoss(weight=tg.rand(5), label_smoothing=0.1),
                           [(6, 5), tg.tensor([0, 1, 4, 2, -100, 3])]),
    "bce_with_logits_loss": (lambda: nn.BCEWithLogitsLoss(pos_weight=tg.rand(5)), [(6, 5), (6, 5)]),
    "upsample-bilinear": (lambda: nn.Upsample(scale_factor=1.5, mode="bilinear"), [(2, 3, 4, 5)]),
    "upsample-bilinear-align_corners": (lambda: nn.Upsample(size=(7, 3), mode="bilinear", align_corners=True),
                                        [(2, 3, 4, 5)]),
    "upsample-nearest": (lambda: nn.Upsample(scale_factor=2, mode="nearest"), [(2, 3, 4, 5)]),
    "upsample-trilinear": (lambda: nn.Upsample(size=(3, 5, 2), mode="trilinear"), [(1, 2, 2, 3, 4)]),
    "adaptive_max_pool1d": (lambda: nn.AdaptiveMaxPool1d(3), [(2, 3, 7)]),
    "adaptive_max_pool2d": (lambda: nn.AdaptiveMaxPool2d((2, 3)), [(2, 3, 7, 5)]),
    "adaptive_max_pool3d": (lambda: nn.AdaptiveMaxPool3d(2), [(1, 2, 3, 5, 4)]),
    "adaptive_avg_pool3d": (lambda: nn.AdaptiveAvgPool3d((2, 1, 3)), [(1, 2, 3, 5, 4)]),
    "maxpool3d": (lambda: nn.MaxPool3d(2, stride=(1, 2, 2), padding=1), [(1, 2, 3, 5, 4)]),
    "avgpool3d": (lambda: nn.AvgPool3d(2, stride=1), [(1, 2, 3, 4, 4)]),
    "lppool2d": (lambda: nn.LPPool2d(2, 2), [(2, 3, 4, 4)]),
    "embedding_bag-mean": (lambda: nn.EmbeddingBag(10, 3, mode="mean"),
                           [tg.tensor([1, 2, 4, 5, 4, 3, 2, 9]), tg.tensor([0, 3, 3, 6])]),
    "embedding_bag-max-2d": (lambda: nn.EmbeddingBag(10, 3, mode="max", padding_idx=2), [_IDX]),
    "embedding_bag-sum-weights": (lambda: nn.EmbeddingBag(10, 3, mode="sum"),
                                  [tg.tensor([1, 2, 4, 5, 4]), tg.tensor([0, 2]), (5,)]),
    "unfold": (lambda: nn.Unfold(2, dilation=(1, 2), padding=1, stride=2), [(2, 3, 5, 6)]),
    "fold": (lambda: nn.Fold((4, 5), 2, stride=1), [(2, 12, 12)]),
    "instance_norm1d": (lambda: nn.InstanceNorm1d(3, affine=True), [(2, 3, 5)]),
    "instance_norm2d-tracked": (lambda: nn.InstanceNorm2d(3, track_running_stats=True), [(2, 3, 4, 4)]),
    "pixel_shuffle": (lambda: nn.PixelShuffle(2), [(2, 8, 3, 3)]),
    "pixel_unshuffle": (lambda: nn.PixelUnshuffle(2), [(2, 2, 4, 6)]),
    "reflection_pad2d": (lambda: nn.ReflectionPad2d((1, 2, 2, 1)), [(2, 3, 4, 4)]),
    "replication_pad3d": (lambda: nn.ReplicationPad3d(1), [(1, 2, 2, 3, 3)]),
    "circular_pad1d": (lambda: nn.CircularPad1d((2, 1)), [(2, 3, 4)]),
    "local_response_norm": (lambda: nn.LocalResponseNorm(3), [(2, 5, 3, 3)]),
    "adaptive_log_softmax": (lambda: nn.AdaptiveLogSoftmaxWithLoss(6, 10, [3, 6], div_value=2.0),
                             [(5, 6), tg.tensor([0, 4, 9, 2, 7])]),
}
ACTIVATIONS = ["CELU", "ELU", "GELU", "Hardshrink", "Hardsigmoid", "Hardswish", "Hardtanh",
               "LeakyReLU", "LogSigmoid", "Mish", "ReLU", "ReLU6", "SELU", "SiLU", "Sigmoid",
               "Softplus", "Softshrink", "Softsign", "Tanh", "Tanhshrink"]
LAYERS.update({name: (getattr(nn, name), [(3, 4)]) for name in ACTIVATIONS})
LAYERS.update({name: (lambda name=name: getattr(nn, name)(dim=1), [(3, 4)])
               for name in ("Softmax", "LogSoftmax", "Softmin")})


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_layer_on_device_gives_the_cpu_values_and_gradients(xp, name):
    factory, specs = LAYERS[name]
    tg.manual_seed(0)
    compare_module(factory(), specs)


def _grid(n, h, w):
    """Sampling positions in [-1.2, 1.2] (some outside, to reach the padding modes)."""
    return (tg.rand(n, h, w, 2) * 2.4 - 1.2).requires_grad_()


def _unpool_args():
    x = _rand(2, 3, 4, 4)
    _, idx = F.max_pool2d(x.detach(), 2, return_indices=True)
    return _rand(2, 3, 2, 2), idx


# functional forms with no module of their own, or options the modules above do not reach:
# name -> (function, argument maker, kwargs); every output (indices too) is compared
FUNCTIONALS = {
    "interpolate-bilinear": (F.interpolate, lambda: (_rand(2, 3, 4, 5),), dict(size=(6, 3), mode="bilinear")),
    "interpolate-nearest": (F.interpolate, lambda: (_rand(2, 3, 4, 5),), dict(scale_factor=(1.5, 0.5))),
    "interpolate-nearest-exact": (F.interpolate, lambda: (_rand(2, 3, 5),), dict(size=7, mode="nearest-exact")),
    "interpolate-bicubic": (F.interpolate, lambda: (_rand(1, 2, 4, 4),), dict(size=(5, 7), mode="bicubic",
                                                                                 align_corners=True)),
    "interpolate-bilinear-antialias": (F.interpolate, lambda: (_rand(1, 2, 8, 9),),
                                       dict(size=(3, 4), mode="bilinear", antialias=True)),
    "interpolate-area": (F.interpolate, lambda: (_rand(1, 2, 6, 7),), dict(size=(4, 3), mode="area")),
    "grid_sample-bilinear": (F.grid_sample, lambda: (_rand(2, 3, 4, 5), _grid(2, 3, 2)), dict(align_corners=False)),
    "grid_sample-nearest-border": (F.grid_sample, lambda: (_rand(2, 3, 4, 5), _grid(2, 3, 2)),
                                   dict(mode="nearest", padding_mode="border", align_corners=True)),
    "grid_sample-bicubic-reflection": (F.grid_sample, lambda: (_rand(1, 2, 4, 5), _grid(1, 3, 3)),
                                       dict(mode="bicubic", padding_mode="reflection", align_corners=False)),
    "affine_grid": (F.affine_grid, lambda: (_rand(2, 2, 3),), dict(size=(2, 3, 4, 5), align_corners=False)),
    "adaptive_max_pool2d-indices": (F.adaptive_max_pool2d, lambda: (_rand(2, 3, 7, 5),),
                                    dict(output_size=(3, 2), return_indices=True)),
    "max_pool3d-indices": (F.max_pool3d, lambda: (_rand(1, 2, 4, 5, 4),),
                           dict(kernel_size=2, stride=(1, 2, 2), padding=1, return_indices=True)),
    "fractional_max_pool2d": (F.fractional_max_pool2d, lambda: (_rand(2, 3, 7, 7),),
                              dict(kernel_size=2, output_size=(4, 3), return_indices=True,
                                   _random_samples=tg.rand(2, 3, 2))),
    "fractional_max_pool3d": (F.fractional_max_pool3d, lambda: (_rand(1, 2, 5, 5, 6),),
                              dict(kernel_size=2, output_ratio=0.6, _random_samples=tg.rand(1, 2, 3))),
    "max_unpool2d": (F.max_unpool2d, _unpool_args, dict(kernel_size=2)),
    "unfold": (F.unfold, lambda: (_rand(2, 3, 5, 6),), dict(kernel_size=(2, 3), padding=1, stride=(2, 1))),
    "fold": (F.fold, lambda: (_rand(2, 3 * 4, 15),), dict(output_size=(4, 5), kernel_size=2, dilation=(1, 2),
                                                          padding=(0, 1))),
    "embedding_bag-per_sample_weights": (F.embedding_bag, lambda: (tg.tensor([1, 2, 4, 5, 4]), _rand(10, 3),
                                                                   tg.tensor([0, 2, 2]), None, 2, False, "sum",
                                                                   False, _rand(5)), {}),
    "instance_norm": (F.instance_norm, lambda: (_rand(2, 3, 4, 4),), dict(weight=tg.rand(3), bias=tg.rand(3))),
    "pixel_shuffle": (F.pixel_shuffle, lambda: (_rand(2, 12, 2, 3),), dict(upscale_factor=2)),
}


def _tensors(obj):
    return [obj] if isinstance(obj, tg.Tensor) else [t for item in obj for t in _tensors(item)]


@pytest.mark.parametrize("name", sorted(FUNCTIONALS))
def test_functional_on_device_gives_the_cpu_values_and_gradients(xp, name):
    fn, make_args, kwargs = FUNCTIONALS[name]
    tg.manual_seed(0)
    args = [a.detach().requires_grad_(a.requires_grad) if isinstance(a, tg.Tensor) else a for a in make_args()]
    dev_args = [to_device(a) for a in args]
    outs = _tensors(fn(*args, **kwargs))
    dev_outs = _tensors(fn(*dev_args, **{k: to_device(v) for k, v in kwargs.items()}))
    assert len(dev_outs) == len(outs)
    for i, (d, c) in enumerate(zip(dev_outs, outs)):
        assert d.device.type == "cuda" and d.dtype == c.dtype
        assert_same(d, c, f"output {i}")
    backward_with_cotangents(leaves(outs))
    backward_with_cotangents(leaves(dev_outs))
    for i, (d, c) in enumerate(zip(dev_args, args)):
        if isinstance(c, tg.Tensor) and c.requires_grad:
            assert_same(d.grad, c.grad, f"argument {i} grad")


def test_batchnorm_running_stats_update_on_device_and_serve_eval(xp):
    tg.manual_seed(0)
    bn = nn.BatchNorm2d(3, momentum=0.3)
    dev = copy.deepcopy(bn).cuda()
    for step in range(3):  # each training forward moves the running statistics alike
        x = tg.randn(4, 3, 2, 2) * (step + 1) + step
        bn(x), dev(x.cuda())
        assert_same(dev.running_mean, bn.running_mean, "running_mean")
        assert_same(dev.running_var, bn.running_var, "running_var")
    assert int(dev.num_batches_tracked) == 3
    bn.eval()
    compare_module(bn, [(4, 3, 2, 2)])  # eval: normalised by the running statistics


def test_max_pool_indices_live_on_the_device(xp):
    x = tg.randn(2, 3, 6, 6)
    pool = nn.MaxPool2d(3, stride=2, padding=1, return_indices=True)
    (out, idx), (dev_out, dev_idx) = pool(x), pool(x.cuda())
    assert dev_idx.device.type == "cuda" and dev_idx.dtype == tg.int64
    assert tg.equal(dev_idx.cpu(), idx)
    assert_same(dev_out, out, "pooled")
    _, idx1 = F.max_pool1d(x[0], 2, return_indices=True)
    assert tg.equal(F.max_pool1d(x[0].cuda(), 2, return_indices=True)[1].cpu(), idx1)


def test_embedding_padding_row_gets_no_gradient_on_device(xp):
    emb = nn.Embedding(10, 3, padding_idx=0).cuda()
    emb(_IDX.cuda()).sum().backward()
    grad = emb.weight.grad.cpu()
    assert (grad[0] == 0).all() and tg.equal(grad[3], tg.full((3,), 2.0))


@pytest.mark.parametrize("p", [0.2, 0.5])
def test_dropout_draws_its_mask_on_the_device(xp, p):
    tg.manual_seed(0)
    expected_cpu_draw = tg.rand(3)
    tg.manual_seed(0)
    x = tg.full((200, 500), 2.0, device="cuda", requires_grad=True)
    y = nn.Dropout(p)(x)
    assert y.device.type == "cuda"
    assert tg.equal(tg.rand(3), expected_cpu_draw)  # the CPU stream was not used
    kept = (y != 0).cpu()
    assert abs(1 - kept.float().mean().item() - p) < 0.01
    assert tg.allclose(y.cpu()[kept], tg.tensor(2.0 / (1 - p)))  # survivors scaled by 1/(1-p)
    y.sum().backward()
    assert tg.allclose(x.grad.cpu(), kept.float() / (1 - p))
    tg.manual_seed(0)
    assert tg.equal(nn.Dropout(p)(x).cpu(), y.cpu())  # the device stream is seeded
    assert tg.equal(nn.Dropout(p).eval()(x), x)


def test_channel_dropout_zeroes_whole_channels_on_device(xp):
    tg.manual_seed(0)
    y = nn.Dropout2d(0.25)(tg.ones(500, 8, 3, 3, device="cuda")).cpu().reshape(4000, 9)
    whole = (y == 0).all(1) | (y == 1 / 0.75).all(1)
    assert whole.all() and abs((y[:, 0] == 0).float().mean().item() - 0.25) < 0.03


# -- losses -----------------------------------------------------------------------------------

def _rand(*shape):
    return tg.randn(*shape).requires_grad_()


def _probs(*shape):
    return tg.rand(*shape).mul(0.9).add(0.05).requires_grad_()


_T = tg.tensor([0, 1, 4, 2, 1, 3])
_T_IGNORED = tg.tensor([0, 1, 4, -100, 1, 3])
LOSSES = {
    "cross_entropy": (F.cross_entropy, lambda: (_rand(6, 5), _T), {}),
    "cross_entropy-ignore_index": (F.cross_entropy, lambda: (_rand(6, 5), _T_IGNORED), {}),
    "cross_entropy-label_smoothing": (F.cross_entropy, lambda: (_rand(6, 5), _T_IGNORED),
                                      dict(label_smoothing=0.1, weight=tg.rand(5))),
    "cross_entropy-probabilities": (F.cross_entropy, lambda: (_rand(6, 5), F.softmax(_rand(6, 5), 1)),
                                    dict(label_smoothing=0.2)),
    "cross_entropy-4d-none": (F.cross_entropy, lambda: (_rand(2, 5, 3, 3), tg.randint(0, 5, (2, 3, 3))),
                              dict(reduction="none")),
    "nll_loss": (F.nll_loss, lambda: (F.log_softmax(_rand(6, 5), 1), _T_IGNORED), dict(weight=tg.rand(5))),
    "mse_loss": (F.mse_loss, lambda: (_rand(6, 5), _rand(6, 5)), {}),
    "l1_loss": (F.l1_loss, lambda: (_rand(6, 5), _rand(6, 5)), dict(reduction="sum")),
    "binary_cross_entropy": (F.binary_cross_entropy, lambda: (_probs(6, 5), _probs(6, 5)),
                             dict(weight=tg.rand(5))),
    "binary_cross_entropy_with_logits": (F.binary_cross_entropy_with_logits,
                                         lambda: (_rand(6, 5), _probs(6, 5)), dict(pos_weight=tg.rand(5))),
    "smooth_l1_loss": (F.smooth_l1_loss, lambda: (_rand(6, 5), _rand(6, 5)), dict(beta=0.5)),
    "huber_loss": (F.huber_loss, lambda: (_rand(6, 5), _rand(6, 5)), dict(delta=0.5, reduction="none")),
    "kl_div": (F.kl_div, lambda: (F.log_softmax(_rand(6, 5), 1), F.softmax(_rand(6, 5), 1)),
               dict(reduction="batchmean")),
    "kl_div-log_target": (F.kl_div, lambda: (F.log_softmax(_rand(6, 5), 1), F.log_softmax(_rand(6, 5), 1)),
                          dict(reduction="sum", log_target=True)),
    "poisson_nll_loss": (F.poisson_nll_loss, lambda: (_rand(6, 5), _probs(6, 5).mul(3)), dict(full=True)),
    "poisson_nll_loss-rates": (F.poisson_nll_loss, lambda: (_probs(6, 5), _probs(6, 5)),
                               dict(log_input=False, reduction="sum")),
    "gaussian_nll_loss": (F.gaussian_nll_loss, lambda: (_rand(6, 5), _rand(6, 5), _probs(6, 5)), dict(full=True)),
    "gaussian_nll_loss-shared_var": (F.gaussian_nll_loss, lambda: (_rand(6, 5), _rand(6, 5), _probs(6, 1)),
                                     dict(reduction="none")),
    "soft_margin_loss": (F.soft_margin_loss, lambda: (_rand(6, 5), tg.randint(0, 2, (6, 5)) * 2.0 - 1), {}),
    "hinge_embedding_loss": (F.hinge_embedding_loss, lambda: (_rand(6, 5), tg.randint(0, 2, (6, 5)) * 2.0 - 1),
                             dict(margin=0.5)),
    "margin_ranking_loss": (F.margin_ranking_loss, lambda: (_rand(6), _rand(6), tg.randint(0, 2, (6,)) * 2.0 - 1),
                            dict(margin=0.3)),
    "cosine_embedding_loss": (F.cosine_embedding_loss,
                              lambda: (_rand(6, 5), _rand(6, 5), tg.tensor([1.0, -1, 1, -1, -1, 1])),
                              dict(margin=0.2)),
    "multi_margin_loss": (F.multi_margin_loss, lambda: (_rand(6, 5), _T), dict(p=2, weight=tg.rand(5))),
    "multilabel_margin_loss": (F.multilabel_margin_loss,
                               lambda: (_rand(3, 5), tg.tensor([[3, 0, -1, 1, 4], [1, 2, 3, 4, 0], [-1, 0, 0, 0, 0]])),
                               {}),
    "multilabel_soft_margin_loss": (F.multilabel_soft_margin_loss,
                                    lambda: (_rand(6, 5), tg.randint(0, 2, (6, 5)).float()), dict(weight=tg.rand(5))),
    "triplet_margin_loss": (F.triplet_margin_loss, lambda: (_rand(6, 5), _rand(6, 5), _rand(6, 5)),
                            dict(p=1.5, swap=True)),
    "triplet_margin_with_distance_loss": (F.triplet_margin_with_distance_loss,
                                          lambda: (_rand(6, 5), _rand(6, 5), _rand(6, 5)),
                                          dict(distance_function=lambda a, b: (a - b).abs().sum(-1), swap=True)),
    "ctc_loss": (F.ctc_loss, lambda: (F.log_softmax(_rand(7, 3, 5), 2), tg.tensor([[1, 2, 2], [3, 1, 0], [4, 4, 4]]),
                                      tg.tensor([7, 5, 6]), tg.tensor([3, 2, 3])), {}),
    "ctc_loss-concatenated-sum": (F.ctc_loss, lambda: (F.log_softmax(_rand(6, 2, 4), 2), tg.tensor([1, 2, 3, 3]),
                                                       tg.tensor([6, 4]), tg.tensor([2, 2])),
                                  dict(reduction="sum", blank=0, zero_infinity=True)),
}


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_loss_on_device_gives_the_cpu_value_and_gradients(xp, name):
    fn, make_args, kwargs = LOSSES[name]
    tg.manual_seed(0)
    args = [a.detach().requires_grad_(a.requires_grad) for a in make_args()]  # leaves
    dev_args = [to_device(a) for a in args]
    loss = fn(*args, **kwargs)
    dev_loss = fn(*dev_args, **{k: to_device(v) for k, v in kwargs.items()})
    assert_same(dev_loss, loss, "loss")
    backward_with_cotangents([loss])
    backward_with_cotangents([dev_loss])
    for i, (d, c) in enumerate(zip(dev_args, args)):
        if c.requires_grad:
            assert_same(d.grad, c.grad, f"argument {i} grad")


def test_every_loss_in_functional_is_compared():
    losses = {n for n in dir(F) if n.endswith("_loss") or n in ("cross_entropy", "kl_div")
              or n.startswith("binary_cross_entropy")}
    assert losses == {name.partition("-")[0] for name in LOSSES}


# -- init -------------------------------------------------------------------------------------

def _std_checks(std, mean=0.0):
    return lambda w: (abs(w.mean().item() - mean) < 0.03 * max(std, abs(mean))
                      and abs(w.std().item() / std - 1) < 0.03)


_FAN = 256  # the 256 x 256 weights below: fan_in = fan_out = 256
INITS = {
    "uniform_": (lambda w: init.uniform_(w, -1.0, 3.0),
                 lambda w: w.min().item() >= -1 and w.max().item() < 3 and _std_checks(4 / 12 ** 0.5, 1.0)(w)),
    "normal_": (lambda w: init.normal_(w, 1.0, 2.0), _std_checks(2.0, 1.0)),
    "trunc_normal_": (lambda w: init.trunc_normal_(w, std=1.0, a=-2.0, b=2.0),
                      lambda w: w.abs().max().item() <= 2 and _std_checks(0.8796)(w)),
    "xavier_uniform_": (init.xavier_uniform_, _std_checks(math.sqrt(2 / (2 * _FAN)))),
    "xavier_normal_": (lambda w: init.xavier_normal_(w, gain=2.0), _std_checks(2 * math.sqrt(2 / (2 * _FAN)))),
    "kaiming_uniform_": (init.kaiming_uniform_, _std_checks(math.sqrt(2 / _FAN))),
    "kaiming_normal_": (lambda w: init.kaiming_normal_(w, nonlinearity="relu", mode="fan_out"),
                        _std_checks(math.sqrt(2 / _FAN))),
    "orthogonal_": (init.orthogonal_, lambda w: tg.allclose((w @ w.T).cpu(), tg.eye(_FAN), atol=1e-4)),
    "sparse_": (lambda w: init.sparse_(w, 0.25),
                lambda w: ((w == 0).sum(0).cpu() == math.ceil(0.25 * _FAN)).all().item()),
}


@pytest.mark.parametrize("name", sorted(INITS))
def test_random_init_draws_on_the_device_with_the_right_statistics(xp, name):
    fill, looks_right = INITS[name]
    tg.manual_seed(0)
    expected_cpu_draw = tg.rand(3)
    tg.manual_seed(0)
    w = nn.Parameter(tg.empty(_FAN, _FAN, device="cuda"))
    assert fill(w) is w and isinstance(w, nn.Parameter) and w.device.type == "cuda"
    assert tg.equal(tg.rand(3), expected_cpu_draw)  # drawn from the device's stream
    assert looks_right(w.detach()), name
    first = w.detach().cpu()
    tg.manual_seed(0)
    assert tg.equal(fill(w).detach().cpu(), first)  # repeatable under manual_seed


@pytest.mark.parametrize("fill", [lambda w: init.constant_(w, 0.5), init.ones_, init.zeros_, init.eye_,
                                  lambda w: init.dirac_(w.view(4, 2, 3, 3), groups=2)],
                         ids=["constant_", "ones_", "zeros_", "eye_", "dirac_"])
def test_deterministic_init_on_device_gives_the_cpu_values(xp, fill):
    w, dev = tg.randn(8, 9), tg.randn(8, 9, device="cuda")
    fill(w), fill(dev)
    assert_same(dev, w, "filled")


def test_init_refuses_a_cpu_generator_for_a_device_tensor(xp):
    w = tg.empty(3, 3, device="cuda")
    with pytest.raises(RuntimeError, match="Expected a 'cuda' device type for generator"):
        init.normal_(w, generator=tg.Generator().manual_seed(0))
    a = init.normal_(w, generator=tg.Generator(device="cuda").manual_seed(5)).cpu()
    assert tg.equal(init.normal_(w, generator=tg.Generator(device="cuda").manual_seed(5)).cpu(), a)


# -- nn.utils ---------------------------------------------------------------------------------

def _pair_with_grads():
    model, x, _ = small_problem()
    dev = copy.deepcopy(model).cuda()
    model(x).pow(2).sum().backward()
    dev(x.cuda()).pow(2).sum().backward()
    return model, dev


@pytest.mark.parametrize("norm_type", [2.0, 1, "inf"])
def test_clip_grad_norm_on_device(xp, norm_type):
    model, dev = _pair_with_grads()
    total = nn.utils.clip_grad_norm_(model.parameters(), 0.1, norm_type=norm_type)
    dev_total = nn.utils.clip_grad_norm_(dev.parameters(), 0.1, norm_type=norm_type)
    assert_same(dev_total, total, "total norm")
    assert_same(nn.utils.get_total_norm([p.grad for p in dev.parameters()], norm_type),
                nn.utils.get_total_norm([p.grad for p in model.parameters()], norm_type), "clipped norm")
    assert_same_params(dev, model, "clipped", grads=True)


def test_clip_grad_value_and_nonfinite_norms_on_device(xp):
    model, dev = _pair_with_grads()
    nn.utils.clip_grad_value_(model.parameters(), 0.05)
    nn.utils.clip_grad_value_(dev.parameters(), 0.05)
    assert_same_params(dev, model, "clipped", grads=True)
    dev[0].weight.grad[0, 0] = float("nan")
    with pytest.raises(RuntimeError, match="is non-finite"):
        nn.utils.clip_grad_norm_(dev.parameters(), 1.0, error_if_nonfinite=True)


def test_parameters_to_vector_and_back_on_device(xp):
    model, dev = _pair_with_grads()
    vec, cpu_vec = (nn.utils.parameters_to_vector(m.parameters()) for m in (dev, model))
    assert_same(vec, cpu_vec, "vector")
    nn.utils.vector_to_parameters(vec * 2, dev.parameters())
    nn.utils.vector_to_parameters(cpu_vec * 2, model.parameters())
    assert_same_params(dev, model, "written back")


