"""Forward mode: an ANF function becomes one that computes each value's tangent right
after the value (``dh = dt * (1 - h * h)`` after ``h = np.tanh(t)``). Control flow is
kept as it is -- nothing runs backwards, so no stack is needed. Tangents are written
from the rule table as in reverse mode: a jvp's own expression, a diagonal rule's vjp
applied to the tangent, or a linear primitive applied to the tangent itself."""
import ast
import copy

from . import nograd
from .on_tape import keywords_as_positions
from .activity import NONDIFF_ATTRS, active_names, nograd_statements, refuse_lost_derivatives, star_positions
from .anf import _assign, _const, _name
from .kinds import maybe_sequences, sequence_names
from .resolve import CONSTANT, OPERATORS, UNARY, Direct, User, method_primitive
from .reverse import _call, index_expr, positional
from .source import Untransformable
from .templates import rule_expr, same_shape

__all__ = ["Forward"]


class Forward:
    """Builds the tangent-carrying body of one function. ``user_jvp(fn, call)`` gives the
    global name of another user function's forward-mode version."""

    def __init__(self, unit, resolver, located, user_jvp, is_nograd, grad_of_target):
        self.unit, self.resolver, self.located = unit, resolver, located
        self.user_jvp, self.is_nograd, self.grad_of_target = user_jvp, is_nograd, grad_of_target
        self.tnames = {}

    def d(self, name):
        t = self.tnames.get(name)
        if t is None:
            t = self.tnames[name] = self.unit.namer.fresh("d" + name)
        return t

    def run(self, body, params):
        self.nograd = nograd_statements(body, self.is_nograd)
        self.body, self.params = body, set(params)
        self.active = active_names(body, params, self.resolver, self.nograd)
        refuse_lost_derivatives(body, self.active, self.resolver, self.located, self.nograd)
        nograd.refuse_unknown_calls(body, self.nograd, self.active, self.resolver, self.located)
        self.maybe_seq, self.surely_seq = sequence_names(body, params, self.resolver)
        for p in params:
            self.d(p)
        return self.block(body)

    def sequence_binop(self, value, z):
        """The tangent of ``z = a + b`` or ``z = a * b`` where an operand may be a list or a
        tuple (see :mod:`.kinds`): the rule table's where neither is one at run time, else
        :func:`.support.binop_tangent` (concatenation, repetition)."""
        operands = [value.left, value.right]
        tangents = [self.tangent(o) or _const(None) for o in operands]
        seq = _assign(self.d(z), _call("binop_tangent", _const("add" if isinstance(value.op, ast.Add) else "mul"),
                                       _name(z), *[copy.deepcopy(o) for o in operands], *tangents))
        if any(isinstance(o, ast.Name) and o.id in self.active and o.id in self.surely_seq for o in operands):
            return seq
        arr = self.direct(OPERATORS[type(value.op)], operands, value, z)
        arr = _assign(self.d(z), arr if arr is not None else _call("zero_tangent", _name(z)))
        test = _call("any_sequence", *[copy.deepcopy(o) for o in operands])
        return ast.If(test=test, body=[seq], orelse=[arr])

    def tangent(self, atom):
        """The tangent of an operand (None for constants and inactive names)."""
        if isinstance(atom, ast.Name) and atom.id in self.active:
            return _name(self.d(atom.id))
        return None

    def block(self, stmts):
        out = []
        for s in stmts:
            out += self.stmt(s)
        return out

    def stmt(self, s):
        self.current = s
        if isinstance(s, ast.Assign):
            return self.assign(s)
        if isinstance(s, ast.Expr):
            return self.expr(s)
        if isinstance(s, ast.Return):
            t = self.tangent(s.value) or _call("zero_tangent", copy.deepcopy(s.value))
            return [ast.Return(value=ast.Tuple(elts=[s.value, t], ctx=ast.Load()))]
        if isinstance(s, (ast.If, ast.While)):
            node = copy.copy(s)
            node.body = self.block(s.body) or [ast.Pass()]
            node.orelse = self.block(s.orelse)
            return [node]
        if isinstance(s, ast.For):
            node = copy.copy(s)
            body = self.block(s.body)
            if isinstance(s.target, ast.Name) and s.target.id in self.active:
                # (every loop is over range() after A-normal form: its index, taken to be
                # active where it flows into a list that is, has a zero tangent)
                k = s.target.id
                body = [ast.Assign(targets=[_name(self.d(k), ast.Store())],
                                   value=_call("zero_tangent", _name(k)))] + body
            node.body = body or [ast.Pass()]
            return [node]
        if isinstance(s, ast.With):
            if self.grad_of_target(s) is not None:
                return []
            node = copy.copy(s)
            node.body = self.block(s.body) or [ast.Pass()]
            return [node]
        return [s]

    def _no_grad_check(self, s):
        """The run-time check of a no_grad statement's operands (see :mod:`.nograd`)."""
        if id(s) not in self.nograd:
            return []
        names = nograd.runtime_operands(s, self.active)
        return [nograd.check_statement(s, names, self.located, self.unit.bind)] if names else []

    def assign(self, s):
        target = s.targets[0]
        check = self._no_grad_check(s)
        if isinstance(target, ast.Subscript):
            x = target.value.id
            if x not in self.active:
                return check + [s]
            if id(s) in self.nograd:  # an array written in place under no_grad() keeps its tangent
                return check + [s]
            tv = self.tangent(s.value)
            if tv is None and isinstance(target.slice, ast.Slice):  # (constants written into a
                tv = _call("zero_tangent", copy.deepcopy(s.value))   # list's slice: their zeros)
            update = _call("set_at", _name(self.d(x)), index_expr(target.slice), tv or _const(None))
            return [s, _assign(self.d(x), update)]
        z = target.id
        if z not in self.active:
            return check + [s]
        if id(s) in self.nograd:
            if getattr(s, "_in_place", False):  # y += v: an array keeps its tangent, a number none
                fn = _name(self.unit.bind(nograd.kept_tangent, "no_grad_kept"))
                kept = ast.Call(func=fn, args=[_name(self.d(z)), _name(z), nograd.where(self.located, s)],
                                keywords=[])
                return check + [s, _assign(self.d(z), kept)]
            return check + [s, _assign(self.d(z), _call("zero_tangent", _name(z)))]
        value = s.value
        if isinstance(value, ast.BinOp) and maybe_sequences(value, self.active, self.maybe_seq):
            return [s, self.sequence_binop(value, z)]  # (a statement: an If, or an assignment)
        expr = self.rhs_tangent(value, z)
        if isinstance(expr, list):  # the statement computes value and tangent itself
            return expr
        if expr is None:
            expr = _call("zero_tangent", _name(z))
        return [s, _assign(self.d(z), expr)]

    def rhs_tangent(self, value, z):
        if isinstance(value, ast.Name):
            return self.tangent(value)
        if isinstance(value, ast.BinOp) and type(value.op) in OPERATORS:
            return self.direct(OPERATORS[type(value.op)], [value.left, value.right], value, z)
        if isinstance(value, ast.UnaryOp) and type(value.op) in UNARY:
            return self.direct(UNARY[type(value.op)], [value.operand], value, z)
        if isinstance(value, ast.Subscript):
            t = self.tangent(value.value)
            return None if t is None else ast.Subscript(value=t, slice=copy.deepcopy(value.slice), ctx=ast.Load())
        if isinstance(value, (ast.Tuple, ast.List)):
            elts = [self.tangent(e) or _call("zero_tangent", copy.deepcopy(e)) for e in value.elts]
            return type(value)(elts=elts, ctx=ast.Load())
        if isinstance(value, ast.Dict):
            vals = [self.tangent(e) or _call("zero_tangent", copy.deepcopy(e)) for e in value.values]
            return ast.Dict(keys=[copy.deepcopy(k) for k in value.keys], values=vals)
        if isinstance(value, ast.Attribute):
            if value.attr in NONDIFF_ATTRS or self.tangent(value.value) is None:
                return None
            return self.generic(_call("attribute", _const(value.attr)), [value.value], [], z)
        if isinstance(value, ast.Call):
            callee = self.resolver.callee(value)
            if callee is CONSTANT:
                return None
            if isinstance(value.func, ast.Attribute) and callee is None:
                recv = value.func.value
                if value.func.attr == "pop" and not value.args and isinstance(recv, ast.Name):
                    t = self.tangent(recv)  # the list's tangents shrink with it
                    return None if t is None else ast.Call(
                        func=ast.Attribute(value=t, attr="pop", ctx=ast.Load()), args=[], keywords=[])
                prim = method_primitive(value)
                if prim is not None:
                    return self.direct(prim, [value.func.value], value, z)
                fn = _call("method", _const(value.func.attr))
                return self.generic(fn, [value.func.value] + value.args, value.keywords, z)
            if isinstance(callee, Direct):
                return self.as_result(self.direct(callee.prim.name, value.args, value, z), z)
            if isinstance(callee, User):
                return self.user(callee.fn, value, z)
            return self.generic(value.func, value.args, value.keywords, z)
        return None

    def direct(self, pname, operands, value, z):
        from ...rules import TABLE
        prim = TABLE[pname]
        same = same_shape(prim, operands)
        terms = []
        for i, o in enumerate(operands):
            t = self.tangent(o)
            if t is None or not prim.is_diff_arg(i):
                continue
            fn = prim.jvps[i] if i < len(prim.jvps) else None
            if fn is None and prim.diagonal:
                fn = prim.vjps[i]
            if fn is None and prim.linear and len(operands) == 1:
                applied = copy.deepcopy(value)  # a linear function of its one operand
                for n in ast.walk(applied):
                    if isinstance(n, ast.Name) and n.id == o.id and isinstance(n.ctx, ast.Load):
                        n.id = t.id
                terms.append(applied)
                continue
            if fn is None:
                return None
            terms.append(rule_expr(fn, t, _name(z), operands, self.unit.bind, same))
        if not terms:
            return None
        total = terms[0]
        for term in terms[1:]:
            total = ast.BinOp(left=total, op=ast.Add(), right=term)
        return total

    def as_result(self, expr, z):
        """A NumPy function's tangent as the NumPy scalar or array its result ``z`` is: a
        rule's tangent of Python-number operands (``np.subtract(b, 0.0)`` with ``b`` a
        float: ``db``; ``where(b > y, db, 0.0)``) is a Python number, on which ``dz.sum()``
        would fail. A tangent computed with ``z`` itself is NumPy's already (``dt * (1 - h *
        h)``: kept as it reads)."""
        if expr is None or _uses_value(expr, z):
            return expr
        from ...rules.broadcast import expand_to
        return ast.Call(func=_name(self.unit.bind(expand_to, "expand_to")), args=[expr, _name(z)], keywords=[])

    def _tangents(self, args):
        """The tangents of a call's positional arguments (``*seq``: one per item)."""
        out = []
        for a in args:
            if isinstance(a, ast.Starred):
                t = self.tangent(a.value)
                if t is None:
                    n = ast.Call(func=_name("len"), args=[copy.deepcopy(a.value)], keywords=[])
                    t = ast.BinOp(left=ast.Tuple(elts=[_const(None)], ctx=ast.Load()), op=ast.Mult(), right=n)
                out.append(ast.Starred(value=t, ctx=ast.Load()))
            else:
                out.append(self.tangent(a) or _const(None))
        return out

    def _refuse_active_keywords(self, keywords, what):
        if any(isinstance(k.value, ast.Name) and k.value.id in self.active for k in keywords):
            raise self.located.error(self.current, f"a value being differentiated passed by keyword to {what}",
                                     "keyword argument")

    def generic(self, func, args, keywords, z):
        func, args, keywords = keywords_as_positions(func, args, keywords, self.active)
        self._refuse_active_keywords(keywords, ast.unparse(func))
        tangents = ast.Tuple(elts=self._tangents(args), ctx=ast.Load())
        call = _call("call_jvp", tangents, copy.deepcopy(func), *args,
                     keywords=[copy.deepcopy(k) for k in keywords])
        lhs = ast.Tuple(elts=[_name(z, ast.Store()), _name(self.d(z), ast.Store())], ctx=ast.Store())
        out = ast.Assign(targets=[lhs], value=call)
        return [out, _assign(self.d(z), ast.IfExp(test=ast.Compare(left=_name(self.d(z)), ops=[ast.IsNot()],
                                                                      comparators=[_const(None)]),
                                                    body=_name(self.d(z)), orelse=_call("zero_tangent", _name(z))))]

    def user(self, fn, call, z):
        code = getattr(fn, "__code__", None)
        if code is not None and code.co_flags & 0x04:  # *args: traced on a tape instead
            return self.generic(call.func, call.args, call.keywords, z)
        lhs = ast.Tuple(elts=[_name(z, ast.Store()), _name(self.d(z), ast.Store())], ctx=ast.Store())
        spread = any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords)
        if not spread:
            args, keywords = positional(fn, call, self.active, self.located, self.current)
        if spread or len(args) < code.co_argcount:  # matched to the parameters when it runs
            self._refuse_active_keywords(call.keywords, fn.__name__)
            positions = star_positions(self.body, call, self.active, self.params) if spread else None
            if positions is not None:  # (only the arguments that may carry a derivative)
                args = ast.Tuple(elts=[copy.deepcopy(a) for a in call.args], ctx=ast.Load())
                tangents = ast.Tuple(elts=self._tangents(call.args), ctx=ast.Load())
                return [ast.Assign(targets=[lhs], value=_call("jvp_at", copy.deepcopy(call.func), positions, args,
                                                              tangents, keywords=copy.deepcopy(call.keywords)))]
            try:
                name = self.user_jvp(fn, call)
            except Untransformable:
                return self.generic(call.func, call.args, call.keywords, z)
            args = ast.Tuple(elts=[copy.deepcopy(a) for a in call.args], ctx=ast.Load())
            tangents = ast.Tuple(elts=self._tangents(call.args), ctx=ast.Load())
            return [ast.Assign(targets=[lhs], value=_call("star_jvp", _name(name), copy.deepcopy(call.func), args,
                                                          tangents, keywords=copy.deepcopy(call.keywords)))]
        try:
            name = self.user_jvp(fn, call)
        except Untransformable:  # (differentiated on a tape)
            return self.generic(call.func, call.args, call.keywords, z)
        tangents = [self.tangent(a) or _call("zero_tangent", copy.deepcopy(a)) for a in args]
        return [ast.Assign(targets=[lhs], value=_call(name, *args, *tangents, keywords=keywords))]

    def expr(self, s):
        call = s.value
        if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and \
                call.func.attr == "append" and isinstance(call.func.value, ast.Name) and \
                call.func.value.id in self.active and len(call.args) == 1:
            t = self.tangent(call.args[0]) or _call("zero_tangent", copy.deepcopy(call.args[0]))
            push = ast.Expr(value=_call(ast.Attribute(value=_name(self.d(call.func.value.id)), attr="append",
                                                      ctx=ast.Load()), t))
            return [s, push]
        return self._no_grad_check(s) + [s]


def _uses_value(expr, z):
    """Whether ``expr`` computes with the value named ``z`` (not just an attribute of it,
    such as its shape)."""
    attrs = {id(n.value) for n in ast.walk(expr) if isinstance(n, ast.Attribute)}
    return any(isinstance(n, ast.Name) and n.id == z and id(n) not in attrs for n in ast.walk(expr))
