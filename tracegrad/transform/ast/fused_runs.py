"""A fused run of a generated adjoint at run time: one Numba kernel per signature.

A generated adjoint learns the types of its values only when it runs, so each run
(see :mod:`.fusing`) is a :class:`FusedRun` that writes a kernel for each *signature* it
meets -- every input a float32/float64 ``numpy.ndarray`` of the run's result shape or of
one element (repeated), or a Python float or int (NumPy 2's weak scalars) -- and runs
the statements as written for anything else: NumPy scalars and 0-d results (NumPy hands
back scalars there), other dtypes, subclasses, Tensors, shapes that broadcast otherwise,
and operations whose result would not have the run's shape (``c = s * 2.0`` on a
one-element ``s``). Each operation's dtype is the one NumPy's own ufunc gives for its
operands' dtypes (weak scalars included), so float32 stays float32.

The kernel is the tape fuser's (:class:`tracegrad.transform.tape.cpu_fusion.KernelWriter`,
the rule table's scalar expressions, :mod:`tracegrad.transform.jit`'s disk cache). Once a
signature has its kernel, the run's global name in the adjoint is rebound to a small
generated guard that sends arguments of the signatures seen straight to their kernels --
for small 1-d arrays, to the kernel's compiled entry point, past Numba's dispatcher (see
:func:`_flat_entry`).
"""
import ast
import threading
import weakref

from ...backend import cpu as np
from ..emit import Module, _BINARY, fresh_name, prim_expr
from .. import jit
from .fusing import literal, rewrite
from ..tape.cpu_fusion import BLOCK, KernelWriter, scalar_literal

__all__ = ["FusedRun", "own"]

_ND = np.ndarray
_FLOATS = {np.dtype(np.float32): "f32", np.dtype(np.float64): "f64"}
_EXACT_INT = 2 ** 53
MAX_FAST = 4   # signatures the guard checks inline (further ones: a dictionary look-up)


def _box(value):
    """A weak scalar as the kernel reads it: a one-element float64 array (exact for a
    float, and for an int of at most 2**53, which the guard checks)."""
    return np.full(1, value, np.float64)


