"""More pooling layers: ``MaxPool3d``, ``AvgPool3d``, ``AdaptiveAvgPool3d``,
``AdaptiveMaxPool1d/2d``, ``LPPool1d/2d``, ``MaxUnpool1d/2d``, and ``Fold``/``Unfold``;
holders of their arguments, stored and printed as PyTorch stores and prints them."""
from .. import functional as F
from .module import Module
from .pooling import _AdaptiveAvgPoolNd, _AvgPoolWithDivisor, _MaxPoolNd
from .utils import _pair, _single, _triple

__all__ = ["MaxPool3d", "AvgPool3d", "AdaptiveAvgPool3d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d",
           "AdaptiveMaxPool3d", "LPPool1d", "LPPool2d", "LPPool3d", "MaxUnpool1d", "MaxUnpool2d", "MaxUnpool3d", "Fold",
           "Unfold", "FractionalMaxPool2d", "FractionalMaxPool3d"]


class MaxPool3d(_MaxPoolNd):
    _pool = staticmethod(F.max_pool3d)


class AvgPool3d(_AvgPoolWithDivisor):
    _pool = staticmethod(F.avg_pool3d)


class AdaptiveAvgPool3d(_AdaptiveAvgPoolNd):
    _pool = staticmethod(F.adaptive_avg_pool3d)


class _AdaptiveMaxPoolNd(Module):
    __constants__ = ["output_size", "return_indices"]
    _pool = None

    def __init__(self, output_size, return_indices=False):
        super().__init__()
        self.output_size = output_size
        self.return_indices = return_indices

    def forward(self, input):
        return type(self)._pool(input, self.output_size, self.return_indices)

    def extra_repr(self):
        return f"output_size={self.output_size}"


class AdaptiveMaxPool1d(_AdaptiveMaxPoolNd):
    _pool = staticmethod(F.adaptive_max_pool1d)


class AdaptiveMaxPool2d(_AdaptiveMaxPoolNd):
    _pool = staticmethod(F.adaptive_max_pool2d)


class AdaptiveMaxPool3d(_AdaptiveMaxPoolNd):
    _pool = staticmethod(F.adaptive_max_pool3d)


class _LPPoolNd(Module):
    __constants__ = ["norm_type", "kernel_size", "stride", "ceil_mode"]
    _pool = None

    def __init__(self, norm_type, kernel_size, stride=None, ceil_mode=False):
        super().__init__()
        self.norm_type = norm_type
        self.kernel_size = kernel_size
        self.stride = stride
        self.ceil_mode = ceil_mode

    def forward(self, input):
        return type(self)._pool(input, float(self.norm_type), self.kernel_size, self.stride, self.ceil_mode)

    def extra_repr(self):
        return (f"norm_type={self.norm_type}, kernel_size={self.kernel_size}, stride={self.stride}, "
                f"ceil_mode={self.ceil_mode}")


class LPPool1d(_LPPoolNd):
    _pool = staticmethod(F.lp_pool1d)


class LPPool2d(_LPPoolNd):
    _pool = staticmethod(F.lp_pool2d)


class LPPool3d(_LPPoolNd):
    _pool = staticmethod(F.lp_pool3d)


class _MaxUnpoolNd(Module):
    _tuple = None
    _unpool = None

    def __init__(self, kernel_size, stride=None, padding=0):
        super().__init__()
        self.kernel_size = type(self)._tuple(kernel_size)
        self.stride = type(self)._tuple(stride if stride is not None else kernel_size)
        self.padding = type(self)._tuple(padding)

    def forward(self, input, indices, output_size=None):
        return type(self)._unpool(input, indices, self.kernel_size, self.stride, self.padding, output_size)

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxUnpool1d(_MaxUnpoolNd):
    _tuple = staticmethod(_single)
    _unpool = staticmethod(F.max_unpool1d)


class MaxUnpool2d(_MaxUnpoolNd):
    _tuple = staticmethod(_pair)
    _unpool = staticmethod(F.max_unpool2d)


class MaxUnpool3d(_MaxUnpoolNd):
    _tuple = staticmethod(_triple)
    _unpool = staticmethod(F.max_unpool3d)


class Fold(Module):
    """Columns of sliding blocks summed back into (C, H, W) planes (col2im)."""
    __constants__ = ["output_size", "kernel_size", "dilation", "padding", "stride"]

    def __init__(self, output_size, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.output_size = output_size
        self.kernel_size = kernel_size
        self.dilation = dilation
        self.padding = padding
        self.stride = stride

    def forward(self, input):
        return F.fold(input, self.output_size, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self):
        return (f"output_size={self.output_size}, kernel_size={self.kernel_size}, dilation={self.dilation}, "
                f"padding={self.padding}, stride={self.stride}")


class Unfold(Module):
    """Sliding blocks of (C, H, W) planes as columns (im2col)."""
    __constants__ = ["kernel_size", "dilation", "padding", "stride"]

    def __init__(self, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.kernel_size = kernel_size
        self.dilation = dilation
        self.padding = padding
        self.stride = stride

    def forward(self, input):
        return F.unfold(input, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self):
        return (f"kernel_size={self.kernel_size}, dilation={self.dilation}, padding={self.padding}, "
                f"stride={self.stride}")


class _FractionalMaxPoolNd(Module):
    """Fractional max pooling; ``_random_samples`` (a buffer) fixes the windows, else each call draws them."""
    __constants__ = ["kernel_size", "return_indices", "output_size", "output_ratio"]
    _tuple = None
    _pool = None

    def __init__(self, kernel_size, output_size=None, output_ratio=None, return_indices=False, _random_samples=None):
        super().__init__()
        as_tuple = type(self)._tuple
        self.kernel_size = as_tuple(kernel_size)
        self.return_indices = return_indices
        self.register_buffer("_random_samples", _random_samples)
        self.output_size = as_tuple(output_size) if output_size is not None else None
        self.output_ratio = as_tuple(output_ratio) if output_ratio is not None else None
        name = type(self).__name__
        if output_size is None and output_ratio is None:
            raise ValueError(f"{name} requires specifying either an output size, or a pooling ratio")
        if output_size is not None and output_ratio is not None:
            raise ValueError("only one of output_size and output_ratio may be specified")
        if self.output_ratio is not None and not all(0 < r < 1 for r in self.output_ratio):
            raise ValueError(f"output_ratio must be between 0 and 1 (got {output_ratio})")

    def forward(self, input):
        return type(self)._pool(input, self.kernel_size, self.output_size, self.output_ratio, self.return_indices,
                                _random_samples=self._random_samples)


class FractionalMaxPool2d(_FractionalMaxPoolNd):
    _tuple = staticmethod(_pair)
    _pool = staticmethod(F.fractional_max_pool2d)


class FractionalMaxPool3d(_FractionalMaxPoolNd):
    _tuple = staticmethod(_triple)
    _pool = staticmethod(F.fractional_max_pool3d)
