"""The backward engine: runs the graph of nodes from the outputs back to the leaves.

Iterative (no recursion limit), dependency-counted: a node runs once every node feeding
it has run, with the sum of the gradients of each of its outputs. By default gradients
are raw backend arrays and the vjps run on them directly (the fast path); with
``create_graph=True`` they are Tensors and the vjps' own operations are recorded, so
higher derivatives fall out. Saved values are freed after the pass unless
``retain_graph``. When ``inputs`` are given only the part of the graph that leads to them
runs, and (for ``autograd.grad``) their gradients are returned instead of accumulated.
"""
import collections
import functools
import sys
import threading
import warnings

from .. import backend
from ..backend.quiet import FP_ERRORS, quietly
from . import grad_mode
from . import dispatch
from .anomaly import checked_apply
from .dispatch import edge_of
from .node import _FREED_MESSAGE, CLAIMED, NOTHING_SAVED, SAVED, AccumulateGrad
from .tensor import Tensor, wrap
from .vmapped import is_vmapped

__all__ = ["backward", "grad", "call_node"]

_state = grad_mode.state


BACKWARD_IN_VMAP = ("backward() called inside a functorch transform. This is not supported, please use "
                    "tracegrad.func.grad or tracegrad.func.vjp instead or call backward() outside of "
                    "functorch transforms.")


# -- front doors -------------------------------------------------------------------------------

def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False,
             grad_variables=None, inputs=None):
    """Accumulate d(tensors)/d(leaf) (weighted by ``grad_tensors``) into each leaf's ``.grad``."""
    tensors, grad_tensors, grad_variables = _as_tuple(tensors, "tensors"), _seeds(grad_tensors), _seeds(grad_variables)
    if any(is_vmapped(t) for t in tensors):  # (one value per sample)
        raise RuntimeError(BACKWARD_IN_VMAP)
    if grad_variables is not None:
        if grad_tensors is not None:
            raise RuntimeError("`grad_tensors` and `grad_variables` (deprecated) arguments both "
                               "passed to `backward()`. Please only use `grad_tensors`.")
        warnings.warn("`grad_variables` is deprecated. Use `grad_tensors` instead.", FutureWarning, stacklevel=2)
        grad_tensors = grad_variables
    if grad_tensors is not None and any(
            is_vmapped(g) for g in ((grad_tensors,) if isinstance(grad_tensors, Tensor) else grad_tensors)):
        raise RuntimeError(BACKWARD_IN_VMAP)
    grads = _root_grads(tensors, grad_tensors, create_graph)
    roots = _root_edges(tensors)
    if retain_graph is None:
        retain_graph = create_graph
    if inputs is None:
        run(roots, grads, retain_graph, create_graph)
        return
    inputs = _as_tuple(inputs, "inputs")
    if not inputs:
        raise RuntimeError("`inputs` argument to `backward()` cannot be empty.")
    for t in inputs:
        if t.grad_fn is not None:
            t.retain_grad()  # as PyTorch: a non-leaf input keeps its .grad from now on
    targets = [_input_edge(t, i) for i, t in enumerate(inputs)]
    captured = run(roots, grads, retain_graph, create_graph, targets=targets)
    for t, g in zip(inputs, captured):
        if g is not None and t.grad_fn is None:
            _accumulate_grad(t, g, create_graph, fresh=False, hooks=False)  # hooks ran in run()


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         only_inputs=True, allow_unused=None, is_grads_batched=False, materialize_grads=False):
    """The gradients of ``outputs`` with respect to ``inputs``, returned (not accumulated)."""
    outputs, grad_outputs = _as_tuple(outputs, "outputs"), _seeds(grad_outputs)
    inputs_seq = _as_tuple(inputs, "inputs")
    if not inputs_seq:
        raise RuntimeError("`inputs` argument to `grad()` cannot be empty.")
    if is_grads_batched:
        return _batched_grad(outputs, inputs_seq, grad_outputs, retain_graph, create_graph, allow_unused,
                             materialize_grads)
    if allow_unused is None:
        allow_unused = materialize_grads
    if materialize_grads and not allow_unused:
        raise ValueError("Expected allow_unused to be True or not passed when materialize_grads=True, "
                         "but got: allow_unused=False.")
    for t in inputs_seq:
        if not isinstance(t, GradientEdge) and not t._requires_grad:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
    if retain_graph is None:
        retain_graph = create_graph
    # A cotangent with one value per sample (a vmap over a vjp, as jacrev runs) must reach
    # the vjps as a Tensor, so that they run through the batching rules (its array holds
    # one sample only): the pass runs as with create_graph, and the results are detached.
    # So too while a vmap runs: a hook or custom backward may return per-sample values.
    batched = not create_graph and (dispatch.batching is not None or grad_outputs is not None and any(
        is_vmapped(g) for g in ((grad_outputs,) if isinstance(grad_outputs, Tensor) else grad_outputs)))
    grads = _root_grads(outputs, grad_outputs, create_graph or batched)
    roots = _root_edges(outputs)
    targets = [_input_edge(t, i) for i, t in enumerate(inputs_seq)]
    captured = run(roots, grads, retain_graph, create_graph or batched, targets=targets)
    if batched:
        captured = [None if g is None else g.detach() for g in captured]
    result = []
    for i, (t, g) in enumerate(zip(inputs_seq, captured)):
        if g is None:
            if not allow_unused:
                raise RuntimeError(f"The differentiated Tensor at index {i} appears to not have been "
                                   "used in the graph. Set allow_unused=True if this is the desired behavior.")
            if materialize_grads:
                if isinstance(t, GradientEdge):
                    raise RuntimeError("materialize_grads cannot make zeros for a GradientEdge input: its "
                                       "shape is not known")
                g = backend.namespace_of(t._data).zeros_like(t._data)
        if g is not None and not isinstance(g, Tensor):
            g = wrap(g)
        result.append(g)
    return tuple(result)


