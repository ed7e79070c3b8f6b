"""Saved-tensor hooks: ``autograd.graph.saved_tensors_hooks(pack, unpack)`` and ``save_on_cpu``.

Pinned down: ``pack`` runs once for every tensor an operation saves for backward (the
counts are PyTorch's, see ``derivatives.yaml``; an oracle test compares them with real
torch), ``unpack`` runs when backward (or ``grad_fn._saved_*``) needs the value, and
gradients -- first and second order -- are what the closed-form derivative says. Hooks
nest (the innermost pair wins), are per thread, and apply only inside their context.
The errors PyTorch raises for a pack hook that modifies its input in place, and for an
unpack hook that returns something unusable, are pinned too.
"""
import gc
import re
import threading
import weakref
from collections import Counter

import numpy as np
import pytest

from ._helpers import LIB, npy, tg

FREED = "Trying to backward through the graph a second time"
PACK_INPLACE = ("A saved tensor pack hook is modifying its input in place. Tensors provided as input "
                "to pack hook cannot be modified by in-place operations")

A = np.array([0.5, -1.5, 2.0])
B = np.array([1.25, 0.75, -0.5])


def _leaf(values, lib=None, requires_grad=True):
    lib = lib or tg
    return lib.tensor(np.asarray(values, dtype=np.float64), requires_grad=requires_grad)


class Recorder:
    """A (pack, unpack) pair that passes tensors through and counts the calls."""

    def __init__(self):
        self.packed, self.unpacked = [], []

    def pack(self, t):
        self.packed.append(tuple(t.shape))
        return t

    def unpack(self, t):
        self.unpacked.append(tuple(t.shape))
        return t

    def hooks(self, lib=None):
        return (lib or tg).autograd.graph.saved_tensors_hooks(self.pack, self.unpack)


# ----------------------------------------------------------------------------- pack/unpack counts

# (id, forward(a, b), b requires grad, tensors saved for backward, d(sum out)/da, d/db)
CASES = [
    ("a * b", lambda a, b: a * b, True, 2, lambda a, b: (b, a)),
    ("a * b, b constant", lambda a, b: a * b, False, 1, lambda a, b: (b, None)),
    ("a * 3.0", lambda a, b: a * 3.0, False, 0, lambda a, b: (np.full(3, 3.0), None)),
    ("a * a", lambda a, b: a * a, False, 2, lambda a, b: (2 * a, None)),
    ("a + b", lambda a, b: a + b, True, 0, lambda a, b: (np.ones(3), np.ones(3))),
    ("a / b", lambda a, b: a / b, True, 2, lambda a, b: (1 / b, -a / b ** 2)),
    ("a ** 2", lambda a, b: a ** 2, False, 1, lambda a, b: (2 * a, None)),
    ("a.exp()", lambda a, b: a.exp(), False, 1, lambda a, b: (np.exp(a), None)),
    ("a.sin()", lambda a, b: a.sin(), False, 1, lambda a, b: (np.cos(a), None)),
    ("a.tanh()", lambda a, b: a.tanh(), False, 1, lambda a, b: (1 - np.tanh(a) ** 2, None)),
    ("a.relu()", lambda a, b: a.relu(), False, 1, lambda a, b: ((a > 0).astype(float), None)),
    ("a.sum()", lambda a, b: a.sum(), False, 0, lambda a, b: (np.ones(3), None)),
    ("a.exp().sin() * b", lambda a, b: a.exp().sin() * b, True, 4,
     lambda a, b: (np.cos(np.exp(a)) * np.exp(a) * b, np.sin(np.exp(a)))),
    ("a.reshape(1, 3) @ b.reshape(3, 1)", lambda a, b: a.reshape(1, 3) @ b.reshape(3, 1), True, 2,
     lambda a, b: (b, a)),
    ("a.reshape(3, 1) * b (broadcast)", lambda a, b: a.reshape(3, 1) * b, True, 2,
     lambda a, b: (np.full(3, b.sum()), np.full(3, a.sum()))),
]


