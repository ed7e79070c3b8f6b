"""Transformer, TransformerEncoder/Decoder and their layers: structure (state_dict keys,
deep-copied layers), the layer equations by hand (post- and pre-norm), masks, errors; and
(marked ``torch``) outputs and every gradient against PyTorch with copied weights, in
float64, eval mode, both batch layouts and both norm placements."""
import copy
import warnings

import numpy as np
import pytest

import tracegrad as tg
from tracegrad import nn
from tracegrad.nn import functional as F

from ._oracle import assert_close, copy_weights

RNG = np.random.default_rng(11)
# both libraries warn about mixing bool padding masks with float attention masks, and about
# nested tensors for layouts that cannot use them (tested once below)
pytestmark = [pytest.mark.filterwarnings("ignore:Support for mismatched:UserWarning"),
              pytest.mark.filterwarnings("ignore:enable_nested_tensor is True:UserWarning"),
              pytest.mark.filterwarnings("ignore:The PyTorch API of nested tensors:UserWarning")]


def randn(*shape):
    return RNG.standard_normal(shape)


def layer_norm(x, eps=1e-5):
    mu = x.mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(x.var(-1, keepdims=True) + eps)


def self_attention(mha, x):
    """Unbatched (L, E) self-attention through the module (its own equations are tested in
    test_attention.py)."""
    t = tg.tensor(x)
    return mha(t, t, t, need_weights=False)[0].detach().numpy()


def feed_forward(layer, x):
    w1, b1 = layer.linear1.weight.detach().numpy(), layer.linear1.bias.detach().numpy()
    w2, b2 = layer.linear2.weight.detach().numpy(), layer.linear2.bias.detach().numpy()
    return np.maximum(x @ w1.T + b1, 0) @ w2.T + b2


@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_layer_equations(norm_first):
    layer = nn.TransformerEncoderLayer(6, 2, dim_feedforward=10, dropout=0.0, norm_first=norm_first).double()
    x = randn(4, 6)
    out = layer(tg.tensor(x)).detach().numpy()
    if norm_first:
        h = x + self_attention(layer.self_attn, layer_norm(x))
        expected = h + feed_forward(layer, layer_norm(h))
    else:
        h = layer_norm(x + self_attention(layer.self_attn, x))
        expected = layer_norm(h + feed_forward(layer, h))
    np.testing.assert_allclose(out, expected, rtol=1e-10, atol=1e-12)


def test_state_dict_keys_and_shapes():
    model = nn.Transformer(d_model=8, nhead=2, num_encoder_layers=2, num_decoder_layers=1, dim_feedforward=16)
    keys = list(model.state_dict())
    assert keys[:12] == ["encoder.layers.0.self_attn.in_proj_weight", "encoder.layers.0.self_attn.in_proj_bias",
                         "encoder.layers.0.self_attn.out_proj.weight", "encoder.layers.0.self_attn.out_proj.bias",
                         "encoder.layers.0.linear1.weight", "encoder.layers.0.linear1.bias",
                         "encoder.layers.0.linear2.weight", "encoder.layers.0.linear2.bias",
                         "encoder.layers.0.norm1.weight", "encoder.layers.0.norm1.bias",
                         "encoder.layers.0.norm2.weight", "encoder.layers.0.norm2.bias"]
    assert "encoder.norm.weight" in keys and "decoder.norm.bias" in keys
    assert "decoder.layers.0.multihead_attn.in_proj_weight" in keys and "decoder.layers.0.norm3.weight" in keys
    assert not any(k.startswith("decoder.layers.1") for k in keys)
    assert model.state_dict()["encoder.layers.1.linear1.weight"].shape == (16, 8)
    no_bias = nn.TransformerEncoderLayer(8, 2, 16, bias=False)
    assert [k for k in no_bias.state_dict() if "bias" in k] == []


def test_encoder_deep_copies_the_layer():
    layer = nn.TransformerEncoderLayer(4, 2, 8)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        enc = nn.TransformerEncoder(layer, 3)
    assert len(enc.layers) == 3 and enc.num_layers == 3
    assert enc.layers[0] is not layer and enc.layers[0].linear1.weight is not enc.layers[1].linear1.weight
    np.testing.assert_array_equal(enc.layers[2].linear1.weight.detach().numpy(), layer.linear1.weight.detach().numpy())
    with tg.no_grad():
        enc.layers[0].linear1.weight.add_(1.0)
    assert not np.allclose(enc.layers[0].linear1.weight.detach().numpy(), enc.layers[1].linear1.weight.detach().numpy())


