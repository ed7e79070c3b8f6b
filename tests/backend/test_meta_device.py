"""The meta device: tensors with a shape and a dtype and no values. Shapes and dtypes
through operations, modules built on it, writes that do nothing, reads that raise; then
the same script against PyTorch."""
import copy

import numpy as np
import pytest

import tracegrad as tg


def meta(*shape, **kwargs):
    return tg.empty(*shape, device="meta", **kwargs)


def test_a_meta_tensor_has_a_shape_dtype_and_device_only():
    t = meta(2, 3, dtype=tg.float64)
    assert t.shape == (2, 3) and t.dtype == tg.float64 and t.device == tg.device("meta") and t.is_meta
    assert not tg.ones(2).is_meta
    assert (t.numel(), t.dim(), t.stride(), t.is_contiguous()) == (6, 2, (3, 1), True)
    assert repr(t) == "tensor(..., device='meta', size=(2, 3), dtype=tracegrad.float64)"
    assert repr(meta(0)) == "tensor(..., device='meta', size=(0,))"
    assert repr(tg.nn.Parameter(meta(2))) == "Parameter containing:\ntensor(..., device='meta', size=(2,), requires_grad=True)"


@pytest.mark.parametrize("expr,shape,dtype", [
    (lambda x, w: x + 1, (2, 3, 4), "float32"),
    (lambda x, w: (x * 2.0).sum(), (), "float32"),
    (lambda x, w: x.mean(-1), (2, 3), "float32"),
    (lambda x, w: x.softmax(-1), (2, 3, 4), "float32"),
    (lambda x, w: x @ w, (2, 3, 5), "float32"),
    (lambda x, w: tg.cat([x, x], 1), (2, 6, 4), "float32"),
    (lambda x, w: x[:, 0], (2, 4), "float32"),
    (lambda x, w: x.permute(2, 0, 1).reshape(4, -1), (4, 6), "float32"),
    (lambda x, w: x.argmax(-1), (2, 3), "int64"),
    (lambda x, w: x > 0, (2, 3, 4), "bool"),
    (lambda x, w: x.double().exp(), (2, 3, 4), "float64"),
    (lambda x, w: tg.nn.functional.conv2d(meta(1, 3, 8, 8), meta(4, 3, 3, 3), padding=1), (1, 4, 8, 8), "float32"),
    (lambda x, w: (meta(3) @ meta(2, 1, 3, 4)), (2, 1, 4), "float32"),
    (lambda x, w: meta(3, dtype=tg.int32) + 2.5, (3,), "float32"),
    (lambda x, w: tg.nn.functional.layer_norm(x, (4,)), (2, 3, 4), "float32"),
])
def test_operations_give_numpys_shapes_and_dtypes_on_meta(expr, shape, dtype):
    out = expr(meta(2, 3, 4), meta(4, 5))
    assert out.is_meta and out.shape == shape and out.dtype == getattr(tg, dtype)


@pytest.mark.parametrize("op", [lambda m: m.nonzero(), lambda m: tg.argwhere(m), lambda m: m[m > 0],
                                lambda m: tg.masked_select(m, m > 0), lambda m: tg.unique(m),
                                lambda m: tg.nn.functional.one_hot(meta(5, dtype=tg.long)),
                                lambda m: tg.nn.functional.cross_entropy(meta(4, 5), meta(4, dtype=tg.long))])
def test_what_a_stand_in_cannot_stand_for_is_refused(op):
    """Sizes that depend on values, and values read as numbers: zeros would give a wrong
    size silently (nonzero of zeros is empty; one_hot of zeros has one class)."""
    with pytest.raises(NotImplementedError, match="meta tensors have a shape and a dtype but no values"):
        op(tg.ones(3, device="meta"))


@pytest.mark.parametrize("write", [lambda: meta(3).add_(meta(5, 3)), lambda: meta(3).__iadd__(meta(5, 3)),
                                   lambda: meta(3).copy_(meta(4)), lambda: meta(1).mul_(meta(4)),
                                   lambda: meta(5).__setitem__(slice(0, 2), meta(3))])
def test_writes_are_checked_for_shape_as_real_ones(write):
    with pytest.raises(RuntimeError):
        write()
    assert meta(5, 3).add_(meta(3)).shape == (5, 3)


def test_elementwise_operations_and_matmul_make_nothing_of_full_size():
    import tracemalloc
    tracemalloc.start()
    big = meta(10**8)
    y = (big.exp() * 2 + big).sum(-1, keepdim=True)
    z = tg.nn.functional.linear(meta(8, 40000), meta(40000, 40000))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert y.shape == (1,) and z.shape == (8, 40000) and peak < 50 * 2**20


def test_loading_real_weights_into_a_meta_module_warns_that_it_is_a_no_op():
    with tg.device("meta"):
        m = tg.nn.Linear(2, 2)
    with pytest.warns(UserWarning, match="to a meta parameter in the current model, which is a no-op"):
        m.load_state_dict(tg.nn.Linear(2, 2).state_dict())
    assert m.weight.is_meta


def test_autograd_runs_on_meta_tensors():
    w = meta(3, 2, requires_grad=True)
    y = (w * 2).sum()
    assert y.grad_fn is not None
    y.backward()
    assert w.grad.is_meta and w.grad.shape == (3, 2)


