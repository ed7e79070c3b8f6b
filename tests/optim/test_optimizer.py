"""The ``Optimizer`` base through SGD/Adam: groups and defaults, ``state``, ``zero_grad``,
``repr``, hooks, closures, grad mode inside ``step``, in-place updates and versions, and
hand-computed first steps of every optimizer."""
import math

import numpy as np
import pytest

import tracegrad as tg


def _leaf(values, dtype=tg.float64):
    return tg.tensor(values, dtype=dtype, requires_grad=True)


def test_groups_get_defaults_in_order():
    w, b = _leaf([1.0, 2.0]), _leaf([3.0])
    opt = tg.optim.SGD([{"params": w}, {"params": [b], "lr": 0.5, "momentum": 0.9}], lr=0.1)
    assert [g["params"] for g in opt.param_groups] == [[w], [b]]
    assert list(opt.param_groups[0]) == ["params", "lr", "momentum", "dampening", "weight_decay", "nesterov",
                                         "maximize", "foreach", "differentiable", "fused"]
    assert (opt.param_groups[0]["lr"], opt.param_groups[1]["lr"]) == (0.1, 0.5)
    assert (opt.param_groups[0]["momentum"], opt.param_groups[1]["momentum"]) == (0, 0.9)
    assert opt.defaults["lr"] == 0.1 and len(opt.state) == 0


def test_named_parameters():
    w, b = _leaf([1.0, 2.0]), _leaf([3.0])
    opt = tg.optim.Adam([("weight", w), ("bias", b)])
    assert opt.param_groups[0]["params"] == [w, b]
    assert opt.param_groups[0]["param_names"] == ["weight", "bias"]
    assert opt.state_dict()["param_groups"][0]["param_names"] == ["weight", "bias"]


def test_generator_of_parameters():
    leaves = [_leaf([1.0]), _leaf([2.0])]
    opt = tg.optim.SGD((p for p in leaves), lr=1.0)
    assert opt.param_groups[0]["params"] == leaves


def test_parameter_subclass_accepted():
    Parameter = getattr(tg.nn, "Parameter", None)
    if Parameter is None:
        pytest.skip("tracegrad.nn.Parameter is not available")
    p = Parameter(tg.ones(3))
    p.grad = tg.ones(3)
    tg.optim.SGD([p], lr=0.5).step()
    np.testing.assert_array_equal(p.detach().numpy(), [0.5, 0.5, 0.5])
    assert isinstance(p, Parameter) and p.requires_grad


def test_step_updates_in_place_and_moves_versions():
    w = _leaf([1.0, 2.0])
    storage = w._data
    view = w.detach()  # shares storage and version counter
    opt = tg.optim.SGD([w], lr=0.5, momentum=0.9)
    w.grad = tg.tensor([2.0, 4.0], dtype=tg.float64)
    opt.step()
    assert w._data is storage and w._version == 1 and view._version == 1
    np.testing.assert_array_equal(view.numpy(), [0.0, 0.0])
    assert w.is_leaf and w.requires_grad and w.grad_fn is None
    opt.step()
    assert w._version == 2 and opt.state[w]["momentum_buffer"]._version == 2


def test_step_invalidates_saved_tensors():
    """A parameter saved for a backward pass and then stepped is caught as in PyTorch."""
    w = _leaf([1.0, 2.0])
    loss = (w * w).sum()
    w.grad = tg.ones(2, dtype=tg.float64)
    tg.optim.SGD([w], lr=0.1).step()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()


def test_parameters_without_grad_are_skipped():
    w, b = _leaf([1.0]), _leaf([2.0])
    opt = tg.optim.Adam([w, b], lr=0.1)
    w.grad = tg.tensor([1.0], dtype=tg.float64)
    opt.step()
    assert b.item() == 2.0 and b._version == 0 and list(opt.state) == [w]


def test_step_runs_without_grad_and_closure_with_it():
    seen = {}

    class Probe(tg.optim.SGD):
        def step(self, closure=None):
            seen["step"] = tg.is_grad_enabled()
            return super().step(closure)

    w = _leaf([3.0])
    opt = Probe([w], lr=0.1)

    def closure():
        seen["closure"] = tg.is_grad_enabled()
        opt.zero_grad()
        loss = (w * w).sum()
        loss.backward()
        return loss

    with tg.no_grad():
        loss = opt.step(closure)
    assert seen == {"step": False, "closure": True}
    assert loss.item() == 9.0 and w.item() == pytest.approx(3.0 - 0.1 * 6.0)
    assert tg.is_grad_enabled()


