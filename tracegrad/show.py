"""``python -m tracegrad show FILE.py:FUNC``: print the gradient code tracegrad generates
for a function of your own, so you can read the adjoint without writing a script.

The AST mode (the default) needs only the function's source; the tape is traced for one
signature, so ``--mode tape`` needs example arguments (``--args``). The output is plain
Python (pipe it into a file); on a terminal it is highlighted with ANSI colours."""
import argparse
import importlib.util
import inspect
import io
import keyword
import os
import re
import sys
import tokenize
from pathlib import Path

__all__ = ["add_parser", "highlight", "run", "use_color"]


def add_parser(subparsers):
    """Add the ``show`` subcommand to ``subparsers`` (``python -m tracegrad``'s) and return it."""
    p = subparsers.add_parser(
        "show", help="print the generated gradient code of one of your functions",
        description="Print the gradient source tracegrad generates for FUNC, a module-level\n"
                    "function of FILE.py (AST mode: its source rewritten into its adjoint).",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n"
               "  python -m tracegrad show model.py:loss --wrt 0,1\n"
               "  python -m tracegrad show model.py:loss --mode tape "
               "--args \"np.ones(3), np.ones((3, 2))\"")
    p.add_argument("target", metavar="FILE.py:FUNC", help="the file and the function in it")
    p.add_argument("--mode", choices=("ast", "tape"), default="ast",
                   help="ast: rewrite the source (default); tape: trace one call (needs --args)")
    p.add_argument("--wrt", type=parse_argnums, default=0, metavar="N[,N...]",
                   help="positions of the arguments to differentiate, as argnums (default 0)")
    p.add_argument("--args", metavar="EXPR",
                   help="example arguments for --mode tape, a Python expression evaluated with "
                        "numpy as np and the file's globals, e.g. \"np.ones(3), np.ones((3, 2))\"")
    p.add_argument("--color", choices=("auto", "always", "never"), default="auto",
                   help="highlight the code (auto: on a terminal, unless NO_COLOR is set)")
    return p


def parse_argnums(text):
    """``"1"`` -> ``1``, ``"0,1"`` -> ``(0, 1)``: one number is an int argnums, as in grad()."""
    parts = [part.strip() for part in text.split(",")]
    if parts and parts[-1] == "" and len(parts) > 1:  # "0," is the one-element tuple
        parts.pop()
    try:
        numbers = tuple(int(part) for part in parts)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected argument positions like 0 or 0,1, not {text!r}") from None
    return numbers[0] if len(numbers) == 1 and "," not in text else numbers


def run(args, parser):
    """Carry out ``show`` with the parsed ``args``; usage errors go through ``parser.error``
    (exit 2), a function the chosen mode cannot differentiate exits with status 1."""
    import tracegrad

    path, name = split_target(args.target, parser)
    module = load_module(path, parser)
    fn = find_function(module, name, path, parser)
    if args.mode == "tape":
        if args.args is None:
            parser.error("--mode tape traces one call, so it needs example arguments: "
                         "--args \"np.ones(3), np.ones((3, 2))\" (a Python expression, numpy as np)")
        call_args = example_arguments(args.args, module, parser)
        argnums = check_argnums(args.wrt, fn, len(call_args), parser)
        gradient = tracegrad.grad(fn, argnums=argnums, mode="tape")
        try:
            gradient(*call_args)
        except tracegrad.TracerError as e:
            fail(f"cannot trace {name}: {e}")
    else:
        argnums = args.wrt
        if not has_star_args(fn):  # *args: let the transformation say it cannot take them
            argnums = check_argnums(args.wrt, fn, positional_count(fn), parser)
        gradient = tracegrad.grad(fn, argnums=argnums, mode="ast")
    try:  # (the code as it runs once hot: its elementwise runs as CPU kernels)
        source = gradient.fused_source
    except tracegrad.TransformError as e:
        params = inspect.signature(fn)
        fail(f"{e}\nhint: the tape traces a call instead of reading the source; try\n"
             f"  python -m tracegrad show {args.target} --mode tape --args \"...\"\n"
             f"with example values for {params} in place of ...")
    if not source.endswith("\n"):
        source += "\n"
    sys.stdout.write(highlight(source) if use_color(args.color, sys.stdout) else source)


def fail(message):
    """Report a function that cannot be differentiated (not a usage error): exit status 1."""
    print(f"python -m tracegrad show: error: {message}", file=sys.stderr)
    raise SystemExit(1)


def split_target(target, parser):
    """``"dir/model.py:loss"`` -> ``(Path("dir/model.py"), "loss")``."""
    file, sep, name = target.rpartition(":")
    if not sep or not file or not name:
        parser.error(f"expected FILE.py:FUNC (e.g. model.py:loss), not {target!r}")
    path = Path(file)
    if not path.is_file():
        parser.error(f"no such file: {file}")
    return path.resolve(), name


