"""``svd_lowrank`` and ``pca_lowrank``. Their results depend on random draws, so the tests
check properties rather than bits: exact reconstruction of matrices whose rank is at most
``q``, the top singular values (NumPy's SVD), orthonormal factors, shapes (tall, wide,
batched, empty), centring, sparse inputs, gradients (against the SVD's closed form and
finite differences), the errors; and (marked ``torch``) the same against real PyTorch."""
import warnings

import numpy as np
import pytest

import tracegrad as tg

_rng = np.random.default_rng(23)


def _orthonormal(*shape, complex_=False):
    x = _rng.standard_normal(shape)
    if complex_:
        x = x + 1j * _rng.standard_normal(shape)
    return np.linalg.qr(x)[0]


def _rank(m, n, r, batch=(), complex_=False):
    """A (batch of) m x n matrices of exact rank r with well-separated singular values."""
    s = np.linspace(5.0, 1.0, r)
    u, v = _orthonormal(*batch, m, r, complex_=complex_), _orthonormal(*batch, n, r, complex_=complex_)
    return (u * s) @ np.conj(np.swapaxes(v, -1, -2))


def _np(t):
    return t.detach().numpy()


def _reconstruct(U, S, V):
    return _np(U) * _np(S)[..., None, :] @ np.conj(np.swapaxes(_np(V), -1, -2))


def _assert_orthonormal(X, atol=1e-10):
    x = _np(X)
    gram = np.conj(np.swapaxes(x, -1, -2)) @ x
    np.testing.assert_allclose(gram, np.broadcast_to(np.eye(x.shape[-1]), gram.shape), atol=atol)


def _top_singular_values(a, k):
    return np.linalg.svd(a, compute_uv=False)[..., :k]


# -- svd_lowrank: properties ----------------------------------------------------------------------

@pytest.mark.parametrize("shape,r,q", [((9, 6), 3, 3), ((6, 9), 3, 5), ((2, 3, 9, 6), 2, 4), ((3, 6, 9), 4, 4),
                                       ((7, 7), 6, 6)])
def test_exact_rank_is_reconstructed(shape, r, q):
    a = _rank(*shape[-2:], r, batch=shape[:-2])
    U, S, V = tg.svd_lowrank(tg.tensor(a), q=q)
    m, n = shape[-2:]
    assert (U.shape, S.shape, V.shape) == (shape[:-2] + (m, q), shape[:-2] + (q,), shape[:-2] + (n, q))
    assert U.dtype == S.dtype == V.dtype == tg.float64
    np.testing.assert_allclose(_reconstruct(U, S, V), a, atol=1e-10)
    np.testing.assert_allclose(_np(S), _top_singular_values(a, q), atol=1e-10)
    _assert_orthonormal(U)
    _assert_orthonormal(V)


@pytest.mark.parametrize("niter", [0, 1, 4])
def test_subspace_iterations(niter):
    a = _rank(10, 7, 3)
    U, S, V = tg.svd_lowrank(tg.tensor(a), q=3, niter=niter)
    np.testing.assert_allclose(_reconstruct(U, S, V), a, atol=1e-10)


def test_full_rank_approximation_has_the_top_singular_values():
    """With q = k + a few extra columns and power iterations, a matrix with a fast-decaying
    spectrum has its leading singular values found to high accuracy."""
    u, v = _orthonormal(30, 20), _orthonormal(20, 20)
    s = 10.0 ** -np.arange(20.0)
    a = (u * s) @ v.T
    tg.manual_seed(0)
    S = tg.svd_lowrank(tg.tensor(a), q=8, niter=2)[1]
    np.testing.assert_allclose(_np(S)[:4], s[:4], rtol=1e-8)


def test_complex_input():
    a = _rank(7, 5, 2, complex_=True)
    U, S, V = tg.svd_lowrank(tg.tensor(a), q=3)
    assert U.dtype == V.dtype == tg.complex128 and S.dtype == tg.float64
    np.testing.assert_allclose(_reconstruct(U, S, V), a, atol=1e-10)
    np.testing.assert_allclose(_np(S), _top_singular_values(a, 3), atol=1e-10)
    _assert_orthonormal(U)
    _assert_orthonormal(V)


