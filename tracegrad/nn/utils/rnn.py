"""``torch.nn.utils.rnn``: packed and padded batches of variable-length sequences.

A :class:`PackedSequence` holds the steps of a batch sorted by decreasing length, time
step by time step: ``data`` is (sum of lengths, *) and ``batch_sizes[t]`` counts the
sequences still running at step ``t``. Packing and padding are single gathers (one
``cat`` and one index node), so gradients flow back to the padded input or to the packed
data. ``batch_sizes`` and the index permutations are int64 CPU tensors, as in PyTorch.
"""
from collections.abc import Iterable
from typing import NamedTuple

from ...backend import (
    cpu as host,  # host-side (NumPy) arithmetic, never on device arrays
)
from ...backend import dtypes
from ...ops.shape import cat
from ...runtime.creation import arange, as_tensor, full, tensor
from ...runtime.shapes import broadcast_shapes
from ...runtime.tensor import Tensor

__all__ = [
    "PackedSequence",
    "invert_permutation",
    "pack_padded_sequence",
    "pack_sequence",
    "pad_packed_sequence",
    "pad_sequence",
    "unpack_sequence",
    "unpad_sequence",
]


class PackedSequence_(NamedTuple):
    data: Tensor
    batch_sizes: Tensor
    sorted_indices: Tensor = None
    unsorted_indices: Tensor = None


class PackedSequence(PackedSequence_):
    """(data, batch_sizes, sorted_indices, unsorted_indices); made by :func:`pack_padded_sequence`
    or :func:`pack_sequence`, consumed by the recurrent layers and :func:`pad_packed_sequence`.
    ``sorted_indices`` orders the original batch by decreasing length (None when it was
    already sorted) and ``unsorted_indices`` undoes that."""

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        return super().__new__(cls, *_init_args(data, batch_sizes, sorted_indices, unsorted_indices))

    def to(self, *args, **kwargs):
        """The data moved or cast; the permutations follow the data's device, the batch
        sizes stay on the CPU."""
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        move = (lambda t: None if t is None else t.to(data.device))
        return type(self)(data, self.batch_sizes, move(self.sorted_indices), move(self.unsorted_indices))

    def cuda(self, *args, **kwargs):
        return self.to("cuda", *args, **kwargs)

    def cpu(self, *args, **kwargs):
        return self.to("cpu", *args, **kwargs)

    def double(self):
        return self.to(dtype=dtypes.float64)

    def float(self):
        return self.to(dtype=dtypes.float32)

    def half(self):
        return self.to(dtype=dtypes.float16)

    def long(self):
        return self.to(dtype=dtypes.int64)

    def int(self):
        return self.to(dtype=dtypes.int32)

    def short(self):
        return self.to(dtype=dtypes.int16)

    def char(self):
        return self.to(dtype=dtypes.int8)

    def byte(self):
        return self.to(dtype=dtypes.uint8)

    @property
    def is_cuda(self):
        return self.data.is_cuda

    def is_pinned(self):
        return False


def _init_args(data, batch_sizes, sorted_indices, unsorted_indices):
    if unsorted_indices is None:
        unsorted_indices = invert_permutation(sorted_indices)
    if batch_sizes is not None:
        if batch_sizes.device.type != "cpu":
            raise ValueError("batch_sizes should always be on CPU. Instances of PackedSequence should never be "
                             "created manually. They should be instantiated by functions like pack_sequence and "
                             "pack_padded_sequences in nn.utils.rnn. "
                             "https://pytorch.org/docs/stable/nn.html#torch.nn.utils.rnn.pack_sequence")
        return data, batch_sizes, sorted_indices, unsorted_indices
    if not (isinstance(data, (list, tuple)) and len(data) == 2):
        raise AssertionError("Expected data to be a list or tuple of length 2")
    return data[0], data[1], sorted_indices, unsorted_indices


def invert_permutation(permutation):
    """The permutation that undoes ``permutation`` (None for None)."""
    if permutation is None:
        return None
    p = host.asarray(permutation.cpu().numpy())
    inverse = host.empty_like(p)
    inverse[p] = host.arange(p.size)
    return tensor(inverse, device=permutation.device)


