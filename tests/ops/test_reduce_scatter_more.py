"""scatter_reduce, index_reduce, put and their in-place forms; cummax, cummin and mode;
gcd, lcm, bit shifts (and << >>), nextafter, igamma/igammac: values against NumPy and
hand-made expectations (ties, NaNs, negative indices, dtypes, empty and 0-d tensors),
gradients against finite differences, error types and messages, and the three paths
(eager, tape, AST) agreeing. The oracle tests against real PyTorch are in
test_reduce_scatter_oracle.py; resize_ and share_memory_ in test_storage_ops.py."""
import numpy as np
import pytest

import tracegrad as tg

NAN = float("nan")


def _grads(fn, *values, cotangent=None):
    """(result, gradients of every float64 input) of ``fn`` on tracegrad leaves."""
    leaves = [tg.tensor(np.asarray(v, dtype=np.float64), requires_grad=True) for v in values]
    out = fn(*leaves)
    g = tg.ones_like(out) if cotangent is None else tg.tensor(np.asarray(cotangent, dtype=np.float64))
    return out, tg.autograd.grad(out, leaves, g)


def _gradcheck(fn, *shapes, seed=0, positive=False):
    rng = np.random.default_rng(seed)
    values = [rng.uniform(0.5, 2.0, s) * rng.choice([-1.0, 1.0], s) if not positive else rng.uniform(0.5, 2.0, s)
              for s in shapes]
    leaves = [tg.tensor(v, requires_grad=True) for v in values]
    assert tg.autograd.gradcheck(fn, leaves)


# -- scatter_reduce ------------------------------------------------------------------------------

X = [1.0, 5.0, 3.0, 2.0]
SRC = [5.0, 2.0, 5.0, 3.0, 3.0]
INDEX = [1, 0, 1, 2, 2]


def _numpy_scatter_reduce(x, index, src, reduce, include_self):
    """The reference: every position's values collected in Python, then reduced."""
    out = np.array(x, dtype=np.float64)
    groups = {}
    for i, s in zip(index, src):
        groups.setdefault(i, []).append(s)
    for i, vals in groups.items():
        vals = ([out[i]] if include_self else []) + vals
        out[i] = {"sum": np.sum, "prod": np.prod, "mean": np.mean, "amax": np.max, "amin": np.min}[reduce](vals)
    return out


@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_values_against_a_python_reference(reduce, include_self):
    out = tg.tensor(X).scatter_reduce(0, tg.tensor(INDEX), tg.tensor(SRC), reduce, include_self=include_self)
    np.testing.assert_allclose(out.numpy(), _numpy_scatter_reduce(X, INDEX, SRC, reduce, include_self), rtol=1e-6)
    assert out.dtype == tg.float32


def test_scatter_reduce_gradients_by_hand():
    """x = [1, 5, 3, 2], src [5, 2, 5, 3, 3] into [1, 0, 1, 2, 2], cotangent [1, 2, 3, 4]."""
    g = [1.0, 2.0, 3.0, 4.0]
    def f(reduce, inc):
        return lambda x, s: x.scatter_reduce(0, tg.tensor(INDEX), s, reduce, include_self=inc)
    _, (gx, gs) = _grads(f("sum", True), X, SRC, cotangent=g)
    assert gx.tolist() == g and gs.tolist() == [2.0, 1.0, 2.0, 3.0, 3.0]
    _, (gx, gs) = _grads(f("sum", False), X, SRC, cotangent=g)
    assert gx.tolist() == [0.0, 0.0, 0.0, 4.0]  # scattered positions do not read x
    _, (gx, gs) = _grads(f("prod", True), X, SRC, cotangent=g)
    assert gx.tolist() == [2.0, 50.0, 27.0, 4.0] and gs.tolist() == [50.0, 1.0, 50.0, 27.0, 27.0]
    _, (gx, gs) = _grads(f("mean", True), X, SRC, cotangent=g)
    np.testing.assert_allclose(gx.numpy(), [0.5, 2 / 3, 1.0, 4.0])
    np.testing.assert_allclose(gs.numpy(), [2 / 3, 0.5, 2 / 3, 1.0, 1.0])
    # amax: 5 (x) and two 5s (src) tie at position 1: a third of its gradient each
    _, (gx, gs) = _grads(f("amax", True), X, SRC, cotangent=g)
    np.testing.assert_allclose(gx.numpy(), [0.0, 2 / 3, 1.0, 4.0])
    np.testing.assert_allclose(gs.numpy(), [2 / 3, 1.0, 2 / 3, 1.0, 1.0])


def test_scatter_reduce_amax_without_self_shares_among_src_ties_only():
    """include_self=False: x takes no part, even where it equals the result (PyTorch
    counts it there and loses its share: src would get [0.5, 0])."""
    _, (gx, gs) = _grads(lambda x, s: x.scatter_reduce(0, tg.tensor([0, 0]), s, "amax", include_self=False),
                         [5.0, 0.0], [5.0, 1.0])
    assert gx.tolist() == [0.0, 1.0] and gs.tolist() == [1.0, 0.0]
    _, (gx, gs) = _grads(lambda x, s: x.scatter_reduce(0, tg.tensor([0, 0, 0]), s, "amin", include_self=False),
                         [9.0], [2.0, 2.0, 3.0])
    assert gx.tolist() == [0.0] and gs.tolist() == [0.5, 0.5, 0.0]


