"""Walks the WHOLE rule table: every differentiable primitive must have samples, and each
sample's vjps are checked against float64 finite differences, its jvps against its vjps,
its gradients' dtypes in float32, the eager runtime against the raw rule, and the
gradient's own gradient (``create_graph=True``) against finite differences."""
import importlib
import pathlib

import numpy as np
import pytest

import tracegrad as tg
from tracegrad.rules import TABLE

from . import checks

_HERE = pathlib.Path(__file__).parent
_MODULES = [importlib.import_module(f"{__package__}.{p.stem}") for p in sorted(_HERE.glob("samples_*.py"))]
SAMPLES = {}
EXEMPT = {}  # name -> {tag: reason} for shapes a rule cannot take
BROADCASTING = set()  # rules whose operands broadcast against each other
COMPLEX_ONLY = {}  # name -> why: rules checked by test_complex_table.py only
for _m in _MODULES:
    for _name, _samples in _m.SAMPLES.items():
        assert _name not in SAMPLES, f"samples for {_name} defined twice"
        SAMPLES[_name] = _samples
    EXEMPT.update(getattr(_m, "EXEMPT", {}))
    COMPLEX_ONLY.update(getattr(_m, "COMPLEX_ONLY", {}))
    BROADCASTING |= set(getattr(_m, "BROADCASTING", ()))

DIFFERENTIABLE = sorted(name for name, p in TABLE.items()
                        if p.differentiable and (any(p.vjps) or p.vjp_all_fn is not None)
                        and name not in COMPLEX_ONLY)
CASES = [(name, k) for name in sorted(SAMPLES) if name in TABLE and TABLE[name].differentiable
         for k in range(len(SAMPLES[name]))]
IDS = [f"{name}-{k}{SAMPLES[name][k]!r}" for name, k in CASES]
ELEMENTWISE_TAGS = {"0d", "empty"}


def test_every_rule_has_samples():
    missing = [n for n in DIFFERENTIABLE if n not in SAMPLES]
    assert not missing, f"rules without samples in tests/rules/samples_*.py: {missing}"


def test_samples_name_real_rules():
    unknown = [n for n in SAMPLES if n not in TABLE]
    assert not unknown, f"samples for rules that do not exist: {unknown}"


@pytest.mark.parametrize("name", DIFFERENTIABLE)
def test_samples_cover_zero_dim_and_empty_shapes(name):
    tags = set().union(*(s.tags for s in SAMPLES.get(name, [])))
    wanted = ELEMENTWISE_TAGS | ({"broadcast"} if name in BROADCASTING else set())
    missing = wanted - tags - set(EXEMPT.get(name, {}))
    assert not missing, f"{name}: no sample tagged {sorted(missing)} (or an EXEMPT reason)"


@pytest.mark.parametrize("name,k", CASES, ids=IDS)
def test_vjp_matches_finite_differences(name, k):
    prim, sample = TABLE[name], SAMPLES[name][k]
    rng = np.random.default_rng(k)
    out = checks.forward(prim, sample.args, sample.params)
    positions = checks.diff_positions(prim, sample)
    assert positions, f"{name} sample {k} has no differentiable float operand"
    for i in positions:
        for _ in range(2):
            g = checks.cotangent(prim, out, rng)
            v = checks.direction(sample.args[i], rng)
            analytic = checks.inner(checks.vjp(prim, i, g, out, sample.args, sample.params), v)
            numeric = checks.inner(checks.directional_derivative(prim, sample.args, sample.params, i, v), g)
            assert checks.close(analytic, numeric, sample.rtol), (
                f"{name} operand {i}: vjp gives {analytic}, finite differences {numeric}")


@pytest.mark.parametrize("name,k", CASES, ids=IDS)
def test_jvp_matches_vjp(name, k):
    prim, sample = TABLE[name], SAMPLES[name][k]
    rng = np.random.default_rng(100 + k)
    out = checks.forward(prim, sample.args, sample.params)
    for i in checks.diff_positions(prim, sample):
        g = checks.cotangent(prim, out, rng)
        t = checks.direction(sample.args[i], rng)
        tangents = [None] * len(sample.args)
        tangents[i] = t
        forward_mode = prim.apply_jvp(tuple(tangents), out, tuple(sample.args), sample.params)
        assert checks.close(checks.inner(forward_mode, g),
                            checks.inner(checks.vjp(prim, i, g, out, sample.args, sample.params), t), 1e-9)


