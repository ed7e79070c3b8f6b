"""``functionalize``, eagerly. torch's ``functionalize(f)`` reruns ``f`` on functional
wrapper tensors that turn in-place ops into out-of-place ones and replay input mutations at
the end, so that a graph tracer (``make_fx``) sees a mutation-free program. Run eagerly,
what a caller can observe is: the output values, the mutations of the inputs, and which
outputs share memory with an input. tracegrad has no graph tracer for it to serve and its
eager ops already perform the mutations for real, so the wrapper calls ``f`` and then
applies torch 2.13's aliasing of outputs to inputs (checked against torch):

* an input returned as itself stays that object, unless its memory was mutated during the
  call -- then the output is a copy;
* a view of an input is a copy when that input's memory was mutated, or with
  ``remove="mutations_and_views"`` (torch's ``view_copy``); otherwise it stays a view.
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
        versions = {id(_root(x)): _root(x)._version for x in inputs}
        ids = {id(x) for x in inputs}
        outputs = func(*args, **kwargs)

        def unaliased(out):
            if not isinstance(out, Tensor):
                return out
            root = _root(out)
            if id(root) not in versions:
                return out
            mutated = root._version != versions[id(root)]
            if mutated or (id(out) not in ids and remove == "mutations_and_views"):
                return out.clone()
            return out
        return tree_map(unaliased, outputs)
    return wrapped
