"""Silent wrong answers found by a review of vmap: code outside the batching rules that
read a BatchedTensor's ``_data`` (sample 0 only) as its value. Each case is checked
against a loop over the samples (and against torch.func.vmap where torch runs it), or
for the error that names the construct."""
import re

import numpy as np
import pytest

import tracegrad as tg
import tracegrad.nn.functional as F
from tracegrad.func import grad, vmap

pytestmark = pytest.mark.filterwarnings("ignore:There is a performance drop")


def _x(seed=0, shape=(3, 4)):
    return tg.tensor(np.random.default_rng(seed).standard_normal(shape))


def _loop(fn, *batches):
    outs = [fn(*sample) for sample in zip(*batches)]
    if isinstance(outs[0], tuple):
        return tuple(tg.stack([o[k] for o in outs]) for k in range(len(outs[0])))
    return tg.stack(outs)


def _close(a, b):
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-10, atol=1e-12)


def _torch(fn, *arrays, **kw):
    import torch
    return torch.func.vmap(fn, **kw)(*[torch.tensor(a.numpy()) for a in arrays]).numpy()


# -- saved-tensor hooks (checkpoint) under vmap(grad) ------------------------------------------

def test_checkpoint_inside_per_sample_grad_recomputes_every_sample():
    from tracegrad.utils.checkpoint import checkpoint
    x = _x(1)

    def loss(a):
        return checkpoint(lambda b: (b.sin() * b).sum(), a, use_reentrant=False)
    _close(vmap(grad(loss))(x), x.sin() + x * x.cos())
    _close(vmap(grad(loss))(x), _loop(grad(loss), x))


def test_saved_tensor_hooks_inside_per_sample_grad_unpack_every_sample():
    x = _x(2)
    seen = []

    def loss(a):
        with tg.autograd.graph.saved_tensors_hooks(lambda t: seen.append(1) or t * 1, lambda t: t):
            return (a * a * a).sum()
    _close(vmap(grad(loss))(x), 3 * x * x)
    assert seen  # (the hooks ran)


# -- pooling that searches the values in array code --------------------------------------------

def test_adaptive_max_pool_searches_every_sample():
    x = _x(3, (3, 2, 3, 5, 5))
    fn = lambda v: F.adaptive_max_pool2d(v, (2, 3), return_indices=True)
    for got, want in zip(vmap(fn)(x), _loop(fn, x)):
        _close(got, want)
    one_d = lambda v: F.adaptive_max_pool1d(v, 3, return_indices=True)[1]
    _close(vmap(one_d)(x[:, 0, 0]), _loop(one_d, x[:, 0, 0]))


def test_adaptive_max_pool_in_nested_vmaps_and_per_sample_grads():
    a, b = _x(4, (2, 1, 4, 4)), _x(5, (3, 1, 4, 4))
    fn = lambda u, v: F.adaptive_max_pool2d(u * v, 2, return_indices=True)[1]
    got = vmap(lambda u: vmap(lambda v: fn(u, v))(b))(a)
    want = tg.stack([tg.stack([fn(u, v) for v in b]) for u in a])
    assert tg.equal(got, want)
    loss = lambda v: F.adaptive_max_pool2d(v * v, 2).sum()
    _close(vmap(grad(loss))(b), _loop(grad(loss), b))


def test_fractional_max_pool_searches_every_sample():
    x = _x(6, (3, 1, 2, 5, 5))
    fixed = tg.full((1, 2, 2), 0.5, dtype=tg.float64)
    fn = lambda v: F.fractional_max_pool2d(v, 2, output_size=(2, 2), _random_samples=fixed, return_indices=True)
    for got, want in zip(vmap(fn)(x), _loop(fn, x)):
        _close(got, want)
    samples = tg.tensor([0.1, 0.5, 0.9], dtype=tg.float64).reshape(3, 1, 1, 1).expand(3, 1, 2, 2)
    fn2 = lambda v, u: F.fractional_max_pool2d(v, 2, output_size=(2, 2), _random_samples=u)
    _close(vmap(fn2)(x, samples), _loop(fn2, x, samples))


