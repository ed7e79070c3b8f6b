"""Forward-mode AD and ``vmap`` combined: ``vmap(jvp)``, ``vmap(jacfwd)``, ``jacfwd(vmap)``,
``jvp(vmap)``, dual tensors entering and leaving vmap, in-place writes, forward over
reverse per sample. Each result is checked against a loop over the samples (the same
transform run on one sample at a time), and against ``torch.func`` where it answers."""
import warnings

import numpy as np
import pytest

import tracegrad as tg
import tracegrad.autograd.forward_ad as fwAD
from tracegrad.func import grad, jacfwd, jacrev, jvp, vmap

warnings.filterwarnings("ignore", message="There is a performance drop")


def _f(v):
    return (v.sin() * v).sum()


def _data(seed=0, shape=(3, 4)):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(shape), rng.standard_normal(shape)


def _loop(fn, *batches):
    """``fn`` on each sample, the results stacked (what vmap must equal)."""
    return tg.stack([fn(*sample) for sample in zip(*batches)])


def _close(a, b):
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-10, atol=1e-12)


def test_vmap_of_jvp_is_the_per_sample_jvp():
    x, t = (tg.tensor(a) for a in _data())
    got = vmap(lambda v, u: jvp(_f, (v,), (u,))[1])(x, t)
    _close(got, _loop(lambda v, u: jvp(_f, (v,), (u,))[1], x, t))
    # against the hand formula: d/dv sum(v sin v) = sin v + v cos v
    _close(got, ((x.sin() + x * x.cos()) * t).sum(1))


def test_vmap_of_jvp_with_ones_like_tangent():
    x = tg.tensor(_data()[0])
    got = vmap(lambda v: jvp(_f, (v,), (tg.ones_like(v),))[1])(x)
    _close(got, (x.sin() + x * x.cos()).sum(1))


def test_vmap_of_jvp_primal_output_and_aux():
    x, t = (tg.tensor(a) for a in _data(1))
    out, tan, aux = vmap(lambda v, u: jvp(lambda a: (a.cos() * 2, a.sum()), (v,), (u,), has_aux=True))(x, t)
    _close(out, x.cos() * 2)
    _close(tan, -x.sin() * 2 * t)
    _close(aux, x.sum(1))


def test_vmap_of_jacfwd_matches_vmap_of_jacrev_and_the_loop():
    x = tg.tensor(_data(2)[0])
    fwd = vmap(jacfwd(_f))(x)
    _close(fwd, vmap(jacrev(_f))(x))
    _close(fwd, _loop(jacfwd(_f), x))
    _close(fwd, x.sin() + x * x.cos())


def test_vmap_of_jacfwd_of_jacrev_is_the_per_sample_hessian():
    x = tg.tensor(_data(3)[0][:2, :3])
    got = vmap(jacfwd(jacrev(_f)))(x)
    _close(got, _loop(jacfwd(jacrev(_f)), x))
    diag = 2 * x.cos() - x * x.sin()
    _close(got, tg.stack([tg.diag(d) for d in diag]))


def test_jacfwd_of_vmap():
    x = tg.tensor(_data(4)[0][:2, :3])
    got = jacfwd(vmap(tg.sin))(x)
    _close(got, jacrev(vmap(tg.sin))(x))
    assert got.shape == (2, 3, 2, 3)


def test_jvp_of_vmap():
    x, t = (tg.tensor(a) for a in _data(5))
    _, got = jvp(vmap(_f), (x,), (t,))
    _close(got, ((x.sin() + x * x.cos()) * t).sum(1))


def test_batched_tangents_of_one_primal():
    """torch's jacfwd pattern: one primal, a batch of tangents."""
    x, t = (tg.tensor(a) for a in _data(6))
    got = vmap(lambda u: jvp(_f, (x[0],), (u,))[1])(t)
    _close(got, _loop(lambda u: jvp(_f, (x[0],), (u,))[1], t))


def test_dual_tensor_entering_vmap():
    x, t = (tg.tensor(a) for a in _data(7))
    with fwAD.dual_level():
        y = vmap(lambda v: v.exp() * v[0])(fwAD.make_dual(x, t))
        tangent = fwAD.unpack_dual(y).tangent
    want = x.exp() * t * x[:, :1] + x.exp() * t[:, :1]
    _close(tangent, want)