def test_scatter_reduce_prod_gradients_with_zeros():
    """One zero at a position: its gradient is the product of the others; two: all 0."""
    _, (gx, gs) = _grads(lambda x, s: x.scatter_reduce(0, tg.tensor([0, 0, 1, 1, 1]), s, "prod"),
                         [2.0, 3.0], [0.0, 4.0, 0.0, 0.0, 5.0])
    assert gx.tolist() == [0.0, 0.0] and gs.tolist() == [8.0, 0.0, 0.0, 0.0, 0.0]
    _, (gx, gs) = _grads(lambda x, s: x.scatter_reduce(0, tg.tensor([0, 0]), s, "prod"), [0.0], [3.0, 4.0])
    assert gx.tolist() == [12.0] and gs.tolist() == [0.0, 0.0]


@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_gradcheck(reduce, include_self):
    index = tg.tensor([[0, 2, 2, 1, 0], [3, 3, 1, 1, 1]])
    _gradcheck(lambda x, s: tg.scatter_reduce(x, 1, index, s, reduce, include_self=include_self), (2, 4), (2, 6))
    _gradcheck(lambda x, s: tg.scatter_reduce(x, -2, index.t()[:, :1], s, reduce, include_self=include_self),
               (4, 3), (5, 2), seed=1)


def test_scatter_reduce_second_order():
    index = tg.tensor([0, 1, 1, 0])
    x = tg.tensor([1.5, -0.7], dtype=tg.float64, requires_grad=True)
    s = tg.tensor([0.9, 1.3, -2.0, 0.6], dtype=tg.float64, requires_grad=True)
    assert tg.autograd.gradgradcheck(lambda a, b: a.scatter_reduce(0, index, b, "prod"), (x, s))
    assert tg.autograd.gradgradcheck(lambda a, b: a.scatter_reduce(0, index, b, "mean", include_self=False), (x, s))


def test_scatter_reduce_dtypes():
    idx = tg.tensor([0, 0, 1])
    ints = tg.tensor([1, 2, 3]).scatter_reduce(0, idx, tg.tensor([4, -7, 6]), "mean")
    assert ints.tolist() == [-1, 4, 3] and ints.dtype == tg.int64  # floor((1 + 4 - 7) / 3)
    assert tg.tensor([1, 2, 3]).scatter_reduce(0, idx, tg.tensor([4, -7, 6]), "mean",
                                               include_self=False).tolist() == [-2, 6, 3]
    wrapped = tg.ones(3, dtype=tg.int8).scatter_reduce(0, tg.tensor([1, 1]), tg.tensor([100, 100], dtype=tg.int8), "sum")
    assert wrapped.tolist() == [1, -55, 1]
    flags = tg.tensor([True, True, True])
    assert flags.scatter_reduce(0, tg.tensor([1, 1]), tg.tensor([False, True]), "sum").tolist() == [True] * 3
    assert flags.scatter_reduce(0, tg.tensor([1, 1]), tg.tensor([False, True]), "prod").tolist() == [True, False, True]
    half = tg.ones(3, dtype=tg.float16).scatter_reduce(0, tg.tensor([1, 1]), tg.tensor([1.0, 2.0], dtype=tg.float16),
                                                       "mean")
    assert half.dtype == tg.float16 and half.tolist() == [1.0, np.float16(4 / 3), 1.0]
    amax_int = tg.tensor([5, 0]).scatter_reduce(0, tg.tensor([0, 0]), tg.tensor([-3, -9]), "amax", include_self=False)
    assert amax_int.tolist() == [-3, 0]
    c = tg.ones(3, dtype=tg.complex64).scatter_reduce(0, tg.tensor([1, 1]), tg.tensor([1j, 2], dtype=tg.complex64),
                                                      "prod")
    assert c.tolist() == [1, 2j, 1]


def test_scatter_reduce_nan_propagates_and_edge_shapes():
    out = tg.ones(3).scatter_reduce(0, tg.tensor([1, 1]), tg.tensor([NAN, 5.0]), "amin")
    assert np.isnan(out[1].item()) and out[0].item() == 1.0
    empty = tg.ones(2, 3).scatter_reduce(1, tg.zeros(2, 0, dtype=tg.int64), tg.ones(2, 4), "prod")
    assert empty.tolist() == [[1.0] * 3] * 2
    zero_d = tg.zeros(()).scatter_reduce(0, tg.tensor([0, 0]), tg.tensor([2.0, 3.0]), "mean")
    assert zero_d.shape == () and zero_d.item() == pytest.approx(5 / 3)
    assert tg.zeros(()).scatter_reduce(0, tg.tensor(0), tg.tensor(2.0), "amax").item() == 2.0
    smaller = tg.ones(3, 2).scatter_reduce(0, tg.tensor([[1], [1], [1], [1]]), tg.ones(5, 2), "sum")
    assert smaller.tolist() == [[1.0, 1.0], [5.0, 1.0], [1.0, 1.0]]  # index reads src's leading block


def test_scatter_reduce_in_place():
    x = tg.tensor([1.0, 5.0, 3.0, 2.0])
    y = x.scatter_reduce_(0, tg.tensor(INDEX), tg.tensor(SRC), "amax", include_self=False)
    assert y is x and x.tolist() == [2.0, 5.0, 3.0, 2.0] and x._version == 1
    leaf = tg.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        leaf.scatter_reduce_(0, tg.tensor([0]), tg.tensor([1.0]), "sum")
    s = tg.tensor([3.0, 4.0], requires_grad=True)
    base = tg.zeros(2)
    base.scatter_reduce_(0, tg.tensor([1, 1]), s, "prod", include_self=False)
    assert base.grad_fn.name() == "ScatterReduceBackward0"
    assert tg.autograd.grad(base.sum(), s)[0].tolist() == [4.0, 3.0]
    z = tg.zeros(())
    z.scatter_reduce_(0, tg.tensor([0, 0]), tg.tensor([2.0, 3.0]), "sum")
    assert z.item() == 5.0


