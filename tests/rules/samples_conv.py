"""Samples for the convolution and pooling rules (tracegrad/rules/conv.py, pool.py).

Sizes are tiny (the checks run several finite differences per sample) but cover stride,
padding, dilation, groups, bias or none, 1-d and 2-d, transposed convolutions with
output_padding, ceil mode and windows hanging over the padding. Max pooling takes its
indices as an operand (the argmax is tested against PyTorch in tests/nn/test_pooling.py),
so finite differences hold the chosen element fixed.
"""
import numpy as np

from tracegrad.backend import cpu
from tracegrad.rules import pool

from .sampling import S, r


def conv(nd, *, stride=1, padding=0, dilation=1, transposed=False, output_padding=0, groups=1):
    """The static parameters of ``convolution`` for ``nd`` spatial dims."""
    return dict(stride=(stride,) * nd, padding=(padding,) * nd, dilation=(dilation,) * nd,
                transposed=transposed, output_padding=(output_padding,) * nd, groups=groups)


def weight_grad(nd, kernel, *, stride=1, padding=0, dilation=1, groups=1):
    return dict(kernel_size=(kernel,) * nd, stride=(stride,) * nd, padding=(padding,) * nd,
                dilation=(dilation,) * nd, groups=groups)


CONVOLUTION = [
    S(r(2, 3, 5, 4), r(2, 3, 3, 2), r(2), **conv(2)),
    S(r(1, 4, 6, 5), r(4, 2, 2, 3), None, **conv(2, stride=2, padding=1, groups=2)),
    S(r(2, 2, 7, 6), r(3, 2, 2, 2), r(3), **conv(2, dilation=2, padding=2)),
    S(r(2, 3, 7), r(4, 3, 3), r(4), **conv(1, stride=2, padding=1)),
    S(r(1, 2, 5), r(2, 1, 2), None, **conv(1, groups=2, dilation=2)),
    S(r(0, 3, 5, 4), r(2, 3, 3, 2), r(2), tags="empty", **conv(2)),
    # transposed: weight (in, out / groups, *kernel)
    S(r(2, 3, 3, 4), r(3, 2, 3, 2), r(2), **conv(2, transposed=True)),
    S(r(1, 4, 3, 3), r(4, 1, 3, 3), r(2), **conv(2, stride=2, padding=1, transposed=True,
                                                     output_padding=1, groups=2)),
    S(r(1, 2, 3, 3), r(2, 2, 2, 2), None, **conv(2, stride=1, padding=1, dilation=2,
                                                 transposed=True, output_padding=1)),
    S(r(2, 2, 4), r(2, 3, 3), r(3), **conv(1, stride=3, dilation=2, transposed=True)),
]

CONVOLUTION_WEIGHT = [
    S(r(2, 3, 5, 4), r(2, 2, 3, 3), **weight_grad(2, 3, padding=1)),
    S(r(1, 4, 6, 5), r(1, 4, 3, 3), **weight_grad(2, 2, stride=2, padding=1, groups=2)),
    S(r(2, 2, 7), r(2, 3, 3), **weight_grad(1, 2, stride=2, dilation=2, padding=1)),
    # a grad shorter than the input allows (a transposed convolution's output_padding)
    S(r(1, 2, 6, 6), r(1, 2, 1, 2), **weight_grad(2, 2, stride=2, dilation=3)),
    S(r(0, 3, 5, 4), r(0, 2, 3, 2), tags="empty", **weight_grad(2, 3)),
]


def max_pool(x, kernel, stride=(), padding=(0, 0), dilation=(1, 1), ceil_mode=False, **extra):
    params = dict(kernel_size=kernel, stride=stride, padding=padding, dilation=dilation,
                  ceil_mode=ceil_mode)
    indices = pool.max_pool2d_indices.impl(cpu, x, **params)
    return S(x, indices, **params, **extra)


def max_pool_backward(x, kernel, stride=(), padding=(0, 0), dilation=(1, 1), ceil_mode=False, **extra):
    params = dict(kernel_size=kernel, stride=stride, padding=padding, dilation=dilation,
                  ceil_mode=ceil_mode)
    indices = pool.max_pool2d_indices.impl(cpu, x, **params)
    return S(r(*indices.shape), x, indices, **params, **extra)


def avg(kernel, stride=(), padding=(0, 0), ceil_mode=False, count_include_pad=True,
        divisor_override=None):
    return dict(kernel_size=kernel, stride=stride, padding=padding, ceil_mode=ceil_mode,
                count_include_pad=count_include_pad, divisor_override=divisor_override)


def avg_backward(x_shape, tags=(), **params):
    out = pool.avg_pool2d.impl(cpu, np.zeros(x_shape), **params)
    return S(r(*out.shape), r(*x_shape), tags=tags, **params)


AVG = [avg((2, 2)), avg((3, 2), (2, 1), (1, 1), ceil_mode=True),
       avg((3, 3), (2, 2), (1, 1), ceil_mode=True, count_include_pad=False),
       avg((2, 3), (1, 2), (1, 1), divisor_override=3)]

SAMPLES = {
    "convolution": CONVOLUTION,
    "convolution_backward_input": CONVOLUTION[:2] + CONVOLUTION[5:8],
    "convolution_backward_weight": CONVOLUTION_WEIGHT,
    "max_pool2d": [
        max_pool(r(2, 3, 4, 4), (2, 2)),
        max_pool(r(1, 2, 5, 6), (3, 2), (2, 1), (1, 1), ceil_mode=True),
        max_pool(r(2, 5, 7), (2, 2), (1, 2), (1, 0), (2, 2)),
        max_pool(r(0, 3, 4, 4), (2, 2), tags="empty"),
    ],
    "max_pool2d_backward": [
        max_pool_backward(r(2, 3, 4, 4), (2, 2)),
        max_pool_backward(r(1, 2, 5, 6), (3, 3), (1, 1), (1, 1)),  # overlapping windows
        max_pool_backward(r(0, 3, 4, 4), (2, 2), tags="empty"),
    ],
    "avg_pool2d": [S(r(2, 3, 5, 6), **p) for p in AVG] + [
        S(r(3, 4, 4), **avg((2, 2))), S(r(0, 2, 4, 4), tags="empty", **avg((2, 2)))],
    "avg_pool2d_backward": [avg_backward((2, 3, 5, 6), **p) for p in AVG] + [
        avg_backward((0, 2, 4, 4), tags="empty", **avg((2, 2)))],
    "adaptive_avg_pool2d": [
        S(r(2, 3, 5, 7), output_size=(1, 1)), S(r(2, 3, 5, 7), output_size=(2, 3)),
        S(r(2, 6, 4), output_size=(3, 4)), S(r(1, 2, 3, 3), output_size=(5, 4)),
        S(r(0, 2, 4, 4), output_size=(2, 2), tags="empty")],
    "adaptive_avg_pool2d_backward": [
        S(r(2, 3, 1, 1), r(2, 3, 5, 7)), S(r(2, 3, 2, 3), r(2, 3, 5, 7)),
        S(r(2, 5, 2), r(2, 6, 4)), S(r(0, 2, 2, 2), r(0, 2, 4, 4), tags="empty")],
}

_SPATIAL = "takes (N, C, *spatial) or (C, H, W) operands: a 0-d tensor has no spatial dims"
EXEMPT = {name: {"0d": _SPATIAL} for name in SAMPLES}
