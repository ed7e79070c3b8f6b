"""The extreme-magnitude cases of test_extremes.py, with their exact values.

A case is one call of a rule at tiny (1e-30, 1e-200...), huge (1e30, 3e38, 1e200...) or
saturating (logits of +-100, +-1e30) operands, in float32 or float64, and a hand formula:
the same forward and gradient written over NumPy object arrays of Python ``decimal``
numbers (50 digits, exponents up to +-10^6: nothing over- or underflows there). The
operands enter it exactly as the rule sees them (rounded to the case's dtype), and its
results are rounded to that dtype once, at the end.
"""
import decimal
import math
from dataclasses import dataclass, field

import numpy as np

F32, F64 = np.float32, np.float64
RTOL = {F32: 1e-5, F64: 1e-13}

_CTX = decimal.Context(prec=50, Emax=10 ** 6, Emin=-10 ** 6,
                       traps=[decimal.InvalidOperation])


# -- the hand formulas: NumPy object arrays of Decimals --------------------------------------

def _vec(fn):
    return np.vectorize(fn, otypes=[object])


dexp = _vec(lambda d: d.exp())
dln = _vec(lambda d: d.ln())
dsqrt = _vec(lambda d: d.sqrt())
dsign = _vec(lambda d: decimal.Decimal((d > 0) - (d < 0)))
dabs = _vec(lambda d: abs(d))
_ONE = decimal.Decimal(1)
_LN2 = decimal.Decimal(2).ln(_CTX)
_LN10 = decimal.Decimal(10).ln(_CTX)


def dpow(a, p):
    p = decimal.Decimal(p)
    return _vec(lambda d: d ** p)(a)


def dmax0(a):
    return _vec(lambda d: max(d, decimal.Decimal(0)))(a)


def dmin0(a):
    return _vec(lambda d: min(d, decimal.Decimal(0)))(a)


def dsigmoid(a):
    """1 / (1 + e^-x) through e^-|x|, as exact as 50 digits go."""
    def one(d):
        e = (-abs(d)).exp()
        return 1 / (1 + e) if d >= 0 else e / (1 + e)
    return _vec(one)(a)


def _log1p(d):
    """log(1 + d), also where 1 + d rounds to 1 at 50 digits."""
    return d - d * d / 2 + d * d * d / 3 if abs(d) < decimal.Decimal("1e-20") else (1 + d).ln()


def dsoftplus(a):
    """log(1 + e^x) = max(x, 0) + log(1 + e^-|x|)."""
    return _vec(lambda d: max(d, decimal.Decimal(0)) + _log1p((-abs(d)).exp()))(a)


def dtanh(a):
    def one(d):
        e = (-2 * abs(d)).exp()
        return (1 - e) / (1 + e) * (1 if d >= 0 else -1)
    return _vec(one)(a)


def _decimal(a, dtype):
    """The operand exactly as the rule sees it (rounded to ``dtype``), as Decimals."""
    return _vec(lambda v: decimal.Decimal(float(v)))(np.asarray(a, dtype))


def _to_dtype(v, dtype):
    if isinstance(v, tuple):  # (the outputs of a multi-output rule)
        return tuple(_to_dtype(x, dtype) for x in v)
    a = np.asarray(v, dtype=object)
    with np.errstate(over="ignore"):  # (beyond float32's range is inf, as it should be)
        return np.array([float(d) for d in a.flat], np.float64).reshape(a.shape).astype(dtype)


# -- the cases --------------------------------------------------------------------------------

@dataclass
class Case:
    """``rule(*args, **params)`` in ``dtype``; ``hand(*decimal_args)`` gives (forward, {operand
    position: gradient}) for the cotangent ``g`` (ones when None); ``native``: PyTorch in
    ``dtype`` is a valid reference too (else only its float64 kernel on these inputs, and
    none at all for float64 inputs); ``torch``: PyTorch is a reference at all;
    ``saturating``: the gradient comes from ``1 - out``; ``normwise``: results that cancel
    (a gradient summing to 0) are compared to a tolerance of the largest one; ``jvp``:
    check the jvps too."""
    id: str
    rule: str
    args: tuple
    dtype: type
    hand: object
    params: dict = field(default_factory=dict)
    g: object = None
    native: bool = True
    saturating: bool = False
    normwise: bool = False
    jvp: bool = False
    torch: bool = True

    def __repr__(self):
        return self.id


