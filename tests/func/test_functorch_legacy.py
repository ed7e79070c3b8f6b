"""The functorch package's API on tracegrad (``tracegrad._functorch``, what ``import
functorch`` loads with tracegrad in torch's place): the deprecated transform names,
make_functional(_with_buffers), combine_state_for_ensemble, functionalize and make_fx --
against real functorch on the same weights, and against hand formulas without torch."""
import subprocess
import sys
import warnings

import numpy as np
import pytest

import tracegrad as tg
from tracegrad._functorch import deprecated as ft
from tracegrad._functorch.make_functional import FunctionalModule, FunctionalModuleWithBuffers
from tracegrad._functorch.python_key import make_fx

RNG = np.random.default_rng(7)
X = RNG.standard_normal((4, 3)).astype(np.float32)


def quiet(fn, *args, **kwargs):
    """Call a deprecated name with its FutureWarning silenced (tested separately)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        return fn(*args, **kwargs)


def close(a, b, rtol=1e-5, atol=1e-6):
    np.testing.assert_allclose(np.asarray(a.detach().numpy()), np.asarray(b.detach().numpy()), rtol=rtol, atol=atol)


def net(lib, norm=False):
    layers = [lib.nn.Linear(3, 5), lib.nn.Tanh()]
    if norm:
        layers.append(lib.nn.BatchNorm1d(5))
    return lib.nn.Sequential(*layers, lib.nn.Linear(5, 2))


def tied(lib):
    class Tied(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = lib.nn.Linear(3, 3)
            self.b = lib.nn.Linear(3, 3)
            self.b.weight = self.a.weight

        def forward(self, x):
            return self.b(self.a(x).tanh())
    return Tied()


def twin(build):
    """(tracegrad model, torch model) with the torch model's weights and buffers."""
    import torch
    tm = build(torch)
    m = build(tg)
    state = {k: tg.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()}
    m.load_state_dict(state)
    return m, tm


# ---- the deprecated transform names ----------------------------------------------------------

def f(x):
    return (x.sin() * x).sum(0)


def scalar_f(x):
    return (x.sin() * x).sum()


@pytest.mark.torch
@pytest.mark.parametrize("api", ["grad", "grad_and_value", "vjp", "jvp", "vmap", "jacrev", "jacfwd", "hessian"])
def test_deprecated_transforms_match_functorch(api):
    import functorch
    import torch
    calls = {
        "grad": lambda lib, m, x: m.grad(scalar_f)(x),
        "grad_and_value": lambda lib, m, x: m.grad_and_value(scalar_f)(x),
        "vjp": lambda lib, m, x: m.vjp(f, x)[1](lib.ones(3)),
        "jvp": lambda lib, m, x: m.jvp(f, (x,), (lib.ones(4, 3),)),
        "vmap": lambda lib, m, x: m.vmap(lambda r: (r.sin() * r).sum())(x),
        "jacrev": lambda lib, m, x: m.jacrev(f)(x),
        "jacfwd": lambda lib, m, x: m.jacfwd(f)(x),
        "hessian": lambda lib, m, x: m.hessian(lambda v: (v.sin() * v).sum())(x[0]),
    }
    ours = quiet(calls[api], tg, ft, tg.tensor(X))
    theirs = quiet(calls[api], torch, functorch, torch.tensor(X))
    ours = ours if isinstance(ours, tuple) else (ours,)
    theirs = theirs if isinstance(theirs, tuple) else (theirs,)
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        close(a, b)


@pytest.mark.torch
@pytest.mark.parametrize("api, call", [
    ("grad", lambda m, lib: m.grad(scalar_f)),
    ("vmap", lambda m, lib: m.vmap(scalar_f)),
    ("make_functional", lambda m, lib: m.make_functional(net(lib))),
    ("combine_state_for_ensemble", lambda m, lib: m.combine_state_for_ensemble([net(lib)])),
])
def test_deprecation_warning_matches_torch(api, call):
    import functorch
    import torch
    with pytest.warns(FutureWarning) as ours:
        call(ft, tg)
    with pytest.warns(FutureWarning) as theirs:
        call(functorch, torch)
    assert str(ours[0].message) == str(theirs[0].message)
    assert f"`functorch.{api}` is deprecated" in str(ours[0].message)
    assert ours[0].filename == __file__  # attributed to the caller, as torch's stacklevel=3


