"""The operation tape: a flat SSA list of primitive applications, and its variables.

A :class:`Var` is both the SSA name the tape prints (``%3``) and the *tracer* the traced
function holds in place of an array: while tracing it carries the concrete value it
stands for (so shapes, dtypes and the answers to ``if`` are known exactly, and every
conversion to a Python value can be recorded as a guard). An :class:`Eqn` applies one
op -- a rule-table primitive, a guard, or a user's custom rule -- to Vars and literals.
"""
from ...backend import cpu as _np  # dtypes (host metadata)
from ...backend import namespace_of

__all__ = ["Tape", "Var", "Eqn", "Guard", "TracerError", "shape_of"]


def shape_of(a):
    """The shape of a tracer, array (of any device) or number, read without handing the
    value to NumPy (which refuses device arrays)."""
    return tuple(a.shape) if hasattr(a, "shape") else _np.shape(a)


class TracerError(RuntimeError):
    """A traced value was used where tracing cannot follow it."""


class Var:
    """An SSA variable of a tape, and the tracer that stands for it while tracing.

    ``kind`` is ``"input"``, ``"const"`` (a captured array), or ``"op"`` (an eqn's
    result). Array behaviour (operators, NumPy functions, methods) is added by
    :mod:`tracegrad.transform.tape.tracer`."""

    __slots__ = ("tape", "id", "value", "kind", "name", "hint", "at", "__weakref__")
    __array_priority__ = 1000  # NumPy defers binary operators to the tracer
    is_tracer = True

    def __init__(self, tape, value, kind, name=None):
        self.tape = tape
        self.id = tape._count
        tape._count += 1
        self.value = value
        self.kind = kind
        self.name = name
        self.hint = tape.phase   # prefix of its name in generated code: t (value), g, j
        # the index in ``tape.eqns`` of the eqn that made it (for inputs and constants: the
        # next eqn's); no earlier eqn can read it, which keeps ``x[i] = v`` linear
        self.at = len(tape.eqns)

    @property
    def shape(self):
        return tuple(getattr(self.value, "shape", ()))

    @property
    def npdtype(self):
        v = self.value
        d = getattr(v, "dtype", None)
        if d is not None:
            return d
        if isinstance(v, (int, float, complex, bool)):
            return _np.result_type(v)
        return _np.dtype(object)  # an opaque value (a custom rule's residuals)

    dtype = npdtype  # a TensorVar answers with a tracegrad dtype instead

    @property
    def ndim(self):
        return len(self.shape)

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        VAR_TYPES.add(cls)

    def __repr__(self):
        return f"Traced<{type_str(self)}>{self.label()}"

    def label(self):
        return self.name or f"%{self.id}"

    __hash__ = object.__hash__


VAR_TYPES = {Var}  # Var and its subclasses: an exact type test is the fast check


class Eqn:
    """``outs = op(*ins, **params)``; ``ins`` holds Vars and Python literals, ``multi``
    says whether the op returns a tuple (then ``outs`` has one Var per element)."""

    __slots__ = ("op", "ins", "params", "outs", "multi")

    def __init__(self, op, ins, params, outs, multi=False):
        self.op = op
        self.ins = ins
        self.params = params
        self.outs = outs
        self.multi = multi

    def in_vars(self):
        return [a for a in self.ins if isinstance(a, Var)]

    def __str__(self):
        return self.render({})

    def render(self, labels):
        """One line, naming Vars by ``labels`` (id -> text) where given."""
        def name(a):
            return labels.get(a.id) or a.label()
        args = " ".join(fmt_operand(a, name) for a in self.ins)
        shown = {k: v for k, v in self.params.items() if not _is_default(self.op, k, v)}
        params = " ".join(f"{k}={fmt_param(v)}" for k, v in shown.items())
        if isinstance(self.op, Guard):
            return f"guard {self.op.kind}({args}) == {self.params['value']!r}"
        lhs = ", ".join(name(o) for o in self.outs)
        return f"{lhs} = {op_name(self.op)} {args}{' ' + params if params else ''}".rstrip()


