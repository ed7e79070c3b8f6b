"""Lazy layers (``LazyLinear``, ``LazyConv1d/2d/3d``, ``LazyConvTranspose1d/2d/3d``): the input size is read from the first
input. Their parameters start as :class:`UninitializedParameter`s, which the first
``forward`` (or a ``load_state_dict``) materialises in place, so optimizers built before
then hold the real parameters; the layer then becomes its plain class, as in PyTorch."""
import itertools

from ...runtime.creation import empty
from ...runtime.grad_mode import no_grad
from ...runtime.tensor import Tensor
from ...runtime.tensor import DATA_SLOTS
from ..parameter import Parameter
from .conv import (
    Conv1d,
    Conv2d,
    Conv3d,
    ConvTranspose1d,
    ConvTranspose2d,
    ConvTranspose3d,
)
from .linear import Linear

__all__ = ["UninitializedParameter", "UninitializedBuffer", "LazyLinear", "LazyConv1d", "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d",
           "LazyConvTranspose2d", "LazyConvTranspose3d"]


class UninitializedParameter(Parameter):
    """A parameter with no shape yet; :meth:`materialize` gives it one (and makes it a Parameter)."""
    cls_to_become = Parameter

    def __new__(cls, requires_grad=True, device=None, dtype=None):
        return Parameter.__new__(cls, empty(0, device=device, dtype=dtype), requires_grad)

    def __init__(self, requires_grad=True, device=None, dtype=None):
        pass

    def materialize(self, shape, device=None, dtype=None):
        """Become an (uninitialised-valued) Parameter of ``shape``, in place."""
        fresh = empty(shape, device=self.device if device is None else device,
                      dtype=self.dtype if dtype is None else dtype)
        requires_grad = self._requires_grad
        for slot in DATA_SLOTS:
            setattr(self, slot, getattr(fresh, slot))
        self._requires_grad = requires_grad
        self.__class__ = self.cls_to_become

    @property
    def shape(self):
        raise RuntimeError("Can't access the shape of an uninitialized parameter or buffer. This error usually "
                           "happens in `load_state_dict` when trying to load an uninitialized parameter into an "
                           "initialized one. Call `forward` to initialize the parameters before accessing their "
                           "attributes.")

    def __repr__(self):
        return f"<{type(self).__name__}>"

    __str__ = __repr__

    def __reduce_ex__(self, protocol):
        return (type(self), (self._requires_grad,))


class UninitializedBuffer(Tensor):
    """A buffer with no shape yet. Unlike a parameter no optimizer holds it, so the lazy
    module replaces it by a new tensor (:meth:`LazyModuleMixin._materialize`)."""

    def __new__(cls, requires_grad=False, device=None, dtype=None):
        obj = Tensor.__new__(cls)
        fresh = empty(0, device=device, dtype=dtype)
        for slot in DATA_SLOTS:
            setattr(obj, slot, getattr(fresh, slot))
        obj.requires_grad_(requires_grad)
        return obj

    def __init__(self, requires_grad=False, device=None, dtype=None):
        pass

    shape = UninitializedParameter.shape

    def __repr__(self):
        return f"<{type(self).__name__}>"

    __str__ = __repr__


def is_lazy(param):
    return isinstance(param, (UninitializedParameter, UninitializedBuffer))


class LazyModuleMixin:
    """Infers the parameters' shapes from the first input (``initialize_parameters``), then
    removes its hooks and turns the module into ``cls_to_become``."""
    cls_to_become = None

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._load_hook = self._register_load_state_dict_pre_hook(self._lazy_load_hook)
        self._initialize_hook = self.register_forward_pre_hook(self._infer_parameters, with_kwargs=True)

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        for name, param in self._parameters.items():
            if param is not None:
                destination[prefix + name] = param if is_lazy(param) or keep_vars else param.detach()
        for name, buf in self._buffers.items():
            if buf is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = buf if is_lazy(buf) or keep_vars else buf.detach()

    def _lazy_load_hook(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                        error_msgs):
        """Loading initialised values materialises the lazy parameters to their shapes first."""
        for name, param in itertools.chain(self._parameters.items(), self._buffers.items()):
            key = prefix + name
            if key in state_dict and param is not None and is_lazy(param) and not is_lazy(state_dict[key]):
                with no_grad():
                    self._materialize(name, state_dict[key].shape)

    def _materialize(self, name, shape):
        """Give the lazy parameter or buffer ``name`` its shape (a parameter in place)."""
        value = getattr(self, name)
        if isinstance(value, UninitializedParameter):
            value.materialize(shape)
        else:
            setattr(self, name, empty(shape, device=value.device, dtype=value.dtype))

    def initialize_parameters(self, *args, **kwargs):
        raise NotImplementedError(f"initialize_parameters is not implemented for {type(self).__name__}")

    def has_uninitialized_params(self):
        return any(is_lazy(p) for p in itertools.chain(self._parameters.values(), self._buffers.values()))

    def _infer_parameters(self, module, args, kwargs=None):
        module.initialize_parameters(*args, **(kwargs or {}))
        if module.has_uninitialized_params():
            raise RuntimeError(f"module {self._get_name()} has not been fully initialized")
        module._initialize_hook.remove()
        module._load_hook.remove()
        delattr(module, "_initialize_hook")
        delattr(module, "_load_hook")
        if module.cls_to_become is not None:
            module.__class__ = module.cls_to_become


