"""``tracegrad.trace`` serves torch.trace (a matrix's diagonal sum) and the tape tracer,
told apart by the argument's kind."""
import numpy as np
import pytest

import tracegrad as tg


def test_trace_of_a_matrix_is_torch_trace():
    x = tg.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
    y = tg.trace(x)
    assert y.item() == 6.0 and y.grad_fn is not None
    y.backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[1, 0, 0], [0, 1, 0]])
    with pytest.raises(RuntimeError, match="trace: expected a matrix, but got tensor with dim 3"):
        tg.trace(tg.ones(2, 2, 2))


def test_trace_of_a_function_records_a_tape():
    tape = tg.trace(lambda x: np.sin(x) * x)(np.ones(3))
    assert isinstance(tape, tg.Tape) and "sin" in str(tape)


@pytest.mark.torch
def test_matrix_trace_matches_torch():
    import torch
    a = np.arange(12.0).reshape(3, 4)
    assert tg.trace(tg.tensor(a)).item() == torch.trace(torch.tensor(a)).item()