class Guard:
    """The op of a guard eqn: the traced function turned ``ins[0]`` into a Python value
    (``kind``: bool, int, float, item, len...) and saw ``params['value']``; a replay is
    valid only while the same conversion gives the same value."""

    name = "guard"

    def __init__(self, kind):
        self.kind = kind

    def __repr__(self):
        return f"guard {self.kind}"


def op_name(op):
    if isinstance(op, Guard):
        return f"guard_{op.kind}"
    return op.name


def fmt_operand(a, name=None):
    if isinstance(a, Var):
        return name(a) if name else a.label()
    if isinstance(a, (tuple, list)):
        return "(" + ", ".join(fmt_operand(x, name) for x in a) + ")"
    return repr(a)


_DEFAULTS = {}


def _is_default(op, key, value):
    """Whether ``value`` is the default of the kernel's keyword ``key`` (not printed)."""
    impl = getattr(op, "impl", None)
    if impl is None:
        return False
    defaults = _DEFAULTS.get(impl)
    if defaults is None:
        import inspect
        defaults = _DEFAULTS[impl] = {
            p.name: p.default for p in inspect.signature(impl).parameters.values()
            if p.default is not p.empty}
    return key in defaults and type(defaults[key]) is type(value) and defaults[key] == value


def fmt_param(v):
    if isinstance(v, _np.dtype):
        return v.name
    if hasattr(v, "name") and hasattr(v, "impl"):  # a primitive inside a param (view chains)
        return v.name
    return repr(v)


_SHORT = {"float64": "f64", "float32": "f32", "float16": "f16", "int64": "i64", "int32": "i32",
          "int16": "i16", "int8": "i8", "uint8": "u8", "bool": "bool", "complex64": "c64",
          "complex128": "c128"}


def type_str(v):
    """``f64[16,3]`` for a float64 array of shape (16, 3); ``f64[]`` for a scalar."""
    dt = _SHORT.get(v.npdtype.name, v.npdtype.name)
    return f"{dt}[{','.join(str(s) for s in v.shape)}]"


