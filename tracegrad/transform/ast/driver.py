"""The AST path end to end: source -> ANF -> adjoint (or tangent) -> clean-up -> Python
source -> compiled function, cached per function, differentiated arguments and kind of
transformation. :class:`AstFunction` is what ``grad(f, mode="ast")`` returns."""
import ast
import copy
import itertools
import keyword
import re
import threading
import types
import weakref

from . import support
from ..emit import registered
from .aliasing import in_place_facts, live_after, rebinds_in_place, with_checks
from .argument_writes import writes_its_arguments
from .anf import ANF, Namer, _assign, _const, _name, lower_jumps
from . import reuse
from .lower import local_functions, scope_names
from .signature import ALL, Signature
from .on_tape import put_on_tape, retrying
from .nograd import _walk
from .opaque_calls import guard_opaque_calls
from .optimize import optimize
from .resolve import Resolver, User, on_device, still_written_for, structure
from .reverse import HELPERS, Reverse, comment
from .saves import finish
from .source import TransformError, Untransformable, _find_code, class_name, function_tree, in_scope

__all__ = ["Unit", "adjoint", "Generated", "prepare", "clear_cache", "grad_of"]

_lock = threading.RLock()
# The caches hold user functions weakly: nothing in a Generated refers back to the user
# function (its globals are a copy of the names it reads; its closure is the function's
# own cells), so deleting the function and its gradients frees both, and what they hold.
_CACHE = weakref.WeakKeyDictionary()   # user function -> {key: Generated}
_GENERATED = weakref.WeakKeyDictionary()  # compiled function -> weakref to its Generated


class Unit:
    """One generated function under construction: its names and its globals."""

    def __init__(self, used, env):
        self.namer = Namer(used | set(keyword.kwlist) | {"__comment__", "_"})
        self.env = env
        self._ids = {}
        self.helpers = {}
        self.callee_names = {}

    def bind(self, obj, hint):
        name = self._ids.get(id(obj))
        if name is None:
            name = self.namer.fresh(hint.strip("_") or "c")
            self._ids[id(obj)] = name
            self.env[name] = obj
        return name

    def helper_names(self):
        """Helper name -> its name in this unit (a fresh one where the user's function
        uses the helper's name itself)."""
        for h in HELPERS:
            if h not in self.helpers:
                self.helpers[h] = self.bind(getattr(support, h), h)
        return self.helpers


class Generated:
    """A compiled transformation: ``fn`` and its ``source`` (with the sources of the
    adjoints of the user functions it calls)."""

    def __init__(self, fn, source, name):
        self.fn, self.own_source, self.name = fn, source, name
        self.callees = []
        self.user_globals, self.captured = None, ()   # (read again by refresh)
        self._on_device = {}   # array namespace -> this function with NumPy rebound to it
        self._fused = None     # (function, source) with CPU kernels, False: none (fused_runs.py)
        _GENERATED[fn] = weakref.ref(self)

    def fused(self):
        """``(function, source)``: this function with its elementwise runs as CPU kernels
        (see :mod:`.fusing`), or ``(fn, source)`` itself where none fuses or Numba is missing."""
        from .. import jit
        if self._fused is None:
            from .fused_runs import fuse
            self._fused = False  # (while it is built: a recursive call finds it unfused)
            self._fused = (jit.available() and fuse(self)) or False
        return self._fused or (self.fn, self.own_source)

    def on_device(self, xp):
        """This function with the user's NumPy names (``np``, ``np.linalg``, ``from numpy
        import tanh``) bound to array namespace ``xp`` instead, and the generated functions
        it calls likewise: the same code, computing on the device of its inputs."""
        fn = self._on_device.get(xp)
        if fn is None:
            env = dict(self.fn.__globals__)
            # closure variables holding NumPy get cells of their own, holding xp's; the
            # others stay the user's cells
            cells = dict(zip(self.fn.__code__.co_freevars, self.fn.__closure__ or ()))
            for name, value in on_device(_contents(cells), xp).items():
                cells[name] = types.CellType(value)
            fn = self._on_device[xp] = types.FunctionType(  # (first: recursion finds it)
                self.fn.__code__, env, self.fn.__name__, self.fn.__defaults__,
                tuple(cells.values()) or None)
            fn.__source__ = self.fn.__source__
            try:
                env.update(_rebound(env, xp))
            except BaseException:
                del self._on_device[xp]
                raise
        return fn

    def refresh(self, seen=None):
        """Read the user function's globals and closure variables again (a new ``grad``
        object sees values rebound since the transformation, as a new trace would)."""
        seen = set() if seen is None else seen
        if id(self) in seen or self.user_globals is None:
            return
        seen.add(id(self))
        captured = _captured(self.user_globals, self.captured)
        self.fn.__globals__.update(captured)
        self._fused = None  # (its ufunc calls are read again)
        for xp, fn in self._on_device.items():
            fn.__globals__.update(captured, **_rebound(captured, xp))
        for c in self.callees:
            c.refresh(seen)

    @property
    def source(self):
        seen, parts = set(), []

        def walk(g):
            if id(g) in seen:
                return
            seen.add(id(g))
            parts.append(g.own_source)
            for c in g.callees:
                walk(c)
        walk(self)
        return "\n\n".join(parts)


