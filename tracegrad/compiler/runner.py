"""A compiled callable: guards select a staged version of the call, or trace a new one, or
run the call eagerly (a graph break), and a staged forward joins the eager autograd graph
as one node whose backward runs the staged backward.

A call whose trace broke is remembered under its guards and runs eagerly from then on
(``fullgraph=True`` raises :class:`~.capture.Unsupported` instead). Whatever a broken
trace changed is put back before the eager run: random generators are rewound, and
writes into tensors are refused before they happen, so the eager run sees the state the
call was made in.
"""
import warnings

from ..backend import ARRAY_TYPE_SET
from ..backend import cpu as np
from ..runtime import grad_mode
from ..runtime.tensor import Tensor, wrap
from ..transform.reads import Reads
from ..transform.tape.randomness import Draws
from ..transform.tape.tracing import active_tape
from ..transform.tree import flatten, unflatten
from . import capture
from .capture import CaptureTape, GraphBreak, Unsupported, capturing
from .guards import call_key, module_key, tensor_key
from .node import connect
from .staging import plan

__all__ = ["CompiledCallable", "reset_all"]

RECOMPILE_LIMIT = 8  # torch._dynamo.config.recompile_limit's default

_ALL = []  # weak references to every compiled callable (tracegrad.compiler.reset)


class _Break:
    """A cache entry: this call's trace broke (``reason``); run it eagerly."""

    __slots__ = ("reason",)

    def __init__(self, reason):
        self.reason = reason


class _Variant:
    """A staged call: its :class:`~.staging.Plan` and where each tape input comes from
    (``("arg", leaf index)`` or ``("fixed", tensor)``: a parameter, buffer or captured tensor).
    ``metas``: the fixed tensors the module key does not cover (read from a global or a
    closure), with their shape, strides, dtype... then: the trace took those as fixed too
    (``G.shape[0]``), and ``G.data = other`` changes them in the same object."""

    __slots__ = ("metas", "plan", "sources", "ties")

    def __init__(self, plan, sources, metas=(), ties=()):
        self.plan, self.sources, self.metas, self.ties = plan, sources, metas, ties

    def holds(self, leaves):
        """Whether the fixed tensors' shapes, dtypes... are still those it was traced with,
        and the arguments that were one tensor (``f(x, x)``, or a global passed as an
        argument) still are: the trace made one input of them."""
        for t, key in self.metas:
            if tensor_key(t) != key:
                return False
        for i, other in self.ties:
            if leaves[i] is not (leaves[other] if type(other) is int else other):
                return False
        return True

    def run(self, leaves):
        p = self.plan
        p.heat()
        tensors = [leaves[i] if kind == "arg" else i for kind, i in self.sources]
        if p.backward is None:
            results = p.forward(*[t._data for t in tensors])
            made = [_tensor(r.copy() if k in p.copies else r) for k, r in enumerate(results)]
        else:
            made = connect(p, tensors, p.forward(*[t._data for t in tensors]))
        if p.spec is None and p.outs[0][0] == "out":  # one tensor out
            return made[0]
        out = []
        for kind, k in p.outs:
            out.append(made[k] if kind == "out" else tensors[k] if kind == "input" else k)
        return unflatten(p.spec, out)


def _tensor(a):
    return wrap(a if type(a) in ARRAY_TYPE_SET else np.asarray(a))  # (NumPy scalars: 0-d)


