"""Adam and AdamW (Adam with decoupled weight decay), optionally AMSGrad.

PyTorch's single-tensor update, on the backend arrays in place:
``m.lerp_(g, 1 - beta1)``; ``v = beta2 * v + (1 - beta2) * g * g``;
``p -= lr / (1 - beta1**t) * m / (sqrt(v) / sqrt(1 - beta2**t) + eps)`` (``v`` replaced by
its running maximum under AMSGrad). Weight decay adds ``wd * p`` to the gradient (Adam) or
shrinks ``p *= 1 - lr * wd`` first (AdamW).
"""
from ..runtime.tensor import Tensor
from ._inplace import advance, bump, directed_grad, lerp_, operands, real_view, step_counter, zeros_state
from .optimizer import (Optimizer, as_float, check_betas, check_capturable, check_impl_flags, check_lr,
                        check_non_negative, closure_loss)

__all__ = ["Adam", "AdamW"]


class Adam(Optimizer):
    """Implements the Adam algorithm."""

    _tensor_step = True

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False, *,
                 foreach=None, maximize=False, capturable=False, differentiable=False, fused=None,
                 decoupled_weight_decay=False):
        if isinstance(lr, Tensor) and foreach and not capturable:
            raise ValueError("lr as a Tensor is not supported for capturable=False and foreach=True")
        check_lr(lr)
        check_non_negative(eps, "epsilon value")
        check_betas(betas)
        check_non_negative(weight_decay, "weight_decay value")
        if not (all(isinstance(b, float) for b in betas) or all(isinstance(b, Tensor) for b in betas)):
            raise ValueError("betas must be either both floats or both Tensors")
        for i in (0, 1):
            if isinstance(betas[i], Tensor) and betas[i].numel() != 1:
                raise ValueError(f"Tensor betas[{i}] must be 1-element")
        betas = tuple(b.squeeze() if isinstance(b, Tensor) and b.dim() != 0 else b for b in betas)
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay,
                    "amsgrad": amsgrad, "maximize": maximize, "foreach": foreach,
                    "capturable": capturable, "differentiable": differentiable, "fused": fused,
                    "decoupled_weight_decay": decoupled_weight_decay}
        check_impl_flags(differentiable, fused, foreach)
        super().__init__(params, defaults)

    def step(self, closure=None):
        """Perform a single optimization step (``closure`` re-evaluates the loss)."""
        loss = closure_loss(closure)
        state = self.state
        for group in self.param_groups:
            beta1, beta2 = (as_float(b) for b in group["betas"])
            lr, weight_decay, amsgrad = as_float(group["lr"]), group["weight_decay"], group["amsgrad"]
            small = abs(1 - beta1) < 0.5  # which of lerp's two formulas PyTorch takes
            w1 = 1 - float(beta1)  # torch moves a Tensor beta1 to the param's dtype for the lerp only
            values = (w1 if small else float(beta1), beta2, 1 - beta2, group["eps"], weight_decay,
                      1 - lr * weight_decay)
            flags = (small, weight_decay != 0, group["decoupled_weight_decay"], amsgrad, group["maximize"])
            ops = dtype = kind = last_step = None
            for p in group["params"]:
                grad = p.grad
                if grad is None:
                    continue
                st = state[p]
                if len(st) == 0:
                    st["step"] = step_counter(p, group["capturable"] or group["fused"], group["fused"])
                    st["exp_avg"] = zeros_state(p)
                    st["exp_avg_sq"] = zeros_state(p)
                    if amsgrad:
                        st["max_exp_avg_sq"] = zeros_state(p)
                data = p._data
                check_capturable(group, p)
                step = advance(st["step"])
                if data.dtype != dtype or type(data) is not kind:
                    dtype, kind, last_step = data.dtype, type(data), None
                    ops = operands(data, *values)
                if step != last_step:  # the bias corrections, shared by parameters stepped alike
                    last_step = step
                    per_step = operands(data, lr / (1 - beta1 ** step), (1 - beta2 ** step) ** 0.5)[1:]
                _update(p, data, grad._data, st, ops, per_step, *flags)
        return loss


class AdamW(Adam):
    """Implements the AdamW algorithm: Adam whose weight decay shrinks the parameters
    directly instead of entering the moment estimates."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, amsgrad=False,
                 *, maximize=False, foreach=None, capturable=False, differentiable=False, fused=None):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach,
                         maximize=maximize, capturable=capturable, differentiable=differentiable,
                         fused=fused, decoupled_weight_decay=True)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:  # an AdamW always decouples, whatever was loaded
            group["decoupled_weight_decay"] = True


def _update(p, param, grad, st, ops, per_step, small, decayed, decoupled, amsgrad, maximize):
    """One parameter's Adam step on its arrays (``grad`` is only read)."""
    xp, w1, beta2, one_minus_beta2, eps, weight_decay, shrink = ops
    step_size, bias_correction2_sqrt = per_step
    param, grad = real_view(param), real_view(grad)
    grad = decay(xp, p, param, grad, weight_decay, shrink, decayed, decoupled, maximize)
    m, v, tmp = update_moments(xp, grad, st, w1, small, beta2, one_minus_beta2)
    if amsgrad:
        vmax_t = st["max_exp_avg_sq"]
        vmax = real_view(vmax_t._data)
        v = xp.maximum(vmax, v, out=vmax)
        bump(vmax_t)
    denom = xp.add(xp.divide(xp.sqrt(v, out=tmp), bias_correction2_sqrt, out=tmp), eps, out=tmp)
    update = xp.multiply(m, step_size)
    xp.subtract(param, xp.divide(update, denom, out=update), out=param)
    bump(p)


def decay(xp, p, param, grad, weight_decay, shrink, decayed, decoupled, maximize):
    """The Adam family's weight decay: ``param *= shrink`` (``1 - lr * wd``, decoupled, as
    AdamW) or ``wd * param`` added to the gradient (L2); returns the gradient to descend
    along (negated under ``maximize``). ``param``/``grad`` are real views."""
    if decayed and decoupled:
        xp.multiply(param, shrink, out=param)
        bump(p)
    return directed_grad(xp, param, grad, weight_decay, decayed and not decoupled, maximize)


def update_moments(xp, grad, st, w1, small, beta2, one_minus_beta2):
    """``exp_avg.lerp_(g, 1 - beta1)`` and ``exp_avg_sq = beta2 * exp_avg_sq + (1 - beta2) *
    g * g`` in place, as the Adam family does; returns both moments' real views and a
    scratch array shaped like them."""
    m_t, v_t = st["exp_avg"], st["exp_avg_sq"]
    m, v = real_view(m_t._data), real_view(v_t._data)
    tmp = lerp_(xp, m, grad, w1, small)
    xp.multiply(v, beta2, out=v)
    xp.add(v, xp.multiply(xp.multiply(grad, one_minus_beta2, out=tmp), grad, out=tmp), out=v)
    bump(m_t)
    bump(v_t, 2)
    return m, v, tmp
