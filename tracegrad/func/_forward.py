"""``torch.func.jvp`` and ``torch.func.jacfwd`` over eager forward AD.

Both open a forward AD level (:mod:`tracegrad.autograd.forward_ad`), make the primals dual
and run the function: the tangents come from the rule table's jvps, as everywhere else.
``jacfwd`` pushes one basis tangent per input element (a loop where torch vmaps) and
lays the result out as torch.func does: the output's dims, then the input's.

Primals, tangents, outputs and aux values may be pytrees of tuples, lists and dicts. As
with ``torch.autograd.forward_ad``, one level exists at a time, so these transforms do not
nest in each other (``jacfwd(jacrev(f))`` is the way to a Hessian).
"""
from ..autograd import forward_ad as fwAD
from ..random import get_rng_state, set_rng_state
from ..runtime.forward import suspended
from ..runtime.tensor import Tensor
from ..utils._pytree import tree_flatten, tree_unflatten
from ._vmap import random_refused

__all__ = ["jvp", "jacfwd", "linearize"]


# -- jvp --------------------------------------------------------------------------------------

_JVP = "jvp(f, primals, tangents)"


def linearize(func, *primals):
    """``(func(*primals), jvp_fn)``, as torch.func.linearize: ``jvp_fn(*tangents)`` is the
    Jacobian-vector product of ``func`` at ``primals``. PyTorch traces the linearized
    function once (FX); here each call runs :func:`jvp` at the same primals, which gives the
    same values at the cost of the forward pass."""
    output = func(*primals)
    primal_leaves, spec = tree_flatten(primals)

    def jvp_fn(*tangents):
        tangent_leaves, tangent_spec = tree_flatten(tangents)
        if tangent_spec != spec:
            raise RuntimeError(f"Expected the tangents {tangent_spec} to have the same argspec as the "
                               f"primals {spec}")
        for i, (p, t) in enumerate(zip(primal_leaves, tangent_leaves)):
            if isinstance(p, Tensor) and tuple(t.shape) != tuple(p.shape):
                raise RuntimeError(f"tangent:{i} with shape {t.shape} in flattened pytree doesn't match "
                                   f"the shape {p.shape} of the corresponding primal.")
        return jvp(func, primals, tangents)[1]
    return output, jvp_fn


def jvp(func, primals, tangents, *, strict=False, has_aux=False):
    """``(func(*primals), J @ tangents)`` (and ``aux`` with ``has_aux``), as torch.func.jvp.
    ``strict`` is accepted and, as in torch.func, changes nothing."""
    primal_leaves, tangent_leaves, spec = _checked_inputs(primals, tangents)
    with fwAD.dual_level():
        duals = [fwAD.make_dual(p, t) for p, t in zip(primal_leaves, tangent_leaves)]
        result = func(*tree_unflatten(duals, spec))
        if has_aux:
            if not (isinstance(result, tuple) and len(result) == 2):
                raise RuntimeError(f"{_JVP}: output of function f should be a tuple: (output, aux) "
                                   "if has_aux is True")
            result, aux = result
        outs, out_spec = tree_flatten(result)
        for o in outs:
            if not isinstance(o, Tensor):
                raise RuntimeError(f"{_JVP}: expected f(*primals) to return only tensors, got "
                                   f"unsupported type {type(o)}")
        tangents_out = [_tangent_or_zeros(o) for o in outs]
        if has_aux:
            aux_leaves, aux_spec = tree_flatten(aux)
            for a in aux_leaves:
                if not isinstance(a, Tensor):
                    raise RuntimeError(f"Expected tensors, got unsupported type {type(a)}")
            aux = tree_unflatten([fwAD.unpack_dual(a).primal for a in aux_leaves], aux_spec)
        primals_out = [fwAD.unpack_dual(o).primal for o in outs]
    if not _stays_differentiable(primal_leaves):  # (a tangent from a gradient has a graph)
        primals_out = [o.detach() for o in primals_out]
        tangents_out = [t.detach() for t in tangents_out]
    answer = (tree_unflatten(primals_out, out_spec), tree_unflatten(tangents_out, out_spec))
    return answer + (aux,) if has_aux else answer


def _stays_differentiable(primals):
    """Results stay attached to a graph when a primal requires grad (the caller's tensor, or
    an outer transform's) or another func transform encloses this one, as in torch.func."""
    from ._batched import levels
    return bool(levels()) or any(p.requires_grad for p in primals)


def _tangent_or_zeros(out):
    tangent = fwAD.unpack_dual(out).tangent
    if tangent is None:  # an output that does not depend on the primals (or an integer one)
        from .. import zeros_like
        with suspended():
            tangent = zeros_like(out)
    return tangent


def _checked_inputs(primals, tangents):
    """The primal and tangent leaves, checked as torch.func.jvp checks them."""
    if not isinstance(primals, tuple):
        raise RuntimeError(f"{_JVP}: Expected primals to be a tuple. E.g. it should be valid to "
                           "call f(*primals).")
    primal_leaves, spec = tree_flatten(primals)
    tangent_leaves, tangent_spec = tree_flatten(tangents)
    if spec != tangent_spec:
        raise RuntimeError(f"{_JVP}: Expected primals and tangents to have the same python "
                           "structure. For example, if primals is a tuple of 3 tensors, tangents "
                           f"also must be. Got primals with structure {spec!r} and "
                           f"tangents with structure {tangent_spec!r}")
    if not primal_leaves:
        raise RuntimeError(f"{_JVP}: Expected primals to contain at least one Tensor.")
    for name, leaves in (("primals", primal_leaves), ("tangents", tangent_leaves)):
        for leaf in leaves:
            if not isinstance(leaf, Tensor):
                raise RuntimeError(f"{_JVP}: Expected {name} to only contain Tensors, got {type(leaf)}")
    return primal_leaves, tangent_leaves, spec


