"""Eager forward-mode AD (``tracegrad.autograd.forward_ad``): every rule-table jvp through
dual tensors against finite differences and the reverse-mode vjp, and the API, views,
in-place ops, custom Functions, nn modules and forward-over-reverse against PyTorch."""
import numpy as np
import pytest

import tracegrad as tg
import tracegrad.autograd.forward_ad as fwAD
from tracegrad.rules import TABLE

from ..rules import checks
from ..rules.test_table import CASES, IDS, SAMPLES


def _dual_call(prim, sample, i, v):
    """Run ``prim`` eagerly with operand ``i`` dual (tangent ``v``): the output tangents."""
    args = [tg.tensor(a) if isinstance(a, np.ndarray) else a for a in sample.args]
    with fwAD.dual_level():
        args[i] = fwAD.make_dual(args[i], tg.tensor(v))
        result = prim(*args, **sample.params)
        outs = result if isinstance(result, tuple) else (result,)
        tangents = tuple(None if o._data.dtype.kind not in "fc" else fwAD.unpack_dual(o).tangent for o in outs)
    return tuple(None if t is None else t.detach().numpy() for t in tangents)


def _as_outputs(prim, value):
    return value if prim.nout != 1 else (value,)


@pytest.mark.parametrize("name,k", CASES, ids=IDS)
def test_dual_tensors_follow_the_rule_table(name, k):
    """The tangent an eager op gives a dual operand matches finite differences and the
    reverse-mode vjp (<J v, g> == <v, J^T g>)."""
    prim, sample = TABLE[name], SAMPLES[name][k]
    rng = np.random.default_rng(300 + k)
    out = checks.forward(prim, sample.args, sample.params)
    positions = [i for i in checks.diff_positions(prim, sample) if isinstance(sample.args[i], np.ndarray)]
    for i in positions:
        v = checks.direction(sample.args[i], rng)
        g = checks.cotangent(prim, out, rng)
        tangents = _dual_call(prim, sample, i, v)
        gs = _as_outputs(prim, g)
        forward = sum(checks.inner(t, gk) for t, gk in zip(tangents, gs) if t is not None)
        numeric = checks.inner(_as_outputs(prim, checks.directional_derivative(prim, sample.args, sample.params, i, v)), gs)
        reverse = checks.inner(checks.vjp(prim, i, g, out, sample.args, sample.params), v)
        tangents_in = [None] * len(sample.args)
        tangents_in[i] = v
        raw = checks.inner(_as_outputs(prim, prim.apply_jvp(tuple(tangents_in), out, tuple(sample.args), sample.params)), gs)
        # integer operands compute in the default float dtype eagerly, as in torch: looser there
        exact = all(a.dtype.kind == "f" for a in sample.args if isinstance(a, np.ndarray))
        assert checks.close(forward, raw, 1e-10 if exact else max(1e-9, sample.rtol)), (
            f"{name} operand {i}: eager tangent {forward}, rule's jvp {raw}")
        assert checks.close(forward, reverse, max(1e-9, sample.rtol)), f"{name} operand {i}: tangent {forward}, vjp {reverse}"
        assert checks.close(forward, numeric, sample.rtol), (
            f"{name} operand {i}: tangent {forward}, finite differences {numeric}")
        for t, o in zip(tangents, checks.outputs(prim, out)):
            if t is not None:
                assert t.shape == np.shape(o), f"{name}: tangent shape {t.shape}, output {np.shape(o)}"


