"""Normalisation before differentiation, in two steps.

1. ``lower_jumps``: ``break``, ``continue`` and early ``return`` become flags, and the
   statements after them run under ``if not flag:`` -- so that every loop iteration and
   every branch that starts also runs to its end, which the adjoint needs in order to
   run it backwards.
2. :class:`ANF` (A-normal form): every differentiable operation gets a statement of its
   own (``t = x @ w``, ``h = np.tanh(t)``), loops over sequences become loops over an
   index (``for k in range(len(xs)): x = xs[k]``), ``x += v`` becomes ``x = x + v``. Each
   new statement remembers the user's statement it came from (``# grad of:`` comments).

Conditions, indices and ``range(...)`` arguments stay as written: they are not
differentiated.
"""
import ast
import copy

from ..emit import fresh_name
from .lower import COMPREHENSIONS, Lowering
from .resolve import CONSTANT as CONSTANT_CALLEE

__all__ = ["Namer", "lower_jumps", "ANF"]


class Namer:
    """Fresh local names that collide with none of the function's names."""

    def __init__(self, used):
        self.used = set(used)

    def fresh(self, hint):
        return fresh_name(self.used, hint)


def _name(id, ctx=None):
    return ast.Name(id=id, ctx=ctx or ast.Load())


def _assign(target, value, src=None):
    node = ast.Assign(targets=[_name(target, ast.Store()) if isinstance(target, str) else target],
                      value=value, lineno=getattr(src, "lineno", 0))
    if src is not None:
        node._src = src
    return node


def _const(value):
    return ast.Constant(value=value)


def index_expr(node):
    """A subscript's index as an expression (``x[1:, ::2]`` -> ``(slice(1, None, None),
    slice(None, None, 2))``), to pass to a helper."""
    if isinstance(node, ast.Slice):
        parts = [copy.deepcopy(p) if p is not None else _const(None) for p in (node.lower, node.upper, node.step)]
        return ast.Call(func=_name("slice"), args=parts, keywords=[])
    if isinstance(node, ast.Tuple):
        return ast.Tuple(elts=[index_expr(e) for e in node.elts], ctx=ast.Load())
    return copy.deepcopy(node)


# -- 1. jumps ----------------------------------------------------------------------------

class _Loop:
    def __init__(self, namer):
        self.namer = namer
        self.brk = self.cnt = None

    def flag(self, kind):
        if kind == "brk":
            self.brk = self.brk or self.namer.fresh("stop")
            return self.brk
        self.cnt = self.cnt or self.namer.fresh("skip")
        return self.cnt


def lower_jumps(fn, namer, located):
    """Rewrite ``fn.body`` without break/continue/non-final return (in place)."""
    located.namer = namer
    body = fn.body
    returns = [n for n in ast.walk(fn) if isinstance(n, ast.Return)]
    early = any(r is not body[-1] for r in returns)
    flags = {"ret": namer.fresh("done") if early else None, "val": None}
    if early:
        flags["val"] = namer.fresh("result")
    new, _ = _block(body, None, flags, located)
    if early:
        new = [_assign(flags["val"], _const(None)), _assign(flags["ret"], _const(False))] + new
        new.append(ast.Return(value=_name(flags["val"]), lineno=body[-1].lineno))
    fn.body = new


def _test(jumps, loop, flags):
    names = [flags["ret"] if j == "ret" else (loop.brk if j == "brk" else loop.cnt) for j in sorted(jumps)]
    test = _name(names[0]) if len(names) == 1 else ast.BoolOp(op=ast.Or(), values=[_name(n) for n in names])
    return ast.UnaryOp(op=ast.Not(), operand=test)


def _block(stmts, loop, flags, located):
    out = []
    for i, s in enumerate(stmts):
        new, jumps = _stmt(s, loop, flags, located)
        out.extend(new)
        if jumps:
            rest, more = _block(stmts[i + 1:], loop, flags, located)
            if rest:
                guard = ast.If(test=_test(jumps, loop, flags), body=rest, orelse=[], lineno=s.lineno)
                out.append(guard)
            return out, jumps | more
    return out, set()


