"""ASGD: SGD with a decaying step size whose iterates are averaged (Polyak-Ruppert) from
step ``t0`` on.

PyTorch's single-tensor update, on the backend arrays in place: ``p *= 1 - lambd * eta``;
``p -= eta * g``; ``ax += (p - ax) * mu`` (``ax = p`` while ``mu == 1``); then
``eta = lr / (1 + lambd * lr * t)**alpha`` and ``mu = 1 / max(1, t - t0)``, both kept as
0-d tensors in the ``step`` counter's precision.
"""
from ..runtime.tensor import Tensor
from ._inplace import bump, directed_grad, operands, real_view, scalar_state, step_counter, zeros_state
from .optimizer import (Optimizer, as_float, check_impl_flags, check_lr, check_non_negative, closure_loss,
                        stepped_params)

__all__ = ["ASGD"]


class ASGD(Optimizer):
    """Implements Averaged Stochastic Gradient Descent."""

    _tensor_step = True

    def __init__(self, params, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0, foreach=None,
                 maximize=False, differentiable=False, capturable=False):
        check_lr(lr)
        check_non_negative(weight_decay, "weight_decay value")
        defaults = {"lr": lr, "lambd": lambd, "alpha": alpha, "t0": t0, "weight_decay": weight_decay,
                    "foreach": foreach, "maximize": maximize, "differentiable": differentiable,
                    "capturable": capturable}
        check_impl_flags(differentiable)
        super().__init__(params, defaults)

    def step(self, closure=None):
        """Perform a single optimization step (``closure`` re-evaluates the loss)."""
        loss = closure_loss(closure)
        for group in self.param_groups:
            lr, lambd, alpha, t0 = as_float(group["lr"]), group["lambd"], group["alpha"], group["t0"]
            weight_decay = group["weight_decay"]
            def init(p, st, lr=lr):
                st["step"] = step_counter(p, on_param_device=True)
                st["eta"] = scalar_state(p, lr, on_param_device=True)
                st["mu"] = scalar_state(p, 1.0, on_param_device=True)
                st["ax"] = zeros_state(p)
            for p, st, step in stepped_params(self, group, init, what="params, mus, etas, and state_steps"):
                eta, mu = float(st["eta"]._data), float(st["mu"]._data)
                ops = operands(p._data, weight_decay, 1 - lambd * eta, eta, real=True)
                _update(p, p._data, p.grad._data, st, ops, mu, weight_decay != 0, group["maximize"])
                # PyTorch's foreach kernel computes eta from the step tensor, in its (float32)
                # precision unless a Tensor lr (float64 here) promotes it
                counted = st["step"]._data if group["foreach"] and not isinstance(group["lr"], Tensor) else step
                _set(st["eta"], lr / ((1 + lambd * lr * counted) ** alpha))
                _set(st["mu"], 1 / max(1, step - t0))
        return loss


def _set(t, value):
    """``t.copy_(value)``: a 0-d state tensor takes a new value (rounded to its dtype)."""
    t._data[...] = value
    bump(t)


def _update(p, param, grad, st, ops, mu, decayed, maximize):
    """One parameter's ASGD step on its arrays (``grad`` is only read)."""
    xp, weight_decay, shrink, eta = ops
    param, grad = real_view(param), real_view(grad)
    grad = directed_grad(xp, param, grad, weight_decay, decayed, maximize)
    xp.multiply(param, shrink, out=param)
    xp.subtract(param, xp.multiply(grad, eta), out=param)
    bump(p, 2)
    ax_t = st["ax"]
    ax = real_view(ax_t._data)
    if mu != 1:
        diff = xp.subtract(param, ax)
        xp.add(ax, xp.multiply(diff, xp.asarray(mu, dtype=diff.dtype), out=diff), out=ax)
    else:
        ax[...] = param
    bump(ax_t)
