"""Getting a function's syntax tree: its source (dedented), parsed with gast and handed
to the passes as a standard-library :mod:`ast` tree (what :func:`ast.unparse` prints),
with line numbers that point into the original file."""
import ast
import inspect
import textwrap

import gast

__all__ = ["TransformError", "function_tree", "Located"]


class TransformError(Exception):
    """The AST path cannot transform this function. The message names the file, the line
    and the construct, and the alternative (``mode="tape"``)."""

    def __init__(self, message, filename=None, lineno=None, construct=None):
        self.filename, self.lineno, self.construct = filename, lineno, construct
        where = f"{filename}, line {lineno}: " if filename else ""
        super().__init__(f"{where}{message}; use mode=\"tape\" (tracing) for this function, "
                         "or mode=\"auto\" to fall back to it")


class Located:
    """Where a function's source lives, to name it in errors and comments."""

    def __init__(self, fn, filename, first_line, lines):
        self.fn, self.filename, self.first_line, self.lines = fn, filename, first_line, lines

    def error(self, node, message, construct=None):
        line = getattr(node, "lineno", None)
        lineno = None if line is None else line + self.first_line - 1
        return TransformError(message, self.filename, lineno, construct)

    def text(self, node):
        """The first line of ``node``'s source, stripped (for ``# grad of:`` comments)."""
        line = getattr(node, "lineno", None)
        if line is None or line > len(self.lines):
            return ast.unparse(node).split("\n")[0]
        seg = ast.get_source_segment("".join(self.lines), node)
        return (seg or self.lines[line - 1]).split("\n")[0].strip()


def function_tree(fn):
    """``(FunctionDef, Located)`` for a Python function, or TransformError."""
    name = getattr(fn, "__qualname__", repr(fn))
    code = getattr(fn, "__code__", None)
    if code is None:
        raise TransformError(f"{name} is not a Python function (a builtin, a C function or "
                             "a callable object has no source to transform)", construct="source")
    filename = code.co_filename
    if getattr(fn, "__name__", "") == "<lambda>":
        raise TransformError("a lambda cannot be transformed (its source line may hold other "
                             "code); define it with def", filename, code.co_firstlineno, "lambda")
    try:
        lines, first = inspect.getsourcelines(fn)
    except (OSError, TypeError):
        raise TransformError(f"the source of {name} is not available (typed at a prompt, or "
                             "made by exec)", filename, code.co_firstlineno, "source") from None
    source = textwrap.dedent("".join(lines))
    try:
        module = gast.parse(source)
    except SyntaxError as e:
        raise TransformError(f"the source of {name} does not parse on its own ({e.msg})",
                             filename, first, "source") from None
    tree = gast.gast_to_ast(module)
    ast.fix_missing_locations(tree)
    node = tree.body[0]
    if not isinstance(node, ast.FunctionDef):
        raise TransformError(f"{name} is not defined by a def statement", filename, first, "source")
    node.decorator_list = []
    return node, Located(fn, filename, first, source.splitlines(True))
