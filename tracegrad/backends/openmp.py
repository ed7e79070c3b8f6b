"""``tracegrad.backends.openmp``: tracegrad has no OpenMP kernels of its own."""


def is_available():
    return False
