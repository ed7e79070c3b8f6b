"""``numpy.linalg`` through the staged front door, in tape and AST mode: gradients and
forward-mode tangents against central finite differences, second derivatives (the
Hessian against differences of the gradient), stacked operands, NumPy's named results,
and the refusals. Losses of eigen/singular vectors are sign-invariant (``v * v``,
``u_i v_i^T``), as any meaningful loss of them is."""
import numpy as np
import pytest

import tracegrad as tg

from .numeric import numeric

rng = np.random.default_rng(15)
MODES = ("tape", "ast")
# AST mode runs NumPy's own function forward, whose named result is a namedtuple: its
# fields are parts of the pytree (tracegrad/transform/tree.py), read by name or unpacked.


def _invertible(*shape):
    return rng.standard_normal(shape) + 3 * np.eye(shape[-1])


def _spd(*shape):
    b = rng.standard_normal(shape)
    return b @ np.swapaxes(b, -1, -2) + shape[-1] * np.eye(shape[-1])


def _spread(*shape):
    """Matrices with singular values 1, 2, ... (well separated)."""
    m, n = shape[-2:]
    k = min(m, n)
    u = np.linalg.qr(rng.standard_normal(shape[:-2] + (m, k)))[0]
    v = np.linalg.qr(rng.standard_normal(shape[:-2] + (n, k)))[0]
    return (u * np.arange(1.0, k + 1)) @ np.swapaxes(v, -1, -2)


W3 = rng.standard_normal((3, 3))
W23 = rng.standard_normal((2, 3, 3))
W43 = rng.standard_normal((4, 3))
W34 = rng.standard_normal((3, 4))
B32 = rng.standard_normal((3, 2))
V3 = rng.standard_normal(3)
A3 = _invertible(3, 3)
C45 = rng.standard_normal((4, 5))
D52 = rng.standard_normal((5, 2))


# -- the functions differentiated (module level: AST mode reads their source) ------------------

def f_inv(x):
    return np.sum(np.linalg.inv(x) * W3)


def f_inv_batched(x):
    return np.sum(np.linalg.inv(x) * W23)


def f_det(x):
    return np.linalg.det(x)


def f_det_batched(x):
    return np.sum(np.linalg.det(x) * np.array([1.0, -2.0]))


def f_slogdet(x):
    sign, logdet = np.linalg.slogdet(x)
    return logdet * sign


def f_slogdet_named(x):
    return np.sum(np.linalg.slogdet(x).logabsdet)


def f_solve(x):
    return np.sum(np.linalg.solve(x, B32) * np.array([[1.0, 2.0], [0.5, -1.0], [2.0, 0.0]]))


def f_solve_rhs(b):
    return np.sum(np.linalg.solve(A3, b) * V3)


def f_solve_batched(x):
    return np.sum(np.linalg.solve(x, W23) ** 2)


def f_cholesky(x):
    return np.sum(np.linalg.cholesky(x) * W3)


def f_cholesky_upper(x):
    return np.sum(np.linalg.cholesky(x, upper=True) * W23)


def f_eigh(x):
    w, v = np.linalg.eigh(x)
    return np.sum(w * V3) + np.sum(v * v * W3)


def f_eigh_upper_batched(x):
    w, v = np.linalg.eigh(x, "U")
    return np.sum(w ** 2) + np.sum(v * v * W23)


def f_eigvalsh(x):
    return np.sum(np.linalg.eigvalsh(x) * V3)


def f_svd_tall(x):
    u, s, vh = np.linalg.svd(x, full_matrices=False)
    return np.sum(s * V3) + np.sum(u * u * W43) + np.sum(vh * vh * W3)


def f_svd_wide_products(x):
    u, s, vh = np.linalg.svd(x, full_matrices=False)
    return np.sum((u * s) @ vh * W34) + np.sum(u[:, :1] * vh[:1, :].T[:3] * W3[:, :1])


def f_svd_full_square(x):
    u, s, vh = np.linalg.svd(x)
    return np.sum(u @ vh * W3) + np.sum(s)


def f_svdvals_batched(x):
    return np.sum(np.linalg.svd(x, compute_uv=False) * np.array([3.0, 2.0, 1.0]))


def f_pinv(x):
    return np.sum(np.linalg.pinv(x) * W34)


def f_qr(x):
    q, r = np.linalg.qr(x)
    return np.sum(q * W43) + np.sum(r * W3)


def f_qr_wide(x):
    q, r = np.linalg.qr(x)
    return np.sum(q * W3) + np.sum(r * W34)


def f_qr_r(x):
    return np.sum(np.linalg.qr(x, mode="r") * W3)


