"""Bessel functions: the modified ones of order 0 and 1 (i0, i1 and their exponentially
scaled i0e, i1e, as in torch.special) and those of real order v (jv, yv, iv, ive, as in
scipy.special). Kernels are SciPy's (see :mod:`.gamma`), except i0, which NumPy has.

Each derivative is a recurrence in the order: J_v' = (J_{v-1} - J_{v+1}) / 2 (likewise
Y_v), I_v' = (I_{v-1} + I_{v+1}) / 2, so the second derivative needs nothing new. The
order v takes no gradient (differentiating it raises; see :func:`.gamma.no_derivative`).
"""
from .arith import where
from .broadcast import expand_to, unbroadcast
from .core import FLOAT, primitive
from .gamma import no_derivative, special
from .unary import sign


def _over(v, x):
    """v / x, with x = 0 replaced by 1 (callers select another value there)."""
    return v / where(x == 0, 1.0, x)


@primitive("I0Backward0", dtypes=FLOAT, diagonal=True)
def i0(xp, x):
    """The modified Bessel function of the first kind, order 0."""
    out = xp.i0(x)
    return out.astype(x.dtype, copy=False) if getattr(x, "ndim", None) is not None else out


@i0.vjp("x", uses="x")
def i0_vjp(g, out, x):
    return g * i1(x)


@primitive("SpecialI1Backward0", dtypes=FLOAT, diagonal=True)
def i1(xp, x):
    return special(xp, "i1", x)


@i1.vjp("x", uses="x out")
def i1_vjp(g, out, x):
    # I1' = I0 - I1 / x, which is 1/2 at 0
    return g * where(x == 0, 0.5, i0(x) - _over(out, x))


@primitive("SpecialI0EBackward0", dtypes=FLOAT, diagonal=True)
def i0e(xp, x):
    """exp(-|x|) i0(x)."""
    return special(xp, "i0e", x)


@i0e.vjp("x", uses="x out")
def i0e_vjp(g, out, x):
    return g * (i1e(x) - sign(x) * out)


@primitive("SpecialI1EBackward0", dtypes=FLOAT, diagonal=True)
def i1e(xp, x):
    """exp(-|x|) i1(x)."""
    return special(xp, "i1e", x)


@i1e.vjp("x", uses="x out")
def i1e_vjp(g, out, x):
    return g * where(x == 0, 0.5, i0e(x) - sign(x) * out - _over(out, x))


# -- real order v ---------------------------------------------------------------------------------

@primitive(dtypes=FLOAT)
def jv(xp, v, x):
    """The Bessel function of the first kind of real order v."""
    return special(xp, "jv", v, x)


@jv.vjp("v")
def jv_vjp_v(g, out, v, x):
    return no_derivative("jv", "v")


@jv.vjp("x", uses="v x")
def jv_vjp_x(g, out, v, x):
    return unbroadcast(g * (jv(v - 1, x) - jv(v + 1, x)) / 2, x)


@jv.jvp("x")
def jv_jvp_x(t, out, v, x):
    return expand_to(t * (jv(v - 1, x) - jv(v + 1, x)) / 2, out)


@primitive(dtypes=FLOAT)
def yv(xp, v, x):
    """The Bessel function of the second kind of real order v."""
    return special(xp, "yv", v, x)


@yv.vjp("v")
def yv_vjp_v(g, out, v, x):
    return no_derivative("yv", "v")


@yv.vjp("x", uses="v x")
def yv_vjp_x(g, out, v, x):
    return unbroadcast(g * (yv(v - 1, x) - yv(v + 1, x)) / 2, x)


@yv.jvp("x")
def yv_jvp_x(t, out, v, x):
    return expand_to(t * (yv(v - 1, x) - yv(v + 1, x)) / 2, out)


@primitive(dtypes=FLOAT)
def iv(xp, v, x):
    """The modified Bessel function of the first kind of real order v."""
    return special(xp, "iv", v, x)


@iv.vjp("v")
def iv_vjp_v(g, out, v, x):
    return no_derivative("iv", "v")


@iv.vjp("x", uses="v x")
def iv_vjp_x(g, out, v, x):
    return unbroadcast(g * (iv(v - 1, x) + iv(v + 1, x)) / 2, x)


@iv.jvp("x")
def iv_jvp_x(t, out, v, x):
    return expand_to(t * (iv(v - 1, x) + iv(v + 1, x)) / 2, out)


@primitive(dtypes=FLOAT)
def ive(xp, v, x):
    """exp(-|x|) iv(v, x)."""
    return special(xp, "ive", v, x)


@ive.vjp("v")
def ive_vjp_v(g, out, v, x):
    return no_derivative("ive", "v")


@ive.vjp("x", uses="v x out")
def ive_vjp_x(g, out, v, x):
    return unbroadcast(g * ((ive(v - 1, x) + ive(v + 1, x)) / 2 - sign(x) * out), x)


@ive.jvp("x")
def ive_jvp_x(t, out, v, x):
    return expand_to(t * ((ive(v - 1, x) + ive(v + 1, x)) / 2 - sign(x) * out), out)


__all__ = ["i0", "i1", "i0e", "i1e", "jv", "yv", "iv", "ive"]
