"""CPU fusion of generated adjoints: runs of elementwise statements become one call each.

A generated adjoint is Python with real loops and a stack of saved values, so the tape's
straight-line fuser does not apply. This pass rewrites its source instead, once it is hot
(see :mod:`tracegrad.transform.jit`): each maximal run of consecutive statements that are
all ``name = <expression>`` of operators (``+ - * /``, unary ``-``) and calls of NumPy
ufuncs whose rule is ``scalar=True`` -- in any block, loop bodies included -- becomes one
line ``outs = fused_k(ins)``, where ``fused_k`` (a :class:`.fused_runs.FusedRun`) runs
the statements as one Numba kernel for the types it meets, or as written where the
kernel could not give NumPy's result. Its results are the run's assignments that may be
read after it; the other values never become arrays.

Statements are first moved (never across a branch or a loop) where that lengthens a
run: an elementwise statement is brought above the adjoint's own stack operations
(``y = stack.pop()``, ``stack.append(y)``), plain copies and comments that neither read
nor write its names, so that the backward body of a loop is one run.

A run may then write a result over an argument whose array nothing else can see
(``dy = fused_1(dy, y)`` in a backward loop): see :mod:`.buffer_reuse`.

The rewritten source shows each run as a ``@cpu_fused`` function below the adjoint: the
generated lines that become that kernel.
"""
import ast
import builtins
import re

from ...rules.core import TABLE
from .. import jit
from ..emit import fresh_name
from . import buffer_reuse
from ..tape.fusion import MAX_ARGS

__all__ = ["rewrite", "Run"]

_OPERATORS = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "div"}
_IMPLICIT = {"locals", "vars", "eval", "exec", "globals", "dir"}  # calls that see locals
_EXACT_INT = 2 ** 53   # int constants NumPy and float64 read the same way


def scalar_ufuncs():
    """NumPy ufunc -> its ``scalar=True`` primitive (the rule table's, once)."""
    import numpy
    out = {}
    for prim in TABLE.values():
        if getattr(prim, "scalar", False) and prim.ufunc and prim.name not in jit.NOT_SCALAR \
                and prim.name not in _COMPARISONS:
            u = getattr(numpy, prim.ufunc, None)
            if isinstance(u, numpy.ufunc):
                out.setdefault(u, prim)
    return out


_COMPARISONS = {"eq", "ne", "lt", "le", "gt", "ge"}  # (boolean results: not fused)


class Run:
    """One fused run: its statements, the names it reads from before it (``ins``, in
    order) and the names it hands back (``outs``)."""

    def __init__(self, name, stmts, ins, outs, ops, resolver):
        self.name, self.stmts, self.ins, self.outs, self.ops = name, stmts, ins, outs, ops
        self.resolver = resolver  # (the _Ops that found its operations)
        self.reuse = []           # (input, output) positions it may write over (buffer_reuse)
        self.own_name = None      # the adjoint's name of fused_runs.own, where it calls it

    def definition(self):
        """The run as a function of its inputs returning its outputs (what runs unfused)."""
        ret = self.outs[0] if len(self.outs) == 1 else f"({', '.join(self.outs)},)"
        body = [ast.unparse(s) for s in self.stmts]
        return "\n".join([f"def {self.name}({', '.join(self.ins)}):"] +
                         [f"    {line}" for line in body] + [f"    return {ret}"]) + "\n"


