"""Samples for the elementwise and special-function rules of tracegrad/rules/special.py,
gamma.py and bessel.py. Order and shape parameters (polygamma's n, gammainc's a, the
Bessel order v) are integers -- Python ints or int arrays -- so the walker does not
differentiate them (they take no gradient); int arrays fix a float64 result for the
derivative expressions, so those samples skip the float32 check."""
import numpy as np

from .sampling import S, _rng, away, ints, pos, r, unit, zd


def between(lo, hi):
    def draw(*shape):
        return _rng.uniform(lo, hi, shape)
    return draw


def unary(domain=r):
    return [S(domain(3, 4)), S(zd(domain), tags="0d"), S(domain(0, 3), tags="empty")]


def binary(x=r, y=r):
    return [S(x(3, 4), y(3, 4)), S(x(3, 4), y(4), tags="broadcast"), S(x(3, 1), y(1, 4), tags="broadcast"),
            S(x(2, 3), float(y())), S(zd(x), zd(y), tags="0d"), S(x(0, 4), y(4), tags="empty broadcast")]


def ordered(order, x):
    """Samples of f(order, x): an integer order (Python int, or int arrays broadcasting
    against x) and x drawn from ``x``."""
    return [S(order(), x(3, 4)), S(order(3, 1), x(3, 4), tags="broadcast", float32=False),
            S(order(4), x(2, 4), tags="broadcast", float32=False), S(order(), zd(x), tags="0d"),
            S(order(), x(0, 3), tags="empty")]


def small_ints(lo, hi):
    def draw(*shape):
        return int(_rng.integers(lo, hi)) if not shape else _rng.integers(lo, hi, shape)
    return draw


open_unit = between(0.1, 0.9)
above_one = between(1.2, 3.0)
with_zero = np.array([0.0, 1e-4, -3e-4, 0.2, -1.7, 2.5])
with_nan = (np.array([1.0, np.nan, 0.3, -2.0]), np.array([0.5, 0.7, np.nan, -1.0]))  # (both NaN: a NaN result)

BROADCASTING = {"hypot", "logaddexp", "logaddexp2", "fmax", "fmin", "fmod", "copysign", "ldexp",
                "xlogy", "xlog1py"}

SAMPLES = {
    "asinh": unary() + [S(r(5) * 1e3)], "acosh": unary(above_one), "atanh": unary(unit),
    "sinc": unary() + [S(with_zero)], "sinc_slope": unary() + [S(with_zero)],
    "cbrt": unary(away) + [S(r(4) * 1e3)],
    "hypot": binary(),
    "logaddexp": binary() + [S(r(4) * 50, r(4) * 50)], "logaddexp2": binary(),
    "fmax": binary() + [S(*with_nan)], "fmin": binary() + [S(*with_nan)],
    "fmod": binary(away, lambda *s: pos(*s) + 0.7),
    "copysign": binary(away, away),
    "ldexp": [S(r(3, 4), ints(5, 3, 4) - 2), S(r(3, 4), ints(5, 4) - 2, tags="broadcast"),
              S(zd(), np.array(3), tags="0d"), S(r(0, 3), ints(3, 3), tags="empty broadcast")],
    "frexp": unary(away),
    # (x == 0, where d/dx is log(y) here and 0 in PyTorch: tests/ops/test_special_oracle.py)
    "xlogy": binary(r, pos), "xlog1py": binary(r, pos),
    "logit": unary(open_unit) + [S(open_unit(6), eps=0.3)],
    "entr": unary(pos),
}

# Rules whose kernels are SciPy's: tests/conftest.py skips their walks without SciPy.
SCIPY_RULES = {"erfc", "erfcx", "erfinv", "erfcinv", "ndtr", "ndtri", "log_ndtr", "gammaln", "digamma",
               "gamma", "polygamma", "zeta", "beta", "betaln", "gammainc", "gammaincc", "betainc", "i0", "i1", "i0e",
               "i1e", "jv", "yv", "iv", "ive"}
BROADCASTING |= {"beta", "betaln", "polygamma", "zeta", "gammainc", "gammaincc", "betainc", "jv", "yv", "iv", "ive"}
SAMPLES.update({
    "erfc": unary(), "erfcx": unary(), "erfinv": unary(unit), "erfcinv": unary(between(0.1, 1.9)),
    "ndtr": unary(), "ndtri": unary(between(0.05, 0.95)),
    "log_ndtr": unary() + [S(np.array([-30.0, -8.0, 0.0, 6.0]))],
    "gammaln": unary(lambda *s: pos(*s) + 0.5) + [S(np.array([-0.5, -1.5, 2.3]))],
    "digamma": unary(lambda *s: pos(*s) + 0.5), "gamma": unary(pos) + [S(np.array([-0.5, -1.5, 4.2]))],
    "polygamma": ordered(small_ints(0, 3), pos), "zeta": ordered(small_ints(2, 5), pos),
    "beta": binary(pos, pos), "betaln": binary(pos, pos),
    "gammainc": ordered(small_ints(1, 4), pos), "gammaincc": ordered(small_ints(1, 4), pos),
    "betainc": [S(2, 3, open_unit(3, 4)), S(small_ints(1, 4)(4), 2, open_unit(3, 4), tags="broadcast",
                                             float32=False),
                S(1, 2, zd(open_unit), tags="0d"), S(3, 1, open_unit(0, 2), tags="empty")],
    "i0": unary() + [S(with_zero)], "i1": unary() + [S(with_zero)],
    "i0e": unary(away), "i1e": unary(away) + [S(np.array([0.0, 0.5]), smooth=False)],
    "jv": ordered(small_ints(0, 3), pos), "yv": ordered(small_ints(0, 3), pos),
    "iv": ordered(small_ints(0, 3), pos), "ive": ordered(small_ints(0, 3), away),
})


