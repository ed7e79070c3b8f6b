"""Convolution layers (``Conv1d/2d/3d``, ``ConvTranspose1d/2d/3d``) with PyTorch's
parameter names, shapes, default initialisation, checks and ``repr``."""

from .. import functional as F
from ...runtime.grad_mode import no_grad
from .linear import reset_kaiming, weight_and_bias
from .module import Module
from .utils import _pair, _reverse_repeat_tuple, _single, _triple

__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d"]

_PADDING_STRINGS = {"same", "valid"}
_PADDING_MODES = {"zeros", "reflect", "replicate", "circular"}


def _set_text(names):
    """A set as PyTorch's messages print it, in a fixed (sorted) order."""
    return "{" + ", ".join(repr(n) for n in sorted(names)) + "}"


class _ConvNd(Module):
    """What every convolution layer shares: the checks, the parameters (``weight`` of shape
    (out, in / groups, *kernel) -- (in, out / groups, *kernel) when transposed -- and
    ``bias``), their initialisation and the ``repr``."""

    __constants__ = ["stride", "padding", "dilation", "groups", "padding_mode", "output_padding",
                     "in_channels", "out_channels", "kernel_size"]
    _conv = None        # the functional form, set by each subclass
    _tuple = None       # _single / _pair / _triple

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, dilation, transposed,
                 output_padding, groups, bias, padding_mode, device=None, dtype=None):
        super().__init__()
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        if isinstance(padding, str):
            if padding not in _PADDING_STRINGS:
                raise ValueError(f"Invalid padding string {padding!r}, should be one of {_set_text(_PADDING_STRINGS)}")
            if padding == "same" and any(s != 1 for s in stride):
                raise ValueError("padding='same' is not supported for strided convolutions")
        if padding_mode not in _PADDING_MODES:
            raise ValueError(f"padding_mode must be one of {_set_text(_PADDING_MODES)}, but got padding_mode='{padding_mode}'")
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = kernel_size
        self.stride = stride
        self.padding = padding
        self.dilation = dilation
        self.transposed = transposed
        self.output_padding = output_padding
        self.groups = groups
        self.padding_mode = padding_mode
        self._reversed_padding_repeated_twice = _pad_sizes(padding, kernel_size, dilation)
        shape = ((in_channels, out_channels // groups) if transposed
                 else (out_channels, in_channels // groups)) + tuple(kernel_size)
        weight_and_bias(self, shape, out_channels, bias, device, dtype)
        self.reset_parameters()

    def reset_parameters(self):
        """PyTorch's default: ``kaiming_uniform_(a=sqrt(5))`` for the weight, which is
        U(-1/sqrt(fan_in), 1/sqrt(fan_in)), and the same bound for the bias."""
        with no_grad():
            reset_kaiming(self)

    def extra_repr(self):
        s = "{in_channels}, {out_channels}, kernel_size={kernel_size}, stride={stride}"
        if self.padding != (0,) * len(self.padding):
            s += ", padding={padding}"
        if self.dilation != (1,) * len(self.dilation):
            s += ", dilation={dilation}"
        if self.output_padding != (0,) * len(self.output_padding):
            s += ", output_padding={output_padding}"
        if self.groups != 1:
            s += ", groups={groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += ", padding_mode={padding_mode}"
        return s.format(**self.__dict__)

    def __setstate__(self, state):
        super().__setstate__(state)
        if not hasattr(self, "padding_mode"):
            self.padding_mode = "zeros"


def _pad_sizes(padding, kernel_size, dilation):
    """The sizes ``F.pad`` takes for the non-zero padding modes (last dim first)."""
    if not isinstance(padding, str):
        return list(_reverse_repeat_tuple(padding, 2))
    sizes = [0, 0] * len(kernel_size)
    if padding == "same":
        for d, k, i in zip(dilation, kernel_size, range(len(kernel_size) - 1, -1, -1)):
            total = d * (k - 1)
            sizes[2 * i] = total // 2
            sizes[2 * i + 1] = total - total // 2
    return sizes


class _Conv(_ConvNd):
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 bias=True, padding_mode="zeros", device=None, dtype=None):
        n = self._tuple
        super().__init__(in_channels, out_channels, n(kernel_size), n(stride),
                         padding if isinstance(padding, str) else n(padding), n(dilation), False, n(0),
                         groups, bias, padding_mode, device=device, dtype=dtype)

    def _conv_forward(self, input, weight, bias):
        conv = type(self)._conv
        if self.padding_mode != "zeros":
            padded = F.pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode)
            return conv(padded, weight, bias, self.stride, self._tuple(0), self.dilation, self.groups)
        return conv(input, weight, bias, self.stride, self.padding, self.dilation, self.groups)

    def forward(self, input):
        return self._conv_forward(input, self.weight, self.bias)


class Conv1d(_Conv):
    _conv = staticmethod(F.conv1d)
    _tuple = staticmethod(_single)


class Conv2d(_Conv):
    _conv = staticmethod(F.conv2d)
    _tuple = staticmethod(_pair)


class Conv3d(_Conv):
    _conv = staticmethod(F.conv3d)
    _tuple = staticmethod(_triple)


class _ConvTransposeNd(_ConvNd):
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, output_padding=0,
                 groups=1, bias=True, dilation=1, padding_mode="zeros", device=None, dtype=None):
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for {type(self).__name__}')
        n = self._tuple
        super().__init__(in_channels, out_channels, n(kernel_size), n(stride), n(padding), n(dilation), True,
                         n(output_padding), groups, bias, padding_mode, device=device, dtype=dtype)

    def _output_padding(self, input, output_size, stride, padding, kernel_size, num_spatial_dims,
                        dilation=None):
        """``output_padding``, or what gives the requested ``output_size`` (within the
        ``stride`` sizes a transposed convolution can produce for this input)."""
        if output_size is None:
            return _single(self.output_padding)
        batched = input.dim() == num_spatial_dims + 2
        lead = 2 if batched else 1
        if len(output_size) == lead + num_spatial_dims:
            output_size = output_size[lead:]
        if len(output_size) != num_spatial_dims:
            raise ValueError(f"ConvTranspose{num_spatial_dims}D: for {input.dim()}D input, output_size must have "
                             f"{num_spatial_dims} or {lead + num_spatial_dims} elements (got {len(output_size)})")
        min_sizes, max_sizes = [], []
        for d in range(num_spatial_dims):
            size = ((input.size(d + lead) - 1) * stride[d] - 2 * padding[d]
                    + (dilation[d] if dilation is not None else 1) * (kernel_size[d] - 1) + 1)
            min_sizes.append(size)
            max_sizes.append(size + stride[d] - 1)
        for size, low, high in zip(output_size, min_sizes, max_sizes):
            if size < low or size > high:
                raise ValueError(f"requested an output size of {output_size}, but valid sizes range from "
                                 f"{min_sizes} to {max_sizes} (for an input of {input.size()[2:]})")
        return [size - low for size, low in zip(output_size, min_sizes)]

    def forward(self, input, output_size=None):
        if self.padding_mode != "zeros":
            raise ValueError(f"Only `zeros` padding mode is supported for {type(self).__name__}")
        nd = len(self.kernel_size)
        output_padding = self._output_padding(input, output_size, self.stride, self.padding, self.kernel_size,
                                              nd, self.dilation)
        return type(self)._conv(input, self.weight, self.bias, self.stride, self.padding, output_padding,
                                self.groups, self.dilation)


class ConvTranspose1d(_ConvTransposeNd):
    _conv = staticmethod(F.conv_transpose1d)
    _tuple = staticmethod(_single)


class ConvTranspose2d(_ConvTransposeNd):
    _conv = staticmethod(F.conv_transpose2d)
    _tuple = staticmethod(_pair)


class ConvTranspose3d(_ConvTransposeNd):
    _conv = staticmethod(F.conv_transpose3d)
    _tuple = staticmethod(_triple)
