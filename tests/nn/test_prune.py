"""``nn.utils.prune``: the masks each method computes (against hand computations), what a
pruned module holds (``<name>_orig``, ``<name>_mask``, the product before each forward,
gradients through the mask), iterative pruning within the entries or channels kept,
``remove``, ``global_unstructured``, the errors -- and the same masks as PyTorch's."""
import numpy as np
import pytest

import tracegrad as tg
from tracegrad.nn.utils import prune

RNG = np.random.default_rng(0)
WEIGHTS = RNG.standard_normal((10, 8)).astype(np.float32)


def _linear(lib=tg, weights=WEIGHTS):
    m = lib.nn.Linear(weights.shape[1], weights.shape[0])
    with lib.no_grad():
        m.weight.copy_(lib.tensor(weights))
        m.bias.zero_()
    return m


def _smallest(a, k):
    flat = np.zeros(a.size, bool)
    flat[np.argsort(np.abs(a).reshape(-1), kind="stable")[:k]] = True
    return flat.reshape(a.shape)


def test_l1_unstructured_masks_the_smallest_magnitudes_and_keeps_the_original():
    m = _linear()
    prune.l1_unstructured(m, "weight", amount=0.3)
    assert [n for n, _ in m.named_parameters()] == ["bias", "weight_orig"]
    assert [n for n, _ in m.named_buffers()] == ["weight_mask"]
    assert list(m.state_dict()) == ["bias", "weight_orig", "weight_mask"]
    assert not isinstance(m.weight, tg.nn.Parameter) and prune.is_pruned(m)
    pruned = _smallest(WEIGHTS, 24)  # round(0.3 * 80)
    np.testing.assert_array_equal(m.weight_mask.numpy(), (~pruned).astype(np.float32))
    np.testing.assert_array_equal(m.weight.detach().numpy(), np.where(pruned, 0, WEIGHTS))
    x = tg.tensor(RNG.standard_normal((4, 8)).astype(np.float32))
    m(x).sum().backward()  # the gradient reaches weight_orig through the mask
    np.testing.assert_allclose(m.weight_orig.grad.numpy(), np.where(pruned, 0, 1) * x.numpy().sum(0), rtol=1e-6)
    with tg.no_grad():  # the hook recomputes weight before each forward
        m.weight_orig.mul_(2)
    m(x)
    np.testing.assert_array_equal(m.weight.detach().numpy(), np.where(pruned, 0, 2 * WEIGHTS))


def test_pruning_again_acts_on_the_entries_kept_and_remove_makes_it_permanent():
    m = _linear()
    prune.l1_unstructured(m, "weight", amount=0.3)
    prune.l1_unstructured(m, "weight", amount=10)  # 10 more among the 56 kept
    hooks = [h for h in m._forward_pre_hooks.values() if isinstance(h, prune.BasePruningMethod)]
    assert len(hooks) == 1 and isinstance(hooks[0], prune.PruningContainer) and len(hooks[0]) == 2
    pruned = _smallest(WEIGHTS, 34)
    np.testing.assert_array_equal(m.weight_mask.numpy(), (~pruned).astype(np.float32))
    prune.remove(m, "weight")
    assert [n for n, _ in m.named_parameters()] == ["bias", "weight"] and not list(m.named_buffers())
    assert isinstance(m.weight, tg.nn.Parameter) and not prune.is_pruned(m)
    np.testing.assert_array_equal(m.weight.detach().numpy(), np.where(pruned, 0, WEIGHTS))
    with pytest.raises(ValueError, match="has to be pruned before pruning can be removed"):
        prune.remove(m, "weight")


def test_ln_structured_masks_the_channels_of_smallest_norm():
    for dim, n in ((0, 2), (1, 1), (-1, float("inf"))):
        m = _linear()
        prune.ln_structured(m, "weight", amount=0.4, n=n, dim=dim)
        axis = dim % 2
        norms = np.linalg.norm(np.moveaxis(WEIGHTS, axis, 0).reshape(WEIGHTS.shape[axis], -1), ord=n, axis=1)
        count = round(0.4 * WEIGHTS.shape[axis])
        dropped = np.argsort(norms, kind="stable")[:count]
        want = np.ones_like(WEIGHTS)
        np.moveaxis(want, axis, 0)[dropped] = 0
        np.testing.assert_array_equal(m.weight_mask.numpy(), want)
    m = _linear()
    prune.ln_structured(m, "weight", amount=2, n=2, dim=0)
    prune.ln_structured(m, "weight", amount=2, n=2, dim=0)  # two more of the 8 rows kept
    assert int((m.weight_mask.sum(1) == 0).sum()) == 4


