"""RAdam: Adam whose adaptive step is switched on only once the variance of its estimate is
tractable, and then scaled by a rectification term.

PyTorch's single-tensor update, on the backend arrays in place: Adam's moments, then with
``rho_inf = 2 / (1 - beta2) - 1`` and ``rho_t = rho_inf - 2 t beta2**t / (1 - beta2**t)``:
``p -= lr * m / (1 - beta1**t) * [sqrt(1 - beta2**t) / (sqrt(v) + eps) * r_t if rho_t > 5]``,
``r_t = sqrt((rho_t - 4)(rho_t - 2) rho_inf / ((rho_inf - 4)(rho_inf - 2) rho_t))``.
"""
from ._inplace import bump, operands, real_view
from .adam import decay, update_moments
from .optimizer import (Optimizer, as_float, check_betas, check_impl_flags, check_lr, check_non_negative,
                        closure_loss, stepped_params, zero_buffers)

__all__ = ["RAdam"]


class RAdam(Optimizer):
    """Implements the RAdam algorithm."""

    _tensor_step = True

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, decoupled_weight_decay=False,
                 *, foreach=None, maximize=False, capturable=False, differentiable=False):
        check_lr(lr)
        check_non_negative(eps, "epsilon value")
        check_betas(betas)
        check_non_negative(weight_decay, "weight_decay value")
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay, "maximize": maximize,
                    "foreach": foreach, "capturable": capturable,
                    "decoupled_weight_decay": decoupled_weight_decay, "differentiable": differentiable}
        check_impl_flags(differentiable)
        super().__init__(params, defaults)

    def step(self, closure=None):
        """Perform a single optimization step (``closure`` re-evaluates the loss)."""
        loss = closure_loss(closure)
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            lr, weight_decay = as_float(group["lr"]), group["weight_decay"]
            small = abs(1 - beta1) < 0.5  # which of lerp's two formulas PyTorch takes
            values = (1 - beta1 if small else beta1, beta2, 1 - beta2, group["eps"], weight_decay,
                      1 - lr * weight_decay, lr)
            flags = (small, weight_decay != 0, group["decoupled_weight_decay"], group["maximize"])
            rho_inf = 2 / (1 - beta2) - 1
            for p, st, step in stepped_params(self, group, zero_buffers(group, "exp_avg", "exp_avg_sq")):
                bias_correction1, bias_correction2 = 1 - beta1 ** step, 1 - beta2 ** step
                rho_t = rho_inf - 2 * step * (beta2 ** step) / bias_correction2
                rect = None
                if rho_t > 5.0:
                    rect = ((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
                per_step = (bias_correction1, bias_correction2 ** 0.5, 1.0 if rect is None else rect)
                ops = operands(p._data, *values, *per_step)
                _update(p, p._data, p.grad._data, st, ops, rect is not None, *flags)
        return loss


def _update(p, param, grad, st, ops, rectified, small, decayed, decoupled, maximize):
    """One parameter's RAdam step on its arrays (``grad`` is only read)."""
    xp, w1, beta2, one_minus_beta2, eps, weight_decay, shrink, lr, bias_correction1, bc2_sqrt, rect = ops
    param, grad = real_view(param), real_view(grad)
    grad = decay(xp, p, param, grad, weight_decay, shrink, decayed, decoupled, maximize)
    m, v, tmp = update_moments(xp, grad, st, w1, small, beta2, one_minus_beta2)
    update = xp.multiply(xp.divide(m, bias_correction1), lr)
    if rectified:  # PyTorch's ``c / t`` is ``t.reciprocal() * c``
        adaptive = xp.multiply(xp.reciprocal(xp.add(xp.sqrt(v, out=tmp), eps, out=tmp), out=tmp), bc2_sqrt, out=tmp)
        xp.multiply(xp.multiply(update, adaptive, out=update), rect, out=update)
    xp.subtract(param, update, out=param)
    bump(p)
