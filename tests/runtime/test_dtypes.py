"""Dtypes and PyTorch's type promotion: result_type, binary op result dtypes, default dtype."""
import itertools

import numpy as np
import pytest

from ._helpers import DTYPE_NAMES, LIB, dname, tg

PAIRS = list(itertools.product(DTYPE_NAMES, DTYPE_NAMES))
SCALARS = [True, 2, 2.5, 1.5 + 2j]
SCALAR_IDS = ["bool", "int", "float", "complex"]


def _t(name, ndim=1, lib=None):
    lib = lib or tg
    d = getattr(lib, name)
    if ndim == 0:
        return lib.ones((), dtype=d)
    return lib.ones(2, dtype=d)




@pytest.fixture(autouse=True)
def _restore_default_dtype():
    before = tg.get_default_dtype()
    yield
    tg.set_default_dtype(before)


# ------------------------------------------------------------------------------ hand-derived


CATEGORY = {"bool": 0, "int32": 1, "int64": 1, "float16": 2, "float32": 2, "float64": 2,
            "complex64": 3, "complex128": 3}
WIDTH = {"bool": 0, "int32": 32, "int64": 64, "float16": 16, "float32": 32, "float64": 64,
         "complex64": 64, "complex128": 128}


def _expected_tensor_tensor(a, b):
    """torch.promote_types, derived by hand: the higher category wins, the wider type in a
    category; complex takes float64's precision (float64 + complex64 -> complex128)."""
    if a == b:
        return a
    ca, cb = CATEGORY[a], CATEGORY[b]
    if ca != cb:
        hi, lo = (a, b) if ca > cb else (b, a)
        if hi == "complex64" and lo == "float64":
            return "complex128"
        return hi
    return a if WIDTH[a] >= WIDTH[b] else b


@pytest.mark.parametrize("a,b", PAIRS)
def test_promote_types_table(a, b):
    expected = _expected_tensor_tensor(a, b)
    assert dname(tg.promote_types(getattr(tg, a), getattr(tg, b))) == expected
    assert dname(tg.result_type(_t(a), _t(b))) == expected
    assert dname((_t(a) * _t(b)).dtype) == expected


@pytest.mark.parametrize("a,b", PAIRS)
def test_zero_dim_tensor_only_matters_for_a_higher_category(a, b):
    dim, zero = _t(a), _t(b, 0)
    if CATEGORY[b] > CATEGORY[a]:
        if CATEGORY[b] == 3 and CATEGORY[a] == 2:
            # complex with the dimensioned float's precision (torch: float16 -> complex32,
            # which tracegrad does not have: complex64)
            expected = {"float16": "complex64", "float32": "complex64", "float64": "complex128"}[a]
        else:
            expected = b  # e.g. bool tensor * int32 0-d tensor -> int32
    else:
        expected = a
    assert dname(tg.result_type(dim, zero)) == expected
    assert dname(tg.result_type(zero, dim)) == expected
    assert dname((dim * zero).dtype) == expected
    assert dname((zero * dim).dtype) == expected


@pytest.mark.parametrize("a", DTYPE_NAMES)
@pytest.mark.parametrize("s", SCALARS, ids=SCALAR_IDS)
def test_python_scalar_promotion(a, s):
    cat_s = {bool: 0, int: 1, float: 2, complex: 3}[type(s)]
    if cat_s <= CATEGORY[a]:
        expected = a
    elif cat_s == 1:
        expected = "int64"
    elif cat_s == 2:
        expected = "float32"  # the default dtype
    elif CATEGORY[a] == 2:
        expected = {"float16": "complex64", "float32": "complex64", "float64": "complex128"}[a]
    else:
        expected = "complex64"
    assert dname(tg.result_type(_t(a), s)) == expected
    assert dname((_t(a) * s).dtype) == expected
    assert dname((s * _t(a)).dtype) == expected
    assert dname((_t(a, 0) * s).dtype) == expected


