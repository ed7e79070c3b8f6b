"""Lowering to the Python the passes know, before A-normal form: functions defined in the
body are inlined where they are called, and comprehensions become loops.

*Local functions.* A ``def`` in the body (or ``name = lambda ...``) is taken out of the
body by :func:`local_functions`, and each call of it is later written out in place by
:class:`.anf.ANF`: its parameters assigned from the arguments, then its statements, its
``return`` value becoming the call's value. A closure reads its free variables when it
is called, and so does the inlined code, so the two agree; the function's own names are
renamed (``inner_z``) where they would overwrite the caller's. Refused: recursion, a
local function used as a value (passed, returned, stored -- except a one-line one, which
stays a ``lambda`` there), ``nonlocal``, decorators, and defaults that are not
constants (a default is computed when the ``def`` runs, not when it is called).

*Comprehensions.* ``[e for x in xs if c]`` becomes ``items = []``, ``for x in xs: if c:
items.append(e)`` (a dict comprehension writes ``items[k] = v``; a set comprehension is
a list made a set; a generator expression is a list), written where the comprehension
stood, so the operands before it are still computed first. Comprehension variables are
renamed where they would overwrite a name of the function.
"""
import ast
import copy

from . import anf  # (anf builds on this module's Lowering: its names are read at call time)

__all__ = ["LocalFunction", "local_functions", "scope_names", "Lowering", "COMPREHENSIONS"]

COMPREHENSIONS = (ast.ListComp, ast.GeneratorExp, ast.SetComp, ast.DictComp)
_SCOPES = COMPREHENSIONS + (ast.Lambda, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def scope_names(stmts):
    """Names the function's own scope uses: those outside comprehensions, lambdas and
    nested defs (whose variables live in scopes of their own)."""
    out = set()
    todo = list(stmts)
    while todo:
        n = todo.pop()
        if isinstance(n, ast.Name):
            out.add(n.id)
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(n.name)
            continue
        if isinstance(n, _SCOPES):
            if isinstance(n, COMPREHENSIONS):  # (its first iterable is evaluated outside)
                todo.append(n.generators[0].iter)
            continue
        todo.extend(ast.iter_child_nodes(n))
    return out


class LocalFunction:
    """A function defined in the body: ``params`` (renamed), ``defaults`` (constants, for
    the last parameters) and ``body`` (jumps lowered, ending in one ``return``)."""

    def __init__(self, name, params, defaults, body, node):
        self.name, self.params, self.defaults, self.body, self.node = name, params, defaults, body, node
        self.lambda_ = None   # the one-line form, for uses as a value

    def as_lambda(self):
        return copy.deepcopy(self.lambda_)


def _refuse(located, node, what):
    article = "an" if what[0] in "aeiou" else "a"
    return located.error(node, f"the AST transformation cannot handle {article} {what}", what)


def local_functions(fn_node, namer, located):
    """Take the local functions out of ``fn_node``'s body; return ``{name: LocalFunction}``.
    Their calls are inlined by ANF; any other use of one is refused here (or, for a
    one-line function, written as a ``lambda``)."""
    found = {}
    _collect(fn_node.body, found, located)
    if not found:
        return {}
    stores = _store_counts(fn_node)
    for name, node in found.items():
        if stores.get(name, 0):
            raise located.error(node, f"the local function {name} is also assigned as a variable",
                                "local function rebound")
    taken = _all_names(fn_node)  # what an inlined function's own names must not overwrite
    out = {}
    for name, node in found.items():
        out[name] = _prepare(name, node, taken, namer, located)
        taken |= set(out[name].params) | _all_names(*out[name].body)
    _check_uses([fn_node] + [lf.node for lf in out.values()], out, located)
    return out


def _all_names(*nodes):
    return {n.id for node in nodes for n in ast.walk(node) if isinstance(n, ast.Name)}


def _collect(stmts, found, located):
    """Remove ``def`` statements and ``name = lambda`` assignments from ``stmts`` (and the
    blocks inside them) into ``found``."""
    keep = []
    for s in stmts:
        name = None
        if isinstance(s, ast.FunctionDef):
            name, node = s.name, s
        elif isinstance(s, ast.AsyncFunctionDef):
            raise _refuse(located, s, "nested async def")
        elif isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name) \
                and isinstance(s.value, ast.Lambda):
            lam = s.value
            name = s.targets[0].id
            node = ast.copy_location(ast.FunctionDef(
                name=name, args=lam.args, body=[ast.copy_location(ast.Return(value=lam.body), s)],
                decorator_list=[], returns=None, type_params=[]), s)
        if name is not None:
            if name in found:
                raise located.error(s, f"the local function {name} is defined more than once",
                                    "local function rebound")
            found[name] = node
            continue
        for field in ("body", "orelse", "finalbody"):
            inner = getattr(s, field, None)
            if inner and isinstance(inner, list) and isinstance(inner[0], ast.stmt):
                _collect(inner, found, located)
                if not inner:
                    inner.append(ast.Pass())
        keep.append(s)
    stmts[:] = keep


