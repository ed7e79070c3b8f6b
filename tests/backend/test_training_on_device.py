"""Training on the device: optimizers, schedulers, state dicts, save/load and whole
models (resnet18, the digits convnet) give the CPU's trajectories (see test_nn_on_device.py
for how the comparison is made)."""
import copy
import io

import numpy as np
import pytest

import tracegrad as tg
from tracegrad import nn, optim
from tracegrad.models import resnet18
from tracegrad.nn import functional as F
from tracegrad.nn import init

from ..examples.test_train_digits import load_example
from .nn_checks import TOL, assert_same, assert_same_params, small_problem


# -- optimizers -------------------------------------------------------------------------------

OPTIMIZERS = {
    "sgd": (optim.SGD, dict(lr=0.1)),
    "sgd-momentum": (optim.SGD, dict(lr=0.1, momentum=0.9, dampening=0.1, maximize=True)),
    "sgd-nesterov": (optim.SGD, dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01)),
    "adam": (optim.Adam, dict(lr=0.01, weight_decay=0.1)),
    "adam-capturable": (optim.Adam, dict(lr=0.01, capturable=True)),
    "adamw-amsgrad": (optim.AdamW, dict(lr=0.01, amsgrad=True)),
    "rmsprop": (optim.RMSprop, dict(lr=0.01)),
    "rmsprop-centered": (optim.RMSprop, dict(lr=0.01, momentum=0.9, centered=True, weight_decay=0.1)),
    "adagrad": (optim.Adagrad, dict(lr=0.1, lr_decay=0.01, weight_decay=0.1, initial_accumulator_value=0.1)),
    "adadelta": (optim.Adadelta, dict(lr=0.5, weight_decay=0.1)),
    "adamax": (optim.Adamax, dict(lr=0.01)),
    "nadam": (optim.NAdam, dict(lr=0.01, decoupled_weight_decay=True, weight_decay=0.1)),
    "radam": (optim.RAdam, dict(lr=0.01, betas=(0.9, 0.5))),
    "asgd": (optim.ASGD, dict(lr=0.05, t0=2)),
    "rprop": (optim.Rprop, dict(lr=0.01)),
    "adafactor": (optim.Adafactor, dict(lr=0.05, weight_decay=0.1)),
}
# stepped differently: LBFGS needs a closure (test_lbfgs_on_device), Muon takes only 2-D
# parameters (test_muon_on_device), SparseAdam only sparse gradients (tracegrad has none)
SPECIAL = {optim.LBFGS, optim.Muon, optim.SparseAdam}


def test_every_optimizer_is_compared():
    assert {cls for cls, _ in OPTIMIZERS.values()} | SPECIAL == {getattr(optim, n) for n in optim.__all__
                                                                 if n[0].isupper() and n != "Optimizer"}


def test_lbfgs_on_device(xp):
    model, x, y = small_problem()
    dev = copy.deepcopy(model).cuda()
    for m, inputs, target in ((model, x, y), (dev, x.cuda(), y.cuda())):
        opt = optim.LBFGS(m.parameters(), line_search_fn="strong_wolfe", max_iter=5)

        def closure():
            opt.zero_grad()
            loss = F.mse_loss(m(inputs), target)
            loss.backward()
            return loss

        for _ in range(2):
            opt.step(closure)
    assert_same_params(dev, model, "after LBFGS")


def test_muon_on_device(xp):
    model, x, y = small_problem()
    dev = copy.deepcopy(model).cuda()
    for m, inputs, target in ((model, x, y), (dev, x.cuda(), y.cuda())):
        opt = optim.Muon([p for p in m.parameters() if p.dim() == 2], lr=0.02)
        _steps(m, opt, inputs, target, 3)
    assert_same_params(dev, model, "after Muon")


def _on_cpu(kwargs):
    """The CPU twin's options: capturable=True refuses CPU parameters, as in PyTorch."""
    return {k: v for k, v in kwargs.items() if k != "capturable"}


def _steps(model, opt, x, y, n, scheduler=None, loss_fn=F.mse_loss):
    """``n`` training steps on the whole batch; the losses, as Python floats."""
    losses = []
    for _ in range(n):
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        if scheduler is not None:
            scheduler.step()
        losses.append(loss.item())
    return losses


