"""Getting a function's syntax tree: its source (dedented), parsed with gast and handed
to the passes as a standard-library :mod:`ast` tree (what :func:`ast.unparse` prints),
with line numbers that point into the original file.

The text comes from the file on disk, which may have been edited since the function was
defined: the text is compiled again (not run) and its code compared with the code the
function runs, and a mismatch is refused rather than differentiating other code."""
import __future__
import ast
import copy
import dis
import inspect
import textwrap
import types
import weakref

import gast

__all__ = ["TransformError", "function_tree", "Located", "matches", "same_code", "in_scope", "class_name"]


class TransformError(Exception):
    """The AST path cannot transform this function. The message names the file, the line
    and the construct, and the alternative (``mode="tape"``)."""

    ADVICE = "use mode=\"tape\" (tracing) for this function, or mode=\"auto\" to fall back to it"

    def __init__(self, message, filename=None, lineno=None, construct=None, advice=ADVICE):
        self.filename, self.lineno, self.construct = filename, lineno, construct
        where = f"{filename}, line {lineno}: " if filename else ""
        super().__init__(f"{where}{message}; {advice}")


class ArgumentsChanged(TransformError):
    """A callee the adjoint could only trace when it ran (a function passed as a value, a
    method) changed an argument in place (see callee_checks.refuse_written_arguments): a
    list's or dict's item, an object's attribute, or an array that ran writeable (see
    opaque_calls.py).
    Raised after the forward ran it, so what it wrote is changed: mode="auto" says so
    (``arguments_changed``) rather than run the function again on the tape from there."""

    arguments_changed = True

    def __init__(self, name):
        super().__init__(f"{name}, called from the function being differentiated, changed an argument in "
                         "place (a write into it or a view of it, +=, or a new item or attribute); the "
                         "adjoint written from the source differentiates that call from the changed "
                         "values, which would give a wrong gradient, and what was passed to the call is "
                         "already changed, so it is not run again", construct="in-place change of an argument",
                         advice="use mode=\"tape\" (tracing) for this function, which follows the write")


class WritesIntoArgument(TransformError):
    """A callee the adjoint runs as it is, unread (a function passed as a value, an
    object's method, a callable object, a function whose writes depend on what its globals
    hold), tried to write into an array passed to it, or held by its object, the objects
    passed or its globals: during the call those arrays are read-only (see
    callee_checks.read_only_call), so NumPy refused the write and nothing was changed --
    mode="auto" runs the tape instead."""

    def __init__(self, name, why):
        super().__init__(f"{name}, called from the function being differentiated, writes into an array "
                         f"passed to it or held by its object or an object passed to it or by a global it "
                         f"reads ({why}); the code written from the source reads its arrays as they were "
                         "where they were read, which such a write would change under it (the write was "
                         "stopped: the array is unchanged)",
                         construct="in-place change of an argument")


class Untransformable(TransformError):
    """A function called by the one being transformed cannot be transformed itself
    (``reason``): the call is differentiated through the tape instead, as calls of
    NumPy functions are (see :mod:`.resolve`)."""

    def __init__(self, fn, reason):
        self.fn, self.reason = fn, reason
        super().__init__(f"{getattr(fn, '__qualname__', fn)}: {reason}", construct="callee")


class Located:
    """Where a function's source lives, to name it in errors and comments."""

    def __init__(self, fn, filename, first_line, lines):
        self.fn, self.filename, self.first_line, self.lines = fn, filename, first_line, lines
        self._source = None

    def error(self, node, message, construct=None):
        line = getattr(node, "lineno", None)
        lineno = None if line is None else line + self.first_line - 1
        return TransformError(message, self.filename, lineno, construct)

    def text(self, node):
        """The first line of ``node``'s source, stripped (for ``# grad of:`` comments)."""
        line = getattr(node, "lineno", None)
        if line is None or line > len(self.lines):
            return ast.unparse(node).split("\n")[0]
        if self._source is None:
            self._source = "".join(self.lines)
        seg = ast.get_source_segment(self._source, node)
        return (seg or self.lines[line - 1]).split("\n")[0].strip()


class ByCode:
    """A cache keyed by code objects *by identity* (equal code objects may come from two
    files: code compares without its file name), held weakly."""

    def __init__(self):
        self._entries = {}

    def get(self, code):
        entry = self._entries.get(id(code))
        return entry[1] if entry is not None and entry[0]() is code else None

    def __setitem__(self, code, value):
        key = id(code)
        self._entries[key] = (weakref.ref(code, lambda r: self._entries.pop(key, None)
                                          if self._entries.get(key, (None,))[0] is r else None), value)


_TREES = ByCode()   # code object -> (FunctionDef, Located) or TransformError


def function_tree(fn):
    """``(FunctionDef, Located)`` for a Python function, or TransformError. Read, parsed
    and checked once per code object (closures made again and again share theirs); each
    caller gets a copy of the tree to rewrite."""
    code = getattr(fn, "__code__", None)
    found = _TREES.get(code) if code is not None else None
    if found is None:
        try:
            node, located = _function_tree(fn)
            found = (node, located.filename, located.first_line, located.lines)  # (not fn itself)
        except TransformError as e:
            found = e
        if code is not None:
            _TREES[code] = found
    if isinstance(found, TransformError):
        raise found
    node, filename, first_line, lines = found
    return copy.deepcopy(node), Located(fn, filename, first_line, lines)


