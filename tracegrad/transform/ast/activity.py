"""Activity analysis: which local names may hold values that depend, differentiably, on
the arguments being differentiated (only those get gradients)."""
import ast

from .on_tape import refusal
from .resolve import CONSTANT, VALUE_TAKING

__all__ = ["active_names", "NONDIFF_ATTRS", "loaded_names", "all_names", "refuse_lost_derivatives"]

NONDIFF_ATTRS = {"shape", "ndim", "dtype", "size", "itemsize", "nbytes", "strides", "device"}


def loaded_names(node):
    """The names ``node`` reads."""
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def all_names(node):
    """Every name in ``node``, read or assigned."""
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}



def _differentiable(value, resolver):
    """Whether an ANF right-hand side can carry a derivative from its operands."""
    if isinstance(value, (ast.Compare, ast.BoolOp, ast.Constant, ast.JoinedStr, ast.Lambda, ast.Set)):
        return False
    if isinstance(value, ast.UnaryOp) and isinstance(value.op, (ast.Not, ast.Invert)):
        return False
    if isinstance(value, ast.BinOp) and isinstance(value.op, (ast.FloorDiv, ast.BitAnd,
                                                              ast.BitOr, ast.BitXor, ast.LShift, ast.RShift)):
        return False
    if isinstance(value, ast.Attribute) and value.attr in NONDIFF_ATTRS:
        return False
    if isinstance(value, ast.Call):
        if resolver.callee(value) is CONSTANT:
            return False
        if isinstance(value.func, ast.Attribute) and value.func.attr in ("item", "tolist", "argmax", "argmin"):
            return False
    return True


def _operands(value):
    """Names whose values flow into ``value`` (not the index of a subscript)."""
    if isinstance(value, ast.Subscript):
        return loaded_names(value.value)
    if isinstance(value, ast.Call):
        names = set()
        for a in value.args:
            names |= loaded_names(a)
        for k in value.keywords:
            names |= loaded_names(k.value)
        if isinstance(value.func, ast.Attribute):
            names |= loaded_names(value.func.value)
        elif isinstance(value.func, ast.Name):
            names.add(value.func.id)
        return names
    return loaded_names(value)


def active_names(body, wrt, resolver, nograd=()):
    """The fixpoint: a name is active if some assignment gives it a differentiable value
    of an active operand."""
    active = set(wrt)
    stmts = [s for s in _walk(body) if id(s) not in nograd]
    changed = True
    while changed:
        changed = False
        for s in stmts:
            new = set()
            if isinstance(s, ast.Assign):
                target = s.targets[0]
                if isinstance(target, ast.Name):
                    if _differentiable(s.value, resolver) and _operands(s.value) & active:
                        new.add(target.id)
                elif isinstance(target, ast.Subscript) and loaded_names(s.value) & active:
                    new.add(target.value.id)
            elif isinstance(s, ast.Expr) and isinstance(s.value, ast.Call):
                f = s.value.func
                if isinstance(f, ast.Attribute) and f.attr in ("append", "extend", "insert") \
                        and isinstance(f.value, ast.Name) and _operands(s.value) & active:
                    new.add(f.value.id)
            if new - active:
                active |= new
                changed = True
    return active


def _walk(body):
    for s in body:
        yield s
        for field in ("body", "orelse"):
            yield from _walk(getattr(s, field, []) or [])


def nograd_statements(body, is_nograd):
    """ids of statements inside ``with no_grad():`` blocks -- but those that only move
    objects (``b = y``, ``t = (a, b)``, ``lst.append(y)``), which no_grad() does not touch
    (see :mod:`.nograd`)."""
    from .nograd import passes_through
    out = set()

    def visit(stmts, inside):
        for s in stmts:
            here = inside or (isinstance(s, ast.With) and is_nograd(s))
            if here and not passes_through(s):
                out.add(id(s))
            for field in ("body", "orelse"):
                visit(getattr(s, field, []) or [], here)
    visit(body, False)
    return out


def refuse_lost_derivatives(body, active, resolver, located, nograd=()):
    """Raise the TransformError for the first place where a value being differentiated
    flows into something whose result the AST path takes as a constant although it
    depends on that value: ``float(x)``, ``np.full(shape, x)``, ``np.linspace(0, x)``, or
    an index of an object that builds arrays from it (``np.r_[x, x]``, ``np.c_``). The
    tape refuses the same functions, so ``mode="auto"`` falls back to a refusal too."""
    for s in _walk(body):
        if id(s) in nograd or isinstance(s, (ast.If, ast.For, ast.While, ast.With)):
            continue
        for n in ast.walk(s):
            if isinstance(n, ast.Lambda):
                own = {a.arg for a in ast.walk(n.args) if isinstance(a, ast.arg)}
                captured = sorted((loaded_names(n.body) - own) & active)
                if captured:
                    raise refusal(located, s, f"a lambda capturing a value being differentiated "
                                           f"({', '.join(captured)}) is passed on as a value: what calls "
                                           "it would differentiate it without that dependence (pass the "
                                           "value as an argument, or call the lambda here)",
                                        "lambda capturing a value being differentiated")
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in active:
                raise located.error(s, f"{n.func.id} is a function made from a value being "
                                       "differentiated (a closure returned by a call): calling it "
                                       "would differentiate it without that dependence",
                                    "call of a function made from a differentiated value")
            if isinstance(n, ast.Set) and _reads_active(n.elts, active):
                raise located.error(s, "a set of differentiated values (a set has no order their "
                                       "gradients could follow)", "set of differentiated values")
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and \
                    n.func.attr in ("item", "tolist") and _reads_active([n.func.value], active):
                raise located.error(s, f".{n.func.attr}() of a value being differentiated makes a "
                                       "Python number of it, and its derivative would be lost "
                                       "(keep it an array, or write stop_gradient(x)."
                                       f"{n.func.attr}() if a constant is meant)", f".{n.func.attr}()")
            if isinstance(n, ast.Call):
                ok, fn = resolver.value(n.func)
                if ok and _hashable_in(fn, VALUE_TAKING) and _reads_active(n.args + [k.value for k in n.keywords], active):
                    what = ast.unparse(n.func)
                    raise located.error(s, f"{what}() of a value being differentiated makes a "
                                           "constant of it, and its derivative would be lost (write "
                                           "np.exp/np.sin for math's functions, and build arrays from "
                                           "it with np.stack or arithmetic)", f"{what}()")
            elif isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Load):
                ok, base = resolver.value(n.value)
                if ok and not isinstance(base, (list, tuple, dict)) and _reads_active([n.slice], active):
                    what = ast.unparse(n.value)
                    raise located.error(s, f"{what}[...] of a value being differentiated builds an array "
                                           "the AST path cannot follow; use np.concatenate or np.stack",
                                        f"{what}[...]")


