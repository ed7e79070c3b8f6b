"""Array passes the update rules share: state tensors, step counters, version bumps,
complex parameters as real pairs, hyperparameters as fast ufunc operands, ``lerp_``.

The rules work on the backend arrays (``xp`` from :func:`tracegrad.backend.namespace_of`)
with ufuncs writing in place (``out=``), so they run unchanged on NumPy and CuPy.
"""
from .. import backend
from ..backend import dtypes as _dt
from ..runtime.tensor import wrap

__all__ = ["scalar_dtype", "step_counter", "scalar_state", "advance", "zeros_state", "bump", "real_view", "zero_d_view",
           "operands", "lerp_", "directed_grad"]


def scalar_dtype(fused=False):
    """The dtype of a ``step`` counter: float32, or float64 when that is the default."""
    if fused:
        return _dt.float32
    return _dt.float64 if _dt.get_default_dtype() is _dt.float64 else _dt.float32


def step_counter(param, on_param_device=False, fused=False):
    """A new 0-d ``step`` tensor (on the CPU unless capturable/fused ask for the param's device)."""
    return scalar_state(param, 0.0, on_param_device, fused)


def scalar_state(param, value, on_param_device=False, fused=False):
    """A new 0-d state tensor holding ``value`` in the ``step`` counters' dtype (NAdam's
    ``mu_product``, ASGD's ``eta`` and ``mu``): PyTorch keeps them in that precision, and
    rounding them is part of the trajectory."""
    xp = backend.namespace_of(param._data) if on_param_device else backend.cpu
    return wrap(xp.full((), value, dtype=scalar_dtype(fused).np))


def advance(step_t):
    """``step_t += 1`` in place (its version moves on); returns the new count as a float.
    The count is read as ``.item()`` reads it: a state saved as ``torch.zeros(1)`` (the
    pytorch-a3c SharedAdam's) counts too."""
    data = step_t._data
    data += 1
    bump(step_t)
    return float(data) if data.ndim == 0 else step_t.item()


def zeros_state(param):
    """A state tensor of zeros shaped, typed and placed like ``param``."""
    data = param._data
    return wrap(backend.namespace_of(data).zeros_like(data))


def bump(t, n=1):
    """Move a tensor's version on by ``n`` (what ``n`` in-place ops would do)."""
    vc = t._vc
    if vc is None:
        t._vc = [n]
    else:
        vc[0] += n


def zero_d_view(a):
    """``a``, or a 0-d ``a`` seen as shape (1,) (a view: writes reach ``a``): NumPy's ufuncs
    give a NumPy scalar, not an array, for 0-d operands, and the update passes write into
    the arrays they make (``out=``) -- a 0-d parameter (CLIP's ``logit_scale``) would fail."""
    return a.reshape(1) if a.ndim == 0 else a


def real_view(a):
    """A complex array's storage seen as (real, imag) pairs: PyTorch's ``view_as_real``;
    other arrays as :func:`zero_d_view` gives them."""
    return a[..., None].view(a.real.dtype) if a.dtype.kind == "c" else zero_d_view(a)


def operands(data, *values, real=True):
    """``(xp, *values)``: the array namespace of ``data`` and the hyperparameters as the
    operands its ufuncs take fastest. On the CPU that is a 0-d array of the (real, unless
    ``real=False``) dtype the pass computes in: NumPy re-converts a Python number on every
    call, which costs more than the pass itself on small arrays. Elsewhere (CuPy) a Python
    number, which needs no transfer. The values are the same either way."""
    xp = backend.namespace_of(data)
    if xp is not backend.cpu:
        return (xp, *values)
    dtype = data.dtype
    if real and dtype.kind == "c":
        dtype = data.real.dtype
    asarray = xp.asarray
    return (xp, *[asarray(v, dtype) for v in values])


def lerp_(xp, start, end, weight, small):
    """``start.lerp_(end, w)`` in place with PyTorch's two formulas, chosen by ``|w| < 0.5``
    (``small``) so the result is exact at both ends; ``weight`` is ``w`` when small, else
    ``1 - w``. Returns the scratch array it made."""
    tmp = xp.subtract(end, start)
    xp.multiply(tmp, weight, out=tmp)
    if small:
        xp.add(start, tmp, out=start)
    else:
        xp.subtract(end, tmp, out=start)
    return tmp


def directed_grad(xp, param, grad, weight_decay, decayed, maximize):
    """The gradient a rule descends along: negated under ``maximize``, plus ``weight_decay *
    param`` when ``decayed`` (L2 decay, PyTorch's order). A new array whenever it differs
    from ``grad``, which is only read; the caller may overwrite the result if it is not
    ``grad`` itself."""
    if decayed:
        d = xp.multiply(param, weight_decay)
        return (xp.subtract if maximize else xp.add)(d, grad, out=d)
    return xp.negative(grad) if maximize else grad
