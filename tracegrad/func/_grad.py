"""The reverse-mode transforms of torch.func: ``grad``, ``grad_and_value``, ``vjp``,
``jacrev`` and ``hessian``, on eager Tensors.

Each transform runs the function on *lifted* copies of the chosen inputs -- leaves of a
graph of its own -- and asks the eager engine for their gradients, so it never touches
anybody's ``.grad``. Lifting is what makes transforms compose:

* an input that already requires grad (an outer ``grad``, or the caller's tensor) is
  lifted as an alias (a view), still attached to the outer graph, and the gradient is
  computed with ``create_graph=True``, so the outer transform differentiates through it;
* under a ``vmap`` the lifted input is a BatchedTensor that is a leaf of the per-sample
  (logical) graph -- an input that is the same for every sample is expanded first -- so
  the backward pass runs batched and gives one gradient per sample.

Results of the outermost transform are plain tensors unless an input required grad (then
they stay differentiable, as in torch.func).
"""
import functools

from .. import autograd
from ..runtime import forward, grad_mode
from ..runtime.tensor import Tensor
from ..transform.tree import flatten, unflatten
from ._batched import BatchedTensor, batched, levels

__all__ = ["grad", "grad_and_value", "hessian", "jacrev", "vjp"]


# -- lifting inputs ---------------------------------------------------------------------------

def _innermost_vmap():
    for entry in reversed(levels()):
        if entry[0] == "vmap":
            return entry
    return None


def _lift(x):
    """A leaf (or an attached alias) standing for input ``x`` in this transform's graph."""
    if not isinstance(x, Tensor):
        raise ValueError(f"Thing passed to transform API must be Tensor, got {type(x)}")  # noqa: TRY004
    if x.dtype.is_floating_point is False and not x.is_complex():
        raise RuntimeError("only Tensors of floating point dtype can require gradients")
    vm = _innermost_vmap()
    if vm is not None:
        _, size, _, level = vm
        if x.requires_grad and type(x) is BatchedTensor and x._level == level:
            return x.view_as(x)
        phys = x._phys if type(x) is BatchedTensor and x._level == level else \
            x.unsqueeze(0).expand((size,) + tuple(x.shape))
        t = batched(phys, level)
        t._requires_grad = True
        return _with_tangent_of(x, t)
    if x.requires_grad:
        return x.view_as(x)
    return _with_tangent_of(x, x.detach().requires_grad_(True))


def _with_tangent_of(x, lifted):
    """``lifted`` with input ``x``'s forward AD tangent, if it has one: ``jvp`` (``jacfwd``)
    of a reverse transform differentiates the gradient computation (forward over reverse)."""
    tangent = forward.tangent_of(x) if forward.ACTIVE[0] else None
    if tangent is not None:
        forward.set_tangent(lifted, tangent)
    return lifted


def _lift_tree(tree):
    """(lifted leaves, lifted tree, spec, whether the results must stay differentiable:
    an input requires grad or carries a tangent)."""
    leaves, spec = flatten(tree)
    lifted = [_lift(x) for x in leaves]
    return lifted, unflatten(spec, lifted), spec, any(x.requires_grad for x in leaves) or _dual(leaves)


class _Level:
    """One transform's entry in levels() while its function runs."""

    def __enter__(self):
        self.outer = bool(levels())
        levels().append(("grad",))
        self.mode = grad_mode.enable_grad()
        self.mode.__enter__()
        return self

    def __exit__(self, *exc):
        self.mode.__exit__(*exc)
        levels().pop()
        return False


def _plain(tree, keep):
    """``tree`` with its tensors detached, unless the results must stay differentiable
    (a forward AD tangent stays, detached too: ``jvp`` of this transform reads it)."""
    if keep:
        return tree
    leaves, spec = flatten(tree)
    return unflatten(spec, [_detached(x) if isinstance(x, Tensor) else x for x in leaves])


def _detached(x):
    tangent = forward.tangent_of(x) if forward.ACTIVE[0] else None
    out = x.detach()
    if tangent is not None:
        forward.set_tangent(out, tangent.detach())
    return out


def _dual(tensors):
    """Whether a forward AD tangent rides on one of ``tensors``: the backward pass must then
    run on Tensors (``create_graph``) for the tangents to go through the vjps."""
    return forward.ACTIVE[0] and forward.has_tangent(tensors)


def _gradients(outputs, inputs, cotangents, create_graph, retain_graph=None):
    """d(outputs . cotangents)/d(inputs); zeros for an input the outputs do not use."""
    pairs = [(o, c) for o, c in zip(outputs, cotangents) if o.requires_grad]
    found = [None] * len(inputs)
    if pairs:
        found = autograd.grad([o for o, _ in pairs], inputs, [c for _, c in pairs], retain_graph=retain_graph,
                              create_graph=create_graph, allow_unused=True)
    return [g if g is not None else _zeros(tuple(x.shape), x) for g, x in zip(found, inputs)]