def f_matrix_power(x):
    return np.sum(np.linalg.matrix_power(x, 3) * W3) + np.sum(np.linalg.matrix_power(x, -2) * W3)


def f_multi_dot(x):
    return np.sum(np.linalg.multi_dot([V3, x, W34, C45, D52]) * np.array([1.0, -2.0]))


def f_norms(x):
    total = np.linalg.norm(x) + np.linalg.norm(x, "fro") + np.linalg.norm(x, "nuc")
    total = total + np.linalg.norm(x, 1) + np.linalg.norm(x, -1) + np.linalg.norm(x, 2) + np.linalg.norm(x, -2)
    return total + np.linalg.norm(x, np.inf) + np.linalg.norm(x, -np.inf)


def f_norm_axes(x):
    a = np.sum(np.linalg.norm(x, ord="nuc", axis=(0, 2)) * np.array([1.0, 2.0, 3.0]))
    b = np.sum(np.linalg.norm(x, ord=2, axis=(2, 0), keepdims=True) ** 2)
    c = np.sum(np.linalg.norm(x, ord=1, axis=(1, 0)))
    return a + b + c + np.sum(np.linalg.norm(x, ord=3, axis=1)) + np.sum(np.linalg.norm(x, axis=-1, ord=np.inf))


def f_vector_and_matrix_norm(x):
    return np.sum(np.linalg.vector_norm(x, ord=3, axis=(0, 1))) + np.sum(np.linalg.matrix_norm(x, ord=-2))


def f_eig(x):
    w, v = np.linalg.eig(x)
    return np.sum(np.real(w) * V3) + np.sum(np.abs(v) * W3)


CASES = {
    "inv": (f_inv, _invertible(3, 3)), "inv_batched": (f_inv_batched, _invertible(2, 3, 3)),
    "det": (f_det, _invertible(3, 3)), "det_batched": (f_det_batched, _invertible(2, 3, 3)),
    "slogdet": (f_slogdet, -_invertible(3, 3)), "slogdet_named": (f_slogdet_named, _invertible(2, 2, 2)),
    "solve": (f_solve, _invertible(3, 3)), "solve_rhs": (f_solve_rhs, rng.standard_normal(3)),
    "solve_batched": (f_solve_batched, _invertible(2, 3, 3)),
    "cholesky": (f_cholesky, _spd(3, 3)), "cholesky_upper": (f_cholesky_upper, _spd(2, 3, 3)),
    "eigh": (f_eigh, _spread(3, 3) + _spread(3, 3).T), "eigh_upper_batched": (f_eigh_upper_batched, _spd(2, 3, 3)),
    "eigvalsh": (f_eigvalsh, rng.standard_normal((3, 3))),
    "svd_tall": (f_svd_tall, _spread(4, 3)), "svd_wide": (f_svd_wide_products, _spread(3, 4)),
    "svd_full_square": (f_svd_full_square, _spread(3, 3)), "svdvals_batched": (f_svdvals_batched, _spread(2, 4, 3)),
    "pinv": (f_pinv, _spread(4, 3)), "qr": (f_qr, rng.standard_normal((4, 3))),
    "qr_wide": (f_qr_wide, rng.standard_normal((3, 4))), "qr_r": (f_qr_r, rng.standard_normal((5, 3))),
    "matrix_power": (f_matrix_power, _invertible(3, 3) / 2), "multi_dot": (f_multi_dot, rng.standard_normal((3, 3))),
    "norms": (f_norms, _spread(3, 4) + 0.1 * rng.standard_normal((3, 4))),
    "norm_axes": (f_norm_axes, rng.standard_normal((4, 3, 5))),
    "vector_and_matrix_norm": (f_vector_and_matrix_norm, rng.standard_normal((2, 3, 4))),
    "eig": (f_eig, _invertible(3, 3) @ np.diag([1.0, 2.0, 4.0]) @ np.linalg.inv(_invertible(3, 3))),
}
SECOND_ORDER = ["inv", "det_batched", "slogdet", "solve", "solve_rhs", "cholesky", "eigh", "eigvalsh", "svd_tall",
                "svdvals_batched", "pinv", "qr", "qr_wide", "matrix_power", "norms", "eig"]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(CASES))
def test_gradient_matches_finite_differences(name, mode):
    f, x = CASES[name]
    got = tg.grad(f, mode=mode)(x)
    np.testing.assert_allclose(got, numeric(f, x), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(CASES))
