"""Every way user code can reach a batched tensor's values outside the batching rules
(under vmap a BatchedTensor's ``_data`` is sample 0 only): each gives the right value
(checked against a loop over the samples) or a clear error naming the construct."""
import copy
import pickle
import re
import warnings

import numpy as np
import pytest

import tracegrad as tg
import tracegrad.nn.functional as F
from tracegrad.func import functional_call, grad, vmap

warnings.filterwarnings("ignore", message="There is a performance drop")


def _x(seed=0, shape=(3, 4)):
    return tg.tensor(np.random.default_rng(seed).standard_normal(shape))


def _loop(fn, *batches):
    return tg.stack([fn(*sample) for sample in zip(*batches)])


def _close(a, b):
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-12, atol=1e-12)


# -- building tensors from a batched one ------------------------------------------------------

@pytest.mark.filterwarnings("ignore:To copy construct")
def test_tensor_of_a_batched_tensor_copies_every_sample():
    x = _x()
    _close(vmap(lambda v: tg.tensor(v) * 2)(x), _loop(lambda v: tg.tensor(v) * 2, x))
    out = vmap(lambda v: tg.tensor(v, dtype=tg.float32))(x)
    assert out.dtype == tg.float32
    _close(out, x.float())


def test_tensor_of_a_batched_tensor_has_no_history():
    x = _x(1)
    g = vmap(grad(lambda v: (tg.tensor(v) * v).sum()))(x)
    _close(g, x)  # d/dv (c * v) with c = v held constant


def test_as_tensor_and_asarray_of_a_batched_tensor():
    x = _x(2)
    _close(vmap(lambda v: tg.as_tensor(v) * 2)(x), 2 * x)
    _close(vmap(lambda v: tg.asarray(v, copy=True) + 1)(x), x + 1)


def test_tensor_of_a_list_holding_batched_tensors_is_refused():
    with pytest.raises(RuntimeError, match=re.escape("tensor() of a list holding a Tensor inside vmap")):
        vmap(lambda v: tg.tensor([v, v]))(_x())
    with pytest.raises(RuntimeError, match=re.escape("tensor() of a list holding a Tensor inside vmap")):
        vmap(lambda v: tg.tensor([e for e in v]))(_x())


def test_tensor_requires_grad_of_a_batched_tensor_is_refused():
    with pytest.raises(RuntimeError, match=re.escape("requires_grad_() on a Tensor inside vmap")):
        vmap(lambda v: tg.tensor(v, requires_grad=True))(_x())


def test_deepcopy_copies_every_sample():
    x = _x(3)
    out = vmap(lambda v: copy.deepcopy(v) * 1)(x)
    _close(out, x)
    with pytest.raises(RuntimeError, match="Only Tensors created explicitly by the user"):
        vmap(grad(lambda v: copy.deepcopy(v * 2).sum()))(x)


def test_data_of_a_batched_tensor_is_batched():
    x = _x(4)
    _close(vmap(lambda v: v.data * 3)(x), 3 * x)
    _close(vmap(lambda v: v.detach().clone())(x), x)


# -- reading values out -----------------------------------------------------------------------

@pytest.mark.parametrize("read", [
    lambda v: v.numpy(),
    lambda v: np.asarray(v),
    lambda v: np.sin(v),
    lambda v: tg.from_numpy(np.asarray(v)),
])
def test_numpy_round_trips_are_refused(read):
    with pytest.raises(RuntimeError, match=re.escape("numpy() is not supported on a Tensor inside vmap")):
        vmap(read)(_x())


@pytest.mark.parametrize("read", [
    lambda v: v.sum().item(),
    lambda v: v.tolist(),
    lambda v: float(v.sum()),
    lambda v: int(v.sum()),
    lambda v: v * v.argmax().item(),
    lambda v: f"{v.sum():.3f}",
])
def test_item_likes_are_refused(read):
    with pytest.raises(RuntimeError, match=re.escape("It looks like you're calling .item() on a Tensor")):
        vmap(read)(_x())


