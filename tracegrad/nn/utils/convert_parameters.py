"""Flattening parameters into one vector and back, as in ``torch.nn.utils``."""
from ...runtime.tensor import Tensor

__all__ = ["parameters_to_vector", "vector_to_parameters"]


def _check_same_device(params):
    devices = {p.device for p in params}
    if len(devices) > 1:
        raise TypeError("Found two parameters on different devices, this is currently not supported.")


def parameters_to_vector(parameters):
    """All ``parameters`` flattened and concatenated into one 1-d tensor (differentiable:
    the result has a ``CatBackward0`` history when the parameters require grad)."""
    from ... import cat
    params = list(parameters)
    _check_same_device(params)
    return cat([p.view(-1) for p in params])


def vector_to_parameters(vec, parameters):
    """Make each of ``parameters`` a view of its slice of ``vec`` (their ``.data`` is
    swapped, so they share ``vec``'s storage). All slices are cut before any parameter
    changes, so a ``vec`` of the wrong size leaves every parameter as it was."""
    if not isinstance(vec, Tensor):
        from ..modules.module import _typename
        raise TypeError(f"expected tracegrad.Tensor, but got: {_typename(vec)}")
    params = list(parameters)
    _check_same_device(params)
    pieces, pointer = [], 0
    for param in params:
        n = param.numel()
        pieces.append(vec[pointer:pointer + n].view_as(param).data)
        pointer += n
    for param, piece in zip(params, pieces):
        param.data = piece