@pytest.mark.parametrize("name,k", CASES, ids=IDS)
def test_forward_over_reverse_follows_the_rule_table(name, k):
    """The tangent of a gradient computed with create_graph inside a dual level (the
    Hessian-vector product of forward-over-reverse) matches finite differences of the vjp."""
    prim, sample = TABLE[name], SAMPLES[name][k]
    if not sample.smooth:
        pytest.skip("at ties or exact zeros the first derivative jumps; finite differences cannot check it")
    rng = np.random.default_rng(400 + k)
    out = checks.forward(prim, sample.args, sample.params)
    g = checks.cotangent(prim, out, rng)
    for i in checks.diff_positions(prim, sample):
        if not isinstance(sample.args[i], np.ndarray):
            continue
        w, v = rng.standard_normal(sample.args[i].shape), rng.standard_normal(sample.args[i].shape)

        def first_order(x):
            args = list(sample.args)
            args[i] = x
            o = checks.forward(prim, args, sample.params)
            return checks.inner(checks.vjp(prim, i, g, o, args, sample.params), w)

        numeric = (first_order(sample.args[i] + checks.EPS * v) - first_order(sample.args[i] - checks.EPS * v)) / (2 * checks.EPS)
        leaf = tg.tensor(sample.args[i], requires_grad=True)
        args = [tg.tensor(a) if isinstance(a, np.ndarray) else a for a in sample.args]
        with fwAD.dual_level():
            args[i] = fwAD.make_dual(leaf, tg.tensor(v))
            results = _as_outputs(prim, prim(*args, **sample.params))
            pairs = [(r, tg.tensor(gk)) for r, gk in zip(results, _as_outputs(prim, g)) if r.requires_grad]
            (gi,) = tg.autograd.grad([p for p, _ in pairs], [leaf], [q for _, q in pairs],
                                     create_graph=True, allow_unused=True)
            tangent = None if gi is None else fwAD.unpack_dual(gi).tangent
            analytic = 0.0 if tangent is None else checks.inner(tangent.detach().numpy(), w)
        assert checks.close(analytic, numeric, max(sample.rtol, 1e-5)), (
            f"{name} operand {i}: forward-over-reverse {analytic}, finite differences {numeric}")


# -- the API, without torch ---------------------------------------------------------------------

def test_level_lifecycle_and_tangents_dropped_on_exit():
    x = tg.tensor([1.0, 2.0])
    with fwAD.dual_level() as level:
        assert level == 0 and fwAD._current_level == 0
        d = fwAD.make_dual(x, tg.tensor([1.0, 0.0]))
        y = d.sin()
        assert fwAD.unpack_dual(y).tangent is not None
    assert fwAD._current_level == -1
    assert fwAD.unpack_dual(y) == (y, None)
    with fwAD.dual_level():  # a new level: the old tangents are gone
        assert fwAD.unpack_dual(y).tangent is None


def test_decorator_form():
    @fwAD.dual_level()
    def f(x):
        return fwAD.unpack_dual(fwAD.make_dual(x, x * 2) * 3).tangent
    np.testing.assert_allclose(f(tg.tensor([1.0, 2.0])).numpy(), [6.0, 12.0])
    assert fwAD._current_level == -1


def test_tangent_formula_on_a_chain():
    x, v = np.array([0.3, -1.2, 2.0]), np.array([1.0, 2.0, -0.5])
    with fwAD.dual_level():
        d = fwAD.make_dual(tg.tensor(x), tg.tensor(v))
        out = (d.exp() * d).sum()
        got = float(fwAD.unpack_dual(out).tangent)
    assert got == pytest.approx(float(np.sum((np.exp(x) * x + np.exp(x)) * v)))


def test_unpacked_primal_has_no_tangent_and_shares_storage():
    with fwAD.dual_level():
        d = fwAD.make_dual(tg.tensor([1.0, 2.0]), tg.tensor([1.0, 1.0]))
        primal, tangent = fwAD.unpack_dual(d)
        assert fwAD.unpack_dual(primal).tangent is None
        assert fwAD.unpack_dual(primal * 2).tangent is None
        primal.data[0] = 5.0
        assert float(d[0]) == 5.0


def test_rule_without_a_jvp_is_refused_by_name(monkeypatch):
    prim = TABLE["exp"]
    monkeypatch.setattr(prim, "jvps", [None] * len(prim.jvps))
    monkeypatch.setattr(prim, "diagonal", False)
    monkeypatch.setattr(prim, "linear", False)
    with fwAD.dual_level():
        d = fwAD.make_dual(tg.tensor([1.0]), tg.tensor([1.0]))
        with pytest.raises(NotImplementedError, match="Trying to use forward AD with exp that does not support it"):
            d.exp()


