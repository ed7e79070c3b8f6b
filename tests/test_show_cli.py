"""``python -m tracegrad show FILE.py:FUNC`` prints the gradient code of a user's function:
the AST adjoint by default, the tape's code with ``--mode tape --args``; bad usage exits 2
through argparse, a function the AST path cannot read exits 1 with a hint."""
import ast
import contextlib
import io
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import tracegrad
from tracegrad import show, tour
from tracegrad.__main__ import main

MODEL = '''
import numpy as np

WIDTH = 3


def f(x, w):
    h = np.tanh(x @ w)
    return np.sum(h * h)


def squares(x):
    try:
        return np.sum(x ** 2)
    except ValueError:
        return 0.0


def starred(*xs):
    global WIDTH
    return np.sum(xs[0])


def sorted_sum(x):
    return np.sum(np.searchsorted(x, 0.5) * x)
'''
ANSI = re.compile(r"\x1b\[[0-9;]*m")
REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _forget_loaded_files(tmp_path_factory):
    """show registers the files it loads in sys.modules; drop those (and only those: the
    library's own lazily imported modules stay) after each test."""
    base = str(tmp_path_factory.getbasetemp())
    before = set(sys.modules)
    yield
    for name in set(sys.modules) - before:
        if (getattr(sys.modules[name], "__file__", None) or "").startswith(base):
            del sys.modules[name]


@pytest.fixture
def model(tmp_path):
    path = tmp_path / "show_model.py"
    path.write_text(MODEL)
    return path


def run_show(capsys, *argv):
    """``main(["show", *argv])``: (exit status, stdout, stderr)."""
    try:
        status = main(["show", *map(str, argv)])
    except SystemExit as e:
        status = e.code
    out, err = capsys.readouterr()
    return status or 0, out, err


def function_def(source):
    """The first ``def`` of a printed source (which must parse); the adjoints of the
    user functions it calls follow it."""
    node = ast.parse(source).body[0]
    assert isinstance(node, ast.FunctionDef)
    return node


def returned_names(node):
    value = node.body[-1].value
    return [e.id for e in value.elts] if isinstance(value, ast.Tuple) else [value.id]


def loaded(path, name):
    return getattr(show.load_module(path, parser=None), name)


def test_ast_source_is_the_adjoint_of_the_chosen_argument(model, capsys):
    status, out, err = run_show(capsys, f"{model}:f", "--wrt", "1", "--color", "never")
    assert (status, err) == (0, "")
    node = function_def(out)
    assert node.name == "df_dw"
    assert [a.arg for a in node.args.args] == ["x", "w", "dout"]
    assert returned_names(node) == ["dw"]
    assert "# grad of: return np.sum(h * h)" in out
    assert "# grad of: h = np.tanh(x @ w)" in out
    assert out == tracegrad.grad(loaded(model, "f"), argnums=1, mode="ast").fused_source  # (as it runs once hot)


def test_wrt_several_arguments_returns_a_tuple(model, capsys):
    status, out, _ = run_show(capsys, f"{model}:f", "--wrt", "0,1")
    assert status == 0
    node = function_def(out)
    assert node.name == "df_dx_dw"
    assert returned_names(node) == ["dx", "dw"]
    # negative positions count from the end and name the right parameter
    assert run_show(capsys, f"{model}:f", "--wrt", "0,-1")[1] == out


def test_wrt_defaults_to_the_first_argument(model, capsys):
    status, out, _ = run_show(capsys, f"{model}:f")
    assert status == 0
    assert function_def(out).name == "df_dx"
    assert returned_names(function_def(out)) == ["dx"]


def test_tape_mode_traces_the_example_arguments(model, capsys):
    args = "np.ones(WIDTH), np.ones((WIDTH, 2))"  # the file's globals are in scope
    status, out, err = run_show(capsys, f"{model}:f", "--mode", "tape", "--wrt", "1", "--args", args)
    assert (status, err) == (0, "")
    # the tape as it runs once hot: its CPU kernels (where Numba is installed) come first
    node = [n for n in ast.parse(out).body if isinstance(n, ast.FunctionDef)][-1]
    assert node.name == "df_dw"
    assert [a.arg for a in node.args.args] == ["x", "w"]  # no seed: the tape's code
    assert "tanh(" in out and "# grad of" not in out
    tape = tracegrad.grad(loaded(model, "f"), argnums=1, mode="tape")
    tape(np.ones(3), np.ones((3, 2)))
    assert out == tape.fused_source


def test_tape_mode_without_example_arguments_is_a_usage_error(model, capsys):
    status, out, err = run_show(capsys, f"{model}:f", "--mode", "tape")
    assert (status, out) == (2, "")
    assert "--mode tape traces one call, so it needs example arguments" in err


def test_example_arguments_that_do_not_evaluate(model, capsys):
    status, _, err = run_show(capsys, f"{model}:f", "--mode", "tape", "--args", "np.ones(3), nope")
    assert status == 2
    assert "does not evaluate: NameError" in err


def test_transform_error_exits_1_with_a_hint_to_trace(model, capsys):
    status, out, err = run_show(capsys, f"{model}:squares")
    assert (status, out) == (1, "")
    line = MODEL.splitlines().index("    try:") + 1
    assert f"{model}, line {line}: the AST transformation cannot handle a try statement" in err
    assert f"show {model}:squares --mode tape --args" in err
    assert "example values for (x)" in err
    # ... and the tape does take it
    status, out, _ = run_show(capsys, f"{model}:squares", "--mode", "tape", "--args", "np.arange(3.0)")
    assert status == 0 and function_def(out).name == "dsquares_dx"


