"""Which fused runs of a generated adjoint may write a result over an argument's memory.

A backward loop such as ``for ...: dy = fused_1(dy, y); y = stack.pop()`` makes a new
array for ``dy`` at every step while the old one dies. On arrays larger than the cache
each new one costs a pass through memory of its own (its lines are read before they are
written: 32 MB moved where 24 would do, ~20% of such a loop on 2**20 float64). Writing
the result over the argument instead is right only where nothing else can see the old
array, which this pass proves from the code, name by name:

- the name is *private*: the function reads it only as an argument of fused runs and in
  ``return`` (no other name, list, call or closure ever gets its array);
- at the run, its value is *owned* on every path: the last assignment to it, in this
  call of the function, was a fused run's result or a value passed through ``own``
  (:func:`tracegrad.transform.ast.fused_runs.own`, below), never another value (a
  parameter, a broadcast, something a helper handed back). A forward "must" analysis over the blocks,
  branches and loops: a loop's state is what holds on entry and after every pass.

Where a loop would reuse a name whose value on entry is not owned (``dy = spread(...)``
just above it), that assignment's value is wrapped in ``own(...)``, which copies an array
the runs made and hands anything else back as it is. At run time a run writes over an
argument only if it is an array the fused runs made (a registry of them), of the
result's dtype and shape, C-contiguous and writeable (see :mod:`.fused_runs`); otherwise
it makes a new array, as before. So ``own``'s value is either a new copy or one no run
writes over, and the loop writes in place from its second pass on.

A run's kernel reads an argument only up to the first line assigning its name, which
comes at or before the line writing the result: writing over it is safe inside the
kernel too (:class:`tracegrad.transform.tape.cpu_fusion.KernelWriter`'s lines run in
order for each element).
"""
import ast

__all__ = ["plan"]


def plan(fdef, runs, own):
    """Set each run's ``reuse`` -- ``[(input position, output position)]`` of the names
    it may write over -- for the rewritten adjoint ``fdef`` (its runs already calls), and
    wrap the values of the assignments that make a loop's names owned in ``own(...)``
    (``own``: the helper's name, one the function does not use). Returns whether any
    was wrapped."""
    by_name = {r.name: r for r in runs}
    for r in runs:
        r.reuse = []
    candidates = {n for r in runs for n in r.ins if n in r.outs}
    private = candidates - _read_elsewhere(fdef, by_name)
    if not private:
        return False
    owned = _Owned(by_name, private)
    owned.block(fdef.body, frozenset())
    wrapped = _wrap_loop_entries(fdef.body, by_name, private, owned.at_call, own)
    if wrapped:
        owned = _Owned(by_name, private, wrapped)
        owned.block(fdef.body, frozenset())
    reused = set()
    for run, state in owned.at_call.values():
        run.reuse = [(run.ins.index(n), run.outs.index(n)) for n in run.ins
                     if n in run.outs and n in state]
        reused |= {run.ins[i] for i, _ in run.reuse}
    for stmt, n, value in list(wrapped.values()):
        if n not in reused:  # (its copy would buy nothing: the assignment as it was)
            stmt.value = value
            del wrapped[id(stmt)]
    return bool(wrapped)


def _run_of(stmt, by_name):
    """The run a statement ``outs = fused_k(ins)`` calls, else None."""
    if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Call) and \
            isinstance(stmt.value.func, ast.Name):
        return by_name.get(stmt.value.func.id)
    return None


def _read_elsewhere(fdef, by_name):
    """Names read anywhere but as an argument of a run or in the function's own
    ``return`` (a nested function's is a closure reading the name later)."""
    allowed = set()
    for node in _own_scope(fdef):
        if _run_of(node, by_name) is not None:
            allowed.update(id(a) for a in node.value.args)
        elif isinstance(node, ast.Return) and node.value is not None:
            allowed.update(id(n) for n in ast.walk(node.value) if isinstance(n, ast.Name))
    return {n.id for n in ast.walk(fdef) if isinstance(n, ast.Name)
            and not isinstance(n.ctx, (ast.Store, ast.Del)) and id(n) not in allowed}


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def _own_scope(fdef):
    """The nodes of ``fdef``'s body outside nested functions and classes."""
    todo = list(fdef.body)
    while todo:
        node = todo.pop()
        yield node
        todo.extend(c for c in ast.iter_child_nodes(node) if not isinstance(c, _SCOPES))


