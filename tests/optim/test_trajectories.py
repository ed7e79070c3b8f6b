"""20-step trajectories of every optimizer and option set on the same small problem:
against textbook NumPy formulas, and (marked ``torch``) against PyTorch itself, where the
state (names, order, values, ``step`` dtype) and the parameters' versions must match too."""
import inspect

import numpy as np
import pytest

import tracegrad as tg

from . import _problem, _reference

# (optimizer, keyword arguments, options of the bias's group or None for one group)
CONFIGS = [
    ("SGD", {"lr": 0.1}, None),
    ("SGD", {"lr": 0.1, "momentum": 0.9}, None),
    ("SGD", {"lr": 0.1, "momentum": 0.9, "dampening": 0.3}, None),
    ("SGD", {"lr": 0.05, "momentum": 0.8, "nesterov": True}, None),
    ("SGD", {"lr": 0.1, "weight_decay": 0.1}, None),
    ("SGD", {"lr": 0.1, "momentum": 0.9, "weight_decay": 0.05, "nesterov": True}, {"lr": 0.02}),
    ("SGD", {"lr": 0.01, "maximize": True}, None),
    ("SGD", {"lr": 0.01, "momentum": 0.5, "dampening": 0.5, "weight_decay": 0.1, "maximize": True}, None),
    ("SGD", {"lr": 0.1}, {"momentum": 0.9, "lr": 0.05}),
    ("Adam", {"lr": 0.05}, None),
    ("Adam", {"lr": 0.05, "amsgrad": True}, None),
    ("Adam", {"lr": 0.05, "weight_decay": 0.1}, None),
    ("Adam", {"lr": 0.05, "betas": (0.8, 0.9), "eps": 1e-3}, {"lr": 0.01}),
    ("Adam", {"lr": 0.02, "maximize": True}, None),
    ("Adam", {"lr": 0.05, "amsgrad": True, "weight_decay": 0.1, "maximize": True}, None),
    ("Adam", {"lr": 0.05, "weight_decay": 0.1, "decoupled_weight_decay": True}, None),
    ("AdamW", {"lr": 0.05}, None),
    ("AdamW", {"lr": 0.05, "weight_decay": 0.2, "amsgrad": True}, {"weight_decay": 0.0}),
    ("AdamW", {"lr": 0.02, "maximize": True}, None),
    ("RMSprop", {"lr": 0.01}, None),
    ("RMSprop", {"lr": 0.01, "centered": True}, None),
    ("RMSprop", {"lr": 0.01, "momentum": 0.9}, None),
    ("RMSprop", {"lr": 0.01, "momentum": 0.5, "centered": True, "weight_decay": 0.1, "alpha": 0.9}, None),
    ("RMSprop", {"lr": 0.005, "maximize": True, "eps": 1e-4}, {"alpha": 0.5}),
    ("Adagrad", {"lr": 0.1}, None),
    ("Adagrad", {"lr": 0.1, "lr_decay": 0.05}, None),
    ("Adagrad", {"lr": 0.1, "weight_decay": 0.1, "initial_accumulator_value": 0.5}, None),
    ("Adagrad", {"lr": 0.05, "maximize": True, "eps": 1e-3}, {"lr": 0.2}),
    ("Adadelta", {}, None),
    ("Adadelta", {"lr": 0.5, "rho": 0.5, "eps": 1e-4, "weight_decay": 0.1}, None),
    ("Adadelta", {"maximize": True}, {"lr": 0.3, "rho": 0.95}),
    ("Adamax", {"lr": 0.05}, None),
    ("Adamax", {"lr": 0.05, "betas": (0.3, 0.9), "eps": 1e-3, "weight_decay": 0.1}, None),
    ("Adamax", {"lr": 0.02, "maximize": True}, {"betas": (0.8, 0.99)}),
    ("NAdam", {"lr": 0.05}, None),
    ("NAdam", {"lr": 0.05, "momentum_decay": 0.01, "weight_decay": 0.1}, None),
    ("NAdam", {"lr": 0.05, "weight_decay": 0.1, "decoupled_weight_decay": True, "betas": (0.8, 0.9)}, None),
    ("NAdam", {"lr": 0.02, "maximize": True}, {"lr": 0.05, "momentum_decay": 0.0}),
    ("RAdam", {"lr": 0.05}, None),
    ("RAdam", {"lr": 0.05, "betas": (0.9, 0.5), "weight_decay": 0.1}, None),
    ("RAdam", {"lr": 0.05, "betas": (0.8, 0.6), "weight_decay": 0.1, "decoupled_weight_decay": True}, None),
    ("RAdam", {"lr": 0.02, "maximize": True, "eps": 1e-3}, {"betas": (0.5, 0.7)}),
    ("ASGD", {"lr": 0.05}, None),
    ("ASGD", {"lr": 0.05, "lambd": 0.01, "alpha": 0.5, "t0": 5, "weight_decay": 0.1}, None),
    ("ASGD", {"lr": 0.02, "maximize": True, "t0": 0}, {"lr": 0.1}),
    ("Rprop", {"lr": 0.05}, None),
    ("Rprop", {"lr": 0.01, "etas": (0.3, 1.5), "step_sizes": (1e-3, 0.05)}, None),
    ("Rprop", {"lr": 0.001, "maximize": True}, {"lr": 0.02, "etas": (0.4, 1.1)}),
    ("Adafactor", {}, None),
    ("Adafactor", {"lr": 0.05, "weight_decay": 0.1}, None),
    ("Adafactor", {"maximize": True, "d": 2.0, "eps": (1e-6, 1e-2), "beta2_decay": -0.5}, {"lr": 0.3}),
]
IDS = [f"{name}-{'-'.join(f'{k}={v}' for k, v in kw.items())}{'-groups' if g else ''}"
       for name, kw, g in CONFIGS]


