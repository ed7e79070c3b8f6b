"""Pruning by masks: ``torch.nn.utils.prune``.

Pruning ``module.<name>`` keeps the original values as the parameter ``<name>_orig`` and a
0/1 mask as the buffer ``<name>_mask``; ``<name>`` becomes a plain tensor attribute, their
product, which a forward pre-hook (the pruning method itself) recomputes before each
``forward`` -- so gradients reach ``<name>_orig`` through the mask, and a state dict holds
the two. Pruning the same tensor again combines the methods in a :class:`PruningContainer`:
each new method acts only on the entries (unstructured) or channels (structured) the
earlier ones kept. :func:`remove` makes the pruning permanent: ``<name>`` is a parameter
again, holding the masked values.

Methods: :class:`Identity`, :class:`RandomUnstructured`, :class:`L1Unstructured`,
:class:`RandomStructured`, :class:`LnStructured` (channels of largest L-n norm kept),
:class:`CustomFromMask`; :func:`global_unstructured` ranks the entries of several tensors
together. An ``amount`` is a fraction in [0, 1] of the entries (channels) to prune, rounded,
or a count. Names, arguments, errors and the random draws' use of the global generator
follow PyTorch's module.
"""
import numbers
from abc import ABC, abstractmethod
from collections.abc import Iterable

from ... import linalg
from ...runtime import creation
from .convert_parameters import parameters_to_vector

__all__ = ["BasePruningMethod", "PruningContainer", "Identity", "RandomUnstructured", "L1Unstructured",
           "RandomStructured", "LnStructured", "CustomFromMask", "identity", "random_unstructured",
           "l1_unstructured", "random_structured", "ln_structured", "global_unstructured",
           "custom_from_mask", "remove", "is_pruned"]


class BasePruningMethod(ABC):
    """A way of computing a mask for a tensor; as a forward pre-hook of a module it writes
    ``module.<name> = <name>_orig * <name>_mask`` before each call."""

    _tensor_name = None

    def __call__(self, module, inputs):
        setattr(module, self._tensor_name, self.apply_mask(module))

    @abstractmethod
    def compute_mask(self, t, default_mask):
        """The mask for ``t`` (same shape), given the mask already in force."""

    def apply_mask(self, module):
        """The pruned tensor: ``<name>_orig`` times ``<name>_mask``."""
        if self._tensor_name is None:
            raise AssertionError(f"Module {module} has to be pruned")
        mask = getattr(module, self._tensor_name + "_mask")
        orig = getattr(module, self._tensor_name + "_orig")
        return mask.to(dtype=orig.dtype) * orig

    @classmethod
    def apply(cls, module, name, *args, importance_scores=None, **kwargs):
        """Prune ``module.<name>`` with ``cls(*args, **kwargs)``, ranking by
        ``importance_scores`` (the tensor itself by default); returns the method in force
        (a container when the tensor was pruned before)."""
        earlier = [(key, hook) for key, hook in module._forward_pre_hooks.items()
                   if isinstance(hook, BasePruningMethod) and hook._tensor_name == name]
        if len(earlier) > 1:
            raise AssertionError(f"Avoid adding multiple pruning hooks to the same tensor {name} of module "
                                 f"{module}. Use a PruningContainer.")
        method = cls(*args, **kwargs)
        method._tensor_name = name
        if earlier:
            del module._forward_pre_hooks[earlier[0][0]]
            previous = earlier[0][1]
            container = previous if isinstance(previous, PruningContainer) else PruningContainer(previous)
            container.add_pruning_method(method)
            method = container
        orig = getattr(module, name)
        if importance_scores is None:
            importance_scores = orig
        elif importance_scores.shape != orig.shape:
            raise AssertionError(f"importance_scores should have the same shape as parameter {name} of {module}")
        first = not earlier
        if first:  # the values move to <name>_orig; <name> will be the product
            module.register_parameter(name + "_orig", orig)
            del module._parameters[name]
            default_mask = creation.ones_like(orig)
        else:
            default_mask = getattr(module, name + "_mask").detach().clone()
        try:
            mask = method.compute_mask(importance_scores, default_mask=default_mask)
            module.register_buffer(name + "_mask", mask)
            setattr(module, name, method.apply_mask(module))
            module.register_forward_pre_hook(method)
        except Exception:
            if first:  # the module as it was
                orig = getattr(module, name + "_orig")
                del module._parameters[name + "_orig"]
                module.register_parameter(name, orig)
            raise
        return method

    def prune(self, t, default_mask=None, importance_scores=None):
        """``t`` times the mask this method computes for it (no module involved)."""
        if importance_scores is None:
            importance_scores = t
        elif importance_scores.shape != t.shape:
            raise AssertionError("importance_scores should have the same shape as tensor t")
        if default_mask is None:
            default_mask = creation.ones_like(t)
        return t * self.compute_mask(importance_scores, default_mask=default_mask)

    def remove(self, module):
        """Make the pruning permanent: ``<name>`` a parameter again, with the masked values."""
        if self._tensor_name is None:
            raise AssertionError(f"Module {module} has to be pruned before pruning can be removed")
        weight = self.apply_mask(module)
        if hasattr(module, self._tensor_name):
            delattr(module, self._tensor_name)
        orig = module._parameters[self._tensor_name + "_orig"]
        orig.data = weight.data
        del module._parameters[self._tensor_name + "_orig"]
        del module._buffers[self._tensor_name + "_mask"]
        setattr(module, self._tensor_name, orig)


