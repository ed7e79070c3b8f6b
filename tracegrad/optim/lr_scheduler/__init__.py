"""``tracegrad.optim.lr_scheduler``: learning-rate schedulers, as in ``torch.optim.lr_scheduler``.

Each ``step()`` writes new rates into the optimizer's groups. The formulas are PyTorch's
recursive ("chainable") ones, evaluated in the same order, so the rates agree with
PyTorch's to the last bit over any number of steps; ``step(epoch)`` (deprecated) uses the
closed forms, as there.
"""
# ruff: noqa: F401 -- this package is a public namespace: its imports are re-exports
from ._base import EPOCH_DEPRECATION_WARNING, LRScheduler, _LRScheduler
from ._composite import ChainedScheduler, SequentialLR
from ._cyclic import CosineAnnealingWarmRestarts, CyclicLR, OneCycleLR
from ._plateau import ReduceLROnPlateau
from ._schedules import (ConstantLR, CosineAnnealingLR, ExponentialLR, LambdaLR, LinearLR, MultiplicativeLR,
                         MultiStepLR, PolynomialLR, StepLR)

__all__ = ["LambdaLR", "MultiplicativeLR", "StepLR", "MultiStepLR", "ConstantLR", "LinearLR", "ExponentialLR",
           "SequentialLR", "CosineAnnealingLR", "ChainedScheduler", "ReduceLROnPlateau", "CyclicLR",
           "CosineAnnealingWarmRestarts", "OneCycleLR", "PolynomialLR", "LRScheduler"]
