"""Learning-rate schedulers: 30-step schedules against hand formulas and (marked ``torch``)
bit for bit against PyTorch; ``initial_lr``, resuming, state dicts and the warnings."""
import math
import warnings

import pytest

import tracegrad as tg

LRS = [0.5, 0.1]  # two parameter groups


def _optimizer(lib):
    return lib.optim.SGD([{"params": [lib.ones(2, requires_grad=True)]},
                          {"params": [lib.ones(1, requires_grad=True)], "lr": LRS[1]}], lr=LRS[0], momentum=0.9)


class Warmup:
    """A callable object (its ``__dict__`` is what LambdaLR saves)."""

    def __init__(self, n):
        self.n = n

    def __call__(self, epoch):
        return min(1.0, (epoch + 1) / self.n)


SCHEDULES = {
    "step": lambda lib, opt: lib.optim.lr_scheduler.StepLR(opt, step_size=3, gamma=0.5),
    "multistep": lambda lib, opt: lib.optim.lr_scheduler.MultiStepLR(opt, [2, 5, 5, 9], gamma=0.3),
    "exponential": lambda lib, opt: lib.optim.lr_scheduler.ExponentialLR(opt, gamma=0.9),
    "cosine": lambda lib, opt: lib.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=7, eta_min=0.01),
    "cosine-long": lambda lib, opt: lib.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=25),
    "lambda": lambda lib, opt: lib.optim.lr_scheduler.LambdaLR(opt, lambda e: 0.95 ** e),
    "lambdas": lambda lib, opt: lib.optim.lr_scheduler.LambdaLR(opt, [Warmup(4), lambda e: 1 / (1 + e)]),
}

# closed forms: lr at epoch e from the initial lr
CLOSED = {
    "step": lambda lr, e: lr * 0.5 ** (e // 3),
    "multistep": lambda lr, e: lr * 0.3 ** sum(m <= e for m in [2, 5, 5, 9]),
    "exponential": lambda lr, e: lr * 0.9 ** e,
    "cosine": lambda lr, e: 0.01 + (lr - 0.01) * (1 + math.cos(math.pi * e / 7)) / 2,
    "cosine-long": lambda lr, e: lr * (1 + math.cos(math.pi * e / 25)) / 2,
    "lambda": lambda lr, e: lr * 0.95 ** e,
}


def _schedule(lib, name, steps=30):
    opt = _optimizer(lib)
    sched = SCHEDULES[name](lib, opt)
    lrs = [sched.get_last_lr()]
    for _ in range(steps):
        opt.step()
        sched.step()
        lrs.append(sched.get_last_lr())
        assert [g["lr"] for g in opt.param_groups] == lrs[-1]
    return lrs, sched, opt


@pytest.mark.parametrize("name", list(CLOSED))
def test_schedule_by_hand(name):
    lrs, sched, opt = _schedule(tg, name)
    for epoch, values in enumerate(lrs):
        assert values == pytest.approx([CLOSED[name](lr, epoch) for lr in LRS], rel=1e-12, abs=1e-15)
    assert sched.last_epoch == 30 and sched.base_lrs == LRS
    assert [g["initial_lr"] for g in opt.param_groups] == LRS


def test_lambdas_per_group():
    lrs, _, _ = _schedule(tg, "lambdas", 6)
    for e, values in enumerate(lrs):
        assert values == pytest.approx([LRS[0] * min(1.0, (e + 1) / 4), LRS[1] / (1 + e)], rel=1e-15)


@pytest.mark.torch
@pytest.mark.parametrize("name", list(SCHEDULES))
def test_schedule_as_torch(name):
    torch = pytest.importorskip("torch")
    ours, sched, _ = _schedule(tg, name)
    theirs, tsched, _ = _schedule(torch, name)
    assert ours == theirs  # exactly: the same recursive formulas in the same order
    assert sched.state_dict().keys() == tsched.state_dict().keys()


@pytest.mark.torch
def test_closed_form_steps_as_torch():
    torch = pytest.importorskip("torch")
    results = []
    for lib in (tg, torch):
        opt = _optimizer(lib)
        sched = lib.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=5)
        opt.step()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            sched.step(3)
            sched.step()
        results.append(sched.get_last_lr())
    assert results[0] == results[1]