@pytest.mark.parametrize("call,exc,message", [
    (lambda: tg.ones(3).scatter_reduce(0, tg.tensor([0]), tg.ones(1), "foo"), RuntimeError,
     "reduce argument must be either sum, prod, mean, amax or amin, got foo"),
    (lambda: tg.ones(3).scatter_reduce(0, tg.tensor([0.0]), tg.ones(1), "sum"), RuntimeError,
     "scatter(): Expected dtype int32/int64 for index"),
    (lambda: tg.ones(3).scatter_reduce(0, tg.tensor([0]), tg.ones(1, dtype=tg.float64), "sum"), RuntimeError,
     "scatter(): Expected self.dtype to be equal to src.dtype"),
    (lambda: tg.ones(3, 4).scatter_reduce(1, tg.tensor([[0, 9]]), tg.ones(3, 5), "sum"), RuntimeError,
     "index 9 is out of bounds for dimension 1 with size 4"),
    (lambda: tg.ones(3, 4).scatter_reduce(1, tg.tensor([[0, -1]]), tg.ones(3, 5), "sum"), RuntimeError,
     "index -1 is out of bounds for dimension 1 with size 4"),
    (lambda: tg.ones(3, 2).scatter_reduce(0, tg.tensor([1, 1]), tg.ones(2), "sum"), RuntimeError,
     "Index tensor must have the same number of dimensions as self tensor"),
    (lambda: tg.ones(3, 2).scatter_reduce(0, tg.tensor([[1, 1, 1]]), tg.ones(3, 2), "sum"), RuntimeError,
     ("Expected index [1, 3] to be no larger than self [3, 2] apart from dimension 0 and to be no larger size "
      "than src [3, 2]")),
    (lambda: tg.ones(3, 2).scatter_reduce(2, tg.tensor([[1]]), tg.ones(3, 2), "sum"), IndexError,
     "Dimension out of range (expected to be in range of [-2, 1], but got 2)"),
    (lambda: tg.ones(3).scatter_reduce(0, tg.tensor([1]), 3.0, "sum"), TypeError,
     "scatter_reduce(): argument 'src' (position 3) must be Tensor, not float"),
    (lambda: tg.ones(3).scatter_reduce(0, tg.tensor([1]), tg.ones(1), "sum", include_self=2), TypeError,
     "scatter_reduce(): argument 'include_self' must be bool, not int"),
    (lambda: tg.ones(3, dtype=tg.bool).scatter_reduce(0, tg.tensor([1]), tg.ones(1, dtype=tg.bool), "mean"),
     NotImplementedError, "\"scatter_gather_tensor_cpu_reduce_mean\" not implemented for 'Bool'"),
    (lambda: tg.ones(3, dtype=tg.complex64).scatter_reduce(0, tg.tensor([1]), tg.ones(1, dtype=tg.complex64),
                                                           "amax"),
     NotImplementedError, "\"scatter_gather_tensor_cpu_reduce_amax\" not implemented for 'ComplexFloat'"),
])
def test_scatter_reduce_errors(call, exc, message):
    with pytest.raises(exc) as info:
        call()
    assert str(info.value) == message


# -- index_reduce --------------------------------------------------------------------------------

def test_index_reduce_values_and_gradients_by_hand():
    x = [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]
    src = [[2.0, 3.0], [4.0, 5.0], [6.0, 7.0]]
    index = tg.tensor([0, 2, 0])
    out, (gx, gs) = _grads(lambda a, b: a.index_reduce(0, index, b, "prod"), x, src)
    assert out.tolist() == [[12.0, 42.0], [3.0, 4.0], [20.0, 30.0]]
    assert out.grad_fn.name() == "IndexReduceBackward0"
    assert gx.tolist() == [[12.0, 21.0], [1.0, 1.0], [4.0, 5.0]]
    assert gs.tolist() == [[6.0, 14.0], [5.0, 6.0], [2.0, 6.0]]
    out, (gx, gs) = _grads(lambda a, b: a.index_reduce(0, index, b, "amin", include_self=False), x, src)
    assert out.tolist() == [[2.0, 3.0], [3.0, 4.0], [4.0, 5.0]]
    assert gx.tolist() == [[0.0, 0.0], [1.0, 1.0], [0.0, 0.0]]
    assert gs.tolist() == [[1.0, 1.0], [1.0, 1.0], [0.0, 0.0]]
    mean = tg.tensor(x).index_reduce(1, tg.tensor([1, 1]), tg.tensor(src)[:, :2] * 3, "mean")
    np.testing.assert_allclose(mean.numpy(), [[1.0, (2 + 6 + 9) / 3], [3.0, (4 + 12 + 15) / 3],
                                              [5.0, (6 + 18 + 21) / 3]])


@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_index_reduce_gradcheck(reduce, include_self):
    index = tg.tensor([2, 0, 2, 1, 2])
    _gradcheck(lambda x, s: tg.index_reduce(x, 1, index, s, reduce, include_self=include_self), (2, 3), (2, 5))


