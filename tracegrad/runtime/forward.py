"""Forward-mode AD in the eager runtime: tangents that travel with tensors.

A dual tensor is an ordinary Tensor whose ``_extra["tangent"]`` holds ``(level, tangent)``
for the forward AD level it was made at (PyTorch supports one level at a time, and so do
we; the level is process-wide, pausing it is per thread). While a level is open,
:data:`ACTIVE` is true and the dispatcher calls back here after each primitive; when an
operand carries a tangent, the output's tangent is that primitive's **jvp from the rule
table** (``Primitive.apply_jvp``), computed on the primal operands with forward AD paused
(:class:`suspended`) -- there is no second copy of any derivative.

The jvp runs in the current grad mode, so tangents have a backward history of their own
(reverse-over-forward), and a backward with ``create_graph=True`` run inside a level
carries tangents through the vjps (forward-over-reverse: Hessian-vector products).

Views: the tangent of a view is the same view of its base's tangent. A view made before
its base had a tangent finds it later by replaying its chain of view rules over the
base's tangent (:func:`tangent_of`). In-place ops update the tangent in place, so the
views of a tangent see the change; writing a dual value into a tensor without a tangent
gives its base a zero tangent first, as PyTorch does.
"""
import threading
import weakref

from ..rules.complex_ import complex_refusal, is_complex
from . import grad_mode
from .tensor import Tensor, wrap
from .vmapped import is_vmapped

__all__ = ["ACTIVE", "Level", "enter", "exit", "level_at", "tangent_of", "set_tangent",
           "has_tangent", "make_dual", "unpack", "attach", "inplace_rule", "saved_result_tangents",
           "function_tangents", "suspended"]

# Read by the dispatcher on every op: true while a level is open. One list read per op is
# all forward AD costs when it is not used.
ACTIVE = [False]


class Level:
    """One open forward AD level: its number, and the tensors it gave tangents to (so
    exiting the level can drop them, as PyTorch deletes a level's tangents)."""

    __slots__ = ("number", "tensors", "alive")

    def __init__(self, number):
        self.number = number
        self.tensors = weakref.WeakSet()
        self.alive = True


class _State:
    """The open level: one for the whole process, as in PyTorch."""
    level = None


class _Paused(threading.local):
    """Per thread, as PyTorch's forward grad mode: how deep in ``suspended()`` it is."""
    depth = 0


_paused = _Paused()
_state = _State()


def enter():
    if _state.level is not None:
        raise RuntimeError("Nested forward mode AD is not supported at the moment")
    _state.level = Level(0)
    _refresh()
    return 0


def exit(level):
    lvl = _state.level
    if level < 0 or lvl is None:
        raise RuntimeError("Dual level must be a positive number.")
    if level != lvl.number:
        raise RuntimeError("Invalid level given to exit_dual_level")
    lvl.alive = False
    for t in list(lvl.tensors):
        if t._extra is not None:
            t._extra.pop("tangent", None)
    _state.level = None
    _refresh()


def _refresh():
    ACTIVE[0] = _state.level is not None


def level_at(number, what):
    """The open Level if it is numbered ``number``, else PyTorch's error naming ``what``."""
    lvl = _state.level
    if lvl is None or number != lvl.number:
        raise RuntimeError(f"Invalid level given to {what}")
    return lvl


class suspended:
    """Pause forward AD (the jvp formulas run on primals; a custom Function's forward runs
    on its inputs' primals, as in PyTorch)."""

    __slots__ = ()

    def __enter__(self):
        _paused.depth += 1

    def __exit__(self, *exc):
        _paused.depth -= 1


# -- tangents on tensors --------------------------------------------------------------------

def tangent_of(t, lvl=None):
    """The tangent of tensor ``t`` at the open level (None when it has none). A view
    without one of its own takes the same view of its base's tangent, made on first ask."""
    lvl = lvl or _state.level
    if lvl is None or _paused.depth:  # paused (a custom Function's forward): primals only
        return None
    extra = t._extra
    if extra is not None:
        entry = extra.get("tangent")
        if entry is not None and entry[0] is lvl:
            return entry[1]
    base = t._base
    if base is None or t._view is None:
        return None
    base_tangent = tangent_of(base, lvl)
    if base_tangent is None:
        return None
    from ..rules.views import replay_view
    with suspended():
        tangent = replay_view(t._view[0], base_tangent)
    set_tangent(t, tangent, lvl)
    return tangent


