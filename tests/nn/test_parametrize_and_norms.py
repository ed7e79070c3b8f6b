"""nn.utils: weight_norm / spectral_norm (hooks), parametrize, parametrizations (orthogonal,
weight_norm, spectral_norm), conv/linear-BN fusion, skip_init, stateless.functional_call.

Values against hand computations, gradients against finite differences, state_dict round
trips through tracegrad.save/load, errors; ``torch``-marked tests compare with PyTorch."""
import copy
import io
import pickle
import warnings

import numpy as np
import pytest

import tracegrad as tg
from tracegrad import nn
from tracegrad.nn.utils import (
    fuse_conv_bn_eval,
    fuse_conv_bn_weights,
    fuse_linear_bn_eval,
    remove_spectral_norm,
    remove_weight_norm,
    skip_init,
    spectral_norm,
    stateless,
    weight_norm,
)
from tracegrad.nn.utils import parametrizations as PZ
from tracegrad.nn.utils import parametrize as P

from ._oracle import assert_close, copy_weights, to_np

WN_DEPRECATED = ("`torch.nn.utils.weight_norm` is deprecated in favor of "
                 "`torch.nn.utils.parametrizations.weight_norm`.")


@pytest.fixture(autouse=True)
def _seeded():
    tg.manual_seed(0)


def _wn(module, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        return weight_norm(module, *args, **kwargs)


def _roundtrip(obj):
    buf = io.BytesIO()
    tg.save(obj, buf)
    buf.seek(0)
    return tg.load(buf)


def _norm_except(v, dim):
    """numpy: ||v|| over all dims but ``dim`` (None: whole tensor), kept."""
    if dim is None:
        return np.sqrt((v ** 2).sum())
    axes = tuple(a for a in range(v.ndim) if a != dim % v.ndim)
    return np.sqrt((v ** 2).sum(axis=axes, keepdims=True))


class Symmetric(nn.Module):
    def forward(self, X):
        return X.triu() + X.triu(1).mT

    def right_inverse(self, A):
        return A.triu()


class Counted(nn.Module):
    calls = 0

    def forward(self, X):
        Counted.calls += 1
        return X * 2.0

    def right_inverse(self, Y):
        return Y / 2.0


class RankOne(nn.Module):
    def forward(self, x, y):
        return x.unsqueeze(-1) @ y.unsqueeze(-2)

    def right_inverse(self, Z):
        U, S, Vh = tg.linalg.svd(Z, full_matrices=False)
        s = S[0].sqrt().unsqueeze(-1)
        return U[..., :, 0] * s, Vh[..., 0, :] * s


# -- weight_norm (hook) -----------------------------------------------------------------------

@pytest.mark.parametrize("dim", [0, 1, 2, -2, None])
def test_weight_norm_is_g_times_v_over_its_norm_per_dim(dim):
    conv = nn.Conv2d(2, 3, 3)
    w0 = conv.weight.detach().numpy().copy()
    _wn(conv, dim=dim)
    g, v = conv.weight_g.detach().numpy().copy(), conv.weight_v.detach().numpy().copy()
    np.testing.assert_allclose(v, w0)
    np.testing.assert_allclose(g, _norm_except(w0, dim), rtol=1e-6)
    assert g.shape == (() if dim is None else tuple(3 if a == 0 else 1 for a in range(4)) if dim == 0
                       else _norm_except(w0, dim).shape)
    with tg.no_grad():
        conv.weight_g.mul_(2.0)
    conv(tg.randn(1, 2, 5, 5))
    np.testing.assert_allclose(conv.weight.detach().numpy(), 2.0 * g * v / _norm_except(v, dim), rtol=1e-5)


def test_weight_norm_parameters_state_dict_and_warning():
    with pytest.warns(FutureWarning, match=r"`torch\.nn\.utils\.weight_norm` is deprecated in favor of "
                                           r"`torch\.nn\.utils\.parametrizations\.weight_norm`\."):
        m = weight_norm(nn.Linear(4, 3))
    assert [n for n, _ in m.named_parameters()] == ["bias", "weight_g", "weight_v"]
    assert list(m.state_dict()) == ["bias", "weight_g", "weight_v"]
    assert isinstance(m.weight, tg.Tensor) and not isinstance(m.weight, nn.Parameter)
    assert tuple(m.weight_g.shape) == (3, 1)
    assert repr(m) == "Linear(in_features=4, out_features=3, bias=True)"
    other = _wn(nn.Linear(4, 3))
    other.load_state_dict(_roundtrip(m.state_dict()))
    x = tg.randn(2, 4)
    np.testing.assert_allclose(other(x).detach().numpy(), m(x).detach().numpy(), rtol=1e-6)


def test_weight_norm_gradients_match_finite_differences():
    g = tg.rand(3, 1, dtype=tg.float64, requires_grad=True)
    v = tg.randn(3, 4, dtype=tg.float64, requires_grad=True)
    x = tg.randn(5, 4, dtype=tg.float64)
    m = _wn(nn.Linear(4, 3).double())

    def f(g, v):
        return stateless.functional_call(m, {"weight_g": g, "weight_v": v}, (x,))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        assert tg.autograd.gradcheck(f, (g, v))
    from tracegrad.nn.utils.weight_norm import _weight_norm
    for dim, g_shape in ((0, (3, 1)), (1, (1, 4)), (-1, ())):
        g = tg.rand(*g_shape, dtype=tg.float64, requires_grad=True)
        assert tg.autograd.gradcheck(lambda g, v, dim=dim: _weight_norm(v, g, dim), (g, v))


def test_remove_weight_norm_restores_a_parameter_and_errors():
    m = _wn(nn.Linear(4, 3))
    with pytest.raises(RuntimeError, match="Cannot register two weight_norm hooks on the same parameter weight"):
        _wn(m)
    with tg.no_grad():
        m.weight_g.mul_(0.5)
    expected = (m.weight_g * m.weight_v / m.weight_v.norm(dim=1, keepdim=True)).detach().numpy()
    assert remove_weight_norm(m) is m
    assert isinstance(m.weight, nn.Parameter) and list(m.state_dict()) == ["bias", "weight"]
    np.testing.assert_allclose(m.weight.detach().numpy(), expected, rtol=1e-6)
    assert not m._forward_pre_hooks and not m._hooked
    with pytest.raises(ValueError, match=r"weight_norm of 'weight' not found in Linear\(in_features=4"):
        remove_weight_norm(m)
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of \[-2, 1\], "
                                         r"but got 5\)"):
        _wn(nn.Linear(3, 2), dim=5)


