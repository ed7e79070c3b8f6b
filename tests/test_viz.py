"""tracegrad.viz: DOT pictures of the backward graph (to_dot) and their rendering (render)."""
import re
import shutil
import stat
import sys
from collections import Counter

import pytest

import tracegrad as tg
from tracegrad import viz
from tracegrad.viz import render, to_dot

HAS_DOT = shutil.which("dot") is not None
needs_dot = pytest.mark.skipif(not HAS_DOT, reason="Graphviz's dot is not installed")

BOX = re.compile(r'\t(n\d+) \[label="((?:[^"\\]|\\.)*)", fillcolor=(\w+)\]')
EDGE = re.compile(r"\t(n\d+) -> (n\d+)(?: \[(.*)\])?")
HEADER = ["digraph {", '\tgraph [size="12,12"]',
          "\tnode [style=filled, shape=box, align=left, fontsize=10, height=0.2, ranksep=0.1]"]


def parse(dot):
    """({box id: (label, colour)}, [(from id, to id, attrs or '')]); every line must parse."""
    lines = dot.splitlines()
    assert lines[:3] == HEADER and lines[-1] == "}" and dot.endswith("}\n")
    boxes, edges = {}, []
    for line in lines[3:-1]:
        if m := BOX.fullmatch(line):
            assert m[1] not in boxes, f"box {m[1]} declared twice"
            boxes[m[1]] = (re.sub(r"\\(.)", lambda e: "\n" if e[1] == "n" else e[1], m[2]), m[3])
        elif m := EDGE.fullmatch(line):
            edges.append((m[1], m[2], m[3] or ""))
        else:
            raise AssertionError(f"unexpected DOT line: {line!r}")
    for a, b, _ in edges:
        assert a in boxes and b in boxes
    return boxes, edges


def labelled(dot):
    """Boxes as a Counter of (label, colour); edges as a Counter of (from label, to label,
    attrs) -- the picture without its ids."""
    boxes, edges = parse(dot)
    return (Counter(boxes.values()),
            Counter((boxes[a][0], boxes[b][0], attrs) for a, b, attrs in edges))


def seed_004():
    """Seed 004's graph: F = exp(A * B) + E."""
    A = tg.tensor(2., requires_grad=True)
    B = tg.tensor(.5, requires_grad=True)
    E = tg.tensor(1., requires_grad=True)
    F = (A * B).exp() + E
    return F, {"A": A, "B": B, "E": E}


GREY, BLUE, GREEN, ORANGE = "lightgrey", "lightblue", "darkolivegreen1", "orange"
SEED_BOXES = Counter({("AddBackward0", GREY): 1, ("ExpBackward0", GREY): 1,
                      ("MulBackward0", GREY): 1, ("A\n()", BLUE): 1, ("B\n()", BLUE): 1,
                      ("E\n()", BLUE): 1, ("()", GREEN): 1})
SEED_EDGES = Counter({("A\n()", "MulBackward0", ""): 1, ("B\n()", "MulBackward0", ""): 1,
                      ("MulBackward0", "ExpBackward0", ""): 1,
                      ("ExpBackward0", "AddBackward0", ""): 1,
                      ("E\n()", "AddBackward0", ""): 1, ("AddBackward0", "()", ""): 1})


# -- to_dot -----------------------------------------------------------------------------------

def test_seed_004_nodes_edges_and_colours():
    F, params = seed_004()
    boxes, edges = labelled(to_dot(F, params=params))
    assert boxes == SEED_BOXES
    assert edges == SEED_EDGES  # from inputs towards the output; no AccumulateGrad box
    assert "AccumulateGrad" not in to_dot(F, params=params)


def test_ids_are_a_counter_and_text_is_deterministic():
    F, params = seed_004()
    dot = to_dot(F, params=params)
    assert dot == to_dot(F, params=params)
    G, params2 = seed_004()  # another graph of the same shape: the same text
    assert to_dot(G, params=params2) == dot
    ids = re.findall(r"^\t(n\d+) \[", dot, flags=re.MULTILINE)
    assert ids == [f"n{i}" for i in range(len(ids))]
    assert hex(id(F.grad_fn)) not in dot and str(id(F.grad_fn)) not in dot


def test_unnamed_leaves_show_their_shape_only():
    w = tg.ones(2, 3, requires_grad=True)
    b = tg.zeros(3, requires_grad=True)
    x = tg.ones(4, 2)
    y = x @ w + b
    boxes, edges = labelled(to_dot(y, params={"bias": b}))
    assert boxes[("(2, 3)", BLUE)] == 1 and boxes[("bias\n(3)", BLUE)] == 1
    assert boxes[("(4, 3)", GREEN)] == 1
    assert ("(2, 3)", "MmBackward0", "") in edges and ("bias\n(3)", "AddBackward0", "") in edges
    assert not any(colour == ORANGE for _, colour in boxes)  # x does not require grad


def test_input_used_twice_gives_two_edges():
    x = tg.tensor([1., 2.], requires_grad=True)
    _, edges = labelled(to_dot(x * x, params={"x": x}))
    assert edges[("x\n(2)", "MulBackward0", "")] == 2


