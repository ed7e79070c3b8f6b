"""Complex tensors in the eager runtime: forward operations, and gradients in PyTorch's
(conjugate Wirtinger) convention -- the gradient of a real loss L of z = x + iy is
dL/dx + i dL/dy -- made from the rule table's JAX-convention rules by conjugating at each
node. Rules not declared right for complex values refuse them by name; a real operand
mixed with complex ones gets a real gradient."""
import numpy as np
import pytest

import tracegrad as tg
from tracegrad.rules import TABLE
from tracegrad.transform.ast.resolve import _MATH, _METHODS, _ONE_ARG, OPERATORS, UNARY


def test_complex_forward_values():
    z = tg.tensor([1 + 2j, -0.5j])
    np.testing.assert_allclose((z * z).numpy(), np.array([1 + 2j, -0.5j]) ** 2)
    np.testing.assert_allclose(z.abs().numpy(), np.abs([1 + 2j, -0.5j]))
    assert (z * 2.0).dtype is tg.complex64
    assert (tg.ones(2, dtype=tg.float64) * 1j).dtype is tg.complex128
    np.testing.assert_allclose(z.real.numpy(), [1, 0]) and np.testing.assert_allclose(z.imag.numpy(), [2, -0.5])


def _leaf(values):
    return tg.tensor(np.asarray(values, dtype=np.complex128), requires_grad=True)


def test_gradient_of_abs_squared_is_2z():
    """|z|^2 = x^2 + y^2: dL/dx + i dL/dy = 2x + 2iy = 2z."""
    z0 = np.array([1 + 2j, -0.5 + 0.25j])
    z = _leaf(z0)
    (z.abs() ** 2).sum().backward()
    np.testing.assert_allclose(z.grad.numpy(), 2 * z0)
    assert z.grad.dtype is tg.complex128


def test_gradients_of_parts_and_angle_by_hand():
    z0 = np.array([1 + 2j, -3 + 0.5j])
    for f, expected in [(lambda z: z.real, np.ones(2)), (lambda z: z.imag, 1j * np.ones(2)),
                        # angle = atan2(y, x): d/dx = -y/r^2, d/dy = x/r^2
                        (lambda z: z.angle(), (-z0.imag + 1j * z0.real) / np.abs(z0) ** 2)]:
        z = _leaf(z0)
        f(z).sum().backward()
        np.testing.assert_allclose(z.grad.numpy(), expected)


def test_holomorphic_chain_conjugates_the_derivative():
    """L = Re(sum(w * exp(z))): PyTorch's gradient is conj(w * exp(z))."""
    z0, w = np.array([0.3 + 0.7j, -1.2 + 0.1j]), np.array([0.5 - 1j, 2 + 0.25j])
    z = _leaf(z0)
    (tg.tensor(w) * tg.exp(z)).sum().real.backward()
    np.testing.assert_allclose(z.grad.numpy(), np.conj(w * np.exp(z0)))


def test_real_operand_gets_the_real_part():
    """x real, z = x * c: L = Re(sum(z)) = x Re(c): dL/dx = Re(c), a real gradient."""
    x = tg.tensor([1.5, -2.0], dtype=tg.float64, requires_grad=True)
    c = tg.tensor([2 + 3j, -1 + 0.5j])
    (x * c).sum().real.backward()
    assert x.grad.dtype is tg.float64
    np.testing.assert_allclose(x.grad.numpy(), [2.0, -1.0])


def test_rules_not_declared_complex_refuse_by_name():
    z = _leaf([1 + 2j, 0.5 - 1j])
    loss = tg.logsumexp(z, 0).abs()
    with pytest.raises(NotImplementedError, match="rule for 'logsumexp' is not written for complex values"):
        loss.backward()
    assert z.grad is None  # nothing half-accumulated


def test_real_only_kernels_refuse_complex_operands():
    z = tg.tensor([1 + 2j])
    with pytest.raises(RuntimeError, match="torch.sgn"):
        tg.sign(z)
    with pytest.raises(RuntimeError, match="maximum not implemented for complex"):
        tg.maximum(z, z)


