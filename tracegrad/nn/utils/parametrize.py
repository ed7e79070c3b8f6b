"""Parametrizations: ``module.weight`` computed on every access from stored tensors, as in
``torch.nn.utils.parametrize``.

:func:`register_parametrization` moves the tensor into
``module.parametrizations.<name>`` (a :class:`ParametrizationList`) as ``original`` (or
``original0, original1, ...`` when the first parametrization's ``right_inverse`` returns
several tensors) and gives the module a class of its own, ``Parametrized<Class>``,
carrying a property ``<name>``: reading it runs the chain of parametrizations (ordinary
Tensor code, so gradients reach the originals), assigning to it runs their
``right_inverse`` in reverse and stores the result in the originals in place (same
Parameter objects, so an optimizer keeps working). The state dict therefore holds
``parametrizations.<name>.original``. Removing the last parametrization restores the
original class.
"""
import collections.abc
import copy
from contextlib import contextmanager

from ...runtime.grad_mode import no_grad
from ...runtime.tensor import Tensor
from ..modules.container import ModuleDict, ModuleList
from ..parameter import Parameter

__all__ = [
    "ParametrizationList",
    "cached",
    "is_parametrized",
    "register_parametrization",
    "remove_parametrizations",
    "transfer_parametrizations_and_params",
    "type_before_parametrizations",
]

_cache_enabled = 0
_IDENTITY = object()
_cache = {}  # (id(module), tensor name) -> the value computed in the current cached() block


@contextmanager
def cached():
    """Within this block each parametrized tensor is computed once, on first access, and
    reused (e.g. a recurrent kernel read at every step); the values are dropped on exit."""
    global _cache, _cache_enabled
    _cache_enabled += 1
    try:
        yield
    finally:
        _cache_enabled -= 1
        if not _cache_enabled:
            _cache = {}


def _register_parameter_or_buffer(module, name, X):
    if isinstance(X, Parameter):
        module.register_parameter(name, X)
    else:
        module.register_buffer(name, X)


def _maybe_set(dest, src):
    """``dest.set_(src)``: ``dest`` takes ``src``'s values (and shape) but stays the same
    object, so whoever holds it (an optimizer) sees the change."""
    dest.data = src
    dest._bump_version()


class ParametrizationList(ModuleList):
    """The parametrizations of one tensor (applied in order) and the tensor(s) they start
    from, ``original`` or ``original0, original1, ...``. Made by
    :func:`register_parametrization`, not by users.

    Unless ``unsafe``, the chain must give back a tensor of the original shape and dtype.
    """

    def __init__(self, modules, original, unsafe=False):
        if len(modules) == 0:
            raise ValueError("ParametrizationList requires one or more modules.")
        super().__init__(modules)
        self.unsafe = unsafe
        original_shape, original_dtype = original.shape, original.dtype
        with no_grad():
            new = original
            for module in reversed(self):
                if hasattr(module, "right_inverse"):
                    try:
                        new = module.right_inverse(new)
                    except NotImplementedError:
                        pass  # taken as the identity, as is a missing right_inverse
        if not isinstance(new, (Tensor, collections.abc.Sequence)):
            raise ValueError("'right_inverse' must return a Tensor or a Sequence of tensors (list, "
                             f"tuple...). Got {type(new).__name__}")
        self.is_tensor = isinstance(new, Tensor)
        self.ntensors = 1 if self.is_tensor else len(new)
        if self.is_tensor:
            if original.dtype != new.dtype:
                raise ValueError("When `right_inverse` outputs one tensor, it may not change the dtype.\n"
                                 f"original.dtype: {original.dtype}\n"
                                 f"right_inverse(original).dtype: {new.dtype}")
            if original.device != new.device:
                raise ValueError("When `right_inverse` outputs one tensor, it may not change the device.\n"
                                 f"original.device: {original.device}\n"
                                 f"right_inverse(original).device: {new.device}")
            with no_grad():  # keep the same object: it may already be in an optimizer
                _maybe_set(original, new)
            _register_parameter_or_buffer(self, "original", original)
        else:
            for i, item in enumerate(new):
                if not isinstance(item, Tensor):
                    raise ValueError("'right_inverse' must return a Tensor or a Sequence of tensors "
                                     f"(list, tuple...). Got element {i} of the sequence with type "
                                     f"{type(item).__name__}.")
                # new tensors: the user adds them to the optimizer (as PyTorch documents)
                if isinstance(original, Parameter):
                    item = Parameter(item, original.requires_grad)
                item.requires_grad_(original.requires_grad)
                _register_parameter_or_buffer(self, f"original{i}", item)
        if not self.unsafe:
            Z = self()
            if not isinstance(Z, Tensor):
                raise ValueError(f"A parametrization must return a tensor. Got {type(Z).__name__}.")
            if Z.dtype != original_dtype:
                raise ValueError("Registering a parametrization may not change the dtype of the tensor, "
                                 "unless `unsafe` flag is enabled.\n"
                                 f"unparametrized dtype: {original_dtype}\n"
                                 f"parametrized dtype: {Z.dtype}")
            if Z.shape != original_shape:
                raise ValueError("Registering a parametrization may not change the shape of the tensor, "
                                 "unless `unsafe` flag is enabled.\n"
                                 f"unparametrized shape: {original_shape}\n"
                                 f"parametrized shape: {Z.shape}")

    def right_inverse(self, value):
        """Store ``value`` by running the ``right_inverse`` of each parametrization, last
        first, into ``original`` (or ``original0, original1, ...``) in place."""
        with no_grad():
            for module in reversed(self):
                if not hasattr(module, "right_inverse"):
                    raise RuntimeError(f"parametrization {type(module).__name__} does not implement "
                                       "right_inverse.")
                value = module.right_inverse(value)
            if self.is_tensor:
                if not isinstance(value, Tensor):
                    raise ValueError(f"`right_inverse` should return a tensor. Got {type(value).__name__}")
                if value.dtype != self.original.dtype:
                    raise ValueError(f"The tensor returned by `right_inverse` has dtype {value.dtype} "
                                     f"while `original` has dtype {self.original.dtype}")
                _maybe_set(self.original, value)
                return
            if not isinstance(value, collections.abc.Sequence):
                raise ValueError(f"'right_inverse' must return a sequence of tensors. Got {type(value).__name__}.")
            if len(value) != self.ntensors:
                raise ValueError(f"'right_inverse' must return a sequence of tensors of length {self.ntensors}. "
                                 f"Got a sequence of length {len(value)}.")
            for i, tensor in enumerate(value):
                if not isinstance(tensor, Tensor):
                    raise ValueError("'right_inverse' must return a sequence of tensors or reference-type "
                                     f"opaques. Got element {i} of type {type(tensor).__name__}.")
            for i, tensor in enumerate(value):
                original_i = getattr(self, f"original{i}")
                if original_i.dtype != tensor.dtype:
                    raise ValueError(f"Tensor {i} returned by `right_inverse` has dtype {tensor.dtype} "
                                     f"while `original{i}` has dtype {original_i.dtype}")
            for i, tensor in enumerate(value):
                _maybe_set(getattr(self, f"original{i}"), tensor)

    def forward(self):
        modules = list(self._modules.values())
        if self.is_tensor:
            x = modules[0](self.original)
        else:
            x = modules[0](*(getattr(self, f"original{i}") for i in range(self.ntensors)))
        for module in modules[1:]:
            x = module(x)
        return x


