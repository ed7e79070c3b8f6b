"""Clean-up of generated code, so that it reads as if written by hand: dead assignments
go, ``a = b`` copies are propagated, temporaries used once are put back into the
expression that uses them, and empty branches and dangling comments disappear. Every
pass is conservative about loops: a name is only substituted within one statement
list, with nothing in between that assigns, writes into (``x[i] = v``) or mutates
(``x.append``) a name the expression reads. (Aliasing is not tracked: ``z = y`` then
``y[0] = 0`` is taken to leave ``z`` alone, a documented limit.)

The passes ask the same questions (which names does this statement read, which does it
assign) many times; :class:`Facts` answers each once per statement until that statement
changes, which keeps a 50-line function's clean-up to milliseconds."""
import ast

from .activity import all_names

__all__ = ["optimize"]

_IMPURE_METHODS = {"append", "pop", "extend", "insert", "remove", "clear"}
_COMPOUND = (ast.For, ast.While, ast.If, ast.With)


class Facts:
    """Per statement (by identity): the names it loads (a list, with repeats) and stores."""

    def __init__(self):
        self._memo = {}

    def of(self, node):
        f = self._memo.get(id(node))
        if f is None or f[0] is not node:
            loads, stores = [], set()
            for n in ast.walk(node):
                if isinstance(n, ast.Name):
                    if isinstance(n.ctx, ast.Load):
                        loads.append(n.id)
                    else:
                        stores.add(n.id)
                elif isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Store):
                    stores |= all_names(n.value)      # x[i] = v changes x
                elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and \
                        n.func.attr in _IMPURE_METHODS:
                    stores |= all_names(n.func.value)  # x.append(v), x.pop() change x
            f = self._memo[id(node)] = (node, loads, stores, set(loads))
        return f

    def loads(self, node):
        return self.of(node)[1]

    def load_set(self, node):
        return self.of(node)[3]

    def stores(self, node):
        return self.of(node)[2]

    def forget(self, *nodes):
        for node in nodes:
            self._memo.pop(id(node), None)


def _pure(expr):
    """Whether dropping ``expr`` unevaluated changes nothing: no list mutation, no
    printing, no random numbers drawn, no call of a function the AST path cannot read
    (run read-only: it may try to write into its arguments, see opaque_calls.py), no
    forward-mode call of one (``call_jvp``: the call itself, which may write into its
    arguments -- the write is then refused -- or change what it holds)."""
    for n in ast.walk(expr):
        if isinstance(n, ast.Call):
            f = n.func
            if isinstance(f, ast.Attribute) and f.attr in _IMPURE_METHODS:
                return False
            if isinstance(f, ast.Name) and f.id in ("print", "read_only_call", "call_jvp", "jvp_at", "star_jvp"):
                return False
            if "random" in ast.unparse(f):
                return False
    return True


def _blocks(fn):
    """``(statement list, the loop it is the body of or None)`` for every list (found
    through the statements only: expressions hold no statement lists)."""
    out = [(fn.body, None)]
    todo = list(fn.body)
    while todo:
        n = todo.pop()
        if isinstance(n, _COMPOUND):
            for field in ("body", "orelse"):
                lst = getattr(n, field, None)
                if lst:
                    out.append((lst, n if field == "body" and isinstance(n, (ast.For, ast.While)) else None))
                    todo.extend(lst)
    return out


def _parts(stmts):
    """The expression-level pieces of ``stmts`` and everything nested in them: whole simple
    statements, and the header (test, iterable and target, context) of compound ones."""
    todo = list(stmts)
    while todo:
        s = todo.pop()
        if isinstance(s, ast.If):
            yield s.test
        elif isinstance(s, ast.While):
            yield s.test
        elif isinstance(s, ast.For):
            yield s.iter
            yield s.target
        elif isinstance(s, ast.With):
            yield from (i.context_expr for i in s.items)
        else:
            yield s
            continue
        todo.extend(s.body)
        todo.extend(getattr(s, "orelse", ()))


def _simple_assign(s):
    return isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name)


def _is_comment(s):
    return isinstance(s, ast.Expr) and isinstance(s.value, ast.Call) and \
        isinstance(s.value.func, ast.Name) and s.value.func.id == "__comment__"


def _empty(stmts):
    return all(isinstance(s, ast.Pass) or _is_comment(s) for s in stmts)


def _counts(stmts, facts):
    """How many times each name is read in ``stmts``."""
    counts = {}
    for part in _parts(stmts):
        for name in facts.loads(part):
            counts[name] = counts.get(name, 0) + 1
    return counts