class FusedRun:
    """Callable in the rewritten adjoint as ``outs = fused_k(ins)`` (see the module
    docstring); ``unfused`` runs the run's statements as written."""

    def __init__(self, run, env, unfused, ops):
        self.run, self.env, self.unfused, self.ops = run, env, unfused, ops
        self.kernels = {}   # signature -> its entry (see _build), None: runs unfused
        self.fast = []      # the entries the guard checks, in order
        self._lock = threading.Lock()

    def __call__(self, *args):
        sig = signature(args)
        if sig is None:
            return self.unfused(*args)
        entry = self.kernels.get(sig, False)
        if entry is False:
            with self._lock:
                entry = self.kernels.get(sig, False)
                if entry is False:
                    entry, out = self._build(sig, args)
                    self.kernels[sig] = entry
                    return out if entry is not None else self.unfused(*args)
        if entry is None:
            return self.unfused(*args)
        return _invoke(entry[0], entry[4], args)

    def _build(self, sig, args):
        """``(entry, results)``: the entry ``(kernel, guard test, kernel arguments, index
        of the argument of the result shape, result dtypes)`` for ``sig``, the kernel
        compiled now for ``args``, and its results for them; ``(None, None)`` where the
        run's NumPy semantics on these types are not what a kernel computes (or Numba
        could not compile the kernel: it said so)."""
        plan = _plan(self.run, self.ops, sig)
        if plan is None:
            return None, None
        name = f"{self.run.name}_{'_'.join(k + (d or '') for k, d in sig[:-1])}_{sig[-1]}"
        module, dtypes = _kernel_module(self.run, self.ops, sig, plan, name)
        holder = {}
        holder[name] = jit.LazyKernel(holder, name, module, lambda *_: _FAILED)
        out = _invoke(holder[name], dtypes, args)
        if out is _FAILED:
            return None, None
        entry = (holder[name], *_guard(sig), dtypes, _flat_entry(holder[name], sig, dtypes),
                 _reusable(self.run.reuse, sig, dtypes))
        if len(self.fast) < MAX_FAST:
            self.fast.append(entry)
            self._rebind()
        return entry, out

    def _rebind(self):
        """Bind the run's name to a guard for the signatures with kernels: arguments of
        one of them go straight to its kernel, with result arrays made here."""
        params = [f"a{k}" for k in range(len(self.run.ins))]
        lines = [f"def {self.run.name}({', '.join(params)}):"]
        names = {"_nd": _ND, "_box": _box, "_slow": self, "_f32": np.dtype(np.float32),
                 "_f64": np.dtype(np.float64), "_fl": float, "_int": int, "_empty": np.empty,
                 "_new": _new, "_ours": _ours}
        for k, (kernel, test, call, first, dtypes, flat, reuse) in enumerate(self.fast):
            names[f"_k{k}"] = kernel
            outs = [f"o{i}" for i in range(len(dtypes))]
            returned = outs[0] if len(outs) == 1 else "(" + ", ".join(outs) + ")"
            if flat is not None:  # (1-d arrays: Numba's compiled entry point, see _flat_entry)
                names[f"_e{k}"] = flat[0]
                lines.append(f"    if {flat[1]}:")
                lines += [f"        {o} = _empty(n, _{_FLOATS[d]})" for o, d in zip(outs, dtypes)]
                lines.append(f"        _e{k}({call}, {', '.join(outs)})")
                lines.append(f"        return {returned}")
            lines.append(f"    if {test}:")  # (np.empty of a size: 0.3 us faster than of a shape)
            lines.append(f"        s = a{first}.size if a{first}.ndim == 1 else a{first}.shape")
            make = "_new" if reuse is not None else "_empty"  # (large arrays: registered)
            over = dict((o, i) for i, o in reuse or ())
            lines += [f"        {o} = a{over[j]} if _ours(a{over[j]}) else _new(s, _{_FLOATS[d]})"
                      if j in over else f"        {o} = {make}(s, _{_FLOATS[d]})"
                      for j, (o, d) in enumerate(zip(outs, dtypes))]
            lines.append(f"        _k{k}({call}, {', '.join(outs)})")
            lines.append(f"        return {returned}")
        lines.append(f"    return _slow({', '.join(params)})")
        exec(compile("\n".join(lines) + "\n", f"<guard {self.run.name}>", "exec"), names)
        current = self.env.get(self.run.name)
        if current is self or getattr(current, "_run", None) is self:
            guard = names[self.run.name]
            guard._run = self
            self.env[self.run.name] = guard

    def __repr__(self):
        return f"<fused run {self.run.name}: {len(self.run.stmts)} statement(s), " \
               f"{len([e for e in self.kernels.values() if e])} kernel(s)>"


_FAILED = object()  # (what a kernel Numba could not compile hands back: see _build)


def _invoke(kernel, dtypes, args):
    """Call ``kernel`` with a run's arguments and new result arrays (NumPy's allocator,
    the arguments' broadcast shape); the results as the unfused run returns them."""
    shape = np.broadcast_shapes(*[a.shape for a in args if type(a) is _ND])
    outs = [_new(shape, d) for d in dtypes]
    if kernel(*[a if type(a) is _ND else _box(a) for a in args], *outs) is _FAILED:
        return _FAILED
    return outs[0] if len(outs) == 1 else tuple(outs)


# Arrays of at least PARALLEL_MIN elements that fused runs made (kernel results and own()
# copies), by id, each with a weak reference that removes it when it dies: a run writes
# over an argument only if it is one (see _ours, buffer_reuse). (A WeakSet would hash
# them: arrays are not hashable.)
_MADE = {}


def _forget(ref):
    key = getattr(ref, "key", None)
    if _MADE.get(key) is ref:
        del _MADE[key]


class _Ref(weakref.ref):
    __slots__ = ("key",)


def _new(shape, dtype):
    """A new result array; registered in _MADE when it is large."""
    out = np.empty(shape, dtype)
    if out.size >= jit.PARALLEL_MIN:
        ref = _Ref(out, _forget)
        ref.key = id(out)
        _MADE[ref.key] = ref
    return out


def _ours(a):
    """Whether a run may write over argument ``a`` (which buffer_reuse proved no other name
    holds): an array a fused run made, C-contiguous and writeable."""
    ref = _MADE.get(id(a))
    return ref is not None and ref() is a and a.flags.c_contiguous and a.flags.writeable


