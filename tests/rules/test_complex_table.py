"""Walks every rule declared right for complex values (``complex=True`` or ``"real"``):
each has complex samples (``COMPLEX_SAMPLES`` in tests/rules/samples_*.py), or its kernel
refuses complex operands (``REFUSES_COMPLEX``), which is checked.

The table's convention is JAX's: cotangents pair with tangents by ``Re(sum(ct * t))``
(bilinear, no conjugate), so a vjp is right when, for random complex ``ct`` and ``v``,
``Re(sum(vjp(ct) * v)) == Re(sum(ct * (f(x + eps v) - f(x - eps v)) / 2 eps))``. The eager
runtime must give PyTorch's convention from the same rule: ``conj(vjp(conj(G)))`` for a
complex leaf, its real part for a real one.
"""
import importlib
import pathlib

import numpy as np
import pytest

import tracegrad as tg
from tracegrad.rules import TABLE

from . import checks

_HERE = pathlib.Path(__file__).parent
_MODULES = [importlib.import_module(f"{__package__}.{p.stem}") for p in sorted(_HERE.glob("samples_*.py"))]
SAMPLES, REFUSES, REAL_SAMPLES = {}, {}, {}
for _m in _MODULES:
    for _name, _samples in getattr(_m, "COMPLEX_SAMPLES", {}).items():
        assert _name not in SAMPLES, f"complex samples for {_name} defined twice"
        SAMPLES[_name] = _samples
    REFUSES.update(getattr(_m, "REFUSES_COMPLEX", {}))
    REAL_SAMPLES.update(_m.SAMPLES)

DECLARED = sorted(n for n, p in TABLE.items() if p.complex and p.differentiable)
CASES = [(n, k) for n in sorted(SAMPLES) for k in range(len(SAMPLES[n]))]
IDS = [f"{n}-{k}{SAMPLES[n][k]!r}" for n, k in CASES]


def test_every_complex_rule_is_checked():
    missing = [n for n in DECLARED if n not in SAMPLES and n not in REFUSES]
    assert not missing, f"rules declared complex without COMPLEX_SAMPLES or REFUSES_COMPLEX: {missing}"


def test_samples_are_of_complex_rules():
    wrong = [n for n in list(SAMPLES) + list(REFUSES) if n not in TABLE or not TABLE[n].complex]
    assert not wrong, f"complex samples for rules not declared complex=True: {wrong}"


@pytest.mark.parametrize("name", sorted(REFUSES))
def test_refusing_kernels_refuse_complex_operands(name):
    """A real-only kernel raises on complex operands (so no complex value reaches its rule)."""
    prim = TABLE[name]
    sample = REAL_SAMPLES[name][0]
    args = [a + 0.5j if isinstance(a, np.ndarray) and a.dtype.kind == "f" else a for a in sample.args]
    with pytest.raises((TypeError, ValueError, NotImplementedError, RuntimeError, ImportError)):
        checks.forward(prim, args, sample.params)


def _positions(prim, sample):
    return [i for i, a in enumerate(sample.args)
            if prim.is_diff_arg(i) and isinstance(a, np.ndarray) and a.dtype.kind in "fc"]


def _random_like(a, rng):
    a = np.asarray(a)
    r = rng.standard_normal(a.shape)
    return r + 1j * rng.standard_normal(a.shape) if a.dtype.kind == "c" else r


def _cotangent(prim, out, rng):
    gs = tuple(_random_like(o, rng) if np.asarray(o).dtype.kind in "fc" else np.zeros(np.shape(o))
               for o in checks.outputs(prim, out))
    return gs[0] if prim.nout == 1 else gs


def _pair(a, b):
    """The bilinear pairing Re(sum(a * b)) over (tuples of) arrays, skipping None."""
    if isinstance(a, tuple):
        return sum(_pair(x, y) for x, y in zip(a, b) if x is not None and y is not None)
    return float(np.real(np.sum(np.asarray(a) * np.asarray(b))))


