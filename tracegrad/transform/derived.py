"""Transforms made of ``vjp`` and ``jvp``: ``jacrev``, ``jacfwd``, ``elementwise_grad``
and ``hvp``, written once over :func:`~.api.vjp_at` / :func:`~.api.jvp_at`, so each runs
in every mode those do (``"tape"``, ``"ast"``, ``"auto"``) with the same results.

Jacobians follow JAX's layout: the output's structure outside, inside it one Jacobian per
differentiated argument (a tuple for a tuple of ``argnums``), each ``out.shape + arg.shape``. A
complex output needs ``holomorphic=True`` (whose Jacobian is ``f'(z)``'s matrix, read off
with real unit cotangents or tangents), as in JAX.
"""
import functools

from ..backend import cpu as np  # host-side shapes and dtypes
from ..backend import namespace_of
from .checks import argnum_positions, check_argnums, check_input, check_outputs, positional_arguments
from .tree import flatten, unflatten

__all__ = ["jacrev", "jacfwd", "elementwise_grad", "hvp"]


def _xp(x):
    """The array namespace to build constants like ``x`` in (NumPy for tracers, whose
    NumPy calls are recorded)."""
    from ..runtime.tensor import Tensor
    from .tape.tape import Var
    if isinstance(x, Var) or not hasattr(x, "shape"):
        return np
    return namespace_of(x._data if isinstance(x, Tensor) else x)


def _dtype(x):
    from ..runtime.tensor import Tensor
    from .tape.tape import Var
    if isinstance(x, Var):
        return x.npdtype
    if isinstance(x, Tensor):
        return x._data.dtype
    return x.dtype if hasattr(x, "dtype") else np.result_type(x)


def _unit(like, k=None):
    """Zeros shaped and typed like ``like``, with a (real) 1 at flat index ``k``."""
    from ..runtime.tensor import Tensor, wrap
    shape = tuple(getattr(like, "shape", ()))
    e = _xp(like).zeros(shape, dtype=_dtype(like))
    if k is not None:
        e.reshape(-1)[k] = 1
    if isinstance(like, Tensor):
        return wrap(e)
    return e if hasattr(like, "shape") else e[()]


def _stack(parts, shape, like, axes=None):
    """``parts`` (one array per unit vector) stacked, shaped ``shape`` and then, with
    ``axes``, permuted; a Tensor when ``like`` is one."""
    from ..runtime.tensor import Tensor, wrap
    xp = _xp(like)
    from .tape.tracing import _unbatched
    raw = [_unbatched(p)._data if isinstance(p, Tensor) else p for p in parts]
    out = xp.stack(raw).reshape(shape) if raw else xp.zeros(shape, dtype=_dtype(like))
    if axes is not None:
        out = out.transpose(axes)
    return wrap(out) if isinstance(like, Tensor) else out


def _size(x):
    n = 1
    for s in getattr(x, "shape", ()):
        n *= s
    return n


def _prepared(f, args, kwargs, argnums, fname):
    """Keyword arguments moved to their positions; the differentiated positions."""
    if kwargs:
        args, kwargs = positional_arguments(f, args, kwargs)
        if kwargs:
            f = functools.partial(f, **kwargs)
    nums, single = argnum_positions(argnums, len(args), fname)
    return f, tuple(args), nums, single


def jacrev(f, argnums=0, has_aux=False, holomorphic=False, mode="auto"):
    """The Jacobian of ``f`` by reverse mode: one pullback per output element (cheap for
    few outputs). Results: ``out.shape + arg.shape`` per argument in ``argnums``."""
    from .api import _check_mode, vjp_at
    _check_mode(mode)
    check_argnums(argnums)

    @functools.wraps(f)
    def jac(*args, **kwargs):
        g, args, nums, single = _prepared(f, args, kwargs, argnums, "jacrev")
        for n in nums:
            for x in flatten(args[n])[0]:
                check_input(x, n, "jacrev", holomorphic)
        made = vjp_at(g, args, nums, has_aux, mode)
        out, pull = made[0], made[1]
        check_outputs(out, "jacrev", holomorphic)
        outs, ospec = flatten(out)
        rows = []  # per output leaf, per element: the pulled-back cotangents (one per num)
        for i, o in enumerate(outs):
            for k in range(_size(o)):
                ct = unflatten(ospec, [_unit(p, k if j == i else None) for j, p in enumerate(outs)])
                rows.append(pull(ct))
        per_out, start = [], 0   # (JAX's layout: the output's structure outside, then the
        for o in outs:           # arguments' -- a tuple for a tuple of argnums)
            size = _size(o)
            block = rows[start:start + size]
            start += size
            per_num = []
            for m, n in enumerate(nums):
                leaves, spec = flatten(args[n])
                per_num.append(unflatten(spec, [
                    _stack([flatten(r[m])[0][j] for r in block], tuple(getattr(o, "shape", ())) +
                           tuple(getattr(leaf, "shape", ())), leaf) for j, leaf in enumerate(leaves)]))
            per_out.append(per_num[0] if single else tuple(per_num))
        result = unflatten(ospec, per_out)
        return (result, made[2]) if has_aux else result
    return jac


