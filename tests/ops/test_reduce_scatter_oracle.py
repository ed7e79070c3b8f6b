"""scatter_reduce, index_reduce, put, cummax, cummin, mode, gcd, lcm, bit shifts, nextafter
and igamma/igammac against real PyTorch: values, indices, dtypes, gradients (with the same
random cotangent) and error messages, on inputs full of ties, NaNs and negative indices.

Where tracegrad documents a difference, the inputs keep away from it: amax/amin with
``include_self=False`` never have an ``x`` equal to its position's result, and ``put``
without ``accumulate`` never repeats a position (see test_reduce_scatter_more.py)."""
import warnings

import numpy as np
import pytest

import tracegrad as tg

try:
    import torch
except ImportError:  # pragma: no cover
    torch = None

pytestmark = [pytest.mark.torch, pytest.mark.filterwarnings("ignore:index_reduce\\(\\) is in beta")]
NAN = float("nan")


def _both(values, dtype="float64", requires_grad=False):
    a = np.asarray(values, dtype=dtype)
    return (tg.tensor(a, requires_grad=requires_grad), torch.tensor(a, requires_grad=requires_grad))


def _same(ours, theirs):
    if isinstance(theirs, (tuple, list)):
        assert len(ours) == len(theirs)
        for o, t in zip(ours, theirs):
            _same(o, t)
        return
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-12, atol=0)


def _error(call, lib):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            call(lib)
    except Exception as e:  # noqa: BLE001 -- any type: compared with the other side's
        return type(e).__name__, str(e)
    return None


def _same_error(call):
    ours, theirs = _error(call, tg), _error(call, torch)
    assert theirs is not None, "PyTorch accepted the call"
    assert ours == theirs


