"""functorch's ``make_functional`` family: a module turned into a function of its
parameters (and buffers), ``func(params, [buffers,] *args, **kwargs)``, so that
transforms (grad, jvp, vmap) can take those tensors as arguments.

As in torch 2.13 the model is deep-copied and the returned params/buffers are the copy's
(unrelated to the original model's, requiring grad unless ``disable_autograd_tracking``);
tied parameters appear once. Where torch swaps the copy's tensors for ``meta``
placeholders (tracegrad has no meta device), the copy here keeps them and every call
goes through :func:`tracegrad.func.functional_call`, which substitutes the given tensors
under every (tied) name and restores the copy's afterwards.
"""
import copy

from ..nn.modules.module import Module
from ..func import functional_call
from ..ops.shape import stack

__all__ = ["FunctionalModule", "FunctionalModuleWithBuffers", "make_functional",
           "make_functional_with_buffers", "combine_state_for_ensemble"]


def _call_with(module, names, tensors, args, kwargs):
    """``module(*args, **kwargs)`` with ``tensors`` in place of the members ``names``."""
    tensors = tuple(tensors)
    if len(tensors) < len(names):
        raise RuntimeError(f"{type(module).__name__} (made functional) expects {len(names)} parameter/buffer "
                           f"tensors ({', '.join(names)}), got {len(tensors)}")
    # (more than ``names`` are ignored, as torch's zip does)
    return functional_call(module, dict(zip(names, tensors)), args, kwargs)


def _copy_state(model, disable_autograd_tracking):
    """(deep copy of ``model``, its unique named parameters, its unique named buffers)."""
    model_copy = copy.deepcopy(model)
    params = tuple(model_copy.named_parameters())
    buffers = tuple(model_copy.named_buffers())
    if disable_autograd_tracking:
        for _, p in params:
            p.requires_grad_(False)
    return model_copy, params, buffers


class FunctionalModule(Module):
    """This is the callable object returned by :func:`make_functional`."""

    def __init__(self, stateless_model, param_names):
        super().__init__()
        self.stateless_model = stateless_model
        self.param_names = tuple(param_names)

    @staticmethod
    def _create_from(model, disable_autograd_tracking=False):
        model_copy, params, _ = _copy_state(model, disable_autograd_tracking)
        return FunctionalModule(model_copy, [n for n, _ in params]), tuple(p for _, p in params)

    def forward(self, params, *args, **kwargs):
        return _call_with(self.stateless_model, self.param_names, params, args, kwargs)


class FunctionalModuleWithBuffers(Module):
    """This is the callable object returned by :func:`make_functional_with_buffers`."""

    def __init__(self, stateless_model, param_names, buffer_names):
        super().__init__()
        self.stateless_model = stateless_model
        self.param_names = tuple(param_names)
        self.buffer_names = tuple(buffer_names)

    @staticmethod
    def _create_from(model, disable_autograd_tracking=False):
        model_copy, params, buffers = _copy_state(model, disable_autograd_tracking)
        func = FunctionalModuleWithBuffers(model_copy, [n for n, _ in params], [n for n, _ in buffers])
        return func, tuple(p for _, p in params), tuple(b for _, b in buffers)

    def forward(self, params, buffers, *args, **kwargs):
        params, buffers = tuple(params), tuple(buffers)
        if len(params) < len(self.param_names) or len(buffers) < len(self.buffer_names):
            raise RuntimeError(f"{type(self.stateless_model).__name__} (made functional) expects "
                               f"{len(self.param_names)} parameters and {len(self.buffer_names)} buffers, "
                               f"got {len(params)} and {len(buffers)}")
        return _call_with(self.stateless_model, self.param_names + self.buffer_names,
                          params[:len(self.param_names)] + buffers[:len(self.buffer_names)], args, kwargs)


def make_functional(model, disable_autograd_tracking=False):
    """make_functional(model, disable_autograd_tracking=False) -> func, params

    ``func(params, *args, **kwargs)`` runs a copy of ``model`` with ``params`` (in
    ``model.parameters()`` order) as its parameters. For models with buffers use
    :func:`make_functional_with_buffers`."""
    if len(list(model.buffers())) > 0:
        raise RuntimeError("make_functional(model): `model` has buffers. Please use "
                           "make_functional_with_buffers(model) instead.")
    return FunctionalModule._create_from(model, disable_autograd_tracking=disable_autograd_tracking)


def make_functional_with_buffers(model, disable_autograd_tracking=False):
    """make_functional_with_buffers(model, disable_autograd_tracking=False) -> func, params, buffers

    ``func(params, buffers, *args, **kwargs)`` runs a copy of ``model`` with ``params``
    and ``buffers`` (in ``parameters()`` / ``buffers()`` order) as its state."""
    return FunctionalModuleWithBuffers._create_from(model, disable_autograd_tracking=disable_autograd_tracking)


def _stacked(per_model):
    """Tuple over members of the models' tensors stacked on a new dim 0, detached (as torch)."""
    return tuple(stack(list(shards), 0).detach() for shards in zip(*per_model))


def combine_state_for_ensemble(models):
    """combine_state_for_ensemble(models) -> func, params, buffers

    For ``vmap(func, (0, 0, None))(params, buffers, x)`` over an ensemble of models of one
    class: ``func`` is the first model made functional, ``params`` / ``buffers`` hold every
    model's tensors stacked along a new dim 0 (not requiring grad, as in torch)."""
    if len(models) == 0:
        raise RuntimeError("combine_state_for_ensemble: Expected at least one model, got 0.")
    if not (all(m.training for m in models) or all(not m.training for m in models)):
        raise RuntimeError("combine_state_for_ensemble: Expected all models to have the same training/eval mode.")
    model0_typ = type(models[0])
    if not all(type(m) is model0_typ for m in models):
        raise RuntimeError("combine_state_for_ensemble: Expected all models to be of the same class.")
    funcs, params, buffers = zip(*[make_functional_with_buffers(m) for m in models])
    return funcs[0], _stacked(params), _stacked(buffers)