def set_tangent(t, tangent, lvl=None):
    """Give ``t`` a tangent at the open level (``None``: explicitly none, so that a view
    does not take its base's)."""
    lvl = lvl or _state.level
    if t._extra is None:
        t._extra = {}
    t._extra["tangent"] = (lvl, tangent)
    lvl.tensors.add(t)


def has_tangent(args):
    """Whether an operand carries a tangent (and forward AD is not paused here)."""
    if _paused.depth:
        return False
    lvl = _state.level
    return any(isinstance(a, Tensor) and tangent_of(a, lvl) is not None for a in args)


def make_dual(tensor, tangent, lvl):
    """``tensor`` viewed as a new dual tensor carrying ``tangent`` (checked as PyTorch does;
    a tangent with another memory layout is copied into the primal's)."""
    if tangent_of(tensor, lvl) is not None:
        raise RuntimeError("Making a dual Tensor based on a Tensor that already has a forward "
                           f"gradient at the same level {lvl.number} is not supported.")
    if tuple(tangent.shape) != tuple(tensor.shape):
        raise RuntimeError("Trying to set a forward gradient that has a different size than that "
                           "of the original Tensor, this is not supported. Tensor is of size "
                           f"{list(tensor.shape)} while the given forward gradient is of size "
                           f"{list(tangent.shape)}.")
    if tangent.device != tensor.device:
        raise RuntimeError("Trying to set a forward gradient that has a different device than that "
                           "of the original Tensor, this is not supported. Tensor is on "
                           f"{tensor.device} while the given forward gradient is on {tangent.device}.")
    if not (is_vmapped(tangent) or is_vmapped(tensor)) and tangent.stride() != tensor.stride() \
            and tensor.numel() > 1:  # (a vmapped one's _data is one sample: no layout to copy)
        tangent = _copy_in_layout(tangent, tensor)
    with suspended():
        dual = tensor.view_as(tensor)
    set_tangent(dual, tangent, lvl)
    return dual


def _copy_in_layout(tangent, like):
    """``tangent``'s values in the memory layout of ``like`` (a tangent with a history is
    cloned instead, keeping the history)."""
    if tangent.requires_grad:
        return tangent.clone()
    from .. import backend
    data = backend.namespace_of(like._data).empty_like(like._data, dtype=tangent._data.dtype)
    data[...] = tangent._data
    return wrap(data)


def unpack(tensor, number):
    """(primal, tangent) at level ``number``: the primal a view of ``tensor`` with no
    tangent. A level that is not the open one is an error only for a dual tensor."""
    lvl = _state.level
    tangent = None if lvl is None else tangent_of(tensor, lvl)
    if tangent is not None and number != lvl.number:
        raise RuntimeError("Invalid level given to _fw_primal")
    with suspended():
        primal = tensor.view_as(tensor)
    if lvl is not None:
        set_tangent(primal, None, lvl)
    return primal, tangent


# -- the dispatcher's hooks ------------------------------------------------------------------

def _tangents(args, lvl):
    return tuple(tangent_of(a, lvl) if isinstance(a, Tensor) else None for a in args)


def _check_jvps(prim, tangents):
    """PyTorch's NotImplementedError for an operand whose rule has no jvp."""
    if prim.jvp_all_fn is not None or (prim.linear and not any(prim.jvps)):
        return
    for i, t in enumerate(tangents):
        if t is None:
            continue
        has = i < len(prim.jvps) and (prim.jvps[i] is not None or (prim.diagonal and prim.vjps[i] is not None))
        if not has:
            raise NotImplementedError(
                f"Trying to use forward AD with {prim.name} that does not support it because it "
                "has not been implemented yet.\nPlease file an issue to tracegrad so that we can "
                "prioritize its implementation.")


