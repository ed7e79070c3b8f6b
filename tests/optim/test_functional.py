"""The functional optimizers (``torch.optim.adam.adam``, ``adamw``, ``sgd`` and
``torch.optim._functional``), as custom optimizers call them with their own state lists:
their trajectories equal the optimizer classes' (bit for bit, which the classes' own
tests check against textbook formulas and PyTorch) and, marked ``torch``, PyTorch's
functional ones; the state lists are updated in place; and what PyTorch refuses is
refused with its errors."""
import importlib
import types

import numpy as np
import pytest

import tracegrad as tg

from . import _problem

ADAM = [  # keyword arguments of adam / adamw
    dict(amsgrad=False, beta1=0.9, beta2=0.999, lr=0.05, weight_decay=0.0, eps=1e-8, maximize=False),
    dict(amsgrad=True, beta1=0.8, beta2=0.9, lr=0.05, weight_decay=0.1, eps=1e-3, maximize=False),
    dict(amsgrad=True, beta1=0.9, beta2=0.99, lr=0.02, weight_decay=0.1, eps=1e-8, maximize=True),
]
SGD = [  # keyword arguments of sgd
    dict(weight_decay=0.0, momentum=0.0, lr=0.1, dampening=0.0, nesterov=False, maximize=False),
    dict(weight_decay=0.05, momentum=0.9, lr=0.1, dampening=0.0, nesterov=True, maximize=False),
    dict(weight_decay=0.1, momentum=0.5, lr=0.05, dampening=0.3, nesterov=False, maximize=True),
]


def _adam_run(lib, kwargs, decoupled, steps=15):
    """``steps`` functional steps on the shared problem; the parameters after each step
    and the final state lists, as NumPy arrays."""
    module = importlib.import_module(lib.__name__ + ".optim." + ("adamw" if decoupled else "adam"))
    step_fn = module.adamw if decoupled else module.adam
    params, loss = _problem.make(lib)
    exp_avgs = [lib.zeros_like(p) for p in params]
    exp_avg_sqs = [lib.zeros_like(p) for p in params]
    max_sqs = [lib.zeros_like(p) for p in params] if kwargs["amsgrad"] else []
    steps_t = [lib.tensor(0.0) for _ in params]
    track = []
    for _ in range(steps):
        grads = lib.autograd.grad(loss(), params)
        with lib.no_grad():
            step_fn(params, list(grads), exp_avgs, exp_avg_sqs, max_sqs, steps_t, **kwargs)
        track.append([p.detach().numpy().copy() for p in params])
    state = [t.numpy() for t in exp_avgs + exp_avg_sqs + max_sqs] + [float(s.item()) for s in steps_t]
    return track, state


def _adam_class_run(kwargs, decoupled, steps=15):
    cls = tg.optim.AdamW if decoupled else tg.optim.Adam
    return _problem.train(tg, lambda params: cls(
        params, lr=kwargs["lr"], betas=(kwargs["beta1"], kwargs["beta2"]), eps=kwargs["eps"],
        weight_decay=kwargs["weight_decay"], amsgrad=kwargs["amsgrad"], maximize=kwargs["maximize"]), steps)[0]


def _sgd_run(lib, kwargs, steps=15, functional_module="sgd"):
    module = importlib.import_module(lib.__name__ + ".optim." + functional_module)
    params, loss = _problem.make(lib)
    bufs = [None] * len(params)
    track = []
    for _ in range(steps):
        grads = lib.autograd.grad(loss(), params)
        with lib.no_grad():
            module.sgd(params, list(grads), bufs, **kwargs)
        track.append([p.detach().numpy().copy() for p in params])
    return track, bufs


@pytest.mark.parametrize("kwargs", ADAM)
@pytest.mark.parametrize("decoupled", [False, True], ids=["adam", "adamw"])
def test_functional_adam_is_the_optimizer_step(kwargs, decoupled):
    track, state = _adam_run(tg, kwargs, decoupled)
    for mine, theirs in zip(track, _adam_class_run(kwargs, decoupled)):
        for a, b in zip(mine, theirs):
            np.testing.assert_array_equal(a, b)
    assert state[-2:] == [15.0, 15.0]  # the step counts, moved on in place
    assert not any(np.all(s == 0) for s in state[:-2])  # the moments, updated in place