def test_reverse_mode_ignores_tangents():
    p = tg.tensor([1.0, 2.0], requires_grad=True)
    tangent = tg.tensor([1.0, 1.0], requires_grad=True)
    with fwAD.dual_level():
        d = fwAD.make_dual(p, tangent)
        out = (d ** 2).sum()
        out.backward()
        np.testing.assert_allclose(p.grad.numpy(), [2.0, 4.0])
        assert tangent.grad is None
        # the tangent has a history of its own: reverse-over-forward
        (g,) = tg.autograd.grad(fwAD.unpack_dual(out).tangent, tangent)
        np.testing.assert_allclose(g.numpy(), [2.0, 4.0])


def test_forward_over_reverse_gives_hessian_vector_products():
    x = np.array([0.5, -1.0, 2.0])
    v = np.array([1.0, -2.0, 0.5])
    p = tg.tensor(x, requires_grad=True)
    with fwAD.dual_level():
        d = fwAD.make_dual(p, tg.tensor(v))
        y = (d.exp() * d.sin()).sum() + (d ** 3).sum()
        (g,) = tg.autograd.grad(y, p, create_graph=True)
        hv = fwAD.unpack_dual(g).tangent.detach().numpy()
    second = np.exp(x) * (2 * np.cos(x)) + 6 * x  # the Hessian is diagonal
    np.testing.assert_allclose(hv, second * v, rtol=1e-10)


def test_in_place_on_a_view_gives_the_base_a_tangent():
    with fwAD.dual_level():
        d = fwAD.make_dual(tg.tensor([1.0, 2.0]), tg.tensor([3.0, 4.0]))
        base = tg.zeros(2, 3, dtype=tg.float64)
        earlier = base[1]
        base[0, 1:] = d * 2
        np.testing.assert_allclose(fwAD.unpack_dual(base).tangent.numpy(), [[0, 6, 8], [0, 0, 0]])
        np.testing.assert_allclose(fwAD.unpack_dual(earlier).tangent.numpy(), [0, 0, 0])
        base.mul_(d[0])  # product rule with the old value of base
        np.testing.assert_allclose(fwAD.unpack_dual(base).tangent.numpy(),
                                   [[0, 6 * 1 + 2 * 3, 8 * 1 + 4 * 3], [0, 0, 0]])


# -- against PyTorch ------------------------------------------------------------------------------

def _run(lib, script):
    """Run ``script(lib, fwAD)``; its result, or (exception type name, message)."""
    fw = lib.autograd.forward_ad
    try:
        return script(lib, fw)
    except Exception as e:  # noqa: BLE001 -- the error is what is compared
        return (type(e).__name__, str(e).replace("torch.", "tracegrad.") if lib is not tg else str(e))


def _same(a, b):
    if isinstance(a, (tuple, list)):
        assert isinstance(b, (tuple, list)) and len(a) == len(b), (a, b)
        for x, y in zip(a, b):
            _same(x, y)
    elif a is None or isinstance(a, (str, bool, int, float)):
        assert a == b
    else:
        np.testing.assert_allclose(np.asarray(a.detach().cpu()), b.detach().numpy(), rtol=1e-6, atol=1e-7)


def _oracle(script):
    import torch
    _same(_run(torch, script), _run(tg, script))


def _tangent(fw, t):
    return fw.unpack_dual(t).tangent


ERROR_SCRIPTS = {
    "make_dual outside a level": lambda lib, fw: fw.make_dual(lib.ones(2), lib.ones(2)),
    "nested level": lambda lib, fw: _nested(lib, fw),
    "exit without a level": lambda lib, fw: fw.exit_dual_level(),
    "exit the wrong level": lambda lib, fw: _in_level(fw, lambda: fw.exit_dual_level(level=3)),
    "size mismatch": lambda lib, fw: _in_level(fw, lambda: fw.make_dual(lib.ones(3), lib.ones(2))),
    "integer primal": lambda lib, fw: _in_level(fw, lambda: fw.make_dual(lib.ones(3, dtype=lib.int64), lib.ones(3))),
    "integer tangent": lambda lib, fw: _in_level(fw, lambda: fw.make_dual(lib.ones(3), lib.ones(3, dtype=lib.int64))),
    "dual of a dual": lambda lib, fw: _in_level(fw, lambda: fw.make_dual(fw.make_dual(lib.ones(2), lib.ones(2)), lib.ones(2))),
    "make_dual at a bad level": lambda lib, fw: _in_level(fw, lambda: fw.make_dual(lib.ones(2), lib.ones(2), level=4)),
    "unpack_dual at a bad level": lambda lib, fw: _in_level(
        fw, lambda: fw.unpack_dual(fw.make_dual(lib.ones(2), lib.ones(2)), level=4)),
}