def _batched_grad(outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused, materialize_grads):
    """``grad(..., is_grads_batched=True)``: the first dim of each cotangent indexes
    independent vjps, computed in one pass by vmapping over it (as PyTorch does)."""
    from ..func import vmap
    if grad_outputs is None:
        raise RuntimeError("grad can be implicitly created only for scalar outputs")
    cotangents = (grad_outputs,) if isinstance(grad_outputs, Tensor) else tuple(grad_outputs)
    for i, (out, g) in enumerate(zip(outputs, cotangents)):
        if isinstance(g, Tensor) and tuple(g.shape[1:]) != tuple(out.shape):
            raise RuntimeError(
                "If `is_grads_batched=True`, we interpret the first dimension of each grad_output as the "
                "batch dimension. The sizes of the remaining dimensions are expected to match the shape "
                f"of corresponding output, but a mismatch was detected: grad_output[{i}] has a shape of "
                f"{g.shape[1:] if g.ndim else g.shape} and output[{i}] has a shape of {out.shape}. "
                "If you only want some tensors in `grad_output` to be considered batched, consider using vmap.")

    def one(*gs):
        return grad(outputs, inputs, gs, retain_graph=True if retain_graph is None else retain_graph,
                    create_graph=create_graph, allow_unused=allow_unused, materialize_grads=materialize_grads)
    return vmap(one)(*cotangents)


def _as_tuple(x, what):
    """One Tensor, or any iterable of them (``model.parameters()``, ``dict.values()``:
    PyTorch takes ``tuple(x)``), as a tuple."""
    edges = GradientEdge if what == "inputs" else ()  # (an input may be a graph edge)
    if isinstance(x, Tensor) or isinstance(x, edges):
        return (x,)
    if not isinstance(x, (list, tuple)):
        try:
            x = tuple(x)
        except TypeError:
            raise TypeError(f"{what} must be a Tensor or a sequence of Tensors, got {type(x).__name__}") from None
    for t in x:
        if not isinstance(t, Tensor) and not isinstance(t, edges):
            raise TypeError(f"{what} must be Tensors, got {type(t).__name__}")
    return tuple(x)


def _seeds(given):
    """``grad_outputs`` / ``grad_tensors`` as given, an iterable made a tuple (read twice)."""
    return given if given is None or isinstance(given, (Tensor, tuple, list)) else tuple(given)