def test_deprecated_names_warn_on_every_call_and_name_the_new_api():
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        ft.grad(scalar_f)
        ft.grad(scalar_f)
        ft.make_functional_with_buffers(net(tg))
    assert [x.category for x in w] == [FutureWarning] * 3
    assert "Please use `torch.func.grad` instead" in str(w[0].message)
    assert "Please use `torch.func.functional_call` instead" in str(w[2].message)
    assert "\n" not in str(w[0].message)
    assert ".. warning::" in ft.jvp.__doc__ and "functorch.jvp" in ft.jvp.__doc__


def test_deprecated_jvp_equals_hand_formula():
    x, t = tg.tensor(X), tg.tensor(RNG.standard_normal((4, 3)).astype(np.float32))
    out, tangent = quiet(ft.jvp, lambda v: v.sin() * v, (x,), (t,))
    close(out, x.sin() * x)
    close(tangent, (x.cos() * x + x.sin()) * t)


# ---- make_functional / make_functional_with_buffers ------------------------------------------

@pytest.mark.torch
@pytest.mark.parametrize("build", [net, tied], ids=["mlp", "tied"])
def test_make_functional_matches_torch(build):
    import functorch
    import torch
    m, tm = twin(build)
    func, params = quiet(ft.make_functional, m)
    tfunc, tparams = quiet(functorch.make_functional, tm)
    assert isinstance(func, FunctionalModule) and isinstance(func, tg.nn.Module)
    assert [tuple(p.shape) for p in params] == [tuple(p.shape) for p in tparams]
    assert [p.requires_grad for p in params] == [p.requires_grad for p in tparams]
    assert func.param_names == tfunc.param_names
    close(func(params, tg.tensor(X)), tfunc(tparams, torch.tensor(X)))

    def loss(lib, fn):
        return lambda p, x: (fn(p, x) ** 2).mean()
    grads = quiet(ft.grad, loss(tg, func))(params, tg.tensor(X))
    tgrads = quiet(functorch.grad, loss(torch, tfunc))(tparams, torch.tensor(X))
    for a, b in zip(grads, tgrads):
        close(a, b)
    tangents = tuple(tg.ones_like(p) for p in params)
    out, jv = quiet(ft.jvp, lambda p: func(p, tg.tensor(X)), (params,), (tangents,))
    tout, tjv = quiet(functorch.jvp, lambda p: tfunc(p, torch.tensor(X)), (tparams,),
                      (tuple(torch.ones_like(p) for p in tparams),))
    close(out, tout)
    close(jv, tjv)


@pytest.mark.torch
@pytest.mark.parametrize("train", [True, False], ids=["train", "eval"])
def test_make_functional_with_buffers_matches_torch(train):
    import functorch
    import torch
    m, tm = twin(lambda lib: net(lib, norm=True))
    m.train(train)
    tm.train(train)
    func, params, buffers = quiet(ft.make_functional_with_buffers, m)
    tfunc, tparams, tbuffers = quiet(functorch.make_functional_with_buffers, tm)
    assert isinstance(func, FunctionalModuleWithBuffers)
    assert (func.param_names, func.buffer_names) == (tfunc.param_names, tfunc.buffer_names)
    assert len(buffers) == len(tbuffers) == 3
    close(func(params, buffers, tg.tensor(X)), tfunc(tparams, tbuffers, torch.tensor(X)))
    for a, b in zip(buffers, tbuffers):  # running stats updated in the given buffers (train)
        close(a, b)
    if train:
        return  # (torch's jvp refuses BatchNorm's in-place update of the captured buffers)
    tangents = tuple(tg.ones_like(p) for p in params)
    _, jv = quiet(ft.jvp, lambda p: func(p, buffers, tg.tensor(X)), (params,), (tangents,))
    _, tjv = quiet(functorch.jvp, lambda p: tfunc(p, tbuffers, torch.tensor(X)), (tparams,),
                   (tuple(torch.ones_like(p) for p in tparams),))
    close(jv, tjv, rtol=1e-4, atol=1e-5)


@pytest.mark.torch
def test_make_functional_refuses_buffers_like_torch():
    import functorch
    import torch
    with pytest.raises(RuntimeError) as theirs:
        quiet(functorch.make_functional, net(torch, norm=True))
    with pytest.raises(RuntimeError) as ours:
        quiet(ft.make_functional, net(tg, norm=True))
    assert str(ours.value) == str(theirs.value)


