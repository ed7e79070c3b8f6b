"""``out=`` (tracegrad/ops/out.py): written in place and returned, versions bumped,
resized (with PyTorch's warning when out had elements), dtypes checked by each function's
rule with PyTorch's message, arguments that require grad refused -- against real PyTorch
and against hand expectations."""
import warnings

import numpy as np
import pytest

import tracegrad as tg

try:
    import torch
except ImportError:  # pragma: no cover
    torch = None

_rng = np.random.default_rng(7)
A = _rng.standard_normal((3, 3)).astype(np.float32)
V = _rng.standard_normal(3).astype(np.float32)
POS = np.abs(A) + 0.1

# name -> call(lib, a, v, pos, out): one use of each function PyTorch gives out=
CALLS = {
    "add": lambda L, a, v, p, o: L.add(a, v, alpha=2, out=o), "sub": lambda L, a, v, p, o: L.sub(a, 1, out=o),
    "mul": lambda L, a, v, p, o: L.mul(a, a, out=o), "div": lambda L, a, v, p, o: L.div(a, p, out=o),
    "pow": lambda L, a, v, p, o: L.pow(p, 0.5, out=o), "exp": lambda L, a, v, p, o: L.exp(a, out=o),
    "log": lambda L, a, v, p, o: L.log(p, out=o), "sqrt": lambda L, a, v, p, o: L.sqrt(p, out=o),
    "sin": lambda L, a, v, p, o: L.sin(a, out=o), "tanh": lambda L, a, v, p, o: L.tanh(a, out=o),
    "sigmoid": lambda L, a, v, p, o: L.sigmoid(a, out=o), "maximum": lambda L, a, v, p, o: L.maximum(a, v, out=o),
    "remainder": lambda L, a, v, p, o: L.remainder(a, 0.7, out=o), "atan2": lambda L, a, v, p, o: L.atan2(a, p, out=o),
    "neg": lambda L, a, v, p, o: L.neg(a, out=o), "abs": lambda L, a, v, p, o: L.abs(a, out=o),
    "clamp": lambda L, a, v, p, o: L.clamp(a, -0.5, 0.5, out=o), "floor": lambda L, a, v, p, o: L.floor(a, out=o),
    "round": lambda L, a, v, p, o: L.round(a, out=o), "sign": lambda L, a, v, p, o: L.sign(a, out=o),
    "eq": lambda L, a, v, p, o: L.eq(a, a, out=o), "gt": lambda L, a, v, p, o: L.gt(a, 0, out=o),
    "where": lambda L, a, v, p, o: L.where(a > 0, a, v, out=o),
    "sum": lambda L, a, v, p, o: L.sum(a, 0, out=o), "mean": lambda L, a, v, p, o: L.mean(a, 1, True, out=o),
    "prod": lambda L, a, v, p, o: L.prod(a, 1, out=o), "std": lambda L, a, v, p, o: L.std(a, 0, out=o),
    "amax": lambda L, a, v, p, o: L.amax(a, 0, out=o), "argmax": lambda L, a, v, p, o: L.argmax(a, 1, out=o),
    "logsumexp": lambda L, a, v, p, o: L.logsumexp(a, 1, out=o), "cumsum": lambda L, a, v, p, o: L.cumsum(a, 0, out=o),
    "cumprod": lambda L, a, v, p, o: L.cumprod(a, 1, out=o),
    "all": lambda L, a, v, p, o: L.all(a > 0, 1, out=o),
    "mm": lambda L, a, v, p, o: L.mm(a, a, out=o), "bmm": lambda L, a, v, p, o: L.bmm(a[None], a[None], out=o),
    "matmul": lambda L, a, v, p, o: L.matmul(a, a, out=o), "mv": lambda L, a, v, p, o: L.mv(a, v, out=o),
    "dot": lambda L, a, v, p, o: L.dot(v, v, out=o), "outer": lambda L, a, v, p, o: L.outer(v, v, out=o),
    "addmm": lambda L, a, v, p, o: L.addmm(a, a, a, beta=0.5, out=o),
    "tensordot": lambda L, a, v, p, o: L.tensordot(a, a, 1, out=o),
    "cat": lambda L, a, v, p, o: L.cat([a, a], 1, out=o), "stack": lambda L, a, v, p, o: L.stack([a, a], out=o),
    "vstack": lambda L, a, v, p, o: L.vstack([a, v], out=o), "gather": lambda L, a, v, p, o: L.gather(
        a, 1, L.tensor([[0, 2], [1, 1], [2, 0]]), out=o),
    "index_select": lambda L, a, v, p, o: L.index_select(a, 0, L.tensor([2, 0]), out=o),
    "tril": lambda L, a, v, p, o: L.tril(a, out=o),
    "searchsorted": lambda L, a, v, p, o: L.searchsorted(L.tensor([-1.0, 0.0, 1.0]), a, out=o),
    "bucketize": lambda L, a, v, p, o: L.bucketize(a, L.tensor([-1.0, 0.0, 1.0]), out=o),
    "histc": lambda L, a, v, p, o: L.histc(a, 4, -2, 2, out=o),
    "zeros": lambda L, a, v, p, o: L.zeros(2, 3, out=o), "arange": lambda L, a, v, p, o: L.arange(4, out=o),
    "full": lambda L, a, v, p, o: L.full((2,), 3, out=o), "linspace": lambda L, a, v, p, o: L.linspace(0, 1, 5, out=o),
}
DTYPES = ["float32", "float64", "int64", "int32", "bool"]


