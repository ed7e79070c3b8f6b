"""repr/str of tensors, grad_fn nodes, Size, dtype, device and named results (PyTorch's, renamed)."""
import re

import numpy as np
import pytest

from ._helpers import LIB, tg


@pytest.fixture(autouse=True)
def _restore_default_dtype():
    before = tg.get_default_dtype()
    yield
    tg.set_default_dtype(before)


# ------------------------------------------------------------------------------ hand-derived


def test_repr_suffixes():
    assert repr(tg.tensor([1.0, 2.0])) == "tensor([1., 2.])"
    assert repr(tg.tensor([1.0, 2.0], requires_grad=True)) == "tensor([1., 2.], requires_grad=True)"
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    assert repr(x * 2) == "tensor([2., 4.], grad_fn=<MulBackward0>)"
    assert repr(x + 1) == "tensor([2., 3.], grad_fn=<AddBackward0>)"
    assert repr((x * 2).sum()) == "tensor(6., grad_fn=<SumBackward0>)"
    assert repr(tg.tensor([1, 2])) == "tensor([1, 2])"
    assert repr(tg.tensor([1, 2], dtype=tg.int32)) == f"tensor([1, 2], dtype={LIB}.int32)"
    assert repr(tg.tensor([1.0], dtype=tg.float64)) == f"tensor([1.], dtype={LIB}.float64)"
    assert repr(tg.tensor([1.0], dtype=tg.float64, requires_grad=True)) == \
        f"tensor([1.], dtype={LIB}.float64, requires_grad=True)"
    assert repr(tg.tensor([True, False])) == "tensor([ True, False])"
    assert repr(tg.tensor(3.5)) == "tensor(3.5000)"
    assert repr(tg.tensor(3)) == "tensor(3)"


def test_repr_empty_tensors():
    assert repr(tg.tensor([])) == "tensor([])"
    assert repr(tg.zeros(2, 0)) == "tensor([], size=(2, 0))"
    assert repr(tg.zeros(0, dtype=tg.int64)) == f"tensor([], dtype={LIB}.int64)"
    assert repr(tg.zeros(0, 3, dtype=tg.int32)) == f"tensor([], size=(0, 3), dtype={LIB}.int32)"
    assert repr(tg.zeros(0, requires_grad=True)) == "tensor([], requires_grad=True)"


def test_repr_of_grad_fn_node():
    x = tg.tensor([1.0], requires_grad=True)
    node = (x * 2).grad_fn
    assert re.fullmatch(r"<MulBackward0 object at 0x[0-9a-f]+>", repr(node))
    assert node.name() == "MulBackward0"
    acc = node.next_functions[0][0]
    assert re.fullmatch(r"<AccumulateGrad object at 0x[0-9a-f]+>", repr(acc))


def test_str_equals_repr():
    x = tg.tensor([[1.5, -2.0], [3.0, 4.25]], requires_grad=True)
    assert str(x) == repr(x)
    assert str(x * 1) == repr(x * 1)


def test_multiline_repr():
    x = tg.tensor([[1.0, 2.0], [3.0, 4.0]])
    assert repr(x) == "tensor([[1., 2.],\n        [3., 4.]])"
    y = tg.tensor([[1, 2], [3, 4]], dtype=tg.int32)
    assert repr(y) == f"tensor([[1, 2],\n        [3, 4]], dtype={LIB}.int32)"


def test_default_dtype_changes_which_dtype_is_shown():
    tg.set_default_dtype(tg.float64)
    assert repr(tg.tensor([1.0])) == "tensor([1.])"
    assert repr(tg.tensor([1.0], dtype=tg.float32)) == f"tensor([1.], dtype={LIB}.float32)"


