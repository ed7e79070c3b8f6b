"""``BatchedTensor``: what a function under ``vmap`` sees -- one sample of a batch.

A BatchedTensor of vmap level ``L`` holds a *physical* value (``_phys``: a Tensor, or a
BatchedTensor of an outer vmap) whose dim 0 is the batch. Everything about its shape
answers per sample: ``_data`` is sample 0 of the physical array (the same memory, so
shapes, strides and dtype are those of one sample), and every operation on it goes
through :func:`run_batched`, installed as ``dispatch.batching`` while a vmap runs: the
primitive's batching rule (:mod:`tracegrad.rules.batching`) runs on the physical values.

Autograd has two levels here, as in functorch. The physical values record as usual, so a
transform *outside* the vmap (``grad(vmap(f))``) differentiates through the batched
computation. A transform *inside* (``vmap(grad(f))``) differentiates per sample: its
inputs are BatchedTensors that are leaves of their own (logical) graph, recorded here
from the BatchedTensors' own ``_requires_grad``/``_grad_fn`` with the rule table's
nodes, so the backward pass runs the vjps on BatchedTensors -- batched as well.

Forward AD has one level (see :mod:`tracegrad.runtime.forward`), and its tangents live with
the samples: a BatchedTensor's tangent is a per-sample value (a BatchedTensor, or a Tensor
shared by all samples), set by the rule table's jvps run on the BatchedTensors after each
batched operation; the batching rules themselves run with forward AD paused. A dual tensor
entering a vmap has its tangent batched with it, and an output's tangent leaves with it
(:mod:`._vmap`), so ``vmap(jvp(f))``, ``jvp(vmap(f))`` and their mixtures agree.

Code outside the batching rules must never read a BatchedTensor's ``_data`` as its value
(it is sample 0): the conversions (``numpy``, ``item``...) refuse, and other modules test
the class attribute ``_vmap_batched`` (or ``ops._args.per_sample``) to compute through
operations instead, or to refuse by name.
"""
import threading

from ..rules.batching import ELEMENTWISE, rule_for
from ..runtime import dispatch, forward, grad_mode
from ..runtime.tensor import Tensor
from ..runtime.views import rebase_history

__all__ = ["BatchedTensor", "batched", "levels", "run_batched", "run_batched_inplace"]



class _Levels(threading.local):
    def __init__(self):
        self.stack = []


_levels = _Levels()


def levels():
    """This thread's active transforms, innermost last: ("vmap", size, randomness, level)
    or ("grad",)."""
    return _levels.stack


_new = object.__new__
_ITEM = ("vmap: It looks like you're calling .item() on a Tensor. We don't support vmap over "
         "calling .item() on a Tensor, please try to rewrite what you're doing with other "
         "operations. If error is occurring somewhere inside PyTorch internals, please file a bug report.")
_CONTROL_FLOW = ("vmap: It looks like you're attempting to use a Tensor in some data-dependent "
                 "control flow. We don't support that yet, please file an issue at "
                 "https://github.com/pytorch/pytorch/issues .")