def _zeros(shape, like):
    """Zeros of ``shape`` in ``like``'s dtype and device (a plain tensor, also under vmap)."""
    from ..runtime.creation import zeros
    return zeros(shape, dtype=like.dtype, device=like.device)


# -- argnums ------------------------------------------------------------------------------------

def _check_argnums(argnums, nargs):
    def one(a):
        if not isinstance(a, int) or isinstance(a, bool):
            raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: {type(a)}")  # noqa: TRY004
        if not -nargs <= a < nargs:
            raise RuntimeError(f"Got argnum={a}, but only {nargs} positional inputs")
        return a % nargs
    if isinstance(argnums, tuple):
        if not argnums:
            raise RuntimeError("argnums must be non-empty")
        norm = tuple(one(a) for a in argnums)
        if len(set(norm)) != len(norm):
            raise RuntimeError(f"argnums elements must be unique, got {argnums}")
        return norm
    return one(argnums)


def _chosen(args, argnums):
    return tuple(args[i] for i in argnums) if isinstance(argnums, tuple) else args[argnums]


def _replace(args, argnums, new):
    args = list(args)
    if isinstance(argnums, tuple):
        for i, v in zip(argnums, new):
            args[i] = v
    else:
        args[argnums] = new
    return tuple(args)


def _split_aux(out, has_aux, api):
    if not has_aux:
        return out, None
    if not (isinstance(out, tuple) and len(out) == 2):
        raise RuntimeError(f"{api}(f)(*args): output of function f should be a tuple: (output, aux) "
                           "if has_aux is True")
    return out


def _call_lifted(func, args, kwargs, nums, has_aux, api):
    """``func`` run on its arguments with those at ``nums`` lifted (inside a transform's
    level): ``(lifted leaves, their spec, whether results stay differentiable, out, aux)``."""
    lifted, tree, spec, tracked = _lift_tree(_chosen(args, nums))
    out = func(*_replace(args, nums, tree), **kwargs)
    out, aux = _split_aux(out, has_aux, api)
    return lifted, spec, tracked, out, aux


# -- grad -----------------------------------------------------------------------------------------

def grad_and_value(func, argnums=0, has_aux=False):
    """``(gradient, value)`` of scalar-valued ``func`` w.r.t. the inputs ``argnums``;
    ``((gradient, (value, aux)))`` with ``has_aux``, as in torch.func."""
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        nums = _check_argnums(argnums, len(args))
        with _Level() as level:
            lifted, spec, tracked, out, aux = _call_lifted(func, args, kwargs, nums, has_aux, "grad_and_value")
            if not isinstance(out, Tensor):
                raise RuntimeError("grad_and_value(f)(*args): Expected f(*args) to return a Tensor, got "  # noqa: TRY004
                                   f"{type(out)}")
            if out.dim() != 0:
                raise RuntimeError("grad_and_value(f)(*args): Expected f(*args) to return a scalar Tensor, "
                                   f"got tensor with {out.dim()} dims. Maybe you wanted to use the vjp or "
                                   "jacrev APIs instead?")
            keep = level.outer or tracked
            grads = _gradients([out], lifted, [None], create_graph=keep or _dual(lifted))
        value = (out, aux) if has_aux else out
        return _plain(unflatten(spec, grads), keep), _plain(value, keep)
    return wrapper


def grad(func, argnums=0, has_aux=False):
    """The gradient of scalar-valued ``func`` w.r.t. its inputs ``argnums`` (with its aux
    output too when ``has_aux``)."""
    gv = grad_and_value(func, argnums, has_aux)

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        g, value = gv(*args, **kwargs)
        return (g, value[1]) if has_aux else g
    return wrapper


# -- vjp --------------------------------------------------------------------------------------------

