"""nn.utils: clip_grad_norm_, clip_grad_value_, parameters_to_vector, vector_to_parameters."""
import math
import warnings

import numpy as np
import pytest

import tracegrad as tg
from tracegrad import nn
from tracegrad.nn import utils


def _params(grads):
    ps = []
    for g in grads:
        p = nn.Parameter(tg.zeros(np.shape(g)))
        p.grad = tg.tensor(np.asarray(g, dtype=np.float32))
        ps.append(p)
    return ps


GRADS = [[[3.0, -4.0], [1.0, 2.0]], [0.5, -7.0, 2.0], 1.5]


@pytest.mark.parametrize("norm_type", [2.0, 1, 3.0, math.inf, "inf", 0.5])
def test_clip_grad_norm_matches_the_formula(norm_type):
    ps = _params(GRADS)
    flat = np.concatenate([np.ravel(g) for g in GRADS]).astype(np.float64)
    p = float(norm_type)
    expected = np.abs(flat).max() if math.isinf(p) else (np.abs(flat) ** p).sum() ** (1 / p)
    total = utils.clip_grad_norm_(ps, max_norm=1.0, norm_type=norm_type)
    assert type(total) is tg.Tensor and total.shape == () and total.dtype == tg.float32
    np.testing.assert_allclose(total.item(), expected, rtol=1e-5)
    coef = 1.0 / (expected + 1e-6)
    for param, g in zip(ps, GRADS):
        np.testing.assert_allclose(param.grad.numpy(), np.asarray(g) * coef, rtol=1e-5)


def test_clip_grad_norm_leaves_small_gradients_and_accepts_one_tensor():
    (p,) = _params([[0.3, 0.4]])
    g = p.grad
    total = utils.clip_grad_norm_(p, 10.0)
    np.testing.assert_allclose(total.item(), 0.5, rtol=1e-6)
    assert p.grad is g and p.grad.tolist() == pytest.approx([0.3, 0.4])
    assert not total.requires_grad


def test_clip_grad_norm_scales_in_place_and_bumps_versions():
    (p,) = _params([[30.0, 40.0]])
    g = p.grad
    v = g._version
    utils.clip_grad_norm_([p], 5.0)
    assert p.grad is g and g._version == v + 1
    np.testing.assert_allclose(g.numpy(), [3.0, 4.0], rtol=1e-5)


def test_clip_grad_norm_skips_missing_grads_and_empty_input():
    ps = _params([[3.0, 4.0]]) + [nn.Parameter(tg.ones(2))]
    np.testing.assert_allclose(utils.clip_grad_norm_(ps, 1.0).item(), 5.0, rtol=1e-6)
    assert ps[1].grad is None
    assert utils.clip_grad_norm_([], 1.0).item() == 0.0
    with pytest.warns(UserWarning, match="`parameters` is an empty generator, no gradient clipping will occur."):
        utils.clip_grad_norm_((p for p in []), 1.0)


def test_clip_grad_norm_nonfinite():
    (p,) = _params([[float("nan"), 1.0]])
    with pytest.raises(RuntimeError, match="The total norm of order 2.0 for gradients from `parameters` is "
                                           "non-finite, so it cannot be clipped"):
        utils.clip_grad_norm_(p, 1.0, error_if_nonfinite=True)
    assert math.isnan(p.grad.tolist()[0]) and p.grad.tolist()[1] == 1.0  # unchanged by the refusal
    total = utils.clip_grad_norm_(p, 1.0)
    assert math.isnan(total.item()) and all(math.isnan(v) for v in p.grad.tolist())


def test_clip_grad_norm_deprecated_alias_and_halves():
    (p,) = _params([[6.0, 8.0]])
    with pytest.warns(FutureWarning, match="clip_grad_norm` is now deprecated"):
        utils.clip_grad_norm([p], 5.0)
    np.testing.assert_allclose(p.grad.numpy(), [3.0, 4.0], rtol=1e-5)
    total = utils.get_total_norm([p.grad])
    np.testing.assert_allclose(total.item(), 5.0, rtol=1e-5)
    utils.clip_grads_with_norm_([p], 1.0, total)
    np.testing.assert_allclose(p.grad.numpy(), [0.6, 0.8], rtol=1e-5)


