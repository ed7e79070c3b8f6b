"""The rest of torch 2.13's schedulers (``test_lr_scheduler.py`` has the first five): 30+
step schedules against closed forms by hand and (marked ``torch``) exactly against PyTorch,
momentum cycling, ReduceLROnPlateau on a scripted metric, fractional epochs, state dicts
and PyTorch's error messages."""
import math
import warnings

import pytest

import tracegrad as tg

LRS = [0.5, 0.1]  # two parameter groups


def _optimizer(lib, kind="SGD"):
    groups = [{"params": [lib.ones(2, requires_grad=True)]},
              {"params": [lib.ones(1, requires_grad=True)], "lr": LRS[1]}]
    if kind == "Adam":
        return lib.optim.Adam(groups, lr=LRS[0])
    return lib.optim.SGD(groups, lr=LRS[0], momentum=0.9)


def _sched(lib):
    return lib.optim.lr_scheduler


SCHEDULES = {
    "multiplicative": lambda lib, o: _sched(lib).MultiplicativeLR(o, lambda e: 0.97),
    "constant": lambda lib, o: _sched(lib).ConstantLR(o, factor=0.3, total_iters=4),
    "linear": lambda lib, o: _sched(lib).LinearLR(o, start_factor=0.2, end_factor=0.9, total_iters=7),
    "polynomial": lambda lib, o: _sched(lib).PolynomialLR(o, total_iters=12, power=2.0),
    "sequential": lambda lib, o: _sched(lib).SequentialLR(
        o, [_sched(lib).LinearLR(o, 0.1, total_iters=5), _sched(lib).CosineAnnealingLR(o, 10),
            _sched(lib).ExponentialLR(o, 0.9)], milestones=[5, 15]),
    "chained": lambda lib, o: _sched(lib).ChainedScheduler(
        [_sched(lib).ConstantLR(o, 0.5, total_iters=6), _sched(lib).ExponentialLR(o, 0.93),
         _sched(lib).StepLR(o, 4, 0.7)]),
    "cyclic": lambda lib, o: _sched(lib).CyclicLR(o, 0.01, [0.5, 0.3], step_size_up=4, step_size_down=3),
    "cyclic-triangular2": lambda lib, o: _sched(lib).CyclicLR(o, 0.01, 0.5, step_size_up=3, mode="triangular2"),
    "cyclic-exp-range": lambda lib, o: _sched(lib).CyclicLR(o, [0.01, 0.02], 0.5, step_size_up=5, mode="exp_range",
                                                           gamma=0.95, base_momentum=0.7, max_momentum=0.95),
    "cyclic-no-momentum": lambda lib, o: _sched(lib).CyclicLR(o, 0.01, 0.5, step_size_up=5, cycle_momentum=False),
    "warm-restarts": lambda lib, o: _sched(lib).CosineAnnealingWarmRestarts(o, T_0=4, T_mult=2, eta_min=0.001),
    "warm-restarts-1": lambda lib, o: _sched(lib).CosineAnnealingWarmRestarts(o, T_0=5),
    "one-cycle": lambda lib, o: _sched(lib).OneCycleLR(o, max_lr=[1.0, 0.5], total_steps=31),
    "one-cycle-linear-3": lambda lib, o: _sched(lib).OneCycleLR(
        o, max_lr=1.0, epochs=4, steps_per_epoch=8, anneal_strategy="linear", three_phase=True, pct_start=0.25,
        div_factor=10.0, final_div_factor=100.0),
}


def _cyclic(base, top, e, up, down, scale=lambda cycle, e: 1.0):
    cycle = math.floor(1 + e / (up + down))
    x = 1.0 + e / (up + down) - cycle
    ratio = up / (up + down)
    factor = x / ratio if x <= ratio else (x - 1) / (ratio - 1)
    return base + (top - base) * factor * scale(cycle, e)


def _warm(lr, e, t0, mult, eta_min):
    t_i = t0
    while e >= t_i:
        e, t_i = e - t_i, t_i * mult
    return eta_min + (lr - eta_min) * (1 + math.cos(math.pi * e / t_i)) / 2


def _one_cycle(top, e, total, pct, initial, final, anneal, three_phase=False):
    start, low = top / initial, top / initial / final
    ends = [pct * total - 1, 2 * pct * total - 2, total - 1] if three_phase else [pct * total - 1, total - 1]
    points = [start, top, start, low] if three_phase else [start, top, low]
    begin = 0.0
    for i, end in enumerate(ends):
        if e <= end or i == len(ends) - 1:
            return anneal(points[i], points[i + 1], (e - begin) / (end - begin))
        begin = end


