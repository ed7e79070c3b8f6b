"""Views: shared storage, strides, storage offsets, contiguity and ``_base``, as in PyTorch."""
import re

import numpy as np
import pytest

from ._helpers import assert_same, src_id, tg


def _base(lib=None, shape=(2, 3, 4)):
    """A fresh non-view float64 tensor 0..n-1 of ``shape``."""
    lib = lib or tg
    n = int(np.prod(shape))
    return lib.tensor(np.arange(n, dtype=np.float64).reshape(shape))


# Each entry: (id, fn(base) -> a view or a tuple of views). The base is (2, 3, 4) float64.
VIEWS = [
    ("view", lambda b: b.view(6, 4)),
    ("view_infer", lambda b: b.view(-1, 2)),
    ("view_flat", lambda b: b.view(-1)),
    ("view_tuple", lambda b: b.view((4, 6))),
    ("reshape_view", lambda b: b.reshape(3, 8)),
    ("flatten", lambda b: b.flatten()),
    ("flatten_1", lambda b: b.flatten(1)),
    ("flatten_0_1", lambda b: b.flatten(0, 1)),
    ("unsqueeze_0", lambda b: b.unsqueeze(0)),
    ("unsqueeze_neg", lambda b: b.unsqueeze(-1)),
    ("unsqueeze_mid", lambda b: b.unsqueeze(2)),
    ("squeeze_noop", lambda b: b.squeeze()),
    ("squeeze_after_unsqueeze", lambda b: b.unsqueeze(1).squeeze(1)),
    ("transpose", lambda b: b.transpose(0, 2)),
    ("transpose_neg", lambda b: b.transpose(-1, -2)),
    ("permute", lambda b: b.permute(2, 0, 1)),
    ("permute_tuple", lambda b: b.permute((1, 2, 0))),
    ("T_2d", lambda b: b[0].T),
    ("t", lambda b: b[1].t()),
    ("mT", lambda b: b.mT),
    ("expand", lambda b: b[:, :1, :].expand(2, 5, 4)),
    ("expand_new_dim", lambda b: b[0, 0].expand(3, 4)),
    ("expand_minus_one", lambda b: b[:, :, :1].expand(-1, -1, 6)),
    ("narrow", lambda b: b.narrow(2, 1, 2)),
    ("narrow_neg_start", lambda b: b.narrow(1, -2, 2)),
    ("select", lambda b: b.select(1, 2)),
    ("select_neg", lambda b: b.select(-1, -1)),
    ("diagonal", lambda b: b.diagonal()),
    ("diagonal_offset", lambda b: b.diagonal(1, 1, 2)),
    ("diagonal_neg_offset", lambda b: b[0].diagonal(-1)),
    ("unbind", lambda b: b.unbind(1)),
    ("unbind_last", lambda b: b.unbind(-1)),
    ("split", lambda b: b.split(2, dim=2)),
    ("split_uneven", lambda b: b.split(2, dim=1)),
    ("split_sizes", lambda b: b.split([1, 3], dim=2)),
    ("chunk", lambda b: b.chunk(2, 2)),
    ("chunk_uneven", lambda b: b.chunk(2, 1)),
    ("int_index", lambda b: b[1]),
    ("int_int", lambda b: b[1, 2]),
    ("scalar_element", lambda b: b[1, 2, 3]),
    ("slice", lambda b: b[:, 1:]),
    ("slice_step", lambda b: b[:, ::2, 1::2]),
    ("slice_step_3", lambda b: b[..., ::3]),
    ("slice_stop_past_end", lambda b: b[:, 1:100]),
    ("slice_negative_bounds", lambda b: b[:, -2:, :-1]),
    ("slice_empty", lambda b: b[:, 2:1]),
    ("ellipsis", lambda b: b[..., 1]),
    ("none", lambda b: b[:, None, 1]),
    ("mixed", lambda b: b[1, None, ::2, -1]),
    ("chain_t_slice", lambda b: b[1].t()[1:, ::2]),
    ("chain_permute_view", lambda b: b.permute(1, 0, 2).select(0, 1).view(2, 2, 2)),
    ("chain_split_unsqueeze", lambda b: b.split(1, 0)[1].squeeze(0).transpose(0, 1)),
]
VIEW_IDS = [v[0] for v in VIEWS]
VIEW_FNS = [v[1] for v in VIEWS]


