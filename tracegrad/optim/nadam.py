"""NAdam: Adam with Nesterov momentum, its momentum warmed up by ``momentum_decay``.

PyTorch's single-tensor update, on the backend arrays in place: Adam's moments, then with
``mu_t = beta1 * (1 - 0.5 * 0.96**(t * momentum_decay))`` and their running product ``P_t``
(kept in the state as ``mu_product``): ``denom = sqrt(v / (1 - beta2**t)) + eps``;
``p -= lr * (1 - mu_t) / (1 - P_t) * g / denom + lr * mu_{t+1} / (1 - P_t * mu_{t+1}) * m / denom``.
"""
from .. import backend
from ..runtime.tensor import wrap
from ._inplace import bump, operands, real_view, scalar_dtype, scalar_state, step_counter, zeros_state
from .adam import decay, update_moments
from .optimizer import (Optimizer, as_float, check_betas, check_impl_flags, check_lr, check_non_negative,
                        closure_loss, stepped_params)

__all__ = ["NAdam"]


class NAdam(Optimizer):
    """Implements the NAdam algorithm."""

    _tensor_step = True

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, momentum_decay=4e-3,
                 decoupled_weight_decay=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False):
        check_lr(lr)
        check_non_negative(eps, "epsilon value")
        check_betas(betas)
        check_non_negative(weight_decay, "weight_decay value")
        check_non_negative(momentum_decay, "momentum_decay value")
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay,
                    "momentum_decay": momentum_decay, "decoupled_weight_decay": decoupled_weight_decay,
                    "maximize": maximize, "foreach": foreach, "capturable": capturable,
                    "differentiable": differentiable}
        check_impl_flags(differentiable)
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for st in self.state.values():  # old state dicts hold mu_product as a number
            if isinstance(st, dict) and "mu_product" in st and not hasattr(st["mu_product"], "_data"):
                st["mu_product"] = wrap(backend.cpu.asarray(float(st["mu_product"]), dtype=scalar_dtype().np))

    def step(self, closure=None):
        """Perform a single optimization step (``closure`` re-evaluates the loss)."""
        loss = closure_loss(closure)
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            lr, weight_decay, momentum_decay = as_float(group["lr"]), group["weight_decay"], group["momentum_decay"]
            small = abs(1 - beta1) < 0.5  # which of lerp's two formulas PyTorch takes
            values = (1 - beta1 if small else beta1, beta2, 1 - beta2, group["eps"], weight_decay,
                      1 - lr * weight_decay)
            flags = (small, weight_decay != 0, group["decoupled_weight_decay"], group["maximize"])
            def init(p, st, on_device=group["capturable"]):  # (PyTorch's order of state keys)
                st["step"] = step_counter(p, on_device)
                st["mu_product"] = scalar_state(p, 1.0, on_device)
                st["exp_avg"] = zeros_state(p)
                st["exp_avg_sq"] = zeros_state(p)
            for p, st, step in stepped_params(self, group, init, what="params, mu_products and state_steps",
                                              what_foreach="params, mu_products, and state_steps"):
                mu = beta1 * (1.0 - 0.5 * (0.96 ** (step * momentum_decay)))
                mu_next = beta1 * (1.0 - 0.5 * (0.96 ** ((step + 1) * momentum_decay)))
                product_t = st["mu_product"]
                product_t._data *= mu  # in the counter's own (float32 by default) precision
                bump(product_t)
                product = float(product_t._data)
                per_step = (1 - beta2 ** step, -lr * (1.0 - mu) / (1.0 - product),
                            (-lr * mu_next) / (1.0 - product * mu_next))
                ops = operands(p._data, *values, *per_step)
                _update(p, p._data, p.grad._data, st, ops, *flags)
        return loss


def _update(p, param, grad, st, ops, small, decayed, decoupled, maximize):
    """One parameter's NAdam step on its arrays (``grad`` is only read)."""
    xp, w1, beta2, one_minus_beta2, eps, weight_decay, shrink, bias_correction2, grad_step, avg_step = ops
    param, grad = real_view(param), real_view(grad)
    grad = decay(xp, p, param, grad, weight_decay, shrink, decayed, decoupled, maximize)
    m, v, tmp = update_moments(xp, grad, st, w1, small, beta2, one_minus_beta2)
    denom = xp.add(xp.sqrt(xp.divide(v, bias_correction2, out=tmp), out=tmp), eps, out=tmp)
    update = xp.multiply(grad, grad_step)
    xp.add(param, xp.divide(update, denom, out=update), out=param)
    xp.add(param, xp.divide(xp.multiply(m, avg_step, out=update), denom, out=update), out=param)
    bump(p, 2)