def test_zero_grad():
    w = _leaf([1.0, 2.0])
    opt = tg.optim.SGD([w], lr=0.1)
    (w * w).sum().backward()
    grad = w.grad
    opt.zero_grad(set_to_none=False)
    assert w.grad is grad and np.all(grad.numpy() == 0)
    opt.zero_grad()
    assert w.grad is None
    opt.zero_grad()  # no gradient: nothing to do


def test_zero_grad_detaches_a_grad_with_history():
    w = _leaf([1.0, 2.0])
    (w * w).sum().backward(create_graph=True)
    assert w.grad.requires_grad
    tg.optim.SGD([w]).zero_grad(set_to_none=False)
    assert not w.grad.requires_grad and w.grad.grad_fn is None


def test_repr():
    opt = tg.optim.SGD([_leaf([1.0])], lr=0.1, momentum=0.9)
    opt.add_param_group({"params": [_leaf([2.0])], "lr": 0.01})
    group = ("    dampening: 0\n    differentiable: False\n    foreach: None\n    fused: None\n"
             "    lr: {}\n    maximize: False\n    momentum: 0.9\n    nesterov: False\n    weight_decay: 0\n")
    assert repr(opt) == ("SGD (\nParameter Group 0\n" + group.format(0.1) + "\nParameter Group 1\n"
                         + group.format(0.01) + ")")  # (PyTorch's: groups a blank line apart)


@pytest.mark.torch
@pytest.mark.parametrize("name, kwargs", [("SGD", {"lr": 0.1}), ("Adam", {"amsgrad": True}), ("AdamW", {}),
                                          ("RMSprop", {"centered": True}), ("Adagrad", {"lr_decay": 0.1})])
def test_repr_and_groups_as_torch(name, kwargs):
    torch = pytest.importorskip("torch")
    opts = [getattr(lib.optim, name)([lib.ones(2, requires_grad=True)], **kwargs) for lib in (tg, torch)]
    assert repr(opts[0]) == repr(opts[1])
    assert [list(g.items())[1:] for g in opts[0].param_groups] == [list(g.items())[1:] for g in opts[1].param_groups]


def test_step_hooks():
    w = _leaf([1.0])
    opt = tg.optim.SGD([w], lr=1.0)
    calls = []
    pre = opt.register_step_pre_hook(lambda o, args, kwargs: calls.append(("pre", o is opt, args, kwargs)))
    post = opt.register_step_post_hook(lambda o, args, kwargs: calls.append(("post", tg.is_grad_enabled())))
    glob = tg.optim.register_optimizer_step_pre_hook(lambda o, args, kwargs: calls.append("global"))
    try:
        opt.step()
    finally:
        glob.remove()
    assert calls == ["global", ("pre", True, (), {}), ("post", True)]
    pre.remove()
    post.remove()
    opt.step()
    assert len(calls) == 3


def test_pre_hook_may_replace_arguments():
    w = _leaf([1.0])
    opt = tg.optim.SGD([w], lr=1.0)
    opt.register_step_pre_hook(lambda o, args, kwargs: ((), {"closure": lambda: 42}))
    assert opt.step() == 42
    opt.register_step_pre_hook(lambda o, args, kwargs: "bad")
    with pytest.raises(RuntimeError, match="must return None or a tuple of"):
        opt.step()


def test_state_dict_hooks():
    w = _leaf([1.0])
    opt = tg.optim.SGD([w], lr=1.0)
    order = []
    opt.register_state_dict_pre_hook(lambda o: order.append("pre"))
    opt.register_state_dict_post_hook(lambda o, sd: {**sd, "extra": 1})
    opt.register_load_state_dict_pre_hook(lambda o, sd: order.append("load-pre"))
    opt.register_load_state_dict_post_hook(lambda o: order.append("load-post"), prepend=True)
    sd = opt.state_dict()
    assert sd["extra"] == 1 and order == ["pre"]
    opt.load_state_dict(sd)
    assert order == ["pre", "load-pre", "load-post"]


def test_tensor_lr_is_read_each_step():
    w = _leaf([1.0])
    lr = tg.tensor(0.5, dtype=tg.float64)
    opt = tg.optim.SGD([w], lr=lr)
    w.grad = tg.tensor([1.0], dtype=tg.float64)
    opt.step()
    lr.fill_(0.25)
    opt.step()
    assert w.item() == pytest.approx(1.0 - 0.5 - 0.25)


# -- first steps by hand ---------------------------------------------------------------
G = np.array([0.5, -2.0, 4.0])
P = np.array([1.0, 2.0, -3.0])


