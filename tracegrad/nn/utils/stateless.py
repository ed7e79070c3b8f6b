"""``torch.nn.utils.stateless``: the deprecated home of ``functional_call`` (now
``torch.func.functional_call``, to which it delegates)."""
import warnings

from ...runtime.grad_mode import no_grad

__all__ = ["functional_call"]

_DEPRECATED = ("`torch.nn.utils.stateless.functional_call` is deprecated as of PyTorch 2.0 and will be removed "
               "in a future version of PyTorch. Please use `torch.func.functional_call` instead which is a "
               "drop-in replacement.")


def functional_call(module, parameters_and_buffers, args=None, kwargs=None, *, tie_weights=True, strict=False):
    """``module(*args, **kwargs)`` with the named parameters and buffers replaced for the call.

    A parametrized tensor may be given under its own name (``"weight"``): as in PyTorch, the
    value is assigned through the parametrization's ``right_inverse`` for the call and the
    previous value assigned back after it. Under ``parametrizations.weight.original`` it
    replaces the original, and the parametrization is applied to it.
    """
    warnings.warn(_DEPRECATED, FutureWarning, stacklevel=2)
    from ...func import functional_call as _functional_call
    from ..parallel import DataParallel
    if isinstance(module, DataParallel):
        raise RuntimeError("The stateless API can't be used with nn.DataParallel module")
    direct, through = parameters_and_buffers, []
    if isinstance(parameters_and_buffers, dict) and not strict:
        direct, through = _split_parametrized(module, parameters_and_buffers)
    assigned = []
    try:
        for owner, attr, value in through:
            with no_grad():
                old = getattr(owner, attr)
            setattr(owner, attr, value)
            assigned.append((owner, attr, old))
        return _functional_call(module, direct, args, kwargs, tie_weights=tie_weights, strict=strict)
    finally:
        for owner, attr, old in reversed(assigned):
            setattr(owner, attr, old)


def _split_parametrized(module, values):
    """The entries naming an ordinary member, and ``(owner, name, value)`` for those naming
    a parametrized tensor."""
    from .parametrize import is_parametrized
    direct, through = {}, []
    for name, value in values.items():
        path, _, attr = name.rpartition(".")
        try:
            owner = module.get_submodule(path)
        except AttributeError:
            owner = None
        if owner is not None and is_parametrized(owner, attr):
            through.append((owner, attr, value))
        else:
            direct[name] = value
    return direct, through
