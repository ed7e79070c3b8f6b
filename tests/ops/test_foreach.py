"""``torch._foreach_*``: each function equals its single-tensor operation applied to every
tensor (with the second operand as a number, a list of tensors or numbers, or one Tensor),
in-place forms change and return the list, errors are PyTorch's, and the set of names is
PyTorch's (checked against torch when installed)."""
import numpy as np
import pytest

import tracegrad as tg
from tracegrad.ops.foreach import _BINARY, _UNARY

RNG = np.random.default_rng(0)


def _list(n=2, positive=False):
    return [tg.tensor(np.abs(RNG.standard_normal(3)) + 0.5 if positive else RNG.uniform(-0.9, 0.9, 3))
            for _ in range(n)]


def _same(got, want):
    assert len(got) == len(want)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


@pytest.mark.parametrize("name", _UNARY)
def test_unary(name):
    xs = _list(positive=name in ("log", "log10", "log2", "sqrt", "rsqrt", "lgamma"))
    got = getattr(tg, f"_foreach_{name}")(xs)
    assert type(got) is tuple
    _same(got, [getattr(t, name)() for t in xs])
    a = [t.clone() for t in xs]
    assert getattr(tg, f"_foreach_{name}_")(a) is a
    _same(a, got)


@pytest.mark.parametrize("name", _BINARY)
def test_binary(name):
    xs, ys = _list(positive=True), _list(positive=True)
    op = {"maximum": lambda t, o: tg.maximum(t, o if isinstance(o, tg.Tensor) else tg.tensor(o, dtype=t.dtype)),
          "minimum": lambda t, o: tg.minimum(t, o if isinstance(o, tg.Tensor) else tg.tensor(o, dtype=t.dtype))
          }.get(name, lambda t, o: getattr(t, name)(o))
    others = [2.0, ys, [1.5, 0.5]] + ([tg.tensor(1.5)] if name != "pow" else [])
    for other in others:
        per = other if isinstance(other, list) else [other] * len(xs)
        want = [op(t, o) for t, o in zip(xs, per)]
        _same(getattr(tg, f"_foreach_{name}")(xs, other), want)
        a = [t.clone() for t in xs]
        assert getattr(tg, f"_foreach_{name}_")(a, other) is a
        _same(a, want)


def test_alpha_pow_of_a_number_and_pointwise():
    xs, t1, t2 = _list(), _list(), _list(positive=True)
    _same(tg._foreach_sub(xs, t1, alpha=0.5), [a.sub(b, alpha=0.5) for a, b in zip(xs, t1)])
    _same(tg._foreach_pow(2.0, xs), [2.0 ** t for t in xs])
    for value in (0.5, [0.5, 2.0], tg.tensor([0.5, 2.0])):
        per = [0.5, 2.0] if not isinstance(value, float) else [value] * 2
        _same(tg._foreach_addcmul(xs, t1, t2, value), [t.addcmul(a, b, value=v) for t, a, b, v in zip(xs, t1, t2, per)])
        a = [t.clone() for t in xs]
        assert tg._foreach_addcdiv_(a, t1, t2, value) is a
        _same(a, [t.addcdiv(x, y, value=v) for t, x, y, v in zip(xs, t1, t2, per)])
    for w in (0.3, [0.3, 0.7], t2):
        per = w if isinstance(w, list) else [w] * 2
        _same(tg._foreach_lerp(xs, t1, w), [t.lerp(e, v) for t, e, v in zip(xs, t1, per)])


def test_reductions_products_and_copies():
    xs, ys = _list(), _list()
    for ord in (1, 2, 3.5, float("inf")):
        _same(tg._foreach_norm(xs, ord), [tg.linalg.vector_norm(t, ord) for t in xs])
    np.testing.assert_allclose([t.item() for t in tg._foreach_powsum(xs, 3)],
                               [(t.abs() ** 3).sum().item() for t in xs])
    _same(tg._foreach_max(xs), [t.max() for t in xs])
    ms, ns = [tg.ones(2, 3), tg.ones(3, 3)], [tg.ones(3, 2), tg.ones(3, 1)]
    _same(tg._foreach_mm(ms, ns), [a.mm(b) for a, b in zip(ms, ns)])
    a = list(tg._foreach_clone(xs))
    _same(a, xs)
    assert all(c is not t for c, t in zip(a, xs))
    assert tg._foreach_copy_(a, ys) is a
    _same(a, ys)
    tg._foreach_zero_(a)
    assert all((t == 0).all() for t in a)


def test_gradients_flow_through():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    tg._foreach_mul([x], 3.0)[0].sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 3.0])


def test_errors_are_pytorchs():
    xs = _list()
    for call, message in ((lambda: tg._foreach_add(xs, [1.0]), "Tensor list must have same number of elements as scalar list."),
                          (lambda: tg._foreach_add(xs, _list(3)), "Tensor lists must have the same number of tensors, got 2 and 3"),
                          (lambda: tg._foreach_exp([]), "Tensor list must have at least one tensor."),
                          (lambda: tg._foreach_addcmul(xs, xs, xs, [1.0]), "Tensor list must have same number of elements as scalar list.")):
        with pytest.raises(RuntimeError, match=message.replace(".", r"\.")):
            call()


@pytest.mark.torch
def test_the_names_are_pytorchs():
    import torch
    assert {n for n in dir(tg) if n.startswith("_foreach")} == {n for n in dir(torch) if n.startswith("_foreach")}
