"""The torch names composed from existing ops (ops/compat_tensor.py, ops/compat_functions.py),
against PyTorch: values and gradients."""
import numpy as np
import pytest

import tracegrad
from tracegrad.ops import compat_functions, compat_tensor

pytestmark = pytest.mark.torch


def pair(a, requires_grad=False, dtype="float64"):
    import torch
    a = np.asarray(a)
    if a.dtype.kind == "f":
        a = a.astype(dtype)
    return (tracegrad.tensor(a, requires_grad=requires_grad), torch.tensor(a, requires_grad=requires_grad))


def close(ours, theirs, **kw):
    if isinstance(theirs, (tuple, list)):
        assert len(ours) == len(theirs)
        for a, b in zip(ours, theirs):
            close(a, b, **kw)
        return
    a = ours.detach().numpy() if isinstance(ours, tracegrad.Tensor) else np.asarray(ours)
    b = theirs.detach().numpy() if hasattr(theirs, "detach") else np.asarray(theirs)
    assert a.shape == b.shape, (a.shape, b.shape)
    np.testing.assert_allclose(a, b, rtol=kw.get("rtol", 1e-10), atol=kw.get("atol", 1e-12))


RNG = np.random.default_rng(0)
M = RNG.standard_normal((3, 4))
V = RNG.standard_normal(4)


@pytest.mark.parametrize("name, args", [
    ("cov", (M,)), ("corrcoef", (M,)), ("logcumsumexp", (M, 1)), ("dist", (M, M[::-1].copy())),
    ("signbit", (np.array([-1.0, -0.0, 0.0, 2.0]),)), ("isposinf", (np.array([np.inf, -np.inf, 1.0]),)),
    ("isneginf", (np.array([np.inf, -np.inf, 1.0]),)), ("isreal", (M,)),
    ("heaviside", (np.array([-1.0, 0.0, 2.0]), np.array([0.5, 0.5, 0.5]))),
    ("ravel", (M.T.copy(),)), ("addmv", (V[:3], M, V)), ("addr", (M, V[:3], V)),
    ("addbmm", (M, RNG.standard_normal((2, 3, 5)), RNG.standard_normal((2, 5, 4)))),
    ("index_add", (M, 0, np.array([2, 0]), RNG.standard_normal((2, 4)))),
    ("index_copy", (M, 1, np.array([3, 1]), RNG.standard_normal((3, 2)))),
    ("index_fill", (M, 1, np.array([0, 2]), -1.5)),
    ("masked_scatter", (M, M > 0, RNG.standard_normal(12))),
    ("bitwise_and", (np.array([5, 3]), np.array([3, 6]))),
    ("cosine_similarity", (M, M ** 2)), ("pairwise_distance", (M, M[::-1].copy())),
    ("cartesian_prod", (V[:2], V[2:])), ("combinations", (V,)),
    ("trapezoid", (M,)), ("cumulative_trapezoid", (M,)), ("vander", (V[:3],)),
    ("pixel_shuffle", (RNG.standard_normal((1, 8, 2, 3)), 2)),
    ("pixel_unshuffle", (RNG.standard_normal((1, 2, 4, 6)), 2)),
])
def test_values_and_gradients_match_torch(name, args):
    import torch
    ours_args, their_args, leaves = [], [], []
    for a in args:
        if isinstance(a, np.ndarray):
            grad = a.dtype.kind == "f" and not leaves
            o, t = pair(a, requires_grad=grad)
            if grad:
                leaves.append((o, t))
            if a.dtype.kind in "iu" and a.ndim == 1 and name.startswith("index"):
                o, t = tracegrad.tensor(a), torch.tensor(a)
            ours_args.append(o)
            their_args.append(t)
        else:
            ours_args.append(a)
            their_args.append(a)
    ours = getattr(tracegrad, name)(*ours_args)
    theirs = getattr(torch, name)(*their_args)
    close(ours, theirs)
    if leaves and ours.dtype.is_floating_point and ours.requires_grad and name != "vander":  # torch's fails
        w = RNG.standard_normal(tuple(theirs.shape))
        (ours * tracegrad.tensor(w)).sum().backward()
        (theirs * torch.tensor(w)).sum().backward()
        close(leaves[0][0].grad, leaves[0][1].grad, rtol=1e-8)


