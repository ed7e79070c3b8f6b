"""A rule's derivative as an expression of the user's variables.

A vjp or jvp in the rule table whose body is one ``return`` expression is a template:
its parameters are replaced by the adjoint's names (``g`` by ``dh``, ``out`` by ``h``,
``x`` by the operand), so ``tanh``'s rule ``g * (1 - out * out)`` is written into the
adjoint as ``dh * (1 - h * h)``. The other names it uses (``unbroadcast``, ``cos``,
constants) are bound as globals of the generated code. Rules with more than one
statement are called by name instead (``dw = matmul_vjp_y(dt, t, x, w)``).
"""
import ast
import copy
import inspect
import textwrap

from ..tape.numpy_map.base import ndim
from ..tape.tape import shape_of

__all__ = ["Template", "template", "rule_expr", "same_shape"]

_CACHE = {}

_SHAPE_OF = {"shape": shape_of, "ndim": ndim}  # (the tape's: they take Python numbers too)


class Template:
    """The parsed rule ``fn``: its parameter names and, when it is one expression, that
    expression."""

    def __init__(self, fn):
        self.fn = fn
        sig = inspect.signature(fn)
        self.params = list(sig.parameters)
        self.defaults = {k: p.default for k, p in sig.parameters.items()
                         if p.default is not inspect.Parameter.empty}
        self.expr = None
        try:
            text = textwrap.dedent(inspect.getsource(fn))
            tree = ast.parse(text)
        except (OSError, TypeError, SyntaxError):
            return
        from .source import matches
        if not matches(fn, text):  # (the file was edited since: the rule is called by name)
            return
        body = [s for s in tree.body[0].body
                if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
        if len(body) == 1 and isinstance(body[0], ast.Return) and body[0].value is not None:
            self.expr = body[0].value

    def instantiate(self, subs, bind, same_shape=False):
        """The expression with parameters replaced by ``subs`` (name -> AST) and other
        names by ``bind(name, object)``; ``same_shape``: the gradient already has the
        operand's shape, so ``unbroadcast(e, x)`` / ``expand_to(e, out)`` is just ``e``."""
        expr = copy.deepcopy(self.expr)
        glob = self.fn.__globals__

        class Sub(ast.NodeTransformer):
            def visit_Name(self, node):
                if node.id in subs:
                    return copy.deepcopy(subs[node.id])
                if node.id in glob:
                    return ast.Name(id=bind(glob[node.id], node.id), ctx=ast.Load())
                return node

            def visit_Attribute(self, node):
                # an operand's .shape / .ndim as shape_of(x) / ndim(x): in AST mode an
                # operand may be a Python float (math.exp's result), which has neither
                if isinstance(node.value, ast.Name) and node.value.id in subs and \
                        node.attr in ("shape", "ndim") and isinstance(node.ctx, ast.Load):
                    fn = _SHAPE_OF[node.attr]
                    return ast.Call(func=ast.Name(id=bind(fn, fn.__name__), ctx=ast.Load()),
                                    args=[copy.deepcopy(subs[node.value.id])], keywords=[])
                self.generic_visit(node)
                return node

            def visit_Call(self, node):
                if same_shape and isinstance(node.func, ast.Name) and \
                        node.func.id in ("unbroadcast", "expand_to") and len(node.args) == 2:
                    return self.visit(node.args[0])
                self.generic_visit(node)
                return node
        return Sub().visit(expr)


def template(fn):
    t = _CACHE.get(fn)
    if t is None:
        t = _CACHE[fn] = Template(fn)
    return t


def same_shape(prim, operands):
    """Whether an elementwise primitive's result has the shape of each array operand:
    all its Name operands are one variable (``h * h``) and the rest are literals."""
    names = {o.id for o in operands if isinstance(o, ast.Name)}
    return (prim.ufunc is not None or prim.diagonal) and len(names) <= 1


def rule_expr(fn, seed, out, operands, bind, same=False):
    """Rule ``fn`` (a vjp or jvp: ``fn(seed, out, *operands, **params)``) as an expression of
    the adjoint's names: its own expression where it is one, else a call of it by name.
    Parameters the call site does not give take their defaults."""
    t = template(fn)
    if t.expr is None:
        return ast.Call(func=ast.Name(id=bind(fn, fn.__name__), ctx=ast.Load()),
                        args=[seed, out, *operands], keywords=[])
    subs = {t.params[0]: seed, t.params[1]: out}
    for p, a in zip(t.params[2:], operands):
        subs[p] = a
    for p, default in t.defaults.items():
        subs.setdefault(p, ast.Constant(value=default))
    return t.instantiate(subs, bind, same_shape=same)
