"""Activation functions through the public API: values and gradients against hand formulas,
PyTorch's conventions at the kinks, stability at large |x|, in-place variants, node names,
dtypes, softmax's implicit dim; and (marked ``torch``) against real PyTorch."""
import math
import types
import warnings
import zlib

import numpy as np
import pytest

import tracegrad as tg
from tracegrad.ops.activation import FUNCTIONAL, FUNCTIONS, METHODS

F = types.SimpleNamespace(**FUNCTIONAL)  # what tracegrad.nn.functional will re-export
_erf = np.vectorize(math.erf)
_SELU = (1.6732632423543772, 1.0507009873554805)


def _sig(x):
    return 1 / (1 + np.exp(-x))


def _value_and_grad(fn, x, dtype=tg.float64):
    """fn(x) and d sum(fn(x)) / dx for a fresh leaf holding ``x``."""
    leaf = tg.tensor(np.asarray(x, dtype=np.float64), dtype=dtype, requires_grad=True)
    y = fn(leaf)
    y.backward(tg.ones_like(y))
    return y.detach().numpy(), leaf.grad.numpy()


# name: (function, value formula, derivative formula), checked on points away from kinks.
HAND = {
    "sigmoid": (tg.sigmoid, _sig, lambda x: _sig(x) * (1 - _sig(x))),
    "logsigmoid": (F.logsigmoid, lambda x: -np.log1p(np.exp(-x)), lambda x: 1 - _sig(x)),
    "silu": (F.silu, lambda x: x * _sig(x), lambda x: _sig(x) * (1 + x * (1 - _sig(x)))),
    "mish": (F.mish, lambda x: x * np.tanh(np.log1p(np.exp(x))),
             lambda x: np.tanh(np.log1p(np.exp(x))) + x * _sig(x) * (1 - np.tanh(np.log1p(np.exp(x))) ** 2)),
    "softplus": (lambda x: F.softplus(x, 2.0, 3.0),
                 lambda x: np.where(2 * x > 3, x, np.log1p(np.exp(2 * x)) / 2),
                 lambda x: np.where(2 * x > 3, 1.0, _sig(2 * x))),
    "relu": (tg.relu, lambda x: np.maximum(x, 0), lambda x: (x > 0) * 1.0),
    "leaky_relu": (lambda x: F.leaky_relu(x, 0.2), lambda x: np.where(x > 0, x, 0.2 * x),
                   lambda x: np.where(x > 0, 1.0, 0.2)),
    "elu": (lambda x: F.elu(x, 0.5), lambda x: np.where(x > 0, x, 0.5 * np.expm1(x)),
            lambda x: np.where(x > 0, 1.0, 0.5 * np.exp(x))),
    "selu": (tg.selu, lambda x: _SELU[1] * np.where(x > 0, x, _SELU[0] * np.expm1(x)),
             lambda x: _SELU[1] * np.where(x > 0, 1.0, _SELU[0] * np.exp(x))),
    "celu": (lambda x: tg.celu(x, 2.0), lambda x: np.where(x > 0, x, 2 * np.expm1(x / 2)),
             lambda x: np.where(x > 0, 1.0, np.exp(x / 2))),
    "gelu": (F.gelu, lambda x: x * 0.5 * (1 + _erf(x / math.sqrt(2))),
             lambda x: 0.5 * (1 + _erf(x / math.sqrt(2))) + x * np.exp(-x * x / 2) / math.sqrt(2 * math.pi)),
    "gelu_tanh": (lambda x: F.gelu(x, approximate="tanh"),
                  lambda x: 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3))), None),
    "hardtanh": (lambda x: F.hardtanh(x, -0.5, 2.0), lambda x: np.clip(x, -0.5, 2.0),
                 lambda x: ((x > -0.5) & (x < 2.0)) * 1.0),
    "relu6": (lambda x: F.relu6(4 * x), lambda x: np.clip(4 * x, 0, 6), lambda x: ((x > 0) & (x < 1.5)) * 4.0),
    "hardsigmoid": (lambda x: F.hardsigmoid(3 * x), lambda x: np.clip(3 * x / 6 + 0.5, 0, 1),
                    lambda x: (np.abs(x) < 1) * 3 * float(np.float32(1 / 6))),  # PyTorch's constant
    "hardswish": (lambda x: F.hardswish(3 * x), lambda x: 3 * x * np.clip(x / 2 + 0.5, 0, 1),
                  lambda x: np.where(x <= -1, 0.0, np.where(x < 1, 3 * x + 1.5, 3.0))),
    "threshold": (lambda x: tg.threshold(x, 0.5, 2.0), lambda x: np.where(x <= 0.5, 2.0, x),
                  lambda x: (x > 0.5) * 1.0),
    "hardshrink": (tg.hardshrink, lambda x: np.where(np.abs(x) <= 0.5, 0, x), lambda x: (np.abs(x) > 0.5) * 1.0),
    "softshrink": (F.softshrink, lambda x: np.where(np.abs(x) <= 0.5, 0, x - 0.5 * np.sign(x)),
                   lambda x: (np.abs(x) > 0.5) * 1.0),
    "softsign": (F.softsign, lambda x: x / (1 + np.abs(x)), lambda x: 1 / (1 + np.abs(x)) ** 2),
    "tanhshrink": (F.tanhshrink, lambda x: x - np.tanh(x), lambda x: np.tanh(x) ** 2),
}
POINTS = np.array([-4.2, -2.5, -1.7, -0.9, -0.35, -0.2, 0.15, 0.4, 0.8, 1.3, 2.2, 3.6])