def test_complex_sigmoid_by_hand():
    """sigmoid is holomorphic, s'(z) = s (1 - s); for L = |s(z)|^2 PyTorch's gradient,
    2 dL/d(conj z), is 2 s conj(s')."""
    z0 = np.array([0.3 + 0.5j, -1 + 2j])
    z = _leaf(z0)
    s = tg.sigmoid(z)
    s0 = 1 / (1 + np.exp(-z0))
    np.testing.assert_allclose(s.detach().numpy(), s0)
    (s.real ** 2 + s.imag ** 2).sum().backward()
    np.testing.assert_allclose(z.grad.numpy(), 2 * s0 * np.conj(s0 * (1 - s0)))


def test_sigmoid_rule_of_python_numbers():
    """The rule's kernel takes what the staged paths hand it: Python floats and complex
    numbers too (scipy.special.expit(0.3), found by the peer's suite), overflow-free."""
    from tracegrad.rules import TABLE
    sig = TABLE["sigmoid"]
    assert sig(0.3) == pytest.approx(1 / (1 + np.exp(-0.3)))
    assert sig(-800.0) == 0.0 and sig(800.0) == 1.0
    assert sig(1 + 1j) == pytest.approx(1 / (1 + np.exp(-(1 + 1j))))


@pytest.mark.parametrize("write", [lambda y: y.real.mul_(2), lambda y: y.imag.zero_(),
                                   lambda y: y.real.__setitem__(0, 5.0), lambda y: tg.view_as_real(y)[0, 1].fill_(1)],
                         ids=["real.mul_", "imag.zero_", "real[0]=", "view_as_real fill_"])
def test_writing_into_a_part_is_refused(write):
    """z.real / z.imag are copies here (views in PyTorch): a write into one would leave z
    and its graph unchanged, so it is refused, with z untouched."""
    z = _leaf([1 + 2j, 3 - 1j])
    y = z.clone()
    with pytest.raises(RuntimeError, match="copies, not views"):
        write(y)
    np.testing.assert_array_equal(y.detach().numpy(), [1 + 2j, 3 - 1j])
    x = tg.tensor([1.0, 2.0])
    assert x.real is x  # a real tensor's real part is itself, as in PyTorch


def test_sgn_and_polar():
    z0 = np.array([3 + 4j, 0j])
    np.testing.assert_allclose(tg.sgn(tg.tensor(z0)).numpy(), [0.6 + 0.8j, 0])
    p = tg.polar(tg.tensor([2.0], dtype=tg.float64), tg.tensor([np.pi / 2], dtype=tg.float64))
    np.testing.assert_allclose(p.numpy(), [2j], atol=1e-15)


def test_every_rule_ast_mode_writes_out_is_declared_complex():
    """AST mode inlines a rule's own expression only for rules right for complex values;
    the others go through the tape, which refuses complex values they cannot take."""
    names = set(OPERATORS.values()) | set(UNARY.values()) | set(_MATH.values()) | \
        set(_ONE_ARG.values()) | set(_METHODS.values()) | {"abs"}
    assert not [n for n in names if not TABLE[n].complex]


@pytest.mark.torch
def test_matches_torch_on_a_mixed_program():
    torch = pytest.importorskip("torch")
    z0 = np.array([0.3 + 0.7j, -1.2 + 0.1j, 2 - 1j])
    x0 = np.array([0.5, -1.0, 2.0])
    grads = []
    for lib in (tg, torch):
        z = lib.tensor(z0, requires_grad=True)
        x = lib.tensor(x0, requires_grad=True)
        y = lib.exp(z * x) / (z + 2) - z.conj() * lib.sin(z)
        loss = (y.abs() ** 2).sum() + y.angle().sum() + (y.real * y.imag).mean()
        loss.backward()
        grads.append((z.grad.numpy(), x.grad.numpy()))
    for mine, theirs in zip(*grads):
        np.testing.assert_allclose(mine, theirs, rtol=1e-12)


def test_backward_of_a_complex_scalar_is_refused():
    """A complex loss has no one gradient to seed (as PyTorch: give grad_outputs)."""
    z = _leaf([1 + 2j])
    with pytest.raises(RuntimeError, match="only for real scalar outputs"):
        (z * z).sum().backward()
    (z * z).sum().backward(tg.tensor(1 + 0j))
    np.testing.assert_allclose(z.grad.numpy(), np.conj(2 * np.array([1 + 2j])))