def test_f_strings_of_zero_dim_tensors_give_their_number():
    """As in PyTorch: ``f"{loss}"`` is the number (history or not); a Parameter, and a
    tensor of another shape, print their repr and refuse a format spec."""
    x = tg.tensor(2.5, requires_grad=True)
    assert f"{x * 2}" == "5.0" and f"{tg.tensor(3)}" == "3" and f"{tg.tensor(True)}" == "True"
    assert f"{tg.tensor(0.1)}" == str(float(np.float32(0.1)))
    assert f"{x:.2f}" == "2.50"
    p = tg.nn.Parameter(tg.tensor(1.5))
    assert f"{p}" == repr(p)
    assert f"{tg.tensor([1.0, 2.0])}" == repr(tg.tensor([1.0, 2.0]))
    for t in (p, tg.ones(2)):
        with pytest.raises(TypeError, match=f"unsupported format string passed to {type(t).__name__}.__format__"):
            f"{t:.1f}"  # noqa: B018


def test_size_concatenation_stays_a_size():
    s = tg.zeros(2, 3).shape
    for joined in (s + (4,), (1,) + s, s + s):
        assert type(joined).__name__ == "Size"
    assert repr((1,) + s) == f"{LIB}.Size([1, 2, 3])"
    with pytest.raises(TypeError):
        s + [4]  # noqa: RUF005  (a list is not concatenated, as in PyTorch)
    with pytest.raises(TypeError):
        [4] + s  # noqa: RUF005


def test_size_dtype_device_reprs():
    s = tg.zeros(2, 3).shape
    assert repr(s) == f"{LIB}.Size([2, 3])"
    assert str(s) == f"{LIB}.Size([2, 3])"
    assert repr(tg.zeros(()).shape) == f"{LIB}.Size([])"
    assert isinstance(s, tuple) and s == (2, 3)
    assert repr(s[1:]) == f"{LIB}.Size([3])"
    assert s.numel() == 6
    assert repr(tg.float32) == f"{LIB}.float32" and repr(tg.bool) == f"{LIB}.bool"
    assert repr(tg.complex128) == f"{LIB}.complex128"
    assert repr(tg.device("cpu")) == "device(type='cpu')"
    assert str(tg.device("cpu")) == "cpu"
    assert repr(tg.ones(1).device) == "device(type='cpu')"
    assert repr(tg.device("cuda", 1)) == "device(type='cuda', index=1)"
    assert repr(tg.device("cuda:0")) == "device(type='cuda', index=0)"


def test_named_result_repr():
    r = tg.tensor([[1.0, 5.0], [3.0, 2.0]]).max(1)
    assert repr(r) == (f"{LIB}.return_types.max(\nvalues=tensor([5., 3.]),\nindices=tensor([1, 0]))")


def test_format_of_zero_dim_tensor():
    assert f"{tg.tensor(2.5):.2f}" == "2.50"
    assert format(tg.tensor(3), "d") == "3"


# ------------------------------------------------------------------------------ oracle


def _cases(L):
    x = L.tensor([1.0, -2.5, 3.25], requires_grad=True)
    return [
        L.tensor([1.0, 2.0, 3.0]), L.tensor([0.1, 100.0]), L.tensor([1e-8, 1.0]), L.tensor([1e10, 1.0]),
        L.tensor([[1.5, -2.0], [3.0, 4.25]]), L.arange(24.0).reshape(2, 3, 4),
        L.tensor([float("nan"), float("inf"), -float("inf"), 1.0]), L.tensor([1, -20, 300]),
        L.tensor([True, False]), L.tensor([1 + 2j, -0.5j]), L.tensor([1.0], dtype=L.float16),
        L.tensor([1.0], dtype=L.float64), L.tensor([[1, 2]], dtype=L.int32), L.tensor(0.5), L.tensor(7),
        L.tensor(True), L.zeros(0), L.zeros(2, 0, 3), L.zeros(0, dtype=L.int64), L.zeros(0, dtype=L.bool),
        L.zeros(0, dtype=L.float64), x, x * 2, x + 1, x.sum(), x.exp(), x[0], x.view(3, 1), x.t(),
        x.mean(), x.pow(2), x - 1, x / 3, -x, x.tanh(), x.abs(), x.clone(), x.unsqueeze(0),
        x.max(), x.reshape(1, 3), (x * 2).detach(), L.tensor([1.0, 2.0], dtype=L.float64, requires_grad=True),
        L.arange(2000.0), L.arange(100).reshape(10, 10), L.ones(3, dtype=L.complex128) * 1j,
        L.tensor([123456789.0, 0.5]), L.tensor([-0.0, 0.0]), L.tensor([1.0, 2.0]).expand(2, 2),
    ]