class Tape:
    """A traced function: its inputs, eqns (forward, then any gradient eqns appended by a
    sweep), guards among them, and its outputs (a tree of Vars and literals)."""

    prepare = None  # (prim, args, params) -> args, run before an op is recorded (compile's hook)

    def __init__(self, name="f"):
        self.name = name
        self.inputs = []
        self.eqns = []
        self.outputs = None      # a pytree of Vars / literals (see transform.tree)
        self._count = 0
        self._consts = {}        # id(array) -> (array, Var): captured constants
        self.writes_captures = False  # the function wrote into an array it read by reference
        self.writes_inputs = False    # the function wrote into an argument (see staged.refuse_shared)
        self.argument_ids = set()     # ids of the aliases standing for arguments (api.mark_leaf)
        self.phase = "t"         # what Vars made now are: t values, g cotangents, j tangents
        self.var_cls = Var       # TensorVar when the function was called with Tensors
        self.renamed = {}        # id -> Var: values that ``x[i] = v`` moved to a new Var
        self.poison = None       # a TracerError NumPy replaced by its own error, if any
        # ids of the Vars a transform differentiates with respect to, and (followed along
        # the eqns up to ``marked_upto``) of every Var that depends on them
        self.marked = set()
        self.marked_upto = 0
        self.immutable = set()   # ids of Vars that stand for Python floats (no in-place ops)
        self.python_floats = set()  # ids of Vars whose operators are Python's (python_numbers.py)
        self.live = set()        # ids of constants captured by reference (never folded)
        self.pruner = None       # drops values no reverse sweep reads (see pruning.py)
        self.recording = True
        self.staged = False      # made by a staged function (not ``trace``): its values
        self.nested = 0          # are its own; transforms running inside that one

    # -- building ------------------------------------------------------------------------
    def new_var(self, value, kind, name=None):
        return self.var_cls(self, value, kind, name)

    def new_input(self, value, name):
        v = self.new_var(value, "input", name)
        self.inputs.append(v)
        return v

    def capture(self, array):
        """The constant Var of a captured array (a global, a closure variable, a module's
        parameter), *by reference*: the compiled code reads the array itself, so a replay
        computes with its contents at that call, as the function would (such constants
        are not folded). An array the traced function itself changes while it is traced
        (a scratch buffer) is captured *by value* at each use instead, as each use saw it."""
        hit = self._consts.get(id(array))
        if hit is not None and hit[0] is array:
            if _same_values(hit[2], array):
                return hit[1]
            earlier = hit[1]
            if earlier.id in self.live:  # (its uses saw the contents it had then)
                earlier.value = hit[2]
                self.live.discard(earlier.id)
            self.writes_captures = True  # (a replay would read it as it is then: see freeze_written_captures)
            v = self.new_var(array.copy(), "const")
            self._consts[id(array)] = (array, v, v.value)
            return v
        v = self.new_var(array, "const")
        self.live.add(v.id)
        self._consts[id(array)] = (array, v, array.copy() if hasattr(array, "copy") else array)
        return v

    def add(self, op, ins, params, values, multi=False):
        """Append ``op(*ins, **params)`` whose results are ``values``; return the new Var
        (or a tuple of Vars when ``multi``)."""
        cls = self.var_cls
        if multi:
            outs = tuple(cls(self, v, "op") for v in values)
            self.eqns.append(Eqn(op, tuple(ins), params or _NO_PARAMS, outs, True))
            return outs
        out = cls(self, values, "op")
        self.eqns.append(Eqn(op, tuple(ins), params or _NO_PARAMS, (out,), False))
        return out

    def captured_by_reference(self):
        """The arrays the traced function reads from outside that the compiled code reads
        itself at each call (see :meth:`capture`)."""
        return [array for array, v, _ in self._consts.values() if v.id in self.live and hasattr(array, "shape")]

    def freeze_written_captures(self):
        """Before a sweep: a constant captured by reference that the traced function wrote
        into after reading it (``a = np.sum(x * G); G[0] = 5.0``, a plain NumPy write the
        tape does not see) becomes the contents its uses read -- else the sweep would read
        the written ones, a wrong derivative. Such a trace is for this call only
        (``writes_captures``): a replay would not make the write again."""
        for array, v, snapshot in list(self._consts.values()):
            if v.id in self.live and snapshot is not array and not _unchanged(snapshot, array):
                v.value = snapshot
                self.live.discard(v.id)
                self.writes_captures = True

    def current(self, var, vid):
        """The Var that had id ``vid`` when ``var`` was taken (``x[i] = v`` gives the name
        ``x`` to the updated value and the old value a new Var object)."""
        return self.renamed.get(vid, var)

    def outermost(self):
        """Whether the transform running now is the one the tape was made for: what it
        computes is seen by no other transform and, once it returns, by no user code."""
        return self.staged and self.nested == 0 and self.recording

    @property
    def guards(self):
        return [e for e in self.eqns if isinstance(e.op, Guard)]

    def output_vars(self):
        from ..tree import leaves
        return [v for v in leaves(self.outputs) if isinstance(v, Var)]

    # -- reading -------------------------------------------------------------------------
    def __str__(self):
        from ..tree import leaves
        labels = {v.id: v.label() for v in self.inputs}
        consts = {}
        for e in self.eqns:
            for a in e.ins:
                if isinstance(a, Var) and a.kind == "const" and a.id not in labels:
                    consts[a.id] = a
                    labels[a.id] = f"c{len(consts) - 1}"
        for v in leaves(self.outputs):
            if isinstance(v, Var) and v.kind == "const" and v.id not in labels:
                consts[v.id] = v
                labels[v.id] = f"c{len(consts) - 1}"
        n = 0
        for e in self.eqns:
            for o in e.outs:
                labels[o.id] = f"%{n}"
                n += 1
        head = ", ".join(f"{labels[v.id]}: {type_str(v)}" for v in self.inputs)
        lines = [f"tape {self.name}({head}) {{"]
        for c in consts.values():
            lines.append(f"  {labels[c.id]} = const {type_str(c)}{_small(c.value)}")
        for e in self.eqns:
            lines.append("  " + e.render(labels))
        outs = ", ".join(fmt_operand(v, lambda a: labels.get(a.id) or a.label())
                         for v in leaves(self.outputs))
        lines.append(f"  return {outs}")
        lines.append("}")
        return "\n".join(lines)

    __repr__ = __str__

    def release(self, keep=()):
        """Drop the concrete values held since tracing, but those of constants and of the
        Vars in ``keep`` (the tape stays printable, optimisable and compilable: a released
        Var keeps its shape, dtype and array namespace)."""
        keep = {v.id for v in keep}
        for e in self.eqns:
            for v in e.outs:
                if type(v.value) is not Released and v.kind != "const" and v.id not in keep:
                    v.value = shape_only(v.value)
        for v in self.inputs:
            if v.id not in keep:
                v.value = shape_only(v.value)
        self.recording = False
        self._consts = {}


