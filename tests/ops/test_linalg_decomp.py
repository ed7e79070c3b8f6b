"""``tracegrad.linalg`` (torch.linalg) and torch's older decomposition names against real
PyTorch: values and gradients (first and second order) of real-valued losses, on single,
stacked and complex operands. Eigen/singular vectors enter only through losses that do
not depend on their signs or phases; functions reading one triangle of a symmetric
operand are given a symmetric parametrisation (``X + X^H``, ``X X^H + n I``), for which
tracegrad's one-triangle gradient and PyTorch's symmetrised one agree."""
import math

import numpy as np
import pytest

import tracegrad as tg

rng = np.random.default_rng(1513)
pytestmark = pytest.mark.torch


def _torch():
    return pytest.importorskip("torch")


def rand(*shape, complex_=False):
    a = rng.standard_normal(shape)
    return a + 1j * rng.standard_normal(shape) if complex_ else a


def invertible(*shape, complex_=False):
    return rand(*shape, complex_=complex_) + 3 * np.eye(shape[-1])


def spread(*shape, complex_=False):
    """Matrices with singular values 1, 2, ... (well separated) in random bases."""
    m, n = shape[-2:]
    k = min(m, n)
    u = np.linalg.qr(rand(*shape[:-2], m, k, complex_=complex_))[0]
    v = np.linalg.qr(rand(*shape[:-2], n, k, complex_=complex_))[0]
    return (u * np.arange(1.0, k + 1)) @ np.conj(np.swapaxes(v, -1, -2))


def herm(T, x):
    return x + x.mT.conj()


def pd(T, x):
    n = x.shape[-1]
    return x @ x.mT.conj() + n * T.eye(n, dtype=x.dtype)


def weights(T, shape, seed):
    return T.tensor(np.random.default_rng(seed).standard_normal(shape))


def wsum(T, y, seed=0):
    """A real weighted sum of ``y`` (of its real and imaginary parts when complex)."""
    w = weights(T, tuple(y.shape), seed)
    if y.is_complex():
        return (y.real * w).sum() + (y.imag * weights(T, tuple(y.shape), seed + 1)).sum()
    return (y * w).sum()


def _run(T, fn, arrays, create_graph):
    leaves = [T.tensor(a, requires_grad=True) for a in arrays]
    loss = fn(T, *leaves)
    grads = (T if T is tg else _torch()).autograd.grad(loss, leaves, create_graph=create_graph)
    return loss, leaves, grads


def check(fn, *arrays, second_order=False, rtol=1e-7):
    """Same loss value and gradients as torch (and, ``second_order``, the gradient of a
    weighted sum of the gradients)."""
    torch = _torch()
    ours, our_leaves, our_grads = _run(tg, fn, arrays, second_order)
    theirs, their_leaves, their_grads = _run(torch, fn, arrays, second_order)
    np.testing.assert_allclose(float(ours.detach().numpy()), float(theirs.detach()), rtol=rtol)
    for g, h in zip(our_grads, their_grads):
        np.testing.assert_allclose(g.detach().numpy(), h.detach().numpy(), rtol=rtol, atol=1e-9)
    if second_order:
        ours2 = tg.autograd.grad(sum(wsum(tg, g, 10 + k) for k, g in enumerate(our_grads)), our_leaves)
        theirs2 = torch.autograd.grad(sum(wsum(torch, g, 10 + k) for k, g in enumerate(their_grads)), their_leaves)
        for g, h in zip(ours2, theirs2):
            np.testing.assert_allclose(g.numpy(), h.numpy(), rtol=1e-6, atol=1e-8)


# -- the losses: fn(T, *leaves) with T either tracegrad or torch ----------------------------------

