"""``vmap``: run a function written for one sample over a batch, as ``torch.func.vmap``.

The inputs' mapped dims are moved to the front and each input becomes a
:class:`~._batched.BatchedTensor` of a new level; the function runs once, every
operation going through the batching rules; the outputs' batch dims are moved to
``out_dims``. ``in_dims``/``out_dims`` are ints, None, or (nested) tuples, lists and dicts
that are prefixes of the inputs' and outputs' structures, as in torch.func.
"""
import contextlib
import functools
import itertools
import math
import threading

from ..runtime import creation, dispatch, forward
from ..runtime.tensor import Tensor
from ..transform.tree import flatten, unflatten
from ..utils._pytree import tree_structure
from . import _batched
from ._batched import BatchedTensor, batched, levels

__all__ = ["random_refused", "vmap"]

_RANDOMNESS = ("error", "different", "same")
_LEVEL_IDS = itertools.count(1)
_local = threading.local()


def vmap(func, in_dims=0, out_dims=0, randomness="error", *, chunk_size=None):
    """``func`` mapped over dim ``in_dims`` of its inputs; see the module docstring."""
    if randomness not in _RANDOMNESS:
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or 'same'. Got {randomness}")
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size <= 0):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got {chunk_size})")

    @functools.wraps(func)
    def vmapped(*args, **kwargs):
        return _call(func, in_dims, out_dims, randomness, chunk_size, args, kwargs)
    return vmapped


def _name(func):
    return getattr(func, "__name__", repr(func))


def _where(func, in_dims):
    return f"vmap({_name(func)}, in_dims={in_dims}, ...)(<inputs>)"


def _call(func, in_dims, out_dims, randomness, chunk_size, args, kwargs):
    if not isinstance(in_dims, (int, tuple)) or isinstance(in_dims, bool):
        raise ValueError(f"{_where(func, in_dims)}: expected `in_dims` to be int or a (potentially nested) "  # noqa: TRY004
                         f"tuple matching the structure of inputs, got: {type(in_dims)}.")
    if not args:
        raise ValueError(f"vmap({_name(func)})(<inputs>): got no inputs. Maybe you forgot to add inputs, or "
                         "you are trying to vmap over a function with no inputs. The latter is unsupported.")
    leaves, spec = flatten(args)
    dims = _broadcast(in_dims, args, lambda: ValueError(
        f"{_where(func, in_dims)}: in_dims is not compatible with the structure of `inputs`. in_dims has "
        f"structure {_treespec(in_dims)} but inputs has structure {_treespec(args)}."))
    size = _batch_size(func, in_dims, leaves, dims)
    if chunk_size is None or chunk_size >= size:
        return _run(func, out_dims, randomness, size, leaves, dims, spec, kwargs)
    chunks = []
    # randomness='same': every chunk draws what the first drew (one draw for the whole batch)
    replay = _same_draws() if randomness == "same" else None
    for start in range(0, size, chunk_size):
        n = min(chunk_size, size - start)
        part = [x.narrow(d, start, n) if d is not None else x for x, d in zip(leaves, dims)]
        with replay() if replay is not None and start else contextlib.nullcontext():
            chunks.append(_run(func, out_dims, randomness, n, part, dims, spec, kwargs))
    return _concat(chunks, out_dims)


def _same_draws():
    """A context to draw again, on every device, the numbers drawn from now on."""
    from .. import backend
    from ..random import replay_point, replaying
    points = [(ns, replay_point(ns)) for ns in backend.loaded()]
    return lambda: replaying(points)


def _concat(chunks, out_dims):
    from ..ops.shape import cat
    first, spec = flatten(chunks[0])
    dims = _broadcast(out_dims, chunks[0], lambda: ValueError("out_dims mismatch"))
    parts = [flatten(c)[0] for c in chunks]
    out = [cat([p[i] for p in parts], dim=d) if d is not None else first[i] for i, d in enumerate(dims)]
    return unflatten(spec, out)


