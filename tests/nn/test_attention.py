"""F.scaled_dot_product_attention, nn.MultiheadAttention and F.multi_head_attention_forward:
against softmax(QK^T/sqrt(d))V written in NumPy, by gradcheck, by dropout statistics and
through the staged paths; errors by type and message; and (marked ``torch``) outputs,
attention weights and every gradient against PyTorch with copied weights, in float64."""
import math
import warnings

import numpy as np
import pytest

import tracegrad as tg
from tracegrad import nn
from tracegrad.nn import functional as F

from ._oracle import assert_close, copy_weights

RNG = np.random.default_rng(7)
pytestmark = pytest.mark.filterwarnings("ignore:Support for mismatched:UserWarning")


def randn(*shape):
    return RNG.standard_normal(shape)


def reference(q, k, v, mask=None, causal=False, scale=None):
    """softmax(q k^T * scale + mask) v in NumPy; a bool mask keeps the True positions;
    rows with every key masked give zeros (PyTorch's safe softmax)."""
    scale = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    s = q @ np.swapaxes(k, -1, -2) * scale
    L, S = s.shape[-2:]
    if causal:
        s = np.where(np.tril(np.ones((L, S), bool)), s, -np.inf)
    if mask is not None:
        s = np.where(mask, s, -np.inf) if mask.dtype == bool else s + mask
    m = s.max(-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0)
    e = np.exp(s - m)
    z = e.sum(-1, keepdims=True)
    return (e / np.where(z == 0, 1, z)) @ v


def sdpa(q, k, v, **kw):
    kw = {key: tg.tensor(val) if isinstance(val, np.ndarray) else val for key, val in kw.items()}
    return F.scaled_dot_product_attention(tg.tensor(q), tg.tensor(k), tg.tensor(v), **kw).numpy()


# -- scaled_dot_product_attention without torch -----------------------------------------------------

@pytest.mark.parametrize("L,S", [(4, 4), (3, 6), (6, 3)])
def test_sdpa_matches_numpy(L, S):
    q, k, v = randn(2, 3, L, 5), randn(2, 3, S, 5), randn(2, 3, S, 4)
    np.testing.assert_allclose(sdpa(q, k, v), reference(q, k, v), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(sdpa(q, k, v, scale=0.3), reference(q, k, v, scale=0.3), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("L,S", [(4, 4), (3, 6), (6, 3)])
def test_causal_is_aligned_top_left(L, S):
    q, k, v = randn(2, L, 3), randn(2, S, 3), randn(2, S, 2)
    out = sdpa(q, k, v, is_causal=True)
    np.testing.assert_allclose(out, reference(q, k, v, causal=True), rtol=1e-12, atol=1e-12)
    # query 0 sees key 0 only, whatever L and S are
    np.testing.assert_allclose(out[:, 0], v[:, 0], rtol=1e-12)


def test_bool_mask_keeps_true_positions_and_float_mask_is_added():
    q, k, v = randn(2, 4, 3), randn(2, 5, 3), randn(2, 5, 2)
    keep = RNG.random((4, 5)) < 0.6
    keep[:, 0] = True
    np.testing.assert_allclose(sdpa(q, k, v, attn_mask=keep), reference(q, k, v, keep), rtol=1e-12, atol=1e-12)
    add = randn(2, 4, 5)
    np.testing.assert_allclose(sdpa(q, k, v, attn_mask=add), reference(q, k, v, add), rtol=1e-12, atol=1e-12)


def test_a_float32_mask_is_added_to_float64_scores():
    """PyTorch takes a float32 mask for any query dtype (bool, float or the query's dtype):
    it is added in the query's dtype, and its gradient comes back in float32."""
    q, k, v = randn(2, 4, 3), randn(2, 5, 3), randn(2, 5, 2)
    add = randn(4, 5).astype(np.float32)
    mask = tg.tensor(add, requires_grad=True)
    out = F.scaled_dot_product_attention(tg.tensor(q), tg.tensor(k), tg.tensor(v), attn_mask=mask)
    assert out.dtype == tg.float64
    np.testing.assert_allclose(out.detach().numpy(), reference(q, k, v, add.astype(np.float64)), rtol=1e-12)
    out.sum().backward()
    assert mask.grad.dtype == tg.float32 and mask.grad.shape == (4, 5)
    with pytest.raises(RuntimeError, match="attn_mask.dtype: c10::Half and  query.dtype: double"):
        F.scaled_dot_product_attention(tg.tensor(q), tg.tensor(k), tg.tensor(v), attn_mask=mask.detach().half())


@pytest.mark.torch
def test_a_float32_mask_with_float64_query_matches_torch():
    import torch
    q, k, v, add = randn(2, 4, 3), randn(2, 5, 3), randn(2, 5, 2), randn(4, 5).astype(np.float32)
    results = []
    for lib in (torch, tg):
        mask = lib.tensor(add, requires_grad=True)
        out = lib.nn.functional.scaled_dot_product_attention(lib.tensor(q), lib.tensor(k), lib.tensor(v),
                                                             attn_mask=mask)
        (out * out).sum().backward()
        results.append((out.detach().numpy(), mask.grad.numpy()))
    for theirs, ours in zip(*results):
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6)


def test_fully_masked_rows_give_zeros_and_zero_gradients():
    q, k, v = (tg.tensor(randn(*s), requires_grad=True) for s in ((3, 2), (4, 2), (4, 2)))
    keep = np.ones((3, 4), bool)
    keep[1] = False
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=tg.tensor(keep))
    assert np.all(out.detach().numpy()[1] == 0) and np.isfinite(out.detach().numpy()).all()
    out.sum().backward()
    assert np.all(q.grad.numpy()[1] == 0) and np.isfinite(k.grad.numpy()).all()
    neg_inf = np.where(keep, 0.0, -np.inf)
    out2 = sdpa(q.detach().numpy(), k.detach().numpy(), v.detach().numpy(), attn_mask=neg_inf)
    np.testing.assert_allclose(out2, out.detach().numpy(), rtol=1e-12)