REAL = {
    "inv": (lambda T, x: wsum(T, T.linalg.inv(x)), [invertible(3, 3)]),
    "inv_batched": (lambda T, x: wsum(T, T.linalg.inv(x)), [invertible(2, 2, 3, 3)]),
    "det": (lambda T, x: wsum(T, T.linalg.det(x)), [invertible(2, 3, 3)]),
    "slogdet": (lambda T, x: wsum(T, T.linalg.slogdet(x).logabsdet * T.linalg.slogdet(x).sign),
                [-invertible(3, 3)]),
    "solve_matrix": (lambda T, a, b: wsum(T, T.linalg.solve(a, b)), [invertible(2, 3, 3), rand(3, 2)]),
    "solve_vector": (lambda T, a, b: wsum(T, T.linalg.solve(a, b)), [invertible(2, 3, 3), rand(2, 3)]),
    "solve_left_false": (lambda T, a, b: wsum(T, T.linalg.solve(a, b, left=False)), [invertible(3, 3), rand(2, 3)]),
    "cholesky": (lambda T, x: wsum(T, T.linalg.cholesky(pd(T, x))), [rand(2, 3, 3)]),
    "cholesky_upper": (lambda T, x: wsum(T, T.linalg.cholesky(pd(T, x), upper=True)), [rand(3, 3)]),
    "eigh": (lambda T, x: wsum(T, T.linalg.eigh(herm(T, x)).eigenvalues)
             + wsum(T, T.linalg.eigh(herm(T, x)).eigenvectors ** 2, 3), [spread(3, 3)]),
    "eigh_upper_batched": (lambda T, x: wsum(T, T.linalg.eigh(herm(T, x), UPLO="U")[1] ** 2), [spread(2, 4, 4)]),
    "eigvalsh": (lambda T, x: wsum(T, T.linalg.eigvalsh(herm(T, x))), [rand(2, 3, 3)]),
    "eig": (lambda T, x: wsum(T, T.linalg.eig(x).eigenvalues) + wsum(T, T.linalg.eig(x).eigenvectors.abs(), 5),
            [spread(3, 3) + 2 * np.eye(3)]),
    "eigvals": (lambda T, x: wsum(T, T.linalg.eigvals(x)), [rand(2, 3, 3)]),
    "svd_tall": (lambda T, x: _svd_loss(T, x, False), [spread(4, 3)]),
    "svd_wide_batched": (lambda T, x: _svd_loss(T, x, False), [spread(2, 3, 5)]),
    "svd_full": (lambda T, x: _svd_loss(T, x, True), [spread(5, 3)]),
    "svdvals": (lambda T, x: wsum(T, T.linalg.svdvals(x)), [spread(2, 3, 4)]),
    "pinv": (lambda T, x: wsum(T, T.linalg.pinv(x)), [spread(2, 4, 3)]),
    "pinv_hermitian": (lambda T, x: wsum(T, T.linalg.pinv(herm(T, x), hermitian=True)), [spread(3, 3)]),
    "qr_tall": (lambda T, x: wsum(T, T.linalg.qr(x).Q) + wsum(T, T.linalg.qr(x).R, 1), [rand(2, 5, 3)]),
    "qr_wide": (lambda T, x: wsum(T, T.linalg.qr(x)[0]) + wsum(T, T.linalg.qr(x)[1], 1), [rand(3, 5)]),
    "qr_complete_wide": (lambda T, x: wsum(T, T.linalg.qr(x, mode="complete")[1]), [rand(3, 4)]),
    "matrix_power": (lambda T, x: wsum(T, T.linalg.matrix_power(x, 3)) + wsum(T, T.linalg.matrix_power(x, -2), 1)
                     + wsum(T, T.linalg.matrix_power(x, 0), 2), [invertible(2, 3, 3) / 2]),
    "multi_dot": (lambda T, a, b, c: wsum(T, T.linalg.multi_dot([a, b, c, a])), [rand(3), rand(3, 4), rand(4, 3)]),
    "matrix_norms": (lambda T, x: sum(T.linalg.matrix_norm(x, ord=o).sum() for o in
                                      ("fro", "nuc", 1, -1, 2, -2, math.inf, -math.inf)),
                     [spread(2, 3, 4) + 0.1 * rand(2, 3, 4)]),
    "matrix_norm_dims": (lambda T, x: wsum(T, T.linalg.matrix_norm(x, ord="nuc", dim=(2, 0), keepdim=True))
                         + wsum(T, T.linalg.matrix_norm(x, ord=-1, dim=(0, 1)), 1), [rand(3, 4, 5)]),
    "vector_norms": (lambda T, x: sum(wsum(T, T.linalg.vector_norm(x, ord=o, dim=1), k) for k, o in
                                      enumerate((2, 1, 3, 0.5, math.inf, -math.inf, -2))), [rand(3, 4, 2)]),
    "norm": (lambda T, x: T.linalg.norm(x) + T.linalg.norm(x[0], ord="nuc") + wsum(T, T.linalg.norm(x, dim=2))
             + wsum(T, T.linalg.norm(x, ord=2, dim=(0, 2), keepdim=True), 3) + T.linalg.norm(x[0, 0], ord=3),
             [rand(2, 3, 4)]),
}
SECOND_ORDER = ["inv", "det", "slogdet", "solve_matrix", "cholesky", "eigh", "eigvalsh", "svd_tall", "svdvals",
                "pinv", "qr_tall", "qr_wide", "matrix_power", "matrix_norms", "eig"]


