"""functional_call: replacement and restoration, tied weights, several dicts, strict
errors (against torch), and transforms through it."""
import numpy as np
import pytest

import tracegrad as tg
from tracegrad.func import functional_call, grad, jacrev


def Tied(lib=tg):
    """Two layers sharing one weight."""
    class Tied(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = lib.nn.Linear(2, 2)
            self.b = lib.nn.Linear(2, 2)
            self.b.weight = self.a.weight

        def forward(self, x):
            return self.a(x) + self.b(x)
    return Tied()


def test_replaces_then_restores():
    m = tg.nn.Linear(3, 2)
    w0 = m.weight
    x = tg.ones(1, 3)
    out = functional_call(m, {"weight": tg.zeros(2, 3), "bias": tg.ones(2)}, (x,))
    np.testing.assert_allclose(out.numpy(), np.ones((1, 2)))
    assert m.weight is w0 and dict(m.named_parameters())["weight"] is w0
    out = functional_call(m, {"weight": tg.zeros(2, 3)}, x)  # a lone arg, a partial dict
    np.testing.assert_allclose(out.detach().numpy(), m.bias.detach().numpy()[None])


def test_buffers_and_kwargs():
    m = tg.nn.BatchNorm1d(3)
    m.eval()
    x = tg.randn(4, 3)
    out = functional_call(m, ({"running_mean": tg.ones(3)}, {"running_var": tg.ones(3) * 4}), args=(),
                          kwargs={"input": x})
    np.testing.assert_allclose(out.detach().numpy(), ((x - 1) / np.sqrt(4 + 1e-5)).numpy() * m.weight.detach().numpy()
                               + m.bias.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_tied_weights_follow_unless_untied():
    m = Tied()
    x = tg.ones(1, 2)
    zero = {"a.weight": tg.zeros(2, 2), "a.bias": tg.zeros(2), "b.bias": tg.zeros(2)}
    np.testing.assert_allclose(functional_call(m, zero, (x,)).detach().numpy(), np.zeros((1, 2)))
    untied = functional_call(m, zero, (x,), tie_weights=False).detach().numpy()
    np.testing.assert_allclose(untied, (x @ m.b.weight.T).detach().numpy())


def test_grad_through_functional_call_wrt_parameters():
    m = tg.nn.Linear(3, 1)
    params = {k: v.detach() for k, v in m.named_parameters()}
    x = tg.randn(5, 3, dtype=tg.float32)
    g = grad(lambda p: functional_call(m, p, (x,)).sum())(params)
    np.testing.assert_allclose(g["weight"].numpy(), x.sum(0, keepdim=True).numpy(), rtol=1e-5)
    np.testing.assert_allclose(g["bias"].numpy(), [5.0])
    j = jacrev(lambda w: functional_call(m, {"weight": w}, (x,)))(params["weight"])
    assert j.shape == (5, 1, 1, 3)
    assert m.weight.grad is None


@pytest.mark.torch
@pytest.mark.parametrize("case", ["strict", "twice", "tied"])
def test_errors_match_torch(case):
    torch = pytest.importorskip("torch")

    def call(lib, fc):
        if case == "strict":
            return fc(lib.nn.Linear(2, 2), {"weight": lib.zeros(2, 2), "foo": lib.zeros(1)}, (lib.ones(1, 2),),
                      strict=True)
        if case == "twice":
            return fc(lib.nn.Linear(2, 2), ({"weight": lib.zeros(2, 2)}, {"weight": lib.zeros(2, 2)}),
                      (lib.ones(1, 2),))
        return fc(Tied(lib), {"a.weight": lib.zeros(2, 2), "b.weight": lib.ones(2, 2)}, (lib.ones(1, 2),))

    def error(lib, fc):
        with pytest.raises(Exception) as info:
            call(lib, fc)
        return type(info.value), str(info.value)
    assert error(tg, functional_call) == error(torch, torch.func.functional_call)


def test_strict_counts_no_empty_slot_as_missing():
    """``bias=False`` leaves an empty ``bias`` slot: strict asks only for the tensors there."""
    m = tg.nn.Linear(2, 2, bias=False)
    out = functional_call(m, {"weight": tg.ones(2, 2)}, (tg.ones(1, 2),), strict=True)
    np.testing.assert_array_equal(out.numpy(), [[2.0, 2.0]])
    with pytest.raises(RuntimeError, match="Missing key\\(s\\): 'weight'"):
        functional_call(m, {}, (tg.ones(1, 2),), strict=True)