def test_weight_norm_of_a_vector_and_uninitialized():
    m = _wn(nn.Linear(3, 2), name="bias")
    np.testing.assert_allclose(m.bias_g.detach().numpy(), np.abs(m.bias_v.detach().numpy()))
    with pytest.raises(ValueError, match="can't have uninitialized parameters"):
        _wn(nn.LazyLinear(3))


# -- spectral_norm (hook) ---------------------------------------------------------------------

def test_spectral_norm_sigma_matches_svd_after_power_iterations():
    rng = np.random.default_rng(0)
    U = np.linalg.qr(rng.standard_normal((5, 5)))[0]
    V = np.linalg.qr(rng.standard_normal((6, 5)))[0]
    w = (U * [3.0, 2.0, 1.0, 0.5, 0.1]) @ V.T  # a clear gap: the power method converges fast
    m = nn.Linear(6, 5)
    with tg.no_grad():
        m.weight.copy_(tg.tensor(w, dtype=tg.float32))
    spectral_norm(m, n_power_iterations=100)
    m(tg.randn(2, 6))
    sigma = np.linalg.svd(w, compute_uv=False)[0]
    np.testing.assert_allclose(m.weight.detach().numpy(), w / sigma, rtol=1e-4, atol=1e-6)
    assert np.linalg.svd(m.weight.detach().numpy(), compute_uv=False)[0] == pytest.approx(1.0, abs=1e-4)


def test_spectral_norm_training_updates_u_v_in_place_eval_does_not():
    m = spectral_norm(nn.Conv2d(3, 4, 3))
    u, v = m.weight_u, m.weight_v
    assert tuple(u.shape) == (4,) and tuple(v.shape) == (27,)
    before = u.detach().numpy().copy()
    m(tg.randn(1, 3, 5, 5))
    assert m.weight_u is u and m.weight_v is v and not np.allclose(u.detach().numpy(), before)
    m.eval()
    before = u.detach().numpy().copy()
    m(tg.randn(1, 3, 5, 5))
    np.testing.assert_array_equal(u.detach().numpy(), before)
    W = m.weight_orig.detach().numpy().reshape(4, -1)
    sigma = before @ W @ v.detach().numpy()
    np.testing.assert_allclose(m.weight.detach().numpy(), m.weight_orig.detach().numpy() / sigma, rtol=1e-5)


def test_spectral_norm_transposed_conv_uses_dim_1_and_keys():
    m = spectral_norm(nn.ConvTranspose2d(3, 5, 2))
    assert tuple(m.weight_u.shape) == (5,) and tuple(m.weight_v.shape) == (12,)
    sd = m.state_dict()
    assert list(sd) == ["bias", "weight_orig", "weight_u", "weight_v"]
    assert sd._metadata[""]["spectral_norm"] == {"weight.version": 1}
    assert [n for n, _ in m.named_parameters()] == ["bias", "weight_orig"]
    assert isinstance(m.weight, tg.Tensor) and not isinstance(m.weight, nn.Parameter)