def _svd_loss(T, x, full):
    u, s, vh = T.linalg.svd(x, full_matrices=full)
    k = s.shape[-1]
    # u_i vh_i products and |u|, |vh| do not depend on the vectors' signs or phases
    prod = (u[..., :, :k].unsqueeze(-1) * vh[..., :k, :].unsqueeze(-3)).sum(-2)
    return wsum(T, s) + wsum(T, prod, 1) + wsum(T, u[..., :, :k].abs(), 2) + wsum(T, vh[..., :k, :].abs(), 3)


@pytest.mark.parametrize("name", sorted(REAL))
def test_values_and_gradients_match_torch(name):
    fn, arrays = REAL[name]
    check(fn, *arrays)


@pytest.mark.parametrize("name", SECOND_ORDER)
def test_second_order_matches_torch(name):
    fn, arrays = REAL[name]
    check(fn, *arrays, second_order=True, rtol=1e-6)


COMPLEX = {
    "inv": (lambda T, x: wsum(T, T.linalg.inv(x)), [invertible(2, 3, 3, complex_=True)]),
    "det": (lambda T, x: wsum(T, T.linalg.det(x)), [invertible(3, 3, complex_=True)]),
    "slogdet": (lambda T, x: wsum(T, T.linalg.slogdet(x).sign) + wsum(T, T.linalg.slogdet(x).logabsdet, 1),
                [invertible(2, 3, 3, complex_=True)]),
    "solve": (lambda T, a, b: wsum(T, T.linalg.solve(a, b)), [invertible(3, 3, complex_=True), rand(3, 2, complex_=True)]),
    "cholesky": (lambda T, x: wsum(T, T.linalg.cholesky(pd(T, x))), [rand(2, 3, 3, complex_=True)]),
    "eigh": (lambda T, x: wsum(T, T.linalg.eigh(herm(T, x)).eigenvalues)
             + wsum(T, T.linalg.eigh(herm(T, x)).eigenvectors.abs(), 1), [spread(3, 3, complex_=True)]),
    "eig": (lambda T, x: wsum(T, T.linalg.eig(x)[0]) + wsum(T, T.linalg.eig(x)[1].abs(), 2),
            [spread(3, 3, complex_=True) + 2 * np.eye(3)]),
    "svd": (lambda T, x: _svd_loss(T, x, False), [spread(2, 4, 3, complex_=True)]),
    "svd_wide": (lambda T, x: _svd_loss(T, x, False), [spread(3, 5, complex_=True)]),
    "qr": (lambda T, x: wsum(T, T.linalg.qr(x)[1]) + wsum(T, T.linalg.qr(x)[0], 1), [rand(4, 3, complex_=True)]),
    "pinv": (lambda T, x: wsum(T, T.linalg.pinv(x)), [spread(3, 4, complex_=True)]),
    "norms": (lambda T, x: T.linalg.matrix_norm(x, "nuc").sum() + T.linalg.norm(x) + T.linalg.vector_norm(x, 3),
              [rand(2, 3, 3, complex_=True)]),
}