@pytest.mark.parametrize("name,k", CASES, ids=IDS)
def test_vjp_keeps_float32(name, k):
    prim, sample = TABLE[name], SAMPLES[name][k]
    if not sample.float32:
        pytest.skip("the sample's parameters fix the dtype")
    args = tuple(a.astype(np.float32) if isinstance(a, np.ndarray) and a.dtype.kind == "f" else a
                 for a in sample.args)
    out = checks.forward(prim, args, sample.params)
    g = checks.cotangent(prim, out, np.random.default_rng(k))
    g = tuple(x.astype(np.float32) if x.dtype.kind == "f" else x for x in g) if isinstance(g, tuple) \
        else g.astype(np.float32)
    for i in checks.diff_positions(prim, sample):
        if not isinstance(args[i], np.ndarray):
            continue
        gi = np.asarray(checks.vjp(prim, i, g, out, args, sample.params))
        assert gi.shape == args[i].shape, f"{name}: gradient shape {gi.shape} for operand {args[i].shape}"
        assert gi.dtype == np.float32, f"{name}: float32 operand {i} got a {gi.dtype} gradient"


def _as_tensors(prim, sample):
    leaves = {}
    targs = []
    for i, a in enumerate(sample.args):
        if isinstance(a, np.ndarray):
            t = tg.tensor(a)
            if i in checks.diff_positions(prim, sample):
                t.requires_grad_()
                leaves[i] = t
            targs.append(t)
        else:
            targs.append(a)
    return targs, leaves


@pytest.mark.parametrize("name,k", CASES, ids=IDS)
def test_eager_backward_matches_rule(name, k):
    prim, sample = TABLE[name], SAMPLES[name][k]
    out = checks.forward(prim, sample.args, sample.params)
    g = checks.cotangent(prim, out, np.random.default_rng(k))
    targs, leaves = _as_tensors(prim, sample)
    result = prim(*targs, **sample.params)
    results = result if isinstance(result, tuple) else (result,)
    gs = g if isinstance(g, tuple) else (g,)
    pairs = [(r, tg.tensor(gk)) for kk, (r, gk) in enumerate(zip(results, gs))
             if r.requires_grad]
    for kk, (r, o) in enumerate(zip(results, checks.outputs(prim, out))):
        np.testing.assert_allclose(r.detach().numpy(), o, rtol=1e-12, err_msg=f"{name} output {kk}")
    if not pairs:
        return
    tg.autograd.backward([p for p, _ in pairs], [q for _, q in pairs])
    for i, leaf in leaves.items():
        expected = np.asarray(checks.vjp(prim, i, g, out, sample.args, sample.params))
        got = leaf.grad.numpy() if leaf.grad is not None else np.zeros_like(expected)
        np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-12, err_msg=f"{name} operand {i}")


@pytest.mark.parametrize("name,k", CASES, ids=IDS)
def test_second_order_matches_finite_differences(name, k):
    """The vjp, run on Tensors with create_graph=True, is itself differentiated correctly."""
    prim, sample = TABLE[name], SAMPLES[name][k]
    if not sample.smooth:
        pytest.skip("at ties or exact zeros the first derivative jumps; finite differences cannot check it")
    rng = np.random.default_rng(200 + k)
    out = checks.forward(prim, sample.args, sample.params)
    g = checks.cotangent(prim, out, rng)
    for i in checks.diff_positions(prim, sample):
        if not isinstance(sample.args[i], np.ndarray):
            continue
        w = rng.standard_normal(sample.args[i].shape)
        v = rng.standard_normal(sample.args[i].shape)

        def first_order(x):
            args = list(sample.args)
            args[i] = x
            o = checks.forward(prim, args, sample.params)
            return checks.inner(checks.vjp(prim, i, g, o, args, sample.params), w)

        numeric = (first_order(sample.args[i] + checks.EPS * v) - first_order(sample.args[i] - checks.EPS * v)) / (2 * checks.EPS)
        targs, leaves = _as_tensors(prim, sample)
        result = prim(*targs, **sample.params)
        results = result if isinstance(result, tuple) else (result,)
        gs = g if isinstance(g, tuple) else (g,)
        pairs = [(r, tg.tensor(gk)) for kk, (r, gk) in enumerate(zip(results, gs))
                 if r.requires_grad]
        (gi,) = tg.autograd.grad([p for p, _ in pairs], [leaves[i]], [q for _, q in pairs],
                                 create_graph=True, allow_unused=True)
        if gi is None or not gi.requires_grad:
            analytic = 0.0
        else:
            (hv,) = tg.autograd.grad((gi * tg.tensor(w)).sum(), [leaves[i]], allow_unused=True)
            analytic = 0.0 if hv is None else float((hv * tg.tensor(v)).sum())
        assert checks.close(analytic, numeric, max(sample.rtol, 1e-5)), (
            f"{name} operand {i}: second order {analytic}, finite differences {numeric}")


