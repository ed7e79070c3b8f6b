"""median, nanmedian, quantile, nanquantile: hand values, and against PyTorch over shapes,
dims, keepdim, ties, NaNs, every interpolation, and gradients."""
import numpy as np
import pytest

import tracegrad as tg

NAN = float("nan")


def test_hand_values():
    x = tg.tensor([[3.0, 1.0, 2.0, 5.0], [4.0, 4.0, 0.0, 1.0]])
    assert tg.median(x).item() == 2.0  # the lower of the two middle values of 8
    m = tg.median(x, dim=1)
    assert m.values.tolist() == [2.0, 1.0] and m.indices.tolist() == [2, 3]
    assert tg.nanmedian(tg.tensor([1.0, NAN, 0.0])).item() == 0.0
    assert np.isnan(tg.median(tg.tensor([1.0, NAN, 0.0])).item())
    np.testing.assert_allclose(tg.quantile(tg.tensor([1.0, 2.0, 3.0, 4.0]), tg.tensor([0.25, 0.5])).numpy(),
                               [1.75, 2.5])
    assert tg.quantile(tg.tensor([1.0, 2.0, 3.0, 4.0, 5.0]), 0.625, interpolation="nearest").item() == 3.0
    assert tg.nanquantile(tg.tensor([1.0, NAN, 3.0]), 0.5).item() == 2.0
    x = tg.tensor([3.0, 1.0, 2.0, 5.0], requires_grad=True)
    tg.quantile(x, 0.4).backward()  # rank 1.2 between 2 (weight 0.8) and 3 (weight 0.2)
    np.testing.assert_allclose(x.grad.numpy(), [0.2, 0.0, 0.8, 0.0], rtol=1e-6)  # (float32)


def test_errors():
    with pytest.raises(RuntimeError, match=r"quantile\(\) input tensor must be either float or double dtype"):
        tg.quantile(tg.tensor([1, 2]), 0.5)
    with pytest.raises(RuntimeError, match=r"quantile\(\) q must be in the range \[0, 1\] but got 1.5"):
        tg.quantile(tg.tensor([1.0, 2.0]), 1.5)
    with pytest.raises(ValueError, match="interpolation must be one of"):
        tg.quantile(tg.tensor([1.0, 2.0]), 0.5, interpolation="cubic")
    with pytest.raises(IndexError, match="Expected reduction dim 1 to have non-zero size"):
        tg.median(tg.ones(2, 0), dim=1)


@pytest.mark.torch
def test_against_torch():
    import torch
    rng = np.random.default_rng(0)

    def same(ours, theirs):
        a, b = ours.detach().numpy(), theirs.detach().numpy()
        assert a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12, equal_nan=True)

    for shape in [(5,), (4, 6), (3, 4, 5), (1,)]:
        for with_nan in (False, True):
            a = rng.standard_normal(shape)
            a[rng.random(shape) < 0.2] = 3.0  # ties
            if with_nan:
                a[rng.random(shape) < 0.25] = np.nan
            for name in ("median", "nanmedian"):
                same(getattr(tg, name)(tg.tensor(a)), getattr(torch, name)(torch.tensor(a)))
                for d in range(-len(shape), len(shape)):
                    for keepdim in (False, True):
                        ours = getattr(tg, name)(tg.tensor(a), d, keepdim)
                        theirs = getattr(torch, name)(torch.tensor(a), d, keepdim)
                        same(ours.values, theirs.values)
                        same(ours.indices, theirs.indices)
            for name in ("quantile", "nanquantile"):
                for q in (0.0, 0.3, 1.0, [0.1, 0.5, 0.9]):
                    for mode in ("linear", "lower", "higher", "midpoint", "nearest"):
                        for d in (None, 0, -1):
                            q1 = tg.tensor(q, dtype=tg.float64) if isinstance(q, list) else q
                            q2 = torch.tensor(q, dtype=torch.float64) if isinstance(q, list) else q
                            same(getattr(tg, name)(tg.tensor(a), q1, d, True, interpolation=mode),
                                 getattr(torch, name)(torch.tensor(a), q2, d, True, interpolation=mode))
    for name, args in [("median", ()), ("median", (1,)), ("quantile", (0.4, 1)), ("nanquantile", (0.7, 0))]:
        a = rng.standard_normal((3, 4))
        x1, x2 = tg.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
        r1, r2 = getattr(tg, name)(x1, *args), getattr(torch, name)(x2, *args)
        r1, r2 = (r[0] if isinstance(r, tuple) else r for r in (r1, r2))
        r1.sum().backward()
        r2.sum().backward()
        same(x1.grad, x2.grad)