def test_examples_from_pytorch_docs():
    assert tg.result_type(tg.tensor([1, 2], dtype=tg.int32), 1.0) == tg.float32
    assert tg.result_type(tg.tensor([1, 2], dtype=tg.uint8), tg.tensor(1)) == tg.uint8
    assert (tg.tensor([1, 2], dtype=tg.int32) * 2.5).dtype == tg.float32
    assert (tg.tensor([1, 2], dtype=tg.int32) + tg.tensor(5)).dtype == tg.int32
    assert (tg.tensor([1.0], dtype=tg.float16) + tg.tensor(5.0, dtype=tg.float64)).dtype == tg.float16


@pytest.mark.parametrize("scalar", [np.float64(2.5), np.float32(2.5), np.int64(2)],
                         ids=["np.float64", "np.float32", "np.int64"])
@pytest.mark.parametrize("a", ["int64", "float32", "float16"])
def test_numpy_scalars_promote_like_python_numbers(a, scalar):
    """PyTorch treats a NumPy scalar operand like the Python number of its kind."""
    kind = {np.float64: 2, np.float32: 2, np.int64: 1}[type(scalar)]
    if kind <= CATEGORY[a]:
        expected = a
    else:
        expected = "float32"  # a float scalar with an int tensor: the default dtype
    x = _t(a)
    for r in (x * scalar, x + scalar, scalar * x):
        assert dname(r.dtype) == expected
    np.testing.assert_allclose((x * scalar).numpy().astype(np.float64), np.full(2, float(scalar)))


def test_default_dtype_get_set():
    assert tg.get_default_dtype() == tg.float32
    assert tg.tensor([1.5]).dtype == tg.float32
    tg.set_default_dtype(tg.float64)
    assert tg.get_default_dtype() == tg.float64
    assert tg.tensor([1.5]).dtype == tg.float64
    assert tg.tensor([1j]).dtype == tg.complex128
    assert tg.zeros(2).dtype == tg.float64
    assert (tg.tensor([1, 2]) * 2.5).dtype == tg.float64
    assert (tg.tensor([1, 2]) / 2).dtype == tg.float64
    assert tg.tensor([1, 2]).exp().dtype == tg.float64
    assert (tg.ones(2, dtype=tg.float32) * 2.5).dtype == tg.float32
    tg.set_default_dtype(tg.float32)
    assert tg.tensor([1.5]).dtype == tg.float32
    assert tg.tensor([1j]).dtype == tg.complex64


def test_set_default_dtype_rejects_non_float():
    with pytest.raises(TypeError, match="only floating-point types are supported as the default type"):
        tg.set_default_dtype(tg.int64)
    assert tg.get_default_dtype() == tg.float32


@pytest.mark.parametrize("name", ["bool", "int32", "int64"])
def test_integer_true_division_and_exp_give_default_float(name):
    d = getattr(tg, name)
    x = tg.tensor([1, 2, 3], dtype=d) if name != "bool" else tg.tensor([True, False, True])
    y = tg.tensor([2, 4, 4], dtype=d) if name != "bool" else tg.tensor([True, True, True])
    assert (x / y).dtype == tg.float32
    assert (x / 2).dtype == tg.float32
    assert tg.div(x, y).dtype == tg.float32
    assert tg.true_divide(x, y).dtype == tg.float32
    assert x.exp().dtype == tg.float32
    assert tg.sqrt(x).dtype == tg.float32
    assert tg.sin(x).dtype == tg.float32
    if name != "bool":
        np.testing.assert_allclose((x / y).numpy(), [0.5, 0.5, 0.75])
        np.testing.assert_allclose(x.exp().numpy(), np.exp([1.0, 2.0, 3.0]), rtol=1e-6)


def test_floor_division_of_ints_stays_int():
    x = tg.tensor([7, -7], dtype=tg.int32)
    r = x // 2
    assert r.dtype == tg.int32
    assert r.tolist() == [3, -4]
    assert tg.div(x, 2, rounding_mode="trunc").tolist() == [3, -3]
    assert tg.div(x, 2, rounding_mode="floor").dtype == tg.int32