@pytest.mark.torch
def test_oracle_tensor_reprs():
    torch = pytest.importorskip("torch")
    mine, theirs = _cases(tg), _cases(torch)
    bad = []
    for i, (m, t) in enumerate(zip(mine, theirs)):
        expected = repr(t).replace("torch.", f"{LIB}.")
        if repr(m) != expected:
            bad.append((i, repr(m), expected))
        if str(m) != str(t).replace("torch.", f"{LIB}."):
            bad.append((i, "str", str(m), str(t)))
    assert not bad, "\n".join(map(repr, bad))


@pytest.mark.torch
def test_oracle_reprs_under_float64_default():
    torch = pytest.importorskip("torch")
    prev = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    tg.set_default_dtype(tg.float64)
    try:
        progs = [lambda L: L.tensor([1.0]), lambda L: L.tensor([1.0], dtype=L.float32), lambda L: L.tensor([1j]),
                 lambda L: L.tensor([1j], dtype=L.complex64), lambda L: L.zeros(0), lambda L: L.zeros(0, dtype=L.float32)]
        for p in progs:
            assert repr(p(tg)) == repr(p(torch)).replace("torch.", f"{LIB}.")
    finally:
        torch.set_default_dtype(prev)


@pytest.mark.torch
def test_oracle_grad_fn_names_in_reprs():
    torch = pytest.importorskip("torch")

    def prog(L):
        x = L.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
        outs = [x * 2, x + x, x - 1, 1 - x, x / 2, 2 / x, x ** 2, 2 ** x, -x, x.exp(), x.log(), x.sin(),
                x.sum(), x.sum(0), x.mean(), x.mean(1), x.max(), x.max(0)[0], x.t(), x.T, x.view(4), x.reshape(4),
                x.reshape(4).reshape(2, 2), x[0], x[:, 1], x[x > 1], x[L.tensor([0, 0])], x.transpose(0, 1),
                x.permute(1, 0), x.unsqueeze(0), x.squeeze(), x.expand(3, 2, 2), x.clone(), x.abs(),
                x.sqrt(), x.tanh(), x.clamp(0, 2), x.clamp(min=1), L.cat([x, x]), L.stack([x, x]), x.split(1)[1],
                x.unbind()[0], x.chunk(2, 1)[0], x.flatten(), x.narrow(1, 0, 1), x.select(1, 0), x.diagonal(),
                x.cumsum(0), x.prod(), x.var(), x.std(), x.norm(), x.gather(1, L.tensor([[0], [1]])),
                L.where(x > 2, x, 0.0), x.masked_fill(x > 2, 0.0), x.index_select(0, L.tensor([1])),
                x.logsumexp(1), x.amax(1), x.argmax().float(), x.to(L.float64), x.double(), x.float() * 1,
                x.pow(x), x.maximum(x * 2), x.sign(), x.reciprocal(), x.rsqrt(), x.flip(0), x.repeat(2, 1)]
        return [type(o.grad_fn).__name__ if o.grad_fn is not None else None for o in outs]
    mine, theirs = prog(tg), prog(torch)
    bad = [(i, m, t) for i, (m, t) in enumerate(zip(mine, theirs)) if m != t]
    assert not bad, bad


@pytest.mark.torch
def test_oracle_named_result_reprs():
    torch = pytest.importorskip("torch")
    for prog in (lambda L: L.tensor([[1.0, 5.0], [3.0, 2.0]]).max(1),
                 lambda L: L.tensor([[1.0, 5.0], [3.0, 2.0]]).min(0, keepdim=True),
                 lambda L: L.tensor([[1.0, 5.0], [3.0, 2.0]], requires_grad=True).max(1)):
        assert repr(prog(tg)) == repr(prog(torch)).replace("torch.", f"{LIB}.")
