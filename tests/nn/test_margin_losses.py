"""The margin, embedding and likelihood losses: values and input gradients against PyTorch
(float64, every reduction, the options), hand formulas and gradcheck without PyTorch,
errors by type and message, the layers' defaults and reprs."""
import math

import numpy as np
import pytest

import tracegrad as tg
from tracegrad import nn
from tracegrad.autograd import gradcheck
from tracegrad.nn import functional as F

from ._oracle import assert_close

RNG = np.random.default_rng(41)
REDUCTIONS = ["mean", "sum", "none"]


def randn(*shape):
    return RNG.standard_normal(shape)


def signs(*shape):
    return np.where(RNG.random(shape) < 0.5, -1.0, 1.0)


def _both(fn_name, floats, others=(), **kw):
    """``F.<fn_name>(*floats, *others, **kw)`` in both libraries: values and the gradient of every
    float argument (``others`` are passed as they are, converted per library)."""
    import torch
    ts = [torch.tensor(a, requires_grad=True) for a in floats]
    os_ = [tg.tensor(a, requires_grad=True) for a in floats]
    expected = getattr(torch.nn.functional, fn_name)(*ts, *[torch.tensor(o) for o in others], **kw)
    got = getattr(F, fn_name)(*os_, *[tg.tensor(o) for o in others], **kw)
    assert_close(got, expected, 1e-10, 1e-10, f"{fn_name} values")
    g = randn(*expected.shape)
    expected.backward(torch.tensor(g))
    got.backward(tg.tensor(g))
    for k, (o, t) in enumerate(zip(os_, ts)):
        if t.grad is not None:
            assert_close(o.grad, t.grad, 1e-9, 1e-9, f"{fn_name} grad {k}")


@pytest.mark.torch
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_pairwise_losses_against_torch(reduction):
    _both("margin_ranking_loss", [randn(6), randn(6)], [signs(6)], margin=0.3, reduction=reduction)
    _both("hinge_embedding_loss", [randn(3, 4)], [signs(3, 4)], margin=0.7, reduction=reduction)
    _both("soft_margin_loss", [randn(3, 4)], [signs(3, 4)], reduction=reduction)
    _both("multilabel_soft_margin_loss", [randn(3, 5)], [(RNG.random((3, 5)) < 0.4) * 1.0], reduction=reduction)
    _both("multilabel_soft_margin_loss", [randn(3, 5)], [RNG.random((3, 5))], reduction=reduction)  # soft labels


@pytest.mark.torch
def test_multilabel_soft_margin_with_weight_against_torch():
    import torch
    x, y, w = randn(4, 3), (RNG.random((4, 3)) < 0.5) * 1.0, RNG.random(3)
    ours = F.multilabel_soft_margin_loss(tg.tensor(x), tg.tensor(y), weight=tg.tensor(w))
    theirs = torch.nn.functional.multilabel_soft_margin_loss(torch.tensor(x), torch.tensor(y), weight=torch.tensor(w))
    assert_close(ours, theirs, 1e-12, 1e-12)


@pytest.mark.torch
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("p,margin,weighted", [(1, 1.0, False), (2, 0.5, False), (1, 2.0, True), (2, 1.0, True)])
def test_multi_margin_loss_against_torch(reduction, p, margin, weighted):
    import torch
    weight = RNG.random(5) if weighted else None
    x, y = randn(4, 5), RNG.integers(0, 5, 4)
    kw = dict(p=p, margin=margin, reduction=reduction)
    ts, os_ = torch.tensor(x, requires_grad=True), tg.tensor(x, requires_grad=True)
    expected = torch.nn.functional.multi_margin_loss(ts, torch.tensor(y), weight=None if weight is None else
                                                     torch.tensor(weight), **kw)
    got = F.multi_margin_loss(os_, tg.tensor(y), weight=None if weight is None else tg.tensor(weight), **kw)
    assert_close(got, expected, 1e-12, 1e-12)
    expected.sum().backward()
    got.sum().backward()
    assert_close(os_.grad, ts.grad, 1e-12, 1e-12)
    _both("multi_margin_loss", [randn(5)], [np.array(2)], reduction=reduction)  # one sample, unbatched


@pytest.mark.torch
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_multilabel_margin_loss_against_torch(reduction):
    y = np.array([[3, 0, -1, 1], [1, 2, 3, 0], [2, 2, -1, -1], [-1, 1, 0, 0]])
    _both("multilabel_margin_loss", [randn(4, 4)], [y], reduction=reduction)
    _both("multilabel_margin_loss", [randn(4)], [np.array([1, 3, -1, 0])], reduction=reduction)


@pytest.mark.torch
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_cosine_embedding_loss_against_torch(reduction):
    _both("cosine_embedding_loss", [randn(5, 3), randn(5, 3)], [signs(5)], margin=0.2, reduction=reduction)
    _both("cosine_embedding_loss", [randn(4), randn(4)], [np.array(-1.0)], margin=-0.5, reduction=reduction)


