"""Custom differentiable operations: ``autograd.Function`` as PyTorch defines it.

Pinned down here: ``apply`` runs ``forward`` without recording and makes one node,
``<ClassName>Backward``, the history of its outputs; that node is the ``ctx`` (saved
tensors, version-checked; ``needs_input_grad``; ``mark_dirty``; ``mark_non_differentiable``;
``set_materialize_grads``); ``setup_context`` style; keyword arguments; what ``backward``
may return (and PyTorch's errors when it returns something else); ``once_differentiable``;
double backward through a differentiable ``backward``; outputs that are inputs or views.

Expected values come from hand formulas (d/dx exp = exp, d/dx x^3 = 3x^2, ...) and the
error texts from PyTorch 2.x; the oracle tests at the end (marked ``torch``) run the very
same Functions in PyTorch. The Functions are written once, against a library module, so
``TRACEGRAD_RUNTIME_TESTS_LIB=torch`` checks every expectation against PyTorch itself.
"""
import functools
import re
import warnings
from typing import ClassVar

import numpy as np
import pytest

from ._functions import with_shared
from ._helpers import LIB, assert_same, npy, raises_like, tg

FREED = ("Trying to backward through the graph a second time (or directly access saved tensors "
         "after they have already been freed). Saved intermediate values of the graph are freed "
         "when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to "
         "backward through the graph a second time or if you need to access saved tensors after "
         "calling backward.")
NO_GRAD_FN = "element 0 of tensors does not require grad and does not have a grad_fn"


def _version_error(tensor_type, shape, which=""):
    """PyTorch's saved-tensor version error, up to (not including) its anomaly hint."""
    return re.escape("one of the variables needed for gradient computation has been modified by "
                     f"an inplace operation: [{tensor_type} {list(shape)}]{which} is at version 1; "
                     "expected version 0 instead.")


def _f(values, lib=None, requires_grad=True):
    lib = lib or tg
    return lib.tensor(np.asarray(values, dtype=np.float64), requires_grad=requires_grad)


