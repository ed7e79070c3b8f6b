"""linear, layer_norm and scaled_dot_product_attention when they record nothing: the
kernels run on the arrays directly (runtime/fastpath.untracked_arrays). Their values must
be those of the recording path bit for bit, their results plain (or inference) tensors,
and anything unusual -- a profiler, vmap, mixed dtypes, bad sizes -- must take the
general path with its nodes and errors."""
import numpy as np
import pytest

import tracegrad as tg
import tracegrad.nn.functional as F
from tracegrad.runtime import fastpath

rng = np.random.default_rng(7)


def _t(*shape, dtype=np.float32, grad=False):
    return tg.tensor(rng.standard_normal(shape).astype(dtype), requires_grad=grad)


def _layers(x, w, w3, b, ln_w, ln_b, q, k, v):
    return (F.linear(x, w), F.linear(x, w, b), F.linear(x[0], w, b), F.linear(x.transpose(0, 1), w),
            F.layer_norm(x, (4,), ln_w, ln_b), F.layer_norm(x, (3, 4)),
            F.scaled_dot_product_attention(q, k, v, is_causal=True),
            F.scaled_dot_product_attention(q, k, v, scale=0.3))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_untracked_values_equal_the_recording_path_bit_for_bit(dtype):
    args = (_t(2, 3, 4, dtype=dtype, grad=True), _t(5, 4, dtype=dtype, grad=True), None,
            _t(5, dtype=dtype, grad=True), _t(4, dtype=dtype, grad=True), _t(4, dtype=dtype, grad=True),
            _t(2, 2, 6, 3, dtype=dtype, grad=True), _t(2, 2, 7, 3, dtype=dtype, grad=True),
            _t(2, 2, 7, 5, dtype=dtype, grad=True))
    tracked = _layers(*args)
    assert all(r.grad_fn is not None for r in tracked)
    with tg.no_grad():
        plain = _layers(*args)
    detached = _layers(*(None if a is None else a.detach() for a in args))  # grad mode on, nothing requires grad
    for a, b, c in zip(tracked, plain, detached):
        assert b.grad_fn is None and not b.requires_grad and b.is_leaf
        assert c.grad_fn is None and not c.requires_grad
        assert b.dtype == a.dtype and b.shape == a.shape
        np.testing.assert_array_equal(b.numpy(), a.detach().numpy())
        np.testing.assert_array_equal(c.numpy(), a.detach().numpy())


def test_inference_mode_results_are_inference_tensors():
    x, w = _t(3, 4), _t(2, 4)
    with tg.inference_mode():
        outs = (F.linear(x, w), F.layer_norm(x, (4,)), F.scaled_dot_product_attention(x[None], x[None], x[None]))
    assert all(o.is_inference() for o in outs)


def test_untracked_arrays_refuses_what_apply_must_handle():
    x32, x64 = _t(2, 3), _t(2, 3, dtype=np.float64)
    assert fastpath.untracked_arrays(x32, None)[1] is None
    assert fastpath.untracked_arrays(x32, x64) is None  # promotion
    assert fastpath.untracked_arrays(tg.tensor([1, 2])) is None  # integers
    assert fastpath.untracked_arrays(_t(2, grad=True)) is None  # records
    with tg.no_grad():
        assert fastpath.untracked_arrays(_t(2, grad=True)) is not None


def test_errors_come_from_the_general_path():
    x, w = _t(2, 3), _t(5, 4)
    with tg.no_grad():
        with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied \(2x3 and 4x5\)"):
            F.linear(x, w)
        with pytest.raises(RuntimeError, match="expected m1 and m2 to have the same dtype|mat1 and mat2 must have the same dtype"):
            F.linear(_t(2, 4), _t(5, 4, dtype=np.float64))


def test_a_profiler_still_sees_each_op():
    x, w = _t(2, 3, 4), _t(5, 4)
    with tg.no_grad(), tg.profiler.profile() as prof:
        F.linear(x, w)
        F.layer_norm(x, (4,))
    names = {e.key for e in prof.key_averages()}
    assert any("matmul" in n for n in names) and any("layer_norm" in n for n in names), names


def test_vmap_takes_the_batching_rules():
    x, w = _t(3, 2, 4), _t(5, 4)
    with tg.no_grad():
        out = tg.vmap(lambda r: F.layer_norm(F.linear(r, w), (5,)))(x)
        want = F.layer_norm(F.linear(x, w), (5,))
    np.testing.assert_allclose(out.numpy(), want.numpy(), rtol=1e-6, atol=1e-6)


@pytest.mark.torch
def test_untracked_layers_match_torch():
    import torch
    x, w, b = _t(2, 3, 4), _t(5, 4), _t(5)
    q = _t(2, 2, 6, 3)
    with tg.no_grad():
        ours = (F.linear(x, w, b), F.layer_norm(x, (4,), b[:4]), F.scaled_dot_product_attention(q, q, q, is_causal=True))
    tx, tw, tb, tq = (torch.from_numpy(a.numpy()) for a in (x, w, b, q))
    theirs = (torch.nn.functional.linear(tx, tw, tb), torch.nn.functional.layer_norm(tx, (4,), tb[:4]),
              torch.nn.functional.scaled_dot_product_attention(tq, tq, tq, is_causal=True))
    for a, t in zip(ours, theirs):
        np.testing.assert_allclose(a.numpy(), t.numpy(), rtol=1e-5, atol=1e-6)