class PruningContainer(BasePruningMethod):
    """The pruning methods applied one after the other to one tensor: each new mask covers
    only what the masks before it kept."""

    def __init__(self, *args):
        self._pruning_methods = ()
        if len(args) == 1 and isinstance(args[0], BasePruningMethod):  # the first of a tensor's
            self._tensor_name = args[0]._tensor_name  # methods
            self.add_pruning_method(args[0])
        else:  # methods, or one iterable of them, for the tensor named as they are
            for method in args[0] if len(args) == 1 and isinstance(args[0], Iterable) else args:
                self.add_pruning_method(method)

    def add_pruning_method(self, method):
        if method is not None and not isinstance(method, BasePruningMethod):
            raise TypeError(f"{type(method)} is not a BasePruningMethod subclass")
        if method is not None and self._tensor_name != method._tensor_name:
            raise ValueError("Can only add pruning methods acting on the parameter named "
                             f"'{self._tensor_name}' to PruningContainer {self}. "
                             f"Found '{method._tensor_name}'")
        self._pruning_methods += (method,)

    def __len__(self):
        return len(self._pruning_methods)

    def __iter__(self):
        return iter(self._pruning_methods)

    def __getitem__(self, idx):
        return self._pruning_methods[idx]

    def compute_mask(self, t, default_mask):
        """The last method's mask, computed on the part of ``t`` the current mask keeps."""
        method = self._pruning_methods[-1]
        mask = default_mask.to(dtype=t.dtype)
        kind = method.PRUNING_TYPE
        if kind == "unstructured":
            part = mask == 1  # (the entries still in)
        elif kind == "structured":
            if not hasattr(method, "dim"):
                raise AttributeError("Pruning methods of PRUNING_TYPE 'structured' need to have the "
                                     "attribute `dim` defined.")
            dim = method.dim + t.dim() if method.dim < 0 else method.dim
            if dim < 0:
                raise IndexError(f"Index is out of bounds for tensor with dimensions {t.dim()}")
            kept = mask.sum(dim=[d for d in range(t.dim()) if d != dim]) != 0  # channels still in
            part = tuple(kept if d == dim else slice(None) for d in range(t.dim()))
        elif kind == "global":
            part = (slice(None),) * t.dim()
        else:
            raise ValueError(f"Unrecognized PRUNING_TYPE {kind}")
        mask[part] = method.compute_mask(t[part], default_mask=mask[part]).to(dtype=mask.dtype)
        return mask


