"""Clean-up of generated code, so that it reads as if written by hand: dead assignments
go, ``a = b`` copies are propagated, temporaries used once are put back into the
expression that uses them, and empty branches disappear. Every pass is conservative
about loops: a name is only substituted within one statement list, with nothing in
between that could change what the expression reads."""
import ast

__all__ = ["optimize"]

_IMPURE_METHODS = {"append", "pop", "extend", "insert", "remove", "clear"}


def _loads(node):
    return [n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)]


def _stores(node):
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


def _pure(expr):
    for n in ast.walk(expr):
        if isinstance(n, ast.Call):
            f = n.func
            if isinstance(f, ast.Attribute) and f.attr in _IMPURE_METHODS:
                return False
            if isinstance(f, ast.Name) and f.id == "print":
                return False
    return True


def _blocks(fn):
    """Every statement list in the function."""
    out = [fn.body]
    for n in ast.walk(fn):
        for field in ("body", "orelse"):
            lst = getattr(n, field, None)
            if isinstance(lst, list) and lst and n is not fn:
                out.append(lst)
    return out


def _dce(fn, keep):
    changed = True
    while changed:
        changed = False
        counts = {}
        for name in _loads(fn):
            counts[name] = counts.get(name, 0) + 1
        for block in _blocks(fn):
            for s in list(block):
                if isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name):
                    name = s.targets[0].id
                    if name not in counts and name not in keep and _pure(s.value):
                        block.remove(s)
                        changed = True
                elif isinstance(s, ast.Assign) and isinstance(s.targets[0], ast.Tuple) and \
                        all(isinstance(e, ast.Name) and (e.id == "_" or e.id not in counts) for e in s.targets[0].elts) \
                        and _pure(s.value):
                    block.remove(s)
                    changed = True
                elif isinstance(s, ast.If) and _empty(s.body) and _empty(s.orelse):
                    block.remove(s)
                    changed = True
                elif isinstance(s, (ast.For,)) and _empty(s.body) and _pure(s.iter) and \
                        not (_stores(s.target) & set(counts)):
                    block.remove(s)
                    changed = True
        for block in _blocks(fn):
            if not block:
                block.append(ast.Pass())
            elif len(block) > 1:
                block[:] = [s for s in block if not isinstance(s, ast.Pass)] or [ast.Pass()]
        changed |= _dead_stores(fn)


def _empty(stmts):
    return all(isinstance(s, ast.Pass) for s in stmts)


def _dead_stores(fn):
    """``x = <anything pure>`` overwritten later in the same list before any read, or
    never read again (at the end of the function's body, or at the end of a loop body
    whose next iteration assigns ``x`` before reading it)."""
    changed = _dead_at_ends(fn)
    for block in _blocks(fn):
        for i, s in enumerate(list(block)):
            if not (isinstance(s, ast.Assign) and isinstance(s.targets[0], ast.Name) and _pure(s.value)):
                continue
            name = s.targets[0].id
            for later in block[i + 1:]:
                if name in _loads(later):
                    break
                if isinstance(later, ast.Assign) and isinstance(later.targets[0], ast.Name) \
                        and later.targets[0].id == name:
                    if s in block:
                        block.remove(s)
                        changed = True
                    break
                if name in _stores(later):
                    break
    return changed


def _dead_at_ends(fn):
    changed = False
    loops = [(fn.body, None)] + [(n.body, n) for n in ast.walk(fn) if isinstance(n, (ast.For, ast.While))]
    for block, loop in loops:
        for s in list(block):
            if not (isinstance(s, ast.Assign) and len(s.targets) == 1 and
                    isinstance(s.targets[0], ast.Name) and _pure(s.value)):
                continue
            name = s.targets[0].id
            i = block.index(s)
            if any(name in _loads(r) for r in block[i + 1:]):
                continue
            if loop is not None:
                first = next((r for r in block if name in _loads(r) or name in _stores(r)), None)
                if not (isinstance(first, ast.Assign) and isinstance(first.targets[0], ast.Name)
                        and first.targets[0].id == name and name not in _loads(first)):
                    continue
                inside = {id(n) for n in ast.walk(loop)}
                if any(isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load)
                       and id(n) not in inside for n in ast.walk(fn)):
                    continue
            elif name in _KEEP_AT_END[0]:
                continue
            block.remove(s)
            changed = True
    return changed


_KEEP_AT_END = [set()]


def _substitute(block, i, name, expr, single_use, total):
    """Replace the uses of ``name`` after statement ``i`` in ``block`` by ``expr``, when
    that is safe (all ``total`` uses are there, and nothing in between changes what
    ``expr`` reads); return whether it was done."""
    reads = set(_loads(expr))
    targets, found = [], 0
    for j in range(i + 1, len(block)):
        later = block[j]
        uses = _loads(later).count(name)
        stores = _stores(later)
        if uses:
            if isinstance(later, (ast.For, ast.While, ast.With)):
                return False
            if isinstance(later, ast.If) and name in _loads(ast.Module(body=later.body + later.orelse,
                                                                       type_ignores=[])):
                return False
            targets.append(later)
            found += uses
            if single_use:
                break
        if reads & stores or name in stores:
            break
    if not targets or found != total:
        return False

    class Sub(ast.NodeTransformer):
        def visit_Name(self, node):
            if node.id == name and isinstance(node.ctx, ast.Load):
                return expr
            return node
    for t in targets:
        if isinstance(t, ast.If):
            t.test = Sub().visit(t.test)
        else:
            Sub().visit(t)
    return True


def _propagate(fn, temps, protected):
    """Copies ``a = b`` and single-use temporaries are substituted into their use."""
    changed = True
    while changed:
        changed = False
        counts = {}
        for n in _loads(fn):
            counts[n] = counts.get(n, 0) + 1
        assigned = {}
        for n in ast.walk(fn):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                assigned[n.id] = assigned.get(n.id, 0) + 1
        for block in _blocks(fn):
            for i, s in enumerate(block):
                if not (isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name)):
                    continue
                name = s.targets[0].id
                if name in protected or assigned.get(name, 0) != 1:
                    continue
                value = s.value
                copy_of_name = isinstance(value, ast.Name)
                if not (copy_of_name or (name in temps and counts.get(name) == 1 and _pure(value))):
                    continue
                if _substitute(block, i, name, value, not copy_of_name, counts.get(name, 0)):
                    del block[i]
                    changed = True
                    break
            if changed:
                break


def optimize(fn, temps=(), keep=()):
    """Clean ``fn`` (an ``ast.FunctionDef``) in place; ``temps`` are names the pipeline
    made up (they may be folded back into expressions), ``keep`` names never removed."""
    _KEEP_AT_END[0] = set(keep)
    _dce(fn, set(keep))
    _propagate(fn, set(temps), set(keep))
    _dce(fn, set(keep))
    return fn
