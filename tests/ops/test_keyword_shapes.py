"""Size arguments given by keyword (``x.reshape(shape=...)``, as DiT's and MAE's reference
code unpatchify), and ``Tensor.view(dtype)``, which reads the same memory as another dtype."""
import numpy as np
import pytest

import tracegrad as tg

KEYWORD_CALLS = {
    "reshape": lambda L, x: x.reshape(shape=(2, 3)),
    "torch.reshape": lambda L, x: L.reshape(x, shape=(3, 2)),
    "view": lambda L, x: x.view(size=(3, 2)),
    "expand": lambda L, x: x.view(2, 3)[:1].expand(size=(4, 3)),
    "repeat": lambda L, x: x.repeat(repeats=(2,)),
    "permute": lambda L, x: x.view(2, 3).permute(dims=[1, 0]),
    "torch.permute": lambda L, x: L.permute(x.view(2, 3), dims=(1, 0)),
    "new_zeros": lambda L, x: x.new_zeros(size=(2, 1)),
    "new_ones": lambda L, x: x.new_ones(size=(2,)),
    "split": lambda L, x: L.stack(x.split(split_size=2)),
}


@pytest.mark.parametrize("name", sorted(KEYWORD_CALLS))
def test_keyword_sizes_equal_positional_ones(name):
    x = tg.arange(6.0)
    got = KEYWORD_CALLS[name](tg, x) if name != "split" else None
    positional = {
        "reshape": x.reshape(2, 3), "torch.reshape": tg.reshape(x, (3, 2)), "view": x.view(3, 2),
        "expand": x.view(2, 3)[:1].expand(4, 3), "repeat": x.repeat(2), "permute": x.view(2, 3).permute(1, 0),
        "torch.permute": tg.permute(x.view(2, 3), (1, 0)), "new_zeros": x.new_zeros(2, 1),
        "new_ones": x.new_ones(2)}
    if name == "split":
        assert [p.tolist() for p in x.split(split_size=2)] == [[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]]
        assert len(tg.split(x, split_size_or_sections=[1, 5])) == 2
        return
    assert got.shape == positional[name].shape and got.tolist() == positional[name].tolist()


@pytest.mark.parametrize("call, message", [
    (lambda x: x.reshape(2, shape=(3,)), "reshape() got multiple values for argument 'shape'"),
    (lambda x: x.reshape(size=(6,)), "reshape() got an unexpected keyword argument 'size'"),
    (lambda x: x.split(2, split_size=2), "split() got multiple values for argument 'split_size'"),
    (lambda x: x.split(), "split() missing required argument 'split_size_or_sections'"),
])
def test_keyword_misuse_is_a_type_error(call, message):
    with pytest.raises(TypeError, match=message.replace("(", r"\(").replace(")", r"\)")):
        call(tg.arange(6.0))


@pytest.mark.torch
@pytest.mark.parametrize("name", sorted(KEYWORD_CALLS))
def test_keyword_sizes_match_torch(name):
    torch = pytest.importorskip("torch")
    ours, theirs = KEYWORD_CALLS[name](tg, tg.arange(6.0)), KEYWORD_CALLS[name](torch, torch.arange(6.0))
    assert tuple(ours.shape) == tuple(theirs.shape) and ours.tolist() == theirs.tolist()


# -- view(dtype) ---------------------------------------------------------------------------------

def test_view_as_dtype_reads_the_same_bits():
    x = tg.tensor([1.0, -2.0, 0.5, 3.0])
    assert x.view(tg.int32).tolist() == np.array([1.0, -2.0, 0.5, 3.0], np.float32).view(np.int32).tolist()
    wide = x.view(tg.float64)
    assert wide.shape == (2,) and wide.tolist() == np.array([1.0, -2.0, 0.5, 3.0], np.float32).view(np.float64).tolist()
    assert x.view(tg.int8).shape == (16,) and x.view(2, 2).view(tg.int16).shape == (2, 4)


def test_view_as_dtype_shares_memory_and_version():
    a = tg.zeros(2, 4)
    b = a.view(tg.int32)
    b[0, 0] = 1065353216  # the bits of 1.0f
    assert a[0, 0].item() == 1.0 and a._version == b._version == 1


def test_view_as_dtype_records_no_gradient():
    x = tg.zeros(2, 4, requires_grad=True)
    for d in (tg.float32, tg.int32, tg.float64):
        y = x.view(d)
        assert not y.requires_grad and y.grad_fn is None and y.is_leaf


