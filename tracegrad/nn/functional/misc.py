"""``linear``, ``bilinear``, the dropouts, ``embedding``, ``one_hot`` and ``pad``: the
stateless forms of the basic layers, with PyTorch's argument checks and messages.

Each is a composition of rule-table primitives (``addmm``, ``einsum``, ``mul``) or, where
one node is faster and matches PyTorch's graph, a rule of :mod:`tracegrad.rules.nn`.
"""
import math

from ... import backend
from ...backend.dtypes import float32, float64
from ...ops import linalg as _linalg
from ...ops._args import every_sample, per_sample
from ...ops.linalg import addmm, einsum, matmul
from ...ops.pointwise import where
from ...rules import linalg as _linalg_rules
from ...rules import nn as _rules
from ...rules import shape as _shape_rules
from ...rules.index import indices_below
from ...runtime import creation
from ...runtime.creation import _stream
from ...runtime.fastpath import eager_binary, untracked_arrays, untracked_indices, untracked_result
from ...runtime.grad_mode import no_grad
from ...runtime.tensor import PLAIN_SUBCLASSES as _PLAIN
from ...runtime.tensor import Tensor, wrap
from ...runtime.viewpath import view_op

__all__ = ["linear", "bilinear", "prelu", "dropout", "dropout1d", "dropout2d", "dropout3d",
           "feature_alpha_dropout", "alpha_dropout", "embedding", "one_hot", "pad"]

# -- linear maps ------------------------------------------------------------------------------------

def linear(input, weight, bias=None):
    """``input @ weight.T + bias``. A matrix input is one ``addmm`` (an AddmmBackward0 node,
    as in PyTorch); other ranks fold their leading dims into one, as PyTorch does."""
    if (type(input) is Tensor or type(input) in _PLAIN) and (type(weight) is Tensor or type(weight) in _PLAIN):
        # the common case (float tensors of one dtype and matching sizes): the checks
        # below pass, so it goes straight to the rules
        x, w = input._data, weight._data
        if w.ndim == 2 and x.ndim >= 2 and x.shape[-1] == w.shape[1] and x.dtype == w.dtype and x.dtype.kind == "f":
            fast = _linear_untracked(input, weight, bias)
            if fast is not None:
                return fast
            if bias is None:
                return _matmul(input, view_op(_shape_rules.t, weight, {}))
    _linalg._tensor(input, "linear", "input", 1)
    _linalg._tensor(weight, "linear", "weight", 2)
    if input.ndim == 0 or weight.ndim == 0:
        raise RuntimeError(f"both arguments to linear need to be at least 1D, but they are "
                           f"{input.ndim}D and {weight.ndim}D")
    fast = _linear_untracked(input, weight, bias)
    if fast is not None:
        return fast
    if bias is None and weight.ndim == 2 and input.ndim > 2 and input.shape[-1] == weight.shape[1] and (
            input.dtype is weight.dtype and input.dtype.is_floating_point):
        return _matmul(input, weight.t())  # (what matmul's checks would pass)
    if bias is None or weight.ndim != 2:
        out = matmul(input, weight.t())
        return out if bias is None else out + bias
    if input.ndim == 2:
        return addmm(bias, input, weight.t())
    out = addmm(bias, input.reshape(-1, input.shape[-1]), weight.t())
    return out.view(*input.shape[:-1], out.shape[-1])


_matmul = eager_binary(_linalg_rules.matmul)  # (the rule's Tensor fast path: no ops-level checks)


def _linear_untracked(input, weight, bias):
    """``linear`` that records nothing (no_grad, or nothing requires grad) on plain float
    CPU tensors of matching sizes: the kernels of the general path's rules (matmul, or
    addmm for a bias) on the arrays, without the transposed weight's view op; None
    where that path must run (anything else, including every error)."""
    arrays = untracked_arrays(input, weight, bias)  # (first: None at once in grad mode)
    if arrays is None:
        return None
    x, w, b = arrays
    if w.ndim != 2 or x.ndim < 2 or x.shape[-1] != w.shape[1] or (b is not None and b.shape != (w.shape[0],)):
        return None
    if b is None:
        return untracked_result(_linalg_rules.matmul.impl(backend.cpu, x, w.T))
    shape = x.shape
    if x.ndim != 2:
        x = x.reshape(math.prod(shape[:-1]), shape[-1])
    out = _linalg_rules.addmm.impl(backend.cpu, b, x, w.T, beta=1, alpha=1)
    return untracked_result(out if len(shape) == 2 else out.reshape(shape[:-1] + (out.shape[-1],)))


