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


def _decayed(p, g, lr, weight_decay, decoupled, maximize):
    """The Adam family's weight decay: ``p *= 1 - lr * wd`` (decoupled) or ``g += wd * p``."""
    g = -g if maximize else g
    if decoupled:
        return p * (1 - lr * weight_decay), g
    return p, g + weight_decay * p


def adadelta(p, g, st, t, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, maximize=False):
    g = -g if maximize else g
    g = g + weight_decay * p
    st["v"] = rho * st.get("v", 0) + (1 - rho) * g * g
    delta = np.sqrt(st.get("u", 0) + eps) / np.sqrt(st["v"] + eps) * g
    st["u"] = rho * st.get("u", 0) + (1 - rho) * delta * delta
    return p - lr * delta


def adamax(p, g, st, t, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, maximize=False):
    b1, b2 = betas
    g = -g if maximize else g
    g = g + weight_decay * p
    st["m"] = b1 * st.get("m", 0) + (1 - b1) * g
    st["u"] = np.maximum(b2 * st.get("u", 0), np.abs(g) + eps)
    return p - lr / (1 - b1 ** t) * st["m"] / st["u"]


def nadam(p, g, st, t, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, momentum_decay=4e-3,
          decoupled=False, maximize=False):
    b1, b2 = betas
    p, g = _decayed(p, g, lr, weight_decay, decoupled, maximize)
    mu = b1 * (1 - 0.5 * 0.96 ** (t * momentum_decay))
    mu_next = b1 * (1 - 0.5 * 0.96 ** ((t + 1) * momentum_decay))
    st["prod"] = float(np.float32(st.get("prod", 1.0)) * np.float32(mu))  # PyTorch keeps it in float32
    st["m"] = b1 * st.get("m", 0) + (1 - b1) * g
    st["v"] = b2 * st.get("v", 0) + (1 - b2) * g * g
    denom = np.sqrt(st["v"] / (1 - b2 ** t)) + eps
    return (p - lr * (1 - mu) / (1 - st["prod"]) * g / denom
            - lr * mu_next / (1 - st["prod"] * mu_next) * st["m"] / denom)


def radam(p, g, st, t, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, decoupled=False, maximize=False):
    b1, b2 = betas
    p, g = _decayed(p, g, lr, weight_decay, decoupled, maximize)
    st["m"] = b1 * st.get("m", 0) + (1 - b1) * g
    st["v"] = b2 * st.get("v", 0) + (1 - b2) * g * g
    m_hat = st["m"] / (1 - b1 ** t)
    rho_inf = 2 / (1 - b2) - 1
    rho_t = rho_inf - 2 * t * b2 ** t / (1 - b2 ** t)
    if rho_t <= 5:
        return p - lr * m_hat
    rect = np.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
    return p - lr * m_hat * np.sqrt(1 - b2 ** t) / (np.sqrt(st["v"]) + eps) * rect


def asgd(p, g, st, t, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0, maximize=False):
    g = -g if maximize else g
    g = g + weight_decay * p
    eta, mu = st.get("eta", float(np.float32(lr))), st.get("mu", 1.0)
    p = p * (1 - lambd * eta) - eta * g
    st["ax"] = p.copy() if mu == 1 else st["ax"] + (p - st["ax"]) * mu
    st["eta"] = float(np.float32(lr / (1 + lambd * lr * t) ** alpha))  # kept in float32, as the step count
    st["mu"] = float(np.float32(1 / max(1, t - t0)))
    return p


def rprop(p, g, st, t, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), maximize=False):
    g = -g if maximize else g
    prev, size = st.get("prev", np.zeros_like(p)), st.get("size", np.full_like(p, lr))
    agree = g * prev
    factor = np.where(agree > 0, etas[1], np.where(agree < 0, etas[0], 1.0))
    st["size"] = np.clip(size * factor, *step_sizes)
    g = np.where(agree < 0, 0.0, g)  # after a sign change, no step (and no memory of the gradient)
    st["prev"] = g
    return p - np.sign(g) * st["size"]


def adafactor(p, g, st, t, lr=1e-2, beta2_decay=-0.8, eps=(None, 1e-3), d=1.0, weight_decay=0.0, maximize=False):
    eps1 = np.finfo(p.dtype).eps if eps[0] is None else eps[0]
    g = -g if maximize else g
    w = t ** beta2_decay  # 1 - beta2_t
    alpha = max(eps[1], np.sqrt(np.mean(p * p))) * min(lr, t ** -0.5)
    p = p * (1 - lr * weight_decay)
    if g.ndim > 1:  # the factored second moment: row and column means of g * g
        st["r"] = (1 - w) * st.get("r", 0) + w * (g * g).mean(-1, keepdims=True)
        st["c"] = (1 - w) * st.get("c", 0) + w * (g * g).mean(-2, keepdims=True)
        v = st["r"] @ st["c"] / np.maximum(st["r"].mean(-2, keepdims=True), eps1)
    else:
        st["v"] = (1 - w) * st.get("v", 0) + w * g * g
        v = st["v"]
    u = g / np.sqrt(np.maximum(v, eps1 ** 2))
    return p - alpha * u / max(1.0, np.sqrt(np.mean(u * u)) / d)


RULES = {"SGD": sgd, "Adam": adam, "AdamW": adamw, "RMSprop": rmsprop, "Adagrad": adagrad, "Adadelta": adadelta,
         "Adamax": adamax, "NAdam": nadam, "RAdam": radam, "ASGD": asgd, "Rprop": rprop,
         "Adafactor": adafactor}


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
