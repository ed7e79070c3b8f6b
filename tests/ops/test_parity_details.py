"""Details where PyTorch programs met other results: ``diff`` of booleans, ``block_diag()``
of nothing, ``angle`` of integers, ``norm(p='nuc')``, ``histc`` without a gradient, and
``fftfreq``'s float32 rounding (PyTorch multiplies the integer frequencies by 1/(n d) in the
result's dtype), ``linalg.norm`` with a string order."""
import numpy as np
import pytest

import tracegrad as tg

NAN_, INF_ = float("nan"), float("inf")


def test_diff_of_booleans_is_whether_neighbours_differ():
    t = tg.tensor([True, False, False, True])
    assert tg.diff(t).tolist() == [True, False, True] and tg.diff(t).dtype is tg.bool
    assert tg.diff(t, n=2).tolist() == [True, True]
    assert tg.diff(tg.tensor([[True, False], [False, False]]), dim=0).tolist() == [[True, False]]
    np.testing.assert_array_equal(tg.diff(tg.tensor([1.0, 4.0, 9.0])).numpy(), [3.0, 5.0])


def test_block_diag_of_nothing_is_a_1_by_0_matrix():
    out = tg.block_diag()
    assert tuple(out.shape) == (1, 0) and out.dtype is tg.float32


def test_angle_of_integers_is_in_the_default_float_dtype():
    out = tg.angle(tg.tensor([1, -2, 0]))
    assert out.dtype is tg.float32
    np.testing.assert_allclose(out.numpy(), [0.0, np.pi, 0.0], rtol=1e-7)
    assert tg.tensor([True, False]).angle().dtype is tg.float32


def test_nuclear_norm():
    a = tg.tensor([[1.0, 2.0], [3.0, 4.0]])
    assert tg.norm(a, p="nuc").item() == pytest.approx(np.linalg.norm(a.numpy(), "nuc"), rel=1e-6)
    batch = tg.tensor(np.random.default_rng(0).standard_normal((3, 2, 4)))
    np.testing.assert_allclose(tg.norm(batch, p="nuc", dim=(1, 2)).numpy(),
                               [np.linalg.norm(m, "nuc") for m in batch.numpy()], rtol=1e-12)


def test_histc_has_no_gradient():
    w = tg.tensor([0.0, 0.2, 1.0, 0.7], requires_grad=True)
    h = tg.histc(w, bins=4)
    assert not h.requires_grad and h.grad_fn is None
    p = h / 4
    loss = (w ** 2).sum() + 0.1 * (p * tg.log(p + 1e-8)).sum()
    loss.backward()  # (the histogram is a constant of the loss)
    np.testing.assert_allclose(w.grad.numpy(), 2 * w.detach().numpy())


