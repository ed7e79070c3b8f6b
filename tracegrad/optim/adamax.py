"""Adamax: Adam with the infinity norm of past gradients in place of their RMS.

PyTorch's single-tensor update, on the backend arrays in place:
``m.lerp_(g, 1 - beta1)``; ``u = max(beta2 * u, |g| + eps)``; ``p -= lr / (1 - beta1**t) * m / u``.
"""
from ._inplace import bump, directed_grad, lerp_, operands, real_view
from .optimizer import (Optimizer, as_float, check_betas, check_impl_flags, check_lr, check_non_negative,
                        closure_loss, stepped_params, zero_buffers)

__all__ = ["Adamax"]


class Adamax(Optimizer):
    """Implements the Adamax algorithm (a variant of Adam based on the infinity norm)."""

    _tensor_step = True

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, foreach=None, *,
                 maximize=False, differentiable=False, capturable=False):
        check_lr(lr)
        check_non_negative(eps, "epsilon value")
        check_betas(betas)
        check_non_negative(weight_decay, "weight_decay value")
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay, "foreach": foreach,
                    "maximize": maximize, "differentiable": differentiable, "capturable": capturable}
        check_impl_flags(differentiable)
        super().__init__(params, defaults)

    def step(self, closure=None):
        """Perform a single optimization step (``closure`` re-evaluates the loss)."""
        loss = closure_loss(closure)
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            lr, weight_decay = as_float(group["lr"]), group["weight_decay"]
            small = abs(1 - beta1) < 0.5  # which of lerp's two formulas PyTorch takes
            values = (1 - beta1 if small else beta1, beta2, group["eps"], weight_decay)
            for p, st, step in stepped_params(self, group, zero_buffers(group, "exp_avg", "exp_inf")):
                ops = operands(p._data, *values, lr / (1 - beta1 ** step))
                _update(p, p._data, p.grad._data, st, ops, small, weight_decay != 0, group["maximize"])
        return loss


def _update(p, param, grad, st, ops, small, decayed, maximize):
    """One parameter's Adamax step on its arrays (``grad`` is only read)."""
    xp, w1, beta2, eps, weight_decay, clr = ops
    param, grad = real_view(param), real_view(grad)
    grad = directed_grad(xp, param, grad, weight_decay, decayed, maximize)
    m_t, u_t = st["exp_avg"], st["exp_inf"]
    m, u = real_view(m_t._data), real_view(u_t._data)
    tmp = lerp_(xp, m, grad, w1, small)
    xp.multiply(u, beta2, out=u)
    xp.maximum(u, xp.add(xp.absolute(grad, out=tmp), eps, out=tmp), out=u)
    bump(m_t)
    bump(u_t, 2)
    update = xp.multiply(m, clr)
    xp.subtract(param, xp.divide(update, u, out=update), out=param)
    bump(p)