def _steps_index(batch_sizes, batch):
    """Flat (time * batch + b) positions of the packed rows, step by step."""
    return host.concatenate([t * batch + host.arange(n) for t, n in enumerate(batch_sizes)]) if len(batch_sizes) \
        else host.zeros(0, dtype=host.int64)


def lengths_array(lengths):
    """Lengths or batch sizes (a tensor or a sequence) as a 1-D int64 NumPy array."""
    if isinstance(lengths, Tensor):
        return host.asarray(lengths.cpu().numpy()).astype(host.int64).reshape(-1)
    return host.asarray(lengths, dtype=host.int64).reshape(-1)


def pack_padded_sequence(input, lengths, batch_first=False, enforce_sorted=True):
    """Pack a padded (T, B, *) batch (B, T, * with ``batch_first``) of sequences whose true
    lengths are ``lengths``. With ``enforce_sorted`` the lengths must be decreasing;
    otherwise the batch is sorted here and the permutation kept in the result."""
    dims = host.ndim(lengths.cpu().numpy() if isinstance(lengths, Tensor) else lengths)
    if dims != 1:  # (PyTorch's two errors: the sort's index_select, or the packing's check)
        if not enforce_sorted:
            raise IndexError("index_select(): Index is supposed to be a vector")
        raise RuntimeError(f"'lengths' argument should be a 1D CPU int64 tensor, but got {dims}D cpu Long tensor")
    lens = lengths_array(lengths)
    sorted_indices = None
    if not enforce_sorted:
        order = host.argsort(-lens, kind="stable")
        lens = lens[order]
        sorted_indices = tensor(order, device=input.device)
        input = input.index_select(0 if batch_first else 1, sorted_indices)
    if batch_first:
        input = input.transpose(0, 1)
    batch = input.shape[1]
    if lens.size != batch:
        raise RuntimeError(f"Expected `len(lengths)` to be equal to batch_size, but got {lens.size} "
                           f"(batch_size={batch})")
    if lens.size and lens.min() <= 0:
        raise RuntimeError("Length of all samples has to be greater than 0, but found an element in 'lengths' "
                           "that is <= 0")
    if host.any(host.diff(lens) > 0):
        raise RuntimeError("`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. You "
                           "can pass `enforce_sorted=False` to pack_padded_sequence and/or pack_sequence to "
                           "sidestep this requirement if you do not need ONNX exportability.")
    if lens.size and lens[0] > input.shape[0]:
        raise RuntimeError(f"pack_padded_sequence: a length ({lens[0]}) exceeds the padded sequence length "
                           f"({input.shape[0]})")
    steps = int(lens[0]) if lens.size else 0
    batch_sizes = (lens[None, :] > host.arange(steps)[:, None]).sum(1).astype(host.int64)
    return PackedSequence(packed_rows(input, batch_sizes), tensor(batch_sizes), sorted_indices, None)


def packed_rows(input, batch_sizes):
    """The rows of a time-major (T, B, *) batch that a packing with ``batch_sizes`` (a
    NumPy array) keeps, step by step: the packed ``data``."""
    batch = input.shape[1]
    flat = input.reshape((input.shape[0] * batch,) + tuple(input.shape[2:]))
    return flat[tensor(_steps_index(batch_sizes, batch), device=input.device)]


def padded_steps(data, batch_sizes, max_len=None, padding_value=0.0):
    """Packed ``data`` laid out time-major, (max_len, B, *), with ``padding_value`` past
    each sequence's end (``batch_sizes``: a NumPy array)."""
    max_len = batch_sizes.size if max_len is None else max_len
    batch = int(batch_sizes[0]) if batch_sizes.size else 0
    pad_row = full((1,) + tuple(data.shape[1:]), padding_value, dtype=data.dtype, device=data.device)
    where = host.full(max_len * batch, data.shape[0], dtype=host.int64)  # default: the padding row
    where[_steps_index(batch_sizes, batch)] = host.arange(data.shape[0])
    return cat([data, pad_row])[tensor(where, device=data.device)].reshape((max_len, batch) + tuple(data.shape[1:]))