def test_spectral_norm_gradients_match_finite_differences():
    m = spectral_norm(nn.Linear(4, 3).double()).eval()
    x = tg.randn(2, 4, dtype=tg.float64)
    w = tg.randn(3, 4, dtype=tg.float64, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        assert tg.autograd.gradcheck(lambda w: stateless.functional_call(m, {"weight_orig": w}, (x,)), (w,))


def test_spectral_norm_state_dict_roundtrip_and_version_0_conversion():
    m = spectral_norm(nn.Linear(5, 4))
    for _ in range(10):
        m(tg.randn(2, 5))
    m.eval()
    other = spectral_norm(nn.Linear(5, 4)).eval()
    other.load_state_dict(_roundtrip(m.state_dict()))  # (metadata is not saved: keys tell the version)
    x = tg.randn(3, 5)
    np.testing.assert_allclose(other(x).detach().numpy(), m(x).detach().numpy(), rtol=1e-5)
    # a version-0 dict: the normalized weight itself, no v (solved for on load)
    old = {"bias": m.bias.detach(), "weight_orig": m.weight_orig.detach(), "weight": m.weight.detach(),
           "weight_u": m.weight_u.detach()}
    fresh = spectral_norm(nn.Linear(5, 4)).eval()
    fresh.load_state_dict(old)
    np.testing.assert_allclose(fresh(x).detach().numpy(), m(x).detach().numpy(), rtol=1e-4, atol=1e-5)


def test_remove_spectral_norm_and_errors():
    m = spectral_norm(nn.Linear(4, 3))
    with pytest.raises(RuntimeError, match="Cannot register two spectral_norm hooks on the same parameter weight"):
        spectral_norm(m)
    with pytest.raises(ValueError, match="Expected n_power_iterations to be positive, but got "
                                         "n_power_iterations=0"):
        spectral_norm(nn.Linear(4, 3), n_power_iterations=0)
    m.eval()
    m(tg.randn(1, 4))
    expected = m.weight.detach().numpy()
    remove_spectral_norm(m)
    assert isinstance(m.weight, nn.Parameter) and list(m.state_dict()) == ["bias", "weight"]
    np.testing.assert_allclose(m.weight.detach().numpy(), expected, rtol=1e-6)
    assert not m._state_dict_hooks and not m._load_state_dict_pre_hooks and not m._hooked
    with pytest.raises(ValueError, match="spectral_norm of 'weight' not found in"):
        remove_spectral_norm(m)


# -- parametrize ------------------------------------------------------------------------------

def test_register_parametrization_swaps_class_and_moves_the_tensor():
    m = nn.Linear(3, 3)
    original = m.weight
    w0 = original.detach().numpy().copy()
    assert P.register_parametrization(m, "weight", Symmetric()) is m
    assert type(m).__name__ == "ParametrizedLinear" and isinstance(m, nn.Linear)
    assert P.type_before_parametrizations(m) is nn.Linear and P.type_before_parametrizations(nn.ReLU()) is nn.ReLU
    assert P.is_parametrized(m) and P.is_parametrized(m, "weight") and not P.is_parametrized(m, "bias")
    assert m.parametrizations.weight.original is original  # same object (the optimizer's)
    np.testing.assert_allclose(original.detach().numpy(), np.triu(w0))  # right_inverse applied
    W = m.weight.detach().numpy()
    np.testing.assert_allclose(W, np.triu(w0) + np.triu(w0, 1).T)
    assert list(m.state_dict()) == ["bias", "parametrizations.weight.original"]
    assert [n for n, _ in m.named_parameters()] == ["bias", "parametrizations.weight.original"]
    assert type(nn.Linear(3, 3)) is nn.Linear  # other instances keep their class
    assert repr(m) == ("ParametrizedLinear(\n  in_features=3, out_features=3, bias=True\n"
                       "  (parametrizations): ModuleDict(\n    (weight): ParametrizationList(\n"
                       "      (0): Symmetric()\n    )\n  )\n)")


def test_gradients_flow_through_the_parametrization():
    m = P.register_parametrization(nn.Linear(3, 3).double(), "weight", Symmetric())
    x = tg.randn(4, 3, dtype=tg.float64)
    m(x).sum().backward()
    X = m.parametrizations.weight.original
    G = (tg.ones(4, 3, dtype=tg.float64).mT @ x).numpy()  # dL/dW
    np.testing.assert_allclose(X.grad.numpy(), np.triu(G) + np.tril(G, -1).T, rtol=1e-10)
    X2 = tg.randn(3, 3, dtype=tg.float64, requires_grad=True)
    assert tg.autograd.gradcheck(
        lambda X: tg.func.functional_call(m, {"parametrizations.weight.original": X}, (x,)), (X2,))


def test_assigning_runs_right_inverse_in_place():
    m = P.register_parametrization(nn.Linear(3, 3), "weight", Symmetric())
    original = m.parametrizations.weight.original
    version = original._version
    A = tg.randn(3, 3)
    S = A + A.mT
    m.weight = S
    assert m.parametrizations.weight.original is original and original._version > version
    np.testing.assert_allclose(m.weight.detach().numpy(), S.numpy(), rtol=1e-6)
    opt = tg.optim.SGD(m.parameters(), lr=0.1)
    m(tg.randn(2, 3)).sum().backward()
    opt.step()  # the optimizer holds the original
    W = m.weight.detach().numpy()
    np.testing.assert_allclose(W, W.T)
    with pytest.raises(KeyError, match="attribute 'weight' already exists"):
        m.weight = nn.Parameter(tg.randn(3, 3))


def test_several_parametrizations_compose_and_unsafe():
    m = nn.Linear(3, 3, bias=False)
    P.register_parametrization(m, "weight", Symmetric())
    P.register_parametrization(m, "weight", Counted())
    assert len(m.parametrizations.weight) == 2
    X = m.parametrizations.weight.original.detach().numpy()
    np.testing.assert_allclose(m.weight.detach().numpy(), 2.0 * (np.triu(X) + np.triu(X, 1).T), rtol=1e-6)
    m.weight = 2.0 * tg.eye(3)
    np.testing.assert_allclose(m.weight.detach().numpy(), 2.0 * np.eye(3), rtol=1e-6)

    class Head(nn.Module):
        def forward(self, X):
            return X[:2]
    with pytest.raises(ValueError, match=r"may not change the shape of the tensor, unless the `unsafe` flag"):
        P.register_parametrization(m, "weight", Head())
    P.register_parametrization(m, "weight", Head(), unsafe=True)
    assert tuple(m.weight.shape) == (2, 3) and m.parametrizations.weight.unsafe
    with pytest.raises(ValueError, match=r"may not change the shape of the tensor, unless `unsafe` flag is "
                                         r"enabled\.\nunparametrized shape: .*\[3, 3\]\)\nparametrized shape: "
                                         r".*\[2, 3\]\)"):
        P.register_parametrization(nn.Linear(3, 3), "weight", Head())
    lin = nn.Linear(3, 3, bias=False)
    P.register_parametrization(lin, "weight", Head(), unsafe=True)
    assert tuple(lin(tg.randn(4, 3)).shape) == (4, 2)


def test_right_inverse_with_several_tensors_and_buffers():
    m = nn.Linear(4, 4)
    with tg.no_grad():
        m.weight.copy_(tg.outer(tg.arange(1.0, 5.0), tg.tensor([1.0, -1.0, 2.0, 0.5])))
    W = m.weight.detach().numpy().copy()
    P.register_parametrization(m, "weight", RankOne())
    plist = m.parametrizations.weight
    assert not plist.is_tensor and plist.ntensors == 2 and not hasattr(plist, "original")
    assert list(m.state_dict()) == ["bias", "parametrizations.weight.original0",
                                    "parametrizations.weight.original1"]
    np.testing.assert_allclose(m.weight.detach().numpy(), W, rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match=r"Cannot leave unparametrized \(`leave_parametrized=False`\) a tensor "
                                         "that is parametrized in terms of a sequence of tensors."):
        P.remove_parametrizations(m, "weight", leave_parametrized=False)
    P.remove_parametrizations(m, "weight")
    assert type(m) is nn.Linear and isinstance(m.weight, nn.Parameter) and m.weight.is_leaf
    np.testing.assert_allclose(m.weight.detach().numpy(), W, rtol=1e-4, atol=1e-5)

    b = nn.Linear(3, 3)
    b.register_buffer("buf", tg.randn(3))
    P.register_parametrization(b, "buf", Counted())
    assert [n for n, _ in b.named_buffers()] == ["parametrizations.buf.original"]
    assert list(b.state_dict()) == ["weight", "bias", "parametrizations.buf.original"]


def test_cached_computes_each_parametrized_tensor_once():
    m = P.register_parametrization(nn.Linear(3, 3), "weight", Counted())
    Counted.calls = 0
    assert m.weight is not m.weight and Counted.calls == 2
    Counted.calls = 0
    with P.cached():
        a = m.weight
        with P.cached():
            assert m.weight is a
        assert m.weight is a
    assert Counted.calls == 1
    assert m.weight is not a and Counted.calls == 2


def test_remove_parametrizations_leave_or_restore():
    m = P.register_parametrization(nn.Linear(3, 3), "weight", Counted())
    P.register_parametrization(m, "bias", Counted())
    original = m.parametrizations.weight.original
    X = original.detach().numpy().copy()
    P.remove_parametrizations(m, "weight")  # leaves 2 * X, in the same Parameter
    assert type(m).__name__ == "ParametrizedLinear" and m.weight is original
    np.testing.assert_allclose(m.weight.detach().numpy(), 2.0 * X)
    b = m.parametrizations.bias.original
    P.remove_parametrizations(m, "bias", leave_parametrized=False)
    assert type(m) is nn.Linear and m.bias is b and not hasattr(m, "parametrizations")
    assert list(m.state_dict()) == ["weight", "bias"]
    with pytest.raises(ValueError, match=r"Module Linear\(in_features=3, out_features=3, bias=True\) does not "
                                         "have a parametrization on weight"):
        P.remove_parametrizations(m, "weight")


def test_parametrization_errors():
    with pytest.raises(ValueError, match=r"Module 'Linear\(in_features=3, out_features=3, bias=True\)' does not "
                                         "have a parameter, a buffer, or a parametrized element with name 'foo'"):
        P.register_parametrization(nn.Linear(3, 3), "foo", Counted())
    m = P.register_parametrization(nn.Linear(3, 3), "weight", nn.Identity())
    with pytest.raises(RuntimeError, match="parametrization Identity does not implement right_inverse."):
        m.weight = tg.eye(3)

    class ToDouble(nn.Module):
        def forward(self, X):
            return X.double()
    with pytest.raises(ValueError, match="may not change the dtype of the tensor"):
        P.register_parametrization(nn.Linear(3, 3), "weight", ToDouble())
    with pytest.raises(ValueError, match="ParametrizationList requires one or more modules."):
        P.ParametrizationList([], tg.zeros(2))


def test_parametrized_state_dict_roundtrip_deepcopy_and_no_pickling():
    m = P.register_parametrization(nn.Linear(3, 3), "weight", Symmetric())
    other = P.register_parametrization(nn.Linear(3, 3), "weight", Symmetric())
    other.load_state_dict(_roundtrip(m.state_dict()))
    x = tg.randn(2, 3)
    np.testing.assert_allclose(other(x).detach().numpy(), m(x).detach().numpy(), rtol=1e-6)
    refusal = r"Serialization of parametrized modules is only supported through state_dict\(\)"
    with pytest.raises(RuntimeError, match=refusal):
        pickle.dumps(m)
    with pytest.raises((RuntimeError, TypeError), match=refusal):  # (tracegrad.save names where it failed)
        tg.save(m, io.BytesIO())
    c = copy.deepcopy(m)
    assert type(c) is type(m) and c.parametrizations.weight.original is not m.parametrizations.weight.original
    np.testing.assert_allclose(c(x).detach().numpy(), m(x).detach().numpy(), rtol=1e-6)
    with tg.no_grad():
        c.parametrizations.weight.original.zero_()
    assert not np.allclose(m.weight.detach().numpy(), 0.0)
    assert any(p is c.parametrizations.weight.original for p in c.parameters())


def test_transfer_parametrizations_and_params():
    src = P.register_parametrization(nn.Linear(3, 3), "weight", Symmetric())
    dst = nn.Linear(3, 3)
    P.transfer_parametrizations_and_params(src, dst)
    assert P.is_parametrized(dst, "weight")
    np.testing.assert_allclose(dst.weight.detach().numpy(), src.weight.detach().numpy())


# -- parametrizations -------------------------------------------------------------------------

@pytest.mark.parametrize("orthogonal_map", ["matrix_exp", "cayley", "householder"])
@pytest.mark.parametrize("use_trivialization", [True, False])
@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (4, 4), (2, 4, 3)])
def test_orthogonal_gives_orthonormal_columns_or_rows(orthogonal_map, use_trivialization, shape):
    m = nn.Module()
    m.weight = nn.Parameter(tg.randn(*shape, dtype=tg.float64))
    PZ.orthogonal(m, orthogonal_map=orthogonal_map, use_trivialization=use_trivialization)
    Q = m.weight.detach().numpy()
    G = Q.swapaxes(-1, -2) @ Q if shape[-2] >= shape[-1] else Q @ Q.swapaxes(-1, -2)
    np.testing.assert_allclose(G, np.broadcast_to(np.eye(G.shape[-1]), G.shape), atol=1e-10)
    X = m.parametrizations.weight.original
    keys = ["parametrizations.weight.original"] + (["parametrizations.weight.0.base"] if use_trivialization else [])
    assert list(m.state_dict()) == keys
    Xt = (X.detach() + 0.1 * tg.randn(*X.shape, dtype=tg.float64)).requires_grad_()
    keep = tg.ones(*shape, dtype=tg.float64)
    if orthogonal_map == "householder":  # its diagonal only carries signs (through .int()): held fixed
        keep.diagonal(dim1=-2, dim2=-1).zero_()
    fixed = X.detach() * (1 - keep)
    C = tg.randn(*shape, dtype=tg.float64)
    assert tg.autograd.gradcheck(lambda X: (m.parametrizations.weight[0](X * keep + fixed) * C).sum(), (Xt,))


