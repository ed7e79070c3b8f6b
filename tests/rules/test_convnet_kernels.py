"""The compiled (Numba) loops behind a convolutional network's layers: batch norm's
forward and first-order backward, the convolution's fold, max pooling's indices and
ReLU's first-order backward.
Each runs here from the first element and call on (not once worth loading, see
tracegrad.rules.compiled) and is checked against its NumPy form: within a few float32 ulps
and against float64 for batch norm (it sums in float64), bit for bit for the others; and
on the operands it must leave to the NumPy form."""
import numpy as np
import pytest

import tracegrad as tg
from tracegrad.backend import cpu
from tracegrad.rules import (activation, arith, batch_norm_kernels, compiled, conv, conv_kernels, pool,
                             pool_kernels, relu_kernels)
from tracegrad.rules import nn as nn_rules

from .compiled_at_once import load_at_once

pytest.importorskip("numba")

F = tg.nn.functional
MODULES = (batch_norm_kernels, conv_kernels, pool_kernels, relu_kernels)
RNG = np.random.default_rng(7)


@pytest.fixture(autouse=True, scope="module")
def _unloaded_after():
    """The kernels this module loads are forgotten after it: later tests meet the loading
    rule of a fresh process, not kernels that serve from the first call."""
    yield
    compiled.forget()


@pytest.fixture
def numba_at_once(monkeypatch, tmp_path_factory):
    """The kernels compiled from the first element and call on; ``off()`` turns them off
    (the NumPy forms), ``on()`` back on."""
    monkeypatch.setenv("TRACEGRAD_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "kernels"))

    class Switch:
        @staticmethod
        def on():
            load_at_once(monkeypatch, *MODULES)

        @staticmethod
        def off():
            for m in MODULES:
                monkeypatch.setattr(m, "NUMBA_MIN", None)
    Switch.on()
    return Switch


def _both(switch, fn):
    """``fn()`` with the compiled loops, then with the NumPy forms."""
    switch.on()
    fast = fn()
    switch.off()
    return fast, fn()


def _exact_batch_norm(x, w, b, g, gm, gi, eps):
    """Batch norm's outputs and gradients in float64, from the composite formulas."""
    x64 = tg.tensor(x.astype(np.float64), requires_grad=True)
    w64 = None if w is None else tg.tensor(w.astype(np.float64), requires_grad=True)
    b64 = None if b is None else tg.tensor(b.astype(np.float64), requires_grad=True)
    out, mean, invstd = nn_rules.batch_norm(x64, w64, b64, eps=eps)
    loss = (out * tg.tensor(g.astype(np.float64))).sum() + (mean * tg.tensor(gm.astype(np.float64))).sum() + (
        invstd * tg.tensor(gi.astype(np.float64))).sum()
    inputs = [t for t in (x64, w64, b64) if t is not None]
    grads = tg.autograd.grad(loss, inputs, create_graph=True)  # (the composite vjp)
    return [t.detach().numpy() for t in (out, mean, invstd)], [d.detach().numpy() for d in grads]


# -- batch norm -------------------------------------------------------------------------------------

@pytest.mark.parametrize("shape", [(6, 3), (4, 5, 7), (8, 16, 4, 4), (2, 3, 2, 3, 4), (8, 4, 2, 2)])
@pytest.mark.parametrize("affine", [True, False])
def test_batch_norm_compiled_matches_float64(numba_at_once, shape, affine):
    """Forward and first-order backward, cotangents on all three outputs, against the
    composite formulas in float64: as close as the NumPy form in float32 is."""
    x = (RNG.standard_normal(shape) * 3 + 2).astype(np.float32)
    w, b = (RNG.standard_normal(shape[1]).astype(np.float32) for _ in range(2)) if affine else (None, None)
    g = RNG.standard_normal(shape).astype(np.float32)
    gm, gi = (RNG.standard_normal(shape[1]).astype(np.float32) for _ in range(2))
    exact_outs, exact_grads = _exact_batch_norm(x, w, b, g, gm, gi, 1e-3)

    def run():
        out, mean, invstd = batch_norm_kernels.batch_norm_forward(cpu, x, w, b, 1e-3, nn_rules._moments)
        dx, dw, db = batch_norm_kernels.batch_norm_backward(cpu, g, gm, gi, x, w, mean, invstd)
        return [out, mean, invstd], [dx] + ([dw, db] if affine else [])
    (outs, grads), (numpy_outs, numpy_grads) = _both(numba_at_once, run)
    assert compiled.loaded().count("batch_norm_forward") == compiled.loaded().count("batch_norm_backward") == 1
    for got, ref, exact in zip(outs + grads, numpy_outs + numpy_grads, exact_outs + exact_grads):
        assert got.dtype == np.float32 and got.shape == exact.shape
        scale = np.abs(exact).max()
        assert np.abs(got - exact).max() <= max(2 * np.abs(ref - exact).max(), 8e-7 * scale)


def test_batch_norm_compiled_needs_no_rescaling(numba_at_once):
    """Values near float32's largest: the NumPy form's squared deviations overflow and it
    rescales; the compiled loop's float64 sums do not overflow. Both normalise. A channel
    of values too large to sum in float32 (PyTorch gives -inf there, the NumPy form NaN)
    is normalised right by the compiled loop."""
    x = (RNG.standard_normal((4, 3, 5)) * 1e37).astype(np.float32)
    fast, slow = _both(numba_at_once, lambda: batch_norm_kernels.batch_norm_forward(cpu, x, None, None, 1e-5,
                                                                                     nn_rules._moments))
    for got, ref in zip(fast, slow):
        assert np.isfinite(got).all()
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)
    x[:, 1] = np.float32(3e38) - np.arange(20, dtype=np.float32).reshape(4, 5) * np.float32(1e32)
    numba_at_once.on()
    out, mean, invstd = batch_norm_kernels.batch_norm_forward(cpu, x, None, None, 1e-5, nn_rules._moments)
    x64 = x.astype(np.float64)
    m64, v64 = x64.mean(axis=(0, 2)), x64.var(axis=(0, 2))
    np.testing.assert_allclose(mean, m64, rtol=1e-6)
    np.testing.assert_allclose(invstd, 1 / np.sqrt(v64 + 1e-5), rtol=1e-6)
    # (centred on the mean as float32 holds it: its rounding at 3e38 is a few % of the spread)
    centred = x64 - mean.astype(np.float64)[:, None]
    np.testing.assert_allclose(out, centred / np.sqrt(v64[:, None] + 1e-5), rtol=1e-5, atol=1e-5)


