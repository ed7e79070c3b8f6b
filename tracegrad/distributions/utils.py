"""Helpers the distributions share (``torch.distributions.utils``): parameters broadcast
together, probabilities <-> logits, lazily computed properties, lower triangles <->
vectors."""
import functools
import math
import numbers

import tracegrad

from ..runtime.type_info import finfo

__all__ = ["broadcast_all", "clamp_probs", "lazy_property", "logits_to_probs", "probs_to_logits",
           "tril_matrix_to_vec", "vec_to_tril_matrix"]

euler_constant = 0.57721566490153286060


def broadcast_all(*values):
    """The values as Tensors broadcast to one shape; numbers become (0-d) Tensors of the
    first Tensor's dtype and device (the default dtype when there is none). That shape is
    the batch shape of a distribution with these elementwise parameters: ``()`` when all
    are numbers."""
    if not all(isinstance(v, (tracegrad.Tensor, numbers.Number)) for v in values):
        raise ValueError("Input arguments must all be instances of Number, torch.Tensor or objects "
                         "implementing __torch_function__.")
    if not all(isinstance(v, tracegrad.Tensor) for v in values):
        like = next((v for v in values if isinstance(v, tracegrad.Tensor)), None)
        options = ({"dtype": tracegrad.get_default_dtype()} if like is None
                   else {"dtype": like.dtype, "device": like.device})
        values = [v if isinstance(v, tracegrad.Tensor) else tracegrad.tensor(v, **options) for v in values]
    return tracegrad.broadcast_tensors(*values)


def _standard_normal(shape, dtype, device):
    """Standard normal draws of ``shape`` (the noise of a reparameterized sample)."""
    return tracegrad.empty(shape, dtype=dtype, device=device).normal_()


def _sum_rightmost(value, dim):
    """``value`` summed over its ``dim`` rightmost dims."""
    if dim == 0:
        return value
    return value.reshape(tuple(value.shape[:-dim]) + (-1,)).sum(-1)


def logits_to_probs(logits, is_binary=False):
    """Probabilities from logits: a sigmoid of log-odds (``is_binary``), else a softmax
    over the last dim."""
    if is_binary:
        return tracegrad.sigmoid(logits)
    return tracegrad.nn.functional.softmax(logits, dim=-1)


def clamp_probs(probs):
    """``probs`` kept within [eps, 1 - eps] of their dtype, so that their logs are finite."""
    eps = finfo(probs.dtype).eps
    return probs.clamp(min=eps, max=1 - eps)


def probs_to_logits(probs, is_binary=False):
    """Logits from probabilities (clamped first): log-odds when ``is_binary``, else logs."""
    ps = clamp_probs(probs)
    if is_binary:
        return tracegrad.log(ps) - tracegrad.log1p(-ps)
    return tracegrad.log(ps)


class lazy_property:
    """A value computed from the instance on first access and then stored on it (a
    Categorical given logits computes its probs only when asked). It is computed with
    gradients enabled, so a value first read under ``no_grad`` still has its history."""

    def __init__(self, wrapped):
        self.wrapped = wrapped
        functools.update_wrapper(self, wrapped)

    def __get__(self, instance, obj_type=None):
        if instance is None:
            return _lazy_property_and_property(self.wrapped)
        with tracegrad.enable_grad():
            value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value


class _lazy_property_and_property(lazy_property, property):
    """What a lazy property is on the class: a property to documentation tools, a lazy
    property to argument validation (which skips values not computed yet)."""

    def __init__(self, wrapped):
        property.__init__(self, wrapped)


def tril_matrix_to_vec(mat, diag=0):
    """The lower triangle (below diagonal ``diag``) of a (batch of) square matrices, in
    row order."""
    n = mat.shape[-1]
    if diag < -n or diag >= n:
        raise ValueError(f"diag ({diag}) provided is outside [{-n}, {n - 1}].")
    idx = tracegrad.arange(n, device=mat.device)
    return mat[..., idx < idx.view(-1, 1) + (diag + 1)]


def vec_to_tril_matrix(vec, diag=0):
    """The inverse of :func:`tril_matrix_to_vec`: square lower-triangular matrices."""
    n = (-(1 + 2 * diag) + math.sqrt((1 + 2 * diag) ** 2 + 8 * vec.shape[-1] + 4 * abs(diag) * (diag + 1))) / 2
    if round(n) - n > finfo(vec.dtype).eps:
        raise ValueError(f"The size of last dimension is {vec.shape[-1]} which cannot be expressed as "
                         "the lower triangular part of a square D x D matrix.")
    n = round(n)
    mat = vec.new_zeros(tuple(vec.shape[:-1]) + (n, n))
    idx = tracegrad.arange(n, device=vec.device)
    mask = idx < idx.view(-1, 1) + (diag + 1)
    mat[..., mask] = vec
    return mat