def _cos(a, b, pct):
    return b + (a - b) / 2 * (math.cos(math.pi * pct) + 1)


def _lin(a, b, pct):
    return a + (b - a) * pct


# closed forms: lr of group ``g`` (initial rate ``lr``) at epoch ``e``
CLOSED = {
    "multiplicative": lambda g, lr, e: lr * 0.97 ** e,
    "constant": lambda g, lr, e: lr * (0.3 if e < 4 else 1.0),
    "linear": lambda g, lr, e: lr * (0.2 + 0.7 * min(e, 7) / 7),
    "polynomial": lambda g, lr, e: lr * (1 - min(e, 12) / 12) ** 2,
    "sequential": lambda g, lr, e: (lr * (0.1 + 0.9 * e / 5) if e < 5 else
                                    lr * (1 + math.cos(math.pi * (e - 5) / 10)) / 2 if e < 15 else
                                    lr * 0.9 ** (e - 15)),
    "chained": lambda g, lr, e: lr * (0.5 if e < 6 else 1.0) * 0.93 ** e * 0.7 ** (e // 4),
    "cyclic": lambda g, lr, e: _cyclic(0.01, [0.5, 0.3][g], e, 4, 3),
    "cyclic-triangular2": lambda g, lr, e: _cyclic(0.01, 0.5, e, 3, 3, lambda c, e: 0.5 ** (c - 1)),
    "cyclic-exp-range": lambda g, lr, e: _cyclic([0.01, 0.02][g], 0.5, e, 5, 5, lambda c, e: 0.95 ** e),
    "warm-restarts": lambda g, lr, e: _warm(lr, e, 4, 2, 0.001),
    "warm-restarts-1": lambda g, lr, e: _warm(lr, e, 5, 1, 0.0),
    "one-cycle": lambda g, lr, e: _one_cycle([1.0, 0.5][g], e, 31, 0.3, 25.0, 1e4, _cos),
    "one-cycle-linear-3": lambda g, lr, e: _one_cycle(1.0, e, 32, 0.25, 10.0, 100.0, _lin, three_phase=True),
}


def _momenta(opt):
    return [g["betas"][0] if "betas" in g else g["momentum"] for g in opt.param_groups]


def _schedule(lib, name, kind="SGD", steps=30):
    opt = _optimizer(lib, kind)
    sched = SCHEDULES[name](lib, opt)
    lrs, momenta = [sched.get_last_lr()], [_momenta(opt)]
    for _ in range(steps):
        opt.step()
        sched.step()
        lrs.append(sched.get_last_lr())
        momenta.append(_momenta(opt))
        assert [g["lr"] for g in opt.param_groups] == lrs[-1]
    return lrs, momenta, sched, opt


@pytest.mark.parametrize("name", list(CLOSED))
def test_schedule_by_hand(name):
    lrs, _, _, _ = _schedule(tg, name)
    for epoch, values in enumerate(lrs):
        want = [CLOSED[name](g, lr, epoch) for g, lr in enumerate(LRS)]
        assert values == pytest.approx(want, rel=1e-10, abs=1e-14), epoch


@pytest.mark.torch
@pytest.mark.parametrize("kind", ["SGD", "Adam"])
@pytest.mark.parametrize("name", list(SCHEDULES))
def test_schedule_as_torch(name, kind):
    torch = pytest.importorskip("torch")
    ours, our_momenta, sched, opt = _schedule(tg, name, kind)
    theirs, their_momenta, tsched, topt = _schedule(torch, name, kind)
    assert ours == theirs  # exactly: the same recursive formulas in the same order
    assert our_momenta == their_momenta  # SGD's momentum or Adam's beta1, cycled or left alone
    assert list(sched.state_dict()) == list(tsched.state_dict())
    assert [sorted(g) for g in opt.param_groups] == [sorted(g) for g in topt.param_groups]


def test_cyclic_momentum_moves_against_the_rate():
    _, momenta, _, opt = _schedule(tg, "cyclic-exp-range", steps=10)
    assert momenta[0] == [0.95, 0.95]
    assert momenta[5] == pytest.approx([0.95 - 0.25 * 0.95 ** 5] * 2, rel=1e-12)  # the top of the rate's cycle
    assert opt.param_groups[0]["base_momentum"] == 0.7 and opt.param_groups[0]["max_momentum"] == 0.95
    _, momenta, _, opt = _schedule(tg, "one-cycle", kind="Adam", steps=12)
    assert [m[0] for m in momenta[:2]] == pytest.approx([0.95, _cos(0.95, 0.85, 1 / 8.3)], rel=1e-12)
    assert opt.param_groups[0]["betas"][1] == 0.999  # only beta1 cycles


# -- ReduceLROnPlateau on a scripted metric -----------------------------------------------
METRICS = [1.0, 0.9, 0.95, 0.95, 0.96, 0.97, 0.8, 0.81, 0.82, 0.83, 0.84, 0.7999, 0.85, 0.9] * 3
PLATEAUS = [
    {"patience": 2},
    {"mode": "max", "patience": 1, "factor": 0.5, "threshold": 0.01, "threshold_mode": "abs", "cooldown": 2,
     "min_lr": [0.05, 0.01]},
    {"patience": 0, "factor": 0.3, "eps": 0.01, "min_lr": 0.02},
    {"patience": 1, "threshold": 0.2, "cooldown": 1},
]


def _plateau(lib, kwargs):
    opt = _optimizer(lib)
    sched = lib.optim.lr_scheduler.ReduceLROnPlateau(opt, **kwargs)
    lrs = []
    for metric in METRICS:
        opt.step()
        sched.step(lib.tensor(metric) if len(lrs) % 2 else metric)  # a number or a one-element tensor
        lrs.append(sched.get_last_lr())
    return lrs, sched


def _plateau_by_hand(mode="min", factor=0.1, patience=10, threshold=1e-4, threshold_mode="rel", cooldown=0,
                     min_lr=0, eps=1e-8):
    """The documented rule, written out: reduce once more than ``patience`` epochs in a row
    were not better than the best by the threshold; then ignore ``cooldown`` epochs."""
    min_lrs = min_lr if isinstance(min_lr, list) else [min_lr] * 2
    sign = 1 if mode == "min" else -1
    best, bad, cool, lrs, out = sign * math.inf, 0, 0, list(LRS), []
    for m in METRICS:
        if threshold_mode == "rel":
            better = sign * m < sign * best * (1 - sign * threshold)
        else:
            better = sign * m < sign * best - threshold
        best, bad = (m, 0) if better else (best, bad + 1)
        if cool > 0:
            cool, bad = cool - 1, 0
        if bad > patience:
            lrs = [max(lr * factor, lo) if lr - max(lr * factor, lo) > eps else lr for lr, lo in zip(lrs, min_lrs)]
            cool, bad = cooldown, 0
        out.append(list(lrs))
    return out


@pytest.mark.parametrize("kwargs", PLATEAUS, ids=[str(k) for k in PLATEAUS])
def test_plateau_by_hand(kwargs):
    lrs, sched = _plateau(tg, kwargs)
    assert lrs == _plateau_by_hand(**kwargs)
    assert sched.last_epoch == len(METRICS) and any(lr != LRS for lr in lrs)


@pytest.mark.torch
@pytest.mark.parametrize("kwargs", PLATEAUS, ids=[str(k) for k in PLATEAUS])
def test_plateau_as_torch(kwargs):
    torch = pytest.importorskip("torch")
    ours, sched = _plateau(tg, kwargs)
    theirs, tsched = _plateau(torch, kwargs)
    assert ours == theirs
    state, tstate = sched.state_dict(), tsched.state_dict()
    assert list(state) == list(tstate) and state == tstate


def test_plateau_state_dict_round_trip():
    _, sched = _plateau(tg, PLATEAUS[1])
    other = tg.optim.lr_scheduler.ReduceLROnPlateau(_optimizer(tg))
    other.load_state_dict(sched.state_dict())
    assert other.mode == "max" and other.mode_worse == -math.inf and other.best == sched.best


# -- fractional epochs, resuming, state dicts ----------------------------------------------
EPOCHS = [0, 0.25, 0.5, 1.75, 3.0, 3.9, 4.0, 5.5, 11.9, 12.0, 13.2, 27.0, 28.5, 60.0, 2.0]


def _fractional(lib):
    opt = _optimizer(lib)
    sched = lib.optim.lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=4, T_mult=2, eta_min=0.01)
    lrs = []
    for epoch in EPOCHS:
        opt.step()
        sched.step(epoch)
        lrs.append(sched.get_last_lr())
    return lrs, sched