@pytest.mark.parametrize("n", [0, 1, 2, 7, 8])
def test_fftfreq_rounds_as_pytorch(n):
    for d in (1.0, 0.3):
        ints = np.concatenate([np.arange((n - 1) // 2 + 1), np.arange(-(n // 2), 0)])
        scale = np.float32(1.0 / (n * d)) if n else np.float32(np.inf)
        np.testing.assert_array_equal(tg.fft.fftfreq(n, d).numpy(), ints.astype(np.float32) * scale)
        with np.errstate(invalid="ignore"):
            want = np.arange(n // 2 + 1).astype(np.float32) * scale
        np.testing.assert_array_equal(tg.fft.rfftfreq(n, d).numpy(), want)  # (n = 0: [nan], as PyTorch)
    np.testing.assert_array_equal(tg.fft.fftfreq(8, dtype=tg.float64).numpy(), np.fft.fftfreq(8))


def test_printed_and_named_results():
    """aminmax's named result, Size times an int, expm1's node name, the optimizer's
    parameter groups a blank line apart, set_grad_enabled's repr."""
    r = tg.aminmax(tg.tensor([[3.0, 1.0, 2.0], [0.5, 4.0, -1.0]]), dim=1)
    assert type(r).__name__ == "aminmax" and r.min.tolist() == [1.0, -1.0] and r.max.tolist() == [3.0, 4.0]
    assert repr(r) == "tracegrad.return_types.aminmax(\nmin=tensor([ 1., -1.]),\nmax=tensor([3., 4.]))"
    assert tg.Size([2, 3]) * 2 == (2, 3, 2, 3) and type(2 * tg.Size([2])) is tg.Size
    assert tg.ones(2, requires_grad=True).expm1().grad_fn.name() == "Expm1Backward0"
    p1, p2 = tg.nn.Parameter(tg.zeros(2)), tg.nn.Parameter(tg.zeros(3))
    text = repr(tg.optim.SGD([{"params": [p1]}, {"params": [p2], "lr": 0.01}], lr=0.1))
    assert "    weight_decay: 0\n\nParameter Group 1\n" in text and text.startswith("SGD (\nParameter Group 0\n")
    with tg.set_grad_enabled(True) as mode:
        assert mode is None
    assert repr(tg.set_grad_enabled(True)) == "tracegrad.autograd.grad_mode.set_grad_enabled(mode=True)"


@pytest.mark.torch
def test_optimizer_repr_is_pytorchs():
    import torch

    def text(lib):
        p1, p2 = lib.nn.Parameter(lib.zeros(2)), lib.nn.Parameter(lib.zeros(3))
        return repr(lib.optim.Adam([{"params": [p1]}, {"params": [p2], "lr": 0.01}], lr=0.1))
    assert text(tg) == text(torch)


NORM_ERRORS = [((3,), "fro", None), ((3,), "nuc", None), ((2, 3), "fro", 0), ((2, 3), "nuc", (1,)),
               ((2, 3, 4), "fro", None), ((2, 3, 4), "fro", (0, 1, 1)), ((2, 3, 4), 2, (0, 1, 2)),
               ((3,), 2, (0, 1)), ((2, 3), "bad", None)]


@pytest.mark.parametrize("shape, ord, dim", NORM_ERRORS)
def test_norm_with_a_string_order_is_a_matrix_norm(shape, ord, dim):
    """A string order ('fro', 'nuc') asks for a matrix norm: a vector, or one dim, is
    refused with PyTorch's RuntimeError and message (it was NumPy's ValueError)."""
    torch = pytest.importorskip("torch")
    with pytest.raises(RuntimeError) as theirs:
        torch.linalg.norm(torch.ones(*shape), ord, dim)
    with pytest.raises(RuntimeError) as ours:
        tg.linalg.norm(tg.ones(*shape), ord, dim)
    assert str(ours.value) == str(theirs.value)


def test_norm_with_a_string_order_over_two_dims():
    x = np.arange(24.0).reshape(2, 3, 4)
    np.testing.assert_allclose(tg.linalg.norm(tg.tensor(x), "fro", (1, 2)).numpy(),
                               np.linalg.norm(x, "fro", axis=(1, 2)))
    np.testing.assert_allclose(tg.linalg.norm(tg.tensor(x[0]), "nuc", keepdim=True).numpy(),
                               [[np.linalg.norm(x[0], "nuc")]])


def test_logcumsumexp_is_a_running_log_add():
    """Each prefix exact however far below a later maximum (a shift by the row's max made
    early prefixes -inf and gradients NaN: the minGRU parallel scan, Cox losses)."""
    x = tg.tensor([0.0, 1000.0, -5.0])
    assert x.logcumsumexp(0).tolist() == [0.0, 1000.0, 1000.0]
    np.testing.assert_allclose(tg.tensor([-200.0, 0.0, 1.0]).logcumsumexp(0).numpy(),
                               [-200.0, 0.0, np.logaddexp(0.0, 1.0)], rtol=1e-6)
    got = tg.tensor([1.0, 2.0, float("nan"), 3.0]).logcumsumexp(0).numpy()
    assert got[0] == 1.0 and np.isnan(got[2:]).all() and abs(got[1] - np.logaddexp(1.0, 2.0)) < 1e-6
    v = tg.tensor([[17.0, 30.0, -5.0, 50.0], [1.0, 2.0, 3.0, -1000.0]], dtype=tg.float64, requires_grad=True)
    w = np.array([1.0, -2.0, 3.0, 0.5])
    (v.logcumsumexp(1) * tg.tensor(w)).sum().backward()
    a = v.detach().numpy()
    out = np.logaddexp.accumulate(a, axis=1)
    expected = np.array([[sum(w[i] * np.exp(a[r, j] - out[r, i]) for i in range(j, 4)) for j in range(4)]
                         for r in range(2)])
    np.testing.assert_allclose(v.grad.numpy(), expected, rtol=1e-12, atol=1e-300)


def test_logcumsumexp_second_derivative():
    """The Hessian of sum(logcumsumexp(v)): sum_i (diag(p_i) - p_i p_i^T), p_i the softmax
    of the prefix v[:i+1] (padded with zeros)."""
    v = np.array([0.5, -1.0, 2.0])
    hess = tg.autograd.functional.hessian(lambda t: tg.logcumsumexp(t, 0).sum(), tg.tensor(v, dtype=tg.float64))
    expected = np.zeros((3, 3))
    for i in range(3):
        p = np.zeros(3)
        p[:i + 1] = np.exp(v[:i + 1] - np.logaddexp.reduce(v[:i + 1]))
        expected += np.diag(p) - np.outer(p, p)
    np.testing.assert_allclose(hess.numpy(), expected, rtol=1e-12, atol=1e-15)


def test_float32_scans_accumulate_in_float64():
    """PyTorch's CPU cumsum (and logcumsumexp) of float32 accumulates in double: 1e6 times
    0.1 sums to 100000, where a float32 running sum drifts ~1%."""
    assert tg.full((1_000_000,), 0.1).cumsum(0)[-1].item() == pytest.approx(100000.0, rel=1e-6)
    assert tg.full((1_000_000,), 0.1).cumsum(0).dtype is tg.float32
    assert tg.tensor([1, 2, 3]).cumsum(0).tolist() == [1, 3, 6]


def test_trunc_division_of_integers_stays_integer():
    """CenterNet/Deformable-DETR decode ``div(idx, C, rounding_mode='trunc')`` and use it as
    an index: integers in, integers out, rounded toward zero; ``div_`` takes the mode too."""
    got = tg.div(tg.tensor([-5, 4, 7, -7, 6]), 3, rounding_mode="trunc")
    assert got.dtype is tg.int64 and got.tolist() == [-1, 1, 2, -2, 2]
    assert tg.div(tg.tensor([-5, 4]), tg.tensor([-3, -3]), rounding_mode="trunc").tolist() == [1, -1]
    assert tg.div(tg.tensor([-5.0, 4.0]), 3, rounding_mode="trunc").tolist() == [-1.0, 1.0]
    assert tg.tensor([7.0, -7.0]).div_(2, rounding_mode="floor").tolist() == [3.0, -4.0]
    assert tg.tensor([7, -7]).div_(2, rounding_mode="trunc").tolist() == [3, -3]
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Long"):
        tg.tensor([7, -7]).div_(2)


def test_flip_and_tile_take_several_ints():
    x = tg.arange(8.0).view(1, 2, 2, 2)
    expected = np.flip(np.arange(8.0).reshape(1, 2, 2, 2), (2, 3))
    for got in (x.flip(2, 3), x.flip((2, 3)), x.flip(dims=(2, 3))):
        np.testing.assert_array_equal(got.numpy(), expected)
    assert tg.arange(2).tile(3, 1, 1).shape == (3, 1, 2) and tg.arange(2).tile((2,)).tolist() == [0, 1, 0, 1]


def test_xlogy_of_zero_and_nan_is_nan():
    assert np.isnan(tg.xlogy(tg.tensor([0.0]), tg.tensor([float("nan")])).item())
    assert np.isnan(tg.special.xlog1py(tg.tensor([0.0]), tg.tensor([float("nan")])).item())
    assert tg.xlogy(tg.tensor([0.0]), tg.tensor([0.0])).item() == 0.0


def test_median_of_all_elements_shares_its_gradient_among_ties():
    """As PyTorch's ``median()`` (and ``max()``): every element equal to the median gets an
    equal share, the value being exactly the median."""
    y = tg.tensor([2.0, 2.0, 1.0, 2.0, 3.0], requires_grad=True)
    m = y.median()
    m.backward()
    assert m.item() == 2.0
    np.testing.assert_allclose(y.grad.numpy(), [1 / 3, 1 / 3, 0.0, 1 / 3, 0.0], rtol=1e-6)
    z = tg.tensor([[1.0, 3.0, 3.0, 0.0], [2.0, 2.0, 2.0, 2.0]], requires_grad=True)
    z.median().backward()
    assert z.grad.tolist() == [[0.0] * 4, [0.25] * 4]
    w = tg.tensor([0.1, 0.1, 0.1, 0.5], dtype=tg.float64, requires_grad=True)
    assert w.median().item() == 0.1  # (exactly the median: no sum of the ties divided back)
    v = tg.tensor([1.0, float("nan"), 2.0], requires_grad=True)
    v.nanmedian().backward()
    assert v.grad.tolist() == [1.0, 0.0, 0.0]


@pytest.mark.parametrize("values, name, grad", [
    ([NAN_, 1.0, NAN_], "median", [0.5, 0.0, 0.5]),      # a NaN result: shared by the NaNs
    ([NAN_, 1.0, NAN_], "max", [0.5, 0.0, 0.5]),
    ([NAN_, 1.0, 2.0], "min", [1.0, 0.0, 0.0]),
    ([INF_, INF_, 1.0], "median", [0.5, 0.5, 0.0]),      # inf ties: no inf - inf
    ([-INF_, -INF_, 5.0], "nanmedian", [0.5, 0.5, 0.0]),
    ([NAN_, NAN_, 3.0, 3.0, 1.0], "nanmedian", [0.0, 0.0, 0.5, 0.5, 0.0]),
    ([NAN_, NAN_], "nanmedian", [0.5, 0.5]),             # all NaN: NaN, shared by all
])
def test_reductions_of_all_elements_share_their_gradient_as_pytorch(values, name, grad):
    """PyTorch's ``evenly_distribute_backward``: ``median()``, ``nanmedian()``, ``max()`` and
    ``min()`` of all elements share the gradient among the elements equal to the result,
    or among the NaNs where it is NaN -- in eager mode and under vmap, the node named as
    PyTorch names it."""
    x = tg.tensor(values, dtype=tg.float64, requires_grad=True)
    y = getattr(x, name)()
    assert y.grad_fn.name() == {"median": "MedianBackward0", "nanmedian": "NanmedianBackward0",
                                "max": "MaxBackward1", "min": "MinBackward1"}[name]
    g, = tg.autograd.grad(y, x)
    assert g.tolist() == grad
    from tracegrad.func import grad as fgrad, vmap
    rows = tg.tensor([values, values[::-1]], dtype=tg.float64)
    per_row = vmap(fgrad(lambda r: getattr(r, name)()))(rows)
    assert per_row.tolist() == [grad, grad[::-1]]


def test_amax_of_a_nan_gives_nan_gradients_as_pytorch():
    x = tg.tensor([NAN_, 1.0, NAN_], requires_grad=True)
    g, = tg.autograd.grad(x.amax(), x)
    assert np.isnan(g.numpy()).all()


def test_sort_keeps_ties_in_order():
    """A stable sort always (PyTorch's CPU sort is on short rows; NumPy's quicksort is not)."""
    assert tg.tensor([1.0, 1.0, 0.0, 0.0]).sort().indices.tolist() == [2, 3, 0, 1]
    assert tg.tensor([1.0, 1.0, 0.0, 0.0]).argsort().tolist() == [2, 3, 0, 1]
    assert tg.tensor([2, 1, 2, 1, 0]).sort(descending=True).indices.tolist() == [0, 2, 1, 3, 4]


def test_small_parity_cases():
    """Each as PyTorch 2.13 gives it: a size-0 dim chunks into empty pieces and splits into
    one; nansum of integers stays integer; nonzero of a 0-d tensor is index 0; a bool's
    sign is itself; in-place re-striding (t_, unsqueeze_, squeeze_) counts as a version."""
    assert [tuple(t.shape) for t in tg.zeros(0, 3).chunk(2)] == [(0, 3), (0, 3)]
    assert [tuple(t.shape) for t in tg.zeros(0, 3).split(2)] == [(0, 3)]
    assert tg.tensor([1, 2]).nansum().dtype is tg.int64 and tg.tensor([1, 2]).nansum().item() == 3
    assert [t.tolist() for t in tg.nonzero(tg.tensor(5), as_tuple=True)] == [[0]]
    assert [t.tolist() for t in tg.where(tg.tensor(False))] == [[]]
    assert tg.tensor([True, False]).sign().tolist() == [True, False]
    x = tg.zeros(2, 3)
    x.t_()
    x.unsqueeze_(0)
    x.squeeze_(0)
    assert x._version == 3 and x.shape == (3, 2)


def test_topk_indices_are_contiguous():
    """DeepSeek's MoE router does ``topk(...).indices.view(-1)``."""
    _, idx = tg.topk(tg.tensor([[0.1, 0.9, 0.5, 0.3], [0.7, 0.2, 0.8, 0.4]]), 2, dim=-1)
    assert idx.is_contiguous() and idx.view(-1).tolist() == [1, 2, 2, 0]


@pytest.mark.parametrize("data, message", [
    ([[1, 2], [3]], "expected sequence of length 2 at dim 1 (got 1)"),
    ([[1, 2], [3, 4, 5]], "expected sequence of length 2 at dim 1 (got 3)"),
    ([[[1], [2]], [[3], [4, 5]]], "expected sequence of length 1 at dim 2 (got 2)"),
])
def test_ragged_nested_lists_are_named_as_pytorch_names_them(data, message):
    with pytest.raises(ValueError) as info:
        tg.tensor(data)
    assert str(info.value) == message


@pytest.mark.parametrize("call, message", [
    (lambda: tg.norm(tg.arange(4)), "linalg.vector_norm: Expected a floating point or complex tensor as input. Got Long"),
    (lambda: tg.norm(tg.arange(8.0).reshape(2, 2, 2), p="fro", dim=(0, 1, 2)),
     "linalg.matrix_norm: dim must be a 2-tuple. Got 0 1 2"),
])
def test_torch_norm_refuses_as_pytorch(call, message):
    with pytest.raises(RuntimeError) as info:
        call()
    assert str(info.value) == message
    assert tg.norm(tg.ones(2, 3)).item() == pytest.approx(6 ** 0.5) and tg.ones(2, 3).norm(p="nuc").item() == pytest.approx(6 ** 0.5)


def test_review_fixes():
    """Cases a review of this change found, each as PyTorch gives it."""
    x = tg.tensor([1.0, 2.0, 2.0, float("inf")], requires_grad=True)
    assert x.median().item() == 2.0  # (no inf - inf in the shared gradient)
    with pytest.raises(IndexError, match="Dimension out of range"):
        tg.randn(3, 4).logcumsumexp(5)
    z = tg.tensor([1 + 1j, 2, 3]).logcumsumexp(0).numpy()
    np.testing.assert_allclose(z, np.log(np.cumsum(np.exp(np.array([1 + 1j, 2, 3])))), rtol=1e-6)
    assert tg.zeros(0, 4).view(tg.float64).shape == (0, 2)
    from tracegrad.func import vmap
    with pytest.raises(NotImplementedError, match="view\\(dtype\\) of a batched tensor"):
        vmap(lambda r: r.view(tg.int32))(tg.arange(12.0).reshape(3, 4))
    short = tg.segment_reduce(tg.tensor([1.0, 2, 3, 4, 5, 6]), "sum", lengths=tg.tensor([2, 1]), unsafe=True)
    assert short.tolist() == [3.0, 3.0]  # (positions past the last end take part in nothing)
    v = tg.tensor([1.0, 3.0, 3.0, 2.0, 5.0, 1.0], requires_grad=True)
    tg.segment_reduce(v, "max", lengths=tg.tensor([3, 0, 3]), initial=3.0).sum().backward()
    assert v.grad.tolist() == [0.0, 0.5, 0.5, 0.0, 1.0, 0.0]  # (a tie with initial stays with the data)
    with pytest.raises(RuntimeError, match="dim must be a 2-tuple. Got 0 1 2"):
        tg.norm(tg.ones(2, 3, 4), "nuc")
    grid = tg.arange(12.0).reshape(3, 4)
    assert quiet_index(grid, [np.array(1), 2]).item() == 6.0


def quiet_index(t, index):
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return t[index]


def test_module_compile_stages_a_forward_set_on_the_instance_and_saves():
    import io
    layer = tg.nn.Linear(2, 2)
    layer.forward = lambda a: a * 100
    layer.compile()
    assert layer(tg.ones(1, 2)).tolist() == [[100.0, 100.0]]
    m = tg.nn.Linear(2, 2)
    m.compile()
    buffer = io.BytesIO()
    tg.save(m, buffer)  # (the staged forward is not saved, as PyTorch drops its compiled call)
    buffer.seek(0)
    assert type(tg.load(buffer, weights_only=False)).__name__ == "Linear"


def test_sgn_of_zero_has_a_zero_gradient():
    """modReLU's ``relu(|z| + b) * z.sgn()`` on zero-padded spectra: PyTorch's sgn_backward
    gives 0 where |z| = 0 (``z / 1`` there gave the identity)."""
    z = tg.tensor([0j, 3 + 4j, 0j], dtype=tg.complex128, requires_grad=True)
    y = tg.sgn(z)
    np.testing.assert_allclose(y.detach().numpy(), [0j, 0.6 + 0.8j, 0j], rtol=1e-15)
    y.real.sum().backward()
    g = z.grad.numpy()
    assert g[0] == 0 and g[2] == 0
    # d Re(z/|z|): at 3+4i the conjugate Wirtinger gradient is (1/|z| - x^2/|z|^3) - i(x y/|z|^3)
    np.testing.assert_allclose(g[1], (1 / 5 - 9 / 125) - 1j * (12 / 125), rtol=1e-6)


def test_vdot_of_complex_vectors_conjugates_the_first():
    a = tg.tensor([1 + 2j, 3 - 1j], requires_grad=True)
    b = tg.tensor([0.5 - 1j, 2 + 0j], requires_grad=True)
    v = tg.vdot(a, b)
    assert v.item() == pytest.approx(np.vdot([1 + 2j, 3 - 1j], [0.5 - 1j, 2 + 0j]))
    v.real.backward()
    assert a.grad.tolist() == [0.5 - 1j, 2 + 0j] and b.grad.tolist() == [1 + 2j, 3 - 1j]
    assert a.vdot(b).item() == v.item()


def test_vander_multiplies_its_powers_out_as_linalg_vander_does():
    x = tg.tensor([0.3, 1.7, 2.9], dtype=tg.float64)
    assert tg.equal(tg.vander(x, 6, increasing=True), tg.linalg.vander(x, N=6))
    assert tg.vander(x, 6)[0, 0].item() == 0.3 * 0.3 * 0.3 * 0.3 * 0.3  # (not 0.3 ** 5)
    assert tg.vander(tg.tensor([1, 2, 3])).tolist() == [[1, 1, 1], [4, 2, 1], [9, 3, 1]]
    assert tuple(tg.vander(x, 1).shape) == (3, 1) and tuple(tg.vander(x, 0).shape) == (3, 0)


def test_the_deprecated_nuclear_and_frobenius_norms():
    a = tg.tensor([[1.0, 2.0], [3.0, 4.0]])
    with pytest.warns(UserWarning, match="at::nuclear_norm is deprecated"):
        assert tg.nuclear_norm(a).item() == pytest.approx(float(np.linalg.norm(a.numpy(), "nuc")))
    with pytest.warns(UserWarning):
        assert tuple(tg.nuclear_norm(a, keepdim=True).shape) == (1, 1)
        assert tg.nuclear_norm(tg.ones(2, 2, 3), dim=(0, 2)).tolist() == pytest.approx([6 ** 0.5] * 2)
    with pytest.warns(UserWarning, match="at::frobenius_norm is deprecated"):
        assert tg.frobenius_norm(a, dim=(1,), keepdim=True).flatten().tolist() == pytest.approx([5 ** 0.5, 5.0])
    with pytest.raises(TypeError):
        tg.frobenius_norm(a)


def test_imag_of_a_real_tensor_is_a_runtime_error():
    with pytest.raises(RuntimeError, match="imag is not implemented for tensors with non-complex dtypes"):
        tg.zeros(2).imag


def test_hessian_strict_gives_pytorchs_whole_message():
    with pytest.raises(RuntimeError) as info:
        tg.autograd.functional.hessian(lambda x: x.sum(), tg.ones(3), strict=True)
    assert str(info.value).endswith("that the jacobian depends on the inputs (this would be violated by a "
                                    "linear function for example).")


@pytest.mark.parametrize("call, two", [
    (lambda b: 1 - b, False), (lambda b: b - 1, False), (lambda b: b - tg.tensor([1.0, 2.0]), False),
    (lambda b: tg.tensor([1, 2]) - b, False), (lambda b: b.sub(1), False), (lambda b: tg.rsub(b, 1), False),
    (lambda b: tg.tensor(1) - True, False), (lambda b: b - b, True), (lambda b: b - True, True),
    (lambda b: b.clone().sub_(True), True), (lambda b: tg.tensor([1.0, 2.0]).sub_(b), False),
])
def test_subtracting_a_bool_is_refused_as_pytorch_refuses_it(call, two):
    """RL code's ``1 - dones`` with boolean ``dones``: PyTorch asks for ``~`` instead."""
    message = "with two bool tensors is not supported" if two else "with a bool tensor is not supported. If you"
    with pytest.raises(RuntimeError, match=message):
        call(tg.tensor([True, False]))


def test_python_conversions_of_several_elements_are_value_errors():
    for convert in (float, int, complex):
        with pytest.raises(ValueError, match="only one element tensors can be converted to Python scalars"):
            convert(tg.tensor([1.0, 2.0]))
    with pytest.raises(RuntimeError, match="a Tensor with 2 elements cannot be converted to Scalar"):
        tg.tensor([1.0, 2.0]).item()
    with pytest.raises(RuntimeError, match="Boolean value of Tensor with no values is ambiguous"):
        bool(tg.tensor([]))
    assert float(tg.tensor([[2.5]])) == 2.5 and int(tg.tensor(3)) == 3


def test_eigvalsh_of_a_symmetric_leaf_has_the_symmetric_gradient():
    """d lambda_k / dA = v_k v_k^T, as PyTorch returns it (not folded onto one triangle)."""
    a = np.array([[2.0, 0.5, 0.1], [0.5, 1.0, 0.3], [0.1, 0.3, 3.0]])
    for uplo in ("L", "U"):
        x = tg.tensor(a, requires_grad=True)
        tg.linalg.eigvalsh(x, UPLO=uplo)[1].backward()
        v = np.linalg.eigh(a)[1][:, 1]
        np.testing.assert_allclose(x.grad.numpy(), np.outer(v, v), atol=1e-12)


def test_a_learned_covariance_stays_symmetric_and_positive_definite():
    """lin_covlearn: a covariance matrix that is itself the parameter of a Gaussian."""
    sigma = tg.nn.Parameter(tg.eye(2, dtype=tg.float64))
    opt = tg.optim.SGD([sigma], lr=0.05)
    data = tg.tensor([[1.0, 0.8], [-0.5, -0.6], [0.3, 0.1]], dtype=tg.float64)
    for _ in range(5):
        opt.zero_grad()
        mvn = tg.distributions.MultivariateNormal(tg.zeros(2, dtype=tg.float64), covariance_matrix=sigma)
        (-mvn.log_prob(data).mean()).backward()
        assert np.allclose(sigma.grad.numpy(), sigma.grad.numpy().T)
        opt.step()
    s = sigma.detach().numpy()
    assert np.array_equal(s, s.T) and np.all(np.linalg.eigvalsh(s) > 0)


def test_cholesky_gradient_is_symmetric_and_right_along_symmetric_directions():
    rng = np.random.default_rng(2)
    b = rng.standard_normal((3, 3))
    a, w = b @ b.T + 3 * np.eye(3), rng.standard_normal((3, 3))
    for fn in (lambda m: tg.linalg.cholesky(m), lambda m: tg.linalg.cholesky_ex(m).L,
               lambda m: tg.linalg.cholesky(m, upper=True).mT):
        x = tg.tensor(a, requires_grad=True)
        (fn(x) * tg.tensor(w)).sum().backward()
        g = x.grad.numpy()
        np.testing.assert_allclose(g, g.T, atol=1e-14)
        d = rng.standard_normal((3, 3))
        d = d + d.T
        eps = 1e-6
        f = lambda m: float((np.linalg.cholesky(m) * w).sum())
        numeric = (f(a + eps * d) - f(a - eps * d)) / (2 * eps)
        assert (g * d).sum() == pytest.approx(numeric, rel=1e-6)
    with pytest.raises(AssertionError):  # (a complex factor keeps the rule's own gradient)
        z = tg.tensor(a + 0j, requires_grad=True)
        (tg.linalg.cholesky(z) * tg.tensor(w + 1j * w)).sum().real.backward()
        np.testing.assert_allclose(z.grad.numpy(), z.grad.numpy().conj().T, atol=1e-12)


@pytest.mark.torch
def test_symmetric_gradients_equal_pytorchs():
    import torch
    rng = np.random.default_rng(3)
    for dtype in (np.float64, np.complex128):
        b = rng.standard_normal((4, 4)) + (1j * rng.standard_normal((4, 4)) if dtype is np.complex128 else 0)
        a = (b @ b.conj().T + 4 * np.eye(4)).astype(dtype)
        w = rng.standard_normal((4, 4)).astype(dtype)
        calls = [lambda L, m: (L.linalg.eigh(m, UPLO="U").eigenvectors.abs() ** 2 * L.tensor(w.real)).sum()
                 + L.linalg.eigvalsh(m).sum() ** 2]
        if dtype is np.float64:
            calls += [lambda L, m: (L.linalg.cholesky(m) * L.tensor(w)).sum(),
                      lambda L, m: (L.linalg.cholesky_ex(m, upper=True).L * L.tensor(w)).sum()]
        for call in calls:
            grads = []
            for lib in (tg, torch):
                m = lib.tensor(a, requires_grad=True)
                g, = lib.autograd.grad(call(lib, m), m, create_graph=True)
                gg, = lib.autograd.grad((g.abs() ** 2).sum(), m)
                grads.append((g.detach().numpy(), gg.numpy()))
            np.testing.assert_allclose(grads[0][0], grads[1][0], rtol=1e-8, atol=1e-10)
            np.testing.assert_allclose(grads[0][1], grads[1][1], rtol=1e-6, atol=1e-8)


def test_bit_operations_on_floats_are_refused_as_pytorch_refuses_them():
    x = tg.tensor([1.0])
    with pytest.raises(TypeError, match=r"~ \(operator.invert\) is only implemented on integer and Boolean-type"):
        ~x
    for call, kernel in [(lambda: x & x, "bitwise_and"), (lambda: x | 1, "bitwise_or"),
                         (lambda: x ^ x, "bitwise_xor"), (lambda: x.bitwise_not(), "bitwise_not")]:
        with pytest.raises(NotImplementedError, match=f'"{kernel}_cpu" not implemented for \'Float\''):
            call()
    assert (~tg.tensor([True, False])).tolist() == [False, True] and (tg.tensor([6]) & 3).tolist() == [2]


def test_masked_fill_and_repeat_interleave_refuse_as_pytorch():
    x = tg.ones(4)
    with pytest.raises(RuntimeError, match=r"only supports a 0-dimensional value tensor, but got tensor with 1 dimension"):
        x.masked_fill(x > 0, tg.tensor([1.0, 2.0, 3.0, 4.0]))
    with pytest.raises(RuntimeError, match="masked_fill_ only supports boolean masks, but got mask with dtype long int"):
        x.masked_fill(tg.tensor([1, 0, 1, 0]), 0.0)
    with pytest.raises(RuntimeError, match="repeats can not be negative"):
        tg.repeat_interleave(tg.tensor([1, -1]))
    assert x.masked_fill(x > 0, tg.tensor(2.0)).tolist() == [2.0] * 4


@pytest.mark.parametrize("call, error, message", [
    (lambda: tg.zeros(4).__setitem__(tg.tensor([0, 1]), tg.ones(3)), RuntimeError,
     r"shape mismatch: value tensor of shape \[3\] cannot be broadcast to indexing result of shape \[2\]"),
    (lambda: tg.zeros(3, 4).__setitem__((slice(None), tg.tensor([0, 1])), tg.ones(3, 3)), RuntimeError,
     r"shape mismatch: value tensor of shape \[3, 3\] cannot be broadcast to indexing result of shape \[3, 2\]"),
    (lambda: tg.zeros(3).index_add_(0, tg.tensor([3]), tg.ones(1)), IndexError, "index out of range in self"),
    (lambda: tg.zeros(3).index_copy(0, tg.tensor([-1]), tg.ones(1)), IndexError,
     r"index_copy_\(\): index -1 is out of bounds for dimension 0 with size 3"),
    (lambda: tg.zeros(2, 3).index_fill(1, tg.tensor([5]), 1.0), IndexError,
     "index 5 is out of bounds for dimension 1 with size 3"),
])
def test_index_writes_refuse_as_pytorch(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_index_writes_that_fit():
    x = tg.zeros(3, 4)
    x[:, [0, 1]] = tg.ones(1, 3, 2)  # (leading 1s of the value dropped, as PyTorch does)
    assert x.sum().item() == 6
    assert tg.zeros(3).index_fill(0, tg.tensor([-1]), 1.0).tolist() == [0.0, 0.0, 1.0]
    assert tg.zeros(3).index_add(0, tg.tensor([2, 0, 2]), tg.ones(3)).tolist() == [1.0, 0.0, 2.0]


@pytest.mark.parametrize("shape, dim", [((200000, 4), (0,)), ((4096, 64), (0,)), ((16, 4097, 8), (1,)),
                                        ((100000, 3, 2), (0, 1)), ((5000, 3), (0,))])
def test_float32_sums_down_long_columns_stay_accurate(shape, dim):
    """NumPy adds a dim that is not the innermost row after row (1e-5 relative error over
    2e5 rows); PyTorch's cascade stays near float32's rounding, and so does tracegrad."""
    a = (np.random.default_rng(0).standard_normal(shape) * 5 + 100).astype(np.float32)
    exact = a.astype(np.float64).sum(dim)
    x = tg.tensor(a)
    for got in (x.sum(dim), x.mean(dim) * np.prod([shape[d] for d in dim])):
        assert got.dtype is tg.float32 and tuple(got.shape) == exact.shape
        assert np.abs(got.numpy() - exact).max() / np.abs(exact).max() < 2e-7
    assert tuple(x.sum(dim, keepdim=True).shape) == tuple(1 if d in dim else n for d, n in enumerate(shape))
    v = x.var(dim).numpy()
    np.testing.assert_allclose(v, a.astype(np.float64).var(dim, ddof=1), rtol=1e-5)


def test_standardising_a_large_float32_table_centres_it():
    """StandardScaler / BatchNorm-style column statistics (ml_metrics_big)."""
    rng = np.random.default_rng(0)
    t = tg.tensor((rng.standard_normal((200000, 4)) * [0.1, 1.0, 5.0, 20.0] + [50.0, -3.0, 100.0, 1000.0])
                  .astype(np.float32))
    z = (t - t.mean(0)) / t.std(0)
    assert (z.mean(0).abs() < 1e-4).all()


def test_numpy_scalars_count_as_python_numbers():
    """NumPy 2 keeps a NumPy scalar's float64 in a kernel; PyTorch reads it as a number."""
    x = tg.tensor([0.1, 0.5, 0.9])
    assert x.clamp(min=np.log(1e-8)).dtype is tg.float32 and x.clamp(np.int64(0)).dtype is tg.float32
    assert tg.nn.functional.leaky_relu(x, np.float64(0.2)).dtype is tg.float32
    assert tg.full((2,), np.float64(0.5)).dtype is tg.float32 and tg.full((2,), np.int32(1)).dtype is tg.int64
    assert tg.result_type(x, np.float64(1.0)) is tg.float32


def test_linspace_takes_tensor_and_complex_ends():
    x = tg.tensor([0.1, 0.5, 0.9])
    assert tg.linspace(x.min(), x.max(), 3).tolist() == pytest.approx([0.1, 0.5, 0.9])
    z = tg.linspace(1 - 2j, 1 + 2j, 3)
    assert z.dtype is tg.complex64 and z.tolist() == [1 - 2j, 1 + 0j, 1 + 2j]
    assert tg.logspace(0, 1j, 2).dtype is tg.complex64
    assert tg.linspace(0, 1, 3, dtype=tg.float64).dtype is tg.float64


def test_complex_to_bool_is_nonzero():
    assert tg.tensor([2j, 0j, 1 + 0j]).bool().tolist() == [True, False, True]
    assert tg.tensor([2j, 0j]).to(tg.bool).tolist() == [True, False]


def test_batch_norm_updates_its_running_stats_without_a_version():
    """QAT's folded BatchNorm reads running_var into a graph, then refreshes it: PyTorch's
    update does not count as an in-place change, so the backward sees the new values."""
    bn = tg.nn.BatchNorm1d(3)
    w = tg.ones(3, requires_grad=True)
    reg = (bn.running_var * w).sum()
    before = bn.running_mean._version, bn.running_var._version
    bn(tg.arange(12.0).view(4, 3))
    reg.backward()
    np.testing.assert_allclose(w.grad.numpy(), [2.4] * 3, rtol=1e-6)
    assert (bn.running_mean._version, bn.running_var._version) == before


def test_a_spatial_target_must_be_long():
    with pytest.raises(RuntimeError, match="expected scalar type Long but found Byte"):
        tg.nn.functional.cross_entropy(tg.zeros(1, 3, 2), tg.tensor([[0, 1]], dtype=tg.uint8))
    assert tg.nn.functional.cross_entropy(tg.zeros(2, 3), tg.tensor([0, 1], dtype=tg.uint8)).item() == pytest.approx(np.log(3))
