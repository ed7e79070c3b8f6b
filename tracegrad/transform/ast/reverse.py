"""Reverse mode: an ANF function becomes its forward pass followed by its adjoint.

The adjoint visits the statements backwards. Each assignment ``z = op(x, y)`` adds its
operands' gradient contributions (``dx = dx + ...``, written from the rule table, see
:mod:`.templates`) and then ends ``dz`` (the value of ``z`` before the assignment is
another value). Control flow is replayed backwards from what the forward pass recorded,
as Tangent does: an ``if`` keeps its condition, a loop its iteration count (or, for
``range`` loops, runs ``reversed(range(...))``), and a variable whose old value is
overwritten while the adjoint still needs it is pushed on a stack before the
assignment and popped after the assignment's adjoint.

Gradient variables are tracked statically: *absent* (no gradient: nothing emitted),
*defined* (an array), or *unknown* (``None`` or an array, after a branch or a loop).
"""
import ast
import copy

from . import nograd
from .on_tape import keywords_as_positions
from .activity import NONDIFF_ATTRS, active_names, nograd_statements, refuse_lost_derivatives, star_positions
from .anf import _assign, _const, _name, index_expr
from .kinds import maybe_sequences, sequence_names
from .resolve import CONSTANT, OPERATORS, UNARY, Direct, User, method_primitive
from .signature import ALL
from .source import Untransformable
from .templates import rule_expr, same_shape

__all__ = ["Reverse", "comment", "index_expr", "positional"]

DEF, UNK = "def", "unk"
_REDUCTIONS = {"sum", "mean"}


def comment(text):
    """A marker statement that the printer turns into ``# text``."""
    return ast.Expr(value=ast.Call(func=_name("__comment__"), args=[_const(text)], keywords=[]))


HELPERS = {"add", "part", "add_at", "take_at", "zero_at", "set_at", "copy_at", "pop_grad", "push_grad",
           "call_vjp", "call_vjp_at", "call_jvp", "method", "attribute", "GradList", "zero_tangent",
           "scalar_output",
           "check_unaliased", "unstar", "per_item", "star_jvp", "old_entry", "restore_entry", "vjp_of",
           "jvp_at", "any_sequence", "binop_grads", "binop_tangent", "by_keyword", "read_only_call"}


def _call(func, *args, keywords=()):
    if isinstance(func, str):
        func = _name(func)
        func._helper = func.id in HELPERS
    return ast.Call(func=func, args=list(args), keywords=list(keywords))


def _is_pop(value):
    return isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and \
        value.func.attr == "pop" and not value.args and isinstance(value.func.value, ast.Name)


def positional(fn, call, active, located, stmt):
    """``(args, keywords)`` of a call of user function ``fn`` with the keyword arguments
    that fill its parameters in order moved to their positions; an active value left as
    a keyword is refused."""
    import inspect
    args, kws = list(call.args), {k.arg: k.value for k in call.keywords if k.arg is not None}
    spread = [k for k in call.keywords if k.arg is None]  # **mapping: passed on as it is
    if any(isinstance(k.value, ast.Name) and k.value.id in active for k in spread):
        raise located.error(stmt, f"a value being differentiated passed to {fn.__name__} by ** "
                                  "(keyword unpacking)", "keyword argument")
    try:
        params = [p.name for p in inspect.signature(fn).parameters.values()]
    except (TypeError, ValueError):
        params = []
    for name in params[len(args):]:
        if name not in kws:
            break
        args.append(kws.pop(name))
    if any(isinstance(v, ast.Name) and v.id in active for v in kws.values()):
        raise located.error(stmt, f"a value being differentiated passed by keyword to {fn.__name__} "
                                  "after a parameter left to its default", "keyword argument")
    return args, [ast.keyword(arg=k, value=copy.deepcopy(v)) for k, v in kws.items()] + \
        [copy.deepcopy(k) for k in spread]


def _stored(stmts):
    out = set()
    for s in stmts:
        for n in ast.walk(s):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                out.add(n.id)
    return out