@pytest.mark.parametrize("name", sorted(HAND))
def test_values_and_gradients_match_hand_formulas(name):
    fn, value, slope = HAND[name]
    y, g = _value_and_grad(fn, POINTS)
    np.testing.assert_allclose(y, value(POINTS), rtol=1e-12, atol=1e-14)
    if slope is not None:
        np.testing.assert_allclose(g, slope(POINTS), rtol=1e-12, atol=1e-14)


def test_softmax_and_log_softmax_formulas():
    x = np.random.default_rng(0).standard_normal((3, 4))
    w = np.random.default_rng(1).standard_normal((3, 4))
    e = np.exp(x) / np.exp(x).sum(1, keepdims=True)
    y, g = _value_and_grad(lambda t: (tg.softmax(t, 1) * tg.tensor(w)).sum(), x)
    np.testing.assert_allclose(g, e * (w - (w * e).sum(1, keepdims=True)), rtol=1e-12)
    y, g = _value_and_grad(lambda t: (tg.log_softmax(t, -1) * tg.tensor(w)).sum(), x)
    np.testing.assert_allclose(g, w - e * w.sum(1, keepdims=True), rtol=1e-12)


# Gradients exactly at the kinks, as PyTorch 2.13 gives them.
KINKS = [
    ("relu", tg.relu, [0.0, -0.0], [0.0, 0.0]),
    ("leaky_relu", lambda x: F.leaky_relu(x, 0.2), [0.0], [0.2]),
    ("elu", lambda x: F.elu(x, 0.5), [0.0], [0.5]),
    ("selu", tg.selu, [0.0], [_SELU[0] * _SELU[1]]),
    ("celu", lambda x: tg.celu(x, 2.0), [0.0], [1.0]),
    ("hardtanh", F.hardtanh, [-1.0, 1.0], [0.0, 0.0]),
    ("relu6", F.relu6, [0.0, 6.0], [0.0, 0.0]),
    ("hardsigmoid", F.hardsigmoid, [-3.0, 3.0], [0.0, 0.0]),
    ("hardswish", F.hardswish, [-3.0, 3.0], [0.0, 1.0]),
    ("threshold", lambda x: tg.threshold(x, 0.5, 2.0), [0.5], [0.0]),
    ("hardshrink", tg.hardshrink, [-0.5, 0.5], [0.0, 0.0]),
    ("softshrink", F.softshrink, [-0.5, 0.5], [0.0, 0.0]),
    ("softplus", lambda x: F.softplus(x, 2.0, 3.0), [1.5], [_sig(3.0)]),  # beta*x == threshold: formula
    ("gelu", F.gelu, [0.0], [0.5]),
    ("silu", F.silu, [0.0], [0.5]),
]


@pytest.mark.parametrize("name,fn,points,grads", KINKS, ids=[k[0] for k in KINKS])
def test_gradients_at_kinks_follow_pytorch(name, fn, points, grads):
    np.testing.assert_allclose(_value_and_grad(fn, points)[1], grads, rtol=1e-12)