def test_float32_input():
    a = _rank(8, 6, 2).astype(np.float32)
    U, S, V = tg.svd_lowrank(tg.tensor(a), q=2)
    assert U.dtype == S.dtype == V.dtype == tg.float32
    np.testing.assert_allclose(_reconstruct(U, S, V), a, atol=1e-4)


@pytest.mark.parametrize("shape,q,expected", [((5, 8), 10, 5), ((8, 5), 7, 5), ((5, 8), 0, 0), ((0, 8), 6, 0),
                                              ((8, 0), 6, 0)])
def test_number_of_triplets_is_min_of_q_m_n(shape, q, expected):
    U, S, V = tg.svd_lowrank(tg.randn(*shape, dtype=tg.float64), q=q)
    assert (U.shape, S.shape, V.shape) == ((shape[0], expected), (expected,), (shape[1], expected))


def test_empty_batch():
    U, S, V = tg.svd_lowrank(tg.randn(0, 5, 8))
    assert (U.shape, S.shape, V.shape) == ((0, 5, 5), (0, 5), (0, 8, 5))


def test_defaults_and_none():
    a = tg.randn(12, 9, dtype=tg.float64)
    for U, S, V in (tg.svd_lowrank(a), tg.svd_lowrank(a, q=None, niter=None)):
        assert (U.shape, S.shape, V.shape) == ((12, 6), (6,), (9, 6))
    assert type(tg.svd_lowrank(a)) is tuple


def test_negative_niter_means_no_iteration():
    """As in PyTorch, svd_lowrank does not range-check niter."""
    a = _rank(8, 6, 2)
    tg.manual_seed(5)
    ours = tg.svd_lowrank(tg.tensor(a), q=2, niter=-3)
    tg.manual_seed(5)
    plain = tg.svd_lowrank(tg.tensor(a), q=2, niter=0)
    for x, y in zip(ours, plain):
        np.testing.assert_array_equal(_np(x), _np(y))


def test_manual_seed_repeats_the_result():
    a = tg.randn(9, 7, dtype=tg.float64)
    tg.manual_seed(11)
    first = tg.svd_lowrank(a, q=3)
    tg.manual_seed(11)
    second = tg.svd_lowrank(a, q=3)
    for x, y in zip(first, second):
        np.testing.assert_array_equal(_np(x), _np(y))


@pytest.mark.parametrize("shape", [(9, 6), (6, 9), (2, 6, 9)])
@pytest.mark.parametrize("mean_shape", ["row", "vector", "full"])
def test_mean_is_subtracted(shape, mean_shape):
    m, n = shape[-2:]
    a = _rank(m, n, 2, batch=shape[:-2])
    mu = {"row": (1, n), "vector": (n,), "full": shape}[mean_shape]
    mean = _rng.standard_normal(mu)
    U, S, V = tg.svd_lowrank(tg.tensor(a + mean), q=2, M=tg.tensor(mean))
    np.testing.assert_allclose(_reconstruct(U, S, V), a, atol=1e-10)
    np.testing.assert_allclose(_np(S), _top_singular_values(a, 2), atol=1e-10)


# -- pca_lowrank ----------------------------------------------------------------------------------

@pytest.mark.parametrize("shape", [(20, 6), (6, 20), (3, 15, 8)])
def test_pca_matches_the_svd_of_the_centred_matrix(shape):
    m, n = shape[-2:]
    a = _rank(m, n, 3, batch=shape[:-2]) + _rng.standard_normal(shape[:-2] + (1, n)) * 10
    q = min(6, m, n)
    U, S, V = tg.pca_lowrank(tg.tensor(a))
    assert (U.shape, S.shape, V.shape) == (shape[:-2] + (m, q), shape[:-2] + (q,), shape[:-2] + (n, q))
    centred = a - a.mean(axis=-2, keepdims=True)
    np.testing.assert_allclose(_np(S), _top_singular_values(centred, q), atol=1e-9)
    np.testing.assert_allclose(_reconstruct(U, S, V), centred, atol=1e-9)
    # projecting the centred data onto the principal directions gives U diag(S)
    np.testing.assert_allclose(centred @ _np(V)[..., :3], (_np(U) * _np(S)[..., None, :])[..., :3], atol=1e-9)


