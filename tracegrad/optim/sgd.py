"""Stochastic gradient descent, optionally with (Nesterov) momentum and weight decay.

The update is PyTorch's single-tensor SGD, run on the backend arrays in place:
``g = grad + wd * p``; ``b = momentum * b + (1 - dampening) * g`` (``b = g`` at first);
``g = g + momentum * b`` (Nesterov) or ``g = b``; ``p -= lr * g``.
"""
from ..runtime.tensor import wrap
from ._inplace import bump, directed_grad, operands, zero_d_view
from .optimizer import (Optimizer, as_float, check_impl_flags, check_lr, check_non_negative, closure_loss,
                        functional_grads)

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
            momentum = group["momentum"]
            params, grads, states = [], [], []
            for p in group["params"]:
                grad = p.grad
                if grad is not None:
                    params.append(p)
                    grads.append(grad._data)
                    states.append(state[p] if momentum != 0 else None)
            _update_all(params, grads, states, group["lr"], momentum, group["dampening"], group["weight_decay"],
                        group["nesterov"], group["maximize"])
        return loss


def sgd(params, d_p_list, momentum_buffer_list, has_sparse_grad=False, foreach=None, fused=None, grad_scale=None,
        found_inf=None, *, weight_decay, momentum, lr, dampening, nesterov, maximize):
    """``torch.optim.sgd.sgd`` (also ``torch.optim._functional.sgd``), the functional form
    that custom optimizers and federated clients call with their own state: one SGD step of
    each of ``params`` along ``d_p_list``; with momentum, a None in
    ``momentum_buffer_list`` gets the buffer made at this step, as :class:`SGD` keeps it.
    Not listed in ``__all__``: ``tracegrad.optim.sgd`` stays the module."""
    lists = {"d_p_list": d_p_list}
    arrays = functional_grads("sgd", params, lists, fused=fused, foreach=foreach, grad_scale=grad_scale,
                              found_inf=found_inf)
    if momentum != 0:
        if len(momentum_buffer_list) < len(params):
            raise IndexError(f"sgd: momentum_buffer_list has {len(momentum_buffer_list)} entries for "
                             f"{len(params)} params")
        states = [{} if b is None else {"momentum_buffer": b} for b in momentum_buffer_list[:len(params)]]
    else:
        states = [None] * len(params)
    _update_all(params, arrays, states, lr, momentum, dampening, weight_decay, nesterov, maximize)
    if momentum != 0:
        for i, st in enumerate(states):
            momentum_buffer_list[i] = st["momentum_buffer"]


def _update_all(params, grads, states, lr, momentum, dampening, weight_decay, nesterov, maximize):
    """One SGD step of each of ``params`` along its gradient array in ``grads``, with its
    state in ``states`` (a dict that keeps ``momentum_buffer``, made at the first step;
    None without momentum): what :meth:`SGD.step` does for a parameter group, and the
    functional :func:`sgd` for its lists."""
    weight_decay = as_float(weight_decay)
    values = (as_float(lr), momentum, 1 - dampening, weight_decay)
    flags = (momentum != 0, dampening != 0, weight_decay != 0, nesterov, maximize)
    ops = dtype = kind = None
    plain = not any(flags)  # p -= lr * g alone (_update's steps then, inline: the usual case)
    for p, grad, st in zip(params, grads, states):
        data = p._data
        if data.dtype != dtype or type(data) is not kind:
            dtype, kind = data.dtype, type(data)
            ops = operands(data, *values, real=False)
        if plain:
            xp = ops[0]
            xp.subtract(data, xp.multiply(grad, ops[1]), out=data)  # (0-d arrays too)
            bump(p)
        else:
            _update(p, data, grad, st, ops, *flags)


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
