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


def test_tensor_where_method_keeps_its_receiver_as_the_input():
    # x.where(c, y) was traced as where(x, c, y) (the function of the name applied to x)
    f = tg.compile(lambda x, c, y: x.where(c, y))
    x = tg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    c = tg.tensor([True, False, True])
    out = f(x, c, tg.zeros(3))
    assert out.tolist() == [1.0, 0.0, 3.0]
    out.sum().backward()
    assert x.grad.tolist() == [1.0, 0.0, 1.0]


def test_losses_and_renorm_built_on_tensor_where_equal_eager():
    import tracegrad.nn.functional as F
    tg.manual_seed(1)
    x = tg.randn(3, 4)
    y = tg.tensor([1.0, -1.0, 1.0])
    cases = [(F.hinge_embedding_loss, (x[:, 0], y)),
             (F.cosine_embedding_loss, (x, x.flip(0), y)),
             (lambda t: t.renorm(2, 0, 1.0), (x,))]
    for fn, args in cases:
        np.testing.assert_allclose(tg.compile(fn)(*args).numpy(), fn(*args).numpy(), rtol=1e-6)


def test_polygamma_method_keeps_its_receiver_as_the_input():
    x = tg.tensor([1.5, 2.0, 3.0])
    np.testing.assert_allclose(tg.compile(lambda t: t.polygamma(1))(x).numpy(), x.polygamma(1).numpy())


@pytest.mark.parametrize("op", [tg.unique, tg.unique_consecutive])
def test_a_value_sized_result_shape_is_not_baked_in(op):
    # the number of distinct values, read as a Python int, was the first call's forever
    f = tg.compile(lambda x: x.float() * op(x).shape[0])
    for values in ([0, 0, 0, 0], [0, 1, 2, 3], [5, 5, 1, 1]):
        x = tg.tensor(values)
        assert f(x).tolist() == (x.float() * op(x).shape[0]).tolist()


def test_a_value_sized_result_breaks_the_graph_with_fullgraph():
    f = tg.compile(lambda x: tg.unique(x).shape[0] + x, fullgraph=True)
    with pytest.raises(tg.compiler.Unsupported, match="shape"):
        f(tg.tensor([1, 1, 2]))