class CompiledCallable:
    """``fn`` staged per guard key (see the module docstring); ``module`` is the module
    whose state the guards cover (``fn`` is then its forward), else None."""

    def __init__(self, fn, module=None, fullgraph=False, name=None, reads_of=None):
        import weakref
        self.fn, self.module, self.fullgraph = fn, module, fullgraph
        self.reads_of = reads_of or fn  # the code whose global names a trace depends on
        self.name = name or getattr(fn, "__name__", "compiled")
        self.cache = {}
        self.reads = None
        self.last = None  # the last staged variant (its plan's source, for reading)
        self.eager = None  # a GraphBreak that holds for every call (then all run eagerly)
        self._warned = False
        _ALL.append(weakref.ref(self))

    def __deepcopy__(self, memo):
        """A copy for the copied function or module, with nothing staged yet (a staged
        version holds the tensors of the original)."""
        import copy
        return CompiledCallable(copy.deepcopy(self.fn, memo), copy.deepcopy(self.module, memo),
                                self.fullgraph, self.name, copy.deepcopy(self.reads_of, memo))

    @property
    def source(self):
        """The generated code (forward, then backward) of the last staged call."""
        if self.last is None:
            raise AttributeError("no staged call yet: call the compiled function once")
        return self.last.plan.source()

    @property
    def graph_breaks(self):
        """Why the calls that run eagerly could not be staged, one reason per guard key."""
        return [e.reason for e in self.cache.values() if type(e) is _Break]

    def reset(self):
        self.eager = None
        self.cache.clear()
        self.reads = None
        self.last = None

    def __call__(self, *args, **kwargs):
        if active_tape() is not None:  # called from code being traced (by compile, or by
            return self.fn(*args, **kwargs)  # tracegrad.grad...): traced inline
        if self.eager is not None:
            return self.fn(*args, **kwargs)
        reads = self.reads
        if reads is not None and reads.changed():  # a name the code reads was rebound
            self.reset()
        if not kwargs and all(type(a) is Tensor for a in args):  # the common call: no tree
            leaves, spec = list(args), _flat_spec(len(args))
        else:
            leaves, spec = flatten((args, kwargs))
        key = call_key(leaves)
        if key is not None and self.module is not None:
            mkey = module_key(self.module)
            key = None if mkey is None else (key, mkey)
        if key is None:
            return self.fn(*args, **kwargs)
        key = (spec, key)
        entry = self.cache.get(key)
        if entry is None:
            if len(self.cache) >= RECOMPILE_LIMIT:
                self._limit()
                return self.fn(*args, **kwargs)
            entry = self._stage(leaves, spec)
            if entry is not None:
                self.cache[key] = entry
        if entry is None or type(entry) is _Break:
            return self.fn(*args, **kwargs)
        if (entry.metas or entry.ties) and not entry.holds(leaves):  # (see _Variant)
            del self.cache[key]
            return self(*args, **kwargs)
        self.last = entry
        return entry.run(leaves)

    def _limit(self):
        if not self._warned:
            self._warned = True
            warnings.warn(f"tracegrad.compile: {self.name} hit the recompile limit ({RECOMPILE_LIMIT}); "
                          "new guard failures run eagerly (call tracegrad.compiler.reset() to start over)",
                          UserWarning, stacklevel=3)

    def _stage(self, leaves, spec):
        """A staged version for this call, a :class:`_Break` (run it eagerly, remembered),
        or None (run it eagerly this time only). A trace that cannot be staged leaves the
        state as the call found it: generators rewound, module attributes and rebound
        global names put back."""
        draws = Draws(self.reads_of)
        versions = self._versions()
        attrs = _ModuleAttributes(self.module)
        names = Reads(self.reads_of)  # (the global names and cells the code reads, now)
        names.watch_contents()
        try:
            variant = self._trace(leaves, spec)
            if draws.happened():
                raise GraphBreak("random numbers drawn (dropout, randn...)", "draws are not replayed")
            if attrs.changed():  # (every call would have a new key: eager from now on)
                self.eager = GraphBreak("the module's attributes changed while it ran (self.x = ...)",
                                        "Python side effects are not replayed")
                raise self.eager
            if names.changed():  # (every call would change them again: eager from now on)
                self.eager = GraphBreak("a global or closure variable the code reads changed while "
                                        "it ran (global n; n += 1, list.append...)",
                                        "Python side effects are not replayed")
                raise self.eager
        except Exception as e:
            draws.undo()
            attrs.restore()
            if names.changed():
                _rebind(names)
            reason = str(e) if isinstance(e, GraphBreak) else _described(e)
            self._check_untouched(versions)
            if getattr(e, "transient", False):  # (a profiler, another thread's capture...):
                return None                      # eager this time, staged when it is over
            if self.fullgraph:
                raise Unsupported(f"tracegrad.compile(fullgraph=True) cannot stage {self.name}: {reason}") from e
            return _Break(reason)
        self.reads = Reads(self.reads_of)
        if self.module is None:  # (a module's own state is guarded by module_key)
            self.reads.watch_contents()
        else:
            self.reads = _AllReads([self.reads, *_submodule_reads(self.module)])
        return variant

    def _versions(self):
        if self.module is None:
            return []
        state = [*self.module.parameters(), *self.module.buffers()]
        return [(t, t._version) for t in state]

    def _check_untouched(self, versions):
        """A trace that broke must have left the module as it was (writes are refused
        before they happen); were it not so, the eager run would see changed state."""
        for t, v in versions:
            if t._version != v:
                raise RuntimeError(f"tracegrad.compile: a trace of {self.name} that could not be staged "
                                   "changed the module's state before it stopped; please report this")

    def _trace(self, leaves, spec):
        names = {}
        if self.module is not None:
            for n, t in self.module.named_parameters(remove_duplicate=False):
                names.setdefault(id(t), n)
            for n, t in self.module.named_buffers(remove_duplicate=False):
                names.setdefault(id(t), n)
        tape = CaptureTape(capture.identifier(self.name), names)
        arg_names = _arg_names(self.fn, spec, leaves)
        with capturing(tape):
            traced = [tape.lift(x, arg_names[i]) if isinstance(x, Tensor) else x
                      for i, x in enumerate(leaves)]
            args, kwargs = unflatten(spec, traced)
            out = capture.current(self.fn(*args, **kwargs))
        fn = getattr(self.reads_of, "__func__", self.reads_of)
        defaults = [*(getattr(fn, "__defaults__", None) or ()),
                    *(getattr(fn, "__kwdefaults__", None) or {}).values()]
        keyed = set() if self.module is None else {id(t) for m in self.module.modules()
                                                   for t in m.__dict__.values() if isinstance(t, Tensor)} \
            | {id(t) for t in (*self.module.parameters(), *self.module.buffers())}
        elsewhere = _known_tensors([self.module, *Reads(self.reads_of).values(), *defaults]) | keyed
        known = elsewhere | _known_tensors(leaves)
        for t, v in tape.lifted.values():
            if id(t) in tape.made:
                continue
            if v.kind != "input":  # (taken over by a write)
                raise GraphBreak("an in-place write into an input (through a view of it)",
                                 "writes into inputs run eagerly")
            if id(t) not in known:
                raise GraphBreak(
                    f"a tensor the staged code would hold fixed but cannot watch ({v.name}: made by "
                    ".detach() or .data, or reached deeper than an attribute of what the code reads)",
                    "a replay would read that tensor object, not what the code would compute")
        out_leaves, out_spec = flatten(out)
        for leaf in out_leaves:
            if isinstance(leaf, Tensor) and not capture.is_var(leaf):
                raise GraphBreak("a result that is a tensor the staged code did not compute")
            if not capture.is_var(leaf) and not isinstance(leaf, (int, float, complex, bool, str, type(None))):
                raise GraphBreak(f"a result of type {type(leaf).__name__}")
        _check_aliasing(tape, [v for v in out_leaves if capture.is_var(v)])
        _check_constants(tape, self.module)
        arg_index = {id(x): i for i, x in enumerate(leaves) if isinstance(x, Tensor)}
        sources = []
        for t, v in tape.lifted.values():
            if v.kind != "input":
                continue
            i = arg_index.get(id(t))
            sources.append(("arg", i) if i is not None else ("fixed", t))
        with_grad = grad_mode.state.mode == grad_mode.GRAD
        p = plan(tape, out_leaves, out_spec, with_grad)
        metas = tuple((t, tensor_key(t)) for kind, t in sources if kind == "fixed" and id(t) not in keyed)
        return _Variant(p, sources, metas, _ties(leaves, elsewhere))