def own(value):
    """``value`` as the adjoint's own: a copy where it is an array the runs made (another
    name may hold it: one returned by an earlier call, say), else ``value`` itself, which
    no run writes over (:func:`_ours`). What an assignment just above a loop that writes
    in place hands the loop (see :mod:`.buffer_reuse`): from its second pass on, the
    loop's runs write over arrays they made in this call."""
    if type(value) is _ND and _ours(value):
        out = _new(value.shape, value.dtype)
        np.copyto(out, value)
        return out
    return value


def _reusable(reuse, sig, dtypes):
    """The (input, output) pairs of ``reuse`` a large signature's kernel may write over
    (the input of the output's dtype and the result shape); None for other signatures."""
    if sig[-1] != "large":
        return None
    return [(i, o) for i, o in reuse if sig[i][0] == "full" and _DTYPES[sig[i][1]] == dtypes[o]]


def _flat_entry(kernel, sig, dtypes):
    """``(entry point, test)`` for a small signature's kernel on 1-d arrays, or None.

    Numba's dispatcher spends ~0.2 us of a ~0.5 us call on 16 floats working out the
    arguments' Numba types and picking the compiled overload; a signature's compiled
    entry point only unboxes them. The entry point trusts its caller with the types, so
    it is compiled here for every array the guard lets through to it: inputs of any
    layout, read-only or not, aligned or not (``Array(dtype, 1, "A", readonly=True,
    aligned=False)``: the kernel's loop indexes a 1-d array with its strides, see
    ``kernel_numpy.flat_view``), results as the guard makes them (``np.empty``:
    C-contiguous). The
    guard's ``test`` (see :func:`_guard`) checks each array's type, dtype (``is`` the
    native float dtype) and that it is 1-d, the one thing left that the types fix. Only for
    the small class: on larger arrays the dispatch is nothing next to the loop."""
    if sig[-1] != "small" or not hasattr(kernel, "overloads") or not jit.available():
        return None
    from numba.core import types
    def array(d, layout, **flags):
        return types.Array(types.float32 if d == np.dtype(np.float32) else types.float64, 1,
                           layout, **flags)
    params = [array(_DTYPES[d] if d else np.dtype(np.float64), "A", readonly=True, aligned=False)
              for _, d in sig[:-1]]
    try:
        with jit.numpy_own_namespace():
            entry = kernel.compile(tuple(params + [array(d, "C") for d in dtypes]))
    except Exception as e:  # (then the dispatcher, which has compiled the kernel, serves)
        if not (type(e).__module__.startswith("numba") or isinstance(e, OSError)):
            raise
        return None
    return entry, _guard(sig, flat=True)[0]


def signature(args):
    """``((kind, dtype), ..., size class)`` of a call's arguments -- kind "full" (the
    run's result shape), "one" (one element, repeated), "weak" (a Python number) -- or
    None where the kernels do not apply."""
    shapes, kinds = [], []
    for a in args:
        t = type(a)
        if t is _ND:
            d = _FLOATS.get(a.dtype)
            if d is None:
                return None
            shapes.append(a.shape)
            kinds.append(d)
        elif t is float or (t is int and -_EXACT_INT <= a <= _EXACT_INT):
            kinds.append(None)
        else:
            return None
    if not shapes:
        return None
    try:
        full = np.broadcast_shapes(*shapes)
    except ValueError:
        return None
    if not full:
        return None  # (0-d: NumPy's ufuncs hand back scalars)
    out, size = [], 1
    for s in full:
        size *= s
    it = iter(shapes)
    for d in kinds:
        if d is None:
            out.append(("weak", None))
            continue
        s = next(it)
        if s == full:
            out.append(("full", d))
        elif _count(s) == 1 and len(s) <= len(full):
            out.append(("one", d))
        else:
            return None
    cls = "small" if size <= BLOCK else ("large" if size >= jit.PARALLEL_MIN else "mid")
    return tuple(out) + (cls,)


def _count(shape):
    n = 1
    for s in shape:
        n *= s
    return n


_DTYPES = {"f32": np.dtype(np.float32), "f64": np.dtype(np.float64)}