def vjp(func, *primals, has_aux=False):
    """``(func(*primals), vjp_fn)`` (and aux): ``vjp_fn(cotangents)`` gives one gradient per
    primal, the cotangents shaped like the output."""
    with _Level() as level:
        lifted, tree, _, tracked = _lift_tree(primals)
        out = func(*tree)
        out, aux = _split_aux(out, has_aux, "vjp")
        outs, out_spec = flatten(out)
        for o in outs:
            if not isinstance(o, Tensor):
                raise RuntimeError("Expected f to be a function that has non-empty output; (either "  # noqa: TRY004
                                   f"Tensor or a tuple of Tensors), got {type(o)}")
        _check_differentiable_outputs(outs)
    keep = level.outer or tracked
    primal_spec = flatten(primals)[1]

    def vjp_fn(cotangents, *, retain_graph=True, create_graph=None):
        cts, ct_spec = flatten(cotangents)
        if len(cts) != len(outs) or (ct_spec != out_spec and len(cts) > 1):
            raise RuntimeError("Expected pytree structure of cotangents to be the same as pytree structure "
                               f"of outputs to the function. cotangents: {ct_spec}, primal output: {out_spec}")
        graph = create_graph if create_graph is not None else (
            keep or bool(levels()) or any(isinstance(c, Tensor) and c.requires_grad for c in cts))
        dual = _dual(lifted) or _dual([c for c in cts if isinstance(c, Tensor)])
        with grad_mode.enable_grad():
            grads = _gradients(outs, lifted, cts, create_graph=graph or dual, retain_graph=retain_graph)
        return _plain(unflatten(primal_spec, grads), graph)

    result = (_plain(out, keep), vjp_fn)
    return result + (_plain(aux, keep),) if has_aux else result


def _check_differentiable_outputs(outs):
    """vjp and jacrev refuse an integer or bool output, as torch.func does (a cotangent for
    ``argmax``'s or ``max``'s indices has no meaning; a zero Jacobian would hide the slip)."""
    for o in outs:
        if not (o.dtype.is_floating_point or o.is_complex()):
            raise RuntimeError("vjp(f, ...): All outputs of f must be floating-point or complex Tensors, "
                               f"got Tensor with dtype {o.dtype}")


# -- jacrev and hessian -----------------------------------------------------------------------------

def jacrev(func, argnums=0, *, has_aux=False, chunk_size=None, _preallocate_and_copy=False):
    """The Jacobian of ``func`` w.r.t. the inputs ``argnums`` by reverse mode: the vjps of
    all output elements in one vmapped backward pass (``chunk_size`` rows per pass)."""
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size <= 0):
        raise ValueError("jacrev: `chunk_size` should be greater than 0.")

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        nums = _check_argnums(argnums, len(args))
        with _Level() as level:
            lifted, spec, tracked, out, aux = _call_lifted(func, args, kwargs, nums, has_aux, "jacrev")
            outs, out_spec = flatten(out)
            for o in outs:
                if not isinstance(o, Tensor):
                    raise RuntimeError("jacrev(f, ...)(*args): expected f(*args) to return only tensors, got "  # noqa: TRY004
                                       f"unsupported type {type(o)}")
            _check_differentiable_outputs(outs)
            keep = level.outer or tracked
            per_output = [unflatten(spec, _jacobian_rows(o, lifted, keep or _dual(lifted), chunk_size))
                          for o in outs]
        jac = unflatten(out_spec, per_output)
        return (_plain(jac, keep), _plain(aux, keep)) if has_aux else _plain(jac, keep)
    return wrapper


def _jacobian_rows(o, inputs, create_graph, chunk_size=None):
    """[d o / d x for x in inputs], each shaped ``o.shape + x.shape``: the vjps of the rows
    of the identity, vmapped (one batched backward pass per ``chunk_size`` rows, all of them
    by default), as torch.func does. ``chunk_size=1``, or a pass that the batching rules
    cannot take, computes them one row at a time."""
    from ..ops.shape import cat
    from ..runtime.creation import eye
    from ._vmap import vmap
    n = o.numel()
    if n == 0:
        return [_zeros(tuple(o.shape) + tuple(x.shape), x) for x in inputs]
    basis = eye(n, dtype=o.dtype, device=o.device).reshape((n,) + tuple(o.shape))
    step = n if chunk_size is None else chunk_size
    chunks = [basis[j:j + step] for j in range(0, n, step)]

    def vjps(v):
        return tuple(_gradients([o], inputs, [v], create_graph, retain_graph=True))
    parts = None
    if step > 1:  # (chunk_size=1: PyTorch computes the rows in a loop, without vmap)
        try:
            parts = [vmap(vjps)(chunk) for chunk in chunks]
        except Exception:  # noqa: BLE001 -- the row-by-row pass gives the answer, or the error
            parts = None
    if parts is None:
        parts = [tuple(g.unsqueeze(0) for g in vjps(row)) for row in basis]
    result = []
    for k, x in enumerate(inputs):
        rows = [p[k] for p in parts]
        full = rows[0] if len(rows) == 1 else cat(rows, 0)
        result.append(full.reshape(tuple(o.shape) + tuple(x.shape)))
    return result


def hessian(func, argnums=0):
    """The Hessian of scalar-valued ``func``: ``jacrev(jacrev(func))`` (torch.func uses
    ``jacfwd(jacrev)``; the values are the same)."""
    return jacrev(jacrev(func, argnums), argnums)
