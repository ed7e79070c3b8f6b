"""Rprop: per-coordinate step sizes grown by ``etaplus`` while the gradient keeps its sign and
shrunk by ``etaminus`` when it flips; only the gradient's sign is used.

PyTorch's single-tensor update, on the backend arrays in place: ``s = sign(g * prev)``
mapped to ``etaplus`` / ``etaminus`` / 1; ``step_size = clamp(step_size * s, min, max)``;
where the sign flipped, ``g = 0``; ``p -= sign(g) * step_size``; ``prev = g``.
"""
from .. import backend
from ..runtime.tensor import wrap
from ._inplace import bump, operands, real_view
from .optimizer import (Optimizer, as_float, check_impl_flags, check_lr, closure_loss, stepped_params,
                        zero_buffers)

__all__ = ["Rprop"]


class Rprop(Optimizer):
    """Implements the resilient backpropagation algorithm."""

    _tensor_step = True

    def __init__(self, params, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), *, capturable=False, foreach=None,
                 maximize=False, differentiable=False):
        check_lr(lr)
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        defaults = {"lr": lr, "etas": etas, "step_sizes": step_sizes, "foreach": foreach, "maximize": maximize,
                    "differentiable": differentiable, "capturable": capturable}
        check_impl_flags(differentiable)
        super().__init__(params, defaults)

    def step(self, closure=None):
        """Perform a single optimization step (``closure`` re-evaluates the loss)."""
        loss = closure_loss(closure)
        for group in self.param_groups:
            etaminus, etaplus = group["etas"]
            step_size_min, step_size_max = group["step_sizes"]
            def init(p, st, buffers=zero_buffers(group, "prev"), lr=as_float(group["lr"])):
                buffers(p, st)
                data = p.grad._data
                fill = complex(lr, lr) if data.dtype.kind == "c" else lr
                st["step_size"] = wrap(backend.namespace_of(data).full_like(data, fill))
            for p, st, _ in stepped_params(self, group, init, xla=(True, True)):
                ops = operands(p._data, etaminus, etaplus, step_size_min, step_size_max)
                _update(p, p._data, p.grad._data, st, ops, group["maximize"])
        return loss


def _update(p, param, grad, st, ops, maximize):
    """One parameter's Rprop step on its arrays (``grad`` is only read)."""
    xp, etaminus, etaplus, step_size_min, step_size_max = ops
    prev_t, size_t = st["prev"], st["step_size"]
    param, grad = real_view(param), real_view(grad)
    prev, size = real_view(prev_t._data), real_view(size_t._data)
    grad = xp.negative(grad) if maximize else grad.copy()
    sign = xp.sign(xp.multiply(grad, prev))
    factor = sign.copy()  # NaN (from a NaN gradient) stays NaN, as in PyTorch
    factor[sign > 0] = etaplus
    factor[sign < 0] = etaminus
    factor[sign == 0] = 1
    xp.clip(xp.multiply(size, factor, out=size), step_size_min, step_size_max, out=size)
    bump(size_t, 2)
    grad[factor == etaminus] = 0
    xp.subtract(param, xp.multiply(xp.sign(grad), size), out=param)
    bump(p)
    prev[...] = grad
    bump(prev_t)