def _run_case(case, lib=None):
    """Forward under a Recorder, then backward; (packs after forward, recorder, a, b)."""
    _, fn, b_grad, _, _ = case
    rec = Recorder()
    a, b = _leaf(A, lib), _leaf(B, lib, requires_grad=b_grad)
    with rec.hooks(lib):
        out = fn(a, b).sum()
    packs_after_forward = len(rec.packed)
    out.backward()
    return packs_after_forward, rec, a, b


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_pack_once_per_saved_tensor_unpack_once_per_use_grads_unchanged(case):
    """pack runs during forward, once per saved tensor; backward unpacks each one once;
    the gradients are the closed-form ones."""
    _, _, b_grad, n_saved, grads = case
    packs, rec, a, b = _run_case(case)
    assert packs == n_saved
    assert len(rec.packed) == n_saved, "backward must not pack anything"
    assert sorted(rec.unpacked) == sorted(rec.packed)
    ga, gb = grads(A, B)
    np.testing.assert_allclose(npy(a.grad), ga, rtol=1e-12)
    if b_grad:
        np.testing.assert_allclose(npy(b.grad), gb, rtol=1e-12)
    else:
        assert b.grad is None


def test_unpack_runs_only_when_backward_needs_the_value():
    """Nothing is unpacked during forward; each backward pass through a retained graph
    unpacks every saved tensor again; the second pass accumulates the same gradient."""
    rec = Recorder()
    x = _leaf(A)
    with rec.hooks():
        y = (x.sin() * x).sum()   # sin saves x; mul saves sin(x) and x
    assert len(rec.packed) == 3 and rec.unpacked == []
    y.backward(retain_graph=True)
    assert len(rec.unpacked) == 3
    y.backward()
    assert len(rec.packed) == 3 and len(rec.unpacked) == 6
    np.testing.assert_allclose(npy(x.grad), 2 * (np.cos(A) * A + np.sin(A)), rtol=1e-12)


def test_pack_receives_the_saved_tensor_itself():
    """A saved input reaches pack as the very tensor object the user holds, a saved result
    as the operation's output tensor (as in PyTorch)."""
    seen = []
    x = _leaf(A)
    a = x * 1
    with tg.autograd.graph.saved_tensors_hooks(lambda t: seen.append(t) or t, lambda t: t):
        x.sin()
        a.sin()
        w = a.exp()
    assert len(seen) == 3
    assert seen[0] is x and seen[1] is a and seen[2] is w


def test_custom_function_save_for_backward_goes_through_the_hooks():
    """``ctx.save_for_backward`` packs each tensor (None is not packed); reading
    ``ctx.saved_tensors`` in backward unpacks each."""
    class MulKeep(tg.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            out = a * b
            ctx.save_for_backward(a, b, out, None)
            return out

        @staticmethod
        def backward(ctx, g):
            a, b, _out, nothing = ctx.saved_tensors
            assert nothing is None
            return g * b, g * a

    rec = Recorder()
    x, w = _leaf(A), _leaf(B)
    with rec.hooks():
        y = MulKeep.apply(x, w)
    assert len(rec.packed) == 3 and rec.unpacked == []
    y.sum().backward()
    assert len(rec.unpacked) == 3
    np.testing.assert_allclose(npy(x.grad), B, rtol=1e-12)
    np.testing.assert_allclose(npy(w.grad), A, rtol=1e-12)


def test_no_pack_under_no_grad():
    """Nothing is recorded under no_grad, so nothing is saved or packed."""
    rec = Recorder()
    x = _leaf(A)
    with rec.hooks(), tg.no_grad():
        x.sin() * x
    assert rec.packed == []


# ----------------------------------------------------------------------------- offload to disk


def test_offload_saved_tensors_to_disk(tmp_path):
    """The documented use: pack writes each saved tensor to a file and returns its name,
    unpack reads it back. A one-layer tanh network gets its closed-form gradients."""
    files = []

    def pack(t):
        path = tmp_path / f"saved_{len(files)}.npy"
        np.save(path, npy(t))
        files.append(path)
        return str(path)

    def unpack(path):
        assert isinstance(path, str)
        return tg.from_numpy(np.load(path))

    rng = np.random.default_rng(0)
    xv, wv, bv, cv = rng.normal(size=(2, 3)), rng.normal(size=(3, 4)), rng.normal(size=4), rng.normal(size=(2, 4))
    x, w, b = _leaf(xv), _leaf(wv), _leaf(bv)
    c = _leaf(cv, requires_grad=False)
    with tg.autograd.graph.saved_tensors_hooks(pack, unpack):
        h = tg.tanh(x @ w + b)
        loss = (h * c).sum()
    # mm saves x and w, tanh its result, mul the constant c: four files
    assert len(files) == 4 and all(p.exists() for p in files)
    loss.backward()

    hv = np.tanh(xv @ wv + bv)
    dz = cv * (1 - hv ** 2)
    np.testing.assert_allclose(npy(x.grad), dz @ wv.T, rtol=1e-12)
    np.testing.assert_allclose(npy(w.grad), xv.T @ dz, rtol=1e-12)
    np.testing.assert_allclose(npy(b.grad), dz.sum(0), rtol=1e-12)


# ----------------------------------------------------------------------------- _saved_* access


def test_saved_self_and_saved_result_go_through_unpack():
    """``grad_fn._saved_self`` / ``_saved_result`` return what unpack returns, calling it on
    every access; a saved result keeps the node as its grad_fn."""
    calls = []

    def unpack(t):
        calls.append(1)
        return t * 10

    x = _leaf(A)
    with tg.autograd.graph.saved_tensors_hooks(lambda t: t.detach(), unpack):
        y = x.sin()
        z = x.exp()
    assert calls == []
    np.testing.assert_allclose(npy(y.grad_fn._saved_self), 10 * A, rtol=1e-12)
    assert len(calls) == 1
    result = z.grad_fn._saved_result
    np.testing.assert_allclose(npy(result), 10 * np.exp(A), rtol=1e-12)
    assert len(calls) == 2
    assert result.grad_fn is z.grad_fn and result.requires_grad
    again = z.grad_fn._saved_result
    assert len(calls) == 3 and again is not result


@pytest.mark.skipif(LIB == "torch", reason="PyTorch's nodes take no weak references")
def test_saved_result_does_not_keep_its_node_alive():
    """A node that saved its own output through hooks is freed as soon as the output goes
    (reference counting alone, no cycle for the garbage collector to find)."""
    x = _leaf(A)
    with tg.autograd.graph.saved_tensors_hooks(lambda t: t.detach(), lambda t: t):
        z = x.exp()
    node = weakref.ref(z.grad_fn)
    gc.disable()
    try:
        del z
        assert node() is None
    finally:
        gc.enable()


def test_unpacked_saved_leaf_is_a_leaf():
    """A leaf saved through hooks unpacks as a leaf that requires grad (PyTorch gives it
    the original leaf's gradient accumulator, not a grad_fn)."""
    x = _leaf(A)
    with tg.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t.detach().clone()):
        y = x.sin()
    s = y.grad_fn._saved_self
    assert s.requires_grad
    assert s.grad_fn is None
    assert s.is_leaf


