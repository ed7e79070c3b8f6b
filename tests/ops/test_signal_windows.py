"""``torch.signal.windows``: values against the textbook formulas written out with NumPy,
periodic windows as the first M points of the symmetric window of M + 1, dtypes, devices,
``requires_grad``, PyTorch's errors -- and PyTorch's own values, graphs and messages when it
is installed."""
import math

import numpy as np
import pytest

import tracegrad as tg
from tracegrad.signal import windows as W

NAMES = ["bartlett", "blackman", "cosine", "exponential", "gaussian", "general_cosine",
         "general_hamming", "hamming", "hann", "kaiser", "nuttall"]
NUTTALL = [0.3635819, 0.4891775, 0.1365995, 0.0106411]
COEFFS = [0.3, 0.4, 0.2, 0.1]  # general_cosine's ``a`` wherever a test needs one
# The errors of these windows name general_cosine, which they are built on (as in PyTorch).
ERROR_NAME = {"hann": "general_cosine", "hamming": "general_cosine", "general_hamming": "general_cosine",
              "nuttall": "general_cosine"}


def window(name, M, **kw):
    if name == "general_cosine":
        kw.setdefault("a", COEFFS)
    return getattr(W, name)(M, **kw)


def _cosines(a, M):
    n, N = np.arange(M), M - 1
    return sum((-1) ** i * c * np.cos(2 * math.pi * i * n / N) for i, c in enumerate(a))


def by_hand(name, M, **kw):
    """The symmetric window of length M >= 2, straight from its definition."""
    n, N = np.arange(M), M - 1
    if name == "bartlett":
        return 1 - np.abs(2 * n / N - 1)
    if name == "cosine":
        return np.sin(math.pi * (n + 0.5) / M)
    if name == "exponential":
        return np.exp(-np.abs(n - N / 2) / kw.get("tau", 1.0))
    if name == "gaussian":
        return np.exp(-0.5 * ((n - N / 2) / kw.get("std", 1.0)) ** 2)
    if name == "kaiser":
        beta = kw.get("beta", 12.0)
        return np.i0(beta * np.sqrt(1 - (2 * n / N - 1) ** 2)) / np.i0(beta)
    if name == "hann":
        return np.sin(math.pi * n / N) ** 2
    if name in ("hamming", "general_hamming"):
        alpha = kw.get("alpha", 0.54)
        return alpha - (1 - alpha) * np.cos(2 * math.pi * n / N)
    if name == "blackman":
        return 0.42 - 0.5 * np.cos(2 * math.pi * n / N) + 0.08 * np.cos(4 * math.pi * n / N)
    return _cosines(kw.get("a", NUTTALL if name == "nuttall" else COEFFS), M)


PARAMS = [("bartlett", {}), ("blackman", {}), ("cosine", {}), ("exponential", {}), ("exponential", {"tau": 2.5}),
          ("gaussian", {}), ("gaussian", {"std": 3.0}), ("general_cosine", {}),
          ("general_cosine", {"a": [1.0]}), ("general_cosine", {"a": (0.5, 0.5)}), ("general_hamming", {}),
          ("general_hamming", {"alpha": 0.6}), ("hamming", {}), ("hann", {}), ("kaiser", {}),
          ("kaiser", {"beta": 0.0}), ("kaiser", {"beta": 5.0}), ("nuttall", {})]


# -- values --------------------------------------------------------------------------------------

