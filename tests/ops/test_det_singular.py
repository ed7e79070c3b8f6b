"""The determinant's derivative at singular matrices: the cofactor matrix, which exists
there (det is a polynomial), in eager mode, on the tape and in AST mode, in reverse and
forward mode; the second derivative, written with the inverse, raises there instead of
returning a wrong value. Expected values are the cofactors written out by hand, or
computed from minors."""
import numpy as np
import pytest

import tracegrad as tg

rng = np.random.default_rng(2713)


def cofactors(a):
    """The cofactor matrix from its definition: signed determinants of the minors."""
    n = a.shape[-1]
    out = np.empty_like(a)
    for i in range(n):
        for j in range(n):
            minor = np.delete(np.delete(a, i, axis=0), j, axis=1)
            out[i, j] = (-1) ** (i + j) * (np.linalg.det(minor) if n > 1 else 1.0)
    return out


def rank_deficient(n, rank, complex_=False):
    def draw(*shape):
        return rng.standard_normal(shape) + (1j * rng.standard_normal(shape) if complex_ else 0)
    return draw(n, rank) @ draw(rank, n)


SINGULAR = {
    "rank 1 of 2": (np.array([[1.0, 2.0], [2.0, 4.0]]), np.array([[4.0, -2.0], [-2.0, 1.0]])),
    "3x3 arithmetic": (np.arange(1.0, 10.0).reshape(3, 3),
                       np.array([[-3.0, 6.0, -3.0], [6.0, -12.0, 6.0], [-3.0, 6.0, -3.0]])),
    "zero row": (np.diag([1.0, 0.0, 2.0]), np.diag([0.0, 2.0, 0.0])),
    "zero matrix": (np.zeros((3, 3)), np.zeros((3, 3))),
    "rank 1 of 3": (np.outer([1.0, 2.0, 3.0], [1.0, -1.0, 2.0]), np.zeros((3, 3))),
}


@pytest.mark.parametrize("name", sorted(SINGULAR))
def test_eager_gradient_is_the_cofactor_matrix(name):
    a, expected = SINGULAR[name]
    x = tg.tensor(a, requires_grad=True)
    tg.linalg.det(x).backward()
    np.testing.assert_allclose(x.grad.numpy(), expected, atol=1e-12)
    y = tg.tensor(a, requires_grad=True)
    y.det().backward()
    np.testing.assert_allclose(y.grad.numpy(), expected, atol=1e-12)


@pytest.mark.parametrize("n, rank", [(3, 2), (4, 3), (5, 4), (4, 2)])
def test_random_rank_deficient_matrices(n, rank):
    a = rank_deficient(n, rank)
    x = tg.tensor(a, requires_grad=True)
    tg.linalg.det(x).backward()
    scale = np.abs(a).max() ** (n - 1)
    np.testing.assert_allclose(x.grad.numpy(), cofactors(a), atol=1e-12 * scale)
    if rank < n - 1:  # every (n-1)-minor vanishes
        np.testing.assert_allclose(x.grad.numpy(), 0.0, atol=1e-12 * scale)


def test_stacked_and_complex():
    batch = np.stack([SINGULAR["rank 1 of 2"][0], np.array([[2.0, 1.0], [1.0, 3.0]])])
    x = tg.tensor(batch, requires_grad=True)
    (tg.linalg.det(x) * tg.tensor([1.0, -2.0])).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [cofactors(batch[0]), -2 * cofactors(batch[1])], atol=1e-12)
    z = rank_deficient(3, 2, complex_=True)
    assert abs(np.linalg.det(z)) < 1e-10
    (_, vjp) = tg.vjp(lambda m: np.linalg.det(m), z)
    # holomorphic det: the vjp of a cotangent 1 is the cofactor matrix itself
    np.testing.assert_allclose(vjp(np.ones((), complex))[0], cofactors(z), atol=1e-10)


def test_invertible_matrices_unchanged():
    a = rng.standard_normal((2, 4, 4)) + 3 * np.eye(4)
    x = tg.tensor(a, requires_grad=True)
    tg.linalg.det(x).sum().backward()
    expected = np.linalg.det(a)[:, None, None] * np.swapaxes(np.linalg.inv(a), -1, -2)
    np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-12, atol=1e-12)


def det_loss(a):
    return np.linalg.det(a) * 2.0


@pytest.mark.parametrize("mode", ["tape", "ast", "auto"])
@pytest.mark.parametrize("name", sorted(SINGULAR))
def test_staged_gradient(mode, name):
    a, expected = SINGULAR[name]
    np.testing.assert_allclose(tg.grad(det_loss, mode=mode)(a), 2 * expected, atol=1e-12)


@pytest.mark.parametrize("mode", ["tape", "ast"])
def test_forward_mode_at_a_singular_matrix(mode):
    a, cof = SINGULAR["3x3 arithmetic"]
    t = rng.standard_normal((3, 3))
    _, tangent = tg.jvp(det_loss, (a,), (t,), mode=mode)
    np.testing.assert_allclose(tangent, 2 * np.sum(cof * t), rtol=1e-10)
    eps = 1e-6
    np.testing.assert_allclose(tangent, (det_loss(a + eps * t) - det_loss(a - eps * t)) / (2 * eps), rtol=1e-6)


def test_eager_forward_ad_at_a_singular_matrix():
    import tracegrad.autograd.forward_ad as fwAD
    a, cof = SINGULAR["rank 1 of 2"]
    t = rng.standard_normal((2, 2))
    with fwAD.dual_level():
        d = tg.linalg.det(fwAD.make_dual(tg.tensor(a), tg.tensor(t)))
        np.testing.assert_allclose(fwAD.unpack_dual(d).tangent.numpy(), np.sum(cof * t), rtol=1e-12)


def test_second_derivative_refuses_at_a_singular_matrix():
    x = tg.tensor(SINGULAR["rank 1 of 2"][0], requires_grad=True)
    (g,) = tg.autograd.grad(tg.linalg.det(x), x, create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), SINGULAR["rank 1 of 2"][1], atol=1e-12)
    with pytest.raises(tg.linalg.LinAlgError):
        g.sum().backward()


def test_second_derivative_of_an_invertible_matrix():
    """d/dx_kl of cofactor_ij against central differences of the cofactor."""
    a = rng.standard_normal((3, 3)) + 3 * np.eye(3)
    x = tg.tensor(a, requires_grad=True)
    w = rng.standard_normal((3, 3))
    (g,) = tg.autograd.grad(tg.linalg.det(x), x, create_graph=True)
    (h,) = tg.autograd.grad((g * tg.tensor(w)).sum(), x)
    eps = 1e-6
    expected = np.empty((3, 3))
    for k in range(3):
        for m in range(3):
            e = np.zeros((3, 3))
            e[k, m] = eps
            expected[k, m] = np.sum(w * (cofactors(a + e) - cofactors(a - e))) / (2 * eps)
    np.testing.assert_allclose(h.numpy(), expected, rtol=1e-6, atol=1e-8)