def _elementwise(rule, args, dtype, hand, tag="", **kw):
    """A case of an elementwise rule, named after it and its dtype."""
    return Case(f"{rule}-{np.dtype(dtype).name}{'-' + tag if tag else ''}", rule, args, dtype, hand, **kw)


def _div(x, y):
    return x / y, {0: 1 / y, 1: -x / y / y}


def _atan2_slopes(x, y):
    r2 = x * x + y * y
    safe = np.where(r2 == 0, _ONE, r2)
    return {0: np.where(r2 == 0, 0, y / safe), 1: np.where(r2 == 0, 0, -x / safe)}


def _atan2(x, y):
    return _vec(lambda a, b: decimal.Decimal(math.atan2(float(a), float(b))))(x, y), _atan2_slopes(x, y)


def _norm(p, dim=None, keepdim=False):
    def hand(x):
        axis = None if dim is None else tuple(dim)
        n = dpow(np.sum(dpow(dabs(x), p), axis=axis, keepdims=True), _ONE / decimal.Decimal(p))
        slope = dsign(x) * dpow(dabs(x) / n, p - 1)
        return (n if keepdim else np.squeeze(n, axis=axis) if axis else n.reshape(())), {0: slope}
    return hand


def _moments(x, axis, correction):
    count = int(np.prod([x.shape[a] for a in axis])) if axis else x.size
    centered = x - np.sum(x, axis=axis, keepdims=True) / count
    var = np.sum(centered * centered, axis=axis, keepdims=True) / (count - correction)
    return centered, var, count - correction


def _var(dim=None, keepdim=False, correction=1):
    def hand(x):
        centered, var, dof = _moments(x, None if dim is None else tuple(dim), correction)
        return (var if keepdim else np.squeeze(var, axis=dim)), {0: 2 * centered / dof}
    return hand


def _std(dim=None, keepdim=False, correction=1):
    def hand(x):
        centered, var, dof = _moments(x, None if dim is None else tuple(dim), correction)
        std = dsqrt(var)
        return (std if keepdim else np.squeeze(std, axis=dim)), {0: centered / (dof * std)}
    return hand


def _normalized(axis, eps, g):
    """(output, mean, invstd) of a normalisation over ``axis`` and the input's gradient for
    the output's cotangent ``g``: invstd (g - mean(g) - xhat mean(g xhat))."""
    def hand(x, *affine):
        centered, var, _ = _moments(x, axis, 0)
        invstd = 1 / dsqrt(var + decimal.Decimal(eps))
        xhat = centered * invstd
        gd = _decimal(np.broadcast_to(g, x.shape), F64)
        count = x.size // invstd.size
        dx = invstd * (gd - np.sum(gd, axis=axis, keepdims=True) / count
                       - xhat * np.sum(gd * xhat, axis=axis, keepdims=True) / count)
        return (xhat, np.sum(x, axis=axis, keepdims=True) / count, invstd), {0: dx}
    return hand


def _group_norm(x, *affine):
    """Two groups of three channels (one sample): each its own layer norm."""
    g = np.array([1.0, -2.0, 0.5, 3.0, 1.0, -1.0]).reshape(1, 2, 3)
    (out, mean, invstd), grads = _normalized((2,), 1e-5, g)(x.reshape(1, 2, 3))
    return (out.reshape(1, 6), mean.reshape(1, 2), invstd.reshape(1, 2)), {0: grads[0].reshape(1, 6)}