def _ties(leaves, elsewhere):
    """``(i, j)`` for argument leaf ``i`` that is the tensor leaf ``j < i`` is, ``(i, t)``
    for one that is a tensor ``t`` the code may also reach otherwise (``elsewhere``: ids of
    a global's, a closure's, a module's tensors)."""
    first, ties = {}, []
    for i, x in enumerate(leaves):
        if not isinstance(x, Tensor):
            continue
        j = first.setdefault(id(x), i)
        if j != i:
            ties.append((i, j))
        elif id(x) in elsewhere:
            ties.append((i, x))
    return tuple(ties)


class _AllReads:
    """The names read by a module's forward and by its submodules' (see _submodule_reads)."""

    __slots__ = ("reads",)

    def __init__(self, reads):
        self.reads = reads

    def changed(self):
        for r in self.reads:
            if r.changed():
                return True
        return False


def _submodule_reads(root):
    """What the forwards of ``root``'s submodules of the user's classes read by name (their
    globals, and class attributes read through ``self``: ``Block.SCALE = 2`` changes no
    instance), one per class: the module key covers instance state only."""
    from ..transform.reads import _library
    seen, out = {type(root)}, []
    for m in root.modules():
        cls = type(m)
        if cls in seen or _library(cls):
            continue
        seen.add(cls)
        out.append(Reads(m.forward))
    return out


_SPECS = {}


def _flat_spec(n):
    """The spec ``flatten((args, {}))`` gives for ``n`` leaf arguments."""
    spec = _SPECS.get(n)
    if spec is None:
        spec = _SPECS[n] = flatten((tuple(range(n)), {}))[1]
    return spec


