"""``tracegrad.utils.benchmark``: time statements and compare the timings, as
``torch.utils.benchmark``.

``Timer(stmt, setup, globals=...)`` runs a statement in a loop and returns a
:class:`Measurement` (its repr prints the median and IQR); ``Compare(measurements)``
prints many as a table. PyTorch's Callgrind instruction counts, C++ timers and input
fuzzers are not here: they need PyTorch's C++ build.
"""
from .utils.common import *  # noqa: F403
from .utils.compare import *  # noqa: F403
from .utils.timer import *  # noqa: F403
