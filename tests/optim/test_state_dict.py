"""``state_dict``/``load_state_dict``: PyTorch's layout, a round trip that continues exactly
like an uninterrupted run, deep copies, casting to the parameters' dtype, pickling."""
import pickle

import numpy as np
import pytest

import tracegrad as tg

from . import _problem
from .test_trajectories import CONFIGS, IDS


def _trained(name, kwargs, group_options, steps):
    """(optimizer, params, loss) after ``steps`` steps on the problem."""
    params, loss = _problem.make(tg)
    cls = getattr(tg.optim, name)
    opt = cls(_problem.groups(params, group_options) if group_options is not None else params, **kwargs)
    _run(opt, loss, steps)
    return opt, params, loss


def _run(opt, loss, steps):
    for _ in range(steps):
        opt.zero_grad()
        loss().backward()
        opt.step()


# NAdam's mu_product and ASGD's eta and mu are 0-d float32 state that loading casts to the
# parameters' dtype, as PyTorch's load_state_dict does: a resumed run rounds them differently
RECAST = {"NAdam", "ASGD"}


@pytest.mark.parametrize("name, kwargs, group_options", CONFIGS, ids=IDS)
def test_round_trip_continues_exactly(name, kwargs, group_options):
    whole, whole_params, whole_loss = _trained(name, kwargs, group_options, 10)
    saved = pickle.loads(pickle.dumps(whole.state_dict()))
    _run(whole, whole_loss, 10)

    params, loss = _problem.make(tg)
    trained = _trained(name, kwargs, group_options, 10)[1]
    with tg.no_grad():
        for p, q in zip(params, trained):
            p.copy_(q)
    resumed = getattr(tg.optim, name)(
        _problem.groups(params, {}) if group_options is not None else params, **kwargs)
    resumed.load_state_dict(saved)
    _run(resumed, loss, 10)
    for p, q in zip(params, whole_params):
        if name in RECAST:
            np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-6, atol=1e-8)
        else:
            np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy())
    strip = [{k: v for k, v in g.items() if k != "params"} for g in whole.param_groups]
    assert [{k: v for k, v in g.items() if k != "params"} for g in resumed.param_groups] == strip
    assert [q for g in resumed.param_groups for q in g["params"]] == params


@pytest.mark.torch
@pytest.mark.parametrize("name", sorted(RECAST))
def test_loaded_state_dtypes_as_torch(name):
    torch = pytest.importorskip("torch")
    dtypes = []
    for lib in (tg, torch):
        _, opt, _ = _problem.train(lib, lambda p: getattr(lib.optim, name)(p, lr=0.05), 3)
        fresh = getattr(lib.optim, name)(_problem.make(lib)[0], lr=0.05)
        fresh.load_state_dict(opt.state_dict())
        dtypes.append({k: str(v.dtype).split(".")[-1] for k, v in fresh.state_dict()["state"][0].items()})
    assert dtypes[0] == dtypes[1]


def test_layout():
    w, b = tg.ones(2, requires_grad=True), tg.ones(3, requires_grad=True)
    opt = tg.optim.SGD([{"params": [w]}, {"params": [b], "lr": 0.5}], lr=0.1, momentum=0.9)
    w.grad = tg.ones(2)
    opt.step()
    sd = opt.state_dict()
    assert list(sd) == ["state", "param_groups"]
    assert list(sd["state"]) == [0] and list(sd["state"][0]) == ["momentum_buffer"]
    assert sd["state"][0]["momentum_buffer"] is opt.state[w]["momentum_buffer"]  # as PyTorch: no copy
    assert [g["params"] for g in sd["param_groups"]] == [[0], [1]]
    assert sd["param_groups"][1] == {"lr": 0.5, "momentum": 0.9, "dampening": 0, "weight_decay": 0,
                                     "nesterov": False, "maximize": False, "foreach": None,
                                     "differentiable": False, "fused": None, "params": [1]}
    assert opt.param_groups[0]["params"] == [w]  # packing left the groups alone


