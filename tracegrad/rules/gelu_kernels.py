"""GELU as array kernels: the forward of :func:`tracegrad.rules.activation.gelu` and its
first-order backward (the vjp takes it whenever it is handed plain arrays; with
``create_graph=True`` the composite form runs, which records a graph).

GELU is the widest elementwise layer of a transformer (4x the model width) and its exact
form needs erf, which NumPy lacks: :func:`tracegrad.backend.cpu_erf.erf_float32` is a
rational function evaluated in float64, ~25 passes over the data, so the layer costed
more than its matrix products. The NumPy kernels here write in place into arrays they
own (no temporaries but one). The backward takes the composite vjp's operations in its
order, so its values are the composite's bit for bit (a compiled module, which records
the composite, gets the eager gradients). On float32 CPU arrays of at least
:data:`NUMBA_MIN` elements, where Numba can be imported (the ``jit`` extra) and once the
kernel is worth loading (see :mod:`.compiled`), the erf form runs as one compiled loop
instead -- the same rational function, the same float32 roundings in the same order, so
its results are those of the NumPy kernels bit for bit (the backward's ``exp`` stays
NumPy's: a C library ``expf`` per element would not vectorise). The compiled kernels are
cached on disk like the tape's fused kernels (:mod:`tracegrad.transform.jit`), and Numba
is imported at the first load, never by ``import tracegrad``.
"""
import math
import threading
import weakref

from ..backend import cpu_erf
from . import compiled

__all__ = ["NUMBA_MIN", "gelu_backward", "gelu_forward"]

SQRT1_2 = math.sqrt(0.5)
INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
BETA = math.sqrt(2.0 / math.pi)
KAPPA = 0.044715

# Elements from which a float32 exact GELU may run compiled, once the kernel is worth
# loading (:mod:`.compiled`: when the savings below have added up to the load's cost,
# ~1 s for a process's first compiled kernel). None: never (tests of the NumPy path set it).
NUMBA_MIN = 1 << 14

# Seconds the compiled form saves per element (2^15 elements, a small GPT's 8 x 32 x 128
# MLP, on the development VM: forward ~95 us against ~480 us for NumPy's, backward ~135
# against ~315; the results are the same bit for bit).
SAVING_S = {"forward": 12e-9, "backward": 5.5e-9}


def _own(xp, x):
    """Whether the kernels serve ``x``: a non-empty float32/float64 NumPy array of at
    least one dim (arithmetic on a 0-d one gives NumPy scalars, which have no ``out=``)."""
    return (xp.name == "cpu" and isinstance(x, xp.ndarray) and x.ndim and x.size
            and x.dtype.char in "fd")


def gelu_forward(xp, x, approximate):
    """``0.5 x (1 + erf(x / sqrt 2))`` or the tanh form, for the kernels' arrays (see
    :func:`_own`); None for anything else (the caller's composite form)."""
    if not _own(xp, x):
        return None
    if approximate == "tanh":
        t, _ = _tanh_inner(xp, x)
        xp.tanh(t, out=t)
        t += 1
    else:
        fused = _compiled(x, "forward")
        if fused is not None:
            out = xp.empty(x.shape, dtype=x.dtype)
            fused(xp.ascontiguousarray(x).reshape(-1), out.reshape(-1))
            return out
        e = xp.erf(x * SQRT1_2)
        _keep_erf(x, e)
        t = e + 1
    t *= 0.5  # (before x: 0.5 x (1 + t) overflows nowhere that x does not)
    t *= x
    return t


# -- the forward's erf values, kept for the backward ------------------------------------------------
#
# The exact form's erf is most of both passes' time (~25 passes over the data in float64),
# and a training step's backward needs the very values its forward computed: the forward
# keeps them, keyed by its input array, and the backward takes them (once) instead of
# recomputing -- the same values, so the results are unchanged bit for bit. An entry lives
# until the backward takes it or the input array is freed (a weak reference; eval under
# no_grad frees each activation right after use); at most _KEPT_MAX entries of at most
# _KEPT_BYTES in all are kept, the oldest dropped first. The eager runtime refuses a
# backward through an input modified in place (its version counter), so a kept entry is
# never stale there; the composite vjp (create_graph, staged paths) recomputes.
_KEPT = {}                      # id(x) -> (weak reference to x, erf(x / sqrt 2))
_KEPT_MAX = 64
_KEPT_BYTES = 256 << 20
_KEPT_LOCK = threading.Lock()   # (threads run forwards and backwards at once)
_FREED = []                     # keys of inputs freed since: dropped under the lock (a weak
                                # reference's callback may run anywhere, even inside it)


def _keep_erf(x, e):
    key = id(x)
    try:
        ref = weakref.ref(x, lambda _, key=key: _drop(key))
    except TypeError:  # (an array type without weak references: nothing kept)
        return
    with _KEPT_LOCK:
        _drop_freed()
        _KEPT.pop(key, None)  # (a new entry goes last: the oldest are dropped first)
        _KEPT[key] = (ref, e)
        while len(_KEPT) > _KEPT_MAX or (len(_KEPT) > 1 and _kept_bytes() > _KEPT_BYTES):
            _KEPT.pop(next(iter(_KEPT)), None)


def _drop(key):
    _FREED.append(key)
    if _KEPT_LOCK.acquire(blocking=False):  # (else whoever holds it, or the next call, drops it)
        try:
            _drop_freed()
        finally:
            _KEPT_LOCK.release()