def _layout(v, base):
    # Known deviation: NumPy does not keep the start address of an EMPTY view, so tracegrad
    # reports storage_offset() 0 for it where PyTorch reports where the slice would start.
    offset = v.storage_offset() if v.numel() else "empty view"
    return {"shape": tuple(v.shape), "stride": v.stride(), "offset": offset,
            "contiguous": v.is_contiguous(), "base_is_root": v._base is base, "values": v}


def _as_tuple(r):
    return r if isinstance(r, tuple) else (r,)


# ------------------------------------------------------------------------------ hand-derived


@pytest.mark.parametrize("fn", VIEW_FNS, ids=VIEW_IDS)
def test_views_share_storage_and_report_the_base(fn):
    base = _base()
    views = _as_tuple(fn(base))
    for v in views:
        assert v._base is base
        assert not v.requires_grad
        if v.numel() == 0:
            continue
        # Values equal the NumPy reading of the same storage window.
        flat = base.numpy().reshape(-1)
        expected = np.lib.stride_tricks.as_strided(
            flat[v.storage_offset():], shape=tuple(v.shape), strides=tuple(s * 8 for s in v.stride()))
        np.testing.assert_array_equal(v.numpy(), expected)


@pytest.mark.parametrize("fn", [f for i, f in VIEWS if not i.startswith("expand")],
                         ids=[i for i, _ in VIEWS if not i.startswith("expand")])
def test_writes_through_views_show_in_the_base(fn):
    base = _base()
    views = _as_tuple(fn(base))
    expected = base.numpy().copy()
    for k, v in enumerate(views):
        if v.numel() == 0:
            continue
        before = v.numpy().copy()
        v.add_(1000 * (k + 1))
        np.testing.assert_array_equal(v.numpy(), before + 1000 * (k + 1))
        flat = expected.reshape(-1)
        idx = np.lib.stride_tricks.as_strided(
            np.arange(flat.size)[v.storage_offset():], shape=tuple(v.shape),
            strides=tuple(s * 8 for s in v.stride()))
        flat[np.unique(idx)] += 1000 * (k + 1)
    np.testing.assert_array_equal(base.numpy(), expected)


def test_writes_to_the_base_show_in_views():
    base = _base()
    t = base.transpose(0, 2)
    s = base[1, ::2]
    base.mul_(-1)
    assert t[3, 1, 0].item() == base[0, 1, 3].item() == -7.0
    assert s[1, 2].item() == -22.0


@pytest.mark.parametrize("fn,shape,stride,offset,contig", [
    (lambda b: b.view(6, 4), (6, 4), (4, 1), 0, True),
    (lambda b: b.transpose(0, 2), (4, 3, 2), (1, 4, 12), 0, False),
    (lambda b: b.permute(2, 0, 1), (4, 2, 3), (1, 12, 4), 0, False),
    (lambda b: b[1], (3, 4), (4, 1), 12, True),
    (lambda b: b[1, 2], (4,), (1,), 20, True),
    (lambda b: b[:, 1:], (2, 2, 4), (12, 4, 1), 4, False),
    (lambda b: b[:, ::2, 1::2], (2, 2, 2), (12, 8, 2), 1, False),
    (lambda b: b.select(2, 3), (2, 3), (12, 4), 3, False),
    (lambda b: b.narrow(1, 1, 2), (2, 2, 4), (12, 4, 1), 4, False),
    (lambda b: b.unsqueeze(1), (2, 1, 3, 4), (12, 12, 4, 1), 0, True),
    (lambda b: b.diagonal(), (4, 2), (1, 16), 0, False),
    (lambda b: b.diagonal(1, 1, 2), (2, 3), (12, 5), 1, False),
    (lambda b: b[:, :1, :].expand(2, 5, 4), (2, 5, 4), (12, 0, 1), 0, False),
    (lambda b: b.unbind(2)[1], (2, 3), (12, 4), 1, False),
    (lambda b: b.split(2, dim=2)[1], (2, 3, 2), (12, 4, 1), 2, False),
    (lambda b: b[1].t(), (4, 3), (1, 4), 12, False),
    (lambda b: b.mT, (2, 4, 3), (12, 1, 4), 0, False),
    (lambda b: b[0, 0].expand(3, 4), (3, 4), (0, 1), 0, False),
])
def test_strides_offsets_contiguity_hand_derived(fn, shape, stride, offset, contig):
    v = fn(_base())
    assert tuple(v.shape) == shape
    assert v.stride() == stride
    assert v.storage_offset() == offset
    assert v.is_contiguous() is contig


