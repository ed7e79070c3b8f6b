"""Convolutions within a bounded working memory: with :data:`WORKSPACE_BYTES` patched small,
the blocked kernels (over images and over groups) give the values and the gradients of
first and second order of the one-product path, for 1/2/3-d, strides, dilations, padding,
groups and transposed convolutions, and for the per-sample weights that ``vmap`` folds into
the groups; the blocks tile the work exactly; a big-batch convolution's peak allocation
(tracemalloc) stays far below its whole im2col matrix; and (marked ``torch``) the blocked
path matches PyTorch."""
import tracemalloc
import warnings

import numpy as np
import pytest

import tracegrad as tg
from tracegrad.func import functional_call, grad, vmap
from tracegrad.nn import functional as F
from tracegrad.rules import conv as conv_rules

RNG = np.random.default_rng(5)

# (nd, N, C, O, kernel, params, transposed)
CONFIGS = [
    (1, 5, 4, 6, (3,), {"stride": 2, "padding": 1, "dilation": 2, "groups": 2}, False),
    (2, 4, 6, 4, (3, 2), {"stride": (2, 1), "padding": (1, 0), "dilation": (1, 2), "groups": 2}, False),
    (2, 3, 3, 6, (3, 3), {"stride": 1, "padding": 1, "groups": 3}, False),
    (3, 3, 2, 4, (2, 3, 2), {"stride": (1, 2, 1), "padding": (1, 1, 0), "dilation": (2, 1, 1)}, False),
    (1, 4, 4, 6, (3,), {"stride": 2, "padding": 1, "output_padding": 1, "groups": 2}, True),
    (2, 3, 4, 6, (3, 2), {"stride": (2, 3), "padding": (1, 0), "dilation": (1, 2), "output_padding": (1, 2),
                          "groups": 2}, True),
    (2, 3, 6, 3, (3, 3), {"stride": 1, "padding": 1, "groups": 3}, True),
    (3, 2, 2, 4, (2, 2, 3), {"stride": (2, 1, 2), "padding": (0, 1, 1)}, True),
]
IDS = [f"{nd}d-{'T' if tr else 'conv'}-{i}" for i, (nd, *_, tr) in enumerate(CONFIGS)]

SPATIAL = {1: (9,), 2: (7, 6), 3: (5, 6, 4)}


