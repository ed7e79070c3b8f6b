"""Extreme magnitudes: no rule may overflow or underflow on the way to a result that is
representable. ``-g * x / (y * y)`` is the pattern: d(x/y)/dy at x = 1e-30, y = 1e-25 in
float32 is -1e20, but y * y underflows to 0 and the naive formula gives -inf.

Each case of extremes.py runs a rule's forward kernel and vjps (and, for the rules that
were rewritten, their jvps) on raw arrays at tiny (1e-30, 1e-200...), huge (1e30, 3e38,
1e200...) or saturating (logits of +-100, +-1e30) inputs, in float32 and float64, and
compares them

* with the same formula evaluated by Python's ``decimal`` module (50 digits, exponents up
  to +-10^6, so nothing over- or underflows there): runs without PyTorch;
* marked ``torch``, with PyTorch. Where PyTorch's own kernel over- or underflows at the
  inputs (its atan2 backward, vector_norm, std, layer/batch norm, tanh-gelu backward,
  prod...: ``native=False`` below), only its float64 kernel run on the float32 inputs
  (exact there) is the reference; elsewhere PyTorch in the case's own dtype is one too.

The rules that read their result in backward (sigmoid, tanh, expm1: as PyTorch, so that
the input may be freed) cannot do better than ``1 - out`` once ``out`` rounds to 1, so
their gradients are compared with an absolute tolerance of one ulp of 1 (saturation,
not overflow, is what is checked there).

The div case of the issue, and a few of the other rewritten rules, also go through the
eager runtime (Tensors, create_graph) and the staged tape and AST paths.
"""
import math
import types

import numpy as np
import pytest

import tracegrad as tg
from tracegrad.backend import cpu
from tracegrad.rules import TABLE

from . import checks
from .extremes import CASES, F32, RTOL, exact, operands

try:  # the module must import without torch; the conftest skips the torch-marked tests
    import torch
except ImportError:  # pragma: no cover
    torch = None

IDS = [c.id for c in CASES]


# -- running a case ----------------------------------------------------------------------------

def _cotangent(case, out):
    outs = checks.outputs(TABLE[case.rule], out)
    if case.g is None:
        gs = tuple(np.ones(np.shape(o), case.dtype) for o in outs)
    else:
        gs = tuple(np.asarray(g, case.dtype) for g in (case.g if isinstance(case.g, tuple) else (case.g,)))
    return gs[0] if TABLE[case.rule].nout == 1 else gs


def _positions(case, args):
    return checks.diff_positions(TABLE[case.rule], types.SimpleNamespace(args=args))


def ours(case):
    prim = TABLE[case.rule]
    args = operands(case)
    out = prim.impl(cpu, *args, **case.params)
    g = _cotangent(case, out)
    return out, {i: checks.vjp(prim, i, g, out, args, case.params) for i in _positions(case, args)}


def _tolerance(case):
    """(rtol, atol): a few subnormal steps absolutely (subnormal results keep fewer digits)."""
    return RTOL[case.dtype], 4 * float(np.finfo(case.dtype).smallest_subnormal)


def _compare(mine, expected, case, what, atol=None):
    if isinstance(mine, tuple):
        for k, (m, e) in enumerate(zip(mine, expected)):
            _compare(m, e, case, f"{what} [{k}]", atol)
        return
    rtol, sub = _tolerance(case)
    if case.normwise and atol is None:
        finite = np.abs(np.asarray(expected, np.float64))
        sub = max(sub, rtol * float(finite[np.isfinite(finite)].max(initial=0.0)))
    mine = np.asarray(mine)
    assert mine.dtype == case.dtype, f"{case.id}: {what} has dtype {mine.dtype}, expected {np.dtype(case.dtype)}"
    np.testing.assert_allclose(mine, np.asarray(expected).reshape(mine.shape), rtol=rtol,
                               atol=sub if atol is None else atol, err_msg=f"{case.id}: {what}")


def _grad_atol(case):
    return float(np.finfo(case.dtype).eps) if case.saturating else None


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_extremes_match_the_exact_formula(case):
    out, grads = ours(case)
    assert grads, f"{case.id}: no differentiable operand"
    expected, expected_grads = exact(case)
    _compare(checks.outputs(TABLE[case.rule], out) if isinstance(expected, tuple) else out, expected, case, "forward")
    for i, grad in grads.items():
        _compare(grad, expected_grads[i], case, f"gradient of operand {i}", _grad_atol(case))


JVP_CASES = [c for c in CASES if c.jvp]