@pytest.mark.torch
def test_pooling_indices_match_torch():
    import torch
    x = _x(7, (3, 1, 2, 5, 5))
    got = vmap(lambda v: F.adaptive_max_pool2d(v, 2, return_indices=True)[1])(x)
    want = _torch(lambda v: torch.nn.functional.adaptive_max_pool2d(v, 2, return_indices=True)[1], x)
    np.testing.assert_array_equal(got.numpy(), want)


# -- in-place shape changes ---------------------------------------------------------------------

@pytest.mark.parametrize("change", [
    lambda z: z.reshape(2, 2).t_(),
    lambda z: z.reshape(2, 2).transpose_(0, 1),
    lambda z: z.reshape(2, 2).swapaxes_(0, 1),
    lambda z: z.unsqueeze_(0),
    lambda z: z.reshape(1, 4).squeeze_(0),
])
def test_in_place_shape_changes_change_every_sample(change):
    x = _x(8)
    fn = lambda v: change(v.clone()) + 0
    got = vmap(fn)(x)
    _close(got, _loop(fn, x))
    assert tuple(got.shape) == (3,) + tuple(fn(x[0]).shape)


# -- conversions that would take sample 0 -------------------------------------------------------

def test_legacy_tensor_constructor_of_a_batched_tensor_is_refused():
    with pytest.raises(RuntimeError, match=re.escape("vmap: Tensor(t) of a Tensor inside vmap is not supported")):
        vmap(lambda v: tg.Tensor(v) * 1)(_x())
    _close(vmap(lambda v: tg.DoubleTensor(v) * 2)(_x()), 2 * _x())  # (the typed ones alias: fine)


def test_parameter_of_a_batched_tensor_is_refused():
    with pytest.raises(RuntimeError, match=re.escape("vmap: Parameter() of a Tensor inside vmap is not supported")):
        vmap(lambda v: tg.nn.Parameter(v) * 1)(_x())


def _set_data(target, value):
    target.data = value
    return target * 1


@pytest.mark.parametrize("assign", [
    lambda v: _set_data(tg.zeros(4, dtype=tg.float64), v),
    lambda v: _set_data(v.clone(), tg.ones(4, dtype=tg.float64)),
    lambda v: _set_data(v.clone(), v * 2),
])
def test_data_assignment_with_batched_tensors_is_refused_as_torch(assign):
    with pytest.raises(RuntimeError, match=re.escape("mutating directly with `.data` under vmap transform is not allowed.")):
        vmap(assign)(_x())
    # (an unbatched tensor's .data set to an unbatched one is fine, as in torch)
    _close(vmap(lambda v: _set_data(tg.zeros(4, dtype=tg.float64), tg.ones(4, dtype=tg.float64)) * v)(_x()), _x())


# -- optimizers ----------------------------------------------------------------------------------

def _step(make, v, closure=False):
    p = tg.nn.Parameter(tg.zeros(4, dtype=tg.float64))
    opt = make([p])
    if closure:
        def again():
            p.grad = v * 1
            return v.sum()
        opt.step(again)
    else:
        p.grad = v
        opt.step()
    return p * 1


@pytest.mark.parametrize("make", [lambda ps: tg.optim.SGD(ps, lr=1.0, momentum=0.9),
                                  lambda ps: tg.optim.Adam(ps, lr=1.0),
                                  lambda ps: tg.optim.LBFGS(ps, lr=1.0)])
@pytest.mark.parametrize("closure", [False, True])
def test_optimizer_steps_over_batched_gradients_are_refused(make, closure):
    if isinstance(make([tg.zeros(1, requires_grad=True)]), tg.optim.LBFGS) and not closure:
        pytest.skip("LBFGS needs a closure")
    with pytest.raises(RuntimeError, match=r"vmap: \w+\.step\(\) over a parameter or gradient batched by vmap"):
        vmap(lambda v: _step(make, v, closure))(_x())


