"""Tests for tracegrad.runtime.formatting: hand-written PyTorch outputs, then PyTorch as oracle."""
import importlib
import importlib.util
import math
import pathlib
import sys

import numpy as np
import pytest

try:
    fmt = importlib.import_module("tracegrad.runtime.formatting")
except Exception:  # the package may not import while it is being built; load the file alone
    _path = pathlib.Path(__file__).resolve().parents[2] / "tracegrad" / "runtime" / "formatting.py"
    _spec = importlib.util.spec_from_file_location("_tracegrad_formatting", _path)
    fmt = importlib.util.module_from_spec(_spec)
    sys.modules[_spec.name] = fmt
    _spec.loader.exec_module(fmt)


@pytest.fixture(autouse=True)
def _restore_printoptions():
    yield
    fmt.set_printoptions(profile="default")


def _repr(arr, **kw):
    arr = np.asarray(arr)
    kind = arr.dtype.kind
    return fmt.tensor_repr(arr, dtype_name=str(arr.dtype), is_float=kind == "f",
                           is_complex=kind == "c", is_bool=kind == "b", **kw)


# ---------------------------------------------------------------- no torch needed


@pytest.mark.parametrize("arr, kw, expected", [
    (np.array([[2, 6, 12], [20, 30, 42]], np.float32), {"grad_fn_name": "AddBackward0"},
     "tensor([[ 2.,  6., 12.],\n        [20., 30., 42.]], grad_fn=<AddBackward0>)"),
    (np.array([2.0, 0.4, 0.006], np.float32), {}, "tensor([2.0000, 0.4000, 0.0060])"),
    (np.array([1.6432, 29.6020, -21.8138, 6.0257], np.float32), {},
     "tensor([  1.6432,  29.6020, -21.8138,   6.0257])"),
    (np.array(27.0, np.float32), {"grad_fn_name": "MeanBackward0"},
     "tensor(27., grad_fn=<MeanBackward0>)"),
    (np.array([np.nan, np.inf, 1.5], np.float32), {}, "tensor([   nan,    inf, 1.5000])"),
    (np.array([True, False]), {}, "tensor([ True, False])"),
    (np.array([1.0, 2.0], np.float32), {"requires_grad": True},
     "tensor([1., 2.], requires_grad=True)"),
    (np.array([1, 2], np.int32), {}, "tensor([1, 2], dtype=tracegrad.int32)"),
    (np.array([1, 2], np.int64), {}, "tensor([1, 2])"),
    (np.array([0.1], np.float32), {}, "tensor([0.1000])"),
    (np.array([1e-5, 1.0], np.float32), {}, "tensor([1.0000e-05, 1.0000e+00])"),
    (np.zeros((2, 0), np.float32), {}, "tensor([], size=(2, 0))"),
    (np.zeros((0,), np.int64), {}, "tensor([], dtype=tracegrad.int64)"),
    (np.zeros((0,), np.float32), {}, "tensor([])"),
    (np.array([1.5 + 2j], np.complex64), {}, "tensor([1.5000+2.j])"),
    (np.array([1.0, 2.0], np.float64), {}, "tensor([1., 2.], dtype=tracegrad.float64)"),
    (np.array([1.0], np.float32), {"device": "cuda:0"}, "tensor([1.], device='cuda:0')"),
])
def test_known_outputs(arr, kw, expected):
    assert _repr(arr, **kw) == expected


def test_default_float64_hides_float64_and_complex128():
    kw = {"default_dtype_name": "float64"}
    assert _repr(np.array([1.0]), **kw) == "tensor([1.])"
    assert _repr(np.array([1j]), **kw) == "tensor([0.+1.j])"
    assert _repr(np.array([1.0], np.float32), **kw) == "tensor([1.], dtype=tracegrad.float32)"


def test_summary_and_wrapping():
    out = _repr(np.arange(2000.0, dtype=np.float32))
    assert out == "tensor([0.0000e+00, 1.0000e+00, 2.0000e+00,  ..., 1.9970e+03, 1.9980e+03,\n" \
                  "        1.9990e+03])"
    out = _repr(np.arange(30, dtype=np.int64))
    assert out.splitlines()[1].startswith("        ") and all(len(l) <= 80 for l in out.splitlines())


def test_printoptions_roundtrip_and_profiles():
    defaults = {"precision": 4, "threshold": 1000, "edgeitems": 3, "linewidth": 80,
                "sci_mode": None}
    assert fmt.get_printoptions() == defaults
    fmt.set_printoptions(precision=2)
    assert _repr(np.array([1.12345], np.float32)) == "tensor([1.12])"
    fmt.set_printoptions(threshold=5)
    assert _repr(np.arange(10)) == "tensor([0, 1, 2,  ..., 7, 8, 9])"
    fmt.set_printoptions(profile="short")
    assert fmt.get_printoptions() == dict(defaults, precision=2, edgeitems=2)
    fmt.set_printoptions(profile="full")
    assert fmt.get_printoptions()["threshold"] == math.inf
    fmt.set_printoptions(**dict(defaults, sci_mode=True))
    assert fmt.get_printoptions() == dict(defaults, sci_mode=True)
    assert _repr(np.array([1.5], np.float32)) == "tensor([1.5000e+00])"
    fmt.set_printoptions(profile="default")
    assert fmt.get_printoptions() == defaults


