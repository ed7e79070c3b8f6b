"""Gamma and Dirichlet draws that carry gradients to their concentrations (PyTorch's
``torch._standard_gamma``, ``torch._standard_gamma_grad``, ``torch._sample_dirichlet``
and ``torch._dirichlet_grad``).

A gamma draw cannot be written as ``f(alpha, noise)`` with a smooth ``f`` we could
differentiate, so its gradient comes from *implicit* reparameterization: a draw ``x``
is ``F^-1(u; alpha)`` for a uniform ``u`` and the CDF ``F``; holding ``u`` fixed,
``dx/dalpha = -(dF/dalpha) / (dF/dx)``. ``dF/dx`` is the density; ``dF/dalpha`` of the
regularized incomplete gamma (and beta) function has no closed form, so it is summed
here: a power series below the bulk of the distribution, a continued fraction above it
(each where it converges fast and nothing cancels), the continued fraction
differentiated by running it on dual numbers; for large gamma shapes, where those need
O(sqrt(alpha)) terms, a quadrature of the same derivative as an integral. All agree
with high-precision values to about 1e-13 relative, unlike PyTorch's fitted
approximations (off by up to 1e-4 for Gamma and 1e-2 for Dirichlet at some points).

A Dirichlet draw is normalized gammas; its gradient is PyTorch's reparameterization
through the marginal Beta(alpha_i, total - alpha_i) of each coordinate, with the other
coordinates shrinking in proportion, so that gradients match PyTorch's.

Draws come from the device's NumPy/CuPy generator (``manual_seed`` repeats them); the
series run on the host in float64 whatever the device and dtype.
"""
import tracegrad

from .. import backend
from ..backend import cpu as np  # (the series run on the host, in float64)
from ..runtime.creation import _stream
from ..runtime.function import Function, once_differentiable
from ..runtime.tensor import wrap
from ..runtime.type_info import finfo

__all__ = ["_dirichlet_grad", "_sample_dirichlet", "_standard_gamma", "_standard_gamma_grad",
           "dirichlet_grad", "standard_gamma_grad"]

_EPS = 1e-15         # relative size of the last term / step of a converged sum
_TINY = 1e-300       # what a vanishing Lentz denominator is replaced with
_MAX_STEPS = 200000  # (steps grow like sqrt(alpha): enough for Beta concentrations up to ~1e9)
_LARGE_ALPHA = 1000.0  # from here on, gamma gradients by quadrature (a fixed cost)
_GAUSS_LEGENDRE = np.polynomial.legendre.leggauss(96)


# -- scalar building blocks (float64 NumPy arrays) ------------------------------------------

def _digamma(a):
    """psi(a) for a > 0: the recurrence psi(a) = psi(a + 1) - 1/a up to a >= 10, then the
    asymptotic series (our own, so that these gradients need no SciPy)."""
    a = np.array(a, dtype=np.float64)
    shift = np.zeros_like(a)
    for _ in range(10):
        small = a < 10
        shift = np.where(small, shift - 1 / np.where(small, a, 1), shift)
        a = np.where(small, a + 1, a)
    return shift + np.log(a) - _log_minus_digamma(a)


def _log_minus_digamma(a):
    """``log(a) - psi(a)`` for a >= 10, by its asymptotic series (no cancellation)."""
    r = 1 / (a * a)
    return 0.5 / a + r * (1 / 12 - r * (1 / 120 - r * (1 / 252 - r * (1 / 240 - r * (1 / 132)))))


def _expm1_minus_x(s):
    """``e^s - 1 - s``, without cancellation for small ``s``."""
    term = s * s / 2
    total = term
    for k in range(3, 22):
        term = term * s / k
        total = total + term
    return np.where(np.abs(s) < 0.5, total, np.expm1(s) - s)


class _Dual:
    """``v + d * eps`` with ``eps**2 = 0``: a value and its derivative in one parameter,
    carried through arithmetic (forward mode, on arrays)."""
    __slots__ = ("d", "v")
    __array_ufunc__ = None  # (NumPy arrays defer to us: ``array + dual`` is a dual)

    def __init__(self, v, d=0.0):
        self.v, self.d = v, d

    @staticmethod
    def of(x):
        return x if isinstance(x, _Dual) else _Dual(x)

    def __add__(self, o):
        o = _Dual.of(o)
        return _Dual(self.v + o.v, self.d + o.d)

    __radd__ = __add__

    def __neg__(self):
        return _Dual(-self.v, -self.d)

    def __sub__(self, o):
        return self + (-_Dual.of(o))

    def __rsub__(self, o):
        return _Dual.of(o) - self

    def __mul__(self, o):
        o = _Dual.of(o)
        return _Dual(self.v * o.v, self.d * o.v + self.v * o.d)

    __rmul__ = __mul__

    def __truediv__(self, o):
        o = _Dual.of(o)
        q = self.v / o.v
        return _Dual(q, (self.d - q * o.d) / o.v)

    def __rtruediv__(self, o):
        return _Dual.of(o) / self