def test_softplus_switches_to_identity_above_threshold():
    y, g = _value_and_grad(lambda x: F.softplus(x, 2.0, 3.0), [1.5001, 1.4999])
    assert y[0] == 1.5001 and g[0] == 1.0
    np.testing.assert_allclose(y[1], math.log1p(math.exp(2.9998)) / 2, rtol=1e-14)


ALL = {n: f for n, f in FUNCTIONAL.items() if not n.endswith("_")}
EXTREME = [-1000.0, -100.0, -30.0, -1.0, 0.0, 1.0, 30.0, 100.0, 1000.0]


def _call(name, x):
    if name in ("softmax", "log_softmax", "softmin"):
        return ALL[name](x, dim=0)
    if name == "threshold":
        return ALL[name](x, 0.0, -1.0)
    return ALL[name](x)


@pytest.mark.parametrize("dtype", [tg.float32, tg.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("name", sorted(ALL))
def test_stable_at_large_magnitudes(name, dtype):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        y, g = _value_and_grad(lambda x: _call(name, x), EXTREME, dtype)
    assert np.isfinite(y).all() and np.isfinite(g).all(), (y, g)
    assert y.dtype == g.dtype == dtype.np


def test_saturated_values():
    x = tg.tensor([-1000.0, 1000.0], dtype=tg.float32)
    assert tg.sigmoid(x).tolist() == [0.0, 1.0]
    assert F.logsigmoid(x).tolist() == [-1000.0, 0.0]
    assert F.softplus(x).tolist() == [0.0, 1000.0]
    assert F.silu(x).tolist() == [0.0, 1000.0] and F.mish(x).tolist() == [0.0, 1000.0]
    assert tg.softmax(tg.tensor([1000.0, -1000.0, 0.0]), 0).tolist() == [1.0, 0.0, 0.0]
    assert tg.log_softmax(tg.tensor([1000.0, 0.0]), 0).tolist() == [0.0, -1000.0]


# (call on a non-leaf, node name PyTorch gives, the out-of-place equivalent)
INPLACE = [
    ("relu_", tg.relu_, "ReluBackward0", tg.relu),
    ("F.relu", lambda y: F.relu(y, inplace=True), "ReluBackward0", tg.relu),
    ("Tensor.relu_", lambda y: y.relu_(), "ReluBackward0", tg.relu),
    ("sigmoid_", lambda y: y.sigmoid_(), "SigmoidBackward0", tg.sigmoid),
    ("leaky_relu_", lambda y: F.leaky_relu_(y, 0.2), "LeakyReluBackward1", lambda y: F.leaky_relu(y, 0.2)),
    ("elu_", lambda y: F.elu(y, 0.5, inplace=True), "EluBackward1", lambda y: F.elu(y, 0.5)),
    ("selu_", tg.selu_, "EluBackward1", tg.selu),
    ("celu_", lambda y: tg.celu_(y, 2.0), "CeluBackward1", lambda y: tg.celu(y, 2.0)),
    ("hardtanh_", lambda y: F.hardtanh_(y, -0.5, 0.5), "HardtanhBackward0", lambda y: F.hardtanh(y, -0.5, 0.5)),
    ("relu6", lambda y: F.relu6(y, inplace=True), "HardtanhBackward0", F.relu6),
    ("silu", lambda y: F.silu(y, inplace=True), "SiluBackward0", F.silu),
    ("mish", lambda y: F.mish(y, inplace=True), "MishBackward0", F.mish),
    ("hardsigmoid", lambda y: F.hardsigmoid(y, inplace=True), "HardsigmoidBackward0", F.hardsigmoid),
    ("hardswish", lambda y: F.hardswish(y, inplace=True), "HardswishBackward0", F.hardswish),
    ("threshold_", lambda y: tg.threshold_(y, 0.1, 2.0), "ThresholdBackward1", lambda y: tg.threshold(y, 0.1, 2.0)),
]
SAVES_RESULT = {"relu_", "F.relu", "Tensor.relu_", "sigmoid_", "leaky_relu_", "elu_", "selu_", "celu_"}


@pytest.mark.parametrize("name,inplace,node,reference", INPLACE, ids=[c[0] for c in INPLACE])
def test_inplace_variants(name, inplace, node, reference):
    x = tg.tensor(POINTS * 2, requires_grad=True)
    w = tg.tensor(np.linspace(-1, 1, POINTS.size))
    y = x * 1
    out = inplace(y)
    assert out is y and y._version == 1 and type(y.grad_fn).__name__ == node
    (y * w).sum().backward()
    np.testing.assert_allclose(y.detach().numpy(), reference(tg.tensor(POINTS * 2)).numpy(), rtol=1e-12)
    expected = _value_and_grad(lambda t: reference(t) * w, POINTS * 2)[1]
    np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-12)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        inplace(tg.tensor(POINTS, requires_grad=True))
    plain = tg.tensor(POINTS)  # a leaf that needs no grad may be written
    inplace(plain)
    assert plain._version == 1 and plain.grad_fn is None
    leaf = tg.tensor(POINTS, requires_grad=True)
    with tg.no_grad():  # and so may any leaf outside grad mode
        inplace(leaf)
    assert leaf._version == 1 and leaf.grad_fn is None and leaf.requires_grad
    # PyTorch saves the result of these: writing it again invalidates the graph
    y = x * 1
    inplace(y)
    y.mul_(2)
    if name in SAVES_RESULT:
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.sum().backward()
    else:
        y.sum().backward()


def test_inplace_through_a_view_flows_to_the_base():
    x = tg.tensor([[1.0, -2.0], [-3.0, 4.0]], requires_grad=True)
    b = x * 1
    b[:, 1].relu_()
    assert type(b.grad_fn).__name__ == "CopySlices" and b._version == 1
    b.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [[1.0, 0.0], [1.0, 1.0]])
    b = x * 1
    F.elu_(b[1], 0.5)
    (b * b).sum().backward()
    elu, slope = 0.5 * math.expm1(-3.0), 0.5 * math.exp(-3.0)  # at x = -3; the grad accumulates
    np.testing.assert_allclose(x.grad.numpy()[1], [1.0 + 2 * elu * slope, 1.0 + 2 * 4.0])
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        b = x * 1
        b[:, 1].relu_()
        F.elu_(b[0])  # bumps the version shared with relu_'s saved result, as in PyTorch
        b.sum().backward()