def _stmt(s, loop, flags, located):
    if isinstance(s, ast.Return):
        if flags["ret"] is None:
            return [s], set()
        value = s.value if s.value is not None else _const(None)
        return [_assign(flags["val"], value, s), _assign(flags["ret"], _const(True), s)], {"ret"}
    if isinstance(s, (ast.Break, ast.Continue)):
        if loop is None:
            raise located.error(s, "break/continue outside a loop", type(s).__name__.lower())
        kind = "brk" if isinstance(s, ast.Break) else "cnt"
        return [_assign(loop.flag(kind), _const(True), s)], {kind}
    if isinstance(s, ast.If):
        body, j1 = _block(s.body, loop, flags, located)
        orelse, j2 = _block(s.orelse, loop, flags, located)
        s.body, s.orelse = body or [ast.Pass()], orelse
        return [s], j1 | j2
    if isinstance(s, (ast.For, ast.While)):
        if s.orelse:
            raise located.error(s, f"a {type(s).__name__.lower()} loop with an else clause",
                                f"{type(s).__name__.lower()}-else")
        inner = _Loop(located.namer)
        body, jumps = _block(s.body, inner, flags, located)
        pre = []
        if inner.cnt:
            body.insert(0, _assign(inner.cnt, _const(False), s))
        stops = [n for n in (inner.brk, flags["ret"] if "ret" in jumps else None) if n]
        if inner.brk:
            pre.append(_assign(inner.brk, _const(False), s))
        if stops:
            test = _name(stops[0]) if len(stops) == 1 else ast.BoolOp(op=ast.Or(), values=[_name(n) for n in stops])
            body.append(ast.If(test=test, body=[ast.Break()], orelse=[], lineno=s.lineno))
        s.body = body
        return pre + [s], jumps & {"ret"}
    if isinstance(s, ast.With):
        body, jumps = _block(s.body, loop, flags, located)
        s.body = body or [ast.Pass()]
        return [s], jumps
    return [s], set()


# -- 2. A-normal form ----------------------------------------------------------------------

_KEEP_WHOLE = (ast.Compare, ast.BoolOp, ast.JoinedStr, ast.Constant)
_UNSUPPORTED = {ast.Yield: "yield", ast.YieldFrom: "yield from",
                ast.Await: "await", ast.NamedExpr: "assignment expression (:=)",
                ast.Starred: "starred expression"}
_UNSUPPORTED_STMT = {ast.Try: "try statement", ast.FunctionDef: "nested def",
                     ast.AsyncFunctionDef: "nested async def", ast.ClassDef: "class definition",
                     ast.Global: "global statement", ast.Nonlocal: "nonlocal statement",
                     ast.Delete: "del statement", ast.Import: "import statement",
                     ast.ImportFrom: "import statement", ast.AsyncFor: "async for",
                     ast.AsyncWith: "async with", ast.Match: "match statement"}


