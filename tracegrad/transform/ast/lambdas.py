"""A lambda's syntax tree, found in its file by position.

A lambda's source line may hold other code, other lambdas among it
(``f, g = lambda x: x * 2, lambda x: x * 3``), so the line alone does not say which
one a function object is. Its code object does: ``co_positions()`` gives the line and
column span of each instruction, all of which lie inside the lambda's body. Of the
lambdas on its first line, the innermost one whose body holds every span is the one;
its text is then compiled again (never run) and its code compared with the code the
function runs, as for a ``def`` (see :func:`.source.matches`), so a file edited since
the lambda was made is refused, not differentiated.

The lambda is handed on as the ``def`` it stands for: ``lambda x: e`` is
``def lambda_(x): return e``, with the lambda's own line numbers.
"""
import ast
import copy
import linecache

import gast

from .source import _FUTURES, Located, TransformError, _find_code, in_scope, same_code

__all__ = ["lambda_tree", "LAMBDA_NAME"]

LAMBDA_NAME = "lambda_"
_PARSED = {}   # (filename, text) -> module tree (the last few files read)


def lambda_tree(fn):
    """``(FunctionDef, Located)`` for lambda ``fn``, or TransformError."""
    code = fn.__code__
    filename, line = code.co_filename, code.co_firstlineno
    lines = linecache.getlines(filename, getattr(fn, "__globals__", None))
    if not lines:
        raise TransformError("the source of this lambda is not available (typed at a prompt, or "
                             "made by exec)", filename, line, "source")
    text = "".join(lines)
    tree = _parse(filename, text)
    if tree is None:
        raise TransformError("the file holding this lambda does not parse", filename, line, "source")
    found = [n for n in _lambdas(tree) if n.lineno == line]
    spans = _spans(code)
    if spans:
        found = sorted((n for n in found if all(_inside(s, n.body) for s in spans)), key=_size)[:1]
    found = [n for n in found if _compiles_to(fn, n, text, filename)]
    if not found:
        raise TransformError("the lambda's source in the file no longer matches the code it runs "
                             "(was the file edited after it was imported? reload the module)",
                             filename, line, "lambda")
    if len(found) > 1 and len({ast.dump(n) for n in found}) > 1:
        raise TransformError(f"line {line} holds several lambdas that compile alike and this one "
                             "cannot be told from the others (Python runs without column "
                             "positions); define it with def", filename, line, "lambda")
    node = found[0]
    ret = ast.copy_location(ast.Return(value=copy.deepcopy(node.body)), node)
    fdef = ast.copy_location(ast.FunctionDef(name=LAMBDA_NAME, args=copy.deepcopy(node.args), body=[ret],
                                             decorator_list=[], returns=None, type_params=[]), node)
    return fdef, Located(fn, filename, 1, lines)


def _parse(filename, text):
    key = (filename, text)
    tree = _PARSED.get(key)
    if tree is None:
        try:
            tree = gast.gast_to_ast(gast.parse(text))
        except SyntaxError:
            return None
        if len(_PARSED) > 8:
            _PARSED.pop(next(iter(_PARSED)))
        _PARSED[key] = tree
    return tree


def _lambdas(tree):
    return [n for n in ast.walk(tree) if isinstance(n, ast.Lambda)]


def _spans(code):
    """``((line, col), (end_line, end_col))`` of each instruction that has a real span."""
    out = []
    for line, end, col, end_col in code.co_positions():
        if None in (line, end, col, end_col) or (line, col) == (end, end_col):
            continue
        out.append(((line, col), (end, end_col)))
    return out


def _inside(span, node):
    start, end = span
    return (node.lineno, node.col_offset) <= start and end <= (node.end_lineno, node.end_col_offset)


def _size(node):
    return (node.end_lineno - node.lineno, node.end_col_offset - node.col_offset)


def _compiles_to(fn, node, text, filename):
    """Whether the lambda's text compiles to the code ``fn`` runs (in a scope like its own)."""
    segment = ast.get_source_segment(text, node)
    if segment is None:
        return False
    code = fn.__code__
    source = in_scope(f"(\n{segment}\n)\n", code.co_freevars, getattr(fn, "__qualname__", ""))
    try:
        module = compile(source, filename, "exec", flags=code.co_flags & _FUTURES, dont_inherit=True)
    except (SyntaxError, ValueError):
        return False
    found = _find_code(module, code.co_name)
    return found is not None and same_code(found, code)
