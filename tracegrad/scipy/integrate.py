"""``scipy.integrate.odeint`` with derivatives in ``y0``, ``t`` and ``args`` (rule
``odeint``, :mod:`tracegrad.rules.ode`: the adjoint method in reverse mode, forward
sensitivities in forward mode, each solved by SciPy's odeint itself), on arrays, tape
tracers and Tensors. SciPy's signature; its solver options pass through. Results that
SciPy adds with ``full_output=True`` (solver diagnostics) are not offered: refused."""
from ..backend import cpu
from ..rules.ode import odeint as _odeint

__all__ = ["counterpart", "odeint"]


def _operand(x):
    return x if hasattr(x, "shape") and hasattr(x, "ndim") else cpu.asarray(x, dtype=cpu.float64)


def _static(v):
    """A solver option as SciPy takes it: a number of a traced or Tensor option read as a
    Python number (a tape guards the value read)."""
    if callable(v) or isinstance(v, (int, float, str)):
        return v
    if getattr(v, "ndim", 0) == 0 and hasattr(v, "shape"):
        return float(v) if getattr(v, "dtype", None) is None or "float" in str(v.dtype) else int(v)
    return v


def odeint(func, y0, t, args=(), Dfun=None, col_deriv=0, full_output=0, ml=None, mu=None, rtol=None,
           atol=None, tcrit=None, h0=0.0, hmax=0.0, hmin=0.0, ixpr=0, mxstep=0, mxhnil=0, mxordn=12,
           mxords=5, printmessg=0, tfirst=False):
    """``y`` at the times ``t`` for ``dy/dt = func(y, t, *args)`` (``func(t, y, *args)`` with
    ``tfirst``), ``y(t[0]) = y0``: an array of shape ``(len(t), len(y0))``."""
    if full_output:
        raise NotImplementedError("odeint(..., full_output=True): the solver's diagnostics are not offered "
                                  "with derivatives; call scipy.integrate.odeint for them")
    if not isinstance(args, tuple):
        args = (args,)
    rhs = func if not tfirst else (lambda y, s, *a: func(s, y, *a))
    given = {"Dfun": Dfun, "col_deriv": col_deriv, "ml": ml, "mu": mu, "rtol": rtol, "atol": atol,
             "tcrit": tcrit, "h0": h0, "hmax": hmax, "hmin": hmin, "ixpr": ixpr, "mxstep": mxstep,
             "mxhnil": mxhnil, "mxordn": mxordn, "mxords": mxords, "printmessg": printmessg}
    defaults = {"col_deriv": 0, "h0": 0.0, "hmax": 0.0, "hmin": 0.0, "ixpr": 0, "mxstep": 0, "mxhnil": 0,
                "mxordn": 12, "mxords": 5, "printmessg": 0}
    options = tuple((k, _static(v)) for k, v in given.items() if v is not None and defaults.get(k, None) is not v)
    y0, t = _operand(y0), _operand(t)
    scalar = y0.ndim == 0
    ys = _odeint(y0.reshape((1,)) if scalar else y0, t, *[_operand(a) for a in args], func=rhs, options=options)
    return ys


def counterpart(fn):
    """This module's function for SciPy's own ``odeint`` (found by module and name, without
    importing SciPy), or None: what the AST path differentiates a call of it through."""
    module = getattr(fn, "__module__", None) or ""
    if module.startswith("scipy.integrate") and getattr(fn, "__name__", None) == "odeint":
        return odeint
    return None