class Identity(BasePruningMethod):
    """Prunes nothing: the mask is all ones."""

    PRUNING_TYPE = "unstructured"

    def compute_mask(self, t, default_mask):
        return default_mask

    @classmethod
    def apply(cls, module, name):
        return super().apply(module, name)


class _Amount(BasePruningMethod):
    """A method pruning ``amount`` of the entries (or channels)."""

    def __init__(self, amount):
        _check_amount(amount)
        self.amount = amount


class _Unstructured(_Amount):
    """Prunes ``amount`` entries: those :meth:`_pruned` picks among all of them."""

    PRUNING_TYPE = "unstructured"

    def compute_mask(self, t, default_mask):
        count = _count(self.amount, t.numel())
        mask = default_mask.clone()
        if count:
            mask.view(-1)[self._pruned(t, count)] = 0
        return mask


class RandomUnstructured(_Unstructured):
    """Prunes ``amount`` entries chosen at random."""

    def _pruned(self, t, count):
        return creation.rand_like(t).reshape(-1).topk(count).indices

    @classmethod
    def apply(cls, module, name, amount):
        return super().apply(module, name, amount=amount)


class L1Unstructured(_Unstructured):
    """Prunes the ``amount`` entries of smallest magnitude."""

    def _pruned(self, t, count):
        return t.abs().reshape(-1).topk(count, largest=False).indices

    @classmethod
    def apply(cls, module, name, amount, importance_scores=None):
        return super().apply(module, name, amount=amount, importance_scores=importance_scores)


class _Structured(_Amount):
    """Prunes ``amount`` channels along ``dim``: all but those :meth:`_kept` picks."""

    PRUNING_TYPE = "structured"

    def __init__(self, amount, dim=-1):
        super().__init__(amount)
        self.dim = dim

    def compute_mask(self, t, default_mask):
        _check_structured(t, self.dim)
        channels = t.shape[self.dim]
        count = _count(self.amount, channels)
        if count == 0:
            return default_mask
        dim = self.dim % t.dim()
        return _channels_mask(t, dim, self._kept(t, dim, channels, count)) * default_mask.to(dtype=t.dtype)


class RandomStructured(_Structured):
    """Prunes ``amount`` channels along ``dim``, chosen at random."""

    def _kept(self, t, dim, channels, count):
        drawn = creation.rand(channels)
        return drawn > drawn.kthvalue(count).values

    @classmethod
    def apply(cls, module, name, amount, dim=-1):
        return super().apply(module, name, amount=amount, dim=dim)


class LnStructured(_Structured):
    """Prunes the ``amount`` channels along ``dim`` of smallest L-``n`` norm."""

    def __init__(self, amount, n, dim=-1):
        super().__init__(amount, dim)
        self.n = n

    def _kept(self, t, dim, channels, count):
        norms = linalg.vector_norm(t, self.n, dim=[d for d in range(t.dim()) if d != dim])
        return norms.topk(channels - count, largest=True).indices

    @classmethod
    def apply(cls, module, name, amount, n, dim, importance_scores=None):
        return super().apply(module, name, amount=amount, n=n, dim=dim, importance_scores=importance_scores)


class CustomFromMask(BasePruningMethod):
    """Prunes where a given mask is 0 (on top of the mask in force)."""

    PRUNING_TYPE = "global"

    def __init__(self, mask):
        self.mask = mask

    def compute_mask(self, t, default_mask):
        if default_mask.shape != self.mask.shape:
            raise AssertionError("the mask must have the shape of the tensor it prunes")
        return default_mask * self.mask.to(dtype=default_mask.dtype)

    @classmethod
    def apply(cls, module, name, mask):
        return super().apply(module, name, mask=mask)


# -- the functions ---------------------------------------------------------------------------

def identity(module, name):
    Identity.apply(module, name)
    return module


def random_unstructured(module, name, amount):
    RandomUnstructured.apply(module, name, amount)
    return module


def l1_unstructured(module, name, amount, importance_scores=None):
    L1Unstructured.apply(module, name, amount=amount, importance_scores=importance_scores)
    return module


def random_structured(module, name, amount, dim):
    RandomStructured.apply(module, name, amount, dim)
    return module


