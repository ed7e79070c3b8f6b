"""The eager fast path of view rules (runtime/viewpath.py) against the general one
(dispatch.apply, reached by calling the rule itself) and against PyTorch: same nodes,
edges, flags, base, version counter and view history in every grad mode."""
import numpy as np
import pytest

import tracegrad as tg
from tracegrad.rules import broadcast as B
from tracegrad.rules import shape as S
from tracegrad.runtime.viewpath import view_op

# (name, view_op's call, the same view through the rule, i.e. apply): shapes from (2, 3, 4)
CASES = [
    ("view", lambda x: view_op(S.reshape, x, {"shape": (6, 4)}), lambda x: S.reshape(x, shape=(6, 4))),
    ("transpose", lambda x: view_op(S.transpose, x, {"dim0": 0, "dim1": 2}),
     lambda x: S.transpose(x, dim0=0, dim1=2)),
    ("permute", lambda x: view_op(S.permute, x, {"dims": (2, 0, 1)}), lambda x: S.permute(x, dims=(2, 0, 1))),
    ("unsqueeze", lambda x: view_op(S.unsqueeze, x, {"dim": 1}), lambda x: S.unsqueeze(x, dim=1)),
    ("split", lambda x: view_op(S.split, x, {"sizes": (1, 3), "dim": 2}),
     lambda x: S.split(x, sizes=(1, 3), dim=2)),
    ("split_chunked", lambda x: view_op(S.split, x, {"sizes": (2, 2), "dim": -1, "chunked": True}),
     lambda x: S.split(x, sizes=(2, 2), dim=-1, chunked=True)),
    ("unbind", lambda x: view_op(S.unbind, x, {"dim": 1}), lambda x: S.unbind(x, dim=1)),
    ("squeeze", lambda x: view_op(S.squeeze, x[:, :1], {"dim": 1}), lambda x: S.squeeze(x[:, :1], dim=1)),
    ("squeeze_all", lambda x: view_op(S.squeeze, x[:1], {}), lambda x: S.squeeze(x[:1])),
    ("expand", lambda x: view_op(B.broadcast_to, x[:, :1], {"shape": (2, 5, 4)}),
     lambda x: B.broadcast_to(x[:, :1], shape=(2, 5, 4))),
]


def _sources():
    """Operands of every kind a view meets: (name, maker) making fresh tensors each call."""
    a = np.arange(24.0).reshape(2, 3, 4)

    def leaf():
        return tg.tensor(a, requires_grad=True)

    def nonleaf():
        return tg.tensor(a, requires_grad=True) * 2

    def view_of_nonleaf():
        return (tg.tensor(a, requires_grad=True) * 2).view(2, 3, 4)

    def plain():
        return tg.tensor(a)

    def no_grad_view():
        x = tg.tensor(a, requires_grad=True) * 2
        with tg.no_grad():
            return x.view(2, 3, 4)

    def written_view():  # a view whose base was written after it was made
        x = tg.tensor(a, requires_grad=True) * 2
        v = x.view(2, 3, 4)
        x.mul_(3)
        return v

    return [(f.__name__, f) for f in (leaf, nonleaf, view_of_nonleaf, plain, no_grad_view, written_view)]


def _describe(t):
    """What a view result shows of itself, with node identities replaced by names."""
    fn = t.grad_fn
    return dict(
        grad_fn=None if fn is None else fn.name(),
        edges=None if fn is None else [(None if n is None else n.name(), k) for n, k in fn.next_functions],
        requires_grad=t.requires_grad, is_leaf=t.is_leaf, inference=t.is_inference(),
        shape=tuple(t.shape), stride=t.stride(), offset=t.storage_offset(), contiguous=t.is_contiguous(),
        output_nr=t.output_nr if fn is not None else None,
        tracked=t._view[2], chain=[(p.name, k) for p, _, k in t._view[0]],
        values=t.detach().numpy().tolist())


