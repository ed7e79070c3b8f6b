"""In-place changes in AST mode: checked at run time against the names that share memory.

The generated code computes with the user's own arrays, so a write ``y[i] = v`` changes
every array that shares ``y``'s memory -- but the adjoint follows *names*: a view ``w =
y[1:]`` taken before the write, and read after it (by the forward code, or by the
adjoint of an earlier line), would carry a value whose derivative the adjoint does not
know. ``b += 1`` is written as ``b = b + 1`` (a new array), which differs from NumPy
exactly when another name still holding the old array is read afterwards. So before each
in-place change (a subscript write, ``+=`` on a name, ``.append``) the generated code
calls :func:`check_unaliased` with the names that may be read afterwards; it refuses, at
run time, when one of them shares memory with the changed value. A change with no such
name is exact, and costs one cheap check.
"""
import ast
import sys

from ...backend import cpu as np  # host-side memory checks only
from .anf import _const, _name, index_expr
from .source import TransformError

__all__ = ["AliasError", "mutated_name", "live_after", "check_statement", "check_unaliased",
           "in_place_facts", "rebinds_in_place", "refuse_zero_d_arguments", "with_checks"]


class AliasError(TransformError):
    """An in-place change in AST mode would be seen through another name (run time).
    ``before_run``: raised before the generated code ran (nothing was changed yet)."""

    before_run = False


def mutated_name(s):
    """The name whose value ``s`` changes in place, or None: ``y[i] = v``, ``y += v``
    (lowered to ``y = y + v``), ``lst.append(v)`` -- except into a comprehension's own new
    list or dict, which no other name can share yet."""
    if getattr(s, "_fresh", False):
        return None
    if isinstance(s, ast.Assign):
        t = s.targets[0]
        if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name):
            return t.value.id
        if isinstance(t, ast.Name) and getattr(s, "_in_place", False):
            return t.id
    call = s.value if isinstance(s, (ast.Expr, ast.Assign)) else None
    if isinstance(call, ast.Call):  # lst.append(v), lst.pop(), a = lst.pop()
        f = call.func
        if isinstance(f, ast.Attribute) and f.attr in ("append", "pop") and isinstance(f.value, ast.Name):
            return f.value.id
    return None


def _loads(node):
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def live_after(body):
    """id(statement) -> the names that may be read after it (backward liveness over the
    forward code: branches joined, loops iterated to their fixpoint)."""
    out = {}

    def block(stmts, live):
        for s in reversed(stmts):
            out[id(s)] = set(live)
            live = stmt(s, live)
        return live

    def stmt(s, live):
        if isinstance(s, ast.If):
            return _loads(s.test) | block(s.body, live) | block(s.orelse, live)
        if isinstance(s, (ast.For, ast.While)):
            head = _loads(s.iter if isinstance(s, ast.For) else s.test)
            at_head = head | live
            while True:
                again = head | live | block(s.body, at_head)
                if again <= at_head:
                    return at_head
                at_head |= again
        if isinstance(s, ast.With):
            return block(s.body, live) | _loads(s.items[0].context_expr)
        if isinstance(s, ast.Return):
            return _loads(s) if s.value is not None else set()
        if isinstance(s, ast.Assign):
            t = s.targets[0]
            killed = {t.id} if isinstance(t, ast.Name) else set()
            return (live - killed) | _loads(s.value) | _loads(t)
        return live | _loads(s)

    block(body, set())
    return out


def check_statement(s, name, candidates, located, helper):
    """The check placed before in-place change ``s`` of ``name``."""
    lineno = getattr(s, "lineno", 0) + located.first_line - 1
    src = getattr(s, "_src", None)
    what = located.text(src) if src is not None else ast.unparse(s)
    names = ast.Tuple(elts=[_const(n) for n in sorted(candidates)], ctx=ast.Load())
    rebinds = getattr(s, "_in_place", False)
    element = [ast.keyword(arg="element", value=index_expr(s.targets[0].slice))] \
        if getattr(s, "_element_in_place", False) else []
    call = ast.Call(func=helper, args=[_name(name), _const(name), names,
                                       ast.Call(func=_name("locals"), args=[], keywords=[]),
                                       _const(located.filename), _const(lineno), _const(what)]
                    + ([_const(True)] if rebinds else []), keywords=element)
    return ast.Expr(value=call)


def with_checks(stmts, live, located, helper, checked=None):
    """Forward-mode code with the check before each in-place change (what is read later
    is read by the forward lines only: there is no adjoint). ``checked`` (a set) gets the
    names the checks read through ``locals()``: the clean-up must keep them (``v2 = v1``
    propagated away would hide that ``v2`` shares ``v1``'s memory)."""
    out = []
    for s in stmts:
        name = mutated_name(s)
        later = set(live.get(id(s), ())) - {name} if name is not None else set()
        rebinds = getattr(s, "_in_place", False) or getattr(s, "_element_in_place", False)
        if name is not None and (later or rebinds):
            out.append(check_statement(s, name, later, located, helper))
            if checked is not None:
                checked |= later
        for field in ("body", "orelse"):
            inner = getattr(s, field, None)
            if inner and isinstance(s, (ast.If, ast.For, ast.While, ast.With)):
                setattr(s, field, with_checks(inner, live, located, helper, checked))
        out.append(s)
    return out