def _assert_state_placed(opt, device_type, loaded=False):
    """State tensors live on the params' device; the scalar ``step`` (and NAdam's
    ``mu_product``) on the CPU unless the group is capturable, as in PyTorch (ASGD keeps
    all its state on the device). Loading, as PyTorch's, moves all but ``step`` to the
    params' device, and ``step`` only for a capturable group."""
    if opt.param_groups[0].get("capturable"):
        hosted = set()
    elif loaded:
        hosted = {"step"}
    else:
        hosted = set() if isinstance(opt, optim.ASGD) else {"step", "mu_product"}
    for st in opt.state.values():
        for key, value in st.items():
            if isinstance(value, tg.Tensor):
                want = "cpu" if key in hosted else device_type
                assert value.device.type == want, f"state {key} on {value.device}"


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_optimizer_on_device_follows_the_cpu_trajectory(xp, name):
    cls, kwargs = OPTIMIZERS[name]
    model, x, y = small_problem()
    dev = copy.deepcopy(model).cuda()
    opt, dev_opt = cls(model.parameters(), **_on_cpu(kwargs)), cls(dev.parameters(), **kwargs)
    for step in range(5):
        _steps(model, opt, x, y, 1)
        _steps(dev, dev_opt, x.cuda(), y.cuda(), 1)
        assert_same_params(dev, model, f"step {step + 1}")
    _assert_state_placed(dev_opt, "cuda")


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_optimizer_state_dict_crosses_devices(xp, name):
    """A CPU-saved state loaded over device parameters (through save/load) moves there and
    continues the CPU's trajectory; a device-saved state loaded over CPU params comes back."""
    cls, kwargs = OPTIMIZERS[name]
    model, x, y = small_problem()
    opt = cls(model.parameters(), **_on_cpu(kwargs))
    _steps(model, opt, x, y, 3)
    buffer = io.BytesIO()
    tg.save(opt.state_dict(), buffer)
    buffer.seek(0)
    dev = copy.deepcopy(model).cuda()
    dev_opt = cls(dev.parameters(), **kwargs)
    dev_opt.load_state_dict(tg.load(buffer))
    _assert_state_placed(dev_opt, "cuda", loaded=True)
    _steps(model, opt, x, y, 2)
    _steps(dev, dev_opt, x.cuda(), y.cuda(), 2)
    assert_same_params(dev, model, "after loading")
    back = cls(model.parameters(), **kwargs)
    back.load_state_dict(dev_opt.state_dict())
    _assert_state_placed(back, "cpu", loaded=True)
    for key, value in opt.state[next(model.parameters())].items():
        if isinstance(value, tg.Tensor):
            assert tg.allclose(back.state[next(model.parameters())][key], value, **TOL), key


SCHEDULERS = {
    "step": (optim.lr_scheduler.StepLR, dict(step_size=2, gamma=0.5)),
    "multistep": (optim.lr_scheduler.MultiStepLR, dict(milestones=[1, 3])),
    "exponential": (optim.lr_scheduler.ExponentialLR, dict(gamma=0.7)),
    "cosine": (optim.lr_scheduler.CosineAnnealingLR, dict(T_max=4)),
    "lambda": (optim.lr_scheduler.LambdaLR, dict(lr_lambda=lambda epoch: 0.9 ** epoch)),
}


@pytest.mark.parametrize("name", sorted(SCHEDULERS))
def test_lr_scheduler_drives_a_device_optimizer_like_the_cpu(xp, name):
    cls, kwargs = SCHEDULERS[name]
    model, x, y = small_problem()
    dev = copy.deepcopy(model).cuda()
    opt, dev_opt = (optim.SGD(m.parameters(), lr=0.1, momentum=0.9) for m in (model, dev))
    sched, dev_sched = cls(opt, **kwargs), cls(dev_opt, **kwargs)
    _steps(model, opt, x, y, 5, sched)
    _steps(dev, dev_opt, x.cuda(), y.cuda(), 5, dev_sched)
    assert dev_sched.get_last_lr() == sched.get_last_lr()
    assert_same_params(dev, model, "scheduled")


# -- module state dicts -----------------------------------------------------------------------