def _in_level(fw, body):
    with fw.dual_level():
        return body()


def _nested(lib, fw):
    with fw.dual_level():
        with fw.dual_level():
            pass


@pytest.mark.torch
@pytest.mark.parametrize("case", sorted(ERROR_SCRIPTS))
def test_errors_match_torch(case):
    import torch
    expected, got = _run(torch, ERROR_SCRIPTS[case]), _run(tg, ERROR_SCRIPTS[case])
    assert isinstance(expected[0], str) and expected == got
    assert torch.autograd.forward_ad._current_level == -1 and fwAD._current_level == -1


def _views_and_in_place(lib, fw):
    x = fw.make_dual(lib.tensor([1.0, 2.0, 3.0]), lib.tensor([1.0, 0.5, -1.0]))
    out = []
    v = x[1:]
    out.append(_tangent(fw, v))
    out.append(_tangent(fw, v)._base is _tangent(fw, x))
    a = lib.zeros(3)
    a.add_(x)
    out.append(_tangent(fw, a))
    b = lib.zeros(4)
    bv = b[:3]
    bv.copy_(x)
    out += [_tangent(fw, b), _tangent(fw, bv)]
    c = lib.zeros(4)
    cv = c[:3]
    c.mul_(2)
    cv2 = c[1:]
    c[:3] = x * x
    out += [_tangent(fw, c), _tangent(fw, cv), _tangent(fw, cv2)]
    d = fw.make_dual(lib.ones(3), lib.ones(3))
    dt = _tangent(fw, d)
    d.mul_(lib.tensor([1.0, 2.0, 3.0]))
    out += [_tangent(fw, d), _tangent(fw, d) is dt, dt]
    e = fw.make_dual(lib.ones(3), lib.ones(3))
    e.zero_()
    out.append(_tangent(fw, e))
    f = lib.zeros(2, 3)
    f[0].add_(x.exp())
    f.t()[2].mul_(x[0])
    out.append(_tangent(fw, f))
    out.append(_tangent(fw, x.argmax()))
    m = x.max(0)
    out += [_tangent(fw, m.values), _tangent(fw, m.indices)]
    out += [_tangent(fw, x.detach()), _tangent(fw, x.clone()), _tangent(fw, x.double())]
    with lib.no_grad():
        out.append(_tangent(fw, x * x))
    with lib.inference_mode():
        out.append(_tangent(fw, x * x))
    written = lib.zeros(3)
    earlier = written[1:]
    written.copy_(x)
    primal = fw.unpack_dual(written).primal  # views of an unpacked primal have no tangent
    out += [_tangent(fw, earlier), _tangent(fw, primal[0]), _tangent(fw, primal.view(3)[1:]), _tangent(fw, written[0])]
    y = x.clone()
    y.mul_(2)  # the copy's tangent is its own: x's is unchanged
    z = x.clone().detach_()
    out += [_tangent(fw, x), _tangent(fw, y), _tangent(fw, z)]
    t = lib.ones(3, 2).t()
    dd = fw.make_dual(lib.ones(2, 3), t)
    out += [_tangent(fw, dd) is t, _tangent(fw, dd).stride(), fw.make_dual(lib.ones(2), lib.ones(2)).grad_fn is None]
    return out


@pytest.mark.torch
def test_views_and_in_place_match_torch():
    _oracle(lambda lib, fw: _in_level(fw, lambda: _views_and_in_place(lib, fw)))