@pytest.mark.parametrize("name, kw", PARAMS)
@pytest.mark.parametrize("M", [2, 3, 4, 7, 16])
def test_symmetric_window_is_its_formula(name, kw, M):
    w = window(name, M, dtype=tg.float64, **kw)
    np.testing.assert_allclose(w.numpy(), by_hand(name, M, **kw), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("name, kw", PARAMS)
@pytest.mark.parametrize("M", [2, 3, 8, 9])
def test_periodic_window_is_one_longer_symmetric_window_cut(name, kw, M):
    w = window(name, M, sym=False, dtype=tg.float64, **kw)
    np.testing.assert_allclose(w.numpy(), by_hand(name, M + 1, **kw)[:M], rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("sym", [True, False])
def test_empty_and_one_point_windows(name, sym):
    assert window(name, 0, sym=sym).shape == (0,)
    assert window(name, 1, sym=sym).tolist() == [1.0]


@pytest.mark.parametrize("M, center", [(1, 0.0), (1, 2.0), (5, 0.0), (6, 1.5), (4, 9.0)])
def test_exponential_periodic_window_takes_a_center(M, center):
    w = W.exponential(M, center=center, tau=2.0, sym=False, dtype=tg.float64)
    np.testing.assert_allclose(w.numpy(), np.exp(-np.abs(np.arange(M) - center) / 2.0), rtol=1e-12)


def test_gaussian_std_may_be_a_tensor():
    w = W.gaussian(5, std=tg.tensor(2.0), dtype=tg.float64)
    np.testing.assert_allclose(w.numpy(), by_hand("gaussian", 5, std=2.0), rtol=1e-6)


def test_general_cosine_takes_any_iterable():
    expected = by_hand("hann", 5)
    np.testing.assert_allclose(W.general_cosine(5, a=iter([0.5, 0.5]), dtype=tg.float64).numpy(), expected,
                               atol=1e-15)
    np.testing.assert_allclose(W.hann(5, dtype=tg.float64).numpy(), expected, atol=1e-15)


@pytest.mark.parametrize("name", ["bartlett", "blackman", "hamming", "hann", "kaiser"])
@pytest.mark.parametrize("M", [0, 1, 2, 7, 16])
def test_periodic_windows_agree_with_the_torch_dot_x_window_family(name, M):
    old_style = getattr(tg, f"{name}_window")(M, periodic=True, dtype=tg.float64)
    np.testing.assert_allclose(window(name, M, sym=False, dtype=tg.float64).numpy(), old_style.numpy(),
                               rtol=1e-12, atol=1e-14)


# -- dtype, device, requires_grad ----------------------------------------------------------------

@pytest.mark.parametrize("name", NAMES)
def test_dtype_defaults_to_the_default_dtype(name):
    assert window(name, 5).dtype is tg.float32
    assert window(name, 0).dtype is tg.float32
    assert window(name, 5, dtype=tg.float64).dtype is tg.float64
    np.testing.assert_allclose(window(name, 9).numpy(), window(name, 9, dtype=tg.float64).numpy(),
                               rtol=1e-5, atol=1e-6)
    previous = tg.get_default_dtype()
    tg.set_default_dtype(tg.float64)
    try:
        assert window(name, 5).dtype is tg.float64
        assert window(name, 1).dtype is tg.float64
    finally:
        tg.set_default_dtype(previous)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("device", ["cpu", tg.device("cpu"), None])
def test_device_argument(name, device):
    for M in (0, 1, 6):
        assert window(name, M, device=device).device.type == "cpu"


@pytest.mark.skipif(not tg.cuda.is_available(), reason="no CUDA device")
@pytest.mark.parametrize("name", NAMES)
def test_cuda_window_equals_cpu_window(name):
    w = window(name, 7, device="cuda", dtype=tg.float64)
    assert w.device.type == "cuda"
    np.testing.assert_allclose(w.cpu().numpy(), window(name, 7, dtype=tg.float64).numpy(), atol=1e-12)


# The node the window's last operation leaves (as in PyTorch): the window is computed from a
# grid that requires grad, so it is a non-leaf.
LAST_OP = {"bartlett": "RsubBackward1", "cosine": "SinBackward0", "exponential": "ExpBackward0",
           "gaussian": "ExpBackward0", "kaiser": "DivBackward0"}


@pytest.mark.parametrize("name", NAMES)
def test_requires_grad_gives_a_window_computed_from_a_grid_that_requires_grad(name):
    w = window(name, 6, requires_grad=True)
    assert w.requires_grad and not w.is_leaf
    assert w.grad_fn.name() == LAST_OP.get(name, "SumBackward1")
    assert not window(name, 6).requires_grad
    empty = window(name, 0, requires_grad=True)
    assert empty.requires_grad and empty.is_leaf
    with tg.no_grad():
        assert not window(name, 6, requires_grad=True).requires_grad


@pytest.mark.parametrize("name", NAMES)
def test_one_point_window_is_a_leaf_unless_a_formula_made_it(name):
    w = window(name, 1, requires_grad=True)
    assert w.requires_grad
    assert w.is_leaf == (name not in ("cosine", "exponential", "gaussian"))


# -- errors --------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", NAMES)
def test_negative_length(name):
    shown = ERROR_NAME.get(name, name)
    with pytest.raises(ValueError, match=f"^{shown} requires non-negative window length, got M=-2$"):
        window(name, -2)
    with pytest.raises(ValueError, match="non-negative window length"):  # checked before the dtype
        window(name, -2, dtype=tg.int64)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("dtype", [tg.float16, tg.bfloat16, tg.int64, tg.int32, tg.bool, tg.complex64])
def test_only_float32_and_float64(name, dtype):
    shown = ERROR_NAME.get(name, name)
    with pytest.raises(ValueError, match=f"^{shown} expects float32 or float64 dtypes, got: {dtype}$"):
        window(name, 4, dtype=dtype)
    with pytest.raises(ValueError, match="expects float32 or float64"):
        window(name, 0, dtype=dtype)


@pytest.mark.parametrize("name", NAMES)
def test_only_the_strided_layout(name):
    shown = ERROR_NAME.get(name, name)
    with pytest.raises(ValueError, match=f"^{shown} is implemented for strided tensors only, got: "
                                         f"{tg.sparse_coo}$"):
        window(name, 4, layout=tg.sparse_coo)
    assert window(name, 4, layout=tg.strided).shape == (4,)


@pytest.mark.parametrize("call, error, message", [
    (lambda: W.gaussian(4, std=0), ValueError, "Standard deviation must be positive, got: 0 instead."),
    (lambda: W.gaussian(0, std=-1.5), ValueError, "Standard deviation must be positive, got: -1.5 instead."),
    (lambda: W.exponential(4, tau=0.0), ValueError, "Tau must be positive, got: 0.0 instead."),
    (lambda: W.exponential(4, center=1.0, tau=-1), ValueError, "Tau must be positive, got: -1 instead."),
    (lambda: W.exponential(4, center=1.0), ValueError, "Center must be None for symmetric windows"),
    (lambda: W.exponential(0, center=1.0), ValueError, "Center must be None for symmetric windows"),
    (lambda: W.kaiser(4, beta=-1), ValueError, "beta must be non-negative, got: -1 instead."),
    (lambda: W.kaiser(0, beta=-0.5), ValueError, "beta must be non-negative, got: -0.5 instead."),
    (lambda: W.general_cosine(4, a=[]), ValueError, "Coefficients cannot be empty"),
    (lambda: W.general_cosine(4, a=0.5), TypeError, "Coefficients must be a list/tuple"),
    (lambda: W.cosine(2.5), TypeError, "the window length M must be an int, got 2.5 (float)"),
    (lambda: W.bartlett(3.0), TypeError, "the window length M must be an int, got 3.0 (float)"),
    (lambda: W.gaussian(True), TypeError, "the window length M must be an int, got True (bool)"),
])
def test_bad_parameters(call, error, message):
    with pytest.raises(error) as info:
        call()
    assert str(info.value) == message


def test_checks_come_in_pytorch_order():
    with pytest.raises(ValueError, match="non-negative window length"):
        W.gaussian(-1, std=-1)
    with pytest.raises(ValueError, match="Tau must be positive"):
        W.exponential(4, center=1.0, tau=0)
    # Windows that need no formula do not look at what the formula would need.
    assert W.general_cosine(1, a=5).tolist() == [1.0]
    assert W.general_cosine(0, a=[]).shape == (0,)
    assert W.hann(True).tolist() == [1.0]


def test_arguments_after_M_are_keyword_only():
    with pytest.raises(TypeError):
        W.gaussian(4, 1.0)
    with pytest.raises(TypeError, match="missing 1 required keyword-only argument: 'a'"):
        W.general_cosine(4)
    with pytest.raises(TypeError, match="alpha"):
        W.hamming(4, alpha=0.5)  # hamming's coefficients are fixed; general_hamming takes alpha
    assert W.gaussian(M=3).shape == (3,)


def test_namespace():
    import tracegrad.signal.windows as module
    assert tg.signal.windows is module is W
    assert tg.signal.__all__ == ["windows"]
    assert sorted(W.__all__) == NAMES
    assert all(callable(getattr(tg.signal.windows, n)) for n in NAMES)


# -- against PyTorch -----------------------------------------------------------------------------

ORACLE_PARAMS = PARAMS + [("kaiser", {"beta": 30.0}), ("gaussian", {"std": 0.7}), ("exponential", {"tau": 0.4})]


def _theirs(name, M, **kw):
    import torch
    if name == "general_cosine":
        kw.setdefault("a", COEFFS)
    return getattr(torch.signal.windows, name)(M, **kw)


@pytest.mark.torch
@pytest.mark.parametrize("name, kw", ORACLE_PARAMS)
@pytest.mark.parametrize("sym", [True, False])
def test_values_as_in_pytorch(name, kw, sym):
    import torch
    for M in (0, 1, 2, 3, 4, 5, 10, 33, 128):
        for ours_dtype, their_dtype, tol in ((None, None, 1e-5), (tg.float64, torch.float64, 1e-12)):
            ours = window(name, M, sym=sym, dtype=ours_dtype, **kw)
            theirs = _theirs(name, M, sym=sym, dtype=their_dtype, **kw)
            assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
            assert ours.shape == tuple(theirs.shape)
            np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=tol, atol=tol)


@pytest.mark.torch
@pytest.mark.parametrize("M, center", [(1, 3.0), (4, 0.0), (7, 2.5), (8, 10.0)])
def test_exponential_center_as_in_pytorch(M, center):
    import torch
    ours = W.exponential(M, center=center, sym=False, dtype=tg.float64)
    theirs = torch.signal.windows.exponential(M, center=center, sym=False, dtype=torch.float64)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12)