def check_unaliased(value, name, others, scope, filename, lineno, what, rebinds=False, element=None):
    """Refuse the in-place change ``what`` of ``value`` (named ``name``) when another of
    the names ``others`` (looked up in ``scope``, the generated function's locals, then in
    its globals: the user's global arrays it reads) holds memory it shares. A ``rebinds``
    change (``y += v``, written ``y = y + v``) of a 0-d
    array is refused too: NumPy keeps it an array that later names can share, the
    rewritten line makes a NumPy scalar of it. ``lst[k] += v`` (``element`` k) on an array
    held in a list or dict is refused: NumPy changes that array in place, wherever else it
    is held (a name, another list, the caller's argument), and the rewritten line puts a
    new array in the list instead."""
    if element is not None and isinstance(value, (list, tuple, dict)) and _memory(_item_at(value, element)) is not None:
        raise AliasError(f"`{what}` changes the array held in {name} in place (NumPy's augmented "
                         "assignment on an array), which the AST path writes as a new array in "
                         f"{name}: use {name}[k] = {name}[k] + v, or mode='tape'", filename, lineno,
                         "in-place change of an array held in a list or dict")
    if rebinds and getattr(value, "ndim", None) == 0 and _memory(value) is not None:
        raise zero_d_error(what, filename, lineno)
    target = _memory(value)
    if target is None:
        return
    outer = sys._getframe(1).f_globals  # (a global the function reads: ``x[0] = 5`` with f(G))
    for other in others:
        if other in scope:
            held = scope[other]
        elif other in outer:
            held = outer[other]
        else:
            continue
        if _shares(target, held, 0):
            raise AliasError(
                f"`{what}` changes {name} in place while {other} shares its memory and is used "
                "afterwards: the AST path follows values, not memory (copy one of them first, "
                "e.g. with .copy())", filename, lineno, "in-place change of an aliased array")


def _item_at(container, key):
    try:
        return container[key]
    except (IndexError, KeyError, TypeError):
        return None  # (the write itself then raises NumPy's or Python's error)


check_unaliased.constant_result = True  # (a check, no derivative: a second derivative passes it)


def zero_d_error(what, filename, lineno):
    return AliasError(f"`{what}` changes a 0-d array in place, which the AST path writes as a new "
                      "value (a NumPy scalar); use a Python float, or mode='tape'",
                      filename, lineno, "in-place change of a 0-d array")


def refuse_zero_d_arguments(gen, args, fname):
    """Before running: a function with ``y += v`` lines called with a 0-d array."""
    from ..tree import flatten
    if not getattr(gen, "rebinds_in_place", False):
        return
    for a in args:
        for leaf in flatten(a)[0]:
            data = getattr(leaf, "_data", leaf)
            if isinstance(data, np.ndarray) and data.ndim == 0:
                e = zero_d_error(f"{fname}(...)", None, None)
                e.before_run = True
                raise e


def _memory(x):
    data = getattr(x, "_data", None)  # a Tensor: its array
    if data is not None:
        x = data
    if isinstance(x, np.ndarray) or isinstance(x, list):
        return x
    if hasattr(x, "__cuda_array_interface__"):
        return x
    return None


def _shares(target, other, depth):
    if other is target:
        return True
    if isinstance(other, (list, tuple, dict)):
        items = other.values() if isinstance(other, dict) else other
        return depth < 3 and any(_shares(target, o, depth + 1) for o in items)
    if isinstance(target, list):
        return False
    other = _memory(other)
    if other is None or isinstance(other, list):
        return False
    try:
        return bool(np.may_share_memory(target, other))
    except TypeError:  # (arrays of two devices)
        return False


_VIEW_METHODS = {"reshape", "ravel", "view", "transpose", "swapaxes", "squeeze", "diagonal"}
_VIEW_ATTRS = {"T", "mT", "real", "imag", "flat"}
# NumPy functions whose result may be their first argument or a view of it (``np.reshape(p,
# 2)``, ``np.expand_dims(p, 0)``, ``np.asarray(p)``), or hold views of it (``np.split``)
_VIEW_FUNCTIONS = _VIEW_METHODS - {"view"} | {
    "expand_dims", "moveaxis", "rollaxis", "asarray", "asanyarray", "ascontiguousarray", "asfortranarray",
    "require", "atleast_1d", "atleast_2d", "atleast_3d", "broadcast_to", "broadcast_arrays", "real", "imag",
    "flip", "fliplr", "flipud", "rot90", "matrix_transpose", "permute_dims", "as_strided",
    "sliding_window_view", "split", "array_split", "hsplit", "vsplit", "dsplit", "unstack"}


