"""Pooling: values and max-pooling indices against direct NumPy loops (ties, padding, ceil
mode, dilation), gradients of first and second order, PyTorch's node names and saved
attributes, errors by type and message, the layers' repr; and (marked ``torch``) the option
grid against PyTorch, outputs, indices and input gradients."""
import itertools
import math

import numpy as np
import pytest

import tracegrad as tg
from tracegrad import nn
from tracegrad.autograd import gradcheck, gradgradcheck
from tracegrad.nn import functional as F

from ._oracle import assert_close, compare_modules

RNG = np.random.default_rng(5)


def randn(*shape):
    return RNG.standard_normal(shape)


def distinct(*shape):
    """Values with no ties (so that finite differences see one maximum per window)."""
    return RNG.permutation(np.arange(math.prod(shape), dtype=np.float64)).reshape(shape) / 7


def t64(a, grad=False):
    return tg.tensor(a, dtype=tg.float64, requires_grad=grad)


def out_size(n, k, s, p, d, ceil_mode):
    span = n + 2 * p - d * (k - 1) - 1
    o = (-(-span // s) if ceil_mode else span // s) + 1
    if ceil_mode and (o - 1) * s >= n + p:
        o -= 1
    return o


def windows(shape, k, s, p, d=(1, 1), ceil_mode=False):
    """(oh, ow, rows, cols) for each output cell: the window's in-bounds taps, in scan order."""
    h, w = shape[-2:]
    oh, ow = (out_size(n, kk, ss, pp, dd, ceil_mode) for n, kk, ss, pp, dd in zip((h, w), k, s, p, d))
    for i, j in itertools.product(range(oh), range(ow)):
        rows = [i * s[0] - p[0] + a * d[0] for a in range(k[0])]
        cols = [j * s[1] - p[1] + b * d[1] for b in range(k[1])]
        yield i, j, rows, cols, (oh, ow)


def max_pool_ref(x, k, s, p, d, ceil_mode):
    """Values and flat indices by scanning each window; the first maximum wins."""
    h, w = x.shape[-2:]
    cells = list(windows(x.shape, k, s, p, d, ceil_mode))
    oh, ow = cells[0][4]
    vals = np.zeros(x.shape[:-2] + (oh, ow))
    idx = np.zeros(x.shape[:-2] + (oh, ow), dtype=np.int64)
    for lead in itertools.product(*map(range, x.shape[:-2])):
        for i, j, rows, cols, _ in cells:
            best, at = -np.inf, None
            for r, c in itertools.product(rows, cols):
                if 0 <= r < h and 0 <= c < w and (at is None or x[lead + (r, c)] > best):
                    best, at = x[lead + (r, c)], r * w + c
            vals[lead + (i, j)], idx[lead + (i, j)] = best, at
    return vals, idx


def avg_pool_ref(x, k, s, p, ceil_mode, count_include_pad, divisor_override):
    h, w = x.shape[-2:]
    cells = list(windows(x.shape, k, s, p, (1, 1), ceil_mode))
    out = np.zeros(x.shape[:-2] + cells[0][4])
    for i, j, rows, cols, _ in cells:
        inside = [(r, c) for r, c in itertools.product(rows, cols) if 0 <= r < h and 0 <= c < w]
        total = sum(x[..., r, c] for r, c in inside)
        padded = [(r, c) for r, c in itertools.product(rows, cols) if r < h + p[0] and c < w + p[1]]
        divisor = divisor_override or (len(padded) if count_include_pad else len(inside))
        out[..., i, j] = total / divisor
    return out


def adaptive_ref(x, oh, ow):
    h, w = x.shape[-2:]
    out = np.zeros(x.shape[:-2] + (oh, ow))
    for i, j in itertools.product(range(oh), range(ow)):
        r0, r1 = i * h // oh, -(-(i + 1) * h // oh)
        c0, c1 = j * w // ow, -(-(j + 1) * w // ow)
        out[..., i, j] = x[..., r0:r1, c0:c1].mean(axis=(-2, -1))
    return out


MAX = [  # kernel, stride, padding, dilation, ceil_mode
    ((2, 2), (2, 2), (0, 0), (1, 1), False),
    ((3, 3), (2, 2), (1, 1), (1, 1), False),
    ((3, 2), (2, 1), (1, 1), (1, 1), True),
    ((3, 3), (3, 3), (1, 0), (1, 1), True),
    ((2, 3), (1, 2), (1, 1), (2, 2), False),
    ((3, 3), (2, 2), (0, 1), (2, 1), True),
]


@pytest.mark.parametrize("k,s,p,d,ceil_mode", MAX)
def test_max_pool2d_values_and_indices_match_definition(k, s, p, d, ceil_mode):
    x = randn(2, 3, 7, 8)
    values, indices = F.max_pool2d(t64(x), k, s, p, d, ceil_mode, return_indices=True)
    ref_v, ref_i = max_pool_ref(x, k, s, p, d, ceil_mode)
    np.testing.assert_array_equal(values.numpy(), ref_v)
    np.testing.assert_array_equal(indices.numpy(), ref_i)
    assert indices.dtype == tg.int64 and not indices.requires_grad


def test_max_pool_ties_go_to_the_first_element_and_nan_wins():
    x = np.zeros((1, 1, 4, 4))
    x[0, 0, 1, 1] = x[0, 0, 0, 1] = 5.0  # a tie inside the first 2x2 window
    x[0, 0, 2, 3] = x[0, 0, 3, 2] = np.nan  # the last NaN of a window wins, as in PyTorch
    values, indices = F.max_pool2d(t64(x), 2, return_indices=True)
    assert indices.numpy()[0, 0].tolist() == [[1, 2], [8, 14]]
    assert np.isnan(values.numpy()[0, 0, 1, 1])
    x = t64(np.full((1, 1, 3, 3), -np.inf), grad=True)  # nothing above the padding value
    values, indices = F.max_pool2d(x, 2, 1, 1, return_indices=True)
    assert indices.numpy()[0, 0].tolist() == [[0, 0, 1, 2], [0, 0, 1, 2], [3, 3, 4, 5], [6, 6, 7, 8]]
    values.sum().backward()
    assert x.grad.numpy()[0, 0].tolist() == [[4, 2, 2], [2, 1, 1], [2, 1, 1]]


def test_max_pool2d_gradient_goes_to_each_maximum():
    x = distinct(2, 2, 5, 6)
    xt = t64(x, grad=True)
    y, idx = F.max_pool2d(xt, 3, 2, 1, return_indices=True)  # overlapping windows
    g = randn(*y.shape)
    y.backward(t64(g))
    expected = np.zeros((2, 2, 30))
    np.add.at(expected, (np.arange(2)[:, None, None], np.arange(2)[None, :, None], idx.numpy().reshape(2, 2, -1)),
              g.reshape(2, 2, -1))
    np.testing.assert_allclose(xt.grad.numpy(), expected.reshape(x.shape))


AVG = [  # kernel, stride, padding, ceil_mode, count_include_pad, divisor_override
    ((2, 2), (2, 2), (0, 0), False, True, None),
    ((3, 3), (2, 2), (1, 1), False, True, None),
    ((3, 3), (2, 2), (1, 1), True, True, None),
    ((3, 2), (2, 1), (1, 1), True, False, None),
    ((2, 3), (1, 2), (1, 1), False, False, 5),
    ((3, 3), (3, 3), (1, 0), True, True, None),
]


@pytest.mark.parametrize("k,s,p,ceil_mode,include,divisor", AVG)
def test_avg_pool2d_matches_definition(k, s, p, ceil_mode, include, divisor):
    x = randn(2, 3, 7, 8)
    y = F.avg_pool2d(t64(x), k, s, p, ceil_mode, include, divisor)
    np.testing.assert_allclose(y.numpy(), avg_pool_ref(x, k, s, p, ceil_mode, include, divisor), rtol=1e-12)


def test_avg_pool2d_of_integers_divides_toward_zero():
    x = np.arange(16).reshape(1, 1, 4, 4)
    y = F.avg_pool2d(tg.tensor(-x), 3, 1, 1)
    assert y.dtype == tg.int64
    assert y.numpy()[0, 0].tolist() == [[-1, -2, -2, -2], [-3, -5, -6, -4], [-5, -9, -10, -7], [-4, -7, -8, -5]]


@pytest.mark.parametrize("size", [(2, 3), (3, 4), (5, 7), (1, 1), (7, 3), (4, None), (0, 2)])
def test_adaptive_avg_pool2d_matches_definition(size):
    x = randn(2, 3, 5, 7)
    y = F.adaptive_avg_pool2d(t64(x), size)
    full = (size[0], 7 if size[1] is None else size[1])
    np.testing.assert_allclose(y.numpy(), adaptive_ref(x, *full), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("fn", [
    lambda x: F.max_pool2d(x, 3, 2, 1, ceil_mode=True),
    lambda x: F.max_pool2d(x, (2, 3), (1, 2), (1, 1), dilation=2),
    lambda x: F.avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False),
    lambda x: F.avg_pool2d(x, (2, 3), (1, 2), divisor_override=4),
    lambda x: F.adaptive_avg_pool2d(x, (3, 2)),
    lambda x: F.max_pool1d(x[0], 3, 2, 1),
    lambda x: F.avg_pool1d(x[0], 3, 2, 1, ceil_mode=True),
    lambda x: F.adaptive_avg_pool1d(x[0], 3),
])
def test_gradients_of_first_and_second_order(fn):
    x = t64(distinct(1, 2, 5, 4), grad=True)
    assert gradcheck(fn, (x,))
    assert gradgradcheck(fn, (x,))


def test_node_names_and_saved_attributes_follow_pytorch():
    x = t64(randn(2, 3, 6, 6), grad=True)
    y = F.max_pool2d(x, 3, padding=1, ceil_mode=True)
    fn = y.grad_fn
    assert fn.name() == "MaxPool2DWithIndicesBackward0" and len(fn.next_functions) == 1
    assert (fn._saved_kernel_size, fn._saved_stride, fn._saved_padding, fn._saved_dilation, fn._saved_ceil_mode) \
        == ((3, 3), (), (1, 1), (1, 1), True)
    assert fn._saved_self is not None and fn._saved_result1.dtype == tg.int64
    a = F.avg_pool2d(x, 2, divisor_override=3)
    assert a.grad_fn.name() == "AvgPool2DBackward0"
    assert (a.grad_fn._saved_count_include_pad, a.grad_fn._saved_divisor_override) == (True, 3)
    assert F.adaptive_avg_pool2d(x, 2).grad_fn.name() == "AdaptiveAvgPool2DBackward0"
    assert F.adaptive_avg_pool2d(x, 1).grad_fn.name() == "MeanBackward1"  # PyTorch takes the mean too
    for y, name in ((F.max_pool2d(x, 2), "MaxPool2DWithIndicesBackwardBackward0"),
                    (F.avg_pool2d(x, 2), "AvgPool2DBackwardBackward0"),
                    (F.adaptive_avg_pool2d(x, 4), "AdaptiveAvgPool2DBackwardBackward0")):
        (g,) = tg.autograd.grad(y.sum(), x, create_graph=True)
        assert g.grad_fn.name() == name and g.requires_grad
    assert F.max_pool1d(x[0], 2).grad_fn.name() == "SqueezeBackward1"


def test_unbatched_and_one_dimensional_forms():
    x = randn(3, 6, 7)
    y = F.max_pool2d(t64(x, grad=True), 2)
    assert tuple(y.shape) == (3, 3, 3) and y.grad_fn.name() == "MaxPool2DWithIndicesBackward0"
    v, i = F.max_pool1d(t64(x), 3, 2, 1, return_indices=True)
    ref_v, ref_i = max_pool_ref(x[:, :, None, :], (1, 3), (1, 2), (0, 1), (1, 1), False)
    np.testing.assert_array_equal(v.numpy(), ref_v[:, :, 0])
    np.testing.assert_array_equal(i.numpy(), ref_i[:, :, 0])
    a = F.avg_pool1d(t64(x), 3, 2, 1, count_include_pad=False)
    np.testing.assert_allclose(a.numpy(), avg_pool_ref(x[:, :, None, :], (1, 3), (1, 2), (0, 1), False, False,
                                                       None)[:, :, 0])
    np.testing.assert_allclose(F.adaptive_avg_pool1d(t64(x), 3).numpy(), adaptive_ref(x[:, :, None, :], 1, 3)[:, :, 0])


def test_empty_batches_pool():
    x = tg.randn(0, 3, 4, 4, requires_grad=True)
    for y in (F.max_pool2d(x, 2), F.avg_pool2d(x, 2), F.adaptive_avg_pool2d(x, 3)):
        assert y.shape[0] == 0 and y.shape[1] == 3
        y.sum().backward()


X = (2, 4, 8, 8)
ERRORS = [
    (lambda: F.max_pool2d(tg.randn(*X), 9), RuntimeError,
     "Given input size: (4x8x8). Calculated output size: (4x0x0). Output size is too small"),
    (lambda: F.max_pool2d(tg.randn(*X), 3, padding=2), RuntimeError,
     "pad should be at most half of effective kernel size, but got pad=2, kernel_size=3 and dilation=1"),
    (lambda: F.max_pool2d(tg.randn(*X), 3, dilation=2, padding=2), RuntimeError,
     "pad should be smaller than or equal to half of kernel size, but got padW = 2, padH = 2, kW = 3, kH = 3"),
    (lambda: F.max_pool2d(tg.randn(*X), 0), RuntimeError, "stride should not be zero"),
    (lambda: F.max_pool2d(tg.randn(*X), 2, stride=-1), RuntimeError,
     "stride should be greater than zero, but got dH: -1 dW: -1"),
    (lambda: F.max_pool2d(tg.randn(*X), -1), RuntimeError, "kernel size should be greater than zero, but got kH: -1 kW: -1"),
    (lambda: F.max_pool2d(tg.randn(*X), 2, dilation=0), RuntimeError,
     "dilation should be greater than zero, but got dilationH: 0 dilationW: 0"),
    (lambda: F.max_pool2d(tg.randn(*X), 2, padding=-1), RuntimeError, "pad must be non-negative, but got pad: -1"),
    (lambda: F.max_pool2d(tg.randn(8, 8), 2), RuntimeError, "non-empty 3D or 4D (batch mode) tensor expected for input"),
    (lambda: F.max_pool2d(tg.randn(2, 0, 4, 4), 2), RuntimeError,
     "Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, but got:[2, 0, 4, 4]"),
    (lambda: F.max_pool2d(tg.randn(*X), (2, 2, 2)), RuntimeError,
     "max_pool2d: kernel_size must either be a single int, or a tuple of two ints"),
    (lambda: F.max_pool2d(tg.randn(*X), 2, stride=(1, 1, 1)), RuntimeError,
     "max_pool2d: stride must either be omitted, a single int, or a tuple of two ints"),
    (lambda: F.max_pool2d(tg.ones(*X, dtype=tg.bool), 2), NotImplementedError,
     "\"max_pool2d\" not implemented for 'Bool'"),
    (lambda: F.max_pool2d(tg.randn(*X), 2.5), TypeError,
     "max_pool2d(): argument 'kernel_size' (position 2) must be tuple of ints, not float"),
    (lambda: F.avg_pool2d(tg.randn(*X), 2, divisor_override=0), RuntimeError, "divisor must be not zero"),
    (lambda: F.avg_pool2d(tg.randn(8, 8), 2), IndexError,
     "Dimension out of range (expected to be in range of [-2, 1], but got -3)"),
    (lambda: F.avg_pool2d(tg.ones(*X, dtype=tg.int32), 2), NotImplementedError,
     "\"avg_pool2d\" not implemented for 'Int'"),
    (lambda: F.avg_pool2d(tg.randn(1, 2, 3, 4, 5), 2), RuntimeError,
     "Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, but got:[1, 2, 3, 4, 5]"),
    (lambda: F.adaptive_avg_pool2d(tg.randn(*X), (2, 3, 4)), RuntimeError, "adaptive_avg_pool2d: output_size must be 2"),
    (lambda: F.adaptive_avg_pool2d(tg.randn(*X), (2, -1)), RuntimeError,
     "adaptive_avg_pool2d: elements of output_size must be greater than or equal to 0 but received {2, -1}"),
    (lambda: F.adaptive_avg_pool2d(tg.randn(8, 8), 2), RuntimeError,
     "adaptive_avg_pool2d(): Expected 3D or 4D tensor, but got [8, 8]"),
    (lambda: F.adaptive_avg_pool2d(tg.randn(2, 3, 0, 4), 2), RuntimeError,
     "adaptive_avg_pool2d(): Expected input to have non-zero size for non-batch dimensions, but input has sizes "
     "[2, 3, 0, 4] with dimension 2 being empty"),
    (lambda: F.adaptive_avg_pool2d(tg.ones(*X, dtype=tg.int64), 2), NotImplementedError,
     "\"adaptive_avg_pool2d\" not implemented for 'Long'"),
    (lambda: F.adaptive_avg_pool2d(tg.randn(8, 8), (2, None)), ValueError, "Input dimension should be at least 3"),
    (lambda: F.max_pool1d(tg.randn(2, 4, 8), 9), RuntimeError, "max_pool1d() Invalid computed output size: 0"),
    (lambda: F.max_pool1d(tg.randn(2, 4, 8), 2, padding=2), RuntimeError,
     "max_pool1d() padding should be at most half of kernel size, but got padding=2 and kernel_size=2"),
    (lambda: F.max_pool1d(tg.randn(2, 4, 8), (2, 2)), RuntimeError,
     "max_pool1d() kernel_size must be an int, list of ints or tuple of ints of size 1 but got size 2"),
    (lambda: F.avg_pool1d(tg.randn(*X), 2), RuntimeError,
     "Expected 2 to 3 dimensions, but got 4-dimensional tensor for argument #1 'self' (while checking arguments "
     "for avg_pool1d)"),
    (lambda: F.avg_pool1d(tg.randn(2, 4, 8), (2, 2)), RuntimeError,
     "avg_pool1d() argument 'kernel_size' should contain one int (got 2)"),
    (lambda: F.adaptive_avg_pool1d(tg.randn(2, 4, 8), (3, 2)), RuntimeError,
     "adaptive_avg_pool1d() argument 'output_size' should contain one int (got 2)"),
]


@pytest.mark.parametrize("call,exc,message", ERRORS, ids=[e[2][:40] for e in ERRORS])
def test_errors_have_pytorch_types_and_messages(call, exc, message):
    with pytest.raises(exc) as info:
        call()
    assert str(info.value) == message


REPRS = [
    (lambda n: n.MaxPool2d(3, 2, 1), "MaxPool2d(kernel_size=3, stride=2, padding=1, dilation=1, ceil_mode=False)"),
    (lambda n: n.MaxPool1d((2,), ceil_mode=True), "MaxPool1d(kernel_size=(2,), stride=(2,), padding=0, dilation=1, "
                                                  "ceil_mode=True)"),
    (lambda n: n.AvgPool2d(2), "AvgPool2d(kernel_size=2, stride=2, padding=0)"),
    (lambda n: n.AvgPool1d(3, 2), "AvgPool1d(kernel_size=(3,), stride=(2,), padding=(0,))"),
    (lambda n: n.AdaptiveAvgPool2d((None, 3)), "AdaptiveAvgPool2d(output_size=(None, 3))"),
    (lambda n: n.AdaptiveAvgPool1d(4), "AdaptiveAvgPool1d(output_size=4)"),
]


@pytest.mark.parametrize("make,text", REPRS, ids=[r[1][:24] for r in REPRS])
def test_layer_repr(make, text):
    assert repr(make(nn)) == text


def test_layers_call_the_functional_forms():
    x = t64(randn(2, 3, 7, 6))
    v, i = nn.MaxPool2d(3, 2, 1, return_indices=True)(x)
    ref = F.max_pool2d(x, 3, 2, 1, return_indices=True)
    np.testing.assert_array_equal(v.numpy(), ref[0].numpy())
    np.testing.assert_array_equal(i.numpy(), ref[1].numpy())
    np.testing.assert_array_equal(nn.AvgPool2d(2, ceil_mode=True)(x).numpy(), F.avg_pool2d(x, 2, ceil_mode=True).numpy())
    np.testing.assert_array_equal(nn.AdaptiveAvgPool2d(3)(x).numpy(), F.adaptive_avg_pool2d(x, 3).numpy())


# -- against PyTorch -----------------------------------------------------------------------------

@pytest.fixture(autouse=True, scope="module")
def _one_torch_thread():
    """One PyTorch thread runs these tiny cases fastest on a busy machine."""
    try:
        import torch
    except ImportError:
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def _compare(name, x, dtype, **kw):
    torch = pytest.importorskip("torch")
    ours, theirs = tg.tensor(x.astype(dtype), requires_grad=True), torch.tensor(x.astype(dtype), requires_grad=True)
    y, yt = getattr(F, name)(ours, **kw), getattr(torch.nn.functional, name)(theirs, **kw)
    if kw.get("return_indices"):
        np.testing.assert_array_equal(y[1].numpy(), yt[1].numpy())
        y, yt = y[0], yt[0]
    assert_close(y, yt, what="output")
    g = RNG.standard_normal(tuple(yt.shape)).astype(dtype)
    y.backward(tg.tensor(g))
    yt.backward(torch.tensor(g))
    assert_close(ours.grad, theirs.grad, what="input grad")


ORACLE_MAX = [dict(kernel_size=k, stride=s, padding=p, dilation=d, ceil_mode=c, return_indices=True)
              for k, s, p, d, c in itertools.product((2, 3, (3, 2)), (None, 1, (2, 3)), (0, 1), (1, 2), (False, True))]


@pytest.mark.torch
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("kw", ORACLE_MAX, ids=[str(k) for k in ORACLE_MAX])
def test_max_pool2d_against_pytorch(kw, dtype):
    _compare("max_pool2d", np.round(randn(2, 3, 9, 8), 1), dtype, **kw)  # rounding makes ties


ORACLE_AVG = [dict(kernel_size=k, stride=s, padding=p, ceil_mode=c, count_include_pad=i, divisor_override=v)
              for k, s, p, c, i, v in itertools.product((2, 3, (3, 2)), (None, 1, (2, 3)), (0, 1), (False, True),
                                                        (False, True), (None, 5))]


@pytest.mark.torch
@pytest.mark.parametrize("kw", ORACLE_AVG, ids=[str(k) for k in ORACLE_AVG])
def test_avg_pool2d_against_pytorch(kw):
    _compare("avg_pool2d", randn(2, 3, 9, 8), "float32", **kw)


@pytest.mark.torch
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("size", [1, 2, (3, 5), (5, 2), (9, 8), (None, 4), (7, None), (11, 13)])
def test_adaptive_avg_pool2d_against_pytorch(size, dtype):
    _compare("adaptive_avg_pool2d", randn(2, 3, 9, 8), dtype, output_size=size)


@pytest.mark.torch
@pytest.mark.parametrize("name,kw", [
    ("max_pool1d", dict(kernel_size=3, stride=2, padding=1, dilation=1, ceil_mode=True, return_indices=True)),
    ("max_pool1d", dict(kernel_size=2, dilation=2)),
    ("avg_pool1d", dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, count_include_pad=False)),
    ("adaptive_avg_pool1d", dict(output_size=4)),
    ("adaptive_avg_pool1d", dict(output_size=1)),
])
def test_one_dimensional_pooling_against_pytorch(name, kw):
    _compare(name, randn(2, 3, 9), "float64", **kw)


@pytest.mark.torch
@pytest.mark.parametrize("make", [m for m, _ in REPRS] + [lambda n: n.AvgPool2d((3, 2), 2, 1, True, False, 3)])
def test_layers_against_pytorch(make):
    torch = pytest.importorskip("torch")
    theirs, ours = make(torch.nn), make(nn)
    assert repr(ours) == repr(theirs)
    x = randn(2, 3, 9) if "1d" in type(ours).__name__ else randn(2, 3, 9, 8)
    compare_modules(theirs, ours, x)


BAD_CALLS = [
    "F.max_pool2d(x, 9)", "F.max_pool2d(x, 3, padding=2)", "F.max_pool2d(x, 3, dilation=2, padding=2)",
    "F.max_pool2d(x, 0)", "F.max_pool2d(x, 2, stride=-1)", "F.max_pool2d(x, -1)", "F.max_pool2d(x, 2, dilation=0)",
    "F.max_pool2d(x, 2, padding=-1)", "F.max_pool2d(x[0, 0], 2)", "F.max_pool2d(x, [])",
    "F.max_pool2d(x, 2, padding=(1, 1, 1))", "F.max_pool2d(x, 2, dilation=(1, 1, 1))",
    "F.avg_pool2d(x, 9)", "F.avg_pool2d(x, 3, padding=2)", "F.avg_pool2d(x, 2, stride=0)", "F.avg_pool2d(x[0, 0, 0], 2)",
    "F.avg_pool2d(x, 2, padding=(1, 1, 1))", "F.adaptive_avg_pool2d(x, -1)", "F.adaptive_avg_pool2d(x, (2,))",
    "F.adaptive_avg_pool2d(x[0, 0, 0], (2, None))", "F.adaptive_avg_pool2d(x, 2.5)",
    "F.max_pool1d(x[0], 0)", "F.max_pool1d(x[0], 2, stride=0)", "F.max_pool1d(x[0], 2, dilation=0)",
    "F.max_pool1d(x[0, 0, 0], 2)", "F.avg_pool1d(x[0], 9)", "F.avg_pool1d(x[0], 0)", "F.avg_pool1d(x[0, 0, 0], 2)",
    "F.avg_pool1d(x[0], 2, stride=(1, 1))", "F.adaptive_avg_pool1d(x, 3)",
]


@pytest.mark.torch
@pytest.mark.parametrize("call", BAD_CALLS)
def test_error_messages_match_pytorch(call):
    torch = pytest.importorskip("torch")

    def run(lib, functional):
        env = dict(F=functional, x=lib.zeros(2, 4, 8, 8))
        with pytest.raises(Exception) as info:
            eval(call, env)
        return info.type, str(info.value)

    assert run(tg, F) == run(torch, torch.nn.functional)