def test_a_global_statement_is_a_transform_error(model, capsys):
    status, _, err = run_show(capsys, f"{model}:starred")
    assert status == 1
    assert "global" in err


def test_what_the_tape_cannot_trace_exits_1(model, capsys):
    status, out, err = run_show(capsys, f"{model}:sorted_sum", "--mode", "tape", "--args", "np.ones(3)")
    assert (status, out) == (1, "")
    assert "cannot trace sorted_sum:" in err and "searchsorted" in err


@pytest.mark.parametrize("target, message", [
    ("{model}:g", "no function 'g' in {model}; its functions: f, squares, starred, sorted_sum"),
    ("{model}:np", "'np' in {model} is a module, not a function"),
    ("{model}", "expected FILE.py:FUNC"),
    ("{missing}:f", "no such file: {missing}"),
])
def test_what_cannot_be_found_is_a_usage_error(model, capsys, target, message):
    fill = {"model": model, "missing": model.with_name("missing.py")}
    status, out, err = run_show(capsys, target.format(**fill))
    assert (status, out) == (2, "")
    assert message.format(**fill) in err


@pytest.mark.parametrize("wrt, message", [
    ("2", "--wrt 2 is out of range: f has 2 positional argument(s) (x, w)"),
    ("0,-3", "--wrt -3 is out of range"),
    ("x", "expected argument positions like 0 or 0,1, not 'x'"),
])
def test_bad_wrt_is_a_usage_error(model, capsys, wrt, message):
    status, _, err = run_show(capsys, f"{model}:f", f"--wrt={wrt}")
    assert status == 2
    assert message in err


def test_file_imports_its_neighbours_and_sys_path_is_restored(tmp_path, capsys):
    (tmp_path / "show_helper.py").write_text("def scale(v):\n    return v * 3.0\n")
    path = tmp_path / "show_user.py"
    path.write_text("from show_helper import scale\n\n\ndef g(x):\n    return scale(x) * x\n")
    before = list(sys.path)
    status, out, _ = run_show(capsys, f"{path}:g")
    assert status == 0 and function_def(out).name == "dg_dx"
    assert "def dscale(dout, v):" in out  # the neighbour's function, transformed too
    assert sys.path == before
    assert loaded(path, "g")(2.0) == 12.0


def test_a_file_named_like_a_module_does_not_replace_it(tmp_path, capsys):
    import json
    path = tmp_path / "json.py"
    path.write_text(MODEL)
    status, out, _ = run_show(capsys, f"{path}:f")
    assert status == 0 and function_def(out).name == "df_dx"
    assert sys.modules["json"] is json


def test_color_always_highlights_and_never_does_not(model, capsys):
    _, plain, _ = run_show(capsys, f"{model}:f", "--color", "never")
    _, colored, _ = run_show(capsys, f"{model}:f", "--color", "always")
    assert "\x1b[" not in plain
    assert ANSI.sub("", colored) == plain
    assert f"{show.STYLES['keyword']}def{show.RESET} df_dx" in colored
    assert f"{show.STYLES['comment']}# forward{show.RESET}" in colored


def test_highlight_marks_keywords_comments_strings_and_numbers():
    source = textwrap.dedent('''\
        def h(x):  # note
            s = """two
            lines"""
            return x * 2.5 if s else None
        ''')
    out = show.highlight(source)
    assert ANSI.sub("", out) == source
    styled = {(m.group(1), m.group(2)) for m in re.finditer(r"(\x1b\[[0-9;]+m)(.*?)\x1b\[0m", out, re.DOTALL)}
    k, c, s, n = (show.STYLES[name] for name in ("keyword", "comment", "string", "number"))
    assert styled == {(k, "def"), (c, "# note"), (s, '"""two\n    lines"""'), (k, "return"),
                      (n, "2.5"), (k, "if"), (k, "else"), (k, "None")}
    assert show.highlight('x = """never closed\n') == 'x = """never closed\n'


class _Terminal:
    def __init__(self, tty):
        self.tty = tty

    def isatty(self):
        return self.tty


def test_auto_color_only_on_a_terminal_without_no_color(monkeypatch):
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    assert show.use_color("auto", _Terminal(True))
    assert not show.use_color("auto", _Terminal(False))
    assert show.use_color("always", _Terminal(False)) and not show.use_color("never", _Terminal(True))
    monkeypatch.setenv("NO_COLOR", "1")
    assert not show.use_color("auto", _Terminal(True))
    monkeypatch.delenv("NO_COLOR")
    monkeypatch.setenv("TERM", "dumb")
    assert not show.use_color("auto", _Terminal(True))


def test_entry_point_runs_as_a_program(model):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-m", "tracegrad", "show", f"{model}:f", "--wrt", "1"],
                          check=False, capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert function_def(done.stdout).name == "df_dw"
    assert "\x1b[" not in done.stdout  # a pipe is not a terminal


def test_tour_section_on_ast_mode_shows_its_adjoints():
    # the tour's tests live in test_tour.py; this one checks the AST section added with `show`
    titles = [title for title, _, _ in tour.SECTIONS]
    n = titles.index("Reading the adjoint: source transformation (AST mode)") + 1
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        tour.run([n])
    text = out.getvalue()
    assert "Traceback" not in text
    assert "def denergy_dw(x, w, dout=1.0):" in text and "# grad of: h = np.tanh(x @ w)" in text
    assert "np.allclose(de(x, w), torch.grad(energy, argnums=1, mode=\"tape\")(x, w))\nTrue" in text
    assert "stack.append(y)" in text and "y = stack.pop()" in text
    assert "('ast', array([ 1., -2.,  4.]))" in text and "('tape', 'try statement')" in text
