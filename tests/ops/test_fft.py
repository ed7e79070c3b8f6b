"""``tracegrad.fft`` (torch.fft's API) against real PyTorch: values, gradients (PyTorch's
conjugate convention) and second derivatives for real and complex inputs, every norm,
``n``/``s`` that pad or truncate, odd and even lengths; node names, dtypes, errors.
(The rules on their own, complex values included, are walked by tests/rules.)"""
import numpy as np
import pytest

import tracegrad as tg

rng = np.random.default_rng(15)
NORMS = (None, "backward", "ortho", "forward")
ONE_D = ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft")
N_D = ("fftn", "ifftn", "rfftn", "irfftn", "hfftn", "ihfftn")
TWO_D = ("fft2", "ifft2", "rfft2", "irfft2", "hfft2", "ihfft2")
REAL_ONLY = ("rfft", "ihfft")  # (and their 2-d and n-d forms)


def data(shape, complex_):
    x = rng.standard_normal(shape)
    return x + 1j * rng.standard_normal(shape) if complex_ else x


def takes_complex(name):
    return not name.startswith(REAL_ONLY)


def numpy_of(t, torch):
    t = t.detach()
    return t.resolve_conj().numpy() if torch is not None and isinstance(t, torch.Tensor) else t.numpy()


def cases_1d():
    for name in ONE_D:
        for complex_ in (False, True) if takes_complex(name) else (False,):
            for length, n in ((6, None), (5, None), (6, 4), (5, 8), (4, 7)):
                for norm in NORMS:
                    yield name, complex_, (3, length), {"n": n, "dim": 1, "norm": norm}


def cases_nd():
    layouts = [{}, {"dim": (0, 2)}, {"dim": (2, 0)}, {"s": (3, 7), "dim": (0, 2)},
               {"s": (5, -1)}, {"s": (2, 6), "dim": (-1, 1)}]
    for name in N_D:
        for complex_ in (False, True) if takes_complex(name) else (False,):
            for k, layout in enumerate(layouts):
                yield name, complex_, (2, 4, 5), dict(layout, norm=NORMS[k % 4])
    for name in TWO_D:
        for complex_ in (False, True) if takes_complex(name) else (False,):
            for k, layout in enumerate([{}, {"s": (3, 6)}, {"dim": (0, 2), "s": (4, 3)}]):
                yield name, complex_, (2, 4, 5), dict(layout, norm=NORMS[(k + 1) % 4])


CASES = list(cases_1d()) + list(cases_nd())
IDS = [f"{n}-{'c' if c else 'r'}-{s}-{kw}" for n, c, s, kw in CASES]


def run(lib, name, x, kwargs, cotangent=None, torch=None):
    """(value, gradient of x for ``cotangent``) from library ``lib`` (tracegrad or torch)."""
    leaf = lib.tensor(x, requires_grad=True)
    y = getattr(lib.fft, name)(leaf, **kwargs)
    value = numpy_of(y, torch)
    if cotangent is None:
        cotangent = data(value.shape, np.iscomplexobj(value))
    y.backward(lib.tensor(cotangent))
    return value, numpy_of(leaf.grad, torch), cotangent


@pytest.mark.torch
@pytest.mark.parametrize("name,complex_,shape,kwargs", CASES, ids=IDS)
def test_values_and_gradients_match_torch(name, complex_, shape, kwargs):
    torch = pytest.importorskip("torch")
    x = data(shape, complex_)
    expected, expected_grad, ct = run(torch, name, x, kwargs, torch=torch)
    got, grad, _ = run(tg, name, x, kwargs, ct)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-12)
    assert grad.dtype == x.dtype
    np.testing.assert_allclose(grad, expected_grad, rtol=1e-10, atol=1e-12)


def second_order(lib, name, x, kwargs, ct, w):
    """PyTorch-convention gradient of Re(sum(w * grad)), grad made with create_graph."""
    leaf = lib.tensor(x, requires_grad=True)
    y = getattr(lib.fft, name)(leaf, **kwargs)
    (g,) = lib.autograd.grad(y, leaf, lib.tensor(ct), create_graph=True)
    phi = (g * lib.tensor(w)).sum()
    phi = phi.real if phi.is_complex() else phi
    h = lib.autograd.grad(phi, leaf, allow_unused=True)[0] if phi.requires_grad else None
    return np.zeros_like(x) if h is None else numpy_of(h, None)


@pytest.mark.torch
@pytest.mark.parametrize("name,complex_,shape,kwargs", CASES[::7], ids=IDS[::7])
def test_second_order_matches_torch(name, complex_, shape, kwargs):
    """An FFT is linear: its gradient does not depend on the input, so the second derivative
    is zero -- but only if the backward is recorded right, which is what this checks."""
    torch = pytest.importorskip("torch")
    x = data(shape, complex_)
    value = numpy_of(getattr(torch.fft, name)(torch.tensor(x), **kwargs), torch)
    ct = data(value.shape, np.iscomplexobj(value))
    w = data(shape, complex_)
    h_torch = second_order(torch, name, x, kwargs, ct, w)
    h = second_order(tg, name, x, kwargs, ct, w)
    np.testing.assert_allclose(h, h_torch, atol=1e-12)