def bilinear(input1, input2, weight, bias=None):
    """``y[..., o] = input1[..., i] * weight[o, i, j] * input2[..., j] + bias[o]``."""
    if input1.ndim != input2.ndim:
        raise RuntimeError(f"bilinear(): input dimensions do not match: got {input1.ndim} and {input2.ndim}")
    for d in range(input1.ndim - 1):
        if input1.shape[d] != input2.shape[d]:
            raise RuntimeError(f"bilinear(): input batch dimensions do not match at dim {d}: got "
                               f"{input1.shape[d]} and {input2.shape[d]}")
    if weight.ndim != 3:
        raise RuntimeError(f"bilinear(): weight must be a 3-D tensor, got {weight.ndim}-D")
    for k, x in ((1, input1), (2, input2)):
        if x.shape[-1] != weight.shape[k]:
            raise RuntimeError(f"bilinear(): input{k} size does not match weight size: got "
                               f"{x.shape[-1]} but expected {weight.shape[k]}")
    if bias is not None and bias.shape[-1] != weight.shape[0]:
        raise RuntimeError(f"bilinear(): bias size does not match weight size: got {bias.shape[-1]} "
                           f"but expected {weight.shape[0]}")
    out = einsum("...i,oij,...j->...o", input1, weight, input2)
    return out if bias is None else out + bias


def prelu(input, weight):
    """``max(0, x) + weight * min(0, x)``, ``weight`` one slope or one per channel (dim 1)."""
    if input.ndim == 0:
        raise RuntimeError("Not allow zero-dim input tensor.")
    if weight.ndim > 1:
        raise RuntimeError(f"prelu: Expected `weight` to be a scalar or 1D tensor, but got: ndim = {weight.ndim}")
    channels = input.shape[1] if input.ndim >= 2 else 1
    if weight.numel() != 1 and weight.numel() != channels:
        raise RuntimeError(f"Mismatch of parameter numbers and input channel size. Found parameter numbers = "
                           f"{weight.numel()} and channel size = {channels}.")
    if weight.numel() != 1 and input.ndim >= 2:
        weight = weight.reshape((channels,) + (1,) * (input.ndim - 2))
    return where(input > 0, input, weight * input)


# -- dropout ----------------------------------------------------------------------------------------

def _check_p(p):
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _noise(input, shape, p):
    """Bernoulli(1 - p) keep-mask scaled by 1 / (1 - p), in ``input``'s dtype and device."""
    xp = backend.namespace_of(input._data)
    keep = 1.0 - p
    if creation.random_hook is not None:  # under vmap: drawn by a factory, as its randomness= says
        u = creation.rand(shape, dtype=float64 if input.dtype.itemsize == 8 else float32, device=input.device)
        return (u < keep).to(input.dtype) * (1.0 / keep)
    u = _stream(None, xp).random(shape, dtype="float64" if input.dtype.itemsize == 8 else "float32")
    noise = xp.asarray(u < keep).astype(input._data.dtype)
    noise *= 1.0 / keep
    return wrap(noise)


def _dropout(input, p, training, inplace, shape):
    """``input * noise`` (a MulBackward0 node, as in PyTorch); the input itself when there is
    nothing to drop, zeros (still through a multiplication) when p == 1."""
    if p == 0 or not training or input.numel() == 0:
        return input
    if p == 1:
        noise = wrap(backend.namespace_of(input._data).zeros((), dtype=input._data.dtype))
    else:
        noise = _noise(input, shape, p)
    return input.mul_(noise) if inplace else input * noise


def dropout(input, p=0.5, training=True, inplace=False):
    """Zero each element with probability ``p`` and scale the rest by ``1 / (1 - p)``."""
    _check_p(p)
    return _dropout(input, p, training, inplace, input.shape)


def _feature_dropout(input, p, training, inplace):
    """Drop whole channels: one draw per (batch, channel) pair."""
    if input.ndim < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    return _dropout(input, p, training, inplace, tuple(input.shape[:2]) + (1,) * (input.ndim - 2))