@pytest.mark.parametrize("name", ["bool", "int32", "int64"])
def test_sum_of_bool_and_int_is_int64(name):
    x = tg.tensor([1, 0, 1], dtype=getattr(tg, name))
    s = x.sum()
    assert s.dtype == tg.int64
    assert s.item() == 2
    assert x.sum(0).dtype == tg.int64
    assert tg.sum(x, dim=0, keepdim=True).dtype == tg.int64
    assert x.cumsum(0).dtype == tg.int64
    assert x.prod().dtype == tg.int64


@pytest.mark.parametrize("name", ["float16", "float32", "float64", "complex64"])
def test_sum_of_float_keeps_dtype(name):
    x = tg.ones(3, dtype=getattr(tg, name))
    assert x.sum().dtype == getattr(tg, name)
    assert x.mean().dtype == getattr(tg, name)


def test_sum_with_dtype_argument():
    x = tg.tensor([1, 2, 3])
    assert x.sum(dtype=tg.float64).dtype == tg.float64
    assert x.sum(dtype=tg.float64).item() == 6.0


@pytest.mark.parametrize("name,legacy", [("int64", "Long"), ("int32", "Int"), ("bool", "Bool")])
def test_mean_of_ints_raises(name, legacy):
    x = tg.tensor([1, 0, 1], dtype=getattr(tg, name))
    with pytest.raises(RuntimeError, match=r"mean\(\): could not infer output dtype. Input dtype must be "
                                           r"either a floating point or complex dtype. Got: " + legacy):
        x.mean()
    with pytest.raises(RuntimeError, match="could not infer output dtype"):
        tg.mean(x, 0)
    assert x.mean(dtype=tg.float32).item() == pytest.approx(2 / 3)


def test_comparison_results_are_bool():
    a = tg.tensor([1, 2, 3])
    for r in (a < 2, a <= 2, a > 2, a >= 2, a == 2, a != 2, tg.eq(a, a), a.lt(2.5)):
        assert r.dtype == tg.bool
    assert (a < 2.5).tolist() == [True, True, False]


def test_dtype_attributes_and_aliases():
    assert tg.float is tg.float32 and tg.double is tg.float64 and tg.half is tg.float16
    assert tg.long is tg.int64 and tg.int is tg.int32
    assert tg.cfloat is tg.complex64 and tg.cdouble is tg.complex128
    assert tg.float32.is_floating_point and not tg.int64.is_floating_point
    assert tg.complex64.is_complex and not tg.float64.is_complex
    assert tg.float64.itemsize == 8 and tg.bool.itemsize == 1
    assert repr(tg.float32) == f"{LIB}.float32"
    assert str(tg.int64) == f"{LIB}.int64"
    assert tg.ones(2).is_floating_point() and not tg.ones(2, dtype=tg.int32).is_floating_point()
    assert tg.is_complex(tg.ones(1, dtype=tg.complex64))


@pytest.mark.parametrize("method,expected", [("float", "float32"), ("double", "float64"), ("half", "float16"),
                                             ("int", "int32"), ("long", "int64"), ("bool", "bool")])
def test_cast_methods(method, expected):
    x = tg.tensor([0.0, 1.5, -2.7])
    y = getattr(x, method)()
    assert dname(y.dtype) == expected
    if expected in ("int32", "int64"):
        assert y.tolist() == [0, 1, -2]
    if expected == "bool":
        assert y.tolist() == [False, True, True]


def test_to_dtype_and_type():
    x = tg.tensor([1, 2])
    assert x.to(tg.float64).dtype == tg.float64
    assert x.to(dtype=tg.float16).dtype == tg.float16
    assert x.to(tg.int64) is x
    assert x.type() == f"{LIB}.LongTensor"
    assert tg.ones(1).type() == f"{LIB}.FloatTensor"
    assert tg.ones(1, dtype=tg.float64).type() == f"{LIB}.DoubleTensor"


def test_complex_ops_dtype():
    z = tg.tensor([1 + 2j])
    assert z.dtype == tg.complex64
    assert (z * tg.ones(1, dtype=tg.float64)).dtype == tg.complex128
    assert tg.abs(z).dtype == tg.float32
    np.testing.assert_allclose(tg.abs(z).numpy(), [np.sqrt(5.0)], rtol=1e-6)