def test_saved_tensor_access_after_backward_is_an_error():
    """Saved values packed by hooks are freed by backward like any others."""
    x = _leaf(A)
    with Recorder().hooks():
        y = x.sin()
    y.sum().backward()
    with pytest.raises(RuntimeError, match=FREED):
        _ = y.grad_fn._saved_self


# ----------------------------------------------------------------------------- scope and nesting


def test_nested_contexts_innermost_wins_and_outer_comes_back():
    """Inside a nested context its own pair applies; after it exits the outer pair does
    again; each saved tensor is unpacked by the unpack of the pair that packed it."""
    packed, unpacked = [], []

    def pair(label):
        return (lambda t: packed.append(label) or (label, t),
                lambda p: unpacked.append(p[0]) or p[1])

    x = _leaf(A)
    with tg.autograd.graph.saved_tensors_hooks(*pair("outer")):
        a = x.sin()
        with tg.autograd.graph.saved_tensors_hooks(*pair("inner")):
            b = x.cos()
        c = x.exp()
    assert packed == ["outer", "inner", "outer"]
    (a + b + c).sum().backward()
    assert Counter(unpacked) == Counter(outer=2, inner=1)
    np.testing.assert_allclose(npy(x.grad), np.cos(A) - np.sin(A) + np.exp(A), rtol=1e-12)


def test_hooks_apply_only_inside_the_context():
    """Operations before and after the context are not packed; tensors packed inside are
    still unpacked by backward after the context has closed."""
    rec = Recorder()
    x = _leaf(A)
    before = x.sin()
    with rec.hooks():
        inside = x.exp()
    after = x.cos()
    assert len(rec.packed) == 1
    (before + inside + after).sum().backward()
    assert len(rec.packed) == 1 and len(rec.unpacked) == 1
    np.testing.assert_allclose(npy(x.grad), np.cos(A) + np.exp(A) - np.sin(A), rtol=1e-12)