def test_inplace_with_negative_slope_fails_in_backward_only():
    for call in (lambda y: F.leaky_relu_(y, -0.1), lambda y: F.elu_(y, -0.5), lambda y: tg.celu_(y, -1.0)):
        x = tg.tensor([-2.0, 0.5], requires_grad=True)
        y = call(x * 1)
        with pytest.raises(RuntimeError, match="negative slope which is not supported"):
            y.sum().backward()
        call(tg.tensor([-2.0, 0.5]))  # fine without autograd


NODES = {"sigmoid": "SigmoidBackward0", "logsigmoid": "LogSigmoidBackward0", "silu": "SiluBackward0",
         "mish": "MishBackward0", "softplus": "SoftplusBackward0", "gelu": "GeluBackward0",
         "relu": "ReluBackward0", "leaky_relu": "LeakyReluBackward0", "hardtanh": "HardtanhBackward0",
         "relu6": "HardtanhBackward0", "hardsigmoid": "HardsigmoidBackward0",
         "hardswish": "HardswishBackward0", "threshold": "ThresholdBackward0",
         "hardshrink": "HardshrinkBackward0", "softshrink": "SoftshrinkBackward0",
         "softsign": "DivBackward0", "tanhshrink": "SubBackward0", "elu": "EluBackward0",
         "selu": "EluBackward0", "celu": "CeluBackward0", "softmax": "SoftmaxBackward0",
         "log_softmax": "LogSoftmaxBackward0", "softmin": "SoftmaxBackward0", "tanh": "TanhBackward0"}


@pytest.mark.parametrize("name", sorted(ALL))
def test_node_names_and_float32(name):
    x = tg.tensor(POINTS, dtype=tg.float32, requires_grad=True)
    y = _call(name, x)
    assert type(y.grad_fn).__name__ == NODES[name]
    y.backward(tg.ones_like(y))
    assert y.dtype == x.grad.dtype == tg.float32


