"""The Python code emitter shared by the tape and AST paths.

It turns rule-table primitive applications into one readable line each (operators
where the kernel *is* an operator, ``xp.tanh(x)`` where it is a ufunc, otherwise a call
of the kernel through the backend namespace ``xp``), binds the objects the code needs
(kernels, constants) as globals of the generated module, and compiles the source with
a file name registered in :mod:`linecache`, so tracebacks and ``inspect`` show the
generated lines.
"""
import itertools
import keyword
import linecache
import math
import re
import types
import weakref

from ..backend import cpu as np  # host-side type checks only

from ..rules.core import Primitive

__all__ = ["registered", "Module", "prim_expr", "elementwise", "compile_source", "compile_parts", "fresh_name"]

# kernels that are exactly one Python operator on their operands
_BINARY = {"add": "+", "sub": "-", "mul": "*", "div": "/", "gt": ">", "ge": ">=", "lt": "<",
           "le": "<=", "eq": "==", "ne": "!="}

_counter = itertools.count()
_GENERATED_CALLS = {"bool", "int", "float", "complex", "len", "tuple", "list", "dict", "slice",
                    "range", "print", "isinstance", "type", "object", "Ellipsis", "None", "True",
                    "False"}


def fresh_name(used, base, sep=""):
    """``base``, or ``base<sep>1``, ``base<sep>2``... -- the first not in ``used`` (which
    then holds it)."""
    name, k = base, 1
    while name in used:
        name = f"{base}{sep}{k}"
        k += 1
    used.add(name)
    return name


def compile_source(source, name, env, tag="tracegrad", compiled=None):
    """Compile ``source`` (defining function ``name``) in globals ``env`` under a unique
    file name registered in linecache; return the function. The linecache entry lives as
    long as the function: it is removed when the function is freed. ``compiled``: the text
    compiled instead, where it differs from the source shown line for line."""
    filename = _filename(tag, name)
    code = compile(source if compiled is None else compiled, filename, "exec")
    exec(code, env)
    return registered(env[name], source, filename)


def compile_parts(source, name, env, params, prelude, parts, tag="tracegrad"):
    """Function ``name`` of ``source`` -- a long straight-line function -- compiled as a
    chain of smaller functions, so that the compiler's working memory (its syntax tree of
    the whole body) stays bounded. ``prelude`` is the text before the ``def`` line (helper
    functions: compiled as it is); ``parts`` are ``(first_line, in_names, body, out_names)``:
    a stretch of the body (its lines, indented as in ``source``, starting at line
    ``first_line`` of ``source``), the locals live on entry and those live after it (None
    for the last part, which ends with the function's ``return``). Line numbers point into
    ``source``, which linecache shows for every part."""
    filename = _filename(tag, name)
    if prelude:
        exec(compile(prelude, filename, "exec"), env)
    chain = []
    for k, (first, ins, body, outs) in enumerate(parts):
        text = [f"def {name}__{k}({', '.join(ins)}):", body]
        if outs is not None:
            text.append(f"    return ({', '.join(outs)}{',' if len(outs) == 1 else ''})")
        code = compile("\n".join(text) + "\n", filename, "exec")
        fcode = next(c for c in code.co_consts if hasattr(c, "co_code"))
        # the body's first line is line 2 of this text and line ``first`` of ``source``
        fcode = fcode.replace(co_firstlineno=first - 1)
        chain.append(types.FunctionType(fcode, env, f"{name}__{k}"))
    env[f"{name}__parts"] = tuple(chain)
    stub = (f"def {name}({', '.join(params)}):\n"
            f"    values = {name}__parts[0]({', '.join(params)}{',' if len(params) == 1 else ''})\n"
            f"    for part in {name}__parts[1:]:\n"
            f"        values = part(*values)\n"
            f"    return values\n")
    exec(compile(stub, filename, "exec"), env)
    return registered(env[name], source, filename)


def _filename(tag, name):
    return f"<{tag}:{name}:{next(_counter)}>"


def registered(fn, source, filename):
    """``fn`` with ``source`` registered in linecache under ``filename`` for as long as
    ``fn``'s code lives (tracebacks and ``inspect`` show the generated lines, and a lambda in
    them can be found by its position). Tied to the code, not the function: the AST cache
    rebinds the same code to new functions (new closures) after the first one is gone."""
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    weakref.finalize(fn.__code__, linecache.cache.pop, filename, None)
    fn.__source__ = source
    return fn


