"""tracegrad.nn.init: in-place initialisers with PyTorch's formulas, signatures and errors."""
import math
import warnings

import numpy as np
import pytest

import tracegrad as tg
from tracegrad.nn import init


def _np(t):
    return t.detach().numpy()


# -- gains and fans -----------------------------------------------------------------------------

@pytest.mark.parametrize("name,param,expected", [
    ("linear", None, 1), ("conv2d", None, 1), ("conv_transpose3d", None, 1), ("sigmoid", None, 1),
    ("tanh", None, 5.0 / 3), ("relu", None, math.sqrt(2.0)), ("selu", None, 0.75),
    ("leaky_relu", None, math.sqrt(2.0 / (1 + 0.01 ** 2))), ("leaky_relu", 0.2, math.sqrt(2.0 / 1.04)),
    ("leaky_relu", 3, math.sqrt(2.0 / 10)), ("leaky_relu", math.sqrt(5), math.sqrt(1.0 / 3))])
def test_calculate_gain(name, param, expected):
    assert init.calculate_gain(name, param) == pytest.approx(expected, rel=1e-12)


def test_calculate_gain_errors():
    with pytest.raises(ValueError, match="Unsupported nonlinearity foo"):
        init.calculate_gain("foo")
    with pytest.raises(ValueError, match="negative_slope True not a valid number"):
        init.calculate_gain("leaky_relu", True)
    with pytest.raises(ValueError, match="negative_slope x not a valid number"):
        init.calculate_gain("leaky_relu", "x")


@pytest.mark.parametrize("shape,fans", [((3, 5), (5, 3)), ((8, 4, 3, 3), (36, 72)), ((2, 6, 5), (30, 10)),
                                        ((0, 3), (3, 0))])
def test_fan_in_and_fan_out(shape, fans):
    assert init._calculate_fan_in_and_fan_out(tg.empty(shape)) == fans


@pytest.mark.parametrize("fn", [init.xavier_uniform_, init.xavier_normal_, init.kaiming_uniform_,
                                init.kaiming_normal_])
def test_fans_need_two_dims(fn):
    with pytest.raises(ValueError, match="Fan in and fan out can not be computed for tensor with fewer "
                                         "than 2 dimensions"):
        fn(tg.empty(5))


# -- the basic fills ------------------------------------------------------------------------------

def test_uniform_in_place_on_a_parameter():
    w = tg.nn.Parameter(tg.zeros(200, 300))
    before = w._version
    assert init.uniform_(w, -0.5, 2.0) is w
    v = _np(w)
    assert w.is_leaf and w.requires_grad and w.grad_fn is None
    assert w._version > before
    assert v.min() >= -0.5 and v.max() < 2.0
    assert abs(v.mean() - 0.75) < 0.01 and abs(v.std() - 2.5 / math.sqrt(12)) < 0.01


def test_normal_statistics_and_dtype():
    w = tg.empty(300, 300, dtype=tg.float64)
    init.normal_(w, mean=3.0, std=0.5)
    assert w.dtype == tg.float64
    assert abs(_np(w).mean() - 3.0) < 0.005 and abs(_np(w).std() - 0.5) < 0.005


def test_fill_functions_and_views():
    w = tg.empty(3, 4)
    init.constant_(w, 0.3)
    np.testing.assert_array_equal(_np(w), np.full((3, 4), 0.3, np.float32))
    init.zeros_(w[1])  # a view writes through to its base
    init.ones_(w[:, 0])
    expected = np.full((3, 4), 0.3, np.float32)
    expected[1] = 0
    expected[:, 0] = 1
    np.testing.assert_array_equal(_np(w), expected)


def test_eye_and_dirac():
    np.testing.assert_array_equal(_np(init.eye_(tg.empty(2, 3))), np.eye(2, 3))
    with pytest.raises(ValueError, match="Only tensors with 2 dimensions are supported"):
        init.eye_(tg.empty(2, 3, 4))
    w = init.dirac_(tg.empty(4, 3, 3, 5))
    expected = np.zeros((4, 3, 3, 5), np.float32)
    for i in range(3):
        expected[i, i, 1, 2] = 1
    np.testing.assert_array_equal(_np(w), expected)
    g = init.dirac_(tg.empty(6, 2, 3), groups=2)
    expected = np.zeros((6, 2, 3), np.float32)
    for grp in range(2):
        for d in range(2):
            expected[grp * 3 + d, d, 1] = 1
    np.testing.assert_array_equal(_np(g), expected)
    with pytest.raises(ValueError, match="Only tensors with 3, 4, or 5 dimensions are supported"):
        init.dirac_(tg.empty(3, 3))
    with pytest.raises(ValueError, match="dim 0 must be divisible by groups"):
        init.dirac_(tg.empty(5, 2, 3), groups=2)