def test_meshgrid_both_indexings_and_the_warning():
    import torch
    a, b = [1.0, 2.0, 3.0], [4.0, 5.0]
    for indexing in ("ij", "xy"):
        close(tracegrad.meshgrid(tracegrad.tensor(a), tracegrad.tensor(b), indexing=indexing),
              torch.meshgrid(torch.tensor(a), torch.tensor(b), indexing=indexing))
    with pytest.warns(UserWarning, match="it will be required to pass the indexing argument"):
        tracegrad.meshgrid(tracegrad.tensor(a), tracegrad.tensor(b))


@pytest.mark.parametrize("name", ["tril_indices", "triu_indices"])
def test_triangle_indices(name):
    import torch
    for args in [(3, 3), (4, 3, 1), (3, 5, -1)]:
        close(getattr(tracegrad, name)(*args), getattr(torch, name)(*args))


def test_unravel_index_and_scalar_tensor():
    import torch
    close(tracegrad.unravel_index(tracegrad.tensor([4, 1, -1]), (2, 3)),
          torch.unravel_index(torch.tensor([4, 1, -1]), (2, 3)))
    assert tracegrad.scalar_tensor(3).dtype is tracegrad.float32 and tracegrad.scalar_tensor(3).ndim == 0


@pytest.mark.parametrize("name", ["hann_window", "hamming_window", "blackman_window", "bartlett_window",
                                  "kaiser_window"])
def test_windows(name):
    import torch
    for n in (0, 1, 5, 8):
        for periodic in (True, False):
            close(getattr(tracegrad, name)(n, periodic, dtype=tracegrad.float64),
                  getattr(torch, name)(n, periodic, dtype=torch.float64), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("name, args", [("addcmul_", ("T", "T")), ("lerp_", ("T", 0.3)), ("eq_", ("T",)),
                                        ("square_", ()), ("tril_", ()), ("cumsum_", (1,)),
                                        ("reciprocal_", ()), ("index_fill_", (1, "I", 2.0))])
def test_in_place_twins_match_torch(name, args):
    import torch
    for lib in (tracegrad, torch):
        pass
    base = M + 2.0
    ours_x, their_x = tracegrad.tensor(base), torch.tensor(base)
    conv = {"T": (tracegrad.tensor(M), torch.tensor(M)), "I": (tracegrad.tensor([0, 2]), torch.tensor([0, 2]))}
    o_args = [conv[a][0] if isinstance(a, str) else a for a in args]
    t_args = [conv[a][1] if isinstance(a, str) else a for a in args]
    assert getattr(ours_x, name)(*o_args) is ours_x
    getattr(their_x, name)(*t_args)
    close(ours_x, their_x)
    assert ours_x._version == 1


def test_in_place_twin_gradient_and_leaf_error():
    x = tracegrad.tensor([0.5, 2.0], dtype=tracegrad.float64, requires_grad=True)
    y = x * 1.0
    y.square_()
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * x.detach().numpy())
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place operation"):
        x.square_()
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Long"):
        tracegrad.tensor([1, 2]).lerp_(tracegrad.tensor([3.0, 4.0]), 0.5)


def test_random_fills():
    tracegrad.manual_seed(0)
    x = tracegrad.empty(2000, dtype=tracegrad.float64)
    assert x.uniform_(2, 3) is x and 2 <= x.min().item() and x.max().item() < 3
    x.normal_(1.0, 0.1)
    assert abs(x.mean().item() - 1.0) < 0.02
    x.exponential_(2.0)
    assert abs(x.mean().item() - 0.5) < 0.05
    ints = tracegrad.empty(500, dtype=tracegrad.int64).random_(3, 7)
    assert set(ints.tolist()) == {3, 4, 5, 6}
    coins = tracegrad.empty(4000).bernoulli_(0.25)
    assert abs(coins.mean().item() - 0.25) < 0.03
    assert set(tracegrad.bernoulli(tracegrad.full((50,), 0.5)).tolist()) <= {0.0, 1.0}
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        tracegrad.zeros(2, requires_grad=True).uniform_()
    with pytest.raises(RuntimeError, match="uniform_ expects to return a \\[from, to\\) range"):
        x.uniform_(3, 2)


