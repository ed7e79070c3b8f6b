"""Spectral normalization (Miyato et al., 2018) as a forward pre-hook: ``torch.nn.utils.spectral_norm``.

``W = W_orig / sigma`` where ``sigma = u . (W_mat v)`` estimates the largest singular value
of ``W_orig`` seen as a matrix (``dim`` first, the rest flattened). ``u`` and ``v`` are
buffers refined in place by ``n_power_iterations`` steps of the power method before each
training ``forward`` (in place so that module replicas sharing them see the update; they
are cloned before use so that two forwards can be backpropagated together). In eval mode
the stored vectors are used as they are.

State dicts hold ``<name>_orig``, ``<name>_u`` and ``<name>_v`` and record version 1 in
their metadata; a version-0 dict (``<name>`` and ``<name>_u``, no ``v``) is converted on
load by solving for ``v``, as PyTorch does.
"""
from .. import functional as F
from ..parameter import Parameter

__all__ = [
    "SpectralNorm",
    "SpectralNormLoadStateDictPreHook",
    "SpectralNormStateDictHook",
    "remove_spectral_norm",
    "spectral_norm",
]


def _no_grad():
    from ...runtime.grad_mode import no_grad
    return no_grad()


class SpectralNorm:
    """The forward pre-hook: recomputes ``module.<name>`` from ``<name>_orig``, ``_u``, ``_v``."""

    _version = 1

    def __init__(self, name="weight", n_power_iterations=1, dim=0, eps=1e-12):
        self.name = name
        self.dim = dim
        if n_power_iterations <= 0:
            raise ValueError("Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.n_power_iterations = n_power_iterations
        self.eps = eps

    def reshape_weight_to_matrix(self, weight):
        if self.dim != 0:
            weight = weight.permute(self.dim, *[d for d in range(weight.dim()) if d != self.dim])
        return weight.reshape(weight.size(0), -1)

    def compute_weight(self, module, do_power_iteration):
        weight = getattr(module, self.name + "_orig")
        u = getattr(module, self.name + "_u")
        v = getattr(module, self.name + "_v")
        weight_mat = self.reshape_weight_to_matrix(weight)
        if do_power_iteration:
            with _no_grad():
                for _ in range(self.n_power_iterations):
                    v = F.normalize(weight_mat.t().mv(u), dim=0, eps=self.eps, out=v)
                    u = F.normalize(weight_mat.mv(v), dim=0, eps=self.eps, out=u)
                u, v = u.clone(), v.clone()
        sigma = u.dot(weight_mat.mv(v))
        return weight / sigma

    def remove(self, module):
        with _no_grad():
            weight = self.compute_weight(module, do_power_iteration=False)
        delattr(module, self.name)
        delattr(module, self.name + "_u")
        delattr(module, self.name + "_v")
        delattr(module, self.name + "_orig")
        module.register_parameter(self.name, Parameter(weight.detach()))

    def __call__(self, module, inputs):
        setattr(module, self.name, self.compute_weight(module, do_power_iteration=module.training))

    def _solve_v_and_rescale(self, weight_mat, u, target_sigma):
        """A ``v`` with ``u = normalize(W v)`` and ``u . W v = target_sigma`` (least squares
        through the pseudo-inverse, in case ``W^T W`` is singular)."""
        from ...linalg import multi_dot
        v = multi_dot([weight_mat.t().mm(weight_mat).pinverse(), weight_mat.t(), u.unsqueeze(1)]).squeeze(1)
        return v.mul_(target_sigma / u.dot(weight_mat.mv(v)))

    @staticmethod
    def apply(module, name, n_power_iterations, dim, eps):
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, SpectralNorm) and hook.name == name:
                raise RuntimeError(f"Cannot register two spectral_norm hooks on the same parameter {name}")
        fn = SpectralNorm(name, n_power_iterations, dim, eps)
        weight = module._parameters[name]
        if weight is None:
            raise ValueError(f"`SpectralNorm` cannot be applied as parameter `{name}` is None")
        from ..modules.lazy import UninitializedParameter
        if isinstance(weight, UninitializedParameter):
            raise ValueError("The module passed to `SpectralNorm` can't have uninitialized parameters. "
                             "Make sure to run the dummy forward before applying spectral normalization")
        with _no_grad():
            h, w = fn.reshape_weight_to_matrix(weight).size()
            u = F.normalize(weight.new_empty(h).normal_(0, 1), dim=0, eps=fn.eps)
            v = F.normalize(weight.new_empty(w).normal_(0, 1), dim=0, eps=fn.eps)
        delattr(module, fn.name)
        module.register_parameter(fn.name + "_orig", weight)
        # code that reads module.<name> before the first forward (weight init...) still finds
        # it: the values, as a plain attribute (a Parameter would be registered)
        setattr(module, fn.name, weight.data)
        module.register_buffer(fn.name + "_u", u)
        module.register_buffer(fn.name + "_v", v)
        module.register_forward_pre_hook(fn)
        module._register_state_dict_hook(SpectralNormStateDictHook(fn))
        module._register_load_state_dict_pre_hook(SpectralNormLoadStateDictPreHook(fn))
        return fn