def _broadcast(prefix, tree, error):
    """The in/out dim of every leaf of ``tree`` from ``prefix`` (an int or None applies to a
    whole subtree)."""
    out = []

    def walk(p, t):
        if p is None or (isinstance(p, int) and not isinstance(p, bool)):
            out.extend([p] * len(flatten(t)[0]))
        elif isinstance(p, (tuple, list)) and isinstance(t, (tuple, list)) and len(p) == len(t) \
                and isinstance(t, tuple) == isinstance(p, tuple):
            for a, b in zip(p, t):
                walk(a, b)
        elif isinstance(p, dict) and isinstance(t, dict) and set(p) == set(t):
            for k in t:
                walk(p[k], t[k])
        else:
            raise error()
    walk(prefix, tree)
    return out


def _treespec(tree):
    """torch's printed TreeSpec of a structure (``*`` for each leaf)."""
    return repr(tree_structure(tree))


def _batch_size(func, in_dims, leaves, dims):
    sizes = []
    for x, d in zip(leaves, dims):
        if d is None:
            continue
        if not isinstance(x, Tensor):
            raise ValueError(f"{_where(func, in_dims)}: Got in_dim={d} for an input but the input is of type "  # noqa: TRY004
                             f"{type(x)}. We cannot vmap over non-Tensor arguments, please use None as the "
                             "respective in_dim")
        n = x.dim()
        if not -n <= d < n:
            raise ValueError(f"{_where(func, in_dims)}: Got in_dim={d} for some input, but that input is a Tensor "
                             f"of dimensionality {n} so expected in_dim to satisfy -{n} <= in_dim < {n}.")
        sizes.append(x.shape[d])
    if not sizes:
        raise ValueError("vmap: Expected at least one Tensor to vmap over")
    if any(s != sizes[0] for s in sizes):
        raise ValueError("vmap: Expected all tensors to have the same size in the mapped dimension, got sizes "
                         f"{sizes} for the mapped dimension")
    return sizes[0]


def _run(func, out_dims, randomness, size, leaves, dims, spec, kwargs):
    level = next(_LEVEL_IDS)
    inputs = [_batched_input(x.movedim(d, 0), level) if d is not None else x for x, d in zip(leaves, dims)]
    levels().append(("vmap", size, randomness, level))
    _install(+1)
    try:
        outputs = func(*unflatten(spec, inputs), **kwargs)
    finally:
        levels().pop()
        _install(-1)
    return _unwrap_outputs(func, outputs, out_dims, level, size)


def _batched_input(phys, level):
    """An input of the function: a dual tensor's tangent is batched with it (the batching
    rules run with forward AD paused: tangents move at the level of the samples)."""
    x = batched(phys, level)
    tangent = forward.tangent_of(phys) if forward.ACTIVE[0] else None
    if tangent is not None:
        forward.set_tangent(x, batched(tangent, level))
    return x


def _physical(y, level, size):
    """Output ``y`` of the function as the whole batch (batch dim first): a BatchedTensor
    of this level by its physical value, anything else the same for every sample."""
    if type(y) is BatchedTensor and y._level == level:
        return y._phys
    return y.unsqueeze(0).expand((size,) + tuple(y.shape))


def _with_tangent(phys, y, level, size):
    """``phys``, the whole batch of output ``y``, with the batch of ``y``'s tangent."""
    tangent = forward.tangent_of(y) if forward.ACTIVE[0] else None
    if tangent is None:
        return phys
    with forward.suspended():
        out = phys.view_as(phys)
        tangent = _physical(tangent, level, size)
    forward.set_tangent(out, tangent)
    return out


_RUNNING = [0]  # vmaps running, in all threads
_RUNNING_LOCK = threading.Lock()


def _install(change):
    """Hooks in while any vmap runs (in any thread: they pass on operations without batched
    operands); none, at no cost, otherwise."""
    with _RUNNING_LOCK:
        _RUNNING[0] += change
        active = _RUNNING[0] > 0
    dispatch.batching = _batched.run_batched if active else None
    dispatch.batching_inplace = _batched.run_batched_inplace if active else None
    creation.random_hook = _random if active else None


