"""F.cross_entropy on class indices as one rule (tracegrad/rules/cross_entropy.py:
log_softmax and nll_loss in one node): values, gradients and second derivatives equal
PyTorch's and the composition's (log_softmax then nll_loss), and finite differences;
forward mode and vmap; the errors of the composition."""
import numpy as np
import pytest

import tracegrad as tg
import tracegrad.autograd.forward_ad as fwAD
from tracegrad.nn import functional as F

# (input shape, target, weight?, ignore_index, reduction): 1-d (one sample), 2-d, an
# ignored target, weights, a sequence (3-d), an image (4-d), an empty batch
_rng = np.random.default_rng(7)
CASES = [
    ((5,), np.array(3), False, -100, "mean"),
    ((6, 5), np.array([1, 0, 4, 2, 3, 3]), False, -100, "mean"),
    ((6, 5), np.array([1, -1, 4, 2, -1, 3]), True, -1, "mean"),
    ((6, 5), np.array([1, 2, 4, 2, 0, 3]), True, 2, "sum"),
    ((6, 5), np.array([1, 2, 4, 2, 0, 3]), False, -100, "none"),
    ((2, 4, 3), _rng.integers(0, 4, (2, 3)), True, -100, "mean"),
    ((2, 4, 3), _rng.integers(0, 4, (2, 3)), False, 1, "none"),
    ((2, 3, 2, 2), _rng.integers(0, 3, (2, 2, 2)), False, -100, "mean"),
    ((0, 4), np.zeros(0, np.int64), False, -100, "sum"),
]


def _args(lib, case, seed=0):
    shape, target, weighted, ignore_index, reduction = case
    rng = np.random.default_rng(seed)
    x = lib.tensor(rng.standard_normal(shape) * 2, dtype=lib.float64, requires_grad=True)
    c = shape[0] if len(shape) == 1 else shape[1]
    w = lib.tensor(rng.uniform(0.5, 2, c), dtype=lib.float64) if weighted else None
    return x, lib.tensor(target), dict(weight=w, ignore_index=ignore_index, reduction=reduction)


def _composed(x, t, weight, ignore_index, reduction):
    return F.nll_loss(F.log_softmax(x, 0 if x.ndim == 1 else 1), t, weight, ignore_index=ignore_index,
                      reduction=reduction)


@pytest.mark.parametrize("case", range(len(CASES)))
def test_equals_the_composition_to_second_order(case):
    x, t, kw = _args(tg, CASES[case])
    fused, composed = F.cross_entropy(x, t, **kw), _composed(x, t, **kw)
    np.testing.assert_allclose(fused.detach().numpy(), composed.detach().numpy(), rtol=1e-13, atol=1e-15)
    if x.numel() == 0:
        return
    v = tg.tensor(np.random.default_rng(1).standard_normal(tuple(fused.shape)))
    (ga,) = tg.autograd.grad(fused, x, v, create_graph=True)
    (gb,) = tg.autograd.grad(composed, x, v, create_graph=True)
    np.testing.assert_allclose(ga.detach().numpy(), gb.detach().numpy(), rtol=1e-12, atol=1e-14)
    u = tg.tensor(np.random.default_rng(2).standard_normal(tuple(x.shape)))
    (ha,) = tg.autograd.grad((ga * u).sum(), x)
    (hb,) = tg.autograd.grad((gb * u).sum(), x)
    np.testing.assert_allclose(ha.numpy(), hb.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("case", [1, 2, 5, 7])
def test_gradients_match_finite_differences(case):
    x, t, kw = _args(tg, CASES[case])

    def f(x):
        return F.cross_entropy(x, t, **kw)
    assert tg.autograd.gradcheck(f, (x,))
    assert tg.autograd.gradgradcheck(f, (x,))


@pytest.mark.torch
@pytest.mark.parametrize("case", range(len(CASES)))
def test_matches_torch_to_second_order(case):
    import torch
    (x, t, kw), (tx, tt, tkw) = _args(tg, CASES[case]), _args(torch, CASES[case])
    a, b = F.cross_entropy(x, t, **kw), torch.nn.functional.cross_entropy(tx, tt, **tkw)
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-12, atol=1e-14)
    if x.ndim != 3 or kw["reduction"] != "none":  # (3-d with 'none': a view of the node, in both)
        assert a.grad_fn.name() == b.grad_fn.name()
    if x.numel() == 0:
        return
    v = np.random.default_rng(1).standard_normal(tuple(a.shape))
    (ga,) = tg.autograd.grad(a, x, tg.tensor(v), create_graph=True)
    (gb,) = torch.autograd.grad(b, tx, torch.tensor(v), create_graph=True)
    np.testing.assert_allclose(ga.detach().numpy(), gb.detach().numpy(), rtol=1e-12, atol=1e-14)
    u = np.random.default_rng(2).standard_normal(tuple(x.shape))
    (ha,) = tg.autograd.grad((ga * tg.tensor(u)).sum(), x)
    (hb,) = torch.autograd.grad((gb * torch.tensor(u)).sum(), tx)
    np.testing.assert_allclose(ha.numpy(), hb.numpy(), rtol=1e-10, atol=1e-12)


