"""``tracegrad.backends.mkl``: tracegrad does not call MKL itself (NumPy's BLAS may be MKL
or OpenBLAS; that is NumPy's business)."""


def is_available():
    return False