def test_orthogonal_keeps_an_orthogonal_value_and_accepts_assignment():
    Q0 = np.linalg.qr(np.random.default_rng(0).standard_normal((4, 4)))[0]
    m = nn.Linear(4, 4)
    with tg.no_grad():
        m.weight.copy_(tg.tensor(Q0, dtype=tg.float32))
    PZ.orthogonal(m)
    np.testing.assert_allclose(m.weight.detach().numpy(), Q0, atol=1e-5)
    Q1 = np.linalg.qr(np.random.default_rng(1).standard_normal((4, 4)))[0]
    m.weight = tg.tensor(Q1, dtype=tg.float32)
    np.testing.assert_allclose(m.weight.detach().numpy(), Q1, atol=1e-5)
    h = PZ.orthogonal(nn.Linear(3, 5), orthogonal_map="householder", use_trivialization=False)
    Q2 = np.linalg.qr(np.random.default_rng(2).standard_normal((5, 3)))[0]
    h.weight = tg.tensor(Q2, dtype=tg.float32)
    np.testing.assert_allclose(h.weight.detach().numpy(), Q2, atol=1e-5)
    with pytest.raises(NotImplementedError, match="It is not possible to assign to the matrix exponential or "
                                                  "the Cayley parametrizations when use_trivialization=False."):
        PZ.orthogonal(nn.Linear(3, 3), use_trivialization=False).weight = tg.eye(3)
    with pytest.raises(ValueError, match="Expected a matrix or batch of matrices of shape"):
        m.weight = tg.eye(3)


