"""``scipy.integrate.odeint`` as a rule: ``ys = odeint(y0, t, *args, func=f)`` solves
``dy/dt = f(y, t, *args)`` from ``y(t[0]) = y0`` and gives ``y`` at every time of ``t``.

Its derivatives are themselves solutions of ODEs, solved by the same rule, so they have
derivatives in turn (second order, a jvp of a vjp):

* vjp -- the adjoint method (Pontryagin; Chen et al., *Neural ODEs*, 2018). Between two
  output times, the state ``y``, its adjoint ``a = dL/dy``, and the adjoints of the start
  time and of ``args`` are integrated together backwards in time:
  ``y' = f``, ``a' = -a . df/dy``, ``a_t0' = -a . df/dt``, ``a_args' = -a . df/dargs``
  (:class:`_Adjoint`). Each output's cotangent is added to ``a`` at its time; moving an
  output time ``t[i]`` moves that output by ``f(y(t[i]), t[i])``.
* jvp -- forward sensitivities: the tangent ``s`` of ``y`` follows
  ``s' = df/dy . s + df/dargs . dargs`` from ``s(t[0]) = dy0 - f(y0, t[0]) dt[0]``
  (:class:`_Sensitivity`), and each output gains ``f(y(t[i]), t[i]) dt[i]``.

The products with ``df/d.`` are ``f``'s own vjp and jvp, taken by tracegrad's front door
on the values SciPy hands the right-hand side (and on tracers, when these derivatives are
differentiated again). ``f`` may use any NumPy code the tape traces. The kernel is
SciPy's (LSODA), imported when it first runs; ``options`` are its keyword arguments
(``rtol``, ``atol``, ``mxstep``...), as ``((name, value), ...)``.
"""
from ._scipy import scipy_module
from ..backend import cpu
from .broadcast import broadcast_to, zeros_like
from .core import FLOAT, primitive
from .memory import cast
from .reduce import sum as total
from .shape import cat, reshape, split, stack

__all__ = ["odeint"]


def _scipy_odeint():
    return scipy_module("scipy.integrate", "odeint").odeint


@primitive(dtypes=FLOAT)
def odeint(xp, y0, t, *args, func, options=()):
    """``y`` at the times ``t`` (shape ``(len(t), len(y0))``) for ``dy/dt = func(y, t,
    *args)``, ``y(t[0]) = y0`` (a vector)."""
    if y0.ndim != 1 or t.ndim != 1:
        raise ValueError(f"odeint rule: y0 and t must be vectors, got shapes {y0.shape} and {t.shape}")
    host = getattr(xp, "name", "cpu") != "cpu"
    if host:
        y0, t, args = xp.to_host(y0), xp.to_host(t), tuple(xp.to_host(a) for a in args)
    wide = tuple(a.astype(cpu.float64) if a.dtype.kind == "f" else a for a in args)  # (SciPy solves in
    out = _scipy_odeint()(_concrete(func), y0, t, args=wide, **dict(options))          # float64: so does f)
    out = out.astype(y0.dtype, copy=False)
    return xp.from_host(out) if host else out


def _concrete(func):
    """``func`` called off any tape: SciPy hands it concrete values, and wants them back."""
    from ..transform.tape.tracing import off_tape

    def rhs(*args):
        with off_tape():
            return func(*args)
    return rhs


def _flat(v):
    """``v`` (an array, tracer, Tensor or number; a list of them) as a vector."""
    if isinstance(v, (list, tuple)):
        return cat(*[_flat(x) for x in v], dim=0) if v else cpu.zeros(0)
    if isinstance(v, (int, float, complex)) or not hasattr(v, "shape"):
        v = cpu.asarray(v, dtype=cpu.float64)
    return reshape(v, shape=(-1,))


def _rate(func, y, t, args, like):
    """``func(y, t, *args)`` as a vector of ``like``'s dtype (a float32 system whose
    right-hand side computes in float64 keeps float32 derivatives)."""
    f = _flat(func(y, t, *args))
    want, got = _dtype(like), _dtype(f)
    return f if want is None or got is None or want == got else cast(f, dtype=want, src_dtype=got)


