"""``CompiledFunctionBackward``: the autograd node of a staged call (PyTorch's AOT autograd
names its node so). One node stands for the whole staged forward: its edges lead to the
call's input tensors and lifted parameters, and applying it runs the staged backward.

It keeps what an eager node keeps, and checks what an eager node checks: the residual
arrays the staged forward made (its own, held by nobody else), and the input tensors the
backward reads, version-stamped, so that an in-place change of one between forward and
backward raises PyTorch's error; after a backward without ``retain_graph`` it is freed.
A ``create_graph=True`` backward cannot go through it (the staged backward is not
recorded) and says so."""
from ..backend import ARRAY_TYPE_SET, memory_root
from ..backend import cpu as np
from ..runtime import dispatch
from ..runtime.node import (
    _FREED_MESSAGE,
    FREED,
    SAVED,
    Node,
    output_of,
    version_message,
)
from ..runtime.tensor import wrap

__all__ = ["CompiledFunctionBackward", "connect"]


class CompiledFunctionBackward(Node):
    __slots__ = ("_inputs", "_out_vers", "_outs", "_plan", "_residuals", "_saved", "_vers")
    _opaque = False  # its gradients are arrays it made: a leaf may adopt them as .grad

    def _apply(self, grads, graph):
        if self._saved == FREED:
            raise RuntimeError(_FREED_MESSAGE)
        if graph:
            raise NotImplementedError(
                "backward(create_graph=True) through a tracegrad.compile'd call: its backward is "
                "staged code, not recorded; compute higher-order derivatives without compile")
        p = self._plan
        for t, v in self._vers:  # (the inputs it reads, and those residuals are views of)
            cur = t._vc[0] if t._vc is not None else 0
            if cur != v:
                raise RuntimeError(version_message(t, cur, v, output_of(t)))
        saved = [t._data for t in self._inputs]
        for k, vc, v in self._out_vers:  # results the backward reads, changed in place since
            if vc[0] != v:
                raise RuntimeError(version_message(_Described(*p.out_metas[k][:2]), vc[0], v,
                                                   f", which is output {k} of CompiledFunctionBackward,"))
        metas = p.out_metas
        cts = [(g if g is not None else _zeros(*metas[k])) for k, g in enumerate(grads) if p.diff[k]]
        results = p.backward(*self._residuals, *saved, *cts)
        out = [None] * len(self._next_functions)
        # A gradient the engine may adopt as a leaf's ``.grad`` (and then add into in place)
        # must be memory no other gradient, residual, saved input or cotangent uses: the
        # staged backward may hand out one array for two inputs (the equal gradients of an
        # RNN's two biases, merged as one subexpression) or a value it also keeps, so such
        # a gradient is handed out as a copy.
        held = {id(memory_root(a)) for a in (*self._residuals, *saved, *cts)}
        for i, r in zip(p.grad_of, results):
            dtype = p.in_metas[i][1]
            if type(r) not in ARRAY_TYPE_SET:
                r = np.asarray(r)  # (a NumPy scalar from a reduction)
            if r.dtype != dtype:
                r = r.astype(dtype)
            else:
                root = id(memory_root(r))
                if root in held:
                    r = r.copy()
                else:
                    held.add(root)
                    out[i] = r
                    continue
            held.add(id(r))  # (a new array: its own root)
            out[i] = r
        return tuple(out)

    def _release(self):
        self._residuals = self._inputs = self._vers = None
        self._saved = FREED

    def saved_items(self):
        return [] if self._inputs is None else list(self._inputs)


def _zeros(shape, dtype, xp):
    return xp.zeros(shape, dtype=dtype)


def connect(p, tensors, results):
    """The call's outputs (Tensors) for the staged forward's ``results``, made the outputs
    of a new node whose edges lead to ``tensors``."""
    node = CompiledFunctionBackward()
    node._next_functions = tuple(dispatch.edge_of(t) for t in tensors)
    node._extra = None
    node._plan = p
    n = p.n_out
    node._residuals = results[n:]
    inputs = [tensors[i] for i in p.saved]
    node._inputs = inputs
    node._vers = [(t, t._vc[0] if t._vc is not None else 0)
                  for t in (*inputs, *[tensors[i] for i in p.watched])]
    node._saved = SAVED
    node._outs = None if n == 1 else p.out_metas
    if dispatch.anomaly_enabled:
        from ..runtime.anomaly import record_trace
        record_trace(node)
    outs = []
    for k in range(n):
        r = results[k]
        if type(r) not in ARRAY_TYPE_SET:
            r = np.asarray(r)  # (a NumPy scalar from a reduction)
        elif k in p.copies:
            r = r.copy()
        outs.append(wrap(r, True, node, k) if p.diff[k] else wrap(r))
    node._out_vers = [(k, vc, vc[0]) for k in p.guarded for vc in (outs[k]._version_counter(),)]
    return outs


class _Described:
    """What PyTorch's message about a changed saved value reads of a tensor."""

    def __init__(self, shape, dtype):
        self.shape, self._dtype = shape, dtype

    def type(self):
        from ..runtime.tensor import dtype_of
        return f"tracegrad.{dtype_of(self._dtype)._legacy}"
