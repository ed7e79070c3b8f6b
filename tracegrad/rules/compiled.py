"""Optional Numba kernels behind some of the rule table's CPU array kernels (GELU, layer
norm): each is a loop over plain C arrays whose NumPy form makes many passes over the
data. They are compiled, or loaded from the on-disk cache, through
:mod:`tracegrad.transform.jit` (``$TRACEGRAD_CACHE_DIR``), with an explicit signature so
that a failure shows at load time; where Numba is missing or fails, the caller's NumPy
kernel runs (with a warning for a failure). Numba is imported at the first load, never
by ``import tracegrad``.

When: a kernel loads once it is worth it, as the staged paths compile a variant only once
it is hot (:data:`tracegrad.transform.jit.HOT_CALLS`). Loading is not free: a process's
first compiled kernel costs about a second (on the 2-core development VM: importing
Numba, ~0.3 s, then starting its compiler, ~0.8 s, whose registries import SciPy's
linalg), a further one ~20 ms (its machine code read from the cache). Each call that the
NumPy form serves instead adds what the caller estimates the compiled form would have
saved on it (its elements times a per-element saving measured for that kernel); a kernel
loads when its own savings pay for its load and, before Numba runs in the process, when
all kernels' savings together pay for starting it -- the ski-rental rule: a program
never pays more than about twice what the better choice in hindsight would have cost. A
short run (a test, nanoGPT's 30 tiny iterations: ~0.1 s of savings in all) never imports
Numba; a long or large one loads it within its first second or so of NumPy work. The
choice depends only on the calls made, so a program gives the same results run after
run (the GELU kernels equal the NumPy ones bit for bit anyway; layer norm's are within a
few float32 ulps).
"""
import warnings

__all__ = ["FIRST_LOAD_S", "LOAD_S", "forget", "kernel", "loaded", "operand", "pending", "sized"]

# Estimated seconds to load a process's first compiled kernel (Numba's import and the
# start of its compiler) and a further one (measured on the 2-core development VM:
# 0.6-1.5 s and 10-20 ms). 0 for both: load at the first call (tests).
FIRST_LOAD_S = 1.0
LOAD_S = 0.02

_KERNELS = {}  # name -> the Numba dispatcher, or False where unavailable
_SAVED = {}    # name -> the seconds its compiled form would have saved so far; "": all together


def kernel(name, source, signature, saving=None):
    """The compiled function ``name`` of the module ``source()`` (a callable, so that the
    text is only built when needed) for ``signature``; None where Numba cannot give it or
    where it is not worth loading yet. ``saving``: the seconds the compiled form would
    save on this call (None: load it now); the kernel loads once the calls' savings add
    up to what loading it costs (see the module's docstring)."""
    k = _KERNELS.get(name)
    if k is None:
        if saving is not None and not _worth_loading(name, saving):
            return None
        k = _KERNELS[name] = _load(name, source, signature)
    return k or None


def sized(name, size, minimum, per_element, source, signature):
    """:func:`kernel` for an operand of ``size`` elements: None below ``minimum`` (None:
    never compiled, as the tests of a NumPy path set it), else the kernel once worth
    loading, each call counting ``size * per_element`` seconds of savings."""
    if minimum is None or size < minimum:
        return None
    return kernel(name, source, signature, saving=size * per_element)


def operand(xp, a, n):
    """An optional vector operand (a weight, a bias) as a flat C array of ``n`` values, or
    a one-value float32 placeholder for None (the kernel takes a flag beside it)."""
    return xp.empty(1, dtype=xp.float32) if a is None else xp.ascontiguousarray(a.reshape(n))


def _worth_loading(name, saving):
    """Count ``saving``; whether kernel ``name`` is now worth loading: its own savings pay
    for its load (:data:`LOAD_S`) and, before Numba runs in this process, all kernels'
    savings together pay for starting it (:data:`FIRST_LOAD_S`: a cost they share)."""
    saved = _SAVED[name] = _SAVED.get(name, 0.0) + saving
    total = _SAVED[""] = _SAVED.get("", 0.0) + saving
    if saved < LOAD_S:  # (most calls: no further lookups)
        return False
    return total >= FIRST_LOAD_S or _numba_started()


def loaded():
    """The names of the kernels loaded in this process, sorted."""
    return sorted(name for name, k in _KERNELS.items() if k)


def pending():
    """The names of the kernels whose savings are being counted but which have not loaded
    (nor failed to) yet, sorted: a benchmark of a long run's steady state warms up until
    there are none."""
    return sorted(name for name in _SAVED if name and name not in _KERNELS)


def forget():
    """Forget the loaded kernels and the savings counted (tests simulate Numba's absence
    or failure, or a fresh process)."""
    _KERNELS.clear()
    _SAVED.clear()


_JIT = []  # tracegrad.transform.jit, imported at the first question (not by ``import tracegrad``)


def _numba_started():
    """Whether Numba runs in this process: one of these kernels or a staged path's loaded.
    (Asked on every call of a kernel whose own savings would pay its load: kept cheap.)"""
    if any(_KERNELS.values()):
        return True
    if not _JIT:
        from ..transform import jit
        _JIT.append(jit)
    return _JIT[0].loaded_any()


def _load(name, source, signature):
    from ..transform import jit
    if not jit.available():
        return False
    try:
        with jit.numpy_own_namespace():
            k = jit.load_kernel(source(), name)
            k.compile(signature)  # (or loads it from the cache)
        return k
    except Exception as e:  # noqa: BLE001 -- a Numba error, a cache directory that cannot be written
        warnings.warn(f"tracegrad: the compiled kernel {name} is unavailable ({type(e).__name__}: {e}); "
                      "the NumPy kernel runs instead", RuntimeWarning, stacklevel=4)
        return False
