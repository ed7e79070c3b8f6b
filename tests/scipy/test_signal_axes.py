"""tracegrad.scipy.signal.convolve's keyword-only ``axes``/``dot_axes`` (HIPS autograd's
generalised convolution: convolve some pairs of axes, sum over others, outer product over
the rest): values against SciPy's convolve of slices and NumPy's tensordot, against HIPS
autograd itself where it is installed, gradients of both inputs in tape and AST mode
against finite differences, second order, bad axes refused, and SciPy's own signature
untouched."""
import numpy as np
import pytest

from tracegrad.scipy import signal as tgsig

from .helpers import MODES, check_grads, check_second_order, loss_of

pytestmark = pytest.mark.scipy

_rng = np.random.default_rng(4040)


def R(*shape):
    return _rng.standard_normal(shape)


def ss():
    import scipy.signal
    return scipy.signal


@pytest.mark.parametrize("mode", ["full", "valid", "same"])
def test_values_against_scipy_slices_and_tensordot(mode):
    a35, a34, a342 = R(3, 5), R(3, 4), R(3, 4, 2)
    a2543, a24232 = R(2, 5, 4, 3), R(2, 4, 2, 3, 2)
    out = tgsig.convolve(a35, a34, axes=([1], [0]), mode=mode)
    assert out.shape[:2] == (3, 4)
    for i in range(3):
        for j in range(4):
            np.testing.assert_allclose(out[i, j], ss().convolve(a35[i], a34[:, j], mode), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(tgsig.convolve(a35, a34, axes=([], []), dot_axes=([0], [0]), mode=mode),
                               np.tensordot(a35, a34, axes=([0], [0])), rtol=1e-10)
    np.testing.assert_allclose(tgsig.convolve(a35, a342, axes=([1], [2]), dot_axes=([0], [0]), mode=mode)[2],
                               sum(ss().convolve(a35[i], a342[i, 2], mode) for i in range(3)), rtol=1e-10)
    want = sum(ss().convolve(a2543[i, :, :, j], a24232[i, 2, :, j, :], mode) for i in range(2) for j in range(3))
    got = tgsig.convolve(a2543, a24232, axes=([1, 2], [2, 4]), dot_axes=([0, 3], [0, 3]), mode=mode)
    np.testing.assert_allclose(got[2], want, rtol=1e-10, atol=1e-12)
    a, b = R(4, 3), R(3, 2)  # every axis convolved: SciPy's own convolve, either order
    for x, y in ((a, b), (b, a)):
        np.testing.assert_allclose(tgsig.convolve(x, y, axes=([0, 1], [0, 1]), mode=mode),
                                   ss().convolve(x, y, mode), rtol=1e-10)
        np.testing.assert_allclose(tgsig.convolve(x, y, mode=mode, dot_axes=([], [])),
                                   ss().convolve(x, y, mode), rtol=1e-10)


CASES = [((4, 3), (3, 2), ([0], [0]), None), ((4, 3), (3, 2), ([0], [1]), None),
         ((4, 3), (3, 2), ([1, 0], [1, 0]), None), ((3, 3, 2), (3, 2, 3), ([1], [1]), ([0], [2])),
         ((3, 3, 2), (3, 2, 3), ([1], [1]), ([0], [0])), ((2, 5), (3, 7), ([1], [1]), None)]
IDS = [f"{a}*{b}-{ax}-{dax}" for a, b, ax, dax in CASES]


def _params(axes, dot_axes, mode):
    return dict(axes=axes, mode=mode) if dot_axes is None else dict(axes=axes, dot_axes=dot_axes, mode=mode)


@pytest.mark.parametrize("mode", ["full", "valid", "same"])
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_values_against_hips_autograd(case, mode):
    signal = pytest.importorskip("autograd.scipy.signal")
    a, b = R(*case[0]), R(*case[1])
    want = signal.convolve(a, b, **_params(case[2], case[3], mode))
    got = tgsig.convolve(a, b, **_params(case[2], case[3], mode))
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("conv_mode", ["full", "valid", "same"])
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_gradients_match_finite_differences(case, conv_mode, mode):
    a, b = R(*case[0]), R(*case[1])
    params = _params(case[2], case[3], conv_mode)
    w = R(*tgsig.convolve(a, b, **params).shape)
    check_grads(loss_of(tgsig.convolve, 2, w, **params), [a, b], (0, 1), mode)


@pytest.mark.parametrize("mode", MODES)
def test_second_order(mode):
    a, b = R(3, 3, 2), R(3, 2, 3)
    params = _params(([1], [1]), ([0], [2]), "same")
    loss = loss_of(tgsig.convolve, 2, R(*tgsig.convolve(a, b, **params).shape), **params)
    check_second_order(loss, [a, b], 0, mode, j=1)


def test_bad_axes_are_refused():
    a, b = R(4, 3), R(3, 2)
    with pytest.raises(ValueError, match="as many distinct axes"):
        tgsig.convolve(a, b, axes=([0, 1], [0]))
    with pytest.raises(ValueError, match="as many distinct axes"):
        tgsig.convolve(a, b, axes=([2], [0]))
    with pytest.raises(ValueError, match="both axes and dot_axes"):
        tgsig.convolve(a, b, axes=([0], [0]), dot_axes=([0], [1]))
    with pytest.raises(ValueError, match="different lengths"):
        tgsig.convolve(a, b, axes=([1], [1]), dot_axes=([0], [0]))
    with pytest.raises(ValueError, match="at least as large"):
        tgsig.convolve(R(2, 5), R(3, 4), axes=([0, 1], [0, 1]), mode="valid")
    with pytest.raises(ValueError, match="pair of lists"):
        tgsig.convolve(a, b, axes=[0])


def test_scipys_positional_signature_is_unchanged():
    a, b = R(6), R(3)
    np.testing.assert_allclose(tgsig.convolve(a, b, "valid", "direct"), ss().convolve(a, b, "valid", "direct"))
    with pytest.raises(TypeError):
        tgsig.convolve(a, b, "valid", "direct", ([0], [0]))  # (axes is keyword-only)