def test_optimizer_steps_over_unbatched_parameters_and_user_optimizers_still_run():
    x = _x(9)
    _close(vmap(lambda v: _step(lambda ps: tg.optim.SGD(ps, lr=1.0), tg.ones(4, dtype=tg.float64)) * v)(x), -x)

    class Plain(tg.optim.Optimizer):  # a user's update through tensor operations batches
        def __init__(self, params):
            super().__init__(params, {})

        def step(self):
            for group in self.param_groups:
                for p in group["params"]:
                    p.sub_(p.grad)

    def user_step(v):
        p = v.clone()
        opt = Plain([p])
        p.grad = v * 2
        opt.step()
        return p
    _close(vmap(user_step)(x), -x)


# -- random draws with per-sample arguments -------------------------------------------------------

def test_normal_with_per_sample_mean_and_std():
    x = _x(10)
    for randomness in ("same", "different"):
        _close(vmap(lambda v: tg.normal(v, v.abs() * 0), randomness=randomness)(x), x)
        _close(vmap(lambda v: tg.normal(v, 0.0), randomness=randomness)(x), x)
    noise = vmap(lambda v: tg.normal(v, 1.0), randomness="different")(tg.zeros(3, 2000, dtype=tg.float64))
    assert not tg.allclose(noise[0], noise[1])
    assert abs(float(noise.std()) - 1) < 0.05
    same = vmap(lambda v: tg.normal(v, 1.0), randomness="same")(tg.zeros(3, 50, dtype=tg.float64))
    _close(same[1], same[0])


# -- linear algebra in array code -----------------------------------------------------------------

def _singular_second():
    a = np.random.default_rng(11).standard_normal((3, 2, 2)) + 3 * np.eye(2)
    a[1] = [[1.0, 2.0], [2.0, 4.0]]
    return tg.tensor(a)


@pytest.mark.parametrize("fn", [
    lambda a: tg.linalg.lu_factor_ex(a).info,
    lambda a: tg.linalg.inv_ex(a),
    lambda a: tg.linalg.solve_ex(a, a[0]),
    lambda a: tg.linalg.cholesky_ex(a @ a.mT),
    lambda a: tg.geqrf(a),
    lambda a: tg.linalg.ldl_factor_ex(a @ a.mT + tg.eye(2, dtype=tg.float64)),
    lambda a: tg.linalg.ldl_solve(*tg.linalg.ldl_factor(a @ a.mT + tg.eye(2, dtype=tg.float64)), a),
])
def test_lapack_array_code_runs_on_every_sample(fn):
    a = _singular_second()
    got, want = vmap(fn)(a), _loop(fn, a)
    got, want = (got, want) if isinstance(got, tuple) else ((got,), (want,))
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-10, atol=1e-12, equal_nan=True)
    # singular matrices may come first: a loop over the other order agrees as well
    flip = a.flip(0)
    got2, want2 = vmap(fn)(flip), _loop(fn, flip)
    got2, want2 = (got2, want2) if isinstance(got2, tuple) else ((got2,), (want2,))
    for g, w in zip(got2, want2):
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-10, atol=1e-12, equal_nan=True)


def test_lu_factor_raises_for_any_singular_sample_as_torch():
    with pytest.raises(RuntimeError, match=re.escape("torch.linalg.lu_factor: (Batch element 1): U[2,2] is zero")):
        vmap(lambda a: tg.linalg.lu_factor(a)[0])(_singular_second())


# -- autograd inside vmap: custom Functions and hooks that return per-sample values --------------

class _ExpSavingOutput(tg.autograd.Function):
    generate_vmap_rule = True

    @staticmethod
    def forward(a):
        return a.exp()

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(output)

    @staticmethod
    def backward(ctx, g):
        out, = ctx.saved_tensors
        return g * out