def test_index_reduce_edges():
    assert tg.tensor([3, 2]).index_reduce(0, tg.tensor([0, 0], dtype=tg.int32), tg.tensor([2, 3]),
                                          "prod").tolist() == [18, 2]
    assert tg.tensor([1, 2, 3]).index_reduce(0, tg.tensor([0, 0]), tg.tensor([4, -7]), "mean").tolist() == [-1, 2, 3]
    assert tg.ones(3).index_reduce(0, tg.tensor([], dtype=tg.int64), tg.ones(0), "prod").tolist() == [1.0] * 3
    assert tg.zeros(()).index_reduce(0, tg.tensor([0]), tg.tensor(2.0), "mean").item() == 1.0
    y = tg.zeros(3)
    assert y.index_reduce_(0, tg.tensor([1]), tg.tensor([2.0]), "amax") is y and y.tolist() == [0.0, 2.0, 0.0]
    assert np.isnan(tg.ones(3).index_reduce(0, tg.tensor([1]), tg.tensor([NAN]), "amax")[1].item())


@pytest.mark.parametrize("call,exc,message", [
    (lambda: tg.ones(3, 2).index_reduce(0, tg.tensor([0, 1, 0]), tg.ones(3, 2), "sum"), RuntimeError,
     "index_reduce(): Expected reduce to be one of prod, mean, amax or amin but got sum."),
    (lambda: tg.ones(3, 2).index_reduce(0, tg.tensor([0, 3, 0]), tg.ones(3, 2), "prod"), IndexError,
     "index out of range in self"),
    (lambda: tg.ones(3, 2).index_reduce(0, tg.tensor([0, -1, 0]), tg.ones(3, 2), "prod"), IndexError,
     "index out of range in self"),
    (lambda: tg.ones(3, 2).index_reduce(0, tg.tensor([[0, 1, 0]]), tg.ones(3, 2), "prod"), IndexError,
     "index_reduce_(): Index is supposed to be a vector, but got dim: 2 with type: Long and size: [1, 3]"),
    (lambda: tg.ones(3, 2).index_reduce(0, tg.tensor([0, 1]), tg.ones(3, 2), "prod"), RuntimeError,
     "index_reduce_(): Number of indices (2) should be equal to source.size(dim): (3), for dim: 0"),
    (lambda: tg.ones(3, 2).index_reduce(0, tg.tensor([0.0, 1, 1]), tg.ones(3, 2), "prod"), RuntimeError,
     "index_reduce_(): Expected dtype int32/int64 for index but got: Float"),
    (lambda: tg.ones(3, 2).index_reduce(0, tg.tensor([0, 1, 1]), tg.ones(3, 2, dtype=tg.float64), "prod"),
     RuntimeError, "index_reduce_(): self (Float) and source (Double) must have the same scalar type"),
    (lambda: tg.ones(3, 2).index_reduce(0, tg.tensor([0, 1, 2]), tg.ones(3, 3), "amax"), RuntimeError,
     ("source tensor shape must match self tensor shape, excluding the specified dimension. Got self.shape = "
      "[3, 2] source.shape = [3, 3]")),
    (lambda: tg.ones(2, dtype=tg.bool).index_reduce(0, tg.tensor([0]), tg.ones(1, dtype=tg.bool), "amax"),
     NotImplementedError, "\"index_func_\" not implemented for 'Bool'"),
])
def test_index_reduce_errors(call, exc, message):
    with pytest.raises(exc) as info:
        call()
    assert str(info.value) == message


# -- put -----------------------------------------------------------------------------------------

def test_put_values_and_gradients():
    out, (gx, gs) = _grads(lambda x, s: x.put(tg.tensor([0, -1, 0]), s), np.zeros((2, 3)), [10.0, 20.0, 30.0],
                           cotangent=np.arange(1.0, 7.0).reshape(2, 3))
    assert out.tolist() == [[30.0, 0.0, 0.0], [0.0, 0.0, 20.0]] and out.grad_fn.name() == "PutBackward0"
    assert gx.tolist() == [[0.0, 2.0, 3.0], [4.0, 5.0, 0.0]]
    assert gs.tolist() == [0.0, 6.0, 1.0]  # the overwritten first write gets nothing
    out, (gx, gs) = _grads(lambda x, s: tg.put(x, tg.tensor([[0, -1], [0, 2]]), s, accumulate=True), np.ones((2, 3)),
                           [[10.0, 20.0], [30.0, 40.0]], cotangent=np.arange(1.0, 7.0).reshape(2, 3))
    assert out.tolist() == [[41.0, 1.0, 41.0], [1.0, 1.0, 21.0]]
    assert gx.tolist() == [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]] and gs.tolist() == [[1.0, 6.0], [1.0, 3.0]]
    _gradcheck(lambda x, s: x.put(tg.tensor([3, 0, 5]), s), (2, 3), (3,))
    _gradcheck(lambda x, s: x.put(tg.tensor([3, 0, 3]), s, accumulate=True), (2, 3), (3,))


def test_put_in_place_follows_the_row_major_order_of_the_tensor():
    x = tg.arange(6.0).reshape(2, 3)
    t = x.t()
    assert t.put_(tg.tensor([1]), tg.tensor([9.0])) is t
    assert t.tolist() == [[0.0, 9.0], [1.0, 4.0], [2.0, 5.0]] and x.tolist() == [[0.0, 1.0, 2.0], [9.0, 4.0, 5.0]]
    z = tg.zeros(())
    assert z.put_(tg.tensor([0, 0]), tg.tensor([1.0, 2.0]), accumulate=True).item() == 3.0
    assert tg.zeros(0).put_(tg.tensor([], dtype=tg.int64), tg.tensor([])).shape == (0,)
    assert tg.tensor([1, 2]).put_(tg.tensor([0]), tg.tensor([5])).tolist() == [5, 2]