@pytest.mark.parametrize("make, dtype", [
    (lambda L: L.zeros(4, 3)[:, :2], "float64"),     # a stride not divisible by 2
    (lambda L: L.zeros(3), "float64"),               # a last size not divisible by 2
    (lambda L: L.zeros(()), "float64"),              # 0-d with another element size
    (lambda L: L.zeros(4, 2).t(), "float64"),        # a last dim that is not contiguous
    (lambda L: L.zeros(5)[1:], "float64"),           # an odd storage offset
    (lambda L: L.zeros(()), "int32"),                # 0-d, same element size: fine
    (lambda L: L.zeros(3, 1)[::2], "int16"),         # a strided single column: fine
])
def test_view_as_dtype_checks_match_torch(make, dtype):
    torch = pytest.importorskip("torch")
    try:
        theirs = make(torch).view(getattr(torch, dtype))
    except RuntimeError as e:
        with pytest.raises(RuntimeError) as ours:
            make(tg).view(getattr(tg, dtype))
        assert str(ours.value) == str(e)
        return
    ours = make(tg).view(getattr(tg, dtype))
    assert tuple(ours.shape) == tuple(theirs.shape) and ours.tolist() == theirs.tolist()


# -- as_strided and unfold as views ------------------------------------------------------------------

def test_as_strided_reads_overlapping_windows_and_sums_their_gradient():
    x = tg.arange(10.0, requires_grad=True)
    windows = x.as_strided((4, 3), (2, 1))
    assert windows.tolist() == [[0.0, 1.0, 2.0], [2.0, 3.0, 4.0], [4.0, 5.0, 6.0], [6.0, 7.0, 8.0]]
    assert windows.grad_fn.name() == "AsStridedBackward0"
    windows.sum().backward()
    assert x.grad.tolist() == [1.0, 1.0, 2.0, 1.0, 2.0, 1.0, 2.0, 1.0, 1.0, 0.0]
    assert tg.as_strided(tg.arange(10.0), (2,), (3,), 1).tolist() == [1.0, 4.0]
    assert tg.as_strided_copy(tg.arange(4.0), (2, 2), (1, 1)).tolist() == [[0.0, 1.0], [1.0, 2.0]]


def test_as_strided_is_a_view_and_unfold_too():
    v = tg.arange(10.0)
    w = v.as_strided((4, 3), (2, 1))
    w[0, 1] = 100.0
    assert v[1].item() == 100.0 and w._base is v and w.stride() == (2, 1)
    x = tg.arange(12.0).reshape(6, 2)
    u = x.unfold(0, 3, 1)
    assert u.stride() == (2, 1, 2) and u.shape == (4, 2, 3)
    u[0, 0, 1] = -1.0
    assert x[1, 0].item() == -1.0
    t = tg.arange(12.0).reshape(3, 4).t()  # (not contiguous: a copy, same values)
    assert t.unfold(0, 2, 2).tolist() == [[[0.0, 1.0], [4.0, 5.0], [8.0, 9.0]], [[2.0, 3.0], [6.0, 7.0], [10.0, 11.0]]]
    assert tg.tensor(3.0).unfold(0, 1, 1).shape == (1,)


@pytest.mark.parametrize("make, message", [
    (lambda: tg.arange(10.0).as_strided((4, 3), (3, 1)), ("setStorage: sizes [4, 3], strides [3, 1], storage "
     "offset 0, and itemsize 4 requiring a storage size of 48 are out of bounds for storage of size 40")),
    (lambda: tg.arange(10.0).as_strided((2, 2), (-1, 1)), "as_strided: Negative strides are not supported"),
    (lambda: tg.arange(10.0).as_strided((4, 3), (2,)), "mismatch in length of strides and shape"),
])
def test_as_strided_refuses_as_pytorch(make, message):
    with pytest.raises(RuntimeError) as info:
        make()
    assert str(info.value).startswith(message)


def test_as_strided_refuses_what_it_would_read_differently():
    with pytest.raises(NotImplementedError, match="as_strided of a non-contiguous tensor"):
        tg.arange(6.0).reshape(2, 3).t().as_strided((3,), (1,))
    with pytest.raises(NotImplementedError, match="outside the tensor's own elements"):
        tg.arange(10.0)[2:].as_strided((2, 2), (1, 1), 0)
