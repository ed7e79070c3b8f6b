"""Per-sample gradients of a model -- ``vmap(grad(loss), in_dims=(None, 0, 0))`` with
``functional_call`` -- equal a Python loop over the samples, and torch.func on the same
weights; ensembles through ``stack_module_state``."""
import numpy as np
import pytest

import tracegrad as tg
from tracegrad.func import functional_call, grad, stack_module_state, vmap

N = 4


def mlp(lib):
    return lib.nn.Sequential(lib.nn.Linear(5, 8), lib.nn.Tanh(), lib.nn.Linear(8, 3))


def convnet(lib):
    return lib.nn.Sequential(lib.nn.Conv2d(1, 3, 3), lib.nn.ReLU(), lib.nn.MaxPool2d(2), lib.nn.Flatten(),
                             lib.nn.Linear(3 * 3 * 3, 3))


def data(conv):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((N, 1, 8, 8) if conv else (N, 5)).astype(np.float32)
    return x, rng.integers(0, 3, N)


def per_sample_grads(model, params, x, y):
    def loss(p, xb, yb):
        out = functional_call(model, p, (xb.unsqueeze(0),))
        return tg.nn.functional.cross_entropy(out, yb.unsqueeze(0))
    return vmap(grad(loss), in_dims=(None, 0, 0))(params, x, y)


@pytest.mark.parametrize("conv", [False, True], ids=["mlp", "conv"])
def test_per_sample_grads_equal_a_loop(conv):
    tg.manual_seed(0)
    model = convnet(tg) if conv else mlp(tg)
    params = {k: v.detach() for k, v in model.named_parameters()}
    x, y = data(conv)
    got = per_sample_grads(model, params, tg.tensor(x), tg.tensor(y))
    for i in range(N):
        model.zero_grad()
        tg.nn.functional.cross_entropy(model(tg.tensor(x[i:i + 1])), tg.tensor(y[i:i + 1])).backward()
        for k, p in model.named_parameters():
            np.testing.assert_allclose(got[k].numpy()[i], p.grad.numpy(), rtol=1e-5, atol=1e-6)
    assert all(not g.requires_grad for g in got.values())


@pytest.mark.torch
@pytest.mark.parametrize("conv", [False, True], ids=["mlp", "conv"])
def test_per_sample_grads_equal_torch_func(conv):
    torch = pytest.importorskip("torch")
    tmodel = convnet(torch) if conv else mlp(torch)
    model = convnet(tg) if conv else mlp(tg)
    tparams = {k: v.detach() for k, v in tmodel.named_parameters()}
    params = {k: tg.tensor(v.numpy()) for k, v in tparams.items()}
    x, y = data(conv)

    def tloss(p, xb, yb):
        out = torch.func.functional_call(tmodel, p, (xb.unsqueeze(0),))
        return torch.nn.functional.cross_entropy(out, yb.unsqueeze(0))
    want = torch.func.vmap(torch.func.grad(tloss), in_dims=(None, 0, 0))(tparams, torch.tensor(x), torch.tensor(y))
    got = per_sample_grads(model, params, tg.tensor(x), tg.tensor(y))
    for k in want:
        assert tuple(got[k].shape) == tuple(want[k].shape)
        np.testing.assert_allclose(got[k].numpy(), want[k].numpy(), rtol=1e-5, atol=1e-6)


def test_parameters_that_require_grad_stay_untouched():
    tg.manual_seed(0)
    model = mlp(tg)
    params = dict(model.named_parameters())  # (not detached: they require grad)
    x, y = data(False)
    per_sample_grads(model, params, tg.tensor(x), tg.tensor(y))
    assert all(p.grad is None for p in model.parameters())


def test_ensemble_with_stack_module_state():
    tg.manual_seed(0)
    models = [mlp(tg) for _ in range(3)]
    params, buffers = stack_module_state(models)
    assert params["0.weight"].shape == (3, 8, 5) and params["0.weight"].requires_grad and buffers == {}
    x = tg.randn(2, 5)
    out = vmap(lambda p: functional_call(models[0], p, (x,)))(params)
    for i, m in enumerate(models):
        np.testing.assert_allclose(out[i].detach().numpy(), m(x).detach().numpy(), rtol=1e-6, atol=1e-6)
