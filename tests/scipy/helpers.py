"""Gradient checks shared by the tracegrad.scipy tests: ``tracegrad.grad`` in tape and
AST mode against central finite differences, to first and second order. The losses are
plain NumPy code (``np.sum(w * f(a, b))``) calling tracegrad.scipy's functions with
explicit arguments, as a user's code would."""
import functools

import numpy as np

import tracegrad as tg

MODES = ("tape", "ast")
EPS = 1e-6


def loss_of(fn, nargs, weights, **params):
    """``sum(weights * fn(*args, **params))`` as a function of ``nargs`` positional arrays
    (one ``def`` per arity: AST mode sees the arguments it differentiates by name)."""
    f = functools.partial(fn, **params) if params else fn
    if nargs == 1:
        def loss(a):
            return np.sum(weights * f(a))
    elif nargs == 2:
        def loss(a, b):
            return np.sum(weights * f(a, b))
    elif nargs == 3:
        def loss(a, b, c):
            return np.sum(weights * f(a, b, c))
    elif nargs == 4:
        def loss(a, b, c, d):
            return np.sum(weights * f(a, b, c, d))
    else:
        def loss(a, b, c, d, e):
            return np.sum(weights * f(a, b, c, d, e))
    return loss


def _with(args, i, value):
    args = list(args)
    args[i] = value
    return args


def numeric_derivative(loss, args, i, v, eps=EPS):
    """The derivative of ``loss`` along ``v`` in argument ``i``."""
    plus = loss(*_with(args, i, args[i] + eps * v))
    minus = loss(*_with(args, i, args[i] - eps * v))
    return (plus - minus) / (2 * eps)


def check_grads(loss, args, argnums, mode, rtol=1e-5, atol=1e-8, seed=0):
    """``tracegrad.grad`` of ``loss`` in ``argnums`` against finite differences."""
    rng = np.random.default_rng(seed)
    grads = tg.grad(loss, argnums=tuple(argnums), mode=mode)(*args)
    for i, g in zip(argnums, grads):
        assert np.shape(g) == np.shape(args[i]), (i, np.shape(g), np.shape(args[i]))
        v = rng.standard_normal(np.shape(args[i]))
        analytic = float(np.sum(np.asarray(g) * v))
        numeric = numeric_derivative(loss, args, i, v)
        assert np.isclose(analytic, numeric, rtol=rtol, atol=atol), (
            f"{mode}: gradient of argument {i}: {analytic}, finite differences {numeric}")


def check_second_order(loss, args, i, mode, j=None, rtol=1e-4, atol=1e-7, seed=1):
    """The gradient in argument ``j`` (default ``i``) of ``<grad_i loss, u>`` (a Hessian-
    vector product) against finite differences of the first derivative."""
    j = i if j is None else j
    rng = np.random.default_rng(seed)
    u = rng.standard_normal(np.shape(args[i]))
    first = tg.grad(loss, argnums=i, mode=mode)

    def along_u(*a):
        return np.sum(first(*a) * u)
    hv = tg.grad(along_u, argnums=j, mode=mode)(*args)
    v = rng.standard_normal(np.shape(args[j]))
    analytic = float(np.sum(np.asarray(hv) * v))
    numeric = numeric_derivative(along_u, args, j, v, eps=1e-5)
    assert np.isclose(analytic, numeric, rtol=rtol, atol=atol), (
        f"{mode}: second derivative in arguments {i}, {j}: {analytic}, finite differences {numeric}")