def test_fill_diagonal_matches_torch():
    import torch
    for shape, wrap in [((3, 3), False), ((4, 2), False), ((7, 3), True), ((2, 2, 2), False)]:
        ours, theirs = tracegrad.zeros(*shape), torch.zeros(*shape)
        ours.fill_diagonal_(5.0, wrap=wrap)
        theirs.fill_diagonal_(5.0, wrap=wrap)
        close(ours, theirs)


def test_attributes_and_predicates():
    import torch
    x = tracegrad.ones(2, 3)
    assert x.type_as(tracegrad.zeros(1, dtype=tracegrad.int32)).dtype is tracegrad.int32
    assert x.ndimension() == 2 and x.is_cpu and not x.is_sparse and x.layout is tracegrad.strided
    assert x.get_device() == torch.ones(1).get_device() == -1
    assert x.data_ptr() == x.view(6).data_ptr() and x.data_ptr() != x.clone().data_ptr()
    assert x.new([1, 2]).dtype is tracegrad.float32 and x.new(2, 2).shape == (2, 2)
    assert tracegrad.is_nonzero(tracegrad.tensor([1])) and tracegrad.is_same_size(x, tracegrad.zeros(2, 3))
    with pytest.raises(RuntimeError, match="Boolean value of Tensor with more than one value is ambiguous"):
        tracegrad.is_nonzero(x)
    assert tracegrad.typename(x) == "tracegrad.FloatTensor" and tracegrad.typename(1) == "int"
    close(x.mH, torch.ones(2, 3).mH)
    assert tracegrad.is_signed(x) and not tracegrad.is_signed(tracegrad.zeros(1, dtype=tracegrad.uint8))


def test_inplace_aliases_and_range():
    x = tracegrad.tensor([1.0, 4.0])
    assert tracegrad.sqrt_(x) is x
    np.testing.assert_array_equal(x.numpy(), [1.0, 2.0])
    with pytest.warns(UserWarning, match="torch.range is deprecated"):
        r = tracegrad.range(1, 4)
    np.testing.assert_array_equal(r.numpy(), [1.0, 2.0, 3.0, 4.0])
    assert r.dtype is tracegrad.float32


def test_asarray_and_frombuffer_share_memory():
    a = np.arange(3.0)
    t = tracegrad.asarray(a, copy=False)
    a[0] = 9
    assert t[0].item() == 9
    assert tracegrad.asarray(a, copy=True)[0].item() == 9 and tracegrad.asarray(a, copy=True)._data is not a
    with pytest.raises(ValueError, match="can't alias tensor"):
        tracegrad.asarray(a, dtype=tracegrad.float32, copy=False)
    buf = bytearray(8)
    f = tracegrad.frombuffer(buf, dtype=tracegrad.int32)
    buf[0] = 7
    assert f.tolist() == [7, 0]


def test_top_level_nn_twins():
    import torch
    xo, xt = pair(RNG.standard_normal((1, 2, 5, 5)))
    wo, wt = pair(RNG.standard_normal((3, 2, 3, 3)))
    close(tracegrad.conv2d(xo, wo, None, 1, 1), torch.conv2d(xt, wt, None, 1, 1))
    close(tracegrad.max_pool2d(xo, 2), torch.max_pool2d(xt, 2))
    close(tracegrad.layer_norm(xo, (5,)), torch.layer_norm(xt, (5,)))
    close(tracegrad.dropout(xo, 0.5, False), torch.dropout(xt, 0.5, False))


def test_thread_settings_are_recorded():
    before = tracegrad.get_num_threads()
    tracegrad.set_num_threads(2)
    assert tracegrad.get_num_threads() == 2
    tracegrad.set_num_threads(before)
    with pytest.raises(RuntimeError, match="Number of threads must be positive"):
        tracegrad.set_num_threads(0)


def test_names_are_attached():
    for name in compat_tensor.METHODS:
        assert hasattr(tracegrad.Tensor, name), name
    for name in list(compat_tensor.FUNCTIONS) + list(compat_functions.FUNCTIONS):
        assert hasattr(tracegrad, name), name