def test_dual_tensor_and_dual_constant_in_vmap():
    x, t = (tg.tensor(a) for a in _data(8))
    c, tc = tg.ones(4, dtype=tg.float64), tg.full((4,), 3.0, dtype=tg.float64)
    with fwAD.dual_level():
        y = vmap(lambda v: (v * fwAD.make_dual(c, tc)).sin())(fwAD.make_dual(x, t))
        tangent = fwAD.unpack_dual(y).tangent
    _close(tangent, (x * c).cos() * (t * c + x * tc))


def test_unpack_dual_inside_vmap_sees_the_batched_tangent():
    x, t = (tg.tensor(a) for a in _data(9))
    with fwAD.dual_level():
        got = vmap(lambda v: fwAD.unpack_dual(v).tangent)(fwAD.make_dual(x, t))
    _close(got, t)


def test_dual_made_inside_vmap_leaves_it_with_its_tangent():
    x = tg.tensor(_data(10)[0])
    with fwAD.dual_level():
        y = vmap(lambda v: fwAD.make_dual(v, v * 2))(x)
        tangent = fwAD.unpack_dual(y).tangent
    _close(tangent, 2 * x)


def test_vmap_of_jvp_through_in_place_writes():
    def g(v):
        w = v.clone()
        w.mul_(v)
        w[0] = v[1] * 3
        return w
    x, t = (tg.tensor(a) for a in _data(11))
    got = vmap(lambda v, u: jvp(g, (v,), (u,))[1])(x, t)
    _close(got, _loop(lambda v, u: jvp(g, (v,), (u,))[1], x, t))
    want = 2 * x * t
    want[:, 0] = 3 * t[:, 1]
    _close(got, want)


def test_vmap_of_jvp_in_dims_out_dims_nested_and_chunked():
    x, t = (tg.tensor(a) for a in _data(12))
    f = lambda v, u: jvp(lambda a: a.exp() * a[0], (v,), (u,))[1]
    _close(vmap(f, in_dims=1, out_dims=1)(x.T.contiguous(), t.T.contiguous()).T, _loop(f, x, t))
    _close(vmap(vmap(lambda a, b: jvp(tg.sin, (a,), (b,))[1]))(x, t), x.cos() * t)
    g = lambda v, u: jvp(_f, (v,), (u,))[1]
    _close(vmap(g, chunk_size=2)(x, t), _loop(g, x, t))


def test_jvp_of_grad_inside_vmap_is_the_per_sample_hvp():
    x, t = (tg.tensor(a) for a in _data(13))
    got = vmap(lambda v, u: jvp(grad(_f), (v,), (u,))[1])(x, t)
    _close(got, (2 * x.cos() - x * x.sin()) * t)


def test_reverse_through_vmap_of_jvp():
    x = tg.tensor(_data(14)[0]).requires_grad_()
    y = vmap(lambda v: jvp(_f, (v,), (tg.ones_like(v),))[1])(x).sum()
    (g,) = tg.autograd.grad(y, x)
    _close(g, 2 * x.cos() - x * x.sin())


@pytest.mark.torch
def test_against_torch_func():
    import torch
    import torch.func as tf
    xn, tn = _data(15)
    x, t = tg.tensor(xn), tg.tensor(tn)
    X, T = torch.tensor(xn), torch.tensor(tn)

    def both(make):
        return make(tg, vmap, jvp, jacfwd, jacrev, x, t), make(torch, tf.vmap, tf.jvp, tf.jacfwd, tf.jacrev, X, T)
    cases = [
        lambda m, vm, jv, jf, jr, a, b: vm(lambda v, u: jv(lambda p: (p.sin() * p).sum(), (v,), (u,))[1])(a, b),
        lambda m, vm, jv, jf, jr, a, b: vm(jf(lambda p: (p.sin() * p).sum()))(a),
        lambda m, vm, jv, jf, jr, a, b: jf(vm(m.sin))(a[:2, :3]),
        lambda m, vm, jv, jf, jr, a, b: jv(vm(lambda p: (p.sin() * p).sum()), (a,), (b,))[1],
        lambda m, vm, jv, jf, jr, a, b: vm(jf(jr(lambda p: (p.sin() * p).sum())))(a[:2, :3]),
        lambda m, vm, jv, jf, jr, a, b: vm(lambda u: jv(lambda p: p.exp().sum(), (a[0],), (u,))[1])(b),
    ]
    for make in cases:
        ours, theirs = both(make)
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-10, atol=1e-12)