@pytest.mark.parametrize("call,exc,message", [
    (lambda: tg.zeros(6).put(tg.tensor([6]), tg.tensor([1.0])), IndexError,
     "out of range: tried to access index 6 on a tensor of 6 elements."),
    (lambda: tg.zeros(2, 3).put(tg.tensor([1, -7]), tg.tensor([1.0, 2.0])), IndexError,
     "out of range: tried to access index -7 on a tensor of 6 elements."),
    (lambda: tg.zeros(6).put(tg.tensor([1, 2]), tg.tensor([1.0])), IndexError,
     ("put_(): Expected source and index to have the same number of elements, but got source.numel() = 1, "
      "index.numel() = 2")),
    (lambda: tg.zeros(6).put(tg.tensor([1.0]), tg.tensor([1.0])), RuntimeError,
     "put_(): Expected a long tensor for index, but got Float"),
    (lambda: tg.zeros(6).put(tg.tensor([1], dtype=tg.int32), tg.tensor([1.0])), RuntimeError,
     "put_(): Expected a long tensor for index, but got Int"),
    (lambda: tg.zeros(6).put(tg.tensor([1]), tg.tensor([1.0], dtype=tg.float64)), RuntimeError,
     "put_(): self and source expected to have the same dtype, but got self.dtype = Float and source.dtype = Double"),
    (lambda: tg.zeros(6).put(tg.tensor([1]), 1.0), TypeError,
     "put(): argument 'source' (position 2) must be Tensor, not float"),
    (lambda: tg.zeros(0).put_(tg.tensor([0]), tg.tensor([1.0])), IndexError,
     "put_(): Tried to put elements into an empty tensor"),
])
def test_put_errors(call, exc, message):
    with pytest.raises(exc) as info:
        call()
    assert str(info.value) == message


# -- cummax, cummin, mode ------------------------------------------------------------------------

def test_cummax_ties_move_the_index_on_and_nan_sticks():
    x = [1.0, 3.0, 3.0, 2.0, NAN, 5.0, NAN, 0.0]
    r = tg.cummax(tg.tensor(x), 0)
    assert type(r).__name__ == "cummax" and r._fields == ("values", "indices")
    np.testing.assert_array_equal(r.values.numpy(), [1, 3, 3, 3, NAN, NAN, NAN, NAN])
    assert r.indices.tolist() == [0, 1, 2, 2, 4, 4, 6, 6] and r.indices.dtype == tg.int64
    assert tg.cummin(tg.tensor(x), 0).indices.tolist() == [0, 0, 0, 0, 4, 4, 6, 6]
    _, (g,) = _grads(lambda t: tg.cummax(t, 0).values, x, cotangent=np.arange(8.0))
    assert g.tolist() == [0.0, 1.0, 5.0, 0.0, 9.0, 0.0, 13.0, 0.0]


def test_cummax_cummin_values_against_numpy():
    rng = np.random.default_rng(3)
    a = rng.integers(0, 4, (3, 5, 4))  # many ties
    for dim in (0, 1, -1):
        for fn, ufunc in ((tg.cummax, np.maximum), (tg.cummin, np.minimum)):
            values, indices = fn(tg.tensor(a), dim)
            running = ufunc.accumulate(a, axis=dim)
            np.testing.assert_array_equal(values.numpy(), running)
            # the last position up to here that holds the running extremum
            rows, best, got = np.moveaxis(a, dim, -1), np.moveaxis(running, dim, -1), np.moveaxis(indices.numpy(), dim, -1)
            for k in np.ndindex(rows.shape[:-1]):
                expected = [max(j for j in range(i + 1) if rows[k][j] == best[k][i]) for i in range(rows.shape[-1])]
                assert got[k].tolist() == expected


def test_cummax_signed_zeros_bools_and_shapes():
    r = tg.tensor([0.0, -0.0, 0.0]).cummax(0)
    assert r.indices.tolist() == [0, 1, 2] and np.signbit(r.values.numpy()).tolist() == [False, True, False]
    assert tg.tensor([True, False, True]).cummax(0).indices.tolist() == [0, 0, 2]
    zero_d = tg.cummin(tg.tensor(3.0), 0)
    assert zero_d.values.shape == () and zero_d.indices.item() == 0
    empty = tg.cummax(tg.zeros(0, 3), 0)
    assert empty.values.shape == (0, 3) and empty.indices.dtype == tg.int64
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of \[-1, 0\], but got 1\)"):
        tg.cummax(tg.zeros(3), 1)
    with pytest.raises(NotImplementedError, match="\"cummin_cpu\" not implemented for 'ComplexFloat'"):
        tg.zeros(2, dtype=tg.complex64).cummin(0)
    _gradcheck(lambda t: tg.cummin(t, 1).values, (3, 5))
    assert tg.autograd.gradgradcheck(lambda t: tg.cummax(t, 0).values,
                                     (tg.tensor([0.3, -1.0, 2.0], dtype=tg.float64, requires_grad=True),))


