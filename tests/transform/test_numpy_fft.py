"""``numpy.fft`` through the staged front door, in tape and AST mode: gradients of real
losses against finite differences (every transform, norm, padding and truncation, odd and
even lengths), second derivatives, forward mode, the bilinear pairing of complex
cotangents, and the refusals."""
import numpy as np
import pytest

import tracegrad as tg

from .numeric import numeric

MODES = ("tape", "ast")
rng = np.random.default_rng(1515)
W = rng.standard_normal((3, 4, 6))  # fixed weights the losses read


# -- losses (module level, so AST mode can read their source) ---------------------------------

def power(x):
    return np.sum(np.abs(np.fft.fft(x)) ** 2)


def real_of_ifft(x):
    return np.sum(np.real(np.fft.ifft(x)) * x)


def rfft_roundtrip_padded(x):
    return np.sum(np.fft.irfft(np.fft.rfft(x, n=8), n=7) * np.cos(np.arange(7)))


def fft2_truncated(x):
    return np.sum(np.abs(np.fft.fft2(x, s=(2, 3), norm="ortho")))


def rfftn_imag(x):
    return np.sum(np.imag(np.fft.rfftn(x, axes=(0, 2))) ** 2)


def irfftn_resized(x):
    return np.sum(np.fft.irfftn(np.fft.rfftn(x), s=(2, 5, 7), axes=(0, 1, 2)) ** 2)


def hermitian_pair(x):
    return np.sum(np.fft.hfft(np.fft.ihfft(x, n=5), n=6) * np.sin(np.arange(6)))


def shifted(x):
    return np.sum(np.fft.fftshift(x) * W[:3, :4, :5]) + np.sum(np.fft.ifftshift(x, axes=1) ** 2)


def fftn_of_complex(x):
    z = np.fft.fftn(x * (1 + 2j), axes=(1, 2), norm="forward")
    return np.sum(np.real(np.fft.ifftn(z * z, s=(5, 4), axes=(2, 1))))


def every_norm(x):
    total = 0.0
    for norm in ("backward", "ortho", "forward"):
        total = total + np.sum(np.abs(np.fft.ifft(np.fft.rfft(x, norm=norm), norm=norm)))
    return total


LOSSES = [(power, (3, 5)), (real_of_ifft, (3, 4)), (rfft_roundtrip_padded, (2, 5)),
          (fft2_truncated, (2, 4, 5)), (rfftn_imag, (3, 4, 5)), (irfftn_resized, (3, 4, 6)),
          (hermitian_pair, (2, 6)), (shifted, (3, 4, 5)), (fftn_of_complex, (2, 3, 4)),
          (every_norm, (3, 5))]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("f,shape", LOSSES, ids=[f.__name__ for f, _ in LOSSES])
def test_gradient_matches_finite_differences(f, shape, mode):
    x = rng.standard_normal(shape)
    np.testing.assert_allclose(tg.grad(f, mode=mode)(x), numeric(f, x), rtol=1e-6, atol=1e-7)


def test_parseval_gives_the_closed_form_gradient():
    x = rng.standard_normal((3, 5))
    np.testing.assert_allclose(tg.grad(power, mode="tape")(x), 2 * 5 * x, rtol=1e-12)


def smooth_loss(x):
    return np.sum(np.abs(np.fft.rfft(np.sin(x), n=6, norm="ortho")) ** 2 * np.arange(4))


@pytest.mark.parametrize("mode", MODES)
def test_second_order_matches_finite_differences(mode):
    x = rng.standard_normal(5)
    hess = tg.hessian(smooth_loss, mode=mode)(x)
    first = tg.grad(smooth_loss, mode=mode)
    expected = np.stack([numeric(lambda y, i=i: first(y)[i], x) for i in range(5)])
    np.testing.assert_allclose(hess, expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("mode", MODES)
def test_grad_of_grad(mode):
    v = rng.standard_normal(5)

    def directional(x):
        return np.sum(tg.grad(smooth_loss, mode=mode)(x) * v)
    x = rng.standard_normal(5)
    np.testing.assert_allclose(tg.grad(directional, mode="tape")(x), numeric(directional, x),
                               rtol=1e-5, atol=1e-6)


# -- forward mode and complex pairings ---------------------------------------------------------

def fft_axis0(x):
    return np.fft.fft(x, n=5, axis=0, norm="ortho")


def irfft2_of(x):
    return np.fft.irfft2(x, s=(3, 6))


def ihfft_of(x):
    return np.fft.ihfft(x, n=4)


def rfftn_of(x):
    return np.fft.rfftn(x, s=(3, 5), axes=(1, 0))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("f,complex_in", [(fft_axis0, True), (fft_axis0, False), (irfft2_of, True),
                                          (ihfft_of, False), (rfftn_of, False)])
def test_jvp_is_the_transform_of_the_tangent(f, complex_in, mode):
    x = rng.standard_normal((4, 3)) + (1j * rng.standard_normal((4, 3)) if complex_in else 0)
    v = rng.standard_normal((4, 3)) + (1j * rng.standard_normal((4, 3)) if complex_in else 0)
    value, tangent = tg.jvp(f, (x,), (v,), mode=mode)
    np.testing.assert_allclose(value, f(x), rtol=1e-12)
    np.testing.assert_allclose(tangent, f(v), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("f,complex_in", [(fft_axis0, True), (fft_axis0, False), (irfft2_of, True),
                                          (ihfft_of, False), (rfftn_of, False)])
def test_vjp_pairs_bilinearly_with_the_jvp(f, complex_in):
    """Re(sum(vjp(ct) * v)) == Re(sum(ct * jvp(v))): JAX's (and autograd's) convention."""
    def draw(shape, c):
        return rng.standard_normal(shape) + (1j * rng.standard_normal(shape) if c else 0)
    x = draw((4, 3), complex_in)
    out, pull = tg.vjp(f, x)
    ct = draw(out.shape, np.iscomplexobj(out))
    (back,) = pull(ct)
    assert back.shape == x.shape and np.iscomplexobj(back) == complex_in
    v = draw(x.shape, complex_in)
    np.testing.assert_allclose(np.real(np.sum(back * v)), np.real(np.sum(ct * f(v))), rtol=1e-10)


# -- refusals ---------------------------------------------------------------------------------

def repeated_axes(x):
    return np.sum(np.abs(np.fft.fftn(x, axes=(0, 0))))


def out_argument(x):
    return np.sum(np.abs(np.fft.fft(x, out=np.empty(x.shape, complex))))


def rfft_of_complex(x):
    return np.sum(np.abs(np.fft.rfft(x * 1j)))


def bad_norm(x):
    return np.sum(np.abs(np.fft.fft(x, norm="unitary")))


@pytest.mark.parametrize("f,error,match", [
    (repeated_axes, tg.TracerError, r"numpy.fft.fftn with a repeated axis \(0, 0\)"),
    (out_argument, tg.TracerError, r"numpy.fft.fft\(..., out=\)"),
    (rfft_of_complex, TypeError, "numpy.fft.rfft takes a real input"),
    (bad_norm, ValueError, "Invalid norm value unitary"),
])
def test_refusals_name_the_construct(f, error, match):
    with pytest.raises(error, match=match):
        tg.grad(f, mode="tape")(rng.standard_normal((3, 4)))
