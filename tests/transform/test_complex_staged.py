"""Complex numbers on the staged paths (tape and AST): JAX's and HIPS autograd's gradient
convention -- for a real f of z = x + iy, grad(f)(z) = df/dx - i df/dy, the conjugate of
PyTorch's -- checked against hand formulas and finite differences, in every mode, with
``mode="auto"`` equal to ``mode="tape"``; ``holomorphic=True``; vjps with complex
cotangents; and refusals of what no rule covers."""
import numpy as np
import pytest

import tracegrad as tg

MODES = ["tape", "ast", "auto"]
Z = np.array([1 + 2j, -0.5 + 0.25j, 0.3 - 1.1j])


def _fd_grad(f, z, eps=1e-6):
    """df/dx - i df/dy by central differences, per element."""
    out = np.zeros_like(z)
    for k in range(z.size):
        e = np.zeros_like(z)
        e.flat[k] = eps
        dx = (f(z + e) - f(z - e)) / (2 * eps)
        dy = (f(z + 1j * e) - f(z - 1j * e)) / (2 * eps)
        out.flat[k] = dx - 1j * dy
    return out


def abs2(z):
    return np.sum(np.abs(z) ** 2)


def real_exp(z):
    return np.sum(np.real(np.exp(z) * z))


def imag_part(z):
    return np.sum(z.imag * z.real)


def angles(z):
    return np.sum(np.angle(z) * np.abs(z))


def conj_mix(z):
    return np.sum(np.real(np.conj(z) * np.sin(z)))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("f", [abs2, real_exp, imag_part, angles, conj_mix])
def test_gradients_follow_jax_convention(f, mode):
    got = tg.grad(f, mode=mode)(Z)
    assert got.dtype == np.complex128
    np.testing.assert_allclose(got, _fd_grad(f, Z), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(got, tg.grad(f, mode="tape")(Z), rtol=1e-12)


def test_hand_formulas():
    np.testing.assert_allclose(tg.grad(abs2, mode="tape")(Z), 2 * np.conj(Z))     # 2 conj(z)
    np.testing.assert_allclose(tg.grad(real_exp, mode="tape")(Z), np.exp(Z) * (Z + 1))  # f'(z)


def real_through_complex(x):
    """Real in, real out, complex inside: sum |x e^{ix}| = sum |x|."""
    return np.sum(np.abs(np.exp(1j * x) * x))


@pytest.mark.parametrize("mode", MODES)
def test_real_function_through_complex_intermediates(mode):
    """The silent wrong answer this file guards against: before complex rules, the tape
    gave [-1.33, 0.86] here instead of sign(x)."""
    x = np.array([1.0, -2.0, 0.5])
    g = tg.grad(real_through_complex, mode=mode)(x)
    assert g.dtype == np.float64
    np.testing.assert_allclose(g, np.sign(x), rtol=1e-12)


def holo(z):
    return np.sum(np.exp(z) * z)


@pytest.mark.parametrize("mode", MODES)
def test_holomorphic(mode):
    z = np.array([0.3 + 0.2j])
    np.testing.assert_allclose(tg.grad(holo, mode=mode, holomorphic=True)(z), np.exp(z) * (z + 1))
    value, g = tg.value_and_grad(holo, mode=mode, holomorphic=True)(z)
    np.testing.assert_allclose(value, holo(z))
    with pytest.raises(TypeError, match="holomorphic=True"):
        tg.grad(holo, mode=mode)(z)                                   # complex output, not declared
    with pytest.raises(TypeError, match="holomorphic=True requires inputs with complex dtype"):
        tg.grad(holo, mode=mode, holomorphic=True)(np.array([0.3]))
    with pytest.raises(TypeError, match="holomorphic=True requires outputs with complex dtype"):
        tg.grad(abs2, mode=mode, holomorphic=True)(z)


@pytest.mark.parametrize("mode", MODES)
def test_holomorphic_jacobian(mode):
    z = np.array([0.3 + 0.2j, -1 + 0.5j])
    J = tg.jacobian(sines, mode=mode, holomorphic=True)(z)
    np.testing.assert_allclose(J, np.diag(np.cos(z)))
    with pytest.raises(TypeError, match="holomorphic=True"):
        tg.jacrev(sines, mode=mode)(z)


def sines(z):
    return np.sin(z)


def rotate(z, w):
    return z * w, np.conj(z)


@pytest.mark.parametrize("mode", MODES)
def test_vjp_with_complex_cotangents_pairs_bilinearly(mode):
    """JAX's vjp is the transpose of the jvp under Re(sum(a * b)) (no conjugate)."""
    rng = np.random.default_rng(0)
    z, w = Z, Z[::-1] * 0.5
    cts = tuple(rng.normal(size=3) + 1j * rng.normal(size=3) for _ in range(2))
    tz, tw = (rng.normal(size=3) + 1j * rng.normal(size=3) for _ in range(2))
    _, pull = tg.vjp(rotate, z, w, mode=mode)
    gz, gw = pull(cts)
    _, (t1, t2) = tg.jvp(rotate, (z, w), (tz, tw), mode=mode)
    lhs = np.real(np.sum(gz * tz) + np.sum(gw * tw))
    rhs = np.real(np.sum(cts[0] * t1) + np.sum(cts[1] * t2))
    assert abs(lhs - rhs) < 1e-12


def variance(z):
    return np.var(z) + np.std(z[:2])


def logistic_gate(z):
    return np.sum(np.abs(1 / (1 + np.exp(-z)) * np.maximum(np.real(z), 0)))


def sorted_parts(z):
    return np.sum(np.abs(np.cumprod(z)) * np.real(np.tanh(z)) + np.real(np.log1p(np.tanh(z)) ** 2))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("f", [variance, sorted_parts])
def test_more_complex_rules(f, mode):
    np.testing.assert_allclose(tg.grad(f, mode=mode)(Z), _fd_grad(f, Z), rtol=1e-6, atol=1e-8)


def largest(z):
    return np.sum(np.abs(z) * np.abs(np.max(z)))


@pytest.mark.parametrize("mode", MODES)
def test_max_of_complex_values_selects(mode):
    """NumPy orders complex values by real part, then imaginary part; max selects one
    entry, whose cotangent it passes on (in any convention)."""
    np.testing.assert_allclose(tg.grad(largest, mode=mode)(Z), _fd_grad(largest, Z), rtol=1e-6, atol=1e-8)


def soft_maximum(z):
    return np.abs(tg.scipy.special.logsumexp(z))


@pytest.mark.parametrize("mode", MODES)
def test_rules_without_complex_support_refuse_by_name(mode):
    """A rule not written for complex values refuses them by name (here logsumexp, whose
    stable kernel compares values); never a real-valued formula."""
    with pytest.raises(tg.TracerError, match="rule for 'logsumexp' is not written for complex values"):
        tg.grad(soft_maximum, mode=mode)(Z)


@pytest.mark.parametrize("mode", MODES)
def test_real_parts_feed_real_only_rules(mode):
    np.testing.assert_allclose(tg.grad(logistic_gate, mode=mode)(Z), _fd_grad(logistic_gate, Z),
                               rtol=1e-6, atol=1e-8)