@functools.cache
def _functions(lib):
    """The custom Functions of these tests, written once against ``lib`` (tracegrad or torch):
    the shared ones of ``_functions.shared_functions`` (Exp, Cube, CubeSetup, CubeOnce, MulAdd)
    and this module's own."""
    Function = lib.autograd.Function

    class Square(Function):
        """Saves its input."""
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * x * g

    class Mul(Function):
        """Two tensor inputs, both saved; records its ctx and needs_input_grad."""
        seen: ClassVar[list] = []

        @staticmethod
        def forward(ctx, a, b):
            Mul.seen.append(ctx)
            ctx.save_for_backward(a, b)
            return a * b

        @staticmethod
        def backward(ctx, g):
            a, b = ctx.saved_tensors
            return g * b, g * a

    class Four(Function):
        """Inputs (a, b, k, c) with k a Python number: a*k + b + c; records needs_input_grad."""
        seen: ClassVar[list] = []

        @staticmethod
        def forward(ctx, a, b, k, c):
            Four.seen.append(ctx.needs_input_grad)
            ctx.k = k
            return a * k + b + c

        @staticmethod
        def backward(ctx, g):
            return g * ctx.k, g, None, g

    class Scale(Function):
        """x*k + shift with Python-number parameters that have defaults."""
        @staticmethod
        def forward(ctx, x, k=2.0, shift=0.0):
            ctx.k = k
            return x * k + shift

        @staticmethod
        def backward(ctx, g):
            return g * ctx.k, None, None

    class ScaleKwOnly(Function):
        """x*k + shift with a keyword-only ``shift``."""
        @staticmethod
        def forward(ctx, x, k=2.0, *, shift=0.0):
            ctx.k = k
            return x * k + shift

        @staticmethod
        def backward(ctx, g):
            return g * ctx.k, None

    class ScaleSetup(Function):
        """Scale in setup_context style; records the ``inputs`` setup_context received."""
        seen: ClassVar[list] = []

        @staticmethod
        def forward(x, k=2.0, shift=0.0):
            return x * k + shift

        @staticmethod
        def setup_context(ctx, inputs, output):
            ScaleSetup.seen.append(inputs)
            ctx.k = inputs[1]

        @staticmethod
        def backward(ctx, g):
            return g * ctx.k, None, None

    class MulInplace(Function):
        """x *= k in place, declared with mark_dirty; returns x."""
        @staticmethod
        def forward(ctx, x, k):
            ctx.k = k
            x.mul_(k)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g * ctx.k, None

    class AddInto(Function):
        """buf += x in place (buf declared dirty); gradient 1 to both."""
        @staticmethod
        def forward(ctx, buf, x):
            buf.add_(x)
            ctx.mark_dirty(buf)
            return buf

        @staticmethod
        def backward(ctx, g):
            return g, g

    class DirtyPair(Function):
        """Doubles both inputs in place, marks both dirty and returns both."""
        @staticmethod
        def forward(ctx, x, y):
            x.mul_(2)
            y.mul_(2)
            ctx.mark_dirty(x, y)
            return x, y

        @staticmethod
        def backward(ctx, gx, gy):
            return gx * 2, gy * 2

    class DirtyNotReturned(Function):
        """Like DirtyPair but returns only x: y was modified and not given back."""
        @staticmethod
        def forward(ctx, x, y):
            x.mul_(2)
            y.mul_(2)
            ctx.mark_dirty(x, y)
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 2, None

    class DirtyAndMore(Function):
        """Doubles x in place (marked dirty) and returns it with a second, fresh tensor."""
        @staticmethod
        def forward(ctx, x):
            x.mul_(2)
            ctx.mark_dirty(x)
            return x, x * 3

        @staticmethod
        def backward(ctx, gx, gy):
            return gx * 2 + gy * 6

    class DirtyNotInput(Function):
        """Marks a fresh tensor (not an input) dirty."""
        @staticmethod
        def forward(ctx, x):
            y = x * 2
            ctx.mark_dirty(y)
            return y

        @staticmethod
        def backward(ctx, g):
            return g * 2

    class MaxMask(Function):
        """(max, float mask of where it is), the mask marked non-differentiable."""
        got: ClassVar[list] = []

        @staticmethod
        def forward(ctx, x):
            m = x.max()
            mask = (x == m).to(x.dtype)
            ctx.mark_non_differentiable(mask)
            ctx.save_for_backward(mask)
            return m, mask

        @staticmethod
        def backward(ctx, g_max, g_mask):
            MaxMask.got.append(g_mask)
            (mask,) = ctx.saved_tensors
            return g_max * mask

    class MaxIndex(Function):
        """(max, argmax), the integer index marked non-differentiable."""
        got: ClassVar[list] = []

        @staticmethod
        def forward(ctx, x):
            i = x.argmax()
            ctx.mark_non_differentiable(i)
            ctx.save_for_backward(i)
            ctx.n = x.shape[0]
            return x.max(), i

        @staticmethod
        def backward(ctx, g_max, g_index):
            MaxIndex.got.append(g_index)
            (i,) = ctx.saved_tensors
            g = lib.zeros(ctx.n, dtype=g_max.dtype)
            g[i] = g_max
            return g

    class Split(Function):
        """(2x, 3x); ``materialize`` is passed to set_materialize_grads; records the grads."""
        got: ClassVar[list] = []

        @staticmethod
        def forward(ctx, x, materialize):
            ctx.set_materialize_grads(materialize)
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, g1, g2):
            Split.got.append((g1, g2))
            total = 0
            if g1 is not None:
                total = total + 2 * g1
            if g2 is not None:
                total = total + 3 * g2
            return total, None

    class WithNumber(Function):
        """(2x, 7): a Python number among the outputs; records the grads."""
        got: ClassVar[list] = []

        @staticmethod
        def forward(ctx, x):
            return x * 2, 7

        @staticmethod
        def backward(ctx, g, g_number):
            WithNumber.got.append(g_number)
            return g * 2

    class Identity(Function):
        """Returns its input as it is; backward multiplies by 5."""
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 5

    class Head(Function):
        """Returns a view (the first element) of its input; backward scales by 7."""
        got: ClassVar[list] = []

        @staticmethod
        def forward(ctx, x):
            ctx.n = x.shape[0]
            return x.view(-1)[:1]

        @staticmethod
        def backward(ctx, g):
            Head.got.append(g)
            return lib.cat([g * 7, lib.zeros(ctx.n - 1, dtype=g.dtype)])

    def _returning(name, fn, n_inputs=1):
        """A Function of ``n_inputs`` tensors (forward: their product times 2) whose
        backward returns ``fn(g)``."""
        def forward(ctx, *xs):
            out = xs[0] * 2
            for x in xs[1:]:
                out = out * x if hasattr(x, "shape") else out
            return out
        return type(name, (Function,), {"forward": staticmethod(forward),
                                        "backward": staticmethod(lambda ctx, g: fn(g))})

    TooFew = _returning("TooFew", lambda g: g, 2)
    TooMany = _returning("TooMany", lambda g: (g, g, g), 2)
    ExtraNones = _returning("ExtraNones", lambda g: (g * 3, g * 5, None, None), 2)
    AsList = _returning("AsList", lambda g: [g, g], 2)
    GradForNumber = _returning("GradForNumber", lambda g: (g * 2, g), 2)
    WrongShape = _returning("WrongShape", lambda g: lib.ones(3, dtype=g.dtype))
    Broadcast = _returning("Broadcast", lambda g: lib.ones(3, 2, dtype=g.dtype))
    Float32Grad = _returning("Float32Grad", lambda g: g.to(lib.float32) * 2)
    NumberGrad = _returning("NumberGrad", lambda g: 3.0)
    NoneForFirst = _returning("NoneForFirst", lambda g: (None, g), 2)

    class SaveNumber(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x, 3)
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    class SaveNone(Function):
        @staticmethod
        def forward(ctx, a, b):
            ctx.save_for_backward(a, None, b)
            return a * b

        @staticmethod
        def backward(ctx, g):
            a, nothing, b = ctx.saved_tensors
            assert nothing is None
            return g * b, g * a

    class ViaVjp(Function):
        """Defines ``vjp`` instead of ``backward`` (PyTorch accepts either)."""
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def vjp(ctx, g):
            return g * 4

    class NoBackward(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

    class NoForward(Function):
        pass

    class GradModeProbe(Function):
        """Records whether grad mode is on inside forward and whether its result recorded."""
        seen: ClassVar[list] = []

        @staticmethod
        def forward(ctx, x):
            inner = x * 2
            GradModeProbe.seen.append((lib.is_grad_enabled(), inner.requires_grad))
            return inner

        @staticmethod
        def backward(ctx, g):
            return g * 2

    return with_shared(lib, locals())


F = _functions(tg)


# ------------------------------------------------------------------------------ apply and the node


def test_apply_gives_forward_value_and_custom_gradient():
    """Exp.apply(x) is exp(x); backward through it gives g * exp(x) (d/dx e^x = e^x)."""
    xs = [0.5, -1.0, 2.0]
    x = _f(xs)
    y = F.Exp.apply(x)
    np.testing.assert_allclose(npy(y), np.exp(xs))
    y.backward(tg.tensor([1.0, 2.0, 3.0], dtype=tg.float64))
    np.testing.assert_allclose(npy(x.grad), np.exp(xs) * [1.0, 2.0, 3.0])


def test_node_is_named_after_the_class():
    """grad_fn is ``<ClassName>Backward`` (name(), type name, and the tensor's repr)."""
    y = F.Exp.apply(_f([1.0]))
    assert y.grad_fn.name() == "ExpBackward"
    assert type(y.grad_fn).__name__ == "ExpBackward"
    assert "grad_fn=<ExpBackward>" in repr(y)
    assert F.CubeSetup.apply(_f([1.0])).grad_fn.name() == "CubeSetupBackward"


def test_node_repr_has_pytorchs_shape():
    """PyTorch prints a custom node as ``<torch.autograd.function.ExpBackward object at 0x...>``
    (the node class lives in ``torch.autograd.function``); tracegrad's is its analogue."""
    node = F.Exp.apply(_f([1.0])).grad_fn
    assert type(node).__module__ == f"{LIB}.autograd.function"
    assert re.fullmatch(rf"<{re.escape(LIB)}\.autograd\.function\.ExpBackward object at 0x[0-9a-fA-F]+>",
                        repr(node)), repr(node)


def test_node_is_the_ctx_and_a_graph_node():
    """The ctx forward received is the output's grad_fn, a graph Node, a BackwardCFunction
    and a FunctionCtx; ``autograd.function.Function`` is ``autograd.Function``."""
    F.Mul.seen.clear()
    y = F.Mul.apply(_f([1.0, 2.0]), _f([3.0, 4.0], requires_grad=False))
    (ctx,) = F.Mul.seen
    assert y.grad_fn is ctx
    assert isinstance(ctx, tg.autograd.graph.Node)
    assert isinstance(ctx, tg.autograd.function.BackwardCFunction)
    assert isinstance(ctx, tg.autograd.function.FunctionCtx)
    assert tg.autograd.function.Function is tg.autograd.Function


def test_next_functions_one_edge_per_tensor_input():
    """One edge per tensor input (a Python number gets none): a leaf requiring grad ->
    AccumulateGrad, a tensor not requiring grad -> (None, 0), a non-leaf -> its grad_fn."""
    x, w = _f([1.0, 2.0]), _f([1.0, 2.0])
    c = w * 2
    y = F.Four.apply(x, _f([1.0, 1.0], requires_grad=False), 3, c)
    edges = y.grad_fn.next_functions
    assert [(None if n is None else type(n).__name__, k) for n, k in edges] == [
        ("AccumulateGrad", 0), (None, 0), ("MulBackward0", 0)]
    assert edges[0][0].variable is x
    assert edges[2][0] is c.grad_fn
    y.sum().backward()
    np.testing.assert_allclose(npy(x.grad), [3.0, 3.0])   # d(a*k)/da = k
    np.testing.assert_allclose(npy(w.grad), [2.0, 2.0])   # c = 2w, d/dc = 1


def test_output_history_and_no_history():
    """Outputs are non-leaves requiring grad when an input requires grad; with no input
    requiring grad, or under no_grad, they have no grad_fn."""
    y = F.Exp.apply(_f([1.0]))
    assert not y.is_leaf and y.requires_grad
    z = F.Exp.apply(_f([1.0], requires_grad=False))
    assert z.grad_fn is None and not z.requires_grad
    with tg.no_grad():
        w = F.Exp.apply(_f([1.0]))
    assert w.grad_fn is None and not w.requires_grad
    np.testing.assert_allclose(npy(w), [np.e])


def test_forward_runs_with_grad_mode_off():
    """Inside forward grad mode is off, so its own operations record nothing."""
    F.GradModeProbe.seen.clear()
    y = F.GradModeProbe.apply(_f([1.0]))
    assert F.GradModeProbe.seen == [(False, False)]
    assert y.grad_fn.name() == "GradModeProbeBackward"


def test_ctx_attributes_reach_backward_and_retain_graph_accumulates():
    """Attributes set on ctx in forward are there in backward; two backwards with
    retain_graph accumulate (d/dx k*x... here Scale's k = 3, twice -> 6)."""
    x = _f([1.0, 2.0])
    y = F.Scale.apply(x, 3.0)
    assert y.grad_fn.k == 3.0
    y.sum().backward(retain_graph=True)
    y.sum().backward()
    np.testing.assert_allclose(npy(x.grad), [6.0, 6.0])


def test_node_hooks_run_around_the_custom_backward():
    """register_prehook may replace grad_outputs before backward, register_hook sees both."""
    x = _f([1.0, 2.0])
    y = F.Cube.apply(x)
    seen: ClassVar[list] = []
    y.grad_fn.register_prehook(lambda go: (go[0] * 10,))
    y.grad_fn.register_hook(lambda gi, go: seen.append((npy(gi[0]), npy(go[0]))))
    y.sum().backward()
    np.testing.assert_allclose(npy(x.grad), 3 * np.array([1.0, 4.0]) * 10)
    np.testing.assert_allclose(seen[0][0], [30.0, 120.0])
    np.testing.assert_allclose(seen[0][1], [10.0, 10.0])


# ------------------------------------------------------------------------------ saved tensors


def test_saved_tensors_give_back_what_was_saved():
    """An input comes back as itself; a saved output comes back equal to the output and
    with the node as its grad_fn; a saved None stays None."""
    F.Mul.seen.clear()
    a, b = _f([1.0, 2.0]), _f([3.0, 4.0])
    y = F.Mul.apply(a, b)
    sa, sb = y.grad_fn.saved_tensors
    assert sa is a and sb is b
    e = F.Exp.apply(a)
    (se,) = e.grad_fn.saved_tensors
    np.testing.assert_allclose(npy(se), np.exp([1.0, 2.0]))
    assert se.grad_fn is e.grad_fn
    z = F.SaveNone.apply(a, b)
    assert len(z.grad_fn.saved_tensors) == 3 and z.grad_fn.saved_tensors[1] is None
    z.sum().backward()
    np.testing.assert_allclose(npy(a.grad), [3.0, 4.0])


def test_saved_input_modified_in_place_raises():
    """A saved non-leaf input changed in place before backward: PyTorch's version error,
    naming the tensor's current producer (add_ -> Add) and both versions."""
    x = _f([1.0, 2.0])
    b = x * 1
    y = F.Square.apply(b)
    b.add_(1)
    with pytest.raises(RuntimeError, match=_version_error(f"{LIB}.DoubleTensor", [2], ", which is output 0 of Add,")):
        y.sum().backward()


def test_saved_constant_modified_in_place_raises():
    """A saved tensor that does not require grad (no producer to name) changed in place."""
    w = _f([3.0, 4.0], requires_grad=False)
    y = F.Mul.apply(_f([1.0, 2.0]), w)
    w.add_(1)
    with pytest.raises(RuntimeError, match=_version_error(f"{LIB}.DoubleTensor", [2])):
        y.sum().backward()


def test_saved_output_modified_in_place_names_the_function():
    """A saved output changed in place: PyTorch names it ``output 0 of Exp`` (the node's name
    without ``Backward``, as for built-in nodes: ``MulBackward0`` -> ``Mul``)."""
    y = F.Exp.apply(_f([1.0, 2.0, 3.0]))
    y.mul_(2)
    with pytest.raises(RuntimeError, match=_version_error(f"{LIB}.DoubleTensor", [3], ", which is output 0 of Exp,")):
        y.sum().backward()


def test_saved_tensors_freed_after_backward():
    """After a backward without retain_graph, saved_tensors (and a second backward) raise
    PyTorch's freed-graph error; with retain_graph they are still there."""
    y = F.Exp.apply(_f([0.0, 1.0]))
    y.sum().backward(retain_graph=True)
    np.testing.assert_allclose(npy(y.grad_fn.saved_tensors[0]), [1.0, np.e])
    y.sum().backward()
    with pytest.raises(RuntimeError) as info:
        _ = y.grad_fn.saved_tensors
    assert str(info.value) == FREED
    with pytest.raises(RuntimeError) as info:
        y.sum().backward()
    assert str(info.value) == FREED


def test_save_for_backward_rejects_a_non_tensor():
    """save_for_backward(x, 3): TypeError naming the argument's position and type."""
    with pytest.raises(TypeError, match=re.escape("save_for_backward can only save variables, but argument 1 "
                                                  "is of type int")):
        F.SaveNumber.apply(_f([1.0, 2.0]))


# ------------------------------------------------------------------------------ needs_input_grad


def test_needs_input_grad_per_input():
    """One bool per forward argument: True for a tensor requiring grad, False for a tensor
    that does not and for a non-tensor."""
    F.Four.seen.clear()
    F.Four.apply(_f([1.0]), _f([1.0], requires_grad=False), 3, _f([1.0]))
    assert F.Four.seen == [(True, False, False, True)]


def test_needs_input_grad_under_no_grad_still_reflects_requires_grad():
    """PyTorch fills needs_input_grad from each input's requires_grad, grad mode or not (the
    output still gets no history under no_grad)."""
    F.Four.seen.clear()
    with tg.no_grad():
        y = F.Four.apply(_f([1.0]), _f([1.0], requires_grad=False), 3, _f([1.0]))
    assert F.Four.seen == [(True, False, False, True)]
    assert y.grad_fn is None and not y.requires_grad


def test_needs_input_grad_in_setup_context_style():
    """setup_context's ctx carries needs_input_grad too."""
    F.ScaleSetup.seen.clear()
    y = F.ScaleSetup.apply(_f([1.0]), 3.0, 1.0)
    assert y.grad_fn.needs_input_grad == (True, False, False)


# ------------------------------------------------------------------------------ mark_dirty


def test_mark_dirty_in_place_op_returns_the_input_with_new_history():
    """An in-place Function returns its input object: version moved on (once for the mul_
    inside forward, once more for mark_dirty, as in PyTorch), history rebased onto the
    node, whose edge leads to the old history; gradient k."""
    a = _f([1.0, 2.0])
    b = a.clone()
    v0 = b._version
    c = F.MulInplace.apply(b, 3.0)
    assert c is b
    assert b._version - v0 == 2
    np.testing.assert_allclose(npy(b), [3.0, 6.0])
    assert c.grad_fn.name() == "MulInplaceBackward"
    assert c.grad_fn.next_functions[0][0].name() == "CloneBackward0"
    c.sum().backward()
    np.testing.assert_allclose(npy(a.grad), [3.0, 3.0])


def test_mark_dirty_on_a_leaf_requiring_grad_raises():
    with pytest.raises(RuntimeError, match=re.escape("a leaf Variable that requires grad has been used in an "
                                                     "in-place operation.")):
        F.MulInplace.apply(_f([1.0, 2.0]), 2.0)


def test_mark_dirty_without_anything_requiring_grad():
    """Nothing requires grad: same object back, modified, version bumped, no history."""
    t = _f([1.0, 2.0], requires_grad=False)
    v0 = t._version
    r = F.MulInplace.apply(t, 2.0)
    assert r is t and t._version > v0
    assert r.grad_fn is None and not r.requires_grad
    np.testing.assert_allclose(npy(t), [2.0, 4.0])


def test_mark_dirty_buffer_not_requiring_grad_gets_history():
    """buf += x with only x requiring grad: buf (same object) now requires grad and
    backpropagates 1 into x."""
    buf = _f([0.0, 0.0], requires_grad=False)
    x = _f([1.0, 2.0])
    r = F.AddInto.apply(buf, x)
    assert r is buf and r.requires_grad and r.grad_fn.name() == "AddIntoBackward"
    r.sum().backward()
    np.testing.assert_allclose(npy(x.grad), [1.0, 1.0])


def test_mark_dirty_on_a_non_input_warns_and_goes_on():
    """PyTorch warns (UserWarning) when mark_dirty gets a tensor that is not an input, and
    the call still works."""
    x = _f([1.0, 2.0])
    with pytest.warns(UserWarning, match=re.escape("ctx.mark_dirty() received a tensor that was not an input.")):
        y = F.DirtyNotInput.apply(x)
    np.testing.assert_allclose(npy(y), [2.0, 4.0])
    y.sum().backward()
    np.testing.assert_allclose(npy(x.grad), [2.0, 2.0])


DIRTY_NOT_RETURNED = ("Some elements marked as dirty during the forward method were not returned as output. "
                      "The inputs that are modified inplace must all be outputs of the Function.")
DIRTY_VIEW = ("If your Function modifies inplace an input that is a view of another Tensor, your Function "
              "cannot return more than one Tensor.")


@pytest.mark.skipif(LIB == "torch", reason="stronger than PyTorch, which rebases the first input before it raises")
def test_mark_dirty_of_an_input_not_returned_raises_and_rewrites_no_history():
    """Both inputs changed (versions moved on) but only one came back: PyTorch's error, and
    neither input's history was rewritten."""
    a = _f([1.0, 2.0])
    c, d = a * 1, a * 1
    vc, vd = c._version, d._version
    with pytest.raises(RuntimeError, match=re.escape(DIRTY_NOT_RETURNED)):
        F.DirtyNotReturned.apply(c, d)
    assert c._version > vc and d._version > vd
    assert c.grad_fn.name() == d.grad_fn.name() == "MulBackward0"


def test_mark_dirty_view_with_a_second_output_raises():
    """An in-place Function on a view may return only that one tensor."""
    base = _f([1.0, 2.0, 3.0]) * 1
    with pytest.raises(RuntimeError, match=re.escape(DIRTY_VIEW)):
        F.DirtyAndMore.apply(base[:2])
    assert base.grad_fn.name() == "MulBackward0"


def test_mark_dirty_view_with_a_second_output_is_fine_without_recording():
    base = _f([1.0, 2.0, 3.0], requires_grad=False)
    x, y = F.DirtyAndMore.apply(base[:2])
    np.testing.assert_allclose(npy(base), [2.0, 4.0, 3.0])
    np.testing.assert_allclose(npy(y), [6.0, 12.0])


@pytest.mark.skipif(LIB == "torch", reason="stronger than PyTorch, which rebases the first input before it raises")
def test_mark_dirty_checks_every_input_before_rewriting_any_history():
    """The second dirty input is a leaf requiring grad: the error comes before the first
    (valid) input's history is rebased onto the node."""
    c = _f([1.0, 2.0]) * 1
    leaf = _f([3.0, 4.0])
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad has been used in an in-place"):
        F.DirtyPair.apply(c, leaf)
    assert c.grad_fn.name() == "MulBackward0"


def test_mark_dirty_pair_gradients():
    a = _f([1.0, 2.0])
    c, d = a * 1, a * 3
    x, y = F.DirtyPair.apply(c, d)
    assert x is c and y is d and x.grad_fn is y.grad_fn
    (x + y).sum().backward()
    np.testing.assert_allclose(npy(a.grad), [8.0, 8.0])


# ------------------------------------------------------------------------------ non-differentiable, materialize


def test_mark_non_differentiable_float_output():
    """The mask output takes no gradient: requires_grad False, no grad_fn, backward gets zeros
    for it, and backward from it is PyTorch's no-grad_fn error. The max gets a one-hot grad."""
    F.MaxMask.got.clear()
    x = _f([3.0, 1.0, 2.0])
    m, mask = F.MaxMask.apply(x)
    assert m.requires_grad and not mask.requires_grad and mask.grad_fn is None
    m.backward()
    np.testing.assert_allclose(npy(x.grad), [1.0, 0.0, 0.0])
    np.testing.assert_array_equal(npy(F.MaxMask.got[0]), [0.0, 0.0, 0.0])
    with pytest.raises(RuntimeError, match=NO_GRAD_FN):
        mask.sum().backward()


def test_mark_non_differentiable_integer_output():
    """An integer index output: no grad; backward receives an int64 zero for it."""
    F.MaxIndex.got.clear()
    x = _f([1.0, 5.0, 2.0])
    v, i = F.MaxIndex.apply(x)
    assert v.requires_grad and not i.requires_grad and i.grad_fn is None
    assert i.item() == 1
    (v * 5).backward()
    np.testing.assert_allclose(npy(x.grad), [0.0, 5.0, 0.0])
    (gi,) = F.MaxIndex.got
    assert gi.dtype == tg.int64 and gi.item() == 0


@pytest.mark.parametrize("materialize", [True, False])
def test_set_materialize_grads(materialize):
    """Only the first output used: by default backward gets zeros for the second; with
    set_materialize_grads(False) it gets None. The gradient is 2 either way."""
    F.Split.got.clear()
    x = _f([1.0, 2.0])
    p, _ = F.Split.apply(x, materialize)
    p.sum().backward()
    np.testing.assert_allclose(npy(x.grad), [2.0, 2.0])
    ((g1, g2),) = F.Split.got
    np.testing.assert_allclose(npy(g1), [1.0, 1.0])
    if materialize:
        np.testing.assert_array_equal(npy(g2), [0.0, 0.0])
    else:
        assert g2 is None


def test_non_tensor_output_gets_none_in_backward():
    """A Python number among the outputs comes back as it is, and backward receives None
    for it (PyTorch does not materialize a gradient for a non-tensor output)."""
    WithNumber = F.WithNumber
    WithNumber.got.clear()
    x = _f([1.0, 2.0])
    y, n = WithNumber.apply(x)
    assert n == 7 and isinstance(n, int)
    y.sum().backward()
    np.testing.assert_allclose(npy(x.grad), [2.0, 2.0])
    assert WithNumber.got == [None]


# ------------------------------------------------------------------------------ setup_context, kwargs


def test_setup_context_style():
    """forward without ctx + setup_context: value x^3, gradient 3x^2, node CubeSetupBackward."""
    xs = np.array([1.0, 2.0, -3.0])
    x = _f(xs)
    y = F.CubeSetup.apply(x)
    np.testing.assert_allclose(npy(y), xs ** 3)
    assert y.grad_fn.name() == "CubeSetupBackward"
    y.sum().backward()
    np.testing.assert_allclose(npy(x.grad), 3 * xs ** 2)


def test_setup_context_receives_inputs_with_defaults_applied():
    """PyTorch binds apply's arguments to forward's signature (defaults filled in) before
    setup_context, so ``inputs`` is always (x, k, shift)."""
    F.ScaleSetup.seen.clear()
    x = _f([1.0, 2.0])
    y = F.ScaleSetup.apply(x)
    (inputs,) = F.ScaleSetup.seen
    assert len(inputs) == 3 and inputs[0] is x and tuple(inputs[1:]) == (2.0, 0.0)
    y.sum().backward()
    np.testing.assert_allclose(npy(x.grad), [2.0, 2.0])


@pytest.mark.parametrize("call,value,grad", [
    (lambda S, x: S.apply(x, k=3.0), [3.0, 6.0], 3.0),
    (lambda S, x: S.apply(x, 3.0, shift=1.0), [4.0, 7.0], 3.0),
    (lambda S, x: S.apply(x, shift=1.0, k=3.0), [4.0, 7.0], 3.0),
    (lambda S, x: S.apply(x=x, k=3.0), [3.0, 6.0], 3.0),
], ids=["k", "k-shift", "shift-k", "x-k"])
@pytest.mark.parametrize("cls", ["Scale", "ScaleSetup"])
def test_apply_with_keyword_arguments(cls, call, value, grad):
    """Keyword arguments reach forward (both styles); the gradient is k."""
    x = _f([1.0, 2.0])
    y = call(getattr(F, cls), x)
    np.testing.assert_allclose(npy(y), value)
    y.sum().backward()
    np.testing.assert_allclose(npy(x.grad), [grad, grad])


def test_apply_keyword_with_a_keyword_only_parameter_in_forward():
    """forward(ctx, x, k=2.0, *, shift=0.0): apply(x, k=3.0) works in PyTorch (value 3x)."""
    x = _f([1.0, 2.0])
    y = F.ScaleKwOnly.apply(x, k=3.0)
    np.testing.assert_allclose(npy(y), [3.0, 6.0])
    y.sum().backward()
    np.testing.assert_allclose(npy(x.grad), [3.0, 3.0])


# ------------------------------------------------------------------------------ several inputs and outputs


def test_two_inputs_two_outputs():
    """(a*b, a+b) share one node (output_nr 0 and 1); for L = 2*sum(a*b) + 3*sum(a+b):
    dL/da = 2b + 3 = [9, 13], dL/db = 2a + 3 = [5, 7]."""
    a, b = _f([1.0, 2.0]), _f([3.0, 5.0])
    p, s = F.MulAdd.apply(a, b)
    assert p.grad_fn is s.grad_fn and p.grad_fn.name() == "MulAddBackward"
    assert (p.output_nr, s.output_nr) == (0, 1)
    (p * 2 + s * 3).sum().backward()
    np.testing.assert_allclose(npy(a.grad), [9.0, 13.0])
    np.testing.assert_allclose(npy(b.grad), [5.0, 7.0])


def test_only_one_of_two_outputs_used():
    """Only a+b used: the unused output's grad is materialized as zeros; grads are 1."""
    a, b = _f([1.0, 2.0]), _f([3.0, 5.0])
    _, s = F.MulAdd.apply(a, b)
    s.sum().backward()
    np.testing.assert_allclose(npy(a.grad), [1.0, 1.0])
    np.testing.assert_allclose(npy(b.grad), [1.0, 1.0])


def test_non_tensor_argument_gets_no_gradient():
    """A Python-number argument has no gradient; returning None for it is required."""
    x = _f([1.0, 2.0])
    F.Scale.apply(x, 4.0).sum().backward()
    np.testing.assert_allclose(npy(x.grad), [4.0, 4.0])


# ------------------------------------------------------------------------------ what backward returns


def _backward_error(cls, n_inputs=1):
    xs = [_f([1.0, 2.0]) for _ in range(n_inputs)]
    y = cls.apply(*xs)
    with pytest.raises(Exception) as info:
        y.sum().backward()
    return info.value


@pytest.mark.parametrize("name,n_inputs,message", [
    ("TooFew", 2, "function TooFewBackward returned an incorrect number of gradients (expected 2, got 1)"),
    ("TooMany", 2, "function TooManyBackward returned an incorrect number of gradients (expected 2, got 3)"),
    ("AsList", 2, "function AsListBackward returned an incorrect number of gradients (expected 2, got 1)"),
    ("WrongShape", 1, ("Function WrongShapeBackward returned an invalid gradient at index 0 - got [3] "
                       "but expected shape compatible with [2]")),
    ("NumberGrad", 1, "expected Variable or None (got float)"),
])
def test_backward_returning_the_wrong_thing_raises(name, n_inputs, message):
    """PyTorch's RuntimeErrors for a wrong count (a list counts as one value), a shape that
    cannot be the input's, and a gradient that is not a tensor."""
    err = _backward_error(getattr(F, name), n_inputs)
    assert type(err) is RuntimeError, f"{type(err).__name__}: {err}"
    # PyTorch's text; tracegrad may say first which function and position it is about
    assert str(err) == message or str(err).endswith(": " + message)


def test_gradient_for_a_non_tensor_input_raises():
    """A non-None gradient for a Python-number input (position 2, 1-based)."""
    x = _f([1.0, 2.0])
    y = F.GradForNumber.apply(x, 3.0)
    with pytest.raises(RuntimeError) as info:
        y.sum().backward()
    assert str(info.value) == ("function GradForNumberBackward returned a gradient different than None at "
                               "position 2, but the corresponding forward input was not a Variable")


def test_extra_trailing_nones_are_allowed():
    """Extra gradients are fine when they are None (PyTorch drops them)."""
    a, b = _f([1.0, 2.0]), _f([3.0, 4.0])
    F.ExtraNones.apply(a, b).sum().backward()
    np.testing.assert_allclose(npy(a.grad), [3.0, 3.0])
    np.testing.assert_allclose(npy(b.grad), [5.0, 5.0])


def test_broadcast_gradient_is_summed_to_the_input_shape():
    """A gradient of shape (3, 2) for an input of shape (2,) is summed over the extra dim."""
    x = _f([1.0, 2.0])
    F.Broadcast.apply(x).sum().backward()
    np.testing.assert_allclose(npy(x.grad), [3.0, 3.0])


def test_gradient_is_cast_to_the_input_dtype():
    """A float32 gradient for a float64 input arrives as float64."""
    x = _f([1.0, 2.0])
    F.Float32Grad.apply(x).sum().backward()
    assert x.grad.dtype == tg.float64
    np.testing.assert_allclose(npy(x.grad), [2.0, 2.0])


def test_none_gradients_and_gradients_for_constants():
    """None for an input requiring grad leaves its .grad None; a gradient for a tensor
    that does not require grad is dropped."""
    a, b = _f([1.0, 2.0]), _f([3.0, 4.0])
    F.NoneForFirst.apply(a, b).sum().backward()
    assert a.grad is None
    np.testing.assert_allclose(npy(b.grad), [1.0, 1.0])
    c = _f([1.0, 1.0], requires_grad=False)
    F.Mul.apply(a, c).sum().backward()
    np.testing.assert_allclose(npy(a.grad), [1.0, 1.0])
    assert c.grad is None


def test_vjp_may_stand_for_backward():
    """PyTorch accepts a ``vjp`` static method in place of ``backward``."""
    x = _f([1.0, 2.0])
    F.ViaVjp.apply(x).sum().backward()
    np.testing.assert_allclose(npy(x.grad), [4.0, 4.0])


def test_missing_forward_or_backward():
    """NotImplementedError with PyTorch's texts: at apply (no forward), at backward (no backward)."""
    with pytest.raises(NotImplementedError, match=re.escape("You must implement the forward function for "
                                                            "custom autograd.Function.")):
        F.NoForward.apply(_f([1.0]))
    y = F.NoBackward.apply(_f([1.0]))
    with pytest.raises(NotImplementedError, match=re.escape("You must implement either the backward or vjp "
                                                            "method for your custom autograd.Function")):
        y.sum().backward()


def test_calling_an_instance_is_the_legacy_error():
    """``Exp()(x)`` (pre-0.4 style): PyTorch's RuntimeError pointing to static methods."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        with pytest.raises(RuntimeError, match="Legacy autograd function with non-static forward method is "
                                               "deprecated"):
            F.Exp()(_f([1.0]))


# ------------------------------------------------------------------------------ higher order


def test_double_backward_through_a_differentiable_backward():
    """Cube's backward uses differentiable ops: d/dx = 3x^2, d2/dx2 = 6x, d3/dx3 = 6."""
    xs = np.array([1.0, 2.0, -3.0])
    for cls in (F.Cube, F.CubeSetup):
        x = _f(xs)
        (g,) = tg.autograd.grad(cls.apply(x).sum(), x, create_graph=True)
        np.testing.assert_allclose(npy(g), 3 * xs ** 2)
        assert g.requires_grad
        (h,) = tg.autograd.grad(g.sum(), x, create_graph=True)
        np.testing.assert_allclose(npy(h), 6 * xs)
        (k,) = tg.autograd.grad(h.sum(), x)
        np.testing.assert_allclose(npy(k), [6.0, 6.0, 6.0])


def test_once_differentiable_first_derivative_and_no_graph():
    """@once_differentiable: first derivative right; with a grad_output that does not
    require grad, the result has no history even under create_graph."""
    xs = np.array([1.0, 2.0, -3.0])
    x = _f(xs)
    (g,) = tg.autograd.grad(F.CubeOnce.apply(x).sum(), x, create_graph=True)
    np.testing.assert_allclose(npy(g), 3 * xs ** 2)
    assert not g.requires_grad and g.grad_fn is None
    with pytest.raises(RuntimeError, match=NO_GRAD_FN):
        g.sum().backward()


def test_once_differentiable_double_backward_raises():
    """With a grad_output that requires grad and create_graph=True, the gradient requires
    grad, and differentiating it raises PyTorch's error instead of a wrong answer."""
    xs = np.array([1.0, 2.0, -3.0])
    x = _f(xs)
    v = _f([1.0, 1.0, 1.0])
    (g,) = tg.autograd.grad(F.CubeOnce.apply(x), x, v, create_graph=True)
    np.testing.assert_allclose(npy(g), 3 * xs ** 2)
    assert g.requires_grad
    with pytest.raises(RuntimeError, match="trying to differentiate twice a function that was marked with "
                                           "@once_differentiable"):
        g.sum().backward()


# ------------------------------------------------------------------------------ outputs that are inputs or views


def test_forward_returning_its_input():
    """PyTorch returns a new tensor viewing the input (not the input object), whose
    history is the custom node; the custom backward (x5) is used."""
    x = _f([1.0, 2.0])
    y = F.Identity.apply(x)
    assert y is not x and y._base is x
    assert y.grad_fn.name() == "IdentityBackward" and not y.is_leaf
    y.sum().backward()
    np.testing.assert_allclose(npy(x.grad), [5.0, 5.0])


def test_forward_returning_a_view_of_its_input():
    """A view output keeps its base; backward gets the view-shaped grad, the custom rule runs."""
    F.Head.got.clear()
    x = _f([1.0, 2.0, 3.0])
    y = F.Head.apply(x)
    assert y._base is x and y.grad_fn.name() == "HeadBackward"
    np.testing.assert_allclose(npy(y), [1.0])
    y.sum().backward()
    assert tuple(F.Head.got[0].shape) == (1,)
    np.testing.assert_allclose(npy(x.grad), [7.0, 0.0, 0.0])


def test_in_place_on_a_view_output_is_forbidden():
    """Modifying a view returned by a custom Function in place: PyTorch's RuntimeError
    (it would override the custom backward)."""
    y = F.Head.apply(_f([1.0, 2.0]) * 1)
    with pytest.raises(RuntimeError, match=re.escape(
            "Output 0 of Head is a view and is being modified inplace. This view was created inside "
            "a custom Function (or because an input was returned as-is)")):
        y.mul_(2)


def test_in_place_on_a_view_of_a_view_output_is_forbidden_too():
    """The refusal passes on to views of the output, named after the last view op."""
    y = F.Head.apply(_f([1.0, 2.0]) * 1)
    with pytest.raises(RuntimeError, match=re.escape(
            "Output 0 of Slice is a view and is being modified inplace. This view was created inside "
            "a custom Function")):
        y[:1].mul_(2)


# ------------------------------------------------------------------------------ oracle: PyTorch


def _program_exp(lib):
    x = _f([0.5, -1.0], lib)
    y = _functions(lib).Exp.apply(x)
    y.backward(lib.tensor([1.0, 3.0], dtype=lib.float64))
    return y.grad_fn.name(), y, x.grad


def _program_cube_double(lib):
    x = _f([1.0, -2.0], lib)
    (g,) = lib.autograd.grad(_functions(lib).CubeSetup.apply(x).sum(), x, create_graph=True)
    (h,) = lib.autograd.grad(g.sum(), x)
    return g.detach(), h


def _program_muladd(lib):
    a, b = _f([1.0, 2.0], lib), _f([3.0, -1.0], lib)
    p, s = _functions(lib).MulAdd.apply(a, b)
    (p * s).sum().backward()
    return p.grad_fn.name(), [n.name() for n, _ in p.grad_fn.next_functions], a.grad, b.grad


def _program_dirty(lib):
    a = _f([1.0, 2.0], lib)
    b = a * 1
    v0 = b._version
    c = _functions(lib).MulInplace.apply(b, -2.0)
    (c * c).sum().backward()
    return c is b, b._version - v0, c.grad_fn.name(), a.grad


def _program_non_differentiable(lib):
    fns = _functions(lib)
    fns.MaxMask.got.clear()
    x = _f([1.0, 4.0, 2.0], lib)
    m, mask = fns.MaxMask.apply(x)
    (m * 3).backward()
    return m.requires_grad, mask.requires_grad, mask.grad_fn is None, fns.MaxMask.got[0], x.grad


def _program_materialize(lib):
    fns = _functions(lib)
    out = []
    for materialize in (True, False):
        fns.Split.got.clear()
        x = _f([1.0, 2.0], lib)
        fns.Split.apply(x, materialize)[1].sum().backward()
        out.append((fns.Split.got[0], x.grad))
    return out


def _program_views(lib):
    fns = _functions(lib)
    x = _f([1.0, 2.0, 3.0], lib)
    y = fns.Identity.apply(x)
    z = fns.Head.apply(x)
    (y.sum() + z.sum()).backward()
    return y is x, y._base is x, z._base is x, y.grad_fn.name(), z.grad_fn.name(), x.grad


def _program_needs_input_grad(lib):
    fns = _functions(lib)
    fns.Four.seen.clear()
    fns.Four.apply(_f([1.0], lib), _f([1.0], lib, False), 3, _f([1.0], lib))
    with lib.no_grad():
        fns.Four.apply(_f([1.0], lib), _f([1.0], lib, False), 3, _f([1.0], lib))
    return list(fns.Four.seen)


def _program_kwargs(lib):
    fns = _functions(lib)
    x = _f([1.0, 2.0], lib)
    y = fns.Scale.apply(x, shift=1.0, k=3.0) + fns.ScaleSetup.apply(x, k=-1.0)
    y.sum().backward()
    return y, x.grad


@pytest.mark.torch
@pytest.mark.parametrize("prog", [_program_exp, _program_cube_double, _program_muladd, _program_dirty,
                                  _program_non_differentiable, _program_materialize, _program_views,
                                  _program_needs_input_grad, _program_kwargs],
                         ids=lambda p: p.__name__[len("_program_"):])
def test_same_as_pytorch(prog):
    """The same custom Functions give the same values, gradients and node names in PyTorch."""
    torch = pytest.importorskip("torch")
    assert_same(prog(tg), prog(torch), path=prog.__name__)


def _err_wrong_count(lib):
    fns = _functions(lib)
    fns.TooFew.apply(_f([1.0], lib), _f([2.0], lib)).sum().backward()


def _err_number_input(lib):
    _functions(lib).GradForNumber.apply(_f([1.0], lib), 2.0).sum().backward()


def _err_shape(lib):
    _functions(lib).WrongShape.apply(_f([1.0, 2.0], lib)).sum().backward()


def _err_not_a_tensor(lib):
    _functions(lib).NumberGrad.apply(_f([1.0, 2.0], lib)).sum().backward()


def _err_freed(lib):
    y = _functions(lib).Exp.apply(_f([1.0], lib))
    y.sum().backward()
    return y.grad_fn.saved_tensors


def _err_save_number(lib):
    _functions(lib).SaveNumber.apply(_f([1.0, 2.0], lib))


def _err_saved_output(lib):
    y = _functions(lib).Exp.apply(_f([1.0, 2.0], lib))
    y.add_(1)
    y.sum().backward()


def _err_dirty_leaf(lib):
    _functions(lib).MulInplace.apply(_f([1.0], lib), 2.0)


def _err_view_inplace(lib):
    _functions(lib).Head.apply(_f([1.0, 2.0], lib) * 1).mul_(2)


def _err_view_of_view_inplace(lib):
    _functions(lib).Head.apply(_f([1.0, 2.0], lib) * 1)[:1].mul_(2)


def _err_dirty_not_returned(lib):
    a = _f([1.0, 2.0], lib)
    _functions(lib).DirtyNotReturned.apply(a * 1, a * 1)


def _err_dirty_view_two_outputs(lib):
    _functions(lib).DirtyAndMore.apply((_f([1.0, 2.0, 3.0], lib) * 1)[:2])


@pytest.mark.torch
@pytest.mark.parametrize("prog", [_err_wrong_count, _err_number_input, _err_shape, _err_not_a_tensor,
                                  _err_freed, _err_save_number, _err_saved_output, _err_dirty_leaf,
                                  _err_view_inplace, _err_view_of_view_inplace, _err_dirty_not_returned,
                                  _err_dirty_view_two_outputs], ids=lambda p: p.__name__[len("_err_"):])
def test_errors_same_as_pytorch(prog):
    """Same exception type and text as PyTorch (library names swapped; the anomaly hint at the
    end of the version error is left out, it names each library's own switch)."""
    torch = pytest.importorskip("torch")
    mine, theirs = raises_like(lambda: prog(tg), lambda: prog(torch))
    assert theirs is not None and mine is not None, (mine, theirs)
    assert type(mine) is type(theirs), f"{type(mine).__name__}: {mine} vs {type(theirs).__name__}: {theirs}"
    mine_text, their_text = str(mine).replace(LIB, "torch"), str(theirs)
    mine_text, their_text = mine_text.split(" Hint:")[0], their_text.split(" Hint:")[0]
    # PyTorch's text; tracegrad may say first which function and position it is about
    assert mine_text == their_text or mine_text.endswith(": " + their_text)


@pytest.mark.torch
def test_node_repr_same_shape_as_pytorch():
    """Both reprs read ``<LIB.autograd.function.ExpBackward object at 0x...>``."""
    torch = pytest.importorskip("torch")
    pattern = r"<{}\.autograd\.function\.ExpBackward object at 0x[0-9a-fA-F]+>"
    theirs = repr(_functions(torch).Exp.apply(_f([1.0], torch)).grad_fn)
    mine = repr(_functions(tg).Exp.apply(_f([1.0])).grad_fn)
    assert re.fullmatch(pattern.format("torch"), theirs), theirs
    assert re.fullmatch(pattern.format(re.escape(LIB)), mine), mine
