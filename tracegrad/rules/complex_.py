"""Complex numbers: the parts of a complex value (real, imag, conj, angle), building one
from its parts (complex), and the helpers other rules use to be right for complex values.

The table follows JAX's (and HIPS autograd's) convention: cotangents pair with tangents
by ``Re(sum(ct * t))`` -- no conjugate -- so the vjp of a holomorphic rule is
``g * f'(z)``, exactly as written for real numbers. Only non-holomorphic maps write
conjugates, and the ones here are their simplest cases. A rule whose result is real for
complex operands (``complex="real"``) takes the real part of its cotangent, which is
complex only where the result was promoted to complex further on (``abs(z) + w``): that
promotion's transpose is the real part.

* ``real``: t -> Re t, whose vjp turns a real cotangent into the complex ``g + 0j``;
* ``imag``: t -> Im t, vjp ``-1j * g`` (``Re(-1j g t) = g Im t``);
* ``conj``: t -> conj t, vjp ``conj(g)``;
* ``angle``: t -> Im(conj(z) t) / |z|^2, vjp ``-1j g conj(z) / |z|^2`` (0 at z = 0, as
  PyTorch and JAX give);
* ``complex(a, b)`` = a + ib, vjps ``Re g`` and ``-Im g``.

:func:`conj_of` and :func:`real_of` return a real value unchanged (no copy, and no eqn
on a tape), so a rule written with them -- ``abs``: ``g * conj_of(sign(x))`` -- costs real
inputs nothing and reads as the formula it is.
"""
import builtins

from .broadcast import unbroadcast
from .core import KEEP, primitive

__all__ = ["real", "imag", "conj", "angle", "complex", "is_complex", "conj_of", "real_of",
           "complex_refusal"]


def complex_refusal(where, rule):
    """The error text for differentiating complex values through ``rule``, which is not
    declared right for them: refusing is better than a wrong gradient nobody sees."""
    return (f"{where}: the rule for '{rule}' is not written for complex values, so tracegrad "
            "refuses to differentiate complex numbers through it (a real-valued formula would "
            "give a wrong gradient). Differentiate a real function of real inputs, or take "
            "the real and imaginary parts (z.real, z.imag) before this operation")


def is_complex(v):
    """Whether ``v`` (an array, NumPy scalar, Tensor, tracer or Python number) holds
    complex values."""
    d = getattr(v, "npdtype", None)  # a tracer's NumPy dtype
    if d is None:
        d = getattr(v, "dtype", None)
        if d is None:
            return type(v) is builtins.complex  # (Python numbers; Meta placeholders have none)
    kind = getattr(d, "kind", None)
    if kind is None:
        return bool(getattr(d, "is_complex", False))  # a Tensor's tracegrad dtype
    return kind == "c"


def conj_of(x):
    """``conj(x)``, or ``x`` itself when it is real."""
    return conj(x) if is_complex(x) else x


def real_of(x):
    """``real(x)``, or ``x`` itself when it is real."""
    return real(x) if is_complex(x) else x


@primitive("RealBackward0", dtypes=KEEP, linear=True, complex="real")
def real(xp, x):
    return xp.real(x).copy() if is_complex(x) else x  # (NumPy's real part is a view)


@real.vjp("x")
def real_vjp(g, out, x):
    g = real_of(g)  # (the cotangent of a real result: real, see abs)
    return complex(g, zeros_like_real(g)) if is_complex(x) else g


@primitive("ImagBackward0", dtypes=KEEP, linear=True, complex="real")
def imag(xp, x):
    if not is_complex(x):
        raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")
    return xp.imag(x).copy()


@imag.vjp("x")
def imag_vjp(g, out, x):
    g = real_of(g)
    return complex(zeros_like_real(g), -g)


@primitive("ConjBackward0", dtypes=KEEP, linear=True, ufunc="conjugate", complex=True)
def conj(xp, x):
    return xp.conj(x) if is_complex(x) else x


@conj.vjp("x")
def conj_vjp(g, out, x):
    return conj_of(g)


@primitive("AngleBackward0", dtypes=KEEP, complex="real")
def angle(xp, x):
    """The argument of ``x``: for real values 0 or pi, as NumPy's ``angle`` gives (PyTorch
    differs at -0.0 and inf); a constant there, so the gradient of a real input is 0."""
    return xp.angle(x)


@angle.vjp("x", uses="x")
def angle_vjp(g, out, x):
    if not is_complex(x):
        return g * 0
    return -1j * real_of(g) * conj(x) / _abs2_safe(x)


@angle.jvp("x")
def angle_jvp(t, out, x):
    if not is_complex(x):
        return real_of(t) * 0
    return imag(conj(x) * t) / _abs2_safe(x)


def _abs2_safe(z):
    """``|z|^2``, with 1 where z = 0 (whose angle has no derivative; PyTorch and JAX give 0,
    which the ``conj(z)`` factor then makes)."""
    from .arith import where
    from .unary import abs as abs_
    a2 = abs_(z) ** 2
    return where(a2 == 0, 1.0, a2)


@primitive("ComplexBackward0", dtypes=KEEP, linear=True, complex=True)
def complex(xp, real, imag):
    if real.dtype != imag.dtype or real.dtype.kind != "f":
        raise RuntimeError(f"Expected both inputs to be Half, Float or Double tensors but got "
                           f"{_name(real.dtype)} and {_name(imag.dtype)}")
    return real + 1j * imag  # (complex64 from float32 and float16, complex128 from float64)


@complex.vjp("real")
def complex_vjp_real(g, out, real_, imag_):
    return unbroadcast(real(g), real_)


@complex.vjp("imag")
def complex_vjp_imag(g, out, real_, imag_):
    return unbroadcast(-imag(g), imag_)


def zeros_like_real(g):
    """Zeros shaped and typed like real ``g`` (the missing part of a complex cotangent)."""
    return g * 0


def _name(np_dtype):
    return {"float16": "Half", "float32": "Float", "float64": "Double"}.get(str(np_dtype), str(np_dtype))