def test_stride_with_dim_argument():
    b = _base()
    assert b.stride(0) == 12 and b.stride(-1) == 1
    assert b.transpose(0, 1).stride(1) == 12
    with pytest.raises(IndexError, match="Dimension out of range"):
        b.stride(3)


def test_base_of_a_base_is_none_and_chained_views_point_to_the_root():
    b = _base()
    assert b._base is None
    v = b.view(6, 4)
    w = v[1:].t()
    assert w._base is b
    assert b.storage_offset() == 0


def test_view_on_non_viewable_layout_raises():
    b = _base()
    with pytest.raises(RuntimeError, match="view size is not compatible with input tensor's size and stride"):
        b.transpose(0, 1).view(-1)
    with pytest.raises(RuntimeError, match=r"Use \.reshape\(\.\.\.\) instead"):
        b[:, :, 1:3].view(12)
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        b.permute(2, 0, 1).view(8, 3)


def test_view_on_layouts_that_are_still_viewable():
    b = _base()
    v = b[:, 1:].view(2, 8)          # dims 1 and 2 still merge: stride 4 == 4 * 1
    assert v._base is b and v.stride() == (12, 1) and v.storage_offset() == 4
    w = b.transpose(0, 1).view(3, 2, 2, 2)  # splitting the last dim is always a view
    assert w._base is b and w.stride() == (4, 12, 2, 1)


def test_view_bad_size_raises():
    with pytest.raises(RuntimeError, match=r"shape '\[5, -1\]' is invalid for input of size 24"):
        _base().view(5, -1)
    with pytest.raises(RuntimeError, match="only one dimension can be inferred"):
        _base().view(-1, -1)
    with pytest.raises(RuntimeError, match=r"shape '\[5\]' is invalid for input of size 24"):
        _base().reshape(5)


def test_reshape_copies_when_no_view_is_possible():
    b = _base()
    r = b.transpose(0, 2).reshape(-1)
    assert tuple(r.shape) == (24,) and r.is_contiguous()
    np.testing.assert_array_equal(r.numpy(), np.arange(24.0).reshape(2, 3, 4).transpose(2, 1, 0).reshape(-1))
    r.add_(100)
    assert b[0, 0, 0].item() == 0.0  # no sharing
    v = b.reshape(4, 6)
    v.add_(1)
    assert b[0, 0, 0].item() == 1.0  # a view when possible


def test_flatten_of_non_contiguous_copies():
    b = _base()
    f = b.transpose(0, 1).flatten()
    assert f._base is not b
    f.add_(1)
    assert b.sum().item() == sum(range(24))


def test_contiguous():
    b = _base()
    assert b.contiguous() is b
    t = b.transpose(0, 1)
    c = t.contiguous()
    assert c is not t and c.is_contiguous()
    assert c.stride() == (8, 4, 1)
    np.testing.assert_array_equal(c.numpy(), t.numpy())
    c.add_(1)
    assert b[0, 0, 0].item() == 0.0


