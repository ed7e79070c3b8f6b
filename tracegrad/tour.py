"""The guided tour (``python -m tracegrad``): short programs run as a REPL transcript, so
each line is shown with what it printed. Sections are data; later parts of tracegrad
(tape, AST) add their own."""
import ast
import contextlib
import io
import linecache
import textwrap

import numpy as np

SECTIONS = []


def section(title, text, code):
    SECTIONS.append((title, textwrap.dedent(text).strip(), textwrap.dedent(code).strip()))


section("Tensors that remember how they were made", """
    A tensor with requires_grad=True is a leaf of the graph. Every operation on it
    records a node (its grad_fn) that knows how to send gradients back.""", """
    import tracegrad as torch
    a = torch.tensor([2., 3.], requires_grad=True)
    b = torch.tensor([6., 4.], requires_grad=True)
    Q = 3 * a**3 - b**2
    Q
    Q.grad_fn
    a.is_leaf, Q.is_leaf
    """)

section("backward() fills .grad", """
    Q is a vector, so backward needs the gradient of something with respect to Q: here
    ones, meaning "the sum of Q". dQ/da = 9a^2 and dQ/db = -2b.""", """
    Q.backward(gradient=torch.tensor([1., 1.]))
    a.grad
    b.grad
    9 * a**2 == a.grad
    """)

section("The graph is made of nodes you can call", """
    next_functions links each node to the nodes of its inputs; a leaf's node is
    AccumulateGrad. Calling the nodes by hand does what backward() does.""", """
    torch.manual_seed(6)
    x = torch.randn(2, 2, requires_grad=True)
    y = torch.randn(2, 2, requires_grad=True)
    l = (x * y).sum()
    l.grad_fn, l.grad_fn.next_functions
    back_mul = l.grad_fn.next_functions[0][0]
    dz = l.grad_fn(torch.tensor(1.))
    dx, dy = back_mul(dz)
    torch.equal(dx, y), torch.equal(dy, x)
    back_mul.next_functions[0][0](dx)
    torch.equal(x.grad, y)
    """)

section("Gradients accumulate", """
    Every backward() adds into .grad; zero it (or set it to None) between steps.""", """
    w = torch.ones(1, 2, requires_grad=True)
    w.sum().backward()
    w.grad
    w.sum().backward()
    w.grad
    w.grad.zero_()
    w.sum().backward()
    w.grad
    """)

section("Only leaves keep gradients; retain_grad() keeps an intermediate's", """
    Intermediate gradients are computed but freed, which saves memory.""", """
    x = torch.ones(2, requires_grad=True)
    h = x * 3
    h.retain_grad()
    (h ** 2).sum().backward()
    h.grad, x.grad
    """)

section("Switching recording off", """
    Under no_grad nothing is recorded; inference_mode also marks the results so they
    cannot sneak into a graph later. Both are thread-local and work as decorators.""", """
    with torch.no_grad():
        z = x * 2
    z.requires_grad
    @torch.no_grad()
    def evaluate(t):
        return t * 2
    evaluate(x).requires_grad
    """)

section("In-place changes are checked", """
    A saved tensor modified in place would silently give wrong gradients, so every tensor
    carries a version counter and backward refuses stale values.""", """
    x = torch.ones(1, 3, requires_grad=True)
    y = x ** 2
    with torch.no_grad():
        x += 1
    x._version
    try:
        y.sum().backward()
    except RuntimeError as e:
        print(str(e)[:150] + "...")
    """)

section("Views share storage, and writes through them are differentiable", """
    Slicing, transposing and reshaping return views. Writing into a view of a tensor
    with history records a CopySlices node, as PyTorch does.""", """
    p = torch.tensor([1., 2., 3.], requires_grad=True)
    q = p * 2
    q[0] = 10.
    q, q.grad_fn
    q.sum().backward()
    p.grad
    m = torch.zeros(2, 3)
    m.t().stride(), m.t().is_contiguous(), m.t()._base is m
    """)

section("Higher derivatives", """
    With create_graph=True the backward pass is itself recorded, so it can be
    differentiated again.""", """
    x = torch.tensor(5.0, requires_grad=True)
    y = x ** 3
    (g,) = torch.autograd.grad(y, x, create_graph=True)
    g
    torch.autograd.grad(g, x)
    """)