def _root_edges(tensors):
    edges = []
    for i, t in enumerate(tensors):
        edge = edge_of(t)
        if edge[0] is None:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have a grad_fn")
        edges.append(edge)
    return edges


GradientEdge = collections.namedtuple("GradientEdge", ["node", "output_nr", "ownership_token"], defaults=[None])
GradientEdge.__doc__ = """An edge of the backward graph, ``torch.autograd.graph.GradientEdge``: output
``output_nr`` of ``node``. ``autograd.grad`` takes one as an input: the gradient flowing
into that edge (``get_gradient_edge(t)``: ``t``'s, even after ``t`` is gone)."""


def _input_edge(t, i):
    if isinstance(t, GradientEdge):
        return (t.node, t.output_nr)
    edge = edge_of(t)
    if edge[0] is None:
        raise RuntimeError("One of the differentiated Tensors does not require grad")
    return edge


def _root_grads(outputs, grad_outputs, create_graph):
    """The seed gradient of each output: given, or ones for a single-element output."""
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    elif isinstance(grad_outputs, Tensor):
        grad_outputs = (grad_outputs,)
    else:
        grad_outputs = tuple(grad_outputs)
    if len(grad_outputs) != len(outputs):
        raise RuntimeError(f"got {len(grad_outputs)} tensors in grad_outputs but {len(outputs)} outputs")
    grads = []
    for i, (out, g) in enumerate(zip(outputs, grad_outputs)):
        data = out._data
        if g is None:
            if out._requires_grad and data.size != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            if out._requires_grad and data.dtype.kind == "c":  # (its gradient's seed is ambiguous)
                raise RuntimeError("grad can be implicitly created only for real scalar outputs but got "
                                   f"{out.dtype}")
            arr = backend.namespace_of(data).ones_like(data)
            grads.append(wrap(arr) if create_graph else arr)
            continue
        if not isinstance(g, Tensor):
            raise TypeError(f"grad_outputs must be Tensors or None, got {type(g).__name__}")
        if g.shape != out.shape:
            raise RuntimeError(f"Mismatch in shape: grad_output[{i}] has a shape of {g.shape} and "
                               f"output[{i}] has a shape of {out.shape}.")
        if g._data.dtype != data.dtype:
            g = wrap(g._data.astype(data.dtype)) if not g._requires_grad else g.to(out.dtype)
        if type(g._data) is not type(data):
            g = _on_device_of(out, g, i)
        grads.append(g if create_graph else g._data)
    return grads


def _on_device_of(out, g, i):
    """Seed gradient ``g``, from another device than output ``out``, moved to ``out``'s when
    0-d, as PyTorch's engine does; else PyTorch's error."""
    if g.ndim:
        raise RuntimeError(f"invalid gradient at index {i} - expected device {out.device} but got {g.device}")
    return g.to(out.device)


# -- the pass ----------------------------------------------------------------------------------

def run(roots, root_grads, keep_graph, create_graph, targets=None):
    """Run backward from ``roots`` (edges) seeded with ``root_grads``. Without ``targets``
    every reachable leaf accumulates; with ``targets`` (edges) only the graph leading to
    them runs and their gradients are returned, in order."""
    prev = grad_mode.swap(create_graph)
    outer, _pass.targeted = getattr(_pass, "targeted", False), targets is not None
    outer_callbacks, _pass.callbacks = getattr(_pass, "callbacks", None), []
    try:
        captured = _run(roots, root_grads, keep_graph, create_graph, targets)
        for callback in _pass.callbacks:  # (a callback may queue more: they run too)
            callback()
        return captured
    finally:
        _pass.targeted, _pass.callbacks = outer, outer_callbacks
        grad_mode.restore(prev)


def queue_callback(callback):
    """Run ``callback()`` when the backward pass running in this thread ends (torch's
    ``Variable._execution_engine.queue_callback``; DDP waits for its all-reduces there)."""
    if getattr(_pass, "callbacks", None) is None:
        raise RuntimeError("Final callbacks can only be installed during backward pass.")
    _pass.callbacks.append(callback)


_pass = threading.local()  # what the pass running in this thread was asked for


def is_checkpoint_valid():
    """False inside a pass that has ``inputs`` (``autograd.grad``, ``backward(inputs=)``):
    reentrant checkpointing cannot run there (``torch.autograd._is_checkpoint_valid``)."""
    return not getattr(_pass, "targeted", False)


