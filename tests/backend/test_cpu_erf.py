"""The CPU erf kernels against the C library's ``math.erf``: fdlibm's algorithm vectorised
(used without SciPy) within 1 ulp, and the backend's choice (SciPy's when installed) within
3 ulp in float64 and 1 in float32."""
import math

import numpy as np
import pytest

from tracegrad.backend import cpu
from tracegrad.backend.cpu_erf import erf as fdlibm_erf

_rng = np.random.default_rng(7)
_POINTS = np.concatenate([
    _rng.normal(0, 2, 20000), _rng.uniform(-7, 7, 20000), np.linspace(-6.5, 6.5, 20001),
    # the ends of fdlibm's intervals, tiny and huge values, signed zeros and infinities
    [0.0, -0.0, 1e-300, -5e-324, 2.0 ** -28, 0.84375, -0.84375, 1.25, 1 / 0.35, 6.0, -6.0,
     np.nextafter(6.0, 0), 27.0, 1e300, np.inf, -np.inf]])


def _ulps(got, want):
    tiny = np.finfo(want.dtype).tiny
    return np.abs(got.astype(np.float64) - want.astype(np.float64)) / np.spacing(
        np.maximum(np.abs(want), tiny)).astype(np.float64)


@pytest.mark.parametrize("kernel", [fdlibm_erf, cpu.erf], ids=["fdlibm", "backend"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_erf_against_the_c_library(kernel, dtype):
    x = _POINTS.astype(dtype)
    want = np.array([math.erf(float(v)) for v in x]).astype(dtype)
    got = kernel(x)
    assert got.dtype == dtype
    assert _ulps(got, want).max() <= (1.0 if kernel is fdlibm_erf or dtype == np.float32 else 3.0)
    assert (np.signbit(got) == np.signbit(want)).all()  # erf(-0.0) is -0.0


def test_without_scipy_the_backend_uses_fdlibm(monkeypatch):
    import sys
    monkeypatch.setitem(sys.modules, "scipy.special", None)  # import fails
    monkeypatch.setattr(cpu, "_erf_kernel", [])
    x = np.linspace(-3, 3, 7)
    np.testing.assert_array_equal(cpu.erf(x), fdlibm_erf(x))
    assert cpu._erf_kernel == [fdlibm_erf]


@pytest.mark.parametrize("kernel", [fdlibm_erf, cpu.erf], ids=["fdlibm", "backend"])
def test_erf_keeps_float16(kernel):
    out = kernel(np.array([0.5, 1.0], dtype=np.float16))
    assert out.dtype == np.float16
    np.testing.assert_array_equal(out, np.array([math.erf(0.5), math.erf(1.0)]).astype(np.float16))


def test_fdlibm_erf_nan_shapes_and_integer_inputs():
    assert np.isnan(fdlibm_erf(np.array([np.nan], np.float32))).all()
    out = fdlibm_erf(np.zeros((2, 0, 3)))
    assert out.shape == (2, 0, 3)
    ints = fdlibm_erf(np.array([[0, 1], [2, -3]]))
    assert ints.dtype == np.float64 and ints.shape == (2, 2)
    np.testing.assert_array_equal(ints, [[0.0, math.erf(1)], [math.erf(2), math.erf(-3)]])


def test_float32_erf_within_one_ulp_of_the_correctly_rounded_value():
    """erf_float32 on 2 million float32 numbers spread over every exponent from the
    subnormals to 4.5 (beyond, erf rounds to 1), both signs, plus the special values."""
    from tracegrad.backend.cpu_erf import erf_float32
    bits = np.random.default_rng(3).integers(0, 0x40900000, 1_000_000, dtype=np.uint32)
    x = bits.view(np.float32)
    x = np.concatenate([x, -x, np.array([0.0, -0.0, np.inf, -np.inf, 4.0, 10.0, 1e-45], np.float32)])
    want = np.array([math.erf(float(v)) for v in x[:2000]]).astype(np.float32)  # the C library's
    got = erf_float32(x)
    assert got.dtype == np.float32 and got.shape == x.shape
    assert _ulps(got[:2000], want).max() <= 1.0
    scipy_special = pytest.importorskip("scipy.special")
    rounded = scipy_special.erf(x.astype(np.float64)).astype(np.float32)  # float64 erf, rounded once
    assert _ulps(got, rounded).max() <= 1.0
    assert (np.signbit(got) == np.signbit(x)).all()
    assert np.isnan(erf_float32(np.array([np.nan], np.float32))).all()
    assert erf_float32(np.zeros((2, 0), np.float32)).shape == (2, 0)
