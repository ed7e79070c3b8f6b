"""The array kernels behind a transformer's layers (GELU, layer norm, attention, the
embedding's scatter-add, addmm's bias): the first-order backward runs them on plain
arrays while ``create_graph=True`` runs the composite vjps, so each kernel is checked
against PyTorch in float32 and float64, against the composite form, and where it has
one against its Numba twin (bit for bit, or within a few ulps) and without Numba."""
import math
import sys

import numpy as np
import pytest

import tracegrad as tg
from tracegrad.backend import cpu
from tracegrad.rules import attention_blocks, compiled, gelu_kernels, layer_norm_kernels
from tracegrad.rules.attention import attention, attention_vjp
from tracegrad.rules.linalg import addmm
from tracegrad.transform import jit

from .compiled_at_once import load_at_once
from .torch_gelu_avx2 import torch_gelu

F = tg.nn.functional
SPECIAL = [0.0, -0.0, 1e-40, -1e-40, 1e-30, -30.0, 30.0, -5.0, 3.0, -0.75]


def _points(dtype, n=3000, seed=0):
    rng = np.random.default_rng(seed)
    return np.concatenate([SPECIAL, rng.standard_normal(n) * 3]).astype(dtype)


@pytest.fixture(params=["numpy", "numba"])
def gelu_path(request, monkeypatch, tmp_path_factory):
    """GELU's kernels with Numba used from the first element on, or never."""
    return _kernel_path(gelu_kernels, request, monkeypatch, tmp_path_factory)


