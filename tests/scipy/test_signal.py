"""tracegrad.scipy.signal against scipy.signal: convolve and correlate values for n-d
arrays in every mode and method (with SciPy's swap of operands in "valid" mode, complex
values, 0-d and empty operands refused), gradients in both inputs through tracegrad.grad in tape
and AST mode against finite differences, second order (the mixed derivative: convolution
is bilinear), and eager Tensors."""
import numpy as np
import pytest

import tracegrad as tg
from tracegrad.scipy import signal as tgsig

from .helpers import MODES, check_grads, check_second_order, loss_of

pytestmark = pytest.mark.scipy

_rng = np.random.default_rng(3030)


def R(*shape):
    return _rng.standard_normal(shape)


def C(*shape):
    return R(*shape) + 1j * R(*shape)


def ss():
    import scipy.signal
    return scipy.signal


SHAPES = [((6,), (3,)), ((3,), (5,)), ((4, 3), (2, 2)), ((5, 4), (3, 2)), ((6, 7), (4, 1)), ((2, 3), (4, 5)),
          ((3, 4, 2), (2, 2, 2)), ((2, 2, 3, 2), (1, 2, 2, 2))]
MODES_ = ["full", "valid", "same"]


@pytest.mark.parametrize("method", ["auto", "direct", "fft"])
@pytest.mark.parametrize("mode", MODES_)
@pytest.mark.parametrize("shapes", SHAPES, ids=[f"{a}*{b}" for a, b in SHAPES])
@pytest.mark.parametrize("fn", ["convolve", "correlate"])
def test_values_match_scipy(fn, shapes, mode, method):
    for draw in (R, C):
        a, b = draw(*shapes[0]), draw(*shapes[1])
        ours, theirs = getattr(tgsig, fn)(a, b, mode, method), getattr(ss(), fn)(a, b, mode, method)
        assert np.shape(ours) == np.shape(theirs)
        np.testing.assert_allclose(ours, theirs, rtol=1e-9, atol=1e-12)


def test_degenerate_operands_as_scipy():
    assert tgsig.convolve(np.array(2.0), np.array(3.0)) == ss().convolve(np.array(2.0), np.array(3.0))
    with pytest.raises(ValueError, match="empty"):
        tgsig.convolve(np.ones((0, 3)), np.ones((2, 2)))
    np.testing.assert_allclose(tgsig.convolve([1.0, 2.0, 3.0], [0.0, 1.0, 0.5]),
                               ss().convolve([1.0, 2.0, 3.0], [0.0, 1.0, 0.5]))
    for args in ((R(3), R(2, 2)), (R(2, 4), R(3, 2))):
        with pytest.raises(ValueError):
            ss().convolve(*args, mode="valid")
        with pytest.raises(ValueError):
            tgsig.convolve(*args, mode="valid")
    with pytest.raises(ValueError, match="mode"):
        tgsig.convolve(R(3), R(2), mode="circular")


GRAD_CASES = [(fn, shapes, mode) for fn in ("convolve", "correlate") for shapes in SHAPES[:7] for mode in MODES_
              if not (mode == "valid" and shapes == ((2, 3), (4, 5)))]
GRAD_IDS = [f"{fn}-{a}*{b}-{mode}" for fn, (a, b), mode in GRAD_CASES]


def _loss(fn, shapes, mode, method="auto"):
    a, b = R(*shapes[0]), R(*shapes[1])
    out = getattr(ss(), fn)(a, b, mode)
    return loss_of(getattr(tgsig, fn), 2, np.random.default_rng(9).standard_normal(out.shape), mode=mode,
                   method=method), (a, b)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", GRAD_CASES, ids=GRAD_IDS)
def test_gradients_match_finite_differences(case, mode):
    loss, args = _loss(*case)
    check_grads(loss, args, (0, 1), mode)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", GRAD_CASES[::4], ids=GRAD_IDS[::4])
def test_second_order(case, mode):
    loss, args = _loss(*case)
    check_second_order(loss, args, 0, mode, j=1)  # (bilinear: the mixed derivative is what is left)
    check_second_order(loss, args, 1, mode)


@pytest.mark.parametrize("mode", MODES)
def test_fft_method_gradients(mode):
    loss, args = _loss("convolve", ((7, 5), (3, 4)), "same", method="fft")
    check_grads(loss, args, (0, 1), mode)


@pytest.mark.parametrize("mode", MODES)
def test_complex_operands(mode):
    """JAX's convention: for a real loss of complex operands, tracegrad.grad answers the
    conjugate of dL/dz (``holomorphic=False``): checked against finite differences along
    the real and imaginary directions."""
    a, b, w = C(5), C(3), C(7)

    def loss(re, im):
        return np.sum(np.real(w * tgsig.convolve(re + 1j * im, b)))
    check_grads(loss, (a.real, a.imag), (0, 1), mode)


def test_eager_tensors():
    a, b = tg.tensor(R(4, 3), requires_grad=True), tg.tensor(R(2, 2), requires_grad=True)
    (tgsig.convolve(a, b, "same") ** 2).sum().backward()
    want = tg.grad(lambda x, y: np.sum(tgsig.convolve(x, y, "same") ** 2), argnums=(0, 1), mode="tape")(
        a.detach().numpy(), b.detach().numpy())
    for t, w in zip((a, b), want):
        np.testing.assert_allclose(t.grad.numpy(), w, rtol=1e-10)