@pytest.mark.parametrize("decide", [
    lambda v: v if v.any() else -v,
    lambda v: v * bool(v.sum() > 0),
    lambda v: v * tg.equal(v, v),
    lambda v: v * (1.0 in v),
])
def test_data_dependent_control_flow_is_refused(decide):
    with pytest.raises(RuntimeError, match="data-dependent control flow"):
        vmap(decide)(_x())


def test_len_and_shapes_are_per_sample():
    x = _x(5)
    _close(vmap(lambda v: v * len(v) * v.numel())(x), x * 16)


def test_storage_reads_are_refused():
    with pytest.raises(RuntimeError, match="Cannot access data pointer of Tensor that doesn't have storage"):
        vmap(lambda v: v * v.data_ptr())(_x())
    for name, call in (("apply_", lambda v: v.clone().apply_(lambda e: e * 2)),
                       ("map_", lambda v: v.clone().map_(v, lambda a, b: a + b)),
                       ("map_", lambda v: tg.zeros(4, dtype=tg.float64).map_(v, lambda a, b: a + b))):
        with pytest.raises(RuntimeError, match=re.escape(f"vmap: {name}() with a Python callable")):
            vmap(call)(_x())


def test_pickling_is_refused():
    with pytest.raises(NotImplementedError, match="cannot pickle"):
        vmap(lambda v: pickle.dumps(v))(_x())


def test_repr_shows_the_whole_batch_as_functorch():
    x = _x(6, (2, 2))
    seen = []
    vmap(lambda v: seen.append((repr(v), str(v))) or v)(x)
    body = "\n".join("    " + line for line in repr(x).splitlines())
    for text in seen[0]:
        assert re.fullmatch(r"BatchedTensor\(lvl=\d+, bdim=0, value=\n" + re.escape(body) + r"\n\)", text)


@pytest.mark.torch
def test_repr_layout_matches_torch():
    import torch
    seen = []
    torch.func.vmap(lambda v: seen.append(repr(v)) or v)(torch.zeros(2, 2))
    ours = []
    vmap(lambda v: ours.append(repr(v)) or v)(tg.zeros(2, 2))
    strip = lambda s: re.sub(r"lvl=\d+", "lvl=N", s)
    assert strip(ours[0]) == strip(seen[0])


def test_out_argument_is_refused():
    with pytest.raises(RuntimeError, match=re.escape("vmap: out= is not supported inside vmap")):
        vmap(lambda v: tg.add(v, 1, out=tg.empty(4, dtype=tg.float64)))(_x())


# -- transforms and autograd inside vmap ------------------------------------------------------

_SQ = lambda u: (u * u).sum()


@pytest.mark.parametrize("call", [
    lambda v: tg.trace(_SQ)(v),
    lambda v: tg.grad(_SQ, mode="tape")(v),
    lambda v: tg.value_and_grad(_SQ, mode="tape")(v)[1],
    lambda v: tg.grad(lambda w: (w * v).sum(), mode="tape")(tg.ones(4, dtype=tg.float64)),
    lambda v: tg.hessian(_SQ)(v),
    lambda v: tg.jacobian(lambda u: u.sin() * u[0])(v),
])
def test_staged_transforms_refuse_batched_tensors(call):
    with pytest.raises(NotImplementedError, match="staged transforms .* cannot take a Tensor batched by vmap"):
        vmap(call)(_x())


def _poly(u):
    return (u * u + 3 * u).sum()


def _wave(u):
    return (u.sin() * u).sum()


def test_staged_grad_in_ast_mode_is_per_sample_or_refused():
    x = _x(7)
    _close(vmap(lambda v: tg.grad(_poly, mode="ast")(v))(x), 2 * x + 3)
    # (sin's derivative goes through a tape: refused rather than computed for sample 0)
    with pytest.raises(NotImplementedError, match="cannot take a Tensor batched by vmap"):
        vmap(lambda v: tg.grad(_wave, mode="ast")(v))(x)