def test_second_order_sigmoid():
    x = tg.tensor(POINTS, requires_grad=True)
    (g,) = tg.autograd.grad(tg.sigmoid(x).sum(), x, create_graph=True)
    (h,) = tg.autograd.grad(g.sum(), x)
    s = _sig(POINTS)
    np.testing.assert_allclose(h.numpy(), s * (1 - s) * (1 - 2 * s), rtol=1e-12)


def test_softmax_implicit_dim_warns_like_pytorch():
    for shape, dim in (((), 0), ((4,), 0), ((2, 3), 1), ((2, 3, 4), 0), ((2, 3, 4, 5), 1)):
        x = tg.randn(*shape)
        with pytest.warns(UserWarning, match="Implicit dimension choice for softmax") as rec:
            y = F.softmax(x)
        assert rec[0].filename == __file__  # stacklevel points at the caller
        np.testing.assert_allclose(y.numpy(), tg.softmax(x, dim).numpy())
    with pytest.warns(UserWarning, match="for log_softmax"):
        F.log_softmax(tg.randn(3))
    with pytest.warns(UserWarning, match="for softmin"):
        F.softmin(tg.randn(3))
    with pytest.raises(TypeError):
        tg.softmax(tg.randn(3))  # torch.softmax and Tensor.softmax require dim
    with pytest.raises(TypeError):
        tg.randn(3).softmax()


def test_softmax_shapes_dtypes_and_non_finite():
    assert tg.softmax(tg.tensor(3.0), 0).item() == 1.0 and tg.softmax(tg.tensor(3.0), -1).item() == 1.0
    assert tg.log_softmax(tg.tensor(3.0), 0).item() == 0.0
    e = tg.zeros(0, 3, requires_grad=True)
    y = tg.softmax(e, 0)
    y.sum().backward()
    assert y.shape == (0, 3) and e.grad.shape == (0, 3)
    with pytest.raises(IndexError):
        tg.softmax(tg.randn(2, 3), 2)
    x = tg.randn(2, 3, dtype=tg.float32, requires_grad=True)
    y = tg.softmax(x, 1, dtype=tg.float64)
    assert y.dtype == tg.float64 and x.softmax(dim=0, dtype=tg.float64).dtype == tg.float64
    y.sum().backward()
    assert x.grad.dtype == tg.float32
    inf = math.inf
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert np.isnan(tg.softmax(tg.tensor([inf, 1.0]), 0).numpy()).all()
        assert np.isnan(tg.log_softmax(tg.tensor([-inf, -inf]), 0).numpy()).all()
        x = tg.tensor([-inf, 0.0, 0.0], requires_grad=True)
        y = tg.softmax(x, 0)
        (y * tg.tensor([1.0, 2.0, 3.0])).sum().backward()
    assert y.tolist() == [0.0, 0.5, 0.5] and x.grad.tolist() == [0.0, -0.25, 0.25]
    assert tg.log_softmax(tg.tensor([-inf, 0.0]), 0).tolist() == [-inf, 0.0]


def test_dtype_rules_and_argument_checks():
    ints = tg.tensor([-1, 2])
    assert tg.sigmoid(ints).dtype == tg.float32
    assert tg.relu(ints).dtype == tg.int64 and tg.relu(ints).tolist() == [0, 2]
    assert F.relu6(tg.tensor([-1, 7])).tolist() == [0, 6]
    for fn, kernel in ((F.leaky_relu, "leaky_relu_cpu"), (F.gelu, "GeluKernelImpl"), (tg.selu, "elu_cpu"),
                       (lambda x: tg.softmax(x, 0), "softmax_lastdim_kernel_impl")):
        with pytest.raises(NotImplementedError, match=f'"{kernel}" not implemented for \'Long\''):
            fn(ints)
    with pytest.raises(RuntimeError, match="Boolean inputs not supported for relu"):
        tg.relu(tg.tensor([True]))
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type Long"):
        tg.sigmoid_(tg.tensor([1, 2]))
    with pytest.raises(RuntimeError, match="approximate argument must be either none or tanh"):
        F.gelu(tg.randn(2), approximate="fast")
    with pytest.raises(RuntimeError, match="alpha cannot be 0 for CELU"):
        tg.celu(tg.randn(2), 0.0)
    with pytest.raises(ValueError, match="min_val cannot be greater than max_val"):
        F.hardtanh(tg.randn(2), 1.0, -1.0)
    with pytest.raises(RuntimeError, match=r"lambda must be in range \[0, 1.79769e\+308\] for input dtype Double"):
        F.softshrink(tg.randn(2, dtype=tg.float64), -0.5)