def test_format_values_body_and_indent():
    values = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
    assert fmt.format_values(values, is_float=True, is_complex=False, is_bool=False) == \
        "[[1., 2.],\n        [3., 4.]]"
    assert fmt.format_values(values, is_float=True, is_complex=False, is_bool=False,
                             indent=0) == "[[1., 2.],\n [3., 4.]]"
    assert fmt.format_values(np.array(3), is_float=False, is_complex=False, is_bool=False) == "3"


# ---------------------------------------------------------------- PyTorch as oracle


@pytest.fixture
def torch():
    torch = pytest.importorskip("torch")
    yield torch
    torch.set_printoptions(profile="default")
    torch.set_default_dtype(torch.float32)


def _ours_for(torch, t):
    """Our repr of the torch tensor ``t``, given the same facts tracegrad's Tensor knows."""
    grad_fn = t.grad_fn
    return fmt.tensor_repr(
        t.detach().resolve_conj().numpy(), dtype_name=str(t.dtype).removeprefix("torch."),
        is_float=t.dtype.is_floating_point, is_complex=t.dtype.is_complex,
        is_bool=t.dtype == torch.bool,
        default_dtype_name=str(torch.get_default_dtype()).removeprefix("torch."),
        grad_fn_name=None if grad_fn is None else type(grad_fn).__name__,
        requires_grad=t.requires_grad)


def _check(torch, t):
    expected = repr(t).replace("torch.", "tracegrad.")
    assert _ours_for(torch, t) == expected


_rng = np.random.default_rng(0)


def _arrays():
    r = _rng
    cases = {
        "0d": r.standard_normal(()),
        "0d_int_valued": np.array(-3.0),
        "1d_short": r.standard_normal(4),
        "1d_wraps": r.standard_normal(23),
        "1d_wraps_big": r.standard_normal(40) * 100,
        "2d": r.standard_normal((4, 6)),
        "2d_wide": r.standard_normal((3, 17)),
        "3d": r.standard_normal((2, 3, 4)),
        "4d": r.standard_normal((2, 2, 3, 3)),
        "int_valued": np.array([[1.0, -2.0, 300.0], [4.0, 5.0, 6.0]]),
        "int_valued_big": np.array([1.0, 123456.0]),
        "span_1000x": np.array([0.5, 1234.5, 3.0]),
        "over_1e8": np.array([1.5e9, 2.0]),
        "tiny": np.array([1e-5, 2e-6, -3e-7]),
        "nan_inf": np.array([np.nan, -np.inf, np.inf, 1.25, 0.0]),
        "nan_inf_int_valued": np.array([np.nan, -np.inf, 3.0, 0.0]),
        "only_nonfinite": np.array([np.nan, np.inf, -np.inf]),
        "nan_sci": np.array([np.nan, 1e-6, 1.0]),
        "zeros": np.zeros((2, 3)),
        "neg_zero": np.array([-0.0, 0.0, 1.0]),
        "neg_zero_frac": np.array([-0.0, 0.5]),
        "float32_tenths": np.array([0.1, 0.2, 0.3, 1 / 3]),
        "rounds_up": np.array([9.99996, 0.5]),
        "summary_arange": np.arange(2000.0),
        "summary_2d": r.standard_normal((40, 40)),
        "summary_wide": r.standard_normal((3, 500)),
        "summary_3d": r.standard_normal((12, 10, 12)),
        "summary_hidden_big": np.concatenate([np.ones(3), np.full(1000, 1e9), np.ones(3)]),
        "zero_size_1d": np.zeros(0),
        "zero_size_2d": np.zeros((2, 0)),
        "zero_size_3d": np.zeros((0, 3, 4)),
    }
    out = []
    for name, a in cases.items():
        for dt in (np.float32, np.float64):
            out.append(pytest.param(a.astype(dt), id=f"{name}-{np.dtype(dt).name}"))
    extra = {
        "float16": r.standard_normal(5).astype(np.float16),
        "int64": np.array([[1, -20, 300], [4, 5, 6]], np.int64),
        "int64_large": np.array([2**62, -(2**40), 7], np.int64),
        "int32": np.arange(-5, 40, dtype=np.int32),
        "uint8": np.array([0, 255], np.uint8),
        "int_summary": np.arange(3000, dtype=np.int64).reshape(30, 100),
        "bool": np.array([[True, False, True], [False, False, True]]),
        "bool_true": np.array([True, True]),
        "bool_0d": np.array(False),
        "int_0d": np.array(-7, np.int64),
        "int_empty": np.zeros((0, 2), np.int64),
        "bool_empty": np.zeros(0, bool),
        "int32_empty": np.zeros(0, np.int32),
        "complex64": (r.standard_normal(6) + 1j * r.standard_normal(6)).astype(np.complex64),
        "complex64_int": np.array([1 + 2j, -3 - 0j, 0 + 0j, -1j], np.complex64),
        "complex128": r.standard_normal((2, 3)) + 1j * r.standard_normal((2, 3)),
        "complex_sci": np.array([1e-6 + 1j, 2e3 - 5e-3j], np.complex64),
        "complex_wraps": (r.standard_normal(20) + 1j * r.standard_normal(20)),
        "complex_0d": np.array(2.5 - 1j, np.complex64),
        "complex_summary": r.standard_normal(1500) + 1j * r.standard_normal(1500),
    }
    out += [pytest.param(a, id=name) for name, a in extra.items()]
    return out