def test_squeeze_variants():
    x = tg.zeros(1, 3, 1, 2)
    assert tuple(x.squeeze().shape) == (3, 2)
    assert tuple(x.squeeze(0).shape) == (3, 1, 2)
    assert tuple(x.squeeze(1).shape) == (1, 3, 1, 2)  # not size 1: unchanged
    assert tuple(x.squeeze(-2).shape) == (1, 3, 2)
    assert tuple(x.squeeze((0, 2)).shape) == (3, 2)
    assert x.squeeze()._base is x
    with pytest.raises(IndexError, match="Dimension out of range"):
        x.squeeze(4)


def test_unsqueeze_range():
    x = tg.zeros(2, 3)
    assert tuple(x.unsqueeze(2).shape) == (2, 3, 1)
    assert tuple(x.unsqueeze(-3).shape) == (1, 2, 3)
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of \[-3, 2\], but got 3\)"):
        x.unsqueeze(3)


def test_transpose_and_permute_errors():
    x = tg.zeros(2, 3)
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of \[-2, 1\], but got 2\)"):
        x.transpose(0, 2)
    with pytest.raises(RuntimeError):
        x.permute(0, 0)
    with pytest.raises(RuntimeError):
        x.permute(0)
    with pytest.raises(RuntimeError, match=r"t\(\) expects a tensor with <= 2 dimensions, but self is 3D"):
        tg.zeros(1, 2, 3).t()


def test_t_of_1d_and_0d_is_the_same_shape():
    assert tuple(tg.zeros(3).t().shape) == (3,)
    assert tuple(tg.zeros(()).t().shape) == ()


def test_expand_errors():
    x = tg.zeros(2, 1)
    with pytest.raises(RuntimeError, match=r"The expanded size of the tensor \(4\) must match the existing size \(2\) "
                                           r"at non-singleton dimension 0"):
        x.expand(4, 3)
    with pytest.raises(RuntimeError, match="must be greater or equal to the number of dimensions in the tensor"):
        x.expand(3)


def test_narrow_and_select_errors():
    x = tg.zeros(2, 3)
    with pytest.raises(RuntimeError, match=r"start \(2\) \+ length \(2\) exceeds dimension size \(3\)"):
        x.narrow(1, 2, 2)
    with pytest.raises(IndexError, match=r"select\(\): index 5 out of range for tensor of size \[2, 3\] at dimension 1"):
        x.select(1, 5)


def test_split_chunk_unbind_values():
    x = tg.arange(10)
    assert [p.tolist() for p in x.split(4)] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert [p.tolist() for p in x.split([3, 7])] == [[0, 1, 2], [3, 4, 5, 6, 7, 8, 9]]
    assert [p.tolist() for p in x.chunk(3)] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert [p.tolist() for p in tg.arange(6).chunk(4)] == [[0, 1], [2, 3], [4, 5]]
    assert [p.tolist() for p in tg.arange(4).view(2, 2).unbind(1)] == [[0, 2], [1, 3]]
    assert isinstance(x.split(4), tuple) and isinstance(x.unbind(), tuple)


def test_negative_step_raises_value_error():
    x = tg.arange(5)
    with pytest.raises(ValueError, match="step must be greater than zero"):
        x[::-1]
    with pytest.raises(ValueError, match="step must be greater than zero"):
        x[::-1] = 0


@pytest.mark.parametrize("index,message", [
    (5, "index 5 is out of bounds for dimension 0 with size 3"),
    (-4, "index -4 is out of bounds for dimension 0 with size 3"),
    ((1, 7), "index 7 is out of bounds for dimension 1 with size 4"),
    ((0, 0, 0), "too many indices for tensor of dimension 2"),
])
def test_out_of_range_index_raises_index_error(index, message):
    x = tg.zeros(3, 4)
    with pytest.raises(IndexError, match=message):
        x[index]
    with pytest.raises(IndexError, match=message):
        x[index] = 1.0


def test_out_of_range_tensor_index_raises_index_error():
    x = tg.zeros(3)
    with pytest.raises(IndexError, match="index 5 is out of bounds for dimension 0 with size 3"):
        x[tg.tensor([0, 5])]