# -- the scaled initialisations: bounds and spreads -----------------------------------------------

def test_xavier_uniform_bound_and_gain():
    w = init.xavier_uniform_(tg.empty(100, 200), gain=2.0)
    bound = 2.0 * math.sqrt(6.0 / 300)
    v = _np(w)
    assert np.abs(v).max() <= bound and np.abs(v).max() > 0.98 * bound
    assert abs(v.std() - bound / math.sqrt(3)) < 0.01 * bound


def test_xavier_normal_std():
    v = _np(init.xavier_normal_(tg.empty(8, 16, 5, 5)))
    assert abs(v.std() - math.sqrt(2.0 / (16 * 25 + 8 * 25))) < 0.003


@pytest.mark.parametrize("kwargs,gain,fan", [
    ({}, math.sqrt(2.0 / (1 + 0.0)), 50), ({"a": math.sqrt(5)}, math.sqrt(1.0 / 3), 50),
    ({"mode": "fan_out", "nonlinearity": "relu"}, math.sqrt(2.0), 40),
    ({"nonlinearity": "tanh"}, 5.0 / 3, 50)])
def test_kaiming_uniform_bound(kwargs, gain, fan):
    v = _np(init.kaiming_uniform_(tg.empty(40, 50), **kwargs))
    bound = math.sqrt(3.0) * gain / math.sqrt(fan)
    assert np.abs(v).max() <= bound and np.abs(v).max() > 0.95 * bound


def test_kaiming_normal_std_and_mode_errors():
    v = _np(init.kaiming_normal_(tg.empty(64, 32, 3, 3), mode="fan_out", nonlinearity="relu"))
    assert abs(v.std() - math.sqrt(2.0 / (64 * 9))) < 0.002
    with pytest.raises(ValueError, match=r"Mode fan_x not supported, please use one of \['fan_in', 'fan_out'\]"):
        init.kaiming_uniform_(tg.empty(3, 4), mode="fan_x")
    init.kaiming_normal_(tg.empty(3, 4), mode="FAN_OUT")  # case-insensitive, as in PyTorch


def test_kaiming_on_empty_tensor_warns_and_does_nothing():
    w = tg.empty(0, 3)
    with pytest.warns(UserWarning, match="Initializing zero-element tensors is a no-op"):
        assert init.kaiming_uniform_(w) is w
    with pytest.warns(UserWarning, match="Initializing zero-element tensors is a no-op"):
        init.kaiming_normal_(w)


def test_trunc_normal_stays_in_bounds():
    v = _np(init.trunc_normal_(tg.empty(20000), mean=0.5, std=2.0, a=-1.0, b=1.5))
    assert v.min() >= -1.0 and v.max() <= 1.5 and v.std() > 0.5
    narrow = _np(init.trunc_normal_(tg.empty(5000), std=1.0, a=-0.1, b=0.1))
    assert np.abs(narrow).max() <= 0.1
    with pytest.warns(UserWarning, match="mean is more than 2 std from"):
        init.trunc_normal_(tg.empty(10), mean=10.0, std=1.0, a=-2.0, b=2.0)


@pytest.mark.parametrize("shape", [(3, 5), (5, 3), (4, 2, 3), (6, 6)])
def test_orthogonal(shape):
    w = _np(init.orthogonal_(tg.empty(*shape, dtype=tg.float64), gain=2.0)).reshape(shape[0], -1)
    rows, cols = w.shape
    gram = w @ w.T if rows <= cols else w.T @ w
    np.testing.assert_allclose(gram, 4.0 * np.eye(min(rows, cols)), atol=1e-10)
    with pytest.raises(ValueError, match="Only tensors with 2 or more dimensions are supported"):
        init.orthogonal_(tg.empty(3))


def test_sparse_zeros_per_column():
    v = _np(init.sparse_(tg.empty(10, 7), sparsity=0.3, std=0.5))
    assert ((v == 0).sum(axis=0) == 3).all()
    with pytest.raises(ValueError, match="Only tensors with 2 dimensions are supported"):
        init.sparse_(tg.empty(2, 3, 4), 0.5)


# -- randomness, errors ----------------------------------------------------------------------------

