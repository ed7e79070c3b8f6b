"""``tracegrad.nn.functional`` (``F``): the stateless forms of the layers and losses."""
# ruff: noqa: F401,F403 -- re-exports
from ...ops.activation import FUNCTIONAL as _ACTIVATIONS
from .conv import *
from .norm import *
from .loss import *
from .misc import *
from .attention import *
from .mha import *
from .mha import _canonical_mask, _in_projection, _in_projection_packed, _mha_shape_check, _none_or_dtype

globals().update(_ACTIVATIONS)
from .sampling import *
from .pooling import *
from .feature_norm import *
from .activation_extra import *
from .im2col import *
from .embedding_bag import *
from .margin_losses import *
from .grid_sample import *
from .ctc import *
from .fractional_pool import *
from .conv_tbc import *