def _same_gradients(fn, arrays, seed=0, out_index=None):
    """``fn(lib, *leaves)`` on both sides: equal results, and equal gradients of every
    leaf for one random cotangent."""
    ours = [tg.tensor(a, requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    o, t = fn(tg, *ours), fn(torch, *theirs)
    if out_index is not None:
        _same(o, t)
        o, t = o[out_index], t[out_index]
    _same(o, t)
    g = np.random.default_rng(seed).standard_normal(tuple(t.shape))
    mine = tg.autograd.grad(o, ours, tg.tensor(g), allow_unused=True)
    ref = torch.autograd.grad(t, theirs, torch.tensor(g), allow_unused=True)
    for m, r in zip(mine, ref):
        if r is None:
            assert m is None or not m.numpy().any()
        else:
            np.testing.assert_allclose(m.numpy(), r.numpy(), rtol=1e-10, atol=1e-12)


_rng = np.random.default_rng(2024)


def _ties(*shape, high=4):
    """Small integers as floats: many ties."""
    return _rng.integers(0, high, shape).astype(np.float64)


# -- scatter_reduce / index_reduce ---------------------------------------------------------------

CASES = [(reduce, include_self, dim) for reduce in ("sum", "prod", "mean", "amax", "amin")
         for include_self in (True, False) for dim in (0, 1, -1)]


def _apart(x, src, reduce, include_self):
    """Without include_self, an x that cannot equal a result (tracegrad's documented difference)."""
    if include_self or reduce not in ("amax", "amin"):
        return x
    return x + 100.0 if reduce == "amin" else x - 100.0


@pytest.mark.parametrize("reduce,include_self,dim", CASES)
def test_scatter_reduce_matches_torch(reduce, include_self, dim):
    x, src = _ties(4, 5), _ties(6, 7)
    if reduce == "prod":
        x, src = x - 1.5, src - 1.5  # (no zeros: PyTorch's double backward refuses several)
    x = _apart(x, src, reduce, include_self)
    d = dim % 2
    index = _rng.integers(0, x.shape[d], (6, 4) if d == 0 else (3, 7))
    index = np.where(_rng.random(index.shape) < 0.2, x.shape[d] - 1, index)  # crowd one position
    src = src[:index.shape[0], :index.shape[1]]  # (PyTorch differentiates src of the index's shape only)

    def f(lib, a, b):
        return lib.scatter_reduce(a, dim, lib.tensor(index), b, reduce, include_self=include_self)
    _same_gradients(f, [x, src])


@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
def test_scatter_reduce_prod_zeros_and_in_place_match_torch(reduce):
    x = np.array([[1.5, -2.0, 0.0, 0.7]])
    index = np.array([[0, 1, 1, 0, 2, 3]])
    src = np.array([[0.0, 0.0, 0.0, 1.3, 2.0, -0.6]])
    _same_gradients(lambda lib, a, b: a.scatter_reduce(1, lib.tensor(index), b, reduce), [x, src])
    ours, theirs = _both(x)
    ours.scatter_reduce_(1, tg.tensor(index), tg.tensor(src), reduce)
    theirs.scatter_reduce_(1, torch.tensor(index), torch.tensor(src), reduce)
    _same(ours, theirs)


@pytest.mark.parametrize("dtype", ["int64", "int32", "int8", "uint8", "float32", "float16", "bool"])
@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_dtypes_match_torch(dtype, reduce, include_self):
    if dtype == "bool" and reduce == "mean":
        _same_error(lambda lib: lib.ones(3, dtype=lib.bool).scatter_reduce(
            0, lib.tensor([1]), lib.ones(1, dtype=lib.bool), "mean"))
        return
    x = _rng.integers(-3 if dtype[0] == "i" else 0, 6, (3, 4)).astype(dtype)
    src = _rng.integers(-3 if dtype[0] == "i" else 0, 6, (3, 4)).astype(dtype)
    index = _rng.integers(0, 3, (3, 4))
    ours = tg.tensor(x).scatter_reduce(0, tg.tensor(index), tg.tensor(src), reduce, include_self=include_self)
    theirs = torch.tensor(x).scatter_reduce(0, torch.tensor(index), torch.tensor(src), reduce,
                                            include_self=include_self)
    _same(ours, theirs)


def test_scatter_reduce_zero_d_empty_and_nan_match_torch():
    for call in (lambda lib: lib.zeros(()).scatter_reduce(0, lib.tensor([0, 0]), lib.tensor([2.0, 3.0]), "mean"),
                 lambda lib: lib.zeros(()).scatter_reduce(0, lib.tensor(0), lib.tensor(2.0), "amax"),
                 lambda lib: lib.ones(2, 3).scatter_reduce(1, lib.zeros(2, 0, dtype=lib.int64), lib.ones(2, 4), "prod"),
                 lambda lib: lib.ones(3).scatter_reduce(0, lib.tensor([1, 1]), lib.tensor([NAN, 5.0]), "amax"),
                 lambda lib: lib.ones(3).scatter_reduce(0, lib.tensor([1, 1]), lib.tensor([NAN, 5.0]), "amin"),
                 lambda lib: lib.ones(3, 2).scatter_reduce(0, lib.tensor([[1], [1], [1], [1]]), lib.ones(5, 2), "sum")):
        _same(call(tg), call(torch))


@pytest.mark.parametrize("reduce,include_self,dim", [c for c in CASES if c[0] != "sum"])
def test_index_reduce_matches_torch(reduce, include_self, dim):
    x, src = _ties(4, 5), _ties(4, 7) if dim % 2 else _ties(6, 5)
    if reduce == "prod":
        x, src = x - 1.5, src - 1.5
    x = _apart(x, src, reduce, include_self)
    d = dim % 2
    index = _rng.integers(0, x.shape[d], src.shape[d])

    def f(lib, a, b):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return lib.index_reduce(a, dim, lib.tensor(index), b, reduce, include_self=include_self)
    _same_gradients(f, [x, src])


@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
def test_index_reduce_integers_and_in_place_match_torch(reduce):
    x, src = _rng.integers(-5, 5, (3, 4)), _rng.integers(-5, 5, (3, 2))
    index = np.array([3, 3])
    for include_self in (True, False):
        ours, theirs = tg.tensor(x), torch.tensor(x)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ours.index_reduce_(1, tg.tensor(index), tg.tensor(src), reduce, include_self=include_self)
            theirs.index_reduce_(1, torch.tensor(index), torch.tensor(src), reduce, include_self=include_self)
        _same(ours, theirs)


# -- put -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("accumulate", [False, True])
def test_put_matches_torch(accumulate):
    x = _rng.standard_normal((3, 4))
    if accumulate:
        index = _rng.integers(-12, 12, (2, 5))
    else:
        index = _rng.permutation(np.arange(-12, 12))[:6].reshape(3, 2)
        keep = np.unique(index % 12, return_index=True)[1]
        index = index.reshape(-1)[np.sort(keep)]
    src = _rng.standard_normal(index.shape)
    _same_gradients(lambda lib, a, b: lib.put(a, lib.tensor(index), b, accumulate=accumulate), [x, src])
    ours, theirs = _both(x)
    ours.t().put_(tg.tensor(index), tg.tensor(src), accumulate=accumulate)
    theirs.t().put_(torch.tensor(index), torch.tensor(src), accumulate=accumulate)
    _same(ours, theirs)


def test_put_repeats_forward_matches_torch():
    call = lambda lib: lib.zeros(2, 3).put(lib.tensor([0, -1, 0]), lib.tensor([10.0, 20.0, 30.0]))
    _same(call(tg), call(torch))
    call = lambda lib: lib.zeros(()).put_(lib.tensor([0, 0]), lib.tensor([1.0, 2.0]), accumulate=True)
    _same(call(tg), call(torch))


# -- cummax, cummin, mode ------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["cummax", "cummin"])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_cummax_cummin_match_torch(name, dim):
    x = _ties(4, 6)
    x[_rng.random(x.shape) < 0.15] = NAN
    x[0, 2] = -0.0
    _same_gradients(lambda lib, a: getattr(lib, name)(a, dim), [x], out_index=0)
    _same(getattr(tg, name)(tg.tensor(x), dim), getattr(torch, name)(torch.tensor(x), dim))


@pytest.mark.parametrize("values", [[3.0, 1.0, 3.0, 2.0], [[1, 5, 2], [3, 3, 9]], [True, False, True], 3.0, [[]],
                                    [0.0, -0.0, 0.0], [-np.inf, -np.inf, 2.0]])
def test_cummax_cummin_edges_match_torch(values):
    for name in ("cummax", "cummin"):
        ours, theirs = getattr(tg, name)(tg.tensor(values), 0), getattr(torch, name)(torch.tensor(values), 0)
        assert type(ours).__name__ == type(theirs).__name__
        _same(ours, theirs)


@pytest.mark.parametrize("shape,dim,keepdim", [((5, 7), 1, False), ((6, 4), 0, True), ((3, 2, 9), -1, False),
                                               ((12,), 0, False), ((), 0, False)])
def test_mode_matches_torch(shape, dim, keepdim):
    x = _ties(*shape, high=3)
    _same_gradients(lambda lib, a: lib.mode(a, dim, keepdim), [x], out_index=0)
    _same(tg.mode(tg.tensor(x), dim, keepdim), torch.mode(torch.tensor(x), dim, keepdim))
    ints = _rng.integers(-2, 2, shape)
    _same(tg.tensor(ints).mode(dim, keepdim), torch.tensor(ints).mode(dim, keepdim))


def test_mode_bools_and_empty_match_torch():
    _same(tg.tensor([True, False, True]).mode(), torch.tensor([True, False, True]).mode())
    _same(tg.mode(tg.zeros(0, 2), 1), torch.mode(torch.zeros(0, 2), 1))
    _same_error(lambda lib: lib.mode(lib.zeros(2, 0), 1))
    _same_error(lambda lib: lib.mode(lib.zeros(2, dtype=lib.complex64)))


# -- gcd, lcm, shifts, nextafter, igamma ---------------------------------------------------------

@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "int64", "uint8"])
def test_gcd_lcm_match_torch(dtype):
    info = np.iinfo(dtype)
    a = _rng.integers(info.min, info.max, 40, endpoint=True).astype(dtype)
    b = _rng.integers(info.min, info.max, 40, endpoint=True).astype(dtype)
    b[:5] = 0
    a[5:10] = info.min
    small = (_rng.integers(-20, 20, 40) if info.min else _rng.integers(0, 20, 40)).astype(dtype)
    for x, y in ((a, b), (a, small), (small, b)):
        _same(tg.gcd(tg.tensor(x), tg.tensor(y)), torch.gcd(torch.tensor(x), torch.tensor(y)))
        if np.dtype(dtype).itemsize >= 4:  # (PyTorch's lcm divides the most negative int by -1: SIGFPE)
            x, y = np.maximum(x, info.min + 1), np.maximum(y, info.min + 1)
        _same(tg.lcm(tg.tensor(x), tg.tensor(y)), torch.lcm(torch.tensor(x), torch.tensor(y)))