def test_gqa_repeats_each_key_value_head_for_a_group_of_query_heads():
    q, k, v = randn(2, 6, 3, 4), randn(2, 2, 5, 4), randn(2, 2, 5, 3)
    out = sdpa(q, k, v, enable_gqa=True)
    expected = reference(q, np.repeat(k, 3, axis=1), np.repeat(v, 3, axis=1))
    np.testing.assert_allclose(out, expected, rtol=1e-12, atol=1e-12)


def test_unbatched_and_broadcast_batch():
    q, k, v = randn(3, 4), randn(5, 4), randn(5, 2)
    np.testing.assert_allclose(sdpa(q, k, v), reference(q, k, v), rtol=1e-12)
    q3 = randn(2, 3, 4)
    np.testing.assert_allclose(sdpa(q3, k, v), reference(q3, k, v), rtol=1e-12)


@pytest.mark.parametrize("kw", [{}, {"is_causal": True}, {"mask": "bool"}, {"mask": "float"}, {"scale": 0.7}])
def test_sdpa_gradcheck(kw):
    kw = dict(kw)
    mask = kw.pop("mask", None)
    if mask == "bool":
        kw["attn_mask"] = tg.tensor(np.tril(np.ones((3, 4), bool)))
    inputs = [tg.tensor(randn(*s), requires_grad=True) for s in ((2, 3, 2), (2, 4, 2), (2, 4, 3))]
    if mask == "float":
        inputs.append(tg.tensor(randn(3, 4), requires_grad=True))

        def f(q, k, v, m):
            return F.scaled_dot_product_attention(q, k, v, attn_mask=m)
    else:
        def f(q, k, v):
            return F.scaled_dot_product_attention(q, k, v, **kw)
    assert tg.autograd.gradcheck(f, tuple(inputs))
    assert tg.autograd.gradgradcheck(f, tuple(inputs))


def _causal_loss(q, k, v):
    return F.scaled_dot_product_attention(q, k, v, is_causal=True).square().sum()


