"""The small problem every optimizer test trains on, written once for both libraries.

``make(lib)`` builds the same two parameters (a 3x4 weight and a 4-bias, float64) and the
same loss in ``lib`` (tracegrad or torch); ``train`` runs an optimizer on it and records
the parameters after every step. ``numpy_grads`` is the loss's gradient in plain NumPy, for
the reference trajectories the CI (no torch) checks against.
"""
import numpy as np

_rng = np.random.default_rng(1234)
W0 = _rng.standard_normal((3, 4))
B0 = _rng.standard_normal(4)
X = _rng.standard_normal((5, 3))
Y = _rng.standard_normal((5, 4))


def make(lib, dtype="float64"):
    """Parameters ``[W, b]`` (fresh leaves) and ``loss()`` in library ``lib``."""
    dt = getattr(lib, dtype)
    w = lib.tensor(W0, dtype=dt, requires_grad=True)
    b = lib.tensor(B0, dtype=dt, requires_grad=True)
    x, y = lib.tensor(X, dtype=dt), lib.tensor(Y, dtype=dt)

    def loss():
        return (lib.tanh(x @ w + b) - y).pow(2).mean() + 0.01 * (w ** 4).sum()

    return [w, b], loss


def numpy_grads(w, b):
    """d loss / d(w, b) of :func:`make`'s loss, by hand."""
    h = np.tanh(X @ w + b)
    dh = 2 * (h - Y) / Y.size * (1 - h * h)
    return X.T @ dh + 0.04 * w ** 3, dh.sum(0)


def groups(params, group_options):
    """``params`` as parameter groups: the weight alone, then the bias with ``group_options``."""
    return [{"params": [params[0]]}, {"params": [params[1]], **group_options}]


def train(lib, make_opt, steps=20, group_options=None, dtype="float64"):
    """Run ``steps`` steps of ``make_opt(params_or_groups)``; returns (trajectory, optimizer,
    params), the trajectory a list of [W, b] NumPy copies after each step."""
    params, loss = make(lib, dtype)
    opt = make_opt(groups(params, group_options) if group_options is not None else params)
    trajectory = []
    for _ in range(steps):
        opt.zero_grad()
        loss().backward()
        opt.step()
        trajectory.append([p.detach().numpy().copy() for p in params])
    return trajectory, opt, params