@pytest.mark.parametrize("case", JVP_CASES, ids=[c.id for c in JVP_CASES])
def test_extremes_jvp_matches_the_exact_formula(case):
    """The rewritten jvps, one input element at a time: for the tangent e_k of operand i,
    <g, J e_k> is the k-th element of the exact gradient for the cotangent g (elementwise
    rules: the tangent of ones gives the whole diagonal at once)."""
    prim = TABLE[case.rule]
    args = operands(case)
    out = prim.impl(cpu, *args, **case.params)
    g = np.asarray(_cotangent(case, out), np.float64)
    _, expected = exact(case)
    for i, grad in expected.items():
        if np.shape(out) == args[i].shape:
            t = prim.apply_jvp(tuple(np.ones_like(a) if j == i else None for j, a in enumerate(args)), out, args,
                               case.params)
            _compare(np.asarray(t) * g.astype(case.dtype), grad, case, f"jvp of operand {i}")
            continue
        for k in np.ndindex(args[i].shape):
            tangent = np.zeros_like(args[i])
            tangent[k] = 1
            t = prim.apply_jvp(tuple(tangent if j == i else None for j in range(len(args))), out, args, case.params)
            assert np.shape(t) == np.shape(out)
            _compare(np.sum(np.asarray(t) * g.astype(case.dtype), dtype=case.dtype), grad[k], case,
                     f"jvp of operand {i} at {k}")


# -- PyTorch -----------------------------------------------------------------------------------

def _torch_reference(case, dtype):
    """PyTorch's forward and gradients for ``case`` (same operands rounded to the case's
    dtype, same cotangent), computed in ``dtype``."""
    from .test_oracle_table import TORCH
    prim = TABLE[case.rule]
    args = operands(case)
    positions = _positions(case, args)
    leaves, targs = {}, []
    for i, a in enumerate(args):
        if isinstance(a, np.ndarray):
            t = torch.tensor(a.astype(dtype) if a.dtype.kind == "f" else a)
            if i in positions:
                t.requires_grad_()
                leaves[i] = t
            a = t
        targs.append(a)
    result = TORCH[case.rule](*targs, **case.params)
    outs = (result,) if prim.nout == 1 else tuple(result)
    out = prim.impl(cpu, *args, **case.params)
    g = _cotangent(case, out)
    gs = (g,) if prim.nout == 1 else g
    pairs = [(o, torch.tensor(np.asarray(gk, dtype))) for o, gk in zip(outs, gs) if o.requires_grad]
    grads = torch.autograd.grad([o for o, _ in pairs], list(leaves.values()), [c for _, c in pairs],
                                allow_unused=True, materialize_grads=True)
    with np.errstate(over="ignore"):
        fwd = tuple(o.detach().numpy().astype(case.dtype) for o in outs)
        grads = {i: t.numpy().astype(case.dtype) for i, t in zip(leaves, grads)}
    return (fwd[0] if prim.nout == 1 else fwd), grads


TORCH_WIDE = [c for c in CASES if c.torch and c.dtype is F32]
TORCH_NATIVE = [c for c in CASES if c.torch and c.native]


def _against_torch(case, dtype, atol):
    out, grads = ours(case)
    fwd, tgrads = _torch_reference(case, dtype)
    _compare(out if TABLE[case.rule].nout == 1 else tuple(out), fwd, case, "forward vs torch", atol)
    for i, grad in grads.items():
        _compare(grad, tgrads[i], case, f"gradient of operand {i} vs torch", _grad_atol(case) or atol)


@pytest.mark.torch
@pytest.mark.parametrize("case", TORCH_WIDE, ids=[c.id for c in TORCH_WIDE])
def test_float32_extremes_match_torch_in_float64(case):
    """PyTorch's float64 kernels on the float32 inputs: exact enough to judge float32."""
    _against_torch(case, np.float64, None)


@pytest.mark.torch
@pytest.mark.parametrize("case", TORCH_NATIVE, ids=[c.id for c in TORCH_NATIVE])
def test_extremes_match_torch(case):
    """PyTorch in the case's own dtype, where its kernels do not over/underflow themselves.
    (It flushes some subnormal results to 0 where ours keep them: absolute tolerance of the
    smallest normal number.)"""
    _against_torch(case, case.dtype, float(np.finfo(case.dtype).tiny))


# -- the div case, through every path ------------------------------------------------------------

def quotient(x, y):
    return x / y


def summed_quotient(x, y):
    return np.sum(x / y)


def test_div_slope_in_y_does_not_underflow():
    """d(x/y)/dy at x = 1e-30, y = 1e-25 in float32 is -1e20 (y * y underflows to 0)."""
    x, y = np.float32(1e-30), np.float32(1e-25)
    dy = TABLE["div"].vjps[1](np.float32(1.0), None, x, y)
    assert np.isfinite(dy)
    np.testing.assert_allclose(dy, -1e20, rtol=2e-6)


def test_div_eager():
    x = tg.tensor(1e-30, dtype=tg.float32, requires_grad=True)
    y = tg.tensor(1e-25, dtype=tg.float32, requires_grad=True)
    (x / y).backward()
    np.testing.assert_allclose(y.grad.numpy(), -1e20, rtol=2e-6)
    np.testing.assert_allclose(x.grad.numpy(), 1e25, rtol=2e-6)
    # under create_graph the vjp runs on Tensors
    x.grad = y.grad = None
    (x / y).backward(create_graph=True)
    assert y.grad.requires_grad
    np.testing.assert_allclose(y.grad.detach().numpy(), -1e20, rtol=2e-6)