def _check_same(fast, slow, src_fast, src_slow):
    fast = fast if isinstance(fast, tuple) else (fast,)
    slow = slow if isinstance(slow, tuple) else (slow,)
    assert len(fast) == len(slow)
    for f, s in zip(fast, slow):
        assert _describe(f) == _describe(s)
        base_f = src_fast._base if src_fast._base is not None else src_fast
        base_s = src_slow._base if src_slow._base is not None else src_slow
        assert f._base is base_f and s._base is base_s
        assert f._vc is src_fast._vc and s._vc is src_slow._vc  # one version counter
        assert np.shares_memory(f._data, src_fast._data)


@pytest.mark.parametrize("mode", ["grad", "no_grad", "inference"])
@pytest.mark.parametrize("source", [n for n, _ in _sources()])
@pytest.mark.parametrize("case", [c[0] for c in CASES], ids=[c[0] for c in CASES])
def test_fast_view_matches_the_general_path(case, source, mode):
    fast_op, slow_op = next((f, s) for n, f, s in CASES if n == case)
    make = dict(_sources())[source]
    ctx = {"grad": tg.enable_grad, "no_grad": tg.no_grad, "inference": tg.inference_mode}[mode]
    x1, x2 = make(), make()
    with ctx():
        fast, slow = fast_op(x1), slow_op(x2)
    _check_same(fast, slow, x1, x2)


@pytest.mark.parametrize("case", [c[0] for c in CASES], ids=[c[0] for c in CASES])
def test_fast_view_gradients_match_a_hand_formula(case):
    fast_op, slow_op = next((f, s) for n, f, s in CASES if n == case)
    a = np.arange(24.0).reshape(2, 3, 4)
    # loss = sum_k sum(((1.5 x)[piece k] * (k + 2)) ** 2), so dloss/dx = 2 * 1.5**2 * (k + 2)**2 * x
    # on the elements of piece k: the weights are written through NumPy views of the same rule
    weights = np.zeros_like(a)
    if case == "expand":  # (a read-only view: each element of x[:, :1] is used 5 times)
        weights[:, :1] = 5 * 2 ** 2
    else:
        pieces = slow_op(weights)
        for k, piece in enumerate(pieces if isinstance(pieces, tuple) else (pieces,)):
            piece[...] = (k + 2) ** 2
    for op in (fast_op, slow_op):
        x = tg.tensor(a, requires_grad=True)
        out = op(x * 1.5)
        outs = out if isinstance(out, tuple) else (out,)
        sum(((o * (k + 2)) ** 2).sum() for k, o in enumerate(outs)).backward()
        np.testing.assert_allclose(x.grad.numpy(), 2 * 1.5 ** 2 * weights * a)


def test_fast_view_under_a_profiler_and_anomaly_mode_records_as_apply_does():
    x = tg.tensor(np.ones((2, 3)), requires_grad=True) * 2
    with tg.autograd.profiler.profile() as prof:
        y = x.view(3, 2)
    assert y.grad_fn.name() == "ViewBackward0"
    assert any("reshape" in e.name or "view" in e.name for e in prof.function_events)
    with tg.autograd.detect_anomaly():
        z = x.transpose(0, 1)
    assert z.grad_fn.name() == "TransposeBackward0"


def test_view_sizes_errors_hand_derived():
    x = tg.ones(6)
    with pytest.raises(RuntimeError, match=r"^invalid shape dimension -2 at index 0 of shape \[-2, -3\]$"):
        x.view(-2, -3)
    with pytest.raises(RuntimeError, match=r"^invalid shape dimension -3 at index 1 of shape \[-1, -3\]$"):
        x.reshape(-1, -3)
    with pytest.raises(RuntimeError, match="because the unspecified dimension size -1 can be any value"):
        tg.ones(0).view(0, -1)
    with pytest.raises(RuntimeError, match=r"^shape '\[0, -1\]' is invalid for input of size 6$"):
        x.view(0, -1)
    with pytest.raises(TypeError, match="got an element of type float"):
        x.view(2.0, 3)
    with pytest.raises(TypeError, match="got an element of type bool"):
        x.view(True, 6)
    # the sizes table never answers for a float or bool tuple that equals an int one
    assert tuple(x.view(2, 3).shape) == (2, 3)
    with pytest.raises(TypeError):
        x.view((2.0, 3))
    assert tuple(x.view(tg.tensor(2), 3).shape) == (2, 3)  # a one-element int tensor is an int


