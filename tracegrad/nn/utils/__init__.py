"""``tracegrad.nn.utils``: gradient clipping and parameter/vector conversion."""
from . import clip_grad, convert_parameters
from . import rnn  # noqa: F401  (torch.nn.utils.rnn: reached as a submodule)
from .clip_grad import *
from .convert_parameters import *

__all__ = clip_grad.__all__ + convert_parameters.__all__