def test_clip_grad_norm_float64_and_in_a_training_step():
    m = nn.Module()
    m.w = nn.Parameter(tg.tensor([1.0, 2.0], dtype=tg.float64))
    (m.w * 10).sum().backward()
    total = utils.clip_grad_norm_(m.parameters(), 1.0)
    assert total.dtype == tg.float64
    np.testing.assert_allclose(np.linalg.norm(m.w.grad.numpy()), 1.0, rtol=1e-6)


def test_clip_grad_value():
    ps = _params(GRADS)
    assert utils.clip_grad_value_(ps, 2.5) is None
    for p, g in zip(ps, GRADS):
        np.testing.assert_allclose(p.grad.numpy(), np.clip(g, -2.5, 2.5))
    (q,) = _params([[-9.0, 9.0]])
    utils.clip_grad_value_(q, 1)
    assert q.grad.tolist() == [-1.0, 1.0]


def test_parameters_to_vector_is_differentiable():
    a = nn.Parameter(tg.tensor([[1.0, 2.0], [3.0, 4.0]]))
    b = nn.Parameter(tg.tensor([5.0]))
    v = utils.parameters_to_vector([a, b])
    assert v.tolist() == [1.0, 2.0, 3.0, 4.0, 5.0] and v.grad_fn.name() == "CatBackward0"
    (v * tg.arange(5.0)).sum().backward()
    assert a.grad.tolist() == [[0.0, 1.0], [2.0, 3.0]] and b.grad.tolist() == [4.0]


def test_vector_to_parameters_shares_storage():
    a = nn.Parameter(tg.zeros(2, 2))
    b = nn.Parameter(tg.zeros(1))
    vec = tg.arange(5.0)
    utils.vector_to_parameters(vec, [a, b])
    assert a.tolist() == [[0.0, 1.0], [2.0, 3.0]] and b.tolist() == [4.0]
    assert isinstance(a, nn.Parameter) and a.requires_grad
    vec.add_(1)
    assert b.tolist() == [5.0]


def test_vector_to_parameters_errors_change_nothing():
    a = nn.Parameter(tg.zeros(3))
    b = nn.Parameter(tg.zeros(2, 2))
    with pytest.raises(TypeError, match="expected tracegrad.Tensor, but got: list"):
        utils.vector_to_parameters([1.0], [a])
    with pytest.raises(RuntimeError, match=r"shape '\[2, 2\]' is invalid for input of size 2"):
        utils.vector_to_parameters(tg.ones(5), [a, b])
    assert a.tolist() == [0.0, 0.0, 0.0]  # the first parameter was not half-loaded


@pytest.mark.torch
@pytest.mark.parametrize("norm_type", [2.0, 1.0, math.inf, 3.0])
def test_oracle_clip_grad_norm(norm_type):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    grads = [rng.standard_normal(s).astype(np.float32) * 3 for s in [(4, 3), (3,), (2, 2, 2)]]
    results = []
    for lib in (tg, torch):
        ps = []
        for g in grads:
            p = lib.nn.Parameter(lib.zeros(g.shape))
            p.grad = lib.tensor(g)
            ps.append(p)
        total = lib.nn.utils.clip_grad_norm_(ps, 2.0, norm_type=norm_type)
        lib.nn.utils.clip_grad_value_(ps, 0.2)
        results.append((total.item(), [p.grad.numpy().copy() for p in ps]))
    (t1, g1), (t2, g2) = results
    np.testing.assert_allclose(t1, t2, rtol=1e-6)
    for a, b in zip(g1, g2):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        v1 = utils.parameters_to_vector([tg.tensor(g) for g in grads])
        v2 = torch.nn.utils.parameters_to_vector([torch.tensor(g) for g in grads])
    np.testing.assert_array_equal(v1.numpy(), v2.numpy())