def literal(node):
    """The number a constant stands for (``-0.5`` is a minus applied to 0.5), else None."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        v = literal(node.operand)
        return None if v is None else -v
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return node.value
    return None


class _Ops:
    """The elementwise operations of an expression: ``(primitive, operand nodes)``, or
    None where some part is not one (what cannot be fused)."""

    def __init__(self, env, local_names, ufuncs):
        self.env, self.locals, self.ufuncs = env, local_names, ufuncs

    def count(self, node):
        """The number of operations in ``node``, or None where it is not fusable."""
        if isinstance(node, ast.Name):
            return 0
        if isinstance(node, ast.Constant) or literal(node) is not None:
            v = literal(node)
            ok = type(v) is float or (type(v) is int and abs(v) <= _EXACT_INT)
            return 0 if ok else None
        parts = self.parts(node)
        if parts is None:
            return None
        total = 1
        for p in parts[1]:
            n = self.count(p)
            if n is None:
                return None
            total += n
        return total

    def operands(self, node):
        """The names an expression reads as operands, in evaluation order (not the
        names of the functions it calls)."""
        if isinstance(node, ast.Name):
            return [node.id]
        if literal(node) is not None:
            return []
        return [n for o in self.parts(node)[1] for n in self.operands(o)]

    def parts(self, node):
        """``(primitive, operands)`` of one operation node, or None."""
        if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
            return TABLE[_OPERATORS[type(node.op)]], [node.left, node.right]
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return TABLE["neg"], [node.operand]
        if isinstance(node, ast.Call) and not node.keywords and \
                not any(isinstance(a, ast.Starred) for a in node.args):
            u = self.resolve(node.func)
            prim = self.ufuncs.get(u) if u is not None else None
            if prim is not None and u.nin == len(node.args) and u.nout == 1:
                return prim, list(node.args)
        return None

    def resolve(self, node):
        """The object a global name or attribute chain (``np.tanh``) stands for, where the
        generated code can only mean that one (not a local variable); else None."""
        attrs = []
        while isinstance(node, ast.Attribute):
            attrs.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name) or node.id in self.locals:
            return None
        if node.id in self.env:
            obj = self.env[node.id]
        elif hasattr(builtins, node.id):
            obj = getattr(builtins, node.id)
        else:
            return None
        for a in reversed(attrs):
            obj = getattr(obj, a, None)
        try:
            hash(obj)
        except TypeError:
            return None
        return obj


def _fusable(stmt, ops):
    """The number of operations of a statement ``name = <elementwise expression>``, or 0."""
    if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and
            isinstance(stmt.targets[0], ast.Name)):
        return 0
    n = ops.count(stmt.value)
    return n or 0


def _reads(node):
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Store)}


def _writes(node):
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


def _is_comment(stmt):
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) and \
        isinstance(stmt.value.func, ast.Name) and stmt.value.func.id == "__comment__"


def _passable(stmt, lists):
    """The writes of a statement an elementwise one may move above, or None: one that
    changes nothing but its own names and lists of the generated code (``y = stack.pop()``,
    ``stack.append(y)``, ``a = b``, a comment) -- a call of anything else may change an
    array in place (``add_at(g, ...)``, a user's method), which a moved statement would
    read before the change."""
    if _is_comment(stmt):
        return set()
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
        value, writes = stmt.value, {stmt.targets[0].id}
    elif isinstance(stmt, ast.Expr):
        value, writes = stmt.value, set()
    else:
        return None
    if isinstance(value, ast.Name) and writes:
        return writes
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and \
            isinstance(value.func.value, ast.Name) and value.func.value.id in lists and \
            value.func.attr in ("append", "pop") and not value.keywords and \
            all(isinstance(a, (ast.Name, ast.Constant)) for a in value.args):
        return writes | {value.func.value.id}
    return None


def _lists(fdef):
    """Names bound once, to ``[]``, and never rebound: the generated code's own lists
    (its stack of saved values), which no other code can change."""
    bound = {}
    for n in ast.walk(fdef):
        if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
            bound[n.id] = bound.get(n.id, 0) + 1
    return {n.targets[0].id for n in ast.walk(fdef)
            if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name)
            and isinstance(n.value, ast.List) and not n.value.elts and bound[n.targets[0].id] == 1}


def _schedule(block, ops, lists):
    """Move elementwise statements up past independent passable ones, so that runs grow:
    ``a = f(x); y = stack.pop(); b = g(a)`` -> ``a = ...; b = ...; y = stack.pop()``."""
    out = list(block)
    k = 1
    while k < len(out):
        s = out[k]
        if _fusable(s, ops):
            j = k
            # past the passable statements just above, to the end of a run
            while j > 0 and not _fusable(out[j - 1], ops) and _independent(s, out[j - 1], lists):
                j -= 1
            if j < k and j > 0 and _fusable(out[j - 1], ops):
                out.insert(j, out.pop(k))
        k += 1
    return out


def _independent(s, p, lists):
    """Whether ``s`` (``name = <elementwise expression>``) may run before ``p``."""
    wp = _passable(p, lists)
    if wp is None:
        return False
    ws, rs = _writes(s), _reads(s)
    return not (ws & (wp | _reads(p))) and not (rs & wp)


class _Rewriter:
    def __init__(self, fdef, env):
        self.fdef = fdef
        args = fdef.args
        params = [a.arg for a in args.posonlyargs + args.args + args.kwonlyargs]
        params += [a.arg for a in (args.vararg, args.kwarg) if a is not None]
        self.locals = _writes(fdef) | set(params)
        self.ops = _Ops(env, self.locals, scalar_ufuncs())
        self.used = self.locals | _reads(fdef) | set(env)
        self.lists = _lists(fdef)
        self.runs = []
        self.pending = []   # (block list, start, stop) of each run, applied after all are found

    def fresh(self, base):
        k = len(self.runs)
        while f"{base}{k}" in self.used:
            k += 1
        self.used.add(f"{base}{k}")
        return f"{base}{k}"

    def visit_block(self, block, in_try):
        if not in_try:
            block[:] = _schedule(block, self.ops, self.lists)
        for s in block:
            for field in ("body", "orelse", "finalbody"):
                inner = getattr(s, field, None)
                if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt):
                    self.visit_block(inner, in_try or isinstance(s, (ast.Try, ast.TryStar)))
            for h in getattr(s, "handlers", None) or ():
                self.visit_block(h.body, True)
            if isinstance(s, ast.Match):
                for c in s.cases:
                    self.visit_block(c.body, in_try)
        self.find_runs(block)

    def find_runs(self, block):
        start, ops, last = None, 0, None
        for k, s in enumerate(block + [None]):
            n = _fusable(s, self.ops) if s is not None else 0
            if n:
                if start is None:
                    start, ops = k, 0
                ops, last = ops + n, k
                continue
            if s is not None and _is_comment(s) and start is not None:
                continue  # (a comment inside a run stays above its call)
            if start is not None and ops >= 2:
                self.pending.append((block, start, last + 1))
            start = None

    def apply(self):
        """Describe the runs found in source order (their names count up), then replace
        them, last first within each block (indices stay valid)."""
        found = []
        for block, start, stop in sorted(self.pending, key=lambda p: p[0][p[1]].lineno):
            stmts = [s for s in block[start:stop] if not _is_comment(s)]
            run = self.describe(stmts, block, start, stop)
            if run is not None:
                found.append((block, start, stop, run))
        for block, start, stop, run in sorted(found, key=lambda f: -f[1]):
            notes = [s for s in block[start:stop] if _is_comment(s)]
            call = ast.parse(f"{', '.join(run.outs)} = {run.name}({', '.join(run.ins)})").body[0]
            block[start:stop] = notes + [call]

    def describe(self, stmts, block, start, stop):
        ins, written = [], set()
        for s in stmts:  # (globals and closure variables too: read when the run is)
            for name in self.ops.operands(s.value):
                if name not in written and name not in ins:
                    ins.append(name)
            written.add(s.targets[0].id)
        inside = {id(n) for s in block[start:stop] for n in ast.walk(s)}
        outside = {n.id for n in ast.walk(self.fdef) if isinstance(n, ast.Name) and id(n) not in inside
                   and not isinstance(n.ctx, ast.Store)}
        outs = []
        for s in reversed(stmts):  # the last assignment of each name, in order
            t = s.targets[0].id
            if t not in outs and (t in ins or t in outside):
                outs.append(t)  # (read before it is written in the run, or after it: live)
        outs.reverse()
        if not outs or len(ins) + len(outs) > MAX_ARGS:
            return None
        ops = sum(self.ops.count(s.value) for s in stmts)
        run = Run(self.fresh("fused_"), stmts, ins, outs, ops, self.ops)
        self.runs.append(run)
        return run


def rewrite(source, env):
    """``(fused source, runs)`` for a generated function's ``source`` (one ``def``, its
    comments as ``# text`` lines) whose globals are ``env``; runs is empty where nothing
    fuses (and the source is then the same function)."""
    tree = ast.parse(_comments_as_markers(source))
    fdef = tree.body[0]
    if any(isinstance(n, (ast.Global, ast.Nonlocal)) for n in ast.walk(fdef)) or \
            any(isinstance(n, ast.Name) and n.id in _IMPLICIT for n in ast.walk(fdef)):
        return source, []
    r = _Rewriter(fdef, env)
    r.visit_block(fdef.body, False)
    r.apply()
    if not r.runs:
        return source, []
    own = fresh_name(r.used, "own")
    if buffer_reuse.plan(fdef, r.runs, own):
        for run in r.runs:
            run.own_name = own  # (fused_runs.own, bound under this name)
    return _markers_as_comments(ast.unparse(fdef)) + "\n", r.runs


_COMMENT_LINE = re.compile(r"^(\s*)# (.*)$")
_MARKER_LINE = re.compile(r"^(\s*)__comment__\((.*)\)$")


def _comments_as_markers(source):
    return "\n".join(f"{m.group(1)}__comment__({m.group(2)!r})" if (m := _COMMENT_LINE.match(line))
                     else line for line in source.split("\n"))


def _markers_as_comments(source):
    return "\n".join(f"{m.group(1)}# {ast.literal_eval(m.group(2))}" if (m := _MARKER_LINE.match(line))
                     else line for line in source.split("\n"))
