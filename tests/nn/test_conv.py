"""Convolutions: values against a direct NumPy loop, gradients (first and second order)
against finite differences, PyTorch's node names and saved attributes, errors by type and
message, the layers' parameters, initialisation and repr; and (marked ``torch``) every
option combination against PyTorch, outputs and input / weight / bias gradients."""
import itertools
import math
import warnings

import numpy as np
import pytest

import tracegrad as tg
from tracegrad import nn
from tracegrad.autograd import gradcheck, gradgradcheck
from tracegrad.nn import functional as F

from ._oracle import assert_close, compare_modules, copy_weights, to_np

RNG = np.random.default_rng(11)


def randn(*shape):
    return RNG.standard_normal(shape)


def t64(a, grad=False):
    return tg.tensor(a, dtype=tg.float64, requires_grad=grad)


# -- a direct reference: one loop over output positions (tiny sizes only) ----------------------

def conv_ref(x, w, b=None, stride=1, padding=0, dilation=1, groups=1):
    """N-d convolution of a batched ``x`` by its definition."""
    nd = x.ndim - 2
    s, p, d = ((v,) * nd if isinstance(v, int) else tuple(v) for v in (stride, padding, dilation))
    xp = np.pad(x, [(0, 0), (0, 0)] + [(q, q) for q in p])
    k = w.shape[2:]
    out = [(xp.shape[2 + i] - d[i] * (k[i] - 1) - 1) // s[i] + 1 for i in range(nd)]
    n, c, o = x.shape[0], x.shape[1], w.shape[0]
    cg, og = c // groups, o // groups
    y = np.zeros((n, o, *out))
    for pos in itertools.product(*map(range, out)):
        window = tuple(slice(pos[i] * s[i], pos[i] * s[i] + d[i] * (k[i] - 1) + 1, d[i]) for i in range(nd))
        for g in range(groups):
            patch = xp[(slice(None), slice(g * cg, (g + 1) * cg)) + window]
            y[(slice(None), slice(g * og, (g + 1) * og)) + pos] = np.tensordot(
                patch, w[g * og:(g + 1) * og], axes=(list(range(1, nd + 2)), list(range(1, nd + 2))))
    return y if b is None else y + b.reshape((1, o) + (1,) * nd)


def conv_transpose_ref(x, w, b=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """2-d transposed convolution by its definition: every input entry scatters the kernel."""
    s, p, op, d = ((v, v) if isinstance(v, int) else tuple(v) for v in (stride, padding, output_padding, dilation))
    n, cin, h, wd = x.shape
    cout_g, (kh, kw) = w.shape[1], w.shape[2:]
    cin_g = cin // groups
    full = [(h - 1) * s[0] + d[0] * (kh - 1) + 1 + op[0], (wd - 1) * s[1] + d[1] * (kw - 1) + 1 + op[1]]
    y = np.zeros((n, cout_g * groups, *full))
    for i, j in itertools.product(range(h), range(wd)):
        for a, c in itertools.product(range(kh), range(kw)):
            for g in range(groups):
                contrib = np.einsum("nc,co->no", x[:, g * cin_g:(g + 1) * cin_g, i, j],
                                    w[g * cin_g:(g + 1) * cin_g, :, a, c])
                y[:, g * cout_g:(g + 1) * cout_g, i * s[0] + a * d[0], j * s[1] + c * d[1]] += contrib
    y = y[:, :, p[0]:full[0] - p[0], p[1]:full[1] - p[1]]
    return y if b is None else y + b.reshape(1, -1, 1, 1)


CONV2D = [
    dict(),
    dict(stride=2, padding=1),
    dict(stride=(2, 1), padding=(0, 2), dilation=(1, 2)),
    dict(padding=2, dilation=2, groups=2),
    dict(stride=3, groups=4),
]


@pytest.mark.parametrize("kw", CONV2D)
@pytest.mark.parametrize("bias", [True, False])
def test_conv2d_matches_definition(kw, bias):
    x, w = randn(2, 4, 7, 8), randn(4, 4 // kw.get("groups", 1), 3, 2)
    b = randn(4) if bias else None
    y = F.conv2d(t64(x), t64(w), None if b is None else t64(b), **kw)
    np.testing.assert_allclose(y.numpy(), conv_ref(x, w, b, **kw), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("kw", [dict(), dict(stride=2, padding=1), dict(dilation=3, groups=2)])
def test_conv1d_and_conv3d_match_definition(kw):
    x, w = randn(2, 4, 9), randn(6, 4 // kw.get("groups", 1), 3)
    np.testing.assert_allclose(F.conv1d(t64(x), t64(w), **kw).numpy(), conv_ref(x, w, **kw), rtol=1e-10)
    x3, w3 = randn(1, 2, 7, 6, 5), randn(2, 2 // kw.get("groups", 1), 2, 2, 2)
    np.testing.assert_allclose(F.conv3d(t64(x3), t64(w3), **kw).numpy(), conv_ref(x3, w3, **kw),
                               rtol=1e-10, atol=1e-12)


CONV_T = [
    dict(),
    dict(stride=2, padding=1, output_padding=1),
    dict(stride=(3, 2), padding=(1, 0), output_padding=(2, 1), groups=2),
    dict(stride=1, padding=2, dilation=2, output_padding=1),  # output_padding < dilation
    dict(stride=2, dilation=(2, 3), groups=2),
]


@pytest.mark.parametrize("kw", CONV_T)
def test_conv_transpose2d_matches_definition(kw):
    g = kw.get("groups", 1)
    x, w, b = randn(2, 4, 4, 5), randn(4, 6 // g, 3, 2), randn(6)
    y = F.conv_transpose2d(t64(x), t64(w), t64(b), **kw)
    np.testing.assert_allclose(y.numpy(), conv_transpose_ref(x, w, b, **kw), rtol=1e-10, atol=1e-12)


def test_transposed_convolution_is_the_adjoint_of_convolution():
    """<conv(x, w), y> == <x, conv_transpose(y, w)> with output_padding restoring x's size."""
    x, w = randn(2, 3, 9, 8), randn(5, 3, 3, 3)
    y = conv_ref(x, w, stride=2, padding=1)
    v = randn(*y.shape)
    back = F.conv_transpose2d(t64(v), t64(w), stride=2, padding=1, output_padding=(0, 1)).numpy()
    assert back.shape == x.shape
    assert math.isclose(np.sum(y * v), np.sum(x * back), rel_tol=1e-10)


@pytest.mark.parametrize("fn,args,kw", [
    (F.conv2d, ((1, 4, 5, 4), (4, 2, 3, 2), (4,)), dict(stride=2, padding=1, groups=2)),
    (F.conv2d, ((1, 2, 5, 5), (2, 2, 2, 2), None), dict(dilation=2, padding=(1, 2))),
    (F.conv1d, ((2, 3, 6), (2, 3, 3), (2,)), dict(stride=2, padding=1)),
    (F.conv_transpose2d, ((1, 4, 3, 2), (4, 1, 3, 2), (2,)), dict(stride=2, padding=1, output_padding=1,
                                                                 groups=2)),
    (F.conv_transpose2d, ((1, 2, 2, 3), (2, 1, 2, 2), None), dict(padding=1, dilation=2, output_padding=1)),
])
def test_gradients_of_first_and_second_order(fn, args, kw):
    tensors = [t64(randn(*s), grad=True) for s in args if s is not None]
    if args[2] is None:
        def f(x, w):
            return fn(x, w, None, **kw)
    else:
        def f(x, w, b):
            return fn(x, w, b, **kw)
    assert gradcheck(f, tuple(tensors))
    assert gradgradcheck(f, tuple(tensors))


def test_node_names_edges_and_saved_attributes_follow_pytorch():
    x, w = t64(randn(2, 4, 6, 6), grad=True), t64(randn(6, 2, 3, 3), grad=True)
    y = F.conv2d(x, w, stride=2, padding=1, dilation=1, groups=2)
    fn = y.grad_fn
    assert fn.name() == "ConvolutionBackward0"
    assert fn.next_functions[0][0] is x.grad_fn or fn.next_functions[0][0].variable is x
    assert fn.next_functions[2] == (None, 0)  # no bias: an empty edge, as in PyTorch
    assert (fn._saved_stride, fn._saved_padding, fn._saved_dilation, fn._saved_groups) == ((2, 2), (1, 1), (1, 1), 2)
    assert (fn._saved_transposed, fn._saved_output_padding) == (False, (0, 0))
    assert fn._saved_weight is not None and tuple(fn._saved_input.shape) == (2, 4, 6, 6)
    gx, gw = tg.autograd.grad(y.sum(), (x, w), create_graph=True)
    assert gx.grad_fn.name() == gw.grad_fn.name() == "ConvolutionBackwardBackward0"
    yt = F.conv_transpose2d(x, w.transpose(0, 1).reshape(4, 3, 3, 3).contiguous(), stride=2)
    assert yt.grad_fn.name() == "ConvolutionBackward0" and yt.grad_fn._saved_transposed is True


def test_unbatched_inputs_get_and_lose_a_batch_dim():
    x, w, b = randn(4, 7, 6), randn(5, 4, 3, 3), randn(5)
    y = F.conv2d(t64(x, grad=True), t64(w), t64(b), padding=1)
    assert tuple(y.shape) == (5, 7, 6) and y.grad_fn.name() == "SqueezeBackward1"
    np.testing.assert_allclose(y.detach().numpy(), conv_ref(x[None], w, b, padding=1)[0], rtol=1e-10)
    assert tuple(F.conv1d(t64(randn(4, 9)), t64(randn(2, 4, 3))).shape) == (2, 7)
    assert tuple(F.conv_transpose2d(t64(randn(4, 3, 3)), t64(randn(4, 2, 2, 2)), stride=2).shape) == (2, 6, 6)


@pytest.mark.parametrize("k,d", [(3, 1), (4, 1), (2, 2), (3, 3), ((2, 3), (1, 1))])
def test_same_padding_keeps_the_size(k, d):
    x = randn(2, 3, 7, 8)
    kk = (k, k) if isinstance(k, int) else k
    w = randn(4, 3, *kk)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        y = F.conv2d(t64(x, grad=True), t64(w), padding="same", dilation=d)
    dd = (d, d) if isinstance(d, int) else d
    total = [di * (ki - 1) for di, ki in zip(dd, kk)]
    even = any(t % 2 for t in total)
    assert bool(caught) == even
    lo = [t // 2 for t in total]
    xp = np.pad(x, [(0, 0), (0, 0)] + [(a, t - a) for a, t in zip(lo, total)])
    np.testing.assert_allclose(y.detach().numpy(), conv_ref(xp, w, dilation=d), rtol=1e-10)
    if even:
        assert y.grad_fn.next_functions[0][0].name() == "ConstantPadNdBackward0"
    valid = F.conv2d(t64(x), t64(w), padding="valid", dilation=d)
    np.testing.assert_allclose(valid.numpy(), conv_ref(x, w, dilation=d), rtol=1e-10)


def test_integer_inputs_convolve_exactly():
    x = np.arange(2 * 3 * 5 * 5).reshape(2, 3, 5, 5) % 7 - 3
    w = np.arange(4 * 3 * 2 * 2).reshape(4, 3, 2, 2) % 5 - 2
    y = F.conv2d(tg.tensor(x), tg.tensor(w), tg.tensor(np.arange(4)), stride=2)
    assert y.dtype == tg.int64
    np.testing.assert_array_equal(y.numpy(), conv_ref(x, w, np.arange(4), stride=2).astype(np.int64))


def test_float32_stays_float32_and_empty_batches_work():
    x, w = tg.randn(0, 3, 5, 5, requires_grad=True), tg.randn(4, 3, 3, 3, requires_grad=True)
    y = F.conv2d(x, w, padding=1)
    assert tuple(y.shape) == (0, 4, 5, 5) and y.dtype == tg.float32
    y.sum().backward()
    assert tuple(x.grad.shape) == (0, 3, 5, 5) and float(w.grad.abs().sum()) == 0.0


X, W = (2, 4, 8, 8), (6, 4, 3, 3)
ERRORS = [
    (lambda: F.conv2d(tg.randn(*X), tg.randn(6, 3, 3, 3)), RuntimeError,
     "Given groups=1, weight of size [6, 3, 3, 3], expected input[2, 4, 8, 8] to have 3 channels, but got 4 channels instead"),
    (lambda: F.conv2d(tg.randn(*X), tg.randn(5, 2, 3, 3), groups=2), RuntimeError,
     "Given groups=2, expected weight to be divisible by 2 at dimension 0, but got weight of size [[5, 2, 3, 3]] instead"),
    (lambda: F.conv2d(tg.randn(*X), tg.randn(2, 4, 3, 3), groups=4), RuntimeError,
     "Given groups=4, expected weight to be at least 4 at dimension 0, but got weight of size [2, 4, 3, 3] instead"),
    (lambda: F.conv2d(tg.randn(*X), tg.randn(6, 4, 9, 9)), RuntimeError,
     "Calculated padded input size per channel: (8 x 8). Kernel size: (9 x 9). Kernel size can't be greater than actual input size"),
    (lambda: F.conv2d(tg.randn(8, 8), tg.randn(*W)), RuntimeError,
     "Expected 3D (unbatched) or 4D (batched) input to conv2d, but got input of size: [8, 8]"),
    (lambda: F.conv2d(tg.randn(*X), tg.randn(*W), tg.randn(5)), RuntimeError,
     "Given weight of size [6, 4, 3, 3], expected bias to be 1-dimensional with 6 elements, but got bias of size [5] instead"),
    (lambda: F.conv2d(tg.randn(*X), tg.randn(*W), stride=0), RuntimeError, "non-positive stride is not supported"),
    (lambda: F.conv2d(tg.randn(*X), tg.randn(*W), padding=-1), RuntimeError, "negative padding is not supported"),
    (lambda: F.conv2d(tg.randn(*X), tg.randn(*W), dilation=0), RuntimeError, "non-positive dilation is not supported"),
    (lambda: F.conv2d(tg.randn(*X), tg.randn(*W), groups=0), RuntimeError, "non-positive groups is not supported"),
    (lambda: F.conv2d(tg.randn(*X), tg.randn(*W), stride=(1, 1, 1)), RuntimeError,
     "expected stride to be a single integer value or a list of 2 values to match the convolution dimensions, but got stride=[1, 1, 1]"),
    (lambda: F.conv2d(tg.randn(*X), tg.randn(6, 4, 3)), RuntimeError,
     "expected stride to be a single integer value or a list of 1 values to match the convolution dimensions, but got stride=[1, 1]"),
    (lambda: F.conv2d(tg.randn(*X), tg.randn(6, 4)), RuntimeError, "weight should have at least three dimensions"),
    (lambda: F.conv2d(tg.randn(*X), tg.randn(*W), padding="same", stride=2), RuntimeError,
     "padding='same' is not supported for strided convolutions"),
    (lambda: F.conv2d(tg.randn(*X), tg.randn(*W), padding="foo"), RuntimeError, "Invalid padding string: 'foo'"),
    (lambda: F.conv2d(tg.randn(*X, dtype=tg.float64), tg.randn(*W)), RuntimeError,
     "expected scalar type Double but found Float"),
    (lambda: F.conv2d(tg.randn(*X), tg.randn(*W), tg.randn(6, dtype=tg.float64)), RuntimeError,
     "Input type (float) and bias type (double) should be the same"),
    (lambda: F.conv2d(tg.ones(*X, dtype=tg.bool), tg.ones(*W, dtype=tg.bool)), NotImplementedError,
     "\"slow_conv2d_cpu\" not implemented for 'Bool'"),
    (lambda: F.conv2d(np.zeros(X), tg.randn(*W)), TypeError,
     "conv2d(): argument 'input' (position 1) must be Tensor, not numpy.ndarray"),
    (lambda: F.conv2d(tg.randn(*X), tg.randn(*W), stride=1.5), TypeError,
     "conv2d(): argument 'stride' (position 4) must be tuple of ints, not float"),
    (lambda: F.conv_transpose2d(tg.randn(*X), tg.randn(4, 3, 3, 3), stride=2, output_padding=2), RuntimeError,
     "output padding must be smaller than either stride or dilation, but got output_padding_height: 2 "
     "output_padding_width: 2 stride_height: 2 stride_width: 2 dilation_height: 1 dilation_width: 1"),
    (lambda: F.conv_transpose2d(tg.randn(*X), tg.randn(3, 3, 3, 3)), RuntimeError,
     "Given transposed=1, weight of size [3, 3, 3, 3], expected input[2, 4, 8, 8] to have 3 channels, but got 4 channels instead"),
    (lambda: F.conv_transpose2d(tg.randn(*X), tg.randn(4, 3, 3, 3), tg.randn(4)), RuntimeError,
     "Given transposed=1, weight of size [4, 3, 3, 3], expected bias to be 1-dimensional with 3 elements, but got bias of size [4] instead"),
    (lambda: F.conv_transpose2d(tg.randn(*X), tg.randn(4, 3, 3, 3), padding=6), RuntimeError,
     "Given input size per channel: (8 x 8). Calculated output size per channel: (-2 x -2). Output size is too small"),
    (lambda: F.conv_transpose2d(tg.randn(*X), tg.randn(4, 3, 3, 3), padding="same"), TypeError,
     "conv_transpose2d(): argument 'padding' (position 5) must be tuple of ints, not str"),
]


@pytest.mark.parametrize("call,exc,message", ERRORS, ids=[e[2][:40] for e in ERRORS])
def test_errors_have_pytorch_types_and_messages(call, exc, message):
    with pytest.raises(exc) as info:
        call()
    assert str(info.value) == message


# -- layers ---------------------------------------------------------------------------------------

def test_conv2d_layer_parameters_and_initialisation():
    tg.manual_seed(0)
    m = nn.Conv2d(6, 8, (3, 2), stride=2, padding=1, groups=2)
    assert [n for n, _ in m.named_parameters()] == ["weight", "bias"]
    assert tuple(m.weight.shape) == (8, 3, 3, 2) and tuple(m.bias.shape) == (8,)
    bound = 1 / math.sqrt(3 * 3 * 2)  # kaiming_uniform_(a=sqrt(5)) is U(-1/sqrt(fan_in), ..)
    for p in (m.weight, m.bias):
        v = p.detach().numpy()
        assert np.all(np.abs(v) <= bound) and np.abs(v).max() > bound / 2
    assert (m.kernel_size, m.stride, m.padding, m.dilation, m.output_padding) == ((3, 2), (2, 2), (1, 1), (1, 1), (0, 0))
    t = nn.ConvTranspose2d(4, 6, 3, groups=2, bias=False)
    assert tuple(t.weight.shape) == (4, 3, 3, 3) and t.bias is None
    assert [n for n, _ in t.named_parameters()] == ["weight"]


def test_layer_forward_uses_the_functional_form():
    m = nn.Conv1d(3, 4, 3, stride=2, padding=1, dilation=1).double()
    x = randn(2, 3, 9)
    y = m(t64(x))
    np.testing.assert_allclose(y.detach().numpy(), conv_ref(x, m.weight.detach().numpy(), m.bias.detach().numpy(),
                                                            stride=2, padding=1), rtol=1e-10)


def test_padding_modes_pad_first():
    m = nn.Conv2d(2, 3, 3, padding=(1, 2), padding_mode="circular").double()
    x = randn(1, 2, 5, 6)
    xp = np.pad(x, [(0, 0), (0, 0), (1, 1), (2, 2)], mode="wrap")
    np.testing.assert_allclose(m(t64(x)).detach().numpy(),
                               conv_ref(xp, m.weight.detach().numpy(), m.bias.detach().numpy()), rtol=1e-10)
    m = nn.Conv2d(2, 3, 3, padding=1, padding_mode="reflect").double()
    xp = np.pad(x, [(0, 0), (0, 0), (1, 1), (1, 1)], mode="reflect")
    np.testing.assert_allclose(m(t64(x)).detach().numpy(),
                               conv_ref(xp, m.weight.detach().numpy(), m.bias.detach().numpy()), rtol=1e-10)


def test_conv_transpose_output_size_picks_the_output_padding():
    m = nn.ConvTranspose2d(2, 3, 3, stride=2, padding=1).double()
    x = t64(randn(1, 2, 4, 4))
    assert tuple(m(x).shape) == (1, 3, 7, 7)
    assert tuple(m(x, output_size=(8, 7)).shape) == (1, 3, 8, 7)
    assert tuple(m(x, output_size=[1, 3, 8, 8]).shape) == (1, 3, 8, 8)
    with pytest.raises(ValueError, match=r"requested an output size of \(9, 7\), but valid sizes range from "
                                         r"\[7, 7\] to \[8, 8\]"):
        m(x, output_size=(9, 7))
    with pytest.raises(ValueError, match="ConvTranspose2D: for 4D input, output_size must have 2 or 4 elements"):
        m(x, output_size=(8,))


REPRS = [
    (lambda: nn.Conv2d(3, 8, 3), "Conv2d(3, 8, kernel_size=(3, 3), stride=(1, 1))"),
    (lambda: nn.Conv2d(4, 8, (3, 5), stride=2, padding=1, dilation=2, groups=2, bias=False, padding_mode="reflect"),
     "Conv2d(4, 8, kernel_size=(3, 5), stride=(2, 2), padding=(1, 1), dilation=(2, 2), groups=2, bias=False, "
     "padding_mode=reflect)"),
    (lambda: nn.Conv1d(2, 3, 3, padding="same"), "Conv1d(2, 3, kernel_size=(3,), stride=(1,), padding=same)"),
    (lambda: nn.ConvTranspose2d(4, 6, 3, stride=2, output_padding=1),
     "ConvTranspose2d(4, 6, kernel_size=(3, 3), stride=(2, 2), output_padding=(1, 1))"),
]


@pytest.mark.parametrize("make,text", REPRS, ids=[r[1][:30] for r in REPRS])
def test_layer_repr(make, text):
    assert repr(make()) == text


@pytest.mark.parametrize("make,exc,message", [
    (lambda: nn.Conv2d(4, 6, 3, groups=0), ValueError, "groups must be a positive integer"),
    (lambda: nn.Conv2d(5, 6, 3, groups=2), ValueError, "in_channels must be divisible by groups"),
    (lambda: nn.Conv2d(4, 5, 3, groups=2), ValueError, "out_channels must be divisible by groups"),
    (lambda: nn.Conv2d(4, 6, 3, padding="full"), ValueError,
     "Invalid padding string 'full', should be one of {'same', 'valid'}"),
    (lambda: nn.Conv2d(4, 6, 3, padding="same", stride=2), ValueError,
     "padding='same' is not supported for strided convolutions"),
    (lambda: nn.ConvTranspose2d(4, 6, 3, padding_mode="reflect"), ValueError,
     'Only "zeros" padding mode is supported for ConvTranspose2d'),
])
def test_layer_argument_errors(make, exc, message):
    with pytest.raises(exc) as info:
        make()
    assert message in str(info.value)


# -- against PyTorch -----------------------------------------------------------------------------

@pytest.fixture(autouse=True, scope="module")
def _one_torch_thread():
    """PyTorch's slow (float64, transposed) kernels spin OpenMP threads: on a busy machine one
    thread runs these tiny cases fastest."""
    try:
        import torch
    except ImportError:
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def _torch_F():
    torch = pytest.importorskip("torch")
    return torch, torch.nn.functional


def _compare_functional(name, x, w, b, kw, dtype):
    torch, TF = _torch_F()
    arrays = [a.astype(dtype) if a is not None else None for a in (x, w, b)]
    ours = [tg.tensor(a, requires_grad=True) if a is not None else None for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True) if a is not None else None for a in arrays]
    y, yt = getattr(F, name)(*ours, **kw), getattr(TF, name)(*theirs, **kw)
    assert_close(y, yt, what="output")
    g = RNG.standard_normal(tuple(yt.shape)).astype(dtype)
    y.backward(tg.tensor(g))
    yt.backward(torch.tensor(g))
    for k, (a, at) in enumerate(zip(ours, theirs)):
        if a is not None:
            assert_close(a.grad, at.grad, what=f"{name} operand {k} grad")


ORACLE_CONV = [dict(stride=s, padding=p, dilation=d, groups=g)
               for s, p, d, g in itertools.product((1, 2, (1, 3)), (0, 1, (2, 0)), (1, 2), (1, 2))]


@pytest.mark.torch
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("kw", ORACLE_CONV, ids=[str(k) for k in ORACLE_CONV])
def test_conv2d_against_pytorch(kw, dtype):
    g = kw["groups"]
    _compare_functional("conv2d", randn(2, 4, 9, 8), randn(6, 4 // g, 3, 2), randn(6) if g == 1 else None,
                        kw, dtype)


@pytest.mark.torch
@pytest.mark.filterwarnings("ignore:Using padding='same' with even kernel lengths")
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("kw", [dict(), dict(stride=2, padding=1, dilation=2), dict(groups=2, padding="same"),
                                dict(padding="valid", stride=3)])
def test_conv1d_against_pytorch(kw, dtype):
    _compare_functional("conv1d", randn(2, 4, 11), randn(6, 4 // kw.get("groups", 1), 4), randn(6), kw, dtype)


ORACLE_CONV_T = [dict(stride=s, padding=p, output_padding=op, dilation=d, groups=g)
                 for s, p, op, d, g in itertools.product((1, 2, 3), (0, 1), (0, 1), (1, 2), (1, 2))
                 if op < max(s, d)]


@pytest.mark.torch
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("kw", ORACLE_CONV_T, ids=[str(k) for k in ORACLE_CONV_T])
def test_conv_transpose2d_against_pytorch(kw, dtype):
    g = kw["groups"]
    _compare_functional("conv_transpose2d", randn(2, 4, 5, 4), randn(4, 6 // g, 3, 2), randn(6), kw, dtype)


@pytest.mark.torch
@pytest.mark.parametrize("make", [
    lambda n: n.Conv2d(4, 6, 3, stride=2, padding=1),
    lambda n: n.Conv2d(4, 6, (3, 2), padding="same", dilation=2, groups=2, bias=False),
    lambda n: n.Conv2d(4, 6, 3, padding=(1, 2), padding_mode="replicate"),
    lambda n: n.Conv2d(4, 6, 3, padding=1, padding_mode="circular"),
    lambda n: n.Conv1d(4, 6, 3, stride=2, padding=1, padding_mode="reflect"),
    lambda n: n.ConvTranspose2d(4, 6, 3, stride=2, padding=1, output_padding=1, groups=2),
    lambda n: n.ConvTranspose1d(4, 6, 3, stride=3, dilation=2),
])
def test_layers_against_pytorch(make):
    torch = pytest.importorskip("torch")
    theirs, ours = make(torch.nn), make(nn)
    assert repr(ours) == repr(theirs)
    copy_weights(theirs, ours)
    x = randn(2, 4, 7, 6) if "2d" in type(ours).__name__ else randn(2, 4, 9)
    compare_modules(theirs, ours, x.astype(np.float32))


@pytest.mark.torch
def test_default_initialisation_has_pytorch_bounds():
    """kaiming_uniform_(a=sqrt(5)) for the weight and uniform(+-1/sqrt(fan_in)) for the bias
    both give the bound 1/sqrt(fan_in), fan_in taken from the weight's dim 1 (so per group, and
    for a transposed conv its out_channels / groups), as PyTorch computes it."""
    for make, fan_in in ((lambda n: n.Conv2d(6, 8, (3, 2), groups=2), 3 * 3 * 2),
                         (lambda n: n.ConvTranspose2d(6, 8, 3, groups=2), 4 * 3 * 3)):
        layer = make(nn)
        bound = 1 / np.sqrt(fan_in)
        w, b = np.abs(layer.weight.detach().numpy()), np.abs(layer.bias.detach().numpy())
        assert w.max() <= bound + 1e-7 and b.max() <= bound + 1e-7
        assert w.max() > 0.8 * bound  # over 100 draws: the bound is reached, not a smaller one


@pytest.mark.torch
def test_default_parameter_shapes_match_pytorch():
    torch = pytest.importorskip("torch")
    for make in (lambda n: n.Conv2d(6, 8, (3, 2), groups=2), lambda n: n.ConvTranspose2d(6, 8, 3, groups=2)):
        theirs, ours = dict(make(torch.nn).named_parameters()), dict(make(nn).named_parameters())
        assert {k: tuple(v.shape) for k, v in ours.items()} == {k: tuple(v.shape) for k, v in theirs.items()}


BAD_CALLS = [
    "F.conv2d(x, w3)", "F.conv2d(x, w, stride=(2, 2, 2))", "F.conv2d(x, w, padding=-2)",
    "F.conv2d(x, w, dilation=-1)", "F.conv2d(x, w, groups=3)", "F.conv2d(x[0, 0], w)",
    "F.conv2d(x, w, b5)", "F.conv2d(x, w, bd)", "F.conv2d(x, wd)", "F.conv2d(x, w, padding='same', dilation=(1, 2, 3))",
    "F.conv2d(x, w5, padding='same')", "F.conv1d(x, w[:, :, 0])", "F.conv1d(x[:, :, 0], w[:, :, 0], padding=(1, 2))",
    "F.conv_transpose2d(x, w.transpose(0, 1), stride=(1, 2), output_padding=(1, 0))",
    "F.conv_transpose2d(x, w.transpose(0, 1), groups=5)",
    "F.conv_transpose1d(x[:, :, 0], w[:, :, 0].transpose(0, 1), output_padding=1)",
    "F.conv_transpose2d(x, w.transpose(0, 1), output_padding=-1)",
]


@pytest.mark.torch
@pytest.mark.parametrize("call", BAD_CALLS)
def test_error_messages_match_pytorch(call):
    torch = pytest.importorskip("torch")

    def run(lib, functional):
        lib.manual_seed(0)
        env = dict(F=functional, x=lib.randn(2, 4, 8, 8, dtype=lib.float64), w=lib.randn(6, 4, 3, 3, dtype=lib.float64),
                   w3=lib.randn(6, 3, 3, 3, dtype=lib.float64), w5=lib.randn(6, 4, 3, 3, 3, dtype=lib.float64),
                   b5=lib.randn(5, dtype=lib.float64), bd=lib.randn(6), wd=lib.randn(6, 4, 3, 3))
        with pytest.raises(Exception) as info:
            eval(call, env)
        return info.type, str(info.value)

    assert run(tg, F) == run(torch, torch.nn.functional)