@pytest.mark.parametrize("mode", ["tape", "ast"])
def test_staged_paths_agree_with_eager(mode):
    q, k, v = randn(2, 3, 4), randn(2, 5, 4), randn(2, 5, 3)
    tq, tk, tv = (tg.tensor(a, requires_grad=True) for a in (q, k, v))
    _causal_loss(tq, tk, tv).backward()
    grads = tg.grad(_causal_loss, argnums=(0, 1, 2), mode=mode)(tg.tensor(q), tg.tensor(k), tg.tensor(v))
    for g, t in zip(grads, (tq, tk, tv)):
        np.testing.assert_allclose(np.asarray(g.numpy() if hasattr(g, "numpy") else g), t.grad.numpy(),
                                   rtol=1e-10, atol=1e-12)


def test_graph_is_one_fused_node_without_dropout():
    q = tg.randn(2, 3, 4, requires_grad=True)
    out = F.scaled_dot_product_attention(q, q, q, is_causal=True)
    assert out.grad_fn.name() == "ScaledDotProductFlashAttentionForCpuBackward0"


def test_dropout_zero_is_deterministic_and_dropout_has_the_right_statistics():
    q, k, v = randn(2, 3, 4), randn(2, 5, 4), randn(2, 5, 3)
    np.testing.assert_array_equal(sdpa(q, k, v, dropout_p=0.0), sdpa(q, k, v))
    # uniform weights 1/S over S keys of value 1: each output is the kept fraction / (1 - p)
    S, p = 50, 0.3
    qz, kz, ones = np.zeros((400, 1, 2)), np.zeros((400, S, 2)), np.ones((400, S, 1))
    out = sdpa(qz, kz, ones, dropout_p=p)
    assert abs(out.mean() - 1.0) < 0.02
    expected_std = math.sqrt(p / (1 - p) / S)
    assert abs(out.std() - expected_std) < 0.15 * expected_std
    assert np.all(sdpa(qz, kz, ones, dropout_p=1.0) == 0)


def test_dropout_gradient_flows_through_the_kept_weights():
    tg.manual_seed(0)
    q, k, v = (tg.tensor(randn(*s), requires_grad=True) for s in ((2, 3, 2), (2, 4, 2), (2, 4, 3)))
    out = F.scaled_dot_product_attention(q, k, v, dropout_p=0.5)
    out.sum().backward()
    assert all(np.isfinite(t.grad.numpy()).all() for t in (q, k, v))
    assert np.abs(v.grad.numpy()).sum() > 0


def test_a_mask_with_is_causal_is_and_ed_with_the_causal_one():
    """torch 2.13 takes both (modded-nanogpt passes a block mask and is_causal=True): the
    result is the mask and the causal triangle together -- a bool mask and-ed, a float
    mask with -inf above the diagonal."""
    q, k, v = (tg.tensor(randn(1, 2, 4, 8), requires_grad=True) for _ in range(3))
    allowed = np.array([[True, True, False, True]] * 4)
    tril = np.tril(np.ones((4, 4), bool))
    got = F.scaled_dot_product_attention(q, k, v, attn_mask=tg.tensor(allowed), is_causal=True)
    want = F.scaled_dot_product_attention(q, k, v, attn_mask=tg.tensor(allowed & tril))
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-12)
    bias = randn(4, 4)
    got = F.scaled_dot_product_attention(q, k, v, attn_mask=tg.tensor(bias), is_causal=True)
    want = F.scaled_dot_product_attention(q, k, v, attn_mask=tg.tensor(np.where(tril, bias, -np.inf)))
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-12)