def test_one_node_over_the_input():
    x = tg.randn(4, 3, requires_grad=True)
    loss = F.cross_entropy(x, tg.tensor([0, 2, 1, 1]))
    assert loss.grad_fn.name() == "NllLossBackward0"
    assert loss.grad_fn.next_functions[0][0].name() == "torch::autograd::AccumulateGrad"
    assert loss.grad_fn._saved_ignore_index == -100 and loss.grad_fn._saved_reduction == 1


@pytest.mark.parametrize("case", [1, 2, 5])
def test_forward_mode_matches_finite_differences(case):
    x, t, kw = _args(tg, CASES[case])
    x = x.detach()
    d = np.random.default_rng(3).standard_normal(tuple(x.shape))
    with fwAD.dual_level():
        out = F.cross_entropy(fwAD.make_dual(x, tg.tensor(d)), t, **kw)
        tangent = fwAD.unpack_dual(out).tangent.numpy()
    eps = 1e-6
    plus = F.cross_entropy(x + tg.tensor(d * eps), t, **kw).numpy()
    minus = F.cross_entropy(x - tg.tensor(d * eps), t, **kw).numpy()
    np.testing.assert_allclose(tangent, (plus - minus) / (2 * eps), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("sample", [(5,), (6, 5), (6, 5, 2)])
def test_vmap_and_per_sample_gradients_equal_a_loop(sample):
    """Four samples of logits ``sample`` (classes along the sample's dim 0 or 1)."""
    rng = np.random.default_rng(4)
    classes = sample[0] if len(sample) == 1 else sample[1]
    x = tg.tensor(rng.standard_normal((4,) + sample))
    t = tg.tensor(rng.integers(0, classes, (4,) + sample[:1] + sample[2:] if len(sample) > 1 else (4,)))

    def f(a, b):
        return F.cross_entropy(a, b, ignore_index=1)
    batched = tg.func.vmap(f)(x, t)
    loop = tg.stack([f(x[i], t[i]) for i in range(4)])
    np.testing.assert_allclose(batched.numpy(), loop.numpy(), rtol=1e-13)
    grads = tg.func.vmap(tg.func.grad(f))(x, t)
    loop = tg.stack([tg.func.grad(f)(x[i], t[i]) for i in range(4)])
    np.testing.assert_allclose(grads.numpy(), loop.numpy(), rtol=1e-12, atol=1e-15)


def test_errors_are_the_compositions():
    with pytest.raises(NotImplementedError, match="\"log_softmax_lastdim_kernel_impl\" not implemented for 'Long'"):
        F.cross_entropy(tg.tensor([[1, 2]]), tg.tensor([0]))
    with pytest.raises(IndexError, match="Target 5 is out of bounds."):
        F.cross_entropy(tg.randn(2, 3), tg.tensor([0, 5]))
    with pytest.raises(ValueError, match=r"Expected input batch_size \(2\) to match target batch_size \(3\)."):
        F.cross_entropy(tg.randn(2, 3), tg.tensor([0, 1, 2]))
    with pytest.raises(RuntimeError, match="expected scalar type Float but found Double"):
        F.cross_entropy(tg.randn(2, 3), tg.tensor([0, 1]), weight=tg.ones(3, dtype=tg.float64))