def _lib_args(lib):
    return (lib.tensor(A), lib.tensor(V), lib.tensor(POS))


def _run(lib, name, out):
    """(result or exception, warnings) of one call."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = CALLS[name](lib, *_lib_args(lib), out)
        except Exception as e:  # noqa: BLE001 -- compared with the other side's
            result = e
    return result, [str(w.message)[:120] for w in caught if issubclass(w.category, UserWarning)]


def _dtype(lib, name):
    return getattr(lib, name)


@pytest.mark.torch
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("start", ["empty", "same", "other"])
@pytest.mark.parametrize("name", sorted(CALLS))
def test_out_matches_torch(name, start, dtype):
    """The same values, dtype, shape, returned object, warnings and errors as PyTorch's,
    for an empty out, an out of the right shape and one of another shape."""
    if dtype == "bool" and name in ("cumsum", "cumprod", "arange", "linspace"):
        pytest.skip("PyTorch has no bool kernel for these; tracegrad computes them (a gap of "
                    "cumsum(dtype=bool) and the factories, not of out=)")
    probe = CALLS[name](torch, *_lib_args(torch), None)
    shape = {"empty": (0,), "same": tuple(probe.shape), "other": (2, 5)}[start]
    theirs_out = torch.zeros(shape, dtype=_dtype(torch, dtype))
    ours_out = tg.zeros(shape, dtype=_dtype(tg, dtype))
    v0 = ours_out._version
    theirs, theirs_warned = _run(torch, name, theirs_out)
    ours, ours_warned = _run(tg, name, ours_out)
    if isinstance(theirs, Exception):
        assert isinstance(ours, Exception), f"PyTorch raised {theirs!r}; tracegrad returned {ours!r}"
        assert (type(ours), str(ours)) == (type(theirs), str(theirs))
        assert ours_out._version == v0 and tuple(ours_out.shape) == shape  # nothing half-changed
        return
    assert not isinstance(ours, Exception), f"tracegrad raised {ours!r}; PyTorch did not"
    assert ours is ours_out and theirs is theirs_out
    assert ours_out._version > v0
    assert set(ours_warned) == {w for w in theirs_warned if "resized since" in w}  # PyTorch's add may warn twice
    assert tuple(ours.shape) == tuple(theirs.shape) and str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    np.testing.assert_allclose(ours.numpy().astype(np.float64), theirs.numpy().astype(np.float64), rtol=1e-6, atol=1e-6)


@pytest.mark.torch
@pytest.mark.parametrize("name,call", [
    ("add", lambda L, x, o: L.add(x, 1, out=o)), ("exp", lambda L, x, o: L.exp(x, out=o)),
    ("mm", lambda L, x, o: L.mm(x, x, out=o)), ("matmul", lambda L, x, o: L.matmul(x, x, out=o)),
    ("sum", lambda L, x, o: L.sum(x, 0, out=o)), ("cat", lambda L, x, o: L.cat([x, x.detach()], out=o)),
    ("max", lambda L, x, o: L.max(x, 0, out=(o, L.empty(0, dtype=L.int64)))),
    ("sort", lambda L, x, o: L.sort(x, out=(o, L.empty(0, dtype=L.int64))))])
def test_out_refuses_arguments_that_require_grad_as_torch(name, call):
    ours = tg.ones(2, 2, requires_grad=True)
    theirs = torch.ones(2, 2, requires_grad=True)
    with pytest.raises(RuntimeError) as e_theirs:
        call(torch, theirs, torch.empty(0))
    with pytest.raises(RuntimeError) as e_ours:
        call(tg, ours, tg.empty(0))
    assert str(e_ours.value) == str(e_theirs.value)
    assert str(e_ours.value) == (f"{name}(): functions with out=... arguments don't support automatic "
                                 "differentiation, but one of the arguments requires grad.")
    with tg.no_grad():  # outside autograd the call is fine and out does not require grad
        o = call(tg, ours, tg.empty(0))
    assert not (o[0] if isinstance(o, tuple) else o).requires_grad


def test_out_that_requires_grad_is_refused():
    with pytest.raises(RuntimeError, match=r"add\(\): functions with out=\.\.\. arguments don't support"):
        tg.add(tg.ones(2), 1, out=tg.empty(2, requires_grad=True))


@pytest.mark.torch
@pytest.mark.parametrize("fn,args,dtypes", [
    ("max", (0,), ("float32", "int64")), ("min", (1, True), ("float32", "int64")),
    ("sort", (0, True), ("float32", "int64")), ("topk", (2,), ("float32", "int64")),
    ("kthvalue", (2, 0), ("float32", "int64"))])
def test_tuple_outs_match_torch(fn, args, dtypes):
    ours_outs = tuple(tg.empty(0, dtype=getattr(tg, d)) for d in dtypes)
    theirs_outs = tuple(torch.empty(0, dtype=getattr(torch, d)) for d in dtypes)
    ours = getattr(tg, fn)(tg.tensor(A), *args, out=ours_outs)
    theirs = getattr(torch, fn)(torch.tensor(A), *args, out=theirs_outs)
    assert type(ours).__name__ == type(theirs).__name__ == fn + "_out"
    assert ours._fields == ("values", "indices") and theirs.values is theirs_outs[0]
    assert all(o is t for o, t in zip(ours, ours_outs))
    np.testing.assert_allclose(ours[0].numpy(), theirs[0].numpy())
    # a wrong dtype in either part: PyTorch's message, and neither part written
    bad = (tg.empty(0, dtype=tg.float64), tg.empty(0, dtype=tg.int64))
    with pytest.raises(RuntimeError) as e_ours:
        getattr(tg, fn)(tg.tensor(A), *args, out=bad)
    with pytest.raises(RuntimeError) as e_theirs:
        getattr(torch, fn)(torch.tensor(A), *args, out=(torch.empty(0, dtype=torch.float64),
                                                         torch.empty(0, dtype=torch.int64)))
    assert str(e_ours.value) == str(e_theirs.value)
    assert bad[1].shape == (0,) and bad[1]._version == 0


def test_out_writes_through_views_and_keeps_strides():
    base = tg.zeros(3, 3)
    view = base[:2]
    r = tg.add(tg.ones(2, 3), 1, out=view)
    assert r is view and base._version == view._version == 1
    assert base.tolist() == [[2.0] * 3, [2.0] * 3, [0.0] * 3]
    t = tg.zeros(3, 3).t()
    tg.mul(tg.ones(3, 3), 3, out=t)
    assert t.stride() == (1, 3) and t.tolist() == [[3.0] * 3] * 3


def test_out_resizes_with_a_warning_only_when_it_had_elements():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        o = tg.mm(tg.ones(2, 3), tg.ones(3, 4), out=tg.empty(0))
    assert o.shape == (2, 4) and o.tolist() == [[3.0] * 4] * 2
    with pytest.warns(UserWarning, match=r"An output with one or more elements was resized since it had shape "
                                         r"\[5\], which does not match the required output shape \[2, 4\]"):
        tg.mm(tg.ones(2, 3), tg.ones(3, 4), out=tg.empty(5))


def test_out_dtype_rules_without_torch():
    o = tg.add(tg.ones(2, dtype=tg.int32), 1, out=tg.empty(2, dtype=tg.float64))
    assert o.dtype == tg.float64 and o.tolist() == [2.0, 2.0]
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Long"):
        tg.exp(tg.ones(2), out=tg.empty(2, dtype=tg.int64))
    with pytest.raises(RuntimeError, match="Expected out tensor to have dtype float, but got double instead"):
        tg.mm(tg.ones(2, 2), tg.ones(2, 2), out=tg.empty(2, 2, dtype=tg.float64))
    with pytest.raises(TypeError, match="torch.cat\\(\\): input types can't be cast to the desired output type Long"):
        tg.cat([tg.ones(2)], out=tg.empty(2, dtype=tg.int64))
    assert tg.sum(tg.tensor([1.5, 2.0]), 0, out=tg.empty((), dtype=tg.int64)).item() == 3


def test_dtype_other_than_outs_is_refused():
    """``sum(x, dtype=float32, out=float64 tensor)`` would compute in one dtype and store in
    another: PyTorch refuses it; a matching dtype is fine."""
    x = tg.tensor([[1.5, 2.0], [3.0, 4.0]], dtype=tg.float64)
    with pytest.raises(RuntimeError, match="Expected out tensor to have dtype float, but got double instead"):
        tg.sum(x, 0, dtype=tg.float32, out=tg.empty(0, dtype=tg.float64))
    with pytest.raises(RuntimeError, match="Expected out tensor to have dtype float, but got long int instead"):
        tg.mean(x, 0, dtype=tg.float32, out=tg.empty(0, dtype=tg.int64))
    with pytest.raises(RuntimeError, match="nansum: provided dtype must match dtype of result. Got Double and Float."):
        tg.nansum(x, 0, dtype=tg.float32, out=tg.empty(0, dtype=tg.float64))
    o = tg.cumsum(x, 1, dtype=tg.float32, out=tg.empty(0, dtype=tg.float32))
    assert o.dtype == tg.float32 and o.tolist() == [[1.5, 3.5], [3.0, 7.0]]


@pytest.mark.torch
@pytest.mark.parametrize("name", ["sum", "prod", "cumsum", "cumprod", "mean", "nansum", "nanmean"])
def test_dtype_other_than_outs_matches_torch(name):
    def call(lib):
        args = (lib.ones(2, 3, dtype=lib.float64), 0)
        getattr(lib, name)(*args, dtype=lib.float32, out=lib.empty(0, dtype=lib.float64))
    with pytest.raises(RuntimeError) as theirs:
        call(torch)
    with pytest.raises(RuntimeError) as ours:
        call(tg)
    assert str(ours.value) == str(theirs.value)