def test_orthogonal_errors():
    with pytest.raises(ValueError, match="Expected a matrix or batch of matrices. Got a tensor of 1 dimensions."):
        PZ.orthogonal(nn.Linear(3, 3), name="bias")
    with pytest.raises(ValueError, match='orthogonal_map has to be one of "matrix_exp", "cayley", '
                                         '"householder". Got: qr'):
        PZ.orthogonal(nn.Linear(3, 3), orthogonal_map="qr")
    with pytest.raises(ValueError, match=r"Module 'Linear\(.*\)' has no parameter or buffer with name 'foo'"):
        PZ.orthogonal(nn.Linear(3, 3), name="foo")
    assert PZ.orthogonal(nn.Linear(3, 5)).parametrizations.weight[0].orthogonal_map.name == "householder"


def test_parametrized_weight_norm_values_keys_and_old_state_dicts():
    m = nn.Conv1d(2, 3, 3)
    w0 = m.weight.detach().numpy().copy()
    PZ.weight_norm(m, dim=1)
    g = m.parametrizations.weight.original0.detach().numpy()
    v = m.parametrizations.weight.original1.detach().numpy()
    np.testing.assert_allclose(g, _norm_except(w0, 1), rtol=1e-6)
    np.testing.assert_allclose(v, w0)
    np.testing.assert_allclose(m.weight.detach().numpy(), w0, rtol=1e-5, atol=1e-7)
    assert list(m.state_dict()) == ["bias", "parametrizations.weight.original0", "parametrizations.weight.original1"]
    old = _wn(nn.Linear(4, 3))
    with tg.no_grad():
        old.weight_g.mul_(3.0)
    new = PZ.weight_norm(nn.Linear(4, 3))
    new.load_state_dict(_roundtrip(old.state_dict()))
    x = tg.randn(2, 4)
    np.testing.assert_allclose(new(x).detach().numpy(), old(x).detach().numpy(), rtol=1e-5)
    P.remove_parametrizations(new, "weight")
    assert type(new) is nn.Linear and isinstance(new.weight, nn.Parameter)