def _store_counts(fn_node):
    counts = {}
    for n in ast.walk(fn_node):
        name = None
        if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
            name = n.id
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and n is not fn_node:
            name = n.name
        if name is not None:
            counts[name] = counts.get(name, 0) + 1
    return counts


def _prepare(name, node, taken, namer, located):
    args = node.args
    if node.decorator_list:
        raise _refuse(located, node, "decorated nested def")
    if args.vararg or args.kwarg or args.kwonlyargs or args.posonlyargs:
        raise _refuse(located, node, "nested def with *args, **kwargs or keyword-only parameters")
    for d in args.defaults:
        if not _constant(d):
            raise located.error(d, f"the default of a parameter of local function {name} is not a "
                                   "constant (a default is computed when the def runs, the inlined "
                                   "code would compute it at each call)", "non-constant default")
    for n in ast.walk(node):
        if isinstance(n, (ast.Nonlocal, ast.Global)):
            raise _refuse(located, n, f"{type(n).__name__.lower()} statement in a nested def")
        if isinstance(n, (ast.Yield, ast.YieldFrom, ast.Await)):
            raise _refuse(located, n, "generator (yield) nested def")
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and n is not node:
            raise _refuse(located, n, "def nested in a nested def")
    one_line = len(node.body) == 1 and isinstance(node.body[0], ast.Return) and not args.defaults
    lam = ast.copy_location(ast.Lambda(args=copy.deepcopy(args),
                                       body=copy.deepcopy(node.body[0].value or anf._const(None))), node) \
        if one_line else None
    params = [a.arg for a in args.args]
    own = set(params) | {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    prefix = name.strip("_") or "f"
    renames = {v: namer.fresh(f"{prefix}_{v}") for v in sorted(own) if v in taken}
    body = [_renamed(s, renames) for s in node.body]
    fdef = ast.FunctionDef(name=name, args=ast.arguments(posonlyargs=[], args=[], vararg=None, kwonlyargs=[],
                                                         kw_defaults=[], kwarg=None, defaults=[]),
                           body=body, decorator_list=[], returns=None, type_params=[])
    anf.lower_jumps(fdef, namer, located)
    if not fdef.body or not isinstance(fdef.body[-1], ast.Return):
        fdef.body.append(ast.Return(value=anf._const(None), lineno=node.body[-1].lineno))
    lf = LocalFunction(name, [renames.get(p, p) for p in params], list(args.defaults), fdef.body, node)
    lf.lambda_ = lam
    return lf


def _constant(node):
    if isinstance(node, ast.Constant):
        return True
    return isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)) and \
        isinstance(node.operand, ast.Constant)


class _Rename(ast.NodeTransformer):
    def __init__(self, renames):
        self.renames = renames

    def visit_Name(self, node):
        new = self.renames.get(node.id)
        if new is not None:
            return ast.copy_location(ast.Name(id=new, ctx=node.ctx), node)
        return node

    def visit_Lambda(self, node):  # (its parameters shadow: left alone inside)
        shadowed = {a.arg for a in ast.walk(node.args) if isinstance(a, ast.arg)}
        inner = _Rename({k: v for k, v in self.renames.items() if k not in shadowed})
        node.body = inner.visit(node.body)
        return node


def _renamed(node, renames):
    node = copy.deepcopy(node)
    return _Rename(renames).visit(node) if renames else node


