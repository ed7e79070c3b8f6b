"""Statements the adjoint cannot write out, differentiated on a tape instead.

Some statements hand a value being differentiated to code the AST path never sees as
source -- ``grad(lambda y: y * x[0])(x[1])``, ``sorted(xs, key=lambda v: v * x)``: the
lambda captures ``x``, and what calls it would differentiate it without that
dependence. The tape follows such a statement, since it runs it: so the statement is
made a function of the names it reads from the function's own scope, compiled with the
function's globals, and called in its place (``t = line_3(x)``). The AST path calls
such a function as it calls a NumPy function it has no template for (``Generic`` in
:mod:`.resolve`): through a tape, once per signature, with the derivative of each
floating-point argument.

The AST transformation is first tried as is; a refusal that names a statement this
module can take (:data:`TAKES`) is retried with that statement on a tape
(:func:`retrying`), so nothing the AST path writes out itself changes.
"""
import ast
import dis
import itertools
import types

from ..emit import registered
from .source import TransformError, _find_code, in_scope

__all__ = ["TAKES", "is_on_tape", "keywords_as_positions", "put_on_tape", "retrying"]

# the constructs (TransformError.construct) a statement on a tape handles
TAKES = frozenset({"lambda capturing a value being differentiated"})
_SIMPLE = (ast.Return, ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Expr)
_counter = itertools.count()


def retrying(build):
    """``build(lines)`` with ``lines`` (source lines, as the function's tree numbers them,
    of statements to put on a tape) empty at first, then growing by the line of each
    refusal in :data:`TAKES` until it succeeds or is refused otherwise."""
    lines = frozenset()
    while True:
        try:
            return build(lines)
        except TransformError as e:
            line = getattr(e, "tree_line", None)
            if e.construct not in TAKES or line is None or line in lines:
                raise
            lines = lines | {line}


def refusal(located, node, message, construct):
    """``located.error`` that :func:`retrying` can act on (it knows the statement's line)."""
    err = located.error(node, message, construct)
    err.tree_line = getattr(node, "lineno", None)
    return err


def is_on_tape(obj):
    """Whether ``obj`` is a statement made a function here (called through the tape)."""
    return type(obj) is types.FunctionType and getattr(obj, "_tracegrad_on_tape", False)


def put_on_tape(node, lines, fn, scope, bind):
    """Rewrite, in ``node`` (the function's tree, local functions taken out), each simple
    statement spanning one of ``lines`` whose value holds a lambda: its value becomes a
    call of a function of the names it reads from ``scope`` (the function's own and
    closure names), bound in the generated code by ``bind(obj, hint)``."""
    if not lines:
        return
    for stmt in ast.walk(node):
        if not isinstance(stmt, _SIMPLE) or getattr(stmt, "value", None) is None:
            continue
        if not any(stmt.lineno <= line <= stmt.end_lineno for line in lines):
            continue
        if not any(isinstance(n, ast.Lambda) for n in ast.walk(stmt.value)):
            continue
        stmt.value = _call_of(stmt.value, fn, scope, bind)


def _free_names(expr):
    """The names ``expr`` reads from outside itself (not its lambdas' parameters nor its
    comprehensions' variables), as Python's own scoping decides: the global reads of
    ``expr`` compiled alone, in its nested code too."""
    code = compile(ast.Expression(body=expr), "<expr>", "eval", dont_inherit=True)
    out, todo = set(), [code]
    while todo:
        c = todo.pop()
        out |= {i.argval for i in dis.get_instructions(c) if i.opname in ("LOAD_GLOBAL", "LOAD_NAME")}
        todo += [k for k in c.co_consts if isinstance(k, types.CodeType)]
    return out


def _call_of(expr, fn, scope, bind):
    names = sorted(_free_names(expr) & set(scope))
    line = getattr(expr, "lineno", 0)
    name = f"line_{line}"
    text = f"def {name}({', '.join(names)}):\n    return ({ast.unparse(expr)})\n"
    filename = f"<on tape: {getattr(fn, '__qualname__', 'f')}, line {line}:{next(_counter)}>"
    source = in_scope(text, (), getattr(fn, "__qualname__", ""))  # (names mangled as in a class)
    code = _find_code(compile(source, filename, "exec", dont_inherit=True), name)
    made = types.FunctionType(code, fn.__globals__, name)
    made.__qualname__ = f"{getattr(fn, '__qualname__', 'f')}.{name}"
    made._tracegrad_on_tape = True
    registered(made, source, filename)  # (its lines readable: tracebacks, the tape's checks)
    func = ast.copy_location(ast.Name(id=bind(made, name), ctx=ast.Load()), expr)
    func._bound = made
    call = ast.Call(func=func, args=[ast.copy_location(ast.Name(id=n, ctx=ast.Load()), expr) for n in names],
                    keywords=[])
    return ast.copy_location(call, expr)


def keywords_as_positions(func, args, keywords, active):
    """A call traced on a tape, ``func(*args, **keywords)``, with the keyword arguments
    whose values are names in ``active`` passed last, positionally, to
    ``by_keyword(func, names)`` (which passes them on by keyword): the tape differentiates
    positional arguments. ``(func, args, keywords)``, unchanged where none is active."""
    moved = [k for k in keywords if k.arg is not None and isinstance(k.value, ast.Name) and k.value.id in active]
    if not moved:
        return func, args, keywords
    names = ast.Tuple(elts=[ast.Constant(value=k.arg) for k in moved], ctx=ast.Load())
    helper = ast.Name(id="by_keyword", ctx=ast.Load())
    helper._helper = True
    return (ast.Call(func=helper, args=[func, names], keywords=[]), list(args) + [k.value for k in moved],
            [k for k in keywords if k not in moved])