def test_parametrized_spectral_norm():
    m = PZ.spectral_norm(nn.Linear(7, 5), n_power_iterations=1)
    assert [n for n, _ in m.named_buffers()] == ["parametrizations.weight.0._u", "parametrizations.weight.0._v"]
    for _ in range(30):
        W = m.weight
    assert np.linalg.svd(W.detach().numpy(), compute_uv=False)[0] == pytest.approx(1.0, abs=1e-4)
    m.eval()
    u = m.parametrizations.weight[0]._u.detach().numpy().copy()
    assert m.weight.shape == (5, 7)  # (an access in eval mode: no iteration)
    np.testing.assert_array_equal(m.parametrizations.weight[0]._u.detach().numpy(), u)
    vec = nn.Module()
    vec.w = nn.Parameter(tg.tensor([3.0, 4.0]))
    PZ.spectral_norm(vec, name="w")
    np.testing.assert_allclose(vec.w.detach().numpy(), [0.6, 0.8], rtol=1e-6)
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of \[-2, 1\] but got 3\)"):
        PZ.spectral_norm(nn.Linear(3, 3), dim=3)
    t = PZ.spectral_norm(nn.ConvTranspose1d(2, 4, 3))
    assert tuple(t.parametrizations.weight[0]._u.shape) == (4,)


# -- fusion, skip_init, stateless -------------------------------------------------------------

def _trained_bn(bn, shape):
    bn.train()
    for _ in range(3):
        bn(tg.randn(*shape) * 2.0 + 1.0)
    with tg.no_grad():
        bn.weight.copy_(tg.rand(bn.num_features) + 0.5)
        bn.bias.copy_(tg.randn(bn.num_features))
    return bn.eval()


@pytest.mark.parametrize("bias", [True, False])
def test_fuse_conv_bn_eval_equals_conv_then_bn(bias):
    conv = nn.Conv2d(3, 4, 3, bias=bias).eval()
    bn = _trained_bn(nn.BatchNorm2d(4), (8, 4, 5, 5))
    fused = fuse_conv_bn_eval(conv, bn)
    assert fused is not conv and type(fused) is nn.Conv2d and isinstance(fused.bias, nn.Parameter)
    x = tg.randn(2, 3, 7, 7)
    np.testing.assert_allclose(fused(x).detach().numpy(), bn(conv(x)).detach().numpy(), rtol=1e-5, atol=1e-5)
    convt = nn.ConvTranspose2d(3, 4, 2).eval()
    fused_t = fuse_conv_bn_eval(convt, bn, transpose=True)
    np.testing.assert_allclose(fused_t(x).detach().numpy(), bn(convt(x)).detach().numpy(), rtol=1e-5, atol=1e-5)
    with pytest.raises(AssertionError, match="Fusion only for eval!"):
        fuse_conv_bn_eval(conv.train(), bn)
    w, b = fuse_conv_bn_weights(conv.weight, None, bn.running_mean, bn.running_var, bn.eps, None, None)
    assert isinstance(w, nn.Parameter) and w.requires_grad and not b.requires_grad


def test_fuse_linear_bn_eval_equals_linear_then_bn():
    lin = nn.Linear(5, 4).eval()
    bn = _trained_bn(nn.BatchNorm1d(4), (16, 4))
    fused = fuse_linear_bn_eval(lin, bn)
    x = tg.randn(3, 5)
    np.testing.assert_allclose(fused(x).detach().numpy(), bn(lin(x)).detach().numpy(), rtol=1e-5, atol=1e-5)
    with pytest.raises(AssertionError, match="To fuse, linear.out_features == bn.num_features or "
                                             "bn.num_features == 1, got linear.out_features=4 and "
                                             "bn.num_features=3"):
        fuse_linear_bn_eval(lin, nn.BatchNorm1d(3).eval())