# -- against real PyTorch ---------------------------------------------------------------------

def _view_inplace(x, op):
    b = x * 1
    op(b[:, 1:])
    return b


ORACLE = {
    "sigmoid": lambda T, F, x: T.sigmoid(x), "Tensor.sigmoid": lambda T, F, x: x.sigmoid(),
    "relu": lambda T, F, x: T.relu(x), "Tensor.relu": lambda T, F, x: x.relu(),
    "leaky_relu": lambda T, F, x: F.leaky_relu(x), "leaky_relu_0.2": lambda T, F, x: F.leaky_relu(x, 0.2),
    "leaky_relu_neg": lambda T, F, x: F.leaky_relu(x, -0.3),
    "elu": lambda T, F, x: F.elu(x), "elu_0.5": lambda T, F, x: F.elu(x, 0.5),
    "elu_neg": lambda T, F, x: F.elu(x, -0.7), "selu": lambda T, F, x: T.selu(x),
    "celu": lambda T, F, x: T.celu(x), "celu_2": lambda T, F, x: T.celu(x, 2.0),
    "celu_neg": lambda T, F, x: T.celu(x, -0.5),
    "gelu": lambda T, F, x: F.gelu(x), "gelu_tanh": lambda T, F, x: F.gelu(x, approximate="tanh"),
    "silu": lambda T, F, x: F.silu(x), "mish": lambda T, F, x: F.mish(x),
    "softplus": lambda T, F, x: F.softplus(x), "softplus_2_3": lambda T, F, x: F.softplus(x, 2.0, 3.0),
    "softplus_neg_beta": lambda T, F, x: F.softplus(x, -1.5, 2.0),
    "softplus_t0": lambda T, F, x: F.softplus(x, beta=1.0, threshold=0.0),
    "hardtanh": lambda T, F, x: F.hardtanh(x), "hardtanh_custom": lambda T, F, x: F.hardtanh(x, -0.5, 2.0),
    "relu6": lambda T, F, x: F.relu6(x * 4), "logsigmoid": lambda T, F, x: F.logsigmoid(x),
    "hardsigmoid": lambda T, F, x: F.hardsigmoid(x * 3), "hardswish": lambda T, F, x: F.hardswish(x * 3),
    "threshold": lambda T, F, x: T.threshold(x, 0.1, 20.0), "hardshrink": lambda T, F, x: T.hardshrink(x, 0.3),
    "Tensor.hardshrink": lambda T, F, x: x.hardshrink(), "softshrink": lambda T, F, x: F.softshrink(x, 0.3),
    "softsign": lambda T, F, x: F.softsign(x), "tanhshrink": lambda T, F, x: F.tanhshrink(x),
    "softmax_1": lambda T, F, x: T.softmax(x, 1), "softmax_0": lambda T, F, x: T.softmax(x, 0),
    "Tensor.softmax": lambda T, F, x: x.softmax(-1), "F.softmax": lambda T, F, x: F.softmax(x, dim=0),
    "softmax_dtype": lambda T, F, x: T.softmax(x, 1, dtype=T.float64),
    "log_softmax_1": lambda T, F, x: T.log_softmax(x, 1), "log_softmax_0": lambda T, F, x: T.log_softmax(x, 0),
    "Tensor.log_softmax": lambda T, F, x: x.log_softmax(dim=1), "softmin": lambda T, F, x: F.softmin(x, dim=1),
    "relu_": lambda T, F, x: T.relu_(x * 1), "sigmoid_": lambda T, F, x: (x * 1).sigmoid_(),
    "leaky_relu_": lambda T, F, x: F.leaky_relu_(x * 1, 0.2),
    "elu_": lambda T, F, x: F.elu(x * 1, 0.5, inplace=True), "selu_": lambda T, F, x: T.selu_(x * 1),
    "celu_": lambda T, F, x: T.celu_(x * 1, 2.0), "hardtanh_": lambda T, F, x: F.hardtanh_(x * 1, -0.5, 0.5),
    "relu6_": lambda T, F, x: F.relu6(x * 4, inplace=True), "silu_": lambda T, F, x: F.silu(x * 1, inplace=True),
    "mish_": lambda T, F, x: F.mish(x * 1, inplace=True),
    "hardswish_": lambda T, F, x: F.hardswish(x * 3, inplace=True),
    "threshold_": lambda T, F, x: T.threshold_(x * 1, 0.1, 2.0),
    "relu_view": lambda T, F, x: _view_inplace(x, lambda v: v.relu_()),
    "elu_view": lambda T, F, x: _view_inplace(x, lambda v: F.elu_(v)),
}
KINK_POINTS = np.array([[-3.0, -1.0, -0.5, -0.3], [0.0, 0.1, 0.3, 0.5], [1.0, 1.5, 3.0, 6.0]])
INPUTS = {"random": lambda rng: rng.standard_normal((3, 4)) * 2, "kinks": lambda rng: KINK_POINTS,
          "large": lambda rng: rng.standard_normal((3, 4)) * 300}


