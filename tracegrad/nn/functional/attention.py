"""``scaled_dot_product_attention``: ``softmax(Q K^T * scale + mask) V`` with PyTorch's
argument checks and messages.

Without dropout it is one fused rule-table primitive (:mod:`tracegrad.rules.attention`,
the node PyTorch records on the CPU too), whose causal forward + backward took ~1.3x
less CPU time than the five-node composition (see the rule's docstring); with dropout it
is that composition (mul, matmul, masking, softmax, dropout, matmul), as PyTorch's math
path is. Gradients reach the query, key, value and a float mask either way.

PyTorch details kept: a boolean mask marks the positions that take part (True) and a float
mask is added; ``is_causal`` is a lower-triangular mask aligned at the top left (row ``i``
sees keys ``0..i`` even when L != S); rows whose every key is masked give zeros (PyTorch's
"safe softmax") with zero gradients, not NaN; ``enable_gqa`` repeats each key/value head
for a group of query heads; dropout on the attention weights is always applied when
``dropout_p > 0`` (the functional form has no ``training`` flag).
"""
import functools
import math

from ...backend import cpu as _cpu
from ...backend.dtypes import bool_ as _bool
from ...ops.activation import softmax
from ...ops.linalg import _c as _c_name
from ...ops.linalg import _tensor, matmul
from ...rules.attention import attention as _attention
from ...runtime.creation import ones, zeros
from ...runtime.fastpath import untracked_arrays, untracked_result
from ...runtime.grad_mode import no_grad
from ...runtime.shapes import broadcast_shapes
from .misc import dropout

__all__ = ["scaled_dot_product_attention"]


def _check(query, key, value, attn_mask, dropout_p, is_causal):
    for name, t, pos in (("query", query, 1), ("key", key, 2), ("value", value, 3)):
        _tensor(t, "scaled_dot_product_attention", name, pos)
    if attn_mask is not None:
        _tensor(attn_mask, "scaled_dot_product_attention", "attn_mask", 4)
    if query.ndim < 2 or key.ndim < 2 or value.ndim < 2:
        raise RuntimeError(f"Expected query, key, and value to all be  at least 2 dimensional, but got "
                           f"query.dim: {query.ndim} key.dim: {key.ndim} and value.dim: {value.ndim} instead.")
    if not query.dtype == key.dtype == value.dtype:
        raise RuntimeError(f"Expected query, key, and value to have the same dtype, but got query.dtype: "
                           f"{_c_name(query)} key.dtype: {_c_name(key)} and value.dtype: {_c_name(value)} "
                           "instead.")
    if attn_mask is not None and attn_mask.dtype.name not in ("bool", "float32") and attn_mask.dtype != query.dtype:
        raise RuntimeError(f"Expected attn_mask dtype to be bool or float or to match query dtype, but got "
                           f"attn_mask.dtype: {_c_name(attn_mask)} and  query.dtype: {_c_name(query)} instead.")
    if is_causal and attn_mask is not None and (dropout_p > 0.0 or query.ndim != 4):
        # (torch 2.13 takes both only where its fused kernel runs: 4-D inputs, no dropout)
        raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be set when "
                           "is_causal=True")
    if not 0.0 <= dropout_p <= 1.0:
        raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {dropout_p}")


def _batch2_error(batch, want, got):
    return RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: [{batch}, {want}] "
                        f"but got: [{batch}, {got}].")


def _check_sizes(query, key, value):
    """PyTorch reports these from its batched products, over the flattened batch dims."""
    batch = math.prod(query.shape[:-2])
    if query.shape[-1] != key.shape[-1]:
        raise _batch2_error(batch, query.shape[-1], key.shape[-1])
    if key.shape[-2] != value.shape[-2]:
        raise _batch2_error(batch, key.shape[-2], value.shape[-2])


def _check_mask_shape(attn_mask, shape):
    """The mask is added to the scores in place in PyTorch: it may not grow them."""
    shape = tuple(shape)
    both = tuple(broadcast_shapes(shape, tuple(attn_mask.shape)))
    if both != shape:
        raise RuntimeError(f"output with shape {list(shape)} doesn't match the broadcast shape {list(both)}")