def _deepcopy_parametrized(self, memo):
    """A parametrized module refuses pickling (``__getstate__`` raises) but copies: the
    state of its unparametrized class, deep-copied, in a new instance of the same class."""
    hit = memo.get(id(self))
    if hit is not None:
        return hit
    replica = type(self).__new__(type(self))
    memo[id(self)] = replica
    replica.__setstate__(copy.deepcopy(type(self).__bases__[0].__getstate__(self), memo))
    return replica


def _refuse_pickling(self):
    raise RuntimeError("Serialization of parametrized modules is only supported through state_dict(). See:\n"
                       "https://pytorch.org/tutorials/beginner/saving_loading_models.html"
                       "#saving-loading-a-general-checkpoint-for-inference-and-or-resuming-training")


def _inject_new_class(module):
    """Give ``module`` a subclass of its own class, ``Parametrized<Class>``, to hold the
    properties (a class per module: other instances are untouched)."""
    cls = module.__class__
    namespace = {"__getstate__": _refuse_pickling}
    if not hasattr(cls, "__deepcopy__"):
        namespace["__deepcopy__"] = _deepcopy_parametrized
    module.__class__ = type(f"Parametrized{cls.__name__}", (cls,), namespace)


def _inject_property(module, tensor_name):
    """``module.<tensor_name>``: read = the parametrization's output (from the cache inside
    :func:`cached`); write = its ``right_inverse`` into the originals."""
    if hasattr(module, tensor_name):
        raise AssertionError(f"Module already has an attribute named '{tensor_name}'")

    def get_parametrized(self):
        parametrization = self.parametrizations[tensor_name]
        if not _cache_enabled:
            return parametrization()
        key = (id(self), tensor_name)
        tensor = _cache.get(key)
        if tensor is None:
            tensor = _cache[key] = parametrization()
        return tensor

    def set_original(self, value):
        self.parametrizations[tensor_name].right_inverse(value)

    setattr(module.__class__, tensor_name, property(get_parametrized, set_original))