def _plan(run, ops, sig):
    """Each operation's result dtype, in the order :func:`_walk` visits them, or None
    where one is not a float32/float64 array of the run's shape."""
    values = {}
    for name, (kind, d) in zip(run.ins, sig[:-1]):
        values[name] = (kind, _DTYPES.get(d))
    dtypes = []

    def visit(prim, operands):
        kinds = [o.value if isinstance(o, _Result) else values[o.id] if isinstance(o, ast.Name)
                 else ("weak", None) for o in operands]
        if not any(k == "full" for k, _ in kinds):
            raise _Refused
        samples = [np.zeros(1, d) if d is not None else (1.0 if isinstance(o, ast.Name) or
                                                         type(o.value) is float else 1)
                   for (k, d), o in zip(kinds, operands)]
        with np.errstate(all="ignore"):
            dtype = getattr(np, prim.ufunc)(*samples).dtype
        if dtype not in _FLOATS:
            raise _Refused
        dtypes.append(dtype)
        return ("full", dtype)
    try:
        for s in run.stmts:
            values[s.targets[0].id] = _walk(s.value, ops, visit)
    except _Refused:
        return None
    return dtypes


class _Refused(Exception):
    pass


def _walk(node, ops, visit):
    """Post-order over the operations of ``node``: ``visit(prim, operand nodes)`` for each,
    with each operand that is itself an operation replaced by a Name of its result."""
    if isinstance(node, ast.Name):
        return node
    if literal(node) is not None:
        return ast.Constant(value=literal(node))
    prim, operands = ops.parts(node)
    done = []
    for o in operands:
        if isinstance(o, ast.Name):
            done.append(o)
        elif literal(o) is not None:
            done.append(ast.Constant(value=literal(o)))
        else:
            done.append(_Result(_walk(o, ops, visit)))
    return visit(prim, done)


class _Result(ast.Name):
    """An operand that is the result of an inner operation (its value rides along)."""

    def __init__(self, value):
        super().__init__(id=None)
        self.value = value


def _kernel_module(run, ops, sig, plan, name):
    """The Numba module of the run's kernel for ``sig`` (one line per operation, writing
    into result arrays it is given), and the results' dtypes."""
    used = set()
    k = KernelWriter(name, used, {"small": 1, "mid": BLOCK + 1, "large": jit.PARALLEL_MIN}[sig[-1]])
    current, weak = {}, set()
    for leaf, (kind, _) in zip(run.ins, sig[:-1]):
        current[leaf] = fresh_name(used, leaf, "_")
        k.add_param(current[leaf], kind == "full")
        if kind == "weak":
            weak.add(current[leaf])
    m = Module()
    dtypes = iter(plan)

    def operand_name(o):
        return o.value[0] if isinstance(o, _Result) else current[o.id]

    def visit(prim, operands):
        dtype = next(dtypes)
        target = fresh_name(used, "t", "_")
        names = [operand_name(o) for o in operands if isinstance(o, ast.Name)]
        literals = [None if isinstance(o, ast.Name) else o.value for o in operands]

        def rhs(texts, scalar=True, prim=prim, dtype=dtype, names=names, literals=literals):
            it = iter(zip(texts, names))
            args = []
            for lit in literals:
                if lit is None:
                    text, value = next(it)
                    args.append(f"np.{dtype.name}({text})" if value in weak else text)
                else:
                    args.append(scalar_literal(lit, dtype))
            metas = [(None, dtype)] * len(args)
            return prim_expr(m, prim, args, {}, metas, "np")
        call = prim.name not in _BINARY and prim.name != "neg"
        k.lines.append((target, dtype, names, rhs, call))
        return (target, dtype)
    for s in run.stmts:
        target, dtype = _walk(s.value, ops, visit)
        current[s.targets[0].id] = target
    results = [(current[o], _dtype_of(k, current[o])) for o in run.outs]
    module, _, _ = k.source(results, into=True)
    return module, [d for _, d in results]


def _dtype_of(writer, value):
    return next(line[1] for line in writer.lines if line[0] == value)