class SpectralNormLoadStateDictPreHook:
    """Converts a version-0 state dict (``<name>``, ``<name>_orig``, ``<name>_u``) on load:
    there ``u = normalize(W_orig v)`` and ``W = W_orig / sigma``, so ``v`` solves
    ``W_orig x = u`` rescaled to give that ``sigma``."""

    def __init__(self, fn):
        self.fn = fn

    def __call__(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                 error_msgs):
        fn = self.fn
        version = local_metadata.get("spectral_norm", {}).get(fn.name + ".version", None)
        if version is not None and version >= 1:
            return
        weight_key = prefix + fn.name
        if (version is None and weight_key not in state_dict
                and all(weight_key + s in state_dict for s in ("_orig", "_u", "_v"))):
            return  # a current dict without its metadata (hand-made, or saved without it)
        missing = [weight_key + s for s in ("_orig", "", "_u") if weight_key + s not in state_dict]
        if missing:
            if strict:
                missing_keys.extend(missing)
            return
        with _no_grad():
            weight_orig = state_dict[weight_key + "_orig"]
            weight = state_dict.pop(weight_key)
            sigma = (weight_orig / weight).mean()
            weight_mat = fn.reshape_weight_to_matrix(weight_orig)
            u = state_dict[weight_key + "_u"]
            state_dict[weight_key + "_v"] = fn._solve_v_and_rescale(weight_mat, u, sigma)


class SpectralNormStateDictHook:
    """Records ``{"<name>.version": 1}`` under ``metadata["spectral_norm"]`` on save."""

    def __init__(self, fn):
        self.fn = fn

    def __call__(self, module, state_dict, prefix, local_metadata):
        versions = local_metadata.setdefault("spectral_norm", {})
        key = self.fn.name + ".version"
        if key in versions:
            raise RuntimeError(f"Unexpected key in metadata['spectral_norm']: {key}")
        versions[key] = self.fn._version


def _transposed_conv(module):
    from ..modules.conv import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
    return isinstance(module, (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d))


def spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    """Rescale ``module.<name>`` by its estimated largest singular value before every forward.
    ``dim`` (the output dim) defaults to 0, or 1 for transposed convolutions."""
    if dim is None:
        dim = 1 if _transposed_conv(module) else 0
    SpectralNorm.apply(module, name, n_power_iterations, dim, eps)
    return module


def remove_spectral_norm(module, name="weight"):
    """Undo :func:`spectral_norm`: ``<name>`` becomes a plain parameter holding ``W_orig / sigma``."""
    from ..modules._module_hooks import refresh
    for key, hook in module._forward_pre_hooks.items():
        if isinstance(hook, SpectralNorm) and hook.name == name:
            hook.remove(module)
            del module._forward_pre_hooks[key]
            refresh(module)
            break
    else:
        raise ValueError(f"spectral_norm of '{name}' not found in {module}")
    for store, kind in (("_state_dict_hooks", SpectralNormStateDictHook),
                        ("_load_state_dict_pre_hooks", SpectralNormLoadStateDictPreHook)):
        hooks = getattr(module, store)
        for key, hook in hooks.items():
            if isinstance(hook, kind) and hook.fn.name == name:
                del hooks[key]
                break
    return module
