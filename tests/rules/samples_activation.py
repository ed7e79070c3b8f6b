"""Samples for the activation rules (tracegrad/rules/activation.py).

Piecewise rules are sampled at least 0.2 away from their kinks (``off``), since finite
differences cannot check a one-sided derivative; the kink conventions themselves are
tested against PyTorch in tests/ops/test_activation.py. ``smooth=False`` samples sit at
points where the first derivative is continuous but the second is not.
"""
import numpy as np

from .sampling import S, away, r, zd


def off(*kinks, scale=2.0):
    """A domain: normal values times ``scale``, moved at least 0.2 away from each kink."""
    def domain(*shape):
        v = r(*shape) * scale
        for k in kinks:
            near = np.abs(v - k) < 0.2
            v = np.where(near, np.where(v >= k, k + 0.2, k - 0.2), v)
        return v
    return domain


def unary(domain=r, **params):
    """The three shapes every elementwise rule is checked on."""
    return [S(domain(3, 4), **params), S(zd(domain), tags="0d", **params),
            S(domain(0, 3), tags="empty", **params)]


def along():
    """Samples for a rule along ``dim``: several dims, large entries, 0-d and empty."""
    return [S(r(3, 4), dim=1), S(r(3, 4), dim=0), S(r(2, 3, 4), dim=1), S(r(5) * 30, dim=0),
            S(zd(), dim=0, tags="0d"), S(r(0, 3), dim=1, tags="empty"),
            S(r(0, 3), dim=0, tags="empty")]


SAMPLES = {
    "sigmoid": unary(r) + [S(r(4) * 30)],
    "logsigmoid": unary(r) + [S(r(4) * 30)],
    "silu": unary(r) + [S(r(4) * 10)],
    "mish": unary(r) + [S(r(4) * 10)],
    "softplus": unary(r) + [S(off(1.5, scale=3.0)(3, 4), beta=2.0, threshold=3.0),
                            S(off(-1.5, scale=3.0)(3, 4), beta=-2.0, threshold=3.0),
                            S(off(20.0, scale=20.0)(6))],
    "relu": unary(away),
    "leaky_relu": unary(away) + [S(away(3, 4), negative_slope=0.2), S(away(5), negative_slope=-0.3)],
    "leaky_relu_": unary(away) + [S(away(3, 4), negative_slope=0.2)],
    "hardtanh": unary(off(-1.0, 1.0)) + [S(off(0.0, 6.0, scale=5.0)(3, 4), min_val=0.0, max_val=6.0)],
    "hardsigmoid": unary(off(-3.0, 3.0, scale=4.0)),
    "hardswish": unary(off(-3.0, 3.0, scale=4.0)),
    "threshold": unary(off(0.5), threshold=0.5, value=2.0) + [S(off(-1.0)(5), threshold=-1.0, value=-3.0)],
    "threshold_": unary(off(0.5), threshold=0.5, value=2.0),
    "hardshrink": unary(off(-0.5, 0.5)) + [S(off(-1.0, 1.0)(3, 4), lambd=1.0)],
    "softshrink": unary(off(-0.5, 0.5)) + [S(off(-1.0, 1.0)(3, 4), lambd=1.0)],
    "elu": unary(away) + [S(away(3, 4), alpha=0.5), S(away(3, 4), alpha=-0.7),
                          S(away(3, 4), alpha=1.6732632423543772, scale=1.0507009873554805),
                          S(away(3, 4), alpha=2.0, input_scale=0.5),
                          S(np.array([0.0, -1.0, 1.0]), smooth=False)],
    "elu_": unary(away) + [S(away(3, 4), alpha=0.5),
                           S(away(3, 4), alpha=1.6732632423543772, scale=1.0507009873554805)],
    "celu": unary(away) + [S(away(3, 4), alpha=2.0), S(away(3, 4), alpha=-0.5),
                           S(np.array([0.0, -1.0, 1.0]), alpha=3.0, smooth=False)],
    "celu_": unary(away) + [S(away(3, 4), alpha=0.5)],
    "gelu": unary(r) + unary(r, approximate="tanh") + [S(r(4) * 5), S(r(4) * 5, approximate="tanh")],
    "gelu_cdf": unary(r) + [S(r(4) * 5)],
    # -inf entries (masked attention) get probability 0 and no gradient
    "softmax": along() + [S(np.array([[-np.inf, 0.5, 1.0], [0.2, -np.inf, -1.0]]), dim=1)],
    "log_softmax": along(),
}


def _torch_ndtr(x):
    import torch
    return torch.special.ndtr(x)


# gelu_cdf is GELU's normal distribution function: torch's ndtr (the samples are float64,
# where it is exact; its float32 form, PyTorch's GELU approximation, is checked in
# tests/rules/test_gelu_float32.py)
TORCH = {"gelu_cdf": _torch_ndtr}
