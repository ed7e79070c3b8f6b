"""cross_entropy, embedding, layer_norm and scaled_dot_product_attention when they record
nothing (no_grad, nanoGPT's evaluation): their one-kernel forms must give the composed /
recorded values (attention and layer norm bit for bit: the same rule kernel), take the
general forms where a shortcut would lose precision (values spanning more than
SHIFT_SPAN, squares overflowing), and raise the general path's errors."""
import warnings

import numpy as np
import pytest

import tracegrad as tg
import tracegrad.nn.functional as F
from tracegrad.backend import cpu
from tracegrad.rules import attention as attention_rules
from tracegrad.rules import loss as loss_rules
from tracegrad.rules.scratch import constant_vector

rng = np.random.default_rng(11)


def _logits(n=24, c=7, dtype=np.float32, spread=1.0):
    return (rng.standard_normal((n, c)) * spread).astype(dtype)


def _reference_loss(x, t, ignore_index=-100, reduction="mean"):
    """Cross entropy by the per-row formula, in float64."""
    x = x.astype(np.float64)
    m = x.max(axis=1, keepdims=True)
    lse = (m + np.log(np.exp(x - m).sum(axis=1, keepdims=True)))[:, 0]
    keep = t != ignore_index
    rows = np.nonzero(keep)[0]
    losses = lse[rows] - x[rows, t[rows]]
    return losses.sum() / (len(rows) if reduction == "mean" else 1)


def _nograd_and_recorded(fn, *args, **kw):
    with tg.no_grad():
        plain = fn(*args, **kw)
    return plain, fn(*[a.detach().requires_grad_() if isinstance(a, tg.Tensor) and a.is_floating_point() else a
                       for a in args], **kw)


# -- cross entropy -------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("reduction", ["mean", "sum"])
@pytest.mark.parametrize("spread", [1.0, 40.0])  # within SHIFT_SPAN, and beyond it (the composed rules)
def test_cross_entropy_without_a_graph_matches_the_formula_and_the_recorded_loss(dtype, reduction, spread):
    x = _logits(dtype=dtype, spread=spread)
    t = rng.integers(0, 7, 24)
    t[3] = -1
    plain, recorded = _nograd_and_recorded(F.cross_entropy, tg.tensor(x), tg.tensor(t), ignore_index=-1,
                                           reduction=reduction)
    assert plain.grad_fn is None and recorded.grad_fn.name() == "NllLossBackward0"
    assert recorded.grad_fn.next_functions[0][0].name() == "LogSoftmaxBackward0"
    assert plain.dtype == recorded.dtype and plain.shape == ()
    tol = 2e-6 if dtype == np.float32 else 1e-13
    np.testing.assert_allclose(plain.item(), _reference_loss(x, t, -1, reduction), rtol=tol)
    np.testing.assert_allclose(plain.item(), recorded.item(), rtol=tol)


def test_cross_entropy_kernel_declines_what_it_cannot_shift():
    x = _logits()
    t = rng.integers(0, 7, 24)
    assert loss_rules.cross_entropy_value(cpu, x, t, -100, "mean") is not None
    far = x.copy()
    far[0] += 100  # (a row far above the others)
    assert loss_rules.cross_entropy_value(cpu, far, t, -100, "mean") is None
    for bad in (np.inf, -np.inf, np.nan):
        y = x.copy()
        y[1, 2] = bad
        assert loss_rules.cross_entropy_value(cpu, y, t, -100, "mean") is None


def test_cross_entropy_far_rows_and_non_finite_logits_without_a_graph():
    x = _logits()
    x[0] += 1000.0
    t = rng.integers(0, 7, 24)
    with tg.no_grad():
        got = F.cross_entropy(tg.tensor(x), tg.tensor(t)).item()
    np.testing.assert_allclose(got, _reference_loss(x, t), rtol=2e-6)
    x[2, 1] = np.inf
    with tg.no_grad():
        assert np.isnan(F.cross_entropy(tg.tensor(x), tg.tensor(t)).item())


def test_cross_entropy_all_ignored_is_nan_without_a_warning():
    t = tg.tensor(np.full(24, -1))
    for x in (tg.tensor(_logits()), tg.tensor(_logits(spread=40.0))):  # (the kernel, the composed rules)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            with tg.no_grad():
                assert np.isnan(F.cross_entropy(x, t, ignore_index=-1).item())
                assert F.cross_entropy(x, t, ignore_index=-1, reduction="sum").item() == 0.0
            assert np.isnan(F.cross_entropy(x.requires_grad_(), t, ignore_index=-1).item())