@pytest.mark.torch
def test_custom_function_saving_its_output_under_per_sample_grad():
    import torch

    class TorchExp(torch.autograd.Function):
        generate_vmap_rule = True
        forward = staticmethod(lambda a: a.exp())

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(output)

        @staticmethod
        def backward(ctx, g):
            return g * ctx.saved_tensors[0]
    x = _x(12)
    got = vmap(grad(lambda a: _ExpSavingOutput.apply(a).sum()))(x)
    _close(got, x.exp())
    want = _torch(torch.func.grad(lambda a: TorchExp.apply(a).sum()), x)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)


def _hooked_grad(v, where):
    w = tg.tensor([0.5, -1.0, 2.0, 0.25], dtype=tg.float64, requires_grad=True)
    z = (w * 2).sin()
    if where == "tensor":
        z.register_hook(lambda g: g * v)
    elif where == "leaf":
        w.register_hook(lambda g: g * v)
    elif where == "prehook":
        z.grad_fn.register_prehook(lambda go: (go[0] * v,))
    elif where == "posthook":
        z.grad_fn.register_hook(lambda gi, go: (gi[0] * v,))
    return tg.autograd.grad(z.sum(), w)[0]


@pytest.mark.parametrize("where", ["tensor", "leaf", "prehook", "posthook"])
def test_hooks_returning_per_sample_gradients_to_autograd_grad(where):
    x = _x(13)
    _close(vmap(lambda v: _hooked_grad(v, where))(x), _loop(lambda v: _hooked_grad(v, where), x))


def test_custom_backward_returning_per_sample_gradients_to_autograd_grad():
    def fn(v):
        class Scale(tg.autograd.Function):
            @staticmethod
            def forward(ctx, a):
                return a * 2

            @staticmethod
            def backward(ctx, g):
                return g * v
        w = tg.ones(4, dtype=tg.float64, requires_grad=True)
        return tg.autograd.grad(Scale.apply(w).sum(), w)[0]
    x = _x(14)
    _close(vmap(fn)(x), x)


@pytest.mark.parametrize("create_graph", [False, True])
def test_backward_accumulating_per_sample_values_into_a_plain_grad_is_refused(create_graph):
    def fn(v):
        w = tg.ones(4, dtype=tg.float64, requires_grad=True)
        z = w * 2
        z.register_hook(lambda g: g * v)
        z.sum().backward(create_graph=create_graph)
        return w.grad
    with pytest.raises(RuntimeError, match=re.escape("backward() called inside a functorch transform")):
        vmap(fn)(_x())
    # (a backward of an unbatched graph inside vmap still runs, as in torch)
    def plain(v):
        w = tg.ones(4, dtype=tg.float64, requires_grad=True)
        (w * 3).sum().backward()
        return w.grad * v
    _close(vmap(plain)(_x()), 3 * _x())


@pytest.mark.parametrize("write", [lambda a: a.clone().clamp_(min=0), lambda a: a.sin().mul_(a),
                                   lambda a: a.clone().masked_fill_(a > 0, 1.0).exp_()])
def test_gradient_through_vmap_of_in_place_writes(write):
    x = _x(15)
    got = grad(lambda A: vmap(write)(A).sin().sum())(x)
    want = grad(lambda A: _loop(write, A).sin().sum())(x)
    _close(got, want)


# -- randomness of nested vmaps -------------------------------------------------------------------

def _nested_draws(outer, inner):
    xs = tg.ones(2, 3, 50, dtype=tg.float64)
    return vmap(vmap(lambda v: v * tg.rand(50, dtype=tg.float64), randomness=inner), randomness=outer)(xs)


