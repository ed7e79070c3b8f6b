"""``torch.signal``: signal-processing helpers under PyTorch's names. PyTorch puts only the
window functions here (:mod:`.windows`); the SciPy-named filters and spectral tools are
:mod:`tracegrad.scipy.signal`.
"""
from . import windows

__all__ = ["windows"]
