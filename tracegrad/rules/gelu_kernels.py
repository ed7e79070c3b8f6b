"""GELU as array kernels: the forward of :func:`tracegrad.rules.activation.gelu`, its
first-order backward (the vjp takes it whenever it is handed plain arrays; with
``create_graph=True`` the composite form runs, which records a graph) and the normal
distribution function that the composite form uses (:func:`cdf`, the kernel of
:func:`tracegrad.rules.activation.gelu_cdf`).

float32 on the CPU computes the exact form as PyTorch's CPU kernel does: PyTorch's float32
GELU (oneDNN's ``gelu_erf``, and the vectorised ``erf`` of ATen's GELU) takes erf from
Abramowitz & Stegun 7.1.26, ``erf(z) = sign(z) (1 - r(t) t exp(-z^2))``, ``t = 1 / (1 +
p |z|)`` with a polynomial ``r`` of degree 4 -- within 1.5e-7 of erf, so that its GELU is
up to 3.7e-7 off the exact value (its ``torch.erf`` and its float64 GELU are accurate).
The kernels here evaluate the same formula in float32 with NumPy, in place: 19 passes
over the data and one ``exp`` (which takes as long as ~12 of them), where an accurate
erf took ~25 passes in float64 (:func:`tracegrad.backend.cpu_erf.erf_float32`), and the
backward, from the values the forward kept, 7 passes. On float32 arrays of at least
:data:`NUMBA_MIN` elements, where Numba can be imported (the ``jit`` extra) and once the
kernel is worth loading (see :mod:`.compiled`), all but the exp runs as one compiled loop
instead (the exp stays NumPy's: a C library ``expf`` per element would not vectorise and
rounds differently) -- the same float32 roundings in the same order, so its results are
those of the NumPy kernels bit for bit. Measured on 400,000 points over
[-10, 10] plus infinities, nan, +-0, denormals and huge values, against torch 2.13's CPU
GELU (tests/rules/test_gelu_float32.py): the forward within 4.8e-7 of torch's, mean
2.9e-8 (the accurate form's float32 values: 4.8e-7, mean 4.1e-8), with torch's signs of
zero; the backward within 2.4e-7 of torch's GeluBackward, mean 1.5e-8 (the accurate
form's: 2.4e-7, mean 2.3e-8); and within 1.3e-7 of the formula evaluated in float64.
Everything else -- float64, float16, CuPy (whose GELU, as torch's CUDA one, uses an
accurate erf) -- computes the exact form with an accurate erf; :func:`tracegrad.erf` is
unchanged (accurate, 1 ulp in float32).

The backward takes the composite vjp's operations in its order, so its values are the
composite's bit for bit (a compiled module, which records the composite, gets the eager
gradients).
"""
import math
import threading
import weakref

from . import compiled

__all__ = ["NUMBA_MIN", "cdf", "gelu_backward", "gelu_forward"]

SQRT1_2 = math.sqrt(0.5)
INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
BETA = math.sqrt(2.0 / math.pi)
KAPPA = 0.044715

# Abramowitz & Stegun 7.1.26: erf(z) = 1 - (c0 t + c1 t^2 + ... + c4 t^5) exp(-z^2) for
# z >= 0, t = 1 / (1 + P z). With z = |x| / sqrt 2, Phi(-|x|) = 0.5 (1 - erf(z)) is
# exp(-x^2 / 2) times that polynomial over 2, in t = 1 / (1 + K |x|), K = P / sqrt 2.
# It is evaluated in s = 1 - t: near x = 0, where t is near 1, the terms in t cancel to
# ~3 float32 ulps of the cdf (2.3e-7: a backward 3.3e-7 from torch's), those in s to 1 ulp
# (the backward within 2.4e-7 of torch's, as the accurate form's). s is computed as
# 1 / (1 + 1 / (K |x|)), which gives 0 and 1 at |x| = 0 and inf (|x| / (|x| + 1 / K) gives
# inf / inf = nan), and scaled, sigma = KAPPA_S s, so that the polynomial's leading
# coefficient is -1: Phi(-|x|) = -exp(-x^2 / 2) (sigma^5 + _Q[4] sigma^4 + ... + _Q[0]).
_AS_P = 0.3275911
_AS_C = (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)
_K = _AS_P * SQRT1_2
_B = tuple(0.5 * (-1) ** j * sum(c * math.comb(i + 1, j) for i, c in enumerate(_AS_C) if i + 1 >= j)
           for j in range(len(_AS_C) + 1))  # Phi(-|x|) / exp(-x^2 / 2) in s, lowest first