def test_writes_do_nothing_and_reads_raise_as_in_pytorch():
    t = meta(2, 3)
    for write in (lambda: t.uniform_(-1, 1), lambda: t.zero_(), lambda: t.fill_(2.0), lambda: t.normal_(),
                  lambda: t.copy_(tg.ones(2, 3).to("meta")), lambda: t.__setitem__(0, 1.0)):
        assert write() is None or write().is_meta
    with pytest.raises(RuntimeError, match="Tensor.item\\(\\) cannot be called on meta tensors"):
        t.sum().item()
    with pytest.raises(RuntimeError, match="Tensor.item\\(\\) cannot be called on meta tensors"):
        bool(t.sum() > 0)
    for read in (t.cpu, t.tolist, lambda: t.to("cpu")):
        with pytest.raises(NotImplementedError, match="Cannot copy out of meta tensor; no data!"):
            read()
    with pytest.raises(TypeError, match="can't convert meta device type tensor to numpy"):
        t.numpy()
    for to_numpy in (np.asarray, np.array):  # (never the stand-in zeros as values)
        with pytest.raises(RuntimeError, match="cannot be called on meta tensors"):
            to_numpy(t._data)
    with pytest.raises(RuntimeError, match="devices"):
        t + tg.ones(2, 3)


def test_moving_to_meta_drops_the_values_and_keeps_the_history():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    m = x.to("meta")
    assert m.is_meta and m.shape == (2,) and type(m.grad_fn).__name__ == "ToCopyBackward0"
    assert tg.tensor([1, 2]).to("meta").dtype == tg.int64


def test_a_module_skeleton_for_functional_call():
    """torch.func's model-ensembling recipe: a meta copy filled with real parameters."""
    real = tg.nn.Sequential(tg.nn.Linear(2, 3), tg.nn.ReLU(), tg.nn.Linear(3, 1))
    base = copy.deepcopy(real).to("meta")
    assert all(p.is_meta and type(p).__name__ == "Parameter" for p in base.parameters())
    x = tg.randn(4, 2)
    out = tg.func.functional_call(base, dict(real.named_parameters()), (x,))
    np.testing.assert_array_equal(out.detach().numpy(), real(x).detach().numpy())


def test_a_module_built_on_meta_then_given_memory_and_weights():
    with tg.device("meta"):
        m = tg.nn.Sequential(tg.nn.Linear(4, 8), tg.nn.ReLU(), tg.nn.Linear(8, 2), tg.nn.LayerNorm(2))
    assert all(p.is_meta for p in m.parameters())
    assert m(meta(5, 4)).shape == (5, 2)
    real = tg.nn.Sequential(tg.nn.Linear(4, 8), tg.nn.ReLU(), tg.nn.Linear(8, 2), tg.nn.LayerNorm(2))
    m.to_empty(device="cpu")
    assert all(p.device == tg.device("cpu") for p in m.parameters())
    m.load_state_dict(real.state_dict())
    x = tg.randn(3, 4)
    np.testing.assert_array_equal(m(x).detach().numpy(), real(x).detach().numpy())
    with tg.device("meta"):
        again = tg.nn.Linear(4, 8)
    again.load_state_dict(real[0].state_dict(), assign=True)
    assert again.weight.device == tg.device("cpu") and bool((again.weight == real[0].weight).all())


def test_a_checkpoint_loads_onto_the_meta_device():
    import io
    buffer = io.BytesIO()
    tg.save({"w": tg.ones(2, 3), "n": 4}, buffer)
    buffer.seek(0)
    loaded = tg.load(buffer, map_location="meta")
    assert loaded["w"].is_meta and loaded["w"].shape == (2, 3) and loaded["n"] == 4


def test_device_strings():
    assert str(tg.device("meta")) == "meta" and tg.device("meta:0").index == 0
    with pytest.raises(RuntimeError, match="Meta device index must be 0 or None, got 1"):
        tg.device("meta", 1)
    with pytest.raises(RuntimeError, match="Expected one of cpu, cuda, meta device type"):
        tg.device("tpu")


@pytest.mark.torch
def test_shapes_and_messages_match_torch():
    import torch
    script = [lambda L, x: (x @ L.empty(4, 5, device="meta")).shape,
              lambda L, x: x.sum(-1, keepdim=True).shape,
              lambda L, x: L.nn.functional.softmax(x.double(), -1).dtype,
              lambda L, x: x[..., None, 1:].shape,
              lambda L, x: L.stack([x, x], 0).shape]
    xs = {L: L.empty(2, 3, 4, device="meta") for L in (tg, torch)}
    for line in script:
        assert str(line(tg, xs[tg])).replace("tracegrad", "torch") == str(line(torch, xs[torch]))
    for L in (tg, torch):
        with pytest.raises(NotImplementedError, match="Cannot copy out of meta tensor; no data!"):
            xs[L].cpu()
        with pytest.raises(RuntimeError, match="Tensor.item\\(\\) cannot be called on meta tensors"):
            xs[L].sum().item()
    assert repr(tg.empty(2, device="meta")) == repr(torch.empty(2, device="meta"))