def _stored(node):
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del))}


class _Owned:
    """The must-analysis: for each run call, the private names owned where it runs."""

    def __init__(self, by_name, private, wrapped=frozenset()):
        self.by_name, self.private, self.wrapped = by_name, private, wrapped
        self.at_call = {}           # id(statement) -> (run, owned names there)
        self.loops = []             # per enclosing loop: [states at continue, at break]

    def block(self, stmts, state):
        """The owned names after ``stmts`` from ``state``; None where they never end."""
        for s in stmts:
            state = self.statement(s, state)
            if state is None:
                return None
        return state

    def statement(self, s, state):
        run = _run_of(s, self.by_name)
        if run is not None:
            self.at_call[id(s)] = (run, state)
            targets = _stored(s)   # (the run's results: new arrays)
            return (state - targets) | (targets & self.private)
        if id(s) in self.wrapped:  # n = own(...): the adjoint's own copy
            target = s.targets[0].id
            return (state - _stored(s)) | ({target} & self.private)
        if isinstance(s, (ast.Return, ast.Raise)):
            return None
        if isinstance(s, (ast.Continue, ast.Break)) and self.loops:
            self.loops[-1][isinstance(s, ast.Break)].append(state)
            return None
        if isinstance(s, ast.If):
            state = state - _stored(s.test)
            return _meet(self.block(s.body, state), self.block(s.orelse, state))
        if isinstance(s, (ast.For, ast.While)):
            return self.loop(s, state)
        self.nothing_owned_in(s)   # (try, with, match, nested defs: no reuse inside)
        return state - _stored(s)

    def loop(self, s, state):
        """A loop's body is analysed until its entry state holds (it only shrinks): the
        runs' states recorded by the last pass are those."""
        is_for = isinstance(s, ast.For)
        head = state - _stored(s.iter) if is_for else state
        while True:
            entry = head - _stored(s.target if is_for else s.test)
            self.loops.append(([], []))
            end = self.block(s.body, entry)
            continues, breaks = self.loops.pop()
            again = _meet(head, end, *continues)
            if again == head:
                break
            head = again
        after = self.block(s.orelse, head - (frozenset() if is_for else _stored(s.test)))
        return _meet(after, *breaks)

    def nothing_owned_in(self, s):
        for node in ast.walk(s):
            run = _run_of(node, self.by_name)
            if run is not None:
                self.at_call[id(node)] = (run, frozenset())


def _meet(*states):
    present = [s for s in states if s is not None]
    if not present:
        return None
    out = present[0]
    for s in present[1:]:
        out = out & s
    return frozenset(out)


def _wrap_loop_entries(stmts, by_name, private, at_call, own):
    """Wrap ``n = value`` in ``n = own(value)`` where it is the last assignment to a
    private ``n`` before a loop (in the same block) in which a run would write over ``n``
    but ``n`` is not owned there. Returns ``{id(statement): (statement, n, value)}``."""
    wrapped = {}
    for k, s in enumerate(stmts):
        if isinstance(s, (ast.If, ast.For, ast.While)):
            for inner in (s.body, s.orelse):
                wrapped.update(_wrap_loop_entries(inner, by_name, private, at_call, own))
        if not isinstance(s, (ast.For, ast.While)):
            continue
        wanted = set()
        for node in ast.walk(s):
            run = _run_of(node, by_name)
            if run is not None and id(node) in at_call:
                wanted |= {n for n in run.ins if n in run.outs and n in private
                           and n not in at_call[id(node)][1]}
        for n in sorted(wanted):
            for before in reversed(stmts[:k]):
                if n not in _stored(before):
                    continue
                if isinstance(before, ast.Assign) and len(before.targets) == 1 and \
                        isinstance(before.targets[0], ast.Name) and _run_of(before, by_name) is None \
                        and id(before) not in wrapped:
                    wrapped[id(before)] = (before, n, before.value)
                    before.value = ast.Call(func=ast.Name(id=own, ctx=ast.Load()), args=[before.value],
                                            keywords=[])
                break
    return wrapped