@pytest.mark.torch
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("p,swap", [(2, False), (1, True), (3.0, False)])
def test_triplet_losses_against_torch(reduction, p, swap):
    a, pos, neg = randn(5, 4), randn(5, 4), randn(5, 4)
    _both("triplet_margin_loss", [a, pos, neg], margin=1.5, p=p, swap=swap, reduction=reduction)
    _both("triplet_margin_with_distance_loss", [a, pos, neg], margin=0.8, swap=swap, reduction=reduction)

    import torch

    def cosine_distance(u, v, lib):
        return 1 - lib.nn.functional.cosine_similarity(u, v)

    t = [torch.tensor(v, requires_grad=True) for v in (a, pos, neg)]
    o = [tg.tensor(v, requires_grad=True) for v in (a, pos, neg)]
    theirs = torch.nn.TripletMarginWithDistanceLoss(distance_function=lambda u, v: cosine_distance(u, v, torch),
                                                   swap=swap, reduction=reduction)(*t)
    ours = nn.TripletMarginWithDistanceLoss(distance_function=lambda u, v: cosine_distance(u, v, tg), swap=swap,
                                            reduction=reduction)(*o)
    assert_close(ours, theirs, 1e-12, 1e-12)
    theirs.sum().backward()
    ours.sum().backward()
    for x, y in zip(o, t):
        assert_close(x.grad, y.grad, 1e-10, 1e-10)


@pytest.mark.torch
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("log_input,full", [(True, False), (False, False), (True, True), (False, True)])
def test_poisson_nll_loss_against_torch(reduction, log_input, full):
    x = randn(3, 4) if log_input else RNG.random((3, 4)) + 0.1
    target = RNG.poisson(2.0, (3, 4)).astype(np.float64)
    _both("poisson_nll_loss", [x], [target], log_input=log_input, full=full, reduction=reduction)


@pytest.mark.torch
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("var_shape", [(4, 3), (4,), (4, 1), (1, 3)])
def test_gaussian_nll_loss_against_torch(reduction, var_shape):
    var = RNG.random(var_shape) + 0.05
    var.reshape(-1)[0] = 1e-9  # below eps: clamped in value, the gradient passing straight through
    _both("gaussian_nll_loss", [randn(4, 3), randn(4, 3), var], full=True, reduction=reduction)
    _both("gaussian_nll_loss", [randn(4, 3), randn(4, 3), var], reduction=reduction, eps=1e-3)


def test_losses_by_hand():
    x, y = randn(3, 4), signs(3, 4)
    np.testing.assert_allclose(F.soft_margin_loss(tg.tensor(x), tg.tensor(y)).item(),
                               np.log1p(np.exp(-x * y)).mean(), rtol=1e-12)
    hinge = np.where(y == 1, x, np.maximum(0, 0.5 - x)).mean()
    np.testing.assert_allclose(F.hinge_embedding_loss(tg.tensor(x), tg.tensor(y), 0.5).item(), hinge, rtol=1e-12)
    s = randn(4, 3)
    target = np.array([0, 2, 1, 1])
    margins = np.maximum(0, 1 - s[np.arange(4), target][:, None] + s)
    margins[np.arange(4), target] = 0
    np.testing.assert_allclose(F.multi_margin_loss(tg.tensor(s), tg.tensor(target)).item(),
                               (margins.sum(1) / 3).mean(), rtol=1e-12)
    # multilabel: targets {3, 0} for the row; others {1, 2}
    row = randn(4)
    want = sum(max(0, 1 - (row[j] - row[k])) for j in (3, 0) for k in (1, 2)) / 4
    got = F.multilabel_margin_loss(tg.tensor(row), tg.tensor([3, 0, -1, 1]))
    np.testing.assert_allclose(got.item(), want, rtol=1e-12)
    mu, t, var = randn(5), randn(5), RNG.random(5) + 0.5
    want = (0.5 * (np.log(var) + (mu - t) ** 2 / var) + 0.5 * math.log(2 * math.pi)).mean()
    np.testing.assert_allclose(F.gaussian_nll_loss(tg.tensor(mu), tg.tensor(t), tg.tensor(var), full=True).item(),
                               want, rtol=1e-12)


@pytest.mark.parametrize("fn,args", [
    ("margin_ranking_loss", lambda: (randn(5), randn(5), tg.tensor(signs(5)))),
    ("cosine_embedding_loss", lambda: (randn(4, 3), randn(4, 3), tg.tensor(signs(4)))),
    ("triplet_margin_loss", lambda: (randn(3, 4), randn(3, 4), randn(3, 4))),
    ("multi_margin_loss", lambda: (randn(3, 4), tg.tensor([0, 3, 1]))),
    ("multilabel_margin_loss", lambda: (randn(2, 4), tg.tensor([[1, 2, -1, 0], [0, -1, 1, 1]]))),
    ("gaussian_nll_loss", lambda: (randn(3, 2), randn(3, 2), RNG.random((3, 2)) + 0.1)),
])
def test_losses_gradcheck(fn, args):
    values = args()
    floats = [tg.tensor(v, requires_grad=True) for v in values if isinstance(v, np.ndarray)]
    rest = [v for v in values if not isinstance(v, np.ndarray)]
    assert gradcheck(lambda *a: getattr(F, fn)(*a, *rest), tuple(floats))


