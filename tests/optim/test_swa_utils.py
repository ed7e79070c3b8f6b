"""``optim.swa_utils``: AveragedModel (equal-weight and EMA averages, buffers), SWALR and
update_bn, by their definitions and (marked ``torch``) against PyTorch."""
import math

import numpy as np
import pytest

import tracegrad as tg


def _model(lib):
    lib.manual_seed(0)
    model = lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.BatchNorm1d(4), lib.nn.Linear(4, 1))
    with lib.no_grad():
        for i, p in enumerate(model.parameters()):
            p.copy_(lib.tensor(np.random.default_rng(i).standard_normal(tuple(p.shape)), dtype=lib.float32))
    return model


X = np.random.default_rng(9).standard_normal((8, 3))


def _train(lib, steps=6, **kwargs):
    """SGD with SWALR, averaging after every step; returns the averaged model, the
    snapshots of the model's parameters and the learning rates."""
    model = _model(lib)
    averaged = lib.optim.swa_utils.AveragedModel(model, **kwargs)
    opt = lib.optim.SGD(model.parameters(), lr=0.1)
    sched = lib.optim.swa_utils.SWALR(opt, swa_lr=0.05, anneal_epochs=3)
    x = lib.tensor(X, dtype=lib.float32)
    snapshots, lrs = [], [sched.get_last_lr()]
    for _ in range(steps):
        opt.zero_grad()
        model(x).pow(2).mean().backward()
        opt.step()
        sched.step()
        lrs.append(sched.get_last_lr())
        averaged.update_parameters(model)
        snapshots.append([p.detach().numpy().copy() for p in model.parameters()])
    return averaged, snapshots, lrs, model


def test_equal_weight_average_is_the_mean_of_the_snapshots():
    averaged, snapshots, _, model = _train(tg)
    for i, p in enumerate(averaged.module.parameters()):
        np.testing.assert_allclose(p.detach().numpy(), np.mean([s[i] for s in snapshots], axis=0), rtol=1e-5,
                                   atol=1e-6)
    assert averaged.n_averaged.item() == 6 and averaged.n_averaged.dtype == tg.int64
    for b, mb in zip(averaged.module.buffers(), model.buffers()):  # buffers follow the model
        np.testing.assert_array_equal(b.numpy(), mb.numpy())
    assert "n_averaged" in averaged.state_dict()


def test_ema_average():
    decay = 0.9
    averaged, snapshots, _, _ = _train(tg, multi_avg_fn=tg.optim.swa_utils.get_ema_multi_avg_fn(decay))
    for i, p in enumerate(averaged.module.parameters()):
        want = snapshots[0][i]
        for s in snapshots[1:]:
            want = decay * want + (1 - decay) * s[i]
        np.testing.assert_allclose(p.detach().numpy(), want, rtol=1e-5, atol=1e-6)


def test_swalr_anneals_to_the_swa_rate():
    _, _, lrs, _ = _train(tg)
    alpha = [(1 - math.cos(math.pi * min(1, k / 3))) / 2 for k in range(7)]
    assert [lr[0] for lr in lrs] == pytest.approx([0.05 * a + 0.1 * (1 - a) for a in alpha], rel=1e-12)
    assert lrs[-1] == [0.05]