def _rebind(reads):
    """Put back the objects the global names and cells noted by ``reads`` held (a trace's
    ``n += 1``; changes inside an object -- ``list.append`` -- cannot be undone)."""
    for scope, name, value in reads._globals:
        scope[name] = value
    for cell, value in reads._cells:
        try:
            cell.cell_contents = value
        except (AttributeError, ValueError):  # (an empty cell)
            pass


class _ModuleAttributes:
    """The attributes of a module and its submodules before a trace: whether the traced
    forward rebound one (``self.calls += 1``), and putting them back."""

    def __init__(self, module):
        self.module = module
        if module is not None:
            self.key = module_key(module)
            self.saved = [(m, dict(m.__dict__)) for m in module.modules()]

    def changed(self):
        return self.module is not None and module_key(self.module) != self.key

    def restore(self):
        if self.changed():
            for m, d in self.saved:
                m.__dict__.clear()
                m.__dict__.update(d)


def _described(e):
    """``Type: message (at file:line)`` for an exception a trace raised, at the innermost
    frame of the user's code."""
    import os
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    where, tb = "", e.__traceback__
    while tb is not None:
        name = os.path.abspath(tb.tb_frame.f_code.co_filename)
        if not name.startswith(root):
            where = f" (at {tb.tb_frame.f_code.co_filename}:{tb.tb_lineno})"
        tb = tb.tb_next
    return f"{type(e).__name__}: {e}{where}"


def _known_tensors(roots):
    """The ids of the tensors the guards and name watches cover: ``roots`` themselves
    (arguments, globals and closure values read), the tensors of modules among them or
    one level down (all submodules'), and tensors one level down (a list's items, an
    object's attributes)."""
    known = set()

    def module(m):
        for sub in m.modules():
            for v in sub.__dict__.values():
                if isinstance(v, Tensor):
                    known.add(id(v))

    def visit(x, depth):
        if isinstance(x, Tensor):
            known.add(id(x))
        elif hasattr(x, "_modules") and hasattr(x, "_parameters"):
            module(x)
        elif depth:
            if isinstance(x, (list, tuple)):
                items = x
            elif isinstance(x, dict):
                items = x.values()
            else:
                items = getattr(x, "__dict__", {}).values() if not isinstance(x, type) else ()
            for v in list(items)[:_MEMBERS]:
                visit(v, depth - 1)
    for r in roots:
        visit(r, 1)
    return known


_MEMBERS = 256  # members looked at per object


def _check_constants(tape, module):
    """Refuse a trace that baked the data of a lifted tensor, or of the module's state, in
    as a constant: code that read a tensor's array directly (not through the rule table)
    would see the first call's values at every replay."""
    made = {id(t._data) for t in tape.made.values()}
    state = [t._data for t, v in tape.lifted.values() if v.kind == "input"]
    if module is not None:
        state += [t._data for t in (*module.parameters(), *module.buffers())]
    for e in tape.eqns:
        for a in e.ins:
            if capture.is_var(a) and a.kind == "const" and isinstance(a.value, np.ndarray) \
                    and id(a.value) not in made and any(np.may_share_memory(a.value, b) for b in state):
                raise GraphBreak("a tensor's data read outside the rule table (it would be "
                                     "baked into the staged code as a constant)")


def _check_aliasing(tape, outs):
    """Refuse results that share memory with an input or with each other: the eager code
    would hand back views (sharing a version counter), the staged code plain tensors."""
    ins = [v.value for v in tape.inputs]
    vals = [v.value for v in outs]
    for k, a in enumerate(vals):
        if not isinstance(a, np.ndarray):
            continue
        for b in ins + vals[:k]:
            if isinstance(b, np.ndarray) and np.may_share_memory(a, b):
                raise GraphBreak("a result that is a view of an input (or of another result)")


def _arg_names(fn, spec, leaves):
    from ..transform.tape.tracing import param_names
    args, kwargs = unflatten(spec, list(range(len(leaves))))
    names = [f"arg{i}" for i in range(len(leaves))]
    for name, a in [*zip(param_names(fn, len(args)), args), *kwargs.items()]:
        sub = flatten(a)[0]
        for k, i in enumerate(sub):
            if isinstance(i, int) and i < len(names):
                names[i] = name if len(sub) == 1 else f"{name}_{k}"
    return names


def reset_all():
    for ref in list(_ALL):
        c = ref()
        if c is None:
            _ALL.remove(ref)
        else:
            c.reset()