def _rebound(values, xp):
    """The entries of a generated function's globals that change on device ``xp``: NumPy
    names, and the generated functions it calls."""
    out = on_device(values, xp)
    for name, v in values.items():
        gen = _GENERATED.get(v)() if type(v) is types.FunctionType and v in _GENERATED else None
        if gen is not None:
            out[name] = gen.on_device(xp)
    return out


def _contents(cells):
    """Name -> value of closure cells (the empty ones left out)."""
    out = {}
    for name, cell in cells.items():
        try:
            out[name] = cell.cell_contents
        except ValueError:
            pass
    return out


def _stored(node):
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


def _names(node):
    out = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Name):
            out.add(n.id)
        elif isinstance(n, ast.arg):
            out.add(n.arg)
    return out


def prepare(fn, on_tape=frozenset()):
    """``(FunctionDef, located, unit, resolver, signature, body)`` with local functions
    taken out (to be inlined), jumps lowered and the body in A-normal form; the
    statements at lines ``on_tape`` differentiated on a tape (see on_tape.py)."""
    node, located = function_tree(fn)
    sig = Signature(fn, node)
    for n in ast.walk(node):
        if isinstance(n, ast.NamedExpr):
            raise located.error(n, "the AST transformation cannot handle an assignment expression (:=)",
                                "assignment expression (:=)")
        if isinstance(n, (ast.Yield, ast.YieldFrom, ast.Await)):
            what = {ast.Yield: "yield", ast.YieldFrom: "yield from", ast.Await: "await"}[type(n)]
            raise located.error(n, f"the AST transformation cannot handle a {what}", what)
    used = _names(node)
    env = {k: fn.__globals__[k] for k in ("__builtins__", "__name__") if k in fn.__globals__}
    unit = Unit(used, env)
    unit.captured = frozenset(used - set(fn.__code__.co_freevars))  # (closure: the cells)
    env.update(_captured(fn.__globals__, unit.captured))
    unit.user_globals = fn.__globals__
    functions = local_functions(node, unit.namer, located)
    put_on_tape(node, on_tape, fn, set(sig.names()) | set(fn.__code__.co_freevars) | _stored(node), unit.bind)
    locals_ = set(sig.names()) | {n.id for n in ast.walk(node) if isinstance(n, ast.Name)
                                  and isinstance(n.ctx, ast.Store)}
    for lf in functions.values():
        locals_ |= set(lf.params) | {n.id for s in lf.body for n in ast.walk(s) if isinstance(n, ast.Name)}
    resolver = Resolver(fn, locals_)
    lower_jumps(node, unit.namer, located)
    before = set(unit.namer.used)
    from ...runtime.grad_mode import no_grad
    known = (lambda w: _context_is(resolver, w, no_grad) or _context_is(resolver, w, grad_of))
    anf = ANF(unit.namer, resolver, located, known, functions=functions,
              scope=scope_names(node.body) | set(sig.names()), bind=unit.bind)
    body = anf.block(node.body)
    unit.temps = set(unit.namer.used) - before
    _refuse_left_over_local_calls(body, functions, located)
    _refuse_callees_writing_arguments(body, resolver, located)
    return node, located, unit, resolver, sig, body


def _refuse_left_over_local_calls(body, functions, located):
    """A local function called where A-normal form keeps an expression whole (a loop's
    condition, ``a and f(x)``) cannot be inlined there: refused."""
    if not functions:
        return
    for n in ast.walk(ast.Module(body=body, type_ignores=[])):
        if isinstance(n, ast.Name) and n.id in functions and isinstance(n.ctx, ast.Load):
            raise located.error(n, f"the local function {n.id} is used inside a condition or an "
                                   "expression the AST path keeps whole (a while test, and/or, a "
                                   "comparison chain), where it cannot be inlined", "local function call in a condition")