_KAPPA_S = (-_B[-1]) ** 0.2
_Q = tuple(-b / _KAPPA_S ** j for j, b in enumerate(_B[:-1]))
_SIGN_BIT = -0x80000000  # (as an int32)

# Elements from which the float32 form may run compiled, once the kernel is worth loading
# (:mod:`.compiled`: when the savings below have added up to the load's cost, ~1 s for a
# process's first compiled kernel). None: never (tests of the NumPy path set it).
NUMBA_MIN = 1 << 14

# Seconds the compiled form saves per element (2^15 elements, a small GPT's 8 x 32 x 128
# MLP, on the development VM: forward ~80 us against ~130 us for NumPy's -- its exp, ~45
# us, is NumPy's in both --, backward from the kept values ~15 us against ~30 us; the
# results are the same bit for bit).
SAVING_S = {"forward": 1.6e-9, "backward": 0.5e-9}


def _own(xp, x):
    """Whether the float64 and tanh kernels serve ``x``: a non-empty float32/float64 NumPy
    array of at least one dim (arithmetic on a 0-d one gives NumPy scalars, which have no
    ``out=``)."""
    return (xp.name == "cpu" and isinstance(x, xp.ndarray) and x.ndim and x.size
            and x.dtype.char in "fd")


def _float32(xp, x):
    """Whether ``x`` takes PyTorch's float32 form: a float32 NumPy array or scalar (0-d and
    empty ones too, so that every shape gets the same formula) of the machine's byte order
    (the sign is read from its bits)."""
    return xp.name == "cpu" and isinstance(x, (xp.ndarray, xp.float32)) and x.dtype == xp.float32


_CONSTANTS = {}  # xp -> the constants above as its float32 scalars (a Python float costs a
                 # conversion per call: ~0.3 us of each of 19 passes over 32K elements)


def _constants(xp):
    c = _CONSTANTS.get(xp)
    if c is None:
        f = xp.float32
        c = _CONSTANTS[xp] = (f(1.0 / _K), f(_KAPPA_S), tuple(f(q) for q in _Q), f(-0.5), f(0.5), f(1.0),
                              xp.int32(_SIGN_BIT))
    return c


def _as_s_parts(xp, x):
    """For a float32 ``x``: ``(a, m, h, e)`` with ``a = |x|``, ``m = -x / 2``, ``h = 0.5 -
    Phi(-|x|)`` by Abramowitz & Stegun (see the module's docstring) and ``e = exp(-x^2 /
    2)``, each a new array of at least one dim (a 0-d ``x`` is taken as one element).
    ``e`` is ``exp((-0.5 * x) * x)``, the composite vjp's pdf factor bit for bit."""
    if x.ndim == 0:
        x = xp.asarray(x).reshape(1)
    inv_k, kappa, (q0, q1, q2, q3, q4), minus_half, half, one, _ = _constants(xp)
    a = xp.abs(x)
    # (x = 0 or denormal: 1 / (K|x|) is inf, giving sigma = 0; |x| > 1.8e19: x^2 is inf,
    # giving e = 0 -- as torch, silently)
    with xp.errstate(divide="ignore", over="ignore"):
        sigma = xp.divide(inv_k, a)
        xp.add(sigma, one, out=sigma)
        xp.divide(kappa, sigma, out=sigma)
        h = xp.add(sigma, q4)
        for q in (q3, q2, q1, q0):
            xp.multiply(h, sigma, out=h)
            xp.add(h, q, out=h)
        m = xp.multiply(x, minus_half, out=sigma)  # (sigma's memory: a fresh array costs more)
        e = xp.multiply(m, x)
        xp.exp(e, out=e)
    xp.multiply(h, e, out=h)
    xp.add(h, half, out=h)  # 0.5 - Phi(-|x|)
    return a, m, h, e