# -- forward over reverse (func.grad/vjp/jacrev inside jvp/jacfwd), with and without vmap -------

def test_jvp_of_grad_vjp_and_jacfwd_of_jacrev_outside_vmap():
    x, t = (tg.tensor(a[0]) for a in _data(16))
    hess_diag = 2 * x.cos() - x * x.sin()
    primal, tangent = jvp(grad(_f), (x,), (t,))
    _close(primal, x.sin() + x * x.cos())
    _close(tangent, hess_diag * t)
    assert primal.grad_fn is None and tangent.grad_fn is None
    from tracegrad.func import vjp
    _, tangent = jvp(lambda v: vjp(_f, v)[1](tg.ones((), dtype=tg.float64))[0], (x,), (t,))
    _close(tangent, hess_diag * t)
    _close(jacfwd(jacrev(_f))(x), tg.diag(hess_diag))


@pytest.mark.torch
def test_forward_over_reverse_against_torch():
    import torch
    import torch.func as tf
    xn, tn = _data(17)
    ours = jvp(grad(_f), (tg.tensor(xn[0]),), (tg.tensor(tn[0]),))[1]
    theirs = tf.jvp(tf.grad(lambda v: (v.sin() * v).sum()), (torch.tensor(xn[0]),), (torch.tensor(tn[0]),))[1]
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-10)
    ours = jacfwd(jacrev(_f))(tg.tensor(xn[0]))
    theirs = tf.jacfwd(tf.jacrev(lambda v: (v.sin() * v).sum()))(torch.tensor(xn[0]))
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-10, atol=1e-12)


# -- randomness in jacfwd (torch vmaps its jvps; tracegrad loops over them) --------------------

def _noisy(v):
    return v * tg.rand(3, dtype=tg.float64)


def test_jacfwd_refuses_random_operations_by_default():
    x = tg.ones(3, dtype=tg.float64)
    with pytest.raises(RuntimeError, match="called random operation while in randomness error mode"):
        jacfwd(_noisy)(x)
    with pytest.raises(RuntimeError, match="called random operation while in randomness error mode"):
        jacfwd(lambda v: v * tg.empty(3, dtype=tg.float64).uniform_())(x)
    # (and nothing stays refused afterwards)
    assert tg.rand(2).shape == (2,)


def test_jacfwd_randomness_same_uses_one_draw_for_every_column():
    x = tg.ones(3, dtype=tg.float64)
    tg.manual_seed(0)
    jac = jacfwd(_noisy, randomness="same")(x)
    tg.manual_seed(0)
    _close(jac, tg.diag(tg.rand(3, dtype=tg.float64)))


def test_jacfwd_randomness_different_draws_per_column():
    x = tg.ones(3, dtype=tg.float64)
    tg.manual_seed(0)
    jac = jacfwd(_noisy, randomness="different")(x)
    tg.manual_seed(0)
    draws = [tg.rand(3, dtype=tg.float64) for _ in range(3)]
    _close(jac, tg.diag(tg.stack([draws[j][j] for j in range(3)])))


def test_jacfwd_inside_vmap_with_random_operations():
    x = tg.ones(2, 3, dtype=tg.float64)
    with pytest.raises(RuntimeError, match="called random operation while in randomness error mode"):
        vmap(jacfwd(_noisy), randomness="same")(x)


def test_in_place_writes_on_dual_tensors_entering_vmap():
    x, t = (tg.tensor(a) for a in _data(18))
    _, got = jvp(vmap(lambda v: v.clone().mul_(v).sin()), (x,), (t,))
    _close(got, (x * x).cos() * 2 * x * t)
    with fwAD.dual_level():
        d = fwAD.make_dual(x.clone(), t.clone())
        vmap(lambda v: v.mul_(3))(d)
        primal, tangent = fwAD.unpack_dual(d)
        _close(primal, 3 * x)
        _close(tangent, 3 * t)
