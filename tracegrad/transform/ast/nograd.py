"""``with no_grad():`` in AST mode: what a statement inside the block does to derivatives.

PyTorch's (and the tape's) rule: inside ``no_grad()`` a *tensor operation* makes a value
with no derivative; everything else is Python moving objects around, and an object keeps
the derivative it has. So, inside the block:

* ``b = y``, ``t = (a, b)``, ``[a, b]``, ``{"k": a}``, ``lst.append(y)`` hand derivatives on
  as outside it (:func:`passes_through`: such statements are not no_grad statements);
* ``y += v`` on an array changes its value in place but not its derivative (the array
  keeps the one it had); on a number it makes a new value, a constant
  (:func:`kept_gradient`, :func:`kept_tangent`, decided at run time);
* ``y[i] = v`` on an array: likewise, the array keeps its derivative;
* an operator, an index or a method whose operand is a list, tuple or dict at run time
  (``t + (v,)``, ``lst[0]``, ``lst.pop()``) moves objects that keep their derivatives:
  the AST path refuses it at run time (:func:`check_operands`; ``mode="auto"`` then
  takes the tape, which follows it);
* a call of a user function or of a Python builtin that may return its argument
  (``ident(y)``, ``max(a, b)``, ``tuple(lst)``) is refused before running
  (:func:`refuse_unknown_calls`).
Everything else (NumPy and tracegrad functions, arithmetic on arrays) makes a constant.
"""
import ast
import builtins

from .aliasing import AliasError
from .resolve import CONSTANT, Direct, method_primitive

__all__ = ["passes_through", "runtime_operands", "refuse_unknown_calls", "check_statement", "where",
           "kept_gradient", "kept_tangent", "check_operands"]

CONSTRUCT = "in-place change under no_grad"
CONTAINER_CONSTRUCT = "list, tuple or dict under no_grad"

_CONTAINERS = (list, tuple, dict)

# builtins whose result is never one of their arguments (nor holds one)
_SAFE_BUILTINS = {len, float, int, bool, complex, isinstance, issubclass, type, range, print,
                  str, repr, round, abs, sum, any, all, hasattr, id, hash, callable, format}


def _loads(node):
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def passes_through(s):
    """Whether ANF statement ``s`` only moves objects (see the module docstring): no_grad()
    does not touch it."""
    if isinstance(s, ast.Assign) and isinstance(s.targets[0], ast.Name):
        return isinstance(s.value, (ast.Name, ast.Tuple, ast.List, ast.Dict)) \
            and not getattr(s, "_in_place", False)
    if isinstance(s, ast.Expr) and isinstance(s.value, ast.Call):
        f = s.value.func
        return isinstance(f, ast.Attribute) and f.attr == "append" and isinstance(f.value, ast.Name) \
            and len(s.value.args) == 1 and not s.value.keywords
    return False


def _call_of(s):
    if isinstance(s, (ast.Assign, ast.Expr)) and isinstance(s.value, ast.Call):
        return s.value
    return None


def runtime_operands(s, active):
    """The active names no_grad statement ``s`` reads that must be checked at run time
    (not a list, tuple or dict): operands of ``+``/``*``, the object indexed, a method's
    receiver and arguments, the object written into by ``y[i] = v``. Sorted."""
    names = set()
    if isinstance(s, ast.Assign):
        t = s.targets[0]
        if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name):
            names.add(t.value.id)
        v = s.value
        if getattr(s, "_in_place", False):
            pass  # (y += v: see kept_gradient)
        elif isinstance(v, ast.BinOp) and isinstance(v.op, (ast.Add, ast.Mult)):
            names |= _loads(v.left) | _loads(v.right)
        elif isinstance(v, ast.Subscript):
            names |= _loads(v.value)
    call = _call_of(s)
    if call is not None and isinstance(call.func, ast.Attribute) and method_primitive(call) is None:
        names |= _loads(call.func.value) | {n for a in call.args for n in _loads(a)} \
            | {n for k in call.keywords for n in _loads(k.value)}
    return sorted(names & active)


def _walk(body):
    for s in body:
        yield s
        for field in ("body", "orelse"):
            yield from _walk(getattr(s, field, []) or [])


def refuse_unknown_calls(body, nograd, active, resolver, located):
    """Raise the TransformError for the first no_grad statement (its id in ``nograd``) of
    ``body`` that passes a value being differentiated to a user function or to a builtin
    that may hand it back: what PyTorch would keep a derivative through, the AST path
    cannot tell. (NumPy's and tracegrad's functions, and the functions they make --
    ``tracegrad.grad(h)`` -- compute new arrays.)"""
    made = _made_by_library(body, resolver)
    for s in _walk(body):
        if id(s) not in nograd:
            continue
        call = _call_of(s)
        if call is None or isinstance(call.func, ast.Attribute):
            continue  # (methods: checked at run time)
        read = {n for a in call.args for n in _loads(a)} | {n for k in call.keywords for n in _loads(k.value)}
        if not read & active:
            continue
        if isinstance(call.func, ast.Name) and call.func.id in made:
            continue
        if isinstance(call.func, ast.Call) and _library_call(call.func, resolver):
            continue
        callee = resolver.callee(call)
        if callee is CONSTANT or isinstance(callee, Direct):
            continue
        ok, obj = resolver.value(call.func)
        if ok and _library(obj):
            continue
        if ok and getattr(builtins, getattr(obj, "__name__", ""), None) is obj and _safe_builtin(obj):
            continue
        src = getattr(s, "_src", None)
        text = located.text(src) if src is not None else ast.unparse(s)
        raise located.error(s, f"`{text}` calls a function under no_grad() with a value being "
                               f"differentiated ({', '.join(sorted(read & active))}): PyTorch keeps the "
                               "derivative of whatever it hands back unchanged, which the AST path "
                               "cannot tell (call it outside the no_grad block, or stop the value "
                               "with tracegrad.stop_gradient)", "call under no_grad")


