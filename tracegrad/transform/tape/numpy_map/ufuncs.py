"""NumPy's ufuncs on tracers (``np.tanh(x)``, ``np.add.reduce(x)``): the primitive each
ufunc records, and the ufuncs written with several primitives."""
import math

from ....rules import TABLE
from .base import P, UFUNCS, cast, no_more, unsupported, dims
from ..tape import TracerError

UFUNCS.update({p.ufunc: p for p in TABLE.values() if p.ufunc and not p.name.endswith("_")})
UFUNCS.update({
    "divide": P.div, "greater": P.gt, "greater_equal": P.ge, "less": P.lt, "less_equal": P.le,
    "equal": P.eq, "not_equal": P.ne, "arctan2": P.atan2, "floor_divide": P.floor_divide,
    "remainder": P.remainder, "logical_and": P.logical_and, "logical_or": P.logical_or,
    "logical_xor": P.logical_xor, "logical_not": P.logical_not, "matmul": P.matmul,
    "isnan": P.isnan, "isinf": P.isinf, "isfinite": P.isfinite,
})
UFUNC_EXTRA = {
    "square": lambda x: P.mul(x, x),
    "positive": lambda x: x,
    "conjugate": lambda x: x,
    "rint": lambda x: P.round(x, decimals=0),
    "logaddexp": lambda x, y: _logaddexp(x, y),
    "fabs": lambda x: P.abs(x),
    "cbrt": lambda x: P.mul(P.sign(x), P.pow(P.abs(x), 1.0 / 3.0)),
    "deg2rad": lambda x: P.mul(x, math.pi / 180), "radians": lambda x: P.mul(x, math.pi / 180),
    "rad2deg": lambda x: P.mul(x, 180 / math.pi), "degrees": lambda x: P.mul(x, 180 / math.pi),
    "hypot": lambda x, y: P.sqrt(P.add(P.mul(x, x), P.mul(y, y))),
}
REDUCE = {"add": P.sum, "multiply": P.prod, "maximum": P.amax, "minimum": P.amin,
          "logical_and": P.all, "logical_or": P.any}


def _logaddexp(x, y):
    m = P.maximum(x, y)
    return P.add(m, P.log(P.add(P.exp(P.sub(x, m)), P.exp(P.sub(y, m)))))


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