def in_place_facts(body, params):
    """``(visible, writes_params)``: whether a name changed in place was visibly bound to
    the same memory as another (``b = a``, ``w = y[1:]``, ``t = y.T``, ``pair = [y, x]``,
    ``lst.append(y)``) that is read after the change -- ``mode="auto"`` then takes the
    tape, which follows NumPy's memory -- and whether a
    parameter is changed in place (the caller's array: a run that fails half-way cannot
    be run again on the tape)."""
    links = {}

    def link(a, b):
        links.setdefault(a, set()).add(b)
        links.setdefault(b, set()).add(a)

    mutated, writes = set(), []
    for s in ast.walk(ast.Module(body=body, type_ignores=[])):
        if not isinstance(s, ast.stmt):
            continue
        m = mutated_name(s)
        if m is not None:
            mutated.add(m)
            writes.append((s, m))
        if isinstance(s, ast.Assign) and isinstance(s.targets[0], ast.Name):
            for other in _shared_with(s.value):
                link(s.targets[0].id, other)
        elif isinstance(s, ast.Expr) and isinstance(s.value, ast.Call) and \
                isinstance(s.value.func, ast.Attribute) and s.value.func.attr == "append" and \
                isinstance(s.value.func.value, ast.Name):  # lst.append(y): lst holds y
            for a in s.value.args:
                if isinstance(a, ast.Name):
                    link(s.value.func.value.id, a.id)
    reach, todo = set(params), list(params)  # names that may hold a parameter's memory
    while todo:
        for other in links.get(todo.pop(), ()):
            if other not in reach:
                reach.add(other)
                todo.append(other)
    live = live_after(body)
    visible = any(_linked(links, m) & live.get(id(s), set()) for s, m in writes)
    return visible, bool(mutated & reach) and _writes_params(body, params)


def _shared_with(v):
    """The names whose memory the value of ANF right-hand side ``v`` may share."""
    if isinstance(v, ast.Name):
        return {v.id}
    if isinstance(v, ast.Subscript) and isinstance(v.value, ast.Name):
        return {v.value.id}
    if isinstance(v, ast.Attribute) and v.attr in _VIEW_ATTRS and isinstance(v.value, ast.Name):
        return {v.value.id}
    if isinstance(v, ast.Call):
        f = v.func
        name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None
        shared = set()
        if name in _VIEW_METHODS and isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name):
            shared.add(f.value.id)  # p.reshape(2)
        if name in _VIEW_FUNCTIONS and v.args and isinstance(v.args[0], ast.Name):
            shared.add(v.args[0].id)  # np.reshape(p, 2), np.expand_dims(p, 0)
        return shared
    if isinstance(v, (ast.List, ast.Tuple, ast.Dict)):
        return {e.id for e in (v.values if isinstance(v, ast.Dict) else v.elts) if isinstance(e, ast.Name)}
    return set()


def _writes_params(body, params):
    """Whether an in-place change may reach a parameter's memory, following the body in
    order: a name rebound at the top level to a value sharing no memory with one that
    holds a parameter's (``args = list(args)``, ``x = x * 2``) no longer holds it. (Inside
    branches and loops names are only ever added: a conservative answer.)"""
    holds = set(params)

    def visit(stmts, top):
        for s in stmts:
            m = mutated_name(s)
            if m is not None and m in holds:
                return True
            if isinstance(s, ast.Assign) and isinstance(s.targets[0], ast.Name):
                if _shared_with(s.value) & holds:
                    holds.add(s.targets[0].id)
                elif top:
                    holds.discard(s.targets[0].id)
            elif isinstance(s, ast.Expr) and m is not None and isinstance(s.value, ast.Call) and \
                    _shared_with(ast.List(elts=s.value.args, ctx=ast.Load())) & holds:
                holds.add(m)  # (lst.append(y): lst holds y)
            elif isinstance(s, (ast.If, ast.For, ast.While, ast.With)):
                while True:  # (a loop's later iterations see what its earlier ones added)
                    before = set(holds)
                    if visit(s.body, False) or visit(getattr(s, "orelse", []) or [], False):
                        return True
                    if holds == before:
                        break
        return False
    return visit(body, True)


def _linked(links, name):
    """The names linked to ``name``, directly or through others (not ``name`` itself)."""
    seen, todo = {name}, [name]
    while todo:
        for other in links.get(todo.pop(), ()):
            if other not in seen:
                seen.add(other)
                todo.append(other)
    return seen - {name}


def rebinds_in_place(body):
    """Whether some line is ``y += v`` on a name (written ``y = y + v``)."""
    return any(isinstance(s, ast.Assign) and getattr(s, "_in_place", False)
               for s in ast.walk(ast.Module(body=body, type_ignores=[])))