def test_make_functional_params_are_copies_and_tracking_flag():
    m = net(tg)
    func, params = quiet(ft.make_functional, m)
    originals = list(m.parameters())
    assert all(p is not q for p, q in zip(params, originals))
    assert all(p.requires_grad for p in params)
    x = tg.tensor(X)
    close(func(params, x), m(x))
    with tg.no_grad():
        originals[0].add_(1.0)  # the original model no longer affects func
    assert not np.allclose(func(params, x).detach().numpy(), m(x).detach().numpy())
    _, frozen = quiet(ft.make_functional, m, disable_autograd_tracking=True)
    assert not any(p.requires_grad for p in frozen)


def test_functional_linear_grad_and_jvp_equal_hand_formulas():
    m = tg.nn.Linear(3, 2)
    func, params, buffers = quiet(ft.make_functional_with_buffers, m)
    assert buffers == ()
    w, b = params
    x = tg.tensor(X)
    gw, gb = quiet(ft.grad, lambda p: func(p, buffers, x).sum())(params)
    close(gw, tg.ones(2, 4) @ x)
    close(gb, tg.full((2,), 4.0))
    tw, tb = tg.tensor(RNG.standard_normal((2, 3)).astype(np.float32)), tg.ones(2)
    out, jv = quiet(ft.jvp, lambda p: func(p, buffers, x), (params,), ((tw, tb),))
    close(out, x @ w.T + b)
    close(jv, x @ tw.T + tb)


def test_functional_call_with_too_few_tensors_is_an_error():
    func, params = quiet(ft.make_functional, tg.nn.Linear(3, 2))
    with pytest.raises(RuntimeError, match=r"expects 2 parameter/buffer tensors \(weight, bias\), got 1"):
        func(params[:1], tg.tensor(X))
    funcb, p, b = quiet(ft.make_functional_with_buffers, net(tg, norm=True))
    with pytest.raises(RuntimeError, match="expects 6 parameters and 3 buffers, got 6 and 2"):
        funcb(p, b[:2], tg.tensor(X))


# ---- combine_state_for_ensemble ---------------------------------------------------------------

def ensemble_by_loop(models, x):
    return tg.stack([m(x) for m in models])


def test_combine_state_for_ensemble_vmap_equals_loop():
    tg.manual_seed(0)
    models = [net(tg, norm=True).eval() for _ in range(3)]
    func, params, buffers = quiet(ft.combine_state_for_ensemble, models)
    assert [tuple(p.shape) for p in params] == [(3,) + tuple(p.shape) for p in models[0].parameters()]
    assert not any(p.requires_grad for p in params)  # stacked then detached, as torch
    x = tg.tensor(X)
    close(quiet(ft.vmap, func, (0, 0, None))(params, buffers, x), ensemble_by_loop(models, x))


@pytest.mark.torch
def test_combine_state_for_ensemble_matches_torch():
    import functorch
    import torch
    pairs = [twin(lambda lib: net(lib, norm=True)) for _ in range(3)]
    func, params, buffers = quiet(ft.combine_state_for_ensemble, [m for m, _ in pairs])
    tfunc, tparams, tbuffers = quiet(functorch.combine_state_for_ensemble, [t for _, t in pairs])
    assert [p.requires_grad for p in params] == [p.requires_grad for p in tparams]
    for a, b in zip(params + buffers, tparams + tbuffers):
        close(a, b)
    out = quiet(ft.vmap, func, (0, 0, None))(params, buffers, tg.tensor(X))
    tout = quiet(functorch.vmap, tfunc, (0, 0, None))(tparams, tbuffers, torch.tensor(X))
    close(out, tout)


@pytest.mark.torch
@pytest.mark.parametrize("case", ["empty", "classes", "modes"])
def test_combine_state_for_ensemble_errors_match_torch(case):
    import functorch
    import torch

    def models(lib):
        if case == "empty":
            return []
        if case == "classes":
            return [net(lib), lib.nn.Linear(3, 2)]
        return [net(lib).train(), net(lib).eval()]
    with pytest.raises(RuntimeError) as theirs:
        quiet(functorch.combine_state_for_ensemble, models(torch))
    with pytest.raises(RuntimeError) as ours:
        quiet(ft.combine_state_for_ensemble, models(tg))
    assert str(ours.value) == str(theirs.value)
    assert str(ours.value).startswith("combine_state_for_ensemble: Expected")


