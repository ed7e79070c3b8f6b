"""Seed tests: make sure no test leaks a disabled grad mode into the next one."""
import pytest

import tracegrad


@pytest.fixture(autouse=True)
def _restore_grad_mode():
    yield
    tracegrad.set_grad_enabled(True)