def c(*shape):
    return _rng.standard_normal(shape) + 1j * _rng.standard_normal(shape)


def cunary():
    return [S(c(3, 4)), S(np.array(c()), tags="0d"), S(c(0, 3), tags="empty")]


COMPLEX_SAMPLES = {"asinh": cunary(), "acosh": cunary(), "atanh": cunary(), "erfc": cunary()}

# -- PyTorch's equivalents (walked by tests/rules/test_oracle_table.py) ---------------------------

def _torch():
    import torch  # (imported on use: this module must load without PyTorch)
    return torch


def _by_name(path):
    """torch's function ``path`` ("special.xlog1py")."""
    def call(*args, **params):
        fn = _torch()
        for part in path.split("."):
            fn = getattr(fn, part)
        return fn(*args, **params)
    call.__name__ = path
    return call


def _tensor_first(path):
    """torch's ``path`` with the first operand (an integer order or shape) as a tensor of x's
    dtype (an int64 one would have torch compute its lgamma in float32)."""
    def call(a, x):
        torch = _torch()
        return _by_name(path)(a.to(x.dtype) if torch.is_tensor(a) else torch.tensor(float(a), dtype=x.dtype), x)
    return call


def _polygamma(n, x):
    """torch.polygamma takes one int order: an array of orders is done order by order."""
    torch = _torch()
    if not torch.is_tensor(n):
        return torch.polygamma(n, x)
    n, xb = torch.broadcast_tensors(n, x)
    out = torch.zeros_like(xb)
    for k in torch.unique(n).tolist():
        out = torch.where(n == k, torch.polygamma(int(k), xb), out)
    return out


def _betaln(a, b):
    torch = _torch()
    return torch.lgamma(a) + torch.lgamma(b) - torch.lgamma(a + b)


TORCH = {name: _by_name(name) for name in (
    "asinh", "acosh", "atanh", "sinc", "hypot", "logaddexp", "logaddexp2", "fmax", "fmin", "fmod",
    "copysign", "frexp", "xlogy", "logit", "erfc", "erfinv", "digamma", "i0")}
TORCH.update({name: _by_name("special." + name) for name in (
    "xlog1py", "entr", "erfcx", "ndtr", "ndtri", "log_ndtr", "i1", "i0e", "i1e")})
TORCH.update({
    "ldexp": lambda x, e: _torch().ldexp(x, e.double()),  # (torch's int powers refuse negative ones)
    "gammaln": _by_name("lgamma"), "polygamma": _polygamma, "zeta": _tensor_first("special.zeta"),
    "gammainc": _tensor_first("special.gammainc"), "gammaincc": _tensor_first("special.gammaincc"),
    "betaln": _betaln, "beta": lambda a, b: _betaln(a, b).exp(),  # (positive samples: B > 0)
    "erfcinv": lambda x: _torch().erfinv(1 - x),
})
NO_TORCH = {
    "cbrt": "PyTorch has no cube root (x ** (1/3) is nan for x < 0)",
    "gamma": "PyTorch has lgamma only (no sign)",
    "sinc_slope": "sinc's derivative, an internal half of sinc (whose oracle covers it)",
    "betainc": "PyTorch has no incomplete beta function",
    "jv": "PyTorch's Bessel functions have fixed orders and no gradient",
    "yv": "PyTorch's Bessel functions have fixed orders and no gradient",
    "iv": "PyTorch's Bessel functions have fixed orders and no gradient",
    "ive": "PyTorch's Bessel functions have fixed orders and no gradient",
}


# -- random broadcastable operands for the oracle (merged by test_oracle_table.py like TORCH) --------

def _broadcastable(rng):
    """Two shapes that broadcast against each other (dims of 1, dropped leading dims)."""
    base = tuple(int(d) for d in rng.integers(1, 5, int(rng.integers(1, 4))))
    def one():
        lead = int(rng.integers(0, len(base) + 1))
        return tuple(1 if rng.random() < 0.4 else d for d in base[lead:])
    return one(), one()


def _draw(kind, rng, shape):
    if kind == "normal":
        return rng.standard_normal(shape)
    if kind == "pos":
        return rng.uniform(0.5, 2.0, shape)
    if kind == "away":
        return rng.uniform(0.3, 2.0, shape) * rng.choice([-1.0, 1.0], shape)
    return rng.integers(1, 4, shape)  # "order": small positive integers


def _pair(x_kind, y_kind):
    def make(rng):
        sx, sy = _broadcastable(rng)
        return (_draw(x_kind, rng, sx), _draw(y_kind, rng, sy)), {}
    return make


BROADCAST_INPUTS = {
    "hypot": _pair("normal", "normal"), "logaddexp": _pair("normal", "normal"),
    "logaddexp2": _pair("normal", "normal"), "fmax": _pair("normal", "normal"), "fmin": _pair("normal", "normal"),
    "fmod": _pair("away", "pos"), "copysign": _pair("away", "away"), "ldexp": _pair("normal", "order"),
    "xlogy": _pair("normal", "pos"), "xlog1py": _pair("normal", "pos"), "beta": _pair("pos", "pos"),
    "betaln": _pair("pos", "pos"), "polygamma": _pair("order", "pos"), "zeta": _pair("order", "pos"),
    "gammainc": _pair("order", "pos"), "gammaincc": _pair("order", "pos"),
}
