"""``torch.autograd.graph``'s functions over the backward graph: gradient edges as inputs of
``autograd.grad``, ``increment_version``, hooks over several tensors' gradients, and the
saved-tensor contexts (``disable_saved_tensors_hooks``, ``allow_mutation_on_saved_tensors``)."""
import numpy as np
import pytest

from ._helpers import tg

G = tg.autograd.graph


def test_a_gradient_edge_is_an_input_of_grad():
    a = tg.tensor([1.0, 2.0], requires_grad=True)
    mid = a * 3
    out = (mid * mid).sum()
    edge = G.get_gradient_edge(mid)
    assert edge.node is mid.grad_fn and edge.output_nr == 0 and isinstance(edge, tuple)
    (g_edge,) = tg.autograd.grad(out, edge, retain_graph=True)
    (g_mid,) = tg.autograd.grad(out, mid, retain_graph=True)
    np.testing.assert_array_equal(g_edge.numpy(), g_mid.numpy())
    g_edge, g_a = tg.autograd.grad(out, [edge, a])
    np.testing.assert_array_equal(g_a.numpy(), 18 * a.detach().numpy())
    assert G.get_gradient_edge(a).node is mid.grad_fn.next_functions[0][0]  # (a leaf: its AccumulateGrad)
    with pytest.raises(RuntimeError, match="not possible to get the gradient edge for a Tensor that does not "
                                           "require gradients"):
        G.get_gradient_edge(tg.ones(1))


def test_increment_version_makes_saved_copies_stale():
    x = tg.ones(2, requires_grad=True)
    y = x * x
    before = x._version
    G.increment_version(x)
    assert x._version == before + 1
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()
    t, u = tg.ones(1), tg.ones(1)
    G.increment_version([t, u])
    assert t._version == u._version == 1


def test_multi_grad_hook_all_and_any():
    a, b = tg.ones(2, requires_grad=True), tg.ones(2, requires_grad=True)
    seen = []
    h = G.register_multi_grad_hook((a, b), lambda gs: seen.append([None if g is None else g.tolist() for g in gs]))
    (a * 2).sum().backward()
    (a * 2 + b * 3).sum().backward()
    h.remove()
    (a * 2).sum().backward()
    assert seen == [[[2.0, 2.0], None], [[2.0, 2.0], [3.0, 3.0]]]
    first = []
    with G.register_multi_grad_hook((a, b), lambda g: first.append(g.tolist()), mode="any"):
        (a * 2 + b * 3).sum().backward()
        (a * 5).sum().backward()
    assert len(first) == 2 and first[0] in ([2.0, 2.0], [3.0, 3.0]) and first[1] == [5.0, 5.0]
    with pytest.raises(ValueError, match="Expects mode to be one of"):
        G.register_multi_grad_hook((a,), print, mode="some")


def test_disable_saved_tensors_hooks():
    with G.disable_saved_tensors_hooks("no hooks here"):
        with pytest.raises(RuntimeError, match="no hooks here"):
            with G.saved_tensors_hooks(lambda t: t, lambda t: t):
                pass
    with G.saved_tensors_hooks(lambda t: t, lambda t: t):  # (outside it, as before)
        pass

    @G.disable_saved_tensors_hooks("not in f")
    def f():
        with G.save_on_cpu():
            pass
    with pytest.raises(RuntimeError, match="not in f"):
        f()


def test_allow_mutation_on_saved_tensors():
    w = tg.tensor([0.5, 1.0, 2.0], requires_grad=True)
    with G.allow_mutation_on_saved_tensors():
        ww = w.clone()
        s = ww.sin()
        ww.mul_(2)  # (sin saved ww: backward uses the value it had)
        s.sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), np.cos([0.5, 1.0, 2.0]))
    ww = w.clone()
    s = ww.sin()
    ww.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        s.sum().backward()