def _unwrap_outputs(func, outputs, out_dims, level, size):
    leaves, spec = flatten(outputs)
    if not isinstance(out_dims, (int, tuple, list, dict, type(None))) or isinstance(out_dims, bool):
        raise ValueError(f"vmap({_name(func)}, ..., out_dims={out_dims}): `out_dims` must be an int, None or a "  # noqa: TRY004
                         "python collection of ints representing where in the outputs the vmapped dimension "
                         "should appear.")
    dims = _broadcast(out_dims, outputs, lambda: ValueError(
        f"vmap({_name(func)}, ..., out_dims={out_dims})(<inputs>): out_dims is not compatible with the "
        f"structure of `outputs`. out_dims has structure {_treespec(out_dims)} but outputs has structure "
        f"{_treespec(outputs)}."))
    result = []
    for y, d in zip(leaves, dims):
        is_batched = type(y) is BatchedTensor and y._level == level
        if d is None:
            if is_batched:
                raise ValueError(f"vmap({_name(func)}, ...): `{_name(func)}` can not return a BatchedTensor "
                                 "when out_dim is None")
            result.append(y)
            continue
        if not isinstance(y, Tensor):
            raise ValueError(f"vmap({_name(func)}, ...): `{_name(func)}` must only return Tensors, got type "  # noqa: TRY004
                             f"{type(y)}. Did you mean to set out_dims= to None for output?")
        phys = _with_tangent(y._phys, y, level, size) if is_batched else _physical(y, level, size)
        result.append(phys.movedim(0, d))
    return unflatten(spec, result)


class random_refused:
    """Random operations refused as under ``vmap(randomness='error')``, in this thread: for
    a transform torch runs as a vmap and tracegrad as a loop (``jacfwd``), where a draw per
    iteration would silently mix several functions into one result."""

    def __enter__(self):
        _local.refused = getattr(_local, "refused", 0) + 1
        _install(+1)
        return self

    def __exit__(self, *exc):
        _local.refused -= 1
        _install(-1)
        return False


# -- randomness ---------------------------------------------------------------------------------

_RANDOM_ERROR = ("vmap: called random operation while in randomness error mode. Please either use the "
                 "'same' or 'different' randomness flags on vmap or perform the randomness operation out of vmap")


def _random(factory, args, kwargs):
    """``creation.random_hook``: a random draw under vmap. 'error' (at any level) refuses
    it; otherwise the draws vary along every vmap with 'different' (a factory called once
    per sample of those, stacked and batched at their levels) and are shared along every
    vmap with 'same' -- a draw not made by a factory (an in-place fill) is refused under a
    'different' level, rather than silently shared."""
    if getattr(_local, "drawing", False):
        return factory(*args, **kwargs) if factory is not None else None
    if getattr(_local, "refused", 0):
        raise RuntimeError(_RANDOM_ERROR)
    vmaps = [e for e in levels() if e[0] == "vmap"]
    if not vmaps:  # (a vmap runs in another thread)
        return factory(*args, **kwargs) if factory is not None else None
    if any(e[2] == "error" for e in vmaps):
        raise RuntimeError(_RANDOM_ERROR)
    if factory is not None and any(type(a) is BatchedTensor for a in (*args, *kwargs.values())):
        # normal(mean=<per-sample Tensor>): one call, whose own draws (randn) come back here --
        # B calls stacked would batch the batched arguments a second time
        return factory(*args, **kwargs)
    # one draw per sample of every vmap with randomness='different' (the same one across a
    # vmap with 'same'), nested vmaps included
    different = [e for e in vmaps if e[2] == "different"]
    if factory is None:
        if different:
            raise NotImplementedError("vmap(randomness='different'): this random operation (an in-place "
                                      "random fill, alpha dropout...) has no per-sample version in tracegrad; "
                                      "use randomness='same', or draw the noise with rand/randn inside vmap")
        return None
    sizes = tuple(e[1] for e in different)
    _local.drawing = True
    try:
        if not different:
            return factory(*args, **kwargs)
        draws = [factory(*args, **kwargs) for _ in range(math.prod(sizes))]
    finally:
        _local.drawing = False
    from ..ops.shape import stack
    if not draws:
        raise RuntimeError("vmap(randomness='different'): cannot draw over a batch of size 0")
    out = stack(draws, 0)
    out = out.reshape(sizes + tuple(out.shape[1:]))
    for e in different:  # (outermost first: each level's batch dim leads the rest)
        out = batched(out, e[3])
    return out
