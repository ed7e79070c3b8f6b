"""From a captured tape to compiled code: the forward, and the backward ``.backward()`` runs.

The reverse sweep of the tape path (:func:`~tracegrad.transform.tape.sweeps.reverse`) is
appended to the captured tape, with one cotangent input per differentiable output; the
whole tape is optimised once (so forward and backward share subexpressions), then cut in
two:

* the **forward** holds the eqns the outputs need; it also returns the *residuals*, the
  values it made that the backward reads;
* the **backward** holds every other eqn (the vjps, and forward work only they need, such
  as a ReLU's mask) and reads the residuals, the lifted inputs it needs (handed over as
  tensors saved for backward, so an in-place change of one between forward and backward
  is caught as eagerly) and the cotangents.

Each half is compiled like any staged tape (:func:`~tracegrad.transform.tape.codegen.compile_tape`,
fused where the fuser is on), or interpreted when very long.
"""
from ..backend import cpu
from ..transform.tape.aliasing import PART_VIEWS
from ..transform import jit
from ..transform.tape.codegen import EXACT, compile_tape, has_cpu_runs
from ..transform.tape.interpret import INTERPRET_OVER, Interpreted
from ..transform.tape.optimize import optimize
from ..transform.tape.sweeps import reverse
from ..transform.tape.tape import Tape, Var, namespace_of_var
from ..transform.tape.tracing import recording

__all__ = ["Plan", "plan"]


class Plan:
    """What a replay needs: ``forward(*inputs) -> (*outputs, *residuals)``; ``backward(
    *residuals, *saved inputs, *cotangents) -> grads`` (None when nothing requires grad);
    ``outs``: per output leaf, ``("out", k)`` (the forward's k-th result), ``("input", i)``
    (input i handed back as it is) or ``("value", v)`` (a Python value); ``diff``: which
    forward results are differentiable; ``saved``: the input positions the backward reads;
    ``grad_of``: per backward result, the input position it is the gradient of."""

    __slots__ = (
        "backward",
        "bwd_tape",
        "calls",
        "copies",
        "diff",
        "forward",
        "fwd_tape",
        "grad_of",
        "guarded",
        "in_metas",
        "n_inputs",
        "n_out",
        "n_res",
        "out_metas",
        "outs",
        "saved",
        "sources",
        "spec",
        "watched",
    )

    def heat(self):
        """Count a replay; at the ``jit.HOT_CALLS``-th, compile each half again with its
        elementwise runs as Numba kernels (where it has any, the fuser is on and Numba is
        installed), as a hot staged tape is (:meth:`tracegrad.transform.tape.staged.
        _Variant.heat`) -- the lines a kernel computes bit for bit only (``EXACT``), so
        values still equal eager ones exactly. An interpreted (very long) half stays as
        it is."""
        self.calls += 1
        if self.calls != jit.HOT_CALLS + 1:
            return
        sources = list(self.sources)
        for k, (tape, attr) in enumerate(((self.fwd_tape, "forward"), (self.bwd_tape, "backward"))):
            if sources[k] is not None and has_cpu_runs(tape, EXACT):
                fn, sources[k] = _compiled(tape, tape.name, cpu_kernels=EXACT)
                setattr(self, attr, fn)
        self.sources = tuple(sources)

    def source(self):
        """The generated code: the forward, then the backward (when there is one)."""
        return "\n\n".join(src if src is not None else fn.source  # (an Interpreted one's: written now)
                             for fn, src in ((self.forward, self.sources[0]), (self.backward, self.sources[1]))
                             if fn is not None)


def _compiled(tape, name, cpu_kernels=False):
    """``(function, source)``; a very long tape is interpreted (its source: None, written
    when read). The generated module counts as tracegrad's own for the warnings filter:
    NumPy's floating-point warnings (``inf * 0`` in a backward) are silent, as in eager
    code (:mod:`tracegrad.backend`) and in PyTorch."""
    if len(tape.eqns) > INTERPRET_OVER:
        return Interpreted(tape, name), None
    fn, source = compile_tape(tape, name, cpu_kernels=cpu_kernels)
    fn.__globals__["__name__"] = __name__
    return fn, source