class Module:
    """One generated function under construction: its local names, the globals it needs,
    and its lines."""

    def __init__(self, reserved=()):
        self.env = {}
        self._ids = {}        # id(obj) -> global name (bound objects)
        # builtins the generated code itself calls stay unshadowed; kernels may take the
        # other builtins' names (``sum``, ``pow``), which reads better than ``sum_1``
        self.used = set(reserved) | _GENERATED_CALLS | set(keyword.kwlist)
        self.lines = []
        self.prelude = []     # source blocks (helper functions) placed before the function

    def local(self, hint):
        """A fresh local name based on ``hint``."""
        base = hint if hint.isidentifier() and not keyword.iskeyword(hint) else "v"
        return fresh_name(self.used, base, "_")

    def bind(self, obj, hint):
        """The global name under which the generated code reads ``obj``."""
        name = self._ids.get(id(obj))
        if name is None:
            name = self.local(hint)
            self._ids[id(obj)] = name
            self.env[name] = obj  # (which also keeps ``obj`` alive, so its id stays its own)
        return name

    def literal(self, value, hint="k"):
        """Source text for a parameter or operand value that is not a Var."""
        if value is None or isinstance(value, (bool, str)):
            return repr(value)
        if isinstance(value, int):
            return repr(value)
        if isinstance(value, float):
            if math.isfinite(value):
                return repr(value)
            return self.bind(value, "inf" if value > 0 else ("neg_inf" if value < 0 else "nan"))
        if isinstance(value, complex):
            return repr(value)
        if isinstance(value, tuple):
            inner = ", ".join(self.literal(v, hint) for v in value)
            return f"({inner},)" if len(value) == 1 else f"({inner})"
        if isinstance(value, list):
            return "[" + ", ".join(self.literal(v, hint) for v in value) + "]"
        if isinstance(value, dict) and all(isinstance(k, str) for k in value):
            return "{" + ", ".join(f"{k!r}: {self.literal(v, hint)}" for k, v in value.items()) + "}"
        if isinstance(value, slice):
            return f"slice({self.literal(value.start)}, {self.literal(value.stop)}, {self.literal(value.step)})"
        if value is Ellipsis:
            return "..."
        if isinstance(value, Primitive):
            return self.bind(value, value.name)
        if isinstance(value, np.dtype):
            return self.bind(value, value.name)
        return self.bind(value, hint)

    def emit(self, line, indent=1):
        self.lines.append("    " * indent + line)

    def source(self, name, params, doc=None):
        head = f"def {name}({', '.join(params)}):"
        body = ([f'    """{doc}"""'] if doc else []) + (self.lines or ["    pass"])
        return "".join(block + "\n\n" for block in self.prelude) + "\n".join([head] + body) + "\n"


def elementwise(prim, params, metas):
    """Whether :func:`prim_expr` writes this application as one operator or ``xp.<ufunc>``
    call: what an elementwise-fusing compiler (``cupy.fuse``, Numba) can take. The rule
    table says which primitives are such (``scalar=True``)."""
    if params or not prim.scalar:
        return False
    if prim.name in _BINARY or prim.name == "neg":
        return True
    return prim.ufunc is not None and all(m is None or m[1].kind in "fc" for m in metas)


def prim_expr(module, prim, args, params, metas=None, xp="xp"):
    """Source text of ``prim(*args, **params)``; ``args`` are operand source texts (Var
    names or literals), ``metas`` the operands' ``(shape, dtype)`` where known (None for
    literals), ``xp`` the name of the array namespace it computes with. Operators and
    ufunc calls are used only where NumPy gives exactly the kernel's result (float
    operands; matmul of two vectors stays a kernel call)."""
    name = prim.name
    metas = metas or [None] * len(args)
    op = _BINARY.get(name)
    if op is not None and not params:
        left = args[0] if _simple(args[0]) else f"({args[0]})"
        right = args[1] if _simple(args[1]) else f"({args[1]})"
        return f"{left} {op} {right}"
    if name == "neg" and not params:
        return f"-{args[0]}" if _simple(args[0]) else f"-({args[0]})"
    if name == "matmul" and None not in metas and not (len(metas[0][0]) == 1 and len(metas[1][0]) == 1):
        return f"{args[0]} @ {args[1]}"
    if elementwise(prim, params, metas):
        return f"{xp}.{prim.ufunc}({', '.join(args)})"
    from .tape.tape import _is_default
    kernel = module.bind(prim.impl, name)
    parts = [xp] + list(args) + [f"{k}={module.literal(v)}" for k, v in params.items()
                                   if not _is_default(prim, k, v)]
    return f"{kernel}({', '.join(parts)})"


def _simple(expr):
    return expr.replace("_", "a").replace(".", "a").isalnum() or _number(expr) or \
        _INDEXED_OR_CALL.fullmatch(expr) is not None


# ``a[j]`` and ``np.float32(1.01)``: one operand in a CPU kernel's lines
_INDEXED_OR_CALL = re.compile(r"[A-Za-z_][\w.]*(\[\w+\]|\([\w.]+\))")


def _number(expr):
    try:
        float(expr)
        return not expr.startswith("-")
    except ValueError:
        return False