def test_hooks_are_per_thread():
    """A context open in one thread does not pack the saved tensors of another thread."""
    rec = Recorder()
    go, done = threading.Event(), threading.Event()
    result = {}

    def worker():
        x = _leaf(A)
        assert go.wait(10)
        x.sin()
        result["packs_seen_by_worker"] = len(rec.packed)
        done.set()

    t = threading.Thread(target=worker)
    t.start()
    with rec.hooks():
        go.set()
        assert done.wait(10)
        _leaf(A).exp()
    t.join()
    assert result == {"packs_seen_by_worker": 0}
    assert len(rec.packed) == 1


def test_exception_in_pack_propagates_and_context_unwinds():
    """An error raised by pack reaches the caller; leaving the context removes the hooks."""
    calls = []

    def pack(t):
        calls.append(1)
        raise KeyError("pack failed")

    x = _leaf(A)
    with pytest.raises(KeyError, match="pack failed"), tg.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        x.sin()
    x.sin().sum().backward()
    assert calls == [1]
    np.testing.assert_allclose(npy(x.grad), np.cos(A), rtol=1e-12)


# ----------------------------------------------------------------------------- errors


def test_hook_arguments_must_be_callable():
    with pytest.raises(TypeError), tg.autograd.graph.saved_tensors_hooks(1, 2):
        pass


def _pack_add_one_no_grad(t):
    with tg.no_grad():
        t.add_(1)
    return t


@pytest.mark.parametrize("leaf", [False, True], ids=["non-leaf", "leaf"])
def test_pack_hook_modifying_its_input_in_place_raises(leaf):
    """PyTorch forbids a pack hook to modify its input in place (even under no_grad): the
    operation raises RuntimeError (detected after pack returns, by the version counter)."""
    x = _leaf(A)
    a = x if leaf else x * 1
    hooks = tg.autograd.graph.saved_tensors_hooks(_pack_add_one_no_grad, lambda t: t)
    with pytest.raises(RuntimeError, match=re.escape(PACK_INPLACE)), hooks:
        a.pow(2)


def test_unpack_returning_a_wrong_shape_raises_runtime_error():
    """An unpacked tensor whose shape does not fit fails in backward with a RuntimeError
    naming both sizes, as PyTorch's does (tracegrad's says it is the unpack hook's result;
    PyTorch's comes later, from the operation that meets the mismatched sizes)."""
    x = _leaf([1.0, 2.0])
    with tg.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: tg.ones(3, dtype=tg.float64)):
        y = x.sin()
    with pytest.raises(RuntimeError) as info:
        y.sum().backward()
    message = str(info.value)
    if LIB == "torch":
        assert "must match the size of tensor" in message and "(2)" in message and "(3)" in message
    else:
        assert "unpack hook returned a tensor of size [3]" in message and "size [2]" in message


@pytest.mark.parametrize("value", [3, None, "x"], ids=["int", "None", "str"])
def test_unpack_returning_a_non_tensor_raises_type_error(value):
    x = _leaf(A)
    with tg.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: value):
        y = x.sin()
    with pytest.raises(TypeError):
        y.sum().backward()


# ----------------------------------------------------------------------------- leaves, double backward


def test_leaf_saved_through_hooks_accumulates_into_the_original_leaf():
    """unpack returns a brand-new tensor (rebuilt from NumPy), yet the gradient flows into
    the original leaf's .grad, and accumulates over several passes."""
    x = _leaf(A)
    with tg.autograd.graph.saved_tensors_hooks(lambda t: npy(t), tg.from_numpy):
        y = (x * x * x).sum()   # x*x saves x twice; (x*x)*x saves x*x and x
    y.backward(retain_graph=True)
    np.testing.assert_allclose(npy(x.grad), 3 * A ** 2, rtol=1e-12)
    y.backward()
    np.testing.assert_allclose(npy(x.grad), 6 * A ** 2, rtol=1e-12)


def test_double_backward_through_packed_tensors():
    """create_graph=True through unpacked tensors keeps their history: the second
    derivative of sum(sin(x) * x**3) is -x^3 sin x + 6x^2 cos x + 6x sin x."""
    rec_packs = []

    def pack(t):
        rec_packs.append(1)
        return npy(t)

    x = _leaf(A)
    with tg.autograd.graph.saved_tensors_hooks(pack, tg.from_numpy):
        y = (x.sin() * x ** 3).sum()
    assert len(rec_packs) == 4   # sin: x; pow: x; mul: sin(x) and x**3
    g, = tg.autograd.grad(y, x, create_graph=True)
    np.testing.assert_allclose(npy(g), np.cos(A) * A ** 3 + 3 * A ** 2 * np.sin(A), rtol=1e-12)
    assert g.requires_grad
    g.sum().backward()
    np.testing.assert_allclose(npy(x.grad), -A ** 3 * np.sin(A) + 6 * A ** 2 * np.cos(A) + 6 * A * np.sin(A),
                               rtol=1e-12)