def test_deep_copied_layers_start_without_gradients():
    layer = nn.TransformerEncoderLayer(4, 2, 8, dropout=0.0)
    layer(tg.randn(3, 2, 4)).sum().backward()
    assert layer.linear1.weight.grad is not None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        enc = nn.TransformerEncoder(layer, 2)
    assert all(p.grad is None for p in enc.parameters())


def test_nested_tensor_warning_as_in_torch():
    with pytest.warns(UserWarning, match="enable_nested_tensor is True, but self.use_nested_tensor is False because "
                                         "encoder_layer.self_attn.batch_first was not True"):
        enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(4, 2, 8), 1)
    assert enc.use_nested_tensor is False and enc.enable_nested_tensor is True
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        nn.TransformerEncoder(nn.TransformerEncoderLayer(4, 2, 8, batch_first=True), 1)
        nn.TransformerEncoder(nn.TransformerEncoderLayer(4, 2, 8), 1, enable_nested_tensor=False)


def test_generate_square_subsequent_mask():
    mask = nn.Transformer.generate_square_subsequent_mask(4)
    expected = np.triu(np.full((4, 4), -np.inf), 1)
    np.testing.assert_array_equal(mask.numpy(), expected)
    assert mask.dtype == tg.float32
    assert nn.Transformer.generate_square_subsequent_mask(3, dtype=tg.float64).dtype == tg.float64


def test_causal_mask_makes_outputs_independent_of_the_future():
    model = nn.Transformer(8, 2, 1, 1, 16, dropout=0.0).double()
    src, tgt = randn(5, 2, 8), randn(4, 2, 8)
    mask = nn.Transformer.generate_square_subsequent_mask(4, dtype=tg.float64)
    out = model(tg.tensor(src), tg.tensor(tgt), tgt_mask=mask).detach().numpy()
    changed = tgt.copy()
    changed[3] += 1.0
    out2 = model(tg.tensor(src), tg.tensor(changed), tgt_mask=mask).detach().numpy()
    np.testing.assert_allclose(out[:3], out2[:3], rtol=1e-12, atol=1e-12)
    assert not np.allclose(out[3], out2[3])


def test_activation_choices():
    assert nn.TransformerEncoderLayer(4, 2, 8, activation="gelu").activation is F.gelu
    assert nn.TransformerEncoderLayer(4, 2, 8, activation="gelu").activation_relu_or_gelu == 2
    custom = nn.TransformerDecoderLayer(4, 2, 8, activation=tg.tanh)
    assert custom.activation is tg.tanh
    with pytest.raises(RuntimeError, match="activation should be relu/gelu, not tanh"):
        nn.TransformerEncoderLayer(4, 2, 8, activation="tanh")


def test_transformer_errors():
    model = nn.Transformer(8, 2, 1, 1, 16)
    with pytest.raises(RuntimeError, match="the batch number of src and tgt must be equal"):
        model(tg.randn(5, 2, 8), tg.randn(4, 3, 8))
    with pytest.raises(RuntimeError, match="the feature number of src and tgt must be equal to d_model"):
        model(tg.randn(5, 2, 8), tg.randn(4, 2, 6))


def test_training_mode_dropout_changes_outputs_and_eval_is_deterministic():
    layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.5)
    x = tg.randn(4, 3, 8)
    assert not np.allclose(layer(x).detach().numpy(), layer(x).detach().numpy())
    layer.eval()
    np.testing.assert_array_equal(layer(x).detach().numpy(), layer(x).detach().numpy())


def test_deepcopy_of_a_whole_model_trains_independently():
    model = nn.Transformer(8, 2, 1, 1, 16, dropout=0.0)
    clone = copy.deepcopy(model)
    src, tgt = tg.randn(5, 2, 8), tg.randn(4, 2, 8)
    model(src, tgt).sum().backward()
    assert all(p.grad is None for p in clone.parameters())
    np.testing.assert_allclose(clone(src, tgt).detach().numpy(), model(src, tgt).detach().numpy(), rtol=1e-6)


