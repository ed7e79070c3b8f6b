"""Textbook NumPy versions of the update rules (the pseudo-code of PyTorch's docs), for the
reference trajectories that need no PyTorch. Each ``step`` takes a parameter, its
gradient, a state dict (filled on the first call) and the 1-based step count ``t``."""
import numpy as np

from . import _problem


def sgd(p, g, st, t, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False, maximize=False):
    g = -g if maximize else g
    g = g + weight_decay * p
    if momentum:
        st["b"] = g.copy() if t == 1 else momentum * st["b"] + (1 - dampening) * g
        g = g + momentum * st["b"] if nesterov else st["b"]
    return p - lr * g


def adam(p, g, st, t, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False,
         maximize=False, decoupled=False):
    b1, b2 = betas
    g = -g if maximize else g
    if decoupled:
        p = p * (1 - lr * weight_decay)
    else:
        g = g + weight_decay * p
    st["m"] = b1 * st.get("m", 0) + (1 - b1) * g
    st["v"] = b2 * st.get("v", 0) + (1 - b2) * g * g
    v = st["v"]
    if amsgrad:
        v = st["vmax"] = np.maximum(st.get("vmax", 0), v)
    return p - lr / (1 - b1 ** t) * st["m"] / (np.sqrt(v) / np.sqrt(1 - b2 ** t) + eps)


def adamw(p, g, st, t, weight_decay=1e-2, **kw):
    return adam(p, g, st, t, weight_decay=weight_decay, decoupled=True, **kw)


def rmsprop(p, g, st, t, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0, centered=False,
            maximize=False):
    g = -g if maximize else g
    g = g + weight_decay * p
    st["sq"] = alpha * st.get("sq", 0) + (1 - alpha) * g * g
    if centered:
        st["ga"] = alpha * st.get("ga", 0) + (1 - alpha) * g
        avg = np.sqrt(st["sq"] - st["ga"] ** 2) + eps
    else:
        avg = np.sqrt(st["sq"]) + eps
    if momentum > 0:
        st["b"] = momentum * st.get("b", 0) + g / avg
        return p - lr * st["b"]
    return p - lr * g / avg


def adagrad(p, g, st, t, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0, eps=1e-10,
            maximize=False):
    g = -g if maximize else g
    g = g + weight_decay * p
    st["s"] = st.get("s", initial_accumulator_value) + g * g
    return p - lr / (1 + (t - 1) * lr_decay) * g / (np.sqrt(st["s"]) + eps)


RULES = {"SGD": sgd, "Adam": adam, "AdamW": adamw, "RMSprop": rmsprop, "Adagrad": adagrad}


def trajectory(name, kwargs, group_options=None, steps=20):
    """The [W, b] after each of ``steps`` steps of rule ``name`` on :mod:`_problem`'s loss."""
    rule = RULES[name]
    params = [_problem.W0.copy(), _problem.B0.copy()]
    options = [dict(kwargs), {**kwargs, **(group_options or {})}]
    states = [{}, {}]
    out = []
    for t in range(1, steps + 1):
        grads = _problem.numpy_grads(*params)
        params = [rule(p, g, st, t, **opt) for p, g, st, opt in zip(params, grads, states, options)]
        out.append([p.copy() for p in params])
    return out