@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "int64", "uint8"])
def test_shifts_match_torch(dtype):
    info = np.iinfo(dtype)
    x = _rng.integers(info.min, info.max, 60, endpoint=True).astype(dtype)
    bits = 8 * np.dtype(dtype).itemsize
    s = _rng.integers(0 if info.min == 0 else -3, bits + 4, 60).astype(dtype)
    for name, op in (("bitwise_left_shift", "__lshift__"), ("bitwise_right_shift", "__rshift__")):
        _same(getattr(tg, name)(tg.tensor(x), tg.tensor(s)), getattr(torch, name)(torch.tensor(x), torch.tensor(s)))
        _same(getattr(tg.tensor(x), op)(tg.tensor(s)), getattr(torch.tensor(x), op)(torch.tensor(s)))
        _same(getattr(tg.tensor(x), op)(3), getattr(torch.tensor(x), op)(3))
        ours, theirs = tg.tensor(x), torch.tensor(x)
        getattr(ours, name + "_")(tg.tensor(s))
        getattr(theirs, name + "_")(torch.tensor(s))
        _same(ours, theirs)
    _same(5 << tg.tensor(s[s >= 0]), 5 << torch.tensor(s[s >= 0]))
    _same(-100 >> tg.tensor(s[s >= 0]), -100 >> torch.tensor(s[s >= 0]))