def _run(roots, root_grads, keep_graph, graph, targets):
    root_nodes = list(dict.fromkeys(n for n, _ in roots))
    if targets is None:
        wanted, skip = None, ()
        if keep_graph:
            deps, claimed = _count_deps(root_nodes, None), ()
        else:
            deps, claimed = _count_and_claim(root_nodes)
    else:
        wanted = {}
        for i, (n, nr) in enumerate(targets):
            wanted.setdefault((n, nr), []).append(i)
        deps, skip = _count_deps(root_nodes, {n for n, _ in targets})
        claimed = () if keep_graph else _claim_all(deps, skip)
    captured = [None] * (len(targets) if targets is not None else 0)
    released = -1
    try:
        released = _propagate(roots, root_grads, root_nodes, deps, skip, wanted, captured, keep_graph, graph,
                              targets)
    finally:
        if released != len(claimed):  # (else every node claimed was consumed)
            for node in claimed:  # nodes this pass did not consume (no gradient reached them,
                if node._saved == CLAIMED:  # or an error stopped the pass) keep their values
                    node._saved = SAVED
    return captured


def _propagate(roots, root_grads, root_nodes, deps, skip, wanted, captured, keep_graph, graph, targets):
    """The pass itself: nodes run when their last incoming gradient has arrived. Returns
    how many claimed nodes it consumed (released)."""
    # Gradients waiting for a node with several consumers; a node whose last input has
    # arrived moves to `ready` together with its gradients.
    buffers = {}
    fresh = {}  # AccumulateGrad -> whether its gradient is an array nobody else holds
    for (n, nr), g in zip(roots, root_grads):
        if n in deps:
            _buffer(buffers, fresh, n, nr, g, (g,), graph)  # the caller's gradient: not fresh
    ready = [(n, buffers.pop(n, None)) for n in root_nodes if n in deps and deps[n] == 0]
    leaves = []  # leaves made ready by the node running now
    accumulate_grad = AccumulateGrad
    # None: call node._apply directly (the common case, one call layer fewer per node)
    apply = checked_apply if dispatch.anomaly_enabled else None
    accumulate = _accumulate_grad
    if dispatch.observer is not None:
        apply = dispatch.observer.timed_backward(apply or _plain_apply)
        accumulate = dispatch.observer.timed_accumulate(_accumulate_grad)
    # a leaf without hooks adds its gradient into .grad as soon as it is complete (what
    # _accumulate_grad does then), unless a profiler times each accumulation or gradients
    # are captured
    plain_leaves = dispatch.observer is None and wanted is None and targets is None

    released = 0
    while ready:
        node, grads = ready.pop()
        if type(node) is accumulate_grad:
            extra = node._extra
            if (extra is None and plain_leaves and grads is not None and grads[0] is not None
                    and node.variable._extra is None):  # no hooks: straight into .grad
                with _ACCUMULATE:
                    _add_into_grad(node.variable, grads[0], graph, fresh.pop(node, False))
                continue
            if grads is not None:
                if grads[0] is not None:
                    var_extra = node.variable._extra
                    if var_extra is not None and var_extra.get("hooks"):  # the hooks may keep what
                        grads = [_leaf_hooks(node.variable, grads[0], graph)]  # they see: never
                        fresh.pop(node, None)  # adopted as .grad
                if extra is not None:  # user hooks: the gradients may now be held elsewhere
                    grads = _run_tensor_hooks(node, grads, graph)
                    fresh.pop(node, None)
                if wanted is not None:
                    _capture(node, grads, wanted, captured)
                if grads[0] is not None and targets is None:
                    accumulate(node.variable, grads[0], graph, fresh.pop(node, False), hooks=False)
                    if extra is not None and extra.get("hooks"):
                        _run_node_hooks(extra["hooks"], (), grads, graph)
            continue
        # A node that is not a leaf, then the chain of nodes it makes ready: the node made
        # ready last would be popped first from `ready`, so it runs next without being
        # queued (a chain of single-consumer nodes runs as a loop).
        while node is not None:
            extra = node._extra
            if grads is not None and (extra is not None or wanted is not None):
                if extra is not None:  # user hooks: the gradients may now be held elsewhere
                    grads = _run_tensor_hooks(node, grads, graph)
                if wanted is not None:
                    _capture(node, grads, wanted, captured)
            if skip and node in skip:
                break  # only its gradient was wanted
            opaque = False  # whether its results may be held elsewhere (never adopted as .grad)
            if grads is None or (grads[0] is None and (len(grads) == 1 or all(g is None for g in grads))):
                in_grads = None
            else:
                try:
                    in_grads = node._apply(grads, graph) if apply is None else apply(node, grads, graph)
                except FP_ERRORS:  # (NumPy set to raise: a rule's vjp, which changed nothing, again)
                    if getattr(node, "_prim", None) is None:
                        raise  # (a custom Function's backward: the program's own code)
                    in_grads = quietly(node._apply if apply is None else functools.partial(apply, node),
                                       grads, graph)
                if extra is not None and extra.get("hooks"):
                    in_grads = _run_node_hooks(extra["hooks"], in_grads, grads, graph)
                    opaque = True  # returned by a hook
                if not keep_graph and node._saved == CLAIMED:
                    node._release()
                    released += 1
            nxt_node = nxt_grads = None
            j = -1
            for nxt, nr in node._next_functions:
                j += 1
                if nxt is None:
                    continue
                d = deps.get(nxt)
                if d is None:
                    continue  # pruned: does not lead to a target
                g = None if in_grads is None else in_grads[j]
                if d == 1:  # (its entry stays: no other edge leads to it)
                    buf = buffers.pop(nxt, None) if buffers else None
                    is_leaf = type(nxt) is accumulate_grad
                    if buf is None:
                        if g is not None:
                            if is_leaf:  # (a custom backward's results may be held by the user)
                                is_fresh = _is_fresh(g, in_grads if opaque or node._opaque else grads, graph)
                                # a leaf without hooks takes its gradient now (as when popped,
                                # below); a view waits until the gradients here are dropped
                                if (is_fresh is not VIEW and plain_leaves and nxt._extra is None
                                        and nxt.variable._extra is None):
                                    with _ACCUMULATE:
                                        _add_into_grad(nxt.variable, g, graph, is_fresh)
                                    continue
                                fresh[nxt] = is_fresh
                            outs = nxt._outs
                            if outs is None:
                                buf = [g]
                            else:
                                buf = [None] * len(outs)
                                buf[nr] = g
                    elif g is not None:
                        _add_grad(buf, fresh, nxt, nr, g, in_grads if opaque or node._opaque else grads, graph)
                    if is_leaf:
                        leaves.append((nxt, buf))
                    else:
                        if nxt_node is not None:
                            ready.append((nxt_node, nxt_grads))
                        nxt_node, nxt_grads = nxt, buf
                else:
                    deps[nxt] = d - 1
                    if g is not None:
                        _buffer(buffers, fresh, nxt, nr, g, in_grads if opaque or node._opaque else grads, graph)
            if leaves:  # on top, so that leaves accumulate (and run their post-accumulate hooks) as
                if nxt_node is not None:  # soon as their gradient is complete, as torch's engine
                    ready.append((nxt_node, nxt_grads))  # does: DDP starts averaging while
                ready.extend(leaves)  # backward goes on
                leaves.clear()
                break
            node, grads = nxt_node, nxt_grads
    return released