def _functions(lib, fw):
    class Square(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, k):
            ctx.save_for_forward(x)
            ctx.k = k
            return x * x * k

        @staticmethod
        def backward(ctx, g):
            return None, None

        @staticmethod
        def jvp(ctx, tx, tk):
            (x,) = ctx.saved_tensors
            assert tk is None
            return 2 * x * tx * ctx.k

    class NoJvp(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    class TwoTangents(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def jvp(ctx, t):
            return t, t

    class InPlace(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.mark_dirty(x)
            return x.mul_(2)

        @staticmethod
        def jvp(ctx, t):
            return t.mul_(2)

    class NonDifferentiable(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = x * 2
            ctx.mark_non_differentiable(y)
            return y, x.argmax()

        @staticmethod
        def jvp(ctx, t):
            return t * 2, None

    class Identity(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def jvp(ctx, t):
            return t * 3

    class IdentityView(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def jvp(ctx, t):
            return t.view_as(t)

    class SetupContext(lib.autograd.Function):
        @staticmethod
        def forward(x, k):
            seen.append(fw.unpack_dual(x).tangent)  # forward runs on primals
            return x * k

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_forward(inputs[0])
            ctx.k = inputs[1]

        @staticmethod
        def jvp(ctx, tx, tk):
            return tx * ctx.k

    seen = []
    x = fw.make_dual(lib.tensor([1.0, 2.0]), lib.tensor([1.0, -1.0]))
    out = [_tangent(fw, Square.apply(x, 3.0)), NoJvp.apply(lib.ones(2))]
    out += [_run(lib, lambda lib_, fw_: NonDifferentiable.apply(x)), _run(lib, lambda lib_, fw_: Identity.apply(x))]
    out += [_tangent(fw, IdentityView.apply(x)), _tangent(fw, SetupContext.apply(x, 5.0)), seen]
    out.append(_run(lib, lambda lib_, fw_: NoJvp.apply(x)))
    out.append(_run(lib, lambda lib_, fw_: TwoTangents.apply(x)))
    out.append(_tangent(fw, InPlace.apply(x.clone())))
    return out


@pytest.mark.torch
def test_custom_functions_match_torch():
    _oracle(lambda lib, fw: _in_level(fw, lambda: _functions(lib, fw)))


def _printed(lib, fw):
    x = fw.make_dual(lib.tensor([1.0, 2.0, 3.0]), lib.tensor([1.0, 0.0, 0.0]))
    p = lib.tensor([1.0, 2.0], requires_grad=True)
    o = (fw.make_dual(p, lib.tensor([1.0, 1.0], requires_grad=True)) ** 2).sum()
    return [repr(x), repr((x * 2).sum()), repr(o), repr(lib.zeros(2, 3) + x)]


@pytest.mark.torch
def test_repr_shows_the_tangent_as_torch():
    import torch
    expected = _in_level(torch.autograd.forward_ad, lambda: _printed(torch, torch.autograd.forward_ad))
    got = _in_level(fwAD, lambda: _printed(tg, fwAD))
    assert got == [e.replace("torch.", "tracegrad.") for e in expected]


def _hvp_forward_over_reverse(lib, fw):
    p = lib.tensor([0.5, -1.0, 2.0], requires_grad=True)
    d = fw.make_dual(p, lib.tensor([1.0, -2.0, 0.5]))
    y = (lib.tanh(d) * d.exp() / (1 + d * d)).sum() + d.logsumexp(0) + lib.nn.functional.softplus(d).prod()
    (g,) = lib.autograd.grad(y, p, create_graph=True)
    return [g, _tangent(fw, g)]


@pytest.mark.torch
def test_forward_over_reverse_matches_torch():
    _oracle(lambda lib, fw: _in_level(fw, lambda: _hvp_forward_over_reverse(lib, fw)))


# -- nn modules on dual inputs --------------------------------------------------------------------

def _copy_module(mod, ref):
    """Load torch module ``ref``'s parameters and buffers into tracegrad module ``mod``."""
    state = {k: tg.tensor(v.detach().numpy()) for k, v in ref.state_dict().items()}
    mod.load_state_dict(state)
    return mod


def _mlp(lib):
    nn = lib.nn
    return nn.Sequential(nn.Linear(5, 8), nn.Tanh(), nn.LayerNorm(8), nn.Linear(8, 8), nn.GELU(),
                         nn.Sigmoid(), nn.Linear(8, 3), nn.Softplus())


def _convnet(lib):
    nn = lib.nn
    return nn.Sequential(nn.Conv2d(2, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(4, 3, 3), nn.ELU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(3, 4),
                         nn.LogSoftmax(dim=1))


@pytest.mark.torch
@pytest.mark.parametrize("build,shape", [(_mlp, (4, 5)), (_convnet, (2, 2, 6, 6))], ids=["mlp", "convnet"])
def test_modules_on_dual_inputs_match_torch(build, shape):
    import torch
    torch.manual_seed(0)
    ref = build(torch).double()
    mod = _copy_module(build(tg).double(), ref)
    rng = np.random.default_rng(0)
    x, v = rng.standard_normal(shape), rng.standard_normal(shape)
    target = rng.integers(0, 3, shape[0])

    def run(lib, model):
        fw = lib.autograd.forward_ad
        with fw.dual_level():
            out = model(fw.make_dual(lib.tensor(x), lib.tensor(v)))
            loss = lib.nn.functional.cross_entropy(out, lib.tensor(target)) + \
                lib.nn.functional.mse_loss(out, lib.zeros_like(out))
            return [fw.unpack_dual(out), fw.unpack_dual(loss)]

    expected = run(torch, ref)
    got = run(tg, mod)
    for (primal, tangent), (p_ref, t_ref) in zip(got, expected):
        np.testing.assert_allclose(primal.detach().numpy(), p_ref.detach().numpy(), rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(tangent.detach().numpy(), t_ref.detach().numpy(), rtol=1e-8, atol=1e-10)
    assert np.allclose(mod[1].running_mean.numpy(), ref[1].running_mean.numpy()) if build is _convnet else True


def test_functions_without_torch_on_dual_inputs():
    """The jvp of a whole module equals a central difference of its forward."""
    tg.manual_seed(0)
    mod = _mlp(tg).double()
    rng = np.random.default_rng(2)
    x, v = rng.standard_normal((3, 5)), rng.standard_normal((3, 5))
    with fwAD.dual_level():
        got = fwAD.unpack_dual(mod(fwAD.make_dual(tg.tensor(x), tg.tensor(v)))).tangent.detach().numpy()
    eps = 1e-6
    with tg.no_grad():
        numeric = (mod(tg.tensor(x + eps * v)).numpy() - mod(tg.tensor(x - eps * v)).numpy()) / (2 * eps)
    np.testing.assert_allclose(got, numeric, rtol=1e-6, atol=1e-8)


def test_parameter_tangents_through_a_linear_layer():
    """Dual weights (a directional derivative in parameter space) against the hand formula."""
    rng = np.random.default_rng(1)
    x, w, b = rng.standard_normal((4, 3)), rng.standard_normal((2, 3)), rng.standard_normal(2)
    tw, tb = rng.standard_normal((2, 3)), rng.standard_normal(2)
    with fwAD.dual_level():
        y = tg.nn.functional.linear(tg.tensor(x), fwAD.make_dual(tg.tensor(w), tg.tensor(tw)),
                                    fwAD.make_dual(tg.tensor(b), tg.tensor(tb)))
        got = fwAD.unpack_dual(tg.tanh(y)).tangent.numpy()
    pre = x @ w.T + b
    np.testing.assert_allclose(got, (1 - np.tanh(pre) ** 2) * (x @ tw.T + tb), rtol=1e-12)


# -- torch-named ops on dual inputs (beyond the bare rules: the ops' own composition) ---------------

OPS = {  # name -> f(lib, x, y) on dual x, y (3x3)
 "sum_dim": lambda L, x, y: x.sum(1),
 "mean": lambda L, x, y: x.mean(),
 "var": lambda L, x, y: x.var(0),
 "std": lambda L, x, y: x.std(),
 "norm": lambda L, x, y: x.norm(),
 "cat": lambda L, x, y: L.cat([x, y], 0),
 "stack": lambda L, x, y: L.stack([x, y], -1),
 "where": lambda L, x, y: L.where(x > 0, x, y),
 "index": lambda L, x, y: x[[0, 2], 1:],
 "masked_fill": lambda L, x, y: x.masked_fill(y > 0, 0.5),
 "clamp": lambda L, x, y: x.clamp(-0.5, 0.5),
 "softmax": lambda L, x, y: x.softmax(-1),
 "log_softmax": lambda L, x, y: L.log_softmax(x, 0),
 "matmul": lambda L, x, y: x @ y.T,
 "einsum": lambda L, x, y: L.einsum("ij,kj->ik", x, y),
 "cumsum": lambda L, x, y: x.cumsum(1),
 "cumprod": lambda L, x, y: x.cumprod(0),
 "sort": lambda L, x, y: x.sort(1).values,
 "topk": lambda L, x, y: x.topk(2, 1).values,
 "gather": lambda L, x, y: x.gather(1, L.tensor([[0, 1], [2, 2], [1, 0]])),
 "index_select": lambda L, x, y: x.index_select(1, L.tensor([2, 0])),
 "flip": lambda L, x, y: x.flip(0),
 "roll": lambda L, x, y: x.roll(1, 1),
 "repeat": lambda L, x, y: x.repeat(2, 1),
 "tile": lambda L, x, y: x.tile((1, 2)),
 "chunk": lambda L, x, y: x.chunk(3, 1)[1],
 "unbind": lambda L, x, y: x.unbind(0)[2],
 "tril": lambda L, x, y: x.tril(),
 "det": lambda L, x, y: L.linalg.det(x + 3 * L.eye(3, dtype=x.dtype)),
 "inverse": lambda L, x, y: L.linalg.inv(x + 3 * L.eye(3, dtype=x.dtype)),
 "solve": lambda L, x, y: L.linalg.solve(x + 3 * L.eye(3, dtype=x.dtype), y),
 "pow": lambda L, x, y: x.abs().pow(y),
 "atan2": lambda L, x, y: L.atan2(x, y),
 "lerp": lambda L, x, y: L.lerp(x, y, 0.3),
 "addmm": lambda L, x, y: L.addmm(x, x, y, beta=0.5),
 "normalize": lambda L, x, y: L.nn.functional.normalize(x, dim=1),
 "pad": lambda L, x, y: L.nn.functional.pad(x, (1, 2)),
 "conv1d": lambda L, x, y: L.nn.functional.conv1d(x[None], y[:, None, :2].expand(3, 3, 2).contiguous()),
 "embedding": lambda L, x, y: L.nn.functional.embedding(L.tensor([2, 0, 2]), x),
 "dropout_eval": lambda L, x, y: L.nn.functional.dropout(x, 0.5, training=False),
 "transpose_view_inplace": lambda L, x, y: x.clone().t().mul_(y).t(),
 "setitem": lambda L, x, y: _setitem(x, y),
 "expand": lambda L, x, y: x[:, :1].expand(3, 4),
 "mse": lambda L, x, y: L.nn.functional.mse_loss(x, y),
 "huber": lambda L, x, y: L.nn.functional.smooth_l1_loss(x, y),
 "bce_logits": lambda L, x, y: L.nn.functional.binary_cross_entropy_with_logits(x, y.sigmoid()),
 "nll": lambda L, x, y: L.nn.functional.nll_loss(x.log_softmax(1), L.tensor([0, 2, 1])),
 "kl": lambda L, x, y: L.nn.functional.kl_div(x.log_softmax(1), y.softmax(1), reduction="batchmean"),
 "layer_norm": lambda L, x, y: L.nn.functional.layer_norm(x, (3,), y[0], y[1]),
 "group_norm": lambda L, x, y: L.nn.functional.group_norm(x[None], 3),
 "max_pool1d": lambda L, x, y: L.nn.functional.max_pool1d(x[None], 2),
 "avg_pool1d": lambda L, x, y: L.nn.functional.avg_pool1d(x[None], 2),
 "silu": lambda L, x, y: L.nn.functional.silu(x) + L.nn.functional.leaky_relu(y, 0.1) + L.nn.functional.hardtanh(x),
 "logsumexp": lambda L, x, y: x.logsumexp(1),
 "amax": lambda L, x, y: x.amax(1),
 "prod": lambda L, x, y: x.prod(1),
 "diff_view_chain": lambda L, x, y: x.reshape(-1)[1:7].reshape(2, 3).permute(1, 0).unsqueeze(0).squeeze(0),
 "svd_vals": lambda L, x, y: L.linalg.svdvals(x),
 "eigvalsh": lambda L, x, y: L.linalg.eigvalsh(x + x.T),
 "qr_r": lambda L, x, y: L.linalg.qr(x).R,
 "cholesky": lambda L, x, y: L.linalg.cholesky(x @ x.T + L.eye(3, dtype=x.dtype)),
 "complex": lambda L, x, y: L.view_as_real(L.complex(x, y) * L.complex(y, x)),
 "fft": lambda L, x, y: L.view_as_real(L.fft.fft(x)),
}
def _setitem(x, y):
    """Writes of dual values into a copy of a dual tensor, by index."""
    z = x.clone(); z[1] = y[0] * 2; z[:, 0] += y[:, 1]; return z


def _dual_op(lib, name, values):
    fw = lib.autograd.forward_ad
    xv, yv, tx, ty = values
    with fw.dual_level():
        x = fw.make_dual(lib.tensor(xv), lib.tensor(tx))
        y = fw.make_dual(lib.tensor(yv), lib.tensor(ty))
        primal, tangent = fw.unpack_dual(OPS[name](lib, x, y))
        return primal.detach().numpy().copy(), tangent.detach().numpy().copy()


@pytest.mark.torch
@pytest.mark.parametrize("name", sorted(OPS))
def test_ops_on_dual_inputs_match_torch(name):
    import torch
    rng = np.random.default_rng(0)
    values = [rng.standard_normal((3, 3)) for _ in range(4)]
    (p_ref, t_ref), (p, t) = _dual_op(torch, name, values), _dual_op(tg, name, values)
    np.testing.assert_allclose(p, p_ref, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(t, t_ref, rtol=1e-8, atol=1e-10)


# -- complex values -------------------------------------------------------------------------------

COMPLEX_OPS = {
    "mul": lambda L, z, x: z * z,
    "abs": lambda L, z, x: z.abs(),
    "real": lambda L, z, x: z.real,
    "exp": lambda L, z, x: z.exp(),
    "conj": lambda L, z, x: z.conj(),
    "angle": lambda L, z, x: z.angle(),
    "complex": lambda L, z, x: L.complex(x, x * 2),
    "sin": lambda L, z, x: z.sin(),
    "sum": lambda L, z, x: (z * z.conj()).sum(),
    "polar": lambda L, z, x: L.polar(x.abs(), x),
    "view_as_real": lambda L, z, x: L.view_as_real(z * 1),
}


def _complex_op(lib, name):
    fw = lib.autograd.forward_ad
    with fw.dual_level():
        z = fw.make_dual(lib.tensor([1 + 2j, -0.5 + 1j]), lib.tensor([0.3 - 1j, 1 + 1j]))
        x = fw.make_dual(lib.tensor([1.0, -2.0]), lib.tensor([1.0, 0.5]))
        tangent = fw.unpack_dual(COMPLEX_OPS[name](lib, z, x)).tangent.detach()
        return (tangent.resolve_conj() if lib is not tg else tangent).numpy()


@pytest.mark.torch
@pytest.mark.parametrize("name", sorted(COMPLEX_OPS))
def test_complex_tangents_match_torch(name):
    import torch
    np.testing.assert_allclose(_complex_op(tg, name), _complex_op(torch, name), rtol=1e-6, atol=1e-7)


def test_complex_values_through_a_real_only_rule_are_refused():
    with fwAD.dual_level():
        z = fwAD.make_dual(tg.tensor([1 + 2j]), tg.tensor([1j]))
        with pytest.raises(NotImplementedError, match="forward AD through relu: the rule for 'relu' is not written for complex"):
            TABLE["relu"](z)