def test_div_eager_in_place():
    x = tg.tensor([1e-30, 1e30], dtype=tg.float32)
    y = tg.tensor([1e-25, 1e30], dtype=tg.float32, requires_grad=True)
    z = x.clone()
    z /= y
    z.sum().backward()
    np.testing.assert_allclose(y.grad.numpy(), [-1e20, -1e-30], rtol=2e-6)


@pytest.mark.parametrize("mode", ["tape", "ast"])
def test_div_staged(mode):
    x, y = np.array(1e-30, np.float32), np.array(1e-25, np.float32)
    dy = tg.grad(quotient, argnums=1, mode=mode)(x, y)
    assert np.asarray(dy).dtype == np.float32
    np.testing.assert_allclose(dy, -1e20, rtol=2e-6)
    xs, ys = np.array([1e-30, 1e30], np.float32), np.array([1e-25, 1e30], np.float32)
    np.testing.assert_allclose(tg.grad(summed_quotient, argnums=1, mode=mode)(xs, ys), [-1e20, -1e-30], rtol=2e-6)


@pytest.mark.torch
def test_div_matches_torch_in_float32():
    x = torch.tensor(1e-30, dtype=torch.float32, requires_grad=True)
    y = torch.tensor(1e-25, dtype=torch.float32, requires_grad=True)
    (x / y).backward()
    ty = tg.tensor(1e-25, dtype=tg.float32, requires_grad=True)
    (tg.tensor(1e-30, dtype=tg.float32) / ty).backward()
    np.testing.assert_allclose(ty.grad.numpy(), y.grad.numpy(), rtol=2e-6)
    np.testing.assert_allclose(y.grad.numpy(), -1e20, rtol=2e-6)


# -- a few of the other rewritten rules, through the eager and staged paths ---------------------

def staged_atan2(x, y):
    return np.sum(np.arctan2(x, y))


def staged_logsumexp(x):
    return np.sum(tg.logsumexp(x, dim=1))


def staged_norm(x):
    return np.linalg.norm(x)


def staged_prod(x):
    return np.prod(x)


def staged_std(x):
    return np.std(x)


_SQRT6, _SQRT3 = math.sqrt(6.0), math.sqrt(3.0)
PATHS = {  # name: (numpy function, eager function, float32 inputs, expected gradients)
    "atan2": (staged_atan2, lambda x, y: tg.atan2(x, y).sum(), ([1e-30, 1e30], [1e-25, 1e30]),
              ([1e25, 5e-31], [-1e20, -5e-31])),
    "logsumexp": (staged_logsumexp, lambda x: tg.logsumexp(x, dim=1).sum(), ([[-3e38, -3e38, -3e38]],),
                  ([[1 / 3, 1 / 3, 1 / 3]],)),
    "norm": (staged_norm, lambda x: x.norm(), ([1e30, 1e30, 2e30],), ([1 / _SQRT6, 1 / _SQRT6, 2 / _SQRT6],)),
    "prod": (staged_prod, lambda x: x.prod(), ([1e-30, 1e-20],), ([1e-20, 1e-30],)),
    # np.std divides by n, Tensor.std by n - 1
    "std": (staged_std, lambda x: x.std(correction=0), ([1e20, 1e20, 2e20],),
            ([-1 / (3 * math.sqrt(2)), -1 / (3 * math.sqrt(2)), 2 / (3 * math.sqrt(2))],)),
    "std_unbiased": (None, lambda x: x.std(), ([1e20, 1e20, 2e20],),
                     ([-1 / (2 * _SQRT3), -1 / (2 * _SQRT3), 1 / _SQRT3],)),
}


@pytest.mark.parametrize("name", sorted(PATHS))
def test_extremes_eager(name):
    _, fn, inputs, expected = PATHS[name]
    xs = [tg.tensor(np.array(v, np.float32), requires_grad=True) for v in inputs]
    fn(*xs).backward()
    for x, e in zip(xs, expected):
        np.testing.assert_allclose(x.grad.numpy(), e, rtol=1e-5, atol=0, err_msg=name)


# (the AST adjoint evaluates np.linalg.norm and np.std themselves once, for the output's
# value, and NumPy's own kernels overflow and warn there; the gradient is ours)
@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")
@pytest.mark.parametrize("mode", ["tape", "ast"])
@pytest.mark.parametrize("name", sorted(n for n in PATHS if PATHS[n][0] is not None))
def test_extremes_staged(name, mode):
    fn, _, inputs, expected = PATHS[name]
    args = [np.array(v, np.float32) for v in inputs]
    grads = tg.grad(fn, argnums=tuple(range(len(args))), mode=mode)(*args)
    for grad, e in zip(grads, expected):
        assert np.asarray(grad).dtype == np.float32
        np.testing.assert_allclose(grad, e, rtol=1e-5, atol=0, err_msg=f"{name} ({mode})")