def _prod(dim=None):
    def hand(x):
        axis = None if dim is None else tuple(dim)
        out = np.prod(x, axis=axis)
        flat = np.moveaxis(x, axis or tuple(range(x.ndim)), -1) if axis else x.reshape(-1)
        others = np.empty_like(flat)
        for idx in np.ndindex(flat.shape):
            row = flat[idx[:-1]]
            others[idx] = np.prod(np.delete(row, idx[-1])) if row.size > 1 else _ONE
        partial = np.moveaxis(others, -1, axis[0]) if axis else others.reshape(x.shape)
        return (out if axis else np.asarray(out)), {0: partial}
    return hand


def _cumprod(x):
    out = np.cumprod(x)
    grad = np.array([sum(np.prod(np.delete(x[:k + 1], i)) for k in range(i, x.size)) for i in range(x.size)],
                    dtype=object)
    return out, {0: grad}


def _softmax_rows(x, g, log):
    m = np.max(x, axis=1, keepdims=True)
    e = dexp(x - m)
    s = e / np.sum(e, axis=1, keepdims=True)
    if log:
        return x - m - dln(np.sum(e, axis=1, keepdims=True)), {0: g - s * np.sum(g, axis=1, keepdims=True)}
    return s, {0: s * (g - np.sum(g * s, axis=1, keepdims=True))}


def _logsumexp_rows(x):
    m = np.max(x, axis=1, keepdims=True)
    total = np.sum(dexp(x - m), axis=1, keepdims=True)
    return (dln(total) + m).reshape(x.shape[0]), {0: dexp(x - m) / total}


_ROWS32 = [[-1e30, 1e30, 0.0], [3e38, -3e38, 0.0], [1000.0, 1000.0, 1.0], [-3e38, -3e38, -3e38]]
_ROWS64 = [[-1e300, 1e300, 0.0], [1e308, -1e308, 0.0], [1000.0, 1000.0, 1.0], [-1e308, -1e308, -1e308]]
_G_ROWS = np.array([[1.0, -2.0, 0.5]] * 4)
_G3 = np.array([1.0, -2.0, 0.5])

CASES = [
    # -- the rules that were rewritten -------------------------------------------------------
    # div: -g x / y^2 -> -g (x / y / y)
    _elementwise("div", ([1e-30, 1e30, -3e38, 2.0], [1e-25, 1e30, 3e38, 1e-19]), F32, _div, jvp=True),
    _elementwise("div", ([1e-300, 1e300, -1e308, 2.0], [1e-170, 1e300, 1e308, 1e-154]), F64, _div, jvp=True),
    # atan2: y / (x^2 + y^2) with x, y scaled by max(|x|, |y|); 0 at the origin, as PyTorch
    _elementwise("atan2", ([1e-30, 1e30, 1e-20, 1e30, 0.0, 3.0], [1e-25, 1e30, 1e-20, -1e-20, 0.0, -4.0]),
                 F32, _atan2, native=False, jvp=True),
    _elementwise("atan2", ([1e-200, 1e200, 1e-300, 0.0], [1e-200, -1e200, 1e-250, 0.0]), F64, _atan2,
                 native=False, jvp=True, torch=False),
]
for _dt, _tiny, _huge in ((F32, 1e-30, 1e30), (F64, 1e-200, 1e200)):
    for _p in (2, 3, 0.5, -2):
        for _scale, _tag in ((_tiny, "tiny"), (_huge, "huge")):
            CASES.append(Case(f"vector_norm-{np.dtype(_dt).name}-{_tag}-ord{_p}", "vector_norm",
                              (np.array([1.0, -1.0, 2.0]) * _scale,), _dt, _norm(_p), {"ord": _p},
                              native=False, jvp=True, torch=_dt is F32))
    # one ordinary row beside an extreme one: only that slice takes the scaled path
    _rows = np.array([[1.0, -2.0, 3.0], [_tiny, _tiny, -2 * _tiny], [_huge, _huge, -2 * _huge]])
    for _kd in (False, True):
        CASES.append(Case(f"vector_norm-{np.dtype(_dt).name}-rows-keepdim{_kd}", "vector_norm", (_rows,), _dt,
                          _norm(2, (1,), _kd), {"dim": (1,), "keepdim": _kd}, g=np.ones((3, 1) if _kd else 3),
                          native=False, jvp=True, torch=_dt is F32))
    CASES.append(Case(f"vector_norm-{np.dtype(_dt).name}-all-keepdim", "vector_norm", (_rows[1:],), _dt,
                      _norm(2, None, True), {"keepdim": True}, g=np.ones((1, 1)), native=False, jvp=True,
                      torch=_dt is F32))