def _directional(prim, args, params, i, v):
    plus = checks.outputs(prim, checks.forward(prim, checks.perturbed(args, i, checks.EPS * v), params))
    minus = checks.outputs(prim, checks.forward(prim, checks.perturbed(args, i, -checks.EPS * v), params))
    d = tuple((np.asarray(p) - np.asarray(m)) / (2 * checks.EPS) for p, m in zip(plus, minus))
    return d[0] if prim.nout == 1 else d


@pytest.mark.parametrize("name,k", CASES, ids=IDS)
def test_complex_vjp_matches_finite_differences(name, k):
    prim, sample = TABLE[name], SAMPLES[name][k]
    rng = np.random.default_rng(k)
    out = checks.forward(prim, sample.args, sample.params)
    positions = _positions(prim, sample)
    assert positions, f"{name} complex sample {k} has no differentiable operand"
    assert any(np.iscomplexobj(a) for a in (*sample.args, *checks.outputs(prim, out))), \
        f"{name} complex sample {k} has no complex operand or result"
    for i in positions:
        for _ in range(2):
            ct = _cotangent(prim, out, rng)
            v = _random_like(sample.args[i], rng)
            analytic = _pair(checks.vjp(prim, i, ct, out, sample.args, sample.params), v)
            numeric = _pair(ct, _directional(prim, sample.args, sample.params, i, v))
            assert checks.close(analytic, numeric, sample.rtol), (
                f"{name} operand {i}: vjp pairs to {analytic}, finite differences {numeric}")


@pytest.mark.parametrize("name,k", CASES, ids=IDS)
def test_complex_jvp_matches_vjp(name, k):
    prim, sample = TABLE[name], SAMPLES[name][k]
    rng = np.random.default_rng(100 + k)
    out = checks.forward(prim, sample.args, sample.params)
    for i in _positions(prim, sample):
        ct = _cotangent(prim, out, rng)
        t = _random_like(sample.args[i], rng)
        tangents = [None] * len(sample.args)
        tangents[i] = t
        jvp = prim.apply_jvp(tuple(tangents), out, tuple(sample.args), sample.params)
        assert checks.close(_pair(ct, jvp), _pair(checks.vjp(prim, i, ct, out, sample.args, sample.params), t),
                            1e-9), f"{name} operand {i}: jvp and vjp disagree"


def _leaves(prim, sample):
    targs, leaves = [], {}
    for i, a in enumerate(sample.args):
        if isinstance(a, np.ndarray):
            t = tg.tensor(a)
            if i in _positions(prim, sample):
                t.requires_grad_()
                leaves[i] = t
            targs.append(t)
        else:
            targs.append(a)
    return targs, leaves


def _torch_convention(g, operand):
    """The eager (PyTorch) gradient from the table's: conjugated; real part for a real operand."""
    g = np.conj(np.asarray(g))
    return g if np.iscomplexobj(operand) else np.real(g)


@pytest.mark.parametrize("name,k", CASES, ids=IDS)
def test_eager_gives_torchs_convention(name, k):
    prim, sample = TABLE[name], SAMPLES[name][k]
    out = checks.forward(prim, sample.args, sample.params)
    G = _cotangent(prim, out, np.random.default_rng(k))
    targs, leaves = _leaves(prim, sample)
    result = prim(*targs, **sample.params)
    results = result if isinstance(result, tuple) else (result,)
    Gs = G if isinstance(G, tuple) else (G,)
    pairs = [(r, tg.tensor(gk)) for r, gk in zip(results, Gs) if r.requires_grad]
    tg.autograd.backward([p for p, _ in pairs], [q for _, q in pairs])
    conj_G = tuple(np.conj(x) for x in Gs) if isinstance(G, tuple) else np.conj(G)
    for i, leaf in leaves.items():
        expected = _torch_convention(checks.vjp(prim, i, conj_G, out, sample.args, sample.params),
                                     sample.args[i])
        got = leaf.grad.numpy() if leaf.grad is not None else np.zeros_like(expected)
        assert got.dtype == sample.args[i].dtype, f"{name} operand {i}: gradient dtype {got.dtype}"
        np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-12, err_msg=f"{name} operand {i}")