def jacfwd(f, argnums=0, has_aux=False, holomorphic=False, mode="auto"):
    """The Jacobian of ``f`` by forward mode: one pushforward per input element (cheap for
    few inputs). Results: ``out.shape + arg.shape`` per argument in ``argnums``."""
    from .api import _check_mode, jvp_at
    _check_mode(mode)
    check_argnums(argnums)
    if has_aux:
        raise NotImplementedError("jacfwd(has_aux=True): use jacrev, which returns the auxiliary data")

    @functools.wraps(f)
    def jac(*args, **kwargs):
        g, args, nums, single = _prepared(f, args, kwargs, argnums, "jacfwd")
        leaves_of = []
        for n in nums:
            leaves = flatten(args[n])[0]
            for x in leaves:
                check_input(x, n, "jacfwd", holomorphic)
            leaves_of.append(leaves)
        columns, out = [], None   # per (num, leaf, element): the output tangents
        for m, n in enumerate(nums):
            for j in range(len(leaves_of[m])):
                for k in range(_size(leaves_of[m][j])):
                    tangents = [unflatten(flatten(args[q])[1], [
                        _unit(x, k if (q == n and i == j) else None)
                        for i, x in enumerate(leaves_of[mq])]) for mq, q in enumerate(nums)]
                    out, t = jvp_at(g, args, nums, tangents, mode)
                    columns.append((m, j, t))
        if out is None:  # (no input elements: f is run once for the output's shape)
            out = g(*args)
        check_outputs(out, "jacfwd", holomorphic)
        outs, ospec = flatten(out)
        per_out = []  # (JAX's layout, as jacrev's)
        for i, o in enumerate(outs):
            per_num = []
            for m, n in enumerate(nums):
                spec = flatten(args[n])[1]
                blocks = []
                for j, leaf in enumerate(leaves_of[m]):
                    cols = [flatten(t)[0][i] for mm, jj, t in columns if mm == m and jj == j]
                    oshape, ishape = tuple(getattr(o, "shape", ())), tuple(getattr(leaf, "shape", ()))
                    # (stacked input-element first, then moved behind the output's dims)
                    axes = tuple(range(len(ishape), len(ishape) + len(oshape))) + tuple(range(len(ishape)))
                    blocks.append(_stack(cols, ishape + oshape, o, axes))
                per_num.append(unflatten(spec, blocks))
            per_out.append(per_num[0] if single else tuple(per_num))
        return unflatten(ospec, per_out)
    return jac


def elementwise_grad(f, argnums=0, mode="auto", has_aux=False):
    """The gradient of ``sum(f(x))``: for an elementwise ``f`` each element's own
    derivative (HIPS autograd's ``elementwise_grad``), by one pullback of ones."""
    from .api import _check_mode, vjp_at
    _check_mode(mode)
    check_argnums(argnums)

    @functools.wraps(f)
    def egrad(*args, **kwargs):
        g, args, nums, single = _prepared(f, args, kwargs, argnums, "elementwise_grad")
        made = vjp_at(g, args, nums, has_aux, mode)
        out, pull = made[0], made[1]
        leaves, spec = flatten(out)
        ones = unflatten(spec, [_xp(o).ones(getattr(o, "shape", ()), dtype=_dtype(o)) for o in leaves])
        grads = pull(ones)
        grads = grads[0] if single else tuple(grads)
        return (grads, made[2]) if has_aux else grads
    return egrad


def hvp(f, primals, tangents, argnums=None, mode="auto"):
    """The Hessian of scalar ``f`` times ``tangents``: forward mode over the gradient
    (``jvp(grad(f), primals, tangents)``), without forming the Hessian. Returns one
    product per differentiated primal (``argnums``: all of them by default)."""
    from .api import grad, jvp_at
    primals, tangents = tuple(primals), tuple(tangents)
    nums = tuple(range(len(primals))) if argnums is None else \
        ((argnums,) if isinstance(argnums, int) else tuple(argnums))
    if len(tangents) != len(nums):
        raise ValueError(f"hvp: {len(nums)} differentiated primals but {len(tangents)} tangents")
    gradient = grad(f, argnums=nums, mode=mode)
    return jvp_at(gradient, primals, nums, tangents, mode)[1]
