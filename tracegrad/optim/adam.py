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
                        check_non_negative, closure_loss, functional_grads)

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
            params, grads, states = [], [], []
            for p in group["params"]:
                grad = p.grad
                if grad is None:
                    continue
                st = state[p]
                if len(st) == 0:
                    st["step"] = step_counter(p, group["capturable"] or group["fused"], group["fused"])
                    st["exp_avg"] = zeros_state(p)
                    st["exp_avg_sq"] = zeros_state(p)
                    if group["amsgrad"]:
                        st["max_exp_avg_sq"] = zeros_state(p)
                check_capturable(group, p)
                params.append(p)
                grads.append(grad._data)
                states.append(st)
            beta1, beta2 = group["betas"]
            _update_all(params, grads, states, group["lr"], beta1, beta2, group["eps"], group["weight_decay"],
                        group["amsgrad"], group["decoupled_weight_decay"], group["maximize"])
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


def adam(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, foreach=None, capturable=False,
         differentiable=False, fused=None, grad_scale=None, found_inf=None, has_complex=False,
         decoupled_weight_decay=False, *, amsgrad, beta1, beta2, lr, weight_decay, eps, maximize):
    """``torch.optim.adam.adam``, the functional form that custom optimizers call with their
    own state: one Adam step of each of ``params`` along ``grads``, the moments in
    ``exp_avgs``/``exp_avg_sqs`` (and ``max_exp_avg_sqs`` under AMSGrad) and the counts in
    ``state_steps`` (one-element tensors) updated in place, as :class:`Adam` does. Not
    listed in ``__all__``: ``tracegrad.optim.adam`` stays the module."""
    if not all(isinstance(t, Tensor) for t in state_steps):
        raise RuntimeError("API has changed, `state_steps` argument must contain a list of singleton tensors")
    lists = {"grads": grads, "exp_avgs": exp_avgs, "exp_avg_sqs": exp_avg_sqs, "state_steps": state_steps}
    if amsgrad:
        lists["max_exp_avg_sqs"] = max_exp_avg_sqs
    name = "adamw" if decoupled_weight_decay else "adam"
    arrays = functional_grads(name, params, lists, differentiable=differentiable, fused=fused, foreach=foreach,
                              grad_scale=grad_scale, found_inf=found_inf)
    group = {"capturable": capturable, "fused": fused, "foreach": foreach}
    states = []
    for i, p in enumerate(params):
        check_capturable(group, p)
        st = {"step": state_steps[i], "exp_avg": exp_avgs[i], "exp_avg_sq": exp_avg_sqs[i]}
        if amsgrad:
            st["max_exp_avg_sq"] = max_exp_avg_sqs[i]
        states.append(st)
    _update_all(params, arrays, states, lr, beta1, beta2, eps, weight_decay, amsgrad, decoupled_weight_decay,
                maximize)


def adamw(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, foreach=None, capturable=False,
          differentiable=False, fused=None, grad_scale=None, found_inf=None, has_complex=False, *, amsgrad, beta1,
          beta2, lr, weight_decay, eps, maximize):
    """``torch.optim.adamw.adamw``: :func:`adam` with decoupled weight decay."""
    adam(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, foreach, capturable, differentiable,
         fused, grad_scale, found_inf, has_complex, True, amsgrad=amsgrad, beta1=beta1, beta2=beta2, lr=lr,
         weight_decay=weight_decay, eps=eps, maximize=maximize)


def _update_all(params, grads, states, lr, beta1, beta2, eps, weight_decay, amsgrad, decoupled, maximize):
    """One Adam step of each of ``params`` along its gradient array in ``grads``, with its
    state (``step``, ``exp_avg``, ``exp_avg_sq``, ``max_exp_avg_sq`` under AMSGrad) in
    ``states``: what :meth:`Adam.step` does for a parameter group, and the functional
    :func:`adam` for its lists."""
    beta1, beta2 = as_float(beta1), as_float(beta2)
    lr = as_float(lr)
    small = abs(1 - beta1) < 0.5  # which of lerp's two formulas PyTorch takes
    w1 = 1 - float(beta1)  # torch moves a Tensor beta1 to the param's dtype for the lerp only
    values = (w1 if small else float(beta1), beta2, 1 - beta2, eps, weight_decay, 1 - lr * weight_decay)
    flags = (small, weight_decay != 0, decoupled, amsgrad, maximize)
    ops = dtype = kind = last_step = None
    for p, grad, st in zip(params, grads, states):
        data = p._data
        step = advance(st["step"])
        if data.dtype != dtype or type(data) is not kind:
            dtype, kind, last_step = data.dtype, type(data), None
            ops = operands(data, *values)
        if step != last_step:  # the bias corrections, shared by parameters stepped alike
            last_step = step
            per_step = operands(data, lr / (1 - beta1 ** step), (1 - beta2 ** step) ** 0.5)[1:]
        _update(p, data, grad, st, ops, per_step, *flags)


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
