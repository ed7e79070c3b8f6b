"""``optim.swap_in_optimizer_params_and_state``: inside the block the optimizer steps other
parameters with another state dict; outside, nothing of its own has changed."""
import numpy as np
import pytest

import tracegrad as tg


def _setup(lib):
    """An Adam trained two steps, and swap-in parameters/state from a copy trained three."""
    def trained(steps):
        w = lib.tensor([[1.0, -2.0], [0.5, 3.0]], dtype=lib.float64, requires_grad=True)
        b = lib.tensor([0.1, 0.2], dtype=lib.float64, requires_grad=True)
        opt = lib.optim.Adam([{"params": [w]}, {"params": [b], "lr": 0.05}], lr=0.1)
        for _ in range(steps):
            opt.zero_grad()
            ((w.sum(1) + b) ** 2).sum().backward()
            opt.step()
        return opt, w, b

    opt, w, b = trained(2)
    other, ow, ob = trained(3)
    return opt, (w, b), {"w": ow.detach().clone(), "b": ob.detach().clone()}, other.state_dict()


def _swapped_run(lib):
    opt, own, params, state = _setup(lib)
    before = [p.detach().clone() for p in own], opt.state_dict()
    with lib.optim.swap_in_optimizer_params_and_state(opt, params, state):
        for p in params.values():
            p.grad = lib.ones_like(p)
        opt.step()
        inside = [float(opt.state[p]["step"]) for p in params.values()]
    after = [p.detach().clone() for p in own], opt.state_dict()
    return before, after, [p.numpy() for p in params.values()], inside, opt


def test_restores_the_optimizer():
    before, after, swapped, inside, opt = _swapped_run(tg)
    assert inside == [4.0, 4.0]  # the swap-in state (3 steps) was used
    for x, y in zip(before[0], after[0]):
        assert x.tolist() == y.tolist()
    assert after[1]["param_groups"] == before[1]["param_groups"]
    assert [float(s["step"]) for s in after[1]["state"].values()] == [2.0, 2.0]


@pytest.mark.torch
def test_matches_torch():
    torch = pytest.importorskip("torch")
    ours, theirs = _swapped_run(tg), _swapped_run(torch)
    for a, b in zip(ours[2], theirs[2]):
        np.testing.assert_allclose(a, b, rtol=1e-12)
    assert ours[3] == theirs[3]


def test_errors():
    opt, _, params, state = _setup(tg)
    fresh = tg.optim.SGD([tg.zeros(1, requires_grad=True)])
    with pytest.raises(RuntimeError, match="^swap_in_optimizer_params_and_state requires initialized optimizer "
                                           "state.$"):
        with tg.optim.swap_in_optimizer_params_and_state(fresh, params, state):
            pass
    bad = {"state": state["state"], "param_groups": state["param_groups"][:1]}
    with pytest.raises(RuntimeError, match="^swapin_optim_state has a different number of parameter groups than the "
                                           "live optimizer.$"):
        with tg.optim.swap_in_optimizer_params_and_state(opt, params, bad):
            pass
