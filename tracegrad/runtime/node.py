"""Backward graph nodes: what ``Tensor.grad_fn`` points at.

A :class:`FunctionNode` records one application of a rule-table primitive: the operands
its needed vjps read (saved Tensors, version-checked when unpacked), the shapes of the
others, the static parameters, and ``next_functions`` -- one ``(node, output_nr)`` edge per
differentiable operand. Each PyTorch name (``MulBackward0``...) is its own subclass, made
on first use, so ``type(y.grad_fn).__name__`` and the repr read as in PyTorch.

:class:`AccumulateGrad` is the node of a leaf that requires grad: it adds incoming
gradients into the leaf's ``.grad``.
"""
import math
import re
import types

from .. import backend as _backend
from ..rules.complex_ import complex_refusal, conj_of, real_of
from ..rules.core import Meta, meta  # noqa: F401  (meta: re-exported for the dispatcher)
from . import forward as _forward
from . import hooks as _hooks
from . import tensor as _tensor

__all__ = ["Node", "FunctionNode", "AccumulateGrad", "node_class"]

_FREED_MESSAGE = (
    "Trying to backward through the graph a second time (or directly access saved tensors "
    "after they have already been freed). Saved intermediate values of the graph are freed "
    "when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to "
    "backward through the graph a second time or if you need to access saved tensors after "
    "calling backward.")


class Node:
    """Base class of every backward node (``tracegrad.autograd.graph.Node``)."""

    __slots__ = ("_next_functions", "_extra", "__weakref__")
    _opaque = False  # True for nodes running user code (custom Functions)

    def saved_items(self):
        """What this node saved for backward (see :meth:`FunctionNode.saved_items`)."""
        return []

    def name(self):
        return type(self).__name__

    def __repr__(self):
        return f"<{type(self).__name__} object at {id(self):#x}>"

    @property
    def next_functions(self):
        """``((node_or_None, output_nr), ...)``: one edge per differentiable input."""
        return self._next_functions

    @property
    def metadata(self):
        """A dict for the user's own annotations, kept with the node."""
        extra = self._extras()
        return extra.setdefault("metadata", {})

    def _extras(self):
        if self._extra is None:
            self._extra = {}
        return self._extra

    def register_hook(self, fn):
        """Call ``fn(grad_inputs, grad_outputs)`` after this node computes the gradients of
        its inputs; a non-None return value (a tuple) replaces ``grad_inputs``."""
        return _hooks.add_hook(self, "hooks", fn)

    def register_prehook(self, fn):
        """Call ``fn(grad_outputs)`` before this node runs; a non-None return value (a
        tuple) replaces ``grad_outputs``."""
        return _hooks.add_hook(self, "prehooks", fn)

    def __call__(self, *grads):
        """Apply this node by hand: gradients of its outputs in, gradients of its inputs out
        (a Tensor for a single input, a tuple otherwise)."""
        from .engine import call_node
        return call_node(self, grads)