def _reference_kwargs(kwargs):
    kwargs = dict(kwargs)
    if kwargs.pop("decoupled_weight_decay", False):
        kwargs["decoupled"] = True
    return kwargs


def _run(lib, name, kwargs, group_options, steps=20):
    cls = getattr(lib.optim, name)
    return _problem.train(lib, lambda params: cls(params, **kwargs), steps, group_options)


def _assert_trajectories_close(got, want, rtol, atol=1e-13):
    for step, (g_params, w_params) in enumerate(zip(got, want), 1):
        for g, w in zip(g_params, w_params):
            np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, err_msg=f"after step {step}")


@pytest.mark.parametrize("name, kwargs, group_options", CONFIGS, ids=IDS)
def test_matches_numpy_reference(name, kwargs, group_options):
    got, _, params = _run(tg, name, kwargs, group_options)
    want = _reference.trajectory(name, _reference_kwargs(kwargs), group_options)
    _assert_trajectories_close(got, want, rtol=1e-10)
    assert all(p.requires_grad and p.is_leaf for p in params)


@pytest.mark.torch
@pytest.mark.parametrize("name, kwargs, group_options", CONFIGS, ids=IDS)
def test_matches_torch(name, kwargs, group_options):
    torch = pytest.importorskip("torch")
    got, opt, params = _run(tg, name, kwargs, group_options)
    want, topt, tparams = _run(torch, name, kwargs, group_options)
    _assert_trajectories_close(got, want, rtol=1e-12)
    assert [p._version for p in params] == [p._version for p in tparams]
    sd, tsd = opt.state_dict(), topt.state_dict()
    assert sd["param_groups"] == tsd["param_groups"]
    assert list(sd["state"]) == list(tsd["state"])
    for i, st in sd["state"].items():
        tst = tsd["state"][i]
        assert list(st) == list(tst)  # the same names, made in the same order
        for key, value in st.items():
            assert str(value.dtype).split(".")[-1] == str(tst[key].dtype).split(".")[-1], key
            assert value.shape == tuple(tst[key].shape), key
            np.testing.assert_allclose(value.numpy(), tst[key].numpy(), rtol=1e-12, atol=1e-15, err_msg=key)


@pytest.mark.torch
@pytest.mark.parametrize("name, kwargs", [("SGD", {"lr": 0.1, "momentum": 0.9}), ("Adam", {"lr": 0.05}),
                                          ("AdamW", {"lr": 0.05, "amsgrad": True}),
                                          ("RMSprop", {"lr": 0.01, "momentum": 0.5, "centered": True}),
                                          ("Adagrad", {"lr": 0.1}), ("Adadelta", {}),
                                          ("Adamax", {"lr": 0.05}), ("NAdam", {"lr": 0.05}),
                                          ("RAdam", {"lr": 0.05, "betas": (0.9, 0.5)}), ("ASGD", {"lr": 0.05}),
                                          ("Rprop", {"lr": 0.01}), ("Adafactor", {"lr": 0.05})])