# ---- functionalize, make_fx -----------------------------------------------------------------

def mutating(a):
    b = a.view(-1)
    b.mul_(2)
    return b + 1, b, a


def mutate_then_view(a):
    a.view(-1)[:2].mul_(2)
    return a, a.view(-1), a * 1


def view_only(a, b):
    b.add_(1)  # another input's mutation does not make a's views copies
    return a, a.view(-1), b


@pytest.mark.torch
@pytest.mark.parametrize("fn", [mutating, mutate_then_view, view_only])
@pytest.mark.parametrize("remove", ["mutations", "mutations_and_views"])
def test_functionalize_matches_torch(fn, remove):
    import functorch
    import torch
    nargs = 2 if fn is view_only else 1
    xs, txs = [tg.tensor(X) for _ in range(nargs)], [torch.tensor(X) for _ in range(nargs)]
    outs = quiet(ft.functionalize, fn, remove=remove)(*xs)
    touts = quiet(functorch.functionalize, fn, remove=remove)(*txs)
    for a, b in zip(xs + list(outs), txs + list(touts)):  # input mutations and output values
        close(a, b)
    for o, t in zip(outs, touts):  # which outputs are an input, or share its memory
        assert [o is x for x in xs] == [t is x for x in txs]
        assert [o.data_ptr() == x.data_ptr() for x in xs] == [t.data_ptr() == x.data_ptr() for x in txs]


@pytest.mark.torch
def test_functionalize_remove_error_matches_torch():
    import functorch
    with pytest.raises(RuntimeError) as theirs:
        quiet(functorch.functionalize, mutating, remove="views")
    with pytest.raises(RuntimeError) as ours:
        quiet(ft.functionalize, mutating, remove="views")
    assert str(ours.value) == str(theirs.value)


def test_functionalize_keeps_values_mutations_and_gradients():
    x = tg.tensor(X)
    out, view, same = quiet(ft.functionalize, mutating)(x)
    close(x, tg.tensor(X) * 2)
    close(out, tg.tensor(X).reshape(-1) * 2 + 1)
    assert same is not x and view._base is None  # x was mutated: both come back as copies
    close(same, x)
    unmutated = tg.tensor(X)
    same, view = quiet(ft.functionalize, lambda a: (a, a.view(-1)))(unmutated)
    assert same is unmutated and view._base is unmutated
    w = tg.tensor(X, requires_grad=True)
    (g,) = tg.autograd.grad(quiet(ft.functionalize, lambda v: (v * 3).add_(1))(w).sum(), w)
    close(g, tg.full((4, 3), 3.0))
    from tracegrad._functorch.eager_transforms import functionalize
    assert tg.func.functionalize is functionalize


def test_make_fx_imports_and_refuses():
    with pytest.raises(NotImplementedError, match="make_fx: tracegrad has no torch.fx graphs"):
        make_fx(scalar_f)


# ---- the functorch package itself on tracegrad ------------------------------------------------

@pytest.mark.torch
def test_import_functorch_with_tracegrad_as_torch():
    """``import functorch`` (torch's package) in a fresh interpreter where ``torch`` and its
    ``torch._functorch.*`` modules are tracegrad's, as the programs' shim arranges."""
    code = """
import importlib, sys, warnings
import tracegrad
sys.modules["torch"] = tracegrad
for name in ("_functorch", "_functorch.deprecated", "_functorch.make_functional", "_functorch.python_key"):
    sys.modules["torch." + name] = importlib.import_module("tracegrad." + name)
import functorch as ft
warnings.simplefilter("ignore", FutureWarning)
x = tracegrad.ones(3)
out, t = ft.jvp(lambda v: v * v, (x,), (tracegrad.ones(3),))
func, params, buffers = ft.make_functional_with_buffers(tracegrad.nn.Linear(3, 2))
assert type(t) is tracegrad.Tensor and t.tolist() == [2.0, 2.0, 2.0]
assert ft.__version__ == tracegrad.__version__ and ft.FunctionalModuleWithBuffers is type(func)
print("ok")
"""
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr[-2000:]
    assert res.stdout.strip() == "ok"