def test_derivatives_are_plain_module_level_functions():
    """Each vjp/jvp is a module-level function of the rules package (no closure over the
    forward call), so the tape can call it and the AST path can inline its body."""
    offenders = []
    for name, prim in TABLE.items():
        for fn in list(prim.vjps) + list(prim.jvps) + [prim.vjp_all_fn, prim.jvp_all_fn]:
            if fn is None:
                continue
            if fn.__closure__ or "<locals>" in fn.__qualname__ or fn.__name__ == "<lambda>" \
                    or not fn.__module__.startswith("tracegrad.rules"):
                offenders.append(f"{name}: {fn.__module__}.{fn.__qualname__}")
    assert not offenders, offenders


def test_only_the_backend_imports_numpy():
    """Kernels and the runtime reach arrays through the backend namespace (``xp``), so a
    CuPy backend can stand in: no module outside tracegrad/backend imports NumPy."""
    root = pathlib.Path(tg.__file__).parent
    # Printing formats host copies of the values (backend.to_host), never device arrays.
    # The tape's tracer answers NumPy's own API (np.tanh(tracer) -> the tanh rule): the
    # NumPy functions are the keys it looks up, not kernels it runs. The tour shows a
    # user's own NumPy code being traced.
    host_only = {pathlib.Path("runtime/formatting.py"), *(pathlib.Path("transform/tape/numpy_map") / p.name
                    for p in (root / "transform/tape/numpy_map").glob("*.py")),
                 pathlib.Path("transform/tape/tracer.py"), pathlib.Path("tour.py"),
                 pathlib.Path("transform/ast/resolve.py"),  # (tells NumPy functions in user code apart)
                 pathlib.Path("transform/ast/lower.py"),  # (likewise, for the lists it lowers)
                 pathlib.Path("transform/ast/support.py"),  # (tells NumPy's constructors apart)
                 pathlib.Path("transform/ast/adapters.py"),  # (tells a zero tangent of user values)
                 pathlib.Path("transform/ast/fusing.py"),  # (tells NumPy's ufuncs in generated code apart)
                 # MPI moves host memory: device arrays are staged to the host (distributed/_buffers.py)
                 *(pathlib.Path("distributed") / p.name for p in (root / "distributed").glob("*.py")),
                 pathlib.Path("show.py"),  # (evaluates the --args example expression)
                 # ravel_pytree is NumPy-level code that tracers and CuPy arrays answer through
                 # __array_function__, as a user's own would be
                 pathlib.Path("flatten_util.py"),
                 pathlib.Path("transform/kernel_numpy.py")}  # (the `np` Numba's CPU kernels are typed in)
    offenders = []
    for path in root.rglob("*.py"):
        if "backend" in path.relative_to(root).parts or path.relative_to(root) in host_only:
            continue
        for line in path.read_text().splitlines():
            words = line.split()
            if words[:2] in (["import", "numpy"], ["from", "numpy"]) or words[:1] == ["import"] and "numpy" in words:
                offenders.append(f"{path.relative_to(root)}: {line.strip()}")
    assert not offenders, offenders
