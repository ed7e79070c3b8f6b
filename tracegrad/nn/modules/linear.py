"""``Identity``, ``Linear`` and ``Bilinear``, initialised exactly as PyTorch initialises them."""
import math

from ...runtime.creation import empty
from .. import functional as F
from .. import init
from ..parameter import Parameter
from .module import Module

__all__ = ["Identity", "Linear", "Bilinear", "weight_and_bias", "reset_kaiming"]


def weight_and_bias(module, weight_shape, bias_size, bias, device, dtype):
    """Register ``weight`` (uninitialised) and ``bias`` -- or a ``None`` bias, as PyTorch
    does, so that ``module.bias`` exists either way."""
    module.weight = Parameter(empty(weight_shape, device=device, dtype=dtype))
    if bias:
        module.bias = Parameter(empty(bias_size, device=device, dtype=dtype))
    else:
        module.register_parameter("bias", None)


def reset_kaiming(module):
    """PyTorch's default for linear and convolution layers: ``kaiming_uniform_(a=sqrt(5))``
    for the weight, which is U(-1/sqrt(fan_in), 1/sqrt(fan_in)), and that bound for the bias."""
    init.kaiming_uniform_(module.weight, a=math.sqrt(5))
    if module.bias is not None:
        fan_in, _ = init._calculate_fan_in_and_fan_out(module.weight)
        bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
        init.uniform_(module.bias, -bound, bound)


class Identity(Module):
    """Returns its input; takes (and ignores) any constructor arguments."""

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, input):
        return input


class Linear(Module):
    """``y = x @ weight.T + bias`` with ``weight`` of shape (out_features, in_features).

    Both are drawn from U(-1/sqrt(in_features), 1/sqrt(in_features)): PyTorch's
    ``kaiming_uniform_(a=sqrt(5))`` for the weight and the matching bound for the bias."""

    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        weight_and_bias(self, (out_features, in_features), out_features, bias, device, dtype)
        self.reset_parameters()

    def reset_parameters(self):
        reset_kaiming(self)

    def forward(self, input):
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self):
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


class Bilinear(Module):
    """``y = x1 @ weight[o] @ x2 + bias[o]`` for each output feature ``o``."""

    def __init__(self, in1_features, in2_features, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        self.in1_features = in1_features
        self.in2_features = in2_features
        self.out_features = out_features
        weight_and_bias(self, (out_features, in1_features, in2_features), out_features, bias, device, dtype)
        self.reset_parameters()

    def reset_parameters(self):
        bound = 1 / math.sqrt(self.weight.size(1))
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1, input2):
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self):
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")