def _check_complex(prim, args, tangents, out):
    """Refuse complex values through a rule not declared right for them, by name, as the
    reverse mode does (its formula would give a wrong tangent)."""
    if prim.complex:
        return
    outs = out if isinstance(out, tuple) else (out,)
    if any(v is not None and is_complex(v) for v in tuple(args) + tuple(tangents) + outs):
        raise NotImplementedError(complex_refusal(f"forward AD through {prim.name}", prim.name))


def _jvp(prim, args, params, tangents, out):
    """The output tangent(s) by the rule table's jvp, on primals, forward AD paused."""
    _check_jvps(prim, tangents)
    _check_complex(prim, args, tangents, out)
    with suspended():
        return prim.apply_jvp(tangents, out, tuple(args), params)


def attach(prim, args, params, result):
    """After ``prim`` ran on ``args`` giving ``result``: give the result its tangent(s)
    (none in inference mode, as in PyTorch)."""
    if _paused.depth or grad_mode.state.mode == grad_mode.INFERENCE:
        return
    lvl = _state.level
    tangents = _tangents(args, lvl)
    single = isinstance(result, Tensor)
    outs = (result,) if single else result
    if not any(t is not None for t in tangents) or not prim.differentiable:
        if prim.view and isinstance(args[0], Tensor) and _without_tangent(args[0], lvl):
            for r in outs:  # a view of an unpacked primal is one too (not its base's view)
                set_tangent(r, None, lvl)
        return
    tangent = _jvp(prim, args, params, tangents, result)
    made = (tangent,) if single else tuple(tangent)
    roots = None if prim.view else {id(_root(t)) for t in tangents if t is not None}
    for r, t in zip(outs, made):
        if t is not None and r._data.dtype.kind in "fc":
            t = _as_tangent(t, r)
            if roots and id(_root(t)) in roots:  # a jvp handing back an input's tangent (clone's
                t = t.clone()                    # is the identity): not shared by a non-view
            set_tangent(r, t, lvl)
    node = outs[0]._grad_fn if outs else None
    if node is not None and getattr(node, "_out", None) is not None:
        # the node saved its result for backward: a backward of it, run inside this level
        # with create_graph, needs the result's tangent too (forward-over-reverse)
        node._extras()["tangent_out"] = (lvl, tuple(tangent_of(r, lvl) for r in outs))


def _without_tangent(t, lvl):
    """Whether ``t`` was marked as having no tangent at ``lvl`` (an unpacked primal)."""
    entry = t._extra.get("tangent") if t._extra is not None else None
    return entry is not None and entry[0] is lvl and entry[1] is None


def _root(t):
    """The tensor whose storage ``t`` views (itself if it is not a view)."""
    return t._base if isinstance(t, Tensor) and t._base is not None else t


def saved_result_tangents(node, out):
    """Give the results a node saved (rebuilt as Tensors for a backward with create_graph)
    back their tangents, when they had some at the open level."""
    extra = node._extra
    entry = extra.get("tangent_out") if extra is not None else None
    if entry is None or entry[0] is not _state.level:
        return
    outs = out if isinstance(out, tuple) else (out,)
    for r, t in zip(outs, entry[1]):
        if r is not None and t is not None:
            set_tangent(r, t)


def _as_tangent(t, like):
    """A jvp's result as a tangent for ``like``: a Tensor of its shape."""
    if not isinstance(t, Tensor):
        from .. import backend
        xp = backend.namespace_of(like._data)
        t = wrap(xp.asarray(t, dtype=like._data.dtype))
    if t.shape != like.shape:
        t = t.expand(like.shape).clone()
    return t


def inplace_rule(prim, args, params, before=None):
    """Before an in-place ``prim`` writes into ``args[0]``: None when no operand (self
    included) carries a tangent, else a function to call with the written tensor, which
    sets its tangent from the jvp evaluated at the operands' values before the write
    (``before``: self's copy, given by a caller whose ``_data`` is not all of self's value:
    vmap's batched tensors)."""
    if _paused.depth or grad_mode.state.mode == grad_mode.INFERENCE:
        return None
    lvl = _state.level
    tangents = _tangents(args, lvl)
    if not any(t is not None for t in tangents) or not prim.differentiable:
        return None
    self = args[0]
    if before is None:
        before = wrap(self._data.copy(), self._requires_grad, self._grad_fn, self._output_nr)
    operands = (before,) + tuple(args[1:])

    def update(written):
        with suspended():
            primal = written.detach()
        new = _as_tangent(_jvp(prim, operands, params, tangents, primal), written)
        own = tangent_of(written, lvl)
        if own is None:
            own = _zero_tangent(written, lvl)
        if is_vmapped(new) and not is_vmapped(own):  # per-sample tangents into a plain one (vmap(jvp))
            own = _per_sample_tangent(written, lvl, new)
        with suspended():
            own.copy_(new)
    return update


