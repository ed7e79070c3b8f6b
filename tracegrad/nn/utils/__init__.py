"""``tracegrad.nn.utils``: gradient clipping, parameter/vector conversion, weight and spectral
normalization (hooks and parametrizations), ``parametrize``, ``prune``, conv/linear-BN
fusion, ``skip_init`` and ``stateless``."""
from . import clip_grad, convert_parameters, fusion, parametrizations, parametrize, prune, rnn, stateless
from .clip_grad import *
from .convert_parameters import *
from .fusion import *
from .init import skip_init
from .spectral_norm import remove_spectral_norm, spectral_norm
from .weight_norm import remove_weight_norm, weight_norm

__all__ = (clip_grad.__all__ + convert_parameters.__all__ + fusion.__all__
           + ["parametrizations", "parametrize", "prune", "remove_spectral_norm", "remove_weight_norm", "rnn",
              "skip_init", "spectral_norm", "stateless", "weight_norm"])