@pytest.mark.parametrize("call,error,message", [
    (lambda: F.multi_margin_loss(tg.randn(3, 4), tg.tensor([0, 5, 1])), RuntimeError, "target out of range"),
    (lambda: F.multi_margin_loss(tg.randn(3, 4), tg.tensor([0, 1])), RuntimeError,
     "Expected target size [3], but got [2]. Input has shape [3, 4]."),
    (lambda: F.multi_margin_loss(tg.randn(3, 4), tg.tensor([0, 1, 2]), p=3), ValueError, "only p == 1 and p == 2"),
    (lambda: F.multi_margin_loss(tg.randn(2, 3, 4), tg.tensor([0, 1])), RuntimeError,
     "Expected non-empty vector or matrix with optional 0-dim batch size, but got: [2, 3, 4]"),
    (lambda: F.multilabel_margin_loss(tg.randn(3, 4), tg.tensor([0, 1, 2])), RuntimeError,
     "inconsistent target size: [3] for input of size: [3, 4]"),
    (lambda: F.multilabel_margin_loss(tg.randn(1, 4), tg.tensor([[0, 7, -1, 0]])), RuntimeError,
     "argument #2 'target' is out of range"),
    (lambda: F.cosine_embedding_loss(tg.randn(3, 4), tg.randn(3, 4), tg.ones(3, 1)), RuntimeError,
     "0D or 1D target tensor expected, multi-target not supported"),
    (lambda: F.cosine_embedding_loss(tg.randn(3, 4), tg.randn(3, 4), tg.tensor(1.0)), RuntimeError,
     "0D target tensor expects 1D input tensors, but found inputs with sizes [3, 4] and [3, 4]."),
    (lambda: F.margin_ranking_loss(tg.randn(3, 4), tg.randn(3, 4), tg.ones(3)), RuntimeError,
     "margin_ranking_loss : All input tensors should have same dimension"),
    (lambda: F.triplet_margin_loss(tg.randn(3, 4), tg.randn(3, 4), tg.randn(4)), RuntimeError,
     "but got: anchor 2D, positive 2D, and negative 1D inputs"),
    (lambda: F.triplet_margin_loss(tg.randn(3, 4), tg.randn(3, 4), tg.randn(3, 4), margin=0), ValueError,
     "margin must be greater than 0, got 0"),
    (lambda: F.gaussian_nll_loss(tg.randn(3, 4), tg.randn(3, 4), tg.ones(2)), ValueError, "var is of incorrect size"),
    (lambda: F.gaussian_nll_loss(tg.randn(3, 4), tg.randn(3, 4), -1.0), ValueError, "var has negative entry"),
    (lambda: F.hinge_embedding_loss(tg.randn(3), tg.ones(3), reduction="foo"), ValueError,
     "foo is not a valid value for reduction"),
    (lambda: F.poisson_nll_loss(tg.randn(3), tg.ones(3), reduction="foo"), ValueError,
     "foo is not a valid value for reduction"),
    (lambda: nn.MultiMarginLoss(weight=tg.ones(2, 2)), ValueError,
     "MultiMarginLoss: expected weight to be None or 1D tensor, got 2D instead"),
    (lambda: nn.TripletMarginLoss(margin=0), ValueError,
     "TripletMarginLoss: expected margin to be greater than 0, got 0 instead"),
])
def test_loss_errors(call, error, message):
    with pytest.raises(error) as info:
        call()
    assert message in str(info.value)


LAYERS = ["MarginRankingLoss(0.5)", "HingeEmbeddingLoss(2.0, reduction='sum')", "SoftMarginLoss()",
          "MultiLabelSoftMarginLoss()", "MultiMarginLoss(2, 0.5)", "MultiLabelMarginLoss()",
          "CosineEmbeddingLoss(0.1)", "TripletMarginLoss(2.0, 1.0, swap=True)", "TripletMarginWithDistanceLoss()",
          "PoissonNLLLoss(False, True, eps=1e-6)", "GaussianNLLLoss(full=True, eps=1e-3)"]


@pytest.mark.torch
@pytest.mark.parametrize("spec", LAYERS)
def test_loss_layers_match_torch(spec):
    import torch  # noqa: F401 -- used by eval
    ours, theirs = eval("nn." + spec), eval("torch.nn." + spec)
    assert repr(ours) == repr(theirs)
    for name in ("reduction", "margin", "p", "eps", "swap", "log_input", "full"):
        assert getattr(ours, name, None) == getattr(theirs, name, None), name