def _dtype(v):
    d = getattr(v, "npdtype", None)  # (a tracer's; a Tensor's array's; an array's)
    d = d if d is not None else getattr(getattr(v, "_data", v), "dtype", None)
    return cpu.dtype(d) if d is not None else None


def _zeros(like, n):
    """A vector of ``n`` zeros in the kind (array, tracer, Tensor) and dtype of ``like``
    (not empty)."""
    return broadcast_to(zeros_like(reshape(like, shape=(-1,))[:1]), shape=(n,))


_JACOBIAN = ("Dfun", "col_deriv", "ml", "mu", "tcrit")  # (about f's Jacobian and times: not the derived systems')


def _derived(options):
    """The solver options for the systems the derivatives solve."""
    return tuple((k, v) for k, v in options if k not in _JACOBIAN)


class _Adjoint:
    """The right-hand side of the adjoint system, on the state ``(y, a, a_t0, a_args)``."""

    def __init__(self, func, size, arg_sizes):
        from ..transform.api import value_and_grad
        self.func, self.size, self.arg_sizes = func, size, arg_sizes

        def along(y, t, a, *args):  # (f's vjp, staged once: SciPy calls this often)
            f = _flat(func(y, t, *args))
            return total(f * a), f
        self.pull = value_and_grad(along, argnums=(0, 1) + tuple(range(3, 3 + len(arg_sizes))),
                                   has_aux=True, mode="tape")

    def __call__(self, state, t, *args):
        d = self.size
        (_, dy), grads = self.pull(state[:d], t, -state[d:2 * d], *args)
        return cat(dy, *[_flat(g) for g in grads], dim=0)


class _Sensitivity:
    """The right-hand side of the forward-sensitivity system, on the state ``(y, s)``, with
    the tangents of ``args`` after them."""

    def __init__(self, func, size, nargs):
        self.func, self.size, self.nargs = func, size, nargs

    def __call__(self, state, t, *rest):
        from ..transform.api import jvp
        d, k = self.size, self.nargs
        args, dargs = rest[:k], rest[k:]
        dy, ds = jvp(self.func, (state[:d], t, *args), (state[d:], t * 0.0, *dargs), mode="tape")
        return cat(_flat(dy), _flat(ds), dim=0)


@odeint.vjp_all(uses=("out", "t", "args"))
def odeint_vjp(g, out, y0, t, *args, func, options=()):
    n, d = out.shape
    sizes = tuple(int(cpu.prod(a.shape)) for a in args)
    adjoint = _Adjoint(func, d, sizes)
    a_y, a_t0, a_args = g[n - 1], _zeros(g, 1), _zeros(g, sum(sizes))
    moved = []   # the cotangents of t[n-1], ..., t[1]
    for i in range(n - 1, 0, -1):
        moved.append(total(_rate(func, out[i], t[i], args, out) * g[i]))
        a_t0 = a_t0 - moved[-1]
        state = cat(out[i], a_y, a_t0, a_args, dim=0)
        end = odeint(state, stack(t[i], t[i - 1], dim=0), *args, func=adjoint, options=_derived(options))[1]
        a_y, a_t0, a_args = end[d:2 * d] + g[i - 1], end[2 * d:2 * d + 1], end[2 * d + 1:]
    grad_t = cat(a_t0, *[reshape(m, shape=(1,)) for m in reversed(moved)], dim=0)
    pieces = split(a_args, sizes=sizes, dim=0) if len(sizes) > 1 else (a_args,) * len(sizes)
    return (a_y, grad_t) + tuple(reshape(p, shape=tuple(a.shape)) for p, a in zip(pieces, args))


@odeint.jvp_all
def odeint_jvp(tangents, out, y0, t, *args, func, options=()):
    dy0, dt, dargs = tangents[0], tangents[1], tangents[2:]
    n, d = out.shape
    start = dy0 - _rate(func, y0, t[0], args, out) * dt[0]
    path = odeint(cat(y0, start, dim=0), t, *args, *dargs, func=_Sensitivity(func, d, len(args)),
                  options=_derived(options))
    rates = stack(*[_rate(func, out[i], t[i], args, out) for i in range(n)], dim=0)
    return path[:, d:] + rates * reshape(dt, shape=(n, 1))
