"""What the distributions' test files share: float64 tensors, gradients checked against
finite differences, random SPD matrices, and the readers and converters of the tests
that take PyTorch as the oracle."""
import warnings

import numpy as np

import tracegrad as tg

F64 = tg.float64


def t64(v, requires_grad=False):
    """``v`` (a number, nested lists or an array) as a float64 Tensor."""
    return tg.tensor(np.asarray(v, dtype=np.float64), requires_grad=requires_grad)


def npy(x):
    """A Tensor's values as a NumPy array (detached first)."""
    return x.detach().numpy()


def fd_grad(f, x, eps=1e-6):
    """Central finite differences of scalar ``f`` (NumPy float64 in, float out) at ``x``."""
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        d = np.zeros_like(x)
        d[i] = eps
        g[i] = (f(x + d) - f(x - d)) / (2 * eps)
    return g


def grad_of(fn, x0):
    """``fn``'s (summed) gradient at ``x0`` (taken as float64) by autograd, and by finite
    differences."""
    x0 = np.asarray(x0, dtype=np.float64)
    x = tg.tensor(x0, requires_grad=True)
    fn(x).sum().backward()
    return x.grad.numpy(), fd_grad(lambda v: float(fn(tg.tensor(v)).sum()), x0)


def check_grad(fn, x0, rtol=1e-6, atol=1e-9):
    """Assert that :func:`grad_of`'s two gradients agree."""
    np.testing.assert_allclose(*grad_of(fn, x0), rtol=rtol, atol=atol)


def spd(rng, batch, n):
    """A ``batch`` of random symmetric positive-definite ``n x n`` matrices."""
    a = rng.normal(size=batch + (n, n))
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


def read(d, attr, v):
    """``d``'s property or method ``attr``; ``log_prob`` and ``cdf`` at ``v``, ``icdf`` at
    that cdf."""
    if attr == "cdf":
        return d.cdf(v)
    if attr == "icdf":
        return d.icdf(d.cdf(v))
    if attr == "log_prob":
        return d.log_prob(v)
    value = getattr(d, attr)
    return value() if callable(value) else value


def raised(fn, m, D):
    """The ``(type name, message)`` of what ``fn(m, D)`` raises (``m`` tracegrad or torch,
    ``D`` its distributions), warnings silenced; None if it raises nothing. The message
    reads ``torch.`` for ``tracegrad.`` and has its white space folded."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fn(m, D)
    except Exception as e:  # noqa: BLE001 (the oracle decides which type is right)
        return type(e).__name__, " ".join(str(e).replace("tracegrad.", "torch.").split())
    return None


def to_torch(d):
    """PyTorch's distribution of ``d``'s family on the same parameters (positional, in
    the order of ``arg_constraints`` unless the constructor's differs)."""
    import torch
    import torch.distributions as TD
    names = {"Uniform": ["low", "high"], "Pareto": ["scale", "alpha"]}.get(type(d).__name__,
                                                                        list(d.arg_constraints))
    return getattr(TD, type(d).__name__)(*[torch.tensor(npy(getattr(d, n))) for n in names])
