"""Samples for the fused attention rule (tracegrad/rules/attention.py): plain, causal
(square and L != S), an additive mask that broadcasts, a fully masked row, batch
broadcasting between query and key/value, no batch dims, and empty sequences."""
import numpy as np

from .sampling import S, r


def _mask_with_dead_row(L, S_):
    m = r(L, S_)
    m[1] = -np.inf  # query 1 sees no key: its weights and gradients are zero
    return m


SAMPLES = {
    "attention": [S(r(2, 3, 4), r(2, 5, 4), r(2, 5, 3), None, scale=0.5),
                  S(r(2, 4, 3), r(2, 4, 3), r(2, 4, 2), None, scale=1.0, causal=True),
                  S(r(1, 3, 2), r(1, 5, 2), r(1, 5, 2), None, scale=0.7, causal=True),
                  S(r(2, 3, 4), r(2, 5, 4), r(2, 5, 3), r(3, 5), scale=0.5, tags="broadcast"),
                  S(r(2, 3, 2), r(2, 4, 2), r(2, 4, 2), _mask_with_dead_row(3, 4), scale=0.5),
                  S(r(2, 2, 3, 2), r(1, 4, 2), r(1, 4, 3), None, scale=0.5, tags="broadcast"),
                  S(r(3, 2), r(4, 2), r(4, 3), r(3, 4), scale=0.9),
                  S(r(2, 0, 2), r(2, 3, 2), r(2, 3, 2), None, scale=0.5, tags="empty"),
                  S(r(2, 3, 2), r(2, 0, 2), r(2, 0, 2), None, scale=0.5, tags="empty")],
}

EXEMPT = {"attention": {"0d": "attends over matrices: query, key and value have at least 2 dims"}}
BROADCASTING = {"attention"}


def _torch_attention(q, k, v, bias, scale, causal=False):
    """PyTorch's SDPA for the output; its safe softmax of the same scores for the weights."""
    import torch
    s = q @ k.transpose(-2, -1) * scale
    if causal:
        s = s + torch.full(s.shape[-2:], float("-inf"), dtype=s.dtype).triu(1)
    if bias is not None:
        s = s + bias
    out = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=bias, is_causal=causal, scale=scale)
    return out, torch._safe_softmax(s, -1)


def _random_attention(rng):
    """Batch dims of query and key/value that broadcast, and a mask that broadcasts."""
    L, S_, E, Ev = (int(n) for n in rng.integers(1, 5, 4))
    batch = tuple(int(n) for n in rng.integers(1, 4, int(rng.integers(0, 3))))
    kv_batch = tuple(1 if rng.random() < 0.4 else n for n in batch)
    bias = None if rng.random() < 0.3 else rng.standard_normal((1 if rng.random() < 0.5 else L, S_))
    return ((rng.standard_normal(batch + (L, E)), rng.standard_normal(kv_batch + (S_, E)),
             rng.standard_normal(kv_batch + (S_, Ev)), bias),
            {"scale": float(rng.uniform(0.2, 1.5)), "causal": bias is None and bool(rng.random() < 0.5)})


TORCH = {"attention": _torch_attention}
BROADCAST_INPUTS = {"attention": _random_attention}
