"""``tracegrad.nn.utils``: gradient clipping and parameter/vector conversion."""
from . import clip_grad, convert_parameters
from .clip_grad import *
from .convert_parameters import *

__all__ = clip_grad.__all__ + convert_parameters.__all__