def test_view_of_a_non_contiguous_tensor_twice_still_raises():
    x = tg.ones(2, 3, 4).transpose(0, 1)
    for _ in range(2):  # (the second answer comes from the layout table)
        with pytest.raises(RuntimeError, match="view size is not compatible"):
            x.view(6, 4)
    assert tuple(x.view(3, 2, 2, 2).shape) == (3, 2, 2, 2)
    r = x.reshape(6, 4)
    assert r._base is None and r.grad_fn is None


def test_split_and_unbind_negative_dims_in_rules():
    a = np.arange(24.0).reshape(2, 3, 4)
    pieces = S.split(a, sizes=(1, 3), dim=-1)
    np.testing.assert_array_equal(pieces[1], a[..., 1:])
    rows = S.unbind(a, dim=-2)
    np.testing.assert_array_equal(rows[2], a[:, 2, :])


def test_tensor_item_and_index_on_cpu():
    i = tg.tensor([3, 5])[1]
    assert i.item() == 5 and type(i.item()) is int
    assert [10, 20, 30, 40, 50, 60][i] == 60
    assert tg.tensor([[2.5]]).item() == 2.5
    with pytest.raises(RuntimeError, match="a Tensor with 2 elements cannot be converted to Scalar"):
        tg.tensor([1, 2]).item()
    with pytest.raises(TypeError, match="only integer tensors of a single element can be converted to an index"):
        [1, 2][tg.tensor(1.0)]


# -- against PyTorch -------------------------------------------------------------------------------

def _graph(fn, depth=0, out=None):
    """(depth, name) of the nodes above ``fn``, depth first, not descending below linear's
    UnsafeViewBackward0 (tracegrad's linear is one matmul node; torch's an Mm over views)."""
    out = [] if out is None else out
    if fn is None:
        return out
    out.append((depth, fn.name()))
    if fn.name() != "UnsafeViewBackward0":
        for n, k in fn.next_functions:
            _graph(n, depth + 1, out)
    return out