def test_warm_restarts_fractional_epochs_by_hand():
    lrs, sched = _fractional(tg)
    for epoch, values in zip(EPOCHS, lrs):
        assert values == pytest.approx([_warm(lr, epoch, 4, 2, 0.01) for lr in LRS], rel=1e-12), epoch
    assert sched.last_epoch == 2 and sched.T_i == 4


@pytest.mark.torch
def test_warm_restarts_fractional_epochs_as_torch():
    torch = pytest.importorskip("torch")
    ours, sched = _fractional(tg)
    theirs, tsched = _fractional(torch)
    assert ours == theirs and sched.state_dict() == tsched.state_dict()


@pytest.mark.parametrize("name", ["sequential", "chained", "cyclic", "one-cycle", "warm-restarts"])
def test_state_dict_round_trip(name):
    lrs, _, sched, opt = _schedule(tg, name, steps=9)
    state = sched.state_dict()
    assert "optimizer" not in state
    fresh_opt = _optimizer(tg)
    fresh = SCHEDULES[name](tg, fresh_opt)
    fresh.load_state_dict(state)
    fresh_opt.load_state_dict(opt.state_dict())
    for _ in range(6):
        for o, s in ((opt, sched), (fresh_opt, fresh)):
            o.step()
            s.step()
        assert fresh.get_last_lr() == sched.get_last_lr()
        assert _momenta(fresh_opt) == _momenta(opt)


