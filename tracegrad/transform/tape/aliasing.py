"""NumPy's aliasing on a tape of values.

A NumPy array is memory: ``v = y[1:]`` shares ``y``'s memory, so ``y[1] = 0`` changes
``v`` and ``v[0] = 5`` changes ``y``. A tape records values: ``x[i] = v`` is a functional
update whose result takes over the written tracer (every name bound to that object sees
it), but a tracer made as a view of the same memory would keep the old value -- a
silently wrong answer. So the tape remembers how each view was made from its parent
(when NumPy really made a view, checked on the values), and:

* a write into a tracer marks its views *dirty*; a dirty view is made again from the
  new parent the next time the traced function uses it (a view nobody uses again costs
  nothing);
* a write into a view is written back into its parent (``index_put`` for a basic index,
  the inverse reshape or transpose), and from there to the parent's other views;
  a view with no inverse (``diagonal``, ``broadcast_to``, ``split``) refuses the write.

Sweeps and the optimizer read a tracer as the SSA value it names, so only the traced
function's own uses (recorded in the value phase) remake dirty views.
"""
import weakref

from ...backend import namespace_of
from ...runtime import grad_mode as _grad_mode
from .numpy_map import P
from .tape import VAR_TYPES, TracerError, Var

__all__ = ["note_view", "before_write", "after_write", "current", "current_tree", "settle",
           "settle_tape", "is_dirty"]

class _ByIdentity:
    """A weak map keyed by the tracer *object* (a tracer's ``==`` is elementwise, so the
    weakref module's containers, which compare keys, cannot hold tracers)."""

    def __init__(self):
        self._items = {}

    def _forget(self, key):
        return lambda ref: self._items.pop(key, None)

    def __setitem__(self, obj, value):
        self._items[id(obj)] = (weakref.ref(obj, self._forget(id(obj))), value)

    def get(self, obj, default=None):
        hit = self._items.get(id(obj))
        return default if hit is None or hit[0]() is not obj else hit[1]

    def pop(self, obj, default=None):
        hit = self._items.get(id(obj))
        if hit is None or hit[0]() is not obj:
            return default
        del self._items[id(obj)]
        return hit[1]

    def keys(self):
        return [k for k in (ref() for ref, _ in list(self._items.values())) if k is not None]


_LINK = _ByIdentity()    # view -> (parent, prim, params, k): how it was made
_VIEWS = _ByIdentity()   # parent -> {id: weakref} of its views that are up to date
_DIRTY = {}              # tracer class -> its dirty twin (and back)
_DIRTIES = _ByIdentity()  # the dirty tracers (values unused)
_NO_GRAD = _ByIdentity()  # view made under no_grad() -> whether a write with grad on made it dirty
_LAYOUT = _ByIdentity()   # tracer written in place -> its value before: NumPy's memory layout


def _add_view(parent, view):
    views = _VIEWS.get(parent)
    if views is None:
        views = {}
        _VIEWS[parent] = views
    views[id(view)] = weakref.ref(view)


def _live(views):
    return [v for v in (ref() for ref in (views or {}).values()) if v is not None]


def _twin(cls):
    twin = _DIRTY.get(cls)
    if twin is None:
        twin = type(f"Dirty{cls.__name__}", (cls,), {"__slots__": (), "__module__": __name__})
        VAR_TYPES.discard(twin)  # (bind's fast path must not take a dirty tracer as it is)
        _DIRTY[cls], _DIRTY[twin] = twin, cls
    return twin


def is_dirty(var):
    return type(var).__name__.startswith("Dirty") and type(var) in _DIRTY


def _shares_memory(a, b):
    xp = namespace_of(a)
    may = getattr(xp, "may_share_memory", None)
    try:
        return True if may is None else bool(may(a, b))
    except TypeError:
        return True


def note_view(prim, args, params, result, tape):
    """Remember that ``result`` (a tracer, or a tuple of them) was made from ``args[0]``
    by view primitive ``prim`` -- when NumPy's kernel really returned a view of it."""
    base = args[0]
    if not isinstance(base, Var) or tape.phase != "t":
        return
    part = prim.name in PART_VIEWS  # (z.real, z.imag: NumPy's views, the kernels' copies)
    outs = result if isinstance(result, tuple) else (result,)
    no_grad = not _grad_mode.state.grad_enabled or _NO_GRAD.get(base) is not None
    for k, out in enumerate(outs):
        if not out.shape and _numpy_number(prim, params):  # ``y[1] += v`` rebinds the name
            tape.immutable.add(out.id)
        elif part or _shares_memory(out.value, base.value):
            _LINK[out] = (base, prim, params, k if isinstance(result, tuple) else None)
            _add_view(base, out)
            if no_grad:
                _NO_GRAD[out] = False


def _numpy_number(prim, params):
    """Whether NumPy answers a 0-d result of view ``prim`` with a number (``y[1]``, the rows
    of a 1-d array iterated) rather than a 0-d view of its operand (``y[1, ...]``,
    ``np.squeeze``, ``reshape(())``, whose in-place changes reach the operand)."""
    if prim.name == "unbind":
        return True
    if prim.name != "basic_index":
        return False
    index = params.get("index")
    entries = index if isinstance(index, tuple) else (index,)
    return not any(e is Ellipsis or e is None or isinstance(e, slice) for e in entries)