# ------------------------------------------------------------------------------ oracle


@pytest.mark.torch
def test_oracle_tensor_tensor_all_pairs():
    torch = pytest.importorskip("torch")
    bad = []
    for a, b in PAIRS:
        expected = dname(torch.result_type(_t(a, lib=torch), _t(b, lib=torch)))
        got = dname(tg.result_type(_t(a), _t(b)))
        op = dname((_t(a) * _t(b)).dtype)
        if got != expected or op != expected:
            bad.append((a, b, got, op, expected))
    assert not bad, bad


@pytest.mark.torch
def test_oracle_tensor_zero_dim_all_pairs():
    torch = pytest.importorskip("torch")
    bad = []
    for a, b in PAIRS:
        for na, nb in ((1, 0), (0, 1), (0, 0)):
            expected = dname(torch.result_type(_t(a, na, torch), _t(b, nb, torch)))
            got = dname(tg.result_type(_t(a, na), _t(b, nb)))
            op = dname((_t(a, na) * _t(b, nb)).dtype)
            add = dname((_t(a, na) + _t(b, nb)).dtype)
            if not (got == op == add == expected):
                bad.append((a, na, b, nb, got, op, add, expected))
    assert not bad, bad


@pytest.mark.torch
def test_oracle_tensor_scalar_all_pairs():
    torch = pytest.importorskip("torch")
    bad = []
    for a in DTYPE_NAMES:
        for s in SCALARS:
            for nd in (1, 0):
                expected = dname(torch.result_type(_t(a, nd, torch), s))
                got = dname(tg.result_type(_t(a, nd), s))
                op = dname((_t(a, nd) * s).dtype)
                rop = dname((s * _t(a, nd)).dtype)
                add = dname((_t(a, nd) + s).dtype)
                if not (got == op == rop == add == expected):
                    bad.append((a, nd, s, got, op, rop, add, expected))
    assert not bad, bad


@pytest.mark.torch
@pytest.mark.parametrize("default", ["float32", "float64"])
def test_oracle_scalar_promotion_under_default_dtype(default):
    torch = pytest.importorskip("torch")
    prev = torch.get_default_dtype()
    torch.set_default_dtype(getattr(torch, default))
    tg.set_default_dtype(getattr(tg, default))
    try:
        bad = []
        for a in DTYPE_NAMES:
            for s in SCALARS:
                expected = dname(torch.result_type(_t(a, lib=torch), s))
                got = dname((_t(a) * s).dtype)
                if got != expected:
                    bad.append((a, s, got, expected))
        for data in ([1.5], [1j], [1, 2.0], [True, 1]):
            if dname(tg.tensor(data).dtype) != dname(torch.tensor(data).dtype):
                bad.append((data, tg.tensor(data).dtype, torch.tensor(data).dtype))
        assert not bad, bad
    finally:
        torch.set_default_dtype(prev)


@pytest.mark.torch
@pytest.mark.parametrize("name", DTYPE_NAMES)
def test_oracle_unary_and_division_dtypes(name):
    torch = pytest.importorskip("torch")
    for fn in (lambda L, x: x / x, lambda L, x: x / 2, lambda L, x: 2 / x, lambda L, x: x.sum(),
               lambda L, x: x.sum(0), lambda L, x: L.exp(x.float()) if x.dtype == L.float16 else L.exp(x),
               lambda L, x: L.sqrt(x.abs()) if x.dtype != L.bool else L.sqrt(x),
               lambda L, x: x.cumsum(0), lambda L, x: x.prod(), lambda L, x: L.abs(x) if x.dtype != L.bool else x,
               lambda L, x: x * True, lambda L, x: x == 1, lambda L, x: L.where(x == x, x, 2.5)):
        got = fn(tg, _t(name))
        expected = fn(torch, _t(name, lib=torch))
        assert dname(got.dtype) == dname(expected.dtype), (name, got.dtype, expected.dtype)