@pytest.mark.torch
@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("M", [0, 1, 2, 5])
def test_autograd_attributes_as_in_pytorch(name, M):
    import torch
    for kw in ({}, {"requires_grad": True}, {"requires_grad": True, "sym": False}):
        ours, theirs = window(name, M, **kw), _theirs(name, M, **kw)
        assert (ours.requires_grad, ours.is_leaf) == (theirs.requires_grad, theirs.is_leaf)
        assert (ours.grad_fn and ours.grad_fn.name()) == (theirs.grad_fn and theirs.grad_fn.name())
    with tg.no_grad(), torch.no_grad():
        ours, theirs = window(name, M, requires_grad=True), _theirs(name, M, requires_grad=True)
        assert (ours.requires_grad, ours.is_leaf) == (theirs.requires_grad, theirs.is_leaf)


def _error_of(call):
    try:
        call()
    except Exception as e:  # noqa: BLE001 -- the point is to compare whatever is raised
        return type(e).__name__, str(e).replace("torch.", "tracegrad.")
    return None


@pytest.mark.torch
@pytest.mark.parametrize("name", NAMES)
def test_errors_as_in_pytorch(name):
    import torch
    for kw in ({"M": -1}, {"M": -4, "dtype": "int64"}, {"M": 3, "dtype": "float16"}, {"M": 3, "dtype": "int32"},
               {"M": 0, "dtype": "complex64"}, {"M": 3, "dtype": "bool"}, {"M": 3, "layout": "sparse_coo"},
               {"M": 3, "layout": None}):
        ours_kw = {k: getattr(tg, v) if isinstance(v, str) else v for k, v in kw.items()}
        their_kw = {k: getattr(torch, v) if isinstance(v, str) else v for k, v in kw.items()}
        ours = _error_of(lambda kw=ours_kw: window(name, **kw))
        theirs = _error_of(lambda kw=their_kw: _theirs(name, **kw))
        assert theirs is not None and ours == theirs, kw