def test_batch_norm_compiled_propagates_nan_per_channel(numba_at_once):
    x = RNG.standard_normal((4, 3, 5)).astype(np.float32)
    x[2, 1, 3] = np.nan
    (out, mean, invstd), (ref, ref_mean, ref_invstd) = _both(
        numba_at_once, lambda: batch_norm_kernels.batch_norm_forward(cpu, x, None, None, 1e-5, nn_rules._moments))
    np.testing.assert_array_equal(np.isnan(out), np.isnan(ref))
    assert np.isnan(out[:, 1]).all() and np.isfinite(out[:, [0, 2]]).all()
    np.testing.assert_array_equal(np.isnan(mean), np.isnan(ref_mean))


def test_batch_norm_leaves_other_operands_to_numpy(numba_at_once):
    x = RNG.standard_normal((4, 3, 5)).astype(np.float32)
    g = RNG.standard_normal((4, 3, 5)).astype(np.float32)
    for op in (x.transpose(2, 1, 0), x.astype(np.float64)):  # not C-contiguous; not float32
        assert batch_norm_kernels._compiled(cpu, "forward", op) is None
    assert batch_norm_kernels._compiled(cpu, "backward", x, g[:, :, ::-1]) is None
    assert batch_norm_kernels._compiled(cpu, "backward", x, g.astype(np.float64)) is None
    assert batch_norm_kernels._compiled(cpu, "forward", x, None, None) is not None


