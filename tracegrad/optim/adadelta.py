"""Adadelta: steps sized by the ratio of running RMS of past updates to that of gradients.

PyTorch's single-tensor update, on the backend arrays in place:
``s = rho * s + (1 - rho) * g * g``; ``delta = sqrt(u + eps) / sqrt(s + eps) * g``;
``u = rho * u + (1 - rho) * delta * delta``; ``p -= lr * delta``.
"""
from ._inplace import bump, directed_grad, operands, real_view
from .optimizer import (Optimizer, as_float, check_impl_flags, check_lr, check_non_negative, closure_loss,
                        stepped_params, zero_buffers)

__all__ = ["Adadelta"]


class Adadelta(Optimizer):
    """Implements the Adadelta algorithm."""

    _tensor_step = True

    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, foreach=None, *, capturable=False,
                 maximize=False, differentiable=False):
        check_lr(lr)
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        check_non_negative(eps, "epsilon value")
        check_non_negative(weight_decay, "weight_decay value")
        defaults = {"lr": lr, "rho": rho, "eps": eps, "weight_decay": weight_decay, "maximize": maximize,
                    "capturable": capturable, "foreach": foreach, "differentiable": differentiable}
        check_impl_flags(differentiable)
        super().__init__(params, defaults)

    def step(self, closure=None):
        """Perform a single optimization step (``closure`` re-evaluates the loss)."""
        loss = closure_loss(closure)
        for group in self.param_groups:
            rho, weight_decay = group["rho"], group["weight_decay"]
            values = (rho, 1 - rho, group["eps"], weight_decay, as_float(group["lr"]))
            init = zero_buffers(group, "square_avg", "acc_delta")
            for p, st, _ in stepped_params(self, group, init, xla=(False, False)):
                ops = operands(p._data, *values)
                _update(p, p._data, p.grad._data, st, ops, weight_decay != 0, group["maximize"])
        return loss


def _update(p, param, grad, st, ops, decayed, maximize):
    """One parameter's Adadelta step on its arrays (``grad`` is only read)."""
    xp, rho, one_minus_rho, eps, weight_decay, lr = ops
    mul, add = xp.multiply, xp.add
    param, grad = real_view(param), real_view(grad)
    grad = directed_grad(xp, param, grad, weight_decay, decayed, maximize)
    sq_t, acc_t = st["square_avg"], st["acc_delta"]
    sq, acc = real_view(sq_t._data), real_view(acc_t._data)
    mul(sq, rho, out=sq)
    add(sq, mul(mul(grad, one_minus_rho), grad), out=sq)
    std = xp.sqrt(add(sq, eps))
    delta = xp.sqrt(add(acc, eps))
    mul(xp.divide(delta, std, out=delta), grad, out=delta)
    mul(acc, rho, out=acc)
    add(acc, mul(mul(delta, one_minus_rho, out=std), delta, out=std), out=acc)
    bump(sq_t, 2)
    bump(acc_t, 2)
    xp.subtract(param, mul(delta, lr, out=delta), out=param)
    bump(p)