def _first_steps(name, steps=1, **kwargs):
    p = _leaf(P)
    opt = getattr(tg.optim, name)([p], **kwargs)
    for _ in range(steps):
        p.grad = tg.tensor(G, dtype=tg.float64)
        opt.step()
    return p.detach().numpy(), opt.state[p]


def test_sgd_by_hand():
    got, state = _first_steps("SGD", lr=0.1)
    np.testing.assert_allclose(got, P - 0.1 * G, rtol=1e-15)
    assert state == {}
    got, _ = _first_steps("SGD", lr=0.1, weight_decay=0.5, maximize=True)
    np.testing.assert_allclose(got, P - 0.1 * (-G + 0.5 * P), rtol=1e-15)
    got, state = _first_steps("SGD", 2, lr=0.1, momentum=0.9, dampening=0.5)
    buf = 0.9 * G + 0.5 * G
    np.testing.assert_allclose(state["momentum_buffer"].numpy(), buf, rtol=1e-15)
    np.testing.assert_allclose(got, P - 0.1 * G - 0.1 * buf, rtol=1e-15)
    got, _ = _first_steps("SGD", lr=0.1, momentum=0.9, nesterov=True)
    np.testing.assert_allclose(got, P - 0.1 * (G + 0.9 * G), rtol=1e-15)


def test_adam_by_hand():
    """At step 1 the bias corrections cancel: p - lr * g / (|g| + eps)."""
    got, state = _first_steps("Adam", lr=0.1, eps=1e-3)
    np.testing.assert_allclose(got, P - 0.1 * G / (np.abs(G) + 1e-3), rtol=1e-13)
    assert list(state) == ["step", "exp_avg", "exp_avg_sq"] and state["step"].item() == 1.0
    assert state["step"].dtype == tg.float32 and state["step"].shape == ()
    np.testing.assert_allclose(state["exp_avg"].numpy(), 0.1 * G, rtol=1e-13)
    np.testing.assert_allclose(state["exp_avg_sq"].numpy(), 0.001 * G * G, rtol=1e-13)
    got, state = _first_steps("AdamW", lr=0.1, weight_decay=0.5, amsgrad=True)
    np.testing.assert_allclose(got, P * (1 - 0.05) - 0.1 * G / (np.abs(G) + 1e-8), rtol=1e-13)
    np.testing.assert_allclose(state["max_exp_avg_sq"].numpy(), 0.001 * G * G, rtol=1e-13)


def test_rmsprop_by_hand():
    got, state = _first_steps("RMSprop", lr=0.01, alpha=0.9, eps=1e-4)
    np.testing.assert_allclose(got, P - 0.01 * G / (np.sqrt(0.1) * np.abs(G) + 1e-4), rtol=1e-13)
    assert list(state) == ["step", "square_avg"]
    got, state = _first_steps("RMSprop", lr=0.01, alpha=0.9, momentum=0.5, centered=True)
    avg = np.sqrt(0.1 * G * G - (0.1 * G) ** 2) + 1e-8
    np.testing.assert_allclose(got, P - 0.01 * G / avg, rtol=1e-12)
    assert list(state) == ["step", "square_avg", "momentum_buffer", "grad_avg"]


def test_adagrad_by_hand():
    p = _leaf(P)
    opt = tg.optim.Adagrad([p], lr=0.1, lr_decay=0.5, initial_accumulator_value=1.0)
    assert opt.state[p]["step"].item() == 0.0  # Adagrad's state exists before the first step
    np.testing.assert_array_equal(opt.state[p]["sum"].numpy(), np.ones(3))
    for t in (1, 2):
        p.grad = tg.tensor(G, dtype=tg.float64)
        opt.step()
    total1, total2 = 1 + G * G, 1 + 2 * G * G
    want = P - 0.1 * G / (np.sqrt(total1) + 1e-10) - 0.1 / 1.5 * G / (np.sqrt(total2) + 1e-10)
    np.testing.assert_allclose(p.detach().numpy(), want, rtol=1e-13)


def test_float32_parameters_stay_float32():
    for name in ("SGD", "Adam", "AdamW", "RMSprop", "Adagrad"):
        p = _leaf([1.0, -2.0], dtype=tg.float32)
        opt = getattr(tg.optim, name)([p], lr=0.1, **({"momentum": 0.9} if name == "SGD" else {}))
        p.grad = tg.tensor([0.5, 0.25])
        opt.step()
        assert p.dtype == tg.float32 and all(v.dtype in (tg.float32,) for v in opt.state[p].values())
        assert math.isfinite(p.sum().item())