def test_backward_inside_vmap_is_refused():
    w = tg.randn(4, dtype=tg.float64, requires_grad=True)
    msg = re.escape("backward() called inside a functorch transform")
    with pytest.raises(RuntimeError, match=msg):
        vmap(lambda v: (v * w).sum().backward())(_x())
    with pytest.raises(RuntimeError, match=msg):
        vmap(lambda v: tg.autograd.backward((v * w).sum()))(_x())
    assert w.grad is None


def test_autograd_grad_of_a_batched_output_is_refused():
    w = tg.randn(4, dtype=tg.float64, requires_grad=True)
    with pytest.raises(RuntimeError, match="element 0 of tensors does not require grad"):
        vmap(lambda v: tg.autograd.grad((v * w).sum(), w)[0])(_x())


@pytest.mark.torch
def test_autograd_grad_inside_vmap_errors_as_torch():
    import torch
    w = torch.randn(4, requires_grad=True)
    with pytest.raises(RuntimeError, match="element 0 of tensors does not require grad"):
        torch.func.vmap(lambda v: torch.autograd.grad((v * w).sum(), w)[0])(torch.randn(3, 4))
    with pytest.raises(RuntimeError, match=re.escape("backward() called inside a functorch transform")):
        torch.func.vmap(lambda v: (v * w).sum().backward())(torch.randn(3, 4))


# -- nn code that reads or writes values directly ---------------------------------------------

def test_embedding_checks_every_samples_indices():
    weight = _x(8, (10, 3))
    with pytest.raises(IndexError, match="index out of range in self"):
        vmap(lambda i: F.embedding(i, weight))(tg.tensor([[1, 2], [3, -1], [4, 5]]))


def test_embedding_max_norm_renormalises_the_rows_any_sample_picks():
    idx = tg.tensor([[1, 2], [3, 4], [4, 9]])
    w_vmap, w_loop = _x(9, (10, 3)) * 5, _x(9, (10, 3)) * 5
    out = vmap(lambda i: F.embedding(i, w_vmap, max_norm=1.0))(idx)
    want = _loop(lambda i: F.embedding(i, w_loop, max_norm=1.0), idx)
    _close(out, want)
    _close(w_vmap, w_loop)
    assert not tg.equal(w_vmap, _x(9, (10, 3)) * 5)  # (rows were renormalised)


def test_embedding_max_norm_of_a_batched_weight_is_refused():
    with pytest.raises(NotImplementedError, match=re.escape("embedding(max_norm=...)")):
        vmap(lambda w: F.embedding(tg.tensor([1]), w, max_norm=1.0))(_x(10, (2, 5, 3)))


@pytest.mark.parametrize("fill", [
    lambda v: tg.nn.init.normal_(v.clone()),
    lambda v: tg.nn.init.kaiming_uniform_(v.clone().reshape(2, 2)),
    lambda v: v.clone().uniform_(),
])
def test_random_fills_follow_randomness(fill):
    x = _x(11)
    with pytest.raises(RuntimeError, match="called random operation while in randomness error mode"):
        vmap(fill)(x)
    same = vmap(fill, randomness="same")(x)
    for k in range(1, 3):
        _close(same[k], same[0])
    assert not tg.equal(same[0].reshape(4), x[0])
    with pytest.raises(NotImplementedError, match="has no per-sample version"):
        vmap(fill, randomness="different")(x)


def test_bernoulli_of_batched_probabilities():
    probs = tg.stack([tg.zeros(5, dtype=tg.float64), tg.ones(5, dtype=tg.float64)])
    for randomness in ("same", "different"):
        _close(vmap(tg.bernoulli, randomness=randomness)(probs), probs)
    with pytest.raises(NotImplementedError, match="multinomial of per-sample probabilities"):
        vmap(lambda p: tg.multinomial(p, 1), randomness="same")(probs + 0.5)
    with pytest.raises(NotImplementedError, match="poisson and binomial of per-sample"):
        vmap(tg.poisson, randomness="same")(probs)


def test_masked_select_with_a_batched_mask_is_refused():
    x = _x(12)
    with pytest.raises(RuntimeError, match="masked_select .* with a mask batched by vmap"):
        vmap(lambda v: tg.masked_select(v, v > 0))(x)
    mask = tg.tensor([True, False, True, False])
    _close(vmap(lambda v: tg.masked_select(v, mask))(x), x[:, mask])