def _drop_freed():
    while _FREED:
        key = _FREED.pop()
        entry = _KEPT.get(key)
        if entry is not None and entry[0]() is None:  # (not a new input at a reused id)
            del _KEPT[key]


def _kept_bytes():
    return sum(e.nbytes for _, e in _KEPT.values())


def _kept_erf(x):
    """The erf values the forward kept for this very ``x`` (handed over: removed), or None."""
    with _KEPT_LOCK:
        _drop_freed()
        entry = _KEPT.get(id(x))
        if entry is None or entry[0]() is not x:
            return None
        del _KEPT[id(x)]
    return entry[1]


def _tanh_inner(xp, x):
    """``beta (c + kappa c^3)`` with ``c = x`` clipped to +-1e4 (tanh has saturated long
    before; keeps c^3 finite), in a new array."""
    c = xp.clip(x, -1e4, 1e4)
    t = c * KAPPA
    t *= c
    t *= c
    t += c
    t *= BETA
    return t, c


def gelu_backward(xp, g, x, approximate):
    """``g * gelu'(x)`` for the kernels' arrays (``g`` of ``x``'s shape and dtype); None
    for anything else."""
    if not (_own(xp, x) and isinstance(g, xp.ndarray) and g.dtype == x.dtype and g.shape == x.shape):
        return None
    if approximate == "tanh":
        return _tanh_backward(xp, g, x)
    # pdf part x * exp(-x^2 / 2) / sqrt(2 pi), then + cdf = 0.5 (1 + erf(x / sqrt 2))
    p = x * x
    p *= -0.5
    xp.exp(p, out=p)
    p *= x
    p *= INV_SQRT_2PI
    cdf = _kept_erf(x)
    if cdf is None:
        fused = _compiled(x, "backward")
        if fused is not None:
            fused(xp.ascontiguousarray(g).reshape(-1), xp.ascontiguousarray(x).reshape(-1), p.reshape(-1))
            return p
        cdf = xp.erf(x * SQRT1_2)
    cdf += 1
    cdf *= 0.5
    p += cdf
    p *= g
    return p


def _tanh_backward(xp, g, x):
    """``g (0.5 (1 + t) + 0.5 c (1 - t^2) beta (1 + 3 kappa c^2))``, t = tanh(inner): the
    composite vjp's operations in its order (the same roundings)."""
    c = xp.clip(x, -1e4, 1e4)
    c_sq = c * c
    t = c_sq * KAPPA
    t *= c
    t += c
    t *= BETA
    xp.tanh(t, out=t)
    right = c * 0.5
    sech2 = t * t
    xp.subtract(1, sech2, out=sech2)
    right *= sech2
    right *= BETA
    c_sq *= 3 * KAPPA
    c_sq += 1
    right *= c_sq
    t += 1
    t *= 0.5
    t += right
    t *= g
    return t


# -- the compiled float32 exact form ------------------------------------------------------------

def _compiled(x, which):
    """The compiled kernel for a float32 ``x`` large enough, once worth loading; else None
    (NumPy then)."""
    if NUMBA_MIN is None or x.dtype.char != "f" or x.size < NUMBA_MIN:
        return None
    return compiled.kernel(f"gelu_{which}", lambda: _source(which), _SIGNATURES[which],
                           saving=x.size * SAVING_S[which])


def _horner(name, coefficients, s, indent):
    """Lines of Horner's rule for the monic polynomial of cpu_erf._monic."""
    lines = [f"{indent}{name} = {s} + {coefficients[-1]!r}"]
    lines += [f"{indent}{name} = {name} * {s} + {c!r}" for c in coefficients[-2::-1]]
    return lines


def _erf_lines(x, indent):
    """Scalar lines computing ``e = float32 erf(float32(x / sqrt 2))`` exactly as
    :func:`tracegrad.backend.cpu_erf.erf_float32` does on arrays (float64 inside)."""
    return ([f"{indent}v = np.float64(np.float32({x} * np.float32({SQRT1_2!r})))",
             f"{indent}v = min(max(v, -4.0), 4.0)",  # (a nan x: the products with x give nan)
             f"{indent}s = v * v"]
            + _horner("p", cpu_erf._P32_MONIC, "s", indent) + _horner("q", cpu_erf._Q32_MONIC, "s", indent)
            + [f"{indent}e = np.float32(v * p / q * {cpu_erf._LEAD32!r})"])


def _bodies():
    return {
        # out = 0.5 x (1 + erf(x / sqrt 2)), with the NumPy kernel's roundings
        "forward": ("def gelu_forward(x, out):", "    for k in range(x.size):", "        xk = x[k]",
                    *_erf_lines("xk", " " * 8), "        out[k] = (np.float32(1.0) + e) * np.float32(0.5) * xk"),
        # pdf holds x exp(-x^2 / 2) / sqrt(2 pi) and becomes g (pdf + cdf)
        "backward": ("def gelu_backward(g, x, pdf):", "    for k in range(x.size):", *_erf_lines("x[k]", " " * 8),
                     "        pdf[k] = (pdf[k] + (np.float32(1.0) + e) * np.float32(0.5)) * g[k]"),
    }


_SIGNATURES = {"forward": "void(float32[::1], float32[::1])",
               "backward": "void(float32[::1], float32[::1], float32[::1])"}


def _source(which):
    """The module Numba compiles (and caches) for kernel ``which``, on flat C arrays."""
    return "\n".join(("import numpy as np", "import numba", "", "",
                      "@numba.njit(cache=True, error_model='numpy')") + _bodies()[which]) + "\n"
