"""tracegrad.compile on the device: a staged training step of tensors on 'cuda' (the stub
device here, a GPU where there is one) computes there, through the namespace only, and
gives the CPU's values."""
import copy

import numpy as np

import tracegrad as tg
from tracegrad import nn


def test_a_compiled_training_step_on_the_device_matches_the_cpu(xp):
    tg.manual_seed(0)
    cpu_model = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 3))
    dev_model = copy.deepcopy(cpu_model).to("cuda")
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((5, 6)).astype(np.float32), rng.integers(0, 3, 5)
    runs = []
    for model, device in ((cpu_model, "cpu"), (dev_model, "cuda")):
        step = tg.compile(lambda x, y, model=model: nn.functional.cross_entropy(model(x), y))
        opt = tg.optim.SGD(model.parameters(), lr=0.1)
        losses = []
        for _ in range(3):
            loss = step(tg.tensor(x, device=device), tg.tensor(y, device=device))
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        assert step._compiled.graph_breaks == []
        runs.append((losses, [p.detach().cpu().numpy() for p in model.parameters()]))
        if device == "cuda":
            assert all(isinstance(p._data, xp.ndarray) and isinstance(p.grad._data, xp.ndarray)
                       for p in model.parameters())
    np.testing.assert_allclose(runs[1][0], runs[0][0], rtol=1e-5)
    for a, b in zip(runs[1][1], runs[0][1]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
