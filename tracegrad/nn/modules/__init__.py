"""The layer classes (``tracegrad.nn.Linear``...), one file per family as in PyTorch; each
file lists its public names in ``__all__``."""
# ruff: noqa: F401,F403 -- re-exports
from .module import *
from .container import *
from .linear import *
from .flatten import *
from .activation import *
from .dropout import *
from .sparse import *
from .normalization import *
from .batchnorm import *
from .conv import *
from .pooling import *
from .loss import *
from .rnn import *
from .attention import *
from .transformer import *
from .upsampling import *
from .padding import *
from .activation_extra import *
from .instancenorm import *
from .pooling_extra import *
from .embedding_bag import *
from .margin_losses import *
from .lazy import *
from .adaptive import *
from .lazy_norm import *
from .parallel import *

# The classes only: without an __all__, ``from .modules import *`` in ``tracegrad.nn`` would
# also bind these submodules there (``modules/utils.py`` shadowing ``tracegrad.nn.utils``).
__all__ = [_n for _n, _v in list(globals().items())
           if not _n.startswith("_") and type(_v).__name__ != "module"]