def _conv_bn(trained=True):
    tg.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2), nn.Flatten(), nn.Linear(8, 3))
    if trained:
        model(tg.randn(4, 1, 4, 4))  # running statistics away from their initial values
    return model


def test_state_dict_of_a_device_model_is_on_the_device(xp):
    model = _conv_bn()
    state = copy.deepcopy(model).cuda().state_dict()
    assert list(state) == list(model.state_dict())
    for key, value in model.state_dict().items():
        assert state[key].device.type == "cuda", key
        assert tg.equal(state[key].cpu(), value), key


def test_load_state_dict_copies_across_devices(xp):
    model, fresh = _conv_bn(), _conv_bn(trained=False).cuda()
    init.zeros_(fresh[0].weight)
    params = list(fresh.parameters())
    fresh.load_state_dict(model.state_dict())
    assert all(p is q for p, q in zip(params, fresh.parameters()))
    for key, value in model.state_dict().items():
        assert_same(fresh.state_dict()[key], value, key)
    back = copy.deepcopy(model)
    init.zeros_(back[0].weight)
    back.load_state_dict(fresh.state_dict())  # device state into a CPU model
    assert back[0].weight.device.type == "cpu" and tg.equal(back[0].weight, model[0].weight)


def test_save_and_load_a_device_state_dict(xp):
    model = _conv_bn()
    buffer = io.BytesIO()
    tg.save(copy.deepcopy(model).cuda().state_dict(), buffer)
    buffer.seek(0)
    restored = tg.load(buffer)  # onto the device it was saved from
    buffer.seek(0)
    on_cpu = tg.load(buffer, map_location="cpu")
    for key, value in model.state_dict().items():
        assert_same(restored[key], value, key)
        assert on_cpu[key].device.type == "cpu" and tg.equal(on_cpu[key], value), key


# -- whole models -----------------------------------------------------------------------------

def test_resnet18_on_device_matches_the_cpu_and_takes_an_sgd_step(xp):
    # float64, and a batch of 4 images of 64x64 (batch norm over >= 16 values per channel):
    # with batch norm over 2 values, or in float32, the gradients amplify rounding so much
    # (a ReLU input rounding to the other side of 0 moves a weight's gradient by percents;
    # torch's CPU float32 differs from its float64 by as much there) that a comparison
    # says nothing about the device's kernels
    tg.manual_seed(0)
    model = resnet18(num_classes=5).double()
    x, y = tg.randn(4, 3, 64, 64, dtype=tg.float64), tg.tensor([1, 3, 0, 2])
    dev = copy.deepcopy(model).cuda()
    loss, dev_loss = F.cross_entropy(model(x), y), F.cross_entropy(dev(x.cuda()), y.cuda())
    assert_same(dev_loss, loss, "loss")
    loss.backward()
    dev_loss.backward()
    assert_same_params(dev, model, "resnet18", grads=True, tol=dict(rtol=1e-7, atol=1e-9))
    for (name, b), (_, c) in zip(model.named_buffers(), dev.named_buffers()):
        assert_same(c, b, name)
    for m in (model, dev):
        optim.SGD(m.parameters(), lr=0.1, momentum=0.9).step()
    assert_same_params(dev, model, "after one SGD step")
    model.eval(), dev.eval()
    assert_same(dev(x.cuda()), model(x), "eval logits")


def test_digits_training_on_device_gives_the_cpu_losses(xp):
    """The example's convnet, trained as the example does (Adam, cosine schedule), a few steps."""
    from tracegrad.datasets import digits_split
    (x, y), _ = digits_split()
    x, y = (x[:64] - x.mean()) / x.std(), y[:64]
    losses = []
    for device in ("cpu", "cuda"):
        tg.manual_seed(0)
        model = load_example().make_model().to(device)
        opt = optim.Adam(model.parameters(), lr=3e-3)
        sched = optim.lr_scheduler.CosineAnnealingLR(opt, T_max=4)
        losses.append(_steps(model, opt, x.to(device), y.to(device), 4, sched, F.cross_entropy))
    assert losses[0][-1] < losses[0][0]  # it trains
    np.testing.assert_allclose(losses[1], losses[0], rtol=1e-4)
