"""NumPy's ufuncs on tracers (``np.tanh(x)``, ``np.add.reduce(x)``): the primitive each
ufunc records, and the ufuncs written with several primitives."""
import math

import numpy as np

from ....rules import TABLE
from .base import P, UFUNCS, astype, cast, dims, no_more, npdtype, unsupported
from ..tape import TracerError

UFUNCS.update({p.ufunc: p for p in TABLE.values() if p.ufunc and not p.name.endswith("_")})
UFUNCS.update({
    "divide": P.div, "greater": P.gt, "greater_equal": P.ge, "less": P.lt, "less_equal": P.le,
    "equal": P.eq, "not_equal": P.ne, "arctan2": P.atan2, "floor_divide": P.floor_divide,
    "remainder": P.remainder, "logical_and": P.logical_and, "logical_or": P.logical_or,
    "logical_xor": P.logical_xor, "logical_not": P.logical_not, "matmul": P.matmul,
    "isnan": P.isnan, "isinf": P.isinf, "isfinite": P.isfinite,
    "bitwise_and": P.bitwise_and, "bitwise_or": P.bitwise_or, "bitwise_xor": P.bitwise_xor,
    "invert": P.bitwise_not,
})
# SciPy's ufuncs (scipy.special.expit(x) on a tracer reaches __array_ufunc__ by name)
UFUNCS.update({
    "expit": P.sigmoid, "log_expit": P.logsigmoid, "logit": P.logit, "erf": P.erf, "erfc": P.erfc,
    "erfcx": P.erfcx, "erfinv": P.erfinv, "erfcinv": P.erfcinv, "ndtr": P.ndtr, "ndtri": P.ndtri,
    "log_ndtr": P.log_ndtr, "gammaln": P.gammaln, "psi": P.digamma, "gamma": P.gamma, "beta": P.beta,
    "betaln": P.betaln, "gammainc": P.gammainc, "gammaincc": P.gammaincc, "betainc": P.betainc,
    "xlogy": P.xlogy, "xlog1py": P.xlog1py, "entr": P.entr, "i0": P.i0, "i1": P.i1, "i0e": P.i0e,
    "i1e": P.i1e, "jv": P.jv, "yv": P.yv, "iv": P.iv, "ive": P.ive,
    "_zeta": P.zeta,  # (scipy.special.zeta(x, q), and through it scipy.special.polygamma)
})


def _float64(x):
    """x computed in float64 (complex128 for complex x), as float_power does."""
    if isinstance(x, (int, float, bool)):
        return float(x)
    if isinstance(x, complex):
        return x
    return astype(x, np.complex128 if npdtype(x).kind == "c" else np.float64, copy=False)


def _rgamma(x):
    """1 / gamma(x), 0 at the poles (where gamma is infinite or NaN)."""
    g = P.gamma(x)
    return P.where(P.isfinite(g), P.reciprocal(P.where(P.isfinite(g), g, 1.0)), 0.0)


def _sign(x):
    """NumPy's sign: the table's (real) sign, and ``z / |z|`` (0 at 0) for complex ``z``,
    whose derivative is not 0."""
    if npdtype(x).kind != "c":
        return P.sign(x)
    a = P.abs(x)
    return P.div(x, P.where(P.eq(a, 0), 1.0, a))


UFUNCS.pop("sign", None)  # (written out below, for complex values)
UFUNC_EXTRA = {  # ufuncs written with several primitives
    "square": lambda x: P.mul(x, x),
    "positive": lambda x: x,
    "sign": _sign,
    "rint": lambda x: P.round(x, decimals=0), "round": lambda x: P.round(x, decimals=0),
    "fabs": lambda x: P.abs(x),
    "deg2rad": lambda x: P.mul(x, math.pi / 180), "radians": lambda x: P.mul(x, math.pi / 180),
    "rad2deg": lambda x: P.mul(x, 180 / math.pi), "degrees": lambda x: P.mul(x, 180 / math.pi),
    "float_power": lambda x, y: P.pow(_float64(x), _float64(y)),
    "exp10": lambda x: P.pow(10.0, x),
    "clip": lambda x, lo, hi: P.minimum(P.maximum(x, lo), hi),
    # scipy.special
    "j0": lambda x: P.jv(0, x), "j1": lambda x: P.jv(1, x), "y0": lambda x: P.yv(0, x),
    "y1": lambda x: P.yv(1, x), "yn": lambda n, x: P.yv(n, x),
    "rgamma": _rgamma, "gammasgn": lambda x: P.sign(P.gamma(x)),
    "frexp": lambda x: P.frexp(x),  # (two results: traced, not written out by the AST path)
}
REDUCE = {"add": P.sum, "multiply": P.prod, "maximum": P.amax, "minimum": P.amin,
          "logical_and": P.all, "logical_or": P.any}
ACCUMULATE = {"add": P.cumsum, "multiply": P.cumprod}


def call_ufunc(ufunc, method, inputs, kwargs):
    name = ufunc.__name__
    out = kwargs.pop("out", None)
    if out is not None and any(o is not None for o in out):
        raise TracerError(f"numpy.{name}(..., out=...) writes into an existing array, which a "
                          f"tape cannot record; assign the result instead (y = np.{name}(...))")
    dtype = kwargs.pop("dtype", None)
    if method == "reduce":
        prim = REDUCE.get(name)
        if prim is None:
            raise unsupported(f"numpy.{name}.reduce")
        x, = inputs
        axis = kwargs.pop("axis", 0)
        keepdims = kwargs.pop("keepdims", False)
        no_more(kwargs, f"numpy.{name}.reduce")
        return cast(prim(x, dim=dims(axis, x.ndim), keepdim=keepdims), dtype)
    if method == "accumulate" and name in ACCUMULATE:
        x, = inputs
        axis = kwargs.pop("axis", 0)
        no_more(kwargs, f"numpy.{name}.accumulate")
        if x.ndim == 0:
            raise TypeError("cannot accumulate on a scalar")
        return ACCUMULATE[name](x, dim=dims(axis, x.ndim)[0], dtype=None if dtype is None else np.dtype(dtype))
    if method != "__call__":
        raise unsupported(f"numpy.{name}.{method}")
    if kwargs.pop("where", True) is not True:
        raise unsupported(f"numpy.{name}(..., where=...)")
    kwargs.pop("casting", None), kwargs.pop("order", None), kwargs.pop("subok", None)
    no_more(kwargs, f"numpy.{name}")
    fn = UFUNCS.get(name) or UFUNC_EXTRA.get(name)
    if fn is None:
        raise unsupported(f"numpy.{name}")
    return cast(fn(*inputs), dtype)