def test_state_dict_round_trip():
    _, sched, opt = _schedule(tg, "cosine", 10)
    state = sched.state_dict()
    assert "optimizer" not in state and state["last_epoch"] == 10 and state["T_max"] == 7
    assert list(state) == ["T_max", "eta_min", "base_lrs", "last_epoch", "_step_count", "_is_initial",
                           "_get_lr_called_within_step", "_last_lr"]
    fresh_opt = _optimizer(tg)
    fresh = tg.optim.lr_scheduler.CosineAnnealingLR(fresh_opt, T_max=7, eta_min=0.01)
    fresh.load_state_dict(state)
    fresh_opt.load_state_dict(opt.state_dict())
    for _ in range(5):
        for o, s in ((opt, sched), (fresh_opt, fresh)):
            o.step()
            s.step()
        assert fresh.get_last_lr() == sched.get_last_lr()


def test_lambda_state_dict_keeps_callable_objects_only():
    opt = _optimizer(tg)
    sched = tg.optim.lr_scheduler.LambdaLR(opt, [Warmup(4), lambda e: 1.0])
    state = sched.state_dict()
    assert state["lr_lambdas"] == [{"n": 4}, None]
    other = tg.optim.lr_scheduler.LambdaLR(_optimizer(tg), [Warmup(9), lambda e: 1.0])
    other.load_state_dict(state)
    assert other.lr_lambdas[0].n == 4 and state["lr_lambdas"] == [{"n": 4}, None]


def test_resuming_needs_initial_lr():
    opt = _optimizer(tg)
    with pytest.raises(KeyError, match=r"param 'initial_lr' is not specified in param_groups\[0\] when "
                                       "resuming scheduler with last_epoch >= 0"):
        tg.optim.lr_scheduler.StepLR(opt, 2, last_epoch=4)
    tg.optim.lr_scheduler.StepLR(opt, 2)
    sched = tg.optim.lr_scheduler.ExponentialLR(opt, 0.5, last_epoch=4)  # initial_lr is there now
    assert sched.last_epoch == 5 and sched.get_last_lr() == LRS  # the initial step does not decay


def test_errors_and_warnings():
    with pytest.raises(TypeError, match="^NoneType is not an Optimizer$"):
        tg.optim.lr_scheduler.StepLR(None, 2)
    with pytest.raises(ValueError, match="^Expected 2 lr_lambdas, but got 1$"):
        tg.optim.lr_scheduler.LambdaLR(_optimizer(tg), [lambda e: 1.0])
    opt = _optimizer(tg)
    sched = tg.optim.lr_scheduler.StepLR(opt, 2)
    with pytest.warns(UserWarning, match="Detected call of `lr_scheduler.step\\(\\)` before `optimizer.step\\(\\)`"):
        sched.step()
    with pytest.warns(UserWarning, match="please use `get_last_lr\\(\\)`"):
        sched.get_lr()
    with pytest.warns(UserWarning, match="The epoch parameter in `scheduler.step\\(\\)` was not necessary"):
        sched.step(4)
    assert sched.get_last_lr() == pytest.approx([LRS[0] * 0.01, LRS[1] * 0.01], rel=1e-15)  # closed form


def test_no_warning_in_the_right_order():
    opt = _optimizer(tg)
    sched = tg.optim.lr_scheduler.ExponentialLR(opt, 0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        opt.step()
        sched.step()
    assert opt.step._wrapped_by_lr_sched and opt._opt_called


def test_tensor_lr_is_filled_in_place():
    p = tg.ones(1, requires_grad=True)
    lr = tg.tensor(1.0)
    opt = tg.optim.SGD([p], lr=lr)
    sched = tg.optim.lr_scheduler.StepLR(opt, 1, gamma=0.5)
    opt.step()
    sched.step()
    assert opt.param_groups[0]["lr"] is lr and lr.item() == 0.5
    assert sched.get_last_lr()[0] is not lr and opt.param_groups[0]["initial_lr"].item() == 1.0