def _cdf_from(xp, x, h):
    """Phi(x) = 0.5 + sign(x) h, in ``h`` (its sign bit flipped where x's is set: NumPy's
    copysign and where take several times as long)."""
    _, _, _, _, half, _, sign_bit = _constants(xp)
    bits = h.view(xp.int32)
    xp.bitwise_xor(bits, xp.bitwise_and(xp.asarray(x).reshape(h.shape).view(xp.int32), sign_bit), out=bits)
    xp.add(h, half, out=h)
    return h


def cdf(xp, x):
    """The standard normal distribution function Phi(x) = 0.5 (1 + erf(x / sqrt 2)) that
    GELU uses: PyTorch's float32 form (see the module's docstring) for float32 on the CPU,
    else with an accurate erf. The kernel of ``gelu_cdf``, which the composite vjp calls:
    equal bit for bit to what :func:`gelu_backward` computes."""
    if _float32(xp, x):
        _, _, h, _ = _as_s_parts(xp, x)
        h = _cdf_from(xp, x, h)
        return h if x.ndim else h.reshape(())
    return 0.5 * (1 + xp.erf(x * SQRT1_2))


def gelu_forward(xp, x, approximate):
    """``0.5 x (1 + erf(x / sqrt 2))`` or the tanh form, for the kernels' arrays (see
    :func:`_own`, :func:`_float32`); None for anything else (the caller's composite form)."""
    if approximate != "tanh" and _float32(xp, x):
        # x Phi(x) = 0.5 x + |x| (0.5 - Phi(-|x|)): no select on the sign, and torch's
        # signs of zero (+0 for -0 and for large negative x, as its 0.5 x (1 + erf) with a
        # fused multiply-add gives)
        fused = _compiled(x, "forward")
        if fused is not None:
            return _compiled_forward(xp, x, fused)
        a, m, h, e = _as_s_parts(xp, x)
        _keep(x, (h, e))
        xp.multiply(a, h, out=a)
        xp.subtract(a, m, out=a)
        return a if x.ndim else a.reshape(())
    if not _own(xp, x):
        return None
    if approximate == "tanh":
        t, _ = _tanh_inner(xp, x)
        xp.tanh(t, out=t)
        t += 1
    else:
        e = xp.erf(x * SQRT1_2)
        _keep(x, (e,))
        t = e + 1
    t *= 0.5  # (before x: 0.5 x (1 + t) overflows nowhere that x does not)
    t *= x
    return t


# -- the forward's values, kept for the backward ---------------------------------------------------
#
# The cdf is most of both passes' time (float32: 16 passes and an exp; float64: erf), and
# a training step's backward needs the very values its forward computed: the forward
# keeps them, keyed by its input array, and the backward takes them (once) instead of
# recomputing -- the same values, so the results are unchanged bit for bit. An entry lives
# until the backward takes it or the input array is freed (a weak reference; eval under
# no_grad frees each activation right after use); at most _KEPT_MAX entries of at most
# _KEPT_BYTES in all are kept, the oldest dropped first. The eager runtime refuses a
# backward through an input modified in place (its version counter), so a kept entry is
# never stale there; the composite vjp (create_graph, staged paths) recomputes.
_KEPT = {}                      # id(x) -> (weak reference to x, (h, e) or (erf(x / sqrt 2),))
_KEPT_MAX = 64
_KEPT_BYTES = 256 << 20
_KEPT_LOCK = threading.Lock()   # (threads run forwards and backwards at once)
_FREED = []                     # keys of inputs freed since: dropped under the lock (a weak
                                # reference's callback may run anywhere, even inside it)


def _keep(x, values):
    key = id(x)
    try:
        ref = weakref.ref(x, lambda _, key=key: _drop(key))
    except TypeError:  # (an array type without weak references: nothing kept)
        return
    with _KEPT_LOCK:
        _drop_freed()
        _KEPT.pop(key, None)  # (a new entry goes last: the oldest are dropped first)
        _KEPT[key] = (ref, values)
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
    return sum(v.nbytes for _, values in _KEPT.values() for v in values)


