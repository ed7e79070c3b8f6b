"""``tracegrad.backends.cpu``: the CPU's vector capability, as PyTorch names it."""


def get_cpu_capability():
    """tracegrad runs NumPy's kernels, which choose their own SIMD level at run time."""
    return "DEFAULT"