def _in_place_facts(body, params):
    """What the callers of a generated function ask about its in-place changes (see
    :mod:`.aliasing`): visible sharing, writes into parameters, ``y += v`` lines. Read from
    the function's ANF body before it is transformed: the analysis follows names through
    ANF's one-operation right-hand sides (``t = p[:, None]``, ``u = np.expand_dims(t, 0)``),
    which the transformation folds back into nested expressions."""
    return in_place_facts(body, params) + (rebinds_in_place(body),)


def _note_in_place_facts(gen, facts):
    gen.visible_aliasing, gen.writes_params, gen.rebinds_in_place = facts


def _refuse_callees_writing_arguments(body, resolver, located):
    """A user function called here that changes an argument in place changes the
    caller's array under the caller's names -- whether or not its result is used --
    which the generated code would not follow: refused (the tape follows it)."""
    stmts = [s for s in ast.walk(ast.Module(body=body, type_ignores=[])) if isinstance(s, ast.stmt)]
    for s, call in ((s, c) for s in stmts for c in ast.walk(s) if isinstance(c, ast.Call)):
        callee = resolver.callee(call)
        if isinstance(callee, User) and writes_its_arguments(callee.fn):
            raise located.error(s, f"{callee.fn.__qualname__}, called from the function being "
                                   "differentiated, changes an argument in place (or a global array; "
                                   "a write into it or a view of it, +=, or a function it passes it "
                                   "to); the caller's names for that array would not follow",
                                "in-place change of an argument")


def _captured(user_globals, names):
    """The current values of the global names among ``names``: the generated code's
    globals are a copy of these (closure variables it reads from the user's own cells,
    see :func:`compile_source`)."""
    return {k: user_globals[k] for k in names if k in user_globals}


def _context_is(resolver, with_node, obj):
    item = with_node.items[0]
    expr = item.context_expr
    func = expr.func if isinstance(expr, ast.Call) else expr
    ok, value = resolver.value(func)
    return ok and value is obj


def adjoint(fn, positions, name, *, single=False, has_aux=False, with_value=False, internal=False,
            holomorphic=False):
    """The :class:`Generated` adjoint of ``fn`` with respect to parameters ``positions``
    (returning one gradient if ``single``, else a tuple); ``holomorphic``: its output is
    checked to be one complex number instead of one real number."""
    key = _vjp_key(positions, single, has_aux, with_value, internal, holomorphic)
    fn, name = _source_function(fn), _ident(name)
    with _lock:
        per = _CACHE.setdefault(fn, {})
        if key in per and written_for_now(per[key]):
            return per[key]
        per.pop(key, None)  # (a function it calls was rebound: written again)
        gen = reuse.recall(fn, key)  # (a function of the same code transformed before)
        if gen is not None:
            per[key] = gen
            return gen
        return retrying(lambda lines: _build_adjoint(fn, positions, name, single, has_aux, with_value,
                                                     internal, per, key, holomorphic, lines))


def _vjp_key(positions, single=False, has_aux=False, with_value=False, internal=False, holomorphic=False):
    """The cache key of an adjoint (the same for a callee's adjoint asked for while it is
    being built: recursion finds it pending)."""
    return ("vjp", positions, single, has_aux, with_value, internal, holomorphic)


def clear_cache():
    """Forget every generated function (the next use transforms again)."""
    with _lock:
        _CACHE.clear()
        reuse.forget()


def _remember(fn, key, gen, unit, resolver, user_defaults):
    """Offer ``gen`` to later functions of ``fn``'s code (see :mod:`.reuse`)."""
    callees = []
    for (callee, ckey), gname in unit.callee_names.items():
        if gname not in unit.env or callee is fn:
            if callee is fn:
                return  # (recursion through its own name: not shared)
            continue
        try:
            ref = weakref.ref(callee)
        except TypeError:
            return
        if ckey[0] == "vjp":
            rebuild = (lambda c, k=ckey: adjoint(c, k[1], f"d{c.__name__}", internal=True))
        else:
            rebuild = (lambda c: tangents(c, f"{c.__name__}_jvp"))
        callees.append((gname, ref, rebuild))
    reuse.remember(fn, key, gen, unit, resolver.reads, callees, user_defaults)


_PENDING = {}   # (fn, key) -> [(env, name)] waiting for an adjoint still being built