class BatchedTensor(Tensor):
    """One sample of a batch, as a function under vmap sees it (see the module docstring)."""

    __slots__ = ("_level", "_phys")
    _vmap_batched = True  # (code outside tracegrad.func tests this: its _data is sample 0 only)
    _formats_as_number = True  # (f"{v.sum()}" reads the value, which vmap refuses, as PyTorch's)

    def item(self):
        raise RuntimeError(_ITEM)

    def tolist(self):
        raise RuntimeError(_ITEM)

    def numpy(self, *, force=False):
        raise RuntimeError("vmap: numpy() is not supported on a Tensor inside vmap: it has one value "
                           "per sample. Return the Tensor from the function instead.")

    __array__ = numpy

    def data_ptr(self):
        raise RuntimeError("Cannot access data pointer of Tensor that doesn't have storage")

    def __bool__(self):
        raise RuntimeError(_CONTROL_FLOW)

    def __float__(self):
        raise RuntimeError(_ITEM)

    __int__ = __complex__ = __float__

    def __index__(self):
        raise RuntimeError(_ITEM)

    def requires_grad_(self, requires_grad=True):
        raise RuntimeError("vmap: requires_grad_() on a Tensor inside vmap is not supported in tracegrad: "
                           "differentiate per sample with tracegrad.func.grad (or vjp, jacrev) inside vmap")

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        from ..runtime.engine import BACKWARD_IN_VMAP
        raise RuntimeError(BACKWARD_IN_VMAP)

    @property
    def data(self):
        return batched(self._phys.detach(), self._level)

    @data.setter
    def data(self, value):
        raise RuntimeError("mutating directly with `.data` under vmap transform is not allowed.")

    def detach(self):
        return batched(self._phys.detach(), self._level)

    def __reduce_ex__(self, protocol):
        raise NotImplementedError("vmap: cannot pickle (or otherwise serialize) a Tensor inside vmap: it "
                                  "has one value per sample. Return the Tensor from the function and "
                                  "save the batched result instead.")

    def __deepcopy__(self, memo):
        """A copy of every sample (a leaf, as Tensor.__deepcopy__ makes)."""
        if self._grad_fn is not None:
            raise RuntimeError("Only Tensors created explicitly by the user (graph leaves) "
                               "support the deepcopy protocol at the moment.")
        with forward.suspended():
            t = batched(self._phys.detach().clone(), self._level)
        t._requires_grad = self._requires_grad
        memo[id(self)] = t
        return t

    def __repr__(self):
        return f"BatchedTensor(lvl={self._level}, bdim=0, value=\n{_indent(repr(self._phys))}\n)"

    __str__ = __repr__


def _indent(text):
    return "\n".join("    " + line for line in text.splitlines())


def _stand_in(phys):
    """Sample 0 of the physical array (zeros of one sample's shape for an empty batch)."""
    d = phys._data
    if d.shape[0]:
        return d[0, ...]  # (an array, 0-d for a scalar sample: d[0] would be a NumPy scalar)
    from ..backend import namespace_of
    return namespace_of(d).zeros(d.shape[1:], dtype=d.dtype)


def batched(phys, level):
    """A BatchedTensor of ``level`` over physical Tensor ``phys`` (batch dim 0)."""
    t = _new(BatchedTensor)
    t._data = _stand_in(phys)
    t._requires_grad = False
    t._grad_fn = None
    t._output_nr = 0
    t._grad = None
    t._vc = None
    t._base = None
    t._view = None
    t._acc = None
    t._extra = None
    t._phys = phys
    t._level = level
    return t


def _top_level(args):
    level = -1
    for a in args:
        if type(a) is BatchedTensor and a._level > level:
            level = a._level
    return level


def _size_of(level):
    for entry in _levels.stack:
        if entry[0] == "vmap" and entry[3] == level:
            return entry[1]
    raise RuntimeError("vmap: a Tensor from a vmap that has already returned was used "
                       "(a batched value escaped its vmap, e.g. through a global or a closure)")


def _split(args, level):
    phys, flags = [], []
    for a in args:
        if type(a) is BatchedTensor and a._level == level:
            phys.append(a._phys)
            flags.append(True)
        else:
            phys.append(a)
            flags.append(False)
    return phys, flags


def run_batched(prim, args, params):
    """``dispatch.batching``: run ``prim`` through its batching rule if an operand is a
    BatchedTensor (NotImplemented otherwise), and record it on the logical graph."""
    level = _top_level(args)
    if level < 0:
        return NotImplemented
    size = _size_of(level)
    phys, flags = _split(args, level)
    if forward.ACTIVE[0]:
        with forward.suspended():  # (tangents move with the samples: attached below)
            out = rule_for(prim)(prim, phys, tuple(flags), params, size)
    else:
        out = rule_for(prim)(prim, phys, tuple(flags), params, size)
    single = prim.nout == 1 and not isinstance(out, (tuple, list))
    outs = tuple(batched(o, level) for o in ((out,) if single else out))
    if prim.view and type(args[0]) is BatchedTensor and args[0]._level == level:
        dispatch._link_views(prim, args[0], params, list(outs))  # (for in-place writes into views)
    _record(prim, args, params, outs, level)
    result = outs[0] if single else outs
    if forward.ACTIVE[0]:
        forward.attach(prim, args, params, result)
    return result


