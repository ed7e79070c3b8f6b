"""AdaptiveLogSoftmaxWithLoss: parameter names and shapes, output, loss, log_prob and predict,
and every parameter's gradient, against PyTorch with copied weights; the full distribution
normalises and its entries are the outputs without PyTorch; errors."""
import numpy as np
import pytest

import tracegrad as tg
from tracegrad import nn

from ._oracle import assert_close, copy_weights

RNG = np.random.default_rng(71)


def test_log_prob_normalises_and_matches_output():
    layer = nn.AdaptiveLogSoftmaxWithLoss(8, 20, [4, 10], div_value=2.0).double()
    x = tg.tensor(RNG.standard_normal((6, 8)))
    target = tg.tensor([0, 3, 5, 9, 12, 19])
    out, loss = layer(x, target)
    full = layer.log_prob(x).detach().numpy()
    np.testing.assert_allclose(np.exp(full).sum(1), 1.0, atol=1e-12)
    np.testing.assert_allclose(out.detach().numpy(), full[np.arange(6), target.numpy()], atol=1e-12)
    np.testing.assert_allclose(loss.item(), -out.detach().numpy().mean(), atol=1e-12)
    assert (layer.predict(x).numpy() == full.argmax(1)).all()


@pytest.mark.torch
@pytest.mark.parametrize("head_bias", [False, True])
def test_against_torch(head_bias):
    import torch
    theirs = torch.nn.AdaptiveLogSoftmaxWithLoss(8, 20, [4, 10], div_value=2.0, head_bias=head_bias).double()
    ours = nn.AdaptiveLogSoftmaxWithLoss(8, 20, [4, 10], div_value=2.0, head_bias=head_bias).double()
    assert repr(ours) == repr(theirs)
    copy_weights(theirs, ours)
    x = RNG.standard_normal((7, 8))
    target = np.array([0, 3, 5, 9, 12, 19, 4])
    t_out = theirs(torch.tensor(x), torch.tensor(target))
    o_out = ours(tg.tensor(x), tg.tensor(target))
    assert_close(o_out.output, t_out.output, 1e-12, 1e-12, "output")
    assert_close(o_out.loss, t_out.loss, 1e-12, 1e-12, "loss")
    t_out.loss.backward()
    o_out.loss.backward()
    t_params = dict(theirs.named_parameters())
    for name, p in ours.named_parameters():
        assert_close(p.grad, t_params[name].grad, 1e-12, 1e-12, name)
    assert_close(ours.log_prob(tg.tensor(x)), theirs.log_prob(torch.tensor(x)), 1e-12, 1e-12, "log_prob")
    assert (ours.predict(tg.tensor(x)).numpy() == theirs.predict(torch.tensor(x)).numpy()).all()
    single = ours(tg.tensor(x[0]), tg.tensor(target[0]))
    assert single.output.shape == ()


def test_errors():
    with pytest.raises(ValueError, match="cutoffs should be a sequence of unique, positive integers"):
        nn.AdaptiveLogSoftmaxWithLoss(8, 10, [4, 4])
    with pytest.raises(ValueError, match="cutoffs should be a sequence of length larger than 0"):
        nn.AdaptiveLogSoftmaxWithLoss(8, 10, [])
    layer = nn.AdaptiveLogSoftmaxWithLoss(8, 10, [4])
    with pytest.raises(RuntimeError, match=r"Target values should be in \[0, 9\], but values in range \[0, 12\]"):
        layer(tg.randn(2, 8), tg.tensor([0, 12]))
    with pytest.raises(RuntimeError, match="Input and target should have the same size in the batch dimension."):
        layer(tg.randn(3, 8), tg.tensor([0, 1]))