def ln_structured(module, name, amount, n, dim, importance_scores=None):
    LnStructured.apply(module, name, amount, n, dim, importance_scores=importance_scores)
    return module


def custom_from_mask(module, name, mask):
    CustomFromMask.apply(module, name, mask)
    return module


def global_unstructured(parameters, pruning_method, importance_scores=None, **kwargs):
    """Prune the ``(module, name)`` pairs of ``parameters`` together: ``pruning_method``
    (an unstructured method class, built with ``kwargs``) ranks all their entries at once,
    and each tensor gets its share of the one mask."""
    if not isinstance(parameters, Iterable):
        raise TypeError("global_unstructured(): parameters is not an Iterable")
    parameters = list(parameters)
    importance_scores = {} if importance_scores is None else importance_scores
    if not isinstance(importance_scores, dict):
        raise TypeError("global_unstructured(): importance_scores must be of type dict")
    scores = parameters_to_vector([importance_scores.get((m, name), getattr(m, name)) for m, name in parameters])
    masks = parameters_to_vector([getattr(m, name + "_mask", None) if hasattr(m, name + "_mask")
                                  else creation.ones_like(getattr(m, name)) for m, name in parameters])
    method = pruning_method(**kwargs)
    method._tensor_name = "temp"
    if method.PRUNING_TYPE != "unstructured":
        raise TypeError('Only "unstructured" PRUNING_TYPE supported for the `pruning_method`. Found method '
                        f"{pruning_method} of type {method.PRUNING_TYPE}")
    container = PruningContainer()
    container._tensor_name = "temp"
    container.add_pruning_method(method)
    mask = container.compute_mask(scores, masks)
    start = 0
    for m, name in parameters:
        size = getattr(m, name).numel()
        custom_from_mask(m, name, mask=mask[start:start + size].view_as(getattr(m, name)))
        start += size


def remove(module, name):
    """Make the pruning of ``module.<name>`` permanent (see :meth:`BasePruningMethod.remove`)."""
    for key, hook in module._forward_pre_hooks.items():
        if isinstance(hook, BasePruningMethod) and hook._tensor_name == name:
            hook.remove(module)
            del module._forward_pre_hooks[key]
            return module
    raise ValueError(f"Parameter '{name}' of module {module} has to be pruned before pruning can be removed")


def is_pruned(module):
    """Whether ``module`` or any module inside it has a pruning hook."""
    return any(isinstance(hook, BasePruningMethod)
               for _, m in module.named_modules() for hook in m._forward_pre_hooks.values())


# -- checks and counts -----------------------------------------------------------------------

def _check_amount(amount):
    if not isinstance(amount, numbers.Real):
        raise TypeError(f"Invalid type for amount: {amount}. Must be int or float.")
    if (isinstance(amount, numbers.Integral) and amount < 0) or (
            not isinstance(amount, numbers.Integral) and not 0.0 <= float(amount) <= 1.0):
        raise ValueError(f"amount={amount} should either be a float in the range [0, 1] or a "
                         "non-negative integer")


def _count(amount, size):
    """How many of ``size`` entries (channels) ``amount`` prunes."""
    if isinstance(amount, numbers.Integral):
        if amount > size:
            raise ValueError(f"amount={amount} should be smaller than the number of parameters to "
                             f"prune={size}")
        return amount
    return round(amount * size)


def _check_structured(t, dim):
    if t.dim() <= 1:
        raise ValueError("Structured pruning can only be applied to multidimensional tensors. Found tensor "
                         f"of shape {t.shape} with {t.dim()} dims")
    if dim >= t.dim():
        raise IndexError(f"Invalid index {dim} for tensor of size {t.shape}")


def _channels_mask(t, dim, kept):
    """A mask of ``t``'s shape with ones in the channels ``kept`` (a boolean mask or the
    indices) along ``dim`` (not negative)."""
    mask = creation.zeros_like(t)
    mask[tuple(kept if d == dim else slice(None) for d in range(t.dim()))] = 1
    return mask