def _per_sample_tangent(t, lvl, like):
    """``t``'s tangent (its base's, for a view) made batched like ``like``, values kept, so
    that per-sample tangents can be written into it."""
    from ..func._samples import batched_like
    from ..rules.views import replay_view
    base = t._base if t._base is not None and t._view is not None else t
    current = tangent_of(base, lvl)
    with suspended():
        whole = batched_like(current if current is not None else _zeros(base), like)
    _replace_tangent(base, whole, lvl)
    if base is t:
        return whole
    with suspended():
        tangent = replay_view(t._view[0], whole)
    _replace_tangent(t, tangent, lvl)
    return tangent


def _replace_tangent(t, tangent, lvl):
    entry = t._extra.get("tangent") if t._extra is not None else None
    if entry is not None and entry[0] is lvl:  # (already listed by the level: replaced in place)
        t._extra["tangent"] = (lvl, tangent)
    else:
        set_tangent(t, tangent, lvl)


def _zeros(t):
    from .. import backend
    return wrap(backend.namespace_of(t._data).zeros_like(t._data))


def _zero_tangent(t, lvl):
    """A zero tangent for ``t`` (for its base, when ``t`` is a view: the view's tangent is
    then the same view of the base's)."""
    base = t._base if t._base is not None and t._view is not None else t
    set_tangent(base, _zeros(base), lvl)
    if base is t:
        return tangent_of(t, lvl)
    if t._extra is not None:
        t._extra.pop("tangent", None)
    return tangent_of(t, lvl)


# -- custom autograd.Function ----------------------------------------------------------------

_NO_FUNCTION_JVP = ("You must implement the jvp function for custom autograd.Function to use it "
                    "with forward mode AD.")


def function_tangents(cls, ctx, args, results):
    """After a custom Function's forward: its outputs' tangents from the user's ``jvp``
    (zeros for tensor inputs without a tangent, None for other inputs, as PyTorch)."""
    lvl = _state.level
    tangents = _tangents(args, lvl)
    if not any(t is not None for t in tangents):
        return
    from .function import Function
    if cls.jvp is Function.jvp:
        raise NotImplementedError(_NO_FUNCTION_JVP)
    given = [t if t is not None or not isinstance(a, Tensor) else _zeros(a)
             for a, t in zip(args, tangents)]
    with suspended():
        made = cls.jvp(ctx, *given)
    single = not isinstance(results, tuple)
    outs = (results,) if single else results
    made = made if isinstance(made, tuple) else (made,)
    if len(made) != len(outs):
        raise RuntimeError("Function's jvp returned an invalid number of forward gradients "
                           f"(expected {len(outs)} but got {len(made)})")
    inputs = [a for a in args if isinstance(a, Tensor)]
    for k, (r, t) in enumerate(zip(outs, made)):
        if t is None:
            continue
        if not (isinstance(r, Tensor) and r._data.dtype.kind in "fc") or any(r is n for n in ctx._non_differentiable):
            raise RuntimeError(f"Function's jvp returned a gradient at position {k}, but  the "
                               "corresponding forward output is not a differentiable Tensor.You "
                               "should return None at that position instead.")
        dirty = any(r is d for d in ctx._dirty)  # modified in place: its tangent is too
        aliased = r._base is not None or any(r._data is a._data for a in inputs)
        if aliased and not dirty and isinstance(t, Tensor) and t._base is None:
            raise RuntimeError("A custom Function's forward is returning a view (or an input as-is) "
                               "but the jvp is not returning a view.")
        own = r._extra.get("tangent") if r._extra is not None else None
        if own is not None and own[0] is lvl and own[1] is t:
            continue
        set_tangent(r, _as_tangent(t, r), lvl)
