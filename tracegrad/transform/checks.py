"""What the staged front door accepts, checked once for both staged paths.

The tape and the AST path differentiate the same functions, so they must refuse the
same things with the same error: a differentiated argument that is not floating point,
an output that is not one real number, an ``argnums`` that names no argument, a
``has_aux`` function that returns no pair. Each check raises the error JAX or PyTorch
raises for the same mistake (type and wording), naming what was wrong.
"""
import math

from ..backend import cpu as np  # host-side dtype checks only

__all__ = ["check_argnums", "argnum_positions", "check_input", "check_output", "check_outputs", "split_aux",
           "positional_arguments"]


def check_argnums(argnums):
    """``argnums`` is an int or a non-empty tuple/list of ints (checked when the transform
    is made, before any call)."""
    nums = argnums if isinstance(argnums, (tuple, list)) else (argnums,)
    for n in nums:
        if isinstance(n, bool) or not isinstance(n, int):
            raise TypeError(f"argnums must be an int or a tuple of ints, not {argnums!r} "
                            f"(an element of type {type(n).__name__})")
    if not nums:
        raise ValueError("argnums=() differentiates with respect to no argument; name at "
                         "least one (argnums=0 is the first)")
    return argnums


def argnum_positions(argnums, nargs, fname):
    """``(positions, single)``: ``argnums`` as non-negative positions among ``nargs``
    positional arguments, and whether one gradient (not a tuple) is returned."""
    check_argnums(argnums)
    single = isinstance(argnums, int)
    nums = (argnums,) if single else tuple(argnums)
    for n in nums:
        if not -nargs <= n < nargs:
            raise ValueError(f"argnums {argnums!r} out of range for {fname} called with "
                             f"{nargs} positional argument(s)")
    return tuple(n % nargs for n in nums), single


def positional_arguments(f, args, kwargs):
    """``(args, kwargs)`` with the keyword arguments moved to their parameters' positions
    (those left out in between filled with the function's own defaults), so that
    ``argnums`` means the same parameter however it is passed; only keyword-only
    parameters stay in ``kwargs``."""
    import inspect
    try:
        bound = inspect.signature(f).bind(*args, **kwargs)
    except (TypeError, ValueError) as e:
        if isinstance(e, ValueError):  # (no signature: leave the call as it is)
            return args, kwargs
        raise TypeError(f"{getattr(f, '__name__', 'f')}(): {e}") from None
    bound.apply_defaults()
    return bound.args, bound.kwargs


def _described(x):
    """What a value is, in a user's words (a tracer is the array it stands for)."""
    if getattr(x, "is_tracer", False):
        return f"an array of shape {tuple(x.shape)}"
    return type(x).__name__


def _dtype_of(x):
    d = getattr(x, "npdtype", None)  # a tracer
    if d is None:
        d = getattr(x, "dtype", None)
        d = getattr(d, "np", d)      # a tracegrad dtype: its NumPy one
    return None if d is None else np.dtype(d)


def check_input(x, n, fname, holomorphic=False):
    """A leaf of differentiated argument ``n`` must be floating point (real or complex):
    an integer or bool input has no gradient, as in JAX and PyTorch. A holomorphic
    derivative takes complex inputs only (as JAX's ``holomorphic=True``)."""
    if holomorphic:
        dtype = np.result_type(x) if isinstance(x, (int, float, complex, bool)) else _dtype_of(x)
        if dtype is None or dtype.kind != "c":
            raise TypeError(f"{fname} with holomorphic=True requires inputs with complex dtype, "
                            f"but argument {n} has {'dtype ' + dtype.name if dtype is not None else type(x).__name__}")
        return
    if type(x) is float or type(x) is complex:
        return
    dtype = None if isinstance(x, (int, bool)) else _dtype_of(x)
    if dtype is None or dtype.kind not in "fc":
        what = type(x).__name__ if dtype is None else f"dtype {dtype.name}"
        raise TypeError(f"{fname} requires real- or complex-valued (floating point) inputs, "
                        f"but argument {n} has {what}; pass floats (e.g. 1.0, not 1, or "
                        "x.astype(float))")


def check_outputs(out, fname, holomorphic=False):
    """Every output of a Jacobian (any pytree of arrays) must be floating point: real, or
    with ``holomorphic`` complex. A complex output of a non-holomorphic function has no
    Jacobian matrix over the reals a user could mean (JAX's refusal and message)."""
    from .tree import flatten
    for o in flatten(out)[0]:
        dtype = _dtype_of(o)
        dtype = np.result_type(o) if dtype is None else dtype
        if dtype.kind == "c" and not holomorphic:
            raise TypeError(f"{fname} requires real-valued outputs (output dtype that is a sub-dtype "
                            f"of np.floating), but got {dtype.name}. For holomorphic differentiation, "
                            "pass holomorphic=True. For differentiation of non-holomorphic functions "
                            "involving complex outputs, use jax-style vjp/jvp with real and imaginary parts")
        if holomorphic and dtype.kind != "c":
            raise TypeError(f"{fname} with holomorphic=True requires outputs with complex dtype, but got "
                            f"{dtype.name}")
        if dtype.kind not in "fc":
            raise TypeError(f"{fname} requires floating-point outputs, but got {dtype.name}")


def check_output(out, fname, holomorphic=False):
    """The differentiated output must be one real floating-point number: a Python float,
    or a floating-point array, tensor or tracer with one element (as ``backward()``
    needs). Anything else would have no gradient to seed, or a silently meaningless one.
    With ``holomorphic``: one complex number instead."""
    if holomorphic:
        dtype = np.result_type(out) if isinstance(out, (int, float, complex, bool)) else _dtype_of(out)
        if dtype is None or dtype.kind != "c":
            raise TypeError(f"{fname} with holomorphic=True requires outputs with complex dtype, but "
                            f"the function returned {'dtype ' + dtype.name if dtype is not None else _described(out)}")
        if math.prod(getattr(out, "shape", ())) != 1:
            raise RuntimeError("grad can be implicitly created only for scalar outputs")
        return
    if type(out) is float:
        return
    dtype = None if isinstance(out, (int, bool, complex)) else _dtype_of(out)
    if dtype is None:
        if isinstance(out, (int, bool, complex)):
            dtype = np.result_type(out)
        else:
            raise TypeError(f"{fname} requires a scalar floating-point output (a float, or an "
                            f"array or tensor with one element), but the function returned "
                            f"{_described(out)}")
    if dtype.kind == "c":
        raise TypeError(f"{fname} requires real-valued outputs, but the output has dtype "
                        f"{dtype.name}; differentiate a real function of it (np.abs(z), "
                        "z.real), use vjp with a complex cotangent, or holomorphic=True for a "
                        "holomorphic function")
    if dtype.kind != "f":
        raise TypeError(f"{fname} requires a floating-point output, but the output has dtype "
                        f"{dtype.name}: an integer or bool result has no derivative")
    shape = tuple(getattr(out, "shape", ()))
    size = 1
    for s in shape:
        size *= s
    if size != 1:
        raise RuntimeError("grad can be implicitly created only for scalar outputs")


def split_aux(out, fname):
    """``(output, aux)`` of a function differentiated with ``has_aux=True``."""
    if not (isinstance(out, (tuple, list)) and len(out) == 2):
        raise TypeError(f"{fname} with has_aux=True expects the function to return a pair "
                        f"(output, auxiliary data), but it returned {_described(out)}"
                        + (f" of length {len(out)}" if isinstance(out, (tuple, list)) else ""))
    return out[0], out[1]
