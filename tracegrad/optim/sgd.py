"""Stochastic gradient descent, optionally with (Nesterov) momentum and weight decay.

The update is PyTorch's single-tensor SGD, run on the backend arrays in place:
``g = grad + wd * p``; ``b = momentum * b + (1 - dampening) * g`` (``b = g`` at first);
``g = g + momentum * b`` (Nesterov) or ``g = b``; ``p -= lr * g``.
"""
from ..runtime.tensor import wrap
from ._inplace import bump, directed_grad, operands, zero_d_view
from .optimizer import Optimizer, as_float, check_impl_flags, check_lr, check_non_negative, closure_loss

__all__ = ["SGD"]


class SGD(Optimizer):
    """Implements stochastic gradient descent (optionally with momentum)."""

    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False, *,
                 maximize=False, foreach=None, differentiable=False, fused=None):
        check_lr(lr, nan_ok=True)
        check_non_negative(momentum, "momentum value", nan_ok=True)
        check_non_negative(weight_decay, "weight_decay value", nan_ok=True)
        defaults = {"lr": lr, "momentum": momentum, "dampening": dampening,
                    "weight_decay": weight_decay, "nesterov": nesterov, "maximize": maximize,
                    "foreach": foreach, "differentiable": differentiable, "fused": fused}
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        check_impl_flags(differentiable, fused, foreach)
        super().__init__(params, defaults)

    def step(self, closure=None):
        """Perform a single optimization step (``closure`` re-evaluates the loss)."""
        loss = closure_loss(closure)
        state = self.state
        for group in self.param_groups:
            momentum, dampening = group["momentum"], group["dampening"]
            weight_decay = as_float(group["weight_decay"])
            values = (as_float(group["lr"]), momentum, 1 - dampening, weight_decay)
            flags = (momentum != 0, dampening != 0, weight_decay != 0, group["nesterov"], group["maximize"])
            ops = dtype = kind = None
            for p in group["params"]:
                grad = p.grad
                if grad is None:
                    continue
                data = p._data
                if data.dtype != dtype or type(data) is not kind:
                    dtype, kind = data.dtype, type(data)
                    ops = operands(data, *values, real=False)
                _update(p, data, grad._data, state[p] if momentum != 0 else None, ops, *flags)
        return loss


def _update(p, param, grad, state, ops, use_momentum, dampened, decayed, nesterov, maximize):
    """One parameter's SGD step on its array. ``grad`` is only read; ``own`` says whether
    the current ``grad`` is a temporary of ours that a later pass may overwrite."""
    xp, lr, momentum, keep, weight_decay = ops
    mul, add = xp.multiply, xp.add
    shape = param.shape
    param, grad = zero_d_view(param), zero_d_view(grad)
    directed = directed_grad(xp, param, grad, weight_decay, decayed, maximize)
    grad, own = directed, directed is not grad
    if use_momentum:
        buf_t = state.get("momentum_buffer")
        if buf_t is None:
            state["momentum_buffer"] = wrap((grad if own else grad.copy()).reshape(shape))
            buf = zero_d_view(state["momentum_buffer"]._data)
        else:
            buf = zero_d_view(buf_t._data)
            mul(buf, momentum, out=buf)
            if not dampened:
                add(buf, grad, out=buf)
            elif own:  # grad is not needed again: Nesterov forbids dampening
                add(buf, mul(grad, keep, out=grad), out=buf)
            else:
                add(buf, mul(grad, keep), out=buf)
            bump(buf_t, 2)
        if nesterov:
            d = mul(buf, momentum)
            grad, own = add(d, grad, out=d), True
        else:
            grad, own = buf, False
    if own:
        xp.subtract(param, mul(grad, lr, out=grad), out=param)
    else:
        xp.subtract(param, mul(grad, lr), out=param)
    bump(p)
