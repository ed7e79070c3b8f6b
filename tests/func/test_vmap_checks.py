"""Checks that branch on a tensor's values work under vmap as in PyTorch: ``_is_all_true`` /
``_is_any_true`` answer for all samples at once, so the distributions' argument and sample
validation (on by default) runs inside ``vmap`` and ``vmap(grad(...))``; and
``solve_triangular`` (MultivariateNormal's log_prob) has a batching rule."""
import warnings

import numpy as np
import pytest

import tracegrad as tg
from tracegrad.func import grad, vmap

X = tg.tensor(np.random.default_rng(0).standard_normal((4, 3)))


def test_is_all_true_and_is_any_true():
    t = tg.tensor([True, False])
    assert tg._is_all_true(t).item() is False and tg._is_any_true(t).item() is True
    assert tg._is_all_true(tg.tensor([True, True])).item() is True
    with pytest.raises(RuntimeError, match="expected a bool tensor"):
        tg._is_all_true(tg.tensor([1.0]))
    # under vmap: one answer for the whole batch (as PyTorch's batching rule)
    pick = vmap(lambda v: tg.tensor(1.0) if tg._is_all_true(v > 0) else tg.tensor(0.0))
    np.testing.assert_array_equal(pick(X).numpy(), np.zeros(4))  # (not every sample is positive)
    np.testing.assert_array_equal(pick(X.abs() + 1).numpy(), np.ones(4))
    anyone = vmap(lambda v: tg.tensor(1.0) if tg._is_any_true(v > 2) else tg.tensor(0.0))
    assert anyone(X).tolist() == [float((X > 2).any())] * 4


def test_distributions_validate_under_vmap():
    D = tg.distributions
    assert D.Distribution._validate_args  # (validation on: the default)
    got = vmap(lambda v: D.Normal(0.0, 1.0).log_prob(v).sum())(X)
    np.testing.assert_allclose(got.numpy(), [D.Normal(0.0, 1.0).log_prob(x).sum().item() for x in X])
    mvn = lambda v: D.MultivariateNormal(  # noqa: E731
        tg.zeros(3, dtype=tg.float64), tg.eye(3, dtype=tg.float64)).log_prob(v)
    np.testing.assert_allclose(vmap(grad(mvn))(X).numpy(), -X.numpy(), atol=1e-12)  # d/dv of -|v|^2 / 2
    got = vmap(lambda v: D.Bernoulli(logits=v).log_prob(tg.ones(3, dtype=tg.float64)).sum())(X)
    np.testing.assert_allclose(got.numpy(), [D.Bernoulli(logits=x).log_prob(tg.ones(3, dtype=tg.float64)).sum().item()
                                             for x in X])
    with pytest.raises(ValueError, match="to be within the support"):
        vmap(lambda v: D.Bernoulli(probs=0.5).log_prob(v))(tg.tensor([[1.0], [0.5]]))
    with pytest.raises(ValueError, match="to satisfy the constraint"):
        vmap(lambda v: D.Bernoulli(probs=v))(tg.tensor([[0.5], [1.5]]))


def test_solve_triangular_has_a_batching_rule():
    r = np.random.default_rng(1)
    a = tg.tensor(np.tril(r.standard_normal((5, 3, 3))) + 3 * np.eye(3))
    b = tg.tensor(r.standard_normal((5, 3, 2)))
    shared = tg.tensor(np.tril(r.standard_normal((4, 3, 3))) + 3 * np.eye(3))  # a stack, not batched
    solve = lambda m, v: tg.linalg.solve_triangular(m, v, upper=False)  # noqa: E731
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (no fallback to a loop over samples)
        for args, dims in (((a, b), (0, 0)), ((a[0], b), (None, 0)), ((a, b[0]), (0, None)),
                           ((shared, b), (None, 0))):
            got = vmap(solve, in_dims=dims)(*args)
            want = tg.stack([solve(*(x if d is None else x[i] for x, d in zip(args, dims))) for i in range(5)])
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12)