def _capture(node, grads, wanted, captured):
    """Keep the gradients of ``node``'s outputs that were asked for (``inputs``)."""
    for nr, g in enumerate(grads):
        for i in wanted.get((node, nr), ()):
            captured[i] = g if captured[i] is None else captured[i] + g


def _plain_apply(node, grads, graph):
    return node._apply(grads, graph)


_CLAIMS = threading.Lock()


def _claim_all(deps, skip):
    """Take the saved values of every node this pass will run, for this pass alone (one
    lock for the whole graph): a second pass through the same graph without retain_graph
    -- another thread, or a repeat -- fails at once with PyTorch's "second time" error,
    before any gradient moves, instead of racing or doubling a gradient."""
    claimed = []
    with _CLAIMS:
        for node in deps:
            if node not in skip:
                _claim(node, claimed)
    return claimed


def _count_and_claim(root_nodes):
    """``_count_deps(root_nodes, None)`` and ``_claim_all`` of its result in one walk of the
    graph (a whole-graph pass that frees what it consumes: ``backward()``'s usual case)."""
    deps = dict.fromkeys(root_nodes, 0)
    claimed = []
    with _CLAIMS:
        for node in root_nodes:
            _claim(node, claimed)
        stack = list(root_nodes)
        while stack:
            for nxt, _ in stack.pop()._next_functions:
                if nxt is None:
                    continue
                c = deps.get(nxt)
                if c is None:
                    deps[nxt] = 1
                    stack.append(nxt)
                    state = nxt._saved
                    if state != NOTHING_SAVED:  # (_claim, inline)
                        if state != SAVED:
                            _unclaim_and_raise(claimed)
                        nxt._saved = CLAIMED
                        claimed.append(nxt)
                else:
                    deps[nxt] = c + 1
    return deps, claimed