def _repeat_heads(query, key, value):
    """``enable_gqa``: each of the key/value heads serves ``Hq / Hkv`` query heads in a row."""
    hq, hk, hv = query.shape[-3], key.shape[-3], value.shape[-3]
    if hq % hk or hq % hv:
        raise RuntimeError("Number of heads in key and value must divide the number of heads in ")
    if hk != hq:
        key = key.repeat_interleave(hq // hk, -3)
    if hv != hq:
        value = value.repeat_interleave(hq // hv, -3)
    return key, value


@functools.lru_cache(maxsize=64)
def _future(L, S, device):
    """The positions a causal query may not see: key ``j`` > query ``i`` (top-left aligned)."""
    return ones(L, S, dtype=_bool, device=device).triu(1)


def _additive(attn_mask, query):
    """A bool mask (True = take part) as the float mask PyTorch turns it into: 0 or -inf."""
    if attn_mask is None:
        return None
    if attn_mask.dtype.name != "bool":  # (a float32 mask is added in the query's dtype, as in PyTorch)
        return attn_mask if attn_mask.dtype == query.dtype else attn_mask.to(query.dtype)
    with no_grad():
        return zeros(attn_mask.shape, dtype=query.dtype, device=query.device).masked_fill_(
            attn_mask.logical_not(), float("-inf"))


def _with_dropout(query, key, value, bias, dropout_p, is_causal, scale):
    """PyTorch's math path, which dropout takes: the fused kernel's steps as separate
    nodes, with the dropout between the softmax and the product with ``value``."""
    L, S = query.shape[-2], key.shape[-2]
    scores = matmul(query * scale, key.transpose(-2, -1))
    if is_causal:
        scores = scores.masked_fill(_future(L, S, str(query.device)), float("-inf"))
    dead = None
    if bias is not None:
        with no_grad():
            dead = (bias == float("-inf")).all(-1, keepdim=True)
        dead = dead if bool(dead.any()) else None
        scores = scores + (bias if dead is None else bias.masked_fill(dead, 0.0))
    attn = softmax(scores, -1)
    if dead is not None:
        attn = attn.masked_fill(dead, 0.0)
    return matmul(dropout(attn, dropout_p, True), value)


def _untracked(query, key, value, is_causal, scale):
    """The output of a call that records nothing, without a mask, on batches of one shape
    whose sizes fit (the checks below hold then): the rule's kernel, its weights dropped;
    None for anything else (the general path then checks and serves it)."""
    arrays = untracked_arrays(query, key, value)
    if arrays is None:
        return None
    q, k, v = arrays
    if not (q.ndim >= 3 and q.shape[:-2] == k.shape[:-2] == v.shape[:-2] and q.shape[-1] == k.shape[-1]
            and k.shape[-2] == v.shape[-2] and q.shape[-1]):
        return None
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else float(scale)
    return untracked_result(_attention.impl(_cpu, q, k, v, None, scale=scale, causal=bool(is_causal))[0])


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                 enable_gqa=False):
    """``softmax(query @ key^T * scale + mask) @ value`` over the last two dims; shapes
    (..., L, E), (..., S, E), (..., S, Ev) -> (..., L, Ev)."""
    if attn_mask is None and dropout_p == 0.0 and not enable_gqa:
        out = _untracked(query, key, value, is_causal, scale)
        if out is not None:
            return out
    _check(query, key, value, attn_mask, dropout_p, is_causal)
    batched = min(query.ndim, key.ndim, value.ndim) >= 3
    if enable_gqa and batched:
        key, value = _repeat_heads(query, key, value)
    if batched:
        _check_sizes(query, key, value)
    if attn_mask is not None:
        _check_mask_shape(attn_mask, query.shape[:-1] + (key.shape[-2],))
    scale = 1.0 / math.sqrt(query.shape[-1]) if scale is None else float(scale)
    bias = _additive(attn_mask, query)
    if dropout_p > 0.0:
        return _with_dropout(query, key, value, bias, dropout_p, is_causal, scale)
    arrays = untracked_arrays(query, key, value) if bias is None else None
    if arrays is not None:  # (recording nothing: the output alone, not the weights)
        return untracked_result(_attention.impl(_cpu, *arrays, None, scale=scale, causal=bool(is_causal))[0])
    return _attention(query, key, value, bias, scale=scale, causal=bool(is_causal))[0]