def test_draws_follow_manual_seed_and_generators():
    tg.manual_seed(7)
    a = _np(init.kaiming_uniform_(tg.empty(4, 5))).copy()
    tg.manual_seed(7)
    b = _np(init.kaiming_uniform_(tg.empty(4, 5))).copy()
    np.testing.assert_array_equal(a, b)
    g1, g2 = tg.Generator().manual_seed(3), tg.Generator().manual_seed(3)
    c = _np(init.normal_(tg.empty(6), generator=g1)).copy()
    tg.manual_seed(99)
    np.testing.assert_array_equal(c, _np(init.normal_(tg.empty(6), generator=g2)))


def test_bad_arguments():
    with pytest.raises(RuntimeError, match=r"uniform_ expects to return a \[from, to\) range, but found "
                                           "from=1 > to=0"):
        init.uniform_(tg.empty(3), 1.0, 0.0)
    with pytest.raises(RuntimeError, match="normal expects std >= 0.0, but found std -1"):
        init.normal_(tg.empty(3), 0.0, -1.0)
    with pytest.raises(NotImplementedError, match="\"check_uniform_bounds\" not implemented for 'Long'"):
        init.uniform_(tg.zeros(3, dtype=tg.int64))
    with pytest.raises(NotImplementedError, match="\"normal_kernel_cpu\" not implemented for 'Long'"):
        init.normal_(tg.zeros(3, dtype=tg.int64))


def test_deprecated_aliases_warn():
    with pytest.warns(FutureWarning, match=r"`nn.init.uniform` is now deprecated in favor of `nn.init.uniform_`"):
        init.uniform(tg.empty(3))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        init.uniform_(tg.empty(3))


@pytest.mark.torch
def test_gains_fans_and_messages_match_torch():
    torch = pytest.importorskip("torch")
    for name in ("linear", "conv1d", "sigmoid", "tanh", "relu", "leaky_relu", "selu"):
        assert init.calculate_gain(name) == torch.nn.init.calculate_gain(name)
    assert init.calculate_gain("leaky_relu", 0.3) == torch.nn.init.calculate_gain("leaky_relu", 0.3)
    for shape in ((3, 5), (8, 4, 3, 3), (2, 6, 5, 2, 1)):
        assert init._calculate_fan_in_and_fan_out(tg.empty(shape)) == \
            torch.nn.init._calculate_fan_in_and_fan_out(torch.empty(shape))
    for ours, theirs in ((lambda: init.kaiming_uniform_(tg.empty(3)), lambda: torch.nn.init.kaiming_uniform_(torch.empty(3))),
                         (lambda: init.uniform_(tg.empty(3), 2, 1), lambda: torch.nn.init.uniform_(torch.empty(3), 2, 1)),
                         (lambda: init.orthogonal_(tg.empty(3)), lambda: torch.nn.init.orthogonal_(torch.empty(3)))):
        with pytest.raises(Exception) as mine:
            ours()
        with pytest.raises(Exception) as real:
            theirs()
        assert type(mine.value) is type(real.value) and str(mine.value) == str(real.value)


def test_complex_tensors_take_uniform_and_normal_fills():
    """As in PyTorch: uniform_ draws the real and imaginary parts each from U(a, b);
    normal_ draws the complex normal of variance std**2 (each part N(mean, std**2 / 2)),
    so complex layers (``nn.Linear(..., dtype=complex64)``) and their inits work."""
    tg.manual_seed(0)
    u = tg.empty(100_000, dtype=tg.complex64).uniform_(-1.0, 2.0)
    assert u.dtype is tg.complex64
    for part in (u.real, u.imag):
        assert -1.0 <= float(part.min()) and float(part.max()) < 2.0
        assert abs(float(part.mean()) - 0.5) < 0.02
    z = tg.empty(100_000, dtype=tg.complex128).normal_(1.0, 2.0)
    for part in (z.real, z.imag):
        assert abs(float(part.mean()) - 1.0) < 0.03 and abs(float(part.std()) - math.sqrt(2.0)) < 0.03
    layer = tg.nn.Linear(64, 32, dtype=tg.complex64)
    bound = 1 / math.sqrt(64)
    assert layer.weight.dtype is tg.complex64 and float(layer.weight.real.abs().max()) <= bound
    w = tg.empty(200, 200, dtype=tg.complex64)
    tg.nn.init.xavier_normal_(w)
    assert abs(float(w.imag.std()) - math.sqrt(2.0 / 400) / math.sqrt(2)) < 0.003
    with pytest.raises(NotImplementedError, match="\"exponential\" not implemented for 'ComplexFloat'"):
        tg.empty(3, dtype=tg.complex64).exponential_()