def _nonzero(z):
    """Lentz's guard: a denominator that vanished becomes tiny (its derivative kept)."""
    return _Dual(np.where(z.v == 0, _TINY, z.v), z.d)


def _continued_fraction(b0, term):
    """``b0 + a1/(b1 + a2/(b2 + ...))`` by the modified Lentz method, on duals;
    ``term(j)`` gives ``(a_j, b_j)``. Runs until every element's value and derivative
    have settled."""
    f = _nonzero(b0)
    c, d = f, _Dual(np.zeros_like(f.v))
    for j in range(1, _MAX_STEPS):
        a, b = term(j)
        d = 1 / _nonzero(b + a * d)
        c = _nonzero(b + a / c)
        step = c * d
        f = f * step
        settled = (np.abs(step.v - 1) <= _EPS) & (np.abs(f.v * step.d) <= _EPS * np.abs(f.d) + _TINY)
        if np.all(settled | np.isnan(f.v)):
            return f
    raise RuntimeError("implicit reparameterization: the continued fraction did not converge "
                       "(a concentration too large?)")


# -- d(gamma draw)/d(alpha) ------------------------------------------------------------------

def _gamma_grad_series(a, x):
    """``dx/da`` for x < a + 1 from the series ``P(a, x) = x^a e^-x sum_n x^n /
    Gamma(a + n + 1)``: with ``c_n = x^n / (a (a+1) ... (a+n))`` it is
    ``x sum_n c_n (psi(a + n + 1) - log x)``; every ``c_n`` is below the one before."""
    log_x = np.log(x)
    c, psi = 1 / a, _digamma(a + 1)
    total = c * (psi - log_x)
    for n in range(1, _MAX_STEPS):
        ratio = x / (a + n)
        c = c * ratio
        psi = psi + 1 / (a + n)
        term = c * (psi - log_x)
        total = total + term
        tail = np.abs(term) / np.maximum(1 - ratio, 1e-300)  # (a bound on what is left)
        if np.all((tail <= _EPS * np.abs(total)) | np.isnan(total)):
            return x * total
    raise RuntimeError("implicit reparameterization: the gamma series did not converge")


def _gamma_grad_fraction(a, x):
    """``dx/da`` for x >= a + 1 from Legendre's continued fraction ``Q(a, x) = x^a e^-x /
    Gamma(a) * h``, ``h = 1/(x+1-a - 1(1-a)/(x+3-a - 2(2-a)/(...)))``:
    ``dx/da = x ((log x - psi(a)) h + dh/da)``."""
    alpha = _Dual(a, np.ones_like(a))
    g = _continued_fraction(x + 1 - alpha, lambda j: (-j * (j - alpha), x + 2 * j + 1 - alpha))
    h = 1 / g
    return x * ((np.log(x) - _digamma(a)) * h.v + h.d)


def _gamma_grad_quadrature(a, x):
    """``dx/da`` for large a, by Gauss-Legendre quadrature. With ``t = x e^s`` the upper
    tail's alpha-derivative over the density is ``dx/da = x int_0^inf e^phi(s) (log x -
    psi(a) + s) ds``, ``phi(s) = a s - x (e^s - 1)`` (the lower tail's the same integral
    over s < 0, negated). Each is taken on the side where ``phi`` falls from 0
    monotonically (upper for x >= a), in units ``r = s sqrt(x)`` where it is close to
    ``-k r - r^2 / 2``, over r up to where that is -60: smooth, so 96 nodes give
    ~1e-13 (checked against the series from a = 100)."""
    nodes, weights = _GAUSS_LEGENDRE
    sign = np.where(x >= a, 1.0, -1.0)
    sigma = 1 / np.sqrt(x)
    k = np.abs(a - x) * sigma
    reach = 1.5 * (np.sqrt(k * k + 120) - k)
    s = (sign * sigma * reach / 2)[:, None] * (nodes + 1)
    phi = (a - x)[:, None] * s - x[:, None] * _expm1_minus_x(s)
    log_x_minus_psi = np.log1p((x - a) / a) + _log_minus_digamma(a)
    integral = np.sum(weights * np.exp(phi) * (log_x_minus_psi[:, None] + s), axis=-1) * (sigma * reach / 2)
    return sign * x * integral