class FunctionNode(Node):
    """A node recorded by a primitive; subclasses per name carry ``_prim``."""

    # _args: the operands as the vjps receive them: saved Tensors (version-stamped in
    #   _vers), numbers, and Meta shapes for operands whose values were not saved.
    # _out: None (result not saved), or (result array(s), version counter(s), version(s)).
    # _saved: NOTHING_SAVED, SAVED (values held for backward) or FREED (after a backward
    # without retain_graph; using the node again is then an error, as in PyTorch).
    __slots__ = ("_args", "_vers", "_out", "_params", "_pos", "_saved", "_outs")
    _prim = None

    # -- saved values --------------------------------------------------------------------
    def _unpack_args(self, graph):
        """Operands for the vjps: saved values (arrays, or Tensors when building a graph of
        the backward), version-checked; the ``Meta`` shapes stored for the others."""
        args, vers = self._args, self._vers
        if vers is None:
            return args
        if self._saved == FREED:
            raise RuntimeError(_FREED_MESSAGE)
        res = list(args)
        for i, v in enumerate(vers):
            if v is not None:
                a = args[i]
                if v == PACKED:  # stored by saved-tensor hooks
                    res[i] = a.tensor(graph)
                    continue
                cur = a._vc[0] if a._vc is not None else 0
                if cur != v:
                    raise RuntimeError(version_message(a, cur, v, output_of(a)))
                if not graph:
                    res[i] = a._data
        return res

    def _unpack_out(self, graph):
        """The saved result(s), version-checked; Tensors (with this node as grad_fn) when
        building a graph of the backward."""
        if self._saved == FREED:
            raise RuntimeError(_FREED_MESSAGE)
        out, vcs, vers = self._out
        if vcs is None:  # stored by saved-tensor hooks
            return tuple(None if p is None else p.tensor(graph) for p in out) if type(out) is tuple else out.tensor(graph)
        single = type(out) is not tuple
        if single:
            out, vcs, vers = (out,), (vcs,), (vers,)
        for k, (vc, v) in enumerate(zip(vcs, vers)):
            if vc is not None and vc[0] != v:  # (None: an output the vjps do not read)
                raise RuntimeError(version_message(_tensor.wrap(out[k]), vc[0], v,
                                                   f", which is output {k} of {_op_name(self)},"))
        if graph:
            link = self._extra.get("result_link") if self._extra is not None else None
            linked = link.wrap(out[0]) if link is not None and single else None
            if linked is not None:  # an in-place op on a view: see views.WrittenView
                return linked
            out = tuple(o if o is None else _tensor.wrap(o, True, self, k) for k, o in enumerate(out))
            if _forward.ACTIVE[0] and self._extra is not None:  # forward-over-reverse
                _forward.saved_result_tangents(self, out)
        return out[0] if single else out

    def _release(self):
        """Free saved values after a backward that did not ask to retain the graph."""
        vers = self._vers
        if vers is not None:
            self._args = [None if v is not None else a for a, v in zip(self._args, vers)]
        if self._out is not None:
            self._out = ()
        self._saved = FREED

    # -- introspection -------------------------------------------------------------------
    def saved_items(self):
        """``[(name, value), ...]``: what this node saved for backward under PyTorch's names
        (``self``, ``other``, ``result``...): Tensors, or numbers for number operands."""
        if self._saved == FREED:
            return []
        names = self._prim.saved_names or _DEFAULT_SAVED_NAMES
        items = []
        vers = self._vers or ()
        for i, v in enumerate(vers):
            if v is not None:
                a = self._args[i]
                items.append((names[i] if i < len(names) else f"arg{i}", a.tensor(True) if v == PACKED else a))
        if self._out is not None and self._out is not True:
            items.append(("result", self._unpack_out(True)))
        return items

    # -- applying ------------------------------------------------------------------------
    def _apply(self, grads, graph, *, _plain=False, _vjp0=None, _vjp1=None):
        """Gradients for ``next_functions`` from the gradients of this node's outputs.
        (The keyword arguments are set per node class, see node_class: whether its rule
        is right for any dtype with one vjp per operand, the common case run inline
        here, and its vjps of operands 0 and 1.)"""
        if self._saved == FREED:
            raise RuntimeError(_FREED_MESSAGE)
        # Operands as stored (numbers, Meta shapes) unless tensors were saved for backward.
        args = self._args if self._vers is None else self._unpack_args(graph)
        saved = self._out
        if saved is None:
            out = None
        elif graph or saved[1].__class__ is not list:
            out = self._unpack_out(graph)
        else:  # one raw result, version-stamped
            out = saved[0]
            if saved[1][0] != saved[2]:
                self._unpack_out(graph)  # raises the version error
        if self._outs is None:
            g = grads[0]
            if _plain and self._params is None and self._extra is None:
                # the common case (_vjps' first branch, inline): one output, no params, no
                # dtypes to restore, a rule right for any dtype (no complex check after)
                if type((g._data if graph else g).dtype) in _COMPLEX_DTYPES:  # (dtype.kind == "c")
                    return self._apply_complex(g, out, args, graph)
                pos = self._pos
                if pos is _POS0 and _vjp0 is not None:  # (a node's one edge leads somewhere)
                    return (_vjp0(g, out, *args),)
                edges = self._next_functions
                if pos is _POS01 and _vjp1 is not None:
                    return (_vjp0(g, out, *args) if edges[0][0] is not None else None,
                            _vjp1(g, out, *args) if edges[1][0] is not None else None)
                vjps = self._prim.vjps
                first = vjps[pos[0]](g, out, *args) if edges[0][0] is not None else None
                if len(pos) == 1:
                    return (first,)
                if len(pos) == 2:
                    return (first, vjps[pos[1]](g, out, *args) if edges[1][0] is not None else None)
            elif (g._data if graph else g).dtype.kind == "c" or self._prim.complex == "real":
                return self._apply_complex(g, out, args, graph)
        else:
            g = tuple(gk if gk is not None else _zeros(o, graph) for gk, o in zip(grads, self._outs))
            prim = self._prim
            if prim.complex == "real" or any((gk._data if graph else gk).dtype.kind == "c" for gk in g):
                return self._apply_complex(g, out, args, graph)
        grads_in = self._vjps(g, out, args, graph)
        prim = self._prim
        if not prim.complex and _any_complex(grads_in, graph):  # complex operands, real result
            raise NotImplementedError(complex_refusal(self.name(), prim.name))
        return grads_in

    def _apply_complex(self, g, out, args, graph):
        """PyTorch's conjugate convention from the table's (JAX's): ``conj(vjp(conj(g)))``,
        for rules declared right for complex values; any other rule is refused."""
        prim = self._prim
        if not prim.complex:
            raise NotImplementedError(complex_refusal(self.name(), prim.name))
        g = tuple(conj_of(gk) for gk in g) if isinstance(g, tuple) else conj_of(g)
        grads = self._vjps(g, out, args, graph)
        # a real operand keeps the real part of its gradient (PyTorch's rule for real inputs)
        return tuple(None if gi is None else conj_of(gi) if _complex_operand(args, p) else real_of(gi)
                     for gi, p in zip(grads, self._pos))

    def _vjps(self, g, out, args, graph):
        prim = self._prim
        pos = self._pos
        edges = self._next_functions
        params = self._params
        if prim.vjp_all_fn is not None:
            every = prim.vjp_all_fn(g, out, *args, **(params or _NO_PARAMS))
            return tuple(every[p] if edges[j][0] is not None else None for j, p in enumerate(pos))
        vjps = prim.vjps
        if params is None and len(pos) <= 2 and self._extra is None:  # the common case
            first = vjps[pos[0]](g, out, *args) if edges[0][0] is not None else None
            if len(pos) == 1:
                return (first,)
            return (first, vjps[pos[1]](g, out, *args) if edges[1][0] is not None else None)
        params = params or _NO_PARAMS
        grads_in = tuple(vjps[p](g, out, *args, **params) if edges[j][0] is not None else None
                         for j, p in enumerate(pos))
        dtypes = self._extra.get("dtypes") if self._extra is not None else None
        if dtypes is not None:
            grads_in = tuple(_as_dtype(gi, dtypes[p], graph) for gi, p in zip(grads_in, pos))
        return grads_in