def test_pca_default_q_and_no_centring():
    U, S, V = tg.pca_lowrank(tg.randn(3, 4, dtype=tg.float64))
    assert (U.shape, S.shape, V.shape) == ((3, 3), (3,), (4, 3))
    a = _rank(10, 7, 2) + 3.0
    tg.manual_seed(2)
    ours = tg.pca_lowrank(tg.tensor(a), q=3, center=False)
    tg.manual_seed(2)
    plain = tg.svd_lowrank(tg.tensor(a), q=3)
    for x, y in zip(ours, plain):
        np.testing.assert_array_equal(_np(x), _np(y))


def test_pca_q_bounds_are_inclusive():
    a = tg.randn(5, 8, dtype=tg.float64)
    assert tg.pca_lowrank(a, q=5)[1].shape == (5,)
    assert tg.pca_lowrank(a, q=0)[1].shape == (0,)


# -- sparse COO input -----------------------------------------------------------------------------

def _sparse_pair(m=7, n=5, seed=3):
    r = np.random.default_rng(seed)
    dense = np.where(r.random((m, n)) < 0.5, r.standard_normal((m, n)), 0.0)
    return tg.tensor(dense).to_sparse(), dense


@pytest.mark.parametrize("transpose", [False, True])
def test_sparse_matches_dense(transpose):
    sp, dense = _sparse_pair()
    if transpose:
        sp, dense = sp.t(), dense.T
    k = min(dense.shape)
    U, S, V = tg.svd_lowrank(sp, q=k)
    np.testing.assert_allclose(_np(S), _top_singular_values(dense, k), atol=1e-10)
    np.testing.assert_allclose(_reconstruct(U, S, V), dense, atol=1e-10)
    U, S, V = tg.pca_lowrank(sp, q=k)
    centred = dense - dense.mean(axis=0)
    np.testing.assert_allclose(_np(S), _top_singular_values(centred, k), atol=1e-10)
    np.testing.assert_allclose(_reconstruct(U, S, V), centred, atol=1e-10)


def test_sparse_values_get_the_dense_gradient():
    sp, dense = _sparse_pair()
    values = tg.tensor(sp._values().detach().numpy(), requires_grad=True)
    ours = tg.sparse_coo_tensor(sp._indices(), values, sp.shape)
    d = tg.tensor(dense, requires_grad=True)
    for fn in (tg.svd_lowrank, tg.pca_lowrank):
        values.grad = d.grad = None
        tg.manual_seed(4)
        fn(ours, q=3)[1].sum().backward()
        tg.manual_seed(4)
        fn(d, q=3)[1].sum().backward()
        rows, cols = sp._indices().numpy()
        np.testing.assert_allclose(_np(values.grad), _np(d.grad)[rows, cols], atol=1e-10)


def test_a_sparse_leaf_that_requires_grad_is_refused():
    """PyTorch gives a sparse leaf a dense gradient here (nonzero at unstored positions);
    a sparse .grad of the leaf's layout would silently drop those, so it is refused, as
    tracegrad.matmul refuses it. Gradients through the values are given (see above)."""
    sp, _ = _sparse_pair()
    sp.requires_grad_()
    with pytest.raises(NotImplementedError, match="svd_lowrank with a sparse leaf tensor that requires grad"):
        tg.svd_lowrank(sp, q=5)


def test_sparse_refusals():
    batched = tg.randn(2, 5, 8).to_sparse()
    with pytest.raises(ValueError, match="^pca_lowrank input is expected to be 2-dimensional tensor$"):
        tg.pca_lowrank(batched)
    with pytest.raises(NotImplementedError, match="sparse A only as a real 2-D matrix"):
        tg.svd_lowrank(batched)
    with pytest.raises(NotImplementedError, match=r"call \.to_dense\(\) first"):
        tg.svd_lowrank(tg.randn(5, 8, dtype=tg.complex128).to_sparse())


# -- gradients ------------------------------------------------------------------------------------

