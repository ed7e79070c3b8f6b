"""Adafactor: Adam-like steps whose second moment of a matrix is kept factored, as its row
and column means (memory ``n + m`` instead of ``n m``), with relative step sizes and update
clipping.

PyTorch's single-tensor update, on the backend arrays in place: ``beta = 1 - t**beta2_decay``;
``rho = min(lr, 1 / sqrt(t))``; ``alpha = max(eps2, RMS(p)) * rho``; ``p *= 1 - lr * wd``;
the row/column means of ``g * g`` (or ``g * g`` itself for vectors) lerped in with weight
``t**beta2_decay``; ``V = R C / max(mean(R), eps1)``; ``U = g / sqrt(max(V, eps1**2))``;
``p -= alpha * U / max(1, RMS(U) / d)``.
"""
from .. import backend
from ..backend import (
    cpu as host,  # host-side (NumPy) arithmetic, never on device arrays
)
from ..runtime.tensor import wrap
from ._inplace import advance, bump, lerp_, real_view, step_counter, zero_d_view, zeros_state
from .optimizer import Optimizer, as_float, check_impl_flags, closure_loss

__all__ = ["Adafactor"]


class Adafactor(Optimizer):
    """Implements the Adafactor algorithm."""

    _tensor_step = True

    def __init__(self, params, lr=1e-2, beta2_decay=-0.8, eps=(None, 1e-3), d=1.0, weight_decay=0.0, *,
                 foreach=None, maximize=False):
        if hasattr(lr, "numel") and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 >= beta2_decay:
            raise ValueError(f"beta2_decay should be <= 0 but is: {beta2_decay}")
        if eps[0] is not None and not 0.0 <= eps[0]:
            raise ValueError(f"epsilon1 should be >= 0 but is: {eps[0]}")
        if not 0.0 <= eps[1]:
            raise ValueError(f"epsilon2 should be >= 0 but is: {eps[1]}")
        if not 1.0 <= d:
            raise ValueError(f"Clipping threshold d should be >= 1 but is: {d}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight_decay should be >= 0 but is: {weight_decay}")
        check_impl_flags(False)
        super().__init__(params, {"lr": lr, "beta2_decay": beta2_decay, "eps": eps, "d": d,
                                  "weight_decay": weight_decay, "foreach": foreach, "maximize": maximize})

    def step(self, closure=None):
        """Perform a single optimization step (``closure`` re-evaluates the loss)."""
        loss = closure_loss(closure)
        for group in self.param_groups:
            eps1, eps2 = group["eps"]
            lr, weight_decay = as_float(group["lr"]), group["weight_decay"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                if p.is_complex():
                    raise RuntimeError("Adafactor does not support complex parameters")
                st = self.state[p]
                if len(st) == 0:
                    st["step"] = step_counter(p)
                    grad = p.grad._data
                    xp = backend.namespace_of(grad)
                    if grad.ndim > 1:
                        st["row_var"] = wrap(xp.zeros(grad.shape[:-1] + (1,), dtype=grad.dtype))
                        st["col_var"] = wrap(xp.zeros(grad.shape[:-2] + (1,) + grad.shape[-1:], dtype=grad.dtype))
                    else:
                        st["variance"] = zeros_state(p.grad)
                if eps1 is None:  # PyTorch fixes it from the first parameter it steps
                    eps1 = float(host.finfo(p._data.dtype).eps)
                step = advance(st["step"])
                _update(p, p._data, p.grad._data, st, step, lr, weight_decay, group["beta2_decay"], eps1, eps2,
                        group["d"], group["maximize"])
        return loss


def _rms(xp, a):
    """``a.norm(2) / sqrt(a.numel())`` as a Python float."""
    return float(xp.sqrt(xp.sum(a * a))) / a.size ** 0.5


def _update(p, param, grad, st, step, lr, weight_decay, beta2_decay, eps1, eps2, d, maximize):
    """One parameter's Adafactor step on its arrays (``grad`` is only read)."""
    xp = backend.namespace_of(param)
    param, grad = zero_d_view(param), zero_d_view(grad)
    grad = xp.negative(grad) if maximize else grad
    weight = step ** beta2_decay  # 1 - beta2_t
    small = abs(weight) < 0.5  # which of lerp's two formulas PyTorch takes
    w = weight if small else 1 - weight
    alpha = max(eps2, _rms(xp, param)) * min(lr, 1 / step ** 0.5)
    if weight_decay != 0:
        xp.multiply(param, 1 - lr * weight_decay, out=param)
        bump(p)
    squared = grad * grad
    if grad.ndim > 1:
        row_t, col_t = st["row_var"], st["col_var"]
        row, col = row_t._data, col_t._data
        # PyTorch squares the rows' and columns' 2-norms: keep its rounding
        lerp_(xp, row, xp.sqrt(squared.sum(axis=-1, keepdims=True)) ** 2 / grad.shape[-1], w, small)
        lerp_(xp, col, xp.sqrt(squared.sum(axis=-2, keepdims=True)) ** 2 / grad.shape[-2], w, small)
        bump(row_t)
        bump(col_t)
        estimate = xp.matmul(row, col)
        xp.divide(estimate, xp.maximum(row.mean(axis=-2, keepdims=True), eps1), out=estimate)
    else:
        var_t = st["variance"]
        var = real_view(var_t._data)
        lerp_(xp, var, squared, w, small)
        bump(var_t)
        estimate = var.copy()
    update = xp.reciprocal(xp.sqrt(xp.maximum(estimate, eps1 * eps1, out=estimate), out=estimate), out=estimate)
    xp.multiply(update, grad, out=update)
    denom = max(1.0, _rms(xp, update) / d)
    xp.add(param, xp.multiply(update, -alpha / denom, out=update), out=param)
    bump(p)
