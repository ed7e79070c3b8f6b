"""SciPy's API over tracegrad's rule table (as ``jax.scipy`` is over JAX's): functions with
``scipy``'s names and signatures that work on NumPy arrays, tape tracers and eager
Tensors alike, so their derivatives are known: :mod:`.special`, :mod:`.stats`,
:mod:`.linalg` and :mod:`.signal`. Importing this package does not import SciPy; the
kernels that need it (gammaln, digamma, erfinv, Bessel functions, sqrtm, convolve...)
import it when they first run.
"""
from . import special  # noqa: F401
from . import linalg, signal, stats  # noqa: F401
from . import integrate  # noqa: F401

__all__ = ["special", "linalg", "signal", "stats", "integrate"]