def _saved_attribute(self, key):
    """``grad_fn._saved_<key>`` (``_saved_self``, ``_saved_other``, ``_saved_result``,
    ``_saved_dim``...): what the node saved, under PyTorch's names (AttributeError for what
    it did not save)."""
    name = "_saved_" + key
    prim = self._prim
    if key == "result":
        if self._out is None:
            raise AttributeError(f"{self.name()} did not save its result")
        return self._unpack_out(True)
    names = prim.saved_names or _DEFAULT_SAVED_NAMES
    if key in names:
        i = names.index(key)
        if i < len(self._args) and self._args[i] is not None and type(self._args[i]) is not Meta:
            a = self._args[i]  # a saved Tensor (maybe packed by hooks), or a number operand
            return a.tensor(True) if self._vers and self._vers[i] == PACKED else a
        if self._saved == FREED:
            raise RuntimeError(_FREED_MESSAGE)
        raise AttributeError(f"{self.name()} did not save '{key}'")
    if prim.result_names and key in prim.result_names and self._out is not None:
        k = prim.result_names.index(key)
        value = self._unpack_out(False)[k]
        if value is None:
            raise AttributeError(f"{self.name()} did not save '{key}'")
        diff = value.dtype.kind in "fc"
        return _tensor.wrap(value, diff, self if diff else None, k if diff else 0)
    for suffix in ("_sym_sizes", "_sym_numel"):  # an operand's shape (always kept)
        if key.endswith(suffix) and key[:-len(suffix)] in names:
            i = names.index(key[:-len(suffix)])
            if i < len(self._args) and hasattr(self._args[i], "shape"):
                shape = tuple(int(n) for n in self._args[i].shape)
                return shape if suffix == "_sym_sizes" else math.prod(shape)
    if prim.saved_view is not None:
        view = prim.saved_view(self._params or {})
        if key in view:
            return view[key]
    params = self._params or {}
    if key in params:
        return params[key]
    raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")


