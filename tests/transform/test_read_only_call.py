"""read_only_call: how AST mode runs a callee it cannot read (see opaque_calls.py)."""
import numpy as np
import pytest

from tracegrad.transform.ast.callee_checks import read_only_call
from tracegrad.transform.ast.source import TransformError, WritesIntoArgument


def test_a_write_into_an_argument_is_stopped_and_everything_is_writeable_again():
    base = np.arange(6.0)
    view = base[1:]
    held = [base[:2]]

    def writes(p, q, lst=None):
        q[0] = -1.0

    for args, kwargs in (((view, base, held), {}), ((base, view, held), {}), ((base,), {"q": view, "lst": held}),
                         ((base, held[0]), {})):
        with pytest.raises(WritesIntoArgument, match="writes, called from the function being differentiated, "
                                                     "writes into an array passed to it") as info:
            read_only_call(writes, *args, **kwargs)
        assert isinstance(info.value, TransformError)
        assert info.value.construct == "in-place change of an argument"
        np.testing.assert_array_equal(base, np.arange(6.0))
        assert base.flags.writeable and view.flags.writeable and held[0].flags.writeable


def test_reading_runs_as_written_and_returns_the_result():
    a, b = np.arange(3.0), np.ones(3)
    assert read_only_call(np.dot, a, b) == 3.0
    assert a.flags.writeable and b.flags.writeable
    out = read_only_call(lambda p: p * 2.0, a)
    out[0] = 7.0  # (a new array: writeable)
    np.testing.assert_array_equal(a, np.arange(3.0))


def test_an_array_that_was_read_only_stays_read_only():
    a = np.arange(3.0)
    a.flags.writeable = False
    assert read_only_call(np.sum, a) == 3.0
    assert not a.flags.writeable


def test_other_errors_pass_through_unchanged():
    a = np.arange(3.0)

    def fails(p):
        raise ValueError("its own error")
    with pytest.raises(ValueError, match="its own error"):
        read_only_call(fails, a)
    assert a.flags.writeable


def test_the_arrays_held_by_an_object_passed_are_read_only_too():
    class Box:
        def __init__(self):
            self.w, self.n = np.arange(3.0), 0

    def scales(o):
        o.w *= 2.0

    def counts(o):
        o.n += 1
    box = Box()
    with pytest.raises(WritesIntoArgument, match="held by its object or an object passed to it"):
        read_only_call(scales, box)
    np.testing.assert_array_equal(box.w, np.arange(3.0))
    assert box.w.flags.writeable
    read_only_call(counts, box)
    assert box.n == 1


def test_a_method_of_an_array_or_a_list_is_called_as_it_is():
    a = np.arange(4.0)
    held = [a]
    assert read_only_call(a.reshape, 2, 2).shape == (2, 2)
    read_only_call(held.append, 1.0)
    assert len(held) == 2 and a.flags.writeable


def test_arrays_nested_in_an_objects_attributes_are_read_only_too():
    class Layer:
        def __init__(self):
            self.w = np.arange(3.0)

    class Model:
        def __init__(self):
            self.layers = [Layer()]

        def bump(self):
            self.layers[0].w *= 2.0
    model = Model()
    with pytest.raises(WritesIntoArgument):
        read_only_call(model.bump)
    np.testing.assert_array_equal(model.layers[0].w, np.arange(3.0))
    assert model.layers[0].w.flags.writeable


LATER = []


class _Slot:
    w = None


SLOT = _Slot()
W = np.ones(3)


def _doubles_what_later_holds(y):
    for a in LATER:
        a *= 2.0
    return 0.0


def _doubles_the_slot(y):
    if SLOT.w is not None:
        SLOT.w *= 2.0
    return 0.0


def _reads_w_around(helper):
    def f(x):
        a = np.sum(x * W)
        s = helper(x)
        return a + np.sum(x * W) + s
    return f


@pytest.mark.parametrize("helper,fill,empty", [
    (_doubles_what_later_holds, lambda: LATER.append(W), LATER.clear),
    (_doubles_the_slot, lambda: setattr(SLOT, "w", W), lambda: setattr(SLOT, "w", None)),
], ids=["a global list filled later", "a global object's attribute set later"])
def test_an_array_a_global_comes_to_hold_is_read_only_in_a_helper(helper, fill, empty):
    """A helper writes, in place, what a global list or object holds; it held no array when
    the AST path read the source, and holds the array the function reads (W) when the
    gradient runs. AST mode stops the write with a clear error (W unchanged) instead of
    differentiating with W changed under it; auto mode runs the tape: the gradient with
    W read before (1) and after (2) the write, as tape mode gives."""
    import tracegrad as tg
    f = _reads_w_around(helper)
    x = np.array([1.0, 2.0, 3.0])
    empty()
    W[:] = 1.0
    try:
        ast, auto = tg.grad(f, mode="ast"), tg.grad(f, mode="auto")
        np.testing.assert_array_equal(ast(x), [2.0, 2.0, 2.0])  # (nothing held: no write)
        np.testing.assert_array_equal(auto(x), [2.0, 2.0, 2.0])
        fill()
        with pytest.raises(WritesIntoArgument, match="or by a global it reads"):
            ast(x)
        np.testing.assert_array_equal(W, [1.0, 1.0, 1.0])
        assert W.flags.writeable
        np.testing.assert_array_equal(auto(x), [3.0, 3.0, 3.0])
        W[:] = 1.0
        np.testing.assert_array_equal(tg.grad(f, mode="tape")(x), [3.0, 3.0, 3.0])
    finally:
        empty()
        W[:] = 1.0


@pytest.mark.parametrize("make", [
    lambda path: np.memmap(path, dtype=np.float64, mode="w+", shape=(3,)),
    lambda path: np.ma.array([1.0, 2.0, 3.0], mask=[False, True, False]),
    lambda path: np.asmatrix(np.ones((1, 3))),
], ids=["memmap", "masked array", "matrix"])
@pytest.mark.filterwarnings("ignore:the matrix subclass:PendingDeprecationWarning")
def test_arrays_of_numpys_subclasses_are_read_only_too(make, tmp_path):
    """A memmap, a masked array or a matrix passed to a callee is frozen as an array is: the
    write is refused and the array is unchanged and writeable again."""
    a = make(tmp_path / "a.bin")
    a[...] = 1.0
    before = np.array(a)

    def doubles(p):
        p *= 2.0

    with pytest.raises(WritesIntoArgument):
        read_only_call(doubles, a)
    np.testing.assert_array_equal(np.array(a), before)
    assert a.flags.writeable
