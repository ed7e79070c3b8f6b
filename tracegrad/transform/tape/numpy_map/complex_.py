"""NumPy's complex-number functions on tracers: real, imag, conj, angle, and the dtype
questions (iscomplexobj, isrealobj, iscomplex, isreal), recorded as the rules of
:mod:`tracegrad.rules.complex_`. The parts of a real value are the value itself and zeros,
as in NumPy, and record nothing."""
import numpy as np

from .base import FUNCTIONS, P, constant, npdtype, register, xp_of


def _is_complex(x):
    return npdtype(x).kind == "c"


@register(np.real)
def real(val):
    return P.real(val) if _is_complex(val) else val


@register(np.imag)
def imag(val):
    if _is_complex(val):
        return P.imag(val)
    return constant(val, xp_of(val).zeros(val.shape, dtype=npdtype(val)))


@register(np.angle)
def angle(z, deg=False):
    a = P.angle(z)
    return P.mul(a, 180 / np.pi) if deg else a


@register(np.iscomplexobj)
def iscomplexobj(x):
    return _is_complex(x)


@register(np.isrealobj)
def isrealobj(x):
    return not _is_complex(x)


@register(np.iscomplex)
def iscomplex(x):
    return P.ne(P.imag(x), 0) if _is_complex(x) else constant(x, xp_of(x).zeros(x.shape, dtype=bool))


@register(np.isreal)
def isreal(x):
    return P.eq(P.imag(x), 0) if _is_complex(x) else constant(x, xp_of(x).ones(x.shape, dtype=bool))


@register(np.real_if_close)
def real_if_close(a, tol=100):
    """The real part when every imaginary part is within ``tol`` machine epsilons of 0 (a
    decision on the traced values, so the tape keeps it as a guard), else ``a``."""
    if not _is_complex(a):
        return a
    eps = np.finfo(npdtype(a)).eps * tol if tol > 1 else tol
    return P.real(a) if bool(P.all(P.le(P.abs(P.imag(a)), eps))) else a


__all__ = ["real", "imag", "angle", "iscomplexobj", "isrealobj", "iscomplex", "isreal", "real_if_close",
           "FUNCTIONS"]