def test_mode_picks_the_smallest_most_frequent_value_at_its_last_position():
    r = tg.mode(tg.tensor([3.0, 1.0, 2.0, 1.0, 2.0, 3.0]))
    assert type(r).__name__ == "mode" and r.values.item() == 1.0 and r.indices.item() == 3
    r = tg.tensor([[3, 1, 2, 1, 2, 3], [5, 5, 4, 4, 4, 9]]).mode(1, keepdim=True)
    assert r.values.tolist() == [[1], [4]] and r.indices.tolist() == [[3], [4]]
    r = tg.tensor([2.0, 2.0, NAN, NAN, NAN]).mode()  # each NaN is a value of its own
    assert r.values.item() == 2.0 and r.indices.item() == 1
    assert tg.tensor([True, False, True]).mode().indices.item() == 2
    assert tg.mode(tg.tensor(4.0)).indices.item() == 0
    assert [t.shape for t in tg.mode(tg.zeros(0, 2), 1)] == [(0,), (0,)]
    with pytest.raises(IndexError, match=r"mode\(\): Expected reduction dim 1 to have non-zero size."):
        tg.mode(tg.zeros(2, 0), 1)
    with pytest.raises(NotImplementedError, match="\"mode_cpu\" not implemented for 'ComplexFloat'"):
        tg.zeros(2, dtype=tg.complex64).mode()


def test_mode_against_a_python_count():
    rng = np.random.default_rng(5)
    a = rng.integers(0, 4, (6, 9))
    values, indices = tg.mode(tg.tensor(a), 1)
    for row, v, i in zip(a, values.tolist(), indices.tolist()):
        counts = {k: list(row).count(k) for k in set(row.tolist())}
        best = min(k for k in counts if counts[k] == max(counts.values()))
        assert v == best and i == max(j for j, e in enumerate(row) if e == best)


def test_mode_gradient_goes_to_the_index():
    y = tg.tensor([[3.0, 1.0, 3.0], [2.0, 2.0, 1.0]], requires_grad=True)
    m = y.mode(0)
    assert m.values.grad_fn.name() == "ModeBackward0" and m.indices.tolist() == [1, 0, 1]
    assert tg.autograd.grad(m.values.sum(), y)[0].tolist() == [[0.0, 1.0, 0.0], [1.0, 0.0, 1.0]]


# -- gcd, lcm, shifts ----------------------------------------------------------------------------

def test_gcd_lcm_values_and_overflow_as_pytorch():
    a = tg.tensor([0, -4, 6, 0, 12, -2**63, 7])
    b = tg.tensor([0, 6, -4, 5, 18, 3, 0])
    assert tg.gcd(a, b).tolist() == [0, 2, 2, 5, 6, 1, 7]
    assert tg.lcm(a, b).tolist() == [0, 12, 12, 0, 36, -2**63, 0]
    # |x / gcd * y| in the dtype: the product wraps, then its absolute value
    assert tg.lcm(tg.tensor([2**62, -3]), tg.tensor([3, 2**62])).tolist() == [2**62, 2**62]
    assert tg.lcm(tg.tensor([100], dtype=tg.int8), tg.tensor([3], dtype=tg.int8)).tolist() == [44]
    assert tg.gcd(tg.tensor([4], dtype=tg.uint8), tg.tensor([6], dtype=tg.int8)).dtype == tg.int16
    x = tg.tensor([4, 9], dtype=tg.int32)
    assert x.gcd_(tg.tensor([6, 6])) is x and x.tolist() == [2, 3] and x.dtype == tg.int32
    assert tg.tensor([4]).lcm_(tg.tensor([6])).tolist() == [12]
    rng = np.random.default_rng(0)
    p, q = rng.integers(-1000, 1000, 50), rng.integers(-1000, 1000, 50)
    assert tg.gcd(tg.tensor(p), tg.tensor(q)).tolist() == np.gcd(p, q).tolist()
    assert tg.lcm(tg.tensor(p), tg.tensor(q)).tolist() == np.lcm(p, q).tolist()


def test_shifts_outside_the_width_and_operators():
    x = tg.tensor([1, -8, 5, -1, 3], dtype=tg.int32)
    s = tg.tensor([0, 1, 31, 32, -1], dtype=tg.int32)
    assert (x << s).tolist() == [1, -16, -2**31, 0, 0]
    assert (x >> s).tolist() == [1, -4, 0, -1, 0]
    assert tg.bitwise_right_shift(x, 40).tolist() == [0, -1, 0, -1, 0]
    assert tg.bitwise_left_shift(x, 33).tolist() == [0] * 5
    assert (tg.tensor([1, 2], dtype=tg.uint8) << 7).tolist() == [128, 0]
    assert (tg.tensor([255], dtype=tg.uint8) >> 9).tolist() == [0]
    assert (3 << tg.tensor([1, 2])).tolist() == [6, 12] and (64 >> tg.tensor([1, 2])).tolist() == [32, 16]
    assert tg.bitwise_left_shift(3, tg.tensor([1, 2])).tolist() == [6, 12]
    assert (tg.tensor([True]) << 1).tolist() == [2]
    assert (tg.tensor([1, 2], dtype=tg.int16) << 3).dtype == tg.int16
    assert (tg.tensor([1, 2], dtype=tg.int8) << tg.tensor([1, 2])).dtype == tg.int64
    y = tg.tensor([1, 2], dtype=tg.int32)
    y <<= 2
    assert y.tolist() == [4, 8] and y.dtype == tg.int32
    y >>= 1
    assert y.tolist() == [2, 4]
    assert tg.tensor([8, 16]).bitwise_right_shift_(tg.tensor([1, 2])).tolist() == [4, 4]
    assert (tg.tensor([1]) << 63).tolist() == [-2**63] and (tg.tensor([-2**63]) >> 63).tolist() == [-1]
    np.testing.assert_array_equal((tg.tensor(np.arange(-8, 8)) >> 2).numpy(), np.arange(-8, 8) >> 2)