@pytest.mark.parametrize("args,kw,error,message", [
    (((2, 3, 4), (2, 5, 7), (2, 5, 3)), {}, RuntimeError,
     "Expected size for first two dimensions of batch2 tensor to be: [2, 4] but got: [2, 7]."),
    (((2, 3, 4), (2, 5, 4), (2, 6, 3)), {}, RuntimeError,
     "Expected size for first two dimensions of batch2 tensor to be: [2, 5] but got: [2, 6]."),
    (((4,), (2, 5, 4), (2, 5, 3)), {}, RuntimeError,
     "Expected query, key, and value to all be  at least 2 dimensional, but got query.dim: 1 key.dim: 3 and "
     "value.dim: 3 instead."),
    (((2, 3, 4), (2, 5, 4), (2, 5, 3)), {"attn_mask": np.ones((3, 5), np.int64)}, RuntimeError,
     "Expected attn_mask dtype to be bool or float or to match query dtype, but got attn_mask.dtype: long int "
     "and  query.dtype: double instead."),
    (((2, 3, 4), (2, 5, 4), (2, 5, 3)), {"dropout_p": 1.5}, RuntimeError,
     "dropout probability has to be between 0 and 1, but got 1.5"),
    (((1, 3, 2, 4), (1, 2, 5, 4), (1, 2, 5, 3)), {"enable_gqa": True}, RuntimeError,
     "Number of heads in key and value must divide the number of heads in "),
    (((2, 3, 4), (2, 5, 4), (2, 5, 3)), {"attn_mask": np.ones((2, 2, 3, 5), bool)}, RuntimeError,
     "output with shape [2, 3, 5] doesn't match the broadcast shape [2, 2, 3, 5]"),
])
def test_sdpa_errors(args, kw, error, message):
    tensors = [tg.tensor(randn(*s)) for s in args]
    kw = {key: tg.tensor(val) if isinstance(val, np.ndarray) else val for key, val in kw.items()}
    with pytest.raises(error) as info:
        F.scaled_dot_product_attention(*tensors, **kw)
    assert str(info.value) == message


def test_sdpa_dtype_mismatch_and_non_tensor():
    with pytest.raises(RuntimeError, match="query.dtype: float key.dtype: double and value.dtype: float instead"):
        F.scaled_dot_product_attention(tg.randn(2, 3), tg.randn(2, 3, dtype=tg.float64), tg.randn(2, 3))
    with pytest.raises(TypeError, match=r"argument 'key' \(position 2\) must be Tensor, not list"):
        F.scaled_dot_product_attention(tg.randn(2, 3), [1.0], tg.randn(2, 3))
    with pytest.raises(TypeError, match=r"argument 'attn_mask' \(position 4\) must be Tensor, not numpy.ndarray"):
        F.scaled_dot_product_attention(tg.randn(2, 3), tg.randn(2, 3), tg.randn(2, 3), np.ones((2, 2), bool))


# -- MultiheadAttention without torch -------------------------------------------------------------

def test_mha_parameters_shapes_and_init():
    m = nn.MultiheadAttention(8, 2)
    assert [n for n, _ in m.named_parameters()] == ["in_proj_weight", "in_proj_bias", "out_proj.weight",
                                                    "out_proj.bias"]
    assert m.in_proj_weight.shape == (24, 8) and m.in_proj_bias.shape == (24,)
    assert type(m.out_proj).__name__ == "NonDynamicallyQuantizableLinear" and isinstance(m.out_proj, nn.Linear)
    assert np.all(m.in_proj_bias.detach().numpy() == 0) and np.all(m.out_proj.bias.detach().numpy() == 0)
    bound = math.sqrt(6 / (8 + 24))  # xavier_uniform_ of a (24, 8) matrix
    assert np.abs(m.in_proj_weight.detach().numpy()).max() <= bound
    assert m.q_proj_weight is None and m.bias_k is None and m.head_dim == 4
    s = nn.MultiheadAttention(8, 2, kdim=3, vdim=5, add_bias_kv=True, bias=False)
    assert [n for n, _ in s.named_parameters()] == ["q_proj_weight", "k_proj_weight", "v_proj_weight", "bias_k",
                                                    "bias_v", "out_proj.weight"]
    assert s.k_proj_weight.shape == (8, 3) and s.v_proj_weight.shape == (8, 5) and s.bias_k.shape == (1, 1, 8)
    assert s.in_proj_weight is None and s.in_proj_bias is None and s.out_proj.bias is None


def _mha_reference(m, x):
    """Self-attention of an unbatched (L, E) input by hand, heads split from the packed weight."""
    w, b = m.in_proj_weight.detach().numpy(), m.in_proj_bias.detach().numpy()
    q, k, v = np.split(x @ w.T + b, 3, axis=-1)
    heads = m.num_heads
    split = (lambda t: t.reshape(t.shape[0], heads, -1).transpose(1, 0, 2))
    weights = np.exp(split(q) @ split(k).transpose(0, 2, 1) / math.sqrt(m.head_dim))
    weights /= weights.sum(-1, keepdims=True)
    out = (weights @ split(v)).transpose(1, 0, 2).reshape(x.shape[0], -1)
    return out @ m.out_proj.weight.detach().numpy().T + m.out_proj.bias.detach().numpy(), weights.mean(0)