def test_batch_norm_compiled_over_intra_op_threads(numba_at_once):
    """Slabs of channels in two threads give the one-thread results bit for bit."""
    x = RNG.standard_normal((8, 64, 16, 16)).astype(np.float32)
    g = RNG.standard_normal(x.shape).astype(np.float32)
    w, b = RNG.standard_normal(64).astype(np.float32), RNG.standard_normal(64).astype(np.float32)

    def run():
        out, mean, invstd = batch_norm_kernels.batch_norm_forward(cpu, x, w, b, 1e-5, nn_rules._moments)
        return (out, mean, invstd) + batch_norm_kernels.batch_norm_backward(cpu, g, None, None, x, w, mean, invstd)
    one = run()
    before = tg.get_num_threads()
    tg.set_num_threads(2)
    try:
        two = run()
    finally:
        tg.set_num_threads(before)
    for a, c in zip(one, two):
        np.testing.assert_array_equal(a, c)


@pytest.mark.torch
def test_batch_norm_compiled_in_a_module_against_pytorch(numba_at_once):
    import torch
    x = (RNG.standard_normal((8, 16, 6, 6)) * 2 + 1).astype(np.float32)
    g = RNG.standard_normal(x.shape).astype(np.float32)
    results = []
    for lib in (tg, torch):
        bn = lib.nn.BatchNorm2d(16)
        with lib.no_grad():
            bn.weight.copy_(lib.tensor(np.linspace(0.5, 2, 16, dtype=np.float32)))
        t = lib.tensor(x, requires_grad=True)
        y = bn(t)
        y.backward(lib.tensor(g))
        results.append([y.detach().numpy(), t.grad.numpy(), bn.weight.grad.numpy(), bn.bias.grad.numpy(),
                        bn.running_mean.numpy(), bn.running_var.numpy()])
    assert "batch_norm_backward" in compiled.loaded()
    for ours, theirs in zip(*results):
        np.testing.assert_allclose(ours, theirs, rtol=2e-5, atol=2e-5)


# -- the convolution's fold -----------------------------------------------------------------------------

FOLDS = [  # (input, weight, stride, padding, dilation, output_padding, groups)
    ((2, 8, 2, 3), (8, 24, 3, 3), (1, 1), (1, 1), (1, 1), (0, 0), 1),  # stride 1: folds when the
    # weights outnumber the unfolded values (conv.folds_cheaper)
    ((2, 4, 5, 6), (4, 3, 3, 3), (2, 2), (1, 1), (1, 1), (1, 1), 1),
    ((3, 6, 4, 3), (6, 2, 3, 2), (3, 2), (2, 0), (2, 1), (1, 0), 2),
    ((1, 2, 3, 3), (2, 5, 4, 4), (1, 3), (0, 3), (1, 2), (0, 2), 1),
    ((1, 16, 2, 2), (16, 16, 3, 3), (1, 1), (1, 1), (1, 1), (0, 0), 1),
]