def test_step_counter_follows_default_dtype():
    previous = tg.get_default_dtype()
    tg.set_default_dtype(tg.float64)
    try:
        p = _leaf([1.0])
        opt = tg.optim.Adam([p])
        p.grad = tg.ones(1, dtype=tg.float64)
        opt.step()
        assert opt.state[p]["step"].dtype == tg.float64
    finally:
        tg.set_default_dtype(previous)


def test_trains_a_module():
    """End to end with ``nn``: the loss of a small MLP falls under each optimizer."""
    nn = tg.nn
    if not hasattr(nn, "Linear"):
        pytest.skip("tracegrad.nn is not available")
    rng = np.random.default_rng(0)
    x = tg.tensor(rng.standard_normal((32, 4)), dtype=tg.float32)
    y = tg.tensor(rng.standard_normal((32, 1)), dtype=tg.float32)
    for name, kwargs in [("SGD", {"lr": 0.05, "momentum": 0.9}), ("Adam", {"lr": 0.01}), ("AdamW", {"lr": 0.01}),
                         ("RMSprop", {"lr": 0.01}), ("Adagrad", {"lr": 0.05})]:
        tg.manual_seed(0)
        model = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 1))
        opt = getattr(tg.optim, name)(model.parameters(), **kwargs)
        losses = []
        for _ in range(30):
            opt.zero_grad()
            loss = ((model(x) - y) ** 2).mean()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        assert losses[-1] < 0.8 * losses[0], name
        assert all(isinstance(p, nn.Parameter) and p.is_leaf for p in model.parameters())


def test_a_users_step_runs_in_the_callers_grad_mode():
    """A user's Optimizer subclass (SAM, a hypergradient or learned optimizer) runs its
    ``step`` with grad mode as the caller has it -- its closure may call backward() without
    enable_grad -- while a built-in step called through ``super().step()`` runs without."""
    seen = {}

    class PlainSGD(tg.optim.Optimizer):
        def __init__(self, params, lr=0.1):
            super().__init__(params, {"lr": lr})

        def step(self, closure=None):
            seen["user step"] = tg.is_grad_enabled()
            loss = closure() if closure is not None else None
            for group in self.param_groups:
                for p in group["params"]:
                    p.data.add_(p.grad, alpha=-group["lr"])
            return loss

    class Probe(tg.optim.SGD):
        def step(self, closure=None):
            seen["override"] = tg.is_grad_enabled()
            return super().step(closure)

    w = _leaf([1.0, 1.0])
    opt = PlainSGD([w])

    def closure():
        opt.zero_grad()
        loss = (w ** 2).sum()
        loss.backward()
        return loss
    assert opt.step(closure).item() == 2.0 and w.tolist() == pytest.approx([0.8, 0.8])
    probe = Probe([w], lr=0.1)
    probe.step(closure)
    assert seen == {"user step": True, "override": True}


def test_the_private_helpers_optimizers_copied_from_pytorch_import():
    """timm's ADOPT and forks of torch's Adam import these from torch.optim.optimizer."""
    from tracegrad.optim.adamw import AdamW
    from tracegrad.optim.optimizer import (_default_to_fused_or_foreach, _get_scalar_dtype, _get_value,
                                           _use_grad_for_differentiable, _view_as_real)
    assert AdamW is tg.optim.AdamW
    assert _default_to_fused_or_foreach([tg.zeros(1)], False) == (False, False)
    assert _get_scalar_dtype() is tg.float32 and _get_scalar_dtype(is_fused=True) is tg.float32
    assert _get_value(tg.tensor(2.5)) == 2.5 and _get_value(3) == 3

    class Sign(tg.optim.Optimizer):
        def __init__(self, params, lr=0.1):
            super().__init__(params, {"lr": lr, "differentiable": False})

        @_use_grad_for_differentiable
        def step(self, closure=None):
            self._cuda_graph_capture_health_check()
            assert not tg.is_grad_enabled()
            for group in self.param_groups:
                params = [p for p in group["params"] if p.grad is not None]
                grads = [p.grad for p in params]
                _view_as_real(params, grads)
                for p, g in zip(params, grads):
                    p.add_(g.sign(), alpha=-group["lr"])

    w = tg.tensor([1.0, -2.0], requires_grad=True)
    opt = Sign([w])
    (w * tg.tensor([3.0, -1.0])).sum().backward()
    opt.step()
    assert w.tolist() == pytest.approx([0.9, -1.9])
    with pytest.raises(NotImplementedError, match="view_as_real is a copy"):
        _view_as_real([tg.zeros(1, dtype=tg.complex64)], [tg.zeros(1, dtype=tg.complex64)])