section("Hooks and your own operations", """
    A hook sees (and may replace) a gradient on its way back. A Function subclass adds an
    operation with a hand-written backward; gradcheck compares that backward with finite
    differences.""", """
    x = torch.tensor([1., 2.], requires_grad=True)
    y = x * 3
    handle = y.register_hook(lambda g: g * 10)
    y.sum().backward()
    x.grad
    handle.remove()
    class Exp(torch.autograd.Function):
        @staticmethod
        def forward(ctx, i):
            result = i.exp()
            ctx.save_for_backward(result)
            return result
        @staticmethod
        def backward(ctx, grad_output):
            result, = ctx.saved_tensors
            return grad_output * result
    out = Exp.apply(x)
    out.grad_fn.name()
    torch.autograd.gradcheck(Exp.apply, (torch.randn(3, dtype=torch.float64, requires_grad=True),))
    """)

section("Anomaly mode names the forward line behind a bad gradient", """
    sqrt has an infinite slope at 0, and 0 times infinity is NaN. Under detect_anomaly the
    backward stops at the first node that returns NaN (and a warning shows where that node
    was made in your code).""", """
    import warnings
    x = torch.tensor([0., 4.], requires_grad=True)
    with warnings.catch_warnings(record=True) as caught, torch.autograd.detect_anomaly():
        y = (x.sqrt() * 0).sum()
        try:
            y.backward()
        except RuntimeError as e:
            print(e)
    print(caught[-1].message)
    """)

section("Where the time goes: the profiler", """
    profile() times every operation and every backward node; key_averages() groups them
    by name into PyTorch's table. export_chrome_trace() writes a trace for Perfetto.""", """
    w = torch.randn(64, 64, requires_grad=True)
    with torch.autograd.profiler.profile(record_shapes=True) as prof:
        h = torch.randn(32, 64)
        for _ in range(3):
            h = (h @ w).tanh()
        h.sum().backward()
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=4))
    """)

section("Pictures of the graph", """
    tracegrad.viz.to_dot() writes the backward graph in Graphviz's language: leaves in
    blue, backward nodes in grey, saved tensors in orange. render() draws it with the
    `dot` program (apt-get install graphviz).""", """
    A = torch.tensor(2., requires_grad=True)
    B = torch.tensor(.5, requires_grad=True)
    E = torch.tensor(1., requires_grad=True)
    F = (A * B).exp() + E
    print(torch.viz.to_dot(F, params=dict(A=A, B=B, E=E)))
    import tempfile, os
    path = os.path.join(tempfile.mkdtemp(), "graph.svg")
    try:
        print("drawn:", torch.viz.render(F, path, params=dict(A=A, B=B, E=E), show_saved=True))
    except RuntimeError as e:
        print(e)
    """)

section("Training a network: nn and optim", """
    tracegrad.nn has PyTorch's layers and losses, tracegrad.optim its optimizers, and the
    8x8 handwritten digits ship with tracegrad. The loop is the seeds' loop: zero_grad,
    forward, loss, backward, step. eval() and no_grad() for testing; freezing a model is
    requires_grad = False on its parameters, and a new layer is trainable by default.""", """
    from tracegrad import nn, optim
    from tracegrad.datasets import digits_split
    torch.manual_seed(0)
    (x_train, y_train), (x_test, y_test) = digits_split()
    model = nn.Sequential(nn.Flatten(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10))
    model
    optimizer = optim.SGD(model.parameters(), lr=0.5, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    for epoch in range(1, 41):
        optimizer.zero_grad()
        loss = loss_fn(model(x_train), y_train)
        loss.backward()
        optimizer.step()
        if epoch % 10 == 0:
            print(f"epoch {epoch}: loss {loss.item():.3f}")
    model.eval()
    with torch.no_grad():
        accuracy = (model(x_test).argmax(1) == y_test).float().mean()
    print(f"test accuracy {accuracy.item():.1%}")
    for p in model.parameters():
        p.requires_grad = False
    model[3] = nn.Linear(64, 10)
    [name for name, p in model.named_parameters() if p.requires_grad]
    """)

section("Tracing plain NumPy onto a tape", """
    tracegrad.trace runs a function once with tracers in place of its arrays: every NumPy
    call becomes one primitive on a flat tape (an if on a traced value becomes a guard).
    tracegrad.grad differentiates that tape with the same vjp rules, optimises it and
    compiles it into the straight-line Python printed by .source; later calls with the
    same shapes replay the compiled code.""", """
    import numpy as np
    def f(x, w):
        h = np.tanh(x * 1.01)
        return np.sum(h @ w)
    x, w = np.linspace(-1, 1, 4), np.ones((4, 3))
    print(torch.trace(f)(x, w))
    df = torch.grad(f, mode="tape")
    df(x, w)
    print(df.source)
    def g(x):
        if x.sum() > 0:
            return (x ** 2).sum()
        return -x.max()
    dg = torch.grad(g, mode="tape")
    dg(x + 1), dg(x - 1)
    torch.hessian(lambda x: np.sum(x ** 3))(np.array([1.0, 2.0]))
    """)