@pytest.mark.parametrize("call,exc,message", [
    (lambda: tg.tensor([1.5]) << 1, NotImplementedError, "\"lshift_cpu\" not implemented for 'Float'"),
    (lambda: tg.tensor([1]) >> 1.5, NotImplementedError, "\"rshift_cpu\" not implemented for 'Float'"),
    (lambda: tg.tensor([True]) << tg.tensor([True]), NotImplementedError, "\"lshift_cpu\" not implemented for 'Bool'"),
    (lambda: tg.gcd(tg.tensor([1.0]), tg.tensor([2])), NotImplementedError, "\"gcd_cpu\" not implemented for 'Float'"),
    (lambda: tg.lcm(tg.tensor([True]), tg.tensor([True])), NotImplementedError,
     "\"lcm_cpu\" not implemented for 'Bool'"),
    (lambda: tg.tensor([1, 2]).gcd_(tg.tensor([1.0, 2.0])), RuntimeError,
     "result type Float can't be cast to the desired output type Long"),
    (lambda: tg.tensor([1.0, 2.0]).gcd_(tg.tensor([1, 2])), NotImplementedError,
     "\"gcd_cpu\" not implemented for 'Float'"),
    (lambda: tg.tensor([1, 2]) << "a", TypeError, "unsupported operand type(s) for <<: 'Tensor' and 'str'"),
    (lambda: tg.nextafter(tg.tensor([1]), tg.tensor([2])), NotImplementedError,
     "\"nextafter_cpu\" not implemented for 'Long'"),
    (lambda: tg.nextafter(tg.tensor([1j]), tg.tensor([1j])), NotImplementedError,
     "\"nextafter_cpu\" not implemented for 'ComplexFloat'"),
    (lambda: tg.igamma(tg.tensor([1]), tg.tensor([2])), NotImplementedError,
     "\"igamma_cpu\" not implemented for 'Long'"),
    (lambda: tg.igammac(tg.tensor([1]), tg.tensor([2])), NotImplementedError,
     "\"igammac_cpu\" not implemented for 'Long'"),
])
def test_integer_and_float_kernel_errors(call, exc, message):
    with pytest.raises(exc) as info:
        call()
    assert str(info.value) == message


# -- nextafter, igamma ---------------------------------------------------------------------------

def test_nextafter_values_and_gradient():
    x = np.array([1.0, 0.0, -0.0, np.inf, 1.0, NAN], dtype=np.float32)
    y = np.array([2.0, 1.0, -1.0, 0.0, 1.0, 0.0], dtype=np.float32)
    out = tg.nextafter(tg.tensor(x), tg.tensor(y))
    np.testing.assert_array_equal(out.numpy(), np.nextafter(x, y))
    assert out.dtype == tg.float32
    assert tg.nextafter(tg.tensor([1.0]), tg.tensor([2.0], dtype=tg.float64)).dtype == tg.float64
    assert tg.nextafter(tg.tensor([1.0], dtype=tg.float16), tg.tensor([2.0], dtype=tg.float16)).item() == 1.0009765625
    tx, ty = tg.tensor(x, requires_grad=True), tg.tensor(y, requires_grad=True)
    r = tg.nextafter(tx, ty)
    assert r.grad_fn.name() == "NextafterBackward0"
    gx, gy = tg.autograd.grad(r.sum(), (tx, ty))
    assert gx.tolist() == [1.0, 1.0, 1.0, 1.0, 0.0, 1.0] and gy.tolist() == [0.0] * 6  # 0 where x == y
    z = tg.tensor([1.0, 2.0])
    assert z.nextafter_(tg.tensor([2.0, 0.0])) is z
    assert z.tolist() == np.nextafter(np.float32([1.0, 2.0]), np.float32([2.0, 0.0])).tolist()


def test_igamma_is_special_gammainc():
    a, x = tg.tensor([1.0, 2.0, 0.5]), tg.tensor([0.5, 3.0, 2.0])
    np.testing.assert_allclose(tg.igamma(a, x).numpy(), tg.special.gammainc(a, x).numpy())
    np.testing.assert_allclose(tg.igammac(a, x).numpy(), tg.special.gammaincc(a, x).numpy())
    np.testing.assert_allclose((tg.igamma(a, x) + a.igammac(x)).numpy(), 1.0, rtol=1e-6)
    z = tg.tensor([0.5, 3.0, 2.0], requires_grad=True)
    r = tg.igamma(a, z)
    assert r.grad_fn.name() == "IgammaBackward0" and tg.igammac(a, z).grad_fn.name() == "IgammacBackward0"
    np.testing.assert_allclose(tg.autograd.grad(r.sum(), z)[0].numpy(),
                               np.exp(-z.detach().numpy()) * z.detach().numpy() ** (a.numpy() - 1)
                               / np.array([1.0, 1.0, np.sqrt(np.pi)]), rtol=1e-5)
    b = tg.tensor([1.0, 2.0])
    assert b.igamma_(tg.tensor([1.0, 2.0])) is b
    np.testing.assert_allclose(b.numpy(), [1 - np.exp(-1), 1 - 3 * np.exp(-2)], rtol=1e-6)
    shape = tg.tensor([1.0], requires_grad=True)
    with pytest.raises(NotImplementedError, match="with respect to its operand 'a'"):
        tg.autograd.grad(tg.igamma(shape, tg.tensor([2.0])).sum(), shape)