def test_cyclic_state_dict_keeps_a_callable_objects_state():
    class Halving:
        def __init__(self):
            self.base = 0.5

        def __call__(self, cycle):
            return self.base ** cycle

    opt = _optimizer(tg)
    sched = tg.optim.lr_scheduler.CyclicLR(opt, 0.01, 0.5, step_size_up=2, scale_fn=Halving())
    state = sched.state_dict()
    assert state["_scale_fn_custom"] == {"base": 0.5} and "_scale_fn_ref" not in state
    other_fn = Halving()
    other_fn.base = 0.9
    other = tg.optim.lr_scheduler.CyclicLR(_optimizer(tg), 0.01, 0.5, step_size_up=2, scale_fn=other_fn)
    other.load_state_dict(state)
    assert other_fn.base == 0.5


def test_get_last_lr_and_last_epoch():
    opt = _optimizer(tg)
    sched = tg.optim.lr_scheduler.LinearLR(opt, start_factor=0.5, total_iters=2)
    assert sched.last_epoch == 0 and sched.get_last_lr() == [0.25, 0.05]
    opt.step()
    sched.step()
    assert sched.last_epoch == 1 and sched.get_last_lr() == pytest.approx([0.375, 0.075], rel=1e-15)


def test_one_cycle_refuses_a_step_past_the_end():
    opt = _optimizer(tg)
    sched = tg.optim.lr_scheduler.OneCycleLR(opt, max_lr=1.0, total_steps=3)
    for _ in range(3):
        opt.step()
        sched.step()
    with pytest.raises(ValueError, match="^Tried to step 4 times. The specified number of total steps is 3$"):
        sched.step()


def test_warning_when_the_scheduler_steps_first():
    opt = _optimizer(tg)
    sched = tg.optim.lr_scheduler.PolynomialLR(opt)
    with pytest.warns(UserWarning, match="Detected call of `lr_scheduler.step\\(\\)` before `optimizer.step\\(\\)`"):
        sched.step()
    opt = _optimizer(tg)
    sched = tg.optim.lr_scheduler.ConstantLR(opt)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        opt.step()
        sched.step()