@pytest.mark.parametrize("grad", [False, True])
def test_cross_entropy_target_errors(grad):
    x = tg.tensor(_logits(), requires_grad=grad)
    with tg.set_grad_enabled(grad):
        for bad in (7, -1):
            t = rng.integers(0, 7, 24)
            t[5] = bad
            with pytest.raises(IndexError, match=f"^Target {bad} is out of bounds.$"):
                F.cross_entropy(x, tg.tensor(t))
        with pytest.raises(ValueError, match=r"Expected input batch_size \(24\) to match target batch_size \(23\)"):
            F.cross_entropy(x, tg.tensor(rng.integers(0, 7, 23)))


def test_nll_targets_as_bytes_and_ignored_negatives_take_the_full_check():
    x = _logits()
    t = rng.integers(0, 7, 24)
    logp = tg.tensor(x).log_softmax(1)
    want = F.nll_loss(logp, tg.tensor(t)).item()
    assert F.nll_loss(logp, tg.tensor(t.astype(np.uint8))).item() == want
    t[4] = -100
    np.testing.assert_allclose(F.nll_loss(logp, tg.tensor(t)).item(), _reference_loss(x, t), rtol=2e-6)


@pytest.mark.torch
@pytest.mark.parametrize("spread", [1.0, 40.0])
def test_cross_entropy_without_a_graph_matches_torch(spread):
    import torch
    x = _logits(n=256, c=13, spread=spread)
    t = rng.integers(0, 13, 256)
    t[:4] = -1
    for kw in ({"ignore_index": -1}, {"ignore_index": -1, "reduction": "sum"}):
        with tg.no_grad():
            got = F.cross_entropy(tg.tensor(x), tg.tensor(t), **kw).item()
        want = torch.nn.functional.cross_entropy(torch.tensor(x), torch.tensor(t), **kw).item()
        np.testing.assert_allclose(got, want, rtol=2e-6)


# -- attention -----------------------------------------------------------------------------------

def _qkv(scale=1.0, dtype=np.float32):
    lin = (rng.standard_normal((2, 6, 3 * 8)) * scale).astype(dtype)
    x = tg.tensor(lin)
    return [a.view(2, 6, 2, 4).transpose(1, 2) for a in x.split(8, dim=2)]


@pytest.mark.parametrize("scale", [1.0, 8.0])  # scores spanning less, and more, than SHIFT_SPAN
@pytest.mark.parametrize("causal", [False, True])
def test_attention_without_a_graph_equals_the_recorded_output_bit_for_bit(scale, causal):
    q, k, v = _qkv(scale)
    with tg.no_grad():
        plain = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    recorded = F.scaled_dot_product_attention(*(t.detach().requires_grad_() for t in (q, k, v)), is_causal=causal)
    assert plain.grad_fn is None and recorded.grad_fn is not None
    np.testing.assert_array_equal(plain.numpy(), recorded.detach().numpy())
    # ... and the softmax by hand, per query, in float64
    qa, ka, va = (t.numpy().astype(np.float64) for t in (q, k, v))
    s = qa @ ka.swapaxes(-1, -2) / 2.0
    if causal:
        s = np.where(np.triu(np.ones((6, 6), bool), 1), -np.inf, s)
    p = np.exp(s - s.max(-1, keepdims=True))
    np.testing.assert_allclose(plain.numpy(), (p / p.sum(-1, keepdims=True)) @ va, rtol=1e-5, atol=2e-6 * scale ** 2)


def test_attention_softmax_shifts_by_the_overall_maximum_only_within_the_span():
    st = rng.standard_normal((2, 5, 5)).astype(np.float32)
    assert attention_rules._shifted_softmax_over_keys_(cpu, st.copy(), None) is not None
    wide = st.copy()
    wide[0, 0, 0] = 20.0
    kept = wide.copy()
    assert attention_rules._shifted_softmax_over_keys_(cpu, wide, None) is None
    np.testing.assert_array_equal(wide, kept)  # (declined: the scores untouched)
    wide[0, 0, 0] = np.nan
    assert attention_rules._shifted_softmax_over_keys_(cpu, wide, None) is None


