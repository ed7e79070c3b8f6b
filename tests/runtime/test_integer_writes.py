"""Python numbers written into integer tensors: PyTorch's checked conversion, not NumPy's.

A negative int down to ``-max`` wraps into an unsigned dtype (a uint8 label table's -1 is
255, the segmentation "ignore" label); beyond the range, PyTorch's RuntimeError names the
C type. The expectations are PyTorch 2.13's (``TRACEGRAD_RUNTIME_TESTS_LIB=torch`` runs
them against it); the oracle test compares every case with torch where it is installed."""
import pytest

from ._helpers import tg

U8 = "uint8"


def _zeros(dtype=U8, n=4):
    return tg.zeros(n, dtype=getattr(tg, dtype))


def _set_int(a):
    a[1] = -1
    return a


def _set_slice(a):
    a[1:3] = -1
    return a


def _set_index(a):
    a[tg.tensor([0, 2])] = -1
    return a


def _set_mask(a):
    a[a == 0] = -2
    return a


def _fill(a):
    return a.fill_(-1)


WRAPS = [  # (what, the values PyTorch gives)
    (lambda: _set_int(_zeros()), [0, 255, 0, 0]),
    (lambda: _set_slice(_zeros()), [0, 255, 255, 0]),
    (lambda: _set_index(_zeros()), [255, 0, 255, 0]),
    (lambda: _set_mask(_zeros()), [254, 254, 254, 254]),
    (lambda: _fill(_zeros()), [255, 255, 255, 255]),
    (lambda: tg.full((2,), -1, dtype=tg.uint8), [255, 255]),
    (lambda: tg.tensor([-1, 3], dtype=tg.uint8), [255, 3]),
    (lambda: tg.tensor([[-200], [7]], dtype=tg.uint8), [[56], [7]]),
    (lambda: _zeros().masked_fill(tg.tensor([True, False, False, False]), -1), [255, 0, 0, 0]),
    (lambda: _zeros().index_fill(0, tg.tensor([1]), -1), [0, 255, 0, 0]),
    (lambda: tg.where(_zeros() > 0, _zeros(), -1), [255, 255, 255, 255]),
    (lambda: tg.tensor([0, 5, 200], dtype=tg.uint8).clamp(min=-1), [255, 255, 255]),
    (lambda: tg.tensor([0, 5, 200], dtype=tg.uint8).clamp(min=3, max=-1), [3, 5, 200]),
    (lambda: tg.tensor([0, 5, 200], dtype=tg.uint8).clamp(min=-255), [1, 5, 200]),
]

REFUSED = [  # (what, the C type PyTorch's message names)
    (lambda: _zeros().__setitem__(1, 256), "uint8_t"),
    (lambda: _zeros().__setitem__(1, -256), "uint8_t"),
    (lambda: _zeros().__setitem__(1, -1.5), "uint8_t"),
    (lambda: _zeros().fill_(300), "uint8_t"),
    (lambda: _zeros("int8").fill_(200), "int8_t"),
    (lambda: _zeros("int8").__setitem__(0, -129), "int8_t"),
    (lambda: _zeros("int32").__setitem__(0, 2 ** 32 - 1), "int"),
    (lambda: tg.full((1,), 256, dtype=tg.uint8), "uint8_t"),
    (lambda: tg.tensor([300, 1], dtype=tg.uint8), "uint8"),
    (lambda: tg.tensor([-300], dtype=tg.uint8), "uint8"),
    (lambda: tg.tensor([200], dtype=tg.int8), "int8"),
    (lambda: _zeros().index_fill(0, tg.tensor([0]), 256), "uint8_t"),
    (lambda: tg.tensor([0, 5], dtype=tg.uint8).clamp(max=300), "uint8_t"),
    (lambda: tg.tensor([0, 5], dtype=tg.int8).clamp(min=-200), "int8_t"),
]


@pytest.mark.parametrize("make, expected", WRAPS, ids=range(len(WRAPS)))
def test_a_negative_int_wraps_into_an_unsigned_dtype(make, expected):
    got = make()
    assert got.dtype == tg.uint8
    assert got.tolist() == expected


@pytest.mark.parametrize("make, ctype", REFUSED, ids=range(len(REFUSED)))
def test_a_number_beyond_the_range_is_refused_naming_the_type(make, ctype):
    with pytest.raises(RuntimeError, match=rf"value cannot be converted to type {ctype} without overflow"):
        make()


def test_a_refused_write_changes_nothing():
    a = tg.tensor([1, 2, 3], dtype=tg.uint8)
    version = a._version
    with pytest.raises(RuntimeError):
        a[0:2] = 256
    assert a.tolist() == [1, 2, 3] and a._version == version


def test_an_int_beyond_int64_is_refused_as_in_pytorch():
    with pytest.raises(ValueError, match="Overflow when unpacking long long"):
        _zeros("int64").__setitem__(0, 2 ** 63)
    assert _zeros("int64").__setitem__(0, -2 ** 63) is None


def test_values_in_range_and_other_dtypes_are_unchanged():
    a = _zeros("int8")
    a[0] = -128
    b = tg.zeros(2, dtype=tg.bool)
    b[0] = 5
    c = tg.zeros(2, dtype=tg.int32)
    c[0] = -3.9
    assert a.tolist() == [-128, 0, 0, 0] and b.tolist() == [True, False] and c.tolist() == [-3, 0]
    assert (tg.zeros(2, dtype=tg.uint8) - 1).tolist() == [255, 255]  # (arithmetic wrapped already)
