"""Saves and restores, decided once the adjoint is written: a value the adjoint reads is
pushed on the stack before the assignment that overwrites it (when it can be
overwritten: assigned in a loop, at several places, or a parameter assigned again) and
popped where the adjoint left a restore marker. Loops that replay by count get their
counter (and, when read, their target) saved the same way."""
import ast
import copy

from ...backend import is_array
from .anf import _assign, _const, _name
from .activity import all_names, loaded_names
from .aliasing import check_statement, live_after, mutated_name
from .reverse import _call, _is_break_check, index_expr

__all__ = ["finish"]

MARKERS = ("__restore__", "__target__", "__count__")


class _Saves:
    def __init__(self, rev, adjoint, stack):
        self.rev, self.stack = rev, stack
        self.needed = set()
        for s in adjoint:
            self.needed |= loaded_names(s)
        counts = {}
        for site in rev.sites.values():
            counts[site.name] = counts.get(site.name, 0) + 1
        self.saved = {k for k, site in rev.sites.items() if self._save(site, counts[site.name])}
        # A restored element write `a[i] = stack.pop()` reads the binding `a` has there, so
        # `a` must be restored too where a later statement (a loop, say) rebinds it; that
        # can make more sites saved, hence the loop to a fixed point.
        restored = _restore_keys(adjoint)
        while True:
            writes = {rev.sites[k].name for k in self.saved & restored
                      if isinstance(rev.sites[k].node.targets[0], ast.Subscript)}
            if writes <= self.needed:
                break
            self.needed |= writes
            self.saved = {k for k, site in rev.sites.items() if self._save(site, counts[site.name])}
        self.uses_stack = False
        self.init = set()   # saved names pushed before any assignment: start as None
        self.checked = set()  # names an in-place check reads through locals()

    def _save(self, site, count):
        if isinstance(site.node.targets[0], ast.Subscript):
            return site.name in self.rev.active or site.name in self.needed
        return site.name in self.needed and (site.in_loop or count > 1 or site.name in self.rev.params)

    def _push(self, value):
        self.uses_stack = True
        return ast.Expr(value=_call(ast.Attribute(value=_name(self.stack), attr="append", ctx=ast.Load()),
                                    value))

    def _pop(self):
        return _call(ast.Attribute(value=_name(self.stack), attr="pop", ctx=ast.Load()))

    # forward: pushes inserted ------------------------------------------------------------
    def _alias_check(self, s):
        """The run-time check before an in-place change (see :mod:`.aliasing`), or None."""
        name = mutated_name(s)
        if name is None:
            return None
        later = set(self.live.get(id(s), ()))
        writes_memory = not getattr(s, "_in_place", False)  # (y += v is written y = y + v)
        if getattr(s, "_element_in_place", False):
            writes_memory = False  # (lst[k] += v: always checked, see check_unaliased)
        if writes_memory and id(s) not in self.saved:  # the adjoint reads values as left
            later |= self.needed | {self.stack}
        later.discard(name)
        later &= self.locals | self._outer_arrays(later)  # (helpers and gradients hold none of
        # these arrays yet; a global array may: f(G) for a function reading G)
        if not later and writes_memory:
            return None
        helper = _name("check_unaliased")
        helper._helper = True
        self.checked |= later  # (names the clean-up must keep: the check reads them by name)
        return check_statement(s, name, later, self.rev.located, helper)

    def _outer_arrays(self, names):
        """The free names among ``names`` that hold an array now (a global, a closure's
        variable): an argument may be one of them, or a view of one."""
        out = set()
        for n in names - self.locals:
            found, value = self.rev.resolver.lookup(n)
            if found and is_array(value):
                out.add(n)
        return out

    def forward(self, stmts, depth=0):
        out = []
        for s in stmts:
            check = self._alias_check(s) if isinstance(s, (ast.Assign, ast.Expr)) else None
            if check is not None:
                out.append(check)
            if isinstance(s, ast.Assign) and id(s) in self.saved:
                out += [self._push(self._old_value(s.targets[0], getattr(s, "_new_key", False))), s]
            elif isinstance(s, (ast.For, ast.While)):
                out += self._loop(s, depth)
            elif isinstance(s, (ast.If, ast.With)):
                if isinstance(s, ast.With) and self.rev.grad_of_target(s) is not None:
                    continue  # backward-pass code only
                node = copy.copy(s)
                node.body = self.forward(s.body, depth) or [ast.Pass()]
                if isinstance(s, ast.If):
                    node.orelse = self.forward(s.orelse, depth)
                out.append(node)
            else:
                out.append(s)
        return out

    def _old_value(self, target, new_key=False):
        if isinstance(target, ast.Subscript):  # (a dict made here may not hold the key yet)
            return _call("old_entry" if new_key else "copy_at", _name(target.value.id), index_expr(target.slice))
        if target.id not in self.rev.params:
            self.init.add(target.id)
        return _name(target.id)

    def _loop(self, s, depth):
        info = self.rev.loop_sites.get(id(s), {})
        node = copy.copy(s)
        node.body = self.forward(s.body, depth + 1)
        if info.get("scheme") != "count":
            return [node]
        n = info["count"]
        node.body.insert(0, _assign(n, ast.BinOp(left=_name(n), op=ast.Add(), right=_const(1))))
        target = s.target if isinstance(s, ast.For) else None
        if target is not None and all_names(target) & self.needed:
            # pushed at the end of the iteration (before a lowered break), popped first
            # thing in the iteration's adjoint
            info["push_target"] = True
            at = len(node.body) - 1 if _is_break_check(node.body[-1]) else len(node.body)
            node.body.insert(at, self._push(copy.deepcopy(target)))
        out = [_assign(n, _const(0)), node]
        if depth:  # an inner loop: its count is overwritten by the next outer iteration
            info["push_count"] = True
            out.append(self._push(_name(n)))
        return out

    # adjoint: markers replaced -----------------------------------------------------------
    def restore(self, kind, key):
        """The statement a marker stands for (None: nothing was saved)."""
        if kind == "__restore__":
            if key not in self.saved:
                return None
            node = self.rev.sites[key].node
            t = node.targets[0]
            if isinstance(t, ast.Subscript) and getattr(node, "_new_key", False):
                return ast.Expr(value=_call("restore_entry", _name(t.value.id), index_expr(t.slice), self._pop()))
            if isinstance(t, ast.Subscript):
                target = ast.Subscript(value=_name(t.value.id), slice=copy.deepcopy(t.slice), ctx=ast.Store())
                return ast.Assign(targets=[target], value=self._pop())
            return _assign(t.id, self._pop())
        info = self.rev.loop_sites[key]
        if kind == "__target__":
            return ast.Assign(targets=[copy.deepcopy(info["target"])], value=self._pop()) \
                if info.get("push_target") else None
        return _assign(info["count"], self._pop()) if info.get("push_count") else None

    def adjoint(self, stmts):
        out = []
        for s in stmts:
            if isinstance(s, ast.Expr) and isinstance(s.value, ast.Call) and \
                    isinstance(s.value.func, ast.Name) and s.value.func.id in MARKERS:
                s = self.restore(s.value.func.id, s.value.args[0].value)
            elif isinstance(s, (ast.If, ast.For, ast.While, ast.With)):
                s.body = self.adjoint(s.body) or [ast.Pass()]
                if getattr(s, "orelse", None):
                    s.orelse = self.adjoint(s.orelse)
            if s is not None:
                out.append(ast.fix_missing_locations(s))
        return out


def _restore_keys(stmts):
    """The site keys of the ``__restore__`` markers in ``stmts``."""
    return {n.args[0].value for s in stmts for n in ast.walk(s)
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "__restore__"}


def _stores(stmts):
    return {n.id for s in stmts for n in ast.walk(s) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


def finish(rev, forward, adjoint, stack):
    """The forward statements with saves, in-place checks and a prelude (the stack, names
    pushed before they are first assigned), and the adjoint with its restore markers
    replaced."""
    saves = _Saves(rev, adjoint, stack)
    saves.live = live_after(forward)
    saves.locals = _stores(forward) | rev.params | {stack}  # (what exists while the forward pass runs)
    forward = saves.forward(forward)   # (decides the loop pushes the adjoint's markers ask)
    adjoint = saves.adjoint(adjoint)
    rev.checked = saves.checked
    prelude = [_assign(n, _const(None)) for n in sorted(saves.init)]
    if saves.uses_stack:
        prelude.append(_assign(stack, ast.List(elts=[], ctx=ast.Load())))
    return prelude + forward, adjoint