def _kept(x):
    """The values the forward kept for this very ``x`` (handed over: removed), or None."""
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
    # (cdf + x pdf) g, pdf = exp(-0.5 x x) / sqrt(2 pi): the composite vjp's roundings
    kept = _kept(x)
    if _float32(xp, x):
        h, e = kept if kept is not None else _as_s_parts(xp, x)[2:]
        fused = _compiled(x, "backward")
        if fused is not None:
            out = xp.empty(x.size, dtype=x.dtype)
            fused(*(xp.ascontiguousarray(a).reshape(-1) for a in (g, x, h, e)), out)
            return out.reshape(x.shape)
        phi = _cdf_from(xp, x, h)
        p = x * e
    else:
        p = x * x
        p *= -0.5
        xp.exp(p, out=p)
        p *= x
        phi = kept[0] if kept is not None else xp.erf(x * SQRT1_2)
        phi += 1
        phi *= 0.5
    p *= INV_SQRT_2PI
    p += phi
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


# -- the compiled float32 form ------------------------------------------------------------------

def _compiled(x, which):
    """The compiled kernel for a float32 ``x`` large enough, once worth loading; else None
    (NumPy then)."""
    return compiled.sized(f"gelu_{which}", x.size, NUMBA_MIN, SAVING_S[which], lambda: _source(which),
                          _SIGNATURES[which])


def _exp_half_square(xp, flat):
    """``exp((-0.5 x) x)`` of a flat float32 array, as :func:`_as_s_parts` computes it."""
    e = xp.multiply(flat, _constants(xp)[3])
    with xp.errstate(over="ignore"):
        xp.multiply(e, flat, out=e)
    xp.exp(e, out=e)
    return e


def _compiled_forward(xp, x, fused):
    """The forward through the compiled loop: NumPy's exp (a C library expf per element would
    not vectorise, and would round differently), then one loop for the rest."""
    flat = xp.ascontiguousarray(x).reshape(-1)
    e = _exp_half_square(xp, flat)
    out, h = xp.empty_like(flat), xp.empty_like(flat)
    fused(flat, e, h, out)
    _keep(x, (h.reshape(x.shape), e.reshape(x.shape)))
    return out.reshape(x.shape)


def _f32(value):
    return f"np.float32({float(value)!r})"


def _bodies():
    horner = [f"        p = sigma + {_f32(_Q[4])}"] + [f"        p = p * sigma + {_f32(q)}" for q in _Q[3::-1]]
    return {
        # out = |x| h - (-0.5 x), h = 0.5 - Phi(-|x|): _as_s_parts's roundings, in its order
        "forward": ("def gelu_forward(x, e, h, out):", "    for k in range(x.size):", "        xk = x[k]",
                    "        a = abs(xk)",
                    f"        sigma = {_f32(_KAPPA_S)} / ({_f32(1.0)} + {_f32(1.0 / _K)} / a)",
                    *horner,
                    f"        hk = p * e[k] + {_f32(0.5)}",
                    "        h[k] = hk",
                    f"        out[k] = a * hk - xk * {_f32(-0.5)}"),
        # g (Phi + x e / sqrt(2 pi)), Phi = 0.5 + sign(x) h: gelu_backward's roundings
        "backward": ("def gelu_backward(g, x, h, e, out):", "    for k in range(x.size):", "        xk = x[k]",
                     "        hk = -h[k] if math.copysign(1.0, xk) < 0 else h[k]",
                     f"        out[k] = (xk * e[k] * {_f32(INV_SQRT_2PI)} + (hk + {_f32(0.5)})) * g[k]"),
    }


_SIGNATURES = {"forward": "void(float32[::1], float32[::1], float32[::1], float32[::1])",
               "backward": "void(float32[::1], float32[::1], float32[::1], float32[::1], float32[::1])"}


def _source(which):
    """The module Numba compiles (and caches) for kernel ``which``, on flat C arrays."""
    return "\n".join(("import math", "import numpy as np", "import numba", "", "",
                      "@numba.njit(cache=True, error_model='numpy')") + _bodies()[which]) + "\n"
