"""Muon: trajectories against PyTorch (its Newton-Schulz iteration runs in bfloat16, which
tracegrad reproduces by rounding float32 results), and by its definition without PyTorch."""
import math

import numpy as np
import pytest

import tracegrad as tg
from tracegrad.optim.muon import bfloat16, zeropower_via_newtonschulz

_rng = np.random.default_rng(0)
W0 = _rng.standard_normal((6, 4))
X = _rng.standard_normal((10, 6))
Y = _rng.standard_normal((10, 4))


def _run(lib, steps=10, transposed=False, **kwargs):
    """``steps`` Muon steps on a least-squares problem; the weights after each."""
    w = lib.tensor(W0.T.copy() if transposed else W0, dtype=lib.float64, requires_grad=True)
    opt = lib.optim.Muon([w], **kwargs)
    out = []
    for _ in range(steps):
        opt.zero_grad()
        ((lib.tensor(X) @ (w.T if transposed else w) - lib.tensor(Y)) ** 2).mean().backward()
        opt.step()
        out.append(w.detach().numpy().copy())
    return out, opt, w


CONFIGS = [{}, {"lr": 0.02}, {"lr": 0.02, "nesterov": False, "adjust_lr_fn": "match_rms_adamw", "momentum": 0.3},
           {"lr": 0.02, "transposed": True, "weight_decay": 0.0, "ns_steps": 3}]


@pytest.mark.torch
@pytest.mark.parametrize("kwargs", CONFIGS, ids=[str(c) for c in CONFIGS])
def test_matches_torch(kwargs):
    torch = pytest.importorskip("torch")
    ours, opt, w = _run(tg, **kwargs)
    theirs, topt, tw = _run(torch, **kwargs)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-15)
    assert w._version == tw._version
    sd, tsd = opt.state_dict(), topt.state_dict()
    assert sd["param_groups"] == tsd["param_groups"] and list(sd["state"][0]) == ["momentum_buffer"]
    np.testing.assert_allclose(sd["state"][0]["momentum_buffer"].numpy(), tsd["state"][0]["momentum_buffer"].numpy(),
                               rtol=1e-12)


def test_bfloat16_rounding():
    one_ulp = 2.0 ** -7  # bfloat16 keeps 8 significant bits (the ulp of [1, 2); [2, 4) has twice it)
    values = np.array([1.0, 1 + one_ulp / 2, 1 + 3 * one_ulp / 2, 1 + one_ulp / 4, -3.0 - 3 * one_ulp, np.inf, np.nan],
                      dtype=np.float32)
    got = bfloat16(values)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got[:6], [1.0, 1.0, 1 + 2 * one_ulp, 1.0, -3.0 - 4 * one_ulp, np.inf])
    assert np.isnan(got[6])  # ties go to the even neighbour; NaN stays NaN


def test_newton_schulz_pushes_singular_values_toward_one():
    g = np.random.default_rng(1).standard_normal((5, 8))
    u = zeropower_via_newtonschulz(tg.backend.cpu, g, (3.4445, -4.775, 2.0315), 5, 1e-7)
    s = np.linalg.svd(u.astype(np.float64), compute_uv=False)
    assert u.shape == g.shape and np.all((s > 0.6) & (s < 1.25))
    # the same singular vectors as g: u is close to g's polar factor
    left, _, right = np.linalg.svd(g, full_matrices=False)
    assert np.abs(u - left @ right).max() < 0.35


def test_plain_step_by_definition():
    """No momentum, no Nesterov, no iterations: ``p (1 - lr wd) - lr sqrt(A / B) g / |g|``."""
    lr, wd = 0.05, 0.1
    out, _, _ = _run(tg, steps=1, lr=lr, weight_decay=wd, momentum=0.0, nesterov=False, ns_steps=0)
    h = X @ W0 - Y
    g = 2 * X.T @ h / h.size
    want = W0 * (1 - lr * wd) - lr * math.sqrt(6 / 4) * g / np.linalg.norm(g)
    np.testing.assert_allclose(out[0], want, atol=lr * math.sqrt(1.5) * 2.0 ** -7)
    assert np.abs(out[0] - want).max() > 0  # the update is rounded to bfloat16, as in PyTorch


def test_errors():
    w = tg.zeros(3, 2, requires_grad=True)
    with pytest.raises(ValueError, match=r"^Muon only supports 2D parameters whereas we found a parameter with size: "
                                         r"tracegrad.Size\(\[2\]\)$"):
        tg.optim.Muon([w, tg.zeros(2, requires_grad=True)])
    with pytest.raises(ValueError, match="^Adjust learning rate function sqrt is not supported$"):
        tg.optim.Muon([w], adjust_lr_fn="sqrt")
    with pytest.raises(ValueError, match="^momentum should be >= 0 but is: -1$"):
        tg.optim.Muon([w], momentum=-1)
    with pytest.raises(ValueError, match="^Number of steps must be less than 100 for computational efficiency$"):
        w.grad = tg.ones(3, 2)
        tg.optim.Muon([w], ns_steps=100).step()
