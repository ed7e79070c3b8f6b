"""PyTorch's signatures for the elementwise and special-function rules of
:mod:`tracegrad.rules.special`, :mod:`~tracegrad.rules.gamma` and
:mod:`~tracegrad.rules.bessel` (``torch.asinh``, ``torch.hypot``, ``torch.lgamma``,
``torch.polygamma``, ``torch.xlogy``...), the NaN-aware ``nanmean`` and ``nan_to_num``,
and their Tensor methods. ``torch.special`` is :mod:`tracegrad.special`, built on these.

Where a derivative is undefined (ties of fmax/fmin, hypot at the origin, xlogy at
x == 0) the conventions are those documented in :mod:`tracegrad.rules.special`.
"""
import math

from ..backend import dtypes as _dt
from ..rules import arith as A
from ..rules import bessel as B
from ..rules import gamma as G
from ..rules import reduce as R
from ..rules import special as S
from ..runtime.dispatch import eager_unary
from ..runtime.tensor import Tensor
from . import return_types
from ._args import wrap_dims
from .pointwise import _binary_function, _inplace, _unary

frexp_result = return_types._structseq("frexp", ["mantissa", "exponent"])

asinh = _unary(S.asinh)
acosh = _unary(S.acosh)
atanh = _unary(S.atanh)
sinc = _unary(S.sinc)
erfc = _unary(G.erfc)
erfinv = _unary(G.erfinv)
lgamma = _unary(G.gammaln)
digamma = _unary(G.digamma)
i0 = _unary(B.i0)
hypot = _binary_function(S.hypot)
logaddexp = _binary_function(S.logaddexp)
logaddexp2 = _binary_function(S.logaddexp2)
fmax = _binary_function(S.fmax)
fmin = _binary_function(S.fmin)
fmod = _binary_function(S.fmod)
copysign = _binary_function(S.copysign)
xlogy = _binary_function(S.xlogy)
lgamma.__name__ = "lgamma"


def ldexp(input, other):
    """input * 2**other (``other`` holds integers)."""
    return S.ldexp(input, other)


def frexp(input):
    """(mantissa, exponent) with input = mantissa * 2**exponent; exponent is int32."""
    if isinstance(input, Tensor) and not input.dtype.is_floating_point:
        raise RuntimeError("torch.frexp() only supports floating-point dtypes")
    return frexp_result(*S.frexp(input))


def polygamma(n, input):
    """The n-th derivative of digamma (``n`` a non-negative int)."""
    if n < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")
    return G.polygamma(n, input)


def mvlgamma(input, p):
    """The log of the multivariate gamma function of dimension ``p`` (summed lgammas)."""
    if p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")
    total = G.gammaln(input)
    for j in range(1, p):
        total = total + G.gammaln(input - j / 2)
    return total + p * (p - 1) / 4 * math.log(math.pi)


def logit(input, eps=None):
    return S.logit(input, eps=eps)


def deg2rad(input):
    return A.mul(input, math.pi / 180)


def rad2deg(input):
    return A.mul(input, 180 / math.pi)


def positive(input):
    return input


def float_power(input, exponent):
    """input ** exponent computed in float64 (complex128 if either is complex)."""
    complex_ = any(isinstance(v, complex) or (isinstance(v, Tensor) and v.is_complex())
                   for v in (input, exponent))
    target = _dt.complex128 if complex_ else _dt.float64
    input, exponent = (v.to(target) if isinstance(v, Tensor) else v for v in (input, exponent))
    return A.pow(input, exponent)


def nan_to_num(input, nan=0.0, posinf=None, neginf=None):
    """NaN, +inf and -inf replaced (by ``where``: the gradient flows where input was finite);
    the infinities by the dtype's largest and smallest values unless given."""
    if not input.dtype.is_floating_point:
        return input.clone()
    from ..backend import cpu
    info = cpu.finfo(input.dtype.np)
    out = A.where(A.isnan(input), nan, input)
    out = A.where(A.eq(input, math.inf), float(info.max) if posinf is None else posinf, out)
    return A.where(A.eq(input, -math.inf), float(info.min) if neginf is None else neginf, out)


def nanmean(input, dim=None, keepdim=False, *, dtype=None):
    """The mean of the non-NaN elements (NaN where a slice has none)."""
    if dtype is not None:
        input = input.to(dtype)
    if not input.dtype.is_floating_point:
        raise RuntimeError("nanmean(): expected input to have floating point dtype but got "
                           f"{input.dtype.scalar_name}")
    dims = None if dim is None or dim == () else wrap_dims(dim, input.ndim)
    present = A.logical_not(A.isnan(input))
    total = R.sum(A.where(present, input, 0.0), dim=dims, keepdim=keepdim)
    return total / R.sum(present, dim=dims, keepdim=keepdim)


_UNARY = {"asinh": asinh, "arcsinh": asinh, "acosh": acosh, "arccosh": acosh, "atanh": atanh,
          "arctanh": atanh, "sinc": sinc, "erfc": erfc, "erfinv": erfinv, "lgamma": lgamma,
          "digamma": digamma, "i0": i0}
FUNCTIONS = dict(_UNARY, hypot=hypot, logaddexp=logaddexp, logaddexp2=logaddexp2, fmax=fmax, fmin=fmin,
                 fmod=fmod, copysign=copysign, xlogy=xlogy, ldexp=ldexp, frexp=frexp, polygamma=polygamma,
                 mvlgamma=mvlgamma, logit=logit, deg2rad=deg2rad, rad2deg=rad2deg, positive=positive,
                 float_power=float_power, nan_to_num=nan_to_num, nanmean=nanmean)

METHODS = {name: fn for name, fn in FUNCTIONS.items() if name != "polygamma"}
for _name, _prim in (("asinh", S.asinh), ("acosh", S.acosh), ("atanh", S.atanh), ("sinc", S.sinc),
                     ("erfc", G.erfc), ("erfinv", G.erfinv), ("lgamma", G.gammaln), ("digamma", G.digamma),
                     ("i0", B.i0)):
    METHODS[_name] = eager_unary(_prim)
    METHODS[_name + "_"] = _inplace(_prim)
for _alias, _name in (("arcsinh", "asinh"), ("arccosh", "acosh"), ("arctanh", "atanh")):
    METHODS[_alias] = METHODS[_name]
    METHODS[_alias + "_"] = METHODS[_name + "_"]
for _name, _prim in (("hypot", S.hypot), ("fmod", S.fmod), ("copysign", S.copysign), ("xlogy", S.xlogy),
                     ("ldexp", S.ldexp)):
    METHODS[_name + "_"] = _inplace(_prim)
METHODS["polygamma"] = lambda self, n: polygamma(n, self)


def _eps(self, eps=None):
    return (), {"eps": eps}


METHODS["logit_"] = _inplace(S.logit, _eps)