_NO_PARAMS = {}
# NumPy's complex dtype classes: ``type(dtype) in`` them is ``dtype.kind == "c"`` at less
# cost (a dtype's kind is a new string at each read)
_COMPLEX_DTYPES = frozenset(type(_backend.cpu.dtype(c)) for c in "FDG")
_POS0, _POS01 = (0,), (0, 1)  # the operand positions of most nodes (``_pos``), shared
_DEFAULT_SAVED_NAMES = ("self", "other")
NOTHING_SAVED, SAVED, FREED, CLAIMED = 0, 1, 2, 3  # CLAIMED: being consumed by one backward
PACKED = -1  # the version stamp of an operand stored by saved-tensor hooks
_new = object.__new__


def _complex_operand(args, p):
    """Whether stored operand ``p`` (a Tensor, array, Meta or number) is complex; an
    operand whose dtype is unknown counts as complex, so its gradient is left whole."""
    a = args[p] if p < len(args) else None
    if a is None:
        return True
    d = getattr(a, "dtype", None)
    if d is None:
        return not isinstance(a, (int, float, bool))
    return d.is_complex if hasattr(d, "is_complex") else d.kind == "c"


def _any_complex(grads, graph):
    for gi in grads:
        if gi is not None:
            d = getattr(gi._data if graph else gi, "dtype", None)
            if d is not None and d.kind == "c":
                return True
    return False


def _as_dtype(g, dtype, graph):
    """Gradient ``g`` in the dtype of the operand it belongs to (after type promotion)."""
    if g is None or dtype is None:
        return g
    if dtype.kind != "c":  # a real operand keeps the real part of a complex gradient
        g = real_of(g)
    if graph:
        return g if g._data.dtype == dtype else g.to(_tensor.dtype_of(dtype))
    return g if g.dtype == dtype else g.astype(dtype)


def _zeros(output, graph):
    """Zeros for an output that received no gradient (``output``: its shape, dtype, xp)."""
    shape, dtype, xp = output
    z = xp.zeros(shape, dtype=dtype)
    return _tensor.wrap(z) if graph else z


class AccumulateGrad(Node):
    """The node of a leaf tensor that requires grad; ``variable`` is that leaf."""

    __slots__ = ("variable",)
    _outs = None  # one output, like a FunctionNode of a single-output rule
    _saved = 0  # NOTHING_SAVED: the engine never claims it

    def __init__(self, variable):
        self.variable = variable
        self._next_functions = ()
        self._extra = None

    def name(self):
        return "torch::autograd::AccumulateGrad"  # PyTorch's name, which code compares against


def node_class(prim, name):
    """The node class named ``name`` for primitive ``prim`` (made once, then cached). Its
    ``_saved_<key>`` attributes are properties, one per key the node could answer: a
    ``__getattr__`` would answer them too, but would slow every other attribute read of
    every node (CPython does not specialize attribute access on such classes)."""
    cls = prim.node_classes.get(name)
    if cls is None:  # setdefault: two threads making the class at once agree on one
        attrs = {"_saved_" + key: _saved_property(key) for key in _saved_keys(prim)}
        apply = own_copy(FunctionNode._apply)
        if prim.complex is True and prim.vjp_all_fn is None:
            vjps = list(prim.vjps[:2]) + [None, None]
            apply.__kwdefaults__ = {"_plain": True, "_vjp0": vjps[0], "_vjp1": vjps[1] if vjps[0] else None}
        cls = prim.node_classes.setdefault(name, type(name, (FunctionNode,), {
            "__slots__": (), "_prim": prim, "__module__": "tracegrad.autograd.graph",
            "_apply": apply, "_release": own_copy(FunctionNode._release), **attrs}))
    return cls