@pytest.mark.parametrize("outer", ["same", "different"])
@pytest.mark.parametrize("inner", ["same", "different"])
def test_nested_vmaps_draw_per_sample_of_every_different_level(outer, inner):
    out = _nested_draws(outer, inner)
    differs = lambda a, b: bool((a != b).any())
    assert differs(out[0, 0], out[0, 1]) == (inner == "different")
    assert differs(out[0, 0], out[1, 0]) == (outer == "different")
    assert differs(out[0, 1], out[1, 1]) == (outer == "different")


@pytest.mark.torch
@pytest.mark.parametrize("outer", ["same", "different"])
@pytest.mark.parametrize("inner", ["same", "different"])
def test_nested_randomness_pattern_matches_torch(outer, inner):
    import torch
    xs = torch.ones(2, 3, 50, dtype=torch.float64)
    want = torch.func.vmap(torch.func.vmap(lambda v: v * torch.rand(50, dtype=torch.float64), randomness=inner),
                           randomness=outer)(xs)
    got = _nested_draws(outer, inner)
    pattern = lambda o: [bool((o[i, j] != o[k, m]).any()) for i, j, k, m in ((0, 0, 0, 1), (0, 0, 1, 0), (0, 1, 1, 1))]
    assert pattern(got) == pattern(want)


def test_random_fill_under_an_outer_different_vmap_is_refused():
    xs = tg.ones(2, 3, 4, dtype=tg.float64)
    with pytest.raises(NotImplementedError, match="has no per-sample version"):
        vmap(vmap(lambda v: v.clone().uniform_(), randomness="same"), randomness="different")(xs)


# -- factories from a batched tensor are batched, as in torch ------------------------------------

@pytest.mark.parametrize("make", [
    lambda v: tg.zeros_like(v).copy_(v),
    lambda v: tg.empty_like(v).copy_(v),
    lambda v: tg.ones_like(v).mul_(v),
    lambda v: tg.full_like(v, 2.0).mul_(v) / 2,
    lambda v: v.new_zeros(4).copy_(v),
    lambda v: v.new_empty((4,)).copy_(v),
    lambda v: v.new_ones(4).mul_(v),
    lambda v: v.new_full((4,), 2.0).mul_(v) / 2,
    lambda v: _setitem_at(tg.zeros_like(v), slice(1, 3), v[:2]) + v,
])
def test_like_and_new_factories_take_per_sample_writes(make):
    x = _x(16)
    _close(vmap(make)(x), _loop(make, x))
    nested = vmap(lambda u: vmap(make)(u))(x.reshape(3, 1, 4).expand(3, 2, 4) * tg.tensor([1.0, 2.0]).reshape(1, 2, 1))
    _close(nested[:, 1], _loop(make, 2 * x))


def _setitem_at(t, index, value):
    t[index] = value
    return t


def test_like_factories_under_per_sample_grad_and_requires_grad():
    x = _x(17)
    _close(vmap(grad(lambda a: (tg.zeros_like(a).copy_(a.sin()) * a).sum()))(x), x.sin() + x * x.cos())
    with pytest.raises(RuntimeError, match=re.escape("requires_grad_() on a Tensor inside vmap")):
        vmap(lambda v: tg.zeros_like(v, requires_grad=True))(x)
    assert tg.zeros_like(x[0], requires_grad=True).requires_grad  # (outside vmap as before)


@pytest.mark.torch
def test_like_factories_match_torch():
    import torch
    x = _x(18)
    got = vmap(lambda v: _setitem_at(tg.zeros_like(v), 0, 5.0) + v.new_ones(4) * v)(x)
    want = _torch(lambda v: _setitem_at(torch.zeros_like(v), 0, 5.0) + v.new_ones(4) * v, x)
    np.testing.assert_allclose(got.numpy(), want)