class _Cleaner:
    def __init__(self, fn, temps, keep):
        self.fn, self.temps, self.keep = fn, set(temps), set(keep)
        self.facts = Facts()

    # dead code ------------------------------------------------------------------------
    def dce(self):
        changed = True
        while changed:
            counts = _counts(self.fn.body, self.facts)
            blocks = _blocks(self.fn)
            changed = self._unread(counts, blocks) | self._dead_stores(counts, blocks)
            self._tidy(blocks)

    def _unread(self, counts, blocks):
        changed = False
        for block, _ in blocks:
            keep = []
            for s in block:
                dead = False
                if _simple_assign(s):
                    dead = s.targets[0].id not in counts and s.targets[0].id not in self.keep and _pure(s.value)
                elif isinstance(s, ast.Assign) and isinstance(s.targets[0], ast.Tuple):
                    dead = all(isinstance(e, ast.Name) and (e.id == "_" or e.id not in counts)
                               for e in s.targets[0].elts) and _pure(s.value)
                elif isinstance(s, ast.If):
                    dead = _empty(s.body) and _empty(s.orelse)
                elif isinstance(s, ast.For):
                    dead = _empty(s.body) and _pure(s.iter) and not (self.facts.stores(s.target) & set(counts))
                if dead:
                    changed = True
                else:
                    keep.append(s)
            block[:] = keep
        return changed

    def _dead_stores(self, counts, blocks):
        """``x = <pure>`` overwritten later in the same list before any read, or never read
        again (at the end of the function, or at the end of a loop body whose next
        iteration assigns ``x`` before reading it)."""
        changed = False
        self._in_loop = {}
        for block, loop in blocks:
            i = len(block) - 1
            while i >= 0:
                s = block[i]
                if _simple_assign(s) and _pure(s.value):
                    if self._dead_after(block, i, loop, counts):
                        del block[i]
                        changed = True
                i -= 1
        return changed

    def _loop_counts(self, loop):
        c = self._in_loop.get(id(loop))
        if c is None:
            c = self._in_loop[id(loop)] = _counts([loop], self.facts)
        return c

    def _dead_after(self, block, i, loop, counts):
        name = block[i].targets[0].id
        f = self.facts
        for later in block[i + 1:]:
            if name in f.load_set(later):
                return False
            if _simple_assign(later) and later.targets[0].id == name:
                return True
            if name in f.stores(later):
                return False
        if name in self.keep:
            return False
        if loop is None:
            return block is self.fn.body
        header = loop.test if isinstance(loop, ast.While) else loop.iter
        if name in f.load_set(header):  # read by the loop's own condition before the body
            return False
        first = next((r for r in block if name in f.load_set(r) or name in f.stores(r)), None)
        if not (_simple_assign(first) and first.targets[0].id == name and name not in f.load_set(first)):
            return False
        return self._loop_counts(loop).get(name, 0) == counts.get(name, 0)

    def _tidy(self, blocks):
        """Dangling comments go; empty lists get a ``pass``; a ``pass`` next to code goes."""
        for block, _ in blocks:
            keep = []
            for i, s in enumerate(block):
                if _is_comment(s) and (i + 1 == len(block) or _is_comment(block[i + 1])
                                       or isinstance(block[i + 1], ast.Pass)):
                    continue
                if isinstance(s, ast.Pass):
                    continue
                keep.append(s)
            block[:] = keep or [ast.Pass()]

    # propagation ------------------------------------------------------------------------
    def propagate(self):
        """Copies ``a = b`` and single-use temporaries are substituted into their use."""
        changed = True
        while changed:
            changed = False
            counts = _counts(self.fn.body, self.facts)
            assigned = {}
            for part in _parts(self.fn.body):
                for name in self.facts.stores(part):
                    assigned[name] = assigned.get(name, 0) + 1
            for block, _ in _blocks(self.fn):
                i = 0
                while i < len(block):
                    s = block[i]
                    if self._candidate(s, counts, assigned) and self._substitute(block, i, counts):
                        del block[i]
                        changed = True
                        continue
                    i += 1

    def _candidate(self, s, counts, assigned):
        if not _simple_assign(s):
            return False
        name = s.targets[0].id
        if name in self.keep or assigned.get(name, 0) != 1:
            return False
        if isinstance(s.value, ast.Name):
            return True
        return name in self.temps and counts.get(name) == 1 and _pure(s.value)

    def _substitute(self, block, i, counts):
        """Replace the uses of the name statement ``i`` assigns, after it in ``block``, by
        its value, when that is safe (all uses are there, and nothing in between changes
        what the value reads); return whether it was done."""
        s = block[i]
        name, expr = s.targets[0].id, s.value
        single = not isinstance(expr, ast.Name)
        f = self.facts
        reads = f.load_set(expr)
        targets, found = [], 0
        for later in block[i + 1:]:
            uses = f.loads(later).count(name) if name in f.load_set(later) else 0
            stores = f.stores(later)
            if uses:
                if isinstance(later, (ast.For, ast.While, ast.With)):
                    return False
                if isinstance(later, ast.If) and any(name in f.load_set(b) for b in later.body + later.orelse) \
                        and (single or stores & (reads | {name})):
                    return False  # (a copy goes into branches that change neither name)
                targets.append(later)
                found += uses
                if single:
                    break
            if reads & stores or name in stores:
                break
        if not targets or found != counts.get(name, 0):
            return False

        class Sub(ast.NodeTransformer):
            def visit_Name(self, node):
                if node.id == name and isinstance(node.ctx, ast.Load):
                    return expr
                return node
        for t in targets:
            if isinstance(t, ast.If) and single:
                f.forget(t.test)
                t.test = Sub().visit(t.test)
            else:
                Sub().visit(t)
                f.forget(*ast.walk(t))
            f.forget(t)
        return True


def optimize(fn, temps=(), keep=()):
    """Clean ``fn`` (an ``ast.FunctionDef``) in place; ``temps`` are names the pipeline
    made up (they may be folded back into expressions), ``keep`` names never removed."""
    cleaner = _Cleaner(fn, temps, keep)
    cleaner.dce()
    cleaner.propagate()
    cleaner.dce()
    return fn