# -- jacfwd -----------------------------------------------------------------------------------

_RANDOMNESS = ("error", "different", "same")


def jacfwd(func, argnums=0, has_aux=False, *, randomness="error"):
    """A function computing the Jacobian of ``func`` with respect to the arguments at
    ``argnums`` by forward AD: for each output, a Tensor of shape ``output.shape +
    input.shape`` (a tuple over the arguments when ``argnums`` is a tuple); with
    ``has_aux``, ``(jacobian, aux)``."""
    def jacobian(*args):
        if randomness not in _RANDOMNESS:  # checked at the call, as torch.func does
            raise RuntimeError("Only allowed values for randomness are 'error', 'different', or "
                               f"'same'. Got {randomness}")
        if fwAD._current_level >= 0:
            # inside an outer forward transform (jacfwd(jacfwd(f))): forward AD has one level,
            # so this Jacobian is taken in reverse mode -- the same matrix, in the same layout
            # -- and the outer tangents flow through its create_graph backward
            from ._grad import jacrev
            return jacrev(func, argnums, has_aux=has_aux)(*args)
        positions = _positions(argnums, len(args))
        inputs = tuple(args[i] for i in positions)
        leaves, spec = tree_flatten(inputs)
        for leaf in leaves:
            if not isinstance(leaf, Tensor):
                raise RuntimeError(f"{_JVP}: Expected primals to only contain Tensors, got {type(leaf)}")

        def at(*chosen):
            full = list(args)
            for i, value in zip(positions, chosen):
                full[i] = value
            return func(*full)

        columns, out_spec, outputs, aux = _columns(at, leaves, spec, has_aux, randomness)
        jac = _assemble(columns, outputs, leaves, spec, argnums)
        jac = tree_unflatten(jac, out_spec)
        return (jac, aux) if has_aux else jac
    return jacobian


def _positions(argnums, nargs):
    """The argument positions ``argnums`` names (checked as torch.func does)."""
    many = isinstance(argnums, tuple)
    nums = argnums if many else (argnums,)
    if not all(isinstance(n, int) and not isinstance(n, bool) for n in nums):
        raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: {type(argnums)}")
    if many and not nums:
        raise RuntimeError("argnums must be non-empty")
    positions = []
    for n in nums:
        if not -nargs <= n < nargs:
            raise RuntimeError(f"Got argnum={n}, but only {nargs} positional inputs")
        positions.append(n % nargs)
    return positions


def _columns(at, leaves, spec, has_aux, randomness):
    """One jvp per input element: the output tangents (flattened) for each basis tangent
    (a fresh one each time: a tangent may come back as an output's tangent as it is).
    torch.func vmaps these jvps; here ``randomness`` says what a loop does with draws:
    'error' refuses them, 'same' replays the generator's state for every column, and
    'different' lets each column draw its own."""
    if randomness == "error":
        with random_refused():
            return _loop_columns(at, leaves, spec, has_aux, None)
    return _loop_columns(at, leaves, spec, has_aux, get_rng_state() if randomness == "same" else None)


def _loop_columns(at, leaves, spec, has_aux, rng_state):
    from .. import zeros, zeros_like
    columns, out_spec, outputs, aux = [], None, None, None
    for k, leaf in enumerate(leaves):
        for j in range(leaf.numel()):
            if rng_state is not None:
                set_rng_state(rng_state)
            basis = [zeros_like(x) for x in leaves]
            flat = zeros(leaf.numel(), dtype=leaf.dtype, device=leaf.device)
            flat[j] = 1
            basis[k] = flat.reshape(leaf.shape)
            result = jvp(at, tree_unflatten(leaves, spec), tree_unflatten(basis, spec), has_aux=has_aux)
            outs, out_spec = tree_flatten(result[0])
            columns.append(tree_flatten(result[1])[0])
            outputs, aux = outs, (result[2] if has_aux else None)
    if outputs is None:  # no input element: run once for the output's structure
        result = _outputs_once(at, leaves, spec, has_aux)
        outs, out_spec = tree_flatten(result[0])
        outputs, aux = outs, result[1]
    return columns, out_spec, outputs, aux


def _outputs_once(at, leaves, spec, has_aux):
    """(outputs, aux) of a plain call, for a Jacobian with no input element."""
    result = at(*tree_unflatten(leaves, spec))
    return result if has_aux else (result, None)


def _assemble(columns, outputs, leaves, spec, argnums):
    """Per output leaf: the Jacobian blocks for each input leaf, shaped output + input,
    arranged in the inputs' structure (a tuple over arguments for a tuple ``argnums``)."""
    from .. import stack, zeros
    per_output = []
    for m, out in enumerate(outputs):
        blocks, start = [], 0
        for leaf in leaves:
            n = leaf.numel()
            cols = [columns[start + j][m] for j in range(n)]
            shape = tuple(out.shape) + tuple(leaf.shape)
            if cols:
                block = stack(cols, dim=-1).reshape(shape)
            else:
                block = zeros(shape, dtype=out.dtype)
            blocks.append(block)
            start += n
        chosen = tree_unflatten(blocks, spec)  # a tuple over the chosen arguments
        per_output.append(chosen if isinstance(argnums, tuple) else chosen[0])
    return per_output