def test_show_saved_seed_004():
    F, params = seed_004()
    plain = to_dot(F, params=params)
    dot = to_dot(F, params=params, show_saved=True)
    boxes, edges = labelled(dot)
    assert boxes == SEED_BOXES + Counter({("result\n()", ORANGE): 1})
    saved = {k: n for k, n in edges.items() if "dotted" in k[2]}
    assert saved == {
        ("A\n()", "MulBackward0", 'style=dotted, dir=none, label="self", fontsize=10'): 1,
        ("B\n()", "MulBackward0", 'style=dotted, dir=none, label="other", fontsize=10'): 1,
        ("result\n()", "ExpBackward0", "style=dotted, dir=none"): 1}
    assert edges - Counter(saved) == SEED_EDGES
    assert "dotted" not in plain and ORANGE not in plain
    assert dot == to_dot(F, params=params, show_saved=True)


def test_show_saved_tensor_that_is_not_a_drawn_leaf():
    x = tg.tensor([[1., 2., 3.], [4., 5., 6.]])  # a constant: saved, not a leaf box
    w = tg.ones(2, 3, requires_grad=True)
    boxes, edges = labelled(to_dot((w * x).sum(), params={"w": w}, show_saved=True))
    assert boxes[("other\n(2, 3)", ORANGE)] == 1
    assert edges[("other\n(2, 3)", "MulBackward0", "style=dotted, dir=none")] == 1


def test_show_saved_numbers(monkeypatch):
    a = tg.tensor([1., 2.], requires_grad=True)
    y = a ** 2
    node_cls = type(y.grad_fn)
    monkeypatch.setattr(node_cls, "saved_items", lambda self: [("self", a), ("exponent", 2)])
    boxes, edges = labelled(to_dot(y, params={"a": a}, show_saved=True))
    assert boxes[("exponent=2", ORANGE)] == 1
    assert edges[("exponent=2", "PowBackward0", "style=dotted, dir=none")] == 1
    assert edges[("a\n(2)", "PowBackward0", 'style=dotted, dir=none, label="self", fontsize=10')] == 1


def test_show_saved_skips_values_modified_in_place_or_freed():
    """A saved result changed in place since, or a custom Function's saved tensors freed by
    backward: the graph still draws, without those saved boxes."""
    x = tg.tensor([1., 2.], requires_grad=True)
    z = (x * 1).exp()
    z.add_(1)
    boxes, edges = labelled(to_dot(z * 2, params={"x": x}, show_saved=True))
    assert not any("dotted" in style and target == "ExpBackward0" for _, target, style in edges)

    class Square(tg.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a)
            return a * a

        @staticmethod
        def backward(ctx, g):
            (a,) = ctx.saved_tensors
            return 2 * a * g

    y = Square.apply(x)
    assert any("dotted" in k[2] for k in labelled(to_dot(y, show_saved=True))[1])
    y.sum().backward()
    assert y.grad_fn.saved_items() == []
    assert not any("dotted" in k[2] for k in labelled(to_dot(y, show_saved=True))[1])


def test_several_outputs_share_their_graph():
    a = tg.tensor([1., 2.], requires_grad=True)
    h = a.exp()
    y1, y2 = h.sum(), (h * 3).mean()
    boxes, edges = labelled(to_dot((y1, y2, y1, tg.ones(2)), params={"a": a}))
    assert boxes[("()", GREEN)] == 2  # y1 once; tg.ones(2) has no history: not drawn
    assert boxes[("ExpBackward0", GREY)] == 1 and boxes[("a\n(2)", BLUE)] == 1
    assert edges[("ExpBackward0", "SumBackward0", "")] == 1
    assert edges[("ExpBackward0", "MulBackward0", "")] == 1
    assert to_dot([y1, y2]) == to_dot((y1, y2))


def test_leaf_output_is_a_green_box():
    a = tg.tensor([1., 2.], requires_grad=True)
    boxes, edges = labelled(to_dot(a, params={"a": a}))
    assert boxes == Counter({("a\n(2)", GREEN): 1}) and not edges


def test_long_chain_has_no_recursion_limit():
    x = tg.tensor(1., requires_grad=True)
    y = x
    for _ in range(10_000):
        y = y * 1.0
    assert sys.getrecursionlimit() < 10_000
    boxes, edges = labelled(to_dot(y, params={"x": x}))
    assert boxes[("MulBackward0", GREY)] == 10_000
    assert sum(edges.values()) == 10_001 and sum(boxes.values()) == 10_002


def test_labels_are_escaped():
    a = tg.tensor([1., 2.], requires_grad=True)
    name = 'we"ird\\name\nline2'
    dot = to_dot(a.sin(), params={name: a})
    assert 'label="we\\"ird\\\\name\\nline2\\n(2)"' in dot
    boxes, _ = parse(dot)
    assert (f"{name}\n(2)", BLUE) in boxes.values()


# -- errors -----------------------------------------------------------------------------------

