"""``embedding_bag``: the sum, mean or max of the embedding rows of each bag of indices,
without materialising the (bags, length, dim) lookup for ``sum`` and ``mean``.

The bag of every index is worked out on the host from ``offsets``; rows are gathered once
(``index_select``), weighted by ``per_sample_weights``, and summed into their bags with
``index_add`` (``mean`` divides by the bag's size); ``max`` pads the bags to a common length
with -inf rows. ``padding_idx`` entries are left out of their bag; an empty bag is zeros.
"""
import warnings

from ...backend import (
    cpu as host,  # host-side bag arithmetic (offsets and indices copied off the device)
)
from ...ops.shape import cat
from ...runtime import creation
from .misc import _padding_index, _renorm_rows

__all__ = ["embedding_bag"]


def _flatten_bags(input, offsets, per_sample_weights, include_last_offset):
    """(flat indices, offsets with the end appended, flat weights) for 1-D and 2-D inputs."""
    if input.dim() == 2:
        if offsets is not None:
            raise ValueError("if input is 2D, then offsets has to be None, as input is treated is a mini-batch of "
                             f"fixed length sequences. However, found offsets of type {type(offsets)}")
        starts = host.arange(0, input.numel() + 1, max(input.shape[1], 1)) if input.shape[1] else \
            host.zeros(input.shape[0] + 1, dtype=host.int64)
        if per_sample_weights is not None:
            per_sample_weights = per_sample_weights.reshape(-1)
        return input.reshape(-1), starts, per_sample_weights
    if input.dim() != 1:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension {input.dim()}")
    if offsets is None:
        raise ValueError("offsets has to be a 1D Tensor but got None")
    if offsets.dim() != 1:
        raise ValueError("offsets has to be a 1D Tensor")
    starts = host.asarray(offsets.tolist(), dtype=host.int64)
    n = input.numel()
    if starts.size and starts[0] != 0:
        raise RuntimeError("offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start from "
                           f"position 0. However, got {starts[0]}")
    if starts.size and starts[-1] > n:
        raise RuntimeError(f"offsets[-1] can not be greater than input's length {n} but got offsets[-1] of "
                           f"{starts[-1]}")
    if host.any(host.diff(starts) < 0):
        raise RuntimeError(f"embedding_bag: offsets must be non-decreasing, but got {starts.tolist()}")
    if not include_last_offset:
        starts = host.append(starts, n)
    return input, starts, per_sample_weights


def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2, scale_grad_by_freq=False, mode="mean",
                  sparse=False, per_sample_weights=None, include_last_offset=False, padding_idx=None):
    """(bags, dim): each bag's rows of ``weight`` combined by ``mode`` (sum, mean or max)."""
    if weight.dtype.name == "int64" and input.is_floating_point():
        warnings.warn("Argument order of nn.functional.embedding_bag was changed. Usage `embedding_bag(weight, "
                      "input, ...)` is deprecated, and should now be `embedding_bag(input, weight, ...)`.",
                      stacklevel=2)
        weight, input = input, weight
    if per_sample_weights is not None and input.size() != per_sample_weights.size():
        raise ValueError(f"embedding_bag: If per_sample_weights ({per_sample_weights.shape}) is not None, then it "
                         f"must have the same shape as the input ({input.shape})")
    if weight.dim() != 2:
        raise ValueError(f"weight has to be a 2D Tensor, but got Tensor of dimension {weight.dim()}")
    flat, starts, per_sample_weights = _flatten_bags(input, offsets, per_sample_weights, include_last_offset)
    if mode not in ("sum", "mean", "max"):
        raise ValueError("mode has to be one of sum, mean or max")
    if mode == "max" and scale_grad_by_freq:
        raise ValueError("max mode does not support scaling the gradient by the frequency")
    if mode == "max" and sparse:
        raise ValueError("max mode does not support sparse weights")
    if scale_grad_by_freq or sparse:
        raise NotImplementedError("embedding_bag: scale_grad_by_freq and sparse gradients are not supported")
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError("embedding_bag: per_sample_weights was not None. per_sample_weights is only "
                                  f"supported for mode='sum' (got mode='{mode}'). Please open a feature request "
                                  "on GitHub.")
    idx = host.asarray(flat.tolist(), dtype=host.int64).reshape(-1)
    rows_total = weight.shape[0]
    bad = host.flatnonzero((idx < 0) | (idx >= rows_total))
    if bad.size:
        raise RuntimeError(f"Index {bad[0]} of input takes value {idx[bad[0]]} which is not in the valid range "
                           f"[0, {rows_total})")
    if max_norm is not None:
        _renorm_rows(weight, flat._data, max_norm, norm_type)
    padding = _padding_index(padding_idx, rows_total)
    bags = len(starts) - 1
    bag_of = host.repeat(host.arange(bags), host.diff(starts))
    keep = host.flatnonzero(idx != padding) if padding >= 0 else host.arange(idx.size)
    bag_of = bag_of[keep]
    counts = host.bincount(bag_of, minlength=bags)

    def on_device(a):
        return creation.tensor(a, dtype=flat.dtype if a.dtype.kind == "i" else weight.dtype, device=weight.device)

    rows = weight.index_select(0, on_device(idx[keep]))
    if per_sample_weights is not None:
        rows = rows * per_sample_weights.reshape(-1).index_select(0, on_device(keep)).unsqueeze(1)
    dim = weight.shape[1]
    if mode != "max":
        out = creation.zeros(bags, dim, dtype=weight.dtype, device=weight.device)
        out = out.index_add(0, on_device(bag_of), rows)
        if mode == "mean":
            out = out / on_device(host.maximum(counts, 1).astype(host.float64)).unsqueeze(1)
        return out
    longest = int(counts.max()) if bags else 0
    if longest == 0:
        return creation.zeros(bags, dim, dtype=weight.dtype, device=weight.device)
    slot = host.arange(bag_of.size) - host.repeat(host.cumsum(counts) - counts, counts)
    table = host.full((bags, longest), keep.size, dtype=host.int64)  # keep.size: the -inf row
    table[bag_of, slot] = host.arange(bag_of.size)
    floor = creation.full((1, dim), float("-inf"), dtype=weight.dtype, device=weight.device)
    padded = cat([rows, floor]).index_select(0, on_device(table.reshape(-1)))
    best = padded.view(bags, longest, dim).max(1).values
    empty = on_device((counts == 0)[:, None].astype(host.float64)) > 0
    return best.masked_fill(empty, 0.0)
