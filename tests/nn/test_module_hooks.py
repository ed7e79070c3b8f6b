"""Module forward/backward hooks: order, replacement values, kwargs, always_call, removal."""
import sys
import warnings

import numpy as np
import pytest

import tracegrad as tg
from tracegrad import nn

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from module_trees import classes

Affine, Scale, Block, Tree = classes(tg)


def test_no_hooks_means_the_fast_path():
    m = Affine(2, 2)
    assert m._hooked is False
    h = m.register_forward_hook(lambda *a: None)
    assert m._hooked is True
    h.remove()
    assert m._hooked is False
    h.remove()  # a second remove is harmless
    with m.register_forward_pre_hook(lambda *a: None):
        assert m._hooked
    assert not m._hooked


def test_forward_pre_hook_replaces_args_and_kwargs():
    m = Scale(2.0)
    m.register_forward_pre_hook(lambda mod, args: args[0] + 1)  # a single value is wrapped in a tuple
    assert m(tg.tensor(1.0)).item() == 4.0

    class KW(nn.Module):
        def forward(self, x, k=1.0):
            return x * k

    kw = KW()
    kw.register_forward_pre_hook(lambda mod, args, kwargs: (args, {"k": 10.0}), with_kwargs=True)
    assert kw(tg.tensor(1.0)).item() == 10.0
    bad = KW()
    bad.register_forward_pre_hook(lambda mod, args, kwargs: 3, with_kwargs=True)
    with pytest.raises(RuntimeError, match=r"forward pre-hook must return None or a tuple of \(new_args, new_kwargs\), but got 3."):
        bad(tg.tensor(1.0))


def test_forward_hook_order_prepend_and_replacement():
    m = Scale(2.0)
    log = []
    m.register_forward_hook(lambda mod, args, out: log.append("second"))
    m.register_forward_hook(lambda mod, args, out: log.append("first"), prepend=True)
    m.register_forward_hook(lambda mod, args, out: out * 10)
    m.register_forward_hook(lambda mod, args, kwargs, out: log.append(("kw", kwargs)), with_kwargs=True)
    assert m(tg.tensor(1.0)).item() == 20.0
    assert log == ["first", "second", ("kw", {})]


def test_always_call_hook_runs_when_forward_raises():
    class Boom(nn.Module):
        def forward(self, x):
            raise ValueError("forward failed")

    m = Boom()
    seen = []
    m.register_forward_hook(lambda mod, args, out: seen.append(("always", out)), always_call=True)
    m.register_forward_hook(lambda mod, args, out: seen.append("normal"))
    with pytest.raises(ValueError, match="forward failed"):
        m(tg.ones(1))
    assert seen == [("always", None)]

    def failing(mod, args, out):
        raise KeyError("hook failed too")
    m2 = Boom()
    m2.register_forward_hook(failing, always_call=True)
    with pytest.warns(UserWarning, match="always_call=True`` raised an exception that was silenced"), \
            pytest.raises(ValueError, match="forward failed"):
        m2(tg.ones(1))


def _affine_grads(pre=None, full=None):
    m = Affine(2, 3)
    log = []
    if pre is not None:
        m.register_full_backward_pre_hook(lambda mod, go: (log.append(("pre", go)), pre(go))[1])
    if full is not None:
        m.register_full_backward_hook(lambda mod, gi, go: (log.append(("full", gi, go)), full(gi))[1])
    x = tg.tensor([[1.0, -2.0]], requires_grad=True)
    c = tg.tensor([[1.0, 2.0, 3.0]])
    (m(x) * c).sum().backward()
    return m, x, c, log


def test_full_backward_hook_sees_grad_input_and_grad_output():
    m, x, c, log = _affine_grads(pre=lambda go: None, full=lambda gi: None)
    assert [e[0] for e in log] == ["pre", "full"]
    (_, go), (_, gi, go2) = log
    assert len(go) == 1 and len(gi) == 1 and go2[0] is go[0] or np.allclose(go2[0].numpy(), go[0].numpy())
    np.testing.assert_allclose(go[0].numpy(), c.numpy())
    w = m.weight.detach().numpy()
    np.testing.assert_allclose(gi[0].numpy(), c.numpy() @ w, rtol=1e-6)
    np.testing.assert_allclose(x.grad.numpy(), c.numpy() @ w, rtol=1e-6)


def test_backward_pre_hook_replaces_grad_output_everywhere():
    m, x, c, _ = _affine_grads(pre=lambda go: (go[0] * 2,))
    w = m.weight.detach().numpy()
    np.testing.assert_allclose(x.grad.numpy(), 2 * c.numpy() @ w, rtol=1e-6)
    np.testing.assert_allclose(m.bias.grad.numpy(), 2 * c.numpy()[0], rtol=1e-6)


