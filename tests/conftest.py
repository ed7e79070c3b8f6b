"""Shared test set-up: oracle tests (marked ``torch``) skip when PyTorch is missing."""
import importlib.util

import pytest

HAS_TORCH = importlib.util.find_spec("torch") is not None


def pytest_collection_modifyitems(config, items):
    if HAS_TORCH:
        return
    skip = pytest.mark.skip(reason="PyTorch is not installed (pip install torch==2.13.0 for the oracle tests)")
    for item in items:
        if "torch" in item.keywords:
            item.add_marker(skip)