def _library_call(call, resolver):
    ok, obj = resolver.value(call.func)
    return ok and _library(obj)


def _made_by_library(body, resolver):
    """Local names bound only to the results of NumPy's or tracegrad's functions (the
    functions ``tracegrad.grad(h)`` makes, among them)."""
    made, other = set(), set()
    for s in _walk(body):
        if isinstance(s, ast.Assign) and isinstance(s.targets[0], ast.Name):
            name = s.targets[0].id
            if isinstance(s.value, ast.Call) and _library_call(s.value, resolver):
                made.add(name)
            else:
                other.add(name)
        else:  # (a compound statement's own targets: its blocks are walked on their own)
            if isinstance(s, ast.For):
                heads = [s.target]
            elif isinstance(s, ast.With):
                heads = [i.optional_vars for i in s.items if i.optional_vars is not None]
            elif isinstance(s, (ast.If, ast.While)):
                heads = []
            else:
                heads = [s]
            for h in heads:
                other |= {n.id for n in ast.walk(h) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    return made - other


def _safe_builtin(obj):
    try:
        return obj in _SAFE_BUILTINS
    except TypeError:
        return False


def _library(fn):
    mod = getattr(fn, "__module__", "") or ""
    return mod.split(".")[0] in ("numpy", "tracegrad", "cupy", "scipy")


def check_statement(s, names, located, bind):
    """The run-time check before no_grad statement ``s`` that its operands ``names`` hold
    no list, tuple or dict (see :func:`check_operands`)."""
    ops = ast.Tuple(elts=[ast.Name(id=n, ctx=ast.Load()) for n in names], ctx=ast.Load())
    fn = ast.Name(id=bind(check_operands, "no_grad_check"), ctx=ast.Load())
    return ast.Expr(value=ast.Call(func=fn, args=[ops, where(located, s)], keywords=[]))


def where(located, s):
    """The ``(filename, line, text)`` constant a run-time check of ``s`` names."""
    lineno = getattr(s, "lineno", 0) + located.first_line - 1
    src = getattr(s, "_src", None)
    text = located.text(src) if src is not None else ast.unparse(s)
    return ast.Tuple(elts=[ast.Constant(value=located.filename), ast.Constant(value=lineno),
                           ast.Constant(value=text)], ctx=ast.Load())


# -- run time --------------------------------------------------------------------------------

def _is_array(value):
    data = getattr(value, "_data", None)  # a Tensor: its array
    if data is not None:
        value = data
    from ...backend import is_array
    return is_array(value) and getattr(value, "ndim", 0) > 0


def _refuse_in_place(value, at):
    filename, lineno, text = at
    from ..tape.tape import Var
    if isinstance(value, Var):
        why = ("inside another transform (the AST path writes it as a new value, which would "
               "carry no derivative on the outer transform's tape)")
    else:
        why = f"of a {type(value).__name__}: its items keep their derivatives, which the AST path does not follow"
    return AliasError(f"`{text}` is an in-place change under no_grad() {why}", filename, lineno, CONSTRUCT)


def _refused(value):
    from ..tape.tape import Var
    return isinstance(value, _CONTAINERS) or isinstance(value, Var)


def kept_gradient(g, value, at):
    """The gradient of ``y`` before ``y += v`` made under no_grad() (``value``: ``y``'s value),
    given ``g``, the gradient after it: an array changed in place keeps its derivative
    (``g`` itself); a number is a new value made under no_grad (None: a constant). Refused
    for a list (its items keep theirs) and on a tape (run by an outer transform, whose
    derivative of ``y`` the rewritten line ``y = y + v`` would cut)."""
    if _refused(value):
        raise _refuse_in_place(value, at)
    return g if _is_array(value) else None


def kept_tangent(t, value, at):
    """The tangent of ``y`` after ``y += v`` made under no_grad() (``value``: its new value),
    given ``t``, the tangent before it (see :func:`kept_gradient`)."""
    if _refused(value):
        raise _refuse_in_place(value, at)
    if _is_array(value):
        return t
    from .support import zero_tangent
    return zero_tangent(value)


def check_operands(values, at):
    """Refuse (at run time) a no_grad statement whose operand is a list, tuple or dict: the
    objects it moves keep their derivatives (see the module docstring)."""
    for v in values:
        if isinstance(v, _CONTAINERS):
            filename, lineno, text = at
            raise AliasError(f"`{text}` works on a {type(v).__name__} under no_grad(): the objects "
                             "it holds keep their derivatives, which the AST path does not follow",
                             filename, lineno, CONTAINER_CONSTRUCT)


check_operands.constant_result = True  # (a check, no derivative: see resolve.Resolver.callee)