def register_parametrization(module, tensor_name, parametrization, *, unsafe=False):
    """Make ``module.<tensor_name>`` read as ``parametrization(original)``.

    A second registration on the same tensor composes: the new parametrization is applied
    to the output of the earlier ones. ``parametrization.right_inverse`` (if any) maps a
    value back to the original (it is used on registration, so that the tensor keeps its
    value, and on assignment). ``unsafe=True`` allows shape and dtype changes and skips the
    consistency checks.
    """
    parametrization.train(module.training)
    if is_parametrized(module, tensor_name):
        if not unsafe:
            Y = getattr(module, tensor_name)
            X = parametrization(Y)
            if not isinstance(X, Tensor):
                raise ValueError(f"A parametrization must return a tensor. Got {type(X).__name__}.")
            head = ("Registering a parametrization may not change the {} of the tensor, unless the "
                    "`unsafe` flag is enabled.\n")
            if X.dtype != Y.dtype:
                raise ValueError(head.format("dtype") + f"module.{tensor_name}.dtype: {Y.dtype}\n"
                                 f"parametrization(module.{tensor_name}).dtype: {X.dtype}")
            if X.shape != Y.shape:
                raise ValueError(head.format("shape") + f"module.{tensor_name}.shape: {Y.shape}\n"
                                 f"parametrization(module.{tensor_name}).shape: {X.shape}")
            if hasattr(parametrization, "right_inverse"):
                try:
                    Z = parametrization.right_inverse(X)
                except NotImplementedError:
                    Z = _IDENTITY  # taken as the identity
                if Z is not _IDENTITY:
                    if not isinstance(Z, Tensor):
                        raise ValueError("parametrization.right_inverse must return a tensor. Got: "
                                         f"{type(Z).__name__}")
                    head = ("The tensor returned by parametrization.right_inverse must have the same {} "
                            f"as module.{tensor_name}, unless the `unsafe` flag is enabled.\n")
                    if Z.dtype != Y.dtype:
                        raise ValueError(head.format("dtype") + f"module.{tensor_name}.dtype: {Y.dtype}\n"
                                         f"returned dtype: {Z.dtype}")
                    if Z.shape != Y.shape:
                        raise ValueError(head.format("shape") + f"module.{tensor_name}.shape: {Y.shape}\n"
                                         f"returned shape: {Z.shape}")
        plist = module.parametrizations[tensor_name]
        plist.append(parametrization)
        plist.unsafe |= unsafe  # once unsafe, always unsafe
    elif tensor_name in module._buffers or tensor_name in module._parameters:
        original = getattr(module, tensor_name)
        plist = ParametrizationList([parametrization], original, unsafe=unsafe)  # checks first
        delattr(module, tensor_name)
        if not is_parametrized(module):
            _inject_new_class(module)
            module.parametrizations = ModuleDict()
        _inject_property(module, tensor_name)
        module.parametrizations[tensor_name] = plist
    else:
        raise ValueError(f"Module '{module}' does not have a parameter, a buffer, or a parametrized "
                         f"element with name '{tensor_name}'")
    return module


def is_parametrized(module, tensor_name=None):
    """Whether ``module`` has a parametrization on ``tensor_name`` (on anything, if None)."""
    parametrizations = getattr(module, "parametrizations", None)
    if not isinstance(parametrizations, ModuleDict):
        return False
    if tensor_name is None:
        return len(parametrizations) > 0
    return tensor_name in parametrizations


def remove_parametrizations(module, tensor_name, leave_parametrized=True):
    """Make ``module.<tensor_name>`` a plain parameter (or buffer) again, holding its current
    parametrized value (``leave_parametrized=True``, the same object as ``original`` when
    there is one) or the unparametrized ``original`` (only possible with a single original)."""
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"Module {module} does not have a parametrization on {tensor_name}")
    parametrizations = module.parametrizations[tensor_name]
    if parametrizations.is_tensor:
        original = parametrizations.original
        if leave_parametrized:
            with no_grad():
                t = getattr(module, tensor_name)
                _maybe_set(original, t)
    elif leave_parametrized:
        t = getattr(module, tensor_name)  # (with grad: whether it requires grad tells what to make)
        original = Parameter(t) if t.requires_grad else t
    else:
        raise ValueError("Cannot leave unparametrized (`leave_parametrized=False`) a tensor that is "
                         "parametrized in terms of a sequence of tensors.")
    delattr(module.__class__, tensor_name)
    del module.parametrizations[tensor_name]
    _register_parameter_or_buffer(module, tensor_name, original)
    if not is_parametrized(module):
        delattr(module, "parametrizations")
        module.__class__ = module.__class__.__bases__[0]
    return module


def type_before_parametrizations(module):
    """The module's class as it was before any parametrization was registered."""
    if is_parametrized(module):
        return module.__class__.__bases__[0]
    return type(module)


def transfer_parametrizations_and_params(from_module, to_module, tensor_name=None):
    """Register on ``to_module`` the parametrizations of ``from_module`` (all, or those of
    ``tensor_name``) and give it the same originals; a missing tensor is created first."""
    if not is_parametrized(from_module):
        return to_module
    names = list(from_module.parametrizations) if tensor_name is None else [tensor_name]
    for name in names:
        if not hasattr(to_module, name):
            setattr(to_module, name, Parameter(getattr(from_module, name)))
        source = from_module.parametrizations[name]
        for param_func in source:
            register_parametrization(to_module, name, param_func)
        target = to_module.parametrizations[name]
        if hasattr(source, "original"):
            target.original = source.original
        else:
            i = 0
            while hasattr(source, f"original{i}"):
                setattr(target, f"original{i}", getattr(source, f"original{i}"))
                i += 1
    return to_module