def test_shift_and_integer_promotion_match_torch():
    for call in (lambda lib: lib.tensor([True]) << 1, lambda lib: lib.tensor([1, 2], dtype=lib.int16) << lib.tensor(3),
                 lambda lib: lib.tensor([1, 2], dtype=lib.int8) << lib.tensor([1, 2]),
                 lambda lib: lib.gcd(lib.tensor([4], dtype=lib.uint8), lib.tensor([6], dtype=lib.int8)),
                 lambda lib: lib.tensor([4], dtype=lib.int32).gcd_(lib.tensor([6]))):
        _same(call(tg), call(torch))


def test_nextafter_matches_torch():
    x = np.array([1.0, 0.0, -0.0, np.inf, -np.inf, 1.0, NAN, 2.0, 1e-300])
    y = np.array([2.0, 1.0, -1.0, 0.0, 0.0, 1.0, 0.0, NAN, -1.0])
    for dtype in ("float64", "float32"):
        _same_gradients(lambda lib, a, b: lib.nextafter(a, b), [x.astype(dtype), y.astype(dtype)])
    _same(tg.nextafter(tg.tensor([1.0]), tg.tensor([2.0], dtype=tg.float64)),
          torch.nextafter(torch.tensor([1.0]), torch.tensor([2.0], dtype=torch.float64)))
    _same(tg.tensor([1.0], dtype=tg.float16).nextafter(tg.tensor([0.0], dtype=tg.float16)),
          torch.tensor([1.0], dtype=torch.float16).nextafter(torch.tensor([0.0], dtype=torch.float16)))
    _same_gradients(lambda lib, a, b: lib.nextafter(a, b), [np.ones((2, 3)), np.array([1.0, 0.0, 2.0])])


def test_igamma_matches_torch():
    a = np.array([0.5, 1.0, 2.0, 7.5, 30.0])
    x = np.array([0.1, 1.0, 3.0, 7.0, 25.0])
    for name in ("igamma", "igammac"):
        ours = getattr(tg, name)(tg.tensor(a), tg.tensor(x, requires_grad=True))
        theirs = getattr(torch, name)(torch.tensor(a), torch.tensor(x, requires_grad=True))
        # (SciPy's series and PyTorch's own differ in the last digits)
        np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-8)
        assert ours.grad_fn.name() == theirs.grad_fn.name()
        g = np.random.default_rng(1).standard_normal(5)
        mine = tg.autograd.grad(ours, ours.grad_fn.next_functions[1][0].variable, tg.tensor(g))[0]
        ref = torch.autograd.grad(theirs, theirs.grad_fn.next_functions[1][0].variable, torch.tensor(g))[0]
        np.testing.assert_allclose(mine.numpy(), ref.numpy(), rtol=1e-10)
        mine, ref = tg.tensor(a), torch.tensor(a)
        getattr(mine, name + "_")(tg.tensor(x))
        getattr(ref, name + "_")(torch.tensor(x))
        np.testing.assert_allclose(mine.numpy(), ref.numpy(), rtol=1e-8)