def standard_gamma_grad(alpha, x):
    """``dx/dalpha`` of standard gamma draws ``x`` (float64 arrays, broadcast), with the
    draw's CDF held fixed."""
    alpha, x = (np.array(v, dtype=np.float64) for v in np.broadcast_arrays(alpha, x))
    out = np.full(x.shape, np.nan)
    ok = (alpha > 0) & (x > 0) & np.isfinite(x) & np.isfinite(alpha)
    large = ok & (alpha >= _LARGE_ALPHA)
    low = ok & ~large & (x < alpha + 1)
    high = ok & ~large & ~low
    for part, method in ((low, _gamma_grad_series), (high, _gamma_grad_fraction), (large, _gamma_grad_quadrature)):
        if part.any():
            out[part] = method(alpha[part], x[part])
    out[(x == 0) & (alpha > 0)] = 0.0  # (a draw that underflowed stays at zero)
    return out


# -- d(Dirichlet draw)/d(alpha) ----------------------------------------------------------------

def _beta_fraction(a, b, x):
    """The continued fraction ``h`` of ``I_x(a, b) = x^a (1-x)^b / (a B(a, b)) * h``
    (either argument may be a dual), fast for ``x < (a+1)/(a+b+2)``."""
    def term(j):
        m = j // 2
        if j % 2:
            return -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)), 1.0
        return m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)), 1.0
    return 1 / _continued_fraction(_Dual(np.ones_like(x)), term)


def dirichlet_grad(x, alpha, total):
    """PyTorch's ``_dirichlet_grad``: ``dx/dalpha`` of a Beta(alpha, total - alpha) draw
    ``x`` (the other parameter held, the CDF held fixed), divided by ``1 - x``."""
    x, a, t = (np.array(v, dtype=np.float64) for v in np.broadcast_arrays(x, alpha, total))
    b = t - a
    out = np.full(x.shape, np.nan)
    ok = (a > 0) & (b > 0) & (x >= 0) & (x <= 1)
    low = ok & (x < (a + 1) / (a + b + 2))
    high = ok & ~low
    log_x = np.log(np.where(ok, x, 0.5))
    slope = _digamma(np.where(ok, a + b, 1)) - _digamma(np.where(ok, a, 1))  # (d log B / da)
    if low.any():
        xa, aa, bb = x[low], a[low], b[low]
        h = _beta_fraction(_Dual(aa, np.ones_like(aa)), bb, xa)
        out[low] = -(xa / aa) * ((log_x[low] - 1 / aa + slope[low]) * h.v + h.d)
    if high.any():
        xa, aa, bb = x[high], a[high], b[high]
        h = _beta_fraction(bb, _Dual(aa, np.ones_like(aa)), 1 - xa)
        out[high] = (xa / bb) * ((log_x[high] + slope[high]) * h.v + h.d)
    out[ok & (x == 0)] = 0.0
    out[(a > 0) & (b == 0)] = 0.0  # (one coordinate: always 1, nothing moves)
    return out


# -- Tensor level ------------------------------------------------------------------------------

def _host(t):
    """A float64 NumPy copy of Tensor ``t``'s values."""
    return np.asarray(backend.namespace_of(t._data).to_host(t._data), dtype=np.float64)


def _like(values, t):
    """Host float64 ``values`` as a Tensor on ``t``'s device in ``t``'s dtype."""
    xp = backend.namespace_of(t._data)
    return wrap(xp.from_host(np.ascontiguousarray(values).astype(t._data.dtype)))


def _check_floating(t, op, kernel, position="input"):
    """PyTorch's checks of a first argument: a Tensor (``op`` names the function), of a
    floating dtype (``kernel`` names what is not implemented for others)."""
    if not isinstance(t, tracegrad.Tensor):
        raise TypeError(f"{op}(): argument '{position}' (position 1) must be Tensor, not {type(t).__name__}")
    if not t.dtype.is_floating_point:
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{t.dtype.scalar_name}'")


def _valid_alpha(concentration):
    """Host float64 concentrations, with where each is a usable gamma shape; as in
    PyTorch, a draw for a shape that is not (<= 0, NaN) is zero."""
    alpha = _host(concentration.detach())
    valid = alpha > 0
    return np.where(valid, alpha, 1.0), valid


