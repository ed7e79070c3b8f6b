"""SciPy's modules for the rules whose kernels are SciPy's, imported on first use.

SciPy is optional (the ``scipy`` extra): tracegrad imports without it, and a rule that
needs it says so when it first runs, naming the extra, rather than failing deep inside."""
import importlib

__all__ = ["scipy_module"]


def scipy_module(name, what):
    """The module ``name`` (``"scipy.linalg"``...), or an ImportError naming ``what``
    needs it and how to install it."""
    try:
        return importlib.import_module(name)
    except ImportError:
        raise ImportError(f"the kernel of {what} is SciPy's ({name}), which cannot be imported; install "
                          "SciPy (pip install scipy, or tracegrad's extra: pip install 'tracegrad[scipy]')") from None