def _claim(node, claimed):
    state = node._saved
    if state != NOTHING_SAVED:
        if state != SAVED:
            _unclaim_and_raise(claimed)
        node._saved = CLAIMED
        claimed.append(node)


def _unclaim_and_raise(claimed):
    for n in claimed:
        n._saved = SAVED
    raise RuntimeError(_FREED_MESSAGE)


def _buffer(buffers, fresh, node, nr, g, incoming, graph):
    """Add ``g`` to the gradients waiting for output ``nr`` of ``node``."""
    buf = buffers.get(node)
    if buf is None:
        outs = node._outs
        buf = buffers[node] = [None] * (len(outs) if outs else 1)
    _add_grad(buf, fresh, node, nr, g, incoming, graph)


def _add_grad(buf, fresh, node, nr, g, incoming, graph):
    if buf[nr] is None:
        buf[nr] = g
        if type(node) is AccumulateGrad:
            fresh[node] = _is_fresh(g, incoming, graph)
    else:
        buf[nr] = buf[nr] + g
        fresh[node] = True


def _count_deps(root_nodes, target_nodes):
    """How many edges lead into each node to run. With ``target_nodes``, only nodes from
    which a target can be reached are kept (the rest of the graph is pruned), and the
    set of targets that need not run (nothing beyond them is needed) comes too."""
    if target_nodes is None:
        deps = dict.fromkeys(root_nodes, 0)
        stack = list(root_nodes)
        while stack:
            for nxt, _ in stack.pop()._next_functions:
                if nxt is None:
                    continue
                c = deps.get(nxt)
                if c is None:
                    deps[nxt] = 1
                    stack.append(nxt)
                else:
                    deps[nxt] = c + 1
        return deps
    # Post-order walk: a node is needed if it is a target or feeds a needed node.
    needed = set()
    done = set()
    for root in root_nodes:
        if root in done:
            continue
        stack = [(root, iter(root._next_functions))]
        done.add(root)
        while stack:
            node, it = stack[-1]
            for nxt, _ in it:
                if nxt is not None and nxt not in done:
                    done.add(nxt)
                    stack.append((nxt, iter(nxt._next_functions)))
                    break
            else:
                stack.pop()
                if node in target_nodes or any(n in needed for n, _ in node._next_functions):
                    needed.add(node)
    deps = {n: 0 for n in root_nodes if n in needed}
    skip = set()  # targets nothing beyond needs: their gradient is captured, they do not run
    for node in needed:
        feeds = False
        for nxt, _ in node._next_functions:
            if nxt in needed:
                deps[nxt] = deps.get(nxt, 0) + 1
                feeds = True
        if not feeds:
            skip.add(node)
    return deps, skip


_NDARRAY = backend.cpu.ndarray

VIEW = "view"  # freshness of a gradient that is a new view (of some array) a vjp made


def _is_fresh(g, incoming, graph):
    """True when ``g`` is a new array a vjp made, so a leaf may keep it as its ``.grad``
    without copying; ``VIEW`` for a new view object a vjp made (kept only when nothing
    else refers to its memory, see ``_sole_view``); False for an incoming gradient passed
    through (the same object may go to several consumers)."""
    data = g._data if graph else g
    for x in incoming:
        if x is g:
            return False
    if type(data) is _NDARRAY:  # (the common case, without the namespace lookup)
        return True if data.base is None else VIEW
    if not hasattr(data, "base"):
        return True
    return True if backend.namespace_of(data).owns_data(data) else VIEW