class _Site:
    """An assignment whose old value may have to be saved (decided once the adjoint is
    known)."""

    def __init__(self, node, name, in_loop):
        self.node, self.name, self.in_loop = node, name, in_loop


class Reverse:
    """Builds the forward-and-adjoint body of one function (see the module docstring).

    ``unit`` is the generated function under construction (names, globals);
    ``user_adjoint(fn, positions)`` gives the global name of another user function's
    adjoint."""

    def __init__(self, unit, resolver, located, user_adjoint, is_nograd, grad_of_target):
        self.unit, self.resolver, self.located = unit, resolver, located
        self.user_adjoint = user_adjoint
        self.is_nograd, self.grad_of_target = is_nograd, grad_of_target
        self.gnames = {}
        self.sites = {}        # id(node) -> _Site for Name and Subscript assignments
        self.loop_sites = {}   # id(For/While node) -> info for the iteration count / target
        self.nograd = set()

    # -- names ----------------------------------------------------------------------------
    def d(self, name):
        g = self.gnames.get(name)
        if g is None:
            g = self.gnames[name] = self.unit.namer.fresh("d" + name)
        return g

    # -- entry ----------------------------------------------------------------------------
    def run(self, body, params, wrt, seed, has_aux=False):
        """``(forward, adjoint, grads)``: the statements of both passes and the gradient
        expressions of ``wrt``."""
        self.nograd = nograd_statements(body, self.is_nograd)
        self.body = body
        self.active = active_names(body, wrt, self.resolver, self.nograd)
        self.maybe_seq, self.surely_seq = sequence_names(body, params, self.resolver)
        refuse_lost_derivatives(body, self.active, self.resolver, self.located, self.nograd)
        nograd.refuse_unknown_calls(body, self.nograd, self.active, self.resolver, self.located)
        self.params = set(params)
        self._collect_sites(body, in_loop=False)
        self.reassigned = set()
        seen = set()
        for site in self.sites.values():
            if site.in_loop or site.name in seen or site.name in self.params:
                self.reassigned.add(site.name)
            seen.add(site.name)
        ret = body[-1] if body and isinstance(body[-1], ast.Return) else None
        state = {}
        adjoint = []
        src = getattr(ret, "_src", None)
        if ret is not None and isinstance(ret.value, ast.Name) and ret.value.id in self.active:
            adjoint.append(comment(f"grad of: {self.located.text(src)}"))
            seed_expr = _call("GradList", ast.List(elts=[seed, _const(None)], ctx=ast.Load())) \
                if has_aux else seed
            self._accumulate(adjoint, state, ret.value.id, seed_expr)
        stmts = body[:-1] if ret is not None else body
        adjoint += self.block(stmts, state, last_src=src)
        grads = [_name(self.gnames[w]) if w in self.gnames and state.get(self.gnames[w]) else _const(None)
                 for w in wrt]
        forward = [s for s in body if s is not ret]
        return forward, adjoint, grads

    # -- sites ----------------------------------------------------------------------------
    def _collect_sites(self, stmts, in_loop):
        for s in stmts:
            if isinstance(s, ast.Assign):
                t = s.targets[0]
                if isinstance(t, ast.Name):
                    self.sites[id(s)] = _Site(s, t.id, in_loop)
                elif isinstance(t, ast.Subscript):
                    self.sites[id(s)] = _Site(s, t.value.id, in_loop)
            elif isinstance(s, (ast.For, ast.While)):
                self._collect_sites(s.body, True)
            elif isinstance(s, (ast.If, ast.With)):
                self._collect_sites(s.body, in_loop)
                self._collect_sites(getattr(s, "orelse", []), in_loop)

    # -- accumulation ---------------------------------------------------------------------
    def _accumulate(self, out, state, name, expr, maybe_none=False):
        g = self.d(name)
        st = state.get(g)
        if st is None:
            value = expr
            state[g] = UNK if maybe_none else DEF
        elif st == DEF and not maybe_none:
            value = ast.BinOp(left=_name(g), op=ast.Add(), right=expr)
        else:
            value = _call("add", _name(g), expr)
            state[g] = UNK if (st == UNK and maybe_none) else DEF
        out.append(_assign(g, value))

    def _end(self, out, state, name):
        """The gradient of ``name``'s old value starts empty."""
        g = self.gnames.get(name)
        if g is not None and state.get(g):
            if name in self.reassigned:  # (else nothing reads it again)
                out.append(_assign(g, _const(None)))
            state.pop(g)

    # -- statements -----------------------------------------------------------------------
    def block(self, stmts, state, last_src=None):
        out = []
        for s in reversed(stmts):
            code = self.stmt(s, state)
            if not code:
                continue
            src = getattr(s, "_src", None)
            if src is not None and src is not last_src and not isinstance(s, (ast.If, ast.For, ast.While, ast.With)):
                out.append(comment(f"grad of: {self.located.text(src)}"))
                last_src = src
            elif isinstance(s, (ast.If, ast.For, ast.While, ast.With)):
                last_src = None
            out.extend(code)
        return out

    def stmt(self, s, state):
        self.current = s
        if isinstance(s, ast.Assign):
            return self.assign(s, state)
        if isinstance(s, ast.Expr):
            return self.expr(s, state)
        if isinstance(s, ast.If):
            return self.if_(s, state)
        if isinstance(s, (ast.For, ast.While)):
            return self.loop(s, state)
        if isinstance(s, ast.With):
            return self.with_(s, state)
        return []

    def _no_grad_check(self, s):
        """The run-time check of a no_grad statement's operands (see :mod:`.nograd`)."""
        if id(s) not in self.nograd:
            return []
        names = nograd.runtime_operands(s, self.active)
        return [nograd.check_statement(s, names, self.located, self.unit.bind)] if names else []

    def _kept_under_no_grad(self, s, z, state):
        """``y += v`` under no_grad(): ``dy`` goes on to the old ``y`` where it is an array
        (changed in place, it keeps its derivative), else it ends (see :mod:`.nograd`)."""
        out = [self._restore_marker(s)]
        g = self.gnames.get(z)
        if g is not None and state.get(g):
            fn = _name(self.unit.bind(nograd.kept_gradient, "no_grad_kept"))
            out.append(_assign(g, ast.Call(func=fn, args=[_name(g), _name(z), nograd.where(self.located, s)],
                                           keywords=[])))
            state[g] = UNK
        return out

    def assign(self, s, state):
        target = s.targets[0]
        out = self._no_grad_check(s)
        if isinstance(target, ast.Subscript):
            x = target.value.id
            if x in self.active and id(s) not in self.nograd:
                gx = self.gnames.get(x)
                if gx is not None and state.get(gx):
                    v = s.value
                    if isinstance(v, ast.Name) and v.id in self.active:
                        part = _call("take_at", _name(gx), index_expr(target.slice), _name(v.id))
                        self._accumulate(out, state, v.id, part, maybe_none=True)
                    out.append(_assign(gx, _call("zero_at", _name(gx), index_expr(target.slice))))
            out.append(self._restore_marker(s))
            return out
        z = target.id
        if id(s) in self.nograd and getattr(s, "_in_place", False) and z in self.active:
            return out + self._kept_under_no_grad(s, z, state)
        gz = self.gnames.get(z)
        live = z in self.active and id(s) not in self.nograd and gz is not None and state.get(gz)
        if live:
            contrib = []
            inner = dict(state)
            self.contributions(s.value, z, gz, contrib, inner)
            if state.get(gz) == UNK and contrib:
                # a gradient that may be None: its contributions only where it is not
                pre = self._materialize(contrib, state)
                out += pre
                out.append(ast.If(test=ast.Compare(left=_name(gz), ops=[ast.IsNot()], comparators=[_const(None)]),
                                  body=contrib, orelse=[]))
                for k, v in inner.items():
                    if k != gz and state.get(k) != v:
                        state[k] = UNK
            else:
                out += contrib
                state.update(inner)
        if _is_pop(s.value):  # the popped value goes back, for the adjoints before it
            out.append(ast.Expr(value=_call(ast.Attribute(value=copy.deepcopy(s.value.func.value), attr="append",
                                                          ctx=ast.Load()), _name(z))))
        if z in self.active or gz is not None:
            self._end(out, state, z)
        out.append(self._restore_marker(s))
        return out

    def _restore_marker(self, s):
        m = ast.Expr(value=_call("__restore__", _const(id(s))))
        return m

    def _materialize(self, code, state):
        """``dv = None`` before code that may or may not assign ``dv``, for each gradient
        it assigns that has no value yet (so that ``dv`` exists on every path)."""
        pre = []
        for g in sorted(_stored(code)):
            if g in self.gnames.values() and not state.get(g):
                pre.append(_assign(g, _const(None)))
                state[g] = UNK
        return pre

    def contributions(self, value, z, gz, out, state):
        dz = _name(gz)
        if isinstance(value, ast.Name):
            if value.id in self.active:
                self._accumulate(out, state, value.id, dz)
            return
        if isinstance(value, ast.BinOp) and type(value.op) in OPERATORS:
            if maybe_sequences(value, self.active, self.maybe_seq):
                return self.sequence_binop(value, z, dz, out, state)
            return self.direct(OPERATORS[type(value.op)], [value.left, value.right], z, dz, out, state)
        if isinstance(value, ast.UnaryOp) and type(value.op) in UNARY:
            return self.direct(UNARY[type(value.op)], [value.operand], z, dz, out, state)
        if isinstance(value, ast.Subscript):
            base = value.value
            if isinstance(base, ast.Name) and base.id in self.active:
                gb = self.d(base.id)
                prev = _name(gb) if state.get(gb) else _const(None)
                out.append(_assign(gb, _call("add_at", prev, _name(base.id), index_expr(value.slice), dz)))
                state[gb] = DEF
            return
        if isinstance(value, (ast.Tuple, ast.List)):
            for k, e in enumerate(value.elts):
                if isinstance(e, ast.Name) and e.id in self.active:
                    self._accumulate(out, state, e.id, _call("part", dz, _const(k)), maybe_none=True)
            return
        if isinstance(value, ast.Dict):
            for k, e in zip(value.keys, value.values):
                if isinstance(e, ast.Name) and e.id in self.active:
                    self._accumulate(out, state, e.id, _call("part", dz, copy.deepcopy(k)), maybe_none=True)
            return
        if isinstance(value, ast.Attribute):
            if value.attr in NONDIFF_ATTRS or not (isinstance(value.value, ast.Name) and value.value.id in self.active):
                return
            fn = _call("attribute", _const(value.attr))
            return self.generic(fn, [value.value], [], dz, out, state)
        if isinstance(value, ast.Call):
            callee = self.resolver.callee(value)
            if callee is CONSTANT:
                return
            if isinstance(value.func, ast.Attribute) and callee is None:
                recv = value.func.value
                if value.func.attr == "pop" and not value.args and isinstance(recv, ast.Name):
                    if recv.id in self.active:
                        g = self.d(recv.id)
                        prev = _name(g) if state.get(g) else _const(None)
                        out.append(_assign(g, _call("push_grad", prev, dz, _name(recv.id))))
                        state[g] = DEF
                    return
                prim = method_primitive(value)
                if prim is not None:
                    return self.direct(prim, [recv], z, dz, out, state)
                fn = _call("method", _const(value.func.attr))
                return self.generic(fn, [recv] + value.args, value.keywords, dz, out, state)
            if isinstance(callee, Direct):
                return self.direct(callee.prim.name, value.args, z, dz, out, state)
            if isinstance(callee, User):
                return self.user(callee.fn, value, dz, out, state)
            return self.generic(value.func, value.args, value.keywords, dz, out, state)

    def sequence_binop(self, value, z, dz, out, state):
        """``z = a + b`` or ``z = a * b`` where an operand may be a list or a tuple: the
        rule table's array expressions where neither is one at run time, else
        :func:`.support.binop_grads` (concatenation, repetition, a list in array
        arithmetic); only the latter where an operand always is one."""
        op = "add" if isinstance(value.op, ast.Add) else "mul"
        operands = [value.left, value.right]
        active = [i for i, o in enumerate(operands) if isinstance(o, ast.Name) and o.id in self.active]
        seq_state = dict(state)
        targets, parts = [], []
        for i, o in enumerate(operands):
            if i not in active:
                targets.append("_")
            elif not seq_state.get(self.d(o.id)) and self.d(o.id) not in targets:
                targets.append(self.d(o.id))  # (its first gradient: assigned directly)
            else:
                targets.append(self.unit.namer.fresh(f"d{o.id}_part"))
                parts.append(i)
        lhs = ast.Tuple(elts=[_name(t, ast.Store()) for t in targets], ctx=ast.Store())
        seq = [ast.Assign(targets=[lhs], value=_call("binop_grads", _const(op), dz,
                                                      *[copy.deepcopy(o) for o in operands]))]
        for t in targets:
            if t in self.gnames.values():
                seq_state[t] = DEF
        for i in parts:
            self._accumulate(seq, seq_state, operands[i].id, _name(targets[i]))
        if any(operands[i].id in self.surely_seq for i in active):
            out.extend(seq)
            state.update(seq_state)
            return
        arr_state = dict(state)
        arr = []
        self.direct(OPERATORS[type(value.op)], operands, z, dz, arr, arr_state)
        for k in sorted(set(seq_state) | set(arr_state)):
            a, b = seq_state.get(k), arr_state.get(k)
            if a == b:
                if a is not None:
                    state[k] = a
                continue
            if not state.get(k):  # (assigned on one path only: None on the other)
                out.append(_assign(k, _const(None)))
            state[k] = UNK
        test = _call("any_sequence", *[copy.deepcopy(o) for o in operands])
        out.append(ast.If(test=test, body=seq, orelse=arr or [ast.Pass()]))

    def direct(self, pname, operands, z, dz, out, state):
        from ...rules import TABLE
        prim = TABLE[pname]
        same = same_shape(prim, operands)
        for i, o in enumerate(operands):
            if not (isinstance(o, ast.Name) and o.id in self.active):
                continue
            fn = prim.vjps[i] if i < len(prim.vjps) else None
            if fn is None:
                if prim.vjp_all_fn is not None:
                    return self.generic(self.unit.bind(prim, prim.name), operands, [], dz, out, state)
                continue
            expr = rule_expr(fn, dz, _name(z), operands, self.unit.bind, same)
            self._accumulate(out, state, o.id, expr)

    def generic(self, func, args, keywords, dz, out, state):
        func, args, keywords = keywords_as_positions(func, args, keywords, self.active)
        if any(isinstance(k.value, ast.Name) and k.value.id in self.active for k in keywords):
            raise self.located.error(self.current, "a value being differentiated passed by keyword to "
                                                   f"{ast.unparse(func)}; pass it positionally",
                                     "keyword argument")
        keywords = [copy.deepcopy(k) for k in keywords]
        operands = [copy.deepcopy(a) for a in args]
        active = [i for i, a in enumerate(args) if isinstance(a, ast.Name) and a.id in self.active]
        if active and len(active) < len(args) and not any(isinstance(a, ast.Starred) for a in args):
            # only these arguments' gradients (a constant argument may have none, as an order)
            at = ast.Tuple(elts=[_const(i) for i in active], ctx=ast.Load())
            call = _call("call_vjp_at", at, dz, copy.deepcopy(func), *operands, keywords=keywords)
        else:
            call = _call("call_vjp", dz, copy.deepcopy(func), *operands, keywords=keywords)
        self._spread_parts(call, args, out, state)

    def _spread_parts(self, call, args, out, state):
        """``d<a>_part, ... = call`` (a call giving one gradient per positional argument,
        ``*seq`` arguments split back out of them) and each part added to its argument's
        gradient."""
        names = [_unstarred(a) for a in args]
        active = [i for i, a in enumerate(names) if isinstance(a, ast.Name) and a.id in self.active]
        if not active:
            return
        if any(isinstance(a, ast.Starred) for a in args):
            sizes = [ast.Call(func=_name("len"), args=[copy.deepcopy(a.value)], keywords=[])
                     if isinstance(a, ast.Starred) else _const(None) for a in args]
            call = _call("unstar", call, ast.Tuple(elts=sizes, ctx=ast.Load()))
        targets = [self.unit.namer.fresh(f"d{names[i].id}_part") if i in active else "_" for i in range(len(args))]
        lhs = ast.Tuple(elts=[_name(t, ast.Store()) for t in targets], ctx=ast.Store())
        out.append(ast.Assign(targets=[lhs], value=call))
        for i in active:
            self._accumulate(out, state, names[i].id, _name(targets[i]), maybe_none=True)

    def user(self, fn, call, dz, out, state):
        if any(isinstance(a, ast.Starred) for a in call.args):  # (the adjoint of every argument)
            args, keywords = list(call.args), list(call.keywords)
            if any(isinstance(k.value, ast.Name) and k.value.id in self.active for k in keywords):
                raise self.located.error(self.current, "a value being differentiated passed by keyword to "
                                                       f"{fn.__name__} in a call with *args", "keyword argument")
            if not any(isinstance(_unstarred(a), ast.Name) and _unstarred(a).id in self.active for a in args):
                return
            positions = star_positions(self.body, call, self.active, self.params)
            if positions is not None:  # (only the arguments that may carry a derivative)
                if not positions.elts:
                    return
                c = _call(_call("vjp_of", copy.deepcopy(call.func), positions), dz,
                          *[copy.deepcopy(a) for a in args], keywords=[copy.deepcopy(k) for k in keywords])
                return self._spread_parts(c, args, out, state)
            try:
                name = self.user_adjoint(fn, ALL, call)
            except Untransformable as e:
                return self._on_tape(e, call, dz, out, state)
            c = _call(name, dz, *[copy.deepcopy(a) for a in args], keywords=[copy.deepcopy(k) for k in keywords])
            return self._spread_parts(c, args, out, state)
        args, keywords = positional(fn, call, self.active, self.located, self.current)
        active = [i for i, a in enumerate(args) if isinstance(a, ast.Name) and a.id in self.active]
        if not active:
            return
        try:
            name = self.user_adjoint(fn, tuple(active), call)
        except Untransformable as e:
            return self._on_tape(e, call, dz, out, state)
        targets = [self.unit.namer.fresh(f"d{args[i].id}_part") for i in active]
        lhs = ast.Tuple(elts=[_name(t, ast.Store()) for t in targets], ctx=ast.Store())
        out.append(ast.Assign(targets=[lhs], value=_call(name, dz, *args, keywords=keywords)))
        for i, t in zip(active, targets):
            self._accumulate(out, state, args[i].id, _name(t), maybe_none=True)

    def _on_tape(self, e, call, dz, out, state):
        """A call of a user function that cannot be transformed (``e`` says why),
        differentiated on a tape, with a comment saying so."""
        out.append(comment(f"{e.fn.__name__} is differentiated on a tape: {_first_words(e.reason)}"))
        self.generic(call.func, call.args, call.keywords, dz, out, state)

    def expr(self, s, state):
        call = s.value
        if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Attribute):
            return []
        recv = call.func.value
        if call.func.attr == "append" and isinstance(recv, ast.Name) and len(call.args) == 1:
            out = []
            lst = recv.id
            g = self.gnames.get(lst)
            v = call.args[0]
            if lst in self.active and g is not None and state.get(g) and id(s) not in self.nograd:
                part = self.unit.namer.fresh("dpart")
                lhs = ast.Tuple(elts=[_name(g, ast.Store()), _name(part, ast.Store())], ctx=ast.Store())
                out.append(ast.Assign(targets=[lhs], value=_call("pop_grad", _name(g), _name(lst))))
                if isinstance(v, ast.Name) and v.id in self.active:
                    self._accumulate(out, state, v.id, _name(part), maybe_none=True)
            out.append(ast.Expr(value=_call(ast.Attribute(value=_name(lst), attr="pop", ctx=ast.Load()))))
            return out
        return self._no_grad_check(s)

    def if_(self, s, state):
        body_state, else_state = dict(state), dict(state)
        body = self.block(s.body, body_state)
        orelse = self.block(s.orelse, else_state)
        if not body and not orelse:
            return []
        pre = []
        for k in sorted(set(body_state) | set(else_state)):
            if body_state.get(k) != else_state.get(k) and not state.get(k):
                pre.append(_assign(k, _const(None)))
                state[k] = UNK
        if pre:  # again, from the materialised state
            body_state, else_state = dict(state), dict(state)
            body = self.block(s.body, body_state)
            orelse = self.block(s.orelse, else_state)
        for k in set(body_state) | set(else_state):
            a, b = body_state.get(k), else_state.get(k)
            state[k] = a if a == b else UNK
            if state[k] is None:
                state.pop(k)
        node = ast.If(test=copy.deepcopy(s.test), body=body or [ast.Pass()], orelse=orelse)
        return pre + [node]

    def loop(self, s, state):
        info = self.loop_sites.setdefault(id(s), {})
        info["target"] = copy.deepcopy(s.target) if isinstance(s, ast.For) else None
        start = dict(state)
        while True:  # the state only grows (absent < defined < unknown): this ends
            inner = dict(start)
            body = self.block(s.body, inner)
            merged = dict(start)
            for k in set(start) | set(inner):
                if start.get(k) != inner.get(k):
                    merged[k] = UNK
            if merged == start:
                break
            start = merged
        if not body:
            return []
        pre = [_assign(k, _const(None)) for k in sorted(start) if not state.get(k)]
        state.clear()
        state.update(start)
        if self._range_loop(s):
            info["scheme"] = "range"
            rng = copy.deepcopy(s.iter)
            node = ast.For(target=copy.deepcopy(s.target), iter=_call("reversed", rng), body=body, orelse=[])
            return pre + [node]
        info["scheme"] = "count"
        count = info.get("count") or self.unit.namer.fresh("n")
        info["count"] = count
        body = [ast.Expr(value=_call("__target__", _const(id(s))))] + body
        node = ast.For(target=_name("_", ast.Store()), iter=_call("range", _name(count)), body=body, orelse=[])
        return pre + [ast.Expr(value=_call("__count__", _const(id(s)))), node]

    def _range_loop(self, s):
        if not isinstance(s, ast.For) or not isinstance(s.iter, ast.Call):
            return False
        if self.resolver.value(s.iter.func)[1] is not range:
            return False
        if any(isinstance(n, ast.Break) for n in ast.walk(s)):
            return False
        stored = _stored(s.body)
        return all(isinstance(a, (ast.Constant, ast.Name)) and not (isinstance(a, ast.Name) and a.id in stored)
                   for a in s.iter.args)

    def with_(self, s, state):
        h = self.grad_of_target(s)
        if h is not None:
            g = self.gnames.get(h)
            if h not in self.active or g is None or not state.get(g):
                return []
            user = s.items[0].optional_vars.id if s.items[0].optional_vars is not None else None
            body = [copy.deepcopy(b) for b in s.body]
            if user is not None:
                for node in body:
                    for n in ast.walk(node):
                        if isinstance(n, ast.Name) and n.id == user:
                            n.id = g
            state[g] = DEF if state[g] == DEF else UNK
            return [comment(f"grad of: {self.located.text(s)}")] + body
        return self.block(s.body, state)


def _first_words(reason):
    """The reason a function cannot be transformed, without its file and advice."""
    construct = getattr(reason, "construct", None)
    where = f" ({reason.filename}, line {reason.lineno})" if getattr(reason, "filename", None) else ""
    return f"{construct or 'not transformable'}{where}"


def _unstarred(a):
    return a.value if isinstance(a, ast.Starred) else a


def _is_break_check(s):
    return isinstance(s, ast.If) and len(s.body) == 1 and isinstance(s.body[0], ast.Break)


