"""The oracle tests compare validation errors with PyTorch's: PyTorch's validation must be
on. ``torch.compile`` (which other test files call) turns it off process-wide, so each
test here turns it on again, and puts the setting back after."""
import sys

import pytest


@pytest.fixture(autouse=True)
def _torch_validates_distributions():
    torch = sys.modules.get("torch")
    if torch is None:
        yield
        return
    from torch.distributions import Distribution
    before = Distribution._validate_args
    Distribution.set_default_validate_args(True)
    try:
        yield
    finally:
        Distribution.set_default_validate_args(before)