def _check_uses(nodes, functions, located):
    """A local function may be called; a one-line one may also be used as a value (it is
    written there as its lambda); any other use is refused."""
    calls = set()
    every = [n for node in nodes for n in ast.walk(node)]
    for n in every:
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name):
            calls.add(id(n.func))
    for n in every:
        if isinstance(n, ast.Name) and n.id in functions and isinstance(n.ctx, ast.Load) and id(n) not in calls:
            if functions[n.id].lambda_ is None:
                raise located.error(n, f"local function used as a value: {n.id} is passed, returned or "
                                       "stored, where the AST path cannot inline it; only calls of it "
                                       "(or a one-line function, written as a lambda there) are understood",
                                    "local function used as a value")


class Lowering:
    """What :class:`.anf.ANF` does with comprehensions, local functions, displays and
    calls with ``*args``/``**kwargs`` (mixed into it). ``functions``: the local
    functions; ``scope``: the function scope's names; ``bind(obj, hint)``: a global name
    for ``obj`` in the generated code."""

    def setup_lowering(self, functions=None, scope=(), bind=None):
        self.functions = dict(functions or {})
        self.written = None   # the statement being lowered (marks: see _fresh in aliasing)
        self.taken = set(scope)
        for lf in self.functions.values():
            self.taken |= set(lf.params) | {n.id for s in lf.body for n in ast.walk(s) if isinstance(n, ast.Name)}
        self.bind = bind
        self.comp_stack, self.inlining = [], []
        self.sequences = set()   # names bound to lists or tuples made here
        self.dicts = set()       # names bound to dicts made here

    # comprehensions -----------------------------------------------------------------------
    def comprehension(self, node, into=None):
        """Comprehension ``node`` computed by loops (emitted); its value's name."""
        kind = type(node)
        result = into or self.namer.fresh("mapping" if kind is ast.DictComp else "items")
        built = self.namer.fresh("members") if kind is ast.SetComp else result
        taken = self.taken.union(*self.comp_stack)
        stmts, names = _comprehension_loops(node, built, self.namer, taken, self.located)
        origin = self.src
        for s in stmts:
            for n in ast.walk(s):
                if isinstance(n, ast.stmt):
                    n._origin = origin
        if kind is ast.DictComp:
            self.dicts.add(result)
        self.comp_stack.append(names)
        written = self.written
        try:
            for s in stmts:
                self.src, self.written = origin, s
                self.stmt(s)
        finally:
            self.comp_stack.pop()
            self.src, self.written = origin, written
        if kind is ast.SetComp:
            self.emit(anf._assign(result, ast.Call(func=anf._name("set"), args=[anf._name(built)], keywords=[])))
        elif kind is not ast.DictComp:
            self.sequences.add(result)
        return anf._name(result)

    # local functions ---------------------------------------------------------------------
    def lambda_function(self, node):
        """A lambda called where it is written, as a local function (to inline)."""
        fdef = ast.copy_location(ast.FunctionDef(
            name="lambda", args=node.args, body=[ast.copy_location(ast.Return(value=node.body), node)],
            decorator_list=[], returns=None, type_params=[]), node)
        lf = _prepare("lambda", fdef, self.taken.union(*self.comp_stack), self.namer, self.located)
        self.taken |= set(lf.params)  # (a lambda's only names of its own)
        self.resolver.locals |= set(lf.params)
        return lf

    def local_value(self, name):
        """A local function used as a value: its lambda."""
        return self.functions[name].as_lambda()

    def inline(self, lf, call):
        """The call ``call`` of local function ``lf`` written out; the name of its value."""
        if lf.name in self.inlining:
            self.fail(call, f"recursive local function ({lf.name})")
        if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
            if lf.lambda_ is None:  # (its parameters are matched to the arguments only when it runs)
                self.fail(call, f"starred argument (*args, **kwargs) in a call of local function {lf.name}")
            args, kws = self.call_arguments(call)  # a one-line one: called as its lambda (on a tape)
            return ast.Call(func=lf.as_lambda(), args=args, keywords=kws)
        original = [a.arg for a in lf.node.args.args]
        if len(call.args) > len(original):
            self.fail(call, f"call of local function {lf.name} with too many arguments")
        values = dict(zip(original, (self.atom(a) for a in call.args)))
        for k in call.keywords:
            if k.arg not in original or k.arg in values:
                self.fail(call, f"call of local function {lf.name} with a wrong keyword argument ({k.arg})")
            values[k.arg] = self.atom(k.value)
        defaults = dict(zip(original[len(original) - len(lf.defaults):], lf.defaults))
        origin = self.src
        for p, new in zip(original, lf.params):
            if p not in values and p not in defaults:
                self.fail(call, f"call of local function {lf.name} without argument {p}")
            self.emit(anf._assign(new, values.get(p) or copy.deepcopy(defaults[p]), origin))
        body = copy.deepcopy(lf.body)
        self.inlining.append(lf.name)
        written = self.written
        try:
            for s in body[:-1]:
                self.src = self.written = s
                self.stmt(s)
            ret = body[-1]
            self.src = self.written = ret
            result = self.temp(self.simple(ret.value) if ret.value is not None else anf._const(None))
        finally:
            self.inlining.pop()
            self.src, self.written = origin, written
        return result

    # calls -------------------------------------------------------------------------------
    def call_arguments(self, call):
        """The arguments of ``call`` as atoms (``*seq`` and ``**mapping`` kept)."""
        args = []
        for a in call.args:
            if isinstance(a, ast.Starred):
                args.append(ast.Starred(value=self.atom(a.value), ctx=ast.Load()))
            else:
                args.append(self.atom(a))
        kws = [ast.keyword(arg=k.arg, value=self.atom(k.value)) for k in call.keywords]
        return args, kws

    def dict_view(self, receiver, kind):
        """``d.keys()``, ``d.values()``, ``d.items()`` as lists made here: ``keys_of(d)``,
        ``[d[key] for key in keys]``, ``[(key, d[key]) for key in keys]`` (a view would hide
        its values from the gradient)."""
        from . import support
        d = self.atom(receiver)
        func = anf._name(self.bind(support.keys_of, "keys_of"))
        func._bound = support.keys_of
        keys = self.temp(ast.Call(func=func, args=[d], keywords=[]), "keys")
        if kind == "keys":
            self.sequences.add(keys.id)
            return keys
        key = self.namer.fresh("key")
        value = ast.Subscript(value=copy.deepcopy(d), slice=anf._name(key), ctx=ast.Load())
        elt = value if kind == "values" else ast.Tuple(elts=[anf._name(key), value], ctx=ast.Load())
        comp = ast.ListComp(elt=elt, generators=[ast.comprehension(target=anf._name(key, ast.Store()),
                                                                   iter=keys, ifs=[], is_async=0)])
        return self.comprehension(ast.copy_location(comp, self.src) if hasattr(self.src, "lineno") else comp)

    def eager(self, call):
        """``map(f, xs)``, ``zip(xs, ys)`` and ``enumerate(xs)`` used as values, as the lists
        they produce (``[f(x) for x in xs]``...), whose items a derivative can follow (None
        where ``call`` is none of them)."""
        ok, obj = self.resolver.value(call.func)
        if not ok or call.keywords or any(isinstance(a, ast.Starred) for a in call.args):
            return None
        if obj is map and len(call.args) >= 2:
            func, iters = call.args[0], call.args[1:]
        elif obj in (zip, enumerate) and call.args and (obj is zip or len(call.args) == 1):
            func, iters = None, call.args
        else:
            return None
        names = [self.namer.fresh("item") for _ in iters]
        if obj is enumerate:
            names = [self.namer.fresh("index")] + names
        items = [anf._name(n) for n in names]
        elt = ast.Call(func=func, args=items, keywords=[]) if func is not None else \
            ast.Tuple(elts=items, ctx=ast.Load())
        source = iters[0] if len(iters) == 1 and obj is map else ast.Call(
            func=call.func if obj is not map else anf._name("zip"), args=list(iters), keywords=[])
        target = anf._name(names[0], ast.Store()) if len(names) == 1 else \
            ast.Tuple(elts=[anf._name(n, ast.Store()) for n in names], ctx=ast.Store())
        comp = ast.ListComp(elt=elt, generators=[ast.comprehension(target=target, iter=source, ifs=[],
                                                                   is_async=0)])
        return self.comprehension(ast.copy_location(comp, call))

    def dict_call(self, call):
        """``dict(a=x, b=y)`` as the display ``{'a': x, 'b': y}`` (None if it is not one)."""
        ok, obj = self.resolver.value(call.func)
        if not (ok and obj is dict and not call.args and call.keywords and all(k.arg for k in call.keywords)):
            return None
        return ast.Dict(keys=[anf._const(k.arg) for k in call.keywords],
                        values=[self.atom(k.value) for k in call.keywords])

    def as_arrays(self, call, args):
        """``args`` of a NumPy function that reads arrays elementwise (a ufunc, a reduction)
        with each list or tuple made here converted first (``items_array = asarray(items)``):
        the rule table's rules take arrays."""
        if self.bind is None or not self.sequences:
            return args
        ok, obj = self.resolver.value(call.func)
        n = _array_operands(self.resolver, call, obj) if ok else 0
        if not n:
            return args
        out = []
        for k, a in enumerate(args):
            if k < n and isinstance(a, ast.Name) and a.id in self.sequences:
                import numpy
                func = anf._name(self.bind(numpy.asarray, "asarray"))
                func._bound = numpy.asarray
                a = self.temp(ast.Call(func=func, args=[a], keywords=[]), f"{a.id}_array")
            out.append(a)
        return out