@pytest.mark.parametrize("shape", [(9, 6), (6, 9)])
def test_gradient_of_singular_values_of_an_exact_rank_matrix(shape):
    """For rank(A) = q the sketch captures A's range exactly, and to first order S moves as
    A's top-q singular values do: d sum(S) / dA = U_q V_q^T."""
    q = 3
    a = _rank(*shape, q)
    x = tg.tensor(a, requires_grad=True)
    tg.svd_lowrank(x, q=q)[1].sum().backward()
    u, _, vh = np.linalg.svd(a)
    np.testing.assert_allclose(_np(x.grad), u[:, :q] @ vh[:q], atol=1e-8)
    y = tg.tensor(a, requires_grad=True)
    tg.linalg.svdvals(y)[:q].sum().backward()
    np.testing.assert_allclose(_np(x.grad), _np(y.grad), atol=1e-8)


def _seeded(fn, **kw):
    def f(a):
        tg.manual_seed(7)  # the same sketch at every finite-difference point
        return fn(a, **kw)
    return f


@pytest.mark.parametrize("shape", [(6, 4), (4, 6)])
def test_gradcheck_singular_values(shape):
    a = tg.tensor(_rng.standard_normal(shape), requires_grad=True)
    assert tg.autograd.gradcheck(lambda x: _seeded(tg.svd_lowrank, q=4)(x)[1], (a,))


def test_gradcheck_through_u_and_v():
    """With q = min(m, n) the reconstruction is A itself: the gradient has to flow back
    through Q, U and V (QR and SVD) to give the identity."""
    a = tg.tensor(_rng.standard_normal((6, 4)), requires_grad=True)

    def reconstruction(x):
        U, S, V = _seeded(tg.svd_lowrank, q=4)(x)
        return (U * S) @ V.mT
    assert tg.autograd.gradcheck(reconstruction, (a,))
    w = _rng.standard_normal((6, 4))
    (reconstruction(a) * tg.tensor(w)).sum().backward()
    np.testing.assert_allclose(_np(a.grad), w, atol=1e-10)


def test_gradcheck_pca_with_mean():
    a = tg.tensor(_rng.standard_normal((7, 4)), requires_grad=True)
    mean = tg.tensor(_rng.standard_normal((1, 4)), requires_grad=True)
    assert tg.autograd.gradcheck(lambda x: _seeded(tg.pca_lowrank, q=3)(x)[1], (a,))
    assert tg.autograd.gradcheck(lambda x, mu: _seeded(tg.svd_lowrank, q=4, M=mu)(x)[1], (a, mean))


# -- errors ---------------------------------------------------------------------------------------

_A = tg.tensor(_rng.standard_normal((5, 8)))
ERRORS = [  # (call on a namespace, tracegrad or torch, and a 5 x 8 float64 matrix)
    (lambda t, a: t.pca_lowrank(a, q=6), ValueError,
     "q(=6) must be non-negative integer and not greater than min(m, n)=5"),
    (lambda t, a: t.pca_lowrank(a, q=-1), ValueError,
     "q(=-1) must be non-negative integer and not greater than min(m, n)=5"),
    (lambda t, a: t.pca_lowrank(a, niter=-1), ValueError, "niter(=-1) must be non-negative integer"),
    (lambda t, a: t.pca_lowrank(a, niter=None), TypeError, "'>=' not supported between instances of 'NoneType' and 'int'"),
    (lambda t, a: t.svd_lowrank(a, q=-1), RuntimeError, "Trying to create tensor with negative dimension -1: [5, -1]"),
    (lambda t, a: t.svd_lowrank(a, M=t.zeros(3, 8, dtype=t.float64)), RuntimeError,
     ("The expanded size of the tensor (5) must match the existing size (3) at non-singleton dimension 0.  "
      "Target sizes: [5, 8].  Tensor sizes: [3, 8]")),
    (lambda t, a: t.svd_lowrank(a, M=t.zeros(8)), RuntimeError,
     "expected m1 and m2 to have the same dtype, but got: float != double"),
    (lambda t, a: t.svd_lowrank(t.ones(5, 8, dtype=t.int64)), RuntimeError,
     "expected m1 and m2 to have the same dtype, but got: long int != float"),
    (lambda t, a: t.pca_lowrank(t.ones(5, 8, dtype=t.int64)), RuntimeError,
     "mean(): could not infer output dtype. Input dtype must be either a floating point or complex dtype. Got: Long"),
]