@pytest.mark.torch
@pytest.mark.parametrize("name", ["fft", "irfft", "rfft2", "ifftn"])
def test_second_order_through_a_nonlinear_loss_matches_torch(name):
    """|F x|^2 has a nonzero Hessian: grad of grad runs the FFT's vjp on recorded tensors."""
    torch = pytest.importorskip("torch")
    x = data((3, 4), name == "irfft")
    v = data((3, 4), name == "irfft")

    def hvp(lib):
        leaf = lib.tensor(x, requires_grad=True)
        y = getattr(lib.fft, name)(leaf, norm="ortho")
        loss = (y * y.conj()).real.sum() if y.is_complex() else (y * y).sum()
        (g,) = lib.autograd.grad(loss, leaf, create_graph=True)
        inner = (g * lib.tensor(v).conj()).sum()
        (h,) = lib.autograd.grad(inner.real if inner.is_complex() else inner, leaf)
        return numpy_of(h, torch)

    np.testing.assert_allclose(hvp(tg), hvp(torch), rtol=1e-10, atol=1e-12)


# -- shifts and frequencies -------------------------------------------------------------------

SHIFT_CASES = [((5, 4), {}), ((5, 4), {"dim": 1}), ((2, 3, 6), {"dim": (0, 2)}), ((7,), {"dim": -1})]


@pytest.mark.torch
@pytest.mark.parametrize("name", ["fftshift", "ifftshift"])
@pytest.mark.parametrize("shape,kwargs", SHIFT_CASES)
@pytest.mark.parametrize("complex_", [False, True])
def test_shifts_match_torch(name, shape, kwargs, complex_):
    torch = pytest.importorskip("torch")
    x = data(shape, complex_)
    expected, expected_grad, ct = run(torch, name, x, kwargs, torch=torch)
    got, grad, _ = run(tg, name, x, kwargs, ct)
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(grad, expected_grad)


@pytest.mark.torch
@pytest.mark.parametrize("name", ["fftfreq", "rfftfreq"])
@pytest.mark.parametrize("n,d", [(1, 1.0), (6, 1.0), (7, 0.25)])
def test_frequencies_match_torch(name, n, d):
    torch = pytest.importorskip("torch")
    got = getattr(tg.fft, name)(n, d)
    expected = getattr(torch.fft, name)(n, d)
    assert str(got.dtype).split(".")[-1] == str(expected.dtype).split(".")[-1]
    np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-7)
    assert getattr(tg.fft, name)(n, d, dtype=tg.float64).dtype == tg.float64
    assert getattr(tg.fft, name)(n, requires_grad=True).requires_grad


# -- what PyTorch shows: node names, dtypes, errors -----------------------------------------------

@pytest.mark.parametrize("call,node", [
    (lambda x: tg.fft.fft(x), "FftR2CBackward0"),
    (lambda x: tg.fft.rfft(x), "FftR2CBackward0"),
    (lambda x: tg.fft.fft(x.to(tg.complex128)), "FftC2CBackward0"),
    (lambda x: tg.fft.irfft(x.to(tg.complex128)), "FftC2RBackward0"),
    (lambda x: tg.fft.fftshift(x), "RollBackward0"),
])
def test_node_names_are_pytorchs(call, node):
    x = tg.tensor(data((4,), False), requires_grad=True)
    assert call(x).grad_fn.name() == node


def test_padding_and_truncation_record_pytorchs_nodes():
    x = tg.tensor(data((4,), False), requires_grad=True)
    assert tg.fft.fft(x, n=6).grad_fn.next_functions[0][0].name() == "ConstantPadNdBackward0"
    assert tg.fft.fft(x, n=3).grad_fn.next_functions[0][0].name() == "SliceBackward0"


def test_float32_stays_single_precision_and_integers_compute_in_the_default_dtype():
    x = tg.tensor(data((3, 4), False).astype(np.float32), requires_grad=True)
    y = tg.fft.rfft(x)
    assert y.dtype == tg.complex64
    back = tg.fft.irfft(y, n=4)
    assert back.dtype == tg.float32
    back.sum().backward()
    assert x.grad.dtype == tg.float32
    np.testing.assert_allclose(back.detach().numpy(), x.detach().numpy(), rtol=1e-5, atol=1e-6)
    assert tg.fft.fft(tg.arange(4)).dtype == tg.complex64


@pytest.mark.parametrize("call,error,message", [
    (lambda x: tg.fft.fft(x, norm="unitary"), RuntimeError, 'Invalid normalization mode: "unitary"'),
    (lambda x: tg.fft.fft(x, n=0), RuntimeError, r"Invalid number of data points \(0\) specified"),
    (lambda x: tg.fft.irfft(x[:, :1]), RuntimeError, r"Invalid number of data points \(0\) specified"),
    (lambda x: tg.fft.fftn(x, dim=(0, 0)), RuntimeError, "FFT dims must be unique"),
    (lambda x: tg.fft.fft(x, dim=2), IndexError, "Dimension out of range"),
    (lambda x: tg.fft.fftn(x, s=(2, 3, 4)), RuntimeError, "Got shape with 3 values"),
    (lambda x: tg.fft.fftn(x, s=(2, 3), dim=(0,)), RuntimeError, "must have the same length"),
    (lambda x: tg.fft.rfft(x.to(tg.complex128)), RuntimeError, "rfft expects a real input tensor"),
    (lambda x: tg.fft.fft(x.numpy()), TypeError, "must be Tensor"),
])
def test_errors_are_pytorchs(call, error, message):
    with pytest.raises(error, match=message):
        call(tg.tensor(data((3, 4), False)))


@pytest.mark.torch
def test_error_messages_match_torch_words():
    torch = pytest.importorskip("torch")
    for call in (lambda m, x: m.fft.fft(x, norm="unitary"), lambda m, x: m.fft.fft(x, n=0),
                 lambda m, x: m.fft.fftn(x, dim=(0, 0)), lambda m, x: m.fft.fftn(x, s=(2, 3, 4))):
        with pytest.raises(RuntimeError) as theirs:
            call(torch, torch.ones(3, 4))
        with pytest.raises(RuntimeError) as ours:
            call(tg, tg.ones(3, 4))
        assert str(ours.value) == str(theirs.value)