@pytest.mark.torch
@pytest.mark.parametrize("inputs", sorted(INPUTS))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(ORACLE))
def test_matches_pytorch(name, dtype, inputs):
    torch = pytest.importorskip("torch")
    if name == "celu_neg" and inputs == "large":
        pytest.skip("exp(-2x) overflows to inf as in PyTorch, but NumPy warns about it")
    rng = np.random.default_rng(zlib.crc32(f"{name}/{dtype}/{inputs}".encode()))
    x0, w = INPUTS[inputs](rng), rng.standard_normal((3, 4))
    results = []
    for T, FF in ((torch, torch.nn.functional), (tg, F)):
        x = T.tensor(x0, dtype=getattr(T, dtype), requires_grad=True)
        y = ORACLE[name](T, FF, x)
        (y * T.tensor(w, dtype=y.dtype)).sum().backward()
        results.append((y.detach().numpy(), x.grad.numpy(), type(y.grad_fn).__name__))
    (ty, tgrad, tnode), (y, grad, node) = results
    assert node == tnode
    assert y.dtype == ty.dtype and grad.dtype == tgrad.dtype
    rtol, atol = (1e-5, 1e-5) if dtype == "float32" else (1e-11, 1e-12)
    scale = max(1.0, np.abs(ty).max()) if ty.size else 1.0
    np.testing.assert_allclose(y, ty, rtol=rtol, atol=atol * scale, equal_nan=True)
    np.testing.assert_allclose(grad, tgrad, rtol=rtol, atol=atol * scale, equal_nan=True)


@pytest.mark.torch
@pytest.mark.parametrize("name", sorted(ORACLE))
def test_second_order_matches_pytorch(name):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(7)
    x0, w, v = (rng.standard_normal((3, 4)) * 2 for _ in range(3))
    results = []
    for T, FF in ((torch, torch.nn.functional), (tg, F)):
        x = T.tensor(x0, requires_grad=True)
        (g,) = T.autograd.grad((ORACLE[name](T, FF, x) * T.tensor(w)).sum(), x, create_graph=True)
        if not g.requires_grad:
            results.append(np.zeros_like(x0))
            continue
        try:
            (h,) = T.autograd.grad((g * T.tensor(v)).sum(), x, allow_unused=True)
        except RuntimeError as e:
            if T is torch and "is not implemented" in str(e):
                pytest.skip(f"PyTorch has no double backward here: {e}")
            raise
        results.append(np.zeros_like(x0) if h is None else h.numpy())
    np.testing.assert_allclose(results[1], results[0], rtol=1e-9, atol=1e-11)


@pytest.mark.torch
def test_names_exist_in_pytorch():
    torch = pytest.importorskip("torch")
    assert [n for n in FUNCTIONS if not hasattr(torch, n)] == []
    assert [n for n in METHODS if not hasattr(torch.Tensor, n)] == []
    assert [n for n in FUNCTIONAL if not hasattr(torch.nn.functional, n)] == []
    assert all(hasattr(tg, n) for n in FUNCTIONS) and all(hasattr(tg.Tensor, n) for n in METHODS)