def _build_adjoint(fn, positions, name, single, has_aux, with_value, internal, per, key, holomorphic=False,
                   on_tape=frozenset()):
    from ...runtime.grad_mode import no_grad
    node, located, unit, resolver, sig, body = prepare(fn, on_tape)
    unit.namer.used.add(name)  # (a callee's adjoint may not take the name: dlambda in dlambda)
    params = sig.names()
    facts = _in_place_facts(body, params)
    positions = sig.positions(positions)
    wrt = sig.wrt(positions)
    callees = []

    def user_adjoint(callee, pos, call):
        child_key = _vjp_key(pos, internal=True)
        return _callee(unit, callees, callee, child_key,
                       lambda: adjoint(callee, pos, f"d{callee.__name__}", internal=True), f"d{callee.__name__}")

    def is_nograd(w):
        return _context_is(resolver, w, no_grad)

    def grad_of_target(w):
        if not isinstance(w, ast.With) or not _context_is(resolver, w, grad_of):
            return None
        call = w.items[0].context_expr
        if not (isinstance(call, ast.Call) and len(call.args) == 1 and isinstance(call.args[0], ast.Name)):
            raise located.error(w, "grad_of takes one variable name", "grad_of")
        return call.args[0].id

    _PENDING[(fn, key)] = []
    try:
        rev = Reverse(unit, resolver, located, user_adjoint, is_nograd, grad_of_target)
        dout = unit.namer.fresh("dout")
        forward, adj, wrt_grads = rev.run(body, params, wrt, _name(dout), has_aux)
        guard_opaque_calls(forward, resolver, wrt, params)
        grads = sig.results(positions, lambda p: copy.deepcopy(wrt_grads[wrt.index(p)]))
        stack = unit.namer.fresh("stack")
        forward, adj = finish(rev, forward, adj, stack)
        ret = body[-1] if body and isinstance(body[-1], ast.Return) else None
        value = ret.value if ret is not None else _const(None)
        checks = []
        saved = None
        if with_value or has_aux:  # the value as the forward lines left it: the adjoint's
            saved = unit.namer.fresh("value")  # lines restore the names they rebound
            checks.append(_assign(saved, value))
            value = _name(saved)
        if not internal:  # the output is checked (one real number, or a pair with has_aux)
            flags = [_const(True)] if has_aux else []   # and the seed takes its shape
            kws = [ast.keyword(arg="holomorphic", value=_const(True))] if holomorphic else []
            checks.append(_assign(dout, ast.Call(func=_helper_name("scalar_output"),
                                                 args=[value, _name(dout)] + flags, keywords=kws)))
        result = grads[0] if single and positions != ALL else ast.Tuple(elts=grads, ctx=ast.Load())
        if with_value or has_aux:
            result = ast.Tuple(elts=[value, result], ctx=ast.Load())
        out_names = {n.id for n in ast.walk(result) if isinstance(n, ast.Name)}
        body_out = [comment("forward")] + forward + checks + adj + [ast.Return(value=result)]
        if internal:  # called by other adjoints: the seed first, defaults keep working
            args = sig.arguments(unit, front=[dout])
        else:         # the user's signature, then dout=1.0
            args = sig.arguments(unit, back=[dout], back_defaults=[_const(1.0)])
        fdef = ast.FunctionDef(name=name, args=args, body=body_out, decorator_list=[], returns=None,
                               type_params=[])
        optimize(fdef, temps=unit.temps, keep=out_names | {stack, dout} | set(params) | rev.checked)
        gen = _compile(fdef, unit, name, fn, per, key, callees)
        gen.written_for = structure(resolver)
        gen.seed = dout
        _note_in_place_facts(gen, facts)
        _remember(fn, key, gen, unit, resolver, user_defaults=True)
        return gen
    finally:
        _PENDING.pop((fn, key), None)


_counter = itertools.count()