@pytest.mark.parametrize("bad", [1.0, "loss", None, [tg.ones(1, requires_grad=True), 2.0]])
def test_not_a_tensor_is_a_type_error(bad):
    with pytest.raises(TypeError, match="Tensor or a sequence of Tensors"):
        to_dot(bad)


@pytest.mark.parametrize("make", [lambda: tg.ones(2) * 2, list, lambda: (tg.ones(1),)])
def test_nothing_to_draw_is_a_value_error(make):
    with pytest.raises(ValueError, match="nothing to draw"):
        to_dot(make())


def test_no_grad_output_is_a_value_error():
    a = tg.tensor([1., 2.], requires_grad=True)
    with tg.no_grad():
        y = a * 2
    with pytest.raises(ValueError, match="none of the outputs has a grad_fn"):
        to_dot(y)


def test_bad_params_are_type_errors():
    a = tg.tensor([1., 2.], requires_grad=True)
    with pytest.raises(TypeError, match="dict of name -> Tensor"):
        to_dot(a * 2, params=[a])
    with pytest.raises(TypeError, match=r"params\['a'\] is a float"):
        to_dot(a * 2, params={"a": 1.0})


# -- render -----------------------------------------------------------------------------------

def test_render_without_dot_says_how_to_install(monkeypatch, tmp_path):
    F, params = seed_004()
    monkeypatch.setattr(shutil, "which", lambda *args, **kw: None)
    with pytest.raises(RuntimeError) as err:
        render(F, tmp_path / "g.svg", params=params)
    message = str(err.value)
    for hint in ("dot", "Graphviz", "apt-get install graphviz", "brew install graphviz",
                 "conda install graphviz", "to_dot()"):
        assert hint in message
    assert not (tmp_path / "g.svg").exists()


def test_render_bad_format(tmp_path):
    F, _ = seed_004()
    with pytest.raises(ValueError, match="'svg', 'png', 'pdf'.*'jpeg'"):
        render(F, tmp_path / "g.jpeg", format="jpeg")


def fake_dot(tmp_path, body):
    """An executable Python script standing in for Graphviz's dot (``body``: its code)."""
    path = tmp_path / "fake-dot"
    path.write_text(f"#!{sys.executable}\nimport sys\n{body}\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


@pytest.mark.skipif(sys.platform == "win32", reason="runs a script as a fake dot")
def test_render_runs_dot_with_format_and_path(monkeypatch, tmp_path):
    args, stdin = tmp_path / "args", tmp_path / "stdin"
    dot = fake_dot(tmp_path, f"open({str(args)!r}, 'w').write(' '.join(sys.argv[1:]))\n"
                             f"open({str(stdin)!r}, 'w').write(sys.stdin.read())")
    monkeypatch.setattr(shutil, "which", lambda name, *a, **kw: dot if name == "dot" else None)
    F, params = seed_004()
    out = tmp_path / "g.png"
    assert render(F, out, format="png", params=params) == str(out)
    assert args.read_text().split() == ["-Tpng", "-o", str(out)]
    assert stdin.read_text() == to_dot(F, params=params)


@pytest.mark.skipif(sys.platform == "win32", reason="runs a script as a fake dot")
def test_render_reports_dot_failure(monkeypatch, tmp_path):
    dot = fake_dot(tmp_path, "sys.stdin.read()\n"
                             "sys.stderr.write('Error: syntax error in line 3')\nsys.exit(1)")
    monkeypatch.setattr(shutil, "which", lambda name, *a, **kw: dot if name == "dot" else None)
    F, _ = seed_004()
    with pytest.raises(RuntimeError, match="dot failed.*syntax error in line 3"):
        render(F, tmp_path / "g.svg")


@needs_dot
def test_render_svg_with_graphviz(tmp_path):
    F, params = seed_004()
    out = render(F, tmp_path / "g.svg", params=params, show_saved=True)
    with open(out, encoding="utf-8") as f:
        text = f.read()
    assert text.startswith("<?xml") or "<svg" in text
    for label in ("AddBackward0", "ExpBackward0", "MulBackward0", "result"):
        assert label in text


@needs_dot
@pytest.mark.parametrize("fmt, magic", [("png", b"\x89PNG"), ("pdf", b"%PDF")])
def test_render_png_pdf_with_graphviz(tmp_path, fmt, magic):
    F, params = seed_004()
    out = render(F, tmp_path / f"g.{fmt}", format=fmt, params=params)
    with open(out, "rb") as f:
        assert f.read(4) == magic


@needs_dot
def test_escaped_labels_are_valid_dot(tmp_path):
    a = tg.tensor([1., 2.], requires_grad=True)
    out = render(a.sin() * a, tmp_path / "g.svg", params={'we"ird\\name\nline2': a},
                 show_saved=True)
    with open(out, encoding="utf-8") as f:
        assert "<svg" in f.read()


def test_module_is_importable_as_tracegrad_viz():
    assert viz.FORMATS == ("svg", "png", "pdf")
    assert viz.__doc__ and "seeds" in viz.__doc__
