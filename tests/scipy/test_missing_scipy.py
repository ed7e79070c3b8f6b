"""Without SciPy, the rules whose kernels are SciPy's raise an ImportError that names the
extra to install, when they first run (tracegrad itself imports without SciPy)."""
import sys

import numpy as np
import pytest

import tracegrad as tg
import tracegrad.scipy  # noqa: F401 -- (not imported by tracegrad itself)

EXTRA = r"pip install 'tracegrad\[scipy\]'"


@pytest.fixture
def no_scipy(monkeypatch):
    for name in ("scipy", "scipy.linalg", "scipy.signal", "scipy.integrate", "scipy.special"):
        monkeypatch.setitem(sys.modules, name, None)  # an import of it fails


def test_convolve(no_scipy):
    with pytest.raises(ImportError, match=r"convolve is SciPy's \(scipy.signal\).*" + EXTRA):
        tg.scipy.signal.convolve(np.ones(3), np.ones(2))


def test_odeint(no_scipy):
    with pytest.raises(ImportError, match=r"odeint is SciPy's \(scipy.integrate\).*" + EXTRA):
        tg.scipy.integrate.odeint(lambda y, t: -y, np.ones(2), np.linspace(0, 1, 3))


def test_linalg(no_scipy):
    with pytest.raises(ImportError, match=r"SciPy's \(scipy.linalg\).*" + EXTRA):
        tg.scipy.linalg.sqrtm(np.eye(2) * 4.0)


def test_special_function_kernel(no_scipy):
    from tracegrad.rules.gamma import scipy_kernel
    from tracegrad.backend import cpu
    with pytest.raises(ImportError, match=r"gammainc is SciPy's \(scipy.special\).*" + EXTRA):
        scipy_kernel(cpu, "gammainc")


def test_stats_sampler(no_scipy, monkeypatch):
    monkeypatch.setitem(sys.modules, "scipy.stats", None)
    with pytest.raises(ImportError, match=r"norm.rvs is SciPy's \(scipy.stats\).*" + EXTRA):
        tg.scipy.stats.norm.rvs(size=3)