def _guard(sig, flat=False):
    """``(test, call, first)``: the guard's condition for ``sig`` on parameters ``a0, a1...``,
    the kernel's arguments, and the parameter whose shape the results take. ``flat``:
    the condition for 1-d arrays only (what :func:`_flat_entry`'s entry point takes),
    the same test with each shape compared by its size (``n``, the first's), and the types
    first (the cheapest, and what most often differs)."""
    first = next(k for k, (kind, _) in enumerate(sig[:-1]) if kind == "full")
    f = f"a{first}"
    size = {"small": f"{f}.size <= {BLOCK}", "large": f"{f}.size >= {jit.PARALLEL_MIN}",
            "mid": f"{BLOCK} < {f}.size < {jit.PARALLEL_MIN}"}[sig[-1]]
    arrays = [k for k, (kind, _) in enumerate(sig[:-1]) if kind != "weak"]
    if flat:
        tests = [f"type(a{k}) is _nd" for k in arrays] + [f"a{k}.ndim == 1" for k in arrays] \
            + [f"a{k}.dtype is _{sig[k][1]}" for k in arrays] + [size.replace(f"{f}.size", "(n := %s.size)" % f, 1)]
    else:
        tests = [f"type({f}) is _nd and {f}.dtype is _{sig[first][1]} and {f}.ndim and {size}"]
    call = []
    for k, (kind, d) in enumerate(sig[:-1]):
        a = f"a{k}"
        if kind == "weak":
            tests.append(f"(type({a}) is _fl or (type({a}) is _int and -{_EXACT_INT} <= {a} <= {_EXACT_INT}))")
            call.append(f"_box({a})")
            continue
        call.append(a)
        if k == first:
            continue
        if flat:
            tests.append(f"{a}.size == n" if kind == "full" else f"{a}.size == 1")
            continue
        tests.append(f"type({a}) is _nd and {a}.dtype is _{d}")
        if kind == "full":
            tests.append(f"{a}.shape == {f}.shape")
        else:
            tests.append(f"{a}.size == 1 and {a}.ndim <= {f}.ndim")
    return " and ".join(tests), ", ".join(call), first


def fuse(gen):
    """``(function, source)``: generated adjoint ``gen`` with its runs fused, and the
    adjoints it calls fused likewise, compiled in a copy of its globals (the unfused
    function keeps its own) with its closure; or None where nothing fuses. The source
    shows each run as a ``@cpu_fused`` function below the adjoint."""
    import types
    from ..emit import registered, _filename
    from .source import _find_code, in_scope
    fn = gen.fn
    env = dict(fn.__globals__)
    source, runs = rewrite(gen.own_source, env)
    callees = {}
    for c in gen.callees:
        fused = c.fused()[0]
        if fused is not c.fn:
            callees.update({name: fused for name, v in env.items() if v is c.fn})
    if not runs and not callees:
        return None
    env.update(callees)
    shown = []
    for run in runs:
        if run.own_name:
            env[run.own_name] = own
        namespace = {}
        exec(compile(run.definition(), f"<unfused {run.name}>", "exec"), env, namespace)
        env[run.name] = FusedRun(run, env, namespace[run.name], run.resolver)
        over = ", ".join(run.ins[i] for i, _ in run.reuse)
        over = f"\n# (it may write {over} over the array passed in: no other name holds it)" if over else ""
        shown.append(f"# {run.name}: {len(run.stmts)} line(s), {run.ops} operations: one Numba kernel "
                     f"per signature of dtypes and shapes (cached in {jit.cache_dir()}){over}\n"
                     f"@cpu_fused\n{run.definition()}")
    cells = dict(zip(fn.__code__.co_freevars, fn.__closure__ or ()))
    filename = _filename("ast-fused", gen.name)
    code = _find_code(compile(in_scope(source, list(cells), fn.__qualname__), filename, "exec",
                              dont_inherit=True), gen.name)
    fused = types.FunctionType(code, env, gen.name, fn.__defaults__,
                               tuple(cells[n] for n in code.co_freevars) or None)
    fused.__kwdefaults__ = fn.__kwdefaults__
    fused.__qualname__ = fn.__qualname__
    registered(fused, source, filename)
    for name, v in env.items():  # (recursion: the fused function calls itself)
        if v is fn:
            env[name] = fused
    return fused, "\n\n".join([source] + shown)  # (the adjoint first, as unfused)