# ----------------------------------------------------------------------------- save_on_cpu


def test_save_on_cpu_gives_the_same_gradients():
    x, w = _leaf(A), _leaf(B)
    with tg.autograd.graph.save_on_cpu():
        y = (x.sin() * w.exp()).sum()
    y.backward()
    np.testing.assert_allclose(npy(x.grad), np.cos(A) * np.exp(B), rtol=1e-12)
    np.testing.assert_allclose(npy(w.grad), np.sin(A) * np.exp(B), rtol=1e-12)


def test_save_on_cpu_nested_inside_hooks_wins():
    """save_on_cpu is a saved_tensors_hooks pair like any other: nested inside another
    context it replaces it, and the outer pair is not called for what it saves."""
    rec = Recorder()
    x = _leaf(A)
    with rec.hooks():
        with tg.autograd.graph.save_on_cpu(pin_memory=False):
            y = x.exp().sum()
        z = x.sin().sum()
    assert len(rec.packed) == 1
    (y + z).backward()
    assert len(rec.unpacked) == 1
    np.testing.assert_allclose(npy(x.grad), np.exp(A) + np.cos(A), rtol=1e-12)


# ----------------------------------------------------------------------------- oracle


@pytest.mark.torch
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_oracle_pack_and_unpack_counts(case):
    """tracegrad packs and unpacks the same number of tensors, of the same shapes, as
    PyTorch does for the same program."""
    torch = pytest.importorskip("torch")
    mine_packs, mine, _, _ = _run_case(case, tg)
    theirs_packs, theirs, _, _ = _run_case(case, torch)
    assert mine_packs == theirs_packs == case[3]
    assert sorted(mine.packed) == sorted(theirs.packed)
    assert sorted(mine.unpacked) == sorted(theirs.unpacked)


@pytest.mark.torch
def test_oracle_counts_with_double_backward_and_hooks_during_backward():
    """Counts through create_graph=True, and pack calls for what the recorded backward
    itself saves when the context is open around autograd.grad, match PyTorch."""
    torch = pytest.importorskip("torch")

    def prog(lib):
        rec = Recorder()
        x = _leaf(A, lib)
        with rec.hooks(lib):
            y = (x.sin() * x ** 3).sum()
        g, = lib.autograd.grad(y, x, create_graph=True)
        counts = [len(rec.packed), len(rec.unpacked)]
        g.sum().backward()
        counts += [len(rec.packed), len(rec.unpacked)]
        rec2 = Recorder()
        z = _leaf(A, lib).sin().sum()
        with rec2.hooks(lib):
            lib.autograd.grad(z, z.grad_fn.next_functions[0][0].next_functions[0][0].variable, create_graph=True)
        return counts + [len(rec2.packed)]

    assert prog(tg) == prog(torch)


@pytest.mark.torch
def test_oracle_pack_hook_in_place_message():
    """The message pinned above is PyTorch's own."""
    torch = pytest.importorskip("torch")
    x = _leaf(A, torch)

    def pack(t):
        with torch.no_grad():
            t.add_(1)
        return t

    hooks = torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t)
    with pytest.raises(RuntimeError, match=re.escape(PACK_INPLACE)), hooks:
        (x * 1).pow(2)


@pytest.mark.torch
def test_oracle_unpack_errors():
    """PyTorch raises RuntimeError for a wrong-shaped unpacked tensor and TypeError for a
    non-tensor, as pinned above."""
    torch = pytest.importorskip("torch")
    x = _leaf([1.0, 2.0], torch)
    with torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: torch.ones(3, dtype=torch.float64)):
        y = x.sin()
    with pytest.raises(RuntimeError, match=r"must match the size of tensor") as info:
        y.sum().backward()
    assert "(2)" in str(info.value) and "(3)" in str(info.value)
    with torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: 3):
        y = x.sin()
    with pytest.raises(TypeError):
        y.sum().backward()


@pytest.mark.torch
def test_oracle_unpacked_saved_leaf():
    torch = pytest.importorskip("torch")

    def prog(lib):
        x = _leaf(A, lib)
        with lib.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t.detach().clone()):
            y = x.sin()
        s = y.grad_fn._saved_self
        return s.is_leaf, s.requires_grad, s.grad_fn is None

    assert prog(tg) == prog(torch) == (True, True, True)
