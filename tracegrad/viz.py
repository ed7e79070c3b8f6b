"""Pictures of the backward graph: Graphviz DOT for ``tensor.grad_fn`` and what it reaches.

The seeds tracegrad follows (PyTorch's autograd notes and blog posts) explain autograd with
pictures of the DAG that ``backward()`` walks: grey boxes for the backward nodes
(``MulBackward0``...), blue boxes for the leaves that receive ``.grad``, arrows in the
direction of the forward pass. :func:`to_dot` draws the same picture for a tracegrad graph, in
the look users know from the torchviz package (``make_dot``): the leaves named from
``params=dict(...)``, the outputs in green and, with ``show_saved=True``, what each node saved
for backward in orange. :func:`render` runs Graphviz's ``dot`` on it.

    >>> from tracegrad.viz import to_dot, render
    >>> print(to_dot(loss, params={"w": w, "b": b}))
    >>> render(loss, "graph.svg", params={"w": w, "b": b})
"""
import os
import shutil
import subprocess
from collections import deque
from collections.abc import Mapping

from .runtime.node import AccumulateGrad
from .runtime.tensor import Tensor

__all__ = ["FORMATS", "render", "to_dot"]

FORMATS = ("svg", "png", "pdf")

# Fill colours: the grey of PyTorch's pictures, then torchviz's.
NODE, LEAF, OUTPUT, SAVED = "lightgrey", "lightblue", "darkolivegreen1", "orange"

_HEADER = ("digraph {",
           '\tgraph [size="12,12"]',
           "\tnode [style=filled, shape=box, align=left, fontsize=10, height=0.2, ranksep=0.1]")

_INSTALL = ("rendering needs Graphviz's `dot` program, which was not found on PATH. Install "
            "Graphviz: `apt-get install graphviz` (Debian/Ubuntu), `brew install graphviz` "
            "(macOS) or `conda install graphviz`. Without it, tracegrad.viz.to_dot() gives the "
            "DOT source, to render elsewhere (e.g. https://dreampuf.github.io/GraphvizOnline).")


def _quote(text):
    """``text`` as a quoted DOT string (backslashes, quotes and newlines escaped)."""
    text = str(text).replace("\\", "\\\\").replace('"', '\\"').replace("\r", "")
    return '"' + text.replace("\n", "\\n") + '"'


def _shape(t):
    """A tensor's shape as torchviz writes it: ``(2, 3)``, ``(5)``, ``()``."""
    return "(" + ", ".join(str(int(d)) for d in t.shape) + ")"


def _outputs(output):
    """The output tensors, deduplicated, in order; TypeError for anything else."""
    if isinstance(output, Tensor):
        outs = [output]
    elif isinstance(output, (list, tuple)):
        outs = list(output)
        bad = [type(o).__name__ for o in outs if not isinstance(o, Tensor)]
        if bad:
            raise TypeError("to_dot() expects a Tensor or a sequence of Tensors; the sequence "
                            f"holds {', '.join(sorted(set(bad)))}")
    else:
        raise TypeError("to_dot() expects a Tensor or a sequence of Tensors, got "
                        f"{type(output).__name__}")
    seen, unique = set(), []
    for o in outs:
        if id(o) not in seen and (o.grad_fn is not None or o.requires_grad):
            seen.add(id(o))
            unique.append(o)
    if not unique:
        raise ValueError("nothing to draw: none of the outputs has a grad_fn or requires grad "
                         "(was it computed under no_grad(), or from tensors without "
                         "requires_grad=True?)")
    return unique


def _param_names(params):
    """``{id(tensor): name}`` from ``params`` (a dict name -> Tensor, or None)."""
    if params is None:
        return {}
    if not isinstance(params, Mapping):
        raise TypeError("params must be a dict of name -> Tensor (e.g. "
                        f"dict(model.named_parameters())), got {type(params).__name__}")
    names = {}
    for name, t in params.items():
        if not isinstance(t, Tensor):
            raise TypeError(f"params[{name!r}] is a {type(t).__name__}, not a Tensor")
        names.setdefault(id(t), str(name))
    return names