def _attention_views(lib, x, w):
    """nanoGPT's attention views: c_attn, split, view + transpose, and back."""
    F = lib.nn.functional
    B, T, C = x.size()
    q, k, v = F.linear(x, w).split(C, dim=2)
    q = q.view(B, T, 2, C // 2).transpose(1, 2)
    k = k.view(B, T, 2, C // 2).transpose(1, 2)
    v = v.view(B, T, 2, C // 2).transpose(1, 2)
    y = (q * k + v).transpose(1, 2).contiguous().view(B, T, C)
    return y, (q, k, v)


@pytest.mark.torch
@pytest.mark.parametrize("mode", ["grad", "no_grad", "inference"])
def test_attention_views_match_torch(mode):
    import torch
    rng = np.random.default_rng(0)
    X = rng.standard_normal((2, 4, 6)).astype("f")
    W = rng.standard_normal((18, 6)).astype("f")
    res = {}
    for lib in (tg, torch):
        x = lib.tensor(X, requires_grad=True)
        w = lib.tensor(W, requires_grad=True)
        ctx = {"grad": lib.enable_grad, "no_grad": lib.no_grad, "inference": lib.inference_mode}[mode]
        with ctx():
            y, qkv = _attention_views(lib, x * 1, w)
        res[lib] = dict(
            y=y.detach().numpy().copy(), graph=_graph(y.grad_fn), rg=[t.requires_grad for t in (y, *qkv)],
            strides=[t.stride() for t in qkv], contiguous=[t.is_contiguous() for t in qkv],
            base=None if mode == "inference" else [t._base is not None for t in qkv], inference=[t.is_inference() for t in (y, *qkv)],
            version=None if mode == "inference" else [t._version for t in qkv], qnode=[None if t.grad_fn is None else t.grad_fn.name() for t in qkv])
        if mode == "grad":
            (y * y).sum().backward()
            res[lib]["gx"], res[lib]["gw"] = x.grad.numpy().copy(), w.grad.numpy().copy()
    mine, theirs = res[tg], res[torch]
    np.testing.assert_allclose(mine.pop("y"), theirs.pop("y"), rtol=1e-5, atol=1e-6)
    if mode == "grad":
        for key in ("gx", "gw"):
            np.testing.assert_allclose(mine.pop(key), theirs.pop(key), rtol=1e-4, atol=1e-5)
    assert mine == theirs


@pytest.mark.torch
def test_in_place_on_fast_views_matches_torch():
    import torch
    out = {}
    for lib in (tg, torch):
        a = lib.tensor(np.arange(12.0).reshape(3, 4), requires_grad=True)
        b = a * 1
        v = b.view(4, 3).transpose(0, 1)
        pieces = b.split(2, dim=1)
        v.mul_(2)  # CopySlices on the base; the split pieces see the new version
        loss = (b * b).sum() + v.sum()
        loss.backward()
        with lib.no_grad():
            nv = b.view(12)
        msg = None
        try:
            nv.add_(1)
        except RuntimeError as e:
            msg = str(e).replace("tracegrad", "torch")
        out[lib] = (b.grad_fn.name(), b._version, pieces[0]._version,
                    a.grad.numpy().tolist(), nv.requires_grad, msg)
    assert out[tg] == out[torch]


@pytest.mark.torch
def test_view_errors_match_torch():
    import torch
    progs = [lambda L: L.ones(6).view(-2, -3), lambda L: L.ones(6).reshape(-1, -3),
             lambda L: L.ones(0).view(0, -1), lambda L: L.ones(6).view(0, -1), lambda L: L.ones(6).view(-1, -1),
             lambda L: L.ones(6).view(4, -1), lambda L: L.ones(2, 3).t().view(6)]
    for prog in progs:
        msgs = []
        for lib in (tg, torch):
            with pytest.raises(RuntimeError) as info:
                prog(lib)
            msgs.append(str(info.value))
        assert msgs[0] == msgs[1]


@pytest.mark.torch
@pytest.mark.parametrize("shape", [(5, 4), (2, 5, 4), (2, 3, 5, 4)])
@pytest.mark.parametrize("bias", [False, True])
def test_linear_matches_torch(shape, bias):
    import torch
    rng = np.random.default_rng(1)
    X, W, Bv = (rng.standard_normal(s).astype("f") for s in (shape, (3, 4), (3,)))
    res = []
    for lib in (tg, torch):
        x, w = lib.tensor(X, requires_grad=True), lib.tensor(W, requires_grad=True)
        b = lib.tensor(Bv, requires_grad=True) if bias else None
        y = lib.nn.functional.linear(x, w, b)
        (y.sin()).sum().backward()
        with lib.no_grad():
            y0 = lib.nn.functional.linear(x, w, b)
        res.append((y.detach().numpy(), y0.numpy(), x.grad.numpy(), w.grad.numpy(),
                    None if b is None else b.grad.numpy(), y.grad_fn.name(), y.requires_grad, y0.requires_grad))
    for m, t in zip(res[0][:5], res[1][:5]):
        if t is not None:
            np.testing.assert_allclose(m, t, rtol=1e-5, atol=1e-5)
    assert res[0][6:] == res[1][6:]
    if len(shape) == 2 or bias:
        assert res[0][5] == res[1][5]
