"""Optional Numba kernels behind some of the rule table's CPU array kernels (GELU, layer
norm): each is a loop over plain C arrays whose NumPy form makes many passes over the
data. They are compiled, or loaded from the on-disk cache, through
:mod:`tracegrad.transform.jit` (``$TRACEGRAD_CACHE_DIR``), with an explicit signature so
that a failure shows at load time; where Numba is missing or fails, the caller's NumPy
kernel runs (with a warning for a failure). Numba is imported at the first load, never
by ``import tracegrad``.

When: a kernel loads once it is worth it, as the staged paths compile a variant only once
it is hot (:data:`tracegrad.transform.jit.HOT_CALLS`). Loading is not free: a process's
first compiled kernel costs about a second (importing Numba, ~0.3 s, and starting its
compiler, ~0.6 s, on the 2-core development VM), a further one ~20 ms (its machine code
read from the cache). Each call that the NumPy form serves instead adds what the caller
estimates the compiled form would have saved on it (its elements times a per-element
saving measured for that kernel); the kernel loads when these add up to the load's cost
-- the ski-rental rule: a program never pays more than twice what the better choice in
hindsight would have cost. A short run (a test, a 30-iteration nanoGPT) never imports
Numba; a long or large one loads it within its first second or so of NumPy work. The
choice depends only on the calls made, so a program gives the same results run after
run (the GELU kernels equal the NumPy ones bit for bit anyway; layer norm's are within a
few float32 ulps).
"""
import warnings

__all__ = ["FIRST_LOAD_S", "LOAD_S", "forget", "kernel"]

# Estimated seconds to load a process's first compiled kernel (Numba's import and the
# start of its compiler) and a further one (measured on the 2-core development VM:
# 0.6-1.5 s and 10-20 ms). 0 for both: load at the first call (tests).
FIRST_LOAD_S = 1.0
LOAD_S = 0.02

_KERNELS = {}  # name -> the Numba dispatcher, or False where unavailable
_SAVED = {}    # name -> the seconds its compiled form would have saved so far (not loaded yet)


def kernel(name, source, signature, saving=None):
    """The compiled function ``name`` of the module ``source()`` (a callable, so that the
    text is only built when needed) for ``signature``; None where Numba cannot give it or
    where it is not worth loading yet. ``saving``: the seconds the compiled form would
    save on this call (None: load it now); the kernel loads once the calls' savings add
    up to what loading it costs (see the module's docstring)."""
    k = _KERNELS.get(name)
    if k is None:
        if saving is not None:
            saved = _SAVED.get(name, 0.0) + saving
            if saved < min(LOAD_S, FIRST_LOAD_S) or saved < _load_cost():  # (most calls: the first test)
                _SAVED[name] = saved
                return None
        _SAVED.pop(name, None)
        k = _KERNELS[name] = _load(name, source, signature)
    return k or None


def forget():
    """Forget the loaded kernels and the savings counted (tests simulate Numba's absence
    or failure, or a fresh process)."""
    _KERNELS.clear()
    _SAVED.clear()


def _load_cost():
    """What loading one more kernel costs: less once Numba runs in this process (one of
    these kernels or a staged path's loaded)."""
    if any(_KERNELS.values()):
        return LOAD_S
    from ..transform import jit
    return LOAD_S if jit.loaded_any() else FIRST_LOAD_S


def _load(name, source, signature):
    from ..transform import jit
    if not jit.available():
        return False
    try:
        k = jit.load_kernel(source(), name)
        k.compile(signature)  # (or loads it from the cache)
        return k
    except Exception as e:  # noqa: BLE001 -- a Numba error, a cache directory that cannot be written
        warnings.warn(f"tracegrad: the compiled kernel {name} is unavailable ({type(e).__name__}: {e}); "
                      "the NumPy kernel runs instead", RuntimeWarning, stacklevel=4)
        return False