def _batched_feature_dropout(input, p, training, inplace, batched):
    """Feature dropout on an input that may lack its batch dim (added, then removed)."""
    if not batched:
        input = input.unsqueeze_(0) if inplace else input.unsqueeze(0)
    result = _feature_dropout(input, p, training, inplace)
    if not batched:
        result = result.squeeze_(0) if inplace else result.squeeze(0)
    return result


def dropout1d(input, p=0.5, training=True, inplace=False):
    _check_p(p)
    if input.ndim not in (2, 3):
        raise RuntimeError(
            f"dropout1d: Expected 2D or 3D input, but received a {input.ndim}D input. Note that dropout1d "
            "exists to provide channel-wise dropout on inputs with 1 spatial dimension, a channel "
            "dimension, and an optional batch dimension (i.e. 2D or 3D inputs).")
    return _batched_feature_dropout(input, p, training, inplace, input.ndim == 3)


def dropout2d(input, p=0.5, training=True, inplace=False):
    import warnings
    _check_p(p)
    if input.ndim not in (3, 4):
        warnings.warn(
            f"dropout2d: Received a {input.ndim}-D input to dropout2d, which is deprecated and will result "
            "in an error in a future release. To retain the behavior and silence this warning, please use "
            "dropout instead. Note that dropout2d exists to provide channel-wise dropout on inputs with 2 "
            "spatial dimensions, a channel dimension, and an optional batch dimension (i.e. 3D or 4D "
            "inputs).", stacklevel=2)
    if input.ndim == 3:
        warnings.warn(
            "dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D dropout "
            "behavior is desired - input is interpreted as shape (N, C, L), where C is the channel dim. "
            "This behavior will change in a future release to interpret the input as one without a batch "
            "dimension, i.e. shape (C, H, W). To maintain the 1D channel-wise dropout behavior, please "
            "switch to using dropout1d instead.", stacklevel=2)
    return _feature_dropout(input, p, training, inplace)


def dropout3d(input, p=0.5, training=True, inplace=False):
    import warnings
    _check_p(p)
    if input.ndim not in (4, 5):
        warnings.warn(
            f"dropout3d: Received a {input.ndim}-D input to dropout3d, which is deprecated and will result "
            "in an error in a future release. To retain the behavior and silence this warning, please use "
            "dropout instead. Note that dropout3d exists to provide channel-wise dropout on inputs with 3 "
            "spatial dimensions, a channel dimension, and an optional batch dimension (i.e. 4D or 5D "
            "inputs).", stacklevel=2)
    return _batched_feature_dropout(input, p, training, inplace, input.ndim == 5)


_SELU_SATURATION = 1.7580993408473766  # selu's scale * alpha: -this is its negative saturation


def _alpha_dropout(input, p, training, inplace, shape):
    """Dropout that keeps SELU's self-normalising mean and variance: dropped units take the
    negative saturation value, then an affine map restores the moments (PyTorch's formula)."""
    if p == 0 or not training or input.numel() == 0:
        return input
    if p == 1:
        zero = wrap(backend.namespace_of(input._data).zeros((), dtype=input._data.dtype))
        return input.mul_(zero) if inplace else input * zero
    keep = 1.0 - p
    a = 1.0 / math.sqrt((_SELU_SATURATION ** 2 * p + 1) * keep)
    xp = backend.namespace_of(input._data)
    u = _stream(None, xp).random(shape, dtype="float64" if input.dtype.itemsize == 8 else "float32")
    kept = xp.asarray(u < keep).astype(input._data.dtype)
    shift = wrap((kept - 1) * (_SELU_SATURATION * a) + _SELU_SATURATION * a * p)
    scale = wrap(kept * a)
    if inplace:
        return input.mul_(scale).add_(shift)
    return (input * scale).add_(shift)


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    _check_p(p)
    return _alpha_dropout(input, p, training, inplace, input.shape)


def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):
    _check_p(p)
    if input.ndim < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    return _alpha_dropout(input, p, training, inplace, tuple(input.shape[:2]) + (1,) * (input.ndim - 2))


# -- embedding, one_hot ------------------------------------------------------------------------------