def compile_source(source, name, env, fdef, user_fn):
    """The function that ``source`` (one ``def``) defines, with globals ``env``, made
    without running anything: its defaults are the objects that the printed names and
    literals stand for, and its closure is ``user_fn``'s own cells, matched by name (the
    ``def`` is compiled where the user's was: see :func:`.source.in_scope`), so that the
    generated code reads what the user's code reads."""
    cells = dict(zip(user_fn.__code__.co_freevars, user_fn.__closure__ or ()))
    cls = class_name(getattr(user_fn, "__qualname__", ""))
    qualname = name if cls is None else f"{cls}.{name}"
    text = in_scope(source, list(cells), qualname)
    filename = f"<ast:{name}:{next(_counter)}>"
    code = _find_code(compile(text, filename, "exec", dont_inherit=True), name)
    defaults = tuple(_default_value(d, env) for d in fdef.args.defaults) or None
    fn = types.FunctionType(code, env, name, defaults, tuple(cells[n] for n in code.co_freevars) or None)
    kw = {a.arg: _default_value(d, env) for a, d in zip(fdef.args.kwonlyargs, fdef.args.kw_defaults)
          if d is not None}
    if kw:
        fn.__kwdefaults__ = kw
    fn.__qualname__ = qualname
    fn.__source__ = source
    registered(fn, text, filename)  # (the linecache entry leaves with the function)
    fn.__source__ = source
    return fn


def _default_value(node, env):
    if isinstance(node, ast.Name):
        return env[node.id]
    return ast.literal_eval(node)


def _compile(fdef, unit, name, fn, per, key, callees):
    """Print, compile and cache a generated function; fill in the recursive references
    that waited for it."""
    source = render(fdef, unit)
    compiled = compile_source(source, name, unit.env, fdef, fn)
    gen = Generated(compiled, source, name)
    gen.callees = callees
    gen.user_globals, gen.captured = unit.user_globals, unit.captured
    per[key] = gen
    for env, gname in _PENDING.get((fn, key), []):
        env[gname] = compiled
    return gen


def _callee(unit, callees, callee, key, build, hint):
    """The global name, in ``unit``, of the generated function ``build()`` makes for a
    user function ``callee`` (cached; during recursion, filled in once compiled)."""
    gname = unit.callee_names.get((callee, key))
    if gname is None:  # (one name per callee, however often the body is regenerated)
        gname = unit.callee_names[(callee, key)] = unit.namer.fresh(_ident(hint))
    elif gname in unit.env:
        return gname
    child_per = _CACHE.setdefault(callee, {})
    if key in child_per:
        gen = child_per[key]
    else:
        pending = _PENDING.get((callee, key))
        if pending is not None:
            pending.append((unit.env, gname))
            return gname
        try:
            gen = build()
        except TransformError as e:  # (the caller differentiates this call on a tape)
            raise Untransformable(callee, e) from e
    if getattr(gen, "writes_params", False):  # the caller's array would change under it
        code = callee.__code__
        raise TransformError(f"{callee.__qualname__}, called from the function being "
                             "differentiated, changes an argument in place (a write into it, "
                             "or +=); the caller's names for that array would not follow",
                             code.co_filename, code.co_firstlineno, "in-place change of an argument")
    unit.env[gname] = gen.fn
    callees.append(gen)
    return gname


def written_for_now(gen, seen=None):
    """Whether the functions, classes and modules ``gen`` (and the adjoints it calls) was
    written for are still the ones its function's names refer to (see resolve.structure)."""
    seen = set() if seen is None else seen
    if id(gen) in seen:
        return True
    seen.add(id(gen))
    return still_written_for(getattr(gen, "written_for", ())) and \
        all(written_for_now(c, seen) for c in gen.callees)


def _source_function(fn):
    """The Python function whose source is transformed: ``fn`` itself, or, for a gradient
    made by this path (``grad(grad(f))``), the generated adjoint -- transformed again."""
    inner = getattr(fn, "_ast_function", None)
    if inner is not None:
        fn = inner()
    if getattr(fn, "__code__", None) is None:
        function_tree(fn)  # raises the TransformError that says why
    return fn


def tangents(fn, name, positions=None):
    """The :class:`Generated` forward-mode version of ``fn``: ``(*args, *tangents) ->
    (value, tangent)`` -- with ``positions``, a tangent for those positional parameters
    only (the others are constants)."""
    key = ("jvp",) if positions is None else ("jvp", tuple(positions))
    fn, name = _source_function(fn), _ident(name)
    with _lock:
        per = _CACHE.setdefault(fn, {})
        if key in per and written_for_now(per[key]):  # (each jvp call is a new
            per[key].refresh()                         # transformation: it sees rebound globals)
            return per[key]
        per.pop(key, None)
        gen = reuse.recall(fn, key)
        if gen is not None:
            per[key] = gen
            return gen
        return retrying(lambda lines: _build_tangents(fn, name, per, key, positions, lines))


