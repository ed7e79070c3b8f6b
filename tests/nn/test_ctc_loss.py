"""ctc_loss / CTCLoss: values and gradients (for log_probs and, through log_softmax, for the
logits) against PyTorch for padded and concatenated targets, repeated labels, shorter inputs,
every reduction, infeasible targets with and without zero_infinity, unbatched input; and a
brute-force sum over all alignments without PyTorch."""
import itertools

import numpy as np
import pytest

import tracegrad as tg
from tracegrad import nn
from tracegrad.nn import functional as F

from ._oracle import assert_close

RNG = np.random.default_rng(61)
T, N, C = 7, 3, 5


def _case():
    x = RNG.standard_normal((T, N, C))
    targets = RNG.integers(1, C, (N, 3))
    targets[0, 1] = targets[0, 0]  # a repeated label needs a blank between
    return x, targets, np.array([7, 5, 6]), np.array([3, 1, 2])


def _compare(log_probs, targets, input_lengths, target_lengths, through_softmax, **kw):
    import torch
    xt, xo = torch.tensor(log_probs, requires_grad=True), tg.tensor(log_probs, requires_grad=True)
    at = torch.nn.functional.log_softmax(xt, -1) if through_softmax else xt
    ao = F.log_softmax(xo, -1) if through_softmax else xo
    expected = torch.nn.functional.ctc_loss(at, torch.tensor(targets), torch.tensor(input_lengths),
                                            torch.tensor(target_lengths), **kw)
    got = F.ctc_loss(ao, tg.tensor(targets), tg.tensor(input_lengths), tg.tensor(target_lengths), **kw)
    assert_close(got, expected, 1e-10, 1e-10, "loss")
    finite = np.isfinite(expected.detach().numpy())
    if finite.all() or kw.get("zero_infinity"):
        expected.sum().backward()
        got.sum().backward()
        assert_close(xo.grad, xt.grad, 1e-10, 1e-10, "grad")


@pytest.mark.torch
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("concatenated", [False, True])
@pytest.mark.parametrize("through_softmax", [False, True])
def test_ctc_loss_against_torch(reduction, concatenated, through_softmax):
    x, targets, il, tl = _case()
    if concatenated:
        targets = np.concatenate([targets[i, :tl[i]] for i in range(N)])
    lp = x if through_softmax else x - np.log(np.exp(x).sum(-1, keepdims=True))
    _compare(lp, targets, il, tl, through_softmax, reduction=reduction)


@pytest.mark.torch
@pytest.mark.parametrize("zero_infinity", [False, True])
def test_ctc_loss_infeasible_targets_against_torch(zero_infinity):
    x, targets, _, tl = _case()
    targets[0] = [2, 2, 2]  # needs 5 steps, gets 2
    _compare(x, targets, np.array([2, 5, 6]), tl, True, reduction="none", zero_infinity=zero_infinity)


@pytest.mark.torch
def test_ctc_loss_unbatched_and_other_blank_against_torch():
    x = RNG.standard_normal((6, 4))
    _compare(x, np.array([0, 2, 2]), np.array(6), np.array(3), True, blank=3, reduction="none")


def test_ctc_loss_is_the_sum_over_alignments():
    lp = np.log(RNG.dirichlet(np.ones(3), size=4))  # T = 4, C = 3, blank 0
    target = (1, 2)
    total = 0.0
    for path in itertools.product(range(3), repeat=4):
        collapsed = [k for k, _ in itertools.groupby(path) if k != 0]
        if tuple(collapsed) == target:
            total += np.exp(sum(lp[t, c] for t, c in enumerate(path)))
    got = F.ctc_loss(tg.tensor(lp[:, None, :]), tg.tensor([list(target)]), tg.tensor([4]), tg.tensor([2]),
                     reduction="sum")
    np.testing.assert_allclose(got.item(), -np.log(total), rtol=1e-12)


def test_ctc_errors_and_layer():
    lp = tg.randn(5, 2, 4).log_softmax(-1)
    with pytest.raises(RuntimeError, match=r"Expected input_lengths to have value at most 5, but got value 6 "
                                           r"\(while checking arguments for ctc_loss_allocate_outputs\)"):
        F.ctc_loss(lp, tg.tensor([[1, 2], [1, 1]]), tg.tensor([6, 5]), tg.tensor([2, 2]))
    with pytest.raises(RuntimeError, match="input_lengths must be of size batch_size"):
        F.ctc_loss(lp, tg.tensor([[1, 2], [1, 1]]), tg.tensor([5]), tg.tensor([2, 2]))
    layer = nn.CTCLoss(blank=0, reduction="sum", zero_infinity=True)
    assert repr(layer) == "CTCLoss()" and layer.zero_infinity
    out = layer(lp, tg.tensor([[1, 2], [1, 1]]), (5, 5), (2, 2))
    assert out.shape == () and np.isfinite(out.item())