def _same_values(a, b):
    return a.shape == b.shape and a.dtype == b.dtype and bool((a == b).all())


def _unchanged(snapshot, array):
    """Whether captured ``array`` still holds ``snapshot``'s values (NaN equal to NaN)."""
    if not hasattr(array, "shape"):
        return True
    try:
        return snapshot.shape == array.shape and snapshot.dtype == array.dtype and bool(
            namespace_of(array).array_equal(snapshot, array, equal_nan=array.dtype.kind in "fc"))
    except TypeError:  # (an object array)
        return _same_values(snapshot, array)


def _small(value):
    """`` 1.0`` for a constant with one element (worth printing), else nothing."""
    if isinstance(value, (_np.ndarray, _np.generic)) and value.size == 1:
        return f" {value.reshape(-1)[0].item()!r}"
    return ""


_NO_PARAMS = {}  # shared by the eqns without parameters (never written to)


class Released:
    """What a released Var keeps of its value: shape, dtype and array namespace (``ns``,
    None for a non-array value) -- all that printing, optimising and code generation read.
    Equal ones are shared, so releasing a long tape frees its values for good."""

    __slots__ = ("shape", "dtype", "ns")

    def __init__(self, shape, dtype, ns):
        self.shape, self.dtype, self.ns = shape, dtype, ns


_RELEASED = {}


def shape_only(value):
    """The :class:`Released` stand-in for ``value`` (itself if it is one)."""
    tp = type(value)
    if tp is Released:
        return value
    shape = tuple(getattr(value, "shape", ()))
    d = getattr(value, "dtype", None)
    if d is None:
        d = _np.result_type(value) if isinstance(value, (int, float, complex, bool)) \
            else _np.dtype(object)
    key = (shape, d, tp)
    hit = _RELEASED.get(key)
    if hit is None:
        from ...backend import ARRAY_TYPE_SET, namespace_of
        ns = namespace_of(value) if tp in ARRAY_TYPE_SET else None
        hit = _RELEASED[key] = Released(shape, d, ns)
        if len(_RELEASED) > 4096:  # (a bound: the stand-ins are tiny, but shapes are many)
            _RELEASED.clear()
            _RELEASED[key] = hit
    return hit


def namespace_of_var(v):
    """The array namespace of Var ``v``'s value (released or not), or None."""
    value = v.value
    if type(value) is Released:
        return value.ns
    from ...backend import ARRAY_TYPE_SET, namespace_of
    return namespace_of(value) if type(value) in ARRAY_TYPE_SET else None
