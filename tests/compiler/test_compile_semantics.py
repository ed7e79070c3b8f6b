"""Staged code computes what the eager code computes: PyTorch's type promotion (not
NumPy's), grad mode, the dtypes of gradients."""
import numpy as np
import pytest

import tracegrad as tg

CASES = {
    "float32 * float64 0-d": (lambda a, b: a * b, lambda: (tg.ones(3), tg.tensor(2.5, dtype=tg.float64))),
    "float32 + int64": (lambda a, b: a + b, lambda: (tg.ones(3), tg.arange(3))),
    "int / int": (lambda a, b: a / b, lambda: (tg.arange(1, 4), tg.arange(1, 4))),
    "int + 1.5": (lambda a, b: a + 1.5 + b, lambda: (tg.arange(3), tg.arange(3))),
    "exp of int": (lambda a, b: a.exp() + b, lambda: (tg.arange(3), tg.ones(3, dtype=tg.float64))),
    "where": (lambda a, b: tg.where(a > 1, a, b), lambda: (tg.arange(3), tg.ones(3))),
    "NumPy scalar": (lambda a, b: a * np.float64(2.5) + b, lambda: (tg.ones(3), tg.ones(3))),
    "int8 wraps": (lambda a, b: a.to(tg.int8) + 300 + b.to(tg.int8), lambda: (tg.ones(3), tg.ones(3))),
    "mean of int": (lambda a, b: a.float().mean() + b.sum(), lambda: (tg.arange(4), tg.ones(2))),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_type_promotion_is_eagers(name):
    f, make = CASES[name]
    want, got = f(*make()), tg.compile(f)(*make())
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_gradients_come_back_in_each_input_dtype():
    w = tg.ones(3, requires_grad=True)
    s = tg.tensor(2.0, dtype=tg.float64, requires_grad=True)
    f = tg.compile(lambda w, s: (w * s).sum())
    f(w, s).backward()
    assert w.grad.dtype == tg.float32 and s.grad.dtype == tg.float64
    assert w.grad.tolist() == [2.0] * 3 and s.grad.item() == 3.0


def test_grad_enabled_inside_a_no_grad_call_runs_eagerly():
    w = tg.ones(2, requires_grad=True)

    def f(x):
        with tg.enable_grad():
            return x * w
    compiled = tg.compile(f)
    with tg.no_grad():
        out = compiled(tg.ones(2))
    assert out.requires_grad and out.grad_fn is not None


def test_forward_mode_ad_runs_eagerly():
    import tracegrad.autograd.forward_ad as fwAD
    f = tg.compile(lambda x: x.sin())
    with fwAD.dual_level():
        x = fwAD.make_dual(tg.zeros(2), tg.ones(2))
        tangent = fwAD.unpack_dual(f(x)).tangent
    assert tangent.tolist() == [1.0, 1.0]


@pytest.mark.torch
def test_type_promotion_matches_torch():
    import torch
    for lib in (tg, torch):
        f = lib.compile(lambda a, b: a * b + 1, backend="eager")
        out = f(lib.ones(2), lib.tensor(2.0, dtype=lib.float64))
        assert str(out.dtype).rsplit(".", 1)[-1] == "float32"


@pytest.mark.parametrize("dtype", [tg.float64, tg.float32])
def test_float64_zero_dim_results_combine_in_a_full_graph(dtype):
    # a float64 0-d result is a NumPy scalar while tracing, and np.float64 is a Python
    # float: type promotion must still read it as a tensor (it broke the graph before)
    def f(x, w):
        return (x * w).relu().sum() + (x * 2.0).sum() * w.mean()
    x = tg.randn(6, 4, dtype=dtype, requires_grad=True)
    w = tg.randn(6, 4, dtype=dtype, requires_grad=True)
    compiled = tg.compile(f, fullgraph=True)
    out = compiled(x, w)
    out.backward()
    got = [out.detach(), x.grad.clone(), w.grad.clone()]
    x.grad = w.grad = None
    want = f(x, w)
    want.backward()
    assert out.dtype == dtype
    for g, e in zip(got, [want.detach(), x.grad, w.grad]):
        assert tg.equal(g, e)


def test_staged_code_is_as_silent_about_inf_and_nan_as_eager_code():
    # NumPy's "invalid value encountered in multiply" from the staged backward (inf * 0)
    # is silent, as eager tracegrad's and PyTorch's are -- cold and hot (fused) alike
    import warnings
    x = tg.tensor([np.inf, 0.0, -1.0, np.nan], requires_grad=True)
    w = tg.tensor([0.0, 2.0, 3.0, 1.0], requires_grad=True)
    f = tg.compile(lambda x, w: (x * w + (x * 2.0).relu()).sum())
    with warnings.catch_warnings(record=True) as seen:
        for _ in range(12):
            x.grad = w.grad = None
            f(x, w).backward()
    assert [str(s.message) for s in seen if issubclass(s.category, RuntimeWarning)] == []
    np.testing.assert_array_equal(w.grad.numpy(), [np.inf, 0.0, -1.0, np.nan])