def operands(nd, n, c, o, kernel, params, transposed):
    groups = params.get("groups", 1)
    wshape = (c, o // groups) + kernel if transposed else (o, c // groups) + kernel
    make = lambda *s: tg.tensor(RNG.standard_normal(s), dtype=tg.float64, requires_grad=True)
    return make(n, c, *SPATIAL[nd]), make(*wshape), make(o)


def call(nd, transposed, x, w, b, params):
    f = getattr(F, f"conv_transpose{nd}d" if transposed else f"conv{nd}d")
    return f(x, w, b, **params)


def values_and_grads(nd, transposed, x, w, b, params):
    """The output, its input / weight / bias gradients, and second-order gradients (the
    gradient of the gradients' squared norm: every rule of the backward runs again)."""
    y = call(nd, transposed, x, w, b, params)
    gy = tg.tensor(RNG.standard_normal(tuple(y.shape)), dtype=tg.float64)
    grads = tg.autograd.grad(y, (x, w, b), gy, create_graph=True)
    second = tg.autograd.grad(sum((g ** 2).sum() for g in grads), (x, w))
    return [y, *grads, *second], gy


@pytest.fixture
def count_blocks(monkeypatch):
    """Counts the one-product kernels' calls (more than one per kernel call: it blocked)."""
    calls = {"n": 0}
    for name in ("_correlate", "_correlate_weight", "_scatter"):
        inner = getattr(conv_rules, name)

        def counted(*args, _inner=inner, **kwargs):
            calls["n"] += 1
            return _inner(*args, **kwargs)
        monkeypatch.setattr(conv_rules, name, counted)
    return calls


def assert_same(got, want):
    for g, h in zip(got, want):
        assert tuple(g.shape) == tuple(h.shape)
        np.testing.assert_allclose(g.detach().numpy(), h.detach().numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("budget", [1, 600], ids=["one-image-one-group", "some-images"])
@pytest.mark.parametrize("config", CONFIGS, ids=IDS)
def test_blocked_equals_one_product(config, budget, monkeypatch, count_blocks):
    nd, *_, params, transposed = config
    x, w, b = operands(*config)
    state = RNG.bit_generator.state
    want, _ = values_and_grads(nd, transposed, x, w, b, params)
    unblocked_calls = count_blocks["n"]
    RNG.bit_generator.state = state
    monkeypatch.setattr(conv_rules, "WORKSPACE_BYTES", budget)
    got, _ = values_and_grads(nd, transposed, x, w, b, params)
    assert count_blocks["n"] > unblocked_calls  # the small budget did split the work
    assert_same(got, want)


def test_blocks_tile_every_image_and_group_once_within_budget(monkeypatch):
    monkeypatch.setattr(conv_rules, "WORKSPACE_BYTES", 1000)
    for n, groups, nbytes in [(50, 1, 30), (7, 4, 100), (5, 6, 300), (3, 4, 5000), (1, 9, 200)]:
        blocks = conv_rules._blocks(n, groups, nbytes)
        seen = np.zeros((n, groups), dtype=int)
        for images, g0, g1 in blocks:
            seen[images, g0:g1] += 1
            cells = len(range(n)[images]) * (g1 - g0)
            assert cells * nbytes <= 1000 or cells == 1
        assert (seen == 1).all(), (n, groups, nbytes)
    assert conv_rules._blocks(10, 2, 50) is None  # fits: the one-product path


def test_default_budget_is_256_mib():
    assert conv_rules.WORKSPACE_BYTES == 256 * 2 ** 20


def small_convnet():
    tg.manual_seed(0)
    return tg.nn.Sequential(tg.nn.Conv2d(2, 4, 3, padding=1, groups=2), tg.nn.Tanh(),
                            tg.nn.Conv2d(4, 3, 3, stride=2), tg.nn.Flatten(),
                            tg.nn.Linear(3 * 2 * 2, 2)).double()


def test_per_sample_weight_gradients_blocked(monkeypatch, count_blocks):
    """vmap(grad) folds the samples into the groups of one grouped correlation (each sample
    one image): only blocking over groups bounds its columns."""
    model = small_convnet()
    params = {k: v.detach() for k, v in model.named_parameters()}
    x = tg.tensor(RNG.standard_normal((6, 2, 6, 6)))

    def loss(p, xb):
        return (functional_call(model, p, (xb.unsqueeze(0),)) ** 2).sum()
    per_sample = vmap(grad(loss), in_dims=(None, 0))
    want = per_sample(params, x)
    before = count_blocks["n"]
    monkeypatch.setattr(conv_rules, "WORKSPACE_BYTES", 200)
    got = per_sample(params, x)
    assert count_blocks["n"] > 2 * before
    assert_same([got[k] for k in want], [want[k] for k in want])


@pytest.mark.parametrize("transposed", [False, True], ids=["conv", "transposed"])
def test_batched_weights_are_one_grouped_call_and_block(transposed, monkeypatch, count_blocks):
    """A batch of weights (an ensemble, or the per-sample weights ``vmap(grad)`` makes)
    joins the groups of ONE convolution -- transposed ones too, no per-sample loop (nor
    its warning) -- equal to a loop over the weights, and blocked over groups like any
    other call."""
    x = tg.tensor(RNG.standard_normal((3, 4, 7, 7)))
    ws = tg.tensor(RNG.standard_normal((5, 4, 3, 3, 3) if transposed else (5, 6, 2, 3, 3)))
    bs = tg.tensor(RNG.standard_normal((5, 6)))
    conv = F.conv_transpose2d if transposed else F.conv2d
    kw = {"stride": 2, "padding": 1, "output_padding": 1, "groups": 2} if transposed else {"padding": 1, "groups": 2}
    f = vmap(lambda w, b: conv(x, w, b, **kw))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        want = f(ws, bs)
    assert count_blocks["n"] == 1
    assert_same([want], [tg.stack([conv(x, w, b, **kw) for w, b in zip(ws, bs)])])
    monkeypatch.setattr(conv_rules, "WORKSPACE_BYTES", 300)
    assert_same([f(ws, bs)], [want])
    assert count_blocks["n"] > 1 + 5 + 10


def peak_bytes(fn):
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


# (input shape, weight shape, conv, params, the largest unblocked im2col-like matrix)
BIG = {
    "conv": ((1000, 4, 16, 16), (8, 4, 3, 3), F.conv2d, {"padding": 1},
             1000 * 8 * 9 * 256 * 4),    # the input gradient's columns (a stride-1 convT)
    "convT-stride-2": ((2000, 4, 8, 8), (4, 8, 4, 4), F.conv_transpose2d, {"stride": 2, "padding": 1},
                       2000 * 8 * 16 * 64 * 4),   # the forward's products before the fold
}


@pytest.mark.parametrize("case", BIG, ids=list(BIG))
def test_big_batch_peak_memory_is_bounded(case, monkeypatch):
    """Forward and backward of a float32 conv over thousands of images: the whole batch's
    im2col matrix is never built; the peak (tracemalloc) stays near the tensors themselves
    (input, output, incoming gradient, input gradient) plus a few budgets."""
    budget = 2 ** 20
    monkeypatch.setattr(conv_rules, "WORKSPACE_BYTES", budget)
    xshape, wshape, conv, params, columns = BIG[case]
    x = tg.randn(*xshape, requires_grad=True)
    w = tg.randn(*wshape, requires_grad=True)
    sizes = {}

    def forward_backward():
        y = conv(x, w, **params)
        y.backward(tg.ones_like(y))
        sizes["tensors"] = 2 * (x.numel() + y.numel()) * 4

    peak = peak_bytes(forward_backward)
    assert peak < sizes["tensors"] + 8 * budget < columns, (peak, sizes, columns)
    assert x.grad is not None and w.grad is not None


@pytest.mark.torch
@pytest.mark.parametrize("config", CONFIGS, ids=IDS)
def test_blocked_matches_torch(config, monkeypatch):
    torch = pytest.importorskip("torch")
    nd, *_, params, transposed = config
    x, w, b = operands(*config)
    monkeypatch.setattr(conv_rules, "WORKSPACE_BYTES", 1)
    y = call(nd, transposed, x, w, b, params)
    gy = RNG.standard_normal(tuple(y.shape))
    got = [y, *tg.autograd.grad(y, (x, w, b), tg.tensor(gy, dtype=tg.float64))]
    tx, tw, tb = (torch.tensor(a.detach().numpy(), requires_grad=True) for a in (x, w, b))
    f = getattr(torch.nn.functional, f"conv_transpose{nd}d" if transposed else f"conv{nd}d")
    ty = f(tx, tw, tb, **params)
    want = [ty, *torch.autograd.grad(ty, (tx, tw, tb), torch.tensor(gy))]
    for g, h in zip(got, want):
        np.testing.assert_allclose(g.detach().numpy(), h.detach().numpy(), rtol=1e-10, atol=1e-10)