@pytest.mark.torch
@pytest.mark.parametrize("name, kw", [
    ("gaussian", {"M": 3, "std": 0}), ("gaussian", {"M": 0, "std": -2.0}), ("gaussian", {"M": -1, "std": -2.0}),
    ("exponential", {"M": 3, "tau": 0}), ("exponential", {"M": 3, "center": 1.0}),
    ("exponential", {"M": 3, "center": 1.0, "tau": -1}), ("exponential", {"M": 0, "center": 2.0}),
    ("kaiser", {"M": 3, "beta": -1}), ("kaiser", {"M": 0, "beta": -1}),
    ("general_cosine", {"M": 3, "a": []}), ("general_cosine", {"M": 3, "a": 5}),
    ("general_cosine", {"M": -1, "a": []}), ("general_cosine", {"M": 3}), ("hamming", {"M": 3, "alpha": 0.5}),
])
def test_parameter_errors_as_in_pytorch(name, kw):
    import torch
    ours = _error_of(lambda: getattr(W, name)(**kw))
    theirs = _error_of(lambda: getattr(torch.signal.windows, name)(**kw))
    assert theirs is not None and ours == theirs


@pytest.mark.torch
@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("M", [True, 0.0, 1.0, 2.5, 3.0])
def test_non_integer_lengths_fail_where_pytorch_fails(name, M):
    """Same outcome and error type as PyTorch; our message is a short one of our own (PyTorch's
    is the list of linspace's overloads)."""
    ours, theirs = _error_of(lambda: window(name, M)), _error_of(lambda: _theirs(name, M))
    assert (ours and ours[0]) == (theirs and theirs[0])
    if theirs is None:
        assert window(name, M).tolist() == _theirs(name, M).tolist()
