"""Shared test set-up: oracle tests (marked ``torch``, ``autograd``) skip when PyTorch or HIPS
autograd is missing; tests of the SciPy-kernel rules (marked ``scipy``, or walking a rule
of ``tests.rules.samples_special.SCIPY_RULES``) skip when SciPy is missing."""
import importlib.util

import pytest

HAS_TORCH = importlib.util.find_spec("torch") is not None
HAS_SCIPY = importlib.util.find_spec("scipy") is not None
HAS_AUTOGRAD = importlib.util.find_spec("autograd") is not None


def pytest_collection_modifyitems(config, items):
    if not HAS_SCIPY:
        _skip_scipy(items)
    if not HAS_AUTOGRAD:
        skip = pytest.mark.skip(reason="HIPS autograd is not installed (pip install autograd==1.9.1 for its oracle tests)")
        for item in items:
            if "autograd" in item.keywords:
                item.add_marker(skip)
    if HAS_TORCH:
        return
    skip = pytest.mark.skip(reason="PyTorch is not installed (pip install torch==2.13.0 for the oracle tests)")
    for item in items:
        if "torch" in item.keywords:
            item.add_marker(skip)


def _skip_scipy(items):
    from tests.rules.samples_scipy import SCIPY_RULES as SCIPY_LINALG_SIGNAL_STATS
    from tests.rules.samples_special import SCIPY_RULES
    SCIPY_RULES = SCIPY_RULES | SCIPY_LINALG_SIGNAL_STATS
    skip = pytest.mark.skip(reason="SciPy is not installed (pip install 'tracegrad[scipy]')")
    for item in items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        if "scipy" in item.keywords or params.get("name") in SCIPY_RULES:
            item.add_marker(skip)
