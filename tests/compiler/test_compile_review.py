"""Adversarial checks of tracegrad.compile for silent wrong answers: each test here failed
(a wrong value, no error) before the fix it names."""
import numpy as np
import pytest

import tracegrad as tg
from tracegrad import nn


def test_equal_gradients_of_two_leaves_are_not_one_shared_array():
    # the staged backward computes d/da == d/db once; both leaves adopted that one array as
    # .grad, so the second backward's accumulation into a.grad also added into b.grad
    cf = tg.compile(lambda x, a, b: (x * (a + b)).sum())
    a = tg.zeros(3, requires_grad=True)
    b = tg.zeros(3, requires_grad=True)
    for _ in range(2):
        cf(tg.ones(3), a, b).backward()
    assert a.grad.tolist() == [2.0, 2.0, 2.0]
    assert b.grad.tolist() == [2.0, 2.0, 2.0]
    assert not np.shares_memory(a.grad.numpy(), b.grad.numpy())


def test_rnn_bias_gradients_accumulate_as_eagerly():
    tg.manual_seed(0)
    eager = nn.RNN(3, 4, batch_first=True)
    model = nn.RNN(3, 4, batch_first=True)
    model.load_state_dict(eager.state_dict())
    compiled = tg.compile(model)
    for _ in range(3):
        x = tg.randn(2, 5, 3)
        (eager(x)[0] ** 2).sum().backward()
        (compiled(x)[0] ** 2).sum().backward()
    for p, q in zip(eager.parameters(), model.parameters()):
        np.testing.assert_allclose(q.grad.numpy(), p.grad.numpy(), rtol=1e-5, atol=1e-6)
