"""Weight normalization (Salimans & Kingma, 2016) as a forward pre-hook: ``torch.nn.utils.weight_norm``.

``w = g * v / ||v||`` with the norm taken over every dim but ``dim`` (``dim=None`` or
``-1``: over the whole tensor, so ``g`` is a scalar). The module keeps ``<name>_g`` and
``<name>_v`` as its parameters and a hook recomputes the plain tensor ``<name>`` from them
before each ``forward``; the two helpers below are also the parametrization's
(:mod:`.parametrizations`). Deprecated in PyTorch in favour of that parametrization, and
warns as PyTorch does.
"""
import warnings

from ..parameter import Parameter

__all__ = ["WeightNorm", "remove_weight_norm", "weight_norm"]

_DEPRECATED = ("`torch.nn.utils.weight_norm` is deprecated in favor of "
               "`torch.nn.utils.parametrizations.weight_norm`.")


def norm_except_dim(v, pow=2, dim=0):
    """``torch.norm_except_dim``: the ``pow``-norm of ``v`` over every dim but ``dim``, kept
    with size 1 (``dim=-1``: one norm of the whole tensor, 0-d)."""
    from ...linalg import vector_norm
    if dim == -1:
        return vector_norm(v, pow)
    ndim = v.ndim
    if not -ndim <= dim < max(ndim, 1):
        raise IndexError(f"Dimension out of range (expected to be in range of [{-max(ndim, 1)}, "
                         f"{max(ndim, 1) - 1}], but got {dim})")
    dim %= max(ndim, 1)
    others = tuple(d for d in range(ndim) if d != dim)
    if not others:  # a vector normalized per element
        return v.abs()
    return vector_norm(v, pow, dim=others, keepdim=True)


def _weight_norm(v, g, dim=0):
    """``torch._weight_norm``: ``v * (g / ||v||)``, differentiable in ``v`` and ``g``."""
    return v * (g / norm_except_dim(v, 2, dim))


class WeightNorm:
    """The forward pre-hook that recomputes ``module.<name>`` from ``<name>_g`` and ``<name>_v``."""

    def __init__(self, name, dim):
        self.name = name
        self.dim = -1 if dim is None else dim

    def compute_weight(self, module):
        return _weight_norm(getattr(module, self.name + "_v"), getattr(module, self.name + "_g"), self.dim)

    @staticmethod
    def apply(module, name, dim):
        warnings.warn(_DEPRECATED, FutureWarning, stacklevel=3)
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, WeightNorm) and hook.name == name:
                raise RuntimeError(f"Cannot register two weight_norm hooks on the same parameter {name}")
        fn = WeightNorm(name, dim)
        weight = getattr(module, name)
        from ..modules.lazy import UninitializedParameter
        if isinstance(weight, UninitializedParameter):
            raise ValueError("The module passed to `WeightNorm` can't have uninitialized parameters. "
                             "Make sure to run the dummy forward before applying weight normalization")
        g = Parameter(norm_except_dim(weight, 2, fn.dim).data)  # checks dim before anything changes
        del module._parameters[name]
        module.register_parameter(name + "_g", g)
        module.register_parameter(name + "_v", Parameter(weight.data))
        setattr(module, name, fn.compute_weight(module))  # a plain attribute, not a parameter
        module.register_forward_pre_hook(fn)
        return fn

    def remove(self, module):
        weight = self.compute_weight(module)
        delattr(module, self.name)
        del module._parameters[self.name + "_g"]
        del module._parameters[self.name + "_v"]
        setattr(module, self.name, Parameter(weight.data))

    def __call__(self, module, inputs):
        setattr(module, self.name, self.compute_weight(module))


def weight_norm(module, name="weight", dim=0):
    """Reparametrize ``module.<name>`` as ``g * v / ||v||`` (new parameters ``<name>_g``,
    ``<name>_v``); the norm is per slice along ``dim`` (``None``: the whole tensor)."""
    WeightNorm.apply(module, name, dim)
    return module


def remove_weight_norm(module, name="weight"):
    """Undo :func:`weight_norm`: ``<name>`` becomes a plain parameter holding ``g * v / ||v||``."""
    from ..modules._module_hooks import refresh
    for key, hook in module._forward_pre_hooks.items():
        if isinstance(hook, WeightNorm) and hook.name == name:
            hook.remove(module)
            del module._forward_pre_hooks[key]
            refresh(module)
            return module
    raise ValueError(f"weight_norm of '{name}' not found in {module}")