class LazyLinear(LazyModuleMixin, Linear):
    """A :class:`Linear` whose ``in_features`` is the last dim of its first input."""
    cls_to_become = Linear

    def __init__(self, out_features, bias=True, device=None, dtype=None):
        super().__init__(0, 0, False)  # no bias yet: it would be overwritten
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_features = out_features
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)

    def reset_parameters(self):
        if not self.has_uninitialized_params() and self.in_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input):
        if self.has_uninitialized_params():
            with no_grad():
                self.in_features = input.shape[-1]
                self.weight.materialize((self.out_features, self.in_features))
                if self.bias is not None:
                    self.bias.materialize((self.out_features,))
                self.reset_parameters()


class _LazyConvXdMixin(LazyModuleMixin):
    """A convolution whose ``in_channels`` is read from its first input (dim 1, or 0 unbatched)."""
    _spatial_dims = None

    def _make_lazy(self, out_channels, bias, device, dtype):
        """Replace the placeholder (0-channel, bias-less) parameters by uninitialized ones."""
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_channels = out_channels
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)

    def reset_parameters(self):
        if not self.has_uninitialized_params() and self.in_channels != 0:
            super().reset_parameters()

    def initialize_parameters(self, input, *args, **kwargs):
        if self.has_uninitialized_params():
            self.in_channels = self._get_in_channels(input)
            if self.in_channels % self.groups != 0:
                raise ValueError("in_channels must be divisible by groups")
            with no_grad():
                pair = ((self.in_channels, self.out_channels // self.groups) if self.transposed
                        else (self.out_channels, self.in_channels // self.groups))
                self.weight.materialize((*pair, *self.kernel_size))
                if self.bias is not None:
                    self.bias.materialize((self.out_channels,))
                self.reset_parameters()

    def _get_in_channels(self, input):
        unbatched = self._spatial_dims + 1
        if input.dim() not in (unbatched, unbatched + 1):
            raise RuntimeError(f"Expected {unbatched}D (unbatched) or {unbatched + 1}D (batched) input to "
                               f"{type(self).__name__}, but got input of size: {input.shape}")
        return input.shape[1] if input.dim() == unbatched + 1 else input.shape[0]


class _LazyConvMixin(_LazyConvXdMixin):
    def __init__(self, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                 padding_mode="zeros", device=None, dtype=None):
        super().__init__(0, 0, kernel_size, stride, padding, dilation, groups, False, padding_mode, device=device,
                         dtype=dtype)
        self._make_lazy(out_channels, bias, device, dtype)


class _LazyConvTransposeMixin(_LazyConvXdMixin):
    def __init__(self, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1, bias=True,
                 dilation=1, padding_mode="zeros", device=None, dtype=None):
        super().__init__(0, 0, kernel_size, stride, padding, output_padding, groups, False, dilation, padding_mode,
                         device=device, dtype=dtype)
        self._make_lazy(out_channels, bias, device, dtype)


class LazyConv1d(_LazyConvMixin, Conv1d):
    cls_to_become = Conv1d
    _spatial_dims = 1


class LazyConv2d(_LazyConvMixin, Conv2d):
    cls_to_become = Conv2d
    _spatial_dims = 2


class LazyConv3d(_LazyConvMixin, Conv3d):
    cls_to_become = Conv3d
    _spatial_dims = 3


class LazyConvTranspose1d(_LazyConvTransposeMixin, ConvTranspose1d):
    cls_to_become = ConvTranspose1d
    _spatial_dims = 1


class LazyConvTranspose2d(_LazyConvTransposeMixin, ConvTranspose2d):
    cls_to_become = ConvTranspose2d
    _spatial_dims = 2


class LazyConvTranspose3d(_LazyConvTransposeMixin, ConvTranspose3d):
    cls_to_become = ConvTranspose3d
    _spatial_dims = 3
