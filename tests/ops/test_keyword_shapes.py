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