def _draw(concentration, generator):
    """Standard gamma draws (float64, host) with shapes ``concentration``."""
    xp = backend.namespace_of(concentration._data)
    alpha, valid = _valid_alpha(concentration)
    draws = np.asarray(xp.to_host(_stream(generator, xp).standard_gamma(xp.from_host(alpha))), dtype=np.float64)
    return np.where(valid, draws, 0.0)


def _log_draw(concentration, generator):
    """log of standard gamma draws, exact also where the draws underflow: below 1, a
    Gamma(alpha) draw is a Gamma(alpha + 1) draw times ``U ** (1/alpha)``."""
    xp = backend.namespace_of(concentration._data)
    alpha, valid = _valid_alpha(concentration)
    small = alpha < 1
    stream = _stream(generator, xp)
    boosted = np.asarray(xp.to_host(stream.standard_gamma(xp.from_host(np.where(small, alpha + 1, alpha)))))
    u = np.asarray(xp.to_host(stream.random(alpha.shape)))
    with np.errstate(divide="ignore"):
        logs = np.log(boosted) + np.where(small, np.log1p(-u) / np.where(small, alpha, 1), 0.0)
    return np.where(valid, logs, -np.inf)


class _StandardGamma(Function):
    """Standard gamma draws whose gradient in the concentration is the implicit one."""

    @staticmethod
    def forward(ctx, concentration, generator=None):
        x = _draw(concentration, generator)
        x = np.maximum(x.astype(concentration._data.dtype), finfo(concentration.dtype).tiny)
        out = _like(x, concentration)
        ctx.save_for_backward(concentration, out)
        return out

    @staticmethod
    @once_differentiable
    def backward(ctx, grad):
        concentration, x = ctx.saved_tensors
        return grad * _standard_gamma_grad(concentration, x), None


def _standard_gamma(concentration, generator=None):
    """Gamma(concentration, 1) draws, differentiable with respect to the concentration."""
    _check_floating(concentration, "_standard_gamma", "gamma_cpu")
    return _StandardGamma.apply(concentration, generator)


def _standard_gamma_grad(self, output):
    """``d output / d self`` for draws ``output`` of ``_standard_gamma(self)``."""
    _check_floating(self, "_standard_gamma_grad", "_standard_gamma_grad_cpu", "self")
    return _like(standard_gamma_grad(_host(self.detach()), _host(output.detach())), self)


def _sample_dirichlet(concentration, generator=None):
    """Dirichlet draws (no gradient): normalized gamma draws along the last dim, in log
    space so that tiny concentrations still give a point of the simplex."""
    _check_floating(concentration, "_sample_dirichlet", "dirichlet")
    logs = _log_draw(concentration, generator)
    peak = np.max(logs, axis=-1, keepdims=True)
    weights = np.exp(logs - np.where(np.isfinite(peak), peak, 0))
    total = weights.sum(-1, keepdims=True)
    x = np.where(total > 0, weights / np.where(total > 0, total, 1), 1 / logs.shape[-1])  # (none valid: uniform)
    return _like(np.maximum(x, finfo(concentration.dtype).tiny), concentration)


def _dirichlet_grad(x, alpha, total):
    """PyTorch's ``torch._dirichlet_grad`` (see :func:`dirichlet_grad`)."""
    _check_floating(x, "_dirichlet_grad", "_dirichlet_grad_cpu", "x")
    return _like(dirichlet_grad(_host(x.detach()), _host(alpha.detach()), _host(total.detach())), x)


class _Dirichlet(Function):
    """Dirichlet draws whose gradient in the concentration is the implicit one."""

    @staticmethod
    def forward(ctx, concentration):
        x = _sample_dirichlet(concentration)
        ctx.save_for_backward(x, concentration)
        return x

    @staticmethod
    @once_differentiable
    def backward(ctx, grad):
        x, concentration = ctx.saved_tensors
        return _dirichlet_backward(x, concentration, grad)


def _dirichlet_backward(x, concentration, grad_output):
    """The concentration's gradient given the draws' (PyTorch's ``_Dirichlet_backward``):
    moving ``alpha_i`` moves ``x_i`` and shrinks the others in proportion."""
    total = concentration.sum(-1, True).expand_as(concentration)
    grad = _dirichlet_grad(x, concentration, total)
    return grad * (grad_output - (x * grad_output).sum(-1, True))


_StandardGamma._backward_cls.__name__ = "StandardGammaBackward0"  # (PyTorch's node name)