@pytest.mark.parametrize("index,message", [
    ((slice(None), [1, 4]), "index 4 is out of bounds for dimension 0 with size 4"),
    ((slice(None), [-9, 5]), "index -9 is out of bounds for dimension 0 with size 4"),
    ((slice(None), [[1], [6]]), "index 6 is out of bounds for dimension 0 with size 4"),
    (([0, 1], [5, 1]), "index 5 is out of bounds for dimension 1 with size 4"),
    ((slice(None), [0, 1], [1, 7]), "index 7 is out of bounds for dimension 1 with size 5"),
    ((tg.tensor([[True, False, True, False], [False] * 4]), [9, 0]),
     "index 9 is out of bounds for dimension 2 with size 5"),
    ((slice(None), 5), "index 5 is out of bounds for dimension 1 with size 4"),
])
def test_a_bad_index_tensor_is_numbered_among_the_index_tensors(index, message):
    """PyTorch's message numbers an index tensor (or list) that is out of range by its place
    among the index tensors (a mask counts one per dim), not by the dim it indexes, and
    names its first bad element; an int index names its dim."""
    x = tg.zeros(2, 4, 5)
    with pytest.raises(IndexError, match=re.escape(message)):
        x[index]
    with pytest.raises(IndexError, match=re.escape(message)):
        x[index] = 1.0


def test_numpy_integer_scalars_index_like_ints():
    """``x[np.int64(1)]`` is a basic index: a view (Select) of the same storage."""
    x = tg.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
    y = x * 1
    row = y[np.int64(1)]
    assert row._base is y and row.grad_fn.name() == "SelectBackward0"
    assert y[np.int64(-1), np.int32(2)].item() == 5.0
    (row * row).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[0, 0, 0], [6, 8, 10]])


def test_len_and_iteration_unbind_dim0():
    x = tg.arange(6).view(3, 2)
    assert len(x) == 3
    rows = list(x)
    assert [r.tolist() for r in rows] == [[0, 1], [2, 3], [4, 5]]
    with pytest.raises(TypeError, match="len\\(\\) of a 0-d tensor"):
        len(tg.tensor(1.0))


def test_views_of_requires_grad_tensors_are_not_leaves():
    x = tg.ones(2, 3, requires_grad=True)
    v = x.view(6)
    assert v.requires_grad and not v.is_leaf and v._base is x
    assert type(v.grad_fn).__name__ == "ViewBackward0"
    assert type(x.t().grad_fn).__name__ == "TBackward0"
    assert type(x[0].grad_fn).__name__ == "SelectBackward0"
    assert type(x[:, 1:].grad_fn).__name__ == "SliceBackward0"
    assert type(x.transpose(0, 1).grad_fn).__name__ == "TransposeBackward0"
    assert type(x.permute(1, 0).grad_fn).__name__ == "PermuteBackward0"
    assert type(x.unsqueeze(0).grad_fn).__name__ == "UnsqueezeBackward0"
    assert type(x.expand(2, 2, 3).grad_fn).__name__ == "ExpandBackward0"
    assert type(x.reshape(3, 2).grad_fn).__name__ == "ViewBackward0"


def test_detach_shares_storage_but_not_base():
    x = tg.ones(3, requires_grad=True)
    d = x.detach()
    assert not d.requires_grad and d.is_leaf
    d[0] = 5.0
    assert x[0].item() == 5.0


def test_views_with_zero_size_dims():
    x = tg.zeros(0, 3)
    assert tuple(x.view(3, 0).shape) == (3, 0)
    assert tuple(x.t().shape) == (3, 0)
    assert tuple(x[:, 1:].shape) == (0, 2)
    assert tuple(x.reshape(-1).shape) == (0,)
    assert tuple(x.unsqueeze(0).shape) == (1, 0, 3)


# ------------------------------------------------------------------------------ oracle


