"""The modules behind :mod:`tracegrad.utils.benchmark` (PyTorch's layout, so its import paths work)."""
