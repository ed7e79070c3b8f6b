"""``repr`` of a Tensor: its values as PyTorch prints them, then its autograd suffixes."""
from .. import backend
from ..backend import dtypes as _dt
from . import formatting, forward
from .vmapped import is_vmapped


def tensor_repr(t, prefix="tensor("):
    data = t._data
    d = t.dtype
    fn = t.grad_fn
    ns = backend.namespace_of(data)
    return formatting.tensor_repr(
        data if ns.name == "meta" else ns.to_host(data), dtype_name=d.name,
        is_float=d.is_floating_point, is_complex=d.is_complex, is_bool=d is _dt.bool_,
        default_dtype_name=_dt.get_default_dtype().name, device=str(t.device),
        grad_fn_name=None if fn is None else type(fn).__name__, requires_grad=t._requires_grad,
        prefix=prefix, tangent=_tangent_text(t))


def _tangent_text(t):
    """A dual tensor's tangent as PyTorch prints it (``f"{tangent}"``: a 0-d one as its
    number), or None."""
    tangent = forward.tangent_of(t) if forward.ACTIVE[0] else None
    if tangent is None:
        return None
    if is_vmapped(tangent):  # (a batch of tangents under vmap: all of them)
        return repr(tangent)
    return str(tangent.item()) if tangent.ndim == 0 else tensor_repr(tangent)