def _leaf_hooks(var, g, graph):
    """Run the hooks registered on leaf ``var`` (``Tensor.register_hook``) on its gradient."""
    extra = var._extra
    if extra is not None and extra.get("hooks"):
        return _call_hooks(extra["hooks"].values(), g, graph)
    return g


_ACCUMULATE = threading.Lock()  # concurrent backward passes may share leaves (Hogwild)


def _accumulate_grad(var, g, graph, fresh, hooks=True):
    """Add gradient ``g`` into leaf ``var.grad`` (after the leaf's hooks, unless the
    engine already ran them); then run its post-accumulate-grad hooks."""
    if hooks and var._extra is not None and var._extra.get("hooks"):
        g, fresh = _leaf_hooks(var, g, graph), False  # a hook saw it: it may have kept it
    with _ACCUMULATE:
        _add_into_grad(var, g, graph, fresh)
    extra = var._extra
    if extra is not None and extra.get("post_accumulate_hooks"):
        for hook in list(extra["post_accumulate_hooks"].values()):
            hook(var)


def _add_into_grad(var, g, graph, fresh):
    current = var._grad
    if graph:
        g = g if isinstance(g, Tensor) else wrap(g)
        if is_vmapped(g) and not is_vmapped(var):  # (a hook's per-sample value into a plain .grad)
            raise RuntimeError(BACKWARD_IN_VMAP)
        if g._data.dtype != var._data.dtype:
            g = g.to(var.dtype)
        if current is None:
            var._grad = g if fresh is True and g._base is None else g.clone()
        else:
            var._grad = current + g
    else:
        data = g._data if isinstance(g, Tensor) else g
        if data.dtype != var._data.dtype:
            data, fresh = data.astype(var._data.dtype), True
        if current is None:
            keep = fresh is True or (fresh is VIEW and _sole_view(data))
            var._grad = wrap(data if keep and data.strides == var._data.strides  # (_with_layout_of's
                             else _with_layout_of(var._data, data, keep))        # common case, inline)
        elif current._requires_grad or not _writable_in_place(current._data):
            var._grad = wrap(quietly(_add, current._data, data))
        else:
            quietly(_add_into, current._data, data)
            current._bump_version()


def _add(a, b):
    return a + b


def _add_into(a, b):
    a += b


def _writable_in_place(a):
    """True when ``a += g`` may write into ``a``: not a read-only NumPy array, and not a
    broadcast view (a 0 stride: one element stands for several, as in an expanded
    ``.grad``). CuPy arrays have no ``writeable`` flag (they always are)."""
    return getattr(a.flags, "writeable", True) and 0 not in a.strides


def _with_layout_of(param, g, fresh):
    """``g`` as a leaf's new gradient: PyTorch gives a dense parameter (e.g. a transposed
    one) a gradient with the same strides, and any other parameter a contiguous one."""
    if g.strides == param.strides or not _dense(param):
        return g if fresh else g.copy(order="C")
    out = backend.namespace_of(param).empty_like(param)  # keeps the parameter's layout
    out[...] = g
    return out


def _sole_view(a):
    """True for a view of an array that nothing but this view refers to (e.g. the weight
    gradient of ``linear``, made transposed and transposed back): keeping it as ``.grad``
    aliases nobody, so it is kept without a copy -- PyTorch likewise steals a gradient
    whose use count says it is held nowhere else."""
    base = getattr(a, "base", None)
    if base is None or getattr(base, "base", 0) is not None or a.nbytes != base.nbytes:
        return False  # (a view of part of an array would keep all of it alive)
    # three references: the view's own, the name `base`, getrefcount's argument
    return sys.getrefcount(base) <= 3


def _dense(a):
    """True when ``a``'s elements fill a contiguous block in some dim order."""
    expected = a.itemsize
    for stride, size in sorted((abs(st), sh) for st, sh in zip(a.strides, a.shape) if sh != 1):
        if stride != expected:
            return False
        expected *= size
    return True