def test_chunked_vmap_with_same_randomness_draws_once():
    xs = tg.zeros(5, 6, dtype=tg.float64)
    draw = lambda v: v + tg.rand(6, dtype=tg.float64)
    tg.manual_seed(3)
    chunked = vmap(draw, randomness="same", chunk_size=2)(xs)
    after_chunked = tg.rand(2)
    tg.manual_seed(3)
    whole = vmap(draw, randomness="same")(xs)
    after_whole = tg.rand(2)
    _close(chunked, whole)
    _close(after_chunked, after_whole)
    different = vmap(draw, randomness="different", chunk_size=2)(xs)
    assert all(bool((different[0] != different[k]).any()) for k in range(1, 5))


@pytest.mark.parametrize("bad_sample", [0, 1, 2])
def test_anomaly_detection_checks_every_sample_of_per_sample_grads(bad_sample):
    x = tg.tensor([[1.0, 2.0], [4.0, 3.0], [4.0, 5.0]])
    x[bad_sample, 0] = -1.0
    with pytest.warns(UserWarning, match="Error detected in SqrtBackward0"):
        with pytest.raises(RuntimeError, match=re.escape("Function 'SqrtBackward0' returned nan values in its 0th output.")):
            with tg.autograd.detect_anomaly():
                vmap(grad(lambda a: a.sqrt().sum()))(x)


def test_one_hot_checks_every_samples_classes():
    good = tg.tensor([[0, 1], [2, 1], [1, 0]])
    _close(vmap(lambda i: F.one_hot(i, 3))(good), _loop(lambda i: F.one_hot(i, 3), good))
    with pytest.raises(RuntimeError, match="Class values must be smaller than num_classes."):
        vmap(lambda i: F.one_hot(i, 3))(tg.tensor([[0, 1], [2, 5], [1, 0]]))
    with pytest.raises(RuntimeError, match="Class values must be non-negative."):
        vmap(lambda i: F.one_hot(i, 3))(tg.tensor([[0, 1], [2, -1], [1, 0]]))


def test_addmm_with_beta_zero_gives_writable_samples():
    x = _x(19, (3, 2, 2))
    m = _x(20, (2, 2))
    fn = lambda v: tg.addmm(v, m, m, beta=0).add_(v)
    _close(vmap(fn)(x), _loop(fn, x))


# -- per-sample tangents written into plain tensors (vmap over jvp, jacfwd) ----------------------

def _write_into_plain(a, how):
    z = tg.zeros(4, dtype=tg.float64)
    if how == "copy_":
        return z.copy_(a.sin())
    if how == "setitem":
        z[1:3] = a[:2] * 2
        return z * a
    return z.index_put_((tg.tensor([0, 3]),), a[1:3] ** 2)


@pytest.mark.parametrize("how", ["copy_", "setitem", "index_put_"])
def test_vmap_of_jvp_writing_into_a_plain_tensor(how):
    primal = tg.tensor([0.5, -1.0, 2.0, 0.25], dtype=tg.float64)
    tangents = _x(21)
    fn = lambda c: tg.func.jvp(lambda a: _write_into_plain(a, how), (primal,), (c,))[1]
    _close(vmap(fn)(tangents), _loop(fn, tangents))
    _close(tg.func.jacfwd(lambda a: _write_into_plain(a, how))(primal),
           tg.func.jacrev(lambda a: _write_into_plain(a, how))(primal))


@pytest.mark.torch
def test_vmap_of_jvp_writing_into_a_plain_tensor_matches_torch():
    import torch
    primal = [0.5, -1.0, 2.0, 0.25]
    tangents = _x(22)

    def torch_fn(c):
        def f(a):
            z = torch.zeros(4, dtype=torch.float64)
            z[1:3] = a[:2] * 2
            return z * a
        return torch.func.jvp(f, (torch.tensor(primal, dtype=torch.float64),), (c,))[1]
    got = vmap(lambda c: tg.func.jvp(lambda a: _write_into_plain(a, "setitem"), (tg.tensor(primal, dtype=tg.float64),),
                                     (c,))[1])(tangents)
    np.testing.assert_allclose(got.numpy(), _torch(torch_fn, tangents), rtol=1e-12)
