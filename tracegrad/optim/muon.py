"""Muon: SGD with (Nesterov) momentum whose update for a 2-D parameter is orthogonalised by
a few Newton-Schulz iterations, run in bfloat16 as PyTorch does.

PyTorch's single-tensor update: ``b.lerp_(g, 1 - momentum)``; ``u = g.lerp(b, momentum)``
(Nesterov) or ``b``; ``u = NS(u)`` (scaled to unit norm, then ``X = a X + (b G + c G G) X``
with ``G = X X^T``, ``ns_steps`` times, on the wide orientation); ``p *= 1 - lr * wd``;
``p -= lr * ratio * u`` (``ratio`` from ``adjust_lr_fn`` and the shape).
"""
import math

from .. import backend
from ..backend import (
    cpu as host,  # host-side (NumPy) arithmetic, never on device arrays
)
from ._inplace import bump, lerp_, zeros_state
from .optimizer import Optimizer, as_float, closure_loss

__all__ = ["Muon"]

EPS = 1e-7
DEFAULT_A, DEFAULT_B, DEFAULT_C = 3.4445, -4.775, 2.0315
DEFAULT_NS_STEPS = 5


class Muon(Optimizer):
    """Implements Muon (MomentUm Orthogonalized by Newton-Schulz), for 2-D parameters."""

    def __init__(self, params, lr=1e-3, weight_decay=0.1, momentum=0.95, nesterov=True,
                 ns_coefficients=(DEFAULT_A, DEFAULT_B, DEFAULT_C), eps=EPS, ns_steps=DEFAULT_NS_STEPS,
                 adjust_lr_fn=None):
        if hasattr(lr, "numel") and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 <= momentum:
            raise ValueError(f"momentum should be >= 0 but is: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight decay should be >= 0 but is: {weight_decay}")
        if adjust_lr_fn is not None and adjust_lr_fn not in ["original", "match_rms_adamw"]:
            raise ValueError(f"Adjust learning rate function {adjust_lr_fn} is not supported")
        defaults = {"lr": lr, "weight_decay": weight_decay, "momentum": momentum, "nesterov": nesterov,
                    "ns_coefficients": ns_coefficients, "eps": eps, "ns_steps": ns_steps,
                    "adjust_lr_fn": adjust_lr_fn}
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                if p.ndim != 2:
                    raise ValueError(f"Muon only supports 2D parameters whereas we found a parameter with size: "
                                     f"{p.size()}")

    def step(self, closure=None):
        """Perform a single optimization step (``closure`` re-evaluates the loss)."""
        loss = closure_loss(closure)
        for group in self.param_groups:
            lr, weight_decay, momentum = as_float(group["lr"]), group["weight_decay"], group["momentum"]
            stepped = [p for p in group["params"] if p.grad is not None]
            for p in stepped:
                if p.is_complex():
                    raise RuntimeError("Muon does not support complex parameters")
                st = self.state[p]
                if "momentum_buffer" not in st:
                    st["momentum_buffer"] = zeros_state(p.grad)
            for p in stepped:
                _update(p, p._data, p.grad._data, self.state[p]["momentum_buffer"], lr, weight_decay, momentum,
                        group)
        return loss


def _update(p, param, grad, buf_t, lr, weight_decay, momentum, group):
    """One parameter's Muon step on its arrays (``grad`` is only read)."""
    xp = backend.namespace_of(param)
    if grad.ndim != 2:
        raise ValueError("Param gradient must be a 2D matrix")
    buf = buf_t._data
    lerp_(xp, buf, grad, 1 - momentum if abs(1 - momentum) < 0.5 else momentum, abs(1 - momentum) < 0.5)
    bump(buf_t)
    if group["nesterov"]:
        update = grad.copy()
        lerp_(xp, update, buf, momentum if abs(momentum) < 0.5 else 1 - momentum, abs(momentum) < 0.5)
    else:
        update = buf
    update = zeropower_via_newtonschulz(xp, update, group["ns_coefficients"], group["ns_steps"], group["eps"])
    xp.multiply(param, 1 - lr * weight_decay, out=param)
    xp.subtract(param, xp.multiply(update.astype(param.dtype), _adjust_lr(lr, group["adjust_lr_fn"], param.shape)),
                out=param)
    bump(p, 2)


def _adjust_lr(lr, adjust_lr_fn, shape):
    """The learning rate scaled for the parameter's shape ``(A, B)``."""
    a, b = shape[:2]
    if adjust_lr_fn is None or adjust_lr_fn == "original":
        return lr * math.sqrt(max(1, a / b))
    if adjust_lr_fn == "match_rms_adamw":
        return lr * (0.2 * math.sqrt(max(a, b)))
    return lr * 1.0


def bfloat16(a):
    """``a`` rounded (to nearest, ties to even) to bfloat16, held in a float32 array: what
    PyTorch's bfloat16 kernels store after each operation (they compute in float32)."""
    a = host.asarray(a, dtype=host.float32)
    bits = a.view(host.uint32)
    rounded = (bits + host.uint32(0x7FFF) + ((bits >> 16) & host.uint32(1))) & host.uint32(0xFFFF0000)
    return host.where(host.isnan(a), a, rounded.view(host.float32))


def zeropower_via_newtonschulz(xp, grad, ns_coefficients, ns_steps, eps):
    """The orthogonal factor of ``grad`` (its singular values pushed toward 1) by PyTorch's
    quintic Newton-Schulz iteration, in bfloat16 arithmetic (float32 sums, rounded after
    each operation). Returns a float32 array holding bfloat16 values, on ``xp``'s device."""
    if ns_steps >= 100:
        raise ValueError("Number of steps must be less than 100 for computational efficiency")
    if grad.ndim != 2:
        raise ValueError("Input tensor gradient must be a 2D matrix")
    if len(ns_coefficients) != 3:
        raise ValueError("Coefficients must be a tuple of exactly 3 values")
    a, b, c = (host.float32(v) for v in ns_coefficients)
    x = bfloat16(backend.move(grad, backend.cpu))  # rounded on the host (NumPy has no bfloat16)
    tall = grad.shape[0] > grad.shape[1]
    if tall:
        x = x.T
    norm = bfloat16(host.sqrt(host.sum(x * x, dtype=host.float32)))
    x = bfloat16(x / host.maximum(norm, bfloat16(eps)))
    for _ in range(ns_steps):
        gram = bfloat16(x @ x.T)
        gram_update = bfloat16(b * gram + c * (gram @ gram))
        x = bfloat16(a * x + gram_update @ x)
    if tall:
        x = x.T
    return backend.move(x, xp)