# -- hooks -------------------------------------------------------------------------------------

def _call_hooks(hooks, g, graph):
    """Run tensor hooks in order; a non-None result replaces the gradient."""
    t = g if graph else wrap(g)
    for hook in list(hooks):
        r = hook(t)
        if r is not None:
            if not isinstance(r, Tensor):
                raise TypeError(f"a tensor hook must return a Tensor or None, got {type(r).__name__}")
            if r.shape != t.shape:
                raise RuntimeError(f"hook returned a gradient of shape {r.shape} where {t.shape} was expected")
            t = r
    return t if graph else array_of(t)


def array_of(t):
    """A hook's or custom backward's result as an array, for a pass without a graph; one
    batched by vmap (its array holds sample 0 only) would accumulate into a plain .grad."""
    if is_vmapped(t):
        raise RuntimeError(BACKWARD_IN_VMAP)
    return t._data


def _as_tensors(values, graph):
    return tuple(None if v is None else (v if graph else wrap(v)) for v in values)


def _from_tensors(values, graph, what):
    if not isinstance(values, (tuple, list)):
        raise TypeError(f"a node {what} must return a tuple of gradients or None")
    return tuple(None if v is None else (v if graph else array_of(v)) for v in values)


def _run_node_hooks(hooks, in_grads, grads, graph):
    """``node.register_hook`` hooks: ``hook(grad_inputs, grad_outputs)``; a non-None
    result replaces the gradients the node passes on."""
    outputs = _as_tensors(grads, graph)
    for hook in list(hooks.values()):
        r = hook(_as_tensors(in_grads, graph), outputs)
        if r is not None:
            if len(r) != len(in_grads):
                raise RuntimeError(f"hook '{getattr(hook, '__name__', hook)}' has returned an incorrect "
                                   f"number of values (got {len(r)}, but expected {len(in_grads)})")
            in_grads = _from_tensors(r, graph, "hook")
    return in_grads


def _run_tensor_hooks(node, grads, graph):
    """Before a node runs: hooks and ``retain_grad`` of the non-leaf tensors it produced,
    then its own pre-hooks (``hook(grad_outputs)``, which may replace them)."""
    extra = node._extra
    hooks = extra.get("tensor_hooks")
    retains = extra.get("retains")
    prehooks = extra.get("prehooks")
    if not hooks and not retains and not prehooks:
        return grads
    grads = list(grads)
    for nr, g in enumerate(grads):
        if g is None:
            continue
        if hooks and hooks.get(nr):
            g = grads[nr] = _call_hooks(hooks[nr].values(), g, graph)
        ref = retains.get(nr) if retains else None
        t = ref() if ref is not None else None
        if t is not None:
            value = g if graph else wrap(g.copy())
            t._grad = value if t._grad is None else t._grad + value
    for hook in list((prehooks or {}).values()):
        r = hook(_as_tensors(grads, graph))
        if r is not None:
            grads = list(_from_tensors(r, graph, "pre-hook"))
    return grads


# -- calling a node by hand --------------------------------------------------------------------

def call_node(node, grads):
    """``node(*grads)``: gradients of the node's inputs from those of its outputs."""
    expected = 1 if node._outs is None else len(node._outs)
    if len(grads) != expected:
        raise TypeError(f"expected {expected} arguments, got {len(grads)} instead")
    for g in grads:
        if g is not None and not isinstance(g, Tensor):
            raise TypeError(f"a node is called with Tensors, got {type(g).__name__}")
    if type(node) is AccumulateGrad:
        if grads[0] is not None:
            _accumulate_grad(node.variable, grads[0]._data, False, False)
        return ()
    # In grad mode the computation is recorded: results depend on saved tensors that may
    # require grad, as in PyTorch.
    graph = _state.mode == grad_mode.GRAD
    raw = [None if g is None else (g if graph else g._data) for g in grads]
    prev = grad_mode.swap(graph)
    try:
        out = node._apply(raw, graph)
    finally:
        grad_mode.restore(prev)
    out = tuple(None if g is None else (g if isinstance(g, Tensor) else wrap(g)) for g in out)
    return out[0] if len(out) == 1 else out