class ANF(Lowering):
    """Flattens statements (see the module docstring). ``resolver`` tells calls of
    known functions from methods of values; ``functions`` are the local functions to
    inline (see :mod:`.lower`), ``scope`` the names of the function's scope."""

    def __init__(self, namer, resolver, located, known_context=lambda with_node: True,
                 functions=None, scope=(), bind=None):
        self.namer, self.resolver, self.located = namer, resolver, located
        self.known_context = known_context
        self.out = None
        self.src = None
        self.setup_lowering(functions, scope, bind)

    def block(self, stmts):
        saved = self.out
        self.out = []
        for s in stmts:
            self.src = getattr(s, "_origin", s)
            self.written = s
            self.stmt(s)
        out, self.out = self.out, saved
        return out

    def emit(self, node):
        if not hasattr(node, "_src"):
            node._src = self.src
        node.lineno = getattr(self.src, "lineno", 0)
        self.out.append(node)

    def temp(self, value, hint="t"):
        name = self.namer.fresh(hint)
        self.emit(_assign(name, value, self.src))
        if isinstance(value, (ast.List, ast.Tuple)):
            self.sequences.add(name)
        elif isinstance(value, ast.Dict):
            self.dicts.add(name)
        return _name(name)

    def fail(self, node, construct):
        article = "an" if construct[0] in "aeiou" else "a"
        raise self.located.error(node, f"the AST transformation cannot handle {article} {construct}", construct)

    # statements
    def stmt(self, s):
        kind = type(s)
        if kind in _UNSUPPORTED_STMT:
            self.fail(s, _UNSUPPORTED_STMT[kind])
        if isinstance(s, ast.Assign):
            self.assign(s.targets, s.value)
        elif isinstance(s, ast.AnnAssign):
            if s.value is not None:
                self.assign([s.target], s.value)
        elif isinstance(s, ast.AugAssign):
            target = s.target
            if isinstance(target, ast.Name):
                self.assign([target], ast.BinOp(left=_name(target.id), op=s.op, right=s.value))
                self.out[-1]._in_place = True  # (an array's memory is written: see aliasing)
            elif isinstance(target, ast.Subscript):
                load = ast.Subscript(value=target.value, slice=target.slice, ctx=ast.Load())
                self.assign([target], ast.BinOp(left=load, op=s.op, right=s.value))
                last = self.out[-1]  # (``lst[k] += v`` changes the array held there in place)
                if isinstance(last, ast.Assign) and isinstance(last.targets[0], ast.Subscript):
                    last._element_in_place = True
            else:
                self.fail(s, "augmented assignment to an attribute")
        elif isinstance(s, ast.Expr):
            if isinstance(s.value, ast.Constant):
                return  # a docstring
            if isinstance(s.value, ast.Call) and (isinstance(s.value.func, ast.Lambda) or isinstance(
                    s.value.func, ast.Name) and s.value.func.id in self.functions):
                self.simple(s.value)  # a local function called for what it does: its lines
            elif isinstance(s.value, ast.Call):
                self._effect_only(s.value)
                node = ast.Expr(value=self.simple(s.value))
                node._fresh = getattr(s, "_fresh", False)  # (an append to a comprehension's list)
                self.emit(node)
            else:
                self.emit(ast.Expr(value=s.value))
        elif isinstance(s, ast.If):
            test = self.temp(s.test, "cond") if not isinstance(s.test, ast.Name) else s.test
            node = ast.If(test=test, body=self.block(s.body) or [ast.Pass()], orelse=self.block(s.orelse))
            self.emit(node)
        elif isinstance(s, ast.While):
            self.emit(ast.While(test=s.test, body=self.block(s.body) or [ast.Pass()], orelse=[]))
        elif isinstance(s, ast.For):
            self.for_(s)
        elif isinstance(s, ast.Return):
            value = self.atom(s.value) if s.value is not None else _const(None)
            self.emit(ast.Return(value=value))
        elif isinstance(s, ast.With):
            if len(s.items) != 1 or not self.known_context(s):
                self.fail(s, "with statement (only tracegrad.no_grad() and tracegrad.grad_of(x) are understood)")
            node = ast.With(items=s.items, body=self.block(s.body) or [ast.Pass()])
            self.emit(node)
        elif isinstance(s, (ast.Pass, ast.Assert, ast.Raise)):
            if not isinstance(s, ast.Pass):
                self.emit(s)
        elif isinstance(s, (ast.Break,)):
            self.emit(s)  # only the loop-final break lower_jumps writes
        else:
            self.fail(s, f"{type(s).__name__} statement")

    def _effect_only(self, call):
        """A call whose result is not used matters only by what it changes: the AST path
        follows ``lst.append(v)`` and calls that change nothing it differentiates
        (``print``, ``len``...); any other (``np.copyto(y, x)``, ``y.fill(0)``,
        ``np.add.at(y, i, x)``, a helper writing into its argument) is refused rather
        than silently taken to change nothing."""
        f = call.func
        if isinstance(f, ast.Attribute) and f.attr == "append" and isinstance(f.value, ast.Name) \
                and len(call.args) == 1 and not call.keywords:
            return
        if self.resolver.callee(call) is CONSTANT_CALLEE:
            return
        self.fail(call, f"call whose result is not used ({ast.unparse(call.func)}(...)): it may change "
                        "its arguments in place, which the AST path does not follow")

    def assign(self, targets, value):
        if len(targets) > 1:
            tmp = self.atom(value)
            for t in targets:
                self.assign([t], tmp)
            return
        target = targets[0]
        if isinstance(target, ast.Name) and isinstance(value, COMPREHENSIONS) and \
                target.id not in _operand_names(value):
            self.comprehension(value, into=target.id)  # (built in the name itself)
            return
        if isinstance(target, ast.Name):
            rhs = self.simple(value)
            if isinstance(rhs, (ast.List, ast.Tuple)) or isinstance(rhs, ast.Name) and rhs.id in self.sequences:
                self.sequences.add(target.id)
            if isinstance(rhs, ast.Dict) or isinstance(rhs, ast.Name) and rhs.id in self.dicts:
                self.dicts.add(target.id)
            if target.id in _operand_names(rhs) and not isinstance(rhs, ast.Name):
                rhs = self.temp(rhs)  # x = x * 2: the old x is an operand of the new one
            self.emit(_assign(target.id, rhs))
        elif isinstance(target, (ast.Tuple, ast.List)):
            if any(isinstance(e, ast.Starred) for e in target.elts):
                self.fail(target, "starred assignment")
            if isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(target.elts):
                parts = [self.atom(v) if not isinstance(v, ast.Constant) else v for v in value.elts]
                parts = [self.temp(p) if isinstance(p, ast.Name) else p for p in parts]
            else:
                seq = self.atom(value)
                if not isinstance(seq, ast.Name):
                    seq = self.temp(seq)
                parts = [ast.Subscript(value=seq, slice=_const(k), ctx=ast.Load())
                         for k in range(len(target.elts))]
            for t, p in zip(target.elts, parts):
                self.assign([t], p)
        elif isinstance(target, ast.Subscript):
            base = target.value
            if not isinstance(base, ast.Name):
                self.fail(target, "assignment into a subscript of an expression")
            rhs = self.atom(value)
            write = ast.Assign(targets=[ast.Subscript(value=_name(base.id), slice=target.slice,
                                                      ctx=ast.Store())], value=rhs)
            write._new_key = base.id in self.dicts  # (a key it may not hold yet: see saves)
            write._fresh = getattr(self.written, "_fresh", False)
            self.emit(write)
        else:
            self.fail(target, f"assignment to {type(target).__name__.lower()}")

    def for_(self, s):
        it = s.iter
        callee = self.resolver.value(it.func)[1] if isinstance(it, ast.Call) else None
        if callee is range:
            if isinstance(s.target, ast.Name):
                body = self.block(s.body)
                self.emit(ast.For(target=s.target, iter=it, body=body or [ast.Pass()], orelse=[]))
                return
        if callee is enumerate and len(it.args) == 1 and isinstance(s.target, ast.Tuple) \
                and len(s.target.elts) == 2 and isinstance(s.target.elts[0], ast.Name):
            seqs = [self._seq(it.args[0])]
            index = s.target.elts[0].id
            targets = [s.target.elts[1]]
        elif callee is reversed and len(it.args) == 1 and not it.keywords:
            seq = self._seq(it.args[0])
            index = self.namer.fresh("k")
            stop = ast.BinOp(left=ast.Call(func=_name("len"), args=[seq], keywords=[]), op=ast.Sub(),
                             right=_const(1))
            rng = ast.Call(func=_name("range"), args=[stop, _const(-1), _const(-1)], keywords=[])
            read = ast.Assign(targets=[s.target], value=ast.Subscript(value=seq, slice=_name(index),
                                                                      ctx=ast.Load()), lineno=s.lineno)
            read._src = s
            self.emit(ast.For(target=_name(index, ast.Store()), iter=rng, body=self.block([read] + s.body),
                              orelse=[]))
            return
        elif callee is zip and not it.keywords and isinstance(s.target, ast.Tuple) \
                and len(s.target.elts) == len(it.args):
            seqs = [self._seq(a) for a in it.args]
            index = self.namer.fresh("k")
            targets = list(s.target.elts)
        else:
            if isinstance(it, ast.Name) and it.id in self.dicts:  # for key in d: its keys
                it = self.dict_view(it, "keys")
            seqs = [self._seq(it)]
            index = self.namer.fresh("k")
            targets = [s.target]
        lens = [ast.Call(func=_name("len"), args=[q], keywords=[]) for q in seqs]
        stop = lens[0] if len(lens) == 1 else ast.Call(func=_name("min"), args=lens, keywords=[])
        rng = ast.Call(func=_name("range"), args=[stop], keywords=[])
        reads = [ast.Assign(targets=[t], value=ast.Subscript(value=q, slice=_name(index), ctx=ast.Load()),
                            lineno=s.lineno) for t, q in zip(targets, seqs)]
        for r in reads:
            r._src = s
        body = self.block(reads + s.body)
        self.emit(ast.For(target=_name(index, ast.Store()), iter=rng, body=body, orelse=[]))

    def _seq(self, expr):
        a = self.atom(expr)
        return a if isinstance(a, ast.Name) else self.temp(a, "seq")

    # expressions
    def atom(self, e):
        """``e`` as a Name or Constant (or a kept non-differentiable expression)."""
        if isinstance(e, ast.Name) and e.id in self.functions:
            return self.local_value(e.id)
        if isinstance(e, (ast.Name, ast.Constant, ast.Lambda)):
            return e
        if isinstance(e, ast.UnaryOp) and isinstance(e.operand, ast.Constant) and \
                isinstance(e.op, (ast.USub, ast.UAdd)) and isinstance(e.operand.value, (int, float)):
            return _const(-e.operand.value if isinstance(e.op, ast.USub) else e.operand.value)
        if isinstance(e, _KEEP_WHOLE) or (isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.Not)):
            return self.temp(e)
        if isinstance(e, ast.Attribute) and self.resolver.value(e)[0]:
            return e  # np.pi, math.e: a module constant
        value = self.simple(e)
        return value if isinstance(value, ast.Name) else self.temp(value)

    def simple(self, e):
        """``e`` with atomic operands: the right-hand side of one ANF statement."""
        if type(e) in _UNSUPPORTED:
            self.fail(e, _UNSUPPORTED[type(e)])
        if isinstance(e, ast.Name) and e.id in self.functions:
            return self.local_value(e.id)
        if isinstance(e, (ast.Name, ast.Constant, ast.Lambda)) or isinstance(e, _KEEP_WHOLE):
            return e
        if isinstance(e, COMPREHENSIONS):
            return self.comprehension(e)
        if isinstance(e, ast.Dict):
            if any(k is None for k in e.keys):
                self.fail(e, "dict unpacking (**) in a dict display")
            return ast.Dict(keys=[self.atom(k) for k in e.keys], values=[self.atom(v) for v in e.values])
        if isinstance(e, ast.Set):
            return ast.Set(elts=[self.atom(x) for x in e.elts])
        if isinstance(e, ast.BinOp):
            return ast.BinOp(left=self.atom(e.left), op=e.op, right=self.atom(e.right))
        if isinstance(e, ast.UnaryOp):
            if isinstance(e.op, ast.Not):
                return e
            if isinstance(e.op, ast.UAdd):
                return self.simple(e.operand)
            return ast.UnaryOp(op=e.op, operand=self.atom(e.operand))
        if isinstance(e, ast.Call):
            func = e.func
            if isinstance(func, ast.Name) and func.id in self.functions:
                return self.inline(self.functions[func.id], e)
            if isinstance(func, ast.Lambda):  # (lambda y: ...)(x)
                return self.inline(self.lambda_function(func), e)
            display = self.dict_call(e) or self.eager(e)
            if display is not None:
                return display
            if isinstance(func, ast.Attribute) and func.attr in ("keys", "values", "items") and \
                    not e.args and not e.keywords and not self.resolver.value(func)[0]:
                return self.dict_view(func.value, func.attr)
            ok, _ = self.resolver.value(func)
            if not ok and isinstance(func, ast.Attribute):
                func = ast.Attribute(value=self.atom(func.value), attr=func.attr, ctx=ast.Load())
            elif not ok and not isinstance(func, ast.Name):
                func = self.atom(func)
            if ok and _constant_call(self.resolver, e):
                return e  # len(x), range(n), x.shape...: kept as written
            if any(k.arg == "out" for k in e.keywords):
                self.fail(e, "out= argument (a write into an existing array)")
            args, kws = self.call_arguments(e)
            return ast.Call(func=func, args=self.as_arrays(e, args), keywords=kws)
        if isinstance(e, ast.Attribute):
            if self.resolver.value(e)[0]:
                return e
            return ast.Attribute(value=self.atom(e.value), attr=e.attr, ctx=ast.Load())
        if isinstance(e, ast.Subscript):
            return ast.Subscript(value=self.atom(e.value), slice=e.slice, ctx=ast.Load())
        if isinstance(e, (ast.Tuple, ast.List)):
            return type(e)(elts=[self.atom(x) for x in e.elts], ctx=ast.Load())
        if isinstance(e, ast.IfExp):
            name = self.namer.fresh("t")
            test = self.atom(e.test)
            body = self.block_expr(name, e.body)
            orelse = self.block_expr(name, e.orelse)
            self.emit(ast.If(test=test, body=body, orelse=orelse))
            return _name(name)
        self.fail(e, f"{type(e).__name__} expression")

    def block_expr(self, name, expr):
        saved = self.out
        self.out = []
        self.emit(_assign(name, self.simple(expr), self.src))
        out, self.out = self.out, saved
        return out


def _constant_call(resolver, call):
    return resolver.callee(call) is CONSTANT_CALLEE


def _operand_names(rhs):
    return {n.id for n in ast.walk(rhs) if isinstance(n, ast.Name)}