def keep_layout(var):
    """Before a write gives ``var`` a new value (made by a kernel, contiguous): remember the
    value it had, whose strides are those of the NumPy array ``var`` stands for -- an
    array's layout never changes, and whether NumPy's ``reshape`` copies depends on it."""
    if _LAYOUT.get(var) is None:
        _LAYOUT[var] = var.value


def numpy_copies(var, reshape):
    """Whether NumPy makes a copy where ``reshape(array)`` (a reshape or ravel) of the array
    ``var`` stands for is asked for -- decided on an array of its layout."""
    layout = _LAYOUT.get(var, var.value)
    try:
        return not _shares_memory(reshape(layout), layout)
    except (ValueError, TypeError, AttributeError):
        return False


def current(var):
    """``var`` made up to date (remade from its parent if a write made it dirty)."""
    if is_dirty(var) and var.tape.phase == "t":
        parent, prim, params, k = _LINK.get(var)
        stopped = _NO_GRAD.get(var)
        if stopped and _grad_mode.state.grad_enabled:
            raise RuntimeError(_NO_GRAD_VIEW + "and its base or another view of its base has been "
                               "modified inplace with grad mode enabled" + _AMBIGUOUS)
        parent = current(parent)
        made = prim(parent, **params)
        made = made[k] if k is not None else made
        if stopped is not None:  # (a view made under no_grad() carries no derivative)
            from .tracing import _stopped
            made = _stopped(var.tape, made, False)
        from .tracer import take_over
        take_over(var, made)
        settle(var)
        _add_view(parent, var)
    return var


def current_tree(tree):
    """The leaves of a function's result made up to date (a tree of tracers and values)."""
    from ..tree import flatten, unflatten
    leaves, spec = flatten(tree)
    if not any(is_dirty(v) for v in leaves):
        return tree
    return unflatten(spec, [current(v) if is_dirty(v) else v for v in leaves])


def settle(old):
    """A tracer renamed to an old value is clean: it names that value for good."""
    if is_dirty(old):
        old.__class__ = _DIRTY[type(old)]
        _DIRTIES.pop(old)


def settle_tape(tape):
    """When a tape stops recording, its dirty tracers are just the SSA values they name."""
    for v in _DIRTIES.keys():
        if v.tape is tape:
            settle(v)


_NO_GRAD_VIEW = "A view was created in no_grad mode "
_AMBIGUOUS = (". Given that this use case is ambiguous and error-prone, it is forbidden. You can "
              "clarify your code by moving both the view and the inplace either both inside the "
              "no_grad block (if you don't want the inplace to be tracked) or both outside (if you "
              "want the inplace to be tracked).")


def before_write(var):
    """Before ``var`` is written: made up to date; a view made under ``no_grad()`` written
    with grad mode on is refused, as PyTorch refuses it (what the write's derivative should
    reach is ambiguous)."""
    if _NO_GRAD.get(var) is not None and _grad_mode.state.grad_enabled:
        raise RuntimeError(_NO_GRAD_VIEW + "and is being modified inplace with grad mode enabled" + _AMBIGUOUS)
    current(var)


def after_write(var, source=None):
    """``var`` was written (it took over the new value): its views are dirty, and if it
    is a view, the write goes on into its parent."""
    for v in _live(_VIEWS.pop(var, None)):
        if v is not source:
            _make_dirty(v)
    if source is not None:
        _add_view(var, source)
    link = _LINK.get(var)
    if link is None:
        return
    parent, prim, params, k = link
    back = _INVERSE.get(prim.name) if k is None else None
    if back is None:
        raise TracerError(
            f"a write into a view made by {prim.name} ({var!r} of {parent!r}) cannot be traced: "
            "NumPy would change the array it views, and no inverse is known. Copy the view "
            "first (v = v.copy()) or write into the array itself")
    from .tracer import take_over
    parent = current(parent)
    take_over(parent, back(parent, var, params))
    after_write(parent, source=var)


def _make_dirty(v):
    if _NO_GRAD.get(v) is False:
        _NO_GRAD[v] = True  # (read again with grad mode on, it is refused: see current)
    if not is_dirty(v):
        v.__class__ = _twin(type(v))
        _DIRTIES[v] = None
    for c in _live(_VIEWS.pop(v, None)):
        _make_dirty(c)


def _reshape_back(parent, view, params):
    return P.reshape(view, shape=parent.shape)


def _permute_back(parent, view, params):
    dims = params["dims"]
    inverse = [0] * len(dims)
    for i, d in enumerate(dims):
        inverse[d] = i
    return P.permute(view, dims=tuple(inverse))


def _real_back(parent, view, params):
    return P.complex(view, P.imag(parent))


def _imag_back(parent, view, params):
    return P.complex(P.real(parent), view)


# The parts of a complex array are views in NumPy (``z.real[...] = v`` writes z) and copies
# in the kernels (a strided float view of complex memory is NumPy's own trick): the tape
# links them as views all the same, written back through ``complex``.
PART_VIEWS = {"real", "imag"}

_INVERSE = {
    "real": _real_back, "imag": _imag_back,
    "basic_index": lambda parent, view, params: P.index_put(parent, view, index=params["index"]),
    "reshape": _reshape_back, "squeeze": _reshape_back, "unsqueeze": _reshape_back,
    "transpose": lambda parent, view, params: P.transpose(view, dim0=params["dim0"], dim1=params["dim1"]),
    "t": lambda parent, view, params: P.t(view),
    "permute": _permute_back,
}