def test_update_bn_recomputes_the_running_statistics():
    model = _model(tg)
    x = tg.tensor(X, dtype=tg.float32)
    hidden = model[0](x).detach().numpy()
    model.eval()
    tg.optim.swa_utils.update_bn([x, (x,)], model)  # inputs, or tuples whose first item is the input
    bn = model[1]
    np.testing.assert_allclose(bn.running_mean.numpy(), hidden.mean(0), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(bn.running_var.numpy(), hidden.var(0, ddof=1), rtol=1e-5, atol=1e-6)
    assert not model.training and bn.momentum == 0.1


def test_errors():
    model = _model(tg)
    with pytest.raises(AssertionError, match="^Only one of avg_fn and multi_avg_fn should be provided$"):
        tg.optim.swa_utils.AveragedModel(model, avg_fn=lambda *a: 0, multi_avg_fn=lambda *a: 0)
    with pytest.raises(ValueError, match=r"^Invalid decay value 1.5 provided. Please provide a value in "
                                         r"\[0,1\] range.$"):
        tg.optim.swa_utils.get_ema_avg_fn(1.5)
    opt = tg.optim.SGD(model.parameters(), lr=0.1)
    with pytest.raises(ValueError, match="^anneal_strategy must be one of 'cos' or 'linear', instead got exp$"):
        tg.optim.swa_utils.SWALR(opt, 0.05, anneal_strategy="exp")
    with pytest.raises(ValueError, match="^anneal_epochs must be equal or greater than 0, got -1$"):
        tg.optim.swa_utils.SWALR(opt, 0.05, anneal_epochs=-1)


@pytest.mark.torch
@pytest.mark.parametrize("kind", ["swa", "ema-multi", "ema", "buffers"])
def test_matches_torch(kind):
    torch = pytest.importorskip("torch")
    results = []
    for lib in (tg, torch):
        kwargs = {"ema-multi": {"multi_avg_fn": lib.optim.swa_utils.get_ema_multi_avg_fn(0.8)},
                  "ema": {"avg_fn": lib.optim.swa_utils.get_ema_avg_fn(0.8)},
                  "buffers": {"use_buffers": True}}.get(kind, {})
        averaged, _, lrs, _ = _train(lib, **kwargs)
        x = lib.tensor(X, dtype=lib.float32)
        lib.optim.swa_utils.update_bn([x, x * 2], averaged)
        results.append(([t.detach().numpy().copy() for t in averaged.state_dict().values()], lrs,
                        list(averaged.state_dict()), averaged(x).detach().numpy()))
    (ours, lrs, keys, out), (theirs, tlrs, tkeys, tout) = results
    assert lrs == tlrs and keys == tkeys
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out, tout, rtol=1e-5, atol=1e-6)


@pytest.mark.torch
@pytest.mark.parametrize("kwargs", [{"anneal_epochs": 0}, {"anneal_strategy": "linear", "anneal_epochs": 5}])
def test_swalr_as_torch(kwargs):
    torch = pytest.importorskip("torch")
    results = []
    for lib in (tg, torch):
        opt = lib.optim.SGD([{"params": [lib.ones(1, requires_grad=True)]},
                             {"params": [lib.ones(1, requires_grad=True)], "lr": 0.3}], lr=0.1)
        sched = lib.optim.swa_utils.SWALR(opt, swa_lr=[0.01, 0.2], **kwargs)
        lrs = [sched.get_last_lr()]
        for _ in range(8):
            opt.step()
            sched.step()
            lrs.append(sched.get_last_lr())
        results.append((lrs, list(sched.state_dict())))
    assert results[0] == results[1]


def _ema_of_batch_norm(lib, decay=0.9, steps=20):
    from importlib import import_module
    swa = import_module(f"{lib.__name__}.optim.swa_utils")
    m = lib.nn.BatchNorm1d(3)
    ema = swa.AveragedModel(m, multi_avg_fn=swa.get_ema_multi_avg_fn(decay), use_buffers=True)
    counts = []
    for k in range(1, steps + 1):
        with lib.no_grad():
            m.num_batches_tracked.fill_(k)
            m.running_mean.fill_(k * 0.5)
        ema.update_parameters(m)
        counts.append(int(ema.module.num_batches_tracked))
    return counts, float(ema.module.running_mean[0])


def test_an_integer_buffer_is_averaged_in_its_own_dtype_group():
    """PyTorch groups the tensors by device and dtype, so BatchNorm's int64
    ``num_batches_tracked`` takes the EMA's integer branch (``ema * decay + p * (1 -
    decay)``, truncated), not the float parameters' lerp."""
    counts, mean = _ema_of_batch_norm(tg)
    e = tg.tensor(1)
    want = [1]
    for k in range(2, 21):
        e.copy_(e * 0.9 + tg.tensor(k) * (1 - 0.9))
        want.append(int(e))
    assert counts == want and counts[-1] == 10  # (lerp would end at 11)
    m = 0.5
    for k in range(2, 21):  # the float buffer: lerp toward k / 2
        m += (1 - 0.9) * (k * 0.5 - m)
    assert mean == pytest.approx(m, rel=1e-6)


@pytest.mark.torch
def test_an_integer_buffer_is_averaged_as_in_pytorch():
    import torch
    assert _ema_of_batch_norm(tg) == pytest.approx(_ema_of_batch_norm(torch), rel=1e-6)