CASES += [
    # var/std: the sum of squares over- or underflows; var = (q m) m, std = sqrt(q) m
    Case("std-float32-huge", "std", (np.array([1e20, 1e20, 2e20]),), F32, _std(), native=False, jvp=True),
    Case("std-float32-tiny", "std", (np.array([1e-25, 1e-25, 2e-25]),), F32, _std(), native=False, jvp=True),
    Case("std-float64-huge", "std", (np.array([1e200, 4e200, 2e200]),), F64, _std(), jvp=True, torch=False),
    Case("std-float64-tiny", "std", (np.array([1e-200, 4e-200, 2e-200]),), F64, _std(), jvp=True, torch=False),
    Case("std-float32-rows", "std", (np.array([[1.0, 2.0, 4.0], [1e20, 1e20, 2e20], [1e-25, 3e-25, 0.0]]),),
         F32, _std((1,)), {"dim": (1,)}, g=np.ones(3), native=False, jvp=True),
    Case("std-float32-rows-keepdim", "std", (np.array([[1.0, 2.0, 4.0], [1e20, 1e20, 2e20]]),), F32,
         _std((1,), True), {"dim": (1,), "keepdim": True}, g=np.ones((2, 1)), native=False, jvp=True),
    # 1000 deviations of 1e19: their squares sum to 1e41 (inf in float32), the variance is 1e38
    Case("var-float32-many", "var", (np.resize([1e19, -1e19], 1000),), F32, _var(), native=False),
    Case("var-float64-many", "var", (np.resize([1e153, -1e153], 1000),), F64, _var(), torch=False),
    # layer/batch/group norm: var + eps overflows, invstd (1.2e-20) does not
    Case("layer_norm-float32", "layer_norm", (np.array([[1e20, 2e20, 4e20], [1.0, 2.0, 4.0]]), None, None), F32,
         _normalized((1,), 1e-5, _G3), {"normalized_shape": (3,), "eps": 1e-5},
         g=(np.array([_G3, _G3]), np.zeros((2, 1)), np.zeros((2, 1))), native=False),
    Case("layer_norm-float64", "layer_norm", (np.array([[1e160, 2e160, 4e160]]), None, None), F64,
         _normalized((1,), 1e-5, _G3), {"normalized_shape": (3,), "eps": 1e-5},
         g=(np.array([_G3]), np.zeros((1, 1)), np.zeros((1, 1))), torch=False),
    Case("batch_norm-float32", "batch_norm", (np.array([[1e20], [2e20], [4e20]]), None, None), F32,
         _normalized((0,), 1e-5, _G3[:, None]), {"eps": 1e-5}, g=(_G3[:, None], np.zeros(1), np.zeros(1)),
         native=False, normwise=True),
    Case("group_norm-float32", "group_norm", (np.array([[1e20, 3e20, -2e20, 1.0, 2.0, 4.0]]), None, None), F32,
         _group_norm, {"num_groups": 2, "eps": 1e-5},
         g=(np.array([[1.0, -2.0, 0.5, 3.0, 1.0, -1.0]]), np.zeros((1, 2)), np.zeros((1, 2))), native=False),
    # prod: partials as products of the others (no division by x_i); float32 accumulates in float64
    Case("prod-float32-underflow", "prod", (np.array([1e-30, 1e-20]),), F32, _prod(), native=False, jvp=True),
    Case("prod-float32-roundtrip", "prod", (np.array([1e-30, 1e-30, 1e30]),), F32, _prod(), native=False, jvp=True),
    Case("prod-float32-zero", "prod", (np.array([1e-30, 0.0, 1e30, 2.0]),), F32, _prod(), native=False, jvp=True),
    Case("prod-float32-dim", "prod", (np.array([[1e-30, 1e-20, 2.0], [0.0, 0.0, 3.0]]),), F32, _prod((1,)),
         {"dim": (1,)}, g=np.ones(2), native=False, jvp=True),
    Case("prod-float64-underflow", "prod", (np.array([1e-300, 1e-100]),), F64, _prod(), jvp=True, torch=False),
    Case("cumprod-float32", "cumprod", (np.array([1e-30, 1e-30, 1e30]),), F32, _cumprod, {"dim": 0}),
    # tanh-gelu's backward: x^3 overflowed into inf * 0 = nan
    _elementwise("gelu", ([1e20, -1e20, 1e30, -1e30, 3e38, -3e38],), F32,
                 lambda x: (x * (dsign(x) + 1) / 2, {0: (dsign(x) + 1) / 2}),
                 params={"approximate": "tanh"}, native=False),
    _elementwise("gelu", ([1e200, -1e200, 1e300],), F64,
                 lambda x: (x * (dsign(x) + 1) / 2, {0: (dsign(x) + 1) / 2}),
                 params={"approximate": "tanh"}, torch=False),
    # softplus with an infinite threshold: beta * x overflowed (its max(z, 0) / beta is x;
    # PyTorch's e^(beta x) overflows too)
    _elementwise("softplus", ([1e38, -1e38, 3e37, 1.0],), F32,
                 lambda x: (dmax0(x) + dsoftplus(-dabs(x * 10)) / 10, {0: dsigmoid(x * 10)}),
                 params={"beta": 10.0, "threshold": math.inf}, tag="beta10-no-threshold", torch=False),
    _elementwise("softplus", ([1e307, -1e307, 1.0],), F64,
                 lambda x: (dmax0(x) + dsoftplus(-dabs(x * 100)) / 100, {0: dsigmoid(x * 100)}),
                 params={"beta": 100.0, "threshold": math.inf}, tag="beta100-no-threshold", torch=False),
    # smooth L1 with a large beta: 0.5 z^2 / beta as 0.5 z (z / beta)
    Case("smooth_l1_loss-float32", "smooth_l1_loss", (np.array([1e25, -1e25, 1.0]), np.zeros(3)), F32,
         lambda x, y: ((x - y) * (x - y) / 2 / decimal.Decimal(1e30), {0: (x - y) / decimal.Decimal(1e30),
                                                                         1: (y - x) / decimal.Decimal(1e30)}),
         {"reduction": "none", "beta": 1e30}, native=False),
    # log10: g / (x ln 10) overflowed in x ln 10 (the result is subnormal)
    _elementwise("log10", ([3e38, 1e-30, 1e38],), F32, lambda x: (dln(x) / _LN10, {0: 1 / (x * _LN10)}),
                 native=False),
    _elementwise("log10", ([1e308, 1e-300],), F64, lambda x: (dln(x) / _LN10, {0: 1 / (x * _LN10)}),
                 native=False, torch=False),
    # exp2 with a cotangent of 2: g * out overflowed before the factor ln 2 brought it back
    _elementwise("exp2", ([127.5],), F32, lambda x: (dexp(x * _LN2), {0: 2 * dexp(x * _LN2) * _LN2}),
                 g=np.array([2.0]), native=False),
    _elementwise("exp2", ([1023.5],), F64, lambda x: (dexp(x * _LN2), {0: 2 * dexp(x * _LN2) * _LN2}),
                 g=np.array([2.0]), native=False),
]
# -- rules audited and found stable: their extremes, locked in ---------------------------------
_SIG32 = [-100.0, 100.0, -1e30, 1e30, -3e38, 3e38, -80.0]
_SIG64 = [-700.0, 700.0, -1e300, 1e300, -1e308, 1e308, -100.0]
for _dt, _xs in ((F32, _SIG32), (F64, _SIG64)):
    CASES += [
        _elementwise("sigmoid", (_xs,), _dt, lambda x: (dsigmoid(x), {0: dsigmoid(x) * dsigmoid(-x)}),
                     saturating=True),
        _elementwise("logsigmoid", (_xs,), _dt, lambda x: (-dsoftplus(-x), {0: dsigmoid(-x)})),
        _elementwise("softplus", (_xs,), _dt, lambda x: (np.where(x > 20, x, dsoftplus(x)), {0: np.where(
            x > 20, 1, dsigmoid(x))})),
        # (silu(-100) is subnormal in float32, and so is sigmoid(-100) on the way there)
        _elementwise("silu", ([v for v in _xs if v != -100.0],), _dt,
                     lambda x: (x * dsigmoid(x), {0: dsigmoid(x) * (1 + x * dsigmoid(-x))})),
        _elementwise("tanh", (_xs,), _dt, lambda x: (dtanh(x), {0: 1 - dtanh(x) * dtanh(x)}), saturating=True),
        _elementwise("erf", (_xs[2:4],), _dt, lambda x: (dsign(x), {0: 0 * x})),
        _elementwise("elu", (_xs,), _dt, lambda x: (np.where(x > 0, x, dexp(dmin0(x)) - 1),
                                                  {0: np.where(x > 0, 1, dexp(dmin0(x)))})),
        Case(f"binary_cross_entropy_with_logits-{np.dtype(_dt).name}", "binary_cross_entropy_with_logits",
             (np.array(_xs), np.resize([0.3, 1.0, 0.0], len(_xs)), None, None), _dt,
             lambda x, y, *weights: ((1 - y) * x + dsoftplus(-x), {0: dsigmoid(x) - y, 1: -x}),
             {"reduction": "none"}, saturating=True),
    ]
