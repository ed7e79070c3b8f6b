"""``functionalize``, eagerly. torch's ``functionalize(f)`` reruns ``f`` on functional
wrapper tensors that turn in-place ops into out-of-place ones and replay input mutations at the end, so that a graph tracer
(``make_fx``) sees a mutation-free program. Run eagerly its observable contract is only:
the same output values, the same mutations of the inputs, and outputs that do not alias
the inputs (except an input returned as itself, which comes back as the same object).
tracegrad has no graph tracer for it to serve, and its eager ops already perform the
mutations for real, so the wrapper calls ``f`` and copies any output that is a view of an
input -- the one difference a caller could observe.
"""
import functools

from ..runtime.tensor import Tensor
from ..transform.tree import leaves, tree_map

__all__ = ["functionalize"]

_REMOVE_OPTIONS = ("mutations", "mutations_and_views")


def _root(t):
    """The tensor whose memory ``t`` views (``t`` itself when it is not a view)."""
    while getattr(t, "_base", None) is not None:
        t = t._base
    return t


def functionalize(func, *, remove="mutations"):
    """``func`` with torch.func.functionalize's eager semantics (see the module docstring)."""
    if remove not in _REMOVE_OPTIONS:
        raise RuntimeError(
            f"functionalize(f, remove='mutations'): received invalid argument for remove={remove}."
            " Valid options are:\n"
            "     remove='mutations': all inplace and out= operators will be removed from the program, and replaced"
            " with their out-of-place equivalents.\n"
            "     remove='mutations_and_views': In addition to the above, all aliasing operators {view} will be"
            " replaced with their non-aliasing counterparts, {view}_copy.\n")

    @functools.wraps(func)
    def wrapped(*args, **kwargs):
        inputs = [x for x in leaves((args, kwargs)) if isinstance(x, Tensor)]
        roots = {id(_root(x)) for x in inputs}
        ids = {id(x) for x in inputs}

        def unaliased(out):
            if isinstance(out, Tensor) and id(out) not in ids and id(_root(out)) in roots:
                return out.clone()
            return out
        return tree_map(unaliased, func(*args, **kwargs))
    return wrapped