@pytest.mark.torch
@pytest.mark.parametrize("fn", VIEW_FNS, ids=VIEW_IDS)
def test_oracle_view_layouts(fn):
    torch = pytest.importorskip("torch")
    mine_base, their_base = _base(), _base(torch)
    mine = [_layout(v, mine_base) for v in _as_tuple(fn(mine_base))]
    theirs = [_layout(v, their_base) for v in _as_tuple(fn(their_base))]
    assert_same(mine, theirs)


@pytest.mark.torch
@pytest.mark.parametrize("fn", [f for i, f in VIEWS if not i.startswith("expand")],
                         ids=[i for i, _ in VIEWS if not i.startswith("expand")])
def test_oracle_write_through(fn):
    torch = pytest.importorskip("torch")
    results = []
    for lib in (tg, torch):
        b = _base(lib)
        for k, v in enumerate(_as_tuple(fn(b))):
            v.mul_(-(k + 2))
        results.append(b)
    assert_same(results[0], results[1])


@pytest.mark.torch
@pytest.mark.parametrize("prog", [
    lambda b: b.transpose(0, 2).reshape(-1),
    lambda b: b.reshape(4, 6),
    lambda b: b[:, 1:].reshape(-1),
    lambda b: b[:, 1:].reshape(2, 8),
    lambda b: b.permute(1, 0, 2).flatten(),
    lambda b: b.permute(1, 0, 2).flatten(1),
    lambda b: b[:, :, ::2].flatten(0, 1),
    lambda b: b.transpose(0, 1).contiguous(),
    lambda b: b.contiguous(),
    lambda b: b[0].t().contiguous(),
    lambda b: b[:, :1].expand(2, 3, 4).reshape(6, 4),
    lambda b: b[1].unflatten(1, (2, 2)),
    lambda b: b.movedim(0, -1),
    lambda b: b.swapaxes(0, 1),
], ids=src_id)
def test_oracle_reshape_flatten_contiguous(prog):
    torch = pytest.importorskip("torch")
    mb, tb = _base(), _base(torch)
    m, t = prog(mb), prog(tb)
    mine = {"shape": tuple(m.shape), "stride": m.stride(), "contig": m.is_contiguous(), "values": m,
            "is_view": m._base is mb, "is_self": m is mb}
    theirs = {"shape": tuple(t.shape), "stride": t.stride(), "contig": t.is_contiguous(), "values": t,
              "is_view": t._base is tb, "is_self": t is tb}
    assert_same(mine, theirs)


@pytest.mark.torch
@pytest.mark.parametrize("prog", [
    lambda L, b: b.transpose(0, 1).view(-1),
    lambda L, b: b[:, :, 1:3].view(12),
    lambda L, b: b.view(5, -1),
    lambda L, b: b.view(-1, -1),
    lambda L, b: b[:, ::-1],
    lambda L, b: b[3],
    lambda L, b: b[0, 5],
    lambda L, b: b[0, 0, -5],
    lambda L, b: b[0, 0, 0, 0],
    lambda L, b: b.narrow(2, 3, 2),
    lambda L, b: b.select(0, 2),
    lambda L, b: b.squeeze(3),
    lambda L, b: b.unsqueeze(4),
    lambda L, b: b.expand(2, 2, 3, 4).expand(3, 3, 4),
    lambda L, b: b[:, :1].expand(2, 3, 5),
    lambda L, b: b.split([1, 1], 1),
    lambda L, b: b.chunk(0),
    lambda L, b: b[L.tensor([0, 2])],
    lambda L, b: b[L.tensor([True, False, True])],
    lambda L, b: b[L.tensor([0.0])],
], ids=src_id)
def test_oracle_view_errors(prog):
    torch = pytest.importorskip("torch")
    from ._helpers import raises_like
    mine, theirs = raises_like(lambda: prog(tg, _base()), lambda: prog(torch, _base(torch)))
    assert theirs is not None
    assert type(mine) is type(theirs), (mine, theirs)
    assert str(mine).replace("tracegrad", "torch") == str(theirs), (str(mine), str(theirs))