def _index_dtype_check(input, fn):
    if input.dtype.name not in ("int64", "int32"):
        raise RuntimeError(f"Expected tensor for argument #1 'indices' to have one of the following scalar "
                           f"types: Long, Int; but got {input.type()} instead (while checking arguments for {fn})")


def _padding_index(padding_idx, num_embeddings):
    """PyTorch's ``padding_idx``: negative counts from the end; -1 internally means none."""
    if padding_idx is None:
        return -1
    if padding_idx > 0 and padding_idx >= num_embeddings or padding_idx < -num_embeddings:
        raise AssertionError("Padding_idx must be within num_embeddings")
    return padding_idx % num_embeddings


def _untracked_embedding(input, weight, padding_idx):
    """The rows of a call that records nothing (plain CPU Tensors, a 2-d weight, int64 or
    int32 indices): one bounds test -- read as unsigned, a negative index is huge -- and
    NumPy's ``take``; None for anything else (the general path then checks and serves it)."""
    arrays = untracked_arrays(weight)
    idx = None if arrays is None else untracked_indices(input)
    if idx is None:
        return None
    w = arrays[0]
    if type(idx) is not _NDARRAY or idx.dtype not in _INDEX_DTYPES or w.ndim != 2:
        return None
    _padding_index(padding_idx, w.shape[0])
    if idx.size and not indices_below(idx, w.shape[0]):
        raise IndexError("index out of range in self")
    return untracked_result(w.take(idx, axis=0))


_NDARRAY = backend.cpu.ndarray
_INDEX_DTYPES = (backend.cpu.dtype("int32"), backend.cpu.dtype("int64"))


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False,
              sparse=False):
    """Rows of ``weight`` picked by the integer ``input`` (shape ``(*input.shape, dim)``);
    the ``padding_idx`` row gets no gradient; ``max_norm`` renormalises (in place, as in
    PyTorch) the rows it picks whose norm exceeds it."""
    if max_norm is None and not (scale_grad_by_freq or sparse):
        out = _untracked_embedding(input, weight, padding_idx)
        if out is not None:
            return out
    padding = _padding_index(padding_idx, weight.shape[0])
    if sparse:
        raise NotImplementedError("embedding: sparse gradients are not supported (tracegrad has no sparse "
                                  "embedding gradients; sparse=False gives the same values densely)")
    _index_dtype_check(input, "embedding")
    if weight.ndim != 2:
        raise RuntimeError("'weight' must be 2-D")
    idx = every_sample(input)._data  # (under vmap: every sample's indices)
    if idx.size and (int(idx.min()) < 0 or int(idx.max()) >= weight.shape[0]):
        raise IndexError("index out of range in self")
    if max_norm is not None:
        if per_sample(weight):
            raise NotImplementedError("vmap: embedding(max_norm=...) renormalises the weight in place, which "
                                      "tracegrad does not support for a weight batched by vmap")
        _renorm_rows(weight, idx, max_norm, norm_type)  # (the rows any sample picks: as a loop would)
    if scale_grad_by_freq:
        return _rules.embedding(weight, input, padding_idx=padding, scale_grad_by_freq=True)
    return _rules.embedding(weight, input, padding_idx=padding)


def _renorm_rows(weight, idx, max_norm, norm_type):
    """``embedding_renorm_``: rows of ``weight`` used by ``idx`` scaled down to ``max_norm``."""
    xp = backend.namespace_of(weight._data)
    rows = xp.unique(idx.reshape(-1))
    w = weight._data
    picked = w[rows]
    if norm_type == math.inf:
        norms = xp.abs(picked).max(axis=1)
    else:
        norms = (xp.abs(picked) ** norm_type).sum(axis=1) ** (1.0 / norm_type)
    over = norms > max_norm
    if bool(over.any()):
        scale = (max_norm / (norms[over] + 1e-7)).astype(w.dtype)
        with no_grad():
            w[rows[over]] = picked[over] * scale[:, None]
            weight._bump_version()