def module_name(path):
    """A module name for ``path``: its stem, made an identifier, unless that would shadow a
    module already imported from elsewhere (a file called numpy.py, say)."""
    name = re.sub(r"\W", "_", path.stem)
    if not name or name[0].isdigit():
        name = "_" + name
    existing = sys.modules.get(name)
    if existing is None or getattr(existing, "__file__", None) == str(path):
        return name
    return f"tracegrad_show_{name}"


def load_module(path, parser):
    """Import ``path`` as a module registered in ``sys.modules`` (so ``inspect.getsource``
    finds its functions), with its directory on ``sys.path`` while it runs so that it can
    import its neighbours."""
    name = module_name(path)
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        parser.error(f"cannot load {path} as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    folder = str(path.parent)
    sys.path.insert(0, folder)
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    finally:
        sys.path.remove(folder)
    return module


def defined_functions(module):
    """The names of the functions ``module`` defines itself (not the ones it imports)."""
    return [name for name, value in vars(module).items()
            if inspect.isfunction(value) and value.__module__ == module.__name__]


def find_function(module, name, path, parser):
    """The function ``name`` of ``module``, or a usage error listing what the file defines."""
    fn = getattr(module, name, None)
    if inspect.isfunction(fn):
        return fn
    names = defined_functions(module)
    listing = f"its functions: {', '.join(names)}" if names else "it defines no functions"
    problem = (f"no function {name!r} in {path}" if fn is None else
               f"{name!r} in {path} is a {type(fn).__name__}, not a function")
    parser.error(f"{problem}; {listing}")


def positional_count(fn):
    """How many positional parameters ``fn`` takes (what argnums index in AST mode)."""
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return sum(p.kind in kinds for p in inspect.signature(fn).parameters.values())


def has_star_args(fn):
    return any(p.kind is inspect.Parameter.VAR_POSITIONAL
               for p in inspect.signature(fn).parameters.values())


def check_argnums(argnums, fn, count, parser):
    """``argnums`` with negative positions counted from the end (so the generated code is
    named after the right parameters), or a usage error when ``--wrt`` names an argument
    ``fn`` is not given."""
    positions = (argnums,) if isinstance(argnums, int) else argnums
    if not positions:
        parser.error("--wrt needs at least one argument position")
    bad = [n for n in positions if not -count <= n < count]
    if bad:
        params = list(inspect.signature(fn).parameters)[:count]
        parser.error(f"--wrt {','.join(map(str, bad))} is out of range: {fn.__name__} has "
                     f"{count} positional argument(s) ({', '.join(params)})")
    positions = tuple(n % count for n in positions)
    return positions[0] if isinstance(argnums, int) else positions


def example_arguments(expression, module, parser):
    """Evaluate ``--args`` with the file's globals and numpy as ``np``; a tuple is the
    argument list, anything else the one argument."""
    import numpy

    namespace = {**vars(module), "np": numpy}
    try:
        value = eval(expression, namespace)
    except Exception as e:  # noqa: BLE001 (the user's expression: any error is a usage error)
        parser.error(f"--args {expression!r} does not evaluate: {type(e).__name__}: {e}")
    return value if isinstance(value, tuple) else (value,)


# -- highlighting ---------------------------------------------------------------------

RESET = "\033[0m"
STYLES = {"keyword": "\033[1;35m", "comment": "\033[3;90m", "string": "\033[32m",
          "number": "\033[36m"}
_STRING_TOKENS = {tokenize.STRING} | {getattr(tokenize, t) for t in
                                      ("FSTRING_START", "FSTRING_MIDDLE", "FSTRING_END")
                                      if hasattr(tokenize, t)}


def use_color(choice, stream):
    """``--color``: always, never, or (auto) when ``stream`` is a terminal and the user has
    not asked for plain text (NO_COLOR, https://no-color.org, or TERM=dumb)."""
    if choice != "auto":
        return choice == "always"
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty() and not os.environ.get("NO_COLOR")
                and os.environ.get("TERM") != "dumb")


def _style(token):
    if token.type == tokenize.NAME and keyword.iskeyword(token.string):
        return "keyword"
    if token.type == tokenize.COMMENT:
        return "comment"
    if token.type in _STRING_TOKENS:
        return "string"
    if token.type == tokenize.NUMBER:
        return "number"
    return None


def highlight(source):
    """``source`` with ANSI colours on keywords, comments, strings and numbers (stdlib
    ``tokenize`` only). Code that does not tokenize comes back unchanged."""
    lines = source.splitlines(True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    spans = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            style = _style(token)
            if style is not None:
                (r0, c0), (r1, c1) = token.start, token.end
                spans.append((starts[r0 - 1] + c0, starts[r1 - 1] + c1, style))
    except (tokenize.TokenError, SyntaxError):
        return source
    out, pos = [], 0
    for begin, end, style in spans:
        out += [source[pos:begin], STYLES[style], source[begin:end], RESET]
        pos = end
    out.append(source[pos:])
    return "".join(out)