def plan(tape, out_leaves, spec, with_grad):
    """The :class:`Plan` for a captured ``tape`` whose results are ``out_leaves`` (Vars,
    and Python values) in ``spec``; with the backward when ``with_grad``."""
    inputs = list(tape.inputs)
    index = {v.id: i for i, v in enumerate(inputs)}
    outs, result_vars = [], []
    for leaf in out_leaves:
        if isinstance(leaf, Var):
            if leaf.id in index:
                outs.append(("input", index[leaf.id]))
            else:
                outs.append(("out", len(result_vars)))
                result_vars.append(leaf)
        else:
            outs.append(("value", leaf))
    wrt = [v for v in inputs if v.id in tape.marked] if with_grad else []
    n_fwd = len(tape.eqns)
    grads, cts, diff = [], [], [False] * len(result_vars)
    if wrt:
        from ..transform.tape.sweeps import active_eqns
        _, active = active_eqns(tape.eqns, wrt)
        diff = [v.id in active and v.npdtype.kind in "fc" for v in result_vars]
        if any(diff):
            with recording(tape):
                tape.phase = "g"
                dvars = [v for v, d in zip(result_vars, diff) if d]
                cts = [tape.new_var(_zeros(v), "input", f"grad_out{k}") for k, v in enumerate(dvars)]
                grads = reverse(tape.eqns[:n_fwd], wrt, dvars, cts)
                tape.phase = "t"
    grad_pairs = [(index[w.id], g) for w, g in zip(wrt, grads) if g is not None]
    tape.outputs = result_vars + [g for _, g in grad_pairs]
    tape.release()
    optimize(tape)
    finals = list(tape.outputs)
    fwd_results, grad_results = finals[:len(result_vars)], finals[len(result_vars):]

    p = Plan()
    p.calls = 0
    p.outs, p.spec, p.n_out, p.diff, p.n_inputs = outs, spec, len(result_vars), diff, len(inputs)
    p.grad_of = [i for i, _ in grad_pairs]
    p.out_metas = tuple((v.shape, v.npdtype, namespace_of_var(v) or cpu)  # per output
                        for v in result_vars)
    p.in_metas = tuple((v.shape, v.npdtype) for v in inputs)
    p.copies, p.guarded, p.watched = _shared_results(tape.eqns, fwd_results), [], []
    needed = _needed(tape.eqns, fwd_results)
    fwd_eqns = [e for e in tape.eqns if id(e) in needed]
    if not grad_pairs:
        p.fwd_tape = _tape(tape.name, inputs, fwd_eqns, fwd_results)
        (p.forward, src), p.backward, p.saved, p.n_res = _compiled(p.fwd_tape, tape.name), None, [], 0
        p.sources = (src, None)
        p.bwd_tape = None
        return p
    bwd_eqns = [e for e in tape.eqns if id(e) not in needed]
    made_fwd = {o.id for e in fwd_eqns for o in e.outs}
    read = []
    for e in bwd_eqns:
        read += [a for a in e.in_vars()]
    read += [g for g in grad_results if isinstance(g, Var)]
    seen, residuals, saved = set(), [], []
    for v in read:
        if v.id in seen:
            continue
        seen.add(v.id)
        if v.id in made_fwd:
            residuals.append(v)
        elif v.id in index:
            saved.append(v)
    for k, v in enumerate(residuals):
        v.name = v.name or f"saved{k}"  # (its name as a parameter of the backward)
    p.saved = [index[v.id] for v in saved]
    # inputs a residual is a view of (W.t() for linear's backward): version-checked too
    p.watched = sorted({index[b.id] for v in residuals for b in [_viewed_input(tape.eqns, v)]
                        if b is not None} - set(p.saved))
    p.n_res = len(residuals)
    kept = {v.id for v in residuals}  # results the backward reads: version-checked there
    p.guarded = [k for k, v in enumerate(fwd_results) if v.id in kept and k not in p.copies]
    p.fwd_tape = _tape(tape.name, inputs, fwd_eqns, fwd_results + residuals)
    p.bwd_tape = _tape(tape.name + "_backward", residuals + saved + cts, bwd_eqns, grad_results)
    p.forward, fwd_source = _compiled(p.fwd_tape, tape.name)
    p.backward, bwd_source = _compiled(p.bwd_tape, tape.name + "_backward")
    p.sources = (fwd_source, bwd_source)
    return p


def _shared_results(eqns, results):
    """The positions of the forward results that would share memory with an input, with
    another result or with a value they are views of: handed out as copies (eager code
    would hand out views sharing a version counter; the staged results are plain tensors)."""
    maker = {o.id: e for e in eqns for o in e.outs}
    copies, seen = [], set()
    for k, v in enumerate(results):
        e = maker.get(v.id)
        if v.kind == "input" or v.id in seen or (e is not None and _is_view(e)):
            copies.append(k)
        seen.add(v.id)
    return copies


def _is_view(e):
    return getattr(e.op, "view", False) or getattr(e.op, "name", "") in PART_VIEWS


def _viewed_input(eqns, v):
    """The input Var that ``v`` is a view of (through view ops), or None."""
    maker = {o.id: e for e in eqns for o in e.outs}
    while True:
        if v.kind == "input":
            return v
        e = maker.get(v.id)
        if e is None or not _is_view(e) or not e.in_vars():
            return None
        v = e.in_vars()[0]


def _zeros(v):
    from ..backend import namespace_of
    return namespace_of(v.value).zeros(v.shape, dtype=v.npdtype)


def _needed(eqns, results):
    """The ids of the eqns ``results`` depend on."""
    maker = {o.id: e for e in eqns for o in e.outs}
    need, stack = set(), [v for v in results if isinstance(v, Var)]
    while stack:
        e = maker.get(stack.pop().id)
        if e is None or id(e) in need:
            continue
        need.add(id(e))
        stack.extend(e.in_vars())
    return need


def _tape(name, inputs, eqns, outputs):
    t = Tape(name)
    t.inputs, t.eqns, t.outputs = list(inputs), list(eqns), list(outputs)
    t.recording = False
    return t