# -- every path ----------------------------------------------------------------------------------

def _model(x, src):
    index = tg.tensor([1, 0, 1, 2, 2])
    return ((tg.scatter_reduce(x, 0, index, src, "amax", include_self=False) ** 2).sum()
            + tg.cummax(src, 0).values.sum() + tg.mode(src).values
            + tg.index_reduce(x, 0, tg.tensor([0, 0, 1, 1, 3]), src, "prod").sum()
            + tg.put(x, tg.tensor([0, 0]), src[:2], accumulate=True).sum()
            + tg.nextafter(src, x[0]).sum() + x.cummin(0).values.sum())


@pytest.mark.parametrize("mode", ["tape", "ast"])
def test_the_staged_paths_agree_with_eager(mode):
    x, src = tg.tensor([1.0, 5.0, 3.0, 2.0]), tg.tensor([5.0, 2.0, 4.0, 3.0, 3.5])
    eager = tg.autograd.grad(_model(x.requires_grad_(), src.requires_grad_()), (x, src))
    staged = tg.grad(_model, argnums=(0, 1), mode=mode)(x.detach(), src.detach())
    for a, b in zip(staged, eager):
        np.testing.assert_allclose(a.numpy(), b.numpy())


def test_vmap_batches_the_new_reductions():
    from tracegrad.func import vmap
    rows = tg.tensor([[1.0, 3.0, 2.0], [4.0, 1.0, 5.0]])
    np.testing.assert_array_equal(vmap(lambda s: tg.cummax(s, 0).values)(rows).numpy(), [[1, 3, 3], [4, 4, 5]])
    assert vmap(lambda s: tg.mode(s).values)(tg.tensor([[1.0, 3.0, 3.0], [4.0, 1.0, 4.0]])).tolist() == [3.0, 4.0]
    assert vmap(lambda s: tg.gcd(s, tg.tensor(6)))(tg.tensor([[4, 9], [2, 3]])).tolist() == [[2, 3], [2, 3]]


# -- review findings: each failed before its fix -------------------------------------------------

@pytest.mark.parametrize("reduce,include_self", [("sum", False), ("amax", False), ("prod", False),
                                                 ("sum", True), ("mean", True)])
def test_scatter_reduce_into_itself_reads_the_source_before_writing(reduce, include_self):
    """``x.scatter_reduce_(0, i, x, ...)``: the source is x as it was (a write-then-read gave
    zeros, -inf or ones)."""
    x = tg.tensor([1.0, 2.0, 3.0])
    expected = tg.tensor([1.0, 2.0, 3.0]).scatter_reduce(0, tg.tensor([1, 2, 0]), tg.tensor([1.0, 2.0, 3.0]),
                                                         reduce, include_self=include_self)
    x.scatter_reduce_(0, tg.tensor([1, 2, 0]), x, reduce, include_self=include_self)
    np.testing.assert_array_equal(x.numpy(), expected.numpy())


@pytest.mark.parametrize("fn", ["scatter_reduce", "index_reduce"])
def test_a_nan_extremum_gives_nan_to_what_took_part_and_zero_to_what_did_not(fn):
    """As PyTorch (and the table's own amax): every element reaching a NaN result gets NaN;
    an x that include_self=False leaves out gets 0 (it got 0 / 0)."""
    for include_self in (True, False):
        x = tg.tensor([1.0, 5.0], requires_grad=True)
        s = tg.tensor([float("nan"), 2.0, 3.0], requires_grad=True)
        if fn == "scatter_reduce":
            out = x.scatter_reduce(0, tg.tensor([0, 0, 1]), s, "amax", include_self=include_self)
        else:
            out = x.index_reduce(0, tg.tensor([0, 0, 1]), s, "amax", include_self=include_self)
        out.sum().backward()
        x_grad, s_grad = x.grad.numpy(), s.grad.numpy()
        assert np.isnan(s_grad[:2]).all()
        if include_self:
            assert np.isnan(x_grad[0]) and x_grad[1] == 1.0 and s_grad[2] == 0.0
        else:
            np.testing.assert_array_equal(x_grad, [0.0, 0.0])
            assert s_grad[2] == 1.0


@pytest.mark.parametrize("reduce", ["mean", "amax"])
def test_float16_counts_stay_exact_past_2048(reduce):
    """Counts were made in float16, which stops at 2048: shares were twice too large."""
    n = 4000
    x = tg.zeros(1, dtype=tg.float16, requires_grad=True)
    s = tg.zeros(n, dtype=tg.float16, requires_grad=True)
    x.scatter_reduce(0, tg.zeros(n, dtype=tg.long), s, reduce).sum().backward()
    np.testing.assert_allclose(float(s.grad.float()[0]), 1 / (n + 1), rtol=1e-3)
    np.testing.assert_allclose(float(s.grad.float().sum() + x.grad.float().sum()), 1.0, rtol=2e-3)


def test_nextafter_of_equal_values_is_the_target_in_every_float_dtype():
    for dtype in (tg.float16, tg.float32, tg.float64):
        r = tg.nextafter(tg.tensor(0.0, dtype=dtype), tg.tensor(-0.0, dtype=dtype))
        assert r.item() == 0.0 and np.signbit(r.numpy())