def test_inference_with_end_padding_zeroes_padded_positions_as_torchs_nested_path():
    layer = nn.TransformerEncoderLayer(8, 2, 16, batch_first=True)
    encoder = nn.TransformerEncoder(layer, 2).eval()
    x = tg.randn(2, 5, 8)
    end_padding = tg.tensor([[False, False, False, True, True], [False] * 5])
    with tg.no_grad():
        fast = encoder(x, src_key_padding_mask=end_padding).numpy()
    slow = encoder(x, src_key_padding_mask=end_padding).detach().numpy()  # grad enabled: no nested path
    assert np.all(fast[0, 3:] == 0) and not np.any(slow[0, 3:] == 0)
    np.testing.assert_allclose(fast[0, :3], slow[0, :3], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(fast[1], slow[1], rtol=1e-5, atol=1e-6)
    middle = tg.tensor([[False, True, False, False, False], [False] * 5])
    with tg.no_grad():  # not left-aligned: PyTorch keeps the padded path
        assert not np.any(encoder(x, src_key_padding_mask=middle).numpy()[0, 1] == 0)


# -- against PyTorch ---------------------------------------------------------------------------------

def _run_both(theirs, ours, arrays, masks=None):
    """Outputs and all gradients of both models, eval mode, on the same float64 inputs."""
    import torch
    copy_weights(theirs, ours)
    theirs.eval()
    ours.eval()
    masks = masks or {}
    t_in = [torch.tensor(a, requires_grad=True) for a in arrays]
    o_in = [tg.tensor(a, requires_grad=True) for a in arrays]
    kw_t = {k: torch.tensor(v) if isinstance(v, np.ndarray) else v for k, v in masks.items()}
    kw_o = {k: tg.tensor(v) if isinstance(v, np.ndarray) else v for k, v in masks.items()}
    out_t, out_o = theirs(*t_in, **kw_t), ours(*o_in, **kw_o)
    assert_close(out_o, out_t, what="output")
    g = randn(*out_t.shape)
    out_t.backward(torch.tensor(g))
    out_o.backward(tg.tensor(g))
    for k, (a, b) in enumerate(zip(o_in, t_in)):
        assert_close(a.grad, b.grad, what=f"input {k} grad")
    t_params = dict(theirs.named_parameters())
    for name, p in ours.named_parameters():
        assert_close(p.grad, t_params[name].grad, what=f"{name}.grad")


LAYOUTS = [(nf, bf, act) for nf in (False, True) for bf in (False, True) for act in ("relu", "gelu")]


def _shape(batch_first, seq, batch=3, d=8):
    return (batch, seq, d) if batch_first else (seq, batch, d)


def _padding(batch, seq):
    pad = RNG.random((batch, seq)) < 0.3
    pad[:, 0] = False
    return pad


@pytest.mark.torch
@pytest.mark.parametrize("norm_first,batch_first,activation", LAYOUTS)
def test_encoder_layer_and_stack_match_torch(norm_first, batch_first, activation):
    import torch
    kw = dict(dim_feedforward=16, dropout=0.1, activation=activation, batch_first=batch_first, norm_first=norm_first)
    t_layer = torch.nn.TransformerEncoderLayer(8, 2, **kw).double()
    o_layer = nn.TransformerEncoderLayer(8, 2, **kw).double()
    x = randn(*_shape(batch_first, 5))
    causal = np.triu(np.full((5, 5), -np.inf), 1)
    _run_both(t_layer, o_layer, [x], {"src_mask": causal})
    _run_both(t_layer, o_layer, [x], {"src_key_padding_mask": _padding(3, 5)})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t_enc = torch.nn.TransformerEncoder(t_layer, 2, norm=torch.nn.LayerNorm(8).double())
        o_enc = nn.TransformerEncoder(o_layer, 2, norm=nn.LayerNorm(8).double())
    assert list(o_enc.state_dict()) == list(t_enc.state_dict())
    _run_both(t_enc, o_enc, [x], {"mask": causal, "is_causal": True})
    _run_both(t_enc, o_enc, [x], {"mask": causal})  # causal detected from the mask
    _run_both(t_enc, o_enc, [x], {"src_key_padding_mask": _padding(3, 5), "mask": RNG.random((5, 5)) < 0.2})


@pytest.mark.torch
@pytest.mark.parametrize("norm_first,batch_first,activation", LAYOUTS)
def test_decoder_layer_and_stack_match_torch(norm_first, batch_first, activation):
    import torch
    kw = dict(dim_feedforward=16, dropout=0.1, activation=activation, batch_first=batch_first, norm_first=norm_first)
    t_layer = torch.nn.TransformerDecoderLayer(8, 2, **kw).double()
    o_layer = nn.TransformerDecoderLayer(8, 2, **kw).double()
    tgt, memory = randn(*_shape(batch_first, 4)), randn(*_shape(batch_first, 6))
    masks = {"tgt_mask": np.triu(np.full((4, 4), -np.inf), 1), "memory_key_padding_mask": _padding(3, 6),
             "tgt_key_padding_mask": _padding(3, 4)}
    _run_both(t_layer, o_layer, [tgt, memory], masks)
    t_dec = torch.nn.TransformerDecoder(t_layer, 2, norm=torch.nn.LayerNorm(8).double())
    o_dec = nn.TransformerDecoder(o_layer, 2, norm=nn.LayerNorm(8).double())
    _run_both(t_dec, o_dec, [tgt, memory], {"tgt_mask": masks["tgt_mask"], "memory_mask": randn(4, 6)})


@pytest.mark.torch
@pytest.mark.parametrize("norm_first,batch_first", [(False, False), (True, True)])
def test_transformer_matches_torch(norm_first, batch_first):
    import torch
    kw = dict(num_encoder_layers=2, num_decoder_layers=2, dim_feedforward=16, batch_first=batch_first,
              norm_first=norm_first)
    theirs = torch.nn.Transformer(8, 2, **kw).double()
    ours = nn.Transformer(8, 2, **kw).double()
    assert list(ours.state_dict()) == list(theirs.state_dict())
    src, tgt = randn(*_shape(batch_first, 6)), randn(*_shape(batch_first, 4))
    _run_both(theirs, ours, [src, tgt], {"tgt_mask": nn.Transformer.generate_square_subsequent_mask(
        4, dtype=tg.float64).numpy(), "src_key_padding_mask": _padding(3, 6), "memory_key_padding_mask": _padding(3, 6)})


@pytest.mark.torch
@pytest.mark.parametrize("padding", [[[0, 0, 0, 1, 1], [0, 0, 0, 0, 0]], [[0, 1, 0, 0, 1], [0, 0, 0, 0, 1]]],
                         ids=["end", "middle"])
@pytest.mark.parametrize("final_norm", [False, True])
def test_inference_fast_path_values_match_torch(padding, final_norm):
    import torch
    t_layer = torch.nn.TransformerEncoderLayer(8, 2, 16, batch_first=True)
    o_layer = nn.TransformerEncoderLayer(8, 2, 16, batch_first=True)
    t_enc = torch.nn.TransformerEncoder(t_layer, 2, norm=torch.nn.LayerNorm(8) if final_norm else None).eval()
    o_enc = nn.TransformerEncoder(o_layer, 2, norm=nn.LayerNorm(8) if final_norm else None).eval()
    copy_weights(t_enc, o_enc)
    with torch.no_grad():  # PyTorch's C++ inference path: trust it to float32 rounding
        if final_norm:  # a non-zero bias: padded positions come out as norm(0) = bias
            t_enc.norm.bias.normal_()
            copy_weights(t_enc, o_enc)
        x = randn(2, 5, 8).astype(np.float32)
        mask = np.array(padding, bool)
        theirs = t_enc(torch.tensor(x), src_key_padding_mask=torch.tensor(mask))
    with tg.no_grad():
        ours = o_enc(tg.tensor(x), src_key_padding_mask=tg.tensor(mask))
    assert_close(ours, theirs, rtol=1e-4, atol=1e-5, what="inference output")


@pytest.mark.torch
def test_unbatched_and_bias_free_match_torch():
    import torch
    theirs = torch.nn.TransformerEncoderLayer(8, 2, 16, bias=False, norm_first=True).double()
    ours = nn.TransformerEncoderLayer(8, 2, 16, bias=False, norm_first=True).double()
    _run_both(theirs, ours, [randn(5, 8)])


@pytest.mark.torch
def test_initialisation_statistics_match_torch():
    """Xavier-uniform for every matrix of a Transformer: same bound as PyTorch's init."""
    import math
    model = nn.Transformer(16, 4, 1, 1, 32)
    w = model.encoder.layers[0].linear1.weight.detach().numpy()
    bound = math.sqrt(6 / (16 + 32))
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.8 * bound
    assert np.all(model.encoder.norm.weight.detach().numpy() == 1)