def test_skip_init():
    m = skip_init(nn.Linear, 5, 2)
    assert type(m) is nn.Linear and tuple(m.weight.shape) == (2, 5) and m.weight.requires_grad
    m = skip_init(nn.Linear, in_features=6, out_features=1, dtype=tg.float64)
    assert m.weight.dtype == tg.float64 and m.weight.device == tg.device("cpu")
    tg.manual_seed(0)
    first = tg.rand(1).item()
    tg.manual_seed(0)
    skip_init(nn.Linear, 50, 50)  # (built on meta: its initialization draws nothing)
    assert tg.rand(1).item() == first
    with pytest.raises(RuntimeError, match="Module must support a 'device' arg to skip initialization"):
        skip_init(nn.ReLU)
    with pytest.raises(RuntimeError, match="Expected a Module; got <class 'int'>"):
        skip_init(int)


def test_stateless_functional_call():
    m = nn.Linear(3, 2)
    w = tg.zeros(2, 3)
    with pytest.warns(FutureWarning, match=r"`torch\.nn\.utils\.stateless\.functional_call` is deprecated"):
        out = stateless.functional_call(m, {"weight": w}, tg.ones(1, 3))
    np.testing.assert_allclose(out.detach().numpy(), m.bias.detach().numpy()[None], rtol=1e-6)
    assert m.weight is not w
    p = P.register_parametrization(nn.Linear(3, 3), "weight", Counted())
    X = tg.eye(3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        out = stateless.functional_call(p, {"parametrizations.weight.original": X}, (tg.ones(1, 3),))
    np.testing.assert_allclose(out.detach().numpy(), 2.0 + p.bias.detach().numpy()[None], rtol=1e-6)
    s = P.register_parametrization(nn.Linear(3, 3), "weight", Symmetric())  # by its own name: right_inverse
    kept = s.parametrizations.weight.original.detach().numpy().copy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        out = stateless.functional_call(s, {"weight": 3.0 * tg.eye(3)}, (tg.ones(1, 3),))
    np.testing.assert_allclose(out.detach().numpy(), 3.0 + s.bias.detach().numpy()[None], rtol=1e-6)
    np.testing.assert_allclose(s.parametrizations.weight.original.detach().numpy(), kept, rtol=1e-6)


# -- PyTorch oracle ---------------------------------------------------------------------------

def _pair(build, prepare):
    """(torch module, tracegrad module) built alike, prepared by ``prepare(nn_namespace, m)``,
    with the tracegrad one's weights synced from torch's by state_dict name."""
    import torch
    t = prepare(torch.nn, build(torch.nn))
    o = prepare(nn, build(nn))
    copy_weights(t, o)
    return t, o


def _check(t, o, x, train=True):
    import torch
    t.train(train)
    o.train(train)
    tx = torch.tensor(x, requires_grad=True)
    ox = tg.tensor(x, requires_grad=True)
    ty, oy = t(tx), o(ox)
    assert_close(oy, ty, what="output")
    gy = np.random.default_rng(1).standard_normal(tuple(ty.shape)).astype(np.float32)
    ty.backward(torch.tensor(gy))
    oy.backward(tg.tensor(gy))
    assert_close(ox.grad, tx.grad, what="input grad")
    tp = dict(t.named_parameters())
    assert [n for n, _ in o.named_parameters()] == list(tp)
    for name, p in o.named_parameters():
        assert_close(p.grad, tp[name].grad, what=f"{name}.grad")
    tb = dict(t.named_buffers())
    for name, b in o.named_buffers():
        assert_close(b, tb[name], what=f"buffer {name}")
    assert list(o.state_dict()) == list(t.state_dict())
    assert repr(o) == repr(t)


@pytest.mark.torch
@pytest.mark.parametrize("dim", [0, 1, None])
def test_weight_norm_hook_against_torch(dim):
    import torch
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        t, o = _pair(lambda n: n.Conv2d(2, 3, 3), lambda n, m: (torch.nn.utils if n is torch.nn
                                                                 else tg.nn.utils).weight_norm(m, dim=dim))
    _check(t, o, np.random.default_rng(0).standard_normal((2, 2, 6, 6)).astype(np.float32))


@pytest.mark.torch
@pytest.mark.parametrize("train", [True, False])
def test_spectral_norm_hook_against_torch(train):
    import torch
    t, o = _pair(lambda n: n.Linear(5, 4), lambda n, m: (torch.nn.utils if n is torch.nn else tg.nn.utils)
                 .spectral_norm(m, n_power_iterations=2))
    x = np.random.default_rng(0).standard_normal((3, 5)).astype(np.float32)
    _check(t, o, x, train)
    assert t.state_dict()._metadata[""] == o.state_dict()._metadata[""]


def _parametrizations(n):
    import torch
    return torch.nn.utils.parametrizations if n is torch.nn else PZ


@pytest.mark.torch
@pytest.mark.parametrize("train", [True, False])
@pytest.mark.parametrize("which", ["weight_norm", "spectral_norm", "orth_exp", "orth_cayley", "orth_hh",
                                   "orth_hh_notriv"])
def test_parametrizations_against_torch(which, train):
    def prepare(n, m):
        pz = _parametrizations(n)
        if which == "weight_norm":
            return pz.weight_norm(m, dim=1)
        if which == "spectral_norm":
            return pz.spectral_norm(m)
        maps = {"orth_exp": "matrix_exp", "orth_cayley": "cayley", "orth_hh": "householder",
                "orth_hh_notriv": "householder"}
        return pz.orthogonal(m, orthogonal_map=maps[which], use_trivialization=which != "orth_hh_notriv")
    t, o = _pair(lambda n: n.Linear(4, 6), prepare)
    _check(t, o, np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32), train)