def test_full_backward_hook_replaces_grad_input_only():
    m, x, c, _ = _affine_grads(full=lambda gi: (gi[0] * 0,))
    assert x.grad.tolist() == [[0.0, 0.0]]
    np.testing.assert_allclose(m.bias.grad.numpy(), c.numpy()[0])  # parameters unaffected


def test_backward_hook_wrong_length_is_an_error():
    with pytest.raises(RuntimeError, match="Backward hook returned an invalid number of grad_input, got 2, but expected 1"):
        _affine_grads(full=lambda gi: (gi[0], gi[0]))
    with pytest.raises(RuntimeError, match="Backward pre hook returned an invalid number of grad_output, got 2, but expected 1"):
        _affine_grads(pre=lambda go: (go[0], go[0]))


def test_backward_hook_with_non_tensor_arguments_and_tuple_outputs():
    class Two(nn.Module):
        def forward(self, x, k, y):
            return x * k, y.exp()

    m = Two()
    seen = []
    m.register_full_backward_hook(lambda mod, gi, go: seen.append((gi, go)))
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    y = tg.tensor([0.0], requires_grad=True)
    a, b = m(x, 3.0, y)
    (a.sum() + b.sum()).backward()
    (gi, go), = seen
    assert len(gi) == 3 and gi[1] is None and len(go) == 2
    assert gi[0].tolist() == [3.0, 3.0] and gi[2].tolist() == [1.0]
    assert go[0].tolist() == [1.0, 1.0] and go[1].tolist() == [1.0]


def test_backward_hook_when_no_input_requires_grad():
    m = Scale(2.0)
    seen = []
    m.register_full_backward_hook(lambda mod, gi, go: seen.append((gi, go)))
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        m(tg.tensor([1.0])).sum().backward()
    assert any("no inputs require gradients" in str(x.message) for x in w)
    (gi, go), = seen
    assert gi == (None,) and go[0].tolist() == [1.0]
    assert m.scale.grad.item() == 1.0


def test_regular_and_full_backward_hooks_do_not_mix():
    m = Scale()
    m.register_full_backward_hook(lambda *a: None)
    with pytest.raises(RuntimeError, match="Cannot use both regular backward hooks and full backward hooks"):
        m.register_backward_hook(lambda *a: None)
    m2 = Scale()
    seen = []
    m2.register_backward_hook(lambda mod, gi, go: seen.append(len(gi)))
    with pytest.raises(RuntimeError, match="Cannot use both regular backward hooks and full backward hooks"):
        m2.register_full_backward_hook(lambda *a: None)
    m2(tg.tensor([1.0], requires_grad=True)).sum().backward()
    assert seen == [2]  # the legacy hook sees the last node's input gradients (x and scale)


def test_hooks_on_nested_modules_fire_in_call_order():
    t = Tree()
    log = []
    for name, mod in t.named_modules():
        mod.register_forward_pre_hook(lambda m, a, name=name: log.append(("pre", name)))
        mod.register_forward_hook(lambda m, a, o, name=name: log.append(("post", name)))
    t(tg.ones(1, 3))
    assert log[:3] == [("pre", ""), ("pre", "stem"), ("post", "stem")]
    assert log[-1] == ("post", "")


def test_hook_must_be_callable():
    with pytest.raises(TypeError, match="hook must be callable"):
        Scale().register_forward_hook(3)


def _hook_log(lib):
    """Forward and backward hook events (names, shapes, values) on the shared tree."""
    t = classes(lib)[3]()
    log = []

    def values(gs):
        return [None if g is None else np.round(g.detach().numpy().astype(np.float64), 5).tolist() for g in gs]
    for name, mod in t.named_modules():
        if name in ("", "shared"):
            continue
        mod.register_forward_pre_hook(lambda m, a, name=name: log.append(("pre", name)))
        mod.register_forward_hook(lambda m, a, o, name=name: log.append(("fwd", name)))
        mod.register_full_backward_pre_hook(lambda m, go, name=name: log.append(("bpre", name, values(go))))
        mod.register_full_backward_hook(lambda m, gi, go, name=name: log.append(("bwd", name, values(gi), values(go))))
    x = lib.tensor(np.linspace(-1, 1, 6).reshape(2, 3).astype(np.float32), requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        (t(x) ** 2).sum().backward()
    return log


@pytest.mark.torch
def test_oracle_hook_order_and_gradients():
    torch = pytest.importorskip("torch")
    ours, theirs = _hook_log(tg), _hook_log(torch)
    assert [e[:2] for e in ours] == [e[:2] for e in theirs]
    for a, b in zip(ours, theirs):
        for va, vb in zip(a[2:], b[2:]):
            assert len(va) == len(vb)
            for ga, gb in zip(va, vb):
                assert (ga is None) == (gb is None)
                if ga is not None:
                    np.testing.assert_allclose(ga, gb, rtol=1e-4, atol=1e-5)