def test_float32_matches_torch(name, kwargs):
    torch = pytest.importorskip("torch")
    got, _, params = _problem.train(tg, lambda p: getattr(tg.optim, name)(p, **kwargs), 10, dtype="float32")
    want, _, _ = _problem.train(torch, lambda p: getattr(torch.optim, name)(p, **kwargs), 10, dtype="float32")
    assert params[0].dtype == tg.float32
    _assert_trajectories_close(got, want, rtol=2e-5, atol=1e-6)


@pytest.mark.torch
@pytest.mark.parametrize("name, kwargs", [("SGD", {"lr": 0.1, "momentum": 0.9, "weight_decay": 0.1}),
                                          ("Adam", {"lr": 0.05, "amsgrad": True, "weight_decay": 0.1}),
                                          ("AdamW", {"lr": 0.05}),
                                          ("RMSprop", {"lr": 0.01, "momentum": 0.5, "centered": True}),
                                          ("Adagrad", {"lr": 0.1, "weight_decay": 0.1}),
                                          ("Adadelta", {"weight_decay": 0.1}),
                                          ("Adamax", {"lr": 0.05, "weight_decay": 0.1}),
                                          ("NAdam", {"lr": 0.05, "weight_decay": 0.1}),
                                          ("RAdam", {"lr": 0.05, "betas": (0.9, 0.5)}),
                                          ("ASGD", {"lr": 0.05, "t0": 2}), ("Rprop", {"lr": 0.01})])
def test_complex_parameters_match_torch(name, kwargs):
    """Complex parameters are updated as their (real, imag) pairs, as in PyTorch."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(5)
    p0 = rng.standard_normal((3, 2)) + 1j * rng.standard_normal((3, 2))
    grads = [rng.standard_normal((3, 2)) + 1j * rng.standard_normal((3, 2)) for _ in range(8)]
    results = []
    for lib in (tg, torch):
        p = lib.tensor(p0, dtype=lib.complex128, requires_grad=True)
        opt = getattr(lib.optim, name)([p], **kwargs)
        for g in grads:
            p.grad = lib.tensor(g, dtype=lib.complex128)
            opt.step()
        results.append(p.detach().numpy())
    np.testing.assert_allclose(results[0], results[1], rtol=1e-12)


NAMES = ["SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "Adamax", "NAdam", "RAdam", "ASGD", "Rprop",
         "Adafactor"]
FLAGS = [{"foreach": True}, {"foreach": False}, {"fused": True}, {"fused": False}, {"tensor_lr": True},
         {"tensor_lr": "float32"},
         {"tensor_lr": True, "foreach": True}, {"tensor_lr": True, "fused": True}, {"fused": True, "foreach": True}]
FLAG_CASES = [(name, flags) for name in NAMES for flags in FLAGS
              if all(k == "tensor_lr" or k in inspect.signature(getattr(tg.optim, name)).parameters for k in flags)]


def _flagged(lib, name, flags):
    kwargs = {k: v for k, v in flags.items() if k != "tensor_lr"}
    tensor_lr = flags.get("tensor_lr")  # True: a float64 Tensor; "float32": the default dtype's, whose
    # rounding enters what PyTorch computes from it (lr / bias_correction, 1 - lr * wd)
    kwargs["lr"] = lib.tensor(0.02, dtype=getattr(lib, "float32" if tensor_lr == "float32" else "float64")) \
        if tensor_lr else 0.02
    if name == "SGD":
        kwargs["momentum"] = 0.9
    try:
        return _problem.train(lib, lambda params: getattr(lib.optim, name)(params, **kwargs), 5)[0]
    except (ValueError, RuntimeError) as exc:
        return type(exc), str(exc)


@pytest.mark.torch
@pytest.mark.parametrize("name, flags", FLAG_CASES, ids=[f"{n}-{f}" for n, f in FLAG_CASES])
def test_implementation_flags_and_tensor_lr_as_torch(name, flags):
    """``foreach``/``fused`` pick PyTorch kernels: accepted (or refused) as there, and the
    trajectory is the same; a Tensor ``lr`` is read at each step."""
    torch = pytest.importorskip("torch")
    ours, theirs = _flagged(tg, name, flags), _flagged(torch, name, flags)
    if isinstance(theirs, tuple):
        assert ours == theirs
    else:
        _assert_trajectories_close(ours, theirs, rtol=1e-12)