def _kernel_path(module, request, monkeypatch, tmp_path_factory):
    """``module``'s Numba kernels used from the first element on ("numba"), or never."""
    if request.param == "numba":
        pytest.importorskip("numba")
        monkeypatch.setenv("TRACEGRAD_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "kernels"))
        load_at_once(monkeypatch, module)
    else:
        monkeypatch.setattr(module, "NUMBA_MIN", None)
    return request.param


def _gelu_both(lib, x, g, approximate, dtype):
    t = lib.tensor(x, requires_grad=True)
    y = F.gelu(t, approximate=approximate) if lib is tg else lib.nn.functional.gelu(t, approximate=approximate)
    y.backward(lib.tensor(g))
    return y.detach().numpy(), t.grad.numpy()


# -- GELU ------------------------------------------------------------------------------------------

@pytest.mark.torch
@pytest.mark.parametrize("approximate", ["none", "tanh"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_gelu_matches_torch(gelu_path, approximate, dtype):
    x = _points(dtype)
    g = np.random.default_rng(1).standard_normal(x.shape).astype(dtype)
    y, dx = _gelu_both(tg, x, g, approximate, dtype)
    ty, tdx = torch_gelu(x, g, approximate)  # (float32: torch's AVX2 kernel, see torch_gelu_avx2.py)
    assert y.dtype == dx.dtype == np.dtype(dtype)
    eps = np.finfo(dtype).eps
    np.testing.assert_allclose(y, ty, rtol=4 * eps, atol=4 * eps)
    # gelu' = cdf + x pdf cancels near x = -0.75: the error is measured against |g|
    np.testing.assert_allclose(dx, tdx, rtol=8 * eps, atol=16 * eps * np.abs(g).max())


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_backward_matches_the_exact_derivative(gelu_path, approximate):
    x = _points("float64")
    g = np.random.default_rng(1).standard_normal(x.shape)
    _, dx = _gelu_both(tg, x, g, approximate, "float64")
    if approximate == "tanh":
        b, k = math.sqrt(2 / math.pi), 0.044715
        t = np.tanh(b * (x + k * x ** 3))
        want = 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * b * (1 + 3 * k * x * x)
    else:
        want = 0.5 * (1 + np.vectorize(math.erf)(x / math.sqrt(2))) + x * np.exp(-x * x / 2) / math.sqrt(2 * math.pi)
    np.testing.assert_allclose(dx, g * want, rtol=1e-13, atol=1e-15)


def test_gelu_kernels_equal_the_composite_forms(gelu_path):
    """The composite vjp (what create_graph and a compiled module record) and the array
    kernel give the same values bit for bit: a compiled module's gradients equal eager ones."""
    for dtype in ("float32", "float64"):
        x = _points(dtype, 500)
        g = np.random.default_rng(2).standard_normal(x.shape).astype(dtype)
        for approximate in ("none", "tanh"):
            t = tg.tensor(x, requires_grad=True)
            y = F.gelu(t, approximate=approximate)
            (composite,) = tg.autograd.grad(y, t, tg.tensor(g), create_graph=True)
            (kernel,) = tg.autograd.grad(F.gelu(t, approximate=approximate), t, tg.tensor(g))
            np.testing.assert_array_equal(kernel.numpy(), composite.detach().numpy())


@pytest.mark.torch
@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_second_order_matches_torch(approximate):
    import torch
    x = _points("float64", 200)
    grads = []
    for lib in (tg, torch):
        t = lib.tensor(x, requires_grad=True)
        y = lib.nn.functional.gelu(t, approximate=approximate)
        (d,) = lib.autograd.grad(y.sum(), t, create_graph=True)
        (dd,) = lib.autograd.grad((d * d).sum(), t)
        grads.append((d.detach().numpy(), dd.numpy()))
    for mine, theirs in zip(*grads):
        np.testing.assert_allclose(mine, theirs, rtol=1e-12, atol=1e-13)


def test_numba_gelu_is_bit_identical_to_numpy(monkeypatch, tmp_path):
    """The compiled float32 loops give the NumPy kernels' bits: the forward, the values it
    keeps, the backward from those and the backward that recomputes them."""
    pytest.importorskip("numba")
    monkeypatch.setenv("TRACEGRAD_CACHE_DIR", str(tmp_path))
    x = _points("float32", 20000)
    x[:5] = [np.inf, -np.inf, np.nan, 3e38, -1e20]
    g = np.random.default_rng(3).standard_normal(x.shape).astype(np.float32)
    x2 = x[:x.size // 13 * 13].reshape(-1, 13)[:, ::2]  # a strided view: through a contiguous copy
    out = {}
    load_at_once(monkeypatch, gelu_kernels)
    for path, n in (("numpy", None), ("numba", 1)):
        monkeypatch.setattr(gelu_kernels, "NUMBA_MIN", n)
        monkeypatch.setattr(gelu_kernels, "_KEPT", {})
        got = out[path] = []
        with np.errstate(all="ignore"):
            for a in (x, x2):
                b = np.ascontiguousarray(g[:a.size].reshape(a.shape))
                got.append(gelu_kernels.gelu_forward(cpu, a, "none"))
                got.extend(v.copy() for v in gelu_kernels._KEPT[id(a)][1])
                got.append(gelu_kernels.gelu_backward(cpu, b, a, "none"))  # (the kept values)
                got.append(gelu_kernels.gelu_backward(cpu, b, a, "none"))  # (recomputed)
    assert len(out["numpy"]) == 10
    for a, b in zip(out["numpy"], out["numba"]):
        assert a.dtype == b.dtype == np.float32 and a.shape == b.shape
        np.testing.assert_array_equal(a.view(np.int32), b.view(np.int32))


def test_gelu_without_numba_runs_numpy(monkeypatch):
    monkeypatch.setitem(sys.modules, "numba", None)  # import numba raises ImportError
    jit.forget()
    compiled.forget()
    load_at_once(monkeypatch, gelu_kernels)
    try:
        x = _points("float32", 100)
        y = gelu_kernels.gelu_forward(cpu, x, "none")
        monkeypatch.setattr(gelu_kernels, "NUMBA_MIN", None)
        np.testing.assert_array_equal(y, gelu_kernels.gelu_forward(cpu, x, "none"))
        assert compiled._KERNELS == {"gelu_forward": False}
    finally:
        monkeypatch.undo()
        jit.forget()
        compiled.forget()


def test_a_numba_failure_warns_and_runs_numpy(monkeypatch):
    pytest.importorskip("numba")

    def refuse(source, name):
        raise OSError("read-only cache directory")
    monkeypatch.setattr(jit, "load_kernel", refuse)
    compiled.forget()
    load_at_once(monkeypatch, gelu_kernels)
    try:
        x = _points("float32", 100)
        with pytest.warns(RuntimeWarning, match="compiled kernel gelu_forward is unavailable .OSError"):
            y = gelu_kernels.gelu_forward(cpu, x, "none")
        monkeypatch.setattr(gelu_kernels, "NUMBA_MIN", None)
        np.testing.assert_array_equal(y, gelu_kernels.gelu_forward(cpu, x, "none"))
    finally:
        compiled.forget()


def test_gelu_kernels_leave_other_operands_to_the_composite_form():
    assert gelu_kernels.gelu_forward(cpu, np.float64(1.0), "none") is None       # a NumPy scalar
    assert gelu_kernels.gelu_forward(cpu, np.ones((), np.float64), "none") is None  # 0-d
    assert gelu_kernels.gelu_forward(cpu, np.ones((), np.float32), "tanh") is None
    assert gelu_kernels.gelu_forward(cpu, np.ones(3, np.float16), "none") is None
    assert gelu_kernels.gelu_backward(cpu, np.ones(3), np.ones(3, np.float32), "none") is None  # dtypes differ
    x = tg.tensor([0.5, -1.0], dtype=tg.float16, requires_grad=True)
    F.gelu(x).sum().backward()
    assert x.grad.dtype == tg.float16


# -- layer norm ------------------------------------------------------------------------------------

LN_CASES = [((6, 5, 8), (8,), True, True), ((4, 3, 5), (3, 5), True, False), ((7, 9), (9,), False, False),
            ((2, 3, 4), (4,), False, True), ((1, 16), (16,), True, True), ((5,), (5,), True, True)]


def _layer_norm_both(lib, x, shape, w, b, g, create_graph=False):
    ts = [lib.tensor(a, requires_grad=True) if a is not None else None for a in (x, w, b)]
    y = lib.nn.functional.layer_norm(ts[0], shape, ts[1], ts[2], 1e-5)
    wrt = [t for t in ts if t is not None]
    grads = lib.autograd.grad(y, wrt, lib.tensor(g), create_graph=create_graph)
    return [y.detach().numpy()] + [d.detach().numpy() for d in grads]


def _ln_inputs(x_shape, shape, w, b, dtype, seed=0):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(x_shape) * 3 + 1).astype(dtype)
    W = rng.standard_normal(shape).astype(dtype) if w else None
    B = rng.standard_normal(shape).astype(dtype) if b else None
    return x, W, B, rng.standard_normal(x_shape).astype(dtype)


@pytest.fixture(params=["numpy", "numba"])
def layer_norm_path(request, monkeypatch, tmp_path_factory):
    """Layer norm's kernels with Numba used (float32) from the first element on, or never."""
    return _kernel_path(layer_norm_kernels, request, monkeypatch, tmp_path_factory)


@pytest.mark.torch
@pytest.mark.parametrize("case", range(len(LN_CASES)))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_layer_norm_matches_torch(layer_norm_path, case, dtype):
    import torch
    x_shape, shape, w, b = LN_CASES[case]
    x, W, B, g = _ln_inputs(x_shape, shape, w, b, dtype)
    tol = 3e-5 if dtype == "float32" else 1e-12
    for mine, theirs in zip(_layer_norm_both(tg, x, shape, W, B, g), _layer_norm_both(torch, x, shape, W, B, g)):
        assert mine.dtype == np.dtype(dtype)
        np.testing.assert_allclose(mine, theirs, rtol=tol, atol=tol)


@pytest.mark.parametrize("case", range(len(LN_CASES)))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_layer_norm_backward_kernel_equals_the_composite_form(layer_norm_path, case, dtype):
    """Bit for bit, as a compiled module's gradients must equal the eager ones."""
    x_shape, shape, w, b = LN_CASES[case]
    x, W, B, g = _ln_inputs(x_shape, shape, w, b, dtype, seed=case)
    kernel = _layer_norm_both(tg, x, shape, W, B, g)
    composite = _layer_norm_both(tg, x, shape, W, B, g, create_graph=True)
    for a, c in zip(kernel, composite):
        np.testing.assert_array_equal(a, c)


@pytest.mark.torch
def test_layer_norm_second_order_matches_torch():
    import torch
    x, W, B, _ = _ln_inputs((3, 4, 6), (6,), True, True, "float64")
    out = []
    for lib in (tg, torch):
        ts = [lib.tensor(a, requires_grad=True) for a in (x, W, B)]
        y = lib.nn.functional.layer_norm(ts[0], (6,), ts[1], ts[2])
        dx, dw = lib.autograd.grad((y * y * y).sum(), ts[:2], create_graph=True)
        out.append([a.numpy() for a in lib.autograd.grad((dx * dx).sum() + (dw * dw).sum(), ts[:2])])
    for mine, theirs in zip(*out):
        np.testing.assert_allclose(mine, theirs, rtol=1e-10, atol=1e-12)


def test_numba_layer_norm_is_within_ulps_of_numpy(monkeypatch, tmp_path):
    """float64 statistics against float32 BLAS ones: results a few float32 ulps apart."""
    pytest.importorskip("numba")
    monkeypatch.setenv("TRACEGRAD_CACHE_DIR", str(tmp_path))
    for x_shape, shape, w, b in LN_CASES + [((16, 300), (300,), True, True)]:
        x, W, B, g = _ln_inputs(x_shape, shape, w, b, "float32", seed=len(x_shape))
        got = {}
        load_at_once(monkeypatch, layer_norm_kernels)
        for path, n in (("numpy", None), ("numba", 1)):
            monkeypatch.setattr(layer_norm_kernels, "NUMBA_MIN", n)
            got[path] = _layer_norm_both(tg, x, shape, W, B, g)
        for a, c in zip(got["numpy"], got["numba"]):
            assert a.dtype == c.dtype == np.float32 and a.shape == c.shape
            np.testing.assert_allclose(a, c, rtol=0, atol=8 * np.finfo(np.float32).eps * np.abs(c).max())


def test_layer_norm_of_huge_deviations_still_rescales():
    """Squares overflowing float32 send the kernel back to the rescaling composite form."""
    x = tg.tensor([[3e19, -3e19, 1.0, 0.0]], requires_grad=True)
    y = F.layer_norm(x, (4,))
    assert np.isfinite(y.detach().numpy()).all()
    np.testing.assert_allclose(y.detach().numpy()[0, :2], [math.sqrt(2), -math.sqrt(2)], rtol=1e-5)


# -- attention -------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("bias_shape", [None, (5,), (3, 5), (2, 1, 5)])
def test_attention_array_backward_equals_the_composite_vjp(dtype, bias_shape):
    """The first-order kernel (plain arrays, keys-first layout), a nonzero cotangent of the
    weights included, against the composite vjp run on Tensors: the same values bit for
    bit, as a compiled module's gradients must equal the eager ones."""
    rng = np.random.default_rng(4)
    q, k, v = (rng.standard_normal(s).astype(dtype) for s in ((2, 3, 4), (2, 5, 4), (2, 5, 3)))
    bias = None if bias_shape is None else rng.standard_normal(bias_shape).astype(dtype)
    out = attention.impl(cpu, q, k, v, bias, scale=0.7, causal=bias is None)
    for g1 in (np.zeros((2, 3, 5), dtype), rng.standard_normal((2, 3, 5)).astype(dtype)):
        g = (rng.standard_normal((2, 3, 3)).astype(dtype), g1)
        arrays = attention_vjp(g, out, q, k, v, bias, scale=0.7, causal=bias is None)
        T = [tg.tensor(a) for a in (q, k, v)] + [None if bias is None else tg.tensor(bias)]
        tensors = attention_vjp(tuple(tg.tensor(a) for a in g), tuple(tg.tensor(o) for o in out), *T,
                                scale=0.7, causal=bias is None)
        for a, t in zip(arrays, tensors):  # bit for bit (up to the sign of zeros)
            if t is None:
                assert a is None
                continue
            assert a.dtype == np.dtype(dtype) and a.shape == tuple(t.shape)
            np.testing.assert_array_equal(a, t.numpy())


BLOCKED = [((2, 3, 256, 8), (2, 3, 256, 8), (2, 3, 256, 5)), ((1, 300, 4), (1, 70, 4), (1, 70, 3)),
           ((2, 1, 520, 4), (1, 3, 600, 4), (1, 3, 600, 2)), ((260, 4), (0, 4), (0, 3))]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shapes", BLOCKED)
def test_causal_attention_by_blocks_equals_the_plain_kernel(monkeypatch, dtype, shapes):
    """Long causal sequences go by blocks of queries (S < L, broadcast batches, no keys);
    the backward reads the full weights, zeros above the diagonal."""
    rng = np.random.default_rng(8)
    q, k, v = (rng.standard_normal(s).astype(dtype) for s in shapes)
    assert attention_blocks.query_blocks(q.shape[-2], k.shape[-2])
    results = []
    for blocked in (True, False):
        if not blocked:
            monkeypatch.setattr(attention_blocks, "query_blocks", lambda L, S: None)
        out = attention.impl(cpu, q, k, v, None, scale=0.3, causal=True)
        g = tuple(np.random.default_rng(9).standard_normal(o.shape).astype(dtype) for o in out)
        results.append(out + attention_vjp(g, out, q, k, v, None, scale=0.3, causal=True))
    tol = 1e-12 if dtype == "float64" else 3e-5
    for a, b in zip(*results):
        if b is None:
            assert a is None
            continue
        assert a.shape == b.shape and a.dtype == b.dtype == np.dtype(dtype)
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


@pytest.mark.torch
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_long_causal_attention_matches_torch_to_second_order(dtype):
    import torch
    rng = np.random.default_rng(10)
    q, k, v = (rng.standard_normal((2, 260, 4)).astype(dtype) for _ in range(3))
    res = []
    for lib in (tg, torch):
        ts = [lib.tensor(a, requires_grad=True) for a in (q, k, v)]
        o = lib.nn.functional.scaled_dot_product_attention(*ts, is_causal=True)
        first = lib.autograd.grad((o * o).sum(), ts, create_graph=dtype == "float64")
        res.append([o.detach().numpy()] + [d.detach().numpy() for d in first])
        if dtype == "float64":
            res[-1] += [d.numpy() for d in lib.autograd.grad(sum((d * d).sum() for d in first), ts)]
    tol = 1e-4 if dtype == "float32" else 1e-10
    for mine, theirs in zip(*res):
        np.testing.assert_allclose(mine, theirs, rtol=tol, atol=tol)


# -- scatter-add (embedding backward, index_put accumulate) -----------------------------------------

@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "complex128"])
def test_scatter_add_rows_equals_add_at(dtype):
    """Rows picked by one integer array: the same additions in the same order, same bits."""
    rng = np.random.default_rng(5)
    values = rng.standard_normal((40, 3)).astype(dtype)
    start = rng.standard_normal((7, 3)).astype(dtype)
    for rows in (rng.integers(0, 7, 40), rng.integers(0, 7, 40).astype(np.int32), np.zeros(40, np.int64),
                 rng.integers(-7, 7, 40)):
        for shape in ((40,), (5, 8)):
            mine, want = start.copy(), start.copy()
            cpu.scatter_add(mine, (rows.reshape(shape),), values.reshape(shape + (3,)))
            np.add.at(want, (rows.reshape(shape),), values.reshape(shape + (3,)))
            np.testing.assert_array_equal(mine, want)
    mine, want = np.zeros((7, 2, 3), dtype), np.zeros((7, 2, 3), dtype)  # rows of a 3-d target
    cpu.scatter_add(mine, (rows,), values[:, None].repeat(2, 1))
    np.add.at(want, (rows,), values[:, None].repeat(2, 1))
    np.testing.assert_array_equal(mine, want)


def test_scatter_add_errors_and_other_indices_as_add_at():
    with pytest.raises(IndexError, match="index 9 is out of bounds for axis 0 with size 4"):
        cpu.scatter_add(np.zeros((4, 2)), (np.array([1, 9]),), np.ones((2, 2)))
    mine, want = np.zeros((3, 4)), np.zeros((3, 4))
    idx = (np.array([0, 2, 0]), np.array([1, 1, 1]))  # two index arrays: add.at itself
    cpu.scatter_add(mine, idx, np.arange(3.0))
    np.add.at(want, idx, np.arange(3.0))
    np.testing.assert_array_equal(mine, want)


@pytest.mark.torch
@pytest.mark.parametrize("padding_idx", [None, 3])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_embedding_backward_matches_torch(padding_idx, dtype):
    import torch
    rng = np.random.default_rng(6)
    W = rng.standard_normal((10, 4)).astype(dtype)
    idx = rng.integers(0, 10, (5, 7))
    g = rng.standard_normal((5, 7, 4)).astype(dtype)
    grads = []
    for lib in (tg, torch):
        w = lib.tensor(W, requires_grad=True)
        lib.nn.functional.embedding(lib.tensor(idx), w, padding_idx=padding_idx).backward(lib.tensor(g))
        grads.append(w.grad.numpy())
    assert grads[0].dtype == np.dtype(dtype)
    tol = 1e-6 if dtype == "float32" else 1e-14  # (sums of 3-4 rows, in another order than torch's)
    np.testing.assert_allclose(grads[0], grads[1], rtol=tol, atol=tol)


# -- addmm: the bias added into the product -----------------------------------------------------------

@pytest.mark.parametrize("bias_shape", [(4,), (1, 4), (3, 1), (3, 4), ()])
def test_addmm_adds_the_bias_without_touching_it(bias_shape):
    rng = np.random.default_rng(7)
    x, y = rng.standard_normal((3, 5)), rng.standard_normal((5, 4))
    bias = rng.standard_normal(bias_shape)
    kept = bias.copy()
    out = addmm.impl(cpu, bias, x, y, beta=0.5, alpha=2.0)
    np.testing.assert_allclose(out, 0.5 * bias + 2.0 * (x @ y), rtol=1e-14)
    np.testing.assert_array_equal(bias, kept)
    assert not np.shares_memory(out, bias)
    out = addmm.impl(cpu, bias.astype(np.float32), x.astype(np.float32), y.astype(np.float32))
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, bias + x @ y, rtol=1e-5)