def own_copy(fn):
    """``fn`` with a code object of its own. CPython specializes attribute reads and writes
    per code object and per type: the methods of FunctionNode, shared by every node class,
    would see a different class from one node to the next and read every attribute through
    the slow generic path; a copy per class sees one class only."""
    copy = types.FunctionType(fn.__code__.replace(), fn.__globals__, fn.__name__, fn.__defaults__,
                              fn.__closure__)
    copy.__kwdefaults__ = fn.__kwdefaults__ and dict(fn.__kwdefaults__)
    copy.__doc__, copy.__qualname__ = fn.__doc__, fn.__qualname__
    return copy


def _saved_property(key):
    return property(lambda node: _saved_attribute(node, key))


def _saved_keys(prim):
    """Every ``key`` a node of ``prim`` might answer as ``_saved_<key>`` (a superset: the
    property of a key a node does not have raises AttributeError, as a missing attribute
    does): its operands' names and their shapes, ``result`` and the named results, its
    params, and what its ``saved_view`` may return."""
    names = prim.saved_names or _DEFAULT_SAVED_NAMES
    keys = {"result", *names, *prim.params, *(prim.result_names or ())}
    keys.update(n + suffix for n in names for suffix in ("_sym_sizes", "_sym_numel"))
    if prim.saved_view is not None:
        keys.update(_strings_of(prim.saved_view, set()))
    return sorted(k for k in keys if k.isidentifier())


def _strings_of(fn, seen):
    """The strings ``fn`` may use as dict keys: the string constants of its code (nested
    code included), and those of the functions and the keys of the dicts it names."""
    strings = set()
    if id(fn) in seen or not hasattr(fn, "__code__"):
        return strings
    seen.add(id(fn))
    codes = [fn.__code__]
    while codes:
        code = codes.pop()
        consts = list(code.co_consts)
        while consts:
            c = consts.pop()
            if isinstance(c, str):
                strings.add(c)
            elif isinstance(c, (tuple, frozenset)):  # (a dict display's constant keys)
                consts.extend(c)
            elif isinstance(c, types.CodeType):
                codes.append(c)
        for name in code.co_names:
            value = fn.__globals__.get(name)
            if isinstance(value, dict):
                strings.update(k for k in value if isinstance(k, str))
            elif isinstance(value, types.FunctionType):
                strings |= _strings_of(value, seen)
    return strings


def _op_name(node):
    """The forward operation's name as PyTorch's messages give it: MulBackward0 -> Mul,
    EluBackward1 -> Elu1."""
    return re.sub(r"Backward(\d*)$", lambda m: "" if m.group(1) == "0" else m.group(1), node.name())


def output_of(t):
    """", which is output N of Op," for a tensor some node produced (else empty)."""
    fn = t._grad_fn
    return f", which is output {t._output_nr} of {_op_name(fn)}," if fn is not None else ""


def version_message(t, current, expected, which=""):
    from .dispatch import anomaly_enabled
    hint = ("the backtrace further above shows the operation that failed to compute its "
            "gradient. The variable in question was changed in there or anywhere later. Good luck!"
            if anomaly_enabled else
            "enable anomaly detection to find the operation that failed to compute its gradient, "
            "with tracegrad.autograd.set_detect_anomaly(True, check_nan=False).")
    return ("one of the variables needed for gradient computation has been modified by an "
            f"inplace operation: [{_type_in_message(t)} {list(t.shape)}]{which} is at version {current}; "
            f"expected version {expected} instead. Hint: {hint}")


# scalar types PyTorch names in that message by dispatch key (``CPUBoolType``), the others
# by their legacy tensor type (``torch.FloatTensor``)
_KEYED_IN_MESSAGE = frozenset(("Bool", "BFloat16", "ComplexHalf", "ComplexFloat", "ComplexDouble"))


def _type_in_message(t):
    """``t.type()`` (a Tensor, or a compiled node's description of one), or the dispatch
    key's name PyTorch gives the saved bool and complex tensors there."""
    name = t.type()
    scalar = name.rsplit(".", 1)[-1][:-len("Tensor")]
    if scalar in _KEYED_IN_MESSAGE:
        return f"{'CUDA' if '.cuda.' in name else 'CPU'}{scalar}Type"
    return name