def test_attention_errors_without_a_graph_are_the_general_paths():
    q = tg.randn(2, 3, 4)
    with tg.no_grad():
        with pytest.raises(RuntimeError, match="Expected size for first two dimensions of batch2 tensor"):
            F.scaled_dot_product_attention(q, tg.randn(2, 3, 5), tg.randn(2, 3, 4))
        with pytest.raises(RuntimeError, match="Expected query, key, and value to have the same dtype"):
            F.scaled_dot_product_attention(q, q.double(), q)


@pytest.mark.torch
@pytest.mark.parametrize("scale", [1.0, 8.0])
def test_attention_without_a_graph_matches_torch(scale):
    import torch
    q, k, v = _qkv(scale)
    with tg.no_grad():
        got = F.scaled_dot_product_attention(q, k, v, is_causal=True).numpy()
    want = torch.nn.functional.scaled_dot_product_attention(
        *(torch.tensor(t.numpy()) for t in (q, k, v)), is_causal=True).numpy()
    np.testing.assert_allclose(got, want, rtol=1.3e-6, atol=1e-5)


# -- embedding -----------------------------------------------------------------------------------

@pytest.mark.parametrize("index_dtype", [np.int64, np.int32])
def test_embedding_without_a_graph_takes_the_rows(index_dtype):
    w = tg.nn.Parameter(tg.randn(5, 3))
    idx = rng.integers(0, 5, (2, 4)).astype(index_dtype)
    with tg.no_grad():
        out = F.embedding(tg.tensor(idx), w)
    assert out.grad_fn is None and not out.requires_grad and out.shape == (2, 4, 3)
    np.testing.assert_array_equal(out.numpy(), w.detach().numpy()[idx])
    assert F.embedding(tg.tensor(idx), w).grad_fn.name() == "EmbeddingBackward0"


def test_embedding_errors_without_a_graph():
    w = tg.randn(5, 3)
    with tg.no_grad():
        for bad in (-1, 5):
            with pytest.raises(IndexError, match="^index out of range in self$"):
                F.embedding(tg.tensor([[0, bad]]), w)
        with pytest.raises(AssertionError, match="Padding_idx must be within num_embeddings"):
            F.embedding(tg.tensor([0]), w, padding_idx=5)
        with pytest.raises(RuntimeError, match="Expected tensor for argument #1 'indices'"):
            F.embedding(tg.tensor([0.0]), w)


# -- layer norm ----------------------------------------------------------------------------------

def test_layer_norm_without_a_graph_falls_back_where_squares_overflow():
    x = np.array([[3e19, -3e19, 1e19, 0.0], [1.0, 2.0, 3.0, 4.0]], np.float32)
    w = tg.tensor(np.float32([1, 2, 3, 4]))
    with tg.no_grad():
        plain = F.layer_norm(tg.tensor(x), (4,), w)
    recorded = F.layer_norm(tg.tensor(x, requires_grad=True), (4,), w)
    np.testing.assert_array_equal(plain.numpy(), recorded.detach().numpy())
    xd = x.astype(np.float64)
    xhat = (xd - xd.mean(1, keepdims=True)) / np.sqrt(xd.var(1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(plain.numpy(), xhat * np.float64([1, 2, 3, 4]), rtol=1e-5)


def test_layer_norm_errors_without_a_graph():
    x = tg.randn(2, 3, 4)
    with tg.no_grad():
        with pytest.raises(RuntimeError, match=r"Given normalized_shape=\[3\], expected input with shape \[\*, 3\]"):
            F.layer_norm(x, (3,))
        with pytest.raises(RuntimeError, match="Expected weight to be of same shape as normalized_shape"):
            F.layer_norm(x, (4,), tg.ones(3))
        with pytest.raises(RuntimeError, match="mixed dtype"):
            F.layer_norm(x, (4,), tg.ones(4, dtype=tg.float64))
        with pytest.raises(TypeError, match="must be tuple of ints, not int"):
            F.layer_norm(x, 4)
        assert F.layer_norm(x, x.shape[1:]).shape == (2, 3, 4)  # (a torch.Size as normalized_shape)


def test_constant_vectors_are_shared_and_read_only():
    v = constant_vector(cpu, 3, np.dtype(np.float32), 0.5)
    assert v is constant_vector(cpu, 3, np.dtype(np.float32), 0.5)
    np.testing.assert_array_equal(v, [0.5, 0.5, 0.5])
    with pytest.raises(ValueError):
        v[0] = 1