@pytest.mark.parametrize("name, args", [
    ("renorm", (M, 2, 0, 1.5)), ("renorm", (M, 1, 1, 0.5)),
    ("select_scatter", (M, V, 0, 1)), ("slice_scatter", (M, RNG.standard_normal((3, 2)), 1, 1, 4, 2)),
    ("diagonal_scatter", (M, V[:3], 0)), ("matrix_exp", (RNG.standard_normal((2, 3, 3)),)),
    ("matrix_exp", (RNG.standard_normal((3, 3)) * 4,)), ("pdist", (M,)), ("channel_shuffle", (RNG.standard_normal((1, 6, 2)), 3)),
    ("constant_pad_nd", (M, (1, 2), 0.5)),
])
def test_more_values_and_gradients_match_torch(name, args):
    test_values_and_gradients_match_torch(name, args)


def test_int_reduction_twins_and_isin():
    import torch
    xo, xt = pair(M)
    yo, yt = pair((M > 0).astype("float64"))
    for r in (0, 1, 2):
        close(tracegrad.binary_cross_entropy_with_logits(xo, yo, None, None, r),
              torch.binary_cross_entropy_with_logits(xt, yt, None, None, r))
        close(tracegrad.kl_div(xo, yo, r), torch.kl_div(xt, yt, r))
    wo, wt = pair(RNG.standard_normal((5, 2)))
    close(tracegrad.embedding(wo, tracegrad.tensor([4, 0])), torch.embedding(wt, torch.tensor([4, 0])))
    for e, t in [([1, 2, 3], [2, 5]), ([1, 2], 2)]:
        te = torch.tensor(t) if isinstance(t, list) else t
        oe = tracegrad.tensor(t) if isinstance(t, list) else t
        close(tracegrad.isin(tracegrad.tensor(e), oe), torch.isin(torch.tensor(e), te))
        close(tracegrad.isin(tracegrad.tensor(e), oe, invert=True), torch.isin(torch.tensor(e), te, invert=True))
    for a in ("bool", "int64", "float32", "complex64"):
        for b in ("bool", "int64", "float32", "complex64"):
            assert tracegrad.can_cast(getattr(tracegrad, a), getattr(tracegrad, b)) == \
                torch.can_cast(getattr(torch, a), getattr(torch, b)), (a, b)


def test_constants_and_small_methods():
    import torch
    for name in ("pi", "e", "inf"):
        assert getattr(tracegrad, name) == getattr(torch, name)
    assert tracegrad.newaxis is None and tracegrad.has_lapack
    x = tracegrad.zeros(3)
    assert x.apply_(lambda v: v + 2).tolist() == [2.0, 2.0, 2.0]
    assert x.map_(tracegrad.tensor([1.0, 2.0, 3.0]), lambda a, b: a * b).tolist() == [2.0, 4.0, 6.0]
    with pytest.raises(RuntimeError, match="the base given to float_power_ has dtype Float but the operation's result requires dtype Double"):
        x.float_power_(2)
    with pytest.warns(UserWarning, match="torch.chain_matmul is deprecated"):
        tracegrad.chain_matmul(tracegrad.eye(2), tracegrad.eye(2))
    assert [t.shape[0] for t in tracegrad.split_with_sizes(tracegrad.zeros(5), [2, 3])] == [2, 3]


def test_unfold_matches_torch():
    import torch
    x = RNG.standard_normal((2, 7, 6))
    for dim, size, step in [(1, 3, 2), (2, 2, 2), (-1, 6, 1), (1, 1, 3)]:
        xo, xt = pair(x, requires_grad=True)
        ours, theirs = xo.unfold(dim, size, step), xt.unfold(dim, size, step)
        close(ours, theirs)
        w = RNG.standard_normal(tuple(theirs.shape))
        (ours * tracegrad.tensor(w)).sum().backward()
        (theirs * torch.tensor(w)).sum().backward()
        close(xo.grad, xt.grad)
    patches = tracegrad.arange(16.0).reshape(1, 1, 4, 4).unfold(2, 2, 2).unfold(3, 2, 2)
    close(patches, torch.arange(16.0).reshape(1, 1, 4, 4).unfold(2, 2, 2).unfold(3, 2, 2))
    with pytest.raises(RuntimeError, match="maximum size for tensor at dimension 1 is 7 but size is 8"):
        tracegrad.zeros(2, 7).unfold(1, 8, 1)
