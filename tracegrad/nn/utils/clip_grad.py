"""Gradient clipping: ``clip_grad_norm_``, ``clip_grad_value_`` (and the two halves of the
first, ``get_total_norm`` and ``clip_grads_with_norm_``), as in ``torch.nn.utils``.

The norms and the scaling work on the gradients' backend arrays through the rule table's
own ``vector_norm`` kernel (no Tensor dispatch per gradient), grouped by device; each
gradient's version counter is bumped as an in-place ``mul_`` would.
"""
import functools
import math
import types
import warnings

from ... import backend
from ...ops._args import every_sample, per_sample
from ...rules import reduce as R
from ...runtime.grad_mode import no_grad
from ...runtime.tensor import Tensor, wrap

__all__ = ["clip_grad_norm", "clip_grad_norm_", "clip_grad_value_", "clip_grads_with_norm_",
           "get_total_norm"]


def _no_grad(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with no_grad():
            return fn(*args, **kwargs)
    return wrapper


def _tensor_list(tensors):
    return [tensors] if isinstance(tensors, Tensor) else list(tensors)


def _grads(parameters):
    return [p.grad for p in _tensor_list(parameters) if p.grad is not None]


@_no_grad
def get_total_norm(tensors, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """The ``norm_type``-norm of all ``tensors`` together (as if concatenated), a 0-d tensor."""
    tensors = _tensor_list(tensors)
    norm_type = float(norm_type)
    if not tensors:
        return wrap(backend.cpu.asarray(0.0, dtype="float32"))
    if any(per_sample(t) for t in tensors):  # under vmap (per-sample clipping): through ops, which batch
        from ...linalg import vector_norm
        from ...ops.shape import stack
        total = vector_norm(stack([vector_norm(t, norm_type) for t in tensors]), norm_type)
        if error_if_nonfinite and not bool(every_sample(total).isfinite().all()):
            raise RuntimeError(_NONFINITE.format(norm_type=norm_type))
        return total
    first = tensors[0]._data
    xp = backend.namespace_of(first)
    norms = []
    for t in tensors:
        a = t._data
        if backend.namespace_of(a) is not xp:
            a = xp.asarray(backend.namespace_of(a).to_host(a))
        norms.append(R.vector_norm.impl(xp, a, ord=norm_type))
    stacked = xp.stack([xp.asarray(n) for n in norms])
    total = wrap(xp.asarray(R.vector_norm.impl(xp, stacked, ord=norm_type)))
    if error_if_nonfinite and not math.isfinite(float(total._data)):
        raise RuntimeError(_NONFINITE.format(norm_type=norm_type))
    return total


_NONFINITE = ("The total norm of order {norm_type} for gradients from `parameters` is non-finite, so it "
              "cannot be clipped. To disable this error and scale the gradients by the non-finite norm "
              "anyway, set `error_if_nonfinite=False`")


@_no_grad
def clip_grads_with_norm_(parameters, max_norm, total_norm, foreach=None):
    """Scale the gradients of ``parameters`` by ``min(1, max_norm / (total_norm + 1e-6))``."""
    grads = _grads(parameters)
    max_norm = float(max_norm)
    if not grads:
        return
    if per_sample(total_norm) or any(per_sample(g) for g in grads):
        raise RuntimeError("vmap: clip_grads_with_norm_ / clip_grad_norm_ scale .grad in place by a test "
                           "made in Python, which a Tensor inside vmap (one value per sample) cannot give: "
                           "clip per-sample gradients with tensor operations (g * (max_norm / norm).clamp(max=1))")
    total = total_norm._data
    xp = backend.namespace_of(total)
    one = xp.asarray(1.0, dtype=total.dtype)
    # PyTorch's float arithmetic, rounding included: max_norm / t is reciprocal(t) * max_norm
    coef = one / (total + xp.asarray(1e-6, dtype=total.dtype)) * xp.asarray(max_norm, dtype=total.dtype)
    if bool(coef >= 1.0):  # clamp(max=1): the gradients stay as they are (nan is scaled)
        return
    for g in grads:
        a = g._data
        a *= coef if backend.namespace_of(a) is xp else float(coef)
        g._bump_version()


@_no_grad
def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Rescale the gradients of ``parameters`` in place so that their joint norm is at most
    ``max_norm``; returns the joint norm they had (a 0-d tensor)."""
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    else:
        is_generator = isinstance(parameters, types.GeneratorType)
        parameters = list(parameters)
        if is_generator and not parameters:
            warnings.warn("`parameters` is an empty generator, no gradient clipping will occur.",
                          stacklevel=3)
    total = get_total_norm(_grads(parameters), norm_type, error_if_nonfinite, foreach)
    clip_grads_with_norm_(parameters, max_norm, total, foreach)
    return total


def clip_grad_norm(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Deprecated spelling of :func:`clip_grad_norm_`."""
    warnings.warn("`torch.nn.utils.clip_grad_norm` is now deprecated in favor of "
                  "`torch.nn.utils.clip_grad_norm_`.", FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


@_no_grad
def clip_grad_value_(parameters, clip_value, foreach=None):
    """Clamp every gradient of ``parameters`` into ``[-clip_value, clip_value]`` in place."""
    clip_value = float(clip_value)
    for g in _grads(parameters):
        g.clamp_(min=-clip_value, max=clip_value)