def _function_tree(fn):
    name = getattr(fn, "__qualname__", repr(fn))
    code = getattr(fn, "__code__", None)
    if code is None:
        raise TransformError(f"{name} is not a Python function (a builtin, a C function or "
                             "a callable object has no source to transform)", construct="source")
    filename = code.co_filename
    if getattr(fn, "__name__", "") == "<lambda>":
        from .lambdas import lambda_tree
        return lambda_tree(fn)
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
    if not matches(fn, source, filename):
        raise TransformError(f"the source of {name} in the file no longer matches the code it "
                             "runs (was the file edited after it was imported? reload the module)",
                             filename, first, "source")
    node.decorator_list = []
    return node, Located(fn, filename, first, source.splitlines(True))


_FUTURES = 0
for _f in __future__.all_feature_names:
    _FUTURES |= getattr(__future__, _f).compiler_flag
_NESTED = inspect.CO_NESTED


def matches(fn, source, filename="<source>"):
    """Whether ``source`` (a dedented ``def``, decorators included) compiles to the code
    ``fn`` runs (compiled, never run, in a scope like the function's own: see
    :func:`in_scope`)."""
    code = fn.__code__
    text = in_scope(source, code.co_freevars, getattr(fn, "__qualname__", ""))
    try:
        module = compile(text, filename, "exec", flags=code.co_flags & _FUTURES, dont_inherit=True)
    except (SyntaxError, ValueError):
        return False
    found = _find_code(module, code.co_name)
    if found is not None and same_code(found, code):
        return True
    found = _as_pytest_compiled(fn, text, filename)
    return found is not None and same_code(found, code)


def _as_pytest_compiled(fn, text, filename):
    """The code of ``fn`` compiled from ``text`` as pytest compiles a test module: pytest
    rewrites the ``assert`` statements of the modules it collects (which then hold its
    helper ``@pytest_ar``), so a function defined in a test file runs other code than its
    source compiles to -- the same checks, with messages. None where that is not so."""
    if "@pytest_ar" not in getattr(fn, "__globals__", {}):
        return None
    try:
        from _pytest.assertion.rewrite import rewrite_asserts
        tree = ast.parse(text)
        rewrite_asserts(tree, text.encode(), filename)
        module = compile(tree, filename, "exec", flags=fn.__code__.co_flags & _FUTURES, dont_inherit=True)
    except Exception:  # (another pytest: no match, as without it)
        return None
    return _find_code(module, fn.__code__.co_name)


def in_scope(source, freevars, qualname):
    """``source`` (a ``def``) placed so that it compiles as it did where it was written:
    inside a class of its class's name (private names are mangled) and inside a function
    whose parameters are its free variables (so that they are closure reads). The code
    object is then taken from the compiled constants; nothing of this runs."""
    cls = class_name(qualname)
    if cls is not None:
        source = f"class {cls}:\n" + textwrap.indent(source, "    ")
    free = [n for n in freevars if not (cls is not None and n == "__class__")]
    if free:
        source = f"def _tracegrad_scope_({', '.join(free)}):\n" + textwrap.indent(source, "    ")
    return source


def class_name(qualname):
    """The name of the class a function of qualified name ``qualname`` is defined in, or
    None."""
    parts = qualname.split(".")
    return parts[-2] if len(parts) > 1 and parts[-2].isidentifier() else None


def _find_code(code, name):
    """The shallowest code object named ``name`` among ``code``'s constants (breadth first)."""
    level = [code]
    while level:
        inner = [c for k in level for c in k.co_consts if isinstance(c, type(code))]
        for c in inner:
            if c.co_name == name:
                return c
        level = inner
    return None


def same_code(a, b):
    """Code objects that do the same: instructions (jump targets as instruction numbers),
    constants (nested code compared the same way), names and signature; line numbers,
    file names and qualified names aside. A method call may compile to ``LOAD_ATTR`` or
    ``LOAD_METHOD`` depending on the rest of the module, so the two count as one."""
    fields = ("co_names", "co_varnames", "co_freevars", "co_cellvars", "co_argcount",
              "co_posonlyargcount", "co_kwonlyargcount", "co_name")
    if any(getattr(a, f, None) != getattr(b, f, None) for f in fields):
        return False
    if a.co_flags & ~_NESTED != b.co_flags & ~_NESTED or len(a.co_consts) != len(b.co_consts):
        return False
    for x, y in zip(a.co_consts, b.co_consts):
        if isinstance(x, types.CodeType) and isinstance(y, types.CodeType):
            if not same_code(x, y):
                return False
        elif type(x) is not type(y) or repr(x) != repr(y):
            return False
    return _instructions(a) == _instructions(b)


_SAME_OP = {"LOAD_METHOD": "LOAD_ATTR", "CALL_METHOD": "CALL"}
_JUMPS = set(dis.hasjrel) | set(dis.hasjabs)


def _instructions(code):
    every = list(dis.get_instructions(code))
    # PUSH_NULL goes with LOAD_ATTR where LOAD_METHOD needs none (see same_code): left out,
    # and a jump to one lands on the instruction after it
    ins = [i for i in every if i.opname != "PUSH_NULL"]
    at, k = {}, 0
    for i in every:
        at[i.offset] = k
        k += i.opname != "PUSH_NULL"
    out = []
    for i in ins:
        if i.opcode in _JUMPS:
            arg = at.get(i.argval)
        elif isinstance(i.argval, types.CodeType):
            arg = None  # (compared with the constants)
        else:
            arg = (type(i.argval), repr(i.argval))
        out.append((_SAME_OP.get(i.opname, i.opname), arg))
    return out
