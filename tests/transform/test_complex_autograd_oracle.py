"""The staged paths' complex convention against HIPS autograd (an oracle, as torch is for
the eager API): gradients of real functions of complex inputs, ``holomorphic=True``
against ``holomorphic_grad``, vjps with complex cotangents and holomorphic Jacobians, in
tape and AST mode. Each function is written once over a NumPy module, so autograd runs it
on ``autograd.numpy`` and tracegrad on plain NumPy."""
import numpy
import pytest

import tracegrad as tg

pytestmark = pytest.mark.autograd
MODES = ["tape", "ast"]


def functions(np):
    def abs2(z):
        return np.sum(np.abs(z) ** 2)

    def real_exp(z):
        return np.sum(np.real(np.exp(z) * z))

    def angles(z):
        return np.sum(np.angle(z) * np.abs(z))

    def parts(z):
        return np.sum(np.imag(z) * np.real(z) + np.real(np.conj(z) * np.sin(z)))

    def chain(z):
        w = np.tanh(z) / (z + 2.0)
        return np.sum(np.abs(w) + np.real(w * np.conj(z)) ** 2)

    def mixed(x):  # real in, complex inside, real out
        return np.sum(np.abs(np.exp(1j * x) * (x + 0.5j)) ** 2)
    return [abs2, real_exp, angles, parts, chain, mixed]


def holomorphic(np):
    def poly_exp(z):
        return np.sum(np.exp(z) * z ** 3 - 1j * z)

    def trig(z):
        return np.sum(np.sin(z) / (np.cos(z) + 2.0))
    return [poly_exp, trig]


Z = numpy.array([0.3 + 0.7j, -1.2 + 0.1j, 0.5 - 0.4j])
X = numpy.array([0.3, -1.2, 2.0])


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("k", range(6))
def test_gradients_match_autograd(k, mode):
    import autograd
    import autograd.numpy as anp
    theirs = functions(anp)[k]
    mine = functions(numpy)[k]
    z = X if mine.__name__ == "mixed" else Z
    numpy.testing.assert_allclose(tg.grad(mine, mode=mode)(z), autograd.grad(theirs)(z), rtol=1e-12)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("k", range(2))
def test_holomorphic_matches_holomorphic_grad(k, mode):
    import autograd
    import autograd.numpy as anp
    got = tg.grad(holomorphic(numpy)[k], mode=mode, holomorphic=True)(Z[:1])
    numpy.testing.assert_allclose(got, autograd.holomorphic_grad(holomorphic(anp)[k])(Z[:1]), rtol=1e-12)


@pytest.mark.parametrize("mode", MODES)
def test_vjp_with_a_complex_cotangent_matches_autograd(mode):
    import autograd
    import autograd.numpy as anp

    def make(np):
        def f(z):
            return np.exp(z) * np.conj(z) + np.abs(z)
        return f
    ct = numpy.array([1 - 2j, 0.5 + 0.5j, -1j])
    mine = tg.vjp(make(numpy), Z, mode=mode)[1](ct)[0]
    vjp, _ = autograd.make_vjp(make(anp))(Z)
    numpy.testing.assert_allclose(mine, vjp(ct), rtol=1e-12)


@pytest.mark.parametrize("mode", MODES)
def test_holomorphic_jacobian_matches_autograd(mode):
    import autograd
    import autograd.numpy as anp

    def make(np):
        def f(z):
            return np.sin(z) * z[::-1]
        return f
    # (autograd's own jacobian counts a complex output as two reals: its rows are built
    # from holomorphic_grad of each output instead)
    rows = [autograd.holomorphic_grad(lambda z, i=i: make(anp)(z)[i])(Z) for i in range(3)]
    numpy.testing.assert_allclose(tg.jacobian(make(numpy), mode=mode, holomorphic=True)(Z),
                                  numpy.stack(rows), rtol=1e-12)