# -- errors, with PyTorch's types and messages -----------------------------------------------
ERRORS = {
    "verbose": (lambda lib, o: _sched(lib).StepLR(o, 2, verbose=True), TypeError, None),
    "constant-factor": (lambda lib, o: _sched(lib).ConstantLR(o, factor=1.5), ValueError,
                        "Constant multiplicative factor expected to be between 0 and 1."),
    "linear-start": (lambda lib, o: _sched(lib).LinearLR(o, start_factor=0), ValueError,
                     "Starting multiplicative factor expected to be greater than 0 and less or equal to 1."),
    "linear-end": (lambda lib, o: _sched(lib).LinearLR(o, end_factor=2), ValueError,
                   "Ending multiplicative factor expected to be between 0 and 1."),
    "multiplicative-not-callable": (lambda lib, o: _sched(lib).MultiplicativeLR(o, [lambda e: 1, 3]), TypeError,
                                    "lr_lambda should be a function, but got int"),
    "plateau-factor": (lambda lib, o: _sched(lib).ReduceLROnPlateau(o, factor=1.0), ValueError,
                       "Factor should be < 1.0."),
    "plateau-mode": (lambda lib, o: _sched(lib).ReduceLROnPlateau(o, mode="up"), ValueError, "mode up is unknown!"),
    "plateau-threshold-mode": (lambda lib, o: _sched(lib).ReduceLROnPlateau(o, threshold_mode="x"), ValueError,
                               "threshold mode x is unknown!"),
    "plateau-min-lrs": (lambda lib, o: _sched(lib).ReduceLROnPlateau(o, min_lr=[0.1]), ValueError,
                        "expected 2 min_lrs, got 1"),
    "cyclic-mode": (lambda lib, o: _sched(lib).CyclicLR(o, 0.1, 1.0, mode="square"), ValueError,
                    "mode is invalid and scale_fn is None"),
    "cyclic-max-lrs": (lambda lib, o: _sched(lib).CyclicLR(o, 0.1, [1.0, 2.0, 3.0]), ValueError,
                       "max_lr must have the same length as optimizer.param_groups. max_lr has 3 values, "
                       "param_groups has 2."),
    "cyclic-no-momentum": (lambda lib, o: _sched(lib).CyclicLR(lib.optim.Adagrad(o.param_groups[0]["params"]),
                                                               0.1, 1.0), ValueError,
                           "optimizer must support momentum or beta1 with `cycle_momentum` option enabled"),
    "warm-t0": (lambda lib, o: _sched(lib).CosineAnnealingWarmRestarts(o, T_0=0), ValueError,
                "Expected positive integer T_0, but got 0"),
    "warm-tmult": (lambda lib, o: _sched(lib).CosineAnnealingWarmRestarts(o, T_0=2, T_mult=1.5), ValueError,
                   "Expected integer T_mult >= 1, but got 1.5"),
    "warm-negative-epoch": (lambda lib, o: _sched(lib).CosineAnnealingWarmRestarts(o, T_0=2).step(-1), ValueError,
                            "Expected non-negative epoch, but got -1"),
    "one-cycle-steps": (lambda lib, o: _sched(lib).OneCycleLR(o, 1.0), ValueError,
                        "You must define either total_steps OR (epochs AND steps_per_epoch)"),
    "one-cycle-total": (lambda lib, o: _sched(lib).OneCycleLR(o, 1.0, total_steps=0), ValueError,
                        "Expected positive integer total_steps, but got 0"),
    "one-cycle-epochs": (lambda lib, o: _sched(lib).OneCycleLR(o, 1.0, epochs=2.0, steps_per_epoch=3), ValueError,
                         "Expected positive integer epochs, but got 2.0"),
    "one-cycle-pct": (lambda lib, o: _sched(lib).OneCycleLR(o, 1.0, total_steps=5, pct_start=1), ValueError,
                      "Expected float between 0 and 1 pct_start, but got 1"),
    "one-cycle-anneal": (lambda lib, o: _sched(lib).OneCycleLR(o, 1.0, total_steps=5, anneal_strategy="exp"),
                         ValueError, "anneal_strategy must be one of 'cos' or 'linear', instead got exp"),
    "sequential-empty": (lambda lib, o: _sched(lib).SequentialLR(o, [], []), ValueError,
                         "SequentialLR expects at least one scheduler, but got no scheduler."),
    "sequential-milestones": (lambda lib, o: _sched(lib).SequentialLR(o, [_sched(lib).StepLR(o, 2)], [3]),
                              ValueError, "Sequential Schedulers expects number of schedulers provided to be one "
                              "more than the number of milestone points, but got number of schedulers 1 and the "
                              "number of milestones to be equal to 1"),
    "sequential-plateau": (lambda lib, o: _sched(lib).SequentialLR(o, [_sched(lib).ReduceLROnPlateau(o)], []),
                           ValueError, "SequentialLR does not support `ReduceLROnPlateau` scheduler as it requires "
                           "additional kwargs to be specified when calling `step`, but got one at index 0 in the "
                           "given schedulers sequence."),
    "chained-empty": (lambda lib, o: _sched(lib).ChainedScheduler([]), ValueError,
                      "ChainedScheduler expects at least one scheduler to be chained, but got no scheduler."),
    "chained-not-a-scheduler": (lambda lib, o: _sched(lib).ChainedScheduler([_sched(lib).StepLR(o, 2), 3], o),
                                TypeError, "ChainedScheduler at index 1 should have `optimizer` as its attribute."),
}


@pytest.mark.parametrize("case", list(ERRORS))
def test_error(case):
    call, kind, message = ERRORS[case]
    with pytest.raises(kind) as info:
        call(tg, _optimizer(tg))
    if message is not None:
        assert str(info.value) == message


@pytest.mark.torch
@pytest.mark.parametrize("case", list(ERRORS))
def test_error_as_torch(case):
    torch = pytest.importorskip("torch")
    call, kind, message = ERRORS[case]
    with pytest.raises(kind) as info:
        call(torch, _optimizer(torch))
    if message is not None:
        assert str(info.value) == message
