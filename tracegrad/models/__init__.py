"""``tracegrad.models``: model definitions as in ``torchvision.models`` (ResNet-18/34/50), with
torchvision's names so that its state dicts load unchanged. No pretrained weights are bundled."""
# ruff: noqa: F401 -- re-exports
from .resnet import *
from .resnet import __all__
