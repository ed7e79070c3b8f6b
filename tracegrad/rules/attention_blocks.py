"""Causal attention by blocks of queries: the kernels of :mod:`tracegrad.rules.attention`
when ``causal`` and no mask, for sequences of at least 256 queries.

Under the causal mask, query ``i`` sees keys ``0..i``: the upper triangle of the score
matrix is -inf, yet the plain kernel computes its products, its exponentials (NumPy's
float32 ``exp`` costs ~15 element-wise multiplications) and its softmax passes, to give
zeros. Cut into ``n`` blocks of queries, block ``b`` only needs the keys up to its last
query, so the work falls to ``(n + 1) / 2n`` of it (5/8 with 4 blocks), as PyTorch's
flash kernel skips the masked tiles. Each step covers all the batch's matrices at once,
so the blocks add few NumPy calls (which still cost more than they save below 256
queries). Values are those of the plain kernel up to rounding (the same sums in another
order); the weights ``P`` are returned in full (zeros above the diagonal), and the
backward is the plain one: blocks there would give the eager gradients other roundings
than a compiled module's (which records the composite vjp).
"""
from ..backend import cpu as host  # host-side (NumPy) shape arithmetic

__all__ = ["forward", "query_blocks"]

# Blocks of 64 queries, at most 8, from 256 queries on (measured on float32 heads of 16-32
# dims: 4 blocks of 64 took 12% less time than none at 256 queries, 2 blocks lost 7% at 128).
MIN_QUERIES, BLOCK, NMAX = 256, 64, 8


def query_blocks(L, S):
    """``(i0, i1, j1)`` per block: queries ``i0..i1-1`` and the keys ``0..j1-1`` they
    can see; None where blocks would not pay (fewer than :data:`MIN_QUERIES` queries)."""
    if L < MIN_QUERIES:
        return None
    n = min(NMAX, L // BLOCK)
    edges = [L * b // n for b in range(n + 1)]
    return tuple((edges[b], edges[b + 1], min(edges[b + 1], S)) for b in range(n))


def _batch(q, k, v):
    return tuple(host.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2]))


def forward(xp, q, k, v, scale, blocks, mask, softmax_):
    """(O, P) of causal attention; ``mask`` is the (S, L) additive causal mask in the
    keys-first layout, ``softmax_`` the in-place softmax over dim -2."""
    batch = _batch(q, k, v)
    S, L = mask.shape
    dtype = xp.result_type(q, k, v)
    pt = xp.zeros(batch + (S, L), dtype=dtype)  # P^T, keys first
    out = xp.zeros(batch + (L, v.shape[-1]), dtype=dtype)
    qs = q * scale
    for i0, i1, j1 in blocks:
        if j1 == 0:  # (no key at all: zero weights, zero output)
            continue
        stb = xp.matmul(k[..., :j1, :], xp.swapaxes(qs[..., i0:i1, :], -1, -2))
        stb += mask[:j1, i0:i1]
        softmax_(xp, stb)
        pt[..., :j1, i0:i1] = stb
        out[..., i0:i1, :] = xp.matmul(xp.swapaxes(stb, -1, -2), v[..., :j1, :])
    return out, xp.swapaxes(pt, -1, -2)