def one_hot(tensor, num_classes=-1):
    """int64 tensor with a trailing dim of ``num_classes``, 1 at each value's position."""
    if not isinstance(tensor, Tensor) or tensor.dtype.name != "int64":
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    if per_sample(tensor):  # under vmap: compared through primitives, each sample its own
        if num_classes == -1:
            raise RuntimeError("When vmap-ing torch.nn.functional.one_hot, please provide an explicit "
                               "positive num_classes argument.")
        every = every_sample(tensor)._data  # (each sample's classes checked, as outside vmap)
        if every.size and int(every.min()) < 0:
            raise RuntimeError("Class values must be non-negative.")
        if every.size and int(every.max()) >= num_classes:
            raise RuntimeError("Class values must be smaller than num_classes.")
        return (tensor.unsqueeze(-1) == creation.arange(num_classes, device=tensor.device)).long()
    x = tensor._data
    xp = backend.namespace_of(x)
    if num_classes == -1:
        if x.size == 0:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        num_classes = int(x.max()) + 1
    if x.size:
        if int(x.min()) < 0:
            raise RuntimeError("Class values must be non-negative.")
        if int(x.max()) >= num_classes:
            raise RuntimeError("Class values must be smaller than num_classes.")
    elif num_classes < 0:
        raise RuntimeError("Class values must be smaller than num_classes.")
    return wrap((x[..., None] == xp.arange(num_classes)).astype("int64"))


# -- pad ----------------------------------------------------------------------------------------------

_PAD_MODES = ("constant", "reflect", "replicate", "circular")
_PAD_SUPPORT = ("Supported combinations for non-constant padding:\n"
                "  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
                "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
                "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)")


def _pad_tuple(pad):
    out = []
    for k, p in enumerate(pad):
        if isinstance(p, Tensor):
            p = p.item()
        if not isinstance(p, int) or isinstance(p, bool):
            raise TypeError(f"pad(): argument 'pad' failed to unpack the object at pos {k + 1} with error "
                            f"\"type must be tuple of ints,but got {type(p).__name__}\"")
        out.append(p)
    return tuple(out)


def pad(input, pad, mode="constant", value=None):
    """Pad the last ``len(pad) // 2`` dims (``pad`` lists (before, after) from the last dim
    backwards): with ``value`` (``constant``, negative amounts crop), by mirroring
    (``reflect``), repeating the edge (``replicate``) or wrapping around (``circular``)."""
    pad = _pad_tuple(pad)
    if len(pad) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    if len(pad) > 2 * input.ndim:
        raise RuntimeError(f"Padding length should be less than or equal to two times the input dimension "
                           f"but got padding length {len(pad)} and input of dimension {input.ndim}")
    if mode not in _PAD_MODES:
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    if mode == "constant":
        for d, before, after in _rules._pairs(pad, input.ndim):
            if input.shape[d] + before + after < 0:
                raise RuntimeError("narrow(): length must be non-negative.")
        return _rules.constant_pad_nd(input, pad=pad, value=0.0 if value is None else value)
    if value is not None and value != 0:
        raise RuntimeError(f'Padding mode "{mode}" doesn\'t take in value argument')
    k = len(pad) // 2
    if k not in (1, 2, 3) or input.ndim not in (k + 1, k + 2):
        raise NotImplementedError(f"Padding size {len(pad)} is not supported for {input.ndim}D input tensor.\n"
                                  + _PAD_SUPPORT)
    first = 1 if input.ndim == k + 2 else 0  # a batch dim may be empty, the others may not
    if any(s == 0 for s in input.shape[first:]):
        raise RuntimeError(f"Expected {k + 1}D or {k + 2}D (batch mode) tensor with possibly 0 batch size and "
                           f"other non-zero dimensions for input, but got: {list(input.shape)}")
    for j, (d, before, after) in enumerate(_rules._pairs(pad, input.ndim)):
        n = input.shape[d]
        if mode == "reflect" and (before >= n or after >= n):
            raise RuntimeError(f"Argument #{2 * j + 4}: Padding size should be less than the corresponding input "
                               f"dimension, but got: padding ({before}, {after}) at dimension {d} of input "
                               f"{list(input.shape)}")
        if mode == "circular" and (before > n or after > n):
            raise RuntimeError("Padding value causes wrapping around more than once.")
        if n + before + after < 0:
            raise RuntimeError("narrow(): length must be non-negative.")
    return _rules.pad_nd(input, pad=pad, mode=mode)