@pytest.mark.torch
@pytest.mark.parametrize("arr", _arrays())
def test_matches_torch(torch, arr):
    _check(torch, torch.from_numpy(arr.copy()))


@pytest.mark.torch
@pytest.mark.parametrize("opts", [
    {"precision": 2}, {"precision": 0}, {"precision": 8}, {"sci_mode": False},
    {"sci_mode": True}, {"threshold": 5}, {"threshold": 0}, {"linewidth": 40},
    {"linewidth": 200}, {"edgeitems": 1, "threshold": 10}, {"edgeitems": 0, "threshold": 10},
    {"edgeitems": 0}, {"profile": "full"}, {"profile": "short"},
    {"profile": "short", "precision": 6},
], ids=str)
@pytest.mark.parametrize("name", ["small", "tiny", "ints", "summary", "wide3d", "complex",
                                  "scalar", "int64"])
def test_printoptions_match_torch(torch, opts, name):
    r = np.random.default_rng(1)
    arr = {
        "small": r.standard_normal((3, 4)).astype(np.float32),
        "tiny": np.array([1e-5, 2.5, -300.0], np.float32),
        "ints": np.array([1.0, 2.0, 1e9]),
        "summary": r.standard_normal((40, 40)).astype(np.float32),
        "wide3d": r.standard_normal((2, 3, 30)),
        "complex": (r.standard_normal(12) + 1j * r.standard_normal(12)).astype(np.complex64),
        "scalar": np.array(3.14159, np.float32),
        "int64": np.arange(1500, dtype=np.int64),
    }[name]
    fmt.set_printoptions(**opts)
    torch.set_printoptions(**opts)
    assert fmt.get_printoptions() == torch._tensor_str.get_printoptions()
    _check(torch, torch.from_numpy(arr))


@pytest.mark.torch
def test_autograd_suffixes_match_torch(torch):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(3, 4, generator=g, requires_grad=True)
    _check(torch, x)
    _check(torch, x * 2)
    _check(torch, (x * 2).mean())
    _check(torch, x.sum(0))
    long = torch.randn(40, generator=g, dtype=torch.float64, requires_grad=True)
    _check(torch, long)  # dtype and requires_grad suffixes wrap onto their own line
    _check(torch, long.exp())
    _check(torch, torch.randn(7, generator=g, dtype=torch.float64, requires_grad=True) * 1e5)
    _check(torch, torch.randn(2, 3, 4, generator=g, dtype=torch.float64, requires_grad=True) + 1)
    _check(torch, torch.zeros(0, 3, requires_grad=True))
    _check(torch, torch.zeros(0, 3, dtype=torch.float64, requires_grad=True) * 2)


@pytest.mark.torch
def test_suffix_line_breaks_match_torch(torch):
    # Lengths around linewidth, where the suffix either fits or moves to its own line.
    for n in range(1, 12):
        arr = np.linspace(-1, 1, n * 3)
        _check(torch, torch.from_numpy(arr))
        _check(torch, torch.from_numpy(arr).requires_grad_())
        _check(torch, torch.from_numpy(arr).requires_grad_() * 3)


@pytest.mark.torch
def test_default_dtype_float64_matches_torch(torch):
    torch.set_default_dtype(torch.float64)
    for t in (torch.tensor([1.5, 2.0]), torch.tensor([1.5, 2.0], dtype=torch.float32),
              torch.tensor([1 + 1j]), torch.tensor([1 + 1j], dtype=torch.complex64),
              torch.zeros(0), torch.zeros(0, dtype=torch.float32), torch.zeros(2, 0)):
        _check(torch, t)


@pytest.mark.torch
def test_random_float32_fuzz_matches_torch(torch):
    r = np.random.default_rng(2)
    for _ in range(60):
        shape = tuple(r.integers(1, 6, size=r.integers(0, 4)))
        scale = 10.0 ** r.integers(-6, 10)
        arr = np.asarray(r.standard_normal(shape) * scale).astype(np.float32)
        if r.random() < 0.3:
            arr = np.asarray(np.round(arr))
        _check(torch, torch.from_numpy(arr))