def pad_packed_sequence(sequence, batch_first=False, padding_value=0.0, total_length=None):
    """The inverse of :func:`pack_padded_sequence`: (padded batch, lengths), in the batch's
    original order, padded with ``padding_value`` to ``total_length`` steps if given."""
    batch_sizes = lengths_array(sequence.batch_sizes)
    max_len = batch_sizes.size
    if total_length is not None:
        if total_length < max_len:
            raise ValueError("Expected total_length to be at least the length of the longest sequence in input, "
                             f"but got total_length={total_length} and max sequence length being {max_len}")
        max_len = total_length
    batch = int(batch_sizes[0]) if batch_sizes.size else 0
    padded = padded_steps(sequence.data, batch_sizes, max_len, padding_value)
    lengths = (batch_sizes[None, :] > host.arange(batch)[:, None]).sum(1).astype(host.int64)
    if batch_first:
        padded = padded.transpose(0, 1)
    if sequence.unsorted_indices is not None:
        order = sequence.unsorted_indices
        return padded.index_select(0 if batch_first else 1, order), tensor(lengths[order.cpu().numpy()])
    return padded, tensor(lengths)


def _fitted(seq, trailing, dtype):
    """``seq`` as PyTorch copies it into the padded output: broadcast to the first
    sequence's trailing shape and cast to its dtype."""
    shape = (seq.shape[0],) + trailing
    if tuple(broadcast_shapes(shape, tuple(seq.shape))) != shape:
        raise RuntimeError(f"output with shape {list(shape)} doesn't match the broadcast shape "
                           f"{list(broadcast_shapes(shape, tuple(seq.shape)))}")
    if tuple(seq.shape) != shape:
        seq = seq.expand(shape)
    return seq if seq.dtype == dtype else seq.to(dtype)


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    """Stack sequences of shapes (L_i, *) into (max L, B, *) -- (B, max L, *) with
    ``batch_first`` -- padding each at its end (``padding_side='left'``: at its start)."""
    if isinstance(sequences, Tensor):
        sequences = sequences.unbind(0)
    elif not isinstance(sequences, Iterable):
        raise RuntimeError(f"pad_sequence: Expected iterable for input sequences, but got arg of type: "
                           f"{type(sequences)}")
    sequences = tuple(sequences)
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    if padding_side not in ("left", "right"):
        raise RuntimeError(f"Expected padding_side to be one of left or right, but got {padding_side}.")
    first = sequences[0]
    trailing = tuple(first.shape[1:])
    sequences = [_fitted(s, trailing, first.dtype) for s in sequences]
    lens = host.array([s.shape[0] for s in sequences], dtype=host.int64)
    max_len = int(lens.max())
    data = cat(sequences + [full((1,) + trailing, padding_value, dtype=first.dtype, device=first.device)])
    starts = host.concatenate([[0], host.cumsum(lens)[:-1]])
    pos = host.arange(max_len)[None, :]
    shift = (max_len - lens)[:, None] if padding_side == "left" else 0
    step = pos - shift  # (B, max_len): which row of each sequence goes there
    where = host.where((step >= 0) & (step < lens[:, None]), starts[:, None] + step, data.shape[0] - 1)
    out = data[tensor(where if batch_first else where.T.copy())]
    return out


def unpad_sequence(padded_sequences, lengths, batch_first=False):
    """The sequences of a padded batch, cut to their lengths. (PyTorch also transposes a
    time-major ``padded_sequences`` in place, as a side effect; tracegrad has no
    ``transpose_``, so the caller's tensor is left as it was.)"""
    if not batch_first:
        padded_sequences = padded_sequences.transpose(0, 1)
    idx = arange(padded_sequences.shape[1], device=lengths.device)
    return [seq[idx < length] for seq, length in zip(padded_sequences, lengths, strict=True)]


def pack_sequence(sequences, enforce_sorted=True):
    """:func:`pack_padded_sequence` of :func:`pad_sequence` of ``sequences``."""
    lengths = as_tensor([v.size(0) for v in sequences])
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences):
    """The list of sequences packed in ``packed_sequences``, in their original order."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