# -- messages ------------------------------------------------------------------------------------

ERRORS = [
    lambda lib: lib.ones(3).scatter_reduce(0, lib.tensor([0]), lib.ones(1), "foo"),
    lambda lib: lib.ones(3).scatter_reduce(0, lib.tensor([0.0]), lib.ones(1), "sum"),
    lambda lib: lib.ones(3).scatter_reduce(0, lib.tensor([0]), lib.ones(1, dtype=lib.float64), "sum"),
    lambda lib: lib.ones(3, 4).scatter_reduce(1, lib.tensor([[0, 9]]), lib.ones(3, 5), "sum"),
    lambda lib: lib.ones(3, 4).scatter_reduce(1, lib.tensor([[0, -1]]), lib.ones(3, 5), "amax"),
    lambda lib: lib.ones(3, 2).scatter_reduce(0, lib.tensor([[1, 1, 1]]), lib.ones(3, 2), "sum"),
    lambda lib: lib.ones(3, 2).scatter_reduce(0, lib.tensor([[1], [1], [1], [1]]), lib.ones(3, 2), "sum"),
    lambda lib: lib.ones(3, 2).scatter_reduce(2, lib.tensor([[1]]), lib.ones(3, 2), "sum"),
    lambda lib: lib.ones(3).scatter_reduce(0, lib.tensor([1]), 3.0, "sum"),
    lambda lib: lib.ones(3).scatter_reduce(0, lib.tensor([1]), lib.ones(1), "sum", include_self=2),
    lambda lib: lib.ones(3, dtype=lib.complex64).scatter_reduce(0, lib.tensor([1]), lib.ones(1, dtype=lib.complex64),
                                                                "amin"),
    lambda lib: lib.ones(3, 2).index_reduce(0, lib.tensor([0, 1, 0]), lib.ones(3, 2), "sum"),
    lambda lib: lib.ones(3, 2).index_reduce(0, lib.tensor([0, 3, 0]), lib.ones(3, 2), "prod"),
    lambda lib: lib.ones(3, 2).index_reduce(0, lib.tensor([[0, 1, 0]]), lib.ones(3, 2), "prod"),
    lambda lib: lib.ones(3, 2).index_reduce(0, lib.tensor([0, 1]), lib.ones(3, 2), "prod"),
    lambda lib: lib.ones(3, 2).index_reduce(1, lib.tensor([0, 1, 1]), lib.ones(3, 2), "prod"),
    lambda lib: lib.ones(3, 2).index_reduce(0, lib.tensor([0.0, 1, 1]), lib.ones(3, 2), "prod"),
    lambda lib: lib.ones(3, 2).index_reduce(0, lib.tensor([0, 1, 1]), lib.ones(3, 2, dtype=lib.float64), "prod"),
    lambda lib: lib.ones(3, 2).index_reduce(0, lib.tensor([0, 1, 2]), lib.ones(3, 3), "amax"),
    lambda lib: lib.ones(3, 2).index_reduce(0, lib.tensor([0, 1, 2]), lib.ones(3, 2, 1), "amax"),
    lambda lib: lib.tensor([1j, 2]).index_reduce(0, lib.tensor([0]), lib.tensor([1j]), "mean"),
    lambda lib: lib.zeros(6).put(lib.tensor([6]), lib.tensor([1.0])),
    lambda lib: lib.zeros(2, 3).put(lib.tensor([1, -7]), lib.tensor([1.0, 2.0])),
    lambda lib: lib.zeros(6).put(lib.tensor([1, 2]), lib.tensor([1.0])),
    lambda lib: lib.zeros(6).put(lib.tensor([1], dtype=lib.int32), lib.tensor([1.0])),
    lambda lib: lib.zeros(6).put(lib.tensor([1]), lib.tensor([1.0], dtype=lib.float64)),
    lambda lib: lib.zeros(6).put(lib.tensor([1]), 1.0),
    lambda lib: lib.zeros(0).put_(lib.tensor([0]), lib.tensor([1.0])),
    lambda lib: lib.cummax(lib.zeros(3), 1),
    lambda lib: lib.cummin(lib.zeros(2, dtype=lib.complex64), 0),
    lambda lib: lib.tensor([1.5]) << 1,
    lambda lib: lib.tensor([1]) >> 1.5,
    lambda lib: lib.tensor([True]) >> lib.tensor([True]),
    lambda lib: lib.tensor([1, 2]) << "a",
    lambda lib: lib.tensor([1, 2]).__ilshift__(lib.tensor([1.0, 2.0])),
    lambda lib: lib.gcd(lib.tensor([1.0]), lib.tensor([2])),
    lambda lib: lib.lcm(lib.tensor([1.0]), lib.tensor([2.0])),
    lambda lib: lib.gcd(lib.tensor([True]), lib.tensor([True])),
    lambda lib: lib.tensor([1, 2]).lcm_(lib.tensor([1.0, 2.0])),
    lambda lib: lib.nextafter(lib.tensor([1]), lib.tensor([2])),
    lambda lib: lib.nextafter(lib.tensor([1j]), lib.tensor([1j])),
    lambda lib: lib.igamma(lib.tensor([1]), lib.tensor([2])),
    lambda lib: lib.igammac(lib.tensor([1]), lib.tensor([2])),
    lambda lib: lib.tensor([1, 2]).gcd(lib.tensor([1.0, 2.0])),
]