def _array_operands(resolver, call, obj):
    """How many leading positional arguments of a call of ``obj`` are arrays it reads
    elementwise (a rule's array arguments, a ufunc's inputs, a reduction's first): 0 for
    any other function. The others are options (``np.sum(a, (2, 0))``: an axis tuple)."""
    from .resolve import Direct
    import numpy
    callee = resolver.callee(call)
    if isinstance(callee, Direct):
        prim = callee.prim
        return len(call.args) if getattr(prim, "variadic", False) else len(prim.argnames)
    try:
        if isinstance(obj, numpy.ufunc):
            return obj.nin
        return 1 if obj in _REDUCTIONS else 0
    except TypeError:
        return 0


def _reductions():
    import numpy
    return {numpy.sum, numpy.mean, numpy.prod, numpy.max, numpy.min, numpy.amax, numpy.amin, numpy.std,
            numpy.var, numpy.cumsum, numpy.cumprod, numpy.average, numpy.linalg.norm}


_REDUCTIONS = _reductions()


def _comprehension_loops(node, result, namer, taken, located):
    """``(statements, names)``: the loops computing comprehension ``node`` into the name
    ``result`` (a set's members into a list), and its variables' names as written there.
    ``taken``: names the comprehension's variables must not overwrite."""
    for g in node.generators:
        if g.is_async:
            raise _refuse(located, node, "async comprehension")
    renames = {}
    for g in node.generators:
        for t in ast.walk(g.target):
            if isinstance(t, ast.Name) and t.id in taken and t.id not in renames:
                renames[t.id] = namer.fresh(t.id)
    # the first iterable is evaluated outside the comprehension's scope: not renamed
    gens = []
    for k, g in enumerate(node.generators):
        it = copy.deepcopy(g.iter) if k == 0 else _renamed(g.iter, renames)
        gens.append((_renamed(g.target, renames), it, [_renamed(c, renames) for c in g.ifs]))
    if isinstance(node, ast.DictComp):
        key, value = _renamed(node.key, renames), _renamed(node.value, renames)
        target = ast.Subscript(value=anf._name(result), slice=key, ctx=ast.Store())
        inner = ast.Assign(targets=[target], value=value)
        init = ast.Dict(keys=[], values=[])
    else:
        elt = _renamed(node.elt, renames)
        append = ast.Attribute(value=anf._name(result), attr="append", ctx=ast.Load())
        inner = ast.Expr(value=ast.Call(func=append, args=[elt], keywords=[]))
        init = ast.List(elts=[], ctx=ast.Load())
    inner._fresh = True  # (the comprehension's own new list: no other name can share it)
    stmt = inner
    for target, it, ifs in reversed(gens):
        body = [stmt]
        for c in reversed(ifs):
            body = [ast.If(test=c, body=body, orelse=[])]
        stmt = ast.For(target=target, iter=it, body=body, orelse=[])
    out = [anf._assign(result, init), stmt]
    for s in out:
        for n in ast.walk(s):
            if isinstance(n, (ast.stmt, ast.expr)) and not hasattr(n, "lineno"):
                ast.copy_location(n, node)
    names = {n.id for g in gens for n in ast.walk(g[0]) if isinstance(n, ast.Name)}
    return out, names