@pytest.mark.parametrize("name", sorted(COMPLEX))
def test_complex_values_and_gradients_match_torch(name):
    fn, arrays = COMPLEX[name]
    check(fn, *arrays)


@pytest.mark.parametrize("name", ["inv", "eigh", "svd", "cholesky"])
def test_complex_second_order_matches_torch(name):
    fn, arrays = COMPLEX[name]
    check(fn, *arrays, second_order=True, rtol=1e-6)


# -- values that depend on signs and phases: LAPACK's, as NumPy gives them -------------------------

@pytest.mark.parametrize("complex_", [False, True])
def test_decomposition_values_are_lapacks(complex_):
    """Named like torch's results; the vectors' signs and phases are NumPy's (LAPACK's:
    torch's own LAPACK may pick other signs)."""
    torch = _torch()
    x = rand(2, 4, 3, complex_=complex_)
    sym = x[..., :3, :] + np.conj(np.swapaxes(x[..., :3, :], -1, -2))
    for ours, theirs, numpys, fields in (
            (tg.linalg.svd(tg.tensor(x)), torch.linalg.svd(torch.tensor(x)), np.linalg.svd(x), ("U", "S", "Vh")),
            (tg.linalg.qr(tg.tensor(x)), torch.linalg.qr(torch.tensor(x)), np.linalg.qr(x), ("Q", "R")),
            (tg.linalg.eigh(tg.tensor(sym)), torch.linalg.eigh(torch.tensor(sym)), np.linalg.eigh(sym),
             ("eigenvalues", "eigenvectors"))):
        assert type(ours).__name__ == type(theirs).__name__
        assert [tuple(getattr(ours, f).shape) for f in fields] == [tuple(getattr(theirs, f).shape) for f in fields]
        for a, b in zip(ours, numpys):
            np.testing.assert_allclose(a.numpy(), b, rtol=1e-10, atol=1e-12)


def test_qr_r_mode_is_differentiable():
    """PyTorch refuses to differentiate mode='r'; tracegrad computes Q anyway, so R's
    gradient is that of mode='reduced' (torch's, there)."""
    torch = _torch()
    x = rand(4, 3)
    ours = tg.tensor(x, requires_grad=True)
    theirs = torch.tensor(x, requires_grad=True)
    q, r = tg.linalg.qr(ours, mode="r")
    assert q.shape == (0,)
    wsum(tg, r).backward()
    wsum(torch, torch.linalg.qr(theirs).R).backward()
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-10)


# -- torch's older names and Tensor methods -----------------------------------------------------

OLD = {
    "inverse": (lambda T, x: wsum(T, T.inverse(x)) + wsum(T, x.inverse(), 1), [invertible(3, 3)]),
    "det": (lambda T, x: T.det(x) + x.det(), [invertible(3, 3)]),
    "logdet": (lambda T, x: T.logdet(pd(T, x)) + pd(T, x).logdet(), [rand(3, 3)]),
    "slogdet": (lambda T, x: T.slogdet(x).logabsdet + x.slogdet()[1], [invertible(3, 3)]),
    "cholesky": (lambda T, x: wsum(T, T.cholesky(pd(T, x))) + wsum(T, pd(T, x).cholesky(upper=True), 1), [rand(3, 3)]),
    "svd": (lambda T, x: wsum(T, T.svd(x).S) + wsum(T, T.svd(x).U.abs(), 1) + wsum(T, T.svd(x).V.abs(), 2)
            + wsum(T, x.svd(some=False)[1], 3), [spread(3, 4)]),
    "qr": (lambda T, x: wsum(T, T.qr(x).R) + wsum(T, x.qr()[0], 1), [rand(4, 3)]),
    "pinverse": (lambda T, x: wsum(T, T.pinverse(x)) + wsum(T, x.pinverse(), 1), [spread(3, 4)]),
    "matrix_power": (lambda T, x: wsum(T, T.matrix_power(x, 2)) + wsum(T, x.matrix_power(-1), 1), [invertible(3, 3)]),
}