CASES += [
    Case("softmax-float32", "softmax", (np.array(_ROWS32),), F32,
         lambda x: _softmax_rows(x, _decimal(_G_ROWS, F64), False), {"dim": 1}, g=_G_ROWS),
    Case("softmax-float64", "softmax", (np.array(_ROWS64),), F64,
         lambda x: _softmax_rows(x, _decimal(_G_ROWS, F64), False), {"dim": 1}, g=_G_ROWS),
    Case("log_softmax-float32", "log_softmax", (np.array(_ROWS32),), F32,
         lambda x: _softmax_rows(x, _decimal(_G_ROWS, F64), True), {"dim": 1}, g=_G_ROWS),
    Case("log_softmax-float64", "log_softmax", (np.array(_ROWS64),), F64,
         lambda x: _softmax_rows(x, _decimal(_G_ROWS, F64), True), {"dim": 1}, g=_G_ROWS),
    # (the last row: its result absorbs log 3 into -3e38, even in PyTorch's float64; the
    # slopes are the softmax of x, 1/3 each, not exp(x - out) = 1)
    Case("logsumexp-float32", "logsumexp", (np.array(_ROWS32),), F32, _logsumexp_rows, {"dim": (1,)},
         native=False, torch=False, jvp=True),
    Case("logsumexp-float32-rows", "logsumexp", (np.array(_ROWS32[:3]),), F32, _logsumexp_rows, {"dim": (1,)},
         native=False),
    Case("logsumexp-float64", "logsumexp", (np.array(_ROWS64),), F64, _logsumexp_rows, {"dim": (1,)},
         jvp=True, torch=False),
    _elementwise("exp", ([-100.0, 80.0, -1e30, 88.0],), F32, lambda x: (dexp(x), {0: dexp(x)})),
    _elementwise("exp", ([-740.0, 700.0, -1e300, 709.0],), F64, lambda x: (dexp(x), {0: dexp(x)})),
    _elementwise("expm1", ([-1e30, 1e-30, 80.0, -1e-38],), F32, lambda x: (dexp(x) - 1, {0: dexp(x)}),
                 saturating=True),
    _elementwise("log1p", ([1e-30, 1e38, -0.5, 1e-38],), F32, lambda x: (dln(1 + x), {0: 1 / (1 + x)})),
    _elementwise("log", ([1e-30, 3e38, 1e-38],), F32, lambda x: (dln(x), {0: 1 / x})),
    _elementwise("log2", ([1e-30, 3e38, 1e-38],), F32, lambda x: (dln(x) / _LN2, {0: 1 / (x * _LN2)})),
    _elementwise("reciprocal", ([1e-19, 1e19, -1e15, 1e-30],), F32, lambda x: (1 / x, {0: -1 / (x * x)})),
    _elementwise("reciprocal", ([1e-154, 1e154, -1e-300],), F64, lambda x: (1 / x, {0: -1 / (x * x)})),
    _elementwise("rsqrt", ([1e-20, 1e20, 1e-25, 3e38],), F32,
                 lambda x: (1 / dsqrt(x), {0: -1 / (2 * x * dsqrt(x))})),
    _elementwise("rsqrt", ([1e-200, 1e200, 1e308],), F64, lambda x: (1 / dsqrt(x), {0: -1 / (2 * x * dsqrt(x))})),
    _elementwise("sqrt", ([1e-30, 1e30, 3e38, 1e-38],), F32, lambda x: (dsqrt(x), {0: 1 / (2 * dsqrt(x))})),
    _elementwise("sqrt", ([1e-300, 1e300, 1e308],), F64, lambda x: (dsqrt(x), {0: 1 / (2 * dsqrt(x))})),
    _elementwise("pow", ([1e-30, 1e30, 1e-20, 1e10], [0.5, -0.5, 1.5, 3.0]), F32,
                 lambda x, y: (_vec(lambda a, b: a ** b)(x, y),
                               {0: y * _vec(lambda a, b: a ** (b - 1))(x, y),
                                1: _vec(lambda a, b: a ** b)(x, y) * dln(x)})),
    _elementwise("pow", ([1e-300, 1e300, 1e-100], [0.5, -0.5, 2.5]), F64,
                 lambda x, y: (_vec(lambda a, b: a ** b)(x, y),
                               {0: y * _vec(lambda a, b: a ** (b - 1))(x, y),
                                1: _vec(lambda a, b: a ** b)(x, y) * dln(x)})),
    Case("mse_loss-float32", "mse_loss", (np.array([1e19, -1e19]), np.zeros(2)), F32,
         lambda x, y: ((x - y) * (x - y), {0: 2 * (x - y), 1: 2 * (y - x)}), {"reduction": "none"}),
    Case("binary_cross_entropy-float32", "binary_cross_entropy",
         (np.array([1e-30, 0.5, 1e-38]), np.array([0.5, 1e-30, 1.0]), None), F32,
         # (the slope's denominator floored at float32(1e-12), as PyTorch's)
         lambda x, y, weight: (-(y * dln(x) + (1 - y) * dln(1 - x)),
                               {0: (x - y) / np.maximum(x * (1 - x), decimal.Decimal(float(np.float32(1e-12)))),
                                1: dln(1 - x) - dln(x)}),
         {"reduction": "none"}),
]


# -- exact values -------------------------------------------------------------------------------

def operands(case):
    """The case's operands as the rule gets them: float lists and arrays in its dtype."""
    return tuple(np.asarray(a, case.dtype) if isinstance(a, (list, np.ndarray)) else a for a in case.args)


def exact(case):
    """(forward, {position: gradient}) by the hand formula, rounded to the case's dtype."""
    with decimal.localcontext(_CTX):
        args = tuple(_decimal(a, case.dtype) if isinstance(a, np.ndarray) else a for a in operands(case))
        fwd, slopes = case.hand(*args)
        return _to_dtype(fwd, case.dtype), {i: _to_dtype(s, case.dtype) for i, s in slopes.items()}
