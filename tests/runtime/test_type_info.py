"""finfo / iinfo: numerical limits of dtypes, against NumPy's and hand values, and PyTorch's."""
import numpy as np
import pytest

from ._helpers import tg

FLOATS = ["float16", "float32", "float64", "complex64", "complex128"]
INTS = ["uint8", "int8", "int16", "int32", "int64"]


@pytest.mark.parametrize("name", FLOATS)
def test_finfo_matches_numpy(name):
    f = tg.finfo(getattr(tg, name))
    real = np.finfo(np.dtype(name).type(0).real.dtype)
    assert (f.bits, f.eps, f.max, f.min) == (real.bits, real.eps, real.max, -real.max)
    assert f.tiny == f.smallest_normal == real.smallest_normal
    assert f.resolution == 10.0 ** -real.precision
    assert f.dtype == str(real.dtype) and all(type(v) is float for v in (f.eps, f.max, f.tiny))


def test_finfo_hand_values_and_default():
    f = tg.finfo(tg.float32)
    assert f.eps == 2.0 ** -23 and f.tiny == 2.0 ** -126 and f.resolution == 1e-6
    assert tg.finfo() == tg.finfo(tg.get_default_dtype())
    b = tg.finfo(tg.bfloat16)
    assert (b.bits, b.eps, b.tiny, b.max, b.dtype) == (16, 2.0 ** -7, 2.0 ** -126, (2 - 2.0 ** -7) * 2.0 ** 127, "bfloat16")
    assert 1.0 + f.eps > 1.0 and np.float32(1.0) + np.float32(f.eps / 2) == np.float32(1.0)
    assert repr(f) == ("finfo(resolution=1e-06, min=-3.40282e+38, max=3.40282e+38, eps=1.19209e-07, "
                       "smallest_normal=1.17549e-38, tiny=1.17549e-38, dtype=float32)")


@pytest.mark.parametrize("name", INTS)
def test_iinfo_matches_numpy(name):
    i = tg.iinfo(getattr(tg, name))
    ref = np.iinfo(name)
    assert (i.bits, i.min, i.max, i.dtype) == (ref.bits, ref.min, ref.max, name)
    assert type(i.max) is int
    assert tg.tensor([i.max], dtype=getattr(tg, name)).item() == i.max


def test_iinfo_repr():
    assert repr(tg.iinfo(tg.uint8)) == "iinfo(min=0, max=255, dtype=uint8)"
    assert repr(tg.iinfo(tg.int64)) == "iinfo(min=-9.22337e+18, max=9.22337e+18, dtype=int64)"


@pytest.mark.parametrize("fn,arg,message", [
    ("finfo", "int32", "torch.finfo\\(\\) requires a floating point input type"),
    ("finfo", "bool", "torch.finfo\\(\\) requires a floating point input type"),
    ("iinfo", "float32", "torch.iinfo\\(\\) requires an integer input type"),
    ("iinfo", "bool", "torch.bool is not supported by torch.iinfo"),
])
def test_wrong_kind_of_dtype_raises_type_error(fn, arg, message):
    with pytest.raises(TypeError, match=message):
        getattr(tg, fn)(getattr(tg, arg))


def test_not_a_dtype_raises_type_error():
    with pytest.raises(TypeError, match="must be torch.dtype, not str"):
        tg.finfo("float32")
    with pytest.raises(TypeError, match="unhashable"):
        hash(tg.finfo(tg.float32))


@pytest.mark.torch
@pytest.mark.parametrize("name", FLOATS + INTS + ["bfloat16"])
def test_limits_and_repr_match_torch(name):
    import torch
    info = "iinfo" if name in INTS else "finfo"
    mine, theirs = getattr(tg, info)(getattr(tg, name)), getattr(torch, info)(getattr(torch, name))
    assert repr(mine) == repr(theirs)
    for attr in ("bits", "min", "max", "dtype") + (("eps", "tiny", "smallest_normal", "resolution") if info == "finfo" else ()):
        assert getattr(mine, attr) == getattr(theirs, attr), attr