@pytest.mark.parametrize("case", FOLDS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_transposed_convolution_compiled_fold_is_bit_for_bit(numba_at_once, case, dtype):
    """conv_transpose2d and its gradients (whose input gradient is a convolution, whose
    weight gradient is a correlation) with the compiled fold against the NumPy fold."""
    shape, wshape, stride, padding, dilation, output_padding, groups = case
    x = RNG.standard_normal(shape).astype(dtype)
    w = RNG.standard_normal(wshape).astype(dtype)

    def run():
        xt, wt = tg.tensor(x, requires_grad=True), tg.tensor(w, requires_grad=True)
        y = F.conv_transpose2d(xt, wt, stride=stride, padding=padding, output_padding=output_padding,
                               groups=groups, dilation=dilation)
        y.backward(tg.tensor(np.cos(np.arange(y.numel())).reshape(y.shape).astype(dtype)))
        return y.detach().numpy(), xt.grad.numpy(), wt.grad.numpy()
    fast, slow = _both(numba_at_once, run)
    assert f"conv_fold_2d_{dtype}" in compiled.loaded()
    for a, b in zip(fast, slow):
        assert a.dtype == np.dtype(dtype) and a.flags.c_contiguous
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("stride", [(1, 1), (2, 2)])
def test_convolution_input_gradient_compiled_fold_is_bit_for_bit(numba_at_once, monkeypatch, stride):
    """conv2d's input gradient folds (strided, or late layers: more weights than unfolded
    values), also over blocks of images when the workspace is small."""
    x = RNG.standard_normal((2, 32, 3, 3)).astype(np.float32)
    w = RNG.standard_normal((32, 32, 3, 3)).astype(np.float32)
    assert stride != (1, 1) or conv.folds_cheaper(x, w, 1)

    def run():
        xt = tg.tensor(x, requires_grad=True)
        F.conv2d(xt, tg.tensor(w), stride=stride, padding=1).square().sum().backward()
        return xt.grad.numpy()
    fast, slow = _both(numba_at_once, run)
    np.testing.assert_array_equal(fast, slow)
    monkeypatch.setattr(conv, "WORKSPACE_BYTES", 32 * 9 * 9 * 4)  # one image at a time
    fast, slow = _both(numba_at_once, run)
    np.testing.assert_array_equal(fast, slow)
    np.testing.assert_allclose(fast, run(), rtol=1e-5, atol=1e-4)


def test_fold_leaves_other_operands_to_numpy(numba_at_once):
    cols = RNG.standard_normal((4, 3, 3, 2, 2, 2)).astype(np.float32)
    assert conv_kernels.fold_2d(cpu, cols, (1, 1), (1, 1), (1, 1), (2, 2)) is not None
    assert conv_kernels.fold_2d(cpu, cols.astype(np.float16), (1, 1), (1, 1), (1, 1), (2, 2)) is None
    assert conv_kernels.fold_2d(cpu, cols[..., ::-1], (1, 1), (1, 1), (1, 1), (2, 2)) is None
    # a 3-d transposed convolution keeps the NumPy fold
    x = RNG.standard_normal((1, 2, 3, 3, 3)).astype(np.float32)
    w = RNG.standard_normal((2, 2, 2, 2, 2)).astype(np.float32)
    fast, slow = _both(numba_at_once, lambda: F.conv_transpose3d(tg.tensor(x), tg.tensor(w), stride=2).numpy())
    np.testing.assert_array_equal(fast, slow)


# -- max pooling's indices --------------------------------------------------------------------------------


def _pooling_cases(count, seed):
    """(x, params) of random geometry (kernel, stride, dilation, padding up to half the
    kernel, ceil mode) and values: small integers (ties), with NaN, with -inf, or all -inf."""
    rng = np.random.default_rng(seed)
    made = 0
    while made < count:
        h, w = (int(n) for n in rng.integers(1, 9, 2))
        kernel, stride, dilation = (tuple(int(n) for n in rng.integers(1, m, 2)) for m in (4, 4, 3))
        padding = tuple(int(rng.integers(0, k // 2 + 1)) for k in kernel)
        if any(n + 2 * p - d * (k - 1) - 1 < 0 for n, p, d, k in zip((h, w), padding, dilation, kernel)):
            continue
        out = [pool.pool_output_size(n, k, s, p, d, False) for n, k, s, p, d in zip((h, w), kernel, stride, padding,
                                                                                   dilation)]
        if any(not any(0 <= i * s - p + j * d < n for j in range(k)) for n, k, s, p, d, o in
               zip((h, w), kernel, stride, padding, dilation, out) for i in range(o + 1)):
            continue  # (a window of taps in the padding alone: refused, see below)
        x = rng.integers(-2, 3, (2, 3, h, w)).astype(["float32", "float64"][made % 2])
        kind = made % 4
        if kind == 1:
            x[rng.random(x.shape) < 0.2] = np.nan
        elif kind == 2:
            x[rng.random(x.shape) < 0.5] = -np.inf
        elif kind == 3:
            x[...] = -np.inf
        made += 1
        yield x, dict(kernel_size=kernel, stride=stride, padding=padding, dilation=dilation,
                      ceil_mode=bool(rng.integers(2)))


def test_max_pool_indices_compiled_equal_the_numpy_form(numba_at_once):
    """Ties go to the first tap, the last NaN wins, a window with nothing above -inf points
    at its first tap inside the input: the loop and the NumPy form agree on all of it."""
    for x, params in _pooling_cases(240, seed=3):
        fast, slow = _both(numba_at_once, lambda: pool.max_pool2d_indices.impl(cpu, x, **params))
        assert fast.dtype == np.int64 and fast.shape == slow.shape
        np.testing.assert_array_equal(fast, slow, err_msg=str(params))
    assert any(name.startswith("max_pool2d_indices_float64_") for name in compiled.loaded())


@pytest.mark.torch
def test_max_pool_indices_against_pytorch(numba_at_once):
    import torch
    for x, params in _pooling_cases(120, seed=4):
        ours = pool.max_pool2d_indices.impl(cpu, x, **params)
        _, theirs = torch.nn.functional.max_pool2d(torch.tensor(x), return_indices=True, **params)
        np.testing.assert_array_equal(ours, theirs.numpy(), err_msg=str(params))


def test_max_pool_empty_window_with_dilation_points_inside_it(numba_at_once):
    """A window starting in the padding, taps 2 apart: with nothing above -inf it points at
    its first tap inside the input (row 1, column 1 of 5x5: 6 for every window here, as
    PyTorch gives), not at (0, 0), which is no tap of it. Both forms."""
    x = np.full((1, 1, 5, 5), -np.inf, dtype=np.float32)
    params = dict(kernel_size=(3, 3), stride=(2, 2), padding=(1, 1), dilation=(2, 2), ceil_mode=False)
    for where in _both(numba_at_once, lambda: pool.max_pool2d_indices.impl(cpu, x, **params)):
        np.testing.assert_array_equal(where, np.full((1, 1, 2, 2), 6))


def test_max_pool_window_with_every_tap_in_the_padding_is_refused():
    """Dilation 3 over a 2x2 plane padded by 1: the one window's taps (-1 and 2 along each
    dim) all fall in the padding. PyTorch gives -inf with an index beyond the input (which
    its backward writes through); gathering by it failed here with an IndexError after
    the empty-window fix above, and before that read element (0, 0). Refused by name."""
    x = tg.tensor(np.arange(8.0).reshape(2, 1, 2, 2))
    with pytest.raises(RuntimeError, match=r"max_pool2d: a window of kernel size \(2, 2\), dilation \(3, 3\) "
                                           r"and padding \(1, 1\) over an input of size \(2, 2\) takes no element"):
        F.max_pool2d(x, 2, stride=1, padding=1, dilation=3)
    F.max_pool2d(x, 2, stride=1, padding=1, dilation=1)  # (a window there reaches the input)


def test_max_pool_compiled_in_a_network_step_and_over_threads(numba_at_once):
    """max_pool2d forward and backward through the compiled indices equal the NumPy form's;
    the planes split over two intra-op threads give the same indices."""
    x = RNG.standard_normal((4, 8, 17, 16)).astype(np.float32)

    def run():
        t = tg.tensor(x, requires_grad=True)
        y = F.max_pool2d(t, 3, stride=2, padding=1)
        y.backward(tg.tensor(np.cos(np.arange(y.numel())).reshape(y.shape).astype(np.float32)))
        return y.detach().numpy(), t.grad.numpy()
    fast, slow = _both(numba_at_once, run)
    assert "max_pool2d_indices_float32_3x3" in compiled.loaded()
    for a, b in zip(fast, slow):
        np.testing.assert_array_equal(a, b)
    numba_at_once.on()
    params = dict(kernel_size=(3, 3), stride=(2, 2), padding=(1, 1), dilation=(1, 1), ceil_mode=True)
    one = pool.max_pool2d_indices.impl(cpu, x, **params)
    before = tg.get_num_threads()
    tg.set_num_threads(2)
    try:
        two = pool.max_pool2d_indices.impl(cpu, np.repeat(x, 16, axis=1), **params)
    finally:
        tg.set_num_threads(before)
    np.testing.assert_array_equal(two, np.repeat(one, 16, axis=1))


def test_max_pool_leaves_other_operands_to_numpy(numba_at_once):
    x = RNG.standard_normal((2, 3, 6, 6)).astype(np.float32)
    args = ((2, 2), (2, 2), (0, 0), (1, 1), (3, 3), (0, 0))
    assert pool_kernels.max_pool2d_indices(cpu, x, *args) is not None
    for other in (x.astype(np.float16), x.astype(np.int32), x[..., ::-1], x[0, 0], x.astype(">f8")):
        assert pool_kernels.max_pool2d_indices(cpu, other, *args) is None


# -- ReLU's backward ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_relu_backward_compiled_is_bit_for_bit(numba_at_once, dtype):
    """Against the composite ``where(out <= 0, 0.0, g)``, at NaN, infinities and signed
    zeros in both operands: g + 0.0 where the result is above zero or NaN, else 0.0."""
    g = RNG.standard_normal((6, 5, 7)).astype(dtype)
    out = RNG.standard_normal(g.shape).astype(dtype)
    flat_g, flat_out = g.reshape(-1), out.reshape(-1)
    flat_g[:20], flat_g[20:40], flat_g[40:60], flat_g[60:80] = np.nan, np.inf, -np.inf, -0.0
    flat_out[::7], flat_out[::11], flat_out[::13], flat_out[::17] = np.nan, 0.0, -0.0, np.inf
    fast, slow = _both(numba_at_once, lambda: activation.relu_vjp(g, out, None))
    assert f"relu_backward_{dtype}" in compiled.loaded()
    assert fast.dtype == np.dtype(dtype) and fast.tobytes() == slow.tobytes()
    assert slow.tobytes() == arith.where.impl(cpu, out <= 0, 0.0, g).tobytes()
    assert not np.signbit(fast[fast == 0]).any()  # (no -0.0)


def test_relu_backward_compiled_in_a_network_step(numba_at_once):
    """relu and relu_ in a step: the gradients equal the composite's; with create_graph the
    composite runs (a graph recorded), its double backward the same either way."""
    x = RNG.standard_normal((4, 6, 8, 8)).astype(np.float32)

    def run():
        t = tg.tensor(x, requires_grad=True)
        y = F.relu(t * 2.0)
        z = F.relu(y - 0.5, inplace=True)
        (z * z).sum().backward()
        s = tg.tensor(x, requires_grad=True)
        dx, = tg.autograd.grad((F.relu(s) ** 3).sum(), s, create_graph=True)
        assert dx.grad_fn is not None
        dx.sum().backward()
        return t.grad.numpy(), s.grad.numpy()
    fast, slow = _both(numba_at_once, run)
    assert "relu_backward_float32" in compiled.loaded()
    for a, b in zip(fast, slow):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(slow[0], np.where(x * 2 - 0.5 > 0, 4 * (x * 2 - 0.5), 0.0), rtol=1e-6)


def test_relu_backward_leaves_other_operands_to_the_composite(numba_at_once):
    g = RNG.standard_normal((4, 5)).astype(np.float32)
    out = RNG.standard_normal((4, 5)).astype(np.float32)
    assert relu_kernels.relu_backward(cpu, g, out) is not None
    for a, b in ((g.T, out.T), (g, out.astype(np.float64)), (g.astype(np.float16), out.astype(np.float16)),
                 (g.astype(">f4"), out.astype(">f4")),
                 (np.broadcast_to(g[:1], g.shape), out), (g[0, 0], out[0, 0]), (1.0, out)):
        assert relu_kernels.relu_backward(cpu, a, b) is None