def test_random_methods_prune_the_amount_asked():
    m = _linear()
    prune.random_unstructured(m, "weight", amount=0.5)
    assert int(m.weight_mask.sum()) == 40
    prune.random_structured(m, "weight", amount=3, dim=0)  # 3 of the rows, on top
    assert int((m.weight_mask.sum(1) == 0).sum()) >= 3
    m = _linear()
    prune.random_structured(m, "weight", amount=0.5, dim=1)
    mask = m.weight_mask.numpy()
    assert sorted(set(mask.sum(0))) == [0.0, 10.0] and int((mask.sum(0) == 0).sum()) == 4


def test_global_unstructured_ranks_all_tensors_together():
    a, b = _linear(), _linear(weights=WEIGHTS[:6, :5] * 0.5)
    prune.global_unstructured([(a, "weight"), (b, "weight")], pruning_method=prune.L1Unstructured, amount=0.5)
    both = np.concatenate([WEIGHTS.reshape(-1), (WEIGHTS[:6, :5] * 0.5).reshape(-1)])
    pruned = _smallest(both, round(0.5 * both.size))
    np.testing.assert_array_equal(np.concatenate([a.weight_mask.numpy().reshape(-1), b.weight_mask.numpy().reshape(-1)]),
                                  (~pruned).astype(np.float32))
    with pytest.raises(TypeError, match='Only "unstructured" PRUNING_TYPE'):
        prune.global_unstructured([(a, "bias")], pruning_method=prune.LnStructured, amount=1, n=2, dim=0)


def test_custom_mask_importance_scores_identity_and_prune():
    m = _linear()
    mask = tg.tensor((RNG.random((10, 8)) > 0.5).astype(np.float32))
    prune.custom_from_mask(m, "weight", mask=mask)
    np.testing.assert_array_equal(m.weight.detach().numpy(), WEIGHTS * mask.numpy())
    m = _linear()
    scores = tg.tensor(np.arange(80, dtype=np.float32).reshape(10, 8))
    prune.l1_unstructured(m, "weight", amount=8, importance_scores=scores)  # the first row
    np.testing.assert_array_equal(m.weight_mask.numpy()[0], np.zeros(8))
    assert int(m.weight_mask.sum()) == 72
    m = _linear()
    prune.identity(m, "bias")
    assert int(m.bias_mask.sum()) == 10 and prune.is_pruned(m)
    t = tg.tensor(WEIGHTS)
    np.testing.assert_array_equal(prune.L1Unstructured(amount=24).prune(t).numpy(), np.where(_smallest(WEIGHTS, 24), 0, WEIGHTS))


def test_bad_amounts_and_shapes_are_refused_leaving_the_module_as_it_was():
    m = _linear()
    with pytest.raises(TypeError, match="Invalid type for amount"):
        prune.l1_unstructured(m, "weight", amount="half")
    with pytest.raises(ValueError, match=r"amount=1.5 should either be a float in the range \[0, 1\]"):
        prune.l1_unstructured(m, "weight", amount=1.5)
    with pytest.raises(ValueError, match="amount=81 should be smaller than the number of parameters to prune=80"):
        prune.l1_unstructured(m, "weight", amount=81)
    with pytest.raises(ValueError, match="Structured pruning can only be applied to multidimensional tensors"):
        prune.ln_structured(m, "bias", amount=1, n=2, dim=0)
    assert [n for n, _ in m.named_parameters()] == ["weight", "bias"] and not prune.is_pruned(m)
    np.testing.assert_array_equal(m.weight.detach().numpy(), WEIGHTS)


@pytest.mark.torch
def test_the_masks_are_pytorchs():
    import torch
    import torch.nn.utils.prune as torch_prune

    def masks(lib, pr):
        out = []
        m = _linear(lib)
        pr.l1_unstructured(m, "weight", amount=0.3)
        pr.ln_structured(m, "weight", amount=2, n=2, dim=0)
        out.append(m.weight_mask.numpy())
        a, b = _linear(lib), _linear(lib, WEIGHTS[:6, :5] * 0.5)
        pr.global_unstructured([(a, "weight"), (b, "weight")], pruning_method=pr.L1Unstructured, amount=0.4)
        out += [a.weight_mask.numpy(), b.weight_mask.numpy()]
        pr.remove(a, "weight")
        out.append(a.weight.detach().numpy())
        out.append(sorted(a.state_dict()) + sorted(b.state_dict()))
        return out
    for ours, theirs in zip(masks(tg, prune), masks(torch, torch_prune)):
        if isinstance(ours, list):
            assert ours == theirs
        else:
            np.testing.assert_array_equal(ours, theirs)