@pytest.mark.filterwarnings("ignore:torch.(cholesky|qr) is deprecated")
@pytest.mark.parametrize("name", sorted(OLD))
def test_older_names_and_methods_match_torch(name):
    fn, arrays = OLD[name]
    check(fn, *arrays)


def test_svd_without_uv_gives_zero_factors_as_torch():
    torch = _torch()
    x = rand(3, 2)
    ours, theirs = tg.svd(tg.tensor(x), compute_uv=False), torch.svd(torch.tensor(x), compute_uv=False)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a.numpy(), b.numpy(), atol=1e-12)


def test_node_names_are_torchs():
    torch = _torch()
    for name, fn in (("inv", lambda T, x: T.linalg.inv(x)), ("det", lambda T, x: T.linalg.det(x)),
                     ("eigh", lambda T, x: T.linalg.eigh(x)[0]), ("svd", lambda T, x: T.linalg.svd(x)[1]),
                     ("qr", lambda T, x: T.linalg.qr(x)[1]), ("cholesky", lambda T, x: T.linalg.cholesky(x)),
                     ("slogdet", lambda T, x: T.linalg.slogdet(x)[1]), ("solve", lambda T, x: T.linalg.solve(x, x)),
                     ("logdet", lambda T, x: T.logdet(x))):
        a = np.eye(3) * 2 + 0.1
        ours = fn(tg, tg.tensor(a, requires_grad=True)).grad_fn.name()
        theirs = fn(torch, torch.tensor(a, requires_grad=True)).grad_fn.name()
        assert ours == theirs, name


@pytest.mark.parametrize("call,message", [
    (lambda T: T.linalg.inv(T.ones(2, 2, dtype=T.int64)), "Expected a floating point or complex tensor"),
    (lambda T: T.linalg.inv(T.ones(3)), "must have at least 2 dimensions"),
    (lambda T: T.linalg.det(T.ones(2, 3)), "must be batches of square matrices"),
    (lambda T: T.linalg.qr(T.ones(2, 3), mode="x"), "unrecognized mode"),
    (lambda T: T.linalg.eigh(T.eye(2), UPLO="X"), "UPLO"),
    (lambda T: T.linalg.solve(T.eye(2, dtype=T.float64), T.ones(2)), "Expected A and B to have the same dtype"),
])
def test_errors_match_torch(call, message):
    torch = _torch()
    for T in (tg, torch):
        with pytest.raises(RuntimeError, match=message):
            call(T)


def test_complete_qr_of_a_tall_matrix_is_not_differentiable():
    torch = _torch()
    for T in (tg, torch):
        x = T.tensor(rand(4, 3), requires_grad=True)
        q, r = T.linalg.qr(x, mode="complete")
        with pytest.raises(RuntimeError, match="not differentiable when mode='complete' and nrows > ncols"):
            (q.sum() + r.sum()).backward()


def test_repeated_eigenvalues_follow_torch():
    """Eigenvalues alone keep a gradient at repeated values; eigenvectors' is not finite."""
    torch = _torch()
    for T in (tg, torch):
        x = T.eye(3, dtype=T.float64, requires_grad=True)
        T.linalg.eigvalsh(x).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), np.eye(3))
        y = T.eye(3, dtype=T.float64, requires_grad=True)
        (T.linalg.eigh(y)[1] * T.tensor(rand(3, 3))).sum().backward()
        assert not np.isfinite(y.grad.numpy()).all()


def test_float32_stays_float32():
    x = tg.tensor(spread(3, 3).astype(np.float32), requires_grad=True)
    for out in (tg.linalg.inv(x), tg.linalg.svd(x)[0], tg.linalg.eigh(x + x.mT)[1], tg.linalg.qr(x)[0],
                tg.linalg.cholesky(x @ x.mT + 3 * tg.eye(3)), tg.linalg.matrix_norm(x, "nuc")):
        assert out.dtype == tg.float32
        out.sum().backward()
        assert x.grad.dtype == tg.float32
