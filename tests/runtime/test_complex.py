"""Complex tensors: forward operations work; differentiating through complex values is
refused with a clear error (the rules give real gradients; PyTorch's conjugate
convention is not implemented yet) rather than returning wrong gradients."""
import numpy as np
import pytest

import tracegrad as tg


def test_complex_forward_values():
    z = tg.tensor([1 + 2j, -0.5j])
    np.testing.assert_allclose((z * z).numpy(), np.array([1 + 2j, -0.5j]) ** 2)
    np.testing.assert_allclose(z.abs().numpy(), np.abs([1 + 2j, -0.5j]))
    assert (z * 2.0).dtype is tg.complex64
    assert (tg.ones(2, dtype=tg.float64) * 1j).dtype is tg.complex128


def test_complex_tensors_may_require_grad():
    z = tg.tensor([1 + 2j], requires_grad=True)
    assert z.requires_grad and (z * z).grad_fn.name() == "MulBackward0"


def test_backward_through_complex_values_is_refused():
    z = tg.tensor([1 + 2j], requires_grad=True)
    loss = (z * z).abs().sum()
    with pytest.raises(NotImplementedError, match="MulBackward0: tracegrad does not differentiate through complex"):
        loss.backward()
    assert z.grad is None  # nothing half-accumulated