def test_jvp_matches_finite_differences(name, mode):
    f, x = CASES[name]
    v = np.random.default_rng(1).standard_normal(x.shape)
    value, tangent = tg.jvp(f, (x,), (v,), mode=mode)
    eps = 1e-6
    np.testing.assert_allclose(value, f(x), rtol=1e-10)
    np.testing.assert_allclose(tangent, (f(x + eps * v) - f(x - eps * v)) / (2 * eps), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", SECOND_ORDER)
def test_second_derivatives(name, mode):
    """The Hessian applied to v against central differences of the gradient along v."""
    f, x = CASES[name]
    v = np.random.default_rng(2).standard_normal(x.shape)
    hess = np.asarray(tg.hessian(f, mode=mode)(x)).reshape(x.size, x.size)
    grad = tg.grad(f, mode=mode)
    eps = 1e-5
    expected = (grad(x + eps * v) - grad(x - eps * v)) / (2 * eps)
    np.testing.assert_allclose(hess @ v.ravel(), expected.ravel(), rtol=1e-4, atol=1e-5)


# -- results, shapes, conventions ---------------------------------------------------------------

def named_fields(x):
    res = np.linalg.eigh(x)
    svd = np.linalg.svd(x)
    qr = np.linalg.qr(x)
    return np.sum(res.eigenvalues) + np.sum(svd.S) + np.sum(qr.R * W3) + np.linalg.slogdet(x).logabsdet


@pytest.mark.parametrize("mode", MODES)
def test_named_results_read_by_field(mode):
    x = _spd(3, 3)
    np.testing.assert_allclose(tg.grad(named_fields, mode=mode)(x), numeric(named_fields, x), rtol=1e-5, atol=1e-6)


def eigvalsh_sum(x):
    return np.sum(np.linalg.eigvalsh(x) * np.array([1.0, 2.0, 3.0]))


def eigh_vectors(x):
    _, v = np.linalg.eigh(x)
    return np.sum(v[:, :2] @ v[:, :2].T * W3)  # the span of two of three equal eigenvalues' vectors


def nuclear(x):
    return np.linalg.norm(x, "nuc")


@pytest.mark.parametrize("mode", MODES)
def test_repeated_eigenvalues(mode):
    """At the identity the eigenvalues' gradient is finite (the projection on the diagonal
    the kernel reads); the eigenvectors' is undefined: nan, never a silent number."""
    x = np.eye(3)
    v = np.linalg.eigh(x)[1]
    sym = v @ np.diag([1.0, 2.0, 3.0]) @ v.T  # the gradient for symmetric perturbations
    np.testing.assert_allclose(tg.grad(eigvalsh_sum, mode=mode)(x), np.tril(2 * sym) - np.diag(np.diag(sym)))
    assert np.isnan(tg.grad(eigh_vectors, mode=mode)(x)).any()
    np.testing.assert_allclose(tg.grad(nuclear, mode=mode)(np.eye(3)), np.eye(3), atol=1e-12)


def svd_full_wide(x):
    return np.linalg.svd(x)


def test_svd_full_matrices_shapes_and_values():
    x = rng.standard_normal((2, 3, 5))
    s = np.linalg.svd(x)[1]
    ours = tg.jvp(svd_full_wide, (x,), (np.zeros_like(x),), mode="tape")[0]
    assert [np.shape(o) for o in ours] == [(2, 3, 3), (2, 3), (2, 5, 5)]
    np.testing.assert_allclose(ours[1], s)


def pinv_low_rank(x):
    return np.sum(np.linalg.pinv(x.T @ x) * np.outer(np.arange(5.0), np.ones(5)))


@pytest.mark.parametrize("mode", MODES)
def test_pinv_of_a_rank_deficient_matrix(mode):
    """pinv is differentiable along matrices of constant rank (here 3 of 5)."""
    x = rng.standard_normal((3, 5))
    v = rng.standard_normal((3, 5))
    eps = 1e-6
    got = np.sum(tg.grad(pinv_low_rank, mode=mode)(x) * v)
    np.testing.assert_allclose(got, (pinv_low_rank(x + eps * v) - pinv_low_rank(x - eps * v)) / (2 * eps), rtol=1e-5)


def svd_hermitian(x):
    return np.sum(np.linalg.svd(x, hermitian=True)[1])


def qr_raw(x):
    return np.sum(np.linalg.qr(x, mode="raw")[0])


@pytest.mark.parametrize("f", [svd_hermitian, qr_raw])
def test_refused_options_name_themselves(f):
    with pytest.raises(tg.TracerError, match="hermitian|raw"):
        tg.grad(f, mode="tape")(np.eye(3))


def cholesky_of(x):
    return np.sum(np.linalg.cholesky(x))


def test_errors_are_numpys():
    with pytest.raises(np.linalg.LinAlgError):
        tg.grad(cholesky_of, mode="tape")(-np.eye(3))
    with pytest.raises(np.linalg.LinAlgError, match="square"):
        tg.grad(f_det, mode="tape")(np.ones((2, 3)))
