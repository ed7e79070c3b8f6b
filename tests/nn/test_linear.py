"""Identity, Linear and Bilinear: default initialisation, repr, forward and gradients."""
import math

import numpy as np
import pytest

import tracegrad as tg
from tracegrad import nn

from ._oracle import compare_modules, copy_weights

rng = np.random.default_rng(2)


def _np(t):
    return t.detach().numpy()


def test_linear_default_init_bounds_and_spread():
    tg.manual_seed(0)
    m = nn.Linear(400, 300)
    bound = 1 / math.sqrt(400)  # kaiming_uniform_(a=sqrt(5)) gives exactly 1/sqrt(fan_in)
    w, b = _np(m.weight), _np(m.bias)
    assert w.shape == (300, 400) and b.shape == (300,) and w.dtype == np.float32
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.99 * bound
    assert abs(w.std() - bound / math.sqrt(3)) < 0.01 * bound
    assert np.abs(b).max() <= bound and abs(b.mean()) < 0.1 * bound
    assert isinstance(m.weight, nn.Parameter) and m.weight.requires_grad and m.weight.is_leaf


def test_linear_structure_and_repr():
    m = nn.Linear(2, 3)
    assert repr(m) == "Linear(in_features=2, out_features=3, bias=True)"
    assert [n for n, _ in m.named_parameters()] == ["weight", "bias"]
    nb = nn.Linear(2, 3, bias=False, dtype=tg.float64)
    assert nb.bias is None and repr(nb) == "Linear(in_features=2, out_features=3, bias=False)"
    assert nb.weight.dtype == tg.float64 and list(nb.state_dict()) == ["weight"]


def test_linear_forward_backward_by_hand():
    m = nn.Linear(3, 2)
    x = tg.tensor(rng.standard_normal((4, 3)).astype(np.float32), requires_grad=True)
    y = m(x)
    np.testing.assert_allclose(_np(y), _np(x) @ _np(m.weight).T + _np(m.bias), rtol=1e-6)
    assert y.grad_fn.name() == "AddmmBackward0"
    g = rng.standard_normal((4, 2)).astype(np.float32)
    y.backward(tg.tensor(g))
    np.testing.assert_allclose(_np(m.weight.grad), g.T @ _np(x), rtol=1e-5)
    np.testing.assert_allclose(_np(m.bias.grad), g.sum(0), rtol=1e-5)
    np.testing.assert_allclose(_np(x.grad), g @ _np(m.weight), rtol=1e-5)
    assert m(tg.randn(2, 5, 3)).shape == (2, 5, 2) and m(tg.randn(3)).shape == (2,)


def test_linear_reset_is_seeded_and_zero_fan_in_warns():
    tg.manual_seed(3)
    a = _np(nn.Linear(4, 5).weight).copy()
    tg.manual_seed(3)
    np.testing.assert_array_equal(_np(nn.Linear(4, 5).weight), a)
    with pytest.warns(UserWarning, match="Initializing zero-element tensors is a no-op"):
        m = nn.Linear(0, 3)
    np.testing.assert_array_equal(_np(m.bias), np.zeros(3))  # bound 0 when fan_in is 0


def test_bilinear_and_identity():
    m = nn.Bilinear(3, 4, 5)
    bound = 1 / math.sqrt(3)
    assert np.abs(_np(m.weight)).max() <= bound and np.abs(_np(m.bias)).max() <= bound
    assert m.weight.shape == (5, 3, 4)
    assert repr(m) == "Bilinear(in1_features=3, in2_features=4, out_features=5, bias=True)"
    x1, x2 = tg.randn(2, 3), tg.randn(2, 4)
    np.testing.assert_allclose(_np(m(x1, x2)), np.einsum("bi,oij,bj->bo", _np(x1), _np(m.weight), _np(x2))
                               + _np(m.bias), rtol=1e-5, atol=1e-6)
    ident = nn.Identity(54, unused="argument")
    x = tg.randn(3)
    assert ident(x) is x and repr(ident) == "Identity()" and list(ident.parameters()) == []


@pytest.mark.torch
@pytest.mark.parametrize("shape", [(4, 3), (2, 5, 3), (3,), (0, 3)])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_linear_matches_torch(shape, bias, dtype):
    torch = pytest.importorskip("torch")
    theirs = torch.nn.Linear(3, 6, bias=bias)
    ours = nn.Linear(3, 6, bias=bias)
    if dtype == "float64":
        theirs, ours = theirs.double(), ours.double()
    copy_weights(theirs, ours)
    assert repr(ours) == repr(theirs)
    out, ref = compare_modules(theirs, ours, rng.standard_normal(shape).astype(dtype),
                               rtol=1e-4 if dtype == "float32" else 1e-7)
    assert out.grad_fn.name() == ref.grad_fn.name()
    del torch


@pytest.mark.torch
def test_bilinear_matches_torch():
    torch = pytest.importorskip("torch")
    theirs, ours = torch.nn.Bilinear(3, 4, 5), nn.Bilinear(3, 4, 5)
    copy_weights(theirs, ours)
    assert repr(ours) == repr(theirs)
    compare_modules(theirs, ours, rng.standard_normal((2, 3)).astype("float32"),
                    rng.standard_normal((2, 4)).astype("float32"))
    del torch


@pytest.mark.torch
def test_default_init_bounds_match_torch():
    """Same distributions: the extreme values of a big layer approach the same bounds."""
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    tg.manual_seed(0)
    theirs, ours = torch.nn.Linear(300, 200), nn.Linear(300, 200)
    bound = 1 / math.sqrt(300)
    assert abs(np.abs(_np(ours.weight)).max() - theirs.weight.detach().abs().max().item()) < 1e-3 * bound
    assert abs(_np(ours.weight).std() - theirs.weight.detach().std().item()) < 0.01 * bound
    assert np.abs(_np(ours.bias)).max() <= bound and theirs.bias.detach().abs().max().item() <= bound
