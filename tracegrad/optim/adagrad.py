"""Adagrad: per-coordinate steps scaled by the root of the summed squared gradients.

PyTorch's single-tensor update, on the backend arrays in place:
``clr = lr / (1 + (t - 1) * lr_decay)``; ``s += g * g``; ``p -= clr * g / (sqrt(s) + eps)``.
"""
from .. import backend
from ..runtime.tensor import wrap
from ._inplace import advance, bump, directed_grad, operands, real_view, step_counter
from .optimizer import Optimizer, as_float, check_impl_flags, check_lr, check_non_negative, closure_loss

__all__ = ["Adagrad"]


class Adagrad(Optimizer):
    """Implements the Adagrad algorithm."""

    _tensor_step = True

    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0, eps=1e-10,
                 foreach=None, *, maximize=False, differentiable=False, fused=None):
        check_lr(lr)
        check_non_negative(lr_decay, "lr_decay value")
        check_non_negative(weight_decay, "weight_decay value")
        check_non_negative(initial_accumulator_value, "initial_accumulator_value value")
        check_non_negative(eps, "epsilon value")
        defaults = {"lr": lr, "lr_decay": lr_decay, "eps": eps, "weight_decay": weight_decay,
                    "initial_accumulator_value": initial_accumulator_value, "foreach": foreach,
                    "maximize": maximize, "differentiable": differentiable, "fused": fused}
        check_impl_flags(differentiable, fused, foreach)
        super().__init__(params, defaults)
        for group in self.param_groups:  # Adagrad's state exists from the start, as in PyTorch
            for p in group["params"]:
                self._init_state(p, group)

    def _init_state(self, p, group):
        st = self.state[p]
        st["step"] = step_counter(p, group["fused"], group["fused"])
        data = p._data
        xp = backend.namespace_of(data)
        value = group["initial_accumulator_value"]
        st["sum"] = wrap(xp.full_like(data, complex(value, value) if data.dtype.kind == "c" else value))
        return st

    def share_memory(self):
        """Mark each parameter's ``sum`` state shared (``Tensor.share_memory_``), as
        PyTorch's Adagrad does for Hogwild training."""
        for group in self.param_groups:
            for p in group["params"]:
                self.state[p]["sum"].share_memory_()

    def step(self, closure=None):
        """Perform a single optimization step (``closure`` re-evaluates the loss)."""
        loss = closure_loss(closure)
        state = self.state
        for group in self.param_groups:
            lr, lr_decay, weight_decay = as_float(group["lr"]), group["lr_decay"], group["weight_decay"]
            values = (group["eps"], weight_decay)
            flags = (weight_decay != 0, group["maximize"])
            ops = dtype = kind = last_step = None
            for p in group["params"]:
                grad = p.grad
                if grad is None:
                    continue
                st = state[p]
                if len(st) == 0:  # a parameter added later by add_param_group
                    st = self._init_state(p, group)
                data = p._data
                step = advance(st["step"])
                if data.dtype != dtype or type(data) is not kind:
                    dtype, kind, last_step = data.dtype, type(data), None
                    ops = operands(data, *values)
                if step != last_step:
                    last_step = step
                    clr = operands(data, lr / (1 + (step - 1) * lr_decay))[1]
                _update(p, data, grad._data, st, ops, clr, *flags)
        return loss


def _update(p, param, grad, st, ops, clr, decayed, maximize):
    """One parameter's Adagrad step on its arrays (``grad`` is only read)."""
    xp, eps, weight_decay = ops
    mul, add, sub = xp.multiply, xp.add, xp.subtract
    param, grad = real_view(param), real_view(grad)
    grad = directed_grad(xp, param, grad, weight_decay, decayed, maximize)
    sum_t = st["sum"]
    total = real_view(sum_t._data)
    tmp = mul(grad, grad)
    add(total, tmp, out=total)
    bump(sum_t)
    std = add(xp.sqrt(total, out=tmp), eps, out=tmp)
    update = mul(grad, clr)
    sub(param, xp.divide(update, std, out=update), out=param)
    bump(p)