class _Graph:
    """DOT statements with box ids ``n0, n1...`` given in the order things are met."""

    def __init__(self, names):
        self.names = names
        self.boxes, self.edges = [], []
        self.ids = {}    # (kind, id(obj)) -> box id
        self.alive = []  # keeps keyed objects alive, so that no id() is reused meanwhile

    def box(self, kind, obj, label, color):
        """The box id of ``obj`` (``kind``: node, leaf, output or saved); True if new."""
        key = (kind, id(obj))
        bid = self.ids.get(key)
        if bid is not None:
            return bid, False
        bid = self.ids[key] = f"n{len(self.ids)}"
        self.alive.append(obj)
        self.boxes.append(f"\t{bid} [label={_quote(label)}, fillcolor={color}]")
        return bid, True

    def tensor_label(self, t):
        """``name\n(2, 3)`` for a tensor named in ``params``, else its shape."""
        name = self.names.get(id(t))
        return f"{name}\n{_shape(t)}" if name else _shape(t)

    def visit(self, node, queue):
        """The box of a next_function: the leaf's own box for an AccumulateGrad."""
        if isinstance(node, AccumulateGrad):
            var = node.variable
            return self.box("leaf", var, self.tensor_label(var), LEAF)[0]
        bid, new = self.box("node", node, node.name(), NODE)
        if new:
            queue.append((node, bid))
        return bid

    def text(self):
        return "\n".join((*_HEADER, *self.boxes, *self.edges, "}")) + "\n"


def to_dot(output, params=None, show_saved=False):
    """Graphviz DOT source of the backward graph of ``output`` (a Tensor or a sequence).

    One grey box per backward node; leaves that require grad in light blue (named from
    ``params``, a dict name -> Tensor, and their shape); each output in green; edges point
    from inputs to outputs. ``show_saved=True`` adds what each node saved for backward, in
    orange, with a dotted edge to the node. Same graph, same text.
    """
    outs = _outputs(output)
    g = _Graph(_param_names(params))
    queue, order = deque(), []
    for t in outs:
        oid = g.box("output", t, g.tensor_label(t), OUTPUT)[0]
        fn = t.grad_fn
        if fn is not None:
            g.edges.append(f"\t{g.visit(fn, queue)} -> {oid}")
    while queue:  # breadth first, iterative: graphs may be deep
        node, bid = queue.popleft()
        order.append((node, bid))
        for nf, _ in node.next_functions:
            if nf is not None:
                g.edges.append(f"\t{g.visit(nf, queue)} -> {bid}")
    if show_saved:  # after the walk, so that every leaf box is known
        for node, bid in order:
            try:
                items = node.saved_items()
            except RuntimeError:  # a saved value was modified in place since: nothing to show
                items = []
            for name, value in items:
                style = "style=dotted, dir=none"
                sid = g.ids.get(("leaf", id(value))) if isinstance(value, Tensor) else None
                if sid is not None:  # the leaf's own box: the edge says what it is saved as
                    style += f", label={_quote(name)}, fontsize=10"
                elif isinstance(value, Tensor):
                    sid = g.box("saved", value, f"{name}\n{_shape(value)}", SAVED)[0]
                else:
                    sid = g.box("saved", (node, name), f"{name}={value!r}", SAVED)[0]
                g.edges.append(f"\t{sid} -> {bid} [{style}]")
    return g.text()


def render(output, path, format="svg", params=None, show_saved=False):
    """Write the picture of :func:`to_dot`'s graph to ``path`` with Graphviz's ``dot``
    (``format``: svg, png or pdf); returns ``path``."""
    if format not in FORMATS:
        raise ValueError(f"format must be one of {', '.join(map(repr, FORMATS))}, "
                         f"got {format!r}")
    source = to_dot(output, params=params, show_saved=show_saved)
    dot = shutil.which("dot")
    if dot is None:
        raise RuntimeError(_INSTALL)
    path = os.fspath(path)
    done = subprocess.run([dot, f"-T{format}", "-o", path], input=source, encoding="utf-8",
                          capture_output=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"Graphviz's dot failed (exit status {done.returncode}): "
                           f"{done.stderr.strip()}")
    return path