# The AST section's functions are defs in this file because the source transformation
# reads their source: energy is the example, settle a loop (its adjoint replays the
# iterations from a stack), squares a list comprehension (beyond the transformation, so
# mode="auto" traces it).
def energy(x, w):
    h = np.tanh(x @ w)
    return np.sum(h * h)


def settle(y):
    for _ in range(3):
        y = np.tanh(y * 1.01 + 0.1)
    return np.sum(y)


def squares(x):
    return sum([v ** 2 for v in x])


def guarded(x):
    try:
        return np.sum(np.log(x))
    except FloatingPointError:
        return 0.0


section("Reading the adjoint: source transformation (AST mode)", """
    mode="ast" reads a function's source (a def in a file, here tracegrad/tour.py) and
    rewrites it into its adjoint: the forward lines, then each statement's gradient in
    reverse under a "# grad of:" comment, keeping your names. A loop's adjoint runs
    backwards, popping what the forward pass pushed on a stack; a comprehension becomes a
    loop. mode="auto", the default, tries this first and falls back to the tape for what
    it cannot read (a try statement, here).""", """
    import inspect
    from tracegrad.tour import energy, guarded, settle, squares
    print(inspect.getsource(energy))
    de = torch.grad(energy, argnums=1, mode="ast")
    print(de.source)
    x, w = np.array([0.5, -1.0, 2.0]), np.linspace(-1, 1, 6).reshape(3, 2)
    de(x, w)
    np.allclose(de(x, w), torch.grad(energy, argnums=1, mode="tape")(x, w))
    print(torch.grad(settle, mode="ast").source)
    dsq = torch.grad(squares)
    dsq.mode, dsq(x)
    dg = torch.grad(guarded)
    dg.mode, dg.fallback_reason.construct
    dg(np.array([0.5, 2.0]))
    """)

section("The same code on a GPU", """
    device="cuda" puts tensors on an NVIDIA GPU through CuPy (pip install
    'tracegrad[gpu]'). The same rule table runs there; .to(), .cuda() and .cpu() move
    tensors, and a gradient flows back across the move; modules move with .to("cuda").
    grad() compiles for the device of its inputs, fusing runs of elementwise lines into
    one GPU kernel. Without a GPU, this section runs on the CPU.""", """
    torch.cuda.is_available()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = torch.nn.Sequential(torch.nn.Linear(3, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1)).to(device)
    x = torch.randn(16, 3, device=device)
    loss = model(x).pow(2).mean()
    loss.backward()
    model[0].weight.grad.device
    h = torch.randn(5, requires_grad=True)
    h.to(device).exp().sum().backward()
    h.grad.device
    """)

section("One rule table behind it all", """
    Every operation is one entry of tracegrad.rules: a kernel plus one vjp per operand,
    written with ordinary operators so the same function serves raw arrays, eager
    Tensors, and (in the staged modes) traced values.""", """
    import inspect
    from tracegrad.rules import TABLE
    len(TABLE)
    print(inspect.getsource(TABLE["tanh"].vjps[0]))
    print(inspect.getsource(TABLE["mul"].vjps[1]))
    """)


def run_code(code, namespace, filename="<tour>"):
    """Run ``code`` statement by statement, echoing it and each expression's value.
    The code is registered in ``linecache`` as ``filename``, so tracebacks show its lines."""
    tree = ast.parse(code)
    lines = code.splitlines()
    linecache.cache[filename] = (len(code), None, [line + "\n" for line in lines], filename)
    shown = 0  # source lines echoed so far (several statements may share one line)
    for node in tree.body:
        start = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
        if node.end_lineno > shown:
            src = lines[max(start, shown + 1) - 1:node.end_lineno]
            print("\n".join((">>> " if i == 0 else "... ") + line for i, line in enumerate(src)))
            shown = node.end_lineno
        if isinstance(node, ast.Expr):
            value = eval(compile(ast.Expression(node.value), filename, "eval"), namespace)
            if value is not None:
                print(repr(value))
        else:
            exec(compile(ast.Module([node], []), filename, "exec"), namespace)


def run(sections=None):
    """Run the tour; with ``sections`` (numbers from 1) show only those, running the
    earlier ones silently because later sections build on their variables."""
    namespace = {}
    last = len(SECTIONS) if not sections else max(sections)
    for n, (title, text, code) in enumerate(SECTIONS[:last], 1):
        shown = not sections or n in sections
        with contextlib.nullcontext() if shown else contextlib.redirect_stdout(io.StringIO()):
            print(f"\n== {n}. {title} " + "=" * max(0, 70 - len(title)))
            print(text + "\n")
            run_code(code, namespace, f"<tour section {n}>")