@pytest.mark.parametrize("k", range(len(ERRORS)))
def test_errors_match_torch(k):
    _same_error(ERRORS[k])


def test_igamma_refuses_the_derivative_in_its_first_operand_as_torch():
    """Same exception type; the wording is tracegrad's (it says what to do)."""
    def call(lib):
        a = lib.tensor([1.0], requires_grad=True)
        return lib.autograd.grad(lib.igamma(a, lib.tensor([2.0])).sum(), a)
    assert _error(call, tg)[0] == _error(call, torch)[0] == "NotImplementedError"


# -- out= ----------------------------------------------------------------------------------------

OUT_CALLS = [
    lambda lib, o: lib.gcd(lib.tensor([4, 9]), lib.tensor([6, 6]), out=o),
    lambda lib, o: lib.lcm(lib.tensor([4, 9]), lib.tensor([6, 6]), out=o),
    lambda lib, o: lib.bitwise_left_shift(lib.tensor([4, 9]), lib.tensor([6, 1]), out=o),
    lambda lib, o: lib.bitwise_right_shift(lib.tensor([4, 9]), 1, out=o),
    lambda lib, o: lib.nextafter(lib.tensor([4.0, 1.0]), lib.tensor([6.0, 0.0]), out=o),
    lambda lib, o: lib.igamma(lib.tensor([4.0, 1.0]), lib.tensor([6.0, 0.5]), out=o),
    lambda lib, o: lib.igammac(lib.tensor([4.0, 1.0]), lib.tensor([6.0, 0.5]), out=o),
    lambda lib, o: lib.scatter_reduce(lib.zeros(2), 0, lib.tensor([1, 1]), lib.ones(2), "sum", out=o),
    lambda lib, o: lib.index_reduce(lib.ones(2), 0, lib.tensor([1, 1]), lib.full((2,), 3.0), "prod", out=o),
]


@pytest.mark.parametrize("k", range(len(OUT_CALLS)))
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int8"])
def test_out_matches_torch(k, dtype):
    ours_out, theirs_out = tg.zeros(2, dtype=getattr(tg, dtype)), torch.zeros(2, dtype=getattr(torch, dtype))
    ours = _error(lambda lib: OUT_CALLS[k](lib, ours_out), tg)
    theirs = _error(lambda lib: OUT_CALLS[k](lib, theirs_out), torch)
    assert ours == theirs
    if ours is None:
        assert ours_out.tolist() == pytest.approx(theirs_out.tolist(), rel=1e-6)


@pytest.mark.parametrize("name", ["cummax", "cummin", "mode"])
@pytest.mark.parametrize("dtypes", [("float32", "int64"), ("float64", "int64"), ("float32", "int32")])
def test_tuple_out_matches_torch(name, dtypes):
    def call(lib):
        out = (lib.zeros(2, dtype=getattr(lib, dtypes[0])), lib.zeros(2, dtype=getattr(lib, dtypes[1])))
        result = getattr(lib, name)(lib.tensor([[4.0, 1.0], [4.0, 1.0]]), 0, out=out)
        assert result.values is out[0] and result.indices is out[1]
        return type(result).__name__, result.values.tolist(), result.indices.tolist()
    assert _error(call, tg) == _error(call, torch)
    if _error(call, torch) is None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert call(tg) == call(torch)
