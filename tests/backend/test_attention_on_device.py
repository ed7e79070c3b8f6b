"""Attention, transformers and packed recurrent layers on ``device='cuda'`` (the stub device
always, a real GPU where there is one) give the CPU's values and gradients; on the stub,
any NumPy call on device data raises, so the fused attention kernel and the packing
helpers reach device arrays only through ``xp``."""
import warnings

import pytest

import tracegrad as tg
from tracegrad import nn
from tracegrad.nn import functional as F
from tracegrad.nn.utils import rnn as R

from .nn_checks import compare_module

pytestmark = pytest.mark.filterwarnings("ignore:enable_nested_tensor is True:UserWarning")


class _SDPA(nn.Module):
    """F.scaled_dot_product_attention as a module, its mask made on the input's device."""

    def __init__(self, mask=None, **kw):
        super().__init__()
        self.mask, self.kw = mask, kw

    def forward(self, q, k, v):
        mask = None if self.mask is None else self.mask.to(q.device)
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, **self.kw)


class _Masked(nn.Module):
    """A module called with masks that follow the first input to its device."""

    def __init__(self, inner, **masks):
        super().__init__()
        self.inner, self.masks = inner, masks

    def forward(self, *inputs):
        masks = {k: v.to(inputs[0].device) if isinstance(v, tg.Tensor) else v for k, v in self.masks.items()}
        out = self.inner(*inputs, **masks)
        return out[0] if isinstance(out, tuple) else out


class _Packed(nn.Module):
    """A recurrent layer on a packed batch; returns the packed data and the final state."""

    def __init__(self, rnn, lengths):
        super().__init__()
        self.rnn, self.lengths = rnn, lengths

    def forward(self, x):
        out, h = self.rnn(R.pack_padded_sequence(x, self.lengths, enforce_sorted=False))
        padded, _ = R.pad_packed_sequence(out)
        return padded, h


@pytest.mark.parametrize("kw,mask", [({}, None), ({"is_causal": True}, None),
                                     ({}, tg.tensor([[True, False, True, True], [False] * 4, [True] * 4])),
                                     ({"scale": 0.5}, tg.randn(3, 4))],
                         ids=["plain", "causal", "bool-dead-row", "float"])
def test_sdpa(xp, kw, mask):
    compare_module(_SDPA(mask, **kw), [(2, 3, 5), (2, 4, 5), (2, 4, 2)])


def test_multihead_attention(xp):
    tg.manual_seed(0)
    padding = tg.tensor([[False, False, True, True], [False, False, False, True]])
    compare_module(_Masked(nn.MultiheadAttention(6, 2), key_padding_mask=padding), [(3, 2, 6), (4, 2, 6), (4, 2, 6)])
    compare_module(_Masked(nn.MultiheadAttention(6, 2, kdim=3, vdim=5, add_bias_kv=True, add_zero_attn=True),
                           need_weights=False), [(3, 2, 6), (4, 2, 3), (4, 2, 5)])


def test_transformer(xp):
    tg.manual_seed(0)
    model = nn.Transformer(8, 2, 1, 1, 16, dropout=0.0, batch_first=True, norm_first=True)
    mask = nn.Transformer.generate_square_subsequent_mask(4)
    compare_module(_Masked(model, tgt_mask=mask), [(2, 5, 8), (2, 4, 8)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, activation="gelu"), 2)
    compare_module(_Masked(encoder, mask=nn.Transformer.generate_square_subsequent_mask(5)), [(5, 2, 8)])


@pytest.mark.parametrize("mode", ["GRU", "LSTM"])
def test_packed_recurrent_layers(xp, mode):
    tg.manual_seed(0)
    compare_module(_Packed(getattr(nn, mode)(3, 4, bidirectional=True), [2, 4, 3]), [(4, 3, 3)])