def _record(prim, args, params, outs, level):
    """The logical node: the rule table's node over the BatchedTensors of ``level``, with
    edges only to them (other operands are constants here: an outer transform sees them
    through the physical computation)."""
    if grad_mode.state.mode != grad_mode.GRAD or not prim.differentiable:
        return
    node = _logical_node(prim, args, params, level)
    if node is None:
        return
    if len(outs) > 1 or prim.nout != 1:
        from ..backend import namespace_of
        node._outs = tuple((o._data.shape, o._data.dtype, namespace_of(o._data)) for o in outs)
    for k, o in enumerate(outs):
        if o._data.dtype.kind in "fc":
            o._requires_grad = True
            o._grad_fn = node
            o._output_nr = k
    if node._out is True:  # kept as the BatchedTensors themselves (see _Kept)
        keep = prim.saved_outputs
        node._out = (_Kept(outs[0]) if prim.nout == 1 and len(outs) == 1 else
                     tuple(_Kept(o) if keep is None or k in keep else None for k, o in enumerate(outs)),
                     None, None)


class _Kept:
    """A saved result as the node reads it back (the protocol of saved-tensor hooks'
    packed values): the BatchedTensor itself, whose stored ``_data`` is one sample only."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    def tensor(self, graph):
        return self.value


def _logical_node(prim, args, params, level, node_args=None):
    """The rule table's node for ``prim`` over the BatchedTensors of ``level`` that require
    grad (None if none does), with edges to them only."""
    rmask = 0
    for i, a in enumerate(args):
        if type(a) is BatchedTensor and a._level == level and a.requires_grad:
            rmask |= 1 << i
    if not rmask:
        return None
    node = dispatch._record(prim, args, params, rmask, node_args)
    if node is not None:
        node._next_functions = tuple(e if type(args[p]) is BatchedTensor and args[p]._level == level
                                     else (None, 0) for e, p in zip(node._next_functions, node._pos))
    return node


def run_batched_inplace(prim, args, params):
    """``dispatch.batching_inplace``: an in-place primitive on a batched tensor: the
    out-of-place result through the batching rule, copied into the physical storage."""
    level = _top_level(args)
    if level < 0:
        return NotImplemented
    self = args[0]
    if not (type(self) is BatchedTensor and self._level == level):
        raise RuntimeError(_INPLACE.format(op="inplace arithmetic" if prim.name in ELEMENTWISE else prim.name + "_"))
    node = None
    recording = grad_mode.state.mode == grad_mode.GRAD and prim.differentiable
    saves_old = recording and any(a.requires_grad for a in args if type(a) is BatchedTensor and a._level == level)
    tangents = forward.ACTIVE[0] and forward.has_tangent(args)
    # self as it was (a copy, with its history), made once for the vjps and the tangent rule
    before = _before(self, level) if saves_old or tangents else None
    if recording:
        node = _logical_node(prim, args, params, level, (before,) + tuple(args[1:]) if saves_old else None)
    dual = tangents and forward.inplace_rule(prim, args, params, before=before)
    phys, flags = _split(args, level)
    if grad_mode.state.mode == grad_mode.GRAD and phys[0].requires_grad:
        # a transform outside the vmap records the physical values: the rule reads a copy of
        # self, which the write below leaves as its vjp saved it
        phys[0] = before._phys if before is not None else self._phys.clone()
    with forward.suspended():
        out = rule_for(prim)(prim, phys, tuple(flags), params, _size_of(level))
        dispatch.apply_inplace(_copy(), (self._phys, out), {})
    self._data = _stand_in(self._phys)
    self._bump_version()
    if node is not None:
        rebase_history(self, node, 0 if node._pos[0] == 0 else None)
        if node._out is True or "result_link" in (node._extra or ()):
            node._out = (_Kept(self), None, None)
    if dual:
        dual(self)
    return self


def _before(self, level):
    """A copy of batched ``self`` as it is before an in-place write, with its history (what
    the vjps and jvps of the write read)."""
    with forward.suspended():
        old = batched(self._phys.clone(), level)
    old._requires_grad, old._grad_fn, old._output_nr = self.requires_grad, self.grad_fn, self._output_nr
    return old


def _copy():
    from ..rules.core import TABLE
    return TABLE["copy"]


_INPLACE = ("vmap: {op}(self, *extra_args) is not possible because there exists a Tensor `other` in "
            "extra_args that has more elements than `self`. This happened due to `other` being vmapped "
            "over but `self` not being vmapped over in a vmap. Please try to use out-of-place operators "
            "instead of {op}. If said operator is being called inside the PyTorch framework, please file "
            "a bug report instead.")