def test_load_deep_copies():
    w = tg.ones(2, requires_grad=True)
    source = tg.optim.Adam([w], lr=0.1)
    w.grad = tg.ones(2)
    source.step()
    sd = source.state_dict()
    before = {k: v.numpy().copy() for k, v in sd["state"][0].items()}
    v = tg.ones(2, requires_grad=True)
    target = tg.optim.Adam([v], lr=0.5)
    target.load_state_dict(sd)
    assert target.param_groups[0]["lr"] == 0.1 and target.param_groups[0]["params"] == [v]
    sd["param_groups"][0]["lr"] = 9.0
    assert target.param_groups[0]["lr"] == 0.1
    v.grad = tg.ones(2)
    target.step()
    for key, value in before.items():  # the loaded optimizer wrote into its own copies
        np.testing.assert_array_equal(sd["state"][0][key].numpy(), value)
    assert target.state[v]["step"].item() == 2.0


def test_load_casts_to_parameter_dtype_but_not_step():
    w = tg.ones(2, dtype=tg.float64, requires_grad=True)
    opt = tg.optim.Adam([w])
    w.grad = tg.ones(2, dtype=tg.float64)
    opt.step()
    v = tg.ones(2, dtype=tg.float32, requires_grad=True)
    other = tg.optim.Adam([v])
    other.load_state_dict(opt.state_dict())
    assert other.state[v]["exp_avg"].dtype == tg.float32
    assert other.state[v]["step"].dtype == tg.float32  # the step count keeps its own dtype


def test_load_old_numeric_step():
    w = tg.ones(2, requires_grad=True)
    opt = tg.optim.Adam([w], lr=0.1)
    opt.load_state_dict({"state": {0: {"step": 3, "exp_avg": tg.zeros(2), "exp_avg_sq": tg.zeros(2)}},
                         "param_groups": [{"params": [0], "lr": 0.2, "betas": (0.9, 0.999), "eps": 1e-8,
                                           "weight_decay": 0, "amsgrad": False}]})
    step = opt.state[w]["step"]
    assert isinstance(step, tg.Tensor) and step.item() == 3.0
    assert opt.param_groups[0]["maximize"] is False  # options the old dict lacks come from defaults
    w.grad = tg.ones(2)
    opt.step()
    assert opt.state[w]["step"].item() == 4.0


def test_adamw_stays_decoupled():
    w = tg.ones(2, requires_grad=True)
    adam = tg.optim.Adam([w], weight_decay=0.1)
    adamw = tg.optim.AdamW([tg.ones(2, requires_grad=True)])
    adamw.load_state_dict(adam.state_dict())
    assert adamw.param_groups[0]["decoupled_weight_decay"] is True


def test_state_of_unknown_keys_is_kept():
    w = tg.ones(2, requires_grad=True)
    opt = tg.optim.SGD([w])
    opt.load_state_dict({"state": {"note": {"a": [1, 2]}}, "param_groups": [{"params": [0], "lr": 0.3}]})
    assert opt.state["note"] == {"a": [1, 2]} and opt.param_groups[0]["lr"] == 0.3


@pytest.mark.torch
def test_state_dict_as_torch():
    torch = pytest.importorskip("torch")
    dicts = []
    for lib in (tg, torch):
        params, loss = _problem.make(lib)
        opt = lib.optim.RMSprop([{"params": [params[0]]}, {"params": [params[1]], "lr": 0.1}], momentum=0.5)
        loss().backward()
        opt.step()
        dicts.append(opt.state_dict())
    ours, theirs = dicts
    assert ours["param_groups"] == theirs["param_groups"]
    assert {k: list(v) for k, v in ours["state"].items()} == {k: list(v) for k, v in theirs["state"].items()}


def test_a_step_count_saved_as_a_one_element_tensor_counts_on():
    """pytorch-a3c's SharedAdam makes ``state['step'] = torch.zeros(1)`` before any step."""
    w = tg.tensor([1.0, 2.0], requires_grad=True)
    opt = tg.optim.Adam([w], lr=0.1)
    opt.state[w].update(step=tg.zeros(1), exp_avg=tg.zeros(2), exp_avg_sq=tg.zeros(2))
    w.sum().backward()
    opt.step()
    np.testing.assert_allclose(w.detach().numpy(), [0.9, 1.9], rtol=1e-6)  # (Adam's first step: lr * sign)
    assert opt.state[w]["step"].tolist() == [1.0]


def test_share_memory_marks_parameters_buffers_and_adagrads_sums():
    m = tg.nn.BatchNorm1d(3)
    assert m.share_memory() is m
    assert all(t.is_shared() for t in [*m.parameters(), *m.buffers()])
    opt = tg.optim.Adagrad(m.parameters())
    assert opt.share_memory() is None
    assert all(opt.state[p]["sum"].is_shared() for p in m.parameters())