def test_mha_matches_hand_computation_and_batch_layouts_agree():
    m = nn.MultiheadAttention(6, 3).double()
    with tg.no_grad():
        m.in_proj_bias.copy_(tg.tensor(randn(18)))
        m.out_proj.bias.copy_(tg.tensor(randn(6)))
    x = randn(4, 6)
    out, weights = m(tg.tensor(x), tg.tensor(x), tg.tensor(x))
    expected_out, expected_w = _mha_reference(m, x)
    np.testing.assert_allclose(out.detach().numpy(), expected_out, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(weights.detach().numpy(), expected_w, rtol=1e-10, atol=1e-12)
    xb = tg.tensor(np.stack([x, x[::-1]], 1))  # (L, N, E)
    out_b, _ = m(xb, xb, xb, need_weights=False)
    np.testing.assert_allclose(out_b.detach().numpy()[:, 0], expected_out, rtol=1e-10, atol=1e-12)
    m.batch_first = True
    xf = xb.transpose(0, 1).contiguous()
    out_f, w_f = m(xf, xf, xf, average_attn_weights=False)
    np.testing.assert_allclose(out_f.detach().numpy(), out_b.detach().numpy().transpose(1, 0, 2), rtol=1e-10)
    assert w_f.shape == (2, 3, 4, 4)


def test_mha_gradcheck_with_masks():
    m = nn.MultiheadAttention(4, 2, add_bias_kv=True, add_zero_attn=True).double()
    pad = tg.tensor(np.array([[False, False, True], [False, True, True]]))
    mask = tg.tensor(randn(2, 3))

    def weights_path(q, kv):
        return m(q, kv, kv, key_padding_mask=pad, attn_mask=mask)[0]

    def sdpa_path(q, kv):
        return m(q, kv, kv, key_padding_mask=pad, attn_mask=mask, need_weights=False)[0]
    inputs = (tg.tensor(randn(2, 2, 4), requires_grad=True), tg.tensor(randn(3, 2, 4), requires_grad=True))
    assert tg.autograd.gradcheck(weights_path, inputs)
    assert tg.autograd.gradcheck(sdpa_path, inputs)


def test_mha_errors():
    with pytest.raises(ValueError, match="embed_dim and num_heads must be greater than 0, got embed_dim=0 and "
                                         "num_heads=2 instead"):
        nn.MultiheadAttention(0, 2)
    with pytest.raises(AssertionError, match="embed_dim must be divisible by num_heads"):
        nn.MultiheadAttention(5, 2)
    m = nn.MultiheadAttention(4, 2)
    x = tg.randn(3, 2, 4)
    with pytest.raises(AssertionError, match="For batched \\(3-D\\) `query`, expected `key` and `value` to be 3-D "
                                             "but found 2-D and 3-D tensors respectively"):
        m(x, x[0], x)
    with pytest.raises(RuntimeError, match=r"The shape of the 2D attn_mask is tracegrad.Size\(\[2, 2\]\), but "
                                           r"should be \(3, 3\)."):
        m(x, x, x, attn_mask=tg.zeros(2, 2))
    with pytest.raises(AssertionError, match="only bool and floating types of attn_mask are supported"):
        m(x, x, x, attn_mask=tg.zeros(3, 3, dtype=tg.int64))
    with pytest.raises(RuntimeError, match="Need attn_mask if specifying the is_causal hint"):
        m(x, x, x, is_causal=True)
    with pytest.raises(AssertionError, match="Expected key_padded_mask.shape\\[1\\] to be 3, but got 2"):
        m(x, x, x, key_padding_mask=tg.zeros(2, 2, dtype=tg.bool))


# -- against PyTorch ---------------------------------------------------------------------------------

def _pair(array, requires_grad=None):
    import torch
    grad = array.dtype.kind == "f" if requires_grad is None else requires_grad
    return torch.tensor(array, requires_grad=grad), tg.tensor(array, requires_grad=grad)


def _check_grads(ours, theirs):
    for o, t in zip(ours, theirs):
        if t is not None and t.grad is not None:
            assert_close(o.grad, t.grad, what="input grad")


SDPA_CASES = [
    ({}, ((2, 3, 4, 8), (2, 3, 5, 8), (2, 3, 5, 6)), None),
    ({"is_causal": True}, ((2, 3, 4, 8), (2, 3, 4, 8), (2, 3, 4, 6)), None),
    ({"is_causal": True}, ((2, 3, 6, 8), (2, 3, 4, 8), (2, 3, 4, 6)), None),
    ({"is_causal": True}, ((2, 3, 3, 8), (2, 3, 5, 8), (2, 3, 5, 6)), None),
    ({}, ((2, 3, 4, 8), (2, 3, 5, 8), (2, 3, 5, 6)), "bool"),
    ({}, ((2, 3, 4, 8), (2, 3, 5, 8), (2, 3, 5, 6)), "float"),
    ({"scale": 0.25}, ((3, 4, 8), (3, 5, 8), (3, 5, 6)), "float"),
    ({"enable_gqa": True}, ((2, 4, 3, 8), (2, 2, 5, 8), (2, 2, 5, 6)), None),
    ({}, ((4, 8), (5, 8), (5, 6)), "dead"),
]


@pytest.mark.torch
@pytest.mark.parametrize("kw,shapes,mask", SDPA_CASES)
def test_sdpa_matches_torch(kw, shapes, mask):
    import torch
    arrays = [randn(*s) for s in shapes]
    t_in, o_in = zip(*(_pair(a) for a in arrays))
    kw_t, kw_o = dict(kw), dict(kw)
    L, S = shapes[0][-2], shapes[1][-2]
    if mask == "bool":
        keep = RNG.random((L, S)) < 0.6
        keep[:, 0] = True
        kw_t["attn_mask"], kw_o["attn_mask"] = _pair(keep)
    elif mask in ("float", "dead"):
        m = randn(*shapes[0][-3:-2], L, S)
        if mask == "dead":
            m[..., 1, :] = -np.inf
        kw_t["attn_mask"], kw_o["attn_mask"] = _pair(m)
    out_t = torch.nn.functional.scaled_dot_product_attention(*t_in, **kw_t)
    out_o = F.scaled_dot_product_attention(*o_in, **kw_o)
    assert_close(out_o, out_t, what="output")
    g = randn(*out_t.shape)
    out_t.backward(torch.tensor(g))
    out_o.backward(tg.tensor(g))
    _check_grads(list(o_in) + [kw_o.get("attn_mask")], list(t_in) + [kw_t.get("attn_mask")])


MHA_CONFIGS = [{}, {"batch_first": True}, {"kdim": 3, "vdim": 5}, {"add_bias_kv": True, "add_zero_attn": True},
               {"bias": False}, {"dropout": 0.3}]


@pytest.mark.torch
@pytest.mark.parametrize("config", MHA_CONFIGS)
@pytest.mark.parametrize("call", ["plain", "padding", "attn_mask", "both_no_weights", "per_head", "bool_mask",
                                  "unbatched"])
def test_mha_matches_torch(config, call):
    import torch
    torch.manual_seed(0)
    theirs = torch.nn.MultiheadAttention(8, 2, **config).double().eval()
    ours = nn.MultiheadAttention(8, 2, **config).double().eval()
    copy_weights(theirs, ours)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    L, S, N = 4, 5, 3
    first = config.get("batch_first", False)
    shape = (lambda T, E: (N, T, E) if first else (T, N, E)) if call != "unbatched" else (lambda T, E: (T, E))
    arrays = [randn(*shape(L, 8)), randn(*shape(S, config.get("kdim", 8))), randn(*shape(S, config.get("vdim", 8)))]
    t_in, o_in = zip(*(_pair(a) for a in arrays))
    padding = RNG.random((N, S)) < 0.3
    padding[:, 0] = False
    extra = {"plain": {}, "padding": {"key_padding_mask": padding}, "attn_mask": {"attn_mask": randn(L, S)},
             "both_no_weights": {"key_padding_mask": padding, "attn_mask": randn(L, S), "need_weights": False},
             "per_head": {"average_attn_weights": False, "attn_mask": randn(N * 2, L, S)},
             "bool_mask": {"attn_mask": np.triu(np.ones((L, S), bool), 1)}, "unbatched": {}}[call]
    kw_t = {k: (_pair(v, False)[0] if isinstance(v, np.ndarray) else v) for k, v in extra.items()}
    kw_o = {k: (_pair(v, False)[1] if isinstance(v, np.ndarray) else v) for k, v in extra.items()}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out_t, w_t = theirs(*t_in, **kw_t)
        out_o, w_o = ours(*o_in, **kw_o)
    assert_close(out_o, out_t, what="output")
    if w_t is None:
        assert w_o is None
    else:
        assert_close(w_o, w_t, what="weights")
    g = randn(*out_t.shape)
    out_t.backward(torch.tensor(g))
    out_o.backward(tg.tensor(g))
    _check_grads(o_in, t_in)
    t_params = dict(theirs.named_parameters())
    for name, p in ours.named_parameters():
        assert_close(p.grad, t_params[name].grad, what=name)


@pytest.mark.torch
def test_mha_is_causal_hint_and_functional_form_match_torch():
    import torch
    theirs, ours = torch.nn.MultiheadAttention(6, 3).double(), nn.MultiheadAttention(6, 3).double()
    copy_weights(theirs, ours)
    x_t, x_o = _pair(randn(5, 2, 6))
    mask = np.triu(np.full((5, 5), -np.inf), 1)
    out_t = theirs(x_t, x_t, x_t, attn_mask=torch.tensor(mask), is_causal=True, need_weights=False)[0]
    out_o = ours(x_o, x_o, x_o, attn_mask=tg.tensor(mask), is_causal=True, need_weights=False)[0]
    assert_close(out_o, out_t, what="causal output")
    args = lambda mod, x: (x, x, x, 6, 3, mod.in_proj_weight, mod.in_proj_bias, None, None, False, 0.0,
                           mod.out_proj.weight, mod.out_proj.bias)
    f_t = torch.nn.functional.multi_head_attention_forward(*args(theirs, x_t), training=False)
    f_o = F.multi_head_attention_forward(*args(ours, x_o), training=False)
    assert_close(f_o[0], f_t[0], what="functional output")
    assert_close(f_o[1], f_t[1], what="functional weights")
    assert repr(ours) == repr(theirs)


def test_sdpa_kernel_accepts_backends_and_changes_nothing():
    from tracegrad.nn.attention import SDPBackend, sdpa_kernel
    q, k, v = randn(2, 3, 4), randn(2, 5, 4), randn(2, 5, 3)
    with sdpa_kernel(SDPBackend.MATH):
        inside = sdpa(q, k, v, is_causal=True)
    with sdpa_kernel([SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION], set_priority=True):
        np.testing.assert_array_equal(sdpa(q, k, v, is_causal=True), inside)
    assert int(SDPBackend.CUDNN_ATTENTION) == 3 and str(SDPBackend.MATH) == "SDPBackend.MATH"
    with pytest.raises(AssertionError, match="Backend must be an instance of SDPBackend or a list of SDPBackend "
                                             "instances, got str"):
        with sdpa_kernel("math"):
            pass


def test_mask_with_is_causal_is_refused_where_torch_refuses_it():
    """torch 2.13 takes both only on its fused path: 4-D inputs without dropout."""
    q = tg.tensor(randn(2, 3, 4))
    with pytest.raises(RuntimeError, match="Explicit attn_mask should not be set when is_causal=True"):
        F.scaled_dot_product_attention(q, q, q, attn_mask=tg.ones(3, 3, dtype=tg.bool), is_causal=True)
    q4 = tg.tensor(randn(1, 2, 3, 4))
    with pytest.raises(RuntimeError, match="Explicit attn_mask should not be set when is_causal=True"):
        F.scaled_dot_product_attention(q4, q4, q4, attn_mask=tg.ones(3, 3, dtype=tg.bool), is_causal=True,
                                       dropout_p=0.5)