def test_batch_norm_updates_batched_running_stats_per_sample():
    bn = tg.nn.BatchNorm1d(4).double()
    inputs = _x(13, (3, 5, 4))
    stats = {k: v.unsqueeze(0).expand(3, *v.shape).clone() for k, v in bn.state_dict().items()
             if v.dtype.is_floating_point}
    out = vmap(lambda p, b: functional_call(bn, p, (b,)))(stats, inputs)
    for i in range(3):
        one = tg.nn.BatchNorm1d(4).double()
        _close(out[i], one(inputs[i]))
        _close(stats["running_mean"][i], one.running_mean)
        _close(stats["running_var"][i], one.running_var)


def test_saving_and_assert_close_are_refused():
    import io
    with pytest.raises(NotImplementedError, match="cannot save a Tensor inside vmap"):
        vmap(lambda v: tg.save(v, io.BytesIO()))(_x())
    x = _x(14)
    with pytest.raises(RuntimeError, match="assert_close compares values in Python"):
        vmap(lambda v: tg.testing.assert_close(v, x[0]))(x)


def test_indices_batched_by_vmap_are_checked_and_used_per_sample():
    src = _x(15, (5,))
    idx = tg.tensor([[0, 4], [2, 2], [3, 1]])
    for fn in (lambda i: src.gather(0, i), lambda i: src.index_select(0, i), lambda i: src.take(i),
               lambda i: tg.zeros(5, dtype=tg.float64).scatter_add(0, i, src[:2])):
        _close(vmap(fn)(idx), _loop(fn, idx))
    bad = tg.tensor([[0, 4], [2, 5]])
    with pytest.raises(RuntimeError, match="index 5 is out of bounds for dimension 0 with size 5"):
        vmap(lambda i: src.gather(0, i))(bad)
    with pytest.raises(IndexError, match="tried to access index 5"):
        vmap(lambda i: src.take(i))(bad)


def test_scalar_samples_mix_with_python_rules():
    x = _x(16)
    _close(vmap(lambda v: v.clamp(min=v[0]))(x), _loop(lambda v: v.clamp(min=v[0]), x))
    _close(vmap(lambda v: v * v[1])(x), x * x[:, 1:2])


def test_get_total_norm_is_per_sample_and_clipping_in_place_is_refused():
    from tracegrad.nn.utils import clip_grads_with_norm_, get_total_norm
    x, y = _x(17), _x(18, (3, 2))
    for p in (2.0, 1.0, float("inf")):
        got = vmap(lambda a, b, p=p: get_total_norm([a, b], p))(x, y)
        _close(got, _loop(lambda a, b, p=p: get_total_norm([a, b], p), x, y))
    y[1, 0] = float("inf")
    with pytest.raises(RuntimeError, match="The total norm of order 2.0 for gradients from `parameters` is non-finite"):
        vmap(lambda a, b: get_total_norm([a, b], error_if_nonfinite=True))(x, y)
    w = tg.nn.Parameter(tg.ones(3))
    w.grad = tg.ones(3)
    with pytest.raises(RuntimeError, match="clip_grads_with_norm_ / clip_grad_norm_ scale .grad in place"):
        vmap(lambda a: clip_grads_with_norm_([w], 1.0, a.norm()))(x)


def test_a_plain_dual_tensor_with_batched_tangents_prints_every_tangent():
    from tracegrad.func import jvp
    seen = []
    x0 = tg.tensor([1.0, 2.0])
    tangents = tg.tensor([[1.0, 0.0], [0.0, 1.0]])
    vmap(lambda u: jvp(lambda p: seen.append(repr(p)) or p.sin(), (x0,), (u,))[1])(tangents)
    assert seen[0].startswith("tensor([1., 2.],\n       tangent=BatchedTensor(lvl=")
    assert "[1., 0.]" in seen[0] and "[0., 1.]" in seen[0]  # (both samples' tangents, not sample 0's)