@pytest.mark.parametrize("kwargs", SGD)
def test_functional_sgd_is_the_optimizer_step(kwargs):
    track, bufs = _sgd_run(tg, kwargs)
    theirs, opt, params = _problem.train(tg, lambda params: tg.optim.SGD(params, **kwargs), 15)
    for mine, other in zip(track, theirs):
        for a, b in zip(mine, other):
            np.testing.assert_array_equal(a, b)
    if kwargs["momentum"]:  # the buffers made at the first step, in the caller's list
        for buf, p in zip(bufs, params):
            assert isinstance(buf, tg.Tensor)
            np.testing.assert_array_equal(buf.numpy(), opt.state[p]["momentum_buffer"].numpy())
    else:
        assert bufs == [None, None]
    other, _ = _sgd_run(tg, kwargs, functional_module="_functional")  # torch.optim._functional.sgd
    np.testing.assert_array_equal(other[-1][0], track[-1][0])


@pytest.mark.torch
@pytest.mark.parametrize("kwargs", ADAM)
@pytest.mark.parametrize("decoupled", [False, True], ids=["adam", "adamw"])
def test_functional_adam_matches_pytorch(kwargs, decoupled):
    import torch
    (mine, my_state), (theirs, their_state) = (_adam_run(lib, kwargs, decoupled) for lib in (tg, torch))
    for a, b in zip(mine[-1] + my_state[:-2], theirs[-1] + their_state[:-2]):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
    assert my_state[-2:] == their_state[-2:]


@pytest.mark.torch
@pytest.mark.parametrize("kwargs", SGD)
def test_functional_sgd_matches_pytorch(kwargs):
    import torch
    (mine, my_bufs), (theirs, their_bufs) = (_sgd_run(lib, kwargs) for lib in (tg, torch))
    for a, b in zip(mine[-1], theirs[-1]):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
    for a, b in zip(my_bufs, their_bufs):
        assert (a is None) == (b is None)
        if a is not None:
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12, atol=1e-14)


def test_the_modules_keep_their_names():
    """``torch.optim.adam`` is the module (the function is ``torch.optim.adam.adam``), as the
    imports of older code expect."""
    assert isinstance(tg.optim.adam, types.ModuleType) and isinstance(tg.optim.sgd, types.ModuleType)
    from tracegrad.optim import _functional
    from tracegrad.optim.adamw import AdamW, adamw
    assert AdamW is tg.optim.AdamW and adamw is tg.optim.adam.adamw
    assert _functional.adam is tg.optim.adam.adam and _functional.sgd is tg.optim.sgd.sgd


def _adam_args(params, n=None):
    n = len(params) if n is None else n
    return (params, [tg.ones_like(p) for p in params][:n], [tg.zeros_like(p) for p in params],
            [tg.zeros_like(p) for p in params], [], [tg.tensor(0.0) for _ in params])


KW = dict(amsgrad=False, beta1=0.9, beta2=0.999, lr=0.1, weight_decay=0.0, eps=1e-8, maximize=False)


def test_functional_adam_refuses_what_pytorch_refuses():
    params = [tg.zeros(3, requires_grad=True)]
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place"):
        tg.optim.adam.adam(*_adam_args(params), **KW)  # (outside no_grad)
    args = list(_adam_args(params))
    args[5] = [0.0]
    with tg.no_grad(), pytest.raises(RuntimeError, match="`state_steps` argument must contain a list of "
                                                         "singleton tensors"):
        tg.optim.adam.adam(*args, **KW)
    with tg.no_grad(), pytest.raises(NotImplementedError, match="differentiable=True is not supported"):
        tg.optim.adam.adam(*_adam_args(params), differentiable=True, **KW)
    with tg.no_grad(), pytest.raises(NotImplementedError, match="grad_scale and found_inf"):
        tg.optim.adam.adam(*_adam_args(params), grad_scale=tg.tensor(2.0), **KW)
    np.testing.assert_array_equal(params[0].detach().numpy(), 0)  # nothing was changed


def test_functional_optimizers_name_a_bad_list():
    params = [tg.zeros(3, requires_grad=True), tg.zeros(2, requires_grad=True)]
    with tg.no_grad():
        with pytest.raises(IndexError, match="adam: grads has 1 entries for 2 params"):
            tg.optim.adam.adam(*_adam_args(params, n=1), **KW)
        with pytest.raises(TypeError, match=r"sgd: d_p_list\[1\] must be a Tensor, not NoneType"):
            tg.optim.sgd.sgd(params, [tg.ones(3), None], [None, None], weight_decay=0.0, momentum=0.9, lr=0.1,
                             dampening=0.0, nesterov=False, maximize=False)
        with pytest.raises(IndexError, match="sgd: momentum_buffer_list has 1 entries for 2 params"):
            tg.optim.sgd.sgd(params, [tg.ones(3), tg.ones(2)], [None], weight_decay=0.0, momentum=0.9, lr=0.1,
                             dampening=0.0, nesterov=False, maximize=False)
    for p in params:
        np.testing.assert_array_equal(p.detach().numpy(), 0)