@pytest.mark.torch
def test_orthogonal_registration_matches_torch_values():
    import torch
    w = np.random.default_rng(3).standard_normal((4, 4)).astype(np.float32)
    for use_trivialization, orthogonal_map in [(True, "matrix_exp"), (False, "householder"),
                                               (True, "householder")]:
        tm, om = torch.nn.Linear(4, 4), nn.Linear(4, 4)
        with torch.no_grad():
            tm.weight.copy_(torch.tensor(w))
        with tg.no_grad():
            om.weight.copy_(tg.tensor(w))
        torch.nn.utils.parametrizations.orthogonal(tm, orthogonal_map=orthogonal_map,
                                                   use_trivialization=use_trivialization)
        PZ.orthogonal(om, orthogonal_map=orthogonal_map, use_trivialization=use_trivialization)
        assert_close(om.weight, tm.weight, atol=1e-5, what=orthogonal_map)
        assert_close(om.parametrizations.weight.original, tm.parametrizations.weight.original, atol=1e-5)


@pytest.mark.torch
def test_custom_parametrization_against_torch():
    import torch

    def prepare(n, m):
        class Sym(n.Module):
            def forward(self, X):
                return X.triu() + X.triu(1).mT
        if n is torch.nn:
            torch.nn.utils.parametrize.register_parametrization(m, "weight", Sym())
            torch.nn.utils.parametrize.register_parametrization(m, "bias", n.Tanh())
        else:
            P.register_parametrization(m, "weight", Sym())
            P.register_parametrization(m, "bias", n.Tanh())
        return m
    t, o = _pair(lambda n: n.Linear(4, 4), prepare)
    assert type(o).__name__ == type(t).__name__
    _check(t, o, np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32))
    torch.nn.utils.parametrize.remove_parametrizations(t, "weight", leave_parametrized=True)
    P.remove_parametrizations(o, "weight", leave_parametrized=True)
    assert repr(o) == repr(t) and list(o.state_dict()) == list(t.state_dict())
    assert_close(o.weight, t.weight)


@pytest.mark.torch
def test_fusion_against_torch():
    import torch
    from torch.nn.utils import fuse_conv_bn_eval as t_fuse
    from torch.nn.utils import fuse_linear_bn_eval as t_fuse_linear
    rng = np.random.default_rng(0)
    for build, x in [(lambda n: n.Sequential(n.Conv2d(3, 4, 3), n.BatchNorm2d(4)), rng.standard_normal((2, 3, 6, 6))),
                     (lambda n: n.Sequential(n.Linear(5, 4), n.BatchNorm1d(4)), rng.standard_normal((3, 5)))]:
        t, o = build(torch.nn), build(nn)
        with torch.no_grad():
            t[1].running_mean.copy_(torch.randn(4))
            t[1].running_var.copy_(torch.rand(4) + 0.5)
            t[1].weight.copy_(torch.randn(4))
        copy_weights(t, o)
        t.eval()
        o.eval()
        fuse_t = t_fuse if isinstance(t[0], torch.nn.Conv2d) else t_fuse_linear
        fuse_o = fuse_conv_bn_eval if isinstance(o[0], nn.Conv2d) else fuse_linear_bn_eval
        ft, fo = fuse_t(t[0], t[1]), fuse_o(o[0], o[1])
        assert_close(fo.weight, ft.weight, atol=1e-5)
        assert_close(fo.bias, ft.bias, atol=1e-5)
        x = x.astype(np.float32)
        assert_close(fo(tg.tensor(x)), ft(torch.tensor(x)), atol=1e-5)
        assert repr(fo) == repr(ft)
    assert to_np(ft.weight).dtype == np.float32


def test_functional_call_sets_a_parametrized_tensor_through_its_setter():
    """As PyTorch: the given value goes through right_inverse for the call, and the tensor
    the property gave before is set back the same way afterwards; a parametrization
    without right_inverse refuses, leaving the module as it was."""
    from tracegrad.nn.utils import parametrize

    class Double(tg.nn.Module):
        def forward(self, X):
            return 2 * X

        def right_inverse(self, W):
            return W / 2

    class NoInverse(tg.nn.Module):
        def forward(self, X):
            return X + 1

    m = tg.nn.Linear(2, 2, bias=False)
    parametrize.register_parametrization(m, "weight", Double())
    before = m.weight.detach().clone()
    W = tg.eye(2) * 3
    out = tg.func.functional_call(m, {"weight": W}, (tg.ones(1, 2),))
    np.testing.assert_allclose(out.detach().numpy(), [[3.0, 3.0]])
    np.testing.assert_allclose(m.weight.detach().numpy(), before.numpy(), rtol=1e-6)
    n = tg.nn.Linear(2, 2, bias=False)
    parametrize.register_parametrization(n, "weight", NoInverse())
    original = n.parametrizations.weight.original.detach().clone()
    with pytest.raises(RuntimeError, match="does not implement right_inverse"):
        tg.func.functional_call(n, {"weight": W}, (tg.ones(1, 2),))
    np.testing.assert_array_equal(n.parametrizations.weight.original.detach().numpy(), original.numpy())