def _reads_active(nodes, active):
    return any(_value_names(x) & active for x in nodes)


def _value_names(node):
    """The names whose values ``node`` reads: not those it reads only for their shape, dtype
    and the like (``np.arange(x.shape[-1])`` makes no constant of x)."""
    out = set()
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, ast.Attribute) and n.attr in NONDIFF_ATTRS:
            continue
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
            out.add(n.id)
        stack.extend(ast.iter_child_nodes(n))
    return out


def _hashable_in(obj, table):
    try:
        return obj in table
    except TypeError:
        return False


def star_positions(body, call, active, params):
    """For a call ``f(a, *lst, b)``: an expression of the positional argument numbers that
    may hold values being differentiated -- a superset, known when the call runs -- or
    None (then every argument is differentiated). It is known where ``lst`` is a list
    whose only active items were written by ``lst[i] = v`` (``i`` a constant, or names the
    function never assigns) or given in its display (``[1, a * a, 2]``), and which is used
    nowhere else but in reads, ``len(lst)`` and this call (no alias could add others).
    (``fun(*args)`` with only ``args[argnum]`` differentiated: the other arguments need
    no derivative -- which some rules do not have.)"""
    starred = [a for a in call.args if isinstance(a, ast.Starred)]
    if len(starred) != 1 or not isinstance(starred[0].value, ast.Name):
        return None
    name = starred[0].value.id
    items = _active_items(body, name, active, params)
    if items is None:
        return None
    out, before = [], 0
    size = ast.Call(func=ast.Name(id="len", ctx=ast.Load()), args=[ast.Name(id=name, ctx=ast.Load())],
                    keywords=[])
    for k, a in enumerate(call.args):
        if a is starred[0]:
            for idx in items:
                at = ast.BinOp(left=idx, op=ast.Mod(), right=size) if not _non_negative(idx) else idx
                out.append(at if before == 0 else ast.BinOp(left=ast.Constant(value=before), op=ast.Add(), right=at))
            continue
        if isinstance(a, ast.Name) and a.id in active:
            where = ast.Constant(value=k) if k < call.args.index(starred[0]) else \
                ast.BinOp(left=ast.Constant(value=k - 1), op=ast.Add(), right=size)
            out.append(where)
        before += 1
    return ast.Tuple(elts=out, ctx=ast.Load())


def _non_negative(node):
    return isinstance(node, ast.Constant) and isinstance(node.value, int) and node.value >= 0


def _active_items(body, name, active, params):
    """The index expressions of the items of list ``name`` that may be active, or None."""
    stmts = [n for n in ast.walk(ast.Module(body=body, type_ignores=[])) if isinstance(n, ast.stmt)]
    stored = {n.id for s in stmts for n in ast.walk(s) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    allowed, items, bound = set(), [], 0
    for s in stmts:
        if isinstance(s, ast.Assign) and isinstance(s.targets[0], ast.Name) and s.targets[0].id == name:
            bound += 1
            v = s.value
            if isinstance(v, (ast.List, ast.Tuple)):
                items += [ast.Constant(value=k) for k, e in enumerate(v.elts)
                          if isinstance(e, ast.Name) and e.id in active]
            elif loaded_names(v) & active:
                return None
            allowed |= {id(n) for n in ast.walk(s.targets[0])}
        elif isinstance(s, ast.Assign) and isinstance(s.targets[0], ast.Subscript) and \
                isinstance(s.targets[0].value, ast.Name) and s.targets[0].value.id == name:
            index = s.targets[0].slice
            if isinstance(s.value, ast.Name) and s.value.id in active or loaded_names(s.value) & active:
                if isinstance(index, ast.Slice) or not (isinstance(index, (ast.Constant, ast.Name))) or \
                        loaded_names(index) & stored:
                    return None
                items.append(index)
            allowed.add(id(s.targets[0].value))
    if bound > 1 or (bound == 0 and (name not in params or name in active)):
        return None
    for s in stmts:  # any other use could alias it (and add items unseen here)
        for n in ast.walk(s):
            if isinstance(n, ast.Subscript) and isinstance(n.value, ast.Name) and n.value.id == name:
                allowed.add(id(n.value))
            elif isinstance(n, ast.Starred) and isinstance(n.value, ast.Name):
                allowed.add(id(n.value))
            elif isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "len" and \
                    len(n.args) == 1 and isinstance(n.args[0], ast.Name):
                allowed.add(id(n.args[0]))
    for s in stmts:
        for n in ast.walk(s):
            if isinstance(n, ast.Name) and n.id == name and id(n) not in allowed:
                return None
    return items