@pytest.mark.parametrize("name,k", CASES, ids=IDS)
def test_complex_second_order_matches_finite_differences(name, k):
    """The eager gradient (PyTorch's convention) of phi(x) = Re(sum(conj(w) * grad(x))), made
    with create_graph=True, against finite differences of phi along v."""
    prim, sample = TABLE[name], SAMPLES[name][k]
    if not sample.smooth:
        pytest.skip("not smooth at this sample")
    rng = np.random.default_rng(200 + k)
    out = checks.forward(prim, sample.args, sample.params)
    G = _cotangent(prim, out, rng)
    conj_G = tuple(np.conj(x) for x in G) if isinstance(G, tuple) else np.conj(G)
    for i in _positions(prim, sample):
        w, v = _random_like(sample.args[i], rng), _random_like(sample.args[i], rng)

        def phi(x):
            args = list(sample.args)
            args[i] = x
            o = checks.forward(prim, args, sample.params)
            grad = _torch_convention(checks.vjp(prim, i, conj_G, o, args, sample.params), x)
            return float(np.real(np.vdot(w, grad)))

        numeric = (phi(sample.args[i] + checks.EPS * v) - phi(sample.args[i] - checks.EPS * v)) / (2 * checks.EPS)
        targs, leaves = _leaves(prim, sample)
        result = prim(*targs, **sample.params)
        results = result if isinstance(result, tuple) else (result,)
        Gs = G if isinstance(G, tuple) else (G,)
        pairs = [(r, tg.tensor(gk)) for r, gk in zip(results, Gs) if r.requires_grad]
        (gi,) = tg.autograd.grad([p for p, _ in pairs], [leaves[i]], [q for _, q in pairs],
                                 create_graph=True, allow_unused=True)
        if gi is None or not gi.requires_grad:
            analytic = 0.0
        else:
            scalar = (tg.tensor(np.conj(w)) * gi).sum()
            scalar = scalar.real if scalar.is_complex() else scalar
            (h,) = tg.autograd.grad(scalar, [leaves[i]], allow_unused=True)
            # PyTorch's gradient of a real phi is dphi/dx + i dphi/dy: phi's derivative along
            # v is Re(vdot(h, v)).
            analytic = 0.0 if h is None else float(np.real(np.vdot(h.detach().numpy(), v)))
        assert checks.close(analytic, numeric, max(sample.rtol, 1e-5)), (
            f"{name} operand {i}: second order {analytic}, finite differences {numeric}")



UNDECLARED = sorted(n for n, p in TABLE.items() if not p.complex and p.differentiable and n in REAL_SAMPLES)


@pytest.mark.parametrize("name", UNDECLARED)
def test_undeclared_rules_cannot_slip_past_the_complex_guard(name):
    """The eager runtime refuses a rule not declared complex when a complex value reaches
    it: through a complex cotangent (a complex result) or as a complex gradient its vjp
    computes from a complex operand. A rule whose kernel gives a real result from complex
    operands *and* whose vjp stays real would slip past both with a wrong derivative: it
    must refuse complex operands in its kernel (or be made right and declared complex)."""
    prim = TABLE[name]
    sample = REAL_SAMPLES[name][0]
    args = [a + 0.5j if isinstance(a, np.ndarray) and a.dtype.kind == "f" else a for a in sample.args]
    complex_at = [i for i, a in enumerate(args)
                  if prim.is_diff_arg(i) and isinstance(a, np.ndarray) and a.dtype.kind == "c"]
    if not complex_at:
        pytest.skip("no floating operand to make complex")
    try:
        out = checks.forward(prim, args, sample.params)
    except Exception:  # the kernel refuses complex operands
        return
    if any(np.asarray(o).dtype.kind == "c" for o in checks.outputs(prim, out)):
        return  # a complex cotangent reaches the rule: refused
    g = checks.cotangent(prim, out, np.random.default_rng(0))
    for i in complex_at:
        gi = checks.vjp(prim, i, g, out, args, sample.params)
        assert gi is None or np.asarray(gi).dtype.kind == "c", (
            f"{name}: a real result of complex operands whose real gradient would pass as right")
