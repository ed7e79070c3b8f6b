"""RMSprop: divide the gradient by a running root mean square of recent gradients.

PyTorch's single-tensor update, on the backend arrays in place:
``s = alpha * s + (1 - alpha) * g * g``; ``avg = sqrt(s) + eps`` (centered: ``a.lerp_(g,
1 - alpha)``, ``avg = sqrt(s - a * a) + eps``); with momentum ``b = momentum * b + g / avg``,
``p -= lr * b``, else ``p -= lr * g / avg``.
"""
from ._inplace import advance, bump, directed_grad, lerp_, operands, real_view, step_counter, zeros_state
from .optimizer import (Optimizer, as_float, check_capturable, check_impl_flags, check_lr, check_non_negative,
                        closure_loss)

__all__ = ["RMSprop"]


class RMSprop(Optimizer):
    """Implements the RMSprop algorithm."""

    _tensor_step = True

    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0, centered=False,
                 capturable=False, foreach=None, maximize=False, differentiable=False):
        check_lr(lr)
        check_non_negative(eps, "epsilon value")
        check_non_negative(momentum, "momentum value")
        check_non_negative(weight_decay, "weight_decay value")
        check_non_negative(alpha, "alpha value")
        defaults = {"lr": lr, "momentum": momentum, "alpha": alpha, "eps": eps, "centered": centered,
                    "weight_decay": weight_decay, "capturable": capturable, "foreach": foreach,
                    "maximize": maximize, "differentiable": differentiable}
        check_impl_flags(differentiable)
        super().__init__(params, defaults)

    def step(self, closure=None):
        """Perform a single optimization step (``closure`` re-evaluates the loss)."""
        loss = closure_loss(closure)
        state = self.state
        for group in self.param_groups:
            alpha, momentum, centered = group["alpha"], group["momentum"], group["centered"]
            small = abs(1 - alpha) < 0.5  # which of lerp's two formulas PyTorch takes
            values = (as_float(group["lr"]), alpha, 1 - alpha, 1 - alpha if small else alpha, group["eps"],
                      group["weight_decay"], momentum)
            flags = (small, group["weight_decay"] != 0, momentum > 0, centered, group["maximize"])
            ops = dtype = kind = None
            for p in group["params"]:
                grad = p.grad
                if grad is None:
                    continue
                st = state[p]
                if len(st) == 0:
                    st["step"] = step_counter(p, group["capturable"])
                    st["square_avg"] = zeros_state(p)
                    if momentum > 0:
                        st["momentum_buffer"] = zeros_state(p)
                    if centered:
                        st["grad_avg"] = zeros_state(p)
                check_capturable(group, p, xla=(True, True))
                data = p._data
                if data.dtype != dtype or type(data) is not kind:
                    dtype, kind = data.dtype, type(data)
                    ops = operands(data, *values)
                _update(p, data, grad._data, st, ops, *flags)
        return loss


def _update(p, param, grad, st, ops, small, decayed, use_momentum, centered, maximize):
    """One parameter's RMSprop step on its arrays (``grad`` is only read)."""
    xp, lr, alpha, one_minus_alpha, w, eps, weight_decay, momentum = ops
    mul, add, sub, div = xp.multiply, xp.add, xp.subtract, xp.divide
    advance(st["step"])
    param, grad = real_view(param), real_view(grad)
    grad = directed_grad(xp, param, grad, weight_decay, decayed, maximize)
    sq_t = st["square_avg"]
    sq = real_view(sq_t._data)
    mul(sq, alpha, out=sq)
    tmp = mul(grad, one_minus_alpha)
    add(sq, mul(tmp, grad, out=tmp), out=sq)
    bump(sq_t, 2)
    if centered:
        ga_t = st["grad_avg"]
        ga = real_view(ga_t._data)
        tmp = lerp_(xp, ga, grad, w, small)
        bump(ga_t)
        avg = xp.sqrt(sub(sq, mul(ga, ga, out=tmp), out=tmp), out=tmp)
    else:
        avg = xp.sqrt(sq, out=tmp)
    add(avg, eps, out=avg)
    if use_momentum:
        buf_t = st["momentum_buffer"]
        buf = real_view(buf_t._data)
        mul(buf, momentum, out=buf)
        add(buf, div(grad, avg, out=avg), out=buf)
        bump(buf_t, 2)
        sub(param, mul(buf, lr, out=avg), out=param)
    else:
        update = mul(grad, lr)
        sub(param, div(update, avg, out=update), out=param)
    bump(p)