@pytest.mark.parametrize("k", range(len(ERRORS)))
def test_errors(k):
    fn, exc, message = ERRORS[k]
    with pytest.raises(exc) as info:
        fn(tg, _A)
    assert str(info.value) == message


def test_errors_that_differ_from_torch_in_wording():
    """PyTorch fails these with a tuple-unpacking ValueError and an AttributeError."""
    with pytest.raises(ValueError, match=r"expected a matrix or a batch of matrices .* got a 1-D tensor"):
        tg.svd_lowrank(tg.randn(8))
    with pytest.raises(TypeError, match=r"pca_lowrank\(\): argument 'A' \(position 1\) must be Tensor, not list"):
        tg.pca_lowrank([[1.0, 2.0]])


# -- against PyTorch ------------------------------------------------------------------------------

@pytest.mark.torch
@pytest.mark.parametrize("fn,shape,kw", [
    ("svd_lowrank", (5, 8), {}), ("svd_lowrank", (8, 5), {"q": 3}), ("svd_lowrank", (5, 8), {"q": 10}),
    ("svd_lowrank", (3, 2, 5, 8), {"q": 3, "niter": 0}), ("svd_lowrank", (0, 5, 8), {}),
    ("svd_lowrank", (0, 8), {}), ("svd_lowrank", (5, 8), {"q": 0}), ("svd_lowrank", (5, 8), {"q": None, "niter": None}),
    ("pca_lowrank", (5, 8), {}), ("pca_lowrank", (3, 4), {}), ("pca_lowrank", (2, 5, 8), {"q": 2}),
    ("pca_lowrank", (8, 5), {"center": False, "niter": 4}),
])
def test_shapes_and_dtypes_match_torch(fn, shape, kw):
    import torch
    a = _rng.standard_normal(shape)
    ours, theirs = getattr(tg, fn)(tg.tensor(a), **kw), getattr(torch, fn)(torch.tensor(a), **kw)
    assert type(ours) is type(theirs)
    assert [tuple(t.shape) for t in ours] == [tuple(t.shape) for t in theirs]
    assert [str(t.dtype).split(".")[-1] for t in ours] == [str(t.dtype).split(".")[-1] for t in theirs]


@pytest.mark.torch
@pytest.mark.parametrize("shape,q", [((9, 6), 3), ((6, 9), 4), ((2, 8, 7), 3)])
def test_singular_values_and_gradient_match_torch(shape, q):
    import torch
    a = _rank(*shape[-2:], 3, batch=shape[:-2])
    x, y = tg.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    ours, theirs = tg.svd_lowrank(x, q=q), torch.svd_lowrank(y, q=q)
    np.testing.assert_allclose(_np(ours[1]), theirs[1].detach().numpy(), atol=1e-10)
    np.testing.assert_allclose(_reconstruct(*ours), _reconstruct(*[t.detach() for t in theirs]), atol=1e-10)
    ours[1][..., :3].sum().backward()
    theirs[1][..., :3].sum().backward()
    np.testing.assert_allclose(_np(x.grad), y.grad.numpy(), atol=1e-8)
    pca_ours, pca_theirs = tg.pca_lowrank(tg.tensor(a), q=q), torch.pca_lowrank(torch.tensor(a), q=q)
    np.testing.assert_allclose(_np(pca_ours[1])[..., :2], pca_theirs[1].numpy()[..., :2], atol=1e-10)


@pytest.mark.torch
def test_sparse_singular_values_match_torch():
    import torch
    sp, dense = _sparse_pair()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's "invariant checks are implicitly disabled"
        theirs = torch.pca_lowrank(torch.tensor(dense).to_sparse(), q=5)[1]
    np.testing.assert_allclose(_np(tg.pca_lowrank(sp, q=5)[1]), theirs.numpy(), atol=1e-10)


@pytest.mark.torch
@pytest.mark.parametrize("k", range(len(ERRORS)))
def test_errors_match_torch(k):
    import torch
    fn, exc, message = ERRORS[k]
    with pytest.raises(exc) as info:
        fn(torch, torch.tensor(_A.numpy()))
    assert str(info.value) == message