def _build_tangents(fn, name, per, key, positions=None, on_tape=frozenset()):
    from .forward import Forward
    from ...runtime.grad_mode import no_grad
    node, located, unit, resolver, sig, body = prepare(fn, on_tape)
    unit.namer.used.add(name)
    facts = _in_place_facts(body, sig.names())
    params = sig.params + ([sig.vararg] if sig.vararg else [])
    if positions is not None:
        params = [sig.params[p] for p in positions]  # (IndexError: *args are not chosen so)
    callees = []

    def user_jvp(callee, call):
        return _callee(unit, callees, callee, ("jvp",), lambda: tangents(callee, f"{callee.__name__}_jvp"),
                       f"{callee.__name__}_jvp")

    def grad_of_target(w):
        return w if isinstance(w, ast.With) and _context_is(resolver, w, grad_of) else None
    _PENDING[(fn, key)] = []
    try:
        fwd = Forward(unit, resolver, located, user_jvp, lambda w: _context_is(resolver, w, no_grad),
                      grad_of_target)
        primal = {id(s) for s in _walk(body)}  # (before run: the lines it keeps as they are)
        out = fwd.run(body, params)
        guard_opaque_calls(out, resolver, params, sig.names(), only=primal)
        checker = _name("check_unaliased")
        checker._helper = True
        checked = set()  # (names the checks read by name: kept, as the adjoint keeps them)
        out = with_checks(out, live_after(body), located, checker, checked)
        targs = [fwd.d(p) for p in params]
        fdef = ast.FunctionDef(name=name, args=sig.arguments(unit, back=targs, defaults=False), body=out,
                               decorator_list=[], returns=None, type_params=[])
        optimize(fdef, temps=unit.temps, keep=set(sig.names()) | set(targs) | checked)
        gen = _compile(fdef, unit, name, fn, per, key, callees)
        gen.written_for = structure(resolver)
        gen.tangent_names = targs  # (by keyword where *args takes the positional arguments)
        gen.keyword_tangents = bool(sig.vararg) and positions is None
        gen.nparams = len(sig.params)
        _note_in_place_facts(gen, facts)
        _remember(fn, key, gen, unit, resolver, user_defaults=False)
        return gen
    finally:
        _PENDING.pop((fn, key), None)


def _ident(name):
    """``name`` as a Python identifier (``<lambda>_jvp`` -> ``lambda_jvp``)."""
    name = name.replace("<lambda>", "lambda").replace("<", "").replace(">", "")
    name = "".join(c if c.isalnum() or c == "_" else "_" for c in name) or "f"
    return name if not name[0].isdigit() else "f" + name


def _helper_name(h):
    n = _name(h)
    n._helper = True
    return n


_COMMENT = re.compile(r"^(\s*)__comment__\((.*)\)$")


class _Negatives(ast.NodeTransformer):
    """A negative number constant (A-normal form folds ``-0.5`` into one) printed as
    ``-(0.5)``'s unary minus, which ``ast.unparse`` parenthesises where it binds looser
    than its context: ``(-0.5) ** 2``, not ``-0.5 ** 2`` (which is -0.25)."""

    def visit_Constant(self, node):
        v = node.value
        if isinstance(v, (int, float, complex)) and not isinstance(v, bool) and \
                (v.real < 0 if isinstance(v, complex) else v < 0):
            return ast.copy_location(ast.UnaryOp(op=ast.USub(), operand=ast.Constant(value=-v)), node)
        return node


def render(fdef, unit):
    """Source text: helper names resolved, comment markers turned into comments."""
    names = unit.helper_names()
    done = set()  # (a helper's Name node may stand in several places: renamed once)
    for n in ast.walk(fdef):
        if isinstance(n, ast.Name) and getattr(n, "_helper", False) and id(n) not in done:
            done.add(id(n))
            n.id = names[n.id]
    fdef = _Negatives().visit(fdef)
    ast.fix_missing_locations(fdef)
    lines = []
    for line in ast.unparse(fdef).split("\n"):
        m = _COMMENT.match(line)
        if m:
            lines.append(f"{m.group(1)}# {ast.literal_eval(m.group(2))}")
        else:
            lines.append(line)
    return "\n".join(lines) + "\n"


def grad_of(x):
    """``with tracegrad.grad_of(h) as dh: ...`` -- code for the backward pass (AST mode):
    the block runs where the gradient of ``h`` is complete, with ``dh`` naming it. Run
    directly (or traced) the block sees ``h`` itself and has no effect on anything."""
    return _GradOf(x)


class _GradOf:
    def __init__(self, x):
        self.x = x

    def __enter__(self):
        return self.x

    def __exit__(self, *exc):
        return False

